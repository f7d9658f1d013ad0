"""okcore's estimators in scikit-learn users' hands: the parts of scikit-learn's estimator
protocol that ``check_estimator`` does not run, used as scikit-learn's users use them."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_dataframe_column_names_consistency

import okcore
from okcore import DataError


def _small(name: str):
    """A small unfitted estimator of each public kind (regressors, meta-estimators)."""
    boost = okcore.OKBoostRegressor(n_estimators=5, random_state=0)
    return {
        "okboost": boost,
        "ok3": okcore.OK3Regressor(random_state=0),
        "ok3-forest": okcore.OK3ForestRegressor(n_estimators=3, random_state=0),
        "krr-boost": okcore.KRRBoostRegressor(n_estimators=3, n_basis=10, random_state=0),
        "krr": okcore.KernelRidgeRegressor(random_state=0),
        "auto": okcore.AutoRegressor(max_cpu_seconds=0.5, random_state=0),
        "average": okcore.AveragedRegressor([boost, okcore.KernelRidgeRegressor(random_state=0)]),
        "multilabel": okcore.MultiLabelClassifier(boost, n_splits=2),
        "similarity": okcore.SimilarityInputs(boost),
    }[name]


NAMES = ["okboost", "ok3", "ok3-forest", "krr-boost", "krr", "auto", "average", "multilabel"]


def _data(name: str) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.random((60, 4)), columns=["age", "height", "weight", "income"])
    if name == "multilabel":
        return X, (X.to_numpy()[:, :3] > 0.5).astype(int)
    return X, 2.0 * X["age"].to_numpy() + np.sin(3.0 * X["height"].to_numpy())


@pytest.mark.parametrize("name", NAMES)
def test_columns_in_another_order_are_refused_not_used_by_position(name):
    """Fitted on a DataFrame, a DataFrame whose columns are in another order, renamed or
    missing is refused with scikit-learn's message: before, its columns were used by
    position and the predictions were silently those of other inputs."""
    X, Y = _data(name)
    model = clone(_small(name)).fit(X, Y)
    assert list(model.feature_names_in_) == list(X.columns)
    assert model.feature_names_in_.dtype == object
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the fitted columns: no warning
        expected = model.predict(X)
    reordered = X[["income", "weight", "height", "age"]]
    with pytest.raises(DataError, match="must be in the same order as they were in fit"):
        model.predict(reordered)
    with pytest.raises(ValueError, match="Feature names unseen at fit time:\n- salary\n"):
        model.predict(X.rename(columns={"income": "salary"}))
    with pytest.raises(DataError, match="seen at fit time, yet now missing:\n- income\n"):
        model.predict(X[["age", "height", "weight"]])
    # the way out the message names
    np.testing.assert_array_equal(model.predict(reordered[list(model.feature_names_in_)]), expected)


@pytest.mark.parametrize("name", NAMES)
def test_names_on_one_side_warn_as_scikit_learn_does(name):
    X, Y = _data(name)
    named = clone(_small(name)).fit(X, Y)
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        named.predict(X.to_numpy())
    unnamed = clone(_small(name)).fit(X.to_numpy(), Y)
    assert not hasattr(unnamed, "feature_names_in_")
    with pytest.warns(UserWarning, match="X has feature names, but .* was fitted without"):
        unnamed.predict(X)
    named.fit(X.to_numpy(), Y)  # a refit on an array forgets the names
    assert not hasattr(named, "feature_names_in_")


def test_unnamed_and_mixed_columns():
    """pandas' default 0..p-1 columns are no names; names of mixed kinds are refused with
    how to make them strings (scikit-learn raises a TypeError too)."""
    X, y = _data("okboost")
    model = clone(_small("okboost")).fit(pd.DataFrame(X.to_numpy()), y)
    assert not hasattr(model, "feature_names_in_")
    with pytest.raises(TypeError, match=r"X.columns.astype\(str\)"):
        model.fit(X.set_axis(["age", 1, "weight", "income"], axis=1), y)


def test_similarity_inputs_check_the_training_items_names():
    """SimilarityInputs' columns are the training items: a similarity with its columns in
    another order is refused too."""
    rng = np.random.default_rng(0)
    Z = rng.random((30, 3))
    items = [f"item{i}" for i in range(30)]
    S = pd.DataFrame(np.exp(-(((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1))), columns=items)
    model = _small("similarity").fit(S, Z[:, 0])
    assert list(model.feature_names_in_) == items
    with pytest.raises(DataError, match="same order"):
        model.predict(S[items[::-1]])


SAVEABLE = ["okboost", "ok3", "ok3-forest", "krr-boost", "krr", "auto", "average", "similarity"]


@pytest.mark.parametrize("name", SAVEABLE)
def test_saved_models_keep_their_column_names(name, tmp_path):
    """okcore.save keeps feature_names_in_: a loaded model refuses reordered columns as the
    fitted one does, and predicts the same from the fitted columns."""
    if name == "similarity":
        Z = np.random.default_rng(0).random((30, 3))
        items = [f"item{i}" for i in range(30)]
        X = pd.DataFrame(np.exp(-(((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1))), columns=items)
        y = Z[:, 0]
    else:
        X, y = _data(name)
    model = clone(_small(name)).fit(X, y)
    okcore.save(model, tmp_path / "model")
    loaded = okcore.load(tmp_path / "model")
    assert list(loaded.feature_names_in_) == list(X.columns)
    np.testing.assert_allclose(loaded.predict(X), model.predict(X))
    with pytest.raises(DataError, match="same order"):
        loaded.predict(X[list(X.columns[::-1])])


def test_a_model_saved_without_names_loads_without_them(tmp_path):
    X, y = _data("okboost")
    okcore.save(clone(_small("okboost")).fit(X.to_numpy(), y), tmp_path / "model")
    assert not hasattr(okcore.load(tmp_path / "model"), "feature_names_in_")


def test_a_manifest_whose_names_do_not_fit_the_inputs_is_refused(tmp_path):
    import json

    X, y = _data("okboost")
    okcore.save(clone(_small("okboost")).fit(X, y), tmp_path / "model")
    manifest_path = tmp_path / "model" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["feature_names_in"] = ["age", "height"]
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(okcore.PersistenceError, match="not one string per input column"):
        okcore.load(tmp_path / "model")


@pytest.mark.parametrize("name", ["okboost", "ok3", "krr", "average"])
def test_scikit_learns_column_names_check(name):
    """scikit-learn's own check (not run by check_estimator in 1.9) passes."""
    check_dataframe_column_names_consistency(name, _small(name))


@pytest.mark.parametrize("method", ["predict_proba", "decision_function", "predict"])
def test_multilabel_cross_val_predict(method):
    """cross_val_predict(..., method="predict_proba") crashed ("'list' object has no
    attribute 'shape'": classes_ was a list while predict_proba is one (Q, L) array); it now
    gives every row's out-of-fold scores, those of the fold's model."""
    from sklearn.model_selection import KFold, cross_val_predict

    X, Y = _data("multilabel")
    X = X.to_numpy()
    model = _small("multilabel")
    folds = KFold(3)
    got = cross_val_predict(model, X, Y, cv=folds, method=method)
    assert got.shape == Y.shape
    train, test = next(iter(folds.split(X)))
    fold_model = clone(model).fit(X[train], Y[train])
    np.testing.assert_allclose(got[test], getattr(fold_model, method)(X[test]))
    assert fold_model.classes_.shape == (3, 2) and (fold_model.classes_ == [0, 1]).all()


@pytest.fixture
def routing():
    """scikit-learn's metadata routing on for one test."""
    import sklearn

    with sklearn.config_context(enable_metadata_routing=True):
        yield


@pytest.mark.parametrize("name", ["okboost", "krr", "average", "auto"])
def test_metadata_routing_passes_the_requested_weights(name, routing):
    """With metadata routing on, scikit-learn's tools pass sample_weight only to estimators
    that request it (set_fit_request), which okcore's had not: cross_validate and the
    searches refused the weights ("not routed to any object"). Requested, the folds' fits
    get their rows' weights: the scores of the same folds fitted by hand."""
    from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

    X, y = _data(name)
    X = X.to_numpy()
    w = np.random.default_rng(1).random(len(y)) + 0.5
    model = clone(_small(name)).set_fit_request(sample_weight=True)
    model.set_score_request(sample_weight=False)
    folds = KFold(3)
    scores = cross_val_score(model, X, y, cv=folds, params={"sample_weight": w})
    train, test = next(iter(folds.split(X)))
    by_hand = clone(_small(name)).fit(X[train], y[train], sample_weight=w[train])
    if name != "auto":  # a choice within a CPU budget varies with the machine's speed
        assert scores[0] == pytest.approx(by_hand.score(X[test], y[test]))
    assert clone(model).get_metadata_routing().fit.requests == {"sample_weight": True}
    search = GridSearchCV(model, {}, cv=folds).fit(X, y, sample_weight=w)
    if name != "auto":
        assert search.best_score_ == pytest.approx(scores.mean())


def test_metadata_routing_follows_scikit_learns_rules(routing):
    """Unset, passing a weight is scikit-learn's error naming the request to set; the score's
    weight is requested on its own; without routing the methods say how to turn it on."""
    import sklearn
    from sklearn.exceptions import UnsetMetadataPassedError
    from sklearn.metrics import r2_score
    from sklearn.model_selection import KFold, cross_val_score

    X, y = _data("ok3")
    X = X.to_numpy()
    w = np.random.default_rng(1).random(len(y)) + 0.5
    with pytest.raises(UnsetMetadataPassedError, match=r"OK3Regressor.set_fit_request"):
        cross_val_score(_small("ok3"), X, y, cv=3, params={"sample_weight": w})
    model = clone(_small("ok3")).set_fit_request(sample_weight=False)
    model.set_score_request(sample_weight=True)
    folds = KFold(3)
    scores = cross_val_score(model, X, y, cv=folds, params={"sample_weight": w})
    train, test = next(iter(folds.split(X)))
    fitted = clone(_small("ok3")).fit(X[train], y[train])
    expected = r2_score(y[test], fitted.predict(X[test]), sample_weight=w[test])
    assert scores[0] == pytest.approx(expected)
    with pytest.raises(TypeError, match="MultiLabelClassifier.score takes no sample_weight"):
        _small("multilabel").set_score_request(sample_weight=True)
    with sklearn.config_context(enable_metadata_routing=False):
        with pytest.raises(RuntimeError, match="enable_metadata_routing=True"):
            _small("ok3").set_fit_request(sample_weight=True)


def test_okcore_clone_keeps_the_requests(routing):
    """okcore's own clone (the meta-estimators' inner models) keeps requests as
    scikit-learn's does."""
    from okcore.meta import clone as okcore_clone

    model = _small("okboost").set_fit_request(sample_weight="w")
    assert okcore_clone(model).get_metadata_routing().fit.requests == {"sample_weight": "w"}
    assert _small("okboost").get_metadata_routing().fit.requests == {"sample_weight": None}


@pytest.mark.parametrize(
    "seed",
    [None, 3, np.random.RandomState(3), np.random.default_rng(3)],
    ids=["None", "int", "RandomState", "Generator"],
)
def test_auto_takes_every_random_state_scikit_learn_does(seed):
    """AutoRegressor refused a numpy Generator at fit ("takes an int or None") although its
    parameter check accepts one and a RandomState was taken: every kind now seeds the
    choice, as for okcore's other estimators."""
    X, y = _data("auto")
    model = clone(_small("auto")).set_params(random_state=seed).fit(X.to_numpy(), y)
    assert isinstance(model.seed_, int)
    assert model.predict(X.to_numpy()[:2]).shape == (2,)


def test_messages_name_the_estimator_and_the_parameter():
    """A grid's bad AveragedRegressor weights (words) raised numpy's "could not convert
    string to float"; MultiLabelClassifier's missing inputs were "the model"'s."""
    X, y = _data("average")
    with pytest.raises(DataError, match=r"weights must be 2 non-negative numbers.*'heavy'"):
        clone(_small("average")).set_params(weights=["heavy", 1]).fit(X, y)
    X, Y = _data("multilabel")
    X = X.to_numpy().copy()
    X[3, 1] = np.nan
    with pytest.raises(DataError, match=r"MultiLabelClassifier\(\) \(kernel ridge is among"):
        okcore.MultiLabelClassifier().fit(X, Y)
    with pytest.raises(DataError, match=r"KernelRidgeRegressor\(...\)\) does not accept"):
        okcore.MultiLabelClassifier(okcore.KernelRidgeRegressor()).fit(X, Y)


def test_multilabel_takes_missing_values_when_its_trees_do():
    """MultiLabelClassifier refused missing inputs whatever its model, and its message
    advised trees that learn where they go: named, those trees now take them."""
    X, Y = _data("multilabel")
    X = X.to_numpy().copy()
    X[::7, 1] = np.nan
    model = _small("multilabel").fit(X, Y)
    assert model.predict(X).shape == Y.shape
    assert np.isfinite(model.predict_proba(X)).all()


def test_auto_takes_any_array_like():
    """AutoRegressor.fit read the row count with np.shape, which fails on array-likes that
    only convert (scikit-learn's check_regressor_data_not_an_array): it reads X once as an
    array, as the other estimators do."""

    class OnlyConverts:
        """An array-like numpy functions refuse (np.shape), as scikit-learn's NotAnArray."""

        def __init__(self, data: np.ndarray) -> None:
            self.data = data

        def __array__(self, dtype=None, copy=None):
            return np.asarray(self.data, dtype=dtype)

        def __array_function__(self, func, types, args, kwargs):
            raise TypeError(f"no {func.__name__} on this array-like")

    X, y = _data("auto")
    model = _small("auto").fit(OnlyConverts(X.to_numpy()), y)
    assert model.predict(OnlyConverts(X.to_numpy()[:3])).shape == (3,)
