"""POST /predict: pre-images, outputs and W^F weights for new inputs."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from service.deps import ServicesDep
from service.http import encoding
from service.http.bodies import read_body
from service.inference import bipartite, multilabel
from service.inference import predict as inference
from service.routes.openapi import request_body, responses
from service.schemas import examples
from service.schemas.api import PREDICT_EXAMPLE, PredictRequest, PredictResponse
from service.schemas.multilabel import MultiLabelPredictResponse
from service.store.model_store import ModelStore

router = APIRouter(tags=["prediction"])

NPZ_DESCRIPTION = (
    "Accept: application/x-npz. An uncompressed .npz (np.load(f, allow_pickle=False)) with "
    "one member per non-null field of the JSON answer: `indices` (int64 Q x top_k), `scores` "
    "(float64), `outputs` (float64 Q x top_k x d), `weights` (float64 Q x N), "
    "`weights_sparse` ((T, 3) float64 [row, index, weight]), `index_ids` and "
    "`weights_sparse_ids` (unicode), `model_id` and `index_space` (0-d unicode)."
)


def _predict(
    store: ModelStore, req: PredictRequest, max_dense: int, fmt: encoding.Format
) -> Response:
    m = store.load(req.model_id)
    bipartite.refuse_bipartite(m, "/predict")
    if multilabel.is_multilabel(m):
        answer = multilabel.predict(m, req, max_dense=max_dense)
        if fmt != "json":  # ragged lists of names: JSON only (labels + label_names hold them)
            answer.pop("label_sets")
    else:
        multilabel.refuse_metric(req.metric, "/predict")
        answer = inference.predict(m, req, max_dense=max_dense)
    return encoding.render(answer, fmt, name="predict")


@router.post(
    "/predict",
    summary="Predict pre-images (and W^F weights) for new inputs",
    response_model=PredictResponse | MultiLabelPredictResponse,
    responses=responses(
        200,
        PredictResponse | MultiLabelPredictResponse,  # type: ignore[arg-type]
        examples.PREDICT_RESPONSE,
        401,
        404,
        406,
        409,
        413,
        415,
        422,
        binary={"application/x-npz": NPZ_DESCRIPTION},
    ),
    openapi_extra=request_body(
        PredictRequest,
        PREDICT_EXAMPLE,
        ["inputs", "candidates", "candidate_gram", "candidate_diag"],
    ),
)
async def predict(request: Request, svc: ServicesDep) -> Response:
    """Decode F(x) for each row of `inputs`: the `top_k` nearest training outputs (or
    `candidates`) in feature space, with squared distances as scores (paper eq. 8).
    With a model trained with `ids`, `index_ids` names the pre-images.
    A multi-label model answers label scores in [0, 1] (`probabilities`), 0/1 label rows
    (`labels`) and, with label names, each row's `label_sets` (MultiLabelPredictResponse).
    `Accept: application/x-npz` answers in numpy's binary format."""
    fmt = encoding.negotiate(request)
    if fmt == "npy":
        raise encoding.refuse_npy("a /predict answer has several arrays (indices, scores ...)")
    req = await read_body(request, PredictRequest, svc.settings.max_request_bytes)
    return await svc.run_cpu(_predict, svc.store, req, svc.settings.max_dense_values, fmt)
