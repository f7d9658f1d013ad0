"""Training jobs on a Dask cluster (``OKBOOST_DASK_SCHEDULER``, ``okboost serve --dask-scheduler``).

/train submits the job's task (the same picklable TrainTask a local training process runs:
fit, then write the model into the store under a temporary name and rename it into place)
to the scheduler as one Dask task keyed ``okboost-train-<job id>``. The task is
``fire_and_forget``-ed, so the scheduler runs it even when no client holds it any more (the
replica that submitted it may die), and published under its key, so any replica can find it.

Progress goes through the shared job record files, as for local jobs, not through Dask:
the task writes the record on the worker with service.jobs.records.JobRecords (each state and
phase at once, the trees at most once a second, the ETA of service.jobs.progress), and every
replica answers GET /jobs from it. Why files and not a Dask Variable, Queue or Pub/Sub: the
worker must see the store anyway to write the model; a record on disk outlives the replica
that submitted the job and the scheduler itself; a Pub/Sub message is lost when nobody
listens; and one small file write a second costs a file system nothing, where a scheduler
round trip per tree would cost every worker.

Cancel: DELETE /jobs/{id} leaves the job's stop file; the task checks it after every tree
(one stat) and ends as "cancelled", writing no model; a task still queued on the
scheduler is also cancelled there. A running task is never killed: Dask cannot interrupt a
task, so a job in a set-up phase (the output kernel's factorisation) stops at its first tree.
The task stops itself the same way once it has run longer than ``OKBOOST_MAX_JOB_SECONDS``
(the job then fails naming the setting, as a local job does).

Failures the task writes itself (bad data, a full disk) read as for local jobs. Those it
cannot write: its worker died (Dask reruns the task on another worker, up to
``distributed.scheduler.allowed-failures`` times, default 3: each run starts over, counted
by the record's ``attempt``; then the job fails), its worker cannot import okboost (the task
is sent as a pickle that runs it when loaded, :class:`_Run`, so the worker fails it with the
ImportError rather than closing), or the scheduler lost it. The replica
that submitted the job hears it from its future; any replica reading the active record of
a job whose task the scheduler no longer has, or has as erred, marks it failed.
"""

from __future__ import annotations

import functools
import pickle
import threading
import time
from pathlib import Path
from typing import Any

from distributed import Client, Future, fire_and_forget, get_worker
from distributed.protocol.pickle import dumps
from distributed.scheduler import KilledWorker

from service.errors import ServiceError
from service.jobs.progress import PhasePlan, Progress
from service.jobs.quotas import QueueQuotas
from service.jobs.records import ACTIVE, Job, JobRecords, RecordWriter
from service.jobs.task import TrainTask
from service.store.model_store import ModelStore

TASK_PREFIX = "okboost-train-"
CONNECT_TIMEOUT = "30s"
RECONNECT_TIMEOUT = "5s"
RECONNECT_EVERY = 5.0
"""Once the scheduler was lost, a request tries to reach it again within RECONNECT_TIMEOUT;
for RECONNECT_EVERY seconds after a failed try, cluster calls fail at once, so a
/train answers 503 and a GET /jobs or a /metrics scrape answers from the records, without
waiting out CONNECT_TIMEOUT (the wait at start-up) on every request."""
LOST_GRACE = 30.0
"""Seconds a job's record may be active while the scheduler has no task for it (it is
written just before the task is submitted) before a replica declares the task lost."""


class ClusterUnavailable(ServiceError):
    """The Dask scheduler cannot be reached (POST /train answers 503: retry later)."""

    status = 503
    code = "cluster_unavailable"


class StoreNotShared(ServiceError):
    """A Dask worker does not see the replicas' model store at the same path."""

    status = 500
    code = "store_not_shared"


def lost_reason(exc: BaseException | None) -> str:
    """Why a job whose task the cluster lost failed, in words a user can act on."""
    if isinstance(exc, KilledWorker):
        return (
            "the Dask workers running this job died (or were restarted) more often than "
            "distributed.scheduler.allowed-failures allows, e.g. out of memory: give the "
            "workers more memory, or train on fewer rows or trees"
        )
    if isinstance(exc, ImportError):
        return (
            f"a Dask worker cannot import okboost ({exc}): install okboost with its [dask] "
            "extra in every worker's environment, and start the workers with --preload "
            "service.jobs.cluster, so that a worker without it stops when it starts"
        )
    if exc is None:
        return (
            "the Dask scheduler lost this job's task (it was restarted, or the connection "
            "to it was lost): train again"
        )
    return f"{type(exc).__name__}: {exc}"


class ClusterJobs:
    """The replica's side: submit tasks, follow them, cancel them (see the module)."""

    def __init__(self, address: str, records: JobRecords, quotas: QueueQuotas) -> None:
        self.address = address
        self.records = records
        self.quotas = quotas  # max_seconds: the tasks stop themselves past it
        self._reconnect_lock = threading.Lock()
        self._retry_at = 0.0  # monotonic time before which the scheduler is not tried again
        self._unreachable: ClusterUnavailable | None = None  # why the last try failed
        # at start-up: a wrong address stops the service
        self.client = self._connect(CONNECT_TIMEOUT)
        self._submitted: dict[str, Job] = {}  # by this replica, not yet settled
        # other replicas' tasks this one was asked about: a future's state arrives from the
        # scheduler after it is fetched, so it is kept to be read on the next check
        self._watched: dict[str, Future] = {}
        self._lock = threading.Lock()
        self._closing = False

    def _connect(self, timeout: str) -> Client:
        try:
            return Client(self.address, set_as_default=False, timeout=timeout)
        except OSError as exc:
            raise self._cannot_reach(exc) from exc
        except ValueError as exc:  # not an address: e.g. http://, which Dask does not speak
            raise ValueError(
                f"OKBOOST_DASK_SCHEDULER (--dask-scheduler) {self.address!r} is not a Dask "
                f"scheduler's address ({exc}): give it as tcp://host:8786"
            ) from exc

    def _cannot_reach(self, exc: BaseException) -> ClusterUnavailable:
        return ClusterUnavailable(
            f"the Dask scheduler at {self.address} cannot be reached ({exc}); retry when it is back"
        )

    def _connected(self) -> Client:
        """The client, connected again if it gave up (the scheduler was away longer than
        CONNECT_TIMEOUT, e.g. restarted): ClusterUnavailable while it cannot be reached,
        at once between two tries (RECONNECT_EVERY)."""
        with self._reconnect_lock:
            if self.client.status not in ("closing", "closed"):
                return self.client
            if self._unreachable is not None and time.monotonic() < self._retry_at:
                raise self._unreachable
            try:
                self.client = self._connect(RECONNECT_TIMEOUT)
            except ClusterUnavailable as exc:
                self._unreachable = exc
                self._retry_at = time.monotonic() + RECONNECT_EVERY  # from the failed try's end
                raise
            self._unreachable = None
            return self.client

    def state(self) -> tuple[bool, int]:
        """Whether the scheduler is connected now, and how many workers it has (0 when it
        is not): what /metrics reports of the cluster."""
        if self.client.status != "running":
            return False, 0
        try:
            return True, len(self.client.nthreads())
        except (OSError, RuntimeError):  # lost meanwhile
            return False, 0

    def unsettled(self) -> list[Job]:
        with self._lock:
            return list(self._submitted.values())

    def waiting(self) -> list[str]:
        """The jobs this replica submitted whose task has not started: their record (which
        the task writes when it starts) still says "queued". What the queue's bounds count
        (service.jobs.manager.JobManager._admit); a record that cannot be read is not."""
        ids = []
        for job in self.unsettled():
            try:
                if self.records.read_job(job.job_id).state == "queued":
                    ids.append(job.job_id)
            except (ServiceError, OSError):
                continue  # deleted or quarantined meanwhile: it does not wait
        return ids

    def submit(self, job: Job, task: TrainTask, plan: PhasePlan | None) -> None:
        """Write the job's queued record, then send its task to the scheduler."""
        key = TASK_PREFIX + job.job_id
        job.runner = {"kind": "dask", "scheduler": self.address, "key": key}
        job.live = False  # what it reports is what its task writes
        client = self._connected()
        self.records.persist(job)  # first: a job that cannot be written is not queued
        root = str(self.records.store.root)
        try:
            payload = dumps(_Run(task, root, job.job_id, plan, self.quotas))
            future = client.submit(pickle.loads, payload, key=key, pure=False)
            fire_and_forget(future)
            client.publish_dataset(future, name=key)
        except (OSError, RuntimeError) as exc:  # the scheduler went away meanwhile
            unavailable = self._cannot_reach(exc)
            self.records.finish(job, "failed", str(unavailable))
            raise unavailable from exc
        with self._lock:
            self._submitted[job.job_id] = job
        future.add_done_callback(functools.partial(self._settled, job))

    def _settled(self, job: Job, future: Future) -> None:
        """The task ended (in a callback thread): finish the record if the task could not,
        and tell whoever waits on ``job`` (POST /train with "wait": true)."""
        if self._closing:
            return  # this replica shuts down: the cluster goes on with the task
        exc: BaseException | None = None
        if future.status == "error":
            exc = future.exception()
        elif future.status != "finished":
            exc = None  # cancelled: by a DELETE (the record says so) or lost
        on_record = self._fail_if_active(job.job_id, exc)
        job.state, job.error, job.finished = on_record.state, on_record.error, on_record.finished
        job.record, job.exception = on_record.record, exc
        with self._lock:
            self._submitted.pop(job.job_id, None)
        self._unpublish(future.key)
        job.finished_event.set()

    def _fail_if_active(self, job_id: str, exc: BaseException | None) -> Job:
        """The job as recorded, failed first if its record is still active (its task ended
        without writing an outcome: a lost task, a dead worker, a store it could not see)."""
        job = self.records.read_job(job_id)
        if job.state in ACTIVE:
            if exc is None or isinstance(exc, KilledWorker | ImportError):
                self.records.finish(job, "failed", lost_reason(exc))
            else:
                self.records.fail(job, exc)
            if exc is None:  # lost by the scheduler: a worker may still run it, so stop it
                self.records.request_stop(job_id)
        return job

    def check(self, job: Job) -> Job:
        """An active job read from its record, failed if the scheduler lost or failed its
        task (see the module); otherwise as it is."""
        key = (job.runner or {}).get("key")
        if not key or job.job_id in self._submitted:
            return job  # not on the cluster, or ours: our future's callback settles it
        future = self._watched.get(key)
        if future is None:
            try:
                future = self._connected().get_dataset(key, default=None)
            except (ClusterUnavailable, OSError):
                return job  # the scheduler is away: nothing can be told yet
            if future is None:
                if time.time() - float(job.record.get("updated") or 0.0) < LOST_GRACE:
                    return job
                return self._fail_if_active(job.job_id, None)
            self._watched[key] = future
        if future.done():
            self._watched.pop(key, None)
        if future.status == "error":
            return self._fail_if_active(job.job_id, future.exception())
        if future.status in ("cancelled", "lost"):
            return self._fail_if_active(job.job_id, None)
        return job

    def cancel(self, job: Job) -> None:
        """Take a queued job's task off the scheduler (its record is the caller's)."""
        key = (job.runner or {}).get("key")
        try:
            future = self._connected().get_dataset(key, default=None) if key else None
        except (ClusterUnavailable, OSError):
            return  # the scheduler is away: the task checks the stop file when it starts
        if future is not None:
            self.client.cancel([future], force=True)  # force: fire-and-forget wants it too
            self._unpublish(key)

    def _unpublish(self, key: Any) -> None:
        try:
            self.client.unpublish_dataset(key)
        except (KeyError, OSError, RuntimeError):
            pass  # already unpublished, or no scheduler to tell

    def close(self) -> None:
        """Disconnect; tasks on the cluster go on."""
        self._closing = True
        self.client.close()


class _Run:
    """A job's task as one pickle whose loading runs it: the scheduler sends ``pickle.loads``
    and bytes, which every worker can read, so a worker that cannot import okboost fails
    the task with its ImportError (the job fails saying so) instead of closing on a message
    it cannot read (Dask's answer to a task it cannot unpickle), which left the job queued."""

    def __init__(self, *args: Any) -> None:
        self.args = args

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return run_on_worker, self.args


def run_on_worker(
    task: TrainTask, root: str, job_id: str, plan: PhasePlan | None, quotas: QueueQuotas
) -> str:
    """The Dask task of a job: run ``task`` on this worker, writing the job's record in the
    shared store as a local job's runner does (service.jobs.manager), and stopping it after
    the tree that passes ``quotas.max_seconds`` (the job then fails, naming the setting).
    Returns the task's outcome; re-raises its failure after recording it."""
    store_root = Path(root)
    if not (store_root / "jobs" / f"{job_id}.json").is_file():
        raise StoreNotShared(
            f"the model store {root} is not shared with Dask worker {get_worker().address} "
            f"(no record of job {job_id} there): mount the replicas' store at the same path "
            "on every worker"
        )
    records = JobRecords(ModelStore(store_root))
    job = records.read_job(job_id)
    if job.state not in ACTIVE:
        return "cancelled"  # cancelled (or failed) while it waited on the scheduler
    if records.stop_requested(job_id):
        records.finish(job, "cancelled", "cancelled by request")
        return "cancelled"
    job.progress = Progress(total=job.progress.total, plan=plan)
    job.state, job.started, job.error = "running", time.time(), None
    job.attempt += 1  # a rerun after its worker died starts over
    job.runner = {**(job.runner or {}), "worker": get_worker().address}
    records.persist(job)

    overtime = False

    class _Reporter:
        def __call__(self, p: Any) -> bool:
            nonlocal overtime
            writer.report(p)
            overtime = overtime or quotas.overdue(job.started)
            return overtime or records.stop_requested(job_id)

        def saving(self) -> None:
            pass  # a cluster task is never killed, so saving needs no protection

    try:
        with RecordWriter(records, job) as writer:
            outcome = task(_Reporter())
    except Exception as exc:
        if records.read_job(job_id).state in ACTIVE:
            records.fail(job, exc)
        raise
    if records.read_job(job_id).state not in ACTIVE:
        # declared lost meanwhile: it asked this task to stop, which it did
        records.clear_stop(job_id)
    elif outcome == "cancelled" and overtime:
        records.finish(job, "failed", quotas.overtime_reason())
    else:
        records.settle(job, outcome)
    return outcome
