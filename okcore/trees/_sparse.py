"""Compiled look-up in canonical CSR rows, shared by the binned search and prediction."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def csr_find(
    indptr: np.ndarray, indices: np.ndarray, row: int, column: int
) -> int:  # pragma: no cover - jit
    """Position of (row, column) among the stored entries of a CSR matrix with sorted
    indices, or -1 when the entry is not stored (an implicit zero). O(log nnz_row)."""
    lo, hi = indptr[row], indptr[row + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if indices[mid] < column:
            lo = mid + 1
        else:
            hi = mid
    if lo < indptr[row + 1] and indices[lo] == column:
        return lo
    return -1
