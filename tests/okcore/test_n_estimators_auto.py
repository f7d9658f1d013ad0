"""OKBoostRegressor(n_estimators="auto"), the default: M from the number of training rows
given to fit (300 below 10,000 rows, 500 from there), resolved the same way by the fit, the
cost model, a warm start, a saved model and the model-selection searches; an explicit int
is used as given."""

from __future__ import annotations

import json

import numpy as np
import pytest
from okdata import make_regression
from test_warm_start import assert_same_model

from okcore import FitProgress, InvalidParameterError, OKBoostRegressor, defaults, load, save
from okcore.model_selection import (
    cross_validate,
    first_stages,
    grid_search,
    planned_resource,
    search_fits,
)

SMALL = {"learning_rate": 0.3, "max_depth": 2, "random_state": 0}
#: A threshold and counts small enough to fit in a test, with the rule's shape.
ROWS, FEW, MORE = 100, 3, 5


@pytest.fixture
def small_rule(monkeypatch):
    """The rule with ROWS rows as its threshold and FEW / MORE rounds."""
    monkeypatch.setattr(defaults, "AUTO_N_ESTIMATORS_MIN_ROWS", ROWS)
    monkeypatch.setattr(defaults, "AUTO_N_ESTIMATORS_SMALL", FEW)
    monkeypatch.setattr(defaults, "AUTO_N_ESTIMATORS_LARGE", MORE)


@pytest.fixture(scope="module")
def data():
    X, Y = make_regression(n=120, p=5, d=3, seed=20, noise=0.3)
    Xv, _ = make_regression(n=30, p=5, d=3, seed=21, noise=0.3)
    return X, Y, Xv


def test_the_rule_at_its_boundary():
    """300 rounds below 10,000 training rows, 500 from 10,000 on; the cost model counts the
    same trees before a fit."""
    assert OKBoostRegressor().n_estimators == "auto"
    assert defaults.default_n_estimators(1) == 300
    assert defaults.default_n_estimators(9_999) == 300
    assert defaults.default_n_estimators(10_000) == 500
    assert defaults.default_n_estimators(10**7) == 500
    auto = OKBoostRegressor()
    assert (auto.resolve_n_estimators(9_999), auto.resolve_n_estimators(10_000)) == (300, 500)
    assert auto.estimate_cost(9_999, 10).n_stages == 300
    assert auto.estimate_cost(10_000, 10).n_stages == 500
    assert OKBoostRegressor.paper().n_estimators == 500  # the preset pins its own M


def test_an_explicit_int_is_used_at_every_size():
    est = OKBoostRegressor(n_estimators=7)
    assert est.resolve_n_estimators(10) == est.resolve_n_estimators(10**6) == 7
    assert est.estimate_cost(50_000, 10).n_stages == 7


@pytest.mark.parametrize("bad", ["many", "Auto", 0, -3, 2.5, None])
def test_other_values_are_refused_with_the_allowed_ones(data, bad):
    X, Y, _ = data
    with pytest.raises(InvalidParameterError, match=r"n_estimators.*int in \[1, inf\) or 'auto'"):
        OKBoostRegressor(n_estimators=bad).fit(X, Y)


@pytest.mark.usefixtures("small_rule")
@pytest.mark.parametrize(("rows", "rounds"), [(ROWS - 1, FEW), (ROWS, MORE), (120, MORE)])
def test_auto_fits_the_model_of_the_count_it_resolves_to(data, rows, rounds):
    """Bit for bit the fit with the explicit count; ``n_estimators_planned_`` reports it."""
    X, Y, Xv = data
    auto = OKBoostRegressor(**SMALL).fit(X[:rows], Y[:rows])
    explicit = OKBoostRegressor(n_estimators=rounds, **SMALL).fit(X[:rows], Y[:rows])
    assert auto.n_estimators == "auto"
    assert auto.n_estimators_planned_ == auto.n_estimators_ == rounds
    assert explicit.n_estimators_planned_ == rounds
    assert_same_model(auto, explicit, Xv)


@pytest.mark.usefixtures("small_rule")
def test_the_first_stages_of_an_auto_fit_are_the_refit_with_that_count(data):
    X, Y, Xv = data
    cut = first_stages(OKBoostRegressor(**SMALL).fit(X, Y), 2)
    assert cut.n_estimators == cut.n_estimators_planned_ == cut.n_estimators_ == 2
    refit = OKBoostRegressor(n_estimators=2, **SMALL).fit(X, Y)
    assert np.array_equal(cut.predict_weights(Xv), refit.predict_weights(Xv))


@pytest.mark.usefixtures("small_rule")
def test_an_explicit_int_keeps_its_model_above_the_threshold(data):
    X, Y, Xv = data
    est = OKBoostRegressor(n_estimators=4, **SMALL).fit(X, Y)
    assert est.n_estimators_planned_ == est.n_estimators_ == 4
    assert est.ensemble_.n_trees == 4


@pytest.mark.usefixtures("small_rule")
def test_the_rows_counted_are_those_given_before_the_early_stopping_hold_out(data):
    """ROWS rows given, ROWS - 10 fitted after the hold-out: M is the count of ROWS, and a
    patience that never runs out keeps every round."""
    X, Y, _ = data
    est = OKBoostRegressor(n_iter_no_change=50, validation_fraction=0.1, **SMALL)
    est.fit(X[:ROWS], Y[:ROWS])
    assert len(est.train_indices_) == ROWS - 10
    assert est.n_estimators_planned_ == est.n_estimators_ == MORE


@pytest.mark.usefixtures("small_rule")
def test_progress_counts_the_resolved_rounds(data):
    X, Y, _ = data
    heard: list[FitProgress] = []
    OKBoostRegressor(**SMALL).fit(X, Y, callback=heard.append)
    assert {p.total for p in heard} == {MORE}
    assert [p.done for p in heard if p.phase == "trees"][-1] == MORE


@pytest.mark.usefixtures("small_rule")
def test_warm_start_from_and_to_auto_equals_the_direct_fits(data):
    X, Y, Xv = data
    est = OKBoostRegressor(warm_start=True, **SMALL).fit(X, Y)
    est.fit(X, Y)  # "auto" again on the same rows: nothing to add
    assert est.n_estimators_ == MORE
    est.set_params(n_estimators=8).fit(X, Y)
    assert est.n_estimators_planned_ == 8
    assert_same_model(est, OKBoostRegressor(n_estimators=8, **SMALL).fit(X, Y), Xv)
    short = OKBoostRegressor(n_estimators=2, warm_start=True, **SMALL).fit(X, Y)
    short.set_params(n_estimators="auto").fit(X, Y)
    assert short.n_estimators_planned_ == MORE
    assert_same_model(short, OKBoostRegressor(**SMALL).fit(X, Y), Xv)


@pytest.mark.usefixtures("small_rule")
def test_warm_start_refuses_an_auto_that_resolves_below_the_fitted_rounds(data):
    X, Y, _ = data
    est = OKBoostRegressor(n_estimators=8, warm_start=True, **SMALL).fit(X, Y)
    with pytest.raises(
        InvalidParameterError,
        match=rf"at least the 8 rounds already fitted\. Got n_estimators='auto' \({MORE} on "
        r"120 rows\)",
    ):
        est.set_params(n_estimators="auto").fit(X, Y)
    assert est.ensemble_.n_trees == 8


@pytest.mark.usefixtures("small_rule")
def test_a_saved_auto_model_round_trips_and_continues(data, tmp_path):
    X, Y, Xv = data
    fitted = OKBoostRegressor(**SMALL).fit(X, Y)
    loaded = load(save(fitted, tmp_path / "model"))
    assert loaded.n_estimators == "auto"
    assert loaded.n_estimators_planned_ == MORE
    assert np.array_equal(loaded.predict(Xv), fitted.predict(Xv))
    loaded.set_params(n_estimators=8, warm_start=True).fit(X, Y)
    assert_same_model(loaded, OKBoostRegressor(n_estimators=8, **SMALL).fit(X, Y), Xv)


def test_a_model_saved_before_auto_loads_with_its_int(data, tmp_path):
    """Saved models list the int they were grown with; one saved before the fitted
    ``n_estimators_planned_`` existed reports that int."""
    X, Y, Xv = data
    fitted = OKBoostRegressor(n_estimators=4, **SMALL).fit(X, Y)
    path = save(fitted, tmp_path / "model")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["params"]["n_estimators"] == 4
    del manifest["attributes"]["n_estimators_planned_"]
    (path / "manifest.json").write_text(json.dumps(manifest))
    loaded = load(path)
    assert loaded.n_estimators == loaded.n_estimators_planned_ == 4
    assert np.array_equal(loaded.predict(Xv), fitted.predict(Xv))


@pytest.mark.usefixtures("small_rule")
def test_cross_validation_resolves_auto_on_each_folds_rows(data):
    """Folds of 80 training rows (below ROWS) grow FEW rounds, the fit on all 120 MORE."""
    X, Y, _ = data
    est = OKBoostRegressor(**SMALL)
    auto = cross_validate(est, X, Y, cv=3, random_state=0)
    few = cross_validate(OKBoostRegressor(n_estimators=FEW, **SMALL), X, Y, cv=3, random_state=0)
    np.testing.assert_array_equal(auto["err_phi"], few["err_phi"])
    assert planned_resource(est, 80) == FEW and planned_resource(est, 120) == MORE
    assert planned_resource(OKBoostRegressor(n_estimators=7), 120) == 7


def test_an_auto_grid_candidate_is_fitted_on_its_own():
    """Candidates with int counts share the fit of the largest; "auto" follows each fold's
    rows, so it is a fit of its own."""
    est = OKBoostRegressor(**SMALL)
    shared = search_fits(est, [{"n_estimators": 4}, {"n_estimators": 2}])
    assert len(shared) == 1 and shared[0].scores == ((0, None), (1, 2))
    apart = search_fits(est, [{"n_estimators": "auto"}, {"n_estimators": 2}])
    assert [fit.params for fit in apart] == [{"n_estimators": "auto"}, {"n_estimators": 2}]


@pytest.mark.usefixtures("small_rule")
def test_halving_races_up_to_the_count_auto_gives_the_folds(monkeypatch, data):
    """max_resources="auto" is the estimator's M on the folds' training rows (80 of 120:
    below the threshold), the best candidate then refitted with that int."""
    monkeypatch.setattr(defaults, "AUTO_N_ESTIMATORS_SMALL", 9)
    monkeypatch.setattr(defaults, "AUTO_N_ESTIMATORS_LARGE", 27)
    X, Y, _ = data
    est = OKBoostRegressor(**SMALL)
    result = grid_search(
        est, {"learning_rate": [0.1, 0.3, 0.5]}, X, Y, cv=3, random_state=0, search="halving"
    )
    assert result.n_candidates == [3, 1] and result.n_resources == [3, 9]
    assert result.best_params["n_estimators"] == 9
    assert result.best_estimator.n_estimators_ == 9
