"""POST /train: read the request, queue its training job (service.training), answer."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from service.deps import ServicesDep, client_key
from service.errors import InvalidRequest
from service.http.bodies import BodyChoice, read_body_of
from service.jobs.records import Job
from service.routes.models import model_view
from service.routes.openapi import request_body, responses
from service.schemas import examples
from service.schemas.api import OUTPUT_KERNEL_PARTS, TRAIN_EXAMPLE, TrainAccepted, TrainRequest
from service.schemas.bipartite import BipartiteTrainRequest
from service.schemas.multilabel import MultiLabelTrainRequest
from service.training.bipartite import plan_bipartite, run_bipartite
from service.training.fit import plan_training, run_training
from service.training.lifecycle import start_training, wait_trained
from service.training.multilabel import plan_multilabel, run_multilabel

router = APIRouter(tags=["training"])

_TRAIN_DONE = dict(
    examples.TRAIN_ACCEPTED, state="done", model=examples.MODEL_INFO, wait_timeout=120.0
)
_TRAIN_TIMED_OUT = dict(
    examples.TRAIN_ACCEPTED, state="running", timed_out=True, wait_timeout=120.0
)


TASKS: dict[str, type[Any]] = {
    "bipartite": BipartiteTrainRequest,
    "multilabel": MultiLabelTrainRequest,
}


def _task_model(data: dict[str, Any]) -> type[Any]:
    """The request model of a /train body: by its ``task`` (none, or "structured" as the
    records say, which is dropped here: one set of samples)."""
    task = data.get("task")
    if task == "structured":
        del data["task"]
    if task in (None, "structured"):
        return TrainRequest
    if task not in TASKS:
        raise InvalidRequest(
            f"task {str(task)[:40]!r} is not one of {', '.join(map(repr, TASKS))}: leave it out "
            "(or say 'structured') to train on one set of samples or graph vertices with an "
            "output kernel",
            details=[{"loc": ["task"], "msg": f"one of {['structured', *TASKS]}"}],
        )
    return TASKS[task]


TRAIN_BODIES = BodyChoice((TrainRequest, *TASKS.values()), _task_model)


def _plan(req: Any, max_dense: int) -> tuple[Any, Any]:
    """The job's plan and the function that runs it, by the request's task."""
    if isinstance(req, BipartiteTrainRequest):
        return plan_bipartite(req, max_dense), run_bipartite
    if isinstance(req, MultiLabelTrainRequest):
        return plan_multilabel(req), run_multilabel
    return plan_training(req), run_training


def _accepted(
    job: Job, state: str, model: Any = None, wait_timeout: float | None = None
) -> dict[str, Any]:
    """The answer of POST /train; ``wait_timeout``: the limit of a ``"wait": true`` request
    (it timed out when the model is not there)."""
    return {
        "model_id": job.model_id,
        "job_id": job.job_id,
        "state": state,
        "job_url": f"/jobs/{job.job_id}",
        "model_url": f"/models/{job.model_id}",
        "model": model,
        "timed_out": wait_timeout is not None and model is None,
        "wait_timeout": wait_timeout,
    }


_ACCEPTED_RESPONSES = responses(
    202,
    TrainAccepted,
    examples.TRAIN_ACCEPTED,
    401,
    413,
    415,
    422,
    429,
    503,
    507,
    ok_description='Job queued; poll job_url (with "wait": true, the wait timed out: '
    '"timed_out": true)',
)
_ACCEPTED_RESPONSES[202]["content"]["application/json"] = {
    "examples": {
        "queued": {"summary": "Job queued", "value": examples.TRAIN_ACCEPTED},
        "timed_out": {"summary": '"wait": true timed out', "value": _TRAIN_TIMED_OUT},
    }
}


@router.post(
    "/train",
    status_code=202,
    summary="Train a model (as a background job)",
    response_model=TrainAccepted,
    responses={
        **_ACCEPTED_RESPONSES,
        201: {
            "description": 'Model trained ("wait": true)',
            "model": TrainAccepted,
            "content": {"application/json": {"example": _TRAIN_DONE}},
        },
    },
    openapi_extra=request_body(
        TrainRequest,
        TRAIN_EXAMPLE,
        ["inputs", *OUTPUT_KERNEL_PARTS],
        also=(BipartiteTrainRequest, MultiLabelTrainRequest),
    ),
)
async def train(request: Request, svc: ServicesDep) -> JSONResponse:
    """Queue the training of an OKBoost / OK3 / OK3-forest model.

    With `"task": "bipartite"` (BipartiteTrainRequest) the model learns the interactions
    between two vertex sets (`rows`, `cols`, `edges` or `adjacency`); with `"task":
    "multilabel"` (MultiLabelTrainRequest) label sets (`inputs`, 0/1 `labels`).
    Answers 202 with `model_id` and `job_id` at once; poll `GET /jobs/{job_id}`.
    With `"wait": true` the request blocks until the model is trained (201) or
    `OKBOOST_WAIT_TIMEOUT` seconds pass: then 202 with `"timed_out": true`, the limit it
    waited (`wait_timeout`, seconds) and the job to follow (`job_id`, `job_url`).
    """
    req = await read_body_of(request, TRAIN_BODIES, svc.settings.max_request_bytes)
    plan, run = await run_in_threadpool(_plan, req, svc.settings.max_dense_values)
    client = client_key(request)
    job = start_training(plan, svc.store, svc.jobs, svc.settings, run, client=client)
    if not req.wait:
        return JSONResponse(_accepted(job, job.state), 202)
    limit = svc.settings.wait_timeout
    record = await wait_trained(job, svc.store, limit)
    if record is not None:
        return JSONResponse(_accepted(job, "done", model_view(record), limit), 201)
    return JSONResponse(_accepted(job, job.state, wait_timeout=limit), 202)
