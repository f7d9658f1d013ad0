"""Models saved by an earlier okcore load and predict exactly as they did when saved.

The folders under tests/okcore/data/ were written by tests/okcore/data/make_saved_models.py
with the okcore of that time (formats 1, 3 and 4: squared-loss OKBoost, Huber OKBoost on
histograms, an OK3 forest with an RBF output kernel, boosted KRR); ``expected.npz`` holds
their ``predict_features`` and ``predict_weights`` on ``X_new`` at save time. A change
that alters the saved-model format or what a loaded model predicts fails here.
"""

from pathlib import Path

import numpy as np
import pytest

import okcore

DATA = Path(__file__).parent / "data"
MODELS = ["okboost_squared", "okboost_huber_histogram", "ok3_forest", "krr_boost"]


@pytest.mark.parametrize("name", MODELS)
def test_committed_model_predicts_as_saved(name: str) -> None:
    expected = np.load(DATA / "expected.npz")
    model = okcore.load(DATA / name)
    X_new = expected["X_new"]
    np.testing.assert_array_equal(model.predict_features(X_new), expected[f"{name}_features"])
    np.testing.assert_array_equal(model.predict_weights(X_new), expected[f"{name}_weights"])
