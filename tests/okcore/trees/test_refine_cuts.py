"""Refinement of a binned cut: the best exact cut inside the two bins around the histogram's
chosen edge; the exact search's cut when it lies there; rows routed as the threshold says;
``refine_cuts=False`` keeps the binned search's trees."""

from __future__ import annotations

import numpy as np
import pytest
from okdata import beats_reference
from scipy import sparse

from okcore import OK3ForestRegressor, OK3Regressor, OKBoostRegressor
from okcore.trees.binning import bin_inputs
from okcore.trees.splitter import FEATURE_THRESHOLD


def _step_data(n=600, p=4, step=0.4137, seed=0):
    """Many distinct values per feature (more than the bins) and a sharp step in feature 0."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, p))
    Y = np.c_[X[:, 0] > step, 0.3 * X[:, 1], X[:, 0] > step] + 0.05 * rng.standard_normal((n, 3))
    return X, Y


@pytest.mark.parametrize("step", [0.1234, 0.4137, 0.777])
@pytest.mark.parametrize("max_bins", [4, 16, 64])
@pytest.mark.parametrize("as_csr", [False, True])
def test_a_step_inside_a_bin_gets_the_exact_search_cut(step, max_bins, as_csr):
    X, Y = _step_data(step=step)
    exact = OK3Regressor(max_splits=1).fit(X, Y).ensemble_
    Xf = sparse.csr_matrix(X) if as_csr else X
    binned = OK3Regressor(max_splits=1, max_bins=max_bins, refine_cuts=False).fit(Xf, Y).ensemble_
    refined = OK3Regressor(max_splits=1, max_bins=max_bins).fit(Xf, Y).ensemble_
    assert exact.feature[0] == binned.feature[0] == refined.feature[0] == 0
    if max_bins == 4:  # wide bins: the binned cut misses the step, the refined one finds it
        assert binned.threshold[0] != exact.threshold[0]
    assert refined.threshold[0] == exact.threshold[0]
    np.testing.assert_array_equal(refined.n_samples, exact.n_samples)
    assert refined.gain[0] >= binned.gain[0] * (1 - 1e-12)  # same cut: summation order only


def _gain(R, left):
    """The reduction of N*var of splitting the rows of R into ``left`` and the rest."""
    n, n_left = len(R), int(left.sum())
    S = (R[left] - R.mean(axis=0)).sum(axis=0)
    return float(S @ S) * n / (n_left * (n - n_left))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("min_samples_leaf", [1, 20])
def test_the_refined_cut_is_the_best_cut_inside_the_two_bins_brute_force(seed, min_samples_leaf):
    """Noisy data, no step: the root's refined cut is the best of every midpoint between
    distinct values of the two bins around the binned cut's edge, found by brute force."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.random((400, 3)), 3)  # ties between rows too
    Y = np.c_[np.sin(7 * X[:, 0]), X[:, 1] * X[:, 2]] + 0.5 * rng.standard_normal((400, 2))
    max_bins = 12
    common = dict(max_splits=1, max_bins=max_bins, min_samples_leaf=min_samples_leaf)
    binned = OK3Regressor(refine_cuts=False, **common).fit(X, Y).ensemble_
    refined = OK3Regressor(**common).fit(X, Y).ensemble_
    f = int(binned.feature[0])
    assert refined.feature[0] == f
    b = bin_inputs(X, max_bins)
    codes = b.codes[f]
    x = X[:, f]
    last = int(codes[x <= binned.threshold[0]].max())  # the bins around the binned edge
    nxt = int(codes[x > binned.threshold[0]].min())
    inside = np.unique(x[(codes == last) | (codes == nxt)])
    best_gain, best_threshold = -1.0, None
    for x0, x1 in zip(inside[:-1], inside[1:], strict=True):
        if x1 <= x0 + FEATURE_THRESHOLD:
            continue
        threshold = x0 / 2 + x1 / 2
        left = x <= threshold
        if min(left.sum(), (~left).sum()) < min_samples_leaf:
            continue
        gain = _gain(Y, left)
        if best_threshold is None or beats_reference(gain, best_gain):
            best_gain, best_threshold = gain, threshold
    assert refined.threshold[0] == best_threshold
    assert refined.gain[0] == pytest.approx(best_gain, rel=1e-9)
    assert refined.gain[0] >= binned.gain[0] * (1 - 1e-12)


@pytest.mark.parametrize("leaf_order", ["variance", "gain"])
@pytest.mark.parametrize("as_csr", [False, True])
def test_rows_follow_the_refined_thresholds(leaf_order, as_csr):
    """The growth partitions rows on raw values: every training row's recorded leaf is the
    leaf its inputs reach through the stored thresholds (sketch and subsampling included)."""
    X, Y = _step_data(n=800, p=6, seed=3)
    if as_csr:
        X[X < 0.5] = 0.0
        X = sparse.csr_matrix(X)
    for subsample in (1.0, 0.7):
        model = OKBoostRegressor(
            n_estimators=15, max_splits=8, max_bins=16, sketch_dim=2, leaf_order=leaf_order,
            subsample=subsample, random_state=0,
        ).fit(X, Y)  # fmt: skip
        e = model.ensemble_
        np.testing.assert_array_equal(e.apply(X), e.train_leaf)


def test_refinement_changes_nothing_when_bins_hold_one_value_each():
    rng = np.random.default_rng(5)
    X = rng.integers(0, 40, (500, 5)).astype(float)
    Y = np.c_[np.sin(X[:, 0] / 6), X[:, 1] * X[:, 2] / 900, X[:, 3] > 20]
    for cls, extra in ((OKBoostRegressor, dict(n_estimators=10)), (OK3Regressor, {})):
        on = cls(max_splits=8, max_bins=64, **extra).fit(X, Y).ensemble_
        off = cls(max_splits=8, max_bins=64, refine_cuts=False, **extra).fit(X, Y).ensemble_
        for field in ("feature", "threshold", "left", "right", "n_samples"):
            np.testing.assert_array_equal(getattr(on, field), getattr(off, field))


def test_refine_off_keeps_the_binned_search_trees():
    """Golden tree of the binned search before refinement existed (same code path: off)."""
    rng = np.random.default_rng(7)
    X = rng.integers(0, 400, (300, 3)) / 400.0
    Y = np.c_[np.sin(6 * X[:, 0]) + (X[:, 1] > 0.3), X[:, 2] * X[:, 0]]
    Y = Y + 0.05 * rng.standard_normal((300, 2))
    off = OK3Regressor(max_splits=6, max_bins=8, refine_cuts=False).fit(X, Y).ensemble_
    np.testing.assert_array_equal(off.feature, [0, 1, 1, -1, 0, 2, -1, 0, -1, -1, -1, -1, -1])
    np.testing.assert_array_equal(
        off.n_samples, [300, 150, 150, 34, 116, 61, 89, 89, 27, 33, 56, 30, 31]
    )
    internal = off.feature >= 0
    np.testing.assert_allclose(
        off.threshold[internal], [0.5875, 0.23875, 0.35875, 0.44875, 0.3825, 0.1475], rtol=1e-14
    )
    # refined, the cut of feature 1 lands on its step (values are multiples of 1/400)
    refined = OK3Regressor(max_splits=6, max_bins=8).fit(X, Y).ensemble_
    assert 0.30125 in refined.threshold[refined.feature == 1]


def test_random_splitter_and_forests_accept_the_option():
    X, Y = _step_data(n=300)
    et = OK3ForestRegressor(
        n_estimators=3, splitter="random", max_bins=16, max_splits=5, random_state=0
    ).fit(X, Y)
    et_off = OK3ForestRegressor(
        n_estimators=3, splitter="random", max_bins=16, max_splits=5, random_state=0,
        refine_cuts=False,
    ).fit(X, Y)  # fmt: skip
    np.testing.assert_array_equal(et.ensemble_.threshold, et_off.ensemble_.threshold)
    rf = OK3ForestRegressor(n_estimators=3, max_bins=16, max_splits=5, random_state=0).fit(X, Y)
    e = rf.ensemble_
    for m in range(e.n_trees):  # bootstrap rows reach the leaves the growth put them in
        nodes = slice(e.node_offset[m], e.node_offset[m + 1])
        leaf_sizes = e.n_samples[nodes][e.leaf[nodes] >= 0]
        reached = np.bincount(e.train_leaf[m], weights=e.train_count[m], minlength=len(leaf_sizes))
        np.testing.assert_array_equal(reached, leaf_sizes)


@pytest.mark.parametrize("seed", range(3))
def test_with_an_l2_penalty_the_refined_cut_is_the_best_penalised_cut_inside_the_bins(seed):
    """OKBoost's first stump with lambda > 0: the refined cut maximises the penalised
    reduction ||S_L||^2 (1/(n_L + lambda) + 1/(n_R + lambda)) of the residuals Y - mean
    (S_R = -S_L at the root) over the cuts inside the two bins around the binned edge."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.random((300, 3)), 3)
    Y = np.c_[np.sin(7 * X[:, 0]), X[:, 1] * X[:, 2]] + 0.5 * rng.standard_normal((300, 2))
    lam, max_bins = 25.0, 12
    common = dict(
        n_estimators=1, learning_rate=1.0, max_splits=1, max_bins=max_bins, sketch_dim=None,
        l2_regularization=lam,
    )  # fmt: skip
    binned = OKBoostRegressor(refine_cuts=False, **common).fit(X, Y).ensemble_
    refined = OKBoostRegressor(**common).fit(X, Y).ensemble_
    f = int(binned.feature[0])
    assert refined.feature[0] == f
    codes, x = bin_inputs(X, max_bins).codes[f], X[:, f]
    last = int(codes[x <= binned.threshold[0]].max())
    nxt = int(codes[x > binned.threshold[0]].min())
    inside = np.unique(x[(codes == last) | (codes == nxt)])
    R = Y - Y.mean(axis=0)
    best_gain, best_threshold = -1.0, None
    for x0, x1 in zip(inside[:-1], inside[1:], strict=True):
        threshold = x0 / 2 + x1 / 2
        left = x <= threshold
        S = R[left].sum(axis=0)
        gain = float(S @ S) * (1 / (left.sum() + lam) + 1 / ((~left).sum() + lam))
        if best_threshold is None or beats_reference(gain, best_gain):
            best_gain, best_threshold = gain, threshold
    assert refined.threshold[0] == best_threshold
    assert refined.gain[0] == pytest.approx(best_gain, rel=1e-9)
