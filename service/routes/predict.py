"""POST /predict: pre-images, outputs and W^F weights for new inputs."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from service import examples, inference
from service.bodies import read_body
from service.deps import ServicesDep
from service.routes._docs import request_body, responses
from service.schemas import PREDICT_EXAMPLE, PredictRequest, PredictResponse
from service.store import ModelStore

router = APIRouter(tags=["prediction"])


def _predict(store: ModelStore, req: PredictRequest, max_dense: int) -> dict[str, Any]:
    return inference.predict(store.load(req.model_id), req, max_dense=max_dense)


@router.post(
    "/predict",
    summary="Predict pre-images (and W^F weights) for new inputs",
    response_model=None,
    responses=responses(
        200, PredictResponse, examples.PREDICT_RESPONSE, 401, 404, 409, 413, 415, 422
    ),
    openapi_extra=request_body(
        PredictRequest,
        PREDICT_EXAMPLE,
        ["inputs", "candidates", "candidate_gram", "candidate_diag"],
        {"model_id": examples.MODEL_ID, "top_k": 3},
    ),
)
async def predict(request: Request, svc: ServicesDep) -> JSONResponse:
    """Decode F(x) for each row of `inputs`: the `top_k` nearest training outputs (or
    `candidates`) in feature space, with squared distances as scores (paper eq. 8)."""
    req = await read_body(request, PredictRequest, svc.settings.max_request_bytes)
    return JSONResponse(await svc.run_cpu(_predict, svc.store, req, svc.settings.max_dense_values))
