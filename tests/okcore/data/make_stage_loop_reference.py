"""Writes stage_loop_reference.npz for test_stage_memory.py (run once, from the repository
root, with the okcore whose stage loop the test pins):

    PYTHONPATH=. python tests/okcore/data/make_stage_loop_reference.py

Fixed-seed OKBoost fits of every path of the stage loop (histograms with a sketch,
subsampling, a robust loss with subsampling, trees of more than 256 leaves, early
stopping): their training leaves, thresholds, predictions and W^F on fresh inputs.
"""

from pathlib import Path

import numpy as np

import okcore

HERE = Path(__file__).parent

#: name -> parameters (every one that matters given explicitly: defaults may change)
CONFIGS = {
    "histogram_sketch": {"max_bins": 32, "sketch_dim": 3, "n_estimators": 12},
    "subsample": {"max_bins": 32, "sketch_dim": None, "subsample": 0.7, "n_estimators": 12},
    "huber_subsample": {
        "loss": "huber", "max_bins": None, "sketch_dim": None, "subsample": 0.6,
        "n_estimators": 8,
    },
    "many_leaves": {
        "max_bins": 64, "sketch_dim": None, "max_splits": 300, "leaf_order": "gain",
        "n_estimators": 3,
    },
    "early_stopping": {
        "max_bins": 32, "sketch_dim": None, "n_estimators": 200, "learning_rate": 0.5,
        "n_iter_no_change": 3,
    },
}  # fmt: skip
COMMON = {
    "max_splits": 6, "learning_rate": 0.2, "refine_cuts": False, "random_state": 0,
    "leaf_order": "variance", "max_features": None,
}  # fmt: skip


def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    X = rng.normal(size=(400, 6))
    Y = np.column_stack(
        [np.sin(X[:, 0]) + X[:, 1], X[:, 2] ** 2, X[:, 0] * X[:, 1], np.abs(X[:, 3]), X[:, 4]]
    )
    Y += 0.1 * rng.normal(size=Y.shape)
    return X, Y, rng.normal(size=(7, 6))


def fit(name: str, X: np.ndarray, Y: np.ndarray) -> okcore.OKBoostRegressor:
    return okcore.OKBoostRegressor(**{**COMMON, **CONFIGS[name]}).fit(X, Y)


def main() -> None:
    X, Y, X_new = data()
    out = {}
    for name in CONFIGS:
        model = fit(name, X, Y)
        e = model.ensemble_
        out[f"{name}_train_leaf"] = e.train_leaf.astype(np.int16)
        out[f"{name}_threshold"] = e.threshold
        out[f"{name}_predict"] = model.predict(X_new)
        out[f"{name}_weights"] = model.predict_weights(X_new)
    np.savez_compressed(HERE / "stage_loop_reference.npz", **out)


if __name__ == "__main__":
    main()
