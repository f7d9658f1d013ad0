"""Training jobs off the event loop: a bounded worker pool, states, progress, records.

A job goes ``queued -> running -> done | failed | cancelled`` (``queued ->
cancelled`` too). Its record is a small JSON file ``<model_dir>/jobs/<id>.json``
written on every state change and at most once a second while running. On
start-up, records left ``queued`` or ``running`` by a previous process are
marked ``failed`` ("interrupted by server restart"); finished models are never
touched.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from service.errors import Busy, NotFound, ServiceError
from service.store import ModelStore, new_id, valid_id, write_json_atomic

log = logging.getLogger("okboost.jobs")

ProgressCallback = Callable[[Any], bool]
"""Called by okcore after each tree with a FitProgress; returns True to stop."""
TrainTask = Callable[[ProgressCallback], str]
"""Runs the fit; returns "done" or "cancelled"; raises on failure."""

ACTIVE = ("queued", "running")
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
    # in-memory only
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
    )

    def to_record(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._PERSISTED}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Job:
        job = cls(**{k: record[k] for k in cls._PERSISTED if k in record})
        if job.state not in ACTIVE:
            job.finished_event.set()
        return job

    def info(self) -> dict[str, Any]:
        """The public view: record plus progress, elapsed and ETA."""
        now = time.time()
        if self.started is None:
            elapsed = 0.0
        else:
            elapsed = (self.finished or now) - self.started
        eta: float | None = None
        if self.state == "running" and self.done > 0:
            eta = elapsed / self.done * max(self.total - self.done, 0)
        elif self.state == "done":
            eta = 0.0
        info = self.to_record()
        del info["total"], info["done"]
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

    def __init__(self, store: ModelStore, max_workers: int = 1, max_queued: int = 64) -> None:
        self.store = store
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

    def list(self) -> list[Job]:
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

    def _run(self, job: Job, task: TrainTask) -> None:
        with self._lock:
            if job.state != "queued":
                return  # cancelled while queued
            job.state, job.started = "running", time.time()
        self._persist(job)
        last_write = [time.monotonic()]

        def progress(p: Any) -> bool:
            job.done = int(p.done)
            job.total = max(int(p.total), 1)
            if p.train_loss is not None:
                job.train_loss.append(float(p.train_loss))
            if p.val_loss is not None:
                if job.validation_loss is None:
                    job.validation_loss = []
                job.validation_loss.append(float(p.val_loss))
            if time.monotonic() - last_write[0] >= _PERSIST_EVERY:
                last_write[0] = time.monotonic()
                self._persist(job)
            return job.cancel_event.is_set()

        try:
            outcome = task(progress)
        except Exception as exc:  # noqa: BLE001 - any failure becomes the job's reason
            job.exception = exc
            reason = (
                str(exc)
                if isinstance(exc, ValueError | ServiceError)
                else (f"{type(exc).__name__}: {exc}")
            )
            if not isinstance(exc, ValueError | ServiceError):
                log.exception("training job %s failed", job.job_id)
            with self._lock:
                self._finish(job, "failed", reason)
            return
        with self._lock:
            if outcome == "done":
                self._finish(job, "done", None)
            elif self._shutting_down:
                self._finish(job, "failed", SHUTDOWN_REASON)
            else:
                self._finish(job, "cancelled", "cancelled by request")
