"""Weighted nearest neighbours, interaction recovery, profiles through the other side's
similarity, and the default (a rank average): brute-force references on tiny networks, seed
determinism and no leakage of an outer test vertex into the default's fits."""

from __future__ import annotations

import numpy as np
import pytest

import okcore.bipartite.default as default_module
import okcore.defaults as okcore_defaults
from okcore import io
from okcore.bipartite import (
    NRLMF,
    BipartiteRegressor,
    NeighbourRegressor,
    RankAveragedBipartite,
    bipartite_cross_validate,
    neighbour_weights,
    recover_interactions,
)
from okcore.bipartite.ensemble import rank_average
from okcore.bipartite.model import psd_sqrt
from okcore.exceptions import DataError

Y54 = np.array(
    [[1, 0, 0, 1], [0, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=np.float64
)


def _similarity(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.random((n, 3))
    S = A @ A.T
    d = np.sqrt(np.diag(S))
    return S / np.outer(d, d)


def _brute_weights(S: np.ndarray, k: int, eta: float, exclude_self: bool) -> np.ndarray:
    """The weights by explicit loops: rank the others by similarity, keep k."""
    q, n = S.shape
    W = np.zeros((q, n))
    for i in range(q):
        others = [j for j in range(n) if not (exclude_self and j == i)]
        ranked = sorted(others, key=lambda j: (-max(S[i, j], 0.0), j))[:k]
        z = sum(max(S[i, j], 0.0) for j in ranked)
        for r, j in enumerate(ranked):
            W[i, j] = eta**r * max(S[i, j], 0.0) / z if z > 0 else 0.0
    return W


def test_neighbour_weights_match_loops_and_hand_values() -> None:
    S = _similarity(5, 0)
    for k, eta in ((1, 0.7), (2, 0.5), (3, 1.0), (10, 0.8)):
        for exclude in (False, True):
            np.testing.assert_allclose(
                neighbour_weights(S, k, eta, exclude), _brute_weights(S, k, eta, exclude)
            )
    # by hand: similarities 0.9, 0.5, 0.1 to three items, k = 2, eta = 0.5
    W = neighbour_weights(np.array([[0.1, 0.9, 0.5]]), 2, 0.5)
    np.testing.assert_allclose(W, [[0.0, 0.9 / 1.4, 0.5 * 0.5 / 1.4]])
    # ties keep the lower index first; negative similarities count as 0
    np.testing.assert_allclose(neighbour_weights(np.array([[0.5, 0.5, -1.0]]), 1, 0.7), [[1, 0, 0]])


def test_recovery_on_a_5x4_matrix_matches_loops() -> None:
    S_r, S_c = _similarity(5, 1), _similarity(4, 2)
    k, eta = 2, 0.7
    expected = np.empty_like(Y54)
    Wr = _brute_weights(S_r, k, eta, True)
    Wc = _brute_weights(S_c, k, eta, True)
    for i in range(5):
        for j in range(4):
            by_rows = sum(Wr[i, a] * Y54[a, j] for a in range(5))
            by_cols = sum(Wc[j, b] * Y54[i, b] for b in range(4))
            expected[i, j] = max(Y54[i, j], 0.5 * (by_rows + by_cols))
    got = recover_interactions(Y54, S_r, S_c, k, eta)
    np.testing.assert_allclose(got, expected)
    assert (got[Y54 == 1] == 1).all() and got.min() >= 0 and got.max() <= 1
    with pytest.raises(DataError, match="recovery needs"):
        recover_interactions(Y54, S_r[:4, :4], S_c)


def test_wknnir_scores_are_recovered_weighted_neighbours() -> None:
    S_r, S_c = _similarity(7, 3), _similarity(6, 4)
    rng = np.random.default_rng(5)
    Y = (rng.random((7, 6)) < 0.35).astype(float)
    train_r, test_r = np.arange(5), np.arange(5, 7)
    train_c, test_c = np.arange(4), np.arange(4, 6)
    model = BipartiteRegressor(
        NeighbourRegressor(3, 0.6), inputs="similarity", recovery_neighbors=2, recovery_eta=0.9
    ).fit(S_r[np.ix_(train_r, train_r)], S_c[np.ix_(train_c, train_c)], Y[np.ix_(train_r, train_c)])
    Y_rec = recover_interactions(
        Y[np.ix_(train_r, train_c)], S_r[np.ix_(train_r, train_r)],
        S_c[np.ix_(train_c, train_c)], 2, 0.9,
    )  # fmt: skip
    np.testing.assert_allclose(model.Y_, Y_rec)
    Wr = _brute_weights(S_r[np.ix_(test_r, train_r)], 3, 0.6, False)
    Wc = _brute_weights(S_c[np.ix_(test_c, train_c)], 3, 0.6, False)
    np.testing.assert_allclose(model.predict_new_rows(S_r[np.ix_(test_r, train_r)]), Wr @ Y_rec)
    np.testing.assert_allclose(model.predict_new_cols(S_c[np.ix_(test_c, train_c)]), Y_rec @ Wc.T)
    np.testing.assert_allclose(
        model.predict_new_pairs(S_r[np.ix_(test_r, train_r)], S_c[np.ix_(test_c, train_c)]),
        Wr @ Y_rec @ Wc.T,
    )


def test_cosine_neighbours_on_features() -> None:
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(6, 3)), rng.random((6, 2))
    model = NeighbourRegressor(2, 1.0, "cosine").fit(X, Y)
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    np.testing.assert_allclose(
        model.predict_weights(X[:2]), _brute_weights(Xn[:2] @ Xn.T, 2, 1.0, False)
    )
    with pytest.raises(DataError, match="precomputed"):
        NeighbourRegressor().fit(X, Y)


class RecordingOutputs(NeighbourRegressor):
    """Records the outputs it is fitted on."""

    seen: list[np.ndarray] = []

    def fit(self, X, Y, kernel=None, **kw):  # type: ignore[no-untyped-def]
        RecordingOutputs.seen.append(np.asarray(Y).copy())
        return super().fit(X, Y, kernel=kernel)


def test_output_similarity_fits_profiles_through_the_other_side() -> None:
    S_r, S_c = _similarity(5, 6), _similarity(4, 7)
    RecordingOutputs.seen = []
    BipartiteRegressor(RecordingOutputs(2), inputs="similarity", output_similarity=True).fit(
        S_r, S_c, Y54
    )
    rows, cols = RecordingOutputs.seen
    # the linear kernel of the fitted outputs is the profile kernel y_i^T S_c y_j
    np.testing.assert_allclose(rows @ rows.T, Y54 @ S_c @ Y54.T, atol=1e-10)
    np.testing.assert_allclose(cols @ cols.T, Y54.T @ S_r @ Y54, atol=1e-10)
    R = psd_sqrt(S_c)
    np.testing.assert_allclose(R @ R, S_c, atol=1e-10)


def _network(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    Xr, Xc = rng.normal(size=(16, 4)), rng.normal(size=(14, 3))
    logits = Xr[:, :1] @ Xc[:, :1].T + Xr[:, 1:2] * 0.5
    Y = (logits > 0.6).astype(float)
    return Xr, Xc, Y


class RecordingRows(NeighbourRegressor):
    """Cosine neighbours recording the first input column (a vertex id) of every fit."""

    ids: list[set[int]] = []

    def fit(self, X, Y, kernel=None, **kw):  # type: ignore[no-untyped-def]
        RecordingRows.ids.append(set(np.asarray(X)[:, 0].astype(int).tolist()))
        return super().fit(X, Y, kernel=kernel)


def test_default_never_sees_outer_test_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    Xr, Xc, Y = _network()
    Xr = np.column_stack([np.arange(16), Xr])  # column 0: the row's id, recorded at each fit
    Xc = np.column_stack([1000 + np.arange(14), Xc])

    def members(inputs: str, random_state: int = 0, **_: object) -> dict[str, object]:
        return {
            "a": BipartiteRegressor(RecordingRows(2, 0.5, "cosine"), recovery_neighbors=2),
            "b": BipartiteRegressor(RecordingRows(4, 0.9, "cosine")),
            "c": NRLMF(4, max_iter=5),
        }

    monkeypatch.setattr(default_module, "default_members", members)
    monkeypatch.setattr(okcore_defaults, "BIPARTITE_WEIGHTS", (1.0, 1.0, 2.0))
    monkeypatch.setattr(okcore_defaults, "BIPARTITE_BLOCK_WEIGHTS", {"new_rows": (0.0, 1.0, 2.0)})
    RecordingRows.ids = []
    result = bipartite_cross_validate(BipartiteRegressor(), Xr, Xc, Y, n_folds=2, random_state=0)
    seen_rows = [s for s in RecordingRows.ids if min(s) < 1000]
    outer_train = [set(np.flatnonzero(result.row_folds != a).tolist()) for a in range(2)]
    assert len(seen_rows) == 2 * 2 * 2  # two members x 2 x 2 configurations
    # every row fit saw exactly the training rows of one outer configuration
    assert all(any(s == t for t in outer_train) for s in seen_rows)


@pytest.mark.slow  # two fits of the default, 300 boosting rounds per side each
def test_default_is_the_seeded_rank_average_of_its_members() -> None:
    Xr, Xc, Y = _network(1)
    first = BipartiteRegressor(random_state=3).fit(Xr, Xc, Y)
    again = BipartiteRegressor(random_state=3).fit(Xr, Xc, Y)
    for args in ((Xr[:3],), (None, Xc[:2]), (Xr[:3], Xc[:2])):
        np.testing.assert_array_equal(first.predict(*args), again.predict(*args))
    ensemble = first.default_model_
    assert isinstance(ensemble, RankAveragedBipartite)
    assert len(ensemble.members_) == len(okcore_defaults.BIPARTITE_WEIGHTS) == 4
    assert isinstance(ensemble.members_[2], NRLMF)
    new_rows = okcore_defaults.BIPARTITE_BLOCK_WEIGHTS["new_rows"]
    scored = [(m, w) for m, w in zip(ensemble.members_, new_rows, strict=True) if w > 0]
    expected = rank_average([m.predict_new_rows(Xr[:3]) for m, _ in scored], [w for _, w in scored])
    np.testing.assert_allclose(first.predict(Xr[:3]), expected)
    expected = rank_average(
        [m.predict_new_cols(Xc[:2]) for m in ensemble.members_],
        list(okcore_defaults.BIPARTITE_WEIGHTS),
    )
    np.testing.assert_allclose(first.predict(None, Xc[:2]), expected)
    with pytest.raises(DataError, match="no W\\^F"):
        first.row_weights(Xr[:3])


def test_neighbour_regressor_saves_and_loads_without_pickle(tmp_path) -> None:  # type: ignore[no-untyped-def]
    S = _similarity(6, 8)
    Y = np.random.default_rng(0).random((6, 3))
    for model, X_new in (
        (NeighbourRegressor(3, 0.8).fit(S, Y), S[:2]),
        (NeighbourRegressor(2, 0.5, "cosine").fit(S[:, :4], Y), S[:2, :4]),
    ):
        loaded = io.load(io.save(model, tmp_path / "m"))
        assert isinstance(loaded, NeighbourRegressor)
        assert loaded.get_params() == model.get_params()
        np.testing.assert_array_equal(loaded.predict(X_new), model.predict(X_new))
