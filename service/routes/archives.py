"""GET /models/{id}/export and POST /models/import: move a model between servers."""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, JSONResponse
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from service.deps import ServicesDep, client_key
from service.errors import InvalidRequest, UnsupportedMediaType, error_body
from service.routes.models import ModelId, model_view
from service.routes.openapi import responses
from service.schemas import examples
from service.schemas.api import ErrorResponse, ModelInfo
from service.store.archives import export_to_file, import_file
from service.store.usage import quotas_of

router = APIRouter(tags=["models"])

ARCHIVE_MEDIA = "application/gzip"
ARCHIVE_MEDIA_TYPES = (
    ARCHIVE_MEDIA,
    "application/x-gzip",
    "application/x-tar",
    "application/octet-stream",
)
"""Content types POST /models/import takes: none of them is one a web page can send to
another site without the browser asking that site first (CORS preflight)."""
_CHUNK = 1 << 20

EXPORT_RESPONSES: dict[int | str, dict[str, Any]] = {
    **responses(200, None, None, 401, 404, 409, 422),
    200: {
        "description": "The model's archive: a folder okboost-model/ with export.json (the "
        "SHA-256 and size of every file) and the model's files (JSON and .npy / .npz, no "
        "pickle).",
        "content": {
            ARCHIVE_MEDIA: {
                "schema": {"type": "string", "format": "binary"},
                "example": "<okboost-model-ID.tar.gz bytes>",
            }
        },
    },
}
IMPORT_RESPONSES: dict[int | str, dict[str, Any]] = {
    **responses(
        201,
        ModelInfo,
        model_view(examples.MODEL_INFO),
        401,
        413,
        415,
        422,
        429,
        507,
        ok_description="Model imported",
    ),
    409: {
        "description": "The model's id is already used on this server",
        "model": ErrorResponse,
        "content": {
            "application/json": {
                "example": error_body(
                    409,
                    "model_exists",
                    f"model '{examples.MODEL_ID}' already exists on this server: import with "
                    "?on_conflict=rename to give the imported model a new id, or delete the "
                    "existing model first",
                )
            }
        },
    },
}


@router.get(
    "/models/{model_id}/export",
    summary="Download a model as one archive (.tar.gz), for POST /models/import elsewhere",
    response_class=FileResponse,
    responses=EXPORT_RESPONSES,
)
async def export(model_id: ModelId, svc: ServicesDep) -> FileResponse:
    """The archive of a ready model (409 while it trains or if its training failed)."""
    path = await run_in_threadpool(export_to_file, svc.store, model_id)
    return FileResponse(
        path,
        media_type=ARCHIVE_MEDIA,
        filename=f"okboost-model-{model_id}.tar.gz",
        background=BackgroundTask(path.unlink, missing_ok=True),
    )


@router.post(
    "/models/import",
    status_code=201,
    summary="Upload a model archive from GET /models/{id}/export",
    response_model=ModelInfo,
    responses=IMPORT_RESPONSES,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                ARCHIVE_MEDIA: {
                    "schema": {"type": "string", "format": "binary"},
                    "example": "<okboost-model-ID.tar.gz bytes>",
                }
            },
        }
    },
)
async def import_archive(
    request: Request,
    svc: ServicesDep,
    on_conflict: Annotated[
        Literal["error", "rename"],
        Query(
            description="When the model's id is already used here: `error` (409) or `rename` "
            "(the imported model gets a new id).",
            examples=["rename"],
        ),
    ] = "error",
) -> JSONResponse:
    """The archive is the request body (`curl --data-binary @model.tar.gz`). It is checked
    as a load before anything is visible: paths stay inside the archive's folder (no
    absolute paths, `..`, links or device files), every file matches the SHA-256 in
    `export.json`, the model loads without pickle; at most `OKBOOST_MAX_ARCHIVE_BYTES`
    once decompressed. The store's quotas hold as for /train: a client's models
    (`OKBOOST_MAX_MODELS_PER_CLIENT`, 429) checked first, the store's and the client's bytes
    (`OKBOOST_MAX_STORE_BYTES`, `OKBOOST_MAX_STORE_BYTES_PER_CLIENT`, 507) as the archive's
    members arrive, before each is written. Answers the imported model as GET /models/{id} describes it."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media not in ARCHIVE_MEDIA_TYPES:
        # a browser sends text/plain or a form to any site without asking it first: a
        # type only a client that means it can send keeps such imports out
        got = f"Content-Type '{media[:100]}'" if media else "no Content-Type"
        raise UnsupportedMediaType(
            f"send the archive itself as the request body with Content-Type "
            f"application/gzip (curl --data-binary @model.tar.gz -H 'Content-Type: "
            f"application/gzip'), not as a form or text: got {got}"
        )
    fd, name = tempfile.mkstemp(prefix=".tmp-upload-", dir=svc.store.root)
    upload = Path(name)
    try:
        size = 0
        with os.fdopen(fd, "wb") as fh:
            async for chunk in request.stream():
                size += len(chunk)
                await run_in_threadpool(fh.write, chunk)
        if size == 0:
            raise InvalidRequest("the request body is empty: send the archive's bytes")
        quotas = await run_in_threadpool(quotas_of, svc.store, svc.settings, client_key(request))
        record = await run_in_threadpool(
            functools.partial(
                import_file,
                svc.store,
                upload,
                rename=on_conflict == "rename",
                max_bytes=svc.settings.max_archive_bytes,
                quotas=quotas,
            )
        )
    finally:
        upload.unlink(missing_ok=True)
    location = f"/models/{record['model_id']}"
    return JSONResponse(model_view(record), 201, headers={"Location": location})
