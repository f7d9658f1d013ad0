"""okcore's joblib loops on a real Dask cluster: the same models as with threads."""

from __future__ import annotations

import pickle
import sys

import joblib
import numpy as np
import pytest
from okdata import make_regression, rbf_gram

from okcore import OK3ForestRegressor, OKBoostRegressor
from okcore.model_selection import Outputs, cross_validate, grid_search
from okcore.trees.binning import bin_inputs
from okcore.trees.builder import HistogramPool

TREE_FIELDS = ("feature", "threshold", "value", "train_leaf", "train_count")


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    return make_regression(n=120, p=5, seed=11)


def _on_dask(fit):  # type: ignore[no-untyped-def]
    with joblib.parallel_config(backend="dask"):
        return fit()


@pytest.mark.parametrize(
    "params",
    [
        {"max_features": "sqrt"},  # random forest, exact search on bootstrap samples
        {"bootstrap": False, "splitter": "random", "max_bins": 16},  # extra-trees, histograms
    ],
)
def test_a_forest_is_the_same_on_the_cluster_as_in_threads(dask_client, data, params) -> None:
    X, Y = data
    make = lambda **kw: OK3ForestRegressor(n_estimators=6, random_state=5, **params, **kw)  # noqa: E731
    threads = make(n_jobs=2).fit(X, Y)
    progress: list[int] = []
    cluster = _on_dask(lambda: make().fit(X, Y, callback=lambda p: progress.append(p.done)))
    for name in TREE_FIELDS:
        assert np.array_equal(getattr(threads.ensemble_, name), getattr(cluster.ensemble_, name))
    # W^F of many queries: blocks of queries are tasks too
    assert np.array_equal(threads.predict_weights(X), _on_dask(lambda: cluster.predict_weights(X)))
    assert progress[-6:] == [1, 2, 3, 4, 5, 6]  # the callback still hears every tree


def test_grid_search_and_cross_validate_are_the_same_on_the_cluster(dask_client, data) -> None:
    X, Y = data
    base = OKBoostRegressor(max_splits=4, random_state=0)
    grid = {"n_estimators": [4, 8], "learning_rate": [0.1, 0.5]}
    threads = grid_search(base, grid, X, Y, cv=3, random_state=1, n_jobs=2)
    cluster = _on_dask(lambda: grid_search(base, grid, X, Y, cv=3, random_state=1))
    assert cluster.table == threads.table and cluster.best_params == threads.best_params
    best = threads.best_estimator
    assert np.array_equal(best.predict_weights(X), _on_dask(lambda: best.predict_weights(X)))
    gram = rbf_gram(Y, Y, 0.5)
    cv_threads = cross_validate(base, X, gram=gram, cv=3, random_state=2, n_jobs=2)
    cv_cluster = _on_dask(lambda: cross_validate(base, X, gram=gram, cv=3, random_state=2))
    for name, scores in cv_threads.items():
        assert np.array_equal(scores, cv_cluster[name])


def test_large_arguments_are_measured_whole_so_they_are_scattered_once(data) -> None:
    """joblib's dask backend scatters arguments dask.sizeof measures above 1 kB once per
    call; sizeof falls back on sys.getsizeof, so these containers must count their arrays."""
    X, Y = data
    binned = bin_inputs(X, 16)
    assert sys.getsizeof(binned) > binned.codes.nbytes + binned.bin_min.nbytes
    gram = rbf_gram(Y, Y, 0.5)
    assert sys.getsizeof(Outputs(gram=gram)) > gram.nbytes
    pool = HistogramPool(40)  # holds a lock: pickles as a fresh empty pool
    pool.give(pool.take(3))
    copy = pickle.loads(pickle.dumps(pool))
    assert copy.n_bins == 40 and copy.take(3)[0].shape == (40, 3)
