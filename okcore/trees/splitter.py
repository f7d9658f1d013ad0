"""Split search for OK3 trees on the residual factor (paper eq. 11; math note section 2).

A node holds n rows r_i of the factor R (N x r) with mean mu. Its total variance is
N*var = sum_i ||r_i - mu||^2 and the score of a split into left/right sets is the reduction
of N*var. Centering at the node mean makes S = 0, so S_R = -S_L and the reduction is

    gain = ||S_L||^2 / n_L + ||S_R||^2 / n_R = ||S_L||^2 * n / (n_L * n_R),

with S_L = sum over the left rows of (r_i - mu). Centering also avoids the cancellation of
"sum ||r||^2 - ||S||^2 / n" when the outputs have a large mean.

With an L2 penalty lambda on the leaf values (``l2_regularization``, as XGBoost's
G^2 / (H + lambda) with gradient sums and hessians n) a leaf's penalised objective
min_v sum_i ||r_i - v||^2 + lambda ||v||^2 is sum ||r_i||^2 - ||T||^2 / (n + lambda), T the
sum of its rows, and the score of a split is its reduction
||T_L||^2 / (n_L + lambda) + ||T_R||^2 / (n_R + lambda) - ||T||^2 / (n + lambda), evaluated
from the centred S_L by :func:`penalised_gain` (lambda = 0 gives the formula above).

Ties: two candidate cuts whose gains are equal within :data:`TIE_RELATIVE` (relative) are
the same cut for the search, and the first in the search's order is kept: the lower feature
index, then the lower cut (:func:`beats`; every split search of the package compares gains
with it). A tie is common and genuine (two features that put the same rows on each side, or
two single outliers of the same clipped residual cut off at either end), and rounding must not
decide it: it would make the tree depend on the order of the factor's columns, their signs,
a rotation of the factor or the machine.

Both searches are compiled with numba (``nogil``: threads may run trees in parallel):
- exact ("best"): every feature, every midpoint between distinct consecutive values, from
  per-feature presorted segments. O(n r) per feature per node, no sorting in the loop.
- randomized ("random", OK3-et): features in a random order, one uniform cut in the node's
  range per feature, until ``max_features`` non-constant features were tried. O(n r) each.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._prefetch import prefetch

#: Two feature values closer than this are treated as equal (no split between them), as in
#: scikit-learn's FEATURE_THRESHOLD.
FEATURE_THRESHOLD = 1e-7
#: Observed input values are below this (the search inputs read a missing value as +/-inf,
#: okcore.trees.missing); compared instead of testing for infinity, which the kernels
#: compiled with fastmath may assume absent.
OBSERVED_LIMIT = 1.7e308
#: ``twin_column`` of searches without missing values.
NO_TWINS = np.empty(0, dtype=np.int32)
#: Rows ahead whose cache lines the row-scanning kernels prefetch (scattered node rows).
PREFETCH_ROWS = 6
#: Two gains closer than this fraction of the larger are a tie (:func:`beats`). The gain of a
#: cut is a sum of squares whose rounding depends on the order its terms are added in (the
#: factor's column order, the rows' order by feature, a histogram built or derived): about
#: 1e-16 relative per term, 1e-13 after a thousand terms. 1e-9 leaves four orders above
#: that, and gains that differ by less are not distinguished by the data either (the paper's
#: gain is an N*var reduction, estimated from the training rows).
TIE_RELATIVE = 1e-9
#: Absolute floor of a tie: gains scale with the output kernel, so any floor above the range
#: of subnormal doubles would be scale dependent; this one only makes two subnormal gains
#: (whose relative precision is lost) a tie.
TIE_ABSOLUTE = 1e-300


@njit(cache=True, nogil=True, inline="always")
def beats(gain: float, best: float) -> bool:  # pragma: no cover - jit
    """Whether a candidate of ``gain`` replaces the best candidate so far, of gain ``best``
    (finite), in a split search that visits candidates in its order (feature index, then
    cut from left to right): only when it is larger by more than the tie margin,
    TIE_RELATIVE max(|gain|, |best|) + TIE_ABSOLUTE. Of candidates whose gains are equal
    within the margin the first visited is kept: the lower feature index, then the lower cut.
    Every split search (exact, histogram, refined, randomized, oblivious level search) and the
    best-first leaf order compare gains with this one function; inlined, so each kernel
    compiles it with its own flags. O(1); most candidates of a scan are below the best, and
    the first comparison rejects them alone (a scan of histogram bins measured 15 % slower
    with the margin always computed)."""
    return gain > best and gain - best > TIE_RELATIVE * max(abs(gain), abs(best)) + TIE_ABSOLUTE


@njit(cache=True, nogil=True, fastmath=True)
def _prefix_norms(
    order_f: np.ndarray,
    first: int,
    step: int,
    count: int,
    R: np.ndarray,
    mu: np.ndarray,
    S: np.ndarray,
    out: np.ndarray,
) -> None:  # pragma: no cover - jit
    """out[j] = ||sum_{t <= j} (R[order_f[first + t * step]] - mu)||^2 for j < count.

    Four rows per pass over the r columns: S is read and written once per four rows and the
    four norms accumulate side by side (about 1.3x faster than row by row at r = 50).
    """
    r = R.shape[1]
    S[:] = 0.0
    j = 0
    while j + 4 <= count:
        i0 = order_f[first + j * step]
        i1 = order_f[first + (j + 1) * step]
        i2 = order_f[first + (j + 2) * step]
        i3 = order_f[first + (j + 3) * step]
        a0 = a1 = a2 = a3 = 0.0
        for c in range(r):
            m = mu[c]
            v = S[c] + (R[i0, c] - m)
            a0 += v * v
            v += R[i1, c] - m
            a1 += v * v
            v += R[i2, c] - m
            a2 += v * v
            v += R[i3, c] - m
            a3 += v * v
            S[c] = v
        out[j], out[j + 1], out[j + 2], out[j + 3] = a0, a1, a2, a3
        j += 4
    while j < count:
        i = order_f[first + j * step]
        acc = 0.0
        for c in range(r):
            v = S[c] + (R[i, c] - mu[c])
            S[c] = v
            acc += v * v
        out[j] = acc
        j += 1


@njit(cache=True, nogil=True, inline="always")
def midpoint_threshold(x0: float, x1: float) -> float:  # pragma: no cover - jit
    """The threshold of a cut between x0, the largest value going left, and x1, the smallest
    going right: their midpoint, or x0 when the midpoint rounds to x1 or overflows. Every
    split search places its cut so (``binning.py``'s vectorised edges follow the same rule);
    inlined, so each search compiles it with its own flags."""
    threshold = x0 / 2.0 + x1 / 2.0
    if threshold == x1 or not np.isfinite(threshold):
        return x0
    return threshold


@njit(cache=True, nogil=True, inline="always")
def threshold_after_bin(
    rows_in_bin: np.ndarray, bin_min: np.ndarray, bin_max: np.ndarray, b: int
) -> float:  # pragma: no cover - jit
    """The threshold of a histogram cut after bin ``b`` (bins <= b go left, b holds rows):
    :func:`midpoint_threshold` of bin b's largest value and the smallest value of the next
    bin holding rows (``rows_in_bin`` > 0)."""
    nxt = b + 1
    while rows_in_bin[nxt] == 0:
        nxt += 1
    return midpoint_threshold(bin_max[b], bin_min[nxt])


@njit(cache=True, nogil=True)
def penalised_gain(
    norm_sq: float, dot: float, mu_sq: float, n_left: int, n_right: int, l2: float
) -> float:  # pragma: no cover - jit
    """Reduction of the penalised objective by a split (module docstring), from
    ``norm_sq`` = ||S_L||^2 and ``dot`` = S_L . mu (S_L centred at the node mean mu),
    ``mu_sq`` = ||mu||^2 and the penalty ``l2`` > 0. With a = n_L + lambda, b = n_R + lambda:

        ||S_L||^2 (1/a + 1/b) + 2 lambda (S_L . mu) (1/b - 1/a)
        + lambda ||mu||^2 (lambda (1/a + 1/b - 1/(n + lambda)) - 1),

    T_L = S_L + n_L mu expanded with n_L^2 / a = n_L - lambda + lambda^2 / a, so that no
    term of size n ||mu||^2 cancels. It may be negative: a split is then refused.
    """
    a = n_left + l2
    b = n_right + l2
    inv = 1.0 / a + 1.0 / b
    return (
        norm_sq * inv
        + 2.0 * l2 * dot * (1.0 / b - 1.0 / a)
        + l2 * mu_sq * (l2 * (inv - 1.0 / (n_left + n_right + l2)) - 1.0)
    )


@njit(cache=True, nogil=True)
def centred_cut_gain(
    acc: float, SL: np.ndarray, mu: np.ndarray, mu_sq: float, n_left: int, n: int, l2: float
) -> float:  # pragma: no cover - jit
    """The gain of one cut from the left rows' sum ``SL`` centred at the node mean ``mu``
    (``acc`` = ||SL||^2): ||SL||^2 n / (n_L n_R), or :func:`penalised_gain` with ``l2`` > 0."""
    if l2 > 0.0:
        dot = 0.0
        for c in range(SL.shape[0]):
            dot += SL[c] * mu[c]
        return penalised_gain(acc, dot, mu_sq, n_left, n - n_left, l2)
    return acc * n / (n_left * (n - n_left))


@njit(cache=True, nogil=True, fastmath=True)
def best_split_exact(
    order: np.ndarray,
    start: int,
    end: int,
    XT: np.ndarray,
    R: np.ndarray,
    mu: np.ndarray,
    features: np.ndarray,
    min_leaf: int,
    l2: float,
    feature_gain: np.ndarray,
    feature_pos: np.ndarray,
) -> tuple[int, int, float, float]:  # pragma: no cover - jit
    """Best (feature, n_left, threshold, gain) over ``features`` for the node order[:, start:end].

    order : int32 (p, n_fit); per feature, the node's rows sorted by that feature.
    XT : float64 (p, n_fit) inputs, feature-major. R : float64 (n_fit, r). mu : node mean (r,).
    feature_gain, feature_pos : (len(features),) outputs: each feature's best gain and cut
    position (the cut after sorted row pos; -1 when the feature has no valid cut), which
    :func:`pick_exact` combines into the result (threads searching chunks of the features
    combine theirs the same way). Returns feature -1 when no valid split exists. Ties
    (:func:`beats`) go to the first feature, then the leftmost cut.
    O(len(features) * n * r).

    Rows are centred at the node mean, so S_L = -S_R: a feature is scanned from whichever
    end reaches all its valid cuts (between distinct values) with fewer rows; the gains of
    a scan from the right are compared from left to right, as a scan from the left does.
    A sparse binary feature costs O(ones * r) instead of O(n * r).

    With a penalty ``l2`` > 0 the gain is :func:`penalised_gain`; its S_L . mu is a prefix
    sum of the scalars z_i = (r_i - mu) . mu, computed once per node: O(n r + p n) more.
    """
    n = end - start
    r = R.shape[1]
    S = np.empty(r)
    norms = np.empty(n)
    gains = np.empty(n)  # a scan from the right: gains by cut position, compared after
    valid_at = np.zeros(n, dtype=np.bool_)
    z = np.zeros(R.shape[0] if l2 > 0.0 else 0)
    mu_sq = 0.0
    if l2 > 0.0:
        for c in range(r):
            mu_sq += mu[c] * mu[c]
        for t in range(start, end):
            i = order[0, t]
            acc = 0.0
            for c in range(r):
                acc += (R[i, c] - mu[c]) * mu[c]
            z[i] = acc
    for q in range(features.shape[0]):
        f = features[q]
        feature_gain[q], feature_pos[q] = 0.0, -1
        # first and last valid cut positions k (the cut lies between sorted rows k and k + 1)
        first, last = -1, -1
        for k in range(min_leaf - 1, n - min_leaf):
            if XT[f, order[f, start + k + 1]] > XT[f, order[f, start + k]] + FEATURE_THRESHOLD:
                first = k
                break
        if first < 0:
            continue
        for k in range(n - min_leaf - 1, first - 1, -1):
            if XT[f, order[f, start + k + 1]] > XT[f, order[f, start + k]] + FEATURE_THRESHOLD:
                last = k
                break
        f_gain, f_pos = 0.0, -1
        if last + 1 <= n - 1 - first:  # from the left: norms[k] = ||S_L||^2 after rows 0..k
            _prefix_norms(order[f], start, 1, last + 1, R, mu, S, norms)
            dot = 0.0  # S_L . mu after rows 0..k (penalty only)
            if l2 > 0.0:
                for t in range(first):
                    dot += z[order[f, start + t]]
            x_here = XT[f, order[f, start + first]]  # each sorted value is read once
            for k in range(first, last + 1):
                if l2 > 0.0:
                    dot += z[order[f, start + k]]
                x_next = XT[f, order[f, start + k + 1]]
                valid = x_next > x_here + FEATURE_THRESHOLD
                x_here = x_next
                if not valid:
                    continue
                if l2 > 0.0:
                    gain = penalised_gain(norms[k], dot, mu_sq, k + 1, n - k - 1, l2)
                else:
                    gain = norms[k] * n / ((k + 1) * (n - k - 1))
                if f_pos < 0 or beats(gain, f_gain):
                    f_gain, f_pos = gain, k
        else:  # from the right: norms[j] = ||S_R||^2 = ||S_L||^2 after rows n-1..n-1-j
            _prefix_norms(order[f], start + n - 1, -1, n - 1 - first, R, mu, S, norms)
            dot_right = 0.0  # S_R . mu = -S_L . mu over rows k+1..n-1 (penalty only)
            if l2 > 0.0:
                for t in range(last + 1, n):
                    dot_right += z[order[f, start + t]]
            x_next = XT[f, order[f, start + last + 1]]
            for k in range(last, first - 1, -1):
                if l2 > 0.0 and k < last:
                    dot_right += z[order[f, start + k + 1]]
                x_here = XT[f, order[f, start + k]]
                valid_at[k] = x_next > x_here + FEATURE_THRESHOLD
                x_next = x_here
                if not valid_at[k]:
                    continue
                if l2 > 0.0:
                    gains[k] = penalised_gain(
                        norms[n - 2 - k], -dot_right, mu_sq, k + 1, n - k - 1, l2
                    )
                else:
                    gains[k] = norms[n - 2 - k] * n / ((k + 1) * (n - k - 1))
            for k in range(first, last + 1):
                if valid_at[k]:
                    valid_at[k] = False  # clean for the next feature
                    if f_pos < 0 or beats(gains[k], f_gain):
                        f_gain, f_pos = gains[k], k
        feature_gain[q], feature_pos[q] = f_gain, f_pos
    return pick_exact(order, start, XT, features, feature_gain, feature_pos)


@njit(cache=True, nogil=True)
def pick_exact(
    order: np.ndarray,
    start: int,
    XT: np.ndarray,
    features: np.ndarray,
    feature_gain: np.ndarray,
    feature_pos: np.ndarray,
) -> tuple[int, int, float, float]:  # pragma: no cover - jit
    """The split of :func:`best_split_exact` from its features' best gains and cut positions,
    taken in the order of ``features`` (:func:`beats`: the first feature on ties), with the
    midpoint threshold of the chosen cut. O(len(features))."""
    best_q = -1
    for q in range(features.shape[0]):
        if feature_pos[q] >= 0 and (best_q < 0 or beats(feature_gain[q], feature_gain[best_q])):
            best_q = q
    if best_q < 0:
        return -1, -1, 0.0, -1.0
    f, pos = features[best_q], feature_pos[best_q]
    threshold = midpoint_threshold(XT[f, order[f, start + pos]], XT[f, order[f, start + pos + 1]])
    return f, pos + 1, threshold, feature_gain[best_q]


@njit(cache=True, nogil=True, fastmath=True)
def best_split_random(
    samples: np.ndarray,
    start: int,
    end: int,
    XT: np.ndarray,
    R: np.ndarray,
    mu: np.ndarray,
    features: np.ndarray,
    uniforms: np.ndarray,
    max_features: int,
    min_leaf: int,
    l2: float,
    twin_column: np.ndarray,
) -> tuple[int, int, float, float]:  # pragma: no cover
    """OK3-et: one uniform cut per feature in the node's range, best of ``max_features`` features.

    samples : int32 (n_fit,) rows, node segment samples[start:end]. features : a random
    permutation of all features; uniforms : one U[0, 1) per feature. Constant features are
    skipped and do not count. Returns (feature, n_left, threshold, gain), feature -1 if none.
    ``l2`` > 0: the penalised gain (:func:`penalised_gain`). The tried features' cuts are
    compared in feature index order (:func:`pick_tried`), so ties go to the lower feature
    index, as in the other searches, whatever the order of the draw.

    ``twin_column`` (:mod:`okcore.trees.missing`; empty: no missing values): a feature with a
    twin draws its cut in the range of its observed values (its missing ones, +inf, aside),
    and the cut is scored with the missing rows right (the feature) and left (its twin, the
    same cut): the better is the feature's candidate, right on a tie.
    """
    n = end - start
    r = R.shape[1]
    mu_sq = 0.0
    for c in range(r):
        mu_sq += mu[c] * mu[c]
    SL = np.empty(r)
    tried = 0
    # the tried features' cuts: feature, n_left, threshold, gain (feature -1: too few rows)
    width = min(max_features, features.shape[0])
    cand_f = np.full(width, -1, dtype=np.int64)
    cand_left = np.empty(width, dtype=np.int64)
    cand_thr, cand_gain = np.empty(width), np.empty(width)
    has_twins = twin_column.shape[0] > 0
    for t in range(features.shape[0]):
        f = features[t]
        twin = twin_column[f] if has_twins else -1
        lo = np.inf
        hi = -np.inf
        for k in range(start, end):
            x = XT[f, samples[k]]
            if twin >= 0 and not x < OBSERVED_LIMIT:  # a missing value (+inf)
                continue
            lo = min(lo, x)
            hi = max(hi, x)
        if hi <= lo + FEATURE_THRESHOLD:
            continue
        tried += 1
        cut = lo + uniforms[t] * (hi - lo)
        for side in range(2):  # the missing rows right, then (a twin) left
            col = f if side == 0 else twin
            if col < 0:
                break
            SL[:] = 0.0
            n_left = 0
            for k in range(start, end):
                i = samples[k]
                if XT[col, i] <= cut:
                    n_left += 1
                    for c in range(r):
                        SL[c] += R[i, c] - mu[c]
            if n_left >= min_leaf and n - n_left >= min_leaf:
                acc = 0.0
                for c in range(r):
                    acc += SL[c] * SL[c]
                gain = centred_cut_gain(acc, SL, mu, mu_sq, n_left, n, l2)
                j = tried - 1
                if side == 0 or cand_f[j] < 0 or beats(gain, cand_gain[j]):
                    cand_f[j], cand_left[j], cand_thr[j], cand_gain[j] = col, n_left, cut, gain
        if tried == max_features:
            break
    best = pick_tried(cand_f[:tried], cand_gain[:tried])
    if best < 0:
        return -1, -1, 0.0, -np.inf
    return cand_f[best], cand_left[best], cand_thr[best], cand_gain[best]


@njit(cache=True, nogil=True)
def pick_tried(features: np.ndarray, gains: np.ndarray) -> int:  # pragma: no cover - jit
    """The index of the best of a randomized search's cuts, one per tried feature
    (``features``, -1 for a feature without a valid cut), compared in feature index order
    (:func:`beats`: the lower feature index on ties); -1 when none is valid.
    O(t log t) for t tried features."""
    best = -1
    for j in np.argsort(features, kind="mergesort"):
        if features[j] >= 0 and (best < 0 or beats(gains[j], gains[best])):
            best = j
    return best


@njit(cache=True, nogil=True)
def partition(
    index: np.ndarray,
    start: int,
    end: int,
    XT: np.ndarray,
    feature: int,
    threshold: float,
    goes_left: np.ndarray,
    buffer: np.ndarray,
) -> None:  # pragma: no cover
    """Stable partition of every row of ``index[:, start:end]`` into x <= threshold, then x > threshold.

    index : int32 (k, n_fit), k = p for presorted orders, 1 for a plain sample list; each
    feature's sorted order is kept inside both children. goes_left : uint8 (n_fit,) scratch,
    buffer : int32 (n_fit,) scratch. Branch-free inner loop. O(k n).
    """
    for k in range(start, end):
        i = index[0, k]
        goes_left[i] = XT[feature, i] <= threshold
    for j in range(index.shape[0]):
        n_left = 0
        n_right = 0
        for k in range(start, end):
            i = index[j, k]
            g = goes_left[i]
            index[j, start + n_left] = i
            buffer[n_right] = i
            n_left += g
            n_right += 1 - g
        for t in range(n_right):
            index[j, start + n_left + t] = buffer[t]


@njit(cache=True, nogil=True, fastmath=True)
def node_statistics(
    samples: np.ndarray, start: int, end: int, R: np.ndarray
) -> tuple[np.ndarray, float]:  # pragma: no cover - jit
    """(mean (r,), N*var) of the rows samples[start:end] of R. O(n r)."""
    n = end - start
    r = R.shape[1]
    mu = np.zeros(r)
    for k in range(start, end):
        i = samples[k]
        for c in range(r):
            mu[c] += R[i, c]
    for c in range(r):
        mu[c] /= n
    total = 0.0
    for k in range(start, end):
        i = samples[k]
        for c in range(r):
            d = R[i, c] - mu[c]
            total += d * d
    return mu, total


@njit(cache=True, nogil=True, fastmath=True)
def project_rows(
    R: np.ndarray, GT: np.ndarray, lo: int, hi: int, out: np.ndarray
) -> None:  # pragma: no cover - jit
    """out[lo:hi] = R[lo:hi] @ GT.T for R (n, r) and GT (k, r) contiguous: k dot products of
    length-r rows per row. Each output row is computed alone, so any split of the rows
    between threads gives the same array. O((hi - lo) r k)."""
    k = GT.shape[0]
    for i in range(lo, hi):
        for j in range(k):
            acc = 0.0
            for c in range(R.shape[1]):
                acc += R[i, c] * GT[j, c]
            out[i, j] = acc


def project(R: np.ndarray, G: np.ndarray) -> np.ndarray:
    """R @ G, (n, r) x (r, k), single-threaded (a BLAS call would spin threads for this
    size; threads split the rows in the builder). O(n r k)."""
    out = np.empty((R.shape[0], G.shape[1]))
    project_rows(R, np.ascontiguousarray(G.T), 0, R.shape[0], out)
    return out


@njit(cache=True, nogil=True)
def range_columns(
    R: np.ndarray, rows: np.ndarray, G: np.ndarray, lo: int, hi: int, out: np.ndarray
) -> None:  # pragma: no cover - jit
    """out[lo:hi] = R[rows, lo:hi].T @ G for R (N, r), G (len(rows), k): the columns lo..hi
    of R^T G, each entry summed over the rows in their order (four at a time, which halves
    the passes over ``out``), so any split of the columns between threads gives the same
    array. O(len(rows) (hi - lo) k)."""
    k = G.shape[1]
    n = rows.shape[0]
    out[lo:hi] = 0.0
    n4 = n - n % 4
    for t in range(0, n4, 4):
        i0, i1, i2, i3 = rows[t], rows[t + 1], rows[t + 2], rows[t + 3]
        for c in range(lo, hi):
            v0, v1, v2, v3 = R[i0, c], R[i1, c], R[i2, c], R[i3, c]
            for j in range(k):
                out[c, j] += v0 * G[t, j] + v1 * G[t + 1, j] + v2 * G[t + 2, j] + v3 * G[t + 3, j]
    for t in range(n4, n):
        i = rows[t]
        for c in range(lo, hi):
            v = R[i, c]
            for j in range(k):
                out[c, j] += v * G[t, j]


#: A column of R^T G whose part orthogonal to the columns before it is below this fraction
#: of the largest column norm holds only rounding (the residual has fewer than k
#: independent directions): it is dropped (zero), not normalised into an arbitrary direction.
SKETCH_RANK_TOLERANCE = 1e-10


@njit(cache=True, nogil=True)
def orthonormalise_columns(M: np.ndarray) -> None:  # pragma: no cover - jit
    """M (r, k) in place: an orthonormal basis of its column span, column by column
    (classical Gram-Schmidt applied twice, which is orthogonal to rounding); columns that
    add no direction (see SKETCH_RANK_TOLERANCE) become zero. Plain loops, no BLAS call:
    the result does not depend on the BLAS library's threads. O(r k^2)."""
    r, k = M.shape
    largest = 0.0
    for j in range(k):
        norm = 0.0
        for c in range(r):
            norm += M[c, j] * M[c, j]
        largest = max(largest, np.sqrt(norm))
    for j in range(k):
        for _ in range(2):
            for m in range(j):
                dot = 0.0
                for c in range(r):
                    dot += M[c, m] * M[c, j]
                for c in range(r):
                    M[c, j] -= dot * M[c, m]
        norm = 0.0
        for c in range(r):
            norm += M[c, j] * M[c, j]
        norm = np.sqrt(norm)
        scale = 0.0 if norm <= SKETCH_RANK_TOLERANCE * largest else 1.0 / norm
        for c in range(r):
            M[c, j] *= scale


@njit(cache=True, nogil=True)
def column_statistics(
    samples: np.ndarray,
    start: int,
    end: int,
    R: np.ndarray,
    c_lo: int,
    c_hi: int,
    mu: np.ndarray,
    spread: np.ndarray,
) -> None:  # pragma: no cover
    """Mean mu[c] and sum of squared deviations spread[c] of the columns c_lo..c_hi-1 of R
    over the rows samples[start:end] (the node's N*var is spread.sum()). Each column is
    summed over the rows in order, with no reassociation (no fastmath), so any split of the
    columns between threads gives the same numbers. O(n (c_hi - c_lo)), two passes.

    Unsigned indices (no negative-index wraparound branch) let LLVM vectorize across the
    columns, each lane keeping its own column's order.
    """
    n = end - start
    width = c_hi - c_lo
    lo = np.uint64(c_lo)
    total = np.zeros(width)
    for t in range(start, end):
        if t + PREFETCH_ROWS < end:  # the row's lines in this column range, a few rows ahead
            for c in range(c_lo, c_hi, 8):
                prefetch(R, samples[t + PREFETCH_ROWS], c)
        i = np.uint64(samples[t])
        for c in range(width):
            total[c] += R[i, lo + np.uint64(c)]
    mean = total / n
    squares = np.zeros(width)
    for t in range(start, end):
        if t + PREFETCH_ROWS < end:
            for c in range(c_lo, c_hi, 8):
                prefetch(R, samples[t + PREFETCH_ROWS], c)
        i = np.uint64(samples[t])
        for c in range(width):
            d = R[i, lo + np.uint64(c)] - mean[c]
            squares[c] += d * d
    for c in range(width):
        mu[c_lo + c] = mean[c]
        spread[c_lo + c] = squares[c]


def presort(XT: np.ndarray) -> np.ndarray:
    """Per-feature argsort of XT (p, n) as int32, shape (p, n). O(p n log n), once per fit."""
    return np.ascontiguousarray(np.argsort(XT, axis=1, kind="stable").astype(np.int32))


def restrict_presorted(order: np.ndarray, rows: np.ndarray, n_total: int) -> np.ndarray:
    """Presorted orders of the distinct ``rows`` subset, renumbered 0..len(rows)-1. O(p N)."""
    position = np.full(n_total, -1, dtype=np.int32)
    position[rows] = np.arange(len(rows), dtype=np.int32)
    mapped = position[order]
    return np.ascontiguousarray(mapped[mapped >= 0].reshape(order.shape[0], len(rows)))
