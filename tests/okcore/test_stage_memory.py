"""Memory of the OKBoost stage loop: the per-round tables (training leaves of the smallest
type, in-bag counts only with subsampling, implicit unit counts) change no model.

The reference arrays were written by tests/okcore/data/make_stage_loop_reference.py with the
okcore before these tables (training leaves and counts as int32 lists stacked at the end);
the sketched fit's were rewritten when the sketch's draw moved to the rows' space (the other
fits are bit for bit the earlier ones).
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from okdata import assert_equal_to_rounding

from okcore.boosting import loop

DATA = Path(__file__).parent / "data"
_spec = importlib.util.spec_from_file_location("make_ref", DATA / "make_stage_loop_reference.py")
assert _spec is not None and _spec.loader is not None
make_ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_ref)


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    with np.load(DATA / "stage_loop_reference.npz") as npz:
        return {k: npz[k] for k in npz.files}


@pytest.mark.parametrize("name", sorted(make_ref.CONFIGS))
def test_models_are_those_of_the_stacked_lists(name, reference, monkeypatch):
    """Bit for bit the earlier models' trees (leaves, thresholds), and their predictions to
    rounding (a Huber leaf's value is a numpy reduction, whose last bit moves with the
    CPU's SIMD width), also when the tables grow round by round (a tiny reserve: every path
    of RoundTable.put) instead of being reserved for all M rounds."""
    X, Y, X_new = make_ref.data()
    for reserve in (loop.ROUND_TABLE_RESERVE_BYTES, 1):
        monkeypatch.setattr(loop, "ROUND_TABLE_RESERVE_BYTES", reserve)
        model = make_ref.fit(name, X, Y)
        e = model.ensemble_
        np.testing.assert_array_equal(e.train_leaf, reference[f"{name}_train_leaf"])
        np.testing.assert_array_equal(e.threshold, reference[f"{name}_threshold"])
        assert_equal_to_rounding(model.predict(X_new), reference[f"{name}_predict"])
        assert_equal_to_rounding(model.predict_weights(X_new), reference[f"{name}_weights"])


def test_leaves_take_the_smallest_type_and_unit_counts_are_implicit():
    X, Y, _ = make_ref.data()
    small = make_ref.fit("histogram_sketch", X, Y).ensemble_
    assert small.train_leaf.dtype == np.uint8 and small.train_count is None
    np.testing.assert_array_equal(small.fit_counts(), 1)
    many = make_ref.fit("many_leaves", X, Y).ensemble_
    assert np.diff(many.leaf_offset).max() > 256 and many.train_leaf.dtype == np.uint16
    sub = make_ref.fit("subsample", X, Y).ensemble_
    assert sub.train_count is not None and sub.train_count.dtype == np.uint8
    np.testing.assert_array_equal(sub.train_count.sum(axis=1), round(0.7 * len(X)))


def test_round_table_widens_and_grows(monkeypatch):
    table = loop.RoundTable(5, 3, np.uint8)
    assert len(table.array) == 5  # all rounds reserved when they fit
    table.put(0, np.array([1, 2, 3]), largest=3)
    table.put(1, np.array([300, 0, 7]), largest=300)
    assert table.array.dtype == np.uint16
    np.testing.assert_array_equal(table.rows(2), [[1, 2, 3], [300, 0, 7]])
    monkeypatch.setattr(loop, "ROUND_TABLE_RESERVE_BYTES", 1)
    grown = loop.RoundTable(5, 3, np.float64)
    assert len(grown.array) == 1
    for m in range(5):
        grown.put(m, np.full(3, m / 2))
    assert len(grown.array) == 5  # doubled up to the number of rounds, never past it
    np.testing.assert_array_equal(grown.rows(5)[:, 0], np.arange(5) / 2)
