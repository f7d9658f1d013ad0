"""OK3ForestRegressor: bagging, random forests and extra-trees; W^F from bootstrap counts."""

from __future__ import annotations

import numpy as np
import pytest
from okdata import make_regression, rbf_gram, ring_edges, route, tree_nodes

from okcore import FitProgress, OK3ForestRegressor, OK3Regressor, metrics

VARIANTS = {
    "bagging": {"bootstrap": True, "splitter": "best"},
    "random forest": {"bootstrap": True, "max_features": "sqrt"},
    "extra-trees": {"bootstrap": False, "splitter": "random"},
}


@pytest.fixture(scope="module")
def data():
    X, Y = make_regression(n=40, p=4, seed=7)
    Xt, Yt = make_regression(n=12, p=4, seed=8)
    return X, Y, Xt, Yt


def hand_weights(est, Xq: np.ndarray) -> np.ndarray:
    """(1/M) sum_m count_m(i) [leaf_m(i) = leaf_m(x)] / (fitting rows in that leaf)."""
    e = est.ensemble_
    M, N = e.train_leaf.shape
    counts = e.fit_counts()
    W = np.zeros((len(Xq), N))
    for q, x in enumerate(Xq):
        for m in range(M):
            same = e.train_leaf[m] == route(e, m, x)
            W[q] += counts[m] * same / counts[m][same].sum() / M
    return W


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variants_fit_and_beat_the_mean(variant, data):
    X, Y, Xt, Yt = data
    est = OK3ForestRegressor(n_estimators=10, random_state=0, **VARIANTS[variant]).fit(X, Y)
    assert est.n_estimators_ == 10 and est.ensemble_.n_trees == 10
    assert est.stopped_by_callback_ is False and est.fit_time_ > 0
    assert est.predict(Xt).shape == Yt.shape and np.all(np.isfinite(est.predict(Xt)))
    mean_loss = np.mean(np.sum((Yt - Y.mean(axis=0)) ** 2, axis=1))
    assert metrics.err_phi(est, Xt, Yt) < 0.8 * mean_loss
    counts = est.ensemble_.train_count
    if VARIANTS[variant]["bootstrap"]:
        assert np.all(counts.sum(axis=1) == len(X)) and np.any(counts == 0) and np.any(counts > 1)
    else:  # every row once in every tree: implicit ones, no (M, N) array
        assert counts is None and np.all(est.ensemble_.fit_counts() == 1)


def test_extra_trees_fully_grown_interpolate_the_training_outputs(data):
    X, Y, _, _ = data
    est = OK3ForestRegressor(n_estimators=5, bootstrap=False, splitter="random", random_state=0)
    np.testing.assert_allclose(est.fit(X, Y).predict(X), Y, atol=1e-12)
    np.testing.assert_allclose(est.predict_weights(X), np.eye(len(X)), atol=1e-12)


def test_random_split_candidates_differ_between_trees(data):
    X, Y, _, _ = data
    e = OK3ForestRegressor(n_estimators=2, bootstrap=False, splitter="random", random_state=0)
    e.fit(X, Y)
    assert tree_nodes(e.ensemble_, 0)["threshold"][0] != tree_nodes(e.ensemble_, 1)["threshold"][0]


def test_without_bootstrap_or_randomness_every_tree_is_the_single_tree(data):
    X, Y, Xt, _ = data
    forest = OK3ForestRegressor(n_estimators=3, bootstrap=False, max_splits=7).fit(X, Y)
    tree = OK3Regressor(max_splits=7).fit(X, Y)
    np.testing.assert_allclose(forest.predict_weights(Xt), tree.predict_weights(Xt), atol=1e-15)
    np.testing.assert_allclose(forest.predict(Xt), tree.predict(Xt), atol=1e-13)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_weights_equal_the_average_of_leaf_weights_by_hand(variant, data):
    X, Y, Xt, _ = data
    est = OK3ForestRegressor(n_estimators=4, max_splits=6, random_state=3, **VARIANTS[variant])
    est.fit(X, Y)
    e = est.ensemble_
    # the stored training leaves are the routes of the training inputs
    for m in range(e.n_trees):
        assert [route(e, m, x) for x in X] == e.train_leaf[m].tolist()
        nodes = tree_nodes(e, m)
        leaf_rows = np.bincount(e.train_leaf[m], weights=e.fit_counts()[m])
        np.testing.assert_array_equal(
            nodes["n_samples"][nodes["leaf"] >= 0][np.argsort(nodes["leaf"][nodes["leaf"] >= 0])],
            leaf_rows,
        )
    Xq = np.r_[Xt, X[:5]]
    W = est.predict_weights(Xq)
    np.testing.assert_allclose(W, hand_weights(est, Xq), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(W >= 0)
    if VARIANTS[variant]["bootstrap"]:  # a row out of every tree's bootstrap sample weighs 0
        never = np.flatnonzero(e.train_count.sum(axis=0) == 0)
        np.testing.assert_array_equal(W[:, never], 0.0)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_decision_is_the_weighted_sum_of_training_features(kernel, data):
    X, Y, Xt, _ = data
    est = OK3ForestRegressor(n_estimators=5, max_splits=5, random_state=1)
    W = None
    if kernel == "linear":
        est.fit(X, Y)
        W = est.predict_weights(Xt)
        np.testing.assert_allclose(est.predict(Xt), W @ Y, atol=1e-12)
    else:
        est.fit(X, Y, kernel={"type": "rbf", "gamma": 2.0})
        W = est.predict_weights(Xt)
        K = rbf_gram(Y, Y, 2.0)
        np.testing.assert_allclose(est.predict_kernel_train(Xt), W @ K, atol=1e-10)
        np.testing.assert_allclose(est.predict_kernel(Xt), W @ K @ W.T, atol=1e-10)


def test_n_jobs_does_not_change_the_result(data):
    X, Y, Xt, _ = data
    one = OK3ForestRegressor(n_estimators=6, max_features="sqrt", n_jobs=1, random_state=5)
    two = OK3ForestRegressor(n_estimators=6, max_features="sqrt", n_jobs=2, random_state=5)
    one.fit(X, Y)
    two.fit(X, Y)
    for field in ("feature", "threshold", "left", "right", "value", "train_leaf", "train_count"):
        np.testing.assert_array_equal(getattr(one.ensemble_, field), getattr(two.ensemble_, field))
    np.testing.assert_array_equal(one.predict_weights(Xt), two.predict_weights(Xt))
    np.testing.assert_array_equal(one.predict(Xt), two.predict(Xt))
    all_cores = OK3ForestRegressor(n_estimators=6, max_features="sqrt", n_jobs=-1, random_state=5)
    np.testing.assert_array_equal(all_cores.fit(X, Y).predict(Xt), one.predict(Xt))


def test_random_state(data):
    X, Y, Xt, _ = data

    def weights(seed):
        return OK3ForestRegressor(n_estimators=3, random_state=seed).fit(X, Y).predict_weights(Xt)

    np.testing.assert_array_equal(weights(11), weights(11))
    assert not np.array_equal(weights(11), weights(12))


def test_callback_stops_after_k_trees(data):
    X, Y, Xt, _ = data
    seen: list[FitProgress] = []

    def callback(progress: FitProgress) -> bool:
        seen.append(progress)
        return progress.done == 3

    est = OK3ForestRegressor(n_estimators=8, random_state=0).fit(X, Y, callback=callback)
    assert [(p.phase, p.done) for p in seen] == [("output_space", 0)] + [
        ("trees", k) for k in (0, 1, 2, 3)
    ]
    assert all(p.total == 8 and p.train_loss is None and p.val_loss is None for p in seen)
    elapsed = [p.elapsed for p in seen]
    assert elapsed == sorted(elapsed) and elapsed[0] >= 0
    assert est.n_estimators_ == 3 and est.ensemble_.n_trees == 3 and est.stopped_by_callback_
    assert est.ensemble_.train_leaf.shape == (3, len(X))
    # the three kept trees are the first three of the full forest
    full = OK3ForestRegressor(n_estimators=8, random_state=0).fit(X, Y)
    n_nodes = est.ensemble_.node_offset[-1]
    np.testing.assert_array_equal(est.ensemble_.threshold, full.ensemble_.threshold[:n_nodes])
    np.testing.assert_allclose(est.predict_weights(Xt).sum(axis=1), 1.0, rtol=1e-12)


def test_callback_returning_none_never_stops(data):
    X, Y, _, _ = data
    calls = []
    est = OK3ForestRegressor(n_estimators=4, random_state=0)
    est.fit(X, Y, callback=calls.append)
    assert [(p.phase, p.done) for p in calls] == [("output_space", 0)] + [
        ("trees", k) for k in range(5)
    ]
    assert est.n_estimators_ == 4 and est.stopped_by_callback_ is False


def test_forest_on_a_graph_predicts_vertices(data):
    X = data[0]
    est = OK3ForestRegressor(n_estimators=4, max_splits=5, random_state=0)
    est.fit(X, kernel={"type": "diffusion", "beta": 1.0, "edges": ring_edges(len(X), chords=15)})
    predicted = est.predict(X[:6])
    assert predicted.shape == (6,) and predicted.dtype == np.int64
    np.testing.assert_array_equal(predicted, est.predict_index(X[:6])[0][:, 0])
    assert np.all((predicted >= 0) & (predicted < len(X)))
