"""Oblivious (symmetric) OK3 trees: one split per level, shared by every node of the level.

CatBoost's tree shape, in the factor form of the math note (s. 2): a tree of depth d cuts
the input space with d (feature, threshold) pairs, one per level, and a point's leaf is
given by the d comparisons. The split of a level is chosen to maximise the sum, over the
level's nodes, of each node's gain, the reduction of N*var (eq. 11) of its residual rows
(of the penalised objective with an L2 penalty lambda > 0: see
:func:`~okcore.trees.splitter.penalised_gain`) — CatBoost's level score, with the squared
norms of the factor rows for the squared gradients. Leaf values are the usual (ridge) leaf
means, so F(x) stays in span{phi(y_i)} and W^F, kernel predictions and pre-images work
unchanged.

Rules where a shared cut does not fit a node:

- a node whose cut would leave a child with fewer than ``min_samples_leaf`` rows (with the
  default 1: an empty child) is not cut at that level: its rows pass to the next level
  whole, it adds nothing to the level's gain and it takes the next level's cut (CatBoost
  would keep an empty leaf with value 0; passing through gives its queries the node's
  value instead, and every leaf keeps fitting rows, so W^F stays defined);
- a node that cannot be cut at all (fewer than 2 ``min_samples_leaf`` rows, or constant
  residuals) is a final leaf;
- growth stops early when the best level gain is not positive.

The tree is stored as ordinary :class:`~okcore.trees.builder.TreeArrays` (every node of a
level carrying the level's cut), so prediction, persistence and W^F need nothing new; a
query still takes d comparisons per tree.

Search: histograms on binned inputs (:mod:`okcore.trees.binning`) only. Per level, one pass
over the rows builds a histogram per node (counts and sums of the sketched residual rows
per bin), and a scan over bins sums the nodes' gains per (feature, bin). Cost per level,
for n rows, f candidate features, k search columns, B bins and L open nodes: O(n f k)
builds + O(L B k) scans; O(n r) for the node statistics. Memory: one (B, L, k) histogram,
L <= 2^(d - 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from ._histogram import TIE_TOLERANCE, gather_rows
from .binning import BinnedInputs
from .splitter import penalised_gain

#: Depth of an oblivious tree when ``max_depth`` is None (CatBoost's default depth).
DEFAULT_OBLIVIOUS_DEPTH = 6
#: Largest depth accepted (CatBoost's limit): 2^16 leaves per tree.
MAX_OBLIVIOUS_DEPTH = 16
#: Bytes of one level histogram (B bins x nodes x k columns of float64): a level with more
#: nodes is searched in groups of nodes, one histogram pass each (32 MiB: the 32 nodes of the
#: last level of a depth-6 tree at p = 50, k = 8 in one pass).
HISTOGRAM_BYTES = 32 << 20
#: A node whose N*var is below this fraction of the root's is a leaf (as in the builder).
CONSTANT_NODE_TOLERANCE = 1e-12


@njit(cache=True, nogil=True, fastmath=True)
def level_histograms(
    codes: np.ndarray,
    samples: np.ndarray,
    slot: np.ndarray,
    slot_lo: int,
    rows: np.ndarray,
    bin_offset: np.ndarray,
    features: np.ndarray,
    hist: np.ndarray,
    counts: np.ndarray,
) -> None:  # pragma: no cover - jit
    """Per-node histograms of one level, for the nodes of slots slot_lo .. slot_lo + S - 1:
    for every feature f of ``features`` and every fitted row t of such a slot (its node's
    place among the level's open nodes), counts[b, s] += 1 and hist[b, s] += rows[t] at b =
    its bin of f, s = slot[t] - slot_lo. ``codes`` (p, N) feature-major, ``rows`` the
    (sketched) residual rows in sample order (n_fit, k). Overwrites those features' bins of
    hist (B, S, k) and counts (B, S). O(n_fit len(features) k)."""
    k = rows.shape[1]
    n_slots = hist.shape[1]
    for f in features:
        b_lo, b_hi = bin_offset[f], bin_offset[f + 1]
        hist[b_lo:b_hi] = 0.0
        counts[b_lo:b_hi] = 0
        codes_f = codes[f]
        for t in range(samples.shape[0]):
            s = slot[t] - slot_lo
            if s < 0 or s >= n_slots:
                continue
            b = b_lo + codes_f[samples[t]]
            counts[b, s] += 1
            for c in range(k):
                hist[b, s, c] += rows[t, c]


@njit(cache=True, nogil=True, fastmath=True)
def add_level_gains(
    hist: np.ndarray,
    counts: np.ndarray,
    bin_offset: np.ndarray,
    features: np.ndarray,
    node_n: np.ndarray,
    node_mu: np.ndarray,
    min_leaf: int,
    l2: float,
    gain: np.ndarray,
    cut: np.ndarray,
    rows_in_bin: np.ndarray,
) -> None:  # pragma: no cover - jit
    """Add, for every cut after bin b of a feature of ``features`` (bins <= b go left), the
    gains of the nodes of one histogram (slots s with node_n[s] rows and search mean
    node_mu[s]) to gain[b]: each node's ||S_L - n_L mu||^2 n / (n_L n_R) (the penalised gain
    with ``l2`` > 0) when both its children keep ``min_leaf`` rows (then cut[b] = True),
    nothing otherwise; rows_in_bin[b] counts the level's rows in bin b. O(len(features)
    B_f S k)."""
    n_slots, k = hist.shape[1], hist.shape[2]
    mu_sq = np.zeros(n_slots)
    for s in range(n_slots):
        for c in range(k):
            mu_sq[s] += node_mu[s, c] * node_mu[s, c]
    S = np.empty((n_slots, k))
    n_left = np.empty(n_slots, dtype=np.int64)
    for f in features:
        S[:] = 0.0
        n_left[:] = 0
        for b in range(bin_offset[f], bin_offset[f + 1]):
            for s in range(n_slots):
                m = counts[b, s]
                if m == 0:
                    continue
                rows_in_bin[b] += m
                n_left[s] += m
                for c in range(k):
                    S[s, c] += hist[b, s, c]
            if b == bin_offset[f + 1] - 1:
                break  # the last bin: nothing goes right
            total = 0.0
            for s in range(n_slots):
                nl = n_left[s]
                nr = node_n[s] - nl
                if nl < min_leaf or nr < min_leaf:
                    continue
                acc = 0.0
                dot = 0.0
                for c in range(k):
                    d = S[s, c] - nl * node_mu[s, c]
                    acc += d * d
                    dot += d * node_mu[s, c]
                if l2 > 0.0:
                    total += penalised_gain(acc, dot, mu_sq[s], nl, nr, l2)
                else:
                    total += acc * node_n[s] / (nl * nr)
                cut[b] = True
            gain[b] += total


@njit(cache=True, nogil=True)
def best_level_cut(
    gain: np.ndarray,
    cut: np.ndarray,
    rows_in_bin: np.ndarray,
    bin_offset: np.ndarray,
    bin_min: np.ndarray,
    bin_max: np.ndarray,
    features: np.ndarray,
) -> tuple[int, int, float, float]:  # pragma: no cover - jit
    """The level's cut (feature, last left bin of the feature, threshold, summed gain) from
    :func:`add_level_gains`' sums over all the level's nodes: the highest summed gain over
    cuts after a bin holding rows of the level (other cuts repeat a partition) that cut at
    least one node; ties go to the first feature, then the leftmost cut; feature -1 when no
    node can be cut. The threshold lies midway between the largest value of the last left
    bin and the smallest of the next bin holding rows of the level. O(B)."""
    best_f, best_bin, best_gain = -1, -1, 0.0
    for f in features:
        for b in range(bin_offset[f], bin_offset[f + 1] - 1):
            if rows_in_bin[b] == 0 or not cut[b]:
                continue
            if best_f < 0 or gain[b] > best_gain + TIE_TOLERANCE * abs(best_gain):
                best_f, best_bin, best_gain = f, b, gain[b]
    threshold = 0.0
    if best_f >= 0:
        nxt = best_bin + 1
        while rows_in_bin[nxt] == 0:
            nxt += 1
        x0, x1 = bin_max[best_bin], bin_min[nxt]
        threshold = x0 / 2.0 + x1 / 2.0
        if threshold == x1 or not np.isfinite(threshold):
            threshold = x0
        best_bin -= bin_offset[best_f]
    return best_f, best_bin, threshold, best_gain


@njit(cache=True, nogil=True)
def group_statistics(
    samples: np.ndarray, group: np.ndarray, n_groups: int, R: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - jit
    """(counts, row sums (G, r), sums of squared row norms) of R's rows samples[t] over the
    groups group[t] in [0, n_groups) (-1: skipped). O(n r)."""
    r = R.shape[1]
    counts = np.zeros(n_groups, dtype=np.int64)
    sums = np.zeros((n_groups, r))
    squares = np.zeros(n_groups)
    for t in range(samples.shape[0]):
        g = group[t]
        if g < 0:
            continue
        i = samples[t]
        counts[g] += 1
        acc = 0.0
        for c in range(r):
            x = R[i, c]
            sums[g, c] += x
            acc += x * x
        squares[g] += acc
    return counts, sums, squares


class _Nodes:
    """Node arrays of the growing tree (creation order, root 0) with each node's count,
    row sum (r,) and N*var."""

    def __init__(self) -> None:
        self.feature: list[int] = []
        self.threshold: list[float] = []
        self.left: list[int] = []
        self.right: list[int] = []
        self.gain: list[float] = []
        self.count: list[int] = []
        self.sum: list[np.ndarray] = []
        self.impurity: list[float] = []

    def add(self, count: int, row_sum: np.ndarray, squares: float) -> int:
        self.feature.append(-1)
        self.threshold.append(0.0)
        self.left.append(-1)
        self.right.append(-1)
        self.gain.append(0.0)
        self.count.append(int(count))
        self.sum.append(row_sum)
        spread = squares - float(row_sum @ row_sum) / count if count > 0 else 0.0
        self.impurity.append(max(spread, 0.0))
        return len(self.feature) - 1

    def true_gain(self, node: int, l2: float) -> float:
        """Reduction of N*var by the node's split (of the penalised objective with l2 > 0),
        from the full residual rows (the search may have read a sketch)."""
        left, right = self.left[node], self.right[node]
        if l2 == 0.0:
            return max(self.impurity[node] - self.impurity[left] - self.impurity[right], 0.0)

        def score(i: int) -> float:
            return float(self.sum[i] @ self.sum[i]) / (self.count[i] + l2)

        return score(left) + score(right) - score(node)

    def to_arrays(self, l2: float) -> dict[str, np.ndarray]:
        """The fields of the tree's :class:`~okcore.trees.builder.TreeArrays` (the builder,
        which dispatches here, makes it), leaves numbered in node order."""
        left = np.array(self.left, dtype=np.int32)
        internal = left >= 0
        leaf = np.full(len(left), -1, dtype=np.int32)
        leaf[~internal] = np.arange(int((~internal).sum()), dtype=np.int32)
        leaves = np.flatnonzero(~internal)
        count = np.array(self.count, dtype=np.int64)
        value = np.array([self.sum[i] for i in leaves]) / (count[leaves] + l2)[:, None]
        return dict(
            feature=np.array(self.feature, dtype=np.int32),
            threshold=np.array(self.threshold, dtype=np.float64),
            left=left,
            right=np.array(self.right, dtype=np.int32),
            leaf=leaf,
            n_samples=count.astype(np.int32),
            impurity=np.array(self.impurity, dtype=np.float64),
            gain=np.array(self.gain, dtype=np.float64),
            value=value,
        )


def oblivious_depth(max_depth: int | None) -> int:
    """Depth of an oblivious tree: ``max_depth``, or DEFAULT_OBLIVIOUS_DEPTH when None."""
    return DEFAULT_OBLIVIOUS_DEPTH if max_depth is None else int(max_depth)


def build_oblivious_tree(
    binned: BinnedInputs,
    R: np.ndarray,
    R_search: np.ndarray,
    projection: np.ndarray | None,
    params: Any,
    rng: np.random.Generator,
    candidate_features: Any,
    rows: np.ndarray | None = None,
    row_leaf: np.ndarray | None = None,
    histogram_pool: Any = None,
) -> dict[str, np.ndarray]:
    """Grow one oblivious tree (module docstring) on residual rows R (N, r) and dense
    ``binned`` inputs, fitted on ``rows`` (default all N; repeats allowed). ``R_search`` is
    R, or its sketch R @ ``projection`` (leaf values stay exact). ``params`` is the
    builder's TreeParams (depth: ``max_depth``, else DEFAULT_OBLIVIOUS_DEPTH;
    ``min_samples_leaf``, ``l2_regularization``); ``candidate_features(rng)`` gives each
    level's candidate features (sorted int32). ``row_leaf`` receives the leaf of every
    fitted row; ``histogram_pool`` lends the level histogram buffer across the trees of a
    fit. Returns the fields of the tree's TreeArrays. O(d (n f k + L B k + n r)) for depth d.
    """
    if binned.is_sparse:
        raise ValueError("oblivious trees need dense binned inputs")
    n_total = binned.n_samples
    samples = (
        np.arange(n_total, dtype=np.int32)
        if rows is None
        else np.ascontiguousarray(rows, dtype=np.int32)
    )
    n_fit = len(samples)
    depth = oblivious_depth(params.max_depth)
    min_leaf, l2 = int(params.min_samples_leaf), float(params.l2_regularization)
    k, n_bins = R_search.shape[1], binned.n_bins_total
    search_rows = gather_rows(samples, 0, n_fit, R_search)

    nodes = _Nodes()
    node_of = np.zeros(n_fit, dtype=np.int32)  # node of each fitted row (sample order)
    counts0, sums0, squares0 = group_statistics(samples, node_of, 1, R)
    nodes.add(counts0[0], sums0[0], squares0[0])
    root_impurity = nodes.impurity[0]

    def is_open(node: int) -> bool:
        return (
            nodes.count[node] >= 2 * min_leaf
            and nodes.impurity[node] > CONSTANT_NODE_TOLERANCE * root_impurity
        )

    frontier = [0] if is_open(0) else []
    max_slots = max(1, min(2 ** (depth - 1), n_fit // max(2 * min_leaf, 1)))
    chunk = max(1, min(max_slots, HISTOGRAM_BYTES // (8 * n_bins * k)))
    buffers = (
        histogram_pool.take(chunk * k)
        if histogram_pool is not None and histogram_pool.n_bins == n_bins
        else (np.empty((n_bins, chunk * k)), np.empty(0))
    )
    counts = np.empty((n_bins, chunk), dtype=np.int64)
    try:
        for _level in range(depth):
            if not frontier:
                break
            n_slots = len(frontier)
            slot_of = np.full(len(nodes.count), -1, dtype=np.int32)
            slot_of[frontier] = np.arange(n_slots, dtype=np.int32)
            slot = slot_of[node_of]
            node_n = np.array([nodes.count[i] for i in frontier], dtype=np.int64)
            node_mu = np.array([nodes.sum[i] / nodes.count[i] for i in frontier])
            if projection is not None:
                node_mu = node_mu @ projection
            features = candidate_features(rng)
            gain, cut = np.zeros(n_bins), np.zeros(n_bins, dtype=np.bool_)
            rows_in_bin = np.zeros(n_bins, dtype=np.int64)
            for lo in range(0, n_slots, chunk):  # one histogram of `chunk` nodes at a time
                width = min(chunk, n_slots - lo)
                hist = buffers[0].reshape(-1)[: n_bins * width * k].reshape(n_bins, width, k)
                chunk_counts = counts.reshape(-1)[: n_bins * width].reshape(n_bins, width)
                level_histograms(
                    binned.codes, samples, slot, lo, search_rows, binned.bin_offset, features,
                    hist, chunk_counts,
                )  # fmt: skip
                add_level_gains(
                    hist, chunk_counts, binned.bin_offset, features, node_n[lo : lo + width],
                    np.ascontiguousarray(node_mu[lo : lo + width]), min_leaf, l2, gain, cut,
                    rows_in_bin,
                )  # fmt: skip
            feature, last_bin, threshold, level_gain = best_level_cut(
                gain, cut, rows_in_bin, binned.bin_offset, binned.bin_min, binned.bin_max,
                features,
            )  # fmt: skip
            if feature < 0 or level_gain <= 0.0:
                break
            goes_left = binned.codes[feature, samples] <= last_bin
            left_counts = np.bincount(slot[goes_left & (slot >= 0)], minlength=n_slots)
            child_of = np.full((len(nodes.count), 2), -1, dtype=np.int32)  # (left, right)
            next_frontier: list[int] = []
            for s, node in enumerate(frontier):
                n_left = int(left_counts[s])
                if n_left < min_leaf or nodes.count[node] - n_left < min_leaf:
                    next_frontier.append(node)  # passes whole to the next level's cut
                    continue
                child_of[node] = (-2, -2)  # marked: children made below
            split = np.flatnonzero(child_of[:, 0] == -2)
            if len(split):
                group = np.full(n_fit, -1, dtype=np.int32)
                place = np.full(len(nodes.count), -1, dtype=np.int32)
                place[split] = np.arange(len(split), dtype=np.int32)
                in_split = place[node_of] >= 0
                group[in_split] = 2 * place[node_of[in_split]] + (~goes_left[in_split])
                c_counts, c_sums, c_squares = group_statistics(samples, group, 2 * len(split), R)
                for j, parent in enumerate(split.tolist()):
                    left = nodes.add(c_counts[2 * j], c_sums[2 * j], c_squares[2 * j])
                    right = nodes.add(c_counts[2 * j + 1], c_sums[2 * j + 1], c_squares[2 * j + 1])
                    child_of[parent] = (left, right)
                    nodes.feature[parent], nodes.threshold[parent] = int(feature), float(threshold)
                    nodes.left[parent], nodes.right[parent] = left, right
                    nodes.gain[parent] = nodes.true_gain(parent, l2)
                moved = in_split.nonzero()[0]
                node_of[moved] = np.where(
                    goes_left[moved], child_of[node_of[moved], 0], child_of[node_of[moved], 1]
                )
                for parent in split.tolist():
                    next_frontier.extend(c for c in child_of[parent].tolist() if is_open(c))
            frontier = sorted(int(c) for c in next_frontier)
    finally:
        if histogram_pool is not None and histogram_pool.n_bins == n_bins:
            histogram_pool.give(buffers)
    tree = nodes.to_arrays(l2)
    if row_leaf is not None:
        row_leaf[samples] = tree["leaf"][node_of]
    return tree
