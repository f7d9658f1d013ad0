"""OK3Regressor: growth limits, leaf order, predictions and pre-images."""

from __future__ import annotations

import numpy as np
import pytest
from okdata import make_regression, node_depths, rbf_gram, ring_edges, tree_nodes

from okcore import DataError, OK3Regressor, metrics

GAMMA = 1.0
CONSTANT = 1e-12  # a node with N*var below this fraction of the root's is a leaf


@pytest.fixture(scope="module")
def data():
    X, Y = make_regression(n=40, p=4, seed=20, noise=0.2)
    Xt, Yt = make_regression(n=10, p=4, seed=21, noise=0.2)
    return X, Y, Xt, Yt


def nodes(est) -> dict[str, np.ndarray]:
    assert est.ensemble_.n_trees == 1
    return tree_nodes(est.ensemble_, 0)


def n_leaves(est) -> int:
    return int((nodes(est)["left"] < 0).sum())


# ---------------------------------------------------------------------- growth
@pytest.mark.parametrize("kernel", [None, {"type": "rbf", "gamma": GAMMA}])
def test_fully_grown_tree_fits_distinct_points_exactly(kernel, data):
    X, Y, _, _ = data
    est = OK3Regressor().fit(X, Y, kernel=kernel)
    assert n_leaves(est) == len(X)
    np.testing.assert_array_equal(nodes(est)["n_samples"][nodes(est)["left"] < 0], 1)
    np.testing.assert_allclose(est.predict_weights(X), np.eye(len(X)), atol=1e-15)
    np.testing.assert_array_equal(est.predict_index(X)[0][:, 0], np.arange(len(X)))
    np.testing.assert_allclose(est.predict(X), Y, atol=1e-12)
    scale = np.mean(est.output_space_.diag)
    assert abs(metrics.err_phi(est, X, Y)) < 1e-12 * scale
    assert abs(metrics.err_y(est, X, Y)) < 1e-12 * scale


@pytest.mark.parametrize("min_samples_leaf", [2, 5, 7])
def test_min_samples_leaf(min_samples_leaf, data):
    X, Y, _, _ = data
    est = OK3Regressor(min_samples_leaf=min_samples_leaf).fit(X, Y)
    t = nodes(est)
    leaf_sizes = t["n_samples"][t["left"] < 0]
    assert leaf_sizes.min() >= min_samples_leaf
    assert leaf_sizes.sum() == len(X)
    # fully grown otherwise: a leaf of 2 * min_samples_leaf rows or more would have been split
    assert leaf_sizes.max() < 2 * min_samples_leaf or np.any(
        t["impurity"][t["left"] < 0] <= CONSTANT * t["impurity"][0]
    )


@pytest.mark.parametrize("max_depth", [1, 2, 4])
def test_max_depth(max_depth, data):
    X, Y, _, _ = data
    est = OK3Regressor(max_depth=max_depth).fit(X, Y)
    depth = node_depths(nodes(est)["left"], nodes(est)["right"])
    assert depth.max() == max_depth  # reached: 40 distinct points need depth >= 6
    if max_depth <= 2:  # every node above the limit still holds several rows: a full binary tree
        assert n_leaves(est) == 2**max_depth


@pytest.mark.parametrize("leaf_order", ["variance", "gain"])
@pytest.mark.parametrize("max_splits", [1, 2, 3, 7, 15])
def test_max_splits_gives_one_more_leaf(max_splits, leaf_order, data):
    X, Y, _, _ = data
    est = OK3Regressor(max_splits=max_splits, leaf_order=leaf_order).fit(X, Y)
    t = nodes(est)
    assert n_leaves(est) == max_splits + 1 and len(t["left"]) == 2 * max_splits + 1
    assert np.all(t["gain"][t["left"] >= 0] > 0) and np.all(t["gain"][t["left"] < 0] == 0)


def test_max_splits_beyond_a_full_tree(data):
    X, Y, _, _ = data
    assert n_leaves(OK3Regressor(max_splits=1000).fit(X[:9], Y[:9])) == 9


def test_constant_outputs_give_a_single_leaf(data):
    X, _, Xt, _ = data
    Y = np.tile([1.0, -2.0, 3.0], (len(X), 1))
    est = OK3Regressor().fit(X, Y)
    assert len(nodes(est)["left"]) == 1 and n_leaves(est) == 1
    np.testing.assert_allclose(est.predict(Xt), Y[: len(Xt)], rtol=1e-14)
    np.testing.assert_allclose(est.predict_weights(Xt), 1.0 / len(X), rtol=1e-14)
    np.testing.assert_array_equal(est.feature_importances_, np.zeros(4))


def test_identical_inputs_give_a_single_leaf(data):
    _, Y, _, _ = data
    est = OK3Regressor().fit(np.ones((len(Y), 3)), Y)
    assert n_leaves(est) == 1
    np.testing.assert_allclose(est.predict(np.zeros((2, 3))), np.tile(Y.mean(axis=0), (2, 1)))


def split_order(t: dict[str, np.ndarray]) -> list[int]:
    """Internal nodes in the order they were split (children are numbered at creation)."""
    internal = np.flatnonzero(t["left"] >= 0)
    return [int(n) for n in internal[np.argsort(t["left"][internal])]]


@pytest.mark.parametrize("leaf_order", ["variance", "gain"])
def test_leaf_order_picks_the_leaf_of_largest_key(leaf_order, data):
    """ "variance": the split leaf had the largest N*var among the splittable leaves of the time;
    "gain": its split reduced N*var at least as much as that of any leaf split later."""
    X, Y, _, _ = data
    t = nodes(OK3Regressor(max_splits=12, leaf_order=leaf_order).fit(X, Y))
    order = split_order(t)
    step_of = {node: step for step, node in enumerate(order)}
    for step, node in enumerate(order):
        created = t["left"][node]  # nodes with smaller ids existed when `node` was split
        waiting = [  # leaves then, other than `node`, that could be split
            other
            for other in range(created)
            if other != node
            and step_of.get(other, np.inf) > step
            and t["n_samples"][other] >= 2
            and t["impurity"][other] > CONSTANT * t["impurity"][0]
        ]
        assert step == 0 or waiting
        if leaf_order == "variance":
            assert all(t["impurity"][node] >= t["impurity"][o] for o in waiting)
        else:
            later = [o for o in waiting if o in step_of]
            assert all(t["gain"][node] >= t["gain"][o] for o in later)


def test_leaf_orders_differ_but_agree_on_the_first_split(data):
    X, Y, _, _ = data
    by_var = OK3Regressor(max_splits=1, leaf_order="variance").fit(X, Y)
    by_gain = OK3Regressor(max_splits=1, leaf_order="gain").fit(X, Y)
    for field in ("feature", "threshold", "left", "right", "n_samples"):
        np.testing.assert_array_equal(nodes(by_var)[field], nodes(by_gain)[field])
    trees = {
        order: OK3Regressor(max_splits=8, leaf_order=order).fit(X, Y)
        for order in ("variance", "gain")
    }
    t_var, t_gain = nodes(trees["variance"]), nodes(trees["gain"])
    assert not (
        np.array_equal(t_var["feature"], t_gain["feature"])
        and np.array_equal(t_var["threshold"], t_gain["threshold"])
    ), "choose data on which the two orders grow different trees"


def test_node_statistics_are_consistent(data):
    X, Y, _, _ = data
    t = nodes(OK3Regressor(max_splits=10).fit(X, Y))
    internal = np.flatnonzero(t["left"] >= 0)
    for node in internal:
        left, right = t["left"][node], t["right"][node]
        assert t["n_samples"][node] == t["n_samples"][left] + t["n_samples"][right]
        expected = t["impurity"][node] - t["impurity"][left] - t["impurity"][right]
        assert t["gain"][node] == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert t["n_samples"][0] == len(X)
    root = np.sum((Y - Y.mean(axis=0)) ** 2)  # N*var of the root (eq. 11, linear kernel)
    assert t["impurity"][0] == pytest.approx(root, rel=1e-12)


# ---------------------------------------------------------------------- predictions
def test_linear_kernel_predicts_the_regression_value(data):
    X, Y, Xt, _ = data
    est = OK3Regressor(max_splits=6).fit(X, Y)
    W = est.predict_weights(Xt)
    np.testing.assert_allclose(est.predict(Xt), W @ Y, atol=1e-13)
    # a leaf mean: every nonzero weight of a row is 1 / (rows in that leaf)
    for row in W:
        nonzero = row[row > 0]
        np.testing.assert_allclose(nonzero, 1.0 / len(nonzero), rtol=1e-14)


def test_one_dimensional_outputs_give_one_dimensional_predictions(data):
    X, Y, Xt, _ = data
    est = OK3Regressor(max_splits=5).fit(X, Y[:, 1])
    assert est.predict(Xt).shape == (len(Xt),)
    np.testing.assert_allclose(est.predict(Xt), est.predict_weights(Xt) @ Y[:, 1], atol=1e-13)
    assert est.predict_index(Xt)[0].shape == (len(Xt), 1)
    two_d = OK3Regressor(max_splits=5).fit(X, Y[:, 1:2])
    assert two_d.predict(Xt).shape == (len(Xt), 1)


def test_rbf_with_outputs_predicts_training_output_rows(data):
    X, Y, Xt, _ = data
    est = OK3Regressor(max_splits=6).fit(X, Y, kernel={"type": "rbf", "gamma": GAMMA})
    predicted = est.predict(Xt)
    index = est.predict_index(Xt)[0][:, 0]
    np.testing.assert_array_equal(predicted, Y[index])
    # the pre-image minimizes k(y_j, y_j) - 2 (w K)_j over the training outputs (eq. 8)
    K = rbf_gram(Y, Y, GAMMA)
    objective = np.diag(K)[None, :] - 2.0 * est.predict_weights(Xt) @ K
    np.testing.assert_array_equal(index, np.argmin(objective, axis=1))


@pytest.mark.parametrize("graph", [False, True])
def test_gram_or_graph_outputs_predict_indices(graph, data):
    X, Y, Xt, _ = data
    est = OK3Regressor(max_splits=6)
    if graph:
        est.fit(X, kernel={"type": "diffusion", "edges": ring_edges(len(X), chords=20)})
    else:
        est.fit(X, gram=rbf_gram(Y, Y, GAMMA))
    predicted = est.predict(Xt)
    assert predicted.shape == (len(Xt),) and predicted.dtype == np.int64
    np.testing.assert_array_equal(predicted, est.predict_index(Xt)[0][:, 0])


def test_candidates_as_outputs_or_as_gram_agree(data):
    X, Y, Xt, _ = data
    est = OK3Regressor(max_splits=6).fit(X, Y, kernel={"type": "rbf", "gamma": GAMMA})
    candidates = np.random.default_rng(3).normal(size=(12, 3)) + Y.mean(axis=0)
    by_outputs = est.predict_index(Xt, candidates, top_k=4)
    by_gram = est.predict_index(
        Xt,
        top_k=4,
        candidate_gram=rbf_gram(candidates, Y, GAMMA),
        candidate_diag=np.ones(len(candidates)),
    )
    np.testing.assert_array_equal(by_outputs[0], by_gram[0])
    np.testing.assert_allclose(by_outputs[1], by_gram[1], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kernel", [None, {"type": "rbf", "gamma": GAMMA}])
def test_top_k_are_the_closest_candidates_in_ascending_order(kernel, data):
    X, Y, Xt, _ = data
    est = OK3Regressor(max_splits=6).fit(X, Y, kernel=kernel)
    candidates = np.random.default_rng(4).normal(size=(15, 3)) + Y.mean(axis=0)
    indices, scores = est.predict_index(Xt, candidates, top_k=5)
    assert indices.shape == scores.shape == (len(Xt), 5)
    assert indices.dtype == np.int64 and scores.dtype == np.float64
    assert np.all(np.diff(scores, axis=1) >= 0)
    # squared feature-space distances computed from W^F and the kernel alone
    W = est.predict_weights(Xt)
    if kernel is None:
        K, C, diag = Y @ Y.T, Y @ candidates.T, np.sum(candidates**2, axis=1)
    else:
        K, C, diag = rbf_gram(Y, Y, GAMMA), rbf_gram(Y, candidates, GAMMA), 1.0
    D = diag - 2.0 * W @ C + np.einsum("qi,ij,qj->q", W, K, W)[:, None]
    np.testing.assert_array_equal(indices, np.argsort(D, axis=1, kind="stable")[:, :5])
    np.testing.assert_allclose(scores, np.take_along_axis(D, indices, 1), rtol=1e-9, atol=1e-12)


def test_top_k_larger_than_the_candidates(data):
    X, Y, Xt, _ = data
    est = OK3Regressor(max_splits=4).fit(X, Y)
    indices, scores = est.predict_index(Xt, Y[:3], top_k=10)
    assert indices.shape == (len(Xt), 3)
    np.testing.assert_array_equal(np.sort(indices, axis=1), np.tile([0, 1, 2], (len(Xt), 1)))
    assert np.all(np.diff(scores, axis=1) >= 0)


def test_ties_keep_the_lower_index(data):
    X, Y, Xt, _ = data
    est = OK3Regressor(max_splits=4).fit(X, Y)
    candidates = np.r_[Y[:3], Y[:3]]  # every candidate twice
    indices, scores = est.predict_index(Xt, candidates, top_k=6)
    for row, row_scores in zip(indices, scores, strict=True):
        for a, b in zip(row[::2], row[1::2], strict=True):
            assert (a, b) == (a, a + 3)
        np.testing.assert_allclose(row_scores[::2], row_scores[1::2], rtol=1e-12)


# ---------------------------------------------------------------------- splitters, threads
def test_random_splitter_tree(data):
    X, Y, Xt, Yt = data
    est = OK3Regressor(splitter="random", max_splits=10, random_state=0).fit(X, Y)
    assert n_leaves(est) == 11
    again = OK3Regressor(splitter="random", max_splits=10, random_state=0).fit(X, Y)
    np.testing.assert_array_equal(nodes(est)["threshold"], nodes(again)["threshold"])
    other = OK3Regressor(splitter="random", max_splits=10, random_state=1).fit(X, Y)
    assert not np.array_equal(nodes(est)["threshold"], nodes(other)["threshold"])
    # every cut point lies inside the range of its node's feature values
    t = nodes(est)
    for node in np.flatnonzero(t["left"] >= 0):
        f = t["feature"][node]
        assert X[:, f].min() <= t["threshold"][node] < X[:, f].max()


def test_max_features_restricts_the_features_searched(data):
    X, Y, _, _ = data
    used = set()
    for seed in range(6):
        est = OK3Regressor(max_features=1, max_splits=1, random_state=seed).fit(X, Y)
        used.add(int(nodes(est)["feature"][0]))
    assert len(used) > 1  # a single random feature per node, not always the best one


def test_threads_give_the_same_tree():
    # big enough (rows x features x outputs >= 200 000) for the threaded split search
    rng = np.random.default_rng(0)
    X, Y = rng.random((400, 25)), rng.normal(size=(400, 20))
    one = OK3Regressor(max_splits=6, n_jobs=1).fit(X, Y)
    two = OK3Regressor(max_splits=6, n_jobs=2).fit(X, Y)
    for field in ("feature", "threshold", "left", "right", "n_samples"):
        np.testing.assert_array_equal(nodes(one)[field], nodes(two)[field])
    np.testing.assert_array_equal(one.predict(X[:5]), two.predict(X[:5]))


def test_fit_callback_hears_the_tree_start_then_the_finished_tree():
    """The tree's start is reported (done 0): its growth was heard as part of the output
    space, whose ETA then grew as an overrunning set-up phase."""
    rng = np.random.default_rng(0)
    X, Y = rng.random((30, 3)), rng.random((30, 2))
    seen = []
    OK3Regressor(max_splits=3).fit(X, Y, callback=seen.append)
    assert [(p.phase, p.done, p.total) for p in seen] == [
        ("output_space", 0, 1), ("trees", 0, 1), ("trees", 1, 1)
    ]  # fmt: skip
    assert seen[-1].elapsed >= 0
    with pytest.raises(DataError, match="callback must be callable"):
        OK3Regressor().fit(X, Y, callback="print")
