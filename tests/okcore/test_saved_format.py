"""Models saved by an earlier okcore load and predict exactly as they did when saved.

The folders under tests/okcore/data/ were written by tests/okcore/data/make_saved_models.py
with the okcore of that time (formats 1, 3 and 4: squared-loss OKBoost, Huber OKBoost on
histograms, an OK3 forest with an RBF output kernel, boosted KRR); ``expected.npz`` holds
their ``predict_features`` and ``predict_weights`` on ``X_new`` at save time. A change
that alters the saved-model format or what a loaded model predicts fails here.

The trees' predictions are compared bit for bit. Boosted KRR predicts through BLAS (kernel
rows times coefficients), whose last bits move with the CPU and the OpenBLAS release: it is
compared to rounding (``okdata.assert_equal_to_rounding``; on an Intel Xeon with numpy
2.4.6, 4 of 18 features and 81 of 240 weights differ from the saved ones, by at most 8e-15
relative).
"""

from pathlib import Path

import numpy as np
import pytest
from okdata import assert_equal_to_rounding

import okcore

DATA = Path(__file__).parent / "data"
MODELS = ["okboost_squared", "okboost_huber_histogram", "ok3_forest", "krr_boost"]
THROUGH_BLAS = {"krr_boost"}  # predictions to rounding, the others bit for bit


@pytest.mark.parametrize("name", MODELS)
def test_committed_model_predicts_as_saved(name: str) -> None:
    expected = np.load(DATA / "expected.npz")
    model = okcore.load(DATA / name)
    X_new = expected["X_new"]
    same = assert_equal_to_rounding if name in THROUGH_BLAS else np.testing.assert_array_equal
    for what in ("features", "weights"):
        same(getattr(model, f"predict_{what}")(X_new), expected[f"{name}_{what}"])


@pytest.mark.parametrize("name", ["okboost_squared", "okboost_huber_histogram"])
def test_a_refit_without_penalty_is_the_committed_model(name: str) -> None:
    """l2_regularization=0 (the default) grows today's trees: refitting a committed model's
    data with its saved parameters gives the same arrays, bit for bit."""
    committed = okcore.load(DATA / name)
    rng = np.random.default_rng(7)  # the data of make_saved_models.py
    X = rng.normal(size=(40, 3))
    Y = np.column_stack([np.sin(X[:, 0]) + X[:, 1], X[:, 2] ** 2, X[:, 0] * X[:, 1]])
    params = {**committed.get_params(), "l2_regularization": 0.0}
    assert params["refine_cuts"] is False  # saved before the option: grown without it
    refit = type(committed)(**params).fit(X, Y)
    for field in ("feature", "threshold", "train_leaf"):  # the same trees, bit for bit
        np.testing.assert_array_equal(
            getattr(refit.ensemble_, field), getattr(committed.ensemble_, field), err_msg=field
        )
    # node statistics are now summed column by column (the threaded histogram search, the
    # same order for any thread count): the same numbers up to the last bits
    for field in ("gain", "impurity", "value"):
        np.testing.assert_allclose(
            getattr(refit.ensemble_, field),
            getattr(committed.ensemble_, field),
            rtol=1e-12,
            atol=1e-12,
            err_msg=field,
        )
    X_new = np.load(DATA / "expected.npz")["X_new"]
    np.testing.assert_allclose(
        refit.predict_weights(X_new), committed.predict_weights(X_new), rtol=0, atol=1e-12
    )


def test_the_paper_preset_grows_the_committed_exact_model() -> None:
    """The committed squared-loss model was fitted with the exact search and the paper's
    settings: the preset, given its M, nu and J, grows the same arrays."""
    committed = okcore.load(DATA / "okboost_squared")
    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 3))
    Y = np.column_stack([np.sin(X[:, 0]) + X[:, 1], X[:, 2] ** 2, X[:, 0] * X[:, 1]])
    paper = okcore.OKBoostRegressor.paper(
        n_estimators=5, learning_rate=0.1, max_splits=4, random_state=0
    ).fit(X, Y)
    for field in ("feature", "threshold", "gain", "impurity", "value", "train_leaf"):
        np.testing.assert_array_equal(
            getattr(paper.ensemble_, field), getattr(committed.ensemble_, field), err_msg=field
        )


@pytest.mark.parametrize("name", ["okboost_squared", "okboost_huber_histogram", "ok3_forest"])
def test_committed_models_keep_the_parameters_they_were_grown_with(name: str) -> None:
    """Defaults changed since these models were saved (leaf order, M, candidate features,
    early stopping): a loaded model reports its own parameters, not today's defaults."""
    model = okcore.load(DATA / name)
    params = model.get_params()
    assert params["leaf_order"] == "variance" and params["max_features"] is None
    today = type(model)().get_params()
    assert today["max_features"] == 1.0
    if name.startswith("okboost"):
        assert today["leaf_order"] == "gain" and today["early_stopping"] == "auto"
        assert params["n_estimators"] == 5 and params["n_iter_no_change"] is None
        assert params["early_stopping"] is False  # saved before the option: never stopped
