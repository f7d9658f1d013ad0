"""Known equivalences with a linear output kernel (phi = y):

- an OK3 tree grown by largest improvement is scikit-learn's best-first multi-output
  regression tree (DecisionTreeRegressor(max_leaf_nodes=J+1));
- OKBoost with stumps is least-squares gradient boosting (GradientBoostingRegressor);
- OKBoost with J-split trees is least-squares boosting of multi-output trees.
"""

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")
from sklearn.ensemble import GradientBoostingRegressor  # noqa: E402
from sklearn.tree import DecisionTreeRegressor  # noqa: E402

from okcore import OK3Regressor, OKBoostRegressor  # noqa: E402


def data(seed, n=300, p=6, d=3):
    rng = np.random.default_rng(seed)
    # scikit-learn splits on float32 copies of X: use values exact in float32
    X = rng.random((n, p)).astype(np.float32).astype(np.float64)
    Y = np.c_[
        np.sin(3 * X[:, 0]) + X[:, 1] ** 2,
        X[:, 2] * X[:, 3] - X[:, 0],
        np.cos(2 * X[:, 4]) + X[:, 5],
    ][:, :d] + 0.1 * rng.standard_normal((n, d))
    Xq = rng.random((50, p)).astype(np.float32).astype(np.float64)
    return X, Y, Xq


def split_pairs(features, thresholds):
    internal = features >= 0
    return sorted(
        zip(features[internal].tolist(), np.round(thresholds[internal], 12).tolist(), strict=True)
    )


@pytest.mark.parametrize("J", [1, 3, 7, 15])
@pytest.mark.parametrize("seed", [0, 1])
def test_gain_ordered_ok3_is_sklearn_best_first_tree(J, seed):
    X, Y, Xq = data(seed)
    ours = OK3Regressor(max_splits=J, leaf_order="gain").fit(X, Y)
    theirs = DecisionTreeRegressor(max_leaf_nodes=J + 1, random_state=0).fit(X, Y)
    np.testing.assert_allclose(ours.predict(Xq), theirs.predict(Xq), atol=1e-10)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), atol=1e-10)
    t = theirs.tree_
    sk_features = np.where(t.children_left >= 0, t.feature, -1)
    assert split_pairs(ours.ensemble_.feature, ours.ensemble_.threshold) == split_pairs(
        sk_features, t.threshold
    )


@pytest.mark.parametrize("learning_rate", [1.0, 0.1])
def test_okboost_stumps_are_least_squares_gradient_boosting(learning_rate):
    X, Y, Xq = data(2, d=1)
    y = Y[:, 0]
    ours = OKBoostRegressor(n_estimators=60, learning_rate=learning_rate, max_splits=1).fit(X, y)
    theirs = GradientBoostingRegressor(
        n_estimators=60, learning_rate=learning_rate, max_depth=1, random_state=0
    ).fit(X, y)
    assert ours.predict(Xq).shape == (50,)
    np.testing.assert_allclose(ours.predict(Xq), theirs.predict(Xq), atol=1e-8)
    np.testing.assert_allclose(ours.train_loss_, theirs.train_score_, rtol=1e-8)


@pytest.mark.parametrize("J", [3, 10])
def test_okboost_is_least_squares_boosting_of_multi_output_trees(J):
    X, Y, Xq = data(3)
    nu, M = 0.2, 25
    ours = OKBoostRegressor(n_estimators=M, learning_rate=nu, max_splits=J, leaf_order="gain").fit(
        X, Y
    )
    F, Fq = np.tile(Y.mean(0), (len(X), 1)), np.tile(Y.mean(0), (len(Xq), 1))
    for _ in range(M):  # the do-it-yourself loop: trees on the residuals
        tree = DecisionTreeRegressor(max_leaf_nodes=J + 1, random_state=0).fit(X, Y - F)
        F += nu * tree.predict(X)
        Fq += nu * tree.predict(Xq)
    np.testing.assert_allclose(ours.predict(Xq), Fq, atol=1e-8)
    np.testing.assert_allclose(ours.predict(X), F, atol=1e-8)
