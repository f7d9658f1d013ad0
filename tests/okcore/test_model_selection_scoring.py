"""okcore.model_selection with okcore.scoring: named scores of every output form, callables,
the direction of each score, shared fits over n_estimators and successive halving."""

from __future__ import annotations

import numpy as np
import pytest
from okdata import make_regression, rbf_gram

from okcore import DiffusionKernel, OK3Regressor, OKBoostRegressor, metrics
from okcore.exceptions import DataError
from okcore.model_selection import (
    cross_validate,
    first_stages,
    grid_search,
    halving_schedule,
    induced_edges,
    kfold,
    search_fits,
)
from okcore.scoring import SCORERS, FoldTruth, available_scores

SMALL = {"n_estimators": 15, "learning_rate": 0.3, "max_splits": 3, "random_state": 0}


class CountingBoost(OKBoostRegressor):
    """OKBoost that counts its fits and their trees."""

    fits: list[int] = []

    def fit(self, X, Y=None, *, gram=None, kernel=None, eval_set=None, callback=None):
        CountingBoost.fits.append(self.n_estimators)
        return super().fit(X, Y, gram=gram, kernel=kernel, callback=callback)


def _labels(n: int = 90, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Label rows (n, 4) that the first inputs predict, with noise."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 5))
    logits = np.c_[X[:, 0], 1 - X[:, 0], X[:, 1], X[:, 0] * X[:, 1]] * 4 - 2
    Y = (rng.random((n, 4)) < 1 / (1 + np.exp(-logits))).astype(float)
    return X, Y


def _community_graph(n: int = 60, seed: int = 0):
    rng = np.random.default_rng(seed)
    group = np.arange(n) % 2
    X = np.c_[group + 0.3 * rng.standard_normal(n), rng.random((n, 2))]
    pairs = np.array([(a, b) for a in range(n) for b in range(a + 1, n)])
    p = np.where(group[pairs[:, 0]] == group[pairs[:, 1]], 0.3, 0.02)
    return X, pairs[rng.random(len(pairs)) < p]


def test_label_scores_equal_the_metrics_of_a_manual_fold():
    X, Y = _labels()
    names = ["auroc", "average_precision", "f1", "hamming_loss", "ranking_loss", "macro_f1",
             "label_ranking_average_precision", "coverage"]  # fmt: skip
    got = cross_validate(OKBoostRegressor(**SMALL), X, Y, scoring=names, cv=3, random_state=1)
    for k, (train, test) in enumerate(kfold(len(X), 3, random_state=1)):
        P = OKBoostRegressor(**SMALL).fit(X[train], Y[train]).predict(X[test])
        T = Y[test]
        expected = {
            "auroc": metrics.edge_auc(P, T),
            "average_precision": metrics.average_precision(P, T),
            "f1": metrics.micro_f1(T, P >= 0.5),
            "hamming_loss": metrics.hamming_loss(T, P >= 0.5),
            "ranking_loss": metrics.ranking_loss(T, P),
            "macro_f1": metrics.macro_f1(T, P >= 0.5),
            "label_ranking_average_precision": metrics.label_ranking_average_precision(T, P),
            "coverage": metrics.coverage(T, P),
        }
        for name in names:
            assert got[name][k] == pytest.approx(expected[name], rel=1e-12), name
    assert got["auroc"].mean() > 0.6  # the inputs carry the labels


def test_the_auroc_and_average_precision_of_a_1d_target_are_sklearns():
    from sklearn.metrics import average_precision_score, roc_auc_score

    X, Y = _labels()
    y = Y[:, 0]
    got = cross_validate(OK3Regressor(max_splits=6), X, y, scoring=["auroc", "average_precision"],
                         cv=3, random_state=0)  # fmt: skip
    train, test = kfold(len(X), 3, random_state=0)[0]
    p = OK3Regressor(max_splits=6).fit(X[train], y[train]).predict(X[test])
    assert got["auroc"][0] == pytest.approx(roc_auc_score(y[test], p), rel=1e-12)
    assert got["average_precision"][0] == pytest.approx(
        average_precision_score(y[test], p), rel=1e-12
    )


def test_graph_auroc_is_the_auc_and_average_precision_ranks_the_same_pairs():
    X, edges = _community_graph(seed=3)
    n = len(X)
    got = cross_validate(
        OKBoostRegressor(**SMALL), X, kernel=DiffusionKernel(edges, 1.0), cv=3,
        scoring=["auc", "auroc", "average_precision"], random_state=5,
    )  # fmt: skip
    np.testing.assert_array_equal(got["auc"], got["auroc"])
    train, test = kfold(n, 3, random_state=5)[0]
    fitted = OKBoostRegressor(**SMALL).fit(
        X[train], kernel=DiffusionKernel(induced_edges(edges, train, n), 1.0)
    )
    A = np.zeros((n, n), dtype=int)
    A[edges[:, 0], edges[:, 1]] = A[edges[:, 1], edges[:, 0]] = 1
    blocks = (fitted.predict_kernel(X[test]), fitted.predict_kernel(X[test], X[train]),
              A[np.ix_(test, test)], A[np.ix_(test, train)])  # fmt: skip
    scores, truth = metrics.network_pairs(*blocks)
    expected = metrics.average_precision(scores, truth)
    assert got["average_precision"][0] == pytest.approx(expected, rel=1e-12)
    assert metrics.network_average_precision(*blocks) == expected


def test_callables_get_the_test_outputs_or_the_fold_truth():
    X, Y = make_regression(n=45)

    def neg_mse(est, X_test, Y_test):
        return -float(np.mean((est.predict(X_test) - Y_test) ** 2))

    got = cross_validate(OKBoostRegressor(**SMALL), X, Y, scoring=[neg_mse, "err_phi"], cv=3,
                         random_state=0)  # fmt: skip
    # the linear kernel: ||phi(y) - F(x)||^2 summed over outputs, the MSE times d
    np.testing.assert_allclose(-got["neg_mse"] * Y.shape[1], got["err_phi"], rtol=1e-10)

    K = rbf_gram(Y, Y, 0.5)
    seen = []

    def err(est, X_test, truth):
        seen.append(truth)
        return -metrics.err_phi(est, X_test, gram_cross=truth.gram_cross,
                                gram_diag=truth.gram_diag)  # fmt: skip

    by_dict = cross_validate(OKBoostRegressor(**SMALL), X, gram=K, scoring={"mine": err},
                             cv=3, random_state=0)  # fmt: skip
    named = cross_validate(OKBoostRegressor(**SMALL), X, gram=K, scoring="err_phi", cv=3,
                           random_state=0)  # fmt: skip
    np.testing.assert_allclose(-by_dict["mine"], named["err_phi"], rtol=1e-12)
    assert isinstance(seen[0], FoldTruth) and seen[0].Y is None
    single = cross_validate(OKBoostRegressor(**SMALL), X, Y, scoring=neg_mse, cv=3)
    assert list(single) == ["score"]


def test_grid_search_minimises_losses_and_maximises_the_rest():
    X, Y = _labels()
    grid = {"max_splits": [1, 6], "learning_rate": [0.02, 0.5]}
    for criterion in ("hamming_loss", "ranking_loss", "f1", "auroc"):
        result = grid_search(OKBoostRegressor(**SMALL), grid, X, Y, scoring=criterion, cv=3,
                             random_state=0, refit=False)  # fmt: skip
        means = [row[criterion]["mean"] for row in result.table]
        pick = np.argmax(means) if SCORERS[criterion].greater_is_better else np.argmin(means)
        assert result.best_params == result.table[int(pick)]["params"], criterion
    worst = grid_search(OKBoostRegressor(**SMALL), grid, X, Y, cv=3, random_state=0, refit=False,
                        scoring={"neg": lambda e, Xt, Yt: -e.score(Xt, Yt), "r2": "r2"})  # fmt: skip
    r2 = [row["r2"]["mean"] for row in worst.table]
    assert worst.best_params == worst.table[int(np.argmin(r2))]["params"]  # callables maximised


def test_scores_that_do_not_apply_are_refused_with_the_names_that_do():
    X, Y = make_regression(n=30)
    K = rbf_gram(Y, Y, 0.5)
    with pytest.raises(DataError, match=r"'auroc' is not available for Gram outputs; use some of"):
        cross_validate(OKBoostRegressor(**SMALL), X, gram=K, scoring="auroc")
    with pytest.raises(DataError, match="0/1 outputs"):
        cross_validate(OKBoostRegressor(**SMALL), X, Y, scoring="f1")
    with pytest.raises(DataError, match=r"'accuracy' is unknown; use some of \['err_phi'"):
        cross_validate(OKBoostRegressor(**SMALL), X, Y, scoring="accuracy")
    with pytest.raises(DataError, match="two scores are named"):
        cross_validate(OKBoostRegressor(**SMALL), X, Y, scoring=["r2", "r2"])
    with pytest.raises(DataError, match="must return a number"):
        cross_validate(OKBoostRegressor(**SMALL), X, Y, scoring=lambda e, x, y: "good", cv=2)
    assert set(available_scores("graph")) == {"auc", "auc_known", "auroc", "average_precision"}
    assert set(available_scores("gram")) == {"err_phi", "err_y"}


def test_first_stages_scores_equal_truncated_refits():
    X, Y = make_regression(n=60)
    Xt, Yt = make_regression(n=30, seed=1)
    full = OKBoostRegressor(**{**SMALL, "n_estimators": 20}).fit(X, Y)
    for m in (1, 7, 20):
        refit = OKBoostRegressor(**{**SMALL, "n_estimators": m}).fit(X, Y)
        cut = first_stages(full, m)
        np.testing.assert_allclose(cut.predict(Xt), refit.predict(Xt), rtol=1e-12, atol=1e-12)
        assert metrics.err_y(cut, Xt, Yt) == pytest.approx(metrics.err_y(refit, Xt, Yt), 1e-12)
    assert full.n_estimators_ == 20  # the fitted model is untouched
    with pytest.raises(DataError, match="cannot keep 21"):
        first_stages(full, 21)


def test_a_grid_over_n_estimators_shares_one_fit_per_fold_and_equals_refits():
    X, edges = _community_graph(seed=1)
    graph = DiffusionKernel(edges, 1.0)
    grid = {"max_splits": [2, 4], "n_estimators": [3, 12, 6]}
    fits = search_fits(OKBoostRegressor(**SMALL), [
        {"max_splits": s, "n_estimators": m} for s in (2, 4) for m in (3, 12, 6)
    ])  # fmt: skip
    assert [f.scores for f in fits] == [((0, 3), (1, None), (2, 6)), ((3, 3), (4, None), (5, 6))]
    CountingBoost.fits.clear()
    result = grid_search(CountingBoost(**SMALL), grid, X, kernel=graph, cv=3, random_state=0,
                         refit=False)  # fmt: skip
    assert CountingBoost.fits == [12] * 6  # 2 shared fits x 3 folds, at the largest M
    for row in result.table:
        direct = cross_validate(OKBoostRegressor(**{**SMALL, **row["params"]}), X, kernel=graph,
                                cv=3, random_state=0)  # fmt: skip
        for name in ("auc", "auc_known"):
            np.testing.assert_allclose(row[name]["folds"], direct[name], rtol=1e-12)
    # early stopping looks ahead: no sharing
    stopping = OKBoostRegressor(**SMALL, n_iter_no_change=3)
    assert len(search_fits(stopping, [{"n_estimators": 3}, {"n_estimators": 6}])) == 2


def test_the_halving_schedule_follows_scikit_learn():
    # 27 candidates, 243 trees, factor 3: 9 trees for all, 27 for 9, 81 for 3, 243 for 1
    assert halving_schedule(27, 243) == [(27, 9), (9, 27), (3, 81), (1, 243)]
    assert halving_schedule(10, 100) == [(10, 11), (4, 33), (2, 99)]
    assert halving_schedule(9, 5) == [(9, 1), (3, 3)]  # the trees run out first
    assert halving_schedule(4, 40, factor=2, min_resources=5) == [(4, 5), (2, 10), (1, 20)]
    assert halving_schedule(1, 50) == [(1, 50)]
    with pytest.raises(DataError, match="factor must be an integer >= 2"):
        halving_schedule(9, 50, factor=1)
    with pytest.raises(DataError, match="min_resources"):
        halving_schedule(9, 50, min_resources=80)


def test_halving_finds_the_full_grids_best_with_the_documented_fits():
    X, Y = make_regression(n=120, noise=0.05)
    grid = {"max_splits": [1, 8, 16], "learning_rate": [0.01, 0.1, 0.4]}
    est = CountingBoost(n_estimators=27, random_state=0)
    full = grid_search(est, grid, X, Y, cv=3, random_state=0, refit=False)
    CountingBoost.fits.clear()
    heard = set()
    halving = grid_search(est, grid, X, Y, cv=3, random_state=0, search="halving",
                          callback=lambda task, p: heard.add(task))  # fmt: skip
    assert halving.n_candidates == [9, 3, 1] and halving.n_resources == [3, 9, 27]
    # each iteration's candidates x folds, then the refit of the best on all rows
    assert CountingBoost.fits == [3] * 27 + [9] * 9 + [27] * 3 + [27]
    assert heard == set(range(39))
    assert halving.best_params == {**full.best_params, "n_estimators": 27}
    assert halving.best_estimator.n_estimators_ == 27
    last = [row for row in halving.table if row["iteration"] == 2]
    assert last[0]["err_phi"] == next(
        row["err_phi"] for row in full.table if row["params"] == full.best_params
    )
    # survivors are the best of their iteration
    first = [row for row in halving.table if row["iteration"] == 0]
    kept = sorted(first, key=lambda row: row["err_phi"]["mean"])[:3]
    second = [row["params"] for row in halving.table if row["iteration"] == 1]
    assert [{**r["params"], "n_estimators": 9} for r in kept] == second


def test_halving_refuses_n_estimators_in_the_grid_and_unknown_searches():
    X, Y = make_regression(n=30)
    with pytest.raises(DataError, match="leave it out of the grid"):
        grid_search(OKBoostRegressor(**SMALL), {"n_estimators": [5, 10]}, X, Y, search="halving")
    with pytest.raises(DataError, match='search must be "grid" or "halving"'):
        grid_search(OKBoostRegressor(**SMALL), {"max_splits": [1]}, X, Y, search="random")


@pytest.mark.parametrize(
    ("n_candidates", "max_resources", "factor"), [(27, 243, 3), (10, 100, 3), (9, 5, 3), (7, 64, 2)]
)
def test_the_halving_schedule_is_scikit_learns(n_candidates, max_resources, factor):
    from sklearn.base import BaseEstimator, RegressorMixin
    from sklearn.experimental import enable_halving_search_cv  # noqa: F401
    from sklearn.model_selection import HalvingGridSearchCV

    class Free(RegressorMixin, BaseEstimator):
        def __init__(self, a=0, n_estimators=1):
            self.a, self.n_estimators = a, n_estimators

        def fit(self, X, y):
            return self

        def predict(self, X):
            return np.zeros(len(X))

    X, y = np.random.default_rng(0).random((30, 2)), np.arange(30.0)
    search = HalvingGridSearchCV(
        Free(), {"a": list(range(n_candidates))}, resource="n_estimators", factor=factor,
        max_resources=max_resources, cv=2,
    ).fit(X, y)  # fmt: skip
    expected = list(zip(search.n_candidates_, search.n_resources_, strict=True))
    assert halving_schedule(n_candidates, max_resources, factor) == expected


def test_equal_candidates_of_an_estimator_without_stages_are_fitted_each():
    fits = search_fits(OK3Regressor(), [{"max_splits": 2}, {"max_splits": 2}])
    assert [f.scores for f in fits] == [((0, None),), ((1, None),)]


def test_halving_continues_the_survivors_fits_with_the_refits_scores():
    """Each survivor's fold models are continued (warm start), not refitted: every row of
    the table equals a cross-validation from scratch at its n_estimators (the refits'), the
    best is the same, and the trees grown are each iteration's added trees only."""
    X, Y = make_regression(n=90, noise=0.3)
    grid = {"max_splits": [2, 6, 12], "learning_rate": [0.1, 0.4, 0.8]}
    est = OKBoostRegressor(n_estimators=27, random_state=0, subsample=0.7, sketch_dim=2,
                           max_bins=16)  # fmt: skip
    trees: dict[int, int] = {}

    def count(task, progress):
        if progress.phase == "trees":
            trees[task] = max(trees.get(task, 0), progress.done)

    halving = grid_search(est, grid, X, Y, cv=3, random_state=0, search="halving",
                          scoring=["err_phi", "r2"], refit=False, callback=count)  # fmt: skip
    assert halving.n_candidates == [9, 3, 1] and halving.n_resources == [3, 9, 27]
    for row in halving.table:  # the refits' scores, exactly
        direct = cross_validate(OKBoostRegressor(**{**est.get_params(), **row["params"]}), X, Y,
                                scoring=["err_phi", "r2"], cv=3, random_state=0)  # fmt: skip
        for name in ("err_phi", "r2"):
            assert row[name]["folds"] == list(direct[name])
    refit_best = min(
        (r for r in halving.table if r["iteration"] == 2), key=lambda r: r["err_phi"]["mean"]
    )
    assert halving.best_params == refit_best["params"]
    # trees grown per fold: 9 x 3, then 3 x (9 - 3), then 1 x (27 - 9), where refits grow
    # 9 x 3 + 3 x 9 + 1 x 27
    assert sorted(trees) == list(range(3 * (9 + 3 + 1)))
    assert sum(trees.values()) == 3 * (9 * 3 + 3 * 6 + 1 * 18)


def test_halving_refits_estimators_without_warm_start():
    """Boosted KRR has no warm start: each iteration refits its candidates."""
    from okcore import KRRBoostRegressor

    X, Y = make_regression(n=60, noise=0.3)
    est = KRRBoostRegressor(n_estimators=9, random_state=0)
    result = grid_search(est, {"learning_rate": [0.1, 0.5, 1.0]}, X, Y, cv=2,
                         random_state=0, search="halving", refit=False)  # fmt: skip
    for row in result.table:
        direct = cross_validate(KRRBoostRegressor(**{**est.get_params(), **row["params"]}), X,
                                Y, cv=2, random_state=0)  # fmt: skip
        assert row["err_phi"]["folds"] == list(direct["err_phi"])
