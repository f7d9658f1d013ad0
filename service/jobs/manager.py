"""The local side of training jobs: a bounded worker pool over the store's job records.

Each of the ``max_workers`` worker threads runs its job in a child process
(``isolation="process"``, the service's default; see service.jobs.process): okcore's
numba kernels release the GIL, but scipy's eigendecomposition of the output Gram matrix
does not, and in a thread it would stall the event loop, and every prediction, for as
long as it takes (tens of seconds at N = 2000). The child reports progress through a pipe
and stops after the current tree when asked; a child that does not stop within
``CANCEL_GRACE`` seconds is killed (a model becomes ready only at the very end, so
nothing half-written is ever visible); a child that allocates past the job's memory
budget fails the job. ``isolation="thread"`` runs tasks in the worker thread itself (no
memory budget there). Given a Dask scheduler's address, jobs run on that cluster instead
(service.jobs.cluster).

With ``warm_up`` the training processes' fork server starts with the service, in the
background, so the first job does not wait for okcore's kernels to load or compile; a job
shows the phase "starting" until its fit reports.

Queued jobs wait in one line, oldest first. With ``short_job_seconds`` > 0 one more worker
slot takes only short jobs (estimated at most that many seconds by the job cost model,
service.training.budget), oldest first: a short job never waits behind long ones for more
than the short jobs ahead of it (a 27 s job no longer waits out a 10-minute one). A queued
job's ``queue_position`` (:meth:`JobManager.queue_position`) is 1 when it starts next.

The records (service.jobs.records) are what the API reports. On start-up, records left
``queued`` or ``running`` by a previous process are marked ``failed`` ("interrupted by
server restart"); finished models are never touched. Several replicas may serve one
model store (docs/DEPLOY.md): a job's record names its runner, so a replica starting up
fails only the jobs of its own dead predecessor, and any replica answers for any job from
its record; a job another replica (or the cluster) runs is cancelled through its stop
file.
"""

from __future__ import annotations

import heapq
import logging
import os
import socket
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal

from service.errors import (
    JobRecordInvalid,
    NotFound,
    RecordInvalid,
    ServiceError,
    ShuttingDown,
)
from service.jobs.process import child_main, died, process_context
from service.jobs.progress import PhasePlan, Progress
from service.jobs.quotas import QueueQuotas
from service.jobs.records import ACTIVE, Job, JobRecords, QuarantinedJob, RecordWriter
from service.jobs.task import TrainTask
from service.store import pagination
from service.store.ids import new_id, valid_id
from service.store.model_store import ModelStore

if TYPE_CHECKING:
    from service.jobs.cluster import ClusterJobs

log = logging.getLogger("okboost.jobs")

__all__ = ["JobManager"]

Isolation = Literal["process", "thread"]
CANCEL_GRACE = 5.0  # seconds a training process gets to stop by itself before it is killed
RESTART_REASON = "interrupted by server restart"
SHUTDOWN_REASON = "interrupted by server shutdown"


def local_runner() -> dict[str, Any]:
    """The runner of a job in this process's pool (see :meth:`JobManager.recover`)."""
    return {"kind": "local", "host": socket.gethostname(), "pid": os.getpid()}


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False


def _ready() -> None:
    """What the warm-up's training process runs: nothing (starting it is the warm-up)."""


def cluster_jobs(address: str, records: JobRecords, quotas: QueueQuotas) -> ClusterJobs:
    """Jobs on the Dask cluster at ``address``, each stopped once it runs longer than
    ``quotas.max_seconds`` (imported here: dask is an optional extra)."""
    from service.jobs.cluster import ClusterJobs

    return ClusterJobs(address, records, quotas)


class JobManager(JobRecords):
    """Runs training tasks on ``max_workers`` threads, plus one for short jobs when
    ``short_job_seconds`` > 0 (or, given a Dask scheduler's address, on that cluster:
    service.jobs.cluster) and keeps their records. ``preload``: the modules the training
    processes' fork server imports once (service.jobs.process)."""

    def __init__(
        self,
        store: ModelStore,
        max_workers: int = 1,
        max_queued: int = 64,
        isolation: Isolation = "thread",
        memory_budget: int | None = None,
        dask_scheduler: str | None = None,
        preload: Sequence[str] = (),
        short_job_seconds: float = 0.0,
        warm_up: bool = False,
        quotas: QueueQuotas | None = None,
    ) -> None:
        super().__init__(store)
        self.quotas = quotas or QueueQuotas(max_queued=max_queued)
        # what the waiting jobs hold, and who queued them: (bytes, client) by job id, of the
        # jobs queued (pruned on each admission) and of those being admitted
        self._held: dict[str, tuple[int, str | None]] = {}
        self._admitting: dict[str, tuple[int, str | None]] = {}
        self._overtime: set[str] = set()  # jobs stopped for running past quotas.max_seconds
        self.isolation = isolation
        self.memory_budget = memory_budget
        self._ctx = process_context(preload) if isolation == "process" else None
        self._jobs: dict[str, Job] = {}
        self._created: dict[str, float] = {}  # every job on record: creation times never change
        self._lock = threading.Lock()
        self._shutting_down = False
        self.max_workers = max_workers
        self._executor = ThreadPoolExecutor(max_workers, thread_name_prefix="okboost-train")
        self.short_job_seconds = short_job_seconds
        self._short = (
            ThreadPoolExecutor(1, thread_name_prefix="okboost-short")
            if short_job_seconds > 0
            else None
        )
        # the line of queued jobs, oldest first: (job, task, short); every job queued adds
        # one pull to the pool (and a short one one to the short slot), so there is always
        # a pull to come for every job in the line
        self._line: list[tuple[Job, TrainTask, bool]] = []
        self.cluster = (
            None if dask_scheduler is None else cluster_jobs(dask_scheduler, self, self.quotas)
        )
        self.recover()
        self.warmed = threading.Event()  # set once the training process server is up
        if warm_up and self._ctx is not None and self.cluster is None:
            threading.Thread(target=self._warm_up, name="okboost-warm-up", daemon=True).start()

    def _warm_up(self) -> None:
        """Start the training processes' fork server now, in the background: it imports
        okcore and loads (on a first run after installation, compiles) its numba kernels,
        which the first job would otherwise wait for (service.jobs.process). A job queued
        meanwhile waits for the same server, no longer than it would have."""
        try:
            proc = self._ctx.Process(target=_ready, name="okboost-warm-up")  # type: ignore[union-attr]
            proc.start()
            proc.join()
        except Exception as exc:  # noqa: BLE001 - a warm-up never stops the service
            log.warning("training processes were not warmed up: %s", exc)
        finally:
            self.warmed.set()

    # ------------------------------------------------------------ persistence
    def _read(self, job_id: str) -> Job:
        job = self.read_job(job_id)
        self._created[job.job_id] = job.created
        return job

    def recover(self) -> list[str]:
        """End the jobs left active by a previous process (:meth:`_end_abandoned`); return
        their ids.

        Only jobs that process ran itself: a job on a Dask cluster goes on without it
        (service.jobs.cluster), and one run by another live replica over the same store (its
        process is alive on this host, or it runs on another host) is left to it."""
        interrupted = []
        for path in sorted(self.dir.glob("*.json")):
            if not valid_id(path.stem):
                continue
            try:
                job = self._read(path.stem)
            except RecordInvalid:
                continue  # quarantined (logged): never resumed
            except (OSError, NotFound) as exc:
                log.warning("skipping unreadable job record %s: %s", path, exc)
                continue
            if job.state in ACTIVE and self._abandoned(job):
                self._end_abandoned(job)
                interrupted.append(job.job_id)
        return interrupted

    def _end_abandoned(self, job: Job) -> None:
        """End a job whose runner is gone, as of when it was last heard of: done if its
        model was saved before the runner died (its record says "ready" only once its files
        are all in place), else failed (RESTART_REASON), the leftovers of a save it did not
        finish removed. An end that cannot be written (a full disk) is kept and written
        later (JobRecords.write_end): the service starts all the same."""
        self.store.remove_temporaries(job.model_id)
        job.finished = float(job.record.get("updated") or time.time())
        if self._model_status(job.model_id) == "ready":
            job.state, job.error = "done", None
            job.record["done"] = job.record.get("total", job.progress.total)
        else:
            job.state, job.error = "failed", RESTART_REASON
        self.write_end(job)

    def _model_status(self, model_id: str) -> str | None:
        """The status of a model's record, None when it cannot be read."""
        try:
            return self.store.read_record(model_id).get("status")
        except ServiceError:
            return None

    @staticmethod
    def _abandoned(job: Job) -> bool:
        """Whether an active job's runner is gone (records without one: yes)."""
        runner = job.runner or {}
        if runner.get("kind") == "dask":
            return False
        if "pid" not in runner:
            return True
        if runner.get("host") != socket.gethostname():
            return False
        pid = int(runner["pid"])
        return pid == os.getpid() or _process_gone(pid)

    # ------------------------------------------------------------ public
    def submit(
        self,
        model_id: str,
        task: TrainTask,
        total: int,
        job_id: str | None = None,
        plan: PhasePlan | None = None,
        warnings: list[str] | None = None,
        seconds: float | None = None,
        held: int = 0,
        client: str | None = None,
    ) -> Job:
        """Queue ``task`` (``total`` trees; ``plan``: the estimated phases, for the ETA;
        ``warnings``: what is degenerate about its data; ``seconds``: its estimated time,
        which makes it short or not; ``held``: the bytes its task holds while it waits;
        ``client``: who asks, for the per-client quota), in this process's pool or on the
        Dask cluster."""
        job_id = job_id or new_id()
        with self._lock:
            self._admit(job_id, held, client)
        try:
            job = Job(
                job_id=job_id,
                model_id=model_id,
                progress=Progress(total=max(int(total), 1), plan=plan),
                warnings=list(warnings or []),
            )
            if self.cluster is not None:
                self.cluster.submit(job, task, plan)
                with self._lock:
                    self._held[job_id] = self._admitting.pop(job_id)
                return job
            job.runner = local_runner()
            self.persist(job)  # first: a job that cannot be written is not queued
        except BaseException:
            with self._lock:
                self._admitting.pop(job_id, None)
            raise
        limit = self.short_job_seconds if self._short is not None else -1.0
        short = seconds is not None and seconds <= limit
        with self._lock:
            self._jobs[job.job_id] = job
            self._created[job.job_id] = job.created
            self._held[job_id] = self._admitting.pop(job_id)
            self._line.append((job, task, short))
        self._executor.submit(self._pull, False)
        if short and self._short is not None:
            self._short.submit(self._pull, True)
        return job

    def _admit(self, job_id: str, size: int, client: str | None) -> None:
        """Admit one job of ``size`` bytes from ``client`` to the queue, in this process's
        pool or on the Dask cluster alike, or refuse it (429, QueueQuotas.check). Counted
        against the bounds: the jobs that still wait (their task not started: in the pool,
        state "queued"; on the cluster, the jobs this replica submitted whose record still
        says "queued") and those being admitted meanwhile. Called with the lock held."""
        if self.cluster is not None:
            waiting = set(self.cluster.waiting())
        else:
            waiting = {j.job_id for j in self._jobs.values() if j.state == "queued"}
        self._held = {j: held for j, held in self._held.items() if j in waiting}
        self.quotas.check([*self._held.values(), *self._admitting.values()], size, client)
        self._admitting[job_id] = (size, client)

    def queue_position(self, job_id: str) -> int | None:
        """Where a queued job of this pool stands: 1 when it starts next (the short slot
        counts for a short job: the short jobs ahead of it); None for any other job."""
        with self._lock:
            ahead, short_ahead = 0, 0
            for job, _, short in self._line:
                if job.job_id == job_id:
                    if job.state != "queued":
                        return None
                    return 1 + (min(ahead, short_ahead) if short else ahead)
                if job.state == "queued":
                    ahead += 1
                    short_ahead += short
        return None

    def queued_eta(self, job_id: str) -> float | None:
        """A queued job's ETA: when a worker frees up for it, the running jobs' ETAs and the
        estimates of the jobs ahead of it (the job cost model) taken in turn by the first
        worker free, plus its own estimate. None for any other job, or when a time is
        unknown. The short-job slot is left out: a short job may start sooner."""
        now = time.time()
        with self._lock:
            running = [
                j.progress.eta(now, j.started) for j in self._jobs.values() if j.state == "running"
            ]
            line = [job for job, _, _ in self._line if job.state == "queued"]
        if job_id not in {job.job_id for job in line} or None in running:
            return None
        idle = [0.0] * max(self.max_workers - len(running), 0)
        # a busy worker frees up at its job's ETA (more running than workers: the short slot)
        free = sorted([float(eta or 0.0) for eta in running] + idle)[: self.max_workers]
        for job in line:
            seconds = job.progress.estimate()
            if seconds is None:
                return None
            start = heapq.heappop(free)
            if job.job_id == job_id:
                return start + seconds
            heapq.heappush(free, start + seconds)
        return None

    def _pull(self, short_only: bool) -> None:
        """A worker slot's turn: run the oldest queued job of the line (a short one only,
        for the short slot), if any is left."""
        with self._lock:
            self._line = [entry for entry in self._line if entry[0].state == "queued"]
            entry = next((e for e in self._line if e[2] or not short_only), None)
            if entry is None:
                return
            self._line.remove(entry)
        self._run(entry[0], entry[1])

    def get(self, job_id: str) -> Job:
        """A job of this process's pool as it runs, any other as its record says (an active
        one on the cluster checked with the scheduler first: service.jobs.cluster)."""
        self.path(job_id)  # 404 for an id that is not one
        self.retry_unwritten()
        with self._lock:
            job = self._jobs.get(job_id)
        job = job or self.unwritten(job_id)
        if job is not None:
            return job
        job = self._read(job_id)
        if self.cluster is not None and job.state in ACTIVE:
            return self.cluster.check(job)
        return job

    def describe(self, job_id: str) -> Job | QuarantinedJob:
        """The job (:meth:`get`), or for a quarantined one what GET /jobs reports instead:
        its id, its model's, the state "invalid", when its record was written and the
        reason."""
        try:
            return self.get(job_id)
        except JobRecordInvalid as exc:
            job = self.quarantined(job_id, exc)
            self._created.setdefault(job_id, job.created)
            return job

    def all_jobs(self) -> list[Job | QuarantinedJob]:
        jobs, _ = self.page(None, None)
        return jobs

    def page(
        self, limit: int | None, cursor: str | None, state: str | None = None
    ) -> tuple[list[Job | QuarantinedJob], str | None]:
        """Jobs oldest first, ``limit`` of them after ``cursor`` (service.store.pagination),
        only those in ``state`` if given; without it only the records of the page are read
        (creation times are kept once read). A job deleted or unreadable meanwhile is left
        out, a quarantined one is described as such (:meth:`describe`, state "invalid")."""
        self.retry_unwritten()
        on_disk = {p.stem for p in self.dir.glob("*.json") if valid_id(p.stem)}
        for job_id in on_disk - set(self._created):
            try:
                self.describe(job_id)
            except (NotFound, OSError) as exc:
                log.warning("job %s is not listed, its record cannot be read: %s", job_id, exc)
                continue
        with self._lock:
            keys = [(c, i) for i, c in self._created.items() if i in on_disk or i in self._jobs]
        if state is not None:
            keys = [key for key in keys if self._state(key[1]) == state]
        keys, next_cursor = pagination.select(keys, limit or len(keys), cursor)
        jobs = []
        for _, job_id in keys:
            try:
                jobs.append(self.describe(job_id))
            except (NotFound, OSError):
                continue
        return jobs, next_cursor

    def _state(self, job_id: str) -> str | None:
        """A job's state as answered, None when it cannot be read (deleted meanwhile)."""
        try:
            return str(self.describe(job_id).info()["state"])
        except (NotFound, OSError):
            return None

    def cancel(self, job_id: str) -> Job | QuarantinedJob:
        """Cancel a queued job at once, or ask a running one to stop after its current tree.
        A job run elsewhere (another replica, the cluster) is asked through its stop file.
        A quarantined job (its record invalid) has its record removed."""
        try:
            job = self.get(job_id)
        except JobRecordInvalid:
            return self.remove_quarantined(job_id)
        with self._lock:
            ours = self._jobs.get(job_id) is job
            if job.state in ACTIVE and not ours:
                self.request_stop(job_id)
            if job.state == "queued":
                if self.cluster is not None and not ours:
                    self.cluster.cancel(job)
                self.finish(job, "cancelled", "cancelled by request")
                if not ours:
                    self.request_stop(job_id)  # the runner may pick it up meanwhile
            elif job.state == "running":
                job.cancel_event.set()
        return job

    def wait(self, job_id: str, timeout: float | None) -> bool:
        """Whether the job finished within ``timeout`` seconds (a job run elsewhere, on the
        cluster or by another replica, is followed through its record)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.get(job_id)
            left = None if deadline is None else deadline - time.monotonic()
            if job.live or job.finished_event.is_set():
                return job.finished_event.wait(left)
            if left is not None and left <= 0:
                return False
            time.sleep(0.1 if left is None else min(0.1, left))

    def stop_jobs(self) -> None:
        """The server is stopping: fail the queued jobs and ask the running ones to stop
        after their current tree (they fail with SHUTDOWN_REASON), without waiting for them.
        Called as soon as the server is asked to stop (service.cli), so a request waiting
        for a job ("wait": true) is answered at once, not after OKBOOST_WAIT_TIMEOUT while
        the server cannot stop."""
        with self._lock:
            self._shutting_down = True
            for job in self._jobs.values():
                if job.state == "queued":
                    job.exception = self._shutdown_error(job)
                    self.finish(job, "failed", SHUTDOWN_REASON)
                elif job.state == "running":
                    job.cancel_event.set()

    @staticmethod
    def _shutdown_error(job: Job) -> ShuttingDown:
        return ShuttingDown(
            f"the server is shutting down: training job '{job.job_id}' was stopped "
            f"({SHUTDOWN_REASON}); train again once the server is back"
        )

    def shutdown(self) -> None:
        """Stop running jobs after their current tree, mark them failed, stop the pool. Jobs
        on the cluster go on (the connection to the scheduler is closed)."""
        if self.cluster is not None:
            self.cluster.close()
        self.stop_jobs()
        self._executor.shutdown(wait=True, cancel_futures=True)
        if self._short is not None:
            self._short.shutdown(wait=True, cancel_futures=True)

    # ------------------------------------------------------------ worker side
    def _stop_asked(self, job: Job) -> bool:
        """Whether a stop was asked, here or (through the stop file) by another replica."""
        if not job.cancel_event.is_set() and self.stop_requested(job.job_id):
            job.cancel_event.set()
        return job.cancel_event.is_set()

    def _overdue(self, job: Job) -> bool:
        """Whether a running job has run past quotas.max_seconds (it is then stopped)."""
        if not self.quotas.overdue(job.started):
            return False
        self._overtime.add(job.job_id)
        return True

    def _run(self, job: Job, task: TrainTask) -> None:
        with self._lock:
            if job.state != "queued":
                return  # cancelled while queued
            if self._stop_asked(job):  # cancelled while queued, through another replica
                self.finish(job, "cancelled", "cancelled by request")
                return
            job.state, job.started, job.attempt = "running", time.time(), 1
            job.progress.start(job.started)
        try:
            self.persist(job)
            if self._ctx is None:
                outcome = self._run_in_thread(job, task)
            else:
                outcome = self._run_in_process(job, task)
        except Exception as exc:  # noqa: BLE001 - any failure becomes the job's reason
            job.exception = exc
            with self._lock:
                self.fail(job, exc)
            return
        with self._lock:
            if outcome == "cancelled" and job.job_id in self._overtime:
                self._overtime.discard(job.job_id)
                self.finish(job, "failed", self.quotas.overtime_reason())
            elif outcome == "cancelled" and self._shutting_down:
                job.exception = self._shutdown_error(job)
                self.finish(job, "failed", SHUTDOWN_REASON)
            else:
                self.settle(job, outcome)

    def _run_in_thread(self, job: Job, task: TrainTask) -> str:
        class _Reporter:
            def __call__(_, p: Any) -> bool:  # noqa: N805
                writer.report(p)
                return self._stop_asked(job) or self._overdue(job)

            def saving(_) -> None:  # noqa: N805
                writer.saving()

        with RecordWriter(self, job) as writer:
            return task(_Reporter())

    def _run_in_process(self, job: Job, task: TrainTask) -> str:
        assert self._ctx is not None
        receiver, sender = self._ctx.Pipe(duplex=False)
        stop = self._ctx.Event()
        proc = self._ctx.Process(
            target=child_main,
            args=(task, sender, stop, self.memory_budget),
            name=f"okboost-job-{job.job_id[:8]}",
        )
        proc.start()
        sender.close()
        saving, asked_at = False, None
        writer = RecordWriter(self, job)  # flushed here, on every look at the pipe
        try:
            while True:
                if receiver.poll(0.1):
                    try:
                        message = receiver.recv()
                    except EOFError:
                        break  # the child died without a word
                    kind = message[0]
                    if kind == "progress":
                        writer.report(SimpleNamespace(**message[1]))
                    elif kind == "saving":
                        saving = True
                        writer.saving()
                    elif kind == "done":
                        return str(message[1])
                    elif kind == "error":
                        raise message[1]
                elif not proc.is_alive() and not receiver.poll():
                    break
                writer.flush()
                if self._stop_asked(job) or self._overdue(job):
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
            # a killed process leaves the save it was making (a finished one left nothing)
            self.store.remove_temporaries(job.model_id)
        raise died(proc.exitcode)
