"""Training jobs off the event loop: a bounded worker pool, states, progress, records.

A job goes ``queued -> running -> done | failed | cancelled`` (``queued ->
cancelled`` too). Each of the ``max_workers`` worker threads runs its job in a
child process (``isolation="process"``, the service's default): okcore's numba
kernels release the GIL, but scipy's eigendecomposition of the output Gram
matrix does not, and in a thread it would stall the event loop, and every
prediction, for as long as it takes (tens of seconds at N = 2000). The child
reports progress through a pipe and stops after the current tree when asked; a
child that does not stop within ``CANCEL_GRACE`` seconds is killed (the model
folder is renamed into place only at the very end, so nothing half-written is
ever visible). ``isolation="thread"`` runs tasks in the worker thread itself. Its record is a small JSON file ``<model_dir>/jobs/<id>.json``
written on every state change and at most once a second while running. On
start-up, records left ``queued`` or ``running`` by a previous process are
marked ``failed`` ("interrupted by server restart"); finished models are never
touched.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal, Protocol

from service.errors import Busy, NotFound, ServiceError
from service.store import ModelStore, new_id, valid_id, write_json_atomic

log = logging.getLogger("okboost.jobs")


class Reporter(Protocol):
    """What a training task reports to: okcore's fit callback plus a 'saving' notice."""

    def __call__(self, progress: Any, /) -> bool:
        """Called after each tree with a FitProgress; returns True to stop."""
        ...

    def saving(self) -> None:
        """Called once before the model is written (it is no longer killed on cancel)."""
        ...


TrainTask = Callable[[Reporter], str]
"""Runs the fit; returns "done" or "cancelled"; raises on failure. With process isolation
it must be picklable (a module-level function or a functools.partial of one)."""
Isolation = Literal["process", "thread"]
CANCEL_GRACE = 5.0  # seconds a training process gets to stop by itself before it is killed

ACTIVE = ("queued", "running")
SETUP_PHASES = ("output_space", "binning")
"""okcore fit phases before the first tree (FitProgress.phase); then "trees"."""
RESTART_REASON = "interrupted by server restart"
SHUTDOWN_REASON = "interrupted by server shutdown"
_PERSIST_EVERY = 1.0  # seconds between progress writes while running


@dataclass
class Job:
    job_id: str
    model_id: str
    total: int
    state: str = "queued"
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    done: int = 0
    train_loss: list[float] = field(default_factory=list)
    validation_loss: list[float] | None = None
    error: str | None = None
    phase: str | None = None  # okcore's FitProgress.phase: output_space, binning, trees
    phase_started: float | None = None  # unix time the current phase was first reported
    phase_eta: float | None = None  # okcore's estimate of the set-up phase's duration (s)
    # in-memory only: per-tree timing for the ETA of the trees phase
    tree_anchor: float | None = field(default=None, repr=False)  # trees phase start (estimate)
    tree_anchor_exact: bool = field(default=False, repr=False)  # reported with done = 0
    tree_first: tuple[float, int] | None = field(default=None, repr=False)  # (time, done)
    tree_last: tuple[float, int] | None = field(default=None, repr=False)
    exception: BaseException | None = field(default=None, repr=False)
    cancel_event: threading.Event = field(default_factory=threading.Event, repr=False)
    finished_event: threading.Event = field(default_factory=threading.Event, repr=False)

    _PERSISTED = (
        "job_id",
        "model_id",
        "total",
        "state",
        "created",
        "started",
        "finished",
        "done",
        "train_loss",
        "validation_loss",
        "error",
        "phase",
        "phase_started",
        "phase_eta",
    )

    def to_record(self) -> dict[str, Any]:
        record = {name: getattr(self, name) for name in self._PERSISTED}
        # copies: the worker thread keeps appending while the record is serialised
        record["train_loss"] = list(self.train_loss)
        if self.validation_loss is not None:
            record["validation_loss"] = list(self.validation_loss)
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Job:
        job = cls(**{k: record[k] for k in cls._PERSISTED if k in record})
        if job.state not in ACTIVE:
            job.finished_event.set()
        return job

    def _running_eta(self, now: float) -> float | None:
        """Seconds left. In a set-up phase (output_space, binning): okcore's estimate of the
        phase minus the time spent in it, never negative; the trees, not timed yet, add
        nothing. In the trees phase: the per-tree rate times the trees left, the rate
        measured between tree reports (so set-up time does not inflate it)."""
        if self.phase in SETUP_PHASES:
            if self.phase_eta is None or self.phase_started is None:
                return None
            return max(self.phase_eta - (now - self.phase_started), 0.0)
        left = max(self.total - self.done, 0)
        last, first = self.tree_last, self.tree_first
        if last is None or last[1] <= 0:
            return None
        if not self.tree_anchor_exact and first is not None and last[1] > first[1]:
            per_tree = (last[0] - first[0]) / (last[1] - first[1])
        else:
            anchor = self.tree_anchor if self.tree_anchor is not None else self.started
            per_tree = (last[0] - (anchor if anchor is not None else last[0])) / last[1]
        return per_tree * left

    def report(self, p: Any, now: float | None = None) -> None:
        """Take one FitProgress (or anything with its fields; ``phase`` defaults to trees)."""
        now = time.time() if now is None else now
        phase = getattr(p, "phase", None) or "trees"
        self.total = max(int(p.total), 1)
        self.done = int(p.done)
        if phase != "trees":
            if phase != self.phase:
                self.phase, self.phase_started = phase, now
            eta = getattr(p, "phase_eta", None)
            self.phase_eta = None if eta is None else float(eta)
            return
        if self.phase != "trees":  # first report of the trees phase
            if self.done == 0:  # an explicit start of the trees phase
                self.tree_anchor, self.tree_anchor_exact = now, True
            else:  # the first tree is done: it started at the latest set-up phase, or the job
                self.tree_anchor = self.phase_started if self.phase else self.started
            self.phase, self.phase_started, self.phase_eta = "trees", now, None
        if self.done > 0:
            if self.tree_first is None:
                self.tree_first = (now, self.done)
            self.tree_last = (now, self.done)

    def info(self) -> dict[str, Any]:
        """The public view: record plus progress, elapsed and ETA."""
        now = time.time()
        if self.started is None:
            elapsed = 0.0
        else:
            elapsed = (self.finished or now) - self.started
        eta: float | None = None
        if self.state == "running":
            eta = self._running_eta(now)
        elif self.state == "done":
            eta = 0.0
        info = self.to_record()
        del info["total"], info["done"], info["phase_started"], info["phase_eta"]
        info.update(
            progress={
                "done": self.done,
                "total": self.total,
                "fraction": (self.done / self.total) if self.total else 0.0,
            },
            elapsed=elapsed,
            eta=eta,
        )
        return info


class JobManager:
    """Runs training tasks on ``max_workers`` threads and keeps their records."""

    def __init__(
        self,
        store: ModelStore,
        max_workers: int = 1,
        max_queued: int = 64,
        isolation: Isolation = "thread",
    ) -> None:
        self.store = store
        self.isolation = isolation
        self._ctx = _process_context() if isolation == "process" else None
        self.dir = store.root / "jobs"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.max_queued = max_queued
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._shutting_down = False
        self._executor = ThreadPoolExecutor(max_workers, thread_name_prefix="okboost-train")
        self.recover()

    # ------------------------------------------------------------ persistence
    def _path(self, job_id: str) -> Path:
        if not valid_id(job_id):
            raise NotFound(f"unknown job '{job_id[:64]}': job ids are 32 hex digits")
        return self.dir / f"{job_id}.json"

    def _persist(self, job: Job) -> None:
        write_json_atomic(self._path(job.job_id), job.to_record())

    def recover(self) -> list[str]:
        """Mark jobs left active by a previous process as failed; return their ids."""
        interrupted = []
        for path in sorted(self.dir.glob("*.json")):
            if not valid_id(path.stem):
                continue
            try:
                job = Job.from_record(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError) as exc:
                log.warning("skipping unreadable job record %s: %s", path, exc)
                continue
            if job.state in ACTIVE:
                job.state, job.error, job.finished = "failed", RESTART_REASON, time.time()
                self._persist(job)
                self._mark_model(job.model_id, "failed", RESTART_REASON)
                interrupted.append(job.job_id)
        return interrupted

    def _mark_model(self, model_id: str, status: str, error: str | None) -> None:
        try:
            record = self.store.read_record(model_id)
        except ServiceError:
            return  # deleted meanwhile
        if record.get("status") == "training":
            self.store.update_record(model_id, status=status, error=error)

    # ------------------------------------------------------------ public
    def submit(self, model_id: str, task: TrainTask, total: int, job_id: str | None = None) -> Job:
        with self._lock:
            queued = sum(1 for j in self._jobs.values() if j.state == "queued")
            if queued >= self.max_queued:
                raise Busy(
                    f"{queued} training jobs are already waiting; retry when some finish "
                    "(or raise OKBOOST_MAX_QUEUED_JOBS)"
                )
            job = Job(job_id=job_id or new_id(), model_id=model_id, total=max(int(total), 1))
            self._jobs[job.job_id] = job
        self._persist(job)
        self._executor.submit(self._run, job, task)
        return job

    def get(self, job_id: str) -> Job:
        path = self._path(job_id)
        with self._lock:
            job = self._jobs.get(job_id)
        if job is not None:
            return job
        try:
            return Job.from_record(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            raise NotFound(f"unknown job '{job_id}'") from None

    def all_jobs(self) -> list[Job]:
        ids = {p.stem for p in self.dir.glob("*.json") if valid_id(p.stem)}
        with self._lock:
            ids |= set(self._jobs)
        jobs = []
        for job_id in ids:
            try:
                jobs.append(self.get(job_id))
            except (NotFound, OSError, ValueError):
                continue
        return sorted(jobs, key=lambda j: j.created)

    def cancel(self, job_id: str) -> Job:
        """Cancel a queued job at once, or ask a running one to stop after its current tree."""
        job = self.get(job_id)
        with self._lock:
            if job.state == "queued":
                self._finish(job, "cancelled", "cancelled by request")
            elif job.state == "running":
                job.cancel_event.set()
        return job

    def wait(self, job_id: str, timeout: float | None) -> bool:
        return self.get(job_id).finished_event.wait(timeout)

    def shutdown(self) -> None:
        """Stop running jobs after their current tree, mark them failed, stop the pool."""
        with self._lock:
            self._shutting_down = True
            for job in self._jobs.values():
                if job.state == "queued":
                    self._finish(job, "failed", SHUTDOWN_REASON)
                elif job.state == "running":
                    job.cancel_event.set()
        self._executor.shutdown(wait=True, cancel_futures=True)

    # ------------------------------------------------------------ worker side
    def _finish(self, job: Job, state: str, error: str | None) -> None:
        job.state, job.error, job.finished = state, error, time.time()
        self._persist(job)
        if state != "done":
            self._mark_model(job.model_id, state, error)
        job.finished_event.set()

    def _progress(self, job: Job, p: Any, last_write: list[float]) -> None:
        phase_before = job.phase
        job.report(p)
        if job.phase != "trees":
            if job.phase != phase_before:  # a new phase is worth a write at once
                last_write[0] = time.monotonic()
                self._persist(job)
            return
        if p.train_loss is not None:
            job.train_loss.append(float(p.train_loss))
        if p.val_loss is not None:
            if job.validation_loss is None:
                job.validation_loss = []
            job.validation_loss.append(float(p.val_loss))
        if time.monotonic() - last_write[0] >= _PERSIST_EVERY:
            last_write[0] = time.monotonic()
            self._persist(job)

    def _run(self, job: Job, task: TrainTask) -> None:
        with self._lock:
            if job.state != "queued":
                return  # cancelled while queued
            job.state, job.started = "running", time.time()
        self._persist(job)
        try:
            if self._ctx is None:
                outcome = self._run_in_thread(job, task)
            else:
                outcome = self._run_in_process(job, task)
        except Exception as exc:  # noqa: BLE001 - any failure becomes the job's reason
            job.exception = exc
            user_error = isinstance(exc, ValueError | ServiceError)
            reason = str(exc) if user_error else f"{type(exc).__name__}: {exc}"
            if not user_error:
                log.error("training job %s failed: %s", job.job_id, reason)
            with self._lock:
                self._finish(job, "failed", reason)
            return
        with self._lock:
            if outcome == "done":
                self._finish(job, "done", None)
                if not self.store.record_path(job.model_id).exists():
                    self.store.delete_files(job.model_id)  # model deleted while it trained
            elif self._shutting_down:
                self._finish(job, "failed", SHUTDOWN_REASON)
            else:
                self._finish(job, "cancelled", "cancelled by request")

    def _run_in_thread(self, job: Job, task: TrainTask) -> str:
        last_write = [time.monotonic()]

        class _Reporter:
            def __call__(_, p: Any) -> bool:  # noqa: N805
                self._progress(job, p, last_write)
                return job.cancel_event.is_set()

            def saving(_) -> None:  # noqa: N805
                pass

        return task(_Reporter())

    def _run_in_process(self, job: Job, task: TrainTask) -> str:
        assert self._ctx is not None
        receiver, sender = self._ctx.Pipe(duplex=False)
        stop = self._ctx.Event()
        proc = self._ctx.Process(
            target=_child_main, args=(task, sender, stop), name=f"okboost-job-{job.job_id[:8]}"
        )
        proc.start()
        sender.close()
        last_write = [time.monotonic()]
        saving, asked_at = False, None
        try:
            while True:
                if receiver.poll(0.1):
                    try:
                        message = receiver.recv()
                    except EOFError:
                        break  # the child died without a word
                    kind = message[0]
                    if kind == "progress":
                        self._progress(job, SimpleNamespace(**message[1]), last_write)
                    elif kind == "saving":
                        saving = True
                    elif kind == "done":
                        return str(message[1])
                    elif kind == "error":
                        raise message[1]
                elif not proc.is_alive() and not receiver.poll():
                    break
                if job.cancel_event.is_set():
                    stop.set()
                    asked_at = asked_at or time.monotonic()
                    if not saving and time.monotonic() - asked_at > CANCEL_GRACE:
                        proc.kill()  # e.g. still factorising the Gram matrix
                        return "cancelled"
        finally:
            receiver.close()
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
                proc.join()
        raise RuntimeError(f"training process exited unexpectedly (exit code {proc.exitcode})")


def _process_context() -> Any:
    """forkserver where available: children fork from a clean, single-threaded server that
    has already imported okcore (and warmed its numba kernels), so a job starts in
    milliseconds and no lock of the service's threads is inherited.

    A child re-runs the main module's top level (multiprocessing's rule): ``service.cli``
    is preloaded so that this costs nothing under ``okboost serve``; a script that builds
    the app itself needs the usual ``if __name__ == "__main__":`` guard."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["service._preload", "service.cli"])
        return ctx
    return multiprocessing.get_context("spawn")


def _child_main(task: TrainTask, conn: Any, stop: Any) -> None:
    """Entry point of a training process: run ``task``, report through ``conn``."""

    class _Reporter:
        def __call__(self, p: Any) -> bool:
            conn.send(
                (
                    "progress",
                    {
                        "done": int(p.done),
                        "total": int(p.total),
                        "train_loss": None if p.train_loss is None else float(p.train_loss),
                        "val_loss": None if p.val_loss is None else float(p.val_loss),
                        "phase": str(getattr(p, "phase", None) or "trees"),
                        "phase_eta": (
                            None if getattr(p, "phase_eta", None) is None else float(p.phase_eta)
                        ),
                    },
                )
            )
            return bool(stop.is_set())

        def saving(self) -> None:
            conn.send(("saving",))

    try:
        conn.send(("done", task(_Reporter())))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which decides
        try:
            conn.send(("error", exc))
        except Exception:  # noqa: BLE001 - an exception that does not pickle
            conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
    finally:
        conn.close()
        # Skip interpreter finalisation (numba / llvmlite tear-down takes ~0.3 s): the
        # model files are already written and fsynced, and the parent waits on join().
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
