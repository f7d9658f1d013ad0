"""POST /evaluate: a stored model's scores on test inputs with their truth."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from service.deps import ServicesDep
from service.http.bodies import read_body
from service.inference import evaluation
from service.routes.openapi import request_body, responses
from service.schemas import examples
from service.schemas.evaluate import EVALUATE_EXAMPLE, EvaluateRequest, EvaluateResponse
from service.store.model_store import ModelStore

router = APIRouter(tags=["prediction"])


def _evaluate(store: ModelStore, req: EvaluateRequest, max_dense: int) -> dict[str, Any]:
    return evaluation.evaluate(store.load(req.model_id), req, max_dense=max_dense)


@router.post(
    "/evaluate",
    summary="Score a model on test inputs with their truth (Err^phi, Err^Y, AUC, precision@k)",
    response_model=EvaluateResponse,
    responses=responses(
        200, EvaluateResponse, examples.EVALUATE_RESPONSE, 401, 404, 409, 413, 415, 422
    ),
    openapi_extra=request_body(
        EvaluateRequest,
        EVALUATE_EXAMPLE,
        [
            "inputs",
            "outputs",
            "gram_cross",
            "gram_diag",
            "edges.new_new",
            "edges.new_known",
            "edges.by_id",
        ],
    ),
)
async def evaluate(request: Request, svc: ServicesDep) -> JSONResponse:
    """The paper's measures (section 3) on a test set: `outputs` (models trained on output
    vectors) or `gram_cross` + `gram_diag` (their kernel against the training outputs) give
    Err^phi and Err^Y; `edges` among the test vertices and to the training vertices (by row,
    or by id) give the edge AUC over every pair with a test vertex, its test-test and
    test-training parts, and precision at `k`. A score without its truth is null."""
    req = await read_body(request, EvaluateRequest, svc.settings.max_request_bytes)
    answer = await svc.run_cpu(_evaluate, svc.store, req, svc.settings.max_dense_values)
    return JSONResponse(answer)
