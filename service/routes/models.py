"""GET /models, GET /models/{id}, DELETE /models/{id}."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from service import examples
from service.deps import ServicesDep
from service.errors import ServiceError
from service.routes._docs import responses
from service.schemas import ModelInfo, ModelList

router = APIRouter(tags=["models"])

ModelId = Annotated[
    str, Path(description="Model id from POST /train.", examples=[examples.MODEL_ID])
]


@router.get(
    "/models",
    summary="List the stored models",
    response_model=None,
    responses=responses(200, ModelList, {"models": [examples.MODEL_INFO]}, 401),
)
async def list_models(svc: ServicesDep) -> JSONResponse:
    records = await run_in_threadpool(svc.store.list_records)
    return JSONResponse({"models": records})


@router.get(
    "/models/{model_id}",
    summary="Describe one model (params, kernel, N, p, loss curves, importances)",
    response_model=None,
    responses=responses(200, ModelInfo, examples.MODEL_INFO, 401, 404, 422),
)
async def get_model(model_id: ModelId, svc: ServicesDep) -> JSONResponse:
    return JSONResponse(await run_in_threadpool(svc.store.read_record, model_id))


@router.delete(
    "/models/{model_id}",
    summary="Delete a model (cancels its training job if any)",
    response_model=None,
    responses=responses(200, None, {"model_id": examples.MODEL_ID, "deleted": True}, 401, 404, 422),
)
async def delete_model(model_id: ModelId, svc: ServicesDep) -> JSONResponse:
    record = await run_in_threadpool(svc.store.read_record, model_id)
    if record.get("status") == "training" and record.get("job_id"):
        try:
            svc.jobs.cancel(record["job_id"])
        except ServiceError:
            pass  # job record gone: nothing to cancel
    await run_in_threadpool(svc.store.delete, model_id)
    return JSONResponse({"model_id": model_id, "deleted": True})
