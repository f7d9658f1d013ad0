"""Unknown pairs (NaN in the interaction matrix): filled from the observed entries of their
neighbours by explicit loops, never read as negatives in training or in AUROC / AP, and a
matrix without them gives the model it gave before."""

from __future__ import annotations

import numpy as np
import pytest

from okcore.bipartite import (
    BipartiteRegressor,
    NeighbourRegressor,
    bipartite_cross_validate,
    block_scores,
    fill_unknown,
    neighbour_weights,
)
from okcore.bipartite.neighbours import cosine_similarity
from okcore.exceptions import DataError
from okcore.kernel_models.ridge import KernelRidgeRegressor


def _similarity(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.random((n, 3))
    S = A @ A.T
    d = np.sqrt(np.diag(S))
    return S / np.outer(d, d)


def _network(seed: int, shape: tuple[int, int] = (9, 7)) -> np.ndarray:
    return (np.random.default_rng(seed).random(shape) < 0.35).astype(np.float64)


def _brute_fill(Y: np.ndarray, S_r: np.ndarray, S_c: np.ndarray, k: int, eta: float) -> np.ndarray:
    """The rule of okcore.bipartite.unknown by loops over the unknown entries."""
    W_r = neighbour_weights(S_r, k, eta, exclude_self=True)
    W_c = neighbour_weights(S_c, k, eta, exclude_self=True)
    known = ~np.isnan(Y)
    out = Y.copy()
    base = Y[known].mean()
    for i, j in zip(*np.nonzero(~known), strict=True):
        found = []
        num = sum(W_r[i, a] * Y[a, j] for a in range(Y.shape[0]) if known[a, j])
        den = sum(W_r[i, a] for a in range(Y.shape[0]) if known[a, j])
        if den > 0:
            found.append(num / den)
        num = sum(W_c[j, b] * Y[i, b] for b in range(Y.shape[1]) if known[i, b])
        den = sum(W_c[j, b] for b in range(Y.shape[1]) if known[i, b])
        if den > 0:
            found.append(num / den)
        out[i, j] = np.mean(found) if found else base
    return out


def test_fill_matches_loops_and_keeps_observed_entries() -> None:
    Y = _network(0)
    Y[np.random.default_rng(1).random(Y.shape) < 0.3] = np.nan
    S_r, S_c = _similarity(9, 2), _similarity(7, 3)
    for k, eta in ((1, 0.7), (3, 0.8), (20, 1.0)):
        filled = fill_unknown(Y, S_r, S_c, k, eta)
        np.testing.assert_allclose(filled, _brute_fill(Y, S_r, S_c, k, eta))
        known = ~np.isnan(Y)
        np.testing.assert_array_equal(filled[known], Y[known])
        assert np.isfinite(filled).all()
    # nothing unknown: the same array back
    Z = _network(4)
    assert fill_unknown(Z, S_r, S_c, 3, 0.8) is Z


def test_fill_falls_back_to_the_base_rate() -> None:
    # a similarity of zeros gives no neighbour weight on either side
    Y = np.array([[1.0, np.nan], [0.0, 0.0]])
    filled = fill_unknown(Y, np.zeros((2, 2)), np.zeros((2, 2)), 3, 0.8)
    assert filled[0, 1] == pytest.approx(1 / 3)


def test_an_unknown_pair_is_learnt_from_its_neighbours_not_as_a_negative() -> None:
    # rows 0-2 alike, all interacting with column 0; (0, 0) unknown
    S_r = np.array([[1.0, 0.9, 0.9, 0.0], [0.9, 1.0, 0.9, 0.0], [0.9, 0.9, 1.0, 0.0],
                    [0.0, 0.0, 0.0, 1.0]])  # fmt: skip
    S_c = np.eye(3)
    Y = np.array([[np.nan, 0, 0], [1, 0, 0], [1, 0, 1], [0, 1, 0]], dtype=np.float64)
    model = BipartiteRegressor(NeighbourRegressor(2, 1.0), inputs="similarity")
    model.fit(S_r, S_c, Y)
    assert model.n_unknown_ == 1
    assert model.Y_[0, 0] == pytest.approx(1.0)  # as 0 it would have been a negative
    np.testing.assert_array_equal(model.Y_[1:], Y[1:])
    # the same network with the pair read as 0 learns a 0 there
    zero = BipartiteRegressor(NeighbourRegressor(2, 1.0), inputs="similarity")
    assert zero.fit(S_r, S_c, np.nan_to_num(Y)).Y_[0, 0] == 0.0


def test_unknown_pairs_with_features_and_recovery_equal_the_filled_matrix() -> None:
    rng = np.random.default_rng(5)
    X_r, X_c = rng.random((9, 4)), rng.random((7, 3))
    Y = _network(6)
    Y[0, :3] = np.nan
    krr = KernelRidgeRegressor(alpha=1.0, input_kernel="rbf", gamma=1.0)
    for recovery in (0, 3):
        model = BipartiteRegressor(krr, recovery_neighbors=recovery).fit(X_r, X_c, Y)
        S_r = np.maximum(cosine_similarity(X_r, X_r), 0.0)  # inputs="features"
        S_c = np.maximum(cosine_similarity(X_c, X_c), 0.0)
        filled = fill_unknown(Y, S_r, S_c, recovery or 7, 0.7)
        same = BipartiteRegressor(krr, recovery_neighbors=recovery).fit(X_r, X_c, filled)
        np.testing.assert_allclose(model.Y_, same.Y_)
        np.testing.assert_allclose(model.predict_new_rows(X_r[:2]), same.predict_new_rows(X_r[:2]))


def test_no_unknown_pair_gives_the_same_model() -> None:
    rng = np.random.default_rng(7)
    X_r, X_c, Y = rng.random((9, 4)), rng.random((7, 3)), _network(8)
    krr = KernelRidgeRegressor(alpha=1.0, input_kernel="rbf", gamma=1.0)
    model = BipartiteRegressor(krr).fit(X_r, X_c, Y)
    assert model.n_unknown_ == 0
    np.testing.assert_array_equal(model.Y_, Y)


def test_bad_interactions_are_refused() -> None:
    X_r, X_c = np.eye(3), np.eye(2)
    model = BipartiteRegressor(NeighbourRegressor(1), inputs="similarity")
    with pytest.raises(DataError, match="every pair of Y is unknown"):
        model.fit(X_r, X_c, np.full((3, 2), np.nan))
    with pytest.raises(DataError, match=r"Y\[1, 0\] is infinite"):
        model.fit(X_r, X_c, np.array([[1, 0], [np.inf, 0], [0, 1]]))
    with pytest.raises(DataError, match="numeric array"):
        model.fit(X_r, X_c, [["a", "b"], ["c", "d"], ["e", "f"]])


def test_block_scores_never_count_an_unknown_pair_as_negative() -> None:
    truth = np.array([1, 0, 1, 0, np.nan, np.nan])
    scores = np.array([0.9, 0.3, 0.5, 0.6, 0.95, 0.1])
    got = block_scores(truth, scores)
    want = block_scores(truth[:4], scores[:4])
    assert got == want
    # read as negatives, the unknown pair scored highest would lower both measures
    as_zero = block_scores(np.nan_to_num(truth), scores)
    assert as_zero["auroc"] < got["auroc"] and as_zero["ap"] < got["ap"]
    # whatever the unknown pairs' scores, the measures are the same
    for seed in range(5):
        other = scores.copy()
        other[4:] = np.random.default_rng(seed).random(2) * 10 - 5
        assert block_scores(truth, other) == got
    # only unknown pairs besides the interactions: no measure
    assert np.isnan(block_scores([1, np.nan], [0.2, 0.1])["auroc"])


class _Oracle:
    """A bipartite 'model' whose scores are a fixed matrix P, read through the vertex
    numbers carried by one-column feature inputs."""

    def __init__(self, P: np.ndarray) -> None:
        self.P = P

    def get_params(self, deep: bool = True) -> dict[str, object]:
        return {"P": self.P}

    def set_params(self, **params: object) -> _Oracle:
        return self

    def fit(self, X_rows: np.ndarray, X_cols: np.ndarray, Y: np.ndarray) -> _Oracle:
        self.rows_, self.cols_ = X_rows[:, 0].astype(int), X_cols[:, 0].astype(int)
        return self

    def predict_new_rows(self, X: np.ndarray) -> np.ndarray:
        return self.P[np.ix_(X[:, 0].astype(int), self.cols_)]

    def predict_new_cols(self, X: np.ndarray) -> np.ndarray:
        return self.P[np.ix_(self.rows_, X[:, 0].astype(int))]

    def predict_new_pairs(self, Xr: np.ndarray, Xc: np.ndarray) -> np.ndarray:
        return self.P[np.ix_(Xr[:, 0].astype(int), Xc[:, 0].astype(int))]


def test_cross_validation_leaves_unknown_pairs_out_of_every_block() -> None:
    rng = np.random.default_rng(11)
    Y = _network(12, (10, 8))
    unknown = (Y == 0) & (rng.random(Y.shape) < 0.3)
    Y_unknown = np.where(unknown, np.nan, Y)
    P = rng.random(Y.shape)
    P[unknown] = 2.0  # every unknown pair scored above every known one
    X_r, X_c = np.arange(10.0)[:, None], np.arange(8.0)[:, None]
    folds = {"row_folds": np.arange(10) % 2, "col_folds": np.arange(8) % 2}
    result = bipartite_cross_validate(_Oracle(P), X_r, X_c, Y_unknown, **folds)
    rf, cf = folds["row_folds"], folds["col_folds"]
    for record in result.folds:
        a, b = record["row_fold"], record["col_fold"]
        blocks = {
            "new_rows": (rf == a, cf != b),
            "new_cols": (rf != a, cf == b),
            "new_pairs": (rf == a, cf == b),
        }
        for block, (r, c) in blocks.items():
            keep = ~unknown[np.ix_(r, c)]
            want = block_scores(Y[np.ix_(r, c)][keep], P[np.ix_(r, c)][keep])
            assert record[block] == want
            # the same block with the unknown pairs as negatives scores lower
            worse = block_scores(Y[np.ix_(r, c)], P[np.ix_(r, c)])
            if keep.all() or np.isnan(want["auroc"]):
                continue
            assert worse["auroc"] < want["auroc"]
    # degrees count observed interactions: folds drawn as for the matrix with zeros
    drawn = bipartite_cross_validate(_Oracle(P), X_r, X_c, Y_unknown, n_folds=2)
    same = bipartite_cross_validate(_Oracle(P), X_r, X_c, np.nan_to_num(Y_unknown), n_folds=2)
    np.testing.assert_array_equal(drawn.row_folds, same.row_folds)
    np.testing.assert_array_equal(drawn.col_folds, same.col_folds)


def test_the_default_fills_unknown_pairs_before_every_member() -> None:
    """The no-setting default (a rank average of score models, NRLMF among them, which read
    Y directly) fits on the filled network: every member sees finite interactions."""
    S_r, S_c = _similarity(10, 20), _similarity(8, 21)
    Y = _network(22, (10, 8))
    Y[np.random.default_rng(23).random(Y.shape) < 0.1] = np.nan
    model = BipartiteRegressor(inputs="similarity", random_state=0).fit(S_r, S_c, Y)
    assert model.n_unknown_ == int(np.isnan(Y).sum()) > 0
    assert np.isfinite(model.Y_).all()
    np.testing.assert_array_equal(model.Y_[~np.isnan(Y)], Y[~np.isnan(Y)])
    assert np.isfinite(model.predict_new_rows(S_r[:3])).all()
    assert np.isfinite(model.predict_new_cols(S_c[:3])).all()
