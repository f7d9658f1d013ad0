"""POST /evaluate: a stored model's scores on test inputs with their truth."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from service.deps import ServicesDep
from service.http.bodies import BodyChoice, read_body_of
from service.inference import bipartite, evaluation, multilabel
from service.routes.openapi import request_body, responses
from service.schemas import examples
from service.schemas.bipartite import BipartiteEvaluateRequest, BipartiteEvaluateResponse
from service.schemas.evaluate import EVALUATE_EXAMPLE, EvaluateRequest, EvaluateResponse
from service.schemas.multilabel import MultiLabelEvaluateResponse
from service.store.model_store import ModelStore

EVALUATE_BODIES = BodyChoice(
    (EvaluateRequest, BipartiteEvaluateRequest),
    lambda data: BipartiteEvaluateRequest if "rows" in data or "cols" in data else EvaluateRequest,
)

router = APIRouter(tags=["prediction"])


def _evaluate(
    store: ModelStore, req: EvaluateRequest | BipartiteEvaluateRequest, max_dense: int
) -> dict[str, Any]:
    m = store.load(req.model_id)
    if isinstance(req, BipartiteEvaluateRequest):
        return bipartite.evaluate(m, req, max_dense=max_dense)
    bipartite.refuse_bipartite(m, "/evaluate")
    if multilabel.is_multilabel(m):
        return multilabel.evaluate(m, req, max_dense=max_dense)
    multilabel.refuse_metric(req.metric, "/evaluate")
    return evaluation.evaluate(m, req, max_dense=max_dense)


@router.post(
    "/evaluate",
    summary="Score a model on test inputs with their truth (Err^phi, Err^Y, AUC, precision@k)",
    response_model=EvaluateResponse | BipartiteEvaluateResponse | MultiLabelEvaluateResponse,
    responses=responses(
        200,
        EvaluateResponse | BipartiteEvaluateResponse | MultiLabelEvaluateResponse,  # type: ignore[arg-type]
        examples.EVALUATE_RESPONSE,
        401,
        404,
        409,
        413,
        415,
        422,
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
        also=(BipartiteEvaluateRequest,),
    ),
)
async def evaluate(request: Request, svc: ServicesDep) -> JSONResponse:
    """The paper's measures (section 3) on a test set: `outputs` (models trained on output
    vectors) or `gram_cross` + `gram_diag` (their kernel against the training outputs) give
    Err^phi and Err^Y; `edges` among the test vertices and to the training vertices (by row,
    or by id) give the edge AUC over every pair with a test vertex, its test-test and
    test-training parts, and precision at `k`. A score without its truth is null.

    A multi-label model is scored against 0/1 label rows (`outputs`): Hamming loss, subset
    accuracy, micro- and macro-F1, ranking loss, one-error, coverage, label-ranking average
    precision. A bipartite model takes test `rows` / `cols` and their interactions
    (BipartiteEvaluateRequest): AUROC and average precision per block and pooled."""
    req = await read_body_of(request, EVALUATE_BODIES, svc.settings.max_request_bytes)
    answer = await svc.run_cpu(_evaluate, svc.store, req, svc.settings.max_dense_values)
    return JSONResponse(answer)
