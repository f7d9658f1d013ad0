"""Answers of /kernel and /predict as JSON, ``.npy`` or ``.npz``, chosen by the Accept header.

The inference functions return plain dicts whose big values are ndarrays (or
:class:`Triples`, edge lists and sparse weights); this module turns such a dict
into the bytes the client asked for:

- ``application/json`` (the default): ndarrays as nested lists, triples as
  ``[a, b, score]`` lists with integer ``a`` and ``b``;
- ``application/x-npz``: a numpy ``.npz`` archive (uncompressed, no pickle) with
  one member per non-null field, named by its path in the JSON answer
  (``kernel``, ``edges.new_known``, ``indices`` ...): numbers as float64 / int64
  arrays, triples as (E, 3) float64 arrays, strings as numpy unicode (``<U``) arrays;
- ``application/x-npy``: the one array of an answer that has a single big array
  (the kernel matrix of /kernel without edges).

Errors are always JSON. An Accept header that names none of these (or ``*/*``) gets
JSON, so clients that send a browser-like header keep working.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from fastapi import Request
from fastapi.responses import JSONResponse, Response

from service.errors import ServiceError

Format = Literal["json", "npz", "npy"]
MEDIA_TYPES: dict[Format, str] = {
    "json": "application/json",
    "npz": "application/x-npz",
    "npy": "application/x-npy",
}
_BY_MEDIA = {media: fmt for fmt, media in MEDIA_TYPES.items()}


class NotAcceptable(ServiceError):
    """The Accept header asks for a format this answer cannot take (406)."""

    status = 406
    code = "not_acceptable"


@dataclass(frozen=True, eq=False)
class Triples:
    """A list of ``[a, b, value]`` triples held as three columns (edges, sparse weights).

    ``a`` and ``b`` are int64 row / column indices, ``value`` float64. ``np.asarray(t)``
    gives the (E, 3) float64 array the ``.npz`` answer holds.
    """

    a: np.ndarray
    b: np.ndarray
    value: np.ndarray

    @classmethod
    def empty(cls) -> Triples:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))

    @classmethod
    def concat(cls, parts: list[Triples]) -> Triples:
        if not parts:
            return cls.empty()
        return cls(
            np.concatenate([p.a for p in parts]).astype(np.int64, copy=False),
            np.concatenate([p.b for p in parts]).astype(np.int64, copy=False),
            np.concatenate([p.value for p in parts]).astype(np.float64, copy=False),
        )

    def __len__(self) -> int:
        return int(self.a.shape[0])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Triples):
            return NotImplemented
        return all(
            np.array_equal(x, y)
            for x, y in ((self.a, other.a), (self.b, other.b), (self.value, other.value))
        )

    __hash__ = None  # type: ignore[assignment]  # mutable arrays: not hashable

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.column_stack([self.a, self.b, self.value]).astype(np.float64).reshape(-1, 3)
        return out if dtype is None else out.astype(dtype)

    def to_json(self) -> list[list[float]]:
        return [
            [a, b, v]
            for a, b, v in zip(self.a.tolist(), self.b.tolist(), self.value.tolist(), strict=True)
        ]


def negotiate(request: Request) -> Format:
    """The answer format the Accept header prefers (q-values honoured, first wins ties);
    JSON when it names none of ours."""
    best: tuple[float, int, Format] | None = None
    header = request.headers.get("accept", "")
    for position, item in enumerate(header.split(",")):
        media, *params = (part.strip() for part in item.split(";"))
        fmt = _BY_MEDIA.get(media.lower())
        if fmt is None:
            continue
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if q > 0 and (best is None or q > best[0]):
            best = (q, position, fmt)
    return "json" if best is None else best[2]


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Triples):
        return value.to_json()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def _members(answer: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, np.ndarray]]:
    """(path, array) of every non-null field, nested dicts flattened to dotted paths."""
    for key, value in answer.items():
        path = f"{prefix}{key}"
        if value is None:
            continue
        if isinstance(value, dict):
            yield from _members(value, f"{path}.")
        elif isinstance(value, Triples):
            yield path, np.asarray(value)
        elif isinstance(value, str):
            yield path, np.asarray(value)
        else:
            arr = np.asarray(value)
            if arr.dtype.kind in "iub":
                arr = arr.astype(np.int64, copy=False)
            elif arr.dtype == object:  # ids: strings held in object arrays
                arr = arr.astype(str)
            yield path, arr


def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    # C order (a Fortran-ordered member would need its reader to transpose); reshape keeps
    # 0-d members (model_id, against) 0-d, which ascontiguousarray makes 1-d
    np.lib.format.write_array(buf, np.ascontiguousarray(arr).reshape(arr.shape), allow_pickle=False)
    return buf.getvalue()


def npz_bytes(answer: dict[str, Any]) -> bytes:
    """The answer as an uncompressed ``.npz`` (what ``np.load`` reads with
    ``allow_pickle=False``); members named by their dotted JSON paths."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for path, arr in _members(answer):
            zf.writestr(f"{path}.npy", _npy_bytes(arr))
    return buf.getvalue()


def render(
    answer: dict[str, Any], fmt: Format, *, name: str, npy_field: str | None = None
) -> Response:
    """The HTTP response of ``answer`` in ``fmt``; binary answers are attachments named
    ``<name>.npz`` / ``<name>.npy``, and ``npy_field`` names the array an
    ``application/x-npy`` answer holds (the route has checked that it is the only one).

    CPU-bound for big answers: call it in a worker thread, not on the event loop."""
    headers = {"Vary": "Accept"}
    if fmt == "json":
        return JSONResponse(_jsonable(answer), headers=headers)
    if fmt == "npy":
        if npy_field is None or answer.get(npy_field) is None:  # pragma: no cover - route checks
            raise NotAcceptable("this answer has no single array; ask for application/x-npz")
        body = _npy_bytes(np.asarray(answer[npy_field], dtype=np.float64))
        filename = f"{name}.npy"
    else:
        body = npz_bytes(answer)
        filename = f"{name}.npz"
    headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return Response(body, media_type=MEDIA_TYPES[fmt], headers=headers)


def refuse_npy(why: str) -> NotAcceptable:
    """The 406 for an ``application/x-npy`` ask of an answer with several arrays."""
    return NotAcceptable(
        f"application/x-npy holds one array, but {why}; ask for application/x-npz "
        "(every array of the answer, by name) or application/json"
    )
