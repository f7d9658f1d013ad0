"""Err^phi, Err^Y and edge AUCs against computations done by hand."""

from __future__ import annotations

import numpy as np
import pytest
from okdata import make_regression, rbf_gram
from sklearn.metrics import roc_auc_score

from okcore import DataError, OK3ForestRegressor, OK3Regressor, OKBoostRegressor, metrics

GAMMA = 2.0  # every eigenvalue of this Gram is kept (> 1e-12 of the largest): exact factor
RBF = {"type": "rbf", "gamma": GAMMA}


def fitted(kind: str, *, gram: bool = False):
    X, Y = make_regression(n=40, seed=4)
    est = {
        "boost": OKBoostRegressor(n_estimators=8, learning_rate=0.3, max_splits=4, random_state=0),
        "tree": OK3Regressor(max_splits=6),
        "forest": OK3ForestRegressor(n_estimators=4, max_splits=6, random_state=0),
    }[kind]
    if gram:
        return est.fit(X, gram=rbf_gram(Y, Y, GAMMA)), X, Y
    return est.fit(X, Y, kernel=RBF), X, Y


@pytest.fixture(scope="module")
def test_data():
    return make_regression(n=15, seed=5)


# ---------------------------------------------------------------------- AUC
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_edge_auc_equals_roc_auc_score(seed):
    rng = np.random.default_rng(seed)
    truth = rng.random(200) < 0.2
    scores = rng.normal(size=200) + truth
    assert metrics.edge_auc(scores, truth) == pytest.approx(roc_auc_score(truth, scores), abs=1e-12)


def test_edge_auc_with_ties():
    rng = np.random.default_rng(3)
    truth = rng.random(300) < 0.3
    scores = np.round(rng.normal(size=300) + truth, 0)  # a handful of distinct values
    assert len(np.unique(scores)) < 10
    assert metrics.edge_auc(scores, truth) == pytest.approx(roc_auc_score(truth, scores), abs=1e-12)
    assert metrics.edge_auc(np.ones(6), [0, 1, 0, 1, 1, 0]) == 0.5


def test_edge_auc_by_hand():
    # positives 0.8, 0.4; negatives 0.5, 0.1: pairs won 1 + 1 + 0 + 1 of 4
    assert metrics.edge_auc([0.8, 0.5, 0.4, 0.1], [1, 0, 1, 0]) == 0.75
    assert metrics.edge_auc([[0.8, 0.5], [0.4, 0.1]], [[1, 0], [1, 0]]) == 0.75  # flattened
    assert metrics.edge_auc([3.0, 2.0, 1.0], [True, False, False]) == 1.0
    assert metrics.edge_auc([1.0, 2.0, 3.0], [True, False, False]) == 0.0


def test_edge_auc_errors():
    with pytest.raises(DataError, match="^scores and truth differ in size: 3 vs 2$"):
        metrics.edge_auc([1, 2, 3], [0, 1])
    with pytest.raises(DataError, match="at least one edge and one non-edge"):
        metrics.edge_auc([1, 2, 3], [0, 0, 0])
    with pytest.raises(DataError, match="at least one edge and one non-edge"):
        metrics.edge_auc([1, 2, 3], [1, 1, 1])


def test_network_auc_uses_new_new_upper_triangle_and_all_new_known_pairs():
    rng = np.random.default_rng(7)
    n_new, n_known = 6, 9
    S1 = rng.normal(size=(n_new, n_new))
    S1 = S1 + S1.T
    A1 = (rng.random((n_new, n_new)) < 0.4).astype(int)
    A1 = np.triu(A1, 1) + np.triu(A1, 1).T
    S2 = rng.normal(size=(n_new, n_known))
    A2 = (rng.random((n_new, n_known)) < 0.3).astype(int)
    scores, truth = [], []
    for a in range(n_new):
        for b in range(a + 1, n_new):
            scores.append(S1[a, b])
            truth.append(A1[a, b])
        for b in range(n_known):
            scores.append(S2[a, b])
            truth.append(A2[a, b])
    expected = roc_auc_score(truth, scores)
    assert metrics.network_auc(S1, S2, A1, A2) == pytest.approx(expected, abs=1e-12)
    # the diagonal and the lower triangle of the new-new block play no part
    S1_changed, A1_changed = S1.copy(), A1.copy()
    S1_changed[np.tril_indices(n_new)] = 100.0
    A1_changed[np.tril_indices(n_new)] = 1
    assert metrics.network_auc(S1_changed, S2, A1_changed, A2) == pytest.approx(expected, abs=1e-12)


def test_network_auc_shape_errors():
    S1, S2 = np.zeros((3, 3)), np.zeros((3, 4))
    A1, A2 = np.eye(3, dtype=int), np.ones((3, 4), dtype=int)
    with pytest.raises(DataError, match="kernel and adjacency blocks must have matching shapes"):
        metrics.network_auc(S1, S2, A1[:2, :2], A2)
    with pytest.raises(DataError, match="kernel and adjacency blocks must have matching shapes"):
        metrics.network_auc(S1, S2, A1, A2[:, :3])
    with pytest.raises(DataError, match="kernel and adjacency blocks must have matching shapes"):
        metrics.network_auc(S1, S2[:2], A1, A2[:2])


# ---------------------------------------------------------------------- Err^phi
@pytest.mark.parametrize("kind", ["boost", "tree", "forest"])
def test_err_phi_on_training_outputs_by_hand(kind):
    est, X, Y = fitted(kind)
    K = rbf_gram(Y, Y, GAMMA)
    Xq, rows = X[::3], np.arange(0, 40, 3)  # queries whose true outputs are training outputs
    cross = est.predict_kernel_train(Xq)[np.arange(len(rows)), rows]  # <F(x_q), phi(y_q)>
    norms = np.diag(est.predict_kernel(Xq))  # ||F(x_q)||^2
    expected = np.mean(np.diag(K)[rows] - 2.0 * cross + norms)
    assert metrics.err_phi(est, Xq, Y[rows]) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("kind", ["boost", "tree", "forest"])
def test_err_phi_on_new_outputs_by_hand(kind, test_data):
    est, X, Y = fitted(kind)
    Xt, Yt = test_data
    W = est.predict_weights(Xt)  # F(x) = sum_i W_i phi(y_i)
    K, cross = rbf_gram(Y, Y, GAMMA), rbf_gram(Yt, Y, GAMMA)
    per_point = 1.0 - 2.0 * np.sum(W * cross, axis=1) + np.einsum("qi,ij,qj->q", W, K, W)
    assert metrics.err_phi(est, Xt, Yt) == pytest.approx(per_point.mean(), rel=1e-9)


def test_err_phi_linear_is_the_mean_squared_error(test_data):
    X, Y = make_regression(n=40, seed=4)
    Xt, Yt = test_data
    est = OKBoostRegressor(n_estimators=10, max_splits=3, random_state=0).fit(X, Y)
    expected = np.mean(np.sum((Yt - est.predict(Xt)) ** 2, axis=1))
    assert metrics.err_phi(est, Xt, Yt) == pytest.approx(expected, rel=1e-12)
    single = OKBoostRegressor(n_estimators=10, max_splits=3, random_state=0).fit(X, Y[:, 0])
    expected = np.mean((Yt[:, 0] - single.predict(Xt)) ** 2)
    assert metrics.err_phi(single, Xt, Yt[:, 0]) == pytest.approx(expected, rel=1e-12)
    pre_image = Y[single.predict_index(Xt)[0][:, 0], 0]
    expected = np.mean((Yt[:, 0] - pre_image) ** 2)
    assert metrics.err_y(single, Xt, Yt[:, 0]) == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------------- Err^Y
@pytest.mark.parametrize("kind", ["boost", "tree", "forest"])
def test_err_y_is_the_kernel_loss_of_the_predicted_outputs(kind, test_data):
    est, X, Y = fitted(kind)
    Xt, Yt = test_data
    predicted = est.predict(Xt)  # rbf with known outputs: a training output per query
    assert all(any(np.array_equal(p, y) for y in Y) for p in predicted)
    np.testing.assert_array_equal(predicted, Y[est.predict_index(Xt)[0][:, 0]])
    d2 = np.sum((Yt - predicted) ** 2, axis=1)
    expected = np.mean(1.0 - 2.0 * np.exp(-GAMMA * d2) + 1.0)
    assert metrics.err_y(est, Xt, Yt) == pytest.approx(expected, rel=1e-10)


def test_err_y_is_exact_even_when_the_factor_drops_eigenvalues(test_data):
    X, Y = make_regression(n=40, seed=4)
    Xt, Yt = test_data
    gamma = 0.1  # a few eigenvalues of this Gram fall under 1e-12 of the largest
    est = OKBoostRegressor(n_estimators=8, max_splits=4, random_state=0)
    est.fit(X, Y, kernel={"type": "rbf", "gamma": gamma})
    assert est.output_space_.rank < len(Y)
    predicted = Y[est.predict_index(Xt)[0][:, 0]]
    expected = np.mean(2.0 - 2.0 * np.exp(-gamma * np.sum((Yt - predicted) ** 2, axis=1)))
    assert metrics.err_y(est, Xt, Yt) == pytest.approx(expected, rel=1e-12)
    gram_cross, gram_diag = rbf_gram(Yt, Y, gamma), np.ones(len(Yt))
    by_gram = metrics.err_y(est, Xt, gram_cross=gram_cross, gram_diag=gram_diag)
    assert by_gram == pytest.approx(expected, rel=1e-12)


def test_err_y_linear(test_data):
    X, Y = make_regression(n=40, seed=4)
    Xt, Yt = test_data
    est = OK3Regressor(max_splits=5).fit(X, Y)
    index = est.predict_index(Xt)[0][:, 0]
    expected = np.mean(np.sum((Yt - Y[index]) ** 2, axis=1))
    assert metrics.err_y(est, Xt, Yt) == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------------- Gram forms
@pytest.mark.parametrize("kind", ["boost", "tree", "forest"])
def test_gram_form_equals_output_form(kind, test_data):
    est, X, Y = fitted(kind)
    Xt, Yt = test_data
    gram_cross, gram_diag = rbf_gram(Yt, Y, GAMMA), np.ones(len(Yt))
    for metric in (metrics.err_phi, metrics.err_y):
        by_y = metric(est, Xt, Yt)
        by_gram = metric(est, Xt, gram_cross=gram_cross, gram_diag=gram_diag)
        assert by_gram == pytest.approx(by_y, rel=1e-10)
    if kind == "boost":
        np.testing.assert_allclose(
            est.staged_loss(Xt, gram_cross=gram_cross, gram_diag=gram_diag),
            est.staged_loss(Xt, Yt),
            rtol=1e-10,
        )


@pytest.mark.parametrize("kind", ["boost", "tree", "forest"])
def test_model_fitted_on_the_gram_gives_the_same_errors(kind, test_data):
    by_outputs, X, Y = fitted(kind)
    by_gram, _, _ = fitted(kind, gram=True)
    Xt, Yt = test_data
    gram_cross, gram_diag = rbf_gram(Yt, Y, GAMMA), np.ones(len(Yt))
    for metric in (metrics.err_phi, metrics.err_y):
        assert metric(by_gram, Xt, gram_cross=gram_cross, gram_diag=gram_diag) == pytest.approx(
            metric(by_outputs, Xt, Yt), rel=1e-8
        )


def test_metric_argument_errors(test_data):
    est, X, Y = fitted("tree")
    Xt, Yt = test_data
    gram_cross = rbf_gram(Yt, Y, GAMMA)
    for metric in (metrics.err_phi, metrics.err_y):
        with pytest.raises(DataError, match="pass the true outputs Y, or gram_cross"):
            metric(est, Xt)
        with pytest.raises(DataError, match="pass the true outputs Y, or gram_cross"):
            metric(est, Xt, Yt, gram_cross=gram_cross, gram_diag=np.ones(len(Yt)))
        with pytest.raises(DataError, match="^X has 15 rows but the true outputs describe 14$"):
            metric(est, Xt, Yt[:14])
        with pytest.raises(DataError, match="^gram_diag has 3 values but gram_cross has 15 rows$"):
            metric(est, Xt, gram_cross=gram_cross, gram_diag=np.ones(3))
