"""Histogram split search for OK3 trees on binned inputs (math note s. 2, "Histograms").

A node's histogram holds, for every bin of every feature (the flat bin axis of
:class:`~okcore.trees.binning.BinnedInputs`), the count of the node's rows in the bin and the sum
of their (sketched) residual rows. The best cut of a feature is a scan over its bins, the
gain of a cut being the exact search's ||S_L||^2 n / (n_L n_R) with S_L centred at the node
mean (see :mod:`okcore.trees.splitter`); the larger child's histogram is the parent's minus the
smaller child's (LightGBM, scikit-learn HGB). Costs, for a node of n rows, p features,
k residual columns and B bins in all: O(n p k) to build a dense histogram (O(nnz k + B k)
for CSR inputs), O(B k) to scan or subtract it — instead of O(p n r) for the exact search.

Kernels are compiled with numba (``nogil``: threads build disjoint feature ranges).
Thresholds are real values placed in the gap between the values present in the node, like
the exact search's midpoints, so prediction needs no binning.

Refinement (:func:`refine_split`): a bin edge can miss a sharp step in the outputs by up to
one bin. Once the histogram has chosen a feature and an edge, the exact cuts (midpoints
between consecutive distinct raw values, the exact search's candidates) inside the two bins
on either side of that edge are scored from the node's rows in those bins, and the best one
is kept; the node's rows are then partitioned on the raw value. O(m log m + m k) for the m
rows of the two bins, against O(n p k) for the histogram of the node.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from numba import njit

from ._prefetch import prefetch
from ._sparse import csr_find
from .splitter import (
    FEATURE_THRESHOLD,
    beats,
    centred_cut_gain,
    midpoint_threshold,
    penalised_gain,
    pick_tried,
    threshold_after_bin,
)

#: Rows ahead whose residuals and codes a row-wise build asks the cache for: a row's work
#: (its adds to p bins) is longer than the out-of-order window, so without a prefetch
#: each row of a scattered node waits for its cache misses.
PREFETCH_ROWS = 6
#: Most residual columns (sketch dimension) built row by row, see :func:`use_row_wise`.
ROW_WISE_MAX_COLUMNS = 8


@njit(cache=True, nogil=True)
def gather_rows_into(
    samples: np.ndarray, start: int, lo: int, hi: int, R: np.ndarray, out: np.ndarray
) -> None:  # pragma: no cover - jit
    """out[t - start] = R[samples[t]] for t in lo..hi-1 (threads fill disjoint ranges)."""
    k = R.shape[1]
    for t in range(lo, hi):
        i = samples[t]
        for c in range(k):
            out[t - start, c] = R[i, c]


@njit(cache=True, nogil=True)
def gather_rows(
    samples: np.ndarray, start: int, end: int, R: np.ndarray
) -> np.ndarray:  # pragma: no cover - jit
    """R[samples[start:end]] as a contiguous (n, k) array: the builds then read it in order."""
    out = np.empty((end - start, R.shape[1]))
    gather_rows_into(samples, start, start, end, R, out)
    return out


def compiled_with_slp(signature: str) -> Callable[[Callable[..., Any]], Any]:
    """numba.njit(signature) compiled now with LLVM's SLP vectorizer on.

    numba leaves the SLP (straight-line) vectorizer off by default since 0.57 after
    miscompilations in other code (numba PR #8852); without it the 8 adds of a histogram row
    stay scalar. The flag is numba's own config value, set only while this kernel compiles
    (at import, under the import lock; the cached machine code is the vectorized one). The
    kernel is plain float adds and is checked against a direct build in
    tests/okcore/trees/test_histogram.py.
    """

    config: Any = numba.config  # its flags are set at run time: not in its type stubs

    def compile_now(function: Callable[..., Any]) -> Any:
        previous = config.SLP_VECTORIZE
        config.SLP_VECTORIZE = 1
        try:
            return njit(signature, cache=True, nogil=True, fastmath=True)(function)
        finally:
            config.SLP_VECTORIZE = previous

    return compile_now


@compiled_with_slp(
    "void(uint8[:, ::1], int32[::1], int64, int64, float64[:, ::1], int64[::1], int64, int64,"
    " float64[:, ::1], int64[::1])"
)
def build_dense(
    codes: np.ndarray,
    samples: np.ndarray,
    start: int,
    end: int,
    rows: np.ndarray,
    bin_offset: np.ndarray,
    f_lo: np.ndarray,
    f_hi: np.ndarray,
    hist: np.ndarray,
    counts: np.ndarray,
) -> None:  # pragma: no cover
    """Histogram of rows samples[start:end] for features f_lo..f_hi-1 (feature-major codes
    (p, n); ``rows`` = gather_rows(samples, start, end, R)).

    One feature at a time, so its (bins, k) block of ``hist`` stays in L1 cache (LightGBM's
    ordered-gradient layout). Overwrites those features' bins of ``hist`` (B, k) and
    ``counts`` (B,). O(n (f_hi - f_lo) k).

    The residual columns go four at a time, all four loads before the four stores, with
    unsigned indices (no negative-index wraparound branch): the SLP vectorizer then makes
    each group one 256-bit load-add-store, about twice the speed of scalar adds.
    """
    k = np.uint64(rows.shape[1])
    k_groups = k - k % np.uint64(4)
    one, two, three, four = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
    b_lo, b_hi = bin_offset[f_lo], bin_offset[f_hi]
    hist[b_lo:b_hi, :] = 0.0
    counts[b_lo:b_hi] = 0
    for f in range(f_lo, f_hi):
        base = np.uint64(bin_offset[f])
        codes_f = codes[f]
        for t in range(start, end):
            b = base + np.uint64(codes_f[np.uint64(samples[t])])
            r = np.uint64(t - start)
            counts[b] += 1
            c = np.uint64(0)
            while c < k_groups:
                a0, a1, a2, a3 = rows[r, c], rows[r, c + one], rows[r, c + two], rows[r, c + three]
                h0, h1, h2, h3 = hist[b, c], hist[b, c + one], hist[b, c + two], hist[b, c + three]
                hist[b, c] = h0 + a0
                hist[b, c + one] = h1 + a1
                hist[b, c + two] = h2 + a2
                hist[b, c + three] = h3 + a3
                c += four
            while c < k:
                hist[b, c] += rows[r, c]
                c += one


@compiled_with_slp(
    "void(uint8[:, ::1], int32[::1], int64, int64, float64[:, ::1], int64[::1], int64, int64,"
    " float64[:, ::1], int64[::1])"
)
def build_dense_rows(
    row_codes: np.ndarray,
    samples: np.ndarray,
    start: int,
    end: int,
    R: np.ndarray,
    bin_offset: np.ndarray,
    f_lo: np.ndarray,
    f_hi: np.ndarray,
    hist: np.ndarray,
    counts: np.ndarray,
) -> None:  # pragma: no cover
    """Histogram of the rows samples[start:end] of R (N, k) for features f_lo..f_hi-1, from
    row-major codes (N, p) (:func:`row_major_codes`). Overwrites those features' bins of
    ``hist`` (B, k) and ``counts`` (B,). O(n (f_hi - f_lo) k).

    Row by row (LightGBM's row-wise histograms): a row's residuals are loaded once, eight
    columns at a time into registers, and added to its bin of every feature of the range,
    the row's codes being one contiguous run. No gathered copy of the rows is made, and
    every bin still adds its rows in node order, so any split of the features between
    threads gives the same numbers. The eight adds of a bin become a pair of 256-bit
    load-add-stores (SLP vectorizer, unsigned indices: no negative-index wraparound
    branch); the next rows' cache lines are prefetched (:data:`PREFETCH_ROWS` ahead), as a
    row's adds outlast the out-of-order window. k must be a multiple of 4 (a last group of
    four columns after the groups of eight).

    At k = 8 (the default sketch), p = 50 and 255 bins this is 1.4-2.2x faster than
    :func:`build_dense` over gathered rows; with many columns (k = 50) the flat histogram
    (B k doubles, 5 MB) no longer stays in L2 cache and :func:`build_dense`, one feature's
    bins at a time, is 1.2-2.5x faster (:func:`use_row_wise` picks).
    """
    k = np.uint64(R.shape[1])
    b_lo, b_hi = bin_offset[f_lo], bin_offset[f_hi]
    hist[b_lo:b_hi, :] = 0.0
    counts[b_lo:b_hi] = 0
    c = np.uint64(0)
    while c + np.uint64(8) <= k:
        c1, c2, c3 = c + np.uint64(1), c + np.uint64(2), c + np.uint64(3)
        c4, c5, c6, c7 = c + np.uint64(4), c + np.uint64(5), c + np.uint64(6), c + np.uint64(7)
        first = c == 0
        for t in range(start, end):
            if t + PREFETCH_ROWS < end:
                ahead = samples[t + PREFETCH_ROWS]
                prefetch(R, ahead, 0)
                prefetch(row_codes, ahead, 0)
            i = np.uint64(samples[t])
            a0, a1, a2, a3 = R[i, c], R[i, c1], R[i, c2], R[i, c3]
            a4, a5, a6, a7 = R[i, c4], R[i, c5], R[i, c6], R[i, c7]
            for f in range(f_lo, f_hi):
                b = np.uint64(bin_offset[f]) + np.uint64(row_codes[i, f])
                if first:
                    counts[b] += 1
                h0, h1, h2, h3 = hist[b, c], hist[b, c1], hist[b, c2], hist[b, c3]
                h4, h5, h6, h7 = hist[b, c4], hist[b, c5], hist[b, c6], hist[b, c7]
                hist[b, c], hist[b, c1], hist[b, c2], hist[b, c3] = (
                    h0 + a0,
                    h1 + a1,
                    h2 + a2,
                    h3 + a3,
                )
                hist[b, c4], hist[b, c5], hist[b, c6], hist[b, c7] = (
                    h4 + a4,
                    h5 + a5,
                    h6 + a6,
                    h7 + a7,
                )
        c += np.uint64(8)
    if c + np.uint64(4) <= k:
        c1, c2, c3 = c + np.uint64(1), c + np.uint64(2), c + np.uint64(3)
        first = c == 0
        for t in range(start, end):
            if t + PREFETCH_ROWS < end:
                ahead = samples[t + PREFETCH_ROWS]
                prefetch(R, ahead, 0)
                prefetch(row_codes, ahead, 0)
            i = np.uint64(samples[t])
            a0, a1, a2, a3 = R[i, c], R[i, c1], R[i, c2], R[i, c3]
            for f in range(f_lo, f_hi):
                b = np.uint64(bin_offset[f]) + np.uint64(row_codes[i, f])
                if first:
                    counts[b] += 1
                h0, h1, h2, h3 = hist[b, c], hist[b, c1], hist[b, c2], hist[b, c3]
                hist[b, c], hist[b, c1], hist[b, c2], hist[b, c3] = (
                    h0 + a0,
                    h1 + a1,
                    h2 + a2,
                    h3 + a3,
                )
        c += np.uint64(4)


def row_major_codes(codes: np.ndarray) -> np.ndarray:
    """Dense (p, N) codes as the (N, p) array :func:`build_dense_rows` reads: one more byte
    per value, read as one contiguous run per row instead of p scattered bytes. O(N p)."""
    return np.ascontiguousarray(codes.T)


def use_row_wise(k: int) -> bool:
    """Whether dense histograms of k residual columns are built row by row
    (:func:`build_dense_rows`): k a multiple of 4 up to ROW_WISE_MAX_COLUMNS, where the
    flat histogram of every feature stays in L2 cache (measured, see its docstring)."""
    return k % 4 == 0 and k <= ROW_WISE_MAX_COLUMNS


@njit(cache=True, nogil=True, fastmath=True)
def build_sparse(
    codes: Any,
    indptr: Any,
    indices: Any,
    zero_code: np.ndarray,
    samples: np.ndarray,
    start: int,
    end: int,
    R: np.ndarray,
    bin_offset: np.ndarray,
    hist: np.ndarray,
    counts: np.ndarray,
) -> None:  # pragma: no cover
    """Histogram of rows samples[start:end], all features, from CSR codes (stored entries).

    Stored entries are added to their bins; each feature's implicit zeros go to its zero bin
    as (node total) - (sum of the feature's bins). O(nnz_node k + B k).
    """
    k = R.shape[1]
    n_features = bin_offset.shape[0] - 1
    hist[:, :] = 0.0
    counts[:] = 0
    total = np.zeros(k)
    for t in range(start, end):
        i = samples[t]
        for c in range(k):
            total[c] += R[i, c]
        for e in range(indptr[i], indptr[i + 1]):
            b = bin_offset[indices[e]] + codes[e]
            counts[b] += 1
            for c in range(k):
                hist[b, c] += R[i, c]
    n = end - start
    rest = np.empty(k)
    for f in range(n_features):
        n_stored = 0
        rest[:] = total
        for b in range(bin_offset[f], bin_offset[f + 1]):
            n_stored += counts[b]
            for c in range(k):
                rest[c] -= hist[b, c]
        z = bin_offset[f] + zero_code[f]
        counts[z] += n - n_stored
        for c in range(k):
            hist[z, c] += rest[c]


@compiled_with_slp(
    "Tuple((int64, int64, float64, float64, int64))(float64[:, ::1], int64[::1], int64[::1],"
    " float64[::1], float64[::1], int32[::1], int64, float64[::1], int64, float64)"
)
def best_split(
    hist: np.ndarray,
    counts: np.ndarray,
    bin_offset: np.ndarray,
    bin_min: np.ndarray,
    bin_max: np.ndarray,
    features: np.ndarray,
    n: int,
    mu: np.ndarray,
    min_leaf: int,
    l2: float,
) -> tuple[int, int, float, float, int]:  # pragma: no cover
    """Best (feature, n_left, threshold, gain, last left bin of the feature) from a histogram.

    A cut after a non-empty bin b of feature f sends the bins <= b left; its threshold is the
    midpoint between the largest value of bin b and the smallest of the next non-empty bin
    (the exact search's midpoint when bins hold one distinct value each). Ties
    (:func:`~okcore.trees.splitter.beats`; dense and CSR inputs, built and subtracted
    histograms sum in different orders) go to the first feature, then the leftmost cut.
    Feature -1 when no valid cut. O(len(features) bins k).
    Columns go four at a time with unsigned indices, as in :func:`build_dense`. ``l2`` > 0:
    the penalised gain (:func:`~okcore.trees.splitter.penalised_gain`), O(k) more per cut.
    """
    mu_sq = 0.0
    for j in range(mu.shape[0]):
        mu_sq += mu[j] * mu[j]
    k = np.uint64(hist.shape[1])
    k_groups = k - k % np.uint64(4)
    one, two, three, four = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
    best_f, best_left, best_bin, best_gain = -1, -1, -1, -1.0
    S = np.empty(hist.shape[1])
    for f in features:
        S[:] = 0.0
        n_left = 0
        for b in range(bin_offset[f], bin_offset[f + 1] - 1):
            if counts[b] == 0:
                continue
            n_left += counts[b]
            n_right = n - n_left
            if n_right == 0:
                break
            ub = np.uint64(b)
            acc = 0.0
            c = np.uint64(0)
            while c < k_groups:
                s0 = S[c] + hist[ub, c]
                s1 = S[c + one] + hist[ub, c + one]
                s2 = S[c + two] + hist[ub, c + two]
                s3 = S[c + three] + hist[ub, c + three]
                S[c], S[c + one], S[c + two], S[c + three] = s0, s1, s2, s3
                d0, d1 = s0 - n_left * mu[c], s1 - n_left * mu[c + one]
                d2, d3 = s2 - n_left * mu[c + two], s3 - n_left * mu[c + three]
                acc += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3)
                c += four
            while c < k:
                s0 = S[c] + hist[ub, c]
                S[c] = s0
                d0 = s0 - n_left * mu[c]
                acc += d0 * d0
                c += one
            if n_left < min_leaf or n_right < min_leaf:
                continue
            if l2 > 0.0:
                dot = 0.0
                for j in range(mu.shape[0]):
                    dot += (S[j] - n_left * mu[j]) * mu[j]
                gain = penalised_gain(acc, dot, mu_sq, n_left, n_right, l2)
            else:
                gain = acc * n / (n_left * n_right)
            if best_f < 0 or beats(gain, best_gain):
                best_f, best_left, best_bin, best_gain = f, n_left, b, gain
    threshold = 0.0
    if best_f >= 0:
        threshold = threshold_after_bin(counts, bin_min, bin_max, best_bin)
        best_bin -= bin_offset[best_f]  # the feature's own bin number, as codes are
    return best_f, best_left, threshold, best_gain, best_bin


@njit(cache=True, nogil=True, fastmath=True)
def refine_split(
    samples: np.ndarray,
    start: int,
    end: int,
    codes2d: Any,
    values2d: Any,
    codes1d: Any,
    values1d: Any,
    indptr: Any,
    indices: Any,
    zero_code: np.ndarray,
    hist: np.ndarray,
    counts: np.ndarray,
    bin_offset: np.ndarray,
    R: np.ndarray,
    mu: np.ndarray,
    split: tuple[int, int, float, float, int],
    min_leaf: int,
    l2: float = 0.0,
) -> tuple[int, int, float, float, int]:  # pragma: no cover - jit
    """The best exact cut of the histogram split's feature inside the two bins around its
    chosen edge: (feature, n_left, threshold, gain, last left bin), as :func:`best_split`.

    ``split`` is :func:`best_split`'s result for the node samples[start:end] and ``hist``,
    ``counts`` the node's histogram. With b the last left bin and b' the next non-empty bin
    of the node, the left sum starts from the bins below b (from the histogram); the node's
    rows in b and b' are sorted by raw value (dense ``values2d`` (p, N) or CSR ``values1d``
    aligned with ``codes1d``) and every cut between consecutive distinct values (more than
    FEATURE_THRESHOLD apart) is scored with the exact search's gain
    ||S_L||^2 n / (n_L n_R) (S_L centred at ``mu``; with ``l2`` > 0 the penalised gain of
    :func:`~okcore.trees.splitter.penalised_gain`) and threshold formula. The chosen edge is
    one of these cuts, so the gain never drops (up to the tie margin); ties
    (:func:`~okcore.trees.splitter.beats`) keep the leftmost cut, as the exact search does.
    The last left bin returned is meaningless: rows must be partitioned on the raw value.
    O(n) to find the rows, O(m log m + m k) for the m rows of the two bins.
    """
    f, last = split[0], split[4]
    n = end - start
    k = R.shape[1]
    base = bin_offset[f]
    nxt = last + 1
    while counts[base + nxt] == 0:
        nxt += 1
    S = np.zeros(k)
    n_below = 0
    for b in range(base, base + last):
        n_below += counts[b]
        for c in range(k):
            S[c] += hist[b, c]
    for c in range(k):
        S[c] -= n_below * mu[c]
    m = counts[base + last] + counts[base + nxt]
    rows = np.empty(m, dtype=np.int64)
    x = np.empty(m)
    j = 0
    sparse = indptr.shape[0] > 0
    for t in range(start, end):
        i = samples[t]
        if sparse:
            at = csr_find(indptr, indices, i, f)
            code = codes1d[at] if at >= 0 else zero_code[f]
            value = values1d[at] if at >= 0 else 0.0
        else:
            code = codes2d[f, i]
            value = values2d[f, i]
        if code == last or code == nxt:
            rows[j] = i
            x[j] = value
            j += 1
    order = np.argsort(x, kind="mergesort")
    n_left = n_below
    best_left, best_pos, best_gain = -1, -1, -1.0
    mu_sq = float(mu @ mu)
    for t in range(m - 1):
        i = rows[order[t]]
        acc = 0.0
        for c in range(k):
            v = S[c] + (R[i, c] - mu[c])
            S[c] = v
            acc += v * v
        n_left += 1
        if x[order[t + 1]] <= x[order[t]] + FEATURE_THRESHOLD:
            continue
        if n_left < min_leaf or n - n_left < min_leaf:
            continue
        gain = centred_cut_gain(acc, S, mu, mu_sq, n_left, n, l2)  # S is centred at mu
        if best_pos < 0 or beats(gain, best_gain):
            best_left, best_pos, best_gain = n_left, t, gain
    if best_pos < 0:  # cannot happen for a valid split (its edge is a candidate): keep it
        return split
    threshold = midpoint_threshold(x[order[best_pos]], x[order[best_pos + 1]])
    return f, best_left, threshold, best_gain, last


@njit(cache=True, nogil=True, fastmath=True)
def best_split_random(
    samples: np.ndarray,
    start: int,
    end: int,
    codes2d: Any,
    codes1d: Any,
    indptr: Any,
    indices: Any,
    zero_code: np.ndarray,
    bin_offset: np.ndarray,
    bin_min: np.ndarray,
    bin_max: np.ndarray,
    edges: np.ndarray,
    R: np.ndarray,
    mu: np.ndarray,
    features: np.ndarray,
    uniforms: np.ndarray,
    max_features: int,
    min_leaf: int,
    l2: float,
    twin_column: np.ndarray,
) -> tuple[int, int, float, float, int]:  # pragma: no cover - jit
    """OK3-et on bins: one uniform cut in the node's value range per feature, best of
    ``max_features`` non-constant features (consumes the draws as the exact version does).
    ``twin_column`` (:mod:`okcore.trees.missing`; empty: no missing values): a feature with a
    twin draws its cut in the range of its observed bins (its last bin, the missing values,
    aside) and scores it with the missing rows right (the feature) and left (its twin: the
    same bins after its first, the missing one), the better kept, right on a tie.

    The cut c = lo + u (hi - lo) between the node's smallest and largest values (bin minima
    and maxima) sends the bins wholly <= c left, with threshold c: with one distinct value
    per bin this is the exact OK3-et split. A bin straddling c goes left (right if it is the
    node's last bin) with the bin edge as threshold. Returns (feature, n_left, threshold,
    gain, last left bin); O(n k) per feature tried. ``l2`` > 0: the penalised gain. Ties
    go to the lower feature index, whatever the order of the draw
    (:func:`~okcore.trees.splitter.pick_tried`).
    """
    n = end - start
    k = R.shape[1]
    SL = np.empty(k)
    tried = 0
    # the tried features' cuts (feature -1: too few rows on a side), compared by pick_tried
    width = min(max_features, features.shape[0])
    cand_f = np.full(width, -1, dtype=np.int64)
    cand_left, cand_bin = np.empty(width, dtype=np.int64), np.empty(width, dtype=np.int64)
    cand_thr, cand_gain = np.empty(width), np.empty(width)
    sparse = indptr.shape[0] > 0
    if sparse:  # the node's entries by feature, and every feature's bin range
        col_offset, col_rows, col_codes, lo_codes, hi_codes = _node_columns(
            samples, start, end, codes1d, indptr, indices, zero_code
        )
    has_twins = twin_column.shape[0] > 0
    for t in range(features.shape[0]):
        f = features[t]
        twin = twin_column[f] if has_twins else -1
        # a feature with a twin: its last bin holds the missing values, outside the range
        missing_bin = bin_offset[f + 1] - bin_offset[f] - 1 if twin >= 0 else 256
        if sparse:
            lo_b, hi_b = lo_codes[f], hi_codes[f]
            if hi_b == missing_bin:  # the largest observed bin of the node, if any
                hi_b = -1
                for e in range(col_offset[f], col_offset[f + 1]):
                    if col_codes[e] != missing_bin:
                        hi_b = max(hi_b, col_codes[e])
                if col_offset[f + 1] - col_offset[f] < n:  # implicit zeros
                    hi_b = max(hi_b, zero_code[f])
        else:
            lo_b, hi_b = 255, -1
            for s in range(start, end):
                b = codes2d[f, samples[s]]
                if b == missing_bin:
                    continue
                lo_b = min(lo_b, b)
                hi_b = max(hi_b, b)
        if hi_b <= lo_b:
            continue
        tried += 1
        base = bin_offset[f]
        lo, hi = bin_min[base + lo_b], bin_max[base + hi_b]
        cut = lo + uniforms[t] * (hi - lo)
        last = lo_b  # last bin with its minimum <= cut
        while last + 1 <= hi_b and bin_min[base + last + 1] <= cut:
            last += 1
        threshold = cut
        if bin_max[base + last] > cut:  # the cut falls inside bin `last`
            if last == hi_b:
                last -= 1
            threshold = edges[base - f + last]
        for side in range(2):  # the missing rows right, then (a twin) left
            col = f if side == 0 else twin
            if col < 0:
                break
            last_c = last + side  # a twin's bins: the missing one, then the feature's others
            SL[:] = 0.0
            n_left = 0
            if sparse:
                # centred rows sum to 0 over the node: when the implicit zeros go left, S_L is
                # minus the sum over the stored entries that go right
                zeros_left = zero_code[col] <= last_c
                n_left = n if zeros_left else 0
                sign = -1 if zeros_left else 1  # entries that do not follow the zeros' side
                for e in range(col_offset[col], col_offset[col + 1]):
                    if (col_codes[e] <= last_c) != zeros_left:
                        i = col_rows[e]
                        n_left += sign
                        for c in range(k):
                            SL[c] += sign * (R[i, c] - mu[c])
            else:
                for s in range(start, end):
                    i = samples[s]
                    if codes2d[col, i] <= last_c:
                        n_left += 1
                        for c in range(k):
                            SL[c] += R[i, c] - mu[c]
            if n_left >= min_leaf and n - n_left >= min_leaf:
                acc = 0.0
                for c in range(k):
                    acc += SL[c] * SL[c]
                if l2 > 0.0:
                    dot = 0.0
                    for c in range(k):
                        dot += SL[c] * mu[c]
                    gain = penalised_gain(acc, dot, float(mu @ mu), n_left, n - n_left, l2)
                else:
                    gain = acc * n / (n_left * (n - n_left))
                j = tried - 1
                if side == 0 or cand_f[j] < 0 or beats(gain, cand_gain[j]):
                    cand_f[j], cand_left[j], cand_thr[j], cand_gain[j] = (
                        col,
                        n_left,
                        threshold,
                        gain,
                    )
                    cand_bin[j] = last_c
        if tried == max_features:
            break
    best = pick_tried(cand_f[:tried], cand_gain[:tried])
    if best < 0:
        return -1, -1, 0.0, -1.0, -1
    return cand_f[best], cand_left[best], cand_thr[best], cand_gain[best], cand_bin[best]


@njit(cache=True, nogil=True)
def _node_columns(
    samples: np.ndarray,
    start: int,
    end: int,
    codes1d: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    zero_code: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """The stored entries of rows samples[start:end] grouped by feature (a counting sort):
    (offset (p + 1,), row (nnz,), code (nnz,)) plus every feature's smallest and largest bin
    over the node, the implicit zeros included. O(nnz_node + p): a word feature absent from
    the node is found constant, and a tried one costs its own entries, not the node's rows."""
    p = zero_code.shape[0]
    offset = np.zeros(p + 1, dtype=np.int64)
    for s in range(start, end):
        i = samples[s]
        for e in range(indptr[i], indptr[i + 1]):
            offset[indices[e] + 1] += 1
    for f in range(p):
        offset[f + 1] += offset[f]
    fill = offset[:-1].copy()
    rows = np.empty(offset[p], dtype=np.int64)
    codes = np.empty(offset[p], dtype=np.int64)
    lo = np.full(p, 255, dtype=np.int64)
    hi = np.full(p, -1, dtype=np.int64)
    for s in range(start, end):
        i = samples[s]
        for e in range(indptr[i], indptr[i + 1]):
            f = indices[e]
            rows[fill[f]] = i
            codes[fill[f]] = codes1d[e]
            fill[f] += 1
            lo[f] = min(lo[f], codes1d[e])
            hi[f] = max(hi[f], codes1d[e])
    n = end - start
    for f in range(p):
        if offset[f + 1] - offset[f] < n:  # some rows hold the implicit 0
            lo[f] = min(lo[f], zero_code[f])
            hi[f] = max(hi[f], zero_code[f])
    return offset, rows, codes, lo, hi


@njit(cache=True, nogil=True)
def partition_sparse(
    samples: np.ndarray,
    start: int,
    end: int,
    codes: Any,
    indptr: Any,
    indices: Any,
    zero_code: np.ndarray,
    feature: int,
    last_bin: float,
    buffer: np.ndarray,
) -> int:  # pragma: no cover - jit
    """Stable partition of samples[start:end] on CSR codes: rows whose bin of ``feature`` is
    <= last_bin first (dense codes use :func:`okcore.trees.splitter.partition`). Returns the number
    of left rows. O(n log nnz_row).

    The same on raw values: ``codes`` the stored values, ``zero_code`` 0.0 per feature and
    ``last_bin`` the threshold."""
    n_left = 0
    n_right = 0
    for t in range(start, end):
        i = samples[t]
        at = csr_find(indptr, indices, i, feature)
        if (codes[at] if at >= 0 else zero_code[feature]) <= last_bin:
            samples[start + n_left] = i
            n_left += 1
        else:
            buffer[n_right] = i
            n_right += 1
    for t in range(n_right):
        samples[start + n_left + t] = buffer[t]
    return n_left
