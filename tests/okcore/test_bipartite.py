"""Bipartite networks: the one-sided models are okcore estimators on Y and Y^T, the
combinations for new x new pairs, degree-stratified folds, and K x K cross-validation that
never lets a test vertex (its row, its similarity column or its interactions) reach a fit."""

from __future__ import annotations

import numpy as np
import pytest

from okcore import KRRBoostRegressor, OK3ForestRegressor, OKBoostRegressor
from okcore.bipartite import (
    BipartiteRegressor,
    bipartite_cross_validate,
    block_scores,
    degree_stratified_folds,
    side_inputs,
)
from okcore.bipartite.neighbours import NeighbourRegressor
from okcore.bipartite.pairs import sample_pairs
from okcore.exceptions import DataError

CODE = 1000.0  # similarity inputs encode (row id, column id) as CODE * i + j


def _network(n_rows: int = 30, n_cols: int = 24, seed: int = 0):
    """Latent-factor interactions with feature rows for both sides."""
    rng = np.random.default_rng(seed)
    U, V = rng.normal(size=(n_rows, 3)), rng.normal(size=(n_cols, 3))
    Y = (U @ V.T + 0.3 * rng.normal(size=(n_rows, n_cols)) > 1.0).astype(float)
    X_rows = U + 0.1 * rng.normal(size=U.shape)
    X_cols = V + 0.1 * rng.normal(size=V.shape)
    return X_rows, X_cols, Y


def _boost(**kw):
    return OKBoostRegressor(n_estimators=20, learning_rate=0.2, max_splits=4, random_state=0, **kw)


def test_column_model_is_okboost_on_the_transposed_problem() -> None:
    X_rows, X_cols, Y = _network()
    model = BipartiteRegressor(_boost()).fit(X_rows, X_cols, Y)
    direct = _boost().fit(X_cols, Y.T)
    Xq = X_cols[:5] + 0.05
    np.testing.assert_allclose(model.predict_new_cols(Xq), direct.predict(Xq).T, atol=1e-12)
    np.testing.assert_allclose(model.col_weights(Xq), direct.predict_weights(Xq), atol=1e-12)
    row_direct = _boost().fit(X_rows, Y)
    np.testing.assert_allclose(
        model.predict_new_rows(X_rows[:4]), row_direct.predict(X_rows[:4]), atol=1e-12
    )


def test_two_step_orders_agree_and_refit_runs() -> None:
    X_rows, X_cols, Y = _network()
    model = BipartiteRegressor(_boost()).fit(X_rows, X_cols, Y)
    R, C = X_rows[:3] + 0.1, X_cols[:4] - 0.1
    S = model.predict_new_pairs(R, C)
    other = model.row_weights(R) @ model.predict_new_cols(C)  # W_row (Y W_col^T)
    np.testing.assert_allclose(S, other, atol=1e-12)
    np.testing.assert_allclose(model.predict(R, C), S)
    refit = BipartiteRegressor(_boost(), new_pairs="refit").fit(X_rows, X_cols, Y)
    assert refit.predict_new_pairs(R, C).shape == (3, 4)
    np.testing.assert_allclose(refit.predict(X_rows=R), model.predict(X_rows=R))


def test_one_sided_kernel_ridge_is_exact_krr() -> None:
    """One exact KRR per side (the drug-target baseline): the row scores are
    m + k_r (K_r + l I)^-1 (Y - m), m the mean profile (F_0), and two-step is W_row Y W_col^T."""
    rng = np.random.default_rng(3)
    X_rows, X_cols, Y = _network()
    Kr, Kc = X_rows @ X_rows.T, X_cols @ X_cols.T
    kr, kc = rng.normal(size=(3, 3)) @ X_rows.T, rng.normal(size=(4, 3)) @ X_cols.T
    lam = 2.0

    def krr(n):
        return KRRBoostRegressor(
            n_estimators=1, subset_size=n, n_basis=n, basis_selection="random",
            regularization="shrinkage", learning_rate=1.0, input_kernel="precomputed",
            alpha=lam, random_state=0,
        )  # fmt: skip

    model = BipartiteRegressor(krr(len(Kr)), krr(len(Kc))).fit(Kr, Kc, Y)
    m = Y.mean(0)
    expected = m + kr @ np.linalg.solve(Kr + lam * np.eye(len(Kr)), Y - m)
    np.testing.assert_allclose(model.predict_new_rows(kr), expected, atol=1e-8)
    mc = Y.T.mean(0)
    expected_c = mc + kc @ np.linalg.solve(Kc + lam * np.eye(len(Kc)), Y.T - mc)
    np.testing.assert_allclose(model.predict_new_cols(kc), expected_c.T, atol=1e-8)
    S = model.predict_new_pairs(kr, kc)
    np.testing.assert_allclose(S, model.row_weights(kr) @ Y @ model.col_weights(kc).T, atol=1e-8)


def test_degree_stratified_folds() -> None:
    rng = np.random.default_rng(0)
    degrees = rng.poisson(3, size=103)
    folds = degree_stratified_folds(degrees, 4, random_state=0)
    sizes = np.bincount(folds)
    assert sizes.max() - sizes.min() <= 1 and sizes.sum() == 103
    means = [degrees[folds == k].mean() for k in range(4)]
    assert max(means) - min(means) < 0.5  # balanced degrees
    np.testing.assert_array_equal(folds, degree_stratified_folds(degrees, 4, random_state=0))
    with pytest.raises(DataError, match="n_folds"):
        degree_stratified_folds(degrees, 1)


SEEN: list[dict] = []


class RecordingBoost(OKBoostRegressor):
    """OKBoost recording the vertex ids behind every input it fits on or predicts for:
    similarity inputs hold CODE * (own id) + (training item id)."""

    def fit(self, X, Y=None, **kwargs):  # type: ignore[override]
        X = np.asarray(X)
        SEEN.append({"kind": "fit", "ids": set((X[:, 0] // CODE).astype(int)),
                     "columns": set((X[0] % CODE).round().astype(int)), "Y": np.array(Y)})  # fmt: skip
        return super().fit(X, Y, **kwargs)

    def predict_weights(self, X):  # type: ignore[override]
        X = np.asarray(X)
        SEEN.append({"kind": "predict", "ids": set((X[:, 0] // CODE).astype(int)),
                     "columns": set((X[0] % CODE).round().astype(int))})  # fmt: skip
        return super().predict_weights(X)


@pytest.mark.parametrize("new_pairs", ["two-step", "refit", "pair-trees", "kronecker"])
def test_cross_validation_never_leaks_a_test_vertex(new_pairs: str) -> None:
    _, _, Y = _network(20, 16)
    n_rows, n_cols = Y.shape
    rows, cols = np.arange(n_rows), 100 + np.arange(n_cols)  # distinct ids on the two sides
    S_rows = CODE * rows[:, None] + rows[None, :]
    S_cols = CODE * cols[:, None] + cols[None, :]
    model = BipartiteRegressor(RecordingBoost(n_estimators=3), new_pairs=new_pairs)
    SEEN.clear()
    marks: list[int] = []
    result = bipartite_cross_validate(
        model, S_rows, S_cols, Y, n_folds=3, row_inputs="similarity",
        col_inputs="similarity", callback=lambda record: marks.append(len(SEEN)),
    )  # fmt: skip
    assert len(result.folds) == 9
    start = 0
    for record, end in zip(result.folds, marks, strict=True):
        test_r = set(rows[result.row_folds == record["row_fold"]])
        test_c = set(cols[result.col_folds == record["col_fold"]])
        train_r, train_c = set(rows) - test_r, set(cols) - test_c
        learned = Y[np.ix_(sorted(train_r), [c - 100 for c in sorted(train_c)])]
        for entry in SEEN[start:end]:
            # similarity columns: the learned vertices of one side, never a test vertex
            assert entry["columns"] in (train_r, train_c)
            side_test = test_r if entry["columns"] == train_r else test_c
            if entry["kind"] == "fit":  # fitted on learned vertices only ...
                assert entry["ids"] == entry["columns"]
                Yfit = entry["Y"]  # ... with learned x learned interactions only
                if Yfit.shape == learned.shape:
                    np.testing.assert_array_equal(Yfit, learned)
                elif Yfit.shape == learned.T.shape:
                    np.testing.assert_array_equal(Yfit, learned.T)
                else:  # refit's second step: outputs are predicted profiles, no truth
                    assert new_pairs == "refit"
            else:  # predictions for the test vertices of that side
                assert entry["ids"] <= side_test
        start = end
    summary = result.summary()
    assert 0.5 < summary["blocks_auroc"] <= 1 and 0 < summary["pooled_ap"] <= 1


def test_similarity_slicing_is_the_empirical_kernel_map() -> None:
    S = np.arange(25.0).reshape(5, 5)
    train, test = np.array([0, 2, 3]), np.array([1, 4])
    np.testing.assert_array_equal(
        side_inputs(S, test, train, "similarity"), S[[1, 4]][:, [0, 2, 3]]
    )
    np.testing.assert_array_equal(side_inputs(S, test, train, "features"), S[[1, 4]])
    with pytest.raises(DataError, match="square"):
        side_inputs(S[:, :3], test, train, "similarity")


def test_block_scores_and_forest_cv() -> None:
    assert np.isnan(block_scores([0, 0], [0.1, 0.2])["auroc"])
    assert block_scores([0, 1, 1], [0.1, 0.5, 0.7]) == {"auroc": 1.0, "ap": 1.0}
    X_rows, X_cols, Y = _network(24, 20, seed=1)
    forest = BipartiteRegressor(OK3ForestRegressor(n_estimators=20, random_state=0))
    result = bipartite_cross_validate(forest, X_rows, X_cols, Y, n_folds=(2, 3))
    assert len(result.folds) == 6 and result.summary()["new_rows_auroc"] > 0.6


def test_bad_shapes_and_parameters_are_refused() -> None:
    X_rows, X_cols, Y = _network()
    with pytest.raises(DataError, match="one input row per row and per column vertex"):
        BipartiteRegressor(_boost()).fit(X_rows[:-1], X_cols, Y)
    with pytest.raises(DataError, match="pass X_rows"):
        BipartiteRegressor(_boost()).fit(X_rows, X_cols, Y).predict()
    from okcore.exceptions import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="'new_pairs' parameter"):
        BipartiteRegressor(new_pairs="product").fit(X_rows, X_cols, Y)
    with pytest.raises(InvalidParameterError, match="'pair_alpha' parameter"):
        BipartiteRegressor(new_pairs="kronecker", pair_alpha=0.0).fit(X_rows, X_cols, Y)
    with pytest.raises(DataError, match="similarity among the training vertices"):
        BipartiteRegressor(_boost(), new_pairs="kronecker", pair_kernel="precomputed").fit(
            X_rows, X_cols, Y
        )


def test_kronecker_ridge_equals_the_brute_force_solve() -> None:
    """(K_c (x) K_r + alpha I) vec(A) = vec(Y - m) solved densely; f(r, c) = m + k_r A k_c."""
    rng = np.random.default_rng(5)
    X_rows, X_cols, Y = _network(12, 9)
    Kr, Kc = X_rows @ X_rows.T + np.eye(12), X_cols @ X_cols.T + np.eye(9)
    kr, kc = rng.normal(size=(4, 12)), rng.normal(size=(3, 9))
    alpha, m = 0.7, Y.mean()
    big = np.kron(Kc, Kr) + alpha * np.eye(12 * 9)  # vec stacks columns: Kc (x) Kr
    A = np.linalg.solve(big, (Y - m).ravel(order="F")).reshape(12, 9, order="F")
    model = BipartiteRegressor(
        _boost(), new_pairs="kronecker", pair_kernel="precomputed", pair_alpha=alpha
    ).fit(Kr, Kc, Y)
    np.testing.assert_allclose(model.predict_new_pairs(kr, kc), m + kr @ A @ kc.T, atol=1e-9)
    linear = BipartiteRegressor(_boost(), new_pairs="kronecker").fit(X_rows, X_cols, Y)
    expected = BipartiteRegressor(_boost(), new_pairs="kronecker", pair_kernel="precomputed").fit(
        X_rows @ X_rows.T / 3, X_cols @ X_cols.T / 3, Y
    )
    R, C = X_rows[:2] + 0.1, X_cols[:3]
    np.testing.assert_allclose(
        linear.predict_new_pairs(R, C),
        expected.predict_new_pairs(R @ X_rows.T / 3, C @ X_cols.T / 3),
        atol=1e-9,
    )


def test_pair_sampling_keeps_every_interaction_and_the_bound() -> None:
    rng = np.random.default_rng(0)
    Y = (rng.random((40, 30)) < 0.05).astype(float)
    picked = sample_pairs(Y, 200, rng)
    assert picked.size == 200 and np.unique(picked).size == 200
    assert set(np.flatnonzero(Y.ravel())) <= set(picked)
    assert sample_pairs(Y, 5000, rng).size == Y.size
    assert sample_pairs(Y, 10, rng).size == 10  # more interactions than the bound


def test_pair_trees_are_the_forest_on_concatenated_pair_rows() -> None:
    X_rows, X_cols, Y = _network(20, 15)
    forest = OK3ForestRegressor(n_estimators=10, splitter="random", bootstrap=False, random_state=0)
    model = BipartiteRegressor(
        _boost(), new_pairs="pair-trees", pair_estimator=forest, max_pairs=10**6
    ).fit(X_rows, X_cols, Y)
    assert model.pair_model_.n_pairs_ == Y.size
    rows, cols = np.divmod(np.arange(Y.size), Y.shape[1])
    direct = forest.fit(np.hstack([X_rows[rows], X_cols[cols]]), Y.ravel()[:, None])
    R, C = X_rows[:4] + 0.05, X_cols[:6] - 0.05
    r, c = np.divmod(np.arange(24), 6)
    expected = direct.predict(np.hstack([R[r], C[c]])).reshape(4, 6)
    np.testing.assert_allclose(model.predict_new_pairs(R, C), expected, atol=1e-12)
    default = BipartiteRegressor(_boost(), new_pairs="pair-trees", max_pairs=150)
    S = default.fit(X_rows, X_cols, Y).predict(R, C)
    assert S.shape == (4, 6) and default.pair_model_.n_pairs_ == 150
    with pytest.raises(DataError, match="set after fit"):
        default.set_params(new_pairs="kronecker").predict_new_pairs(R, C)


PAIRS_SEEN: list[dict] = []


class RecordingForest(OK3ForestRegressor):
    """An OK3 forest on pair rows [similarity row | similarity column] recording the vertex ids
    behind each pair row and the training items of its similarity columns."""

    n_row_items = 0

    def _record(self, kind: str, X) -> None:
        X = np.asarray(X)
        n = type(self).n_row_items
        PAIRS_SEEN.append({"kind": kind, "rows": set((X[:, 0] // CODE).astype(int)),
                           "cols": set((X[:, n] // CODE).astype(int)),
                           "row_items": set((X[0, :n] % CODE).round().astype(int)),
                           "col_items": set((X[0, n:] % CODE).round().astype(int))})  # fmt: skip

    def fit(self, X, Y=None, **kwargs):  # type: ignore[override]
        self._record("fit", X)
        return super().fit(X, Y, **kwargs)

    def predict(self, X):  # type: ignore[override]
        self._record("predict", X)
        return super().predict(X)


def test_pair_trees_never_see_a_test_vertex_in_cross_validation() -> None:
    _, _, Y = _network(12, 10)
    rows, cols = np.arange(12), 100 + np.arange(10)
    S_rows = CODE * rows[:, None] + rows[None, :]
    S_cols = CODE * cols[:, None] + cols[None, :]
    RecordingForest.n_row_items = 6  # 12 rows in 2 folds: 6 learned rows
    model = BipartiteRegressor(
        OKBoostRegressor(n_estimators=2),
        new_pairs="pair-trees",
        pair_estimator=RecordingForest(n_estimators=3, splitter="random", random_state=0),
    )
    PAIRS_SEEN.clear()
    result = bipartite_cross_validate(
        model, S_rows, S_cols, Y, n_folds=2, row_inputs="similarity", col_inputs="similarity"
    )
    assert len(PAIRS_SEEN) == 8
    for k, record in enumerate(result.folds):
        test_r = set(rows[result.row_folds == record["row_fold"]])
        test_c = set(cols[result.col_folds == record["col_fold"]])
        fit, predict = PAIRS_SEEN[2 * k], PAIRS_SEEN[2 * k + 1]
        for entry in (fit, predict):
            assert entry["row_items"] == set(rows) - test_r
            assert entry["col_items"] == set(cols) - test_c
        assert fit["rows"] == set(rows) - test_r and fit["cols"] == set(cols) - test_c
        assert predict["rows"] == test_r and predict["cols"] == test_c


def test_grid_search_scores_candidates_on_inner_folds_of_the_training_vertices_only() -> None:
    from okcore.bipartite import BipartiteGridSearch

    _, _, Y = _network(20, 16)
    rows, cols = np.arange(20), 100 + np.arange(16)
    S_rows = CODE * rows[:, None] + rows[None, :]
    S_cols = CODE * cols[:, None] + cols[None, :]
    grid = {"row_estimator__learning_rate": [0.1, 0.5]}
    search = BipartiteGridSearch(
        BipartiteRegressor(RecordingBoost(n_estimators=3, random_state=0)), grid,
        row_inputs="similarity", col_inputs="similarity",
    )  # fmt: skip
    SEEN.clear()
    marks: list[int] = []
    result = bipartite_cross_validate(
        search, S_rows, S_cols, Y, n_folds=2, row_inputs="similarity", col_inputs="similarity",
        callback=lambda record: marks.append(len(SEEN)),
    )  # fmt: skip
    start = 0
    for record, end in zip(result.folds, marks, strict=True):
        test = set(rows[result.row_folds == record["row_fold"]]) | set(
            cols[result.col_folds == record["col_fold"]]
        )
        for entry in SEEN[start:end]:  # inner fits, refit and predictions alike
            assert not entry["columns"] & test
            if entry["kind"] == "fit":
                assert not entry["ids"] & test
        start = end
        assert record["best_params"]["row_estimator__learning_rate"] in (0.1, 0.5)
    # the choice is the argmax of the inner scores, refitted on all the training vertices
    fitted = search.fit(S_rows, S_cols, Y)
    inner = [
        bipartite_cross_validate(
            BipartiteRegressor(RecordingBoost(n_estimators=3, learning_rate=lr, random_state=0)),
            S_rows,
            S_cols, Y, n_folds=2, row_inputs="similarity", col_inputs="similarity",
        ).summary()["blocks_auroc"]
        for lr in (0.1, 0.5)
    ]  # fmt: skip
    assert [r["score"] for r in fitted.cv_results_] == pytest.approx(inner)
    assert fitted.best_params_ == {
        "row_estimator__learning_rate": (0.1, 0.5)[int(np.argmax(inner))]
    }
    assert fitted.best_estimator_.n_rows_ == 20


def _side_weights(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 4, n).astype(float) + (np.arange(n) < 2)


@pytest.mark.parametrize("new_pairs", ["two-step", "refit"])
def test_row_and_column_weights_are_the_one_sided_fits_sample_weight(new_pairs: str) -> None:
    X_rows, X_cols, Y = _network()
    w_rows, w_cols = _side_weights(len(X_rows), 1), _side_weights(len(X_cols), 2)
    kw = dict(max_bins=255)
    model = BipartiteRegressor(_boost(**kw), new_pairs=new_pairs).fit(
        X_rows, X_cols, Y, row_weight=w_rows, col_weight=w_cols
    )
    rows = _boost(**kw).fit(X_rows, Y, sample_weight=w_rows)
    cols = _boost(**kw).fit(X_cols, Y.T, sample_weight=w_cols)
    R, C = X_rows[:3] + 0.1, X_cols[:4] - 0.1
    np.testing.assert_allclose(model.predict(X_rows=R), rows.predict(R), atol=1e-12)
    np.testing.assert_allclose(model.predict(X_cols=C), cols.predict(C).T, atol=1e-12)
    if new_pairs == "two-step":
        expected = rows.predict(R) @ cols.predict_weights(C).T
    else:  # the second step's fits take the same vertices' weights
        profiles = rows.predict(R)
        col_side = _boost(**kw).fit(X_cols, profiles.T, sample_weight=w_cols)
        col_profiles = cols.predict(C).T
        row_side = _boost(**kw).fit(X_rows, col_profiles, sample_weight=w_rows)
        by_cols = col_side.predict_weights(C) @ profiles.T
        expected = 0.5 * (by_cols.T + row_side.predict_weights(R) @ col_profiles)
    np.testing.assert_allclose(model.predict(R, C), expected, atol=1e-12)
    only_rows = BipartiteRegressor(_boost(**kw)).fit(X_rows, X_cols, Y, row_weight=w_rows)
    np.testing.assert_allclose(
        only_rows.predict(X_cols=C), _boost(**kw).fit(X_cols, Y.T).predict(C).T, atol=1e-12
    )


@pytest.mark.parametrize(
    ("model", "weights", "message"),
    [
        (BipartiteRegressor(), {"row_weight": np.ones(30) * 2}, "Name a model"),
        (
            BipartiteRegressor(_boost(), new_pairs="kronecker"),
            {"col_weight": np.ones(24) * 2},
            "new_pairs='two-step'",
        ),
        (BipartiteRegressor(_boost()), {"row_weight": np.ones(3)}, "row_weight / col_weight"),
        (BipartiteRegressor(_boost()), {"col_weight": -np.ones(24)}, "negative"),
        (
            BipartiteRegressor(NeighbourRegressor()),
            {"row_weight": np.ones(30) * 2},
            "does not take sample_weight",
        ),
    ],
)
def test_weights_a_bipartite_model_cannot_take_are_a_clear_error(model, weights, message) -> None:
    X_rows, X_cols, Y = _network()
    with pytest.raises(DataError, match=message):
        model.fit(X_rows, X_cols, Y, **weights)


@pytest.mark.parametrize("form", ["DataFrame", "list"])
def test_cross_validation_takes_data_frames_and_lists(form) -> None:
    pd = pytest.importorskip("pandas")
    X_rows, X_cols, Y = _network(24, 20, seed=1)
    given = (lambda a: pd.DataFrame(a)) if form == "DataFrame" else (lambda a: a.tolist())
    forest = BipartiteRegressor(OK3ForestRegressor(n_estimators=5, random_state=0))
    expected = bipartite_cross_validate(forest, X_rows, X_cols, Y, n_folds=2).summary()
    got = bipartite_cross_validate(forest, given(X_rows), given(X_cols), given(Y), n_folds=2)
    assert got.summary() == pytest.approx(expected, nan_ok=True)
