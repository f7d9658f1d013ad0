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

Search: histograms on binned inputs (:mod:`okcore.trees.binning`) only
(:mod:`okcore.trees._oblivious_kernels`). The fitted rows keep their order for the whole
tree; each carries its node's slot among the level's open nodes. Per level, for n fitted
rows, f candidate features, k search columns (r, or the sketch's k), B_f bins per feature
(B in all), L <= 2^(d - 1) open nodes and r residual columns:

- histograms: one sequential pass over the rows per feature adds each row's k search values
  and a count to its (bin, node) cell: O(n f k). With k = 4 or 8 search columns and a level
  histogram of at most ROW_WISE_LEVEL_BYTES (:func:`~._oblivious_kernels.use_row_wise_level`)
  one pass over the rows adds each row, read once, to its cell of every feature instead, from
  a row-major copy of the codes (the fit's, or the subsampled rows' per tree: O(n p)); the
  cells are the same bit for bit. A feature whose most frequent bin holds
  all but at most COMMON_BIN_MAX_OUTSIDE (20 %) of the fitted rows (binary word counts,
  one-hot columns, blank pixels: :func:`~okcore.trees.binning.common_bin_layout`) adds
  only its other rows, and its common bin's cell is the node's total (one O(n k) pass per
  level) minus the other bins: O(nnz_f k + B_f L k) for it. Its count is exact and its
  sums equal the direct ones up to rounding (whatever the threads);
- gains: a scan over each feature's bins sums the nodes' gains per cut: O(f B_f L k);
- the cut: one pass sums both children's counts, rows of R (for the exact leaf values and
  the next level's node means) and squared norms, per block of STATISTICS_BLOCK rows, the
  blocks then added in block order: O(n r + (n / STATISTICS_BLOCK) L r); one pass moves
  the rows to their child and gives them its next slot: O(n).

Histogram subtraction (LightGBM's and CatBoost's): after the first level, when the
candidate features are the same at every level, the search has several columns and the
previous level's histogram was built whole, a level builds only the child with fewer rows
of every cut node and takes its sibling's cells as the parent's minus the built child's (a
node that passed the cut whole keeps its cells): O(n_small f k + f B_f L k) instead of
O(n f k), with n_small <= n / 2, taken when the rows saved outweigh the cells derived
(:func:`subtraction_pays`). One search column builds directly: a row's update is then two
adds, and deriving made one-output fits slower (kin40k, 300 trees of depth 10: 4.4-4.8
CPU s against 3.8-4.1). A derived cell's count is
exact and its sums equal the direct ones up to rounding (an empty cell's are 0), which
can only move a near tie between cuts (gains equal within the tie margin of
:func:`~okcore.trees.splitter.beats` go by its rule, not by rounding); leaf values and the
nodes' statistics are always the direct sums. Which child is built depends on the counts alone,
never on the threads.

Refinement (``refine_cuts``, the binned inputs keeping their raw values): a bin edge can
miss a sharp step in the outputs by up to a bin (at N = 64,000 rows of the synthetic
problem the nearest edge lay 0.0018 from its step, a share of 0.055 of the held-out MSE of
0.142), so the level's chosen edge moves to the best exact cut inside the two bins around
it, scored by the same summed level gain over the same nodes
(:func:`~okcore.trees._oblivious_kernels.refine_level_cut`), and the rows are routed by the
raw values, per level: O(n) to find the rows of the two bins, O(B_f L k) for the nodes' left
sums from the level histogram (O(n k) from the rows when the level is searched in groups of
nodes) and O(m log m + m k + L k) for their m rows.

A tree of depth d costs O(d (n f k + f B_f L k + n r)) (the rows' squared norms, for the
nodes' N*var, are taken by the root's statistics pass from the values it reads; one column
takes them in a pass of its own, O(n)). Every built histogram cell adds its rows in row order, every derived cell is one
subtraction, and every child's sum adds its blocks in block order (each block's rows in
row order), whatever the threads (which split the features of a level and the blocks of
rows) or the chunks of nodes: the tree does not depend on them. Memory: a (B, L, k + 1)
histogram, and where the subtraction can be taken a second one (its parents' and the built
children's), each up to HISTOGRAM_BYTES (larger levels are built directly in groups of
nodes), O(n) slots and node numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..threads import SERIAL, ChunkRunner
from ._histogram import gather_rows, row_major_codes
from ._oblivious_kernels import (
    NO_MEMBERS,
    add_blocks,
    add_level_gains,
    best_level_cut,
    build_level,
    build_level_rows,
    build_level_sparse,
    child_statistics,
    child_statistics_one_output,
    derive_level,
    move_rows,
    refine_level_cut,
    row_squares,
    slot_totals,
    subtraction_pays,
    subtraction_plan,
    use_row_wise_level,
)
from ._one_output_kernels import grow_one_output
from .binning import COMMON_BIN_MAX_OUTSIDE, BinnedInputs, common_bin_layout

#: The fields of a grown tree, in the order of TreeArrays (okcore.trees.builder) and of
#: grow_one_output's results.
TREE_FIELDS = (
    "feature", "threshold", "left", "right", "leaf", "n_samples", "impurity", "gain", "value",
)  # fmt: skip
#: Depth of an oblivious tree when ``max_depth`` is None (CatBoost's default depth).
DEFAULT_OBLIVIOUS_DEPTH = 6
#: Largest depth accepted (CatBoost's limit): 2^16 leaves per tree.
MAX_OBLIVIOUS_DEPTH = 16
#: Bytes of the sums of one level histogram (B bins x nodes x k columns of float64; each cell
#: also holds its count, (k + 1) / k of this in all): a level with more nodes is searched in
#: groups of nodes, one histogram pass each (32 MiB: the 32 nodes of the last level of a
#: depth-6 tree at p = 50, k = 8 in one pass).
HISTOGRAM_BYTES = 32 << 20
#: A last left bin above every code: the cut that sends every row left (the root's statistics).
ALL_LEFT = 255
#: Fitted rows per block of the children's statistics: each block's sums are taken in row
#: order and the blocks added in block order (:func:`~._oblivious_kernels.child_statistics`),
#: whatever the threads, which take whole blocks. Fits of at most this many rows sum in plain
#: row order. 16 blocks at N = 64,000: enough to share between threads, and the blocks'
#: partial sums (blocks x 2^depth x r floats) stay small.
STATISTICS_BLOCK = 4096
#: No level histogram: the refinement of a level's cut sums its rows instead.
NO_HISTOGRAM = np.empty((0, 0, 1))
#: A node whose N*var is below this fraction of the root's is a leaf (as in the builder).
CONSTANT_NODE_TOLERANCE = 1e-12


class _Nodes:
    """Nodes of the growing tree (creation order, root 0): each node's count, row sum (r,)
    and N*var, and the cut nodes' (feature, threshold, left, right, gain)."""

    def __init__(self) -> None:
        self.count: list[int] = []
        self.sum: list[np.ndarray] = []
        self.impurity: list[float] = []
        self.cuts: dict[int, tuple[int, float, int, int, float]] = {}

    def add(self, count: int, row_sum: np.ndarray, squares: float) -> int:
        self.count.append(int(count))
        self.sum.append(row_sum)
        spread = squares - float(row_sum @ row_sum) / count if count > 0 else 0.0
        self.impurity.append(max(spread, 0.0))
        return len(self.count) - 1

    def cut(
        self, node: int, feature: int, threshold: float, left: int, right: int, l2: float
    ) -> None:
        """Record the node's cut into its children ``left`` and ``right`` (added) with its
        reduction of N*var (of the penalised objective with l2 > 0), from the full residual
        rows (the search may have read a sketch)."""
        if l2 == 0.0:
            gain = max(self.impurity[node] - self.impurity[left] - self.impurity[right], 0.0)
        else:

            def score(i: int) -> float:
                return float(self.sum[i] @ self.sum[i]) / (self.count[i] + l2)

            gain = score(left) + score(right) - score(node)
        self.cuts[node] = (feature, threshold, left, right, gain)

    def to_arrays(self, l2: float) -> dict[str, np.ndarray]:
        """The fields of the tree's :class:`~okcore.trees.builder.TreeArrays` (the builder,
        which dispatches here, makes it), leaves numbered in node order."""
        n_nodes = len(self.count)
        feature = np.full(n_nodes, -1, dtype=np.int32)
        threshold, gain = np.zeros(n_nodes), np.zeros(n_nodes)
        left, right = np.full(n_nodes, -1, dtype=np.int32), np.full(n_nodes, -1, dtype=np.int32)
        for node, (f, t, lo, hi, g) in self.cuts.items():
            feature[node], threshold[node], left[node], right[node], gain[node] = f, t, lo, hi, g
        internal = left >= 0
        leaf = np.full(n_nodes, -1, dtype=np.int32)
        leaf[~internal] = np.arange(int((~internal).sum()), dtype=np.int32)
        leaves = np.flatnonzero(~internal)
        count = np.array(self.count, dtype=np.int64)
        value = np.array([self.sum[i] for i in leaves]) / (count[leaves] + l2)[:, None]
        impurity = np.array(self.impurity, dtype=np.float64)
        fields = (feature, threshold, left, right, leaf, count.astype(np.int32), impurity, gain)
        return dict(zip(TREE_FIELDS, (*fields, value), strict=True))


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
    runner: ChunkRunner = SERIAL,
) -> dict[str, np.ndarray]:
    """Grow one oblivious tree (module docstring) on residual rows R (N, r) and dense
    ``binned`` inputs, fitted on ``rows`` (default all N; repeats allowed). ``R_search`` is
    R, or its sketch R @ ``projection`` (leaf values stay exact). ``params`` is the
    builder's TreeParams (depth: ``max_depth``, else DEFAULT_OBLIVIOUS_DEPTH;
    ``min_samples_leaf``, ``l2_regularization``, ``n_threads``); ``candidate_features(rng)``
    gives each level's candidate features (sorted int32), or is the array of them when
    every level has the same (no random draw: with one output column, no sketch and no
    candidate feature with a common bin the tree is then grown in one compiled call,
    :func:`_grow_one_output`). ``row_leaf`` receives the leaf of every fitted row;
    ``histogram_pool`` lends the level histogram buffer across the trees of a fit;
    ``runner`` (:class:`~okcore.threads.ChunkRunner`: a fit's threads) splits each level's
    features, the rows' squared norms and the blocks of rows of the children's statistics
    between its threads (the same tree for any number). Returns the fields of the tree's
    TreeArrays.
    O(d (n f k + f B_f L k + n r)) for depth d.
    """
    if binned.is_sparse:
        raise ValueError("oblivious trees need dense binned inputs")
    if rows is None:
        samples = np.arange(binned.n_samples, dtype=np.int32)
        codes = np.ascontiguousarray(binned.codes)
    else:
        samples = np.ascontiguousarray(rows, dtype=np.int32)
        codes = np.ascontiguousarray(binned.codes[:, samples])  # read in order at every level
    n_fit = len(samples)
    common, outside_ptr, outside_rows = (
        binned.common_bins
        if rows is None
        else common_bin_layout(codes, binned.bin_offset, COMMON_BIN_MAX_OUTSIDE)
    )
    depth = oblivious_depth(params.max_depth)
    min_leaf, l2 = int(params.min_samples_leaf), float(params.l2_regularization)
    refine = bool(params.refine_cuts)
    if refine and binned.values is None:
        raise ValueError("refine_cuts needs the raw values: bin_inputs(keep_values=True)")
    # the raw inputs the refinement reads, (p, N); empty: cuts stay at bin edges
    raw = binned.values if refine and binned.values is not None else np.empty((0, 0))
    k, n_bins = R_search.shape[1], binned.n_bins_total
    search_rows = (
        np.ascontiguousarray(R_search, dtype=np.float64)
        if rows is None
        else gather_rows(samples, 0, n_fit, R_search)
    )
    if (
        R.shape[1] == 1
        and projection is None
        and isinstance(candidate_features, np.ndarray)
        and not (common[candidate_features] >= 0).any()  # common bins: the level loop's
    ):
        return _grow_one_output(
            binned, codes, samples, search_rows, R, candidate_features, depth, min_leaf, l2,
            raw, row_leaf, histogram_pool,
        )  # fmt: skip
    # the fitted rows' codes row-major, for levels built row by row (the fit's copy, kept
    # by its pool, when every row is fitted)
    row_codes = np.empty((0, 0), dtype=np.uint8)
    if use_row_wise_level(n_bins, 1, k):
        row_codes = (
            histogram_pool.row_codes(binned.codes)
            if rows is None and histogram_pool is not None
            else row_major_codes(codes)
        )
    row_sq = np.empty(n_fit)  # ||R[samples[t]]||^2: by the root's statistics pass
    if R.shape[1] == 1:

        def squares_of_rows(lo: int, hi: int) -> None:
            row_squares(samples, lo, hi, R, row_sq)

        runner(n_fit, n_fit, squares_of_rows)
    slot = np.zeros(n_fit, dtype=np.int32)  # slot of each row's node in the frontier, or -1

    def statistics(
        codes_f: np.ndarray, last_bin: int, n_slots: int, fill_row_sq: bool = False
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Counts, row sums of R and squared norms of both children of the open nodes
        (groups 2 s, 2 s + 1) under a cut: per block of STATISTICS_BLOCK fitted rows,
        blocks split between threads, then added in block order; ``fill_row_sq``: the
        rows' squared norms first (the root's pass, :func:`child_statistics`)."""
        n_groups = 2 * n_slots
        if R.shape[1] == 1:
            counts = np.zeros(n_groups, dtype=np.int64)
            sums, squares = np.zeros((n_groups, 1)), np.zeros(n_groups)
            child_statistics_one_output(
                codes_f, last_bin, slot, samples, R, row_sq, counts, sums, squares
            )
            return counts, sums, squares
        block = STATISTICS_BLOCK
        n_blocks = max(1, -(-n_fit // block))
        counts = np.empty((n_blocks, n_groups), dtype=np.int64)
        sums = np.empty((n_blocks, n_groups, R.shape[1]))
        squares = np.empty((n_blocks, n_groups))

        def run(b_lo: int, b_hi: int) -> None:
            child_statistics(
                codes_f, last_bin, slot, samples, R, row_sq, block, b_lo, b_hi, counts, sums,
                squares, fill_row_sq,
            )  # fmt: skip

        runner(n_fit * R.shape[1], n_blocks, run)
        return counts.sum(axis=0), add_blocks(sums), add_blocks(squares)

    nodes = _Nodes()
    node_of = np.zeros(n_fit, dtype=np.int32)  # node of each fitted row
    counts0, sums0, squares0 = statistics(codes[0], ALL_LEFT, 1, fill_row_sq=True)
    nodes.add(counts0[0], sums0[0], squares0[0])
    root_impurity = nodes.impurity[0]

    def is_open(node: int) -> bool:
        return (
            nodes.count[node] >= 2 * min_leaf
            and nodes.impurity[node] > CONSTANT_NODE_TOLERANCE * root_impurity
        )

    frontier = [0] if is_open(0) else []
    chunk = histogram_chunk(depth, n_fit, min_leaf, n_bins, k)
    fixed_features = isinstance(candidate_features, np.ndarray)
    subtracts = fixed_features and k > 1  # histogram subtraction (module docstring)
    buffers = _take_buffers(histogram_pool, n_bins, (2 if subtracts else 1) * chunk * (k + 1))
    level_floats = n_bins * chunk * (k + 1)
    # the level's histogram is built in `current`; with subtraction, the previous level's
    # (the parents') and the built children's lie in `spare`
    current, spare = buffers[0].reshape(-1)[:level_floats], buffers[0].reshape(-1)[level_floats:]
    feature_bins = int(np.diff(binned.bin_offset)[candidate_features].sum()) if subtracts else 0
    gain, cut = np.empty(n_bins), np.empty(n_bins, dtype=np.bool_)
    rows_in_bin = np.empty(n_bins, dtype=np.int64)
    side = np.empty(n_fit if refine else 0, dtype=np.uint8)  # the refined cut's sides

    def view(flat: np.ndarray, first_slot: int, n_slots: int) -> np.ndarray:
        """Slots first_slot .. + n_slots of a (B, slots, k + 1) histogram half."""
        lo = first_slot * n_bins * (k + 1)
        return flat[lo : lo + n_slots * n_bins * (k + 1)].reshape(n_bins, n_slots, k + 1)

    def searcher(
        built: np.ndarray,
        row_slot: np.ndarray,
        slot_lo: int,
        members: np.ndarray,
        derive: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
        hist: np.ndarray,
        node_n: np.ndarray,
        node_mu: np.ndarray,
        features: np.ndarray,
    ) -> Any:
        """(search, rows built): search(f_lo, f_hi) makes the histograms and gains of a
        chunk of the level's nodes for a range of ``features``: the rows of slots slot_lo ..
        of ``row_slot`` (those of ``members`` when listed) are built into ``built`` (``hist``
        itself, or the children whose siblings ``derive`` = (parents' histogram,
        from_parent, from_built) then gives, :func:`derive_level`)."""
        mu = np.ascontiguousarray(node_mu)
        has_common = common[features] >= 0
        totals = np.empty((built.shape[1], k + 1))
        if has_common.any():
            slot_totals(row_slot, slot_lo, search_rows, totals)

        def search(f_lo: int, f_hi: int) -> None:
            run = features[f_lo:f_hi]
            spread, sparse_run = run[~has_common[f_lo:f_hi]], run[has_common[f_lo:f_hi]]
            if len(spread):
                by_rows = use_row_wise_level(n_bins, built.shape[1], k)
                (build_level_rows if by_rows else build_level)(
                    row_codes if by_rows else codes, row_slot, slot_lo, members, search_rows,
                    binned.bin_offset, spread, built,
                )  # fmt: skip
            if len(sparse_run):
                build_level_sparse(
                    codes, row_slot, slot_lo, search_rows, binned.bin_offset, sparse_run,
                    common, outside_ptr, outside_rows, totals, built,
                )  # fmt: skip
            if derive is not None:
                derive_level(derive[0], built, derive[1], derive[2], binned.bin_offset, run, hist)
            add_level_gains(
                hist, binned.bin_offset, run, node_n, mu, min_leaf, l2, gain, cut, rows_in_bin
            )

        return search, int(node_n.sum()) if derive is None else len(members)

    parents: np.ndarray | None = None  # the previous level's histogram, when whole and kept
    plan: tuple[np.ndarray, np.ndarray, np.ndarray, int, int] | None = None
    # the previous level's `plan`, when this level derives from `parents` by it
    derives_by: tuple[np.ndarray, np.ndarray, np.ndarray, int, int] | None = None
    # the rows of the children a deriving level builds: each row's slot among them, and the
    # rows with one (listed by move_rows)
    row_slot = np.empty(n_fit if subtracts else 0, dtype=np.int32)
    members, n_members = np.empty(n_fit if subtracts else 0, dtype=np.int32), 0
    try:
        for level in range(depth):
            if not frontier:
                break
            n_slots = len(frontier)
            node_n = np.array([nodes.count[i] for i in frontier], dtype=np.int64)
            node_mu = np.array([nodes.sum[i] / nodes.count[i] for i in frontier])
            if projection is not None:
                node_mu = node_mu @ projection
            features = np.ascontiguousarray(
                candidate_features if fixed_features else candidate_features(rng),
                dtype=np.int32,
            )  # fmt: skip
            gain[:], cut[:], rows_in_bin[:] = 0.0, False, 0
            if derives_by is not None:  # build the smaller children, derive their siblings
                assert parents is not None
                _, from_parent, from_built, n_built, _ = derives_by
                hist = view(current, 0, n_slots)
                search, n_built_rows = searcher(
                    view(spare, parents.shape[1], n_built), row_slot, 0, members[:n_members],
                    (parents, from_parent, from_built), hist, node_n, node_mu, features,
                )  # fmt: skip
                work = n_built_rows * len(features) * k + feature_bins * n_slots * (k + 1)
                runner(work, len(features), search)
            else:
                for lo in range(0, n_slots, chunk):  # one histogram of `chunk` nodes at a time
                    hist = view(current, 0, min(chunk, n_slots - lo))
                    search, n_rows = searcher(
                        hist, slot, lo, NO_MEMBERS, None, hist, node_n[lo : lo + hist.shape[1]],
                        node_mu[lo : lo + hist.shape[1]], features,
                    )  # fmt: skip
                    runner(n_rows * len(features) * k, len(features), search)
            parents = hist if n_slots <= chunk and subtracts else None
            if parents is not None:  # kept for the next level: build that one in the other half
                current, spare = spare, current
            feature, last_bin, threshold, level_gain = best_level_cut(
                gain, cut, rows_in_bin, binned.bin_offset, binned.bin_min, binned.bin_max,
                features,
            )  # fmt: skip
            if feature < 0 or level_gain <= 0.0:
                break
            codes_f = codes[feature]
            if refine:
                threshold, level_gain = refine_level_cut(
                    codes_f, raw, feature, samples, slot, search_rows, node_n,
                    np.ascontiguousarray(node_mu), hist if n_slots <= chunk else NO_HISTOGRAM,
                    rows_in_bin, binned.bin_offset, last_bin, min_leaf, l2, side,
                )  # fmt: skip
                codes_f = side
            c_counts, c_sums, c_squares = statistics(codes_f, last_bin, n_slots)
            is_cut = (c_counts[0::2] >= min_leaf) & (c_counts[1::2] >= min_leaf)
            place = np.where(is_cut, np.cumsum(is_cut) - 1, -1)
            first_child = len(nodes.count)
            next_frontier: list[int] = []
            for s, node in enumerate(frontier):
                if place[s] < 0:
                    next_frontier.append(node)  # passes whole to the next level's cut
                    continue
                left = nodes.add(c_counts[2 * s], c_sums[2 * s], c_squares[2 * s])
                right = nodes.add(c_counts[2 * s + 1], c_sums[2 * s + 1], c_squares[2 * s + 1])
                nodes.cut(node, int(feature), float(threshold), left, right, l2)
                next_frontier.extend(c for c in (left, right) if is_open(c))
            slot_of = np.full(len(nodes.count), -1, dtype=np.int32)
            slot_of[sorted(next_frontier)] = np.arange(len(next_frontier), dtype=np.int32)
            plan = (
                None if parents is None
                else subtraction_plan(
                    np.array(frontier, dtype=np.int64), place, first_child,
                    np.array(nodes.count, dtype=np.int64), slot_of, len(next_frontier),
                )
            )  # fmt: skip
            frontier = sorted(next_frontier)
            derives_by = (  # the next level's (module docstring: subtraction)
                plan
                if plan is not None
                and level + 1 < depth
                and 0 < len(frontier) <= chunk
                and n_slots + plan[3] <= chunk
                and subtraction_pays(
                    int(sum(nodes.count[i] for i in frontier)), plan[4], len(features),
                    feature_bins, len(frontier),
                )
                else None
            )  # fmt: skip
            n_members = move_rows(
                codes_f, last_bin, place, first_child, slot_of, node_of, slot,
                NO_MEMBERS if derives_by is None else derives_by[0], row_slot, members,
            )  # fmt: skip
    finally:
        if histogram_pool is not None and histogram_pool.n_bins == n_bins:
            histogram_pool.give(buffers)
    tree = nodes.to_arrays(l2)
    if row_leaf is not None:
        row_leaf[samples] = tree["leaf"][node_of]
    return tree


def histogram_chunk(depth: int, n_fit: int, min_leaf: int, n_bins: int, k: int) -> int:
    """Open nodes per level histogram: all the level's (at most 2^(depth - 1), and at most
    n_fit / (2 min_leaf)) up to HISTOGRAM_BYTES of sums."""
    max_slots = max(1, min(2 ** (depth - 1), n_fit // max(2 * min_leaf, 1)))
    return max(1, min(max_slots, HISTOGRAM_BYTES // (8 * n_bins * k)))


def _take_buffers(histogram_pool: Any, n_bins: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """A (B, width) level histogram buffer, lent by the fit's pool when it has one."""
    if histogram_pool is not None and histogram_pool.n_bins == n_bins:
        return histogram_pool.take(width)  # type: ignore[no-any-return]
    return np.empty((n_bins, width)), np.empty(0)


def _grow_one_output(
    binned: BinnedInputs,
    codes: np.ndarray,
    samples: np.ndarray,
    search_rows: np.ndarray,
    R: np.ndarray,
    features: np.ndarray,
    depth: int,
    min_leaf: int,
    l2: float,
    raw: np.ndarray,
    row_leaf: np.ndarray | None,
    histogram_pool: Any,
) -> dict[str, np.ndarray]:
    """:func:`build_oblivious_tree` for one output column (R (N, 1), no sketch) and the same
    candidate features at every level: the whole tree in one compiled call
    (:func:`~okcore.trees._one_output_kernels.grow_one_output`), the same tree,
    without the Python work per level and node that was a third of a tree's time at
    N = 36,000. One thread: a level's work at r = 1 (f n adds) is about a millisecond.
    ``raw``: the raw inputs (p, N) that refine each level's cut, or empty (0, 0)."""
    n_bins = binned.n_bins_total
    chunk = histogram_chunk(depth, len(samples), min_leaf, n_bins, 1)
    buffers = _take_buffers(histogram_pool, n_bins, 2 * chunk)
    try:
        grown = grow_one_output(
            codes, samples, search_rows, np.ascontiguousarray(R, dtype=np.float64),
            binned.bin_offset, binned.bin_min, binned.bin_max,
            np.ascontiguousarray(features, dtype=np.int32), depth, min_leaf, l2, chunk,
            buffers[0].reshape(-1), CONSTANT_NODE_TOLERANCE, ALL_LEFT,
            raw,
            np.empty(0, dtype=np.int32) if row_leaf is None else row_leaf,
        )  # fmt: skip
    finally:
        if histogram_pool is not None and histogram_pool.n_bins == n_bins:
            histogram_pool.give(buffers)
    return dict(zip(TREE_FIELDS, grown, strict=True))
