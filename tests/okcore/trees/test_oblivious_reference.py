"""Oblivious boosting models of fixed seeds against arrays saved from an earlier build of the
level search (data/oblivious_reference.npz): a faster search must grow the same trees.

Each case fits ``OKBoostRegressor(tree_type="oblivious", ...)`` on data made here; the saved
arrays are every node's feature, threshold, row count, N*var, gain and leaf value, the
training rows' leaves and the predictions on queries, compared bit for bit (the same sums in
the same order), except the nodes' N*var and gain, which numpy's reductions compute: their
last bits move with the CPU's SIMD width, so they are compared to rounding
(``okdata.assert_equal_to_rounding``). Regenerate (only when a change is meant to change the trees) with

    PYTHONPATH=. python tests/okcore/trees/test_oblivious_reference.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from okdata import assert_equal_to_rounding

from okcore.boosting import OKBoostRegressor

REFERENCE = Path(__file__).with_name("data") / "oblivious_reference.npz"
#: The ensemble's per-node arrays, compared bit for bit but for DIAGNOSTICS.
TREE_FIELDS = ("feature", "threshold", "n_samples", "impurity", "gain", "value")
#: Per-node diagnostics that numpy's reductions compute, compared to rounding.
DIAGNOSTICS = ("impurity", "gain")

#: name: (n, p, r, estimator parameters)
CASES: dict[str, tuple[int, int, int, dict]] = {
    "one_output_depth4": (3000, 8, 1, dict(max_depth=4, n_estimators=25)),
    "many_outputs_sketch_l2": (1500, 12, 20, dict(max_depth=4, n_estimators=12, l2_regularization=3.0)),
    "subsample_features_min_leaf": (
        1200, 10, 3,
        dict(max_depth=6, n_estimators=10, subsample=0.7, max_features=0.5,
             colsample_bytree=0.8, min_samples_leaf=5),
    ),
    "deep_integer_inputs": (800, 6, 2, dict(max_depth=8, n_estimators=6, l2_regularization=1.0)),
}  # fmt: skip


def case_data(n: int, p: int, r: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, p))
    if p == 6:  # few distinct values: many ties between cuts and empty bins
        X = np.floor(X * 7)
    signal = np.sin(3 * X[:, :1]) + X[:, 1:2] * X[:, 2:3]
    Y = signal + 0.3 * rng.standard_normal((n, r)) * np.linspace(1, 2, r)
    queries = rng.random((300, p))
    if p == 6:
        queries = np.floor(queries * 7)
    return X, (Y[:, 0] if r == 1 else Y), queries


def fitted_arrays(name: str) -> dict[str, np.ndarray]:
    n, p, r, kwargs = CASES[name]
    X, Y, queries = case_data(n, p, r)
    # as when the arrays were saved (refined cuts are tested in test_oblivious_refine.py)
    pinned = dict(l2_regularization=0.0, sketch_dim=None, refine_cuts=False)
    model = OKBoostRegressor(
        tree_type="oblivious", early_stopping=False, n_jobs=1, random_state=0,
        **{**pinned, **kwargs},
    ).fit(X, Y)  # fmt: skip
    e = model.ensemble_
    arrays = {f"{name}/{key}": getattr(e, key) for key in TREE_FIELDS}
    arrays[f"{name}/train_leaf"] = e.train_leaf
    arrays[f"{name}/predict"] = np.asarray(model.predict(queries), dtype=float)
    return arrays


@pytest.mark.parametrize("name", sorted(CASES))
def test_trees_and_predictions_equal_the_saved_ones(name):
    saved = np.load(REFERENCE)
    got = fitted_arrays(name)
    for key in (*TREE_FIELDS, "train_leaf", "predict"):
        same = assert_equal_to_rounding if key in DIAGNOSTICS else np.testing.assert_array_equal
        same(got[f"{name}/{key}"], saved[f"{name}/{key}"], err_msg=key)


if __name__ == "__main__":
    arrays: dict[str, np.ndarray] = {}
    for case in CASES:
        arrays.update(fitted_arrays(case))
    REFERENCE.parent.mkdir(exist_ok=True)
    np.savez_compressed(REFERENCE, **arrays)
    print(f"saved {len(arrays)} arrays to {REFERENCE}")
