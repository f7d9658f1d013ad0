"""POST /train: validate, queue a training job, optionally wait for it."""

from __future__ import annotations

import asyncio
import functools
import shutil
import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

import okcore
from service.deps import ServicesDep
from service.errors import NotReady, ServiceError
from service.http.bodies import read_body
from service.routes.models import model_view
from service.routes.openapi import request_body, responses
from service.schemas import examples
from service.schemas.api import TRAIN_EXAMPLE, TrainAccepted, TrainRequest
from service.store.ids import new_id
from service.training.budget import check_disk, check_limits
from service.training.fit import plan_training, run_training

router = APIRouter(tags=["training"])

_TRAIN_DONE = dict(examples.TRAIN_ACCEPTED, state="done", model=examples.MODEL_INFO)


class TrainingFailed(ServiceError):
    status = 500
    code = "training_failed"


def _accepted(model_id: str, job_id: str, state: str, model: Any = None) -> dict[str, Any]:
    return {
        "model_id": model_id,
        "job_id": job_id,
        "state": state,
        "job_url": f"/jobs/{job_id}",
        "model_url": f"/models/{model_id}",
        "model": model,
    }


@router.post(
    "/train",
    status_code=202,
    summary="Train a model (as a background job)",
    response_model=None,
    responses={
        **responses(
            202,
            TrainAccepted,
            examples.TRAIN_ACCEPTED,
            401,
            413,
            415,
            422,
            429,
            507,
            ok_description="Job queued; poll job_url",
        ),
        201: {
            "description": 'Model trained ("wait": true)',
            "model": TrainAccepted,
            "content": {"application/json": {"example": _TRAIN_DONE}},
        },
    },
    openapi_extra=request_body(
        TrainRequest,
        TRAIN_EXAMPLE,
        ["inputs", "output_kernel.gram", "output_kernel.outputs", "output_kernel.edges"],
    ),
)
async def train(request: Request, svc: ServicesDep) -> JSONResponse:
    """Queue the training of an OKBoost / OK3 / OK3-forest model.

    Answers 202 with `model_id` and `job_id` at once; poll `GET /jobs/{job_id}`.
    With `"wait": true` the request blocks until the model is trained (201) or
    `OKBOOST_WAIT_TIMEOUT` seconds pass (then 202 as usual).
    """
    req = await read_body(request, TrainRequest, svc.settings.max_request_bytes)
    plan = await run_in_threadpool(plan_training, req)
    check_limits(plan.estimate, svc.settings)  # 422 naming the estimate and the limit
    check_disk(plan.estimate, shutil.disk_usage(svc.store.root).free)  # 507
    model_id, job_id = new_id(), new_id()
    plan.record.update(model_id=model_id, job_id=job_id, error=None)
    svc.store.create_record(plan.record)  # a full disk: 507, nothing written
    task = functools.partial(run_training, plan, svc.store.root, model_id)
    try:
        job = svc.jobs.submit(
            model_id, task, plan.total, job_id=job_id, plan=plan.estimate.phases()
        )
    except ServiceError:  # not queued (full queue, full disk): no model either
        svc.store.record_path(model_id).unlink(missing_ok=True)
        raise
    if req.wait:
        # Poll the job's event from the loop: blocking a pool thread per waiting client
        # would let a few slow trainings starve the predictions of threads.
        deadline = time.monotonic() + svc.settings.wait_timeout
        while not job.finished_event.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if job.finished_event.is_set():
            if job.state == "done":
                record = model_view(svc.store.read_record(model_id))
                return JSONResponse(_accepted(model_id, job.job_id, "done", record), 201)
            if job.state == "failed":
                if isinstance(job.exception, okcore.OKCoreError | ServiceError):
                    raise job.exception  # okcore data errors -> 422 with okcore's message
                raise TrainingFailed(f"training failed: {job.error}")
            raise NotReady(f"training job '{job.job_id}' was {job.state}: {job.error}")
    return JSONResponse(_accepted(model_id, job.job_id, job.state), 202)
