"""Writes the committed reference models of test_saved_format.py (run once, from the
repository root, with the okcore whose format the test pins):

    PYTHONPATH=. python tests/okcore/data/make_saved_models.py

Each model folder is what ``okcore.save`` wrote; ``expected.npz`` holds the inputs X_new and
each model's ``predict_features`` / ``predict_weights`` on them at save time.
"""

from pathlib import Path

import numpy as np

import okcore

HERE = Path(__file__).parent


def main() -> None:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 3))
    Y = np.column_stack([np.sin(X[:, 0]) + X[:, 1], X[:, 2] ** 2, X[:, 0] * X[:, 1]])
    X_new = rng.normal(size=(6, 3))
    models = {
        "okboost_squared": okcore.OKBoostRegressor(
            n_estimators=5, max_splits=4, max_bins=None, random_state=0
        ),
        "okboost_huber_histogram": okcore.OKBoostRegressor(
            n_estimators=5, max_splits=4, loss="huber", max_bins=16, random_state=0
        ),
        "ok3_forest": okcore.OK3ForestRegressor(n_estimators=3, max_depth=3, random_state=0),
        "krr_boost": okcore.KRRBoostRegressor(
            n_estimators=3, subset_size=20, n_basis=5, random_state=0
        ),
    }
    expected = {"X_new": X_new}
    for name, model in models.items():
        kernel = {"type": "rbf", "gamma": 0.5} if name == "ok3_forest" else None
        model.fit(X, Y, kernel=kernel)
        okcore.save(model, HERE / name)
        expected[f"{name}_features"] = model.predict_features(X_new)
        expected[f"{name}_weights"] = model.predict_weights(X_new)
    np.savez(HERE / "expected.npz", **expected)


if __name__ == "__main__":
    main()
