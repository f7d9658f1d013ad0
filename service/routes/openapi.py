"""OpenAPI helpers: request bodies (JSON and multipart) and responses with examples."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from service.errors import error_body

ERROR_EXAMPLES: dict[int, tuple[str, str, str]] = {
    401: ("unauthorized", "missing bearer token: send 'Authorization: Bearer <token>'", "Auth"),
    404: ("not_found", "unknown model '3f2a9c1e5b7d4e8f9a0b1c2d3e4f5a6b'", "Not found"),
    409: (
        "model_not_ready",
        "model '3f2a9c1e5b7d4e8f9a0b1c2d3e4f5a6b' is not ready: it is still training "
        "(poll GET /jobs/8c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f)",
        "Model not ready",
    ),
    413: (
        "request_too_large",
        "request body of 600000000 bytes exceeds the limit of 536870912 bytes "
        "(OKBOOST_MAX_REQUEST_BYTES)",
        "Request too large",
    ),
    415: (
        "unsupported_media_type",
        "content type 'text/plain' is not supported: send application/json or multipart/form-data",
        "Unsupported media type",
    ),
    422: (
        "invalid_data",
        "output_kernel.precomputed: gram must be square: got 300 x 299",
        "Invalid data",
    ),
    406: (
        "not_acceptable",
        "application/x-npy holds one array, but this answer has edges; ask for "
        "application/x-npz (every array of the answer, by name) or application/json",
        "Not acceptable",
    ),
    429: (
        "too_many_jobs",
        "64 training jobs are already waiting; retry when some finish",
        "Too many jobs",
    ),
    503: (
        "shutting_down",
        "the server is shutting down: training job '8c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f' was "
        "stopped (interrupted by server shutdown); train again once the server is back",
        "Server shutting down",
    ),
    507: (
        "insufficient_storage",
        "the model store has 0.12 GB free but this model needs an estimated 0.31 GB of disk: "
        "free disk space (or delete models), or train a smaller model",
        "Model store full",
    ),
}


def responses(
    ok_status: int,
    ok_model: type[BaseModel] | None,
    ok_example: Any,
    *errors: int,
    ok_description: str = "Success",
    binary: dict[str, str] | None = None,
) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` argument of a route: the success body and the error bodies.

    ``binary`` maps the other media types of the success answer (``application/x-npz``
    ...) to their description."""
    out: dict[int | str, dict[str, Any]] = {}
    content: dict[str, Any] = {"application/json": {"example": ok_example}}
    for media, description in (binary or {}).items():
        content[media] = {
            "schema": {"type": "string", "format": "binary", "description": description},
            "example": f"<{media.rsplit('-', 1)[-1]} file bytes>",
        }
    ok: dict[str, Any] = {"description": ok_description, "content": content}
    if ok_model is not None:
        ok["model"] = ok_model
    out[ok_status] = ok
    from service.schemas.api import ErrorResponse

    for status in errors:
        code, message, description = ERROR_EXAMPLES[status]
        out[status] = {
            "description": description,
            "model": ErrorResponse,
            "content": {"application/json": {"example": error_body(status, code, message)}},
        }
    return out


def cross_site_response() -> dict[str, Any]:
    """The 403 every POST and DELETE may answer (service.guards.CrossSiteGuard), as an
    OpenAPI response object."""
    message = (
        "cross-site request refused (Origin: https://evil.example): this server takes "
        "state-changing requests only from its own pages and from clients that are not "
        "browsers. If the web page sending it is yours, add its origin (scheme://host:port) "
        "to OKBOOST_ALLOWED_ORIGINS"
    )
    return {
        "description": "Sent by a browser from a web page of another site whose origin is "
        "not in OKBOOST_ALLOWED_ORIGINS",
        "content": {
            "application/json": {
                "schema": {"$ref": "#/components/schemas/ErrorResponse"},
                "example": error_body(403, "cross_site_refused", message),
            }
        },
    }


def request_body(
    model: type[BaseModel],
    example: dict[str, Any],
    array_parts: list[str],
    also: tuple[type[BaseModel], ...] = (),
) -> dict[str, Any]:
    """``openapi_extra`` documenting a JSON body and its multipart (binary) twin; ``also``:
    the other request models the route takes (bipartite, multi-label), as a oneOf. The
    multipart example is the JSON example in the ``json`` part (every array may also
    travel there): a request the service accepts as it is, which a placeholder for the
    binary parts would not be."""
    props: dict[str, Any] = {
        "json": {
            "type": "string",
            "description": f"The {model.__name__} as JSON, without the arrays sent as parts.",
        }
    }
    for part in array_parts:
        props[part] = {
            "type": "string",
            "format": "binary",
            "description": f"{part} as a .npy file, or raw little-endian values with a text "
            f"part '{part}.shape' such as '300,5' and optionally '{part}.dtype' (<f8 default, "
            "<f4, |u1, <i4, <i8)"
            + (
                f"; or a scipy.sparse.save_npz file, or CSR parts '{part}.data', "
                f"'{part}.indices', '{part}.indptr' with '{part}.shape'."
                if part.split(".")[-1].startswith("inputs")
                else "."
            )
            + " Or a table: text/csv or text/tab-separated-values (sniffed when the type is "
            f"missing), a header row detected or declared ('{part}.header' true / false)"
            + (
                "; a column named id (or the first non-numeric column) gives the ids."
                if part == "inputs"
                else "; edges: two columns of ids (or row indices), an optional third of "
                "weights that must be 1."
                if part.endswith(("edges", "new_new", "new_known"))
                else "."
            ),
        }
    json_example = {k: v for k, v in example.items() if v is not None}
    refs = [{"$ref": f"#/components/schemas/{m.__name__}"} for m in (model, *also)]
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": refs[0] if not also else {"oneOf": refs},
                    "example": json_example,
                },
                "multipart/form-data": {
                    "schema": {"type": "object", "properties": props, "required": ["json"]},
                    "example": {"json": json.dumps(json_example)},
                },
            },
        }
    }
