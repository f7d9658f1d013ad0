"""okcore.model_selection: folds that never leak test outputs, CV and grid search, score()."""

from __future__ import annotations

import numpy as np
import pytest
from okdata import make_regression, rbf_gram

from okcore import DiffusionKernel, OK3Regressor, OKBoostRegressor, metrics
from okcore.exceptions import DataError, InvalidParameterError
from okcore.model_selection import cross_validate, grid_search, induced_edges, kfold

SMALL = {"n_estimators": 15, "learning_rate": 0.3, "max_splits": 3, "random_state": 0}


class RecordingBoost(OKBoostRegressor):
    """OKBoost that keeps what each fit was given, to check what a fold sees."""

    seen: list[dict] = []

    def fit(self, X, Y=None, *, gram=None, kernel=None, eval_set=None, callback=None):
        RecordingBoost.seen.append({"n": X.shape[0], "gram": gram, "kernel": kernel})
        return super().fit(X, Y, gram=gram, kernel=kernel)


def _community_graph(n: int = 60, seed: int = 0):
    """Two communities, inputs that reveal the community: edges are predictable."""
    rng = np.random.default_rng(seed)
    group = np.arange(n) % 2
    X = np.c_[group + 0.3 * rng.standard_normal(n), rng.random((n, 2))]
    pairs = np.array([(a, b) for a in range(n) for b in range(a + 1, n)])
    p = np.where(group[pairs[:, 0]] == group[pairs[:, 1]], 0.3, 0.02)
    return X, pairs[rng.random(len(pairs)) < p]


def test_kfold_puts_every_row_in_exactly_one_test_fold():
    folds = kfold(23, 4, random_state=0)
    tests = np.concatenate([test for _, test in folds])
    assert sorted(tests) == list(range(23))
    for train, test in folds:
        assert not set(train) & set(test) and len(train) + len(test) == 23
        assert abs(len(test) - 23 / 4) < 1
    with pytest.raises(DataError, match="at least 5 samples"):
        kfold(4, 5)


def test_cross_validate_vectors_equals_a_manual_loop():
    X, Y = make_regression(n=60)
    est = OKBoostRegressor(**SMALL)
    got = cross_validate(est, X, Y, cv=3, random_state=1)
    for k, (train, test) in enumerate(kfold(60, 3, random_state=1)):
        fitted = OKBoostRegressor(**SMALL).fit(X[train], Y[train])
        assert got["err_phi"][k] == pytest.approx(
            metrics.err_phi(fitted, X[test], Y[test]), rel=1e-12
        )
        assert got["err_y"][k] == pytest.approx(metrics.err_y(fitted, X[test], Y[test]), rel=1e-12)
        assert got["r2"][k] == pytest.approx(fitted.score(X[test], Y[test]), rel=1e-12)
    assert not hasattr(est, "ensemble_")  # folds fit clones, never the given estimator


def test_gram_folds_train_on_the_training_block_only():
    X, Y = make_regression(n=40)
    K = rbf_gram(Y, Y, 0.5)
    RecordingBoost.seen.clear()
    got = cross_validate(RecordingBoost(**SMALL), X, gram=K, cv=4, random_state=2)
    folds = kfold(40, 4, random_state=2)
    for k, (seen, (train, test)) in enumerate(zip(RecordingBoost.seen, folds, strict=True)):
        # a fold that saw a test output would have a bigger block or other values
        np.testing.assert_array_equal(seen["gram"], K[np.ix_(train, train)])
        fitted = OKBoostRegressor(**SMALL).fit(X[train], gram=K[np.ix_(train, train)])
        expected = metrics.err_phi(
            fitted, X[test], gram_cross=K[np.ix_(test, train)], gram_diag=np.diag(K)[test]
        )
        assert got["err_phi"][k] == pytest.approx(expected, rel=1e-12)


def test_graph_folds_see_only_the_graph_induced_on_training_vertices():
    X, edges = _community_graph()
    n = len(X)
    RecordingBoost.seen.clear()
    got = cross_validate(
        RecordingBoost(**SMALL), X, kernel=DiffusionKernel(edges, 1.0), cv=3, random_state=0
    )
    for seen, (train, _) in zip(RecordingBoost.seen, kfold(n, 3, random_state=0), strict=True):
        fold_edges = seen["kernel"].edges
        assert seen["n"] == len(train)
        # every edge the fold saw is an original edge between two training vertices ...
        original = {tuple(sorted(e)) for e in edges.tolist()}
        assert {tuple(sorted(train[e].tolist())) for e in fold_edges} <= original
        # ... and every such edge is there (the induced graph, not fewer edges)
        inside = [e for e in edges if np.isin(e, train).all()]
        assert len(fold_edges) == len(inside)
    assert set(got) == {"auc", "auc_known"}
    assert got["auc"].mean() > 0.7  # the inputs reveal the communities


def test_graph_auc_matches_the_network_auc_of_a_manual_fold():
    X, edges = _community_graph(seed=3)
    n = len(X)
    got = cross_validate(
        OKBoostRegressor(**SMALL), X, kernel=DiffusionKernel(edges, 1.0), cv=3,
        scoring="auc", random_state=5,
    )  # fmt: skip
    train, test = kfold(n, 3, random_state=5)[0]
    fitted = OKBoostRegressor(**SMALL).fit(
        X[train], kernel=DiffusionKernel(induced_edges(edges, train, n), 1.0)
    )
    A = np.zeros((n, n), dtype=int)
    A[edges[:, 0], edges[:, 1]] = A[edges[:, 1], edges[:, 0]] = 1
    expected = metrics.network_auc(
        fitted.predict_kernel(X[test]), fitted.predict_kernel(X[test], X[train]),
        A[np.ix_(test, test)], A[np.ix_(test, train)],
    )  # fmt: skip
    assert got["auc"][0] == pytest.approx(expected, rel=1e-12)


def test_grid_search_picks_the_best_mean_and_refits():
    X, Y = make_regression(n=60)
    result = grid_search(
        OKBoostRegressor(**SMALL), {"max_splits": [1, 4], "learning_rate": [0.05, 0.5]}, X, Y,
        cv=3, random_state=0,
    )  # fmt: skip
    means = [row["err_phi"]["mean"] for row in result.table]
    assert [row["params"] for row in result.table][int(np.argmin(means))] == result.best_params
    for row in result.table:
        direct = cross_validate(
            OKBoostRegressor(**{**SMALL, **row["params"]}), X, Y, cv=3, random_state=0,
            scoring="err_phi",
        )  # fmt: skip
        np.testing.assert_allclose(row["err_phi"]["folds"], direct["err_phi"], rtol=1e-12)
    assert result.best_estimator.max_splits == result.best_params["max_splits"]
    assert result.best_estimator.n_train_ == 60
    by_r2 = grid_search(OKBoostRegressor(**SMALL), {"max_splits": [1, 4]}, X, Y, cv=3,
                        scoring=["err_phi", "r2"], criterion="r2", refit=False)  # fmt: skip
    r2 = [row["r2"]["mean"] for row in by_r2.table]
    assert by_r2.best_params == by_r2.table[int(np.argmax(r2))]["params"]


def test_score_is_scikit_learns_variance_weighted_r2_for_the_linear_kernel():
    from sklearn.metrics import r2_score

    X, Y = make_regression(n=50)
    Xt, Yt = make_regression(n=30, seed=1)
    est = OKBoostRegressor(**SMALL).fit(X, Y)
    expected = r2_score(Yt, est.predict(Xt), multioutput="variance_weighted")
    assert est.score(Xt, Yt) == pytest.approx(expected, rel=1e-10)
    y = Y[:, 0]
    single = OK3Regressor(max_splits=4).fit(X, y)
    assert single.score(Xt, Yt[:, 0]) == pytest.approx(r2_score(Yt[:, 0], single.predict(Xt)))


def test_scikit_learn_cross_val_score_and_grid_search_work():
    from sklearn.model_selection import GridSearchCV, cross_val_score

    X, Y = make_regression(n=60)
    scores = cross_val_score(OKBoostRegressor(**SMALL), X, Y, cv=3)
    assert scores.shape == (3,) and np.all(scores < 1)
    search = GridSearchCV(OKBoostRegressor(**SMALL), {"max_splits": [1, 3]}, cv=3).fit(X, Y)
    assert search.best_params_["max_splits"] in (1, 3)


def test_score_refuses_gram_models_and_bad_requests_are_clear():
    X, Y = make_regression(n=30)
    K = rbf_gram(Y, Y, 0.5)
    est = OKBoostRegressor(**SMALL).fit(X, gram=K)
    with pytest.raises(DataError, match="output vectors"):
        est.score(X, Y)
    with pytest.raises(DataError, match="not available for Gram outputs"):
        cross_validate(OKBoostRegressor(**SMALL), X, gram=K, scoring="auc")
    with pytest.raises(DataError, match="one form"):
        cross_validate(OKBoostRegressor(**SMALL), X, Y, gram=K)
    with pytest.raises(InvalidParameterError, match=r"unknown parameter\(s\) \[.depth.\]"):
        grid_search(OKBoostRegressor(**SMALL), {"depth": [1]}, X, Y)
    with pytest.raises(DataError, match="non-empty list"):
        grid_search(OKBoostRegressor(**SMALL), {"max_splits": 3}, X, Y)


def test_the_search_callback_hears_every_fold_fit_with_its_task():
    X, Y = make_regression(n=30)
    heard = []
    grid = {"max_splits": [1, 3]}
    plain = grid_search(OKBoostRegressor(**SMALL), grid, X, Y, cv=3, random_state=0)
    result = grid_search(
        OKBoostRegressor(**SMALL), grid, X, Y, cv=3, random_state=0,
        callback=lambda task, p: heard.append((task, p.phase, p.done, p.total)),
    )  # fmt: skip
    assert result.table == plain.table  # reporting changes nothing
    assert sorted({task for task, *_ in heard}) == list(range(6))  # 2 candidates x 3 folds
    for task in range(6):
        trees = [(done, total) for t, phase, done, total in heard if t == task and phase == "trees"]
        assert trees == [(d, 15) for d in range(1, 16)]
    folds = []
    cross_validate(OK3Regressor(max_splits=2), X, Y, cv=4, callback=lambda k, p: folds.append(k))
    assert sorted(set(folds)) == [0, 1, 2, 3]


def test_the_search_ignores_a_stop_request_and_stops_when_the_callback_raises():
    X, Y = make_regression(n=30)
    result = grid_search(
        OKBoostRegressor(**SMALL), {"max_splits": [2]}, X, Y, cv=3, random_state=0,
        callback=lambda task, p: True,  # a fit told to stop would be scored truncated
    )  # fmt: skip
    plain = grid_search(OKBoostRegressor(**SMALL), {"max_splits": [2]}, X, Y, cv=3, random_state=0)
    assert result.table == plain.table

    class Stop(Exception):
        pass

    def stop_at_task_1(task, progress):
        if task == 1:
            raise Stop

    with pytest.raises(Stop):
        grid_search(OKBoostRegressor(**SMALL), {"max_splits": [2]}, X, Y, cv=3,
                    callback=stop_at_task_1)  # fmt: skip


@pytest.mark.parametrize("form", ["DataFrame", "list"])
def test_cross_validate_and_grid_search_take_data_frames_and_lists(form):
    pd = pytest.importorskip("pandas")
    X, Y = make_regression(n=30)
    given = (lambda a: pd.DataFrame(a)) if form == "DataFrame" else (lambda a: a.tolist())
    est = OKBoostRegressor(n_estimators=5, random_state=0)
    expected = cross_validate(est, X, Y, cv=3, random_state=0)
    got = cross_validate(est, given(X), given(Y), cv=3, random_state=0)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name])
    grid = {"learning_rate": [0.1, 0.3]}
    search = grid_search(est, grid, given(X), given(Y), cv=3, random_state=0)
    assert search.best_params == grid_search(est, grid, X, Y, cv=3, random_state=0).best_params
    assert search.best_estimator.predict(X[:2]).shape == (2, Y.shape[1])


def test_folds_spread_the_rows_of_positive_weight():
    """With most weights 0, cross_validate and grid_search deal the weighted rows to every
    fold (kfold's ``weight``), so each fold fits and scores some weight."""
    X, Y = make_regression(n=80)
    weight = np.r_[np.zeros(74), np.ones(6)]
    est = OKBoostRegressor(n_estimators=5, random_state=0)
    scores = cross_validate(est, X, Y, cv=3, random_state=0, scoring="r2", sample_weight=weight)
    assert np.isfinite(scores["r2"]).all()
    for _, test in kfold(80, 3, 0, weight):
        assert weight[test].sum() > 0
    result = grid_search(
        est, {"learning_rate": [0.1, 0.3]}, X, Y, cv=3, random_state=0, scoring="r2",
        sample_weight=weight,
    )  # fmt: skip
    assert result.best_params["learning_rate"] in (0.1, 0.3)
