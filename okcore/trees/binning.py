"""Binning of the inputs for the histogram split search (math note s. 2, "Histograms").

Every input feature is mapped once per fit to at most ``max_bins`` bins (codes 0..254 in a
uint8), as scikit-learn's HistGradientBoosting and LightGBM do. Bins are built from the
*distinct* values of a feature, after merging values closer than ``FEATURE_THRESHOLD``
(the exact search does not cut between them either):

- at most ``max_bins`` distinct values: one bin per value, and the bin edges are the exact
  search's thresholds (midpoints between consecutive values), so the histogram search grows
  exactly the trees of the exact search;
- more: ``max_bins`` bins of about equal counts (quantiles), with edges at midpoints between
  distinct values.

A value x falls in bin b iff edge[b - 1] < x <= edge[b], so "x <= threshold" at a bin edge
is "code <= b". Each bin also records the smallest and largest training value it holds:
the split thresholds are placed in the gap between the values present in a node (as the
exact search does), and the randomized splitter draws its cut in the node's value range.

Dense inputs give a feature-major (p, n) code matrix (each feature's codes contiguous); a scipy CSR matrix gives codes of its
stored entries only, with the code of 0 per feature (its implicit entries), so memory and
histogram work stay proportional to the non-zeros.

``keep_values=True`` also keeps the raw values, laid out as the codes (float64, 8 bytes per
code instead of 1): the refinement of a binned cut (:mod:`okcore.trees._histogram`) scores
the exact cuts between them inside the bins around the chosen edge.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numba import njit
from scipy import sparse

from .._shipping import nbytes_with_arrays
from ..threads import SERIAL, ChunkRunner
from .splitter import FEATURE_THRESHOLD

#: Largest number of bins per feature: codes fit in a uint8.
MAX_BINS = 255
#: Comparisons per value of the codes' binary search (log2 of 255 edges), in the runner's
#: additions.
SEARCH_STEPS = 8
#: A feature whose most frequent bin holds all but at most this fraction of the rows is
#: searched by its other rows only (:attr:`BinnedInputs.common_bins`): binary word counts,
#: one-hot columns, blank pixels.
COMMON_BIN_MAX_OUTSIDE = 0.2


@dataclass(frozen=True)
class BinnedInputs:
    """Inputs of one fit mapped to bins.

    Attributes
    ----------
    codes : uint8 ndarray of shape (p, n) (dense inputs, feature-major) or (nnz,) (CSR)
        Bin of each value; for CSR, of each stored entry, aligned with ``indices``.
    indptr, indices : int64 / int32 ndarrays or None
        CSR row pointers (n + 1,) and feature of each stored entry (nnz,); None when dense.
    zero_code : uint8 ndarray of shape (p,)
        Bin of the value 0 (the implicit entries of a CSR matrix).
    bin_offset : int64 ndarray of shape (p + 1,)
        Feature f owns the bins bin_offset[f] .. bin_offset[f + 1] - 1 of the flat bin axis.
    edges : float64 ndarray of shape (n_bins_total - p,)
        Upper edge of each bin but the last of every feature; feature f's edges are
        edges[bin_offset[f] - f : bin_offset[f + 1] - f - 1].
    bin_min, bin_max : float64 ndarrays of shape (n_bins_total,)
        Smallest and largest training value in each bin.
    values : float64 ndarray shaped as ``codes``, or None
        The raw value of each code (``keep_values=True``), else None.
    """

    codes: np.ndarray
    indptr: np.ndarray | None
    indices: np.ndarray | None
    zero_code: np.ndarray
    bin_offset: np.ndarray
    edges: np.ndarray
    bin_min: np.ndarray
    bin_max: np.ndarray
    values: np.ndarray | None = None

    def __sizeof__(self) -> int:  # the arrays too: scattered once to a cluster (_shipping)
        return nbytes_with_arrays(self)

    @property
    def n_samples(self) -> int:
        return int(self.codes.shape[1] if self.indptr is None else len(self.indptr) - 1)

    @property
    def n_features(self) -> int:
        return int(len(self.bin_offset) - 1)

    @property
    def is_sparse(self) -> bool:
        return self.indptr is not None

    @property
    def n_bins_total(self) -> int:
        return int(self.bin_offset[-1])

    @cached_property
    def common_bins(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`common_bin_layout` of the dense codes (computed once, on first use)."""
        if self.indptr is not None:
            raise ValueError("common_bins is defined for dense codes")
        return common_bin_layout(self.codes, self.bin_offset, COMMON_BIN_MAX_OUTSIDE)


def _feature_bins(
    values: np.ndarray, counts: np.ndarray, max_bins: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges, bin minima and maxima of one feature from its sorted distinct values and counts.

    Values closer than FEATURE_THRESHOLD to their predecessor join its group (no cut between
    them, as in the exact search). Groups are then merged into at most ``max_bins`` bins of
    roughly equal counts. -inf and +inf (missing values, :mod:`okcore.trees.missing`) each
    get a bin of their own at the ends, the finite values sharing the others. O(d) for d
    distinct values.
    """
    n_low, n_high = int(values[0] == -np.inf), int(values[-1] == np.inf)
    if n_low or n_high:
        finite = slice(n_low, len(values) - n_high)
        if finite.stop > finite.start:
            _, low, high = _feature_bins(values[finite], counts[finite], max_bins - n_low - n_high)
        else:
            low = high = np.empty(0)
        low = np.r_[[-np.inf] * n_low, low, [np.inf] * n_high]
        high = np.r_[[-np.inf] * n_low, high, [np.inf] * n_high]
        return _edges_between(high[:-1], low[1:]), low, high
    new_group = np.r_[True, np.diff(values) > FEATURE_THRESHOLD]
    starts = np.flatnonzero(new_group)  # first distinct value of each group
    ends = np.r_[starts[1:], len(values)] - 1  # last distinct value of each group
    if len(starts) > max_bins:
        group_counts = np.add.reduceat(counts, starts)
        cumulative = np.cumsum(group_counts)
        targets = cumulative[-1] * np.arange(1, max_bins) / max_bins
        # a bin ends after the group where the cumulative count reaches each quantile
        last_groups = np.unique(np.searchsorted(cumulative, targets, side="left"))
        last_groups = last_groups[last_groups < len(starts) - 1]
        first_groups = np.r_[0, last_groups + 1]
        last_groups = np.r_[last_groups, len(starts) - 1]
        starts, ends = starts[first_groups], ends[last_groups]
    low, high = values[starts], values[ends]
    return _edges_between(high[:-1], low[1:]), low, high


def _edges_between(x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
    """The exact search's thresholds between the largest values x0 of bins and the smallest
    x1 of the next (its formula, same fallback to x0)."""
    edges = x0 / 2.0 + x1 / 2.0
    bad = (edges == x1) | ~np.isfinite(edges)
    edges[bad] = x0[bad]
    return edges


def bin_inputs(
    X: np.ndarray | sparse.spmatrix, max_bins: int, keep_values: bool = False, n_threads: int = 1
) -> BinnedInputs:
    """Bin every feature of X (n, p), dense array of any real dtype or sparse matrix.

    O(p n log n) for the per-feature sorts (O(nnz log nnz) for CSR), O(n p log B) (O(nnz
    log B)) for the codes. ``max_bins`` in [2, 255]. ``keep_values`` also keeps the raw
    values as float64, laid out as the codes (O(n p) (O(nnz)) more memory). ``n_threads``
    > 1: the codes of dense inputs are found on that many threads (a few features each;
    the same codes for any number).
    """
    if not 2 <= max_bins <= MAX_BINS:
        raise ValueError(f"max_bins must be in [2, {MAX_BINS}]: got {max_bins}")
    if sparse.issparse(X):
        columns = sparse.csc_matrix(X, dtype=np.float64, copy=True)
        return _bin_sparse(columns, max_bins, keep_values)
    return _bin_dense(np.asarray(X), max_bins, keep_values, n_threads)


@njit(cache=True, nogil=True)
def code_features(
    X: np.ndarray,
    edges: np.ndarray,
    bin_offset: np.ndarray,
    f_lo: int,
    f_hi: int,
    codes: np.ndarray,
) -> None:  # pragma: no cover - jit
    """codes[f, i] = the bin of X[i, f] for the features f_lo .. f_hi - 1: the number of
    the feature's edges below the value (numpy's searchsorted, side "left", of the value in
    the feature's edges edges[bin_offset[f] - f : bin_offset[f + 1] - f - 1]), by a
    branch-free binary search (the comparisons select, they do not jump: a value's bin is
    a coin flip at every step). Rows are read in order, so X (n, p) is walked as laid out.
    O(n (f_hi - f_lo) log B)."""
    for i in range(X.shape[0]):
        for f in range(f_lo, f_hi):
            first = bin_offset[f] - f
            size = bin_offset[f + 1] - f - 1 - first
            if size == 0:  # one bin
                codes[f, i] = 0
                continue
            x = X[i, f]
            base = first
            while size > 1:
                half = size >> 1
                base = base + half if edges[base + half] < x else base
                size -= half
            codes[f, i] = base - first + (1 if edges[base] < x else 0)


def _bins_of(
    distinct: list[tuple[np.ndarray, np.ndarray]], max_bins: int
) -> tuple[list[np.ndarray], np.ndarray, dict[str, np.ndarray]]:
    """Edges per feature, the zero codes and the flat bin arrays from each feature's sorted
    distinct values and counts."""
    edges, low, high = zip(*(_feature_bins(v, c, max_bins) for v, c in distinct), strict=True)
    zero_code = np.array([np.searchsorted(e, 0.0, side="left") for e in edges], dtype=np.uint8)
    flat = {
        "bin_offset": np.r_[0, np.cumsum([len(lo) for lo in low])].astype(np.int64),
        "edges": np.concatenate(edges),
        "bin_min": np.concatenate(low),
        "bin_max": np.concatenate(high),
    }
    return list(edges), zero_code, flat


def _bin_dense(X: np.ndarray, max_bins: int, keep_values: bool, n_threads: int) -> BinnedInputs:
    """Feature-major codes (p, n) of a dense array (and its values, feature-major); each
    feature's distinct values (numpy's sort, which releases the GIL) and the codes over
    blocks of features on ``n_threads`` threads (the same bins for any number)."""
    n, p = X.shape

    def distinct_values(f: int) -> tuple[np.ndarray, np.ndarray]:
        return np.unique(np.asarray(X[:, f], dtype=np.float64), return_counts=True)

    codes = np.empty((p, n), dtype=np.uint8)
    # read in place (no copy of X) when numba compares its dtype as numpy does: via float64
    in_place = X.dtype.kind in "iu" or X.dtype in (np.float32, np.float64)
    readable = X if in_place else X.astype(np.float64)

    def code(f_lo: int, f_hi: int) -> None:
        code_features(readable, flat["edges"], flat["bin_offset"], f_lo, f_hi, codes)

    if n_threads < 2:
        edges, zero_code, flat = _bins_of([distinct_values(f) for f in range(p)], max_bins)
        SERIAL(0, p, code)
    else:
        with ThreadPoolExecutor(n_threads) as executor:
            distinct = list(executor.map(distinct_values, range(p)))
            edges, zero_code, flat = _bins_of(distinct, max_bins)
            ChunkRunner(executor, n_threads)(n * p * SEARCH_STEPS, p, code)
    values = np.ascontiguousarray(X.T, dtype=np.float64) if keep_values else None
    return BinnedInputs(
        codes=codes, indptr=None, indices=None, zero_code=zero_code, values=values, **flat
    )


def _bin_sparse(columns: sparse.csc_matrix, max_bins: int, keep_values: bool) -> BinnedInputs:
    """Codes of the stored entries of a sparse matrix (CSC copy, overwritten), in CSR order
    (and their values, in the same order); each column's implicit zeros join the count of
    the value 0."""
    n, p = columns.shape
    distinct = []
    for f in range(p):
        stored = columns.data[columns.indptr[f] : columns.indptr[f + 1]]
        values, counts = np.unique(stored, return_counts=True)
        n_zeros = n - len(stored)
        if n_zeros:
            at = int(np.searchsorted(values, 0.0))
            if at < len(values) and values[at] == 0.0:
                counts[at] += n_zeros
            else:
                values, counts = np.insert(values, at, 0.0), np.insert(counts, at, n_zeros)
        distinct.append((values, counts))
    edges, zero_code, flat = _bins_of(distinct, max_bins)
    stored_values = None
    if keep_values:  # the stored values in CSR order, as the codes will be
        raw = sparse.csc_matrix((columns.data.copy(), columns.indices, columns.indptr), (n, p))
        raw = raw.tocsr()
        raw.sort_indices()
        stored_values = raw.data
    for f in range(p):  # codes of each column's entries, scattered back to CSR order
        lo, hi = columns.indptr[f], columns.indptr[f + 1]
        columns.data[lo:hi] = np.searchsorted(edges[f], columns.data[lo:hi], side="left")
    coded = sparse.csc_matrix(
        (columns.data + 1.0, columns.indices, columns.indptr), shape=(n, p)
    ).tocsr()
    coded.sort_indices()
    return BinnedInputs(
        codes=(coded.data - 1.0).astype(np.uint8),  # +1 kept code-0 entries stored
        indptr=coded.indptr.astype(np.int64),
        indices=coded.indices.astype(np.int32),
        zero_code=zero_code,
        values=stored_values,
        **flat,
    )


@njit(cache=True, nogil=True)
def common_bin_layout(
    codes: np.ndarray, bin_offset: np.ndarray, max_fraction: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - jit
    """The features whose most frequent bin holds all but at most ``max_fraction`` of the
    rows (binary word counts, one-hot columns), for the oblivious level search
    (:func:`~okcore.trees._oblivious_kernels.build_level_sparse`): the flat bin
    of each feature's common bin (-1 for the other features), and CSC-like pointers (p + 1,)
    and rows (ascending, int32) of the rows outside it. ``codes`` (p, n) the rows' bins
    within each feature. O(n p)."""
    p, n = codes.shape
    common = np.full(p, -1, dtype=np.int64)
    ptr = np.zeros(p + 1, dtype=np.int64)
    counts = np.zeros(256, dtype=np.int64)
    limit = max_fraction * n
    for f in range(p):
        n_bins = bin_offset[f + 1] - bin_offset[f]
        counts[:n_bins] = 0
        codes_f = codes[f]
        for t in range(n):
            counts[codes_f[t]] += 1
        top = 0
        for b in range(1, n_bins):
            if counts[b] > counts[top]:
                top = b
        others = n - counts[top]
        if others <= limit:
            common[f] = bin_offset[f] + top
            ptr[f + 1] = ptr[f] + others
        else:
            ptr[f + 1] = ptr[f]
    rows = np.empty(ptr[p], dtype=np.int32)
    for f in range(p):
        if common[f] < 0:
            continue
        top = common[f] - bin_offset[f]
        codes_f = codes[f]
        j = ptr[f]
        for t in range(n):
            if codes_f[t] != top:
                rows[j] = t
                j += 1
    return common, ptr, rows
