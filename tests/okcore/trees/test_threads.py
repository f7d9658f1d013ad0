"""Threads in the tree growth: 1, 2 and 3 threads give bitwise-identical models (each
parallel kernel writes disjoint outputs computed in the same order for any chunking)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from okcore import OK3Regressor, OKBoostRegressor, threads
from okcore.trees import builder
from okcore.trees.splitter import column_statistics, node_statistics, project, project_rows

FIELDS = ("feature", "threshold", "left", "right", "n_samples", "impurity", "gain", "value")


@pytest.fixture
def every_node_parallel(monkeypatch):
    """Split even the smallest nodes between threads, so small data exercises every chunking."""
    monkeypatch.setattr(builder, "PARALLEL_SEARCH_MIN_WORK", 0)
    monkeypatch.setattr(threads, "PARALLEL_ROWS_MIN_WORK", 0)


def _data(n=700, p=9, r=13, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, p))
    B = np.c_[np.sin(5 * X[:, 0]), X[:, 1] * X[:, 2], X[:, 3] > 0.5, X[:, 4] ** 2]
    Y = B @ rng.standard_normal((4, r)) + 0.2 * rng.standard_normal((n, r))
    return X, Y


def _assert_same_models(a, b):
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(a.ensemble_, field), getattr(b.ensemble_, field))
    np.testing.assert_array_equal(a.ensemble_.train_leaf, b.ensemble_.train_leaf)


@pytest.mark.parametrize(
    "search",
    [
        dict(max_bins=255, sketch_dim=4),  # the fast mode
        dict(max_bins=32, sketch_dim=None, leaf_order="gain", refine_cuts=False),
        dict(max_bins=64, sketch_dim=3, subsample=0.6),
        dict(max_bins=None, sketch_dim=None),  # exact search: features split between threads
    ],
)
def test_boosting_models_do_not_depend_on_the_number_of_threads(search, every_node_parallel):
    X, Y = _data()
    common = dict(n_estimators=12, max_splits=7, random_state=0, **search)
    one = OKBoostRegressor(n_jobs=1, **common).fit(X, Y)
    for n_jobs in (2, 3):
        _assert_same_models(one, OKBoostRegressor(n_jobs=n_jobs, **common).fit(X, Y))


def test_csr_inputs_and_single_trees_do_not_depend_on_the_number_of_threads(
    every_node_parallel,
):
    X, Y = _data(seed=1)
    X[X < 0.4] = 0.0
    Xs = sparse.csr_matrix(X)
    common = dict(n_estimators=8, max_splits=6, max_bins=40, sketch_dim=5, random_state=2)
    _assert_same_models(
        OKBoostRegressor(n_jobs=1, **common).fit(Xs, Y),
        OKBoostRegressor(n_jobs=2, **common).fit(Xs, Y),
    )
    tree = dict(max_splits=20, max_bins=50)
    _assert_same_models(
        OK3Regressor(n_jobs=1, **tree).fit(X, Y), OK3Regressor(n_jobs=2, **tree).fit(X, Y)
    )


def test_chunked_kernels_equal_whole_ones():
    rng = np.random.default_rng(3)
    R = rng.standard_normal((300, 21))
    samples = rng.permutation(300).astype(np.int32)
    mu, spread = np.empty(21), np.empty(21)
    column_statistics(samples, 10, 250, R, 0, 21, mu, spread)
    for cuts in ([0, 8, 21], [0, 5, 16, 21], [0, 1, 2, 21]):
        mu_c, spread_c = np.empty(21), np.empty(21)
        for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
            column_statistics(samples, 10, 250, R, lo, hi, mu_c, spread_c)
        np.testing.assert_array_equal(mu_c, mu)
        np.testing.assert_array_equal(spread_c, spread)
    ref_mu, ref_total = node_statistics(samples, 10, 250, R)  # the exact search's kernel
    np.testing.assert_allclose(mu, ref_mu, rtol=1e-12, atol=1e-14)
    assert spread.sum() == pytest.approx(ref_total, rel=1e-12)
    G = rng.standard_normal((21, 5))
    whole = project(R, G)
    np.testing.assert_allclose(whole, R @ G, rtol=1e-12, atol=1e-12)
    parts = np.empty_like(whole)
    GT = np.ascontiguousarray(G.T)
    for lo, hi in ((0, 7), (7, 150), (150, 300)):
        project_rows(R, GT, lo, hi, parts)
    np.testing.assert_array_equal(parts, whole)


def test_the_squared_step_in_row_chunks_equals_one_pass(every_node_parallel):
    """F, residuals and the loss (row losses summed in row order) for any row chunking."""
    from concurrent.futures import ThreadPoolExecutor

    from okcore.losses import SquaredFeatureLoss

    rng = np.random.default_rng(4)
    phi = rng.standard_normal((600, 7))
    diag = (phi**2).sum(axis=1)
    value = rng.standard_normal((5, 7))
    leaf = rng.integers(0, 5, 600).astype(np.int32)
    results = []
    with ThreadPoolExecutor(3) as executor:
        for runner in (threads.SERIAL, threads.ChunkRunner(executor, 2),
                       threads.ChunkRunner(executor, 3)):  # fmt: skip
            F, residual = np.full((600, 7), 0.1), np.empty((600, 7))
            loss = SquaredFeatureLoss().step(phi, diag, F, value, leaf, 0.3, residual, runner)
            results.append((F, residual, loss))
    for F, residual, loss in results[1:]:
        np.testing.assert_array_equal(F, results[0][0])
        np.testing.assert_array_equal(residual, results[0][1])
        assert loss == results[0][2]
    F0 = np.full((600, 7), 0.1) + 0.3 * value[leaf]
    np.testing.assert_allclose(results[0][0], F0, rtol=0, atol=0)
    assert results[0][2] == pytest.approx(np.mean(((phi - F0) ** 2).sum(axis=1)), rel=1e-12)


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_overlapped_runs_first_once_and_every_block_once(n_threads, every_node_parallel):
    from concurrent.futures import ThreadPoolExecutor

    seen = np.zeros(100, dtype=int)

    def run(lo, hi):
        seen[lo:hi] += 1

    with ThreadPoolExecutor(n_threads) as executor:
        runner = threads.ChunkRunner(executor, n_threads)
        assert runner.overlapped(10**9, lambda: "stats", 100, run, blocks_per_thread=3) == "stats"
    np.testing.assert_array_equal(seen, 1)


@pytest.mark.parametrize("refine_cuts", [True, False])
def test_gain_order_with_drawn_features_and_refined_cuts_does_not_depend_on_the_threads(
    refine_cuts,
):
    """In the gain order, with max_features drawing each node's candidates and cuts refined
    or not, at the default thresholds: two threads grow the tree of one."""
    from concurrent.futures import ThreadPoolExecutor
    from dataclasses import replace

    from okcore.trees.binning import bin_inputs

    X, Y = _data(n=3000, p=30, r=8, seed=5)
    binned = bin_inputs(X, 255, keep_values=refine_cuts)
    params = builder.TreeParams(
        splitter="best", max_splits=12, max_features=20, leaf_order="gain",
        min_samples_leaf=1, max_depth=None, refine_cuts=refine_cuts,
    )  # fmt: skip
    one = builder.build_tree(None, Y, params, np.random.default_rng(0), binned=binned)
    with ThreadPoolExecutor(2) as executor:
        two = builder.build_tree(
            None, Y, replace(params, n_threads=2), np.random.default_rng(0),
            executor=executor, binned=binned,
        )  # fmt: skip
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(two, field), getattr(one, field), err_msg=field)


def test_default_oblivious_models_over_many_row_blocks_do_not_depend_on_the_threads():
    """The default trees (oblivious) on more rows than one statistics block, at the default
    thresholds: 1, 2 and 3 threads give the same model."""
    from okcore.trees.oblivious import STATISTICS_BLOCK

    X, Y = _data(n=3 * STATISTICS_BLOCK + 123, p=6, r=24, seed=6)  # N r > 250,000: threads
    common = dict(n_estimators=6, random_state=0)
    one = OKBoostRegressor(n_jobs=1, **common).fit(X, Y)
    assert one.tree_type_ == "oblivious"
    for n_jobs in (2, 3):
        _assert_same_models(one, OKBoostRegressor(n_jobs=n_jobs, **common).fit(X, Y))
