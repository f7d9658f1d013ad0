"""GET /jobs, GET /jobs/{id}, DELETE /jobs/{id} (cancel)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from service import examples
from service.deps import ServicesDep
from service.routes._docs import responses
from service.schemas import JobInfo

router = APIRouter(tags=["jobs"])

JobId = Annotated[str, Path(description="Job id from POST /train.", examples=[examples.JOB_ID])]


@router.get(
    "/jobs",
    summary="List training jobs",
    response_model=None,
    responses=responses(200, None, {"jobs": [examples.JOB_INFO]}, 401),
)
async def list_jobs(svc: ServicesDep) -> JSONResponse:
    jobs = await run_in_threadpool(svc.jobs.all_jobs)
    return JSONResponse({"jobs": [job.info() for job in jobs]})


@router.get(
    "/jobs/{job_id}",
    summary="State, progress, ETA and loss curve of a training job",
    response_model=None,
    responses=responses(200, JobInfo, examples.JOB_INFO, 401, 404, 422),
)
async def get_job(job_id: JobId, svc: ServicesDep) -> JSONResponse:
    job = await run_in_threadpool(svc.jobs.get, job_id)
    return JSONResponse(job.info())


@router.delete(
    "/jobs/{job_id}",
    summary="Cancel a training job",
    response_model=None,
    responses=responses(200, JobInfo, dict(examples.JOB_INFO, state="cancelled"), 401, 404, 422),
)
async def cancel_job(job_id: JobId, svc: ServicesDep) -> JSONResponse:
    """A queued job is cancelled at once; a running one stops after its current tree
    (its state stays `running` until then). Finished jobs are left as they are."""
    job = await run_in_threadpool(svc.jobs.cancel, job_id)
    return JSONResponse(job.info())
