"""NRLMF and rank averaging of bipartite models: the gradient against finite differences, the
objective decreasing, the Laplacian and the new-vertex scores against loops, seed
determinism, saving without pickle, and the rank average against a loop."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from okcore import io
from okcore.bipartite import (
    NRLMF,
    BipartiteRegressor,
    NeighbourRegressor,
    RankAveragedBipartite,
    neighbour_weights,
)
from okcore.bipartite.ensemble import rank_average
from okcore.bipartite.nrlmf import knn_laplacian, nrlmf_gradients, nrlmf_objective
from okcore.exceptions import DataError


def _similarity(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.random((n, 3))
    S = A @ A.T
    d = np.sqrt(np.diag(S))
    return S / np.outer(d, d)


def _network(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row and column similarities (7 and 6 vertices) and interactions that follow them."""
    S_r, S_c = _similarity(7, seed), _similarity(6, seed + 1)
    rng = np.random.default_rng(seed + 2)
    Y = ((S_r[:, :1] * S_c[:1, :] + 0.2 * rng.random((7, 6))) > 0.75).astype(float)
    return S_r, S_c, Y


def test_knn_laplacian_matches_loops() -> None:
    S = _similarity(6, 3)
    for k in (1, 2, 5, 9):
        A = np.zeros_like(S)
        for i in range(6):
            others = sorted((j for j in range(6) if j != i), key=lambda j: (-S[i, j], j))
            for j in others[:k]:
                A[i, j] = S[i, j]
        L = np.zeros_like(S)
        for i in range(6):
            for j in range(6):
                L[i, j] = -(A[i, j] + A[j, i]) / 2
            L[i, i] += (A[i].sum() + A[:, i].sum()) / 2
        np.testing.assert_allclose(knn_laplacian(S, k), L)
        assert np.linalg.eigvalsh(L).min() > -1e-12  # positive semi-definite


def test_gradient_matches_finite_differences() -> None:
    S_r, S_c, Y = _network()
    rng = np.random.default_rng(0)
    U, V = rng.normal(size=(7, 3)), rng.normal(size=(6, 3))
    terms = (Y, knn_laplacian(S_r, 2), knn_laplacian(S_c, 3), 4.0, (0.3, 0.7), 0.5, 0.9)
    grad_u, grad_v = nrlmf_gradients(U, V, *terms)
    h = 1e-6
    for grad, which in ((grad_u, 0), (grad_v, 1)):
        numeric = np.zeros_like(grad)
        for idx in np.ndindex(grad.shape):
            step = np.zeros_like(grad)
            step[idx] = h
            plus = (U + step, V) if which == 0 else (U, V + step)
            minus = (U - step, V) if which == 0 else (U, V - step)
            numeric[idx] = (nrlmf_objective(*plus, *terms) - nrlmf_objective(*minus, *terms)) / (
                2 * h
            )
        np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)


def test_objective_by_hand_on_one_pair() -> None:
    U, V, Y = np.array([[0.5]]), np.array([[2.0]]), np.array([[1.0]])
    zero = np.zeros((1, 1))
    c = 3.0
    expected = c * np.log1p(np.exp(1.0)) - c * 1.0 + 0.5 * 0.1 * 0.25 + 0.5 * 0.2 * 4.0
    assert nrlmf_objective(U, V, Y, zero, zero, c, (0.1, 0.2), 1.0, 1.0) == pytest.approx(expected)


def test_fit_decreases_the_objective_and_scores_by_neighbour_latents() -> None:
    S_r, S_c, Y = _network(1)
    train_r, test_r, train_c, test_c = np.arange(5), np.arange(5, 7), np.arange(4), np.arange(4, 6)
    Y_train = Y[np.ix_(train_r, train_c)]
    model = NRLMF(4, n_neighbors=2, eta=0.6, max_iter=60, inputs="similarity").fit(
        S_r[np.ix_(train_r, train_r)], S_c[np.ix_(train_c, train_c)], Y_train
    )
    J = model.objective_
    assert J.shape == (60,) and J[-1] < J[0] and J[-1] <= J[:10].min()
    U, V = model.row_model_.Y_, model.col_model_.Y_
    # the fitted factors are (near) stationary: the gradient is small next to the start's
    terms = (
        Y_train, knn_laplacian(S_r[np.ix_(train_r, train_r)], 2),
        knn_laplacian(S_c[np.ix_(train_c, train_c)], 2), 5.0, (0.625, 0.625), 0.1, 0.1,
    )  # fmt: skip
    start = np.random.default_rng(0)
    U0 = start.normal(0, 0.5, size=U.shape)
    V0 = start.normal(0, 0.5, size=V.shape)
    assert (
        np.abs(nrlmf_gradients(U, V, *terms)[0]).max()
        < np.abs(nrlmf_gradients(U0, V0, *terms)[0]).max()
    )
    # a new row's latent vector is the neighbour-weighted mean of the training rows'
    S_new_r, S_new_c = S_r[np.ix_(test_r, train_r)], S_c[np.ix_(test_c, train_c)]
    W_r, W_c = neighbour_weights(S_new_r, 2, 0.6), neighbour_weights(S_new_c, 2, 0.6)
    np.testing.assert_allclose(model.row_weights(S_new_r), W_r)
    np.testing.assert_allclose(model.predict_new_rows(S_new_r), expit(W_r @ U @ V.T))
    np.testing.assert_allclose(model.predict_new_cols(S_new_c), expit(U @ (W_c @ V).T))
    np.testing.assert_allclose(model.predict(S_new_r, S_new_c), expit((W_r @ U) @ (W_c @ V).T))
    np.testing.assert_allclose(model.predict_train(), expit(U @ V.T))
    # known interactions score above unknown pairs on the training network
    P = model.predict_train()
    assert P[Y_train == 1].mean() > P[Y_train == 0].mean()


def test_fit_is_seeded() -> None:
    S_r, S_c, Y = _network(2)
    fit = lambda seed: NRLMF(3, max_iter=20, inputs="similarity", random_state=seed).fit(  # noqa: E731
        S_r, S_c, Y
    )
    a, b, c = fit(4), fit(4), fit(5)
    np.testing.assert_array_equal(a.row_model_.Y_, b.row_model_.Y_)
    np.testing.assert_array_equal(a.predict_new_rows(S_r[:2]), b.predict_new_rows(S_r[:2]))
    assert not np.allclose(a.row_model_.Y_, c.row_model_.Y_)


def test_features_inputs_and_bad_inputs() -> None:
    rng = np.random.default_rng(0)
    Xr, Xc = rng.normal(size=(8, 3)), rng.normal(size=(6, 2))
    Y = (rng.random((8, 6)) < 0.3).astype(float)
    model = NRLMF(3, max_iter=10).fit(Xr, Xc, Y)
    assert model.predict(Xr[:2], Xc[:3]).shape == (2, 3)
    with pytest.raises(DataError, match="square similarity"):
        NRLMF(3, inputs="similarity").fit(Xr, Xc, Y)
    with pytest.raises(DataError, match="one input row"):
        NRLMF(3).fit(Xr[:5], Xc, Y)


def test_saved_side_models_rebuild_the_scores_without_pickle(tmp_path) -> None:  # type: ignore[no-untyped-def]
    S_r, S_c, Y = _network(3)
    model = NRLMF(4, n_neighbors=3, max_iter=15, inputs="similarity").fit(S_r, S_c, Y)
    rows = io.load(io.save(model.row_model_, tmp_path / "rows"))
    cols = io.load(io.save(model.col_model_, tmp_path / "cols"))
    loaded = NRLMF.from_side_models(rows, cols)
    for args in ((S_r[:2],), (None, S_c[:3]), (S_r[:2], S_c[:3])):
        np.testing.assert_array_equal(loaded.predict(*args), model.predict(*args))
    with pytest.raises(DataError, match="differ in length"):
        NRLMF.from_side_models(rows, NeighbourRegressor(3).fit(S_c, np.ones((6, 2))))


def test_rank_average_matches_a_loop_and_rank_averaged_members() -> None:
    a = np.array([[0.1, 0.9], [0.5, 0.5]])
    b = np.array([[3.0, 1.0], [2.0, 4.0]])
    expected = np.zeros((2, 2))
    for i in range(2):
        for j in range(2):
            rank_a = (a < a[i, j]).sum() + 0.5 * ((a == a[i, j]).sum() - 1) + 1
            rank_b = (b < b[i, j]).sum() + 0.5 * ((b == b[i, j]).sum() - 1) + 1
            expected[i, j] = (1 * rank_a / 4 + 3 * rank_b / 4) / 4
    np.testing.assert_allclose(rank_average([a, b], [1.0, 3.0]), expected)

    S_r, S_c, Y = _network(4)
    members = [
        BipartiteRegressor(NeighbourRegressor(2), inputs="similarity", recovery_neighbors=2),
        NRLMF(3, max_iter=10, inputs="similarity"),
    ]
    ensemble = RankAveragedBipartite(members, [1.0, 2.0]).fit(S_r, S_c, Y)
    fitted = ensemble.members_
    np.testing.assert_allclose(
        ensemble.predict_new_pairs(S_r[:3], S_c[:2]),
        rank_average([m.predict_new_pairs(S_r[:3], S_c[:2]) for m in fitted], [1.0, 2.0]),
    )
    assert members[0] is not fitted[0]  # members are cloned, not fitted in place
    with pytest.raises(DataError, match="one per member"):
        RankAveragedBipartite(members, [1.0]).fit(S_r, S_c, Y)
    with pytest.raises(DataError, match="at least one"):
        RankAveragedBipartite([]).fit(S_r, S_c, Y)


class CountingNRLMF(NRLMF):
    """NRLMF counting the blocks it is asked to score."""

    asked: list[str] = []

    def predict_new_rows(self, X_new_rows):  # type: ignore[no-untyped-def]
        CountingNRLMF.asked.append("new_rows")
        return super().predict_new_rows(X_new_rows)

    def predict_new_cols(self, X_new_cols):  # type: ignore[no-untyped-def]
        CountingNRLMF.asked.append("new_cols")
        return super().predict_new_cols(X_new_cols)


def test_block_weights_replace_the_weights_of_their_block_only() -> None:
    S_r, S_c, Y = _network(5)
    members = [
        BipartiteRegressor(NeighbourRegressor(2), inputs="similarity", recovery_neighbors=2),
        CountingNRLMF(3, max_iter=10, inputs="similarity"),
        NRLMF(3, max_iter=10, inputs="similarity", random_state=1),
    ]
    weights = {"new_rows": [3.0, 0.0, 1.0]}
    ensemble = RankAveragedBipartite(members, [1.0, 2.0, 1.0], weights).fit(S_r, S_c, Y)
    a, b, c = ensemble.members_
    CountingNRLMF.asked = []
    np.testing.assert_allclose(
        ensemble.predict_new_rows(S_r[:3]),
        rank_average([a.predict_new_rows(S_r[:3]), c.predict_new_rows(S_r[:3])], [3.0, 1.0]),
    )
    assert CountingNRLMF.asked == []  # weight 0: not asked to score new rows
    np.testing.assert_allclose(
        ensemble.predict_new_cols(S_c[:2]),
        rank_average([m.predict_new_cols(S_c[:2]) for m in (a, b, c)], [1.0, 2.0, 1.0]),
    )
    assert CountingNRLMF.asked == ["new_cols", "new_cols"]
    for bad, match in (
        ({"new_row": [1.0, 1.0, 1.0]}, "each must be one of"),
        ({"new_rows": [1.0, 1.0]}, "one per member"),
        ({"new_rows": [0.0, 0.0, 0.0]}, "not all 0"),
        ({"new_pairs": [1.0, -1.0, 1.0]}, ">= 0"),
    ):
        with pytest.raises(DataError, match=match):
            RankAveragedBipartite(members, None, bad).fit(S_r, S_c, Y)


@pytest.mark.parametrize("scale, low", [(5.0, 0.0), (-1.0, -1.0)])
def test_values_outside_0_1_are_refused_not_diverged(scale, low) -> None:
    """Weights or a -1 / 1 coding make NRLMF's objective unbounded below (a fit of weights
    x 5 on GPCR reached -1.3e7 with every probability 0 or 1): NRLMF and the default, whose
    member it is, refuse them before fitting; fractions in [0, 1] are probabilities."""
    rng = np.random.default_rng(0)
    S_r, S_c = _similarity(8, 1), _similarity(6, 2)
    Y = (rng.random((8, 6)) < 0.4).astype(float)
    Y[0, 0] = 1.0
    message = rf"Y holds values outside \[0, 1\] \(from {low:g} to .*\(Y > 0\).astype\(float\)"
    for model in (
        NRLMF(n_factors=2, max_iter=2, inputs="similarity"),
        BipartiteRegressor(inputs="similarity"),
    ):
        with pytest.raises(DataError, match=message):
            model.fit(S_r, S_c, scale * Y)
    NRLMF(n_factors=2, max_iter=2, inputs="similarity").fit(S_r, S_c, 0.5 * Y)
