"""The tree builder (okcore.trees.builder.build_tree) against a brute-force search of
every split on tiny data: the best split of the root, the order leaves are split in, and
the leaf values, for the exact and the histogram search."""

import itertools

import numpy as np
import pytest

from okcore.trees.binning import bin_inputs
from okcore.trees.builder import TreeParams, build_tree
from okcore.trees.ensemble import tree_leaves


def params(max_splits: int | None, leaf_order: str = "variance", min_leaf: int = 1) -> TreeParams:
    return TreeParams(
        splitter="best",
        max_splits=max_splits,
        max_features=10**6,
        leaf_order=leaf_order,
        min_samples_leaf=min_leaf,
        max_depth=None,
    )


def impurity(R: np.ndarray) -> float:
    """N * var of residual rows: sum of squared distances to their mean (eq. 11)."""
    return float(np.sum((R - R.mean(axis=0)) ** 2)) if len(R) else 0.0


def brute_best_split(X: np.ndarray, R: np.ndarray, rows: np.ndarray, min_leaf: int = 1):
    """(gain, feature, threshold) of the best split of ``rows`` by trying every feature
    and every midpoint between consecutive distinct values; ties to the lower feature,
    then the lower threshold."""
    best = None
    parent = impurity(R[rows])
    for f in range(X.shape[1]):
        values = np.unique(X[rows, f])
        for lo, hi in itertools.pairwise(values):
            t = lo / 2 + hi / 2
            left, right = rows[X[rows, f] <= t], rows[X[rows, f] > t]
            if len(left) < min_leaf or len(right) < min_leaf:
                continue
            gain = parent - impurity(R[left]) - impurity(R[right])
            if best is None or gain > best[0] + 1e-12:
                best = (gain, f, t)
    return best


def tiny(seed: int, n: int = 12, p: int = 3, r: int = 2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, size=(n, p)).astype(np.float64)  # ties: few distinct values
    R = rng.normal(size=(n, r))
    return X, R


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("search", ["exact", "histogram"])
def test_the_root_split_is_the_brute_force_best(seed: int, search: str) -> None:
    X, R = tiny(seed)
    binned = bin_inputs(X, 255) if search == "histogram" else None
    XT = None if binned is not None else np.ascontiguousarray(X.T)
    tree = build_tree(XT, R, params(1), np.random.default_rng(0), binned=binned)
    gain, f, t = brute_best_split(X, R, np.arange(len(X)))
    assert tree.feature[0] == f and tree.threshold[0] == pytest.approx(t)
    assert tree.gain[0] == pytest.approx(gain, rel=1e-10)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("leaf_order", ["variance", "gain"])
def test_best_first_growth_matches_a_brute_force_growth(seed: int, leaf_order: str) -> None:
    """Grow J splits by brute force in the same best-first order (highest N*var leaf, or
    largest gain), then compare the partition and the leaf means."""
    X, R = tiny(seed, n=16)
    J = 4
    leaves = [np.arange(len(X))]
    for _ in range(J):
        candidates = [(brute_best_split(X, R, rows), i) for i, rows in enumerate(leaves)]
        candidates = [(s, i) for s, i in candidates if s is not None]
        if not candidates:
            break
        if leaf_order == "variance":
            _, i = max(((impurity(R[leaves[i]]), i) for s, i in candidates))
            split = next(s for s, j in candidates if j == i)
        else:
            split, i = max(candidates, key=lambda c: c[0][0])
        _, f, t = split
        rows = leaves.pop(i)
        leaves += [rows[X[rows, f] <= t], rows[X[rows, f] > t]]
    tree = build_tree(np.ascontiguousarray(X.T), R, params(J, leaf_order), np.random.default_rng(0))
    leaf = tree_leaves(tree, X)
    ours = sorted(tuple(np.flatnonzero(leaf == k)) for k in range(tree.n_leaves))
    assert ours == sorted(tuple(rows) for rows in leaves)
    for k in range(tree.n_leaves):
        np.testing.assert_allclose(tree.value[k], R[leaf == k].mean(axis=0), rtol=1e-12)


def test_min_samples_leaf_is_respected_by_both_searches() -> None:
    X, R = tiny(1, n=20)
    for binned in (None, bin_inputs(X, 255)):
        XT = None if binned is not None else np.ascontiguousarray(X.T)
        tree = build_tree(XT, R, params(None, min_leaf=4), np.random.default_rng(0), binned=binned)
        counts = np.bincount(tree_leaves(tree, X), minlength=tree.n_leaves)
        assert counts.min() >= 4
        gain, f, t = brute_best_split(X, R, np.arange(20), min_leaf=4)
        assert tree.feature[0] == f and tree.threshold[0] == pytest.approx(t)
