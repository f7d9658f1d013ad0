"""Reading request bodies: JSON, or multipart with binary array parts.

A multipart request has one part ``json`` holding the JSON request (big arrays
left out) and one part per array, named by its path in the JSON request
(``inputs``, ``output_kernel.gram``, ``output_kernel.edges``, ``candidates``
...). A file part is a ``.npy`` file or raw little-endian float64 with a text
part ``<path>.shape`` (for example ``300,300``); a text part is a JSON array.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from service.arrays import parse_binary
from service.errors import InvalidRequest, UnsupportedMediaType

M = TypeVar("M", bound=BaseModel)
INLINE_BYTES = 32 * 1024
"""JSON bodies up to this size are decoded on the event loop; larger ones in the thread pool."""
_SEGMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def from_validation_error(exc: ValidationError | Any) -> InvalidRequest:
    """One actionable message plus details from pydantic's error list."""
    details = []
    for err in exc.errors():
        loc = [p for p in err.get("loc", ()) if p != "body"]
        msg = str(err.get("msg", "invalid value"))
        msg = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
        details.append({"loc": loc, "msg": msg})
    if not details:
        return InvalidRequest("invalid request")
    first = details[0]
    where = ".".join(str(p) for p in first["loc"])
    message = f"{where}: {first['msg']}" if where else str(first["msg"])
    if len(details) > 1:
        message += f" (and {len(details) - 1} more problem{'s' if len(details) > 2 else ''})"
    return InvalidRequest(message, details=details)


def validate(model_cls: type[M], data: Any) -> M:
    try:
        return model_cls.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc) from None


def _from_json(raw: bytes, model_cls: type[M]) -> M:
    if not raw.strip():
        raise InvalidRequest("request body is empty: send a JSON object")
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise InvalidRequest("request body is not UTF-8 JSON") from None
    except json.JSONDecodeError as exc:
        raise InvalidRequest(f"request body is not valid JSON: {exc}") from None
    return validate(model_cls, data)


def _set_path(data: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    if len(parts) > 3 or not all(_SEGMENT.match(p) for p in parts):
        raise InvalidRequest(f"part name '{path[:80]}' is not a field path such as 'inputs'")
    node = data
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise InvalidRequest(f"part '{path}' conflicts with field '{part}' of the json part")
        node = child
    node[parts[-1]] = value


async def _from_multipart(request: Request, max_bytes: int) -> dict[str, Any]:
    try:
        form = await request.form(max_files=256, max_fields=256, max_part_size=max_bytes)
    except StarletteHTTPException as exc:
        raise InvalidRequest(f"multipart body cannot be parsed: {exc.detail}") from None
    try:
        data: dict[str, Any] = {}
        if "json" in form:
            raw = form["json"]
            text = (await raw.read()).decode() if isinstance(raw, UploadFile) else raw
            try:
                data = json.loads(text) if text.strip() else {}
            except json.JSONDecodeError as exc:
                raise InvalidRequest(f"part 'json' is not valid JSON: {exc}") from None
            if not isinstance(data, dict):
                raise InvalidRequest("part 'json' must be a JSON object")
        for name, value in form.multi_items():
            if name == "json" or name.endswith(".shape"):
                continue
            if isinstance(value, UploadFile):
                shape = form.get(f"{name}.shape")
                shape_text = shape if isinstance(shape, str) else None
                array: Any = parse_binary(await value.read(), name, shape_text)
            else:
                try:
                    array = json.loads(value)
                except json.JSONDecodeError:
                    raise InvalidRequest(
                        f"text part '{name}' must be a JSON array (or send it as a file)"
                    ) from None
            _set_path(data, name, array)
        return data
    finally:
        await form.close()


async def read_body(request: Request, model_cls: type[M], max_bytes: int) -> M:
    """Parse and validate the body; CPU-heavy decoding runs in the thread pool."""
    ctype = request.headers.get("content-type", "application/json")
    media = ctype.split(";")[0].strip().lower()
    if media in ("", "application/json") or media.endswith("+json"):
        raw = await request.body()
        if len(raw) <= INLINE_BYTES:  # microseconds of work: a thread hop would cost more
            return _from_json(raw, model_cls)
        return await run_in_threadpool(_from_json, raw, model_cls)
    if media == "multipart/form-data":
        data = await _from_multipart(request, max_bytes)
        return await run_in_threadpool(validate, model_cls, data)
    raise UnsupportedMediaType(
        f"content type '{media}' is not supported: send application/json or "
        "multipart/form-data (see README, Binary uploads)"
    )
