"""POST /kernel: predicted kernel values and network-completion edges."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from service import examples, inference
from service.bodies import read_body
from service.deps import ServicesDep
from service.routes._docs import request_body, responses
from service.schemas import KERNEL_EXAMPLE, KernelRequest, KernelResponse
from service.store import ModelStore

router = APIRouter(tags=["prediction"])


def _kernel(store: ModelStore, req: KernelRequest, max_dense: int) -> dict[str, Any]:
    return inference.kernel(store.load(req.model_id), req, max_dense=max_dense)


@router.post(
    "/kernel",
    summary="Predicted kernel <F(x), F(x')> or <F(x), phi(y_i)>, and edges",
    response_model=None,
    responses=responses(
        200, KernelResponse, examples.KERNEL_RESPONSE, 401, 404, 409, 413, 415, 422
    ),
    openapi_extra=request_body(
        KernelRequest,
        KERNEL_EXAMPLE,
        ["inputs", "inputs2"],
        {"model_id": examples.MODEL_ID, "against": "predicted", "top_k": 5},
    ),
)
async def kernel(request: Request, svc: ServicesDep) -> JSONResponse:
    """Kernel between new vertices (paper eq. 7) or against the training vertices.

    With `threshold` and/or `top_k`, `edges.new_new` lists [a, b, score] (a < b,
    rows of `inputs`) and `edges.new_known` lists [a, i, score] (row a of
    `inputs`, training vertex i).
    """
    req = await read_body(request, KernelRequest, svc.settings.max_request_bytes)
    return JSONResponse(await svc.run_cpu(_kernel, svc.store, req, svc.settings.max_dense_values))
