"""The estimator contract: one fit path, the same fitted attributes, a public registry."""

from __future__ import annotations

import numpy as np
import pytest
from okdata import make_regression

import okcore
from okcore import ESTIMATORS, FITTED_ATTRIBUTES, make_estimator
from okcore.exceptions import DataError, InvalidParameterError

SMALL = {
    "okboost": {"n_estimators": 4, "max_splits": 3, "random_state": 0},
    "ok3": {"max_splits": 3, "random_state": 0},
    "ok3-forest": {"n_estimators": 3, "max_splits": 3, "random_state": 0},
    "krr-boost": {"n_estimators": 4, "subset_size": 20, "n_basis": 5, "random_state": 0},
    "krr": {"random_state": 0},
}
#: Attributes that are None where they do not apply (per-round losses, the search used).
MAY_BE_NONE = {"train_loss_", "validation_loss_", "max_bins_", "sketch_dim_"}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_estimator_sets_the_same_fitted_attributes(name, tmp_path):
    X, Y = make_regression(n=30)
    est = make_estimator(name, SMALL[name]).fit(X, Y)
    for attribute in FITTED_ATTRIBUTES:
        value = getattr(est, attribute)
        assert value is not None or attribute in MAY_BE_NONE, attribute
    assert est.n_train_ == 30 and est.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(est.train_indices_, np.arange(30))
    assert est.n_estimators_ == est.ensemble_.n_trees and est.stopped_by_callback_ is False
    okcore.save(est, tmp_path / "m")
    loaded = okcore.load(tmp_path / "m")
    for attribute in FITTED_ATTRIBUTES:
        a, b = getattr(est, attribute), getattr(loaded, attribute)
        if attribute in ("output_space_", "ensemble_"):
            continue
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b, attribute


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_estimator_reports_progress_through_the_same_callback(name):
    X, Y = make_regression(n=30)
    heard = []
    make_estimator(name, SMALL[name]).fit(X, Y, callback=heard.append)
    trees = [p for p in heard if p.phase == "trees"]
    assert heard[0].phase == "output_space" and trees[-1].done == trees[-1].total


def test_the_registry_refuses_unknown_names_parameters_and_values_before_any_fit():
    with pytest.raises(InvalidParameterError, match="unknown estimator 'gbm'"):
        make_estimator("gbm")
    with pytest.raises(InvalidParameterError, match=r"unknown parameter\(s\) \['depth'\]"):
        make_estimator("ok3", {"depth": 3})
    with pytest.raises(InvalidParameterError, match="'n_estimators' parameter"):
        make_estimator("okboost", {"n_estimators": 0})
    assert okcore.estimator_parameters("ok3")["max_splits"] is None


def test_eval_set_is_refused_where_it_does_not_apply():
    X, Y = make_regression(n=30)
    with pytest.raises(DataError, match="eval_set applies to boosting only"):
        make_estimator("ok3", SMALL["ok3"]).fit(X, Y, eval_set=(X, Y))
