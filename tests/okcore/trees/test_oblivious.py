"""Oblivious trees (okcore.trees.oblivious) against a brute-force level-wise search: every
(feature, threshold) of every level scored by the summed reduction of the (penalised)
objective over the level's nodes, on tiny data whose features have fewer distinct values
than bins (so the histogram cuts are the exact ones)."""

import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from okdata import beats_reference

from okcore.trees.binning import bin_inputs
from okcore.trees.builder import HistogramPool, TreeParams, build_tree
from okcore.trees.ensemble import tree_leaves
from okcore.trees.oblivious import DEFAULT_OBLIVIOUS_DEPTH


def params(
    depth, min_leaf=1, l2=0.0, max_features=10**6, tree_features=None, refine=False
) -> TreeParams:
    return TreeParams(
        splitter="best",
        max_splits=None,
        max_features=max_features,
        leaf_order="variance",
        min_samples_leaf=min_leaf,
        max_depth=depth,
        l2_regularization=l2,
        tree_type="oblivious",
        tree_features=tree_features,
        refine_cuts=refine,
    )


def objective(R: np.ndarray, l2: float) -> float:
    """||sum of the rows||^2 / (n + lambda): a split's gain is the children's minus the
    parent's (the reduction of N*var when lambda = 0, eq. 11)."""
    total = R.sum(axis=0)
    return float(total @ total) / (len(R) + l2)


def impurity(R: np.ndarray) -> float:
    return float(np.sum((R - R.mean(axis=0)) ** 2))


def best_level_cut(X, R, frontier, candidates, min_leaf, l2):
    """The best (summed gain, feature, threshold) of the cuts x[f] <= t of ``candidates``
    (feature, threshold), in order, over the level's nodes ``frontier`` (row sets): a node
    is cut when both children keep ``min_leaf`` rows; ties to the first candidate; None when
    no candidate cuts a node."""
    best = None
    for f, t in candidates:
        total, any_cut = 0.0, False
        for rows in frontier:
            left, right = rows[X[rows, f] <= t], rows[X[rows, f] > t]
            if len(left) < min_leaf or len(right) < min_leaf:
                continue
            any_cut = True
            total += objective(R[left], l2) + objective(R[right], l2) - objective(R[rows], l2)
        if any_cut and (best is None or beats_reference(total, best[0])):
            best = (total, f, t)
    return best


def midpoints(values):
    """The midpoints between consecutive distinct ``values``."""
    return [lo / 2 + hi / 2 for lo, hi in itertools.pairwise(np.unique(values))]


def refined_level_cut(X, R, frontier, edges, min_leaf, l2):
    """The level cut of a histogram search refined inside its bins, from the definition:
    the best cut between the level's non-empty bins (x in bin b iff edges[f][b - 1] < x <=
    edges[f][b]), then the best midpoint between distinct values of the level's rows in its
    two bins (the last left bin and the next non-empty one)."""
    level_rows = np.concatenate(frontier)
    binned = {}  # (feature, threshold) -> the two bins around it
    for f in range(X.shape[1]):
        x = X[level_rows, f]
        code = np.searchsorted(edges[f], x, side="left")
        for b, b_next in itertools.pairwise(np.unique(code)):
            binned[(f, x[code == b].max() / 2 + x[code == b_next].min() / 2)] = (b, b_next)
    best = best_level_cut(X, R, frontier, list(binned), min_leaf, l2)
    if best is None or best[0] <= 0:
        return best
    f = best[1]
    b, b_next = binned[(f, best[2])]
    x = X[level_rows, f]
    code = np.searchsorted(edges[f], x, side="left")
    inside = midpoints(x[(code == b) | (code == b_next)])
    return best_level_cut(X, R, frontier, [(f, t) for t in inside], min_leaf, l2)


def brute_force(X, R, depth, min_leaf=1, l2=0.0, edges=None):
    """(cuts, leaves): the (feature, threshold) of each level and the row sets of the
    leaves, from the definition: at each level try every feature and every midpoint between
    consecutive distinct values of the rows of the level's open nodes (with ``edges``, each
    feature's bin edges: the refined histogram cut, :func:`refined_level_cut`); a node is
    cut when both children keep ``min_leaf`` rows (else it passes whole to the next level);
    the level gain is the sum of the cut nodes' gains; ties to the lower feature, then
    threshold; stop when no cut has a positive gain. A node with fewer than 2 min_leaf rows
    or constant rows is a final leaf."""
    root = impurity(R)

    def is_open(rows):
        return len(rows) >= 2 * min_leaf and impurity(R[rows]) > 1e-12 * root

    frontier = [np.arange(len(X))] if is_open(np.arange(len(X))) else []
    leaves = [] if frontier else [np.arange(len(X))]
    cuts = []
    for _ in range(depth):
        if not frontier:
            break
        if edges is None:
            level_rows = np.concatenate(frontier)
            candidates = [(f, t) for f in range(X.shape[1]) for t in midpoints(X[level_rows, f])]
            best = best_level_cut(X, R, frontier, candidates, min_leaf, l2)
        else:
            best = refined_level_cut(X, R, frontier, edges, min_leaf, l2)
        if best is None or best[0] <= 0:
            break
        _, f, t = best
        cuts.append((f, t))
        next_frontier = []
        for rows in frontier:
            left, right = rows[X[rows, f] <= t], rows[X[rows, f] > t]
            if len(left) < min_leaf or len(right) < min_leaf:
                next_frontier.append(rows)
                continue
            for child in (left, right):
                (next_frontier if is_open(child) else leaves).append(child)
        frontier = next_frontier
    return cuts, leaves + frontier


def grown(X, R, p: TreeParams, seed=0):
    binned = bin_inputs(X, 255)
    row_leaf = np.empty(len(X), dtype=np.int32)
    tree = build_tree(None, R, p, np.random.default_rng(seed), binned=binned, row_leaf=row_leaf)
    return tree, row_leaf


def data(seed, n=40, p=3, r=2, integer=False):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, (n, p)).astype(float) if integer else rng.standard_normal((n, p))
    R = rng.standard_normal((n, r))
    R[:, :2] += np.c_[X[:, 0] > 0.3, X[:, 1] * X[:, 0]]
    return X, R


def assert_brute_force_level_search(X, R, depth, min_leaf, l2):
    """The grown tree has the brute-force level search's cuts and partition of the rows
    into leaves; returns the tree and its rows' leaves."""
    tree, row_leaf = grown(X, R, params(depth, min_leaf, l2))
    cuts, leaves = brute_force(X, R, depth, min_leaf, l2)
    internal = tree.feature >= 0
    got_cuts = sorted(
        set(zip(tree.feature[internal].tolist(), tree.threshold[internal], strict=True))
    )
    assert [f for f, _ in got_cuts] == [f for f, _ in sorted(cuts)]
    np.testing.assert_allclose([t for _, t in got_cuts], [t for _, t in sorted(cuts)])
    got = {frozenset(np.flatnonzero(row_leaf == leaf)) for leaf in range(tree.n_leaves)}
    assert got == {frozenset(rows) for rows in leaves}
    return tree, row_leaf


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    ("depth", "min_leaf", "l2", "integer"),
    [(3, 1, 0.0, False), (4, 1, 0.0, True), (3, 4, 0.0, False), (3, 1, 2.5, False),
     (5, 3, 1.0, True)],
)  # fmt: skip
def test_oblivious_tree_equals_the_brute_force_level_search(seed, depth, min_leaf, l2, integer):
    X, R = data(seed, integer=integer)
    tree, row_leaf = assert_brute_force_level_search(X, R, depth, min_leaf, l2)
    # leaf values: the ridge leaf sum / (n + lambda)
    for leaf in range(tree.n_leaves):
        rows = np.flatnonzero(row_leaf == leaf)
        np.testing.assert_allclose(tree.value[leaf], R[rows].sum(0) / (len(rows) + l2))
    # routing a point by the thresholds gives the leaf the growth recorded
    np.testing.assert_array_equal(tree_leaves(tree, X), row_leaf)


def data_with_common_bins(seed, n=60, p=5, r=3):
    """Features whose most frequent value holds all but at most 20 % of the rows (word
    counts, a common value in the middle of the range), searched by their other rows only,
    beside one spread feature."""
    rng = np.random.default_rng(seed)
    X = np.zeros((n, p))
    for f in range(p - 1):
        rows = rng.choice(n, n // 6, replace=False)
        X[rows, f] = rng.integers(1, 4, len(rows))
    X[:, 1] -= 1.5  # the common value -1.5 lies between the others
    X[:, -1] = rng.standard_normal(n)
    R = rng.standard_normal((n, r))
    R[:, :2] += np.c_[X[:, 0] > 0.5, X[:, 2] * (X[:, 1] > 0)]
    return X, R


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("depth", "min_leaf", "l2"), [(3, 1, 0.0), (4, 2, 1.0)])
def test_features_with_a_common_bin_equal_the_brute_force_level_search(seed, depth, min_leaf, l2):
    """The histograms of features with a common bin, built from the rows outside it (the
    common bin's cell by subtraction from the node's total), give the brute-force cuts."""
    X, R = data_with_common_bins(seed)
    common, _, _ = bin_inputs(X, 255).common_bins
    assert (common[:-1] >= 0).all() and common[-1] < 0
    assert_brute_force_level_search(X, R, depth, min_leaf, l2)


@pytest.fixture
def derived_levels(monkeypatch):
    """Counts the level histograms derived by subtraction (calls of derive_level)."""
    import okcore.trees.oblivious as oblivious

    calls = []
    derive = oblivious.derive_level

    def counting(*args):
        calls.append(args[-1].shape[1])
        return derive(*args)

    monkeypatch.setattr(oblivious, "derive_level", counting)
    return calls


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(
    ("depth", "min_leaf", "l2", "common_bins"),
    [(4, 1, 0.0, False), (5, 25, 0.0, False), (4, 1, 2.5, False), (3, 1, 0.0, True),
     (4, 30, 1.0, True)],
)  # fmt: skip
def test_histogram_subtraction_equals_the_brute_force_level_search(
    derived_levels, seed, depth, min_leaf, l2, common_bins
):
    """Rows enough for the subtraction to pay (few bins, many rows): each level after the
    first builds the smaller child of every cut node and takes its sibling as the parent
    minus it, and the tree still has the brute-force cuts and leaves."""
    X, R = (
        data_with_common_bins(seed, n=1800) if common_bins
        else data(seed, n=1500, p=3, integer=True)
    )  # fmt: skip
    X[:, -1] = np.round(X[:, -1], 1)  # fewer values than bins: the exact cuts
    assert_brute_force_level_search(X, R, depth, min_leaf, l2)
    assert len(derived_levels) >= 1


def test_common_bins_of_subsampled_rows(monkeypatch):
    """A tree on a subset of rows finds the common bins of those rows, and grows the tree of
    the search that adds every row to its bin."""
    import okcore.trees.oblivious as oblivious

    X, R = data_with_common_bins(7, n=300, p=9, r=4)
    rows = np.sort(np.random.default_rng(0).choice(300, 200, replace=False)).astype(np.int32)

    def tree():
        return build_tree(
            None, R, params(4), np.random.default_rng(0), binned=bin_inputs(X, 255), rows=rows
        )

    shortcut = tree()
    monkeypatch.setattr(oblivious, "COMMON_BIN_MAX_OUTSIDE", -1.0)  # every feature row by row
    every_row = tree()
    np.testing.assert_array_equal(shortcut.feature, every_row.feature)
    np.testing.assert_array_equal(shortcut.threshold, every_row.threshold)
    np.testing.assert_allclose(shortcut.value, every_row.value)


def test_every_path_takes_the_level_cuts_in_order():
    """Each root-to-leaf path meets the level cuts in level order, skipping only the levels
    where its node passed uncut (a child would have been empty)."""
    X, R = data(1, n=200, p=4)
    tree, _ = grown(X, R, params(4))

    def paths(node, cuts):
        if tree.left[node] < 0:
            yield cuts
            return
        cut = (int(tree.feature[node]), float(tree.threshold[node]))
        yield from paths(tree.left[node], [*cuts, cut])
        yield from paths(tree.right[node], [*cuts, cut])

    all_paths = list(paths(0, []))
    levels = max(all_paths, key=len)
    assert len(levels) == 4 == len(set(levels))
    for path in all_paths:
        it = iter(levels)
        assert all(cut in it for cut in path)  # a subsequence of the level cuts
    assert tree.n_leaves <= 16


def test_default_depth_and_histograms_in_groups_of_nodes(monkeypatch):
    """The level's histogram in several passes of fewer nodes gives the same tree."""
    import okcore.trees.oblivious as oblivious

    X, R = data(2, n=300, p=3, r=3)
    tree, leaf = grown(X, R, params(None))
    internal = tree.feature >= 0
    n_levels = len(set(zip(tree.feature[internal], tree.threshold[internal], strict=True)))
    assert n_levels == DEFAULT_OBLIVIOUS_DEPTH
    binned = bin_inputs(X, 255)
    monkeypatch.setattr(oblivious, "HISTOGRAM_BYTES", 8 * binned.n_bins_total * 3 * 3)
    again, leaf_again = grown(X, R, params(None))
    np.testing.assert_array_equal(again.feature, tree.feature)
    np.testing.assert_array_equal(again.threshold, tree.threshold)
    np.testing.assert_array_equal(leaf_again, leaf)
    np.testing.assert_allclose(again.value, tree.value)


def test_subsampled_rows_and_histogram_pool():
    """A tree fitted on a subset of rows equals the tree grown on those rows alone."""
    X, R = data(3, n=120)
    rows = np.sort(np.random.default_rng(0).choice(120, 70, replace=False)).astype(np.int32)
    binned = bin_inputs(X[rows], 255)
    alone = build_tree(None, R[rows], params(3), np.random.default_rng(0), binned=binned)
    pool = HistogramPool(bin_inputs(X, 255).n_bins_total)
    sub = build_tree(
        None, R, params(3), np.random.default_rng(0), binned=bin_inputs(X, 255), rows=rows,
        histogram_pool=pool,
    )  # fmt: skip
    np.testing.assert_array_equal(sub.feature >= 0, alone.feature >= 0)
    np.testing.assert_array_equal(sub.feature, alone.feature)
    np.testing.assert_allclose(sub.value, alone.value)


def test_tree_features_restrict_every_level():
    X, R = data(4, n=200, p=8)
    for seed in range(5):
        tree, _ = grown(X, R, params(4, tree_features=3), seed=seed)
        used = set(tree.feature[tree.feature >= 0].tolist())
        assert len(used) <= 3
        pool = np.sort(np.random.default_rng(seed).choice(8, 3, replace=False))
        assert used <= set(pool.tolist())


class Recording(ThreadPoolExecutor):
    """A thread pool that records the work handed to it."""

    def __init__(self, n_threads: int) -> None:
        super().__init__(n_threads)
        self.submitted: list = []

    def submit(self, fn, /, *args, **kwargs):
        self.submitted.append(fn)
        return super().submit(fn, *args, **kwargs)


@pytest.mark.parametrize("n_threads", [2, 3])
def test_threads_grow_the_same_tree(monkeypatch, derived_levels, n_threads):
    """Threads split the level's features and the blocks of rows of the children's
    statistics; every sum keeps its order (rows in order in a block, blocks in order), so
    the tree, its statistics and the rows' leaves are bit for bit those of one thread."""
    from dataclasses import replace

    import okcore.threads
    import okcore.trees.oblivious as oblivious

    monkeypatch.setattr(okcore.threads, "PARALLEL_ROWS_MIN_WORK", 0)  # small data: threads anyway
    monkeypatch.setattr(oblivious, "STATISTICS_BLOCK", 37)  # 14 blocks of rows
    X, R = data(5, n=500, p=7, r=19)
    X = np.round(X * 4) / 4  # few bins: levels derived by subtraction (fixed features)
    binned = bin_inputs(X, 255)
    projection = np.random.default_rng(1).standard_normal((19, 8))
    every_feature = np.arange(7, dtype=np.int32)
    for p, fixed in ((params(5, min_leaf=3, l2=1.5), False), (params(4, max_features=4), False),
                     (params(5, min_leaf=2, l2=1.0), True)):  # fmt: skip

        def grow(executor, p=p, fixed=fixed):
            row_leaf = np.empty(len(X), dtype=np.int32)
            tree = oblivious.build_oblivious_tree(
                binned, R, R @ projection, projection, replace(p, n_threads=n_threads),
                np.random.default_rng(0),
                every_feature if fixed else
                lambda rng: np.sort(rng.choice(7, min(p.max_features, 7), replace=False)).astype(
                    np.int32
                ),
                row_leaf=row_leaf, runner=okcore.threads.ChunkRunner(executor, n_threads),
            )  # fmt: skip
            return tree, row_leaf

        derived_levels.clear()
        one, leaf_one = grow(None)
        assert bool(derived_levels) == fixed  # fixed candidates: levels derived by subtraction
        with Recording(n_threads) as executor:
            many, leaf_many = grow(executor)
        # the levels' searches and the children's statistics did run on other threads
        assert {"search", "run"} <= {work.__name__ for work in executor.submitted}
        for key, value in one.items():
            np.testing.assert_array_equal(many[key], value, err_msg=key)
        np.testing.assert_array_equal(leaf_many, leaf_one)
        assert (one["feature"] >= 0).sum() >= 7


@pytest.mark.parametrize("fill_row_sq", [False, True])
@pytest.mark.parametrize("block", [1, 7, 64, 1000])
def test_children_statistics_are_block_sums_added_in_block_order(block, fill_row_sq):
    """Each block of rows is summed in row order, the blocks added in block order: the
    numbers of a plain loop doing just that, whatever blocks a thread takes; with one block,
    the plain row-order sums. The root's pass (``fill_row_sq``, every row in a slot) also
    gives each row's squared norm, bit for bit row_squares'."""
    from okcore.trees._oblivious_kernels import add_blocks, child_statistics, row_squares

    rng = np.random.default_rng(3)
    n, r, n_slots = 300, 5, 3
    R = rng.standard_normal((n + 20, r)) * 10.0 ** rng.integers(-3, 4, (n + 20, 1))
    samples = rng.permutation(n + 20)[:n].astype(np.int32)
    codes = rng.integers(0, 20, n).astype(np.uint8)
    slot = rng.integers(-1, n_slots, n).astype(np.int32)  # -1: rows of final leaves
    if fill_row_sq:
        slot[:] = 0  # the root: one open node
    row_sq = np.empty(n)
    row_squares(samples, 0, n, R, row_sq)
    np.testing.assert_allclose(row_sq, np.einsum("ij,ij->i", R[samples], R[samples]))
    n_blocks = -(-n // block)
    expected_sums, expected_squares = np.zeros((2 * n_slots, r)), np.zeros(2 * n_slots)
    expected_counts = np.zeros(2 * n_slots, dtype=np.int64)
    for j in range(n_blocks):
        part, part_sq = np.zeros((2 * n_slots, r)), np.zeros(2 * n_slots)
        for t in range(j * block, min((j + 1) * block, n)):
            if slot[t] >= 0:
                g = 2 * slot[t] + int(codes[t] > 9)
                part[g] += R[samples[t]]
                part_sq[g] += row_sq[t]
                expected_counts[g] += 1
        expected_sums = part if j == 0 else expected_sums + part
        expected_squares = part_sq if j == 0 else expected_squares + part_sq
    counts = np.empty((n_blocks, 2 * n_slots), dtype=np.int64)
    sums, squares = np.empty((n_blocks, 2 * n_slots, r)), np.empty((n_blocks, 2 * n_slots))
    filled = np.full(n, np.nan) if fill_row_sq else row_sq
    for lo, hi in itertools.pairwise([0, n_blocks // 3, n_blocks // 2, n_blocks]):  # 3 threads
        child_statistics(
            codes, 9, slot, samples, R, filled, block, lo, hi, counts, sums, squares, fill_row_sq
        )
    np.testing.assert_array_equal(filled, row_sq)
    np.testing.assert_array_equal(counts.sum(axis=0), expected_counts)
    np.testing.assert_array_equal(add_blocks(sums), expected_sums)
    np.testing.assert_array_equal(add_blocks(squares), expected_squares)


@pytest.mark.parametrize(
    ("depth", "min_leaf", "l2", "integer", "subsample", "group_bytes"),
    [(3, 1, 0.0, False, False, None), (6, 1, 3.0, False, False, None),
     (5, 4, 0.0, True, True, None), (6, 2, 1.5, False, True, 2), (8, 1, 0.0, True, False, 3)],
)  # fmt: skip
def test_one_output_compiled_tree_equals_the_level_loop(
    monkeypatch, depth, min_leaf, l2, integer, subsample, group_bytes
):
    """One output column and the same candidates at every level: the tree grown in one
    compiled call equals, bit for bit, the level loop's (the general path, taken when the
    candidates come from a function), with subsampled rows and histograms of a few nodes."""
    from dataclasses import asdict

    import okcore.trees.oblivious as oblivious

    X, R2 = data(7 + depth, n=900, p=5, r=2, integer=integer)
    R = np.ascontiguousarray(R2[:, :1] + R2[:, 1:])
    binned = bin_inputs(X, 255)
    if group_bytes is not None:  # histograms of `group_bytes` nodes at a time
        monkeypatch.setattr(oblivious, "HISTOGRAM_BYTES", 8 * binned.n_bins_total * group_bytes)
    rows = None
    if subsample:
        rows = np.sort(np.random.default_rng(1).choice(900, 600, replace=False)).astype(np.int32)
    features = np.arange(5, dtype=np.int32)
    p = params(depth, min_leaf=min_leaf, l2=l2)

    def grow(candidates):
        row_leaf = np.full(len(X), -1, dtype=np.int32)
        tree = oblivious.build_oblivious_tree(
            binned, R, R, None, p, np.random.default_rng(0), candidates, rows=rows,
            row_leaf=row_leaf, histogram_pool=HistogramPool(binned.n_bins_total),
        )  # fmt: skip
        return tree, row_leaf

    compiled, leaf_compiled = grow(features)
    loop, leaf_loop = grow(lambda rng: features)
    # the builder adds missing_left when it folds the twin columns (okcore.trees.missing)
    assert set(compiled) == set(loop) == set(asdict(build_tree(
        None, R, p, np.random.default_rng(0), binned=binned))) - {"missing_left"}  # fmt: skip
    for key, value in loop.items():
        assert compiled[key].dtype == value.dtype, key
        np.testing.assert_array_equal(compiled[key], value, err_msg=key)
    np.testing.assert_array_equal(leaf_compiled, leaf_loop)
    assert (loop["feature"] >= 0).sum() >= 3
    # the level loop with fixed candidates (a 1 x 1 identity "sketch" keeps it off the
    # compiled path): one search column builds every level directly there too
    row_leaf = np.full(len(X), -1, dtype=np.int32)
    fixed = oblivious.build_oblivious_tree(
        binned, R, R, np.ones((1, 1)), p, np.random.default_rng(0), features, rows=rows,
        row_leaf=row_leaf, histogram_pool=HistogramPool(binned.n_bins_total),
    )  # fmt: skip
    for key, value in fixed.items():
        np.testing.assert_array_equal(compiled[key], value, err_msg=key)
    np.testing.assert_array_equal(leaf_compiled, row_leaf)


@pytest.mark.parametrize("k", [4, 8])
@pytest.mark.parametrize("listed", [False, True])
def test_row_wise_level_histogram_is_the_feature_wise_one_bit_for_bit(k, listed):
    """build_level_rows adds every row to its cell of each feature in row order, as
    build_level does feature by feature: the same histogram bit for bit, for a chunk of
    slots (slot_lo > 0, rows of other slots and of final leaves skipped), listed rows and a
    subset of the features."""
    from okcore.trees._histogram import row_major_codes
    from okcore.trees._oblivious_kernels import NO_MEMBERS, build_level, build_level_rows

    rng = np.random.default_rng(k)
    n, p, n_slots, slot_lo, width = 3000, 6, 7, 2, 4
    codes = rng.integers(0, 30, (p, n)).astype(np.uint8)
    bin_offset = np.arange(p + 1, dtype=np.int64) * 30
    slot = rng.integers(-1, n_slots, n).astype(np.int32)
    rows = rng.standard_normal((n, k)) * 10.0 ** rng.integers(-3, 4, (n, 1))
    members = (
        np.sort(rng.choice(n, n // 3, replace=False)).astype(np.int32) if listed else NO_MEMBERS
    )
    features = np.array([0, 2, 3, 5], dtype=np.int32)
    by_feature = np.full((int(bin_offset[-1]), width, k + 1), np.nan)
    by_row = np.full_like(by_feature, -1.0)
    build_level(codes, slot, slot_lo, members, rows, bin_offset, features, by_feature)
    build_level_rows(
        row_major_codes(codes), slot, slot_lo, members, rows, bin_offset, features, by_row
    )
    cells = np.concatenate([np.arange(bin_offset[f], bin_offset[f + 1]) for f in features])
    np.testing.assert_array_equal(by_row[cells], by_feature[cells])
    in_chunk = np.isin(slot[members if listed else slice(None)], range(slot_lo, slot_lo + width))
    assert by_row[cells, :, k].sum() == len(features) * in_chunk.sum()  # every row counted


@pytest.mark.parametrize("k", [4, 8])
def test_row_wise_levels_grow_the_feature_wise_tree(monkeypatch, derived_levels, k):
    """A sketched search of 4 or 8 columns builds its small level histograms row by row;
    with every level built feature by feature (ROW_WISE_LEVEL_BYTES = 0) the tree, its
    statistics and its rows' leaves are the same bit for bit, on all rows (the pool's
    row-major codes) and on subsampled rows, with levels derived by subtraction."""
    import okcore.trees._oblivious_kernels as kernels
    import okcore.trees.oblivious as oblivious

    X, R = data(8, n=2000, p=6, r=12)
    X = np.round(X * 8) / 8  # few bins: levels derived by subtraction (fixed features)
    binned = bin_inputs(X, 255, keep_values=True)
    projection = np.random.default_rng(2).standard_normal((12, k))
    rows = np.sort(np.random.default_rng(3).choice(2000, 1500, replace=True)).astype(np.int32)
    calls = []
    by_rows, level_bytes = oblivious.build_level_rows, kernels.ROW_WISE_LEVEL_BYTES

    def counting(*args):
        calls.append(args[-1].shape[1])
        return by_rows(*args)

    monkeypatch.setattr(oblivious, "build_level_rows", counting)

    def grow(fitted_rows):
        row_leaf = np.empty(len(X), dtype=np.int32)
        tree = oblivious.build_oblivious_tree(
            binned, R, R @ projection, projection, params(5, min_leaf=2, l2=1.0, refine=True),
            np.random.default_rng(0), np.arange(6, dtype=np.int32), rows=fitted_rows,
            row_leaf=row_leaf, histogram_pool=HistogramPool(binned.n_bins_total),
        )  # fmt: skip
        return tree, row_leaf

    for fitted_rows in (None, rows):
        calls.clear()
        derived_levels.clear()
        row_wise, leaf_row_wise = grow(fitted_rows)
        assert calls and derived_levels  # levels built row by row, and derived ones
        monkeypatch.setattr(kernels, "ROW_WISE_LEVEL_BYTES", 0)
        calls.clear()
        feature_wise, leaf_feature_wise = grow(fitted_rows)
        monkeypatch.setattr(kernels, "ROW_WISE_LEVEL_BYTES", level_bytes)
        assert not calls
        for key, value in feature_wise.items():
            np.testing.assert_array_equal(row_wise[key], value, err_msg=key)
        fitted = np.arange(len(X)) if fitted_rows is None else np.unique(fitted_rows)
        np.testing.assert_array_equal(leaf_row_wise[fitted], leaf_feature_wise[fitted])
        assert (row_wise["feature"] >= 0).sum() >= 7
