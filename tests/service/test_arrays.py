"""Binary array parts: .npy (no pickle) and raw little-endian float64 with a shape."""

from __future__ import annotations

import numpy as np
import pytest

from service.arrays import as_edge_array, as_float_array, parse_binary, parse_shape, to_npy_bytes
from service.errors import InvalidRequest


def test_npy_round_trip_any_numeric_dtype() -> None:
    for arr in (
        np.arange(6.0).reshape(2, 3),
        np.arange(6, dtype=np.int32).reshape(3, 2),
        np.asfortranarray(np.eye(3, dtype=np.float32)),
    ):
        np.testing.assert_array_equal(parse_binary(to_npy_bytes(arr), "x", None), arr)


def test_npy_object_arrays_are_refused_without_unpickling() -> None:
    import io

    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(InvalidRequest, match="not a readable .npy file"):
        parse_binary(buf.getvalue(), "inputs", None)


def test_raw_float64_with_shape() -> None:
    arr = np.arange(12.0).reshape(3, 4)
    raw = arr.astype("<f8").tobytes()
    np.testing.assert_array_equal(parse_binary(raw, "x", "3,4"), arr)
    np.testing.assert_array_equal(parse_binary(raw, "x", "[3, 4]"), arr)
    np.testing.assert_array_equal(parse_binary(raw, "x", "3x4"), arr)
    with pytest.raises(InvalidRequest, match="needs 96 bytes"):
        parse_binary(raw[:-8], "x", "3,4")
    with pytest.raises(InvalidRequest, match="x.shape must be"):
        parse_shape("three,4", "x")
    with pytest.raises(InvalidRequest, match=r"shape \[3, 4\] but x.shape says 4,3"):
        parse_binary(to_npy_bytes(arr), "x", "4,3")


def test_float_and_edge_validation_messages() -> None:
    with pytest.raises(ValueError, match=r"first at \[1, 0\]"):
        as_float_array([[1.0, 2.0], [None, 3.0]], "inputs", 2)
    assert as_float_array([1.0, 2.0], "outputs", 2, allow_1d_column=True).shape == (2, 1)
    assert as_edge_array([]).shape == (0, 2)
    np.testing.assert_array_equal(as_edge_array(np.array([[0.0, 1.0]])), [[0, 1]])
    with pytest.raises(ValueError, match=r"edges\[1\] = \[2.0, -1.0\]"):
        as_edge_array([[0, 1], [2, -1]])
