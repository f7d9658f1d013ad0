"""Refined cuts of oblivious trees (``refine_cuts``): each level's binned edge moves to the best
exact cut inside the two bins around it, by the level's summed gain; checked against the
brute-force level search of test_oblivious.py refining from the definition, on data with many
more distinct values than bins."""

import numpy as np
import pytest
from test_oblivious import brute_force, params

from okcore import OKBoostRegressor
from okcore.trees import oblivious
from okcore.trees.binning import bin_inputs
from okcore.trees.builder import HistogramPool, build_tree
from okcore.trees.ensemble import tree_leaves


def data(seed, n=160, p=3, r=2):
    rng = np.random.default_rng(seed)
    X = rng.random((n, p))
    R = 0.3 * rng.standard_normal((n, r))
    R[:, 0] += X[:, 0] > 0.37 + 0.05 * seed
    R[:, 1] += np.sin(5 * X[:, 1]) * (X[:, 2] > 0.6)
    return X, R


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(
    ("depth", "min_leaf", "l2", "max_bins", "grouped"),
    [(3, 1, 0.0, 4, False), (3, 5, 0.0, 8, False), (4, 1, 2.0, 6, False), (2, 1, 0.0, 3, False),
     (4, 1, 0.0, 5, True), (3, 3, 1.0, 8, True)],
)  # fmt: skip
def test_refined_levels_equal_the_brute_force_refinement(
    monkeypatch, seed, depth, min_leaf, l2, max_bins, grouped
):
    """``grouped``: levels searched one node at a time, so the refinement takes the left
    sums from the rows instead of the level histogram."""
    X, R = data(seed)
    binned = bin_inputs(X, max_bins, keep_values=True)
    if grouped:  # one node per histogram (8 bytes x bins x 2 search columns)
        monkeypatch.setattr(oblivious, "HISTOGRAM_BYTES", 8 * binned.n_bins_total * 2)
    row_leaf = np.empty(len(X), dtype=np.int32)
    tree = build_tree(
        None, R, params(depth, min_leaf, l2, refine=True), np.random.default_rng(0), binned=binned,
        row_leaf=row_leaf,
    )  # fmt: skip
    edges = [
        binned.edges[binned.bin_offset[f] - f : binned.bin_offset[f + 1] - f - 1]
        for f in range(X.shape[1])
    ]
    cuts, leaves = brute_force(X, R, depth, min_leaf, l2, edges=edges)
    internal = tree.feature >= 0
    got = sorted(set(zip(tree.feature[internal].tolist(), tree.threshold[internal], strict=True)))
    assert [f for f, _ in got] == [f for f, _ in sorted(cuts)]
    np.testing.assert_allclose([t for _, t in got], [t for _, t in sorted(cuts)])
    assert {frozenset(np.flatnonzero(row_leaf == leaf)) for leaf in range(tree.n_leaves)} == {
        frozenset(rows) for rows in leaves
    }
    # the training rows routed by the thresholds reach the leaves the growth recorded
    np.testing.assert_array_equal(tree_leaves(tree, X), row_leaf)
    for leaf in range(tree.n_leaves):
        rows = np.flatnonzero(row_leaf == leaf)
        np.testing.assert_allclose(tree.value[leaf], R[rows].sum(0) / (len(rows) + l2))


@pytest.mark.parametrize("step", [0.1234, 0.4137, 0.777])
def test_a_step_inside_a_wide_bin_gets_the_exact_cut(step):
    """One level, a sharp step in feature 0 inside one of 4 bins: the binned cut misses it,
    the refined cut is the exact search's (the midpoint of the values around the step)."""
    rng = np.random.default_rng(0)
    X = rng.random((600, 3))
    Y = np.c_[X[:, 0] > step, X[:, 0] > step] + 0.01 * rng.standard_normal((600, 2))
    common = dict(tree_type="oblivious", max_depth=1, n_estimators=1, learning_rate=1.0)
    common.update(max_bins=4, l2_regularization=0.0, sketch_dim=None)
    binned = OKBoostRegressor(refine_cuts=False, **common).fit(X, Y).ensemble_
    refined = OKBoostRegressor(**common).fit(X, Y).ensemble_
    x = np.sort(X[:, 0])
    exact = x[x <= step].max() / 2 + x[x > step].min() / 2
    assert binned.feature[0] == refined.feature[0] == 0
    assert binned.threshold[0] != exact
    assert refined.threshold[0] == exact
    assert refined.n_samples[1] == int((X[:, 0] <= step).sum())


@pytest.mark.parametrize(
    ("depth", "l2", "subsample", "grouped"),
    [(4, 0.0, False, False), (6, 3.0, True, False), (5, 1.0, False, True)],
)
def test_one_output_compiled_refinement_equals_the_level_loop(
    monkeypatch, depth, l2, subsample, grouped
):
    """One output column: the compiled tree refines its cuts as the level loop does, bit for
    bit, with subsampled rows too, and with levels searched a few nodes at a time (the left
    sums then from the rows)."""
    X, R2 = data(3, n=900, p=5)
    R = np.ascontiguousarray(R2[:, :1] + R2[:, 1:])
    binned = bin_inputs(X, 16, keep_values=True)
    if grouped:  # three nodes per histogram
        monkeypatch.setattr(oblivious, "HISTOGRAM_BYTES", 8 * binned.n_bins_total * 3)
    rows = None
    if subsample:
        rows = np.sort(np.random.default_rng(1).choice(900, 600, replace=False)).astype(np.int32)
    features = np.arange(5, dtype=np.int32)

    def grow(candidates, refine=True):
        row_leaf = np.full(len(X), -1, dtype=np.int32)
        tree = oblivious.build_oblivious_tree(
            binned, R, R, None, params(depth, l2=l2, refine=refine), np.random.default_rng(0),
            candidates, rows=rows, row_leaf=row_leaf,
            histogram_pool=HistogramPool(binned.n_bins_total),
        )  # fmt: skip
        return tree, row_leaf

    compiled, leaf_compiled = grow(features)
    loop, leaf_loop = grow(lambda rng: features)
    for key, value in loop.items():
        np.testing.assert_array_equal(compiled[key], value, err_msg=key)
    np.testing.assert_array_equal(leaf_compiled, leaf_loop)
    unrefined, _ = grow(features, refine=False)
    assert not np.array_equal(unrefined["threshold"], compiled["threshold"])


def test_refinement_needs_the_raw_values():
    X, R = data(0)
    with pytest.raises(ValueError, match="keep_values"):
        build_tree(
            None, R, params(3, refine=True), np.random.default_rng(0), binned=bin_inputs(X, 8)
        )


def test_the_default_fit_refines_and_an_option_turns_it_off():
    """The default estimator's oblivious trees refine their cuts (their thresholds are not
    all bin edges) and ``refine_cuts=False`` gives the binned cuts."""
    rng = np.random.default_rng(0)
    X = rng.random((3000, 4))
    Y = np.c_[X[:, 0] > 0.5003, X[:, 1] ** 2] + 0.1 * rng.standard_normal((3000, 2))
    kwargs = dict(n_estimators=5, random_state=0, max_bins=32)
    refined = OKBoostRegressor(**kwargs).fit(X, Y)
    binned = OKBoostRegressor(refine_cuts=False, **kwargs).fit(X, Y)
    assert refined.tree_type_ == binned.tree_type_ == "oblivious"
    edges = set(bin_inputs(X, 32).edges.tolist())
    cut = refined.ensemble_.feature >= 0
    assert not set(refined.ensemble_.threshold[cut].tolist()) <= edges
    assert set(binned.ensemble_.threshold[binned.ensemble_.feature >= 0].tolist()) <= edges


def test_auto_refines_many_outputs_and_leaves_one_output_column_binned():
    """``refine_cuts="auto"`` (the default): refined cuts for oblivious trees on several
    output columns and for best-first trees, binned cuts for oblivious trees on one output
    column; True and False are taken as given."""
    from okcore.defaults import resolve_refine_cuts

    assert resolve_refine_cuts("auto", oblivious=True, rank=2)
    assert not resolve_refine_cuts("auto", oblivious=True, rank=1)
    assert resolve_refine_cuts("auto", oblivious=False, rank=1)
    assert resolve_refine_cuts(True, oblivious=True, rank=1)
    assert not resolve_refine_cuts(False, oblivious=True, rank=5)
    rng = np.random.default_rng(0)
    X = rng.random((2000, 3))
    y = (X[:, 0] > 0.5003) + 0.1 * rng.standard_normal(2000)
    kwargs = dict(n_estimators=3, random_state=0, max_bins=16)
    auto = OKBoostRegressor(**kwargs).fit(X, y)
    forced = OKBoostRegressor(refine_cuts=True, **kwargs).fit(X, y)
    binned = OKBoostRegressor(refine_cuts=False, **kwargs).fit(X, y)
    assert auto.tree_type_ == "oblivious"
    np.testing.assert_array_equal(auto.ensemble_.threshold, binned.ensemble_.threshold)
    assert not np.array_equal(forced.ensemble_.threshold, binned.ensemble_.threshold)
    with pytest.raises(ValueError, match="refine_cuts"):
        OKBoostRegressor(refine_cuts="yes").fit(X, y)
