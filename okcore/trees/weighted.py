"""OK3 trees on weighted rows or partly observed outputs: the weighted squared loss in
factor form, a path of its own used only when a fit has sample weights, output weights
or masked (NaN) outputs (the default path, :mod:`okcore.trees.builder`, is untouched).

Each fitted row i carries a weight h_ic >= 0 per factor column c: its sample weight w_i
(times its bootstrap or subsample count), times the column's output weight, times 0 where
the entry is not observed. A node's objective is sum_i sum_c h_ic (r_ic - v_c)^2 +
lambda ||v||^2, so with G_c = sum_i h_ic r_ic and H_c = sum_i h_ic over the node's rows

- the leaf value is v_c = G_c / (H_c + lambda) (0 where H_c + lambda = 0: a column no row
  of the leaf observes);
- a split's gain is sum_c G_Lc^2 / (H_Lc + lambda) + G_Rc^2 / (H_Rc + lambda) -
  G_c^2 / (H_c + lambda) (a term with H + lambda = 0 counts 0). With one weight per row
  and lambda = 0 it is computed centred, W / (W_L W_R) ||G_L - W_L mu||^2 (mu = G / W),
  the unweighted kernels' form with counts replaced by weights.

With row weights only (H_c = W for every c) the gain needs ||G||^2 and W, so a sketch of
the residual columns (``projection``) may be searched as in the default path; per-entry
weights search the full columns.

``splitter="random"`` (OK3-et) draws one cut per tried feature on the bins, as the default
path's binned OK3-et does, and keeps the largest weighted gain.

Missing input values (NaN) are searched on twin columns as in the default path
(:mod:`okcore.trees.missing`): a feature holding them brings its twin to every candidate
set, and the grown tree is folded back onto the inputs with the learned ``missing_left``.
``splitter="random"`` with weights does not take them (a clear error: impute, or use
``splitter="best"``).

Rules: ``min_samples_leaf`` counts the rows of positive weight (scikit-learn counts rows
too; rows of weight 0 count for nothing, so giving a row weight 0 is dropping it), and
each child of a split must hold a positive weight sum (LightGBM's ``min_sum_hessian``
> 0). Cuts are at bin edges (histogram search only; ``refine_cuts`` is not applied) and
fall halfway between the bins' training values, the bins holding rows of positive weight.
Ties between cuts go to the lower feature, then the lower cut (within the split
searches' tie margin, :func:`~okcore.trees.splitter.beats`).

Cost per searched node of n rows (of positive weight), f candidate features, m = k + 2
(row weights; k search columns) or 2 r + 1 (per-entry weights) histogram columns and B
bins: O(n f m) for the histogram (a sparse indicator times the rows' statistics, no
histogram subtraction) plus O(B m) for the scan. An oblivious level sums its nodes' gains:
O(n f m + L B m) for L open nodes. Memory: one (B, m) histogram per node searched.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from scipy import sparse

from ..exceptions import InvalidParameterError
from .binning import MAX_BINS, BinnedInputs
from .builder import _best_features, _Frontier, _tree_feature_pool
from .missing import add_twins, fold_twins, twin_columns
from .oblivious import oblivious_depth
from .splitter import TIE_ABSOLUTE, TIE_RELATIVE, threshold_after_bin

#: A node whose weighted N*var is below this fraction of the root's is a leaf (as elsewhere).
CONSTANT_NODE_TOLERANCE = 1e-12


class _Stats:
    """The per-row columns a histogram sums: the search rows times their weights (k), the
    weights (one column, or one per factor column), the row's weight (its largest entry
    weight) and 1 for each row of positive weight."""

    def __init__(self, R_search: np.ndarray, weight: np.ndarray) -> None:
        self.per_entry = weight.ndim == 2
        self.k = R_search.shape[1]
        self.row_weight = weight.max(axis=1) if self.per_entry else weight
        hess = weight if self.per_entry else weight[:, None]
        self.columns = np.hstack(
            [
                R_search * hess,
                hess,
                self.row_weight[:, None],
                (self.row_weight > 0).astype(np.float64)[:, None],
            ]
        )

    def split(self, block: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(G, H, row weight, rows) of a block of summed columns (..., m)."""
        k = self.k
        return block[..., :k], block[..., k:-2], block[..., -2], block[..., -1]

    def gain(self, left: np.ndarray, total: np.ndarray, l2: float) -> np.ndarray:
        """The gain (module docstring) of cuts whose left sums are the rows of ``left``
        (B, m), from the node's sums ``total`` (m,)."""
        GL, HL, _, _ = self.split(left)
        G, H, _, _ = self.split(total)
        if not self.per_entry and l2 == 0.0:
            W, WL = H[0], HL[:, 0]
            d = GL - WL[:, None] * (G / W)
            return np.einsum("bc,bc->b", d, d) * W / (WL * (W - WL))
        return _score(GL, HL, l2) + _score(G - GL, H - HL, l2) - _score(G[None], H[None], l2)


def _score(G: np.ndarray, H: np.ndarray, l2: float) -> np.ndarray:
    """sum_c G_c^2 / (H_c + lambda) per row, a term with H_c + lambda = 0 counting 0."""
    denominator = np.broadcast_to(H + l2, G.shape)
    return np.divide(G * G, denominator, out=np.zeros_like(G), where=denominator > 0).sum(axis=1)


def _histogram(
    codes: np.ndarray, bin_offset: np.ndarray, features: np.ndarray, rows: np.ndarray,
    columns: np.ndarray, n_bins: int,
) -> np.ndarray:  # fmt: skip
    """(B, m) sums of ``columns`` (N, m) over the ``rows`` falling in each bin of the
    ``features``: an indicator (B, n) with one entry per row and feature, times the rows'
    columns (scipy's sparse product). O(n f m)."""
    f = len(features)
    bins = codes[features][:, rows].astype(np.int64) + bin_offset[features][:, None]
    indicator = sparse.csc_matrix(
        (np.ones(bins.size), bins.T.ravel(), np.arange(0, bins.size + 1, f)),
        shape=(n_bins, len(rows)),
    )
    return np.asarray(indicator @ columns[rows])


def _cut_gains(
    hist: np.ndarray, total: np.ndarray, stats: _Stats, bin_offset: np.ndarray,
    features: np.ndarray, min_leaf: int, l2: float, own_bin: bool = True,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(gain, valid) of the cut after every bin (B,) of one node's histogram: valid cuts
    are in a candidate feature but after its last bin, with min_leaf rows and a positive
    weight on each side, and (``own_bin``) after a bin holding rows of the node (an
    oblivious level asks that of the level's rows instead). :func:`_scan_gains`."""
    gain, valid = np.zeros(hist.shape[0]), np.zeros(hist.shape[0], dtype=np.bool_)
    _scan_gains(
        np.ascontiguousarray(hist), np.ascontiguousarray(total), stats.k, stats.per_entry,
        bin_offset, np.ascontiguousarray(features, dtype=np.int64), min_leaf, l2, own_bin,
        gain, valid,
    )  # fmt: skip
    return gain, valid


@njit(cache=True, nogil=True)
def _scan_gains(
    hist: np.ndarray,
    total: np.ndarray,
    k: int,
    per_entry: bool,
    bin_offset: np.ndarray,
    features: np.ndarray,
    min_leaf: int,
    l2: float,
    own_bin: bool,
    gain: np.ndarray,
    valid: np.ndarray,
) -> None:  # pragma: no cover - jit
    """The gains of :func:`_cut_gains` into ``gain`` and ``valid`` (B,): one pass over each
    candidate feature's bins accumulating the left side's sums (columns of :class:`_Stats`:
    G (k), H (k, or 1 for row weights), row weight, rows), the gain of the module docstring
    per cut. O(len(features) B_f k)."""
    hk = k if per_entry else 1
    G, H = total[:k], total[k : k + hk]
    W, n = total[k + hk], total[k + hk + 1]
    parent = 0.0
    for c in range(k):
        d = H[c if per_entry else 0] + l2
        if d > 0.0:
            parent += G[c] * G[c] / d
    GL, HL = np.empty(k), np.empty(hk)
    for f in features:
        GL[:] = 0.0
        HL[:] = 0.0
        WL, nL = 0.0, 0.0
        for b in range(bin_offset[f], bin_offset[f + 1] - 1):
            for c in range(k):
                GL[c] += hist[b, c]
            for c in range(hk):
                HL[c] += hist[b, k + c]
            WL += hist[b, k + hk]
            nL += hist[b, k + hk + 1]
            if own_bin and hist[b, k + hk + 1] <= 0.0:
                continue
            if nL < min_leaf or n - nL < min_leaf or WL <= 0.0 or W - WL <= 0.0:
                continue
            g = 0.0
            if not per_entry and l2 == 0.0:  # centred: W / (W_L W_R) ||G_L - W_L mu||^2
                WLc = HL[0]
                for c in range(k):
                    d = GL[c] - WLc * (G[c] / H[0])
                    g += d * d
                g = g * H[0] / (WLc * (H[0] - WLc))
            else:
                for c in range(k):
                    j = c if per_entry else 0
                    dl, dr = HL[j] + l2, H[j] - HL[j] + l2
                    if dl > 0.0:
                        g += GL[c] * GL[c] / dl
                    if dr > 0.0:
                        g += (G[c] - GL[c]) * (G[c] - GL[c]) / dr
                g -= parent
            gain[b] = g
            valid[b] = True


def _pick(gain: np.ndarray, valid: np.ndarray) -> int:
    """The first valid cut whose gain is the largest within the tie margin, -1 if none."""
    if not valid.any():
        return -1
    best = float(gain[valid].max())
    margin = TIE_RELATIVE * abs(best) + TIE_ABSOLUTE
    return int(np.flatnonzero(valid & (gain >= best - margin))[0])


class _Tree:
    """Nodes in creation order: rows, depth, sums (m,), and the cut of the cut nodes."""

    def __init__(self, stats: _Stats, R: np.ndarray, weight: np.ndarray, l2: float) -> None:
        self.stats, self.R, self.weight, self.l2 = stats, R, weight, l2
        self.rows: list[np.ndarray] = []
        self.depth: list[int] = []
        self.sums: list[np.ndarray] = []
        self.impurity: list[float] = []
        self.cuts: dict[int, tuple[int, float, int, int, float]] = {}

    def add(self, rows: np.ndarray, depth: int) -> int:
        """A node over ``rows``; its weighted N*var sum_i sum_c h_ic (r_ic - G_c / H_c)^2."""
        hess = self.weight[rows] if self.stats.per_entry else self.weight[rows, None]
        R = self.R[rows]
        G, H = (hess * R).sum(axis=0), hess.sum(axis=0)
        squares = float((hess * R * R).sum())
        explained = np.divide(G * G, H, out=np.zeros_like(G), where=H > 0).sum()
        self.rows.append(rows)
        self.depth.append(depth)
        self.sums.append(np.concatenate([G, np.broadcast_to(H, G.shape)]))
        self.impurity.append(max(squares - float(explained), 0.0))
        return len(self.rows) - 1

    def value(self, node: int) -> np.ndarray:
        r = self.R.shape[1]
        G, H = self.sums[node][:r], self.sums[node][r:] + self.l2
        return np.divide(G, H, out=np.zeros_like(G), where=H > 0)

    def cut(self, node: int, feature: int, threshold: float, goes_left: np.ndarray) -> tuple:
        rows, depth = self.rows[node], self.depth[node] + 1
        left, right = self.add(rows[goes_left], depth), self.add(rows[~goes_left], depth)
        if self.l2 == 0.0:
            gain = max(self.impurity[node] - self.impurity[left] - self.impurity[right], 0.0)
        else:  # may be negative for a node of an oblivious level (as there)
            gain = self._score(left) + self._score(right) - self._score(node)
        self.cuts[node] = (feature, threshold, left, right, gain)
        return left, right

    def _score(self, node: int) -> float:
        r = self.R.shape[1]
        G, H = self.sums[node][:r], self.sums[node][r:]
        return float(_score(G[None], H[None], self.l2)[0])

    def arrays(self) -> dict[str, np.ndarray]:
        """The fields of :class:`~okcore.trees.builder.TreeArrays`, leaves in node order."""
        n_nodes = len(self.rows)
        feature = np.full(n_nodes, -1, dtype=np.int32)
        threshold, gain = np.zeros(n_nodes), np.zeros(n_nodes)
        left, right = np.full(n_nodes, -1, dtype=np.int32), np.full(n_nodes, -1, dtype=np.int32)
        for node, (f, t, lo, hi, g) in self.cuts.items():
            feature[node], threshold[node], left[node], right[node], gain[node] = f, t, lo, hi, g
        leaves = np.flatnonzero(left < 0)
        leaf = np.full(n_nodes, -1, dtype=np.int32)
        leaf[leaves] = np.arange(len(leaves), dtype=np.int32)
        return dict(
            feature=feature,
            threshold=threshold,
            left=left,
            right=right,
            leaf=leaf,
            n_samples=np.array([len(rows) for rows in self.rows], dtype=np.int32),
            impurity=np.array(self.impurity),
            gain=gain,
            value=np.array([self.value(int(i)) for i in leaves]).reshape(-1, self.R.shape[1]),
        )


def build_weighted_tree(
    binned: BinnedInputs,
    R: np.ndarray,
    weight: np.ndarray,
    params: Any,
    rng: np.random.Generator,
    *,
    projection: np.ndarray | None = None,
    rows: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Grow one tree (best-first, or oblivious for ``params.tree_type="oblivious"``) on the
    residual rows R (N, r) with weights ``weight``: (N,) per row or (N, r) per entry (module
    docstring), on dense ``binned`` inputs. ``rows`` (repeats allowed: a bootstrap) are the
    fitted rows, each counted as often as it appears. ``params``: the builder's TreeParams
    (``max_splits``, ``max_depth``, ``leaf_order``, ``min_samples_leaf``,
    ``l2_regularization``; the tree's features and each node's (level's) candidates drawn
    as the builder draws them, ``tree_features`` and ``max_features``). ``projection`` (r, k), row weights only: the search reads the
    sketch R @ projection, leaf values the full rows. Returns the tree's TreeArrays
    fields; leaf values G / (H + lambda). Cost: module docstring."""
    if binned.indptr is not None:
        raise ValueError("weighted trees need dense binned inputs")
    n = R.shape[0]
    if rows is not None:  # a row fitted c times weighs c times its weight
        times = np.bincount(rows, minlength=n).astype(np.float64)
        weight = weight * (times if weight.ndim == 1 else times[:, None])
    search_R = R if projection is None or weight.ndim == 2 else R @ projection
    stats = _Stats(search_R, weight)
    tree = _Tree(stats, R, weight, float(params.l2_regularization))
    root_rows = np.flatnonzero(stats.row_weight > 0)
    tree.add(root_rows, 0)
    grow = _grow_oblivious if params.tree_type == "oblivious" else _grow_best_first
    n_inputs = binned.n_features - len(params.missing)  # the inputs; their twins follow
    twin_column = twin_columns(n_inputs, params.missing)
    pool = _tree_feature_pool(params, n_inputs, rng)
    if params.splitter == "random":  # OK3-et: one drawn cut per tried feature
        if params.missing:
            raise InvalidParameterError(
                "splitter='random' with sample weights or partly known outputs does not take "
                "missing input values (NaN): impute them, or use splitter='best'"
            )
        _grow_best_first(tree, binned, params, rng, pool, random_cuts=True)
    else:  # a feature with missing values brings its twin (okcore.trees.missing)
        grow(
            tree, binned, params, rng,
            lambda node_rng: add_twins(_best_features(params, pool, node_rng), twin_column),
        )  # fmt: skip
    fields = tree.arrays()
    fold_twins(fields, n_inputs, params.missing)
    return fields


def _splittable(tree: _Tree, node: int, min_leaf: int, max_depth: int | None) -> bool:
    return (
        len(tree.rows[node]) >= 2 * min_leaf
        and (max_depth is None or tree.depth[node] < max_depth)
        and tree.impurity[node] > CONSTANT_NODE_TOLERANCE * tree.impurity[0]
    )


def _node_search(
    tree: _Tree, node: int, binned: BinnedInputs, features: np.ndarray, min_leaf: int,
    own_bin: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """(histogram, gain, valid) of one node's cuts (:func:`_cut_gains`)."""
    stats, rows = tree.stats, tree.rows[node]
    hist = _histogram(
        binned.codes, binned.bin_offset, features, rows, stats.columns, binned.n_bins_total
    )
    total = stats.columns[rows].sum(axis=0)
    gain, valid = _cut_gains(
        hist, total, stats, binned.bin_offset, features, min_leaf, tree.l2, own_bin
    )
    return hist, gain, valid


def _threshold(binned: BinnedInputs, held: np.ndarray, b: int) -> tuple[int, int, float]:
    """(feature, its own last left bin, threshold) of the cut after flat bin ``b``."""
    feature = int(np.searchsorted(binned.bin_offset, b, side="right") - 1)
    threshold = threshold_after_bin(held.astype(np.int64), binned.bin_min, binned.bin_max, b)
    return feature, b - int(binned.bin_offset[feature]), float(threshold)


def _random_cut(
    tree: _Tree, node: int, binned: BinnedInputs, params: Any, rng: np.random.Generator,
    pool: np.ndarray,
) -> tuple | None:  # fmt: skip
    """OK3-et's cut on bins, as :func:`~okcore.trees._histogram.best_split_random` draws it:
    the tree's features in a random order, each non-constant one (on the node's rows of
    positive weight) tried with the cut lo + u (hi - lo) between its smallest and largest
    values (a bin straddling the cut goes left, or right if it is the last, at its edge),
    until ``max_features`` were tried; of the cuts leaving min_samples_leaf rows and a
    positive weight on each side, the largest weighted gain (ties: the lower feature).
    (gain, feature, last left bin, threshold), or None. O(max_features n (k + 3))."""
    rows, stats = tree.rows[node], tree.stats
    features = rng.permutation(pool)
    uniforms = rng.random(len(features))
    total = stats.columns[rows].sum(axis=0)
    best: tuple | None = None
    tried = 0
    for f, u in zip(features.tolist(), uniforms.tolist(), strict=True):
        if tried >= params.max_features:
            break
        codes = binned.codes[f, rows]
        lo_b, hi_b = int(codes.min()), int(codes.max())
        if hi_b <= lo_b:
            continue
        tried += 1
        base = int(binned.bin_offset[f])
        cut = binned.bin_min[base + lo_b] + u * (
            binned.bin_max[base + hi_b] - binned.bin_min[base + lo_b]
        )
        last = lo_b
        while last + 1 <= hi_b and binned.bin_min[base + last + 1] <= cut:
            last += 1
        threshold = float(cut)
        if binned.bin_max[base + last] > cut:  # the cut falls inside bin `last`
            if last == hi_b:
                last -= 1
            threshold = float(binned.edges[base - f + last])
        left = stats.columns[rows[codes <= last]].sum(axis=0)
        _, _, WL, nL = stats.split(left)
        _, _, W, n = stats.split(total)
        if (
            nL < params.min_samples_leaf
            or n - nL < params.min_samples_leaf
            or WL <= 0
            or W - WL <= 0
        ):
            continue
        gain = float(stats.gain(left[None], total, tree.l2)[0])
        if (
            best is None
            or gain > best[0] + TIE_RELATIVE * abs(gain) + TIE_ABSOLUTE
            or (gain >= best[0] - TIE_RELATIVE * abs(gain) - TIE_ABSOLUTE and f < best[1])
        ):
            best = (gain, f, last, threshold)
    return best


def _grow_best_first(
    tree: _Tree, binned: BinnedInputs, params: Any, rng: np.random.Generator, features: Any,
    random_cuts: bool = False,
) -> None:  # fmt: skip
    """Best-first growth as :func:`~okcore.trees.builder.build_tree`: the leaf of largest
    weighted N*var next (``leaf_order="variance"``) or of largest split gain ("gain"), at
    most ``max_splits`` splits. ``random_cuts``: OK3-et's drawn cuts (:func:`_random_cut`)
    among the tree's features ``features`` (an array), else the best cut of each node's
    candidates ``features(rng)``."""
    min_leaf, max_depth = int(params.min_samples_leaf), params.max_depth
    frontier = _Frontier()

    def find(node: int) -> tuple | None:
        if random_cuts:
            split = _random_cut(tree, node, binned, params, rng, features)
            return None if split is None or split[0] <= 0.0 else split
        hist, gain, valid = _node_search(tree, node, binned, features(rng), min_leaf)
        b = _pick(gain, valid)
        if b < 0 or gain[b] <= 0.0:
            return None
        return (float(gain[b]), *_threshold(binned, tree.stats.split(hist)[3] > 0, b))

    def push(node: int) -> None:
        if not _splittable(tree, node, min_leaf, max_depth):
            return
        if params.leaf_order == "gain":
            split = find(node)
            if split is not None:
                frontier.push(split[0], node, split)
        else:
            frontier.push(tree.impurity[node], node, None)

    push(0)
    n_splits = 0
    while frontier and (params.max_splits is None or n_splits < params.max_splits):
        node, split = frontier.pop()
        split = split if split is not None else find(node)
        if split is None:
            continue
        _, feature, last_bin, threshold = split
        goes_left = binned.codes[feature, tree.rows[node]] <= last_bin
        left, right = tree.cut(node, feature, threshold, goes_left)
        n_splits += 1
        push(left)
        push(right)


def _grow_oblivious(
    tree: _Tree, binned: BinnedInputs, params: Any, rng: np.random.Generator, features: Any
) -> None:
    """Oblivious growth by the rules of :mod:`okcore.trees.oblivious`: per level the cut of
    largest summed gain over the open nodes; a node the cut would leave without
    ``min_samples_leaf`` rows or a positive weight on a side passes whole to the next
    level; growth stops when the best level gain is not positive."""
    min_leaf = int(params.min_samples_leaf)
    frontier = [0] if _splittable(tree, 0, min_leaf, None) else []
    for _ in range(oblivious_depth(params.max_depth)):
        if not frontier:
            break
        level_features = features(rng)
        level_gain = np.zeros(binned.n_bins_total)
        any_valid = np.zeros(binned.n_bins_total, dtype=bool)
        held = np.zeros(binned.n_bins_total, dtype=bool)
        for node in frontier:
            hist, gain, valid = _node_search(
                tree, node, binned, level_features, min_leaf, own_bin=False
            )
            level_gain += np.where(valid, gain, 0.0)
            any_valid |= valid
            held |= tree.stats.split(hist)[3] > 0
        b = _pick(level_gain, any_valid & held)
        if b < 0 or level_gain[b] <= 0.0:
            break
        feature, last_bin, threshold = _threshold(binned, held, b)
        next_frontier = []
        for node in frontier:
            rows = tree.rows[node]
            goes_left = binned.codes[feature, rows] <= last_bin
            weight = tree.stats.row_weight
            n_left = int((goes_left).sum())
            if (
                n_left < min_leaf
                or len(rows) - n_left < min_leaf
                or weight[rows[goes_left]].sum() <= 0
                or weight[rows[~goes_left]].sum() <= 0
            ):
                next_frontier.append(node)  # passes whole to the next level's cut
                continue
            for child in tree.cut(node, feature, threshold, goes_left):
                if _splittable(tree, child, min_leaf, None):
                    next_frontier.append(child)
        frontier = sorted(next_frontier)


def weighted_max_bins(owner: str, max_bins: Any, X: Any, weighted_by: str = "sample_weight") -> int:
    """The ``max_bins`` a weighted fit of ``owner`` bins its inputs with, or a refusal
    that says how to fix it: weighted trees search histograms of dense inputs (``splitter``
    "best", or "random": OK3-et's drawn cuts on bins). ``max_bins`` None (the exact search)
    is MAX_BINS when no feature has more distinct values (one value per bin: the exact
    search's cuts), else refused. ``weighted_by`` names, in the refusals, what the user
    gave that made the fit weighted.
    O(N p log N) for None, O(1) otherwise."""
    if sparse.issparse(X):
        raise InvalidParameterError(
            f"{weighted_by} in {owner} needs dense inputs, not a sparse matrix: pass X.toarray()."
        )
    if max_bins is not None:
        return int(max_bins)
    distinct = max((len(np.unique(column)) for column in np.asarray(X).T), default=0)
    if distinct > MAX_BINS:
        raise InvalidParameterError(
            f"{weighted_by} in {owner} needs the histogram split search here (a feature has "
            f"{distinct} distinct values, more than {MAX_BINS}): set max_bins (e.g. "
            f"{MAX_BINS}). Got max_bins=None."
        )
    return MAX_BINS
