"""The automatic model choice (okcore.auto): determinism, no leak of validation or test rows,
the CPU budget, and the prediction API of every candidate and average."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import okcore
from okcore import AutoRegressor, AveragedRegressor, OKBoostRegressor
from okcore.auto import (
    BUDGET_SLACK_SECONDS,
    BUDGET_TOLERANCE,
    SELECTION_UNIT,
    Candidate,
    inner_folds,
    regression_candidates,
    select,
)
from okcore.callbacks import FitProgress
from okcore.exceptions import DataError, InvalidParameterError


def _data(n: int = 150, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    Y = np.c_[np.sin(X[:, 0]), X[:, 1] * X[:, 2], X[:, 3]] + 0.1 * rng.normal(size=(n, 3))
    return X, Y


def _board(model: AutoRegressor) -> list[tuple]:
    return [(r["name"], r["score"], r["rows"], r["status"]) for r in model.leaderboard_]


@pytest.mark.slow  # two or three whole automatic choices: over 10 s
def test_same_seed_same_leaderboard_and_predictions():
    X, Y = _data()
    a = AutoRegressor(max_cpu_seconds=600, random_state=3).fit(X[:120], Y[:120])
    b = AutoRegressor(max_cpu_seconds=600, random_state=3).fit(X[:120], Y[:120])
    assert not any(r["capped"] or r["status"].startswith("skipped") for r in a.leaderboard_)
    assert _board(a) == _board(b)
    assert a.best_name_ == b.best_name_ and a.members_ == b.members_
    np.testing.assert_array_equal(a.predict(X[120:]), b.predict(X[120:]))
    names = {r["name"] for r in a.leaderboard_}
    assert {c.name for c in regression_candidates(120)} <= names
    assert a.leaderboard_[0]["status"] == "chosen"
    assert a.member_params_[0]["params"]["random_state"] == a.seed_
    assert a.resolved_params_ == {"chosen": a.best_name_, "max_cpu_seconds": 600.0, "seed": a.seed_}


class RecordingBoost(OKBoostRegressor):
    """Records the first input column (a row id) of every fit and eval set."""

    fits: list[tuple[np.ndarray, np.ndarray | None]] = []

    def fit(self, X, Y=None, *, eval_set=None, **kwargs):
        ids = np.asarray(X)[:, 0].astype(int)
        val = None if eval_set is None else np.asarray(eval_set[0])[:, 0].astype(int)
        RecordingBoost.fits.append((ids, val))
        return super().fit(X, Y, eval_set=eval_set, **kwargs)


def test_inner_validation_never_fits_its_rows_and_the_test_rows_never_reach_it():
    X, Y = _data(200)
    X = np.c_[np.arange(200), X]  # column 0: the row id
    train, test = np.arange(150), np.arange(150, 200)
    folds = inner_folds(150, 0.25, np.random.default_rng(0))
    (inner_train, inner_val) = folds[0]
    candidates = [
        Candidate("plain", lambda s: RecordingBoost(n_estimators=5, random_state=s)),
        Candidate(
            "stopped",
            lambda s: RecordingBoost(
                n_estimators=50, early_stopping=True, n_iter_no_change=3, random_state=s
            ),
            early_stopping=True,
        ),
    ]
    RecordingBoost.fits.clear()
    selection = select(
        candidates, X[train], Y[train], cv=folds, max_cpu_seconds=600, min_rows=20,
        random_state=0,
    )  # fmt: skip
    assert len(RecordingBoost.fits) > len(selection.members)
    for ids, val in RecordingBoost.fits:
        assert not np.isin(ids, test).any()
        assert val is None or not np.isin(val, test).any()
    for ids, val in RecordingBoost.fits[: -len(selection.members)]:
        assert np.isin(ids, inner_train).all() and not np.isin(ids, inner_val).any()
        assert val is None or np.array_equal(np.sort(val), inner_val)
    # the refit: every training row, no eval set
    assert np.array_equal(np.sort(RecordingBoost.fits[-1][0]), train)
    assert RecordingBoost.fits[-1][1] is None


def test_k_fold_refinement_never_fits_its_validation_rows_nor_the_test_rows():
    X, Y = _data(200)
    X = np.c_[np.arange(200), X]  # column 0: the row id
    train, test = np.arange(150), np.arange(150, 200)
    candidates = [
        Candidate(f"stopped-{depth}", lambda s, d=depth: RecordingBoost(
            n_estimators=40, early_stopping=True, n_iter_no_change=3, max_depth=d,
            tree_type="oblivious", random_state=s,
        ), early_stopping=True)
        for depth in (2, 3, 4)
    ]  # fmt: skip
    RecordingBoost.fits.clear()
    selection = select(
        candidates, X[train], Y[train], cv=0.2, max_cpu_seconds=600, min_rows=20,
        refine_folds=3, random_state=0,
    )  # fmt: skip
    singles = [r for r in selection.leaderboard if not r["members"]]
    assert all(r["folds"] == 3 for r in singles if r["rung"] == selection.n_rungs)
    refined = RecordingBoost.fits[-(3 * 3 + len(selection.members)) : -len(selection.members)]
    validated = set()
    for ids, val in RecordingBoost.fits:
        assert not np.isin(ids, test).any()
        assert val is None or not np.isin(val, test).any()
        assert val is None or not np.isin(ids, val).any()
    for ids, val in refined:  # the K folds: all the training rows, each validated once
        assert len(ids) + len(val) == 150
        validated.update(val.tolist())
    assert validated == set(train.tolist())
    # the same seed gives the same selection
    again = select(
        candidates, X[train], Y[train], cv=0.2, max_cpu_seconds=600, min_rows=20,
        refine_folds=3, random_state=0,
    )  # fmt: skip
    assert [(r["name"], r["score"], r["folds"]) for r in again.leaderboard] == [
        (r["name"], r["score"], r["folds"]) for r in selection.leaderboard
    ]


def test_without_refinement_the_holdout_ranks():
    X, Y = _data(150)
    tight = select(
        regression_candidates(150)[:3], X, Y, max_cpu_seconds=600, min_rows=20,
        refine_folds=None, random_state=0,
    )  # fmt: skip
    assert all(r["folds"] == 1 for r in tight.leaderboard)


def test_budget_is_kept_within_the_stated_tolerance():
    X, Y = _data(900)
    budget = 4.0
    model = AutoRegressor(max_cpu_seconds=budget, random_state=0).fit(X, Y)
    assert model.max_cpu_seconds_ == budget
    assert model.cpu_seconds_ <= (1 + BUDGET_TOLERANCE) * budget + BUDGET_SLACK_SECONDS
    assert model.cpu_seconds_ >= model.refit_cpu_seconds_ > 0.0
    assert np.all(np.isfinite(model.predict(X[:5])))


def test_a_budget_too_small_for_anything_still_returns_the_first_candidate():
    X, Y = _data(100)
    model = AutoRegressor(max_cpu_seconds=1e-6, random_state=0).fit(X, Y)
    assert model.best_name_ == "okboost"
    assert np.all(np.isfinite(model.predict(X[:3])))


@pytest.mark.parametrize("name", [c.name for c in regression_candidates(80)])
def test_every_candidate_keeps_w_f_kernels_and_pre_images(name):
    X, Y = _data(80)
    candidate = next(c for c in regression_candidates(80) if c.name == name)
    model = candidate.make(0)
    if candidate.early_stopping:
        model.set_params(n_estimators=30)
        model.fit(X[:60], Y[:60], eval_set=(X[60:], Y[60:]))
    else:
        model.fit(X[:60], Y[:60])
    F = model.predict_features(X[60:])
    np.testing.assert_allclose(
        model.predict_weights(X[60:]) @ model.output_space_.phi, F, atol=1e-7
    )
    np.testing.assert_allclose(model.predict_kernel(X[60:]), F @ F.T, atol=1e-9)
    assert model.predict_index(X[60:], top_k=2)[0].shape == (20, 2)
    final = candidate.final(0, candidate.settled([model])).fit(X, Y)
    assert np.all(np.isfinite(final.predict(X[:3])))


def test_average_keeps_w_f_kernels_and_pre_images():
    X, Y = _data(80)
    a = OKBoostRegressor(n_estimators=20, random_state=0).fit(X, Y)
    b = okcore.KernelRidgeRegressor(alpha=0.1).fit(X, Y)
    avg = AveragedRegressor.from_fitted([a, b], weights=[1, 3])
    F = avg.predict_features(X[:10])
    np.testing.assert_allclose(
        F, 0.25 * a.predict_features(X[:10]) + 0.75 * b.predict_features(X[:10])
    )
    np.testing.assert_allclose(avg.predict_weights(X[:10]) @ avg.output_space_.phi, F, atol=1e-7)
    np.testing.assert_allclose(avg.predict_kernel(X[:10]), F @ F.T, atol=1e-9)
    np.testing.assert_allclose(
        avg.predict(X[:10]), 0.25 * a.predict(X[:10]) + 0.75 * b.predict(X[:10])
    )
    assert avg.predict_index(X[:10])[0].shape == (10, 1)
    # members with another output factor cannot be averaged in feature space
    c = OKBoostRegressor(n_estimators=5, factor_rank=1, random_state=0).fit(X, Y)
    with pytest.raises(DataError, match="output factor"):
        AveragedRegressor.from_fitted([a, c]).predict_features(X[:2])


def test_gram_outputs_and_a_user_score():
    X, Y = _data(120)
    K = np.exp(-0.5 * ((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1))
    model = AutoRegressor(
        max_cpu_seconds=600, candidates=["okboost", "oblivious-d4"], random_state=0
    ).fit(X, gram=K)
    assert {r["name"] for r in model.leaderboard_} >= {"okboost", "oblivious-d4"}
    assert model.predict_kernel(X[:4]).shape == (4, 4)

    def neg_mse(estimator, X_val, Y_val):
        return -float(np.mean((estimator.predict(X_val) - Y_val) ** 2))

    model = AutoRegressor(
        max_cpu_seconds=600, scoring=neg_mse, candidates=["okboost", "kernel-ridge"],
        random_state=0, cv=3,
    ).fit(X, Y)  # fmt: skip
    assert model.greater_is_better_ and model.score_name_ == "score"
    scores = [r["score"] for r in model.leaderboard_ if r["score"] is not None]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize(
    "params",
    [
        {"max_cpu_seconds": 0},
        {"max_cpu_seconds": "1"},
        {"candidates": ["nope"]},
        {"candidates": []},
    ],
)
def test_bad_parameters_are_refused(params):
    X, Y = _data(40)
    with pytest.raises(InvalidParameterError):
        AutoRegressor(**params).fit(X, Y)


def test_bad_folds_are_refused():
    X, Y = _data(40)
    with pytest.raises(DataError, match="disjoint"):
        AutoRegressor(cv=[(np.arange(30), np.arange(25, 40))]).fit(X, Y)
    with pytest.raises(InvalidParameterError, match="'cv'"):
        AutoRegressor(cv=1.5).fit(X, Y)
    with pytest.raises(DataError, match="fraction"):
        select(regression_candidates(40), X, Y, cv=1.5)


@pytest.mark.slow  # two or three whole automatic choices: over 10 s
def test_save_and_load_reproduce_the_chosen_model(tmp_path):
    X, Y = _data(150)
    model = AutoRegressor(max_cpu_seconds=600, random_state=1).fit(X[:120], Y[:120])
    loaded = okcore.load(okcore.save(model, tmp_path / "auto"))
    assert isinstance(loaded, AutoRegressor)
    assert loaded.leaderboard_ == model.leaderboard_ and loaded.members_ == model.members_
    assert loaded.best_name_ == model.best_name_ and loaded.get_params() == model.get_params()
    for method in ("predict", "predict_features", "predict_weights", "predict_kernel"):
        np.testing.assert_array_equal(
            getattr(loaded, method)(X[120:]), getattr(model, method)(X[120:])
        )
    np.testing.assert_array_equal(loaded.predict_index(X[120:])[0], model.predict_index(X[120:])[0])
    # refitting the chosen model's settled members on the same rows gives the same model
    refit = loaded.unfitted_best().fit(X[:120], Y[:120])
    np.testing.assert_allclose(refit.predict(X[120:]), model.predict(X[120:]), atol=1e-12)


def test_an_average_saves_and_loads(tmp_path):
    X, Y = _data(80)
    avg = AveragedRegressor(
        [OKBoostRegressor(n_estimators=10, random_state=0), okcore.KernelRidgeRegressor(alpha=1.0)],
        weights=[2, 1],
    ).fit(X, Y)
    loaded = okcore.load(okcore.save(avg, tmp_path / "avg"))
    np.testing.assert_array_equal(loaded.predict(X), avg.predict(X))
    np.testing.assert_array_equal(loaded.weights_, avg.weights_)
    manifest = tmp_path / "avg" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"member-1"', '"../elsewhere"'))
    with pytest.raises(okcore.PersistenceError, match="members"):
        okcore.load(tmp_path / "avg")


def test_a_chosen_krr_boost_saves_loads_and_refits(tmp_path):
    X, Y = _data(150)
    model = AutoRegressor(max_cpu_seconds=600, candidates=["krr-boost"], random_state=2)
    model.fit(X[:120], Y[:120])
    assert model.best_name_ == "krr-boost"
    init = model.members_[0][1]["init"]
    assert set(init) >= {"gamma", "alpha"} and not isinstance(init["gamma"], str)
    loaded = okcore.load(okcore.save(model, tmp_path / "auto"))
    for method in ("predict", "predict_weights", "predict_kernel"):
        np.testing.assert_array_equal(
            getattr(loaded, method)(X[120:]), getattr(model, method)(X[120:])
        )
    refit = loaded.unfitted_best().fit(X[:120], Y[:120])
    np.testing.assert_allclose(refit.predict(X[120:]), model.predict(X[120:]), atol=1e-12)


class CostlyLater(okcore.KernelRidgeRegressor):
    """Kernel ridge whose cost model calls a fit on the last rung's rows (240) unaffordable
    and the others (the first rung's 80, the refit's 300) cheap: the engine scores it at
    the first rung, skips it at the last, and could afford its refit."""

    def estimate_cost(self, n_samples, n_features, **kwargs):
        cost = super().estimate_cost(n_samples, n_features, **kwargs)
        return cost if n_samples != 240 else dataclasses.replace(cost, stage_seconds=1e9)


def test_the_choice_compares_only_the_last_rungs_scores():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(300, 2))
    Y = np.sin(X[:, :1]) + X[:, 1:] ** 2 / 4  # smooth, no noise: kernel ridge wins
    candidates = [
        regression_candidates(300)[0],  # okboost
        Candidate("costly-krr", lambda seed: CostlyLater(gamma="cv", cv=3, random_state=seed)),
    ]
    chosen = select(
        candidates, X, Y, max_cpu_seconds=600, min_rows=40, eta=3, keep_last=2,
        refine_folds=None, ensemble=False, random_state=0,
    )  # fmt: skip
    board = {r["name"]: r for r in chosen.leaderboard}
    krr, boost = board["costly-krr"], board["okboost"]
    assert krr["status"] == "skipped: budget" and krr["rung"] < boost["rung"]
    assert krr["score"] < boost["score"]  # better, but measured on fewer rows
    assert chosen.name == "okboost"


def test_the_fits_the_budget_cannot_stop_go_first_in_each_rung():
    """A stoppable (boosting) fit makes do with any share of the budget, a kernel ridge fit
    is all or nothing: in every rung the unstoppable fits start first, in rank order, and
    the stoppable ones take what they leave."""
    X, Y = _data(300)
    heard: list[tuple[str, str]] = []
    candidates = [
        c
        for c in regression_candidates(300)
        if c.name in ("okboost", "oblivious-d4", "kernel-ridge")
    ]
    select(
        candidates, X, Y, max_cpu_seconds=600, min_rows=60, eta=2, keep_last=3,
        refine_folds=None, ensemble=False, random_state=0,
        callback=lambda p: heard.append((p.stage, p.candidate)),
    )  # fmt: skip
    rungs = sorted({stage for stage, _ in heard if stage.startswith("rung")})
    assert len(rungs) >= 2
    for rung in rungs:
        order = [name for stage, name in heard if stage == rung]
        assert order[0] == "kernel-ridge", (rung, order)
        assert set(order[1:]) == {"okboost", "oblivious-d4"}


class PricedKRR(okcore.KernelRidgeRegressor):
    """Kernel ridge whose cost model says every fit takes ``price`` CPU seconds."""

    price = 0.0

    def estimate_cost(self, n_samples, n_features, **kwargs):
        cost = super().estimate_cost(n_samples, n_features, **kwargs)
        return dataclasses.replace(cost, stage_seconds=self.price, setup_seconds=0.0)


@pytest.mark.parametrize(("price", "launched"), [(40.0, True), (60.0, False)])
def test_an_unstoppable_fit_may_use_what_the_stoppable_fits_shares_leave(price, launched):
    """One rung of three fits, 100 s of budget (75 s before the refit's reserve): the
    stoppable booster keeps its third (25 s), so an unstoppable fit predicted at 40 s is
    launched and one predicted at 60 s is skipped (an equal third each would skip both)."""
    X, Y = _data(200)
    priced = type("Priced", (PricedKRR,), {"price": price})
    candidates = [
        Candidate("priced-krr", lambda seed: priced(gamma=0.5, alpha=1.0)),
        Candidate("cheap-krr", lambda seed: okcore.KernelRidgeRegressor(gamma=0.5, alpha=1.0)),
        regression_candidates(200)[0],  # okboost, stoppable
    ]
    chosen = select(
        candidates, X, Y, max_cpu_seconds=100, min_rows=200, refine_folds=None,
        ensemble=False, random_state=0,
    )  # fmt: skip
    board = {r["name"]: r for r in chosen.leaderboard}
    assert (board["priced-krr"]["status"] != "skipped: budget") == launched
    assert board["cheap-krr"]["status"] != "skipped: budget"
    assert board["okboost"]["status"] != "skipped: budget"


class PricedBoost(OKBoostRegressor):
    """A booster whose cost model says its rounds take 10^9 CPU seconds (as all of an
    early-stopped booster's most rounds may)."""

    def estimate_cost(self, n_samples, n_features, **kwargs):
        cost = super().estimate_cost(n_samples, n_features, **kwargs)
        return dataclasses.replace(cost, stage_seconds=1e9)


@pytest.mark.parametrize(("start_price", "launched"), [(30.0, True), (60.0, False)])
def test_boosting_from_kernel_ridge_is_launched_when_its_start_fits(start_price, launched):
    """Boosting started from kernel ridge cannot be stopped until its first round: it is
    launched when its start's predicted cost fits what the stoppable fits' shares leave, as
    a kernel ridge fit (100 s of budget, 75 s before the refit's reserve, the other booster
    keeping half: a start predicted at 30 s fits, one at 60 s does not), whatever its most
    rounds would cost, since the budget stops those."""
    X, Y = _data(200)
    start = type("PricedStart", (PricedKRR,), {"price": start_price})
    candidates = [
        Candidate(
            "krr-boost",
            lambda seed: PricedBoost(
                n_estimators=30, early_stopping=True, n_iter_no_change=5, random_state=seed,
                init=start(gamma=0.5, alpha=1.0),
            ),
            early_stopping=True,
            interruptible=False,
        ),
        regression_candidates(200)[0],  # okboost, stoppable
    ]  # fmt: skip
    chosen = select(
        candidates, X, Y, max_cpu_seconds=100, min_rows=200, refine_folds=None,
        ensemble=False, random_state=0,
    )  # fmt: skip
    board = {r["name"]: r for r in chosen.leaderboard}
    assert (board["krr-boost"]["status"] != "skipped: budget") == launched
    if launched:
        assert board["krr-boost"]["score"] is not None
    assert board["okboost"]["status"] != "skipped: budget"


def _small_average() -> AveragedRegressor:
    return AveragedRegressor(
        [OKBoostRegressor(n_estimators=10, random_state=0), okcore.KernelRidgeRegressor()]
    )


def test_an_average_scores_the_kernelized_r2_of_its_predictions():
    from sklearn.metrics import r2_score

    from okcore.model_selection import cross_validate

    X, Y = _data(80)
    avg = _small_average().fit(X[:60], Y[:60])
    expected = r2_score(Y[60:], avg.predict(X[60:]), multioutput="variance_weighted")
    assert avg.score(X[60:], Y[60:]) == pytest.approx(expected)
    scores = cross_validate(_small_average(), X, Y, cv=3, scoring="r2")["r2"]
    assert scores.shape == (3,) and np.all(np.isfinite(scores))


def test_the_choice_scores_averages_by_r2_and_a_chosen_average_scores():
    X, Y = _data(80)
    model = AutoRegressor(
        max_cpu_seconds=600, scoring="r2", candidates=["okboost", "kernel-ridge"], random_state=0
    ).fit(X, Y)
    averages = [r for r in model.leaderboard_ if r["name"].startswith("average(")]
    assert averages and all(r["status"] in ("scored", "chosen") for r in averages)

    def prefer_averages(estimator, X_val, Y_val):
        return float(isinstance(estimator, AveragedRegressor))

    model = AutoRegressor(
        max_cpu_seconds=600, scoring=prefer_averages, candidates=["okboost", "kernel-ridge"],
        random_state=0,
    ).fit(X, Y)  # fmt: skip
    assert model.best_name_.startswith("average(")
    assert model.score(X, Y) == pytest.approx(model.best_estimator_.score(X, Y))


@pytest.mark.parametrize("form", ["DataFrame", "list"])
def test_the_choice_takes_data_frames_and_lists(form):
    pd = pytest.importorskip("pandas")
    X, Y = _data(60)
    X[0, 0] = np.nan  # a missing input stays missing (the trees take it)
    given = (lambda a: pd.DataFrame(a)) if form == "DataFrame" else (lambda a: a.tolist())
    params = {"max_cpu_seconds": 600, "candidates": ["okboost"], "random_state": 0}
    model = AutoRegressor(**params).fit(given(X), given(Y))
    np.testing.assert_array_equal(
        model.predict(X[:5]), AutoRegressor(**params).fit(X, Y).predict(X[:5])
    )


def test_a_cancelled_or_failed_refit_leaves_nothing_of_the_previous_fit():
    X, Y = _data(60)
    params = {"max_cpu_seconds": 600, "candidates": ["okboost"], "random_state": 0}
    fitted = ("best_name_", "leaderboard_", "members_", "cpu_seconds_", "best_estimator_")
    model = AutoRegressor(**params).fit(X, Y)
    model.fit(X, Y, callback=lambda progress: True)
    assert model.stopped_by_callback_
    assert not [name for name in fitted if hasattr(model, name)]
    model = AutoRegressor(**params).fit(X, Y)
    with pytest.raises(DataError):
        model.fit(X, np.r_[np.full((1, 3), np.nan), Y[1:]])
    assert not [name for name in fitted if hasattr(model, name)]
    with pytest.raises(okcore.NotFittedError):
        model.predict(X[:2])


def test_clone_clones_the_members_of_an_average():
    from okcore.meta import clone

    average = _small_average()
    copy = clone(average)
    assert copy.estimators is not average.estimators
    assert all(c is not m for c, m in zip(copy.estimators, average.estimators, strict=True))
    copy.estimators[0].set_params(n_estimators=3)
    assert average.estimators[0].n_estimators == 10
    assert copy.get_params(deep=False)["weights"] is None


@pytest.mark.parametrize("which", ["auto", "average"])
def test_a_wrong_number_of_features_names_the_estimator_called(which):
    X, Y = _data(60)
    if which == "auto":
        model = AutoRegressor(max_cpu_seconds=600, candidates=["kernel-ridge"], random_state=0)
    else:
        model = _small_average()
    model.fit(X, Y)
    name = type(model).__name__
    for predict in (model.predict, model.predict_features, model.predict_weights):
        with pytest.raises(DataError, match=f"X has 3 features, but {name} is expecting 4"):
            predict(X[:2, :3])
    with pytest.raises(DataError, match=f"but {name} is expecting 4"):
        model.score(X[:2, :3], Y[:2])


def test_sparse_inputs_are_chosen_for():
    """CSR inputs go through the automatic choice (early-stopped boosters' validation rows
    included) and the chosen model predicts them; only the oblivious trees refuse them."""
    from scipy import sparse

    rng = np.random.default_rng(0)
    X = rng.random((80, 3))
    y = X[:, 0] + 0.1 * rng.standard_normal(80)
    Xs = sparse.csr_matrix(np.where(X > 0.5, X, 0.0))
    model = AutoRegressor(max_cpu_seconds=2, random_state=0).fit(Xs, y)
    status = {r["name"]: r["status"] for r in model.leaderboard_}
    failed = {name for name, s in status.items() if s.startswith("failed")}
    assert all("needs dense inputs" in status[name] for name in failed)
    assert "ok3-et-boost" not in failed and "best-first-31" not in failed
    assert np.isfinite(model.predict(Xs)).all()


def test_missing_inputs_leave_out_the_candidates_that_refuse_them():
    """Kernel ridge, and boosting started from it, refuse missing inputs (NaN): the
    automatic choice records them as failed with the fix and chooses among the trees."""
    X, Y = _data(80)
    X[::7, 1] = np.nan
    model = AutoRegressor(max_cpu_seconds=3, random_state=0).fit(X, Y)
    status = {r["name"]: r["status"] for r in model.leaderboard_}
    for name in ("kernel-ridge", "kernel-ridge-ard", "krr-boost"):
        assert status[name].startswith("failed: X holds missing values (NaN)"), status[name]
    assert np.isfinite(model.predict(X)).all()


@pytest.mark.parametrize("n", [3, 4])
def test_too_few_rows_for_the_refining_folds_skip_them(n):
    """The optional K-fold refinement is skipped when there are fewer rows than its folds:
    a fit on 3 or 4 rows with the default holdout returns a model ranked by the holdout."""
    X, Y = _data(n)
    model = AutoRegressor(max_cpu_seconds=2, random_state=0).fit(X, Y)
    assert np.isfinite(model.predict(X)).all()
    assert all(r["folds"] == 1 for r in model.leaderboard_)


def test_inner_splits_give_both_sides_positive_weight():
    """With zero sample weights the holdout and the K folds split the positive-weight rows
    and the zero-weight rows each in proportion (seeded), so every side has weight; weights
    without zeros split as before, bit for bit. Too few positive rows: a DataError that says
    how many are needed."""
    n = 80
    weight = np.r_[np.zeros(77), np.ones(3)]
    for seed in range(20):
        ((train, val),) = inner_folds(n, 0.2, np.random.default_rng(seed), weight)
        assert weight[train].sum() > 0 and weight[val].sum() > 0
        assert len(val) == 16 and np.union1d(train, val).size == n
        for train, val in inner_folds(n, 3, np.random.default_rng(seed), weight):
            assert weight[train].sum() > 0 and weight[val].sum() > 0
    again = inner_folds(n, 0.2, np.random.default_rng(3), weight)
    np.testing.assert_array_equal(
        again[0][1], inner_folds(n, 0.2, np.random.default_rng(3), weight)[0][1]
    )
    positive = np.full(n, 2.0)
    for cv in (0.2, 5):
        for (t1, v1), (t2, v2) in zip(
            inner_folds(n, cv, np.random.default_rng(1), positive),
            inner_folds(n, cv, np.random.default_rng(1)),
            strict=True,
        ):
            np.testing.assert_array_equal(t1, t2)
            np.testing.assert_array_equal(v1, v2)
    one = np.r_[np.zeros(79), 1.0]
    with pytest.raises(DataError, match="at least 2 rows with positive weight"):
        inner_folds(n, 0.2, np.random.default_rng(0), one)
    with pytest.raises(DataError, match="at least 4 rows with positive weight"):
        inner_folds(n, 4, np.random.default_rng(0), weight)
    with pytest.raises(DataError, match="positive weight"):
        inner_folds(n, [(np.arange(70), np.arange(70, 77))], np.random.default_rng(0), weight)


@pytest.mark.parametrize("folds", [[[[0, 1, 2]]], [[0, 1]], [("a", "b")], [[[0, 1], [[2]]]]])
def test_given_folds_that_are_not_pairs_of_index_arrays_are_a_data_error(folds):
    """A fold that is not a (train, validation) pair raised ValueError or TypeError."""
    with pytest.raises(DataError, match=r"each given fold must be \(train rows, validation rows\)"):
        inner_folds(10, folds, np.random.default_rng(0))


def test_validation_rows_of_zero_weight_are_never_all_the_holdout():
    """Valid weights of which few are positive: the choice scores every candidate on
    validation rows with weight (no division by a zero total) and returns a model."""
    rng = np.random.default_rng(0)
    X = rng.random((80, 3))
    y = X[:, 0] + 0.1 * rng.standard_normal(80)
    weight = np.r_[np.zeros(77), np.ones(3)]
    model = AutoRegressor(max_cpu_seconds=3, random_state=0).fit(X, y, sample_weight=weight)
    assert any(r["score"] is not None for r in model.leaderboard_)
    assert np.isfinite(model.predict(X)).all()
    with pytest.raises(DataError, match="at least 2 rows with positive weight"):
        AutoRegressor(max_cpu_seconds=3, random_state=0).fit(
            X, y, sample_weight=np.r_[np.zeros(79), 1.0]
        )


@pytest.mark.slow
def test_every_candidate_fits_weighted_rows():
    """Under sample weights (zeros among them) the candidates that failed on them fit:
    best-first and OK3-et boosting bin weighted inputs under max_bins="auto", krr-boost
    weighs its kernel ridge."""
    X, Y = _data(100)
    weight = np.random.default_rng(2).integers(0, 3, 100).astype(float)
    names = ["best-first-31", "ok3-et-boost", "krr-boost"]  # those that failed on weights
    model = AutoRegressor(max_cpu_seconds=600, random_state=0, ensemble=False, candidates=names)
    model.fit(X, Y, sample_weight=weight)
    statuses = {r["name"]: r["status"] for r in model.leaderboard_}
    assert set(statuses) == set(names)
    assert not [s for s in statuses.values() if s.startswith(("failed", "skipped"))], statuses


def test_every_rung_subsample_holds_rows_of_positive_weight():
    """Few rows of positive weight among many: the nested rung subsamples spread them
    evenly, so the first rung's small fits never get rows that all weigh 0 (a candidate
    failed there). Weights without zeros subsample as no weights, bit for bit."""
    X, Y = _data(600)
    X = np.c_[np.arange(600), X]  # column 0: the row id
    weight = np.zeros(600)
    weight[np.random.default_rng(1).choice(600, 6, replace=False)] = 1.0
    candidates = [Candidate("plain", lambda s: RecordingBoost(n_estimators=3, random_state=s))]
    for seed in range(5):
        RecordingBoost.fits.clear()
        select(candidates, X, Y, sample_weight=weight, max_cpu_seconds=600, min_rows=20,
               random_state=seed)  # fmt: skip
        sizes = sorted({len(ids) for ids, _ in RecordingBoost.fits})
        assert sizes[0] <= 60  # rungs of a tenth of the rows or fewer ran
        for ids, _ in RecordingBoost.fits:
            assert weight[ids].sum() > 0
    RecordingBoost.fits.clear()
    select(candidates, X, Y, sample_weight=np.ones(600), max_cpu_seconds=600, min_rows=20,
           random_state=0)  # fmt: skip
    unit = [ids for ids, _ in RecordingBoost.fits]
    RecordingBoost.fits.clear()
    select(candidates, X, Y, max_cpu_seconds=600, min_rows=20, random_state=0)
    assert all(
        np.array_equal(a, b) for a, b in zip(unit, [i for i, _ in RecordingBoost.fits], strict=True)
    )


def test_progress_counts_candidate_fits_and_the_refit_completes_the_count():
    """AutoRegressor's callback hears candidate fits (unit "candidate", phase "selection"),
    done never past total, and at the refit total is exact: the fits done plus the refit's
    members, although a skipped candidate's planned fits never ran."""
    X, Y = _data(150)
    heard: list[FitProgress] = []
    model = AutoRegressor(
        max_cpu_seconds=600, random_state=0, candidates=["okboost", "oblivious-d4", "kernel-ridge"]
    )
    model.fit(X, Y, callback=lambda p: heard.append(p))
    assert heard and all(p.unit == SELECTION_UNIT and p.phase == "selection" for p in heard)
    assert all(p.done < p.total for p in heard)
    members = len(model.members_)
    assert [p.done for p in heard[-members:]] == list(
        range(heard[-1].total - members, heard[-1].total)
    )


@pytest.mark.parametrize(
    ("n", "cv", "advice"),
    [
        (2, 0.5, "needs 3 rows (2 to fit, 1 to validate); give more rows"),
        (6, 0.01, "holds no row out to validate on; give a fraction such as 0.167"),
        (6, 0.99, "leaves fewer than 2 rows to fit; give a fraction such as 0.667"),
    ],
)
def test_a_holdout_the_rows_cannot_fill_says_which_way_to_move(n, cv, advice):
    """It said 'give more rows or a larger fraction' whatever was wrong; the advice given
    works (the fraction suggested splits the rows)."""
    with pytest.raises(DataError, match=re.escape(advice)):
        inner_folds(n, cv, np.random.default_rng(0))
    if "such as" in advice:
        assert inner_folds(n, float(advice.split()[-1]), np.random.default_rng(0))


def test_an_unfitted_choice_is_not_saved(tmp_path):
    with pytest.raises(okcore.PersistenceError, match="^only fitted okcore estimators"):
        okcore.save(AutoRegressor(), tmp_path / "auto")
    assert not (tmp_path / "auto").exists()


def test_a_loaded_choice_keeps_every_fitted_attribute(tmp_path):
    """fit_time_ and stopped_by_callback_ (documented "as every okcore estimator") were
    missing after okcore.load."""
    X, Y = _data(40)
    model = AutoRegressor(max_cpu_seconds=2, candidates=["kernel-ridge"], random_state=0)
    model.fit(X, Y)
    loaded = okcore.load(okcore.save(model, tmp_path / "auto"))
    assert loaded.fit_time_ == model.fit_time_ and loaded.stopped_by_callback_ is False
    assert loaded.resolved_params_ == model.resolved_params_
    assert loaded.cpu_seconds_ == model.cpu_seconds_ and loaded.n_rungs_ == model.n_rungs_


@pytest.mark.parametrize("weights", [None, [2, 1], np.array([1.0, 3.0])])
def test_an_average_keeps_the_weights_it_was_given(weights, tmp_path):
    """Loading an average set its weights parameter to the normalised weights_ ([0.5, 0.5]
    for None): get_params must say what the model was given."""
    X, Y = _data(40)
    members = [OKBoostRegressor(n_estimators=3, random_state=0), okcore.KernelRidgeRegressor()]
    avg = AveragedRegressor(members, weights=weights).fit(X, Y)
    loaded = okcore.load(okcore.save(avg, tmp_path / "avg"))
    expected = None if weights is None else [float(w) for w in weights]
    assert loaded.get_params()["weights"] == expected
    np.testing.assert_array_equal(loaded.weights_, avg.weights_)
    np.testing.assert_array_equal(loaded.predict(X), avg.predict(X))


@pytest.mark.parametrize(
    ("keyword", "advice"),
    [
        ("eval_set", r"takes no eval_set.*cv=\[\(train_rows, your_rows\)\].*OKBoostRegressor"),
        ("output_weight", r"takes no output_weight.*Fit OKBoostRegressor"),
    ],
)
def test_okboost_fit_keywords_are_refused_with_what_to_do(keyword, advice):
    """A user switching from OKBoostRegressor got Python's bare "unexpected keyword
    argument" for eval_set and output_weight: AutoRegressor takes them only to say why it
    cannot use them and what to do instead, before any fit (a ValueError, as okcore's other
    refusals of fit arguments)."""
    X, Y = _data(40)
    value = (X[:10], Y[:10]) if keyword == "eval_set" else np.ones(Y.shape[1])
    model = AutoRegressor(max_cpu_seconds=0.001)
    with pytest.raises(DataError, match=advice):
        model.fit(X, Y, **{keyword: value})
    assert not hasattr(model, "best_estimator_")


def test_the_eval_set_advice_validates_on_the_given_rows():
    """What the eval_set refusal advises: rows stacked under X and named as the validation
    side of cv are the rows every candidate is scored on."""
    X, Y = _data(60)
    model = AutoRegressor(
        max_cpu_seconds=2, random_state=0, candidates=["kernel-ridge"], ensemble=False,
        cv=[(np.arange(45), np.arange(45, 60))],
    ).fit(X, Y)  # fmt: skip
    assert model.leaderboard_[0]["rows"] == 45
