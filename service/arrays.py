"""Array helpers: JSON lists and binary parts (``.npy`` or raw float64) to ndarrays.

Binary parts are what a client in any language can produce without numpy:

- a ``.npy`` file (any version numpy writes; loaded with ``allow_pickle=False``);
- raw little-endian IEEE-754 float64 values in row-major (C) order, together
  with a text field ``<name>.shape`` such as ``300,300``.
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np

from service.errors import InvalidRequest

NPY_MAGIC = b"\x93NUMPY"


def parse_shape(text: str, name: str) -> tuple[int, ...]:
    """Parse ``"300,5"``, ``"300x5"`` or ``"[300, 5]"`` into a shape tuple."""
    cleaned = text.strip().strip("[]()").replace("x", ",").replace(" ", "")
    try:
        shape = tuple(int(part) for part in cleaned.split(",") if part != "")
    except ValueError:
        shape = ()
    if not shape or any(s < 0 for s in shape):
        raise InvalidRequest(
            f"{name}.shape must be comma-separated non-negative integers such as '300,5': "
            f"got {text!r}"
        )
    return shape


def parse_binary(data: bytes, name: str, shape_text: str | None) -> np.ndarray:
    """Decode one binary part: ``.npy`` when it starts with the npy magic, else raw float64."""
    if data.startswith(NPY_MAGIC):
        try:
            arr = np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise InvalidRequest(f"part '{name}' is not a readable .npy file: {exc}") from exc
        if not isinstance(arr, np.ndarray):
            raise InvalidRequest(f"part '{name}' must hold one array, not an archive")
        if arr.dtype.kind not in "biuf":
            raise InvalidRequest(
                f"part '{name}' has dtype {arr.dtype}; send bool, integer or float numbers"
            )
        if shape_text is not None and tuple(arr.shape) != parse_shape(shape_text, name):
            raise InvalidRequest(
                f"part '{name}' has shape {list(arr.shape)} but {name}.shape says {shape_text}"
            )
        return arr
    if shape_text is None:
        raise InvalidRequest(
            f"part '{name}' is not a .npy file; raw little-endian float64 parts need a "
            f"shape field '{name}.shape' such as '300,5'"
        )
    shape = parse_shape(shape_text, name)
    expected = math.prod(shape) * 8
    if len(data) != expected:
        raise InvalidRequest(
            f"part '{name}' has {len(data)} bytes but shape {list(shape)} of float64 "
            f"needs {expected} bytes"
        )
    return np.frombuffer(data, dtype="<f8").reshape(shape)


def to_npy_bytes(arr: Any) -> bytes:
    """Encode an array as ``.npy`` bytes (used by the Python client)."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(arr), allow_pickle=False)
    return buf.getvalue()


def _describe_position(arr: np.ndarray) -> str:
    bad = np.argwhere(~np.isfinite(arr))[0]
    return "[" + ", ".join(str(int(i)) for i in bad) + "]"


def as_float_array(
    value: Any, name: str, ndim: int, *, allow_1d_column: bool = False
) -> np.ndarray:
    """Convert a nested list or ndarray to a finite float64 array of ``ndim`` dimensions.

    Raises ``ValueError`` (turned into a 422 by the schema layer) with a message
    that names the field and what to change.
    """
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (ValueError, TypeError) as exc:
        reason = str(exc).split(".")[0]
        raise ValueError(
            f"{name} must be a {ndim}-D array of numbers with rows of equal length ({reason})"
        ) from None
    if allow_1d_column and arr.ndim == 1 and ndim == 2:
        arr = arr.reshape(-1, 1)
    if arr.ndim != ndim:
        hint = " (wrap a single row as [[...]])" if ndim == 2 and arr.ndim == 1 else ""
        raise ValueError(f"{name} must be a {ndim}-D array: got {arr.ndim}-D{hint}")
    if arr.size == 0 or arr.shape[0] == 0:
        raise ValueError(f"{name} must not be empty: got shape {list(arr.shape)}")
    if not np.isfinite(arr).all():
        raise ValueError(
            f"{name} contains NaN, infinite or null values (first at {_describe_position(arr)})"
        )
    return arr


def as_edge_array(value: Any, name: str = "edges") -> np.ndarray:
    """Convert ``[[i, j], ...]`` to an int64 array of shape (E, 2) of non-negative indices."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (ValueError, TypeError):
        raise ValueError(f"{name} must be a list of [i, j] pairs of vertex indices") from None
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(
            f"{name} must be a list of [i, j] pairs of vertex indices: got shape {list(arr.shape)}"
        )
    bad = ~np.isfinite(arr) | (arr != np.round(arr)) | (arr < 0)
    if bad.any():
        k = int(np.argwhere(bad)[0][0])
        raise ValueError(
            f"{name}[{k}] = {arr[k].tolist()} is not a pair of non-negative integer vertex indices"
        )
    return arr.astype(np.int64)
