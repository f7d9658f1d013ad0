"""Base learners of the stage loop (okcore.learners): OK3 trees through TreeLearner, and
a toy learner that plugs into boost() without any change to the loop."""

import numpy as np
import pytest
from okdata import make_regression

from okcore.boosting import boost
from okcore.learners import TreeLearner
from okcore.losses import SquaredFeatureLoss
from okcore.trees.binning import bin_inputs
from okcore.trees.builder import TreeArrays, TreeParams, build_tree
from okcore.trees.ensemble import TreeEnsemble, tree_leaves

PARAMS = TreeParams(
    splitter="best",
    max_splits=4,
    max_features=4,
    leaf_order="variance",
    min_samples_leaf=1,
    max_depth=None,
)


@pytest.mark.parametrize("search", ["exact", "histogram"])
def test_a_tree_stage_is_build_tree_with_every_rows_leaf(search: str) -> None:
    X, Y = make_regression(n=50)
    XT = np.ascontiguousarray(X.T)
    binned = bin_inputs(X, 16) if search == "histogram" else None
    learner = TreeLearner(X, PARAMS, XT=None if binned else XT, binned=binned)
    tree, leaf = learner.fit_stage(Y, np.random.default_rng(0), None)
    learner.close()
    direct = build_tree(None if binned else XT, Y, PARAMS, np.random.default_rng(0), binned=binned)
    np.testing.assert_array_equal(tree.feature, direct.feature)
    np.testing.assert_array_equal(tree.value, direct.value)
    np.testing.assert_array_equal(leaf, tree_leaves(tree, X))


@pytest.mark.parametrize("search", ["exact", "histogram"])
def test_a_subsampled_stage_is_fitted_on_its_rows_and_places_all(search: str) -> None:
    X, Y = make_regression(n=60)
    rows = np.sort(np.random.default_rng(1).choice(60, 30, replace=False))
    binned = bin_inputs(X, 16) if search == "histogram" else None
    XT = None if binned else np.ascontiguousarray(X.T)
    learner = TreeLearner(X, PARAMS, XT=XT, binned=binned)
    tree, leaf = learner.fit_stage(Y, np.random.default_rng(0), rows)
    learner.close()
    assert leaf.shape == (60,)
    np.testing.assert_array_equal(leaf, tree_leaves(tree, X))
    for k in range(tree.n_leaves):  # leaf values: means of the fitted rows only
        fitted = rows[leaf[rows] == k]
        np.testing.assert_allclose(tree.value[k], Y[fitted].mean(axis=0), rtol=1e-12)


class MedianStumps:
    """A toy base learner: a stump on input ``feature`` at the median of the fitted rows,
    leaf values the means of the target rows on each side."""

    def __init__(self, X: np.ndarray, feature: int) -> None:
        self.X, self.feature, self.closed = X, feature, False

    def fit_stage(
        self, target: np.ndarray, rng: np.random.Generator, rows: np.ndarray | None
    ) -> tuple[TreeArrays, np.ndarray]:
        rows = np.arange(len(self.X)) if rows is None else rows
        x = self.X[rows, self.feature]
        cut = float(np.median(x))
        left = x <= cut
        value = np.array([target[rows][left].mean(axis=0), target[rows][~left].mean(axis=0)])
        tree = TreeArrays(
            feature=np.array([self.feature, -1, -1], dtype=np.int32),
            threshold=np.array([cut, 0.0, 0.0]),
            left=np.array([1, -1, -1], dtype=np.int32),
            right=np.array([2, -1, -1], dtype=np.int32),
            leaf=np.array([-1, 0, 1], dtype=np.int32),
            n_samples=np.array([len(rows), left.sum(), (~left).sum()], dtype=np.int32),
            impurity=np.zeros(3),
            gain=np.array([1.0, 0.0, 0.0]),
            value=value,
        )
        return tree, (self.X[:, self.feature] > cut).astype(np.int32)

    def close(self) -> None:
        self.closed = True


def test_a_new_base_learner_plugs_into_the_stage_loop_unchanged() -> None:
    """The stage loop only calls fit_stage / close: a toy learner gives Algorithm 3 with
    stumps, checked against the recursion F_m = F_{m-1} + nu h_m written out here."""
    X, Y = make_regression(n=40)
    learner = MedianStumps(X, feature=1)
    nu, M = 0.5, 4
    result = boost(
        X, Y, np.sum(Y**2, axis=1), loss=SquaredFeatureLoss(), learner=learner, n_estimators=M,
        learning_rate=nu, subsample=1.0, rng=np.random.default_rng(0),
    )  # fmt: skip
    assert learner.closed
    F = np.tile(Y.mean(axis=0), (len(X), 1))
    side = X[:, 1] > np.median(X[:, 1])
    for m in range(M):
        R = Y - F
        F = F + nu * np.where(side[:, None], R[side].mean(axis=0), R[~side].mean(axis=0))
        expected = np.mean(np.sum((Y - F) ** 2, axis=1))
        assert result.train_loss[m] == pytest.approx(expected, rel=1e-10)
    ensemble = TreeEnsemble.from_trees(
        result.trees, result.train_leaf, result.train_count, combine="boosting",
        learning_rate=nu, init=result.init,
    )  # fmt: skip
    np.testing.assert_allclose(ensemble.decision(X), F, rtol=1e-10)  # predictions work as is
