"""POST /kernel: predicted kernel values and network-completion edges."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from service.deps import ServicesDep
from service.http import encoding
from service.http.bodies import BodyChoice, read_body_of
from service.inference import bipartite
from service.inference import predict as inference
from service.routes.openapi import request_body, responses
from service.schemas import examples
from service.schemas.api import KERNEL_EXAMPLE, KernelRequest, KernelResponse
from service.schemas.bipartite import BipartiteKernelRequest, BipartiteKernelResponse
from service.store.model_store import ModelStore

KERNEL_BODIES = BodyChoice(
    (KernelRequest, BipartiteKernelRequest),
    lambda data: BipartiteKernelRequest if "rows" in data or "cols" in data else KernelRequest,
)

router = APIRouter(tags=["prediction"])

NPZ_DESCRIPTION = (
    "Accept: application/x-npz. An uncompressed .npz (np.load(f, allow_pickle=False)) with "
    "one member per non-null field of the JSON answer, named by its path: `kernel` (float64), "
    "`edges.new_new` and `edges.new_known` ((E, 3) float64 [a, b, score]), "
    "`edges.new_new_ids` and `edges.new_known_ids` ((E, 2) unicode), `shape` (int64), "
    "`model_id` and `against` (0-d unicode)."
)
NPY_DESCRIPTION = (
    "Accept: application/x-npy. The kernel matrix alone as a float64 .npy; only for answers "
    "without edges (no threshold or top_k) and with return_kernel true (else 406)."
)


def _kernel(
    store: ModelStore,
    req: KernelRequest | BipartiteKernelRequest,
    max_dense: int,
    fmt: encoding.Format,
) -> Response:
    m = store.load(req.model_id)
    if isinstance(req, BipartiteKernelRequest):
        answer = bipartite.kernel(m, req, max_dense=max_dense)
    else:
        bipartite.refuse_bipartite(m, "/kernel")
        answer = inference.kernel(m, req, max_dense=max_dense)
    return encoding.render(answer, fmt, name="kernel", npy_field="kernel")


@router.post(
    "/kernel",
    summary="Predicted kernel <F(x), F(x')> or <F(x), phi(y_i)>, and edges",
    response_model=KernelResponse | BipartiteKernelResponse,
    responses=responses(
        200,
        KernelResponse | BipartiteKernelResponse,  # type: ignore[arg-type]
        examples.KERNEL_RESPONSE,
        401,
        404,
        406,
        409,
        413,
        415,
        422,
        binary={"application/x-npz": NPZ_DESCRIPTION, "application/x-npy": NPY_DESCRIPTION},
    ),
    openapi_extra=request_body(
        KernelRequest,
        KERNEL_EXAMPLE,
        ["inputs", "inputs2"],
        also=(BipartiteKernelRequest,),
    ),
)
async def kernel(request: Request, svc: ServicesDep) -> Response:
    """Kernel between new vertices (paper eq. 7) or against the training vertices.

    With `threshold` and/or `top_k`, `edges.new_new` lists [a, b, score] (a < b,
    rows of `inputs`) and `edges.new_known` lists [a, i, score] (row a of
    `inputs`, training vertex i); with vertex ids (the model's or the request's
    `ids`), `edges.new_new_ids` / `edges.new_known_ids` name the same edges by id.
    `Accept: application/x-npz` (or `application/x-npy` for the kernel alone) answers
    in numpy's binary formats.

    A bipartite model takes new `rows` and / or `cols` (BipartiteKernelRequest) and answers
    the scores of new rows x known columns, known rows x new columns and new x new, with
    their edges per new vertex, best first, in (row, column) order, by id when known.
    """
    fmt = encoding.negotiate(request)
    req = await read_body_of(request, KERNEL_BODIES, svc.settings.max_request_bytes)
    if fmt == "npy" and isinstance(req, BipartiteKernelRequest):
        raise encoding.refuse_npy("a bipartite answer has a score matrix per block")
    if fmt == "npy":
        if req.threshold is not None or req.top_k is not None:
            raise encoding.refuse_npy("this answer has edges (threshold or top_k)")
        if not req.return_kernel:
            raise encoding.refuse_npy("return_kernel is false: there is no kernel matrix")
    return await svc.run_cpu(_kernel, svc.store, req, svc.settings.max_dense_values, fmt)
