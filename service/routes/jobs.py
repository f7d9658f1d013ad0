"""GET /jobs, GET /jobs/{id}, DELETE /jobs/{id} (cancel)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from service.deps import Services, ServicesDep
from service.jobs.records import Job, QuarantinedJob
from service.routes.models import Cursor, Limit
from service.routes.openapi import responses
from service.schemas import examples
from service.schemas.api import InvalidJobInfo, JobInfo, JobList
from service.store import pagination

router = APIRouter(tags=["jobs"])

JobId = Annotated[str, Path(description="Job id from POST /train.", examples=[examples.JOB_ID])]
Curves = Annotated[
    bool,
    Query(
        description="Include the loss curves so far (train_loss, validation_loss, curve_step).",
        examples=[True],
    ),
]


State = Annotated[
    Literal["queued", "running", "done", "failed", "cancelled", "invalid"] | None,
    Query(
        description="Only the jobs in this state (`invalid`: quarantined records).",
        examples=["failed"],
    ),
]


def _info(svc: Services, job: Job | QuarantinedJob, curves: bool) -> dict[str, Any]:
    """A job's answer: its record's view, and while it is queued where it stands in the
    queue and its ETA (service.jobs.manager.JobManager.queued_eta)."""
    info = job.info(curves)
    if isinstance(job, Job):
        info["queue_position"] = svc.jobs.queue_position(job.job_id)
        if info["state"] == "queued":
            info["eta"] = svc.jobs.queued_eta(job.job_id)
    return info


@router.get(
    "/jobs",
    summary="List training jobs, a page at a time",
    response_model=JobList,
    responses=responses(200, JobList, {"jobs": [examples.JOB_INFO], "next_cursor": None}, 401, 422),
)
async def list_jobs(
    svc: ServicesDep,
    limit: Limit = pagination.DEFAULT_LIMIT,
    cursor: Cursor = None,
    state: State = None,
    curves: Curves = False,
) -> JSONResponse:
    """Jobs oldest first, `limit` per page; `next_cursor` (null on the last page) asks for
    the next, with the same `state`. Only the jobs in one `state` with `state`. A job whose
    stored record fails validation is listed with the state `invalid` and the reason
    (quarantined: never run or resumed)."""
    jobs, next_cursor = await run_in_threadpool(svc.jobs.page, limit, cursor, state)
    return JSONResponse(
        {"jobs": [_info(svc, job, curves) for job in jobs], "next_cursor": next_cursor}
    )


@router.get(
    "/jobs/{job_id}",
    summary="State, phase, progress and ETA of a training job (loss curves on request)",
    response_model=JobInfo | InvalidJobInfo,
    responses=responses(200, None, examples.JOB_INFO, 401, 404, 422),
)
async def get_job(job_id: JobId, svc: ServicesDep, curves: Curves = False) -> JSONResponse:
    """A quarantined job (its stored record fails validation) is answered with the state
    `invalid` and the reason."""
    job = await run_in_threadpool(svc.jobs.describe, job_id)
    return JSONResponse(_info(svc, job, curves))


@router.delete(
    "/jobs/{job_id}",
    summary="Cancel a training job",
    response_model=JobInfo | InvalidJobInfo,
    responses=responses(200, None, dict(examples.JOB_INFO, state="cancelled"), 401, 404, 422),
)
async def cancel_job(job_id: JobId, svc: ServicesDep) -> JSONResponse:
    """A queued job is cancelled at once; a running one stops after its current tree
    (its state stays `running` until then). Finished jobs are left as they are. A
    quarantined job (state `invalid`) has its record removed: the answer is what it was
    listed as, and the job is unknown (404) afterwards."""
    job = await run_in_threadpool(svc.jobs.cancel, job_id)
    return JSONResponse(job.info())
