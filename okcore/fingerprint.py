"""A cheap fingerprint of a fit's data, to tell whether a later call passes the same data
(warm start continues a fit only on it): a BLAKE2b digest of the arrays' bytes, dtypes and
shapes, and of the other values' structure. O(bytes of the data), one pass, no copy of a
C-contiguous array."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from scipy import sparse

DIGEST_SIZE = 16
HEX_DIGITS = "0123456789abcdef"


def data_fingerprint(*values: Any) -> str:
    """A hex digest of ``values``: arrays (dense or sparse) by dtype, shape and bytes,
    mappings and sequences item by item, kernel objects by their ``to_dict`` spec, other
    values by type and ``repr``. Equal data gives equal digests; any changed entry changes
    it (up to the 2^-128 chance of a collision)."""
    digest = hashlib.blake2b(digest_size=DIGEST_SIZE)
    for value in values:
        _update(digest, value)
    return digest.hexdigest()


def is_fingerprint(value: Any) -> bool:
    """Whether ``value`` has the form of a :func:`data_fingerprint` (32 lowercase hex
    digits), e.g. one read from a file."""
    return (
        isinstance(value, str) and len(value) == 2 * DIGEST_SIZE and set(value) <= set(HEX_DIGITS)
    )


def _update(digest: Any, value: Any) -> None:
    if sparse.issparse(value):
        csr = sparse.csr_matrix(value)
        digest.update(f"sparse{csr.shape}".encode())
        for part in (csr.data, csr.indices, csr.indptr):
            _update(digest, part)
    elif isinstance(value, np.ndarray) or (
        hasattr(value, "__array__") and not isinstance(value, str | bytes)
    ):
        array = np.ascontiguousarray(np.asarray(value))
        digest.update(f"array{array.dtype.str}{array.shape}".encode())
        if array.dtype.kind == "O":
            for item in array.ravel():
                _update(digest, item)
        else:
            digest.update(array.data)
    elif isinstance(value, dict):
        digest.update(f"dict{len(value)}".encode())
        for key in sorted(value, key=repr):
            _update(digest, key)
            _update(digest, value[key])
    elif isinstance(value, list | tuple):
        digest.update(f"{type(value).__name__}{len(value)}".encode())
        for item in value:
            _update(digest, item)
    elif callable(getattr(value, "to_dict", None)):  # an output kernel: its spec
        digest.update(type(value).__qualname__.encode())
        _update(digest, value.to_dict())
    else:
        digest.update(f"{type(value).__qualname__}:{value!r}".encode())
