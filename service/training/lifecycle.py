"""A model's life outside of its fit (no HTTP here): start its training job, wait for it,
delete the model (cancelling its training).

POST /train is :func:`start_training` then, with ``"wait": true``, :func:`wait_trained`;
DELETE /models/{id} is :func:`delete_model`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shutil
import time
from collections.abc import Callable
from typing import Any

import okcore
from service.config import Settings
from service.errors import NotFound, NotReady, RecordInvalid, ServiceError
from service.jobs.manager import JobManager
from service.jobs.records import Job
from service.store.ids import new_id
from service.store.model_store import ModelStore
from service.store.usage import check_quotas
from service.training.budget import check_disk, check_limits, held_bytes
from service.training.fit import TrainPlan, run_training

WAIT_POLL = 0.02
"""Seconds between two looks at a job that a request waits for."""


class TrainingFailed(ServiceError):
    """A training job a request waited for failed by a server-side fault."""

    status = 500
    code = "training_failed"


def start_training(
    plan: TrainPlan | Any,
    store: ModelStore,
    jobs: JobManager,
    settings: Settings,
    run: Callable[..., str] | None = None,
    client: str | None = None,
) -> Job:
    """Queue the training of ``plan``: check its cost against the limits (422) and the free
    disk (507), give the model and the job their ids, write the model's record
    ("training"), then submit the job, ``run(plan, root, model_id, reporter)``. A job that
    is not queued (a full queue, a full disk, an unreachable cluster) leaves no model
    behind. ``plan``: a TrainPlan, or any plan with ``estimate``, ``record``, ``total`` and
    ``phases()`` (bipartite and multi-label plans, with their own ``run``; None: a
    TrainPlan's :func:`run_training`, looked up when called). ``client``: who asks (its
    address), for the per-client quotas (service.store.usage, service.jobs.manager)."""
    check_limits(plan.estimate, settings)  # 422 naming the estimate and the limit
    check_disk(plan.estimate, shutil.disk_usage(store.root).free)  # 507
    check_quotas(store, settings, client, plan.estimate.disk_bytes)  # 507 / 429
    model_id, job_id = new_id(), new_id()
    plan.record.update(model_id=model_id, job_id=job_id, error=None, client=client)
    store.create_record(plan.record)  # a full disk: 507, nothing written
    task = functools.partial(run or run_training, plan, store.root, model_id)
    try:
        return jobs.submit(
            model_id,
            task,
            plan.total,
            job_id=job_id,
            plan=plan.phases(),
            warnings=plan.record.get("warnings", []),
            seconds=plan.estimate.seconds,
            held=held_bytes(plan),
            client=client,
        )
    except ServiceError:
        with contextlib.suppress(NotFound):
            store.delete(model_id)
        raise


async def wait_trained(job: Job, store: ModelStore, timeout: float) -> dict[str, Any] | None:
    """The model's record once ``job`` is done, or None if it is still queued or running
    after ``timeout`` seconds. A failed job raises its error (okcore's data errors and the
    service's own as they are: 422, 507 ...; anything else as TrainingFailed, 500), a
    cancelled one NotReady (409).

    Polls the job's event from the event loop: blocking a thread per waiting client would
    let a few slow trainings starve the predictions of threads."""
    deadline = time.monotonic() + timeout
    while not job.finished_event.is_set() and time.monotonic() < deadline:
        await asyncio.sleep(WAIT_POLL)
    if not job.finished_event.is_set():
        return None
    if job.state == "done":
        return store.read_record(job.model_id)
    if job.state == "failed":
        if isinstance(job.exception, okcore.OKCoreError | ServiceError):
            raise job.exception  # okcore data errors -> 422 with okcore's message
        raise TrainingFailed(f"training failed: {job.error}")
    raise NotReady(f"training job '{job.job_id}' was {job.state}: {job.error}")


def delete_model(store: ModelStore, jobs: JobManager, model_id: str) -> None:
    """Delete a model; one still training has its job cancelled first (404 if unknown).
    A quarantined model (its record invalid) is deleted as it is."""
    try:
        record = store.read_record(model_id)
    except RecordInvalid:
        record = {}
    if record.get("status") == "training" and record.get("job_id"):
        try:
            jobs.cancel(record["job_id"])
        except ServiceError:
            pass  # job record gone: nothing to cancel
    store.delete(model_id)
