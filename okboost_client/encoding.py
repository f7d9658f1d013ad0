"""Request bodies of the okboost service from Python values, with numpy only.

Arrays become ``.npy`` parts of a multipart request (or JSON lists); scipy sparse
matrices are recognised without importing scipy (a caller that has one has scipy) and
travel in CSR layout: parts ``<name>.data``, ``<name>.indices``, ``<name>.indptr`` and the
text field ``<name>.shape``.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

KEPT_INPUT_DTYPES = (np.float64, np.float32, np.uint8)
"""Input dtypes sent as they are; any other input is sent as float64."""


def is_sparse(value: Any) -> bool:
    """True for a scipy sparse matrix or array (checked by its module, scipy not imported)."""
    return type(value).__module__.startswith("scipy.sparse") and hasattr(value, "tocsr")


def as_inputs(value: Any) -> Any:
    """Inputs as the client sends them: CSR for any scipy sparse matrix, an ndarray kept in
    float64 / float32 / uint8, anything else as float64."""
    if is_sparse(value):
        return value.tocsr()
    arr = np.asarray(value)
    if arr.dtype in KEPT_INPUT_DTYPES:
        return arr
    return np.asarray(value, dtype=float)


def npy_bytes(arr: Any) -> bytes:
    """``arr`` as the bytes of a ``.npy`` file (never pickled)."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(arr), allow_pickle=False)
    return buf.getvalue()


def split_arrays(
    body: dict[str, Any], prefix: str = ""
) -> tuple[dict[str, Any], dict[str, bytes], dict[str, str]]:
    """Move ndarray and sparse values (up to two levels deep) out of ``body`` into .npy
    parts named by their path; returns (JSON rest, binary parts, text fields)."""
    plain: dict[str, Any] = {}
    parts: dict[str, bytes] = {}
    texts: dict[str, str] = {}
    for key, value in body.items():
        path = f"{prefix}{key}"
        if is_sparse(value):
            csr = value.tocsr()
            for member in ("data", "indices", "indptr"):
                parts[f"{path}.{member}"] = npy_bytes(getattr(csr, member))
            texts[f"{path}.shape"] = f"{csr.shape[0]},{csr.shape[1]}"
        elif isinstance(value, np.ndarray):
            parts[path] = npy_bytes(value)
        elif isinstance(value, dict) and not prefix:
            inner, inner_parts, inner_texts = split_arrays(value, prefix=f"{path}.")
            plain[key] = inner
            parts.update(inner_parts)
            texts.update(inner_texts)
        else:
            plain[key] = value
    return plain, parts, texts


def jsonable(value: Any) -> Any:
    """``value`` with arrays as lists and sparse matrices as ``{data, indices, indptr, shape}``."""
    if is_sparse(value):
        csr = value.tocsr()
        return {
            "data": csr.data.tolist(),
            "indices": csr.indices.tolist(),
            "indptr": csr.indptr.tolist(),
            "shape": list(csr.shape),
        }
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value
