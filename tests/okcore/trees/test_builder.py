"""The tree builder (okcore.trees.builder.build_tree) against a brute-force search of
every split on tiny data: the best split of the root, the order leaves are split in, and
the leaf values, for the exact and the histogram search."""

import itertools

import numpy as np
import pytest
from okdata import beats_reference

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
            if best is None or beats_reference(gain, best[0]):
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


# ---------------------------------------------------------------------- L2 penalty on leaves
def ridge_leaf(R: np.ndarray, l2: float) -> np.ndarray:
    """argmin_v sum_i ||r_i - v||^2 + l2 ||v||^2 by least squares on the stacked system
    [I; ...; I; sqrt(l2) I] v = [r_1; ...; r_n; 0] (no closed form used)."""
    n, r = R.shape
    A = np.vstack([np.eye(r)] * n + [np.sqrt(l2) * np.eye(r)])
    b = np.concatenate([R.ravel(), np.zeros(r)])
    return np.linalg.lstsq(A, b, rcond=None)[0]


def penalised_objective(R: np.ndarray, l2: float) -> float:
    """min_v sum ||r_i - v||^2 + l2 ||v||^2 of a leaf, at the brute-force ridge leaf."""
    v = ridge_leaf(R, l2)
    return float(np.sum((R - v) ** 2) + l2 * v @ v)


def brute_best_penalised_split(X: np.ndarray, R: np.ndarray, l2: float):
    """(gain, feature, threshold) of the root split that most reduces the penalised
    objective, trying every feature and midpoint; ties as :func:`brute_best_split`."""
    best = None
    rows = np.arange(len(X))
    parent = penalised_objective(R, l2)
    for f in range(X.shape[1]):
        for lo, hi in itertools.pairwise(np.unique(X[:, f])):
            t = lo / 2 + hi / 2
            left, right = rows[X[:, f] <= t], rows[X[:, f] > t]
            gain = parent - penalised_objective(R[left], l2) - penalised_objective(R[right], l2)
            if best is None or beats_reference(gain, best[0]):
                best = (gain, f, t)
    return best


def penalised_params(l2: float, max_splits: int | None = 1, splitter: str = "best") -> TreeParams:
    return TreeParams(
        splitter=splitter,
        max_splits=max_splits,
        max_features=10**6 if splitter == "best" else 3,
        leaf_order="gain",
        min_samples_leaf=1,
        max_depth=None,
        l2_regularization=l2,
    )


def grow(X: np.ndarray, R: np.ndarray, p: TreeParams, search: str, seed: int = 0):
    binned = bin_inputs(X, 255) if search == "histogram" else None
    XT = None if binned is not None else np.ascontiguousarray(X.T)
    return build_tree(XT, R, p, np.random.default_rng(seed), binned=binned)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("l2", [0.5, 1.5, 4.0])
@pytest.mark.parametrize("search", ["exact", "histogram"])
def test_the_penalised_root_split_is_the_brute_force_best(seed: int, l2: float, search: str):
    X, R = tiny(seed)
    R = R + 1.5  # residual rows off-centre: the penalty's terms in the node mean count
    tree = grow(X, R, penalised_params(l2), search)
    gain, f, t = brute_best_penalised_split(X, R, l2)
    if gain <= 0.0:  # no split lowers the penalised objective: the root stays a leaf
        assert tree.n_leaves == 1
        return
    assert tree.feature[0] == f and tree.threshold[0] == pytest.approx(t)
    assert tree.gain[0] == pytest.approx(gain, rel=1e-9)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("search", ["exact", "histogram"])
def test_random_splits_report_the_penalised_reduction(seed: int, search: str) -> None:
    X, R = tiny(seed, n=16)
    R = R - 0.3
    l2 = 0.5
    tree = grow(X, R, penalised_params(l2, splitter="random"), search, seed)
    if tree.feature[0] < 0:
        pytest.skip("no split with a positive penalised reduction")
    left = X[:, tree.feature[0]] <= tree.threshold[0]
    want = penalised_objective(R, l2) - sum(penalised_objective(R[s], l2) for s in (left, ~left))
    assert tree.gain[0] == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("search", ["exact", "histogram"])
@pytest.mark.parametrize("l2", [0.3, 5.0])
def test_penalised_leaf_values_are_the_brute_force_ridge_leaves(search: str, l2: float) -> None:
    X, R = tiny(3, n=30, p=3, r=3)
    tree = grow(X, R, penalised_params(l2, max_splits=5), search)
    leaves = tree_leaves(tree, X)
    assert tree.n_leaves > 2
    for L in range(tree.n_leaves):
        np.testing.assert_allclose(tree.value[L], ridge_leaf(R[leaves == L], l2), atol=1e-12)


def test_a_split_that_does_not_reduce_the_penalised_objective_is_not_made() -> None:
    """Two rows far from the origin: splitting them gains ||r1 - r2||^2 / 2-ish, and costs a
    second shrunk leaf; with a large penalty the root stays a leaf."""
    X = np.array([[0.0], [1.0]])
    R = np.array([[10.0], [10.1]])
    assert grow(X, R, penalised_params(0.0), "exact").n_leaves == 2
    assert grow(X, R, penalised_params(50.0), "exact").n_leaves == 1
