"""GET /models, GET /models/{id}, DELETE /models/{id}."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from service.deps import ServicesDep
from service.routes.openapi import responses
from service.schemas import examples
from service.schemas.api import InvalidModelInfo, ModelDeleted, ModelInfo, ModelList
from service.store import pagination
from service.training import lifecycle

router = APIRouter(tags=["models"])

ModelId = Annotated[
    str, Path(description="Model id from POST /train.", examples=[examples.MODEL_ID])
]


Limit = Annotated[
    int,
    Query(
        ge=1, le=pagination.MAX_LIMIT, description="Items per page (oldest first).", examples=[50]
    ),
]
Cursor = Annotated[
    str | None,
    Query(
        max_length=200,
        pattern=pagination.CURSOR_PATTERN,
        description="`next_cursor` of the previous page; none for the first.",
        examples=[examples.FIELD_EXAMPLES["next_cursor"]],
    ),
]
Curves = Annotated[
    bool,
    Query(description="Include the loss curves (train_loss, validation_loss).", examples=[True]),
]
Status = Annotated[
    Literal["training", "ready", "failed", "cancelled", "invalid"] | None,
    Query(
        description="Only the models with this status (`invalid`: quarantined records).",
        examples=["ready"],
    ),
]
Importances = Annotated[
    bool, Query(description="Include feature_importances (p values).", examples=[True])
]
CURVE_FIELDS = ("train_loss", "validation_loss")


def model_view(
    record: dict[str, Any], curves: bool = False, importances: bool = False
) -> dict[str, Any]:
    """A model record as answered: the last losses always, the whole curves and the
    feature importances (sizes M and p) only when asked for, its task always (records of
    one-set models leave out "structured"); a quarantined model (status "invalid") as the
    store describes it."""
    view = dict(record)
    if view.get("status") == "invalid":
        return view
    view.setdefault("task", "structured")
    for name in CURVE_FIELDS:
        curve = record.get(name)
        view[f"last_{name}"] = curve[-1] if curve else None
        if not curves:
            view.pop(name, None)
    if not importances:
        view.pop("feature_importances", None)
    return view


@router.get(
    "/models",
    summary="List the stored models, a page at a time",
    response_model=ModelList,
    responses=responses(
        200, ModelList, {"models": [model_view(examples.MODEL_INFO)], "next_cursor": None}, 401, 422
    ),
)
async def list_models(
    svc: ServicesDep,
    limit: Limit = pagination.DEFAULT_LIMIT,
    cursor: Cursor = None,
    status: Status = None,
    curves: Curves = False,
    importances: Importances = False,
) -> JSONResponse:
    """Models oldest first, `limit` per page; `next_cursor` (null on the last page) asks for
    the next, with the same `status`. Only the models of one `status` with `status`. Loss
    curves and feature importances only with `curves` / `importances`."""
    records, next_cursor = await run_in_threadpool(svc.store.page, limit, cursor, status)
    views = [model_view(r, curves, importances) for r in records]
    return JSONResponse({"models": views, "next_cursor": next_cursor})


@router.get(
    "/models/{model_id}",
    summary="Describe one model (params, kernel, N, p; loss curves and importances on request)",
    response_model=ModelInfo | InvalidModelInfo,
    responses=responses(200, None, model_view(examples.MODEL_INFO), 401, 404, 422),
)
async def get_model(
    model_id: ModelId,
    svc: ServicesDep,
    curves: Curves = False,
    importances: Importances = False,
) -> JSONResponse:
    record = await run_in_threadpool(svc.store.describe, model_id)
    return JSONResponse(model_view(record, curves, importances))


@router.delete(
    "/models/{model_id}",
    summary="Delete a model (cancels its training job if any)",
    response_model=ModelDeleted,
    responses=responses(200, ModelDeleted, examples.MODEL_DELETED, 401, 404, 422),
)
async def delete_model(model_id: ModelId, svc: ServicesDep) -> JSONResponse:
    await run_in_threadpool(lifecycle.delete_model, svc.store, svc.jobs, model_id)
    return JSONResponse(ModelDeleted(model_id=model_id, deleted=True).model_dump())
