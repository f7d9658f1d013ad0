"""Binary array parts: .npy (no pickle), raw little-endian values with a shape and dtype,
scipy sparse .npz, CSR structure checks."""

from __future__ import annotations

import io
import math
import zipfile
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from svc_data import TestClient, bipartite_network, clustered_graph, post_json, vector_data
from test_errors import assert_error

from service.errors import InvalidRequest, TooLarge
from service.http.arrays import (
    as_csr,
    as_edge_array,
    as_float_array,
    as_input_matrix,
    parse_binary,
    parse_shape,
    to_npy_bytes,
)


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


# ------------------------------------------------------------------ dtypes, byte order, sizes
def _npy_with_header(header: str, payload: bytes) -> bytes:
    head = header.encode("latin1")
    pad = 64 - (10 + len(head) + 1) % 64
    head += b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head + payload


@pytest.mark.parametrize(
    ("dtype", "declared"),
    [("<f8", None), ("<f8", "<f8"), ("<f4", "<f4"), ("u1", "|u1"), ("u1", "u1"), ("<i4", "<i4")],
)
def test_raw_parts_take_a_declared_dtype(dtype: str, declared: str | None) -> None:
    arr = np.arange(6).reshape(2, 3).astype(dtype)
    out = parse_binary(arr.tobytes(), "inputs", "2,3", declared)
    assert out.dtype == np.dtype(dtype) and out.shape == (2, 3)
    np.testing.assert_array_equal(out, arr)
    assert parse_binary(np.arange(4, dtype="<i8").tobytes(), "e", "2,2", "<i8").dtype == np.int64


def test_raw_dtype_errors_name_the_part_and_what_to_send() -> None:
    raw = np.zeros(6, dtype="<f4").tobytes()
    with pytest.raises(InvalidRequest, match=r"'inputs' declares big-endian dtype '>f8'.*'<f8'"):
        parse_binary(np.zeros(3).tobytes(), "inputs", "1,3", ">f8")
    with pytest.raises(InvalidRequest, match=r"'inputs' declares dtype 'float16'.*inputs.dtype"):
        parse_binary(raw, "inputs", "2,3", "float16")
    with pytest.raises(
        InvalidRequest, match=r"has 24 bytes but shape \[2, 3\] of float64 needs 48"
    ):
        parse_binary(raw, "inputs", "2,3")
    with pytest.raises(InvalidRequest, match="is a .npy file of dtype <f4 but inputs.dtype says"):
        parse_binary(to_npy_bytes(np.zeros((2, 2), np.float32)), "inputs", None, "<f8")


def test_npy_headers_are_checked_before_allocating() -> None:
    big_endian = to_npy_bytes(np.arange(4.0).astype(">f8"))
    with pytest.raises(InvalidRequest, match=r"'inputs' is big-endian \(>f8\); send little-endian"):
        parse_binary(big_endian, "inputs", None)
    # a header declaring 10^12 rows on 16 bytes of data: refused, never allocated
    huge = _npy_with_header(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000, 2), }", b"\0" * 16
    )
    with pytest.raises(InvalidRequest, match="declares shape .* but holds 16 bytes"):
        parse_binary(huge, "inputs", None)
    complex_ = to_npy_bytes(np.zeros(2, dtype=np.complex128))
    with pytest.raises(InvalidRequest, match="send bool, integer or float"):
        parse_binary(complex_, "inputs", None)
    with pytest.raises(InvalidRequest, match="not a whole number of int64"):
        parse_binary(b"\0" * 12, "inputs.indices", None, "<i8", vector=True)
    np.testing.assert_array_equal(
        parse_binary(np.arange(3, dtype="<i4").tobytes(), "x.indptr", None, "<i4", vector=True),
        [0, 1, 2],
    )


def test_edges_parts_must_be_integers() -> None:
    np.testing.assert_array_equal(as_edge_array(np.array([[0, 1]], dtype=np.int32)), [[0, 1]])
    with pytest.raises(ValueError, match=r"edges\[0\] = \[0.0, 1.5\] is not a pair"):
        as_edge_array(np.array([[0.0, 1.5]]))
    with pytest.raises(ValueError, match="integer vertex indices: got dtype bool"):
        as_edge_array(np.array([[True, False]]))
    with pytest.raises(ValueError, match=r"edges\[0\] = \[0, -2\]"):
        as_edge_array(np.array([[0, -2]], dtype=np.int64))


# ------------------------------------------------------------------ sparse inputs
def _npz(matrix: sp.spmatrix, compressed: bool = True) -> bytes:
    buf = io.BytesIO()
    sp.save_npz(buf, matrix, compressed=compressed)
    return buf.getvalue()


def test_sparse_npz_parts_in_every_layout() -> None:
    dense = np.array([[0, 1.5, 0], [0, 0, 0], [2.0, 0, -3.0]])
    for matrix in (sp.csr_matrix(dense), sp.csc_matrix(dense), sp.coo_matrix(dense)):
        for compressed in (True, False):
            out = parse_binary(_npz(matrix, compressed), "inputs", None)
            assert sp.isspmatrix_csr(out)
            np.testing.assert_array_equal(out.toarray(), dense)
    f32 = parse_binary(_npz(sp.csr_matrix(dense.astype(np.float32))), "inputs", None)
    assert f32.dtype == np.float32
    assert parse_binary(_npz(sp.csr_array(dense)), "inputs", None).shape == (3, 3)


def test_sparse_npz_is_read_without_pickle_and_bounded() -> None:
    buf = io.BytesIO()
    np.savez(buf, format=np.array(["csr"], dtype=object), shape=np.array([1, 1]))
    with pytest.raises(InvalidRequest, match="Python objects"):
        parse_binary(buf.getvalue(), "inputs", None)
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("data.npy", b"\0" * 5_000_000)
    with pytest.raises(TooLarge, match="expands to 5000000 bytes"):
        parse_binary(bomb.getvalue(), "inputs", None, max_bytes=1_000_000)
    with pytest.raises(InvalidRequest, match="not a readable .npz"):
        parse_binary(b"PK\x03\x04garbage", "inputs", None)
    with pytest.raises(InvalidRequest, match="without 'format'"):
        parse_binary(bomb.getvalue(), "inputs", None)


def test_csr_structure_is_checked() -> None:
    ok = {"data": [1.0, 2.0], "indices": [0, 2], "indptr": [0, 1, 2], "shape": [2, 3]}
    np.testing.assert_array_equal(as_csr(ok, "inputs").toarray(), [[1, 0, 0], [0, 0, 2]])
    assert as_csr({**ok, "indices": [0.0, 2.0]}, "inputs").nnz == 2
    bad = [
        ({"indptr": [1, 1, 2]}, "indptr must start at 0"),
        ({"indptr": [0, 2, 1]}, "never decrease"),
        ({"indptr": [0, 1, 3]}, "end at nnz = 2"),
        ({"indptr": [0, 2]}, r"rows \+ 1 = 3 entries"),
        ({"indices": [0, 3]}, r"inputs.indices\[1\] = 3 is not a column index in \[0, 3\)"),
        ({"indices": [0, -1]}, "not a column index"),
        ({"indices": [0, 1.5]}, "inputs.indices must hold integers"),
        ({"indices": [0]}, "indices has 1 entries but data has 2"),
        ({"data": [1.0, float("inf")]}, r"infinite values \(first at \[1\]\)"),
        ({"shape": [2]}, "shape must be two integers"),
        ({"shape": [0, 3]}, "must not be empty"),
        ({"shape": [2, 10**9]}, "at most 1000000 are accepted"),
    ]
    for change, message in bad:
        with pytest.raises(ValueError, match=message):
            as_csr({**ok, **change}, "inputs")
    # a stored NaN is a missing value: kept for the models that take it, refused elsewhere
    assert np.isnan(as_csr({**ok, "data": [1.0, float("nan")]}, "inputs").data[1])
    with pytest.raises(ValueError, match=r"inputs.data holds a missing value \(NaN\) at \[1\]"):
        as_input_matrix({**ok, "data": [1.0, float("nan")]}, "inputs")
    with pytest.raises(ValueError, match="missing indptr"):
        as_csr({"data": [], "indices": [], "shape": [1, 1]}, "inputs")
    dup = as_csr({"data": [1.0, 2.0], "indices": [1, 1], "indptr": [0, 2], "shape": [1, 2]}, "x")
    np.testing.assert_array_equal(dup.toarray(), [[0, 3.0]])


def test_input_matrices_keep_compact_dtypes() -> None:
    for dtype in (np.float32, np.uint8, np.float64):
        assert as_input_matrix(np.ones((2, 2), dtype=dtype), "inputs").dtype == dtype
    assert as_input_matrix(np.ones((2, 2), dtype=np.int32), "inputs").dtype == np.float64
    assert as_input_matrix([[1, 2]], "inputs").dtype == np.float64
    with pytest.raises(ValueError, match=r"NaN, infinite or null values \(first at \[0, 1\]\)"):
        as_input_matrix(np.array([[1, np.inf]], dtype=np.float32), "inputs")
    with pytest.raises(ValueError, match="must be a 2-D array"):
        as_input_matrix(np.ones(3, dtype=np.float32), "inputs")


# ------------------------------------------------------------------ JSON numbers, strictly
HUGE = 10**400  # a JSON integer no float holds: json.dumps writes its 401 digits


def _vector_train(**extra: Any) -> dict[str, Any]:
    X, Y = vector_data()
    body = {"inputs": X.tolist(), "output_kernel": {"type": "rbf", "outputs": Y.tolist()},
            "params": {"n_estimators": 3}, "wait": False}  # fmt: skip
    body.update(extra)
    return body


def _requests(model_id: str, value: Any) -> dict[str, tuple[str, dict[str, Any]]]:
    """One request per numeric array of the API, ``value`` at [0][1] (or [1] of a vector)."""
    row = clustered_graph().features[0].tolist()
    X, Y = vector_data()
    inputs, outputs, weights = X.tolist(), Y.tolist(), [1.0] * len(X)
    inputs[0][1], outputs[0][1], weights[1] = value, value, value
    return {
        "/predict inputs": ("/predict", {"model_id": model_id, "inputs": [row[:1] + [value] + row[2:]]}),
        "/kernel inputs": ("/kernel", {"model_id": model_id, "inputs": [row[:1] + [value] + row[2:]]}),
        "/train inputs": ("/train", _vector_train(inputs=inputs)),
        "/train outputs": ("/train", _vector_train(output_kernel={"type": "rbf", "outputs": outputs})),
        "/train sample_weight": ("/train", _vector_train(sample_weight=weights)),
    }  # fmt: skip


def test_a_json_integer_too_large_for_a_float_is_a_422_like_infinity(
    client: TestClient, trained: dict[str, Any]
) -> None:
    """1 followed by 400 zeros was a 500 (OverflowError): it is infinity, said as such."""
    huge, infinite = _requests(trained["model_id"], HUGE), _requests(trained["model_id"], math.inf)
    for what, (path, body) in huge.items():
        err = assert_error(post_json(client, path, body), 422, "invalid_data")
        expected = assert_error(post_json(client, path, infinite[what][1]), 422, "invalid_data")
        assert err["message"] == expected["message"], what
    with pytest.raises(ValueError, match=r"contains infinity \(first at \[0, 1\]\).*send finite"):
        as_float_array([[1, HUGE], [2, 3]], "inputs", 2, allow_nan=True)
    with pytest.raises(ValueError, match=r"contains NaN, infinite or null values \(first at \[1\]"):
        as_float_array([1, -HUGE], "sample_weight", 1)
    assert as_float_array([[2**70, 1]], "inputs", 2)[0, 0] == 2.0**70  # big, yet a float


def test_a_json_integer_of_thousands_of_digits_is_a_422(client: TestClient) -> None:
    """Python refuses to read integers of more than 4300 digits (a ValueError, not JSON's)."""
    text = '{"inputs": [[1' + "0" * 5000 + ", 2]]}"
    r = client.post("/train", content=text, headers={"content-type": "application/json"})
    assert_error(r, 422, "invalid_data", "request body", "digits", "send finite numbers")


@pytest.mark.parametrize(
    ("value", "fragments"),
    [
        (True, ["is true, not a number", "JSON numbers"]),
        (False, ["is false, not a number"]),
        ("1.5", ["is the text '1.5'", "JSON numbers, without quotes"]),
        (" 1 ", ["is the text ' 1 '", "without quotes"]),
        ("Infinity", ["is the text 'Infinity'"]),
        ("NaN", ["is the text 'NaN'", "a missing value is null"]),
        ("a", ["is the text 'a', not a number", "JSON numbers"]),
    ],
)
def test_booleans_and_text_are_not_numbers(
    client: TestClient, trained: dict[str, Any], value: Any, fragments: list[str]
) -> None:
    """true was read as 1 and '1.5' as 1.5, 'NaN' as a missing value: the request models
    are strictly typed (docs/API.md), arrays of numbers included."""
    for what, (path, body) in _requests(trained["model_id"], value).items():
        where = "[1]" if "weight" in what else "[0][1] (row 0, column 1)"
        err = assert_error(
            post_json(client, path, body), 422, "invalid_data", where, *fragments[:1]
        )
        for fragment in fragments[1:]:
            if fragment != "a missing value is null" or "inputs" in what:  # takes missing values
                assert fragment in err["message"], (what, err["message"])
        assert "impute" not in err["message"] or "cannot" in err["message"], err["message"]
    body = {"model_id": trained["model_id"], "inputs": [[value] + [0.5] * 3]}
    err = assert_error(client.post("/kernel", json=body), 422, "invalid_data", "inputs[0][0]")
    if isinstance(value, str) and value != "NaN":
        assert "impute" not in err["message"], err["message"]  # /kernel inputs take missing values


def test_boolean_labels_and_1d_arrays_are_refused() -> None:
    with pytest.raises(ValueError, match=r"labels\[0\]\[0\] \(row 0, column 0\) is true"):
        as_float_array([[True, False, True]], "labels", 2, allow_1d_column=True)
    with pytest.raises(ValueError, match=r"outputs\[1\] is true, not a number"):
        as_float_array([0.5, True], "outputs", 2, allow_1d_column=True)
    with pytest.raises(ValueError, match=r"sample_weight\[2\] is the text '2'"):
        as_float_array([1, 1.5, "2"], "sample_weight", 1)
    with pytest.raises(ValueError, match=r"inputs\[1\] is not a row"):
        as_float_array([[1, 2], 3], "inputs", 2)
    # text for a missing value where none can be sent: fill it in; where one can: null
    with pytest.raises(ValueError, match=r"'NA', not a number: a missing value cannot be sent"):
        as_float_array([[1, 2], ["NA", 1]], "outputs", 2)
    with pytest.raises(ValueError, match=r"'NA', not a number: send .*a missing value is null"):
        as_float_array([[1, 2], ["NA", 1]], "inputs", 2, allow_nan=True)
    # numbers and null (a missing value) as before, an array part's bool dtype kept
    out = as_float_array([[1, None], [2, 3.5]], "inputs", 2, allow_nan=True)
    assert out.dtype == np.float64 and np.isnan(out[0, 1]) and out[1].tolist() == [2.0, 3.5]
    assert as_float_array(np.array([[True, False]]), "inputs", 2).tolist() == [[1.0, 0.0]]


def test_an_empty_array_asks_for_a_row(client: TestClient, trained: dict[str, Any]) -> None:
    """`"inputs": []` said 'got 1-D (wrap a single row as [[...]])'."""
    r = client.post("/predict", json={"model_id": trained["model_id"], "inputs": []})
    err = assert_error(r, 422, "invalid_data", "inputs is empty", "send at least one row")
    assert "1-D" not in err["message"]
    with pytest.raises(ValueError, match=r"inputs is empty \(shape \[1, 0\]\)"):
        as_float_array([[]], "inputs", 2)
    with pytest.raises(ValueError, match="sample_weight is empty.*at least one number"):
        as_float_array([], "sample_weight", 1)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [(True, "adjacency[0][1] (row 0, column 1) is true"), (HUGE, "adjacency[0][1] is infinite")],
)
def test_a_bipartite_adjacency_holds_numbers_too(
    client: TestClient, value: Any, fragment: str
) -> None:
    """The adjacency took true as 1 and 1 followed by 400 zeros was a 500."""
    net = bipartite_network()
    Y = net.Y.tolist()
    Y[0][1] = value
    body = {"task": "bipartite", "model": "okboost", "rows": {"inputs": net.rows.tolist()},
            "cols": {"inputs": net.cols.tolist()}, "adjacency": Y, "wait": False}  # fmt: skip
    assert_error(post_json(client, "/train", body), 422, "invalid_data", fragment)


def test_edges_and_sparse_parts_in_json_hold_numbers_too() -> None:
    """Edges and a CSR object's arrays took true as 1; 1 followed by 400 zeros was a 500."""
    with pytest.raises(ValueError, match=r"edges\[0\]\[1\] \(row 0, column 1\) is true"):
        as_edge_array([[0, True]])
    with pytest.raises(ValueError, match=r"edges\[0\] = \[0.0, inf\] is not a pair"):
        as_edge_array([[0, HUGE]])
    csr = {"data": [1.0, 2.0], "indices": [0, 1], "indptr": [0, 1, 2], "shape": [2, 2]}
    with pytest.raises(ValueError, match=r"inputs.data\[1\] is true, not a number"):
        as_csr({**csr, "data": [1.0, True]}, "inputs")
    with pytest.raises(ValueError, match=r"inputs.data contains infinite values \(first at \[0\]"):
        as_csr({**csr, "data": [HUGE, 1.0]}, "inputs")
    with pytest.raises(ValueError, match=r"inputs.indices\[0\] is false, not a number"):
        as_csr({**csr, "indices": [False, 1]}, "inputs")
    assert as_csr(csr, "inputs").toarray().tolist() == [[1.0, 0.0], [0.0, 2.0]]


@pytest.mark.parametrize("index", [2**53, 2**63, 2**64, 1e20])
def test_indices_beyond_float64s_exact_integers_are_refused_not_wrapped(index: Any) -> None:
    """Cast to int64, 2**63 became -2**63 (a 500 where it indexed); refused, entry named."""
    with pytest.raises(ValueError, match=r"edges\[1\] = .* is not a pair of vertex indices"):
        as_edge_array([[0, 1], [1, index]])
    if index < 2**64:
        with pytest.raises(ValueError, match=r"edges\[0\] = .* is not a pair of vertex indices"):
            as_edge_array(np.array([[0, index]], dtype=np.uint64))
    csr = {"data": [1.0, 2.0], "indices": [0, index], "indptr": [0, 1, 2], "shape": [2, 2]}
    with pytest.raises(ValueError, match=r"inputs.indices must hold integers of at most"):
        as_csr(csr, "inputs")
    assert as_edge_array([[0, 2**53 - 1]]).tolist() == [[0, 2**53 - 1]]
