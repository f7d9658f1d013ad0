"""Compact and sparse inputs over HTTP: declared dtypes, float32 / uint8 kept, CSR parts and
.npz, their validation errors, and the Python client sending them."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from svc_data import SMALL, Graph, TestClient, diffusion_request, make_settings

import okcore
from okboost_client import OKBoostClient
from okboost_client.encoding import split_arrays
from service.app import create_app
from service.http.arrays import to_npy_bytes
from service.schemas.api import ErrorResponse


def _err(r: Any, status: int, *fragments: str) -> None:
    assert r.status_code == status, r.text
    ErrorResponse.model_validate(r.json())
    message = r.json()["error"]["message"]
    for fragment in fragments:
        assert fragment in message, message


def _file(data: bytes) -> tuple[str, bytes, str]:
    return ("part.bin", data, "application/octet-stream")


def _npz(matrix: Any) -> bytes:
    buf = io.BytesIO()
    sp.save_npz(buf, matrix)
    return buf.getvalue()


def _diffusion_json(g: Graph) -> str:
    spec = {"type": "diffusion", "beta": 1.0, "edges": g.train_edges().tolist()}
    return json.dumps({"output_kernel": spec, "params": SMALL, "wait": True})


def test_float32_raw_inputs_are_kept_and_match_okcore(
    client: TestClient, graph: Graph, settings: Any
) -> None:
    X32 = graph.features[graph.train].astype(np.float32)
    r = client.post(
        "/train",
        data={
            "json": _diffusion_json(graph),
            "inputs.shape": f"{X32.shape[0]},{X32.shape[1]}",
            "inputs.dtype": "<f4",
        },
        files={"inputs": _file(X32.tobytes())},
    )
    assert r.status_code == 201, r.text
    mid = r.json()["model_id"]
    stored = np.load(settings.model_dir / mid / "inputs.npy")
    assert stored.dtype == np.float32
    np.testing.assert_array_equal(stored, X32)
    X_new = graph.features[graph.test].astype(np.float32)
    r = client.post(
        "/kernel",
        data={"json": json.dumps({"model_id": mid, "top_k": 2})},
        files={"inputs": _file(to_npy_bytes(X_new))},
    )
    assert r.status_code == 200, r.text
    est = okcore.OKBoostRegressor(**SMALL).fit(
        X32, kernel={"type": "diffusion", "beta": 1.0, "edges": graph.train_edges().tolist()}
    )
    np.testing.assert_allclose(r.json()["kernel"], est.predict_kernel(X_new), rtol=1e-9, atol=1e-12)
    # uint8 inputs are accepted as they are, too
    r = client.post(
        "/kernel",
        data={"json": json.dumps({"model_id": mid}), "inputs.shape": "1,4", "inputs.dtype": "|u1"},
        files={"inputs": _file(bytes([0, 1, 2, 3]))},
    )
    assert r.status_code == 200, r.text


def test_binary_part_errors_are_422_naming_the_part(
    client: TestClient, trained: dict[str, Any]
) -> None:
    body = json.dumps({"model_id": trained["model_id"]})
    X = np.zeros((1, 4))
    cases: list[tuple[dict[str, str], bytes, tuple[str, ...]]] = [
        (
            {"inputs.shape": "1,4", "inputs.dtype": ">f8"},
            X.tobytes(),
            ("'inputs' declares big-endian dtype '>f8'", "little-endian"),
        ),
        (
            {"inputs.shape": "1,4", "inputs.dtype": "f16"},
            X.tobytes(),
            ("'inputs' declares dtype 'f16'", "inputs.dtype"),
        ),
        (
            {"inputs.shape": "1,4", "inputs.dtype": "<f4"},
            X.tobytes(),
            ("has 32 bytes but shape [1, 4] of float32 needs 16 bytes",),
        ),
        ({}, to_npy_bytes(X.astype(">f8")), ("'inputs' is big-endian (>f8); send little-endian",)),
        ({}, to_npy_bytes(X.astype(np.complex64)), ("send bool, integer or float",)),
        ({"inputs.shape": "100000000000,4"}, X.tobytes(), ("needs 3200000000000 bytes",)),
    ]
    for fields, data, fragments in cases:
        r = client.post("/kernel", data={"json": body, **fields}, files={"inputs": _file(data)})
        _err(r, 422, *fragments)


def test_edges_parts_must_be_integers(client: TestClient, graph: Graph) -> None:
    X = graph.features[graph.train]
    edges = np.array([[0, 1], [1, 2.5]])
    r = client.post(
        "/train",
        data={"json": json.dumps({"output_kernel": {"type": "diffusion"}, "params": SMALL})},
        files={"inputs": _file(to_npy_bytes(X)), "output_kernel.edges": _file(to_npy_bytes(edges))},
    )
    _err(r, 422, "edges[1] = [1.0, 2.5] is not a pair of vertex indices: non-negative integers")
    r = client.post(
        "/train",
        data={
            "json": json.dumps(
                {"output_kernel": {"type": "diffusion"}, "params": SMALL, "wait": True}
            ),
            "output_kernel.edges.shape": "1,2",
            "output_kernel.edges.dtype": "<i4",
        },
        files={
            "inputs": _file(to_npy_bytes(X)),
            "output_kernel.edges": _file(np.array([0, 1], dtype="<i4").tobytes()),
        },
    )
    assert r.status_code == 201, r.text


def test_csr_inputs_are_validated(client: TestClient, trained: dict[str, Any]) -> None:
    mid = trained["model_id"]
    good = {"data": [1.0, 2.0], "indices": [0, 3], "indptr": [0, 1, 2], "shape": [2, 4]}
    bad = [
        ({"indptr": [0, 2, 1]}, "inputs.indptr must start at 0, never decrease and end at nnz"),
        ({"indices": [0, 4]}, "inputs.indices[1] = 4 is not a column index in [0, 4)"),
        ({"data": [1.0, float("inf")]}, "inputs.data contains infinite values (first at [1])"),
        ({"shape": [2, 5]}, "inputs has 5 columns but model"),
    ]
    for change, fragment in bad:  # (JSON's Infinity literal, which the service parses)
        body = json.dumps({"model_id": mid, "inputs": {**good, **change}})
        r = client.post("/kernel", content=body, headers={"content-type": "application/json"})
        _err(r, 422, fragment)
    # a null entry is a missing value: the (tree) model takes it
    missing = {**good, "data": [1.0, None]}
    assert client.post("/kernel", json={"model_id": mid, "inputs": missing}).status_code == 200
    # the same checks on parts: inputs.data / .indices / .indptr (raw, no shape) + inputs.shape
    r = client.post(
        "/kernel",
        data={
            "json": json.dumps({"model_id": mid}),
            "inputs.shape": "2,4",
            "inputs.indices.dtype": "<i4",
            "inputs.indptr.dtype": "<i8",
        },
        files={
            "inputs.data": _file(np.array([1.0, 2.0]).tobytes()),
            "inputs.indices": _file(np.array([0, 9], dtype="<i4").tobytes()),
            "inputs.indptr": _file(np.array([0, 1, 2], dtype="<i8").tobytes()),
        },
    )
    _err(r, 422, "inputs.indices[1] = 9 is not a column index in [0, 4)")
    r = client.post(
        "/kernel",
        data={"json": json.dumps({"model_id": mid})},
        files={"inputs": _file(b"PK\x03\x04 not a zip")},
    )
    _err(r, 422, "part 'inputs' is not a readable .npz file")


def test_client_sends_csr_and_float32_as_parts() -> None:
    X = sp.random(5, 3, density=0.5, format="csr", random_state=1, dtype=np.float32)
    plain, parts, texts = split_arrays(
        {"inputs": X, "model_id": "m", "inputs2": np.ones((1, 3), np.float32)}
    )
    assert plain == {"model_id": "m"} and texts == {"inputs.shape": "5,3"}
    assert set(parts) == {"inputs.data", "inputs.indices", "inputs.indptr", "inputs2"}
    assert np.load(io.BytesIO(parts["inputs.data"][1])).dtype == np.float32
    assert np.load(io.BytesIO(parts["inputs2"][1])).dtype == np.float32


@pytest.mark.parametrize("binary", [True, False])
def test_csr_end_to_end_and_after_a_restart(tmp_path: Path, graph: Graph, binary: bool) -> None:
    rng = np.random.default_rng(0)
    dense = graph.features[graph.train] * (rng.random(graph.features[graph.train].shape) < 0.6)
    X = sp.csr_matrix(dense)
    X_new = sp.csr_matrix(graph.features[graph.test])
    spec = {"type": "diffusion", "beta": 1.0, "edges": graph.train_edges()}
    settings = make_settings(tmp_path)
    with TestClient(create_app(settings)) as http:
        c = OKBoostClient("http://localhost", transport=http._transport, binary=binary)
        mid = c.train(X, spec, params=SMALL, wait=True)["model_id"]
        first = c.kernel(mid, X_new, top_k=3)
        pre = c.predict(mid, X_new, top_k=2, weights="sparse")
        # the same matrix as one .npz part
        r = http.post(
            "/kernel",
            data={"json": json.dumps({"model_id": mid, "top_k": 3})},
            files={"inputs": _file(_npz(X_new))},
        )
        assert r.status_code == 200, r.text
        np.testing.assert_array_equal(r.json()["kernel"], first["kernel"])
    assert (settings.model_dir / mid / "inputs.npz").exists()
    est = okcore.OKBoostRegressor(**SMALL).fit(
        X, kernel={"type": "diffusion", "beta": 1.0, "edges": graph.train_edges().tolist()}
    )
    np.testing.assert_allclose(first["kernel"], est.predict_kernel(X_new), rtol=1e-9, atol=1e-12)
    with TestClient(create_app(settings)) as http:  # a new process would read the same files
        c = OKBoostClient("http://localhost", transport=http._transport, binary=binary)
        again = c.kernel(mid, X_new, top_k=3)
        np.testing.assert_array_equal(again["kernel"], first["kernel"])
        np.testing.assert_array_equal(again["edges"]["new_known"], first["edges"]["new_known"])
        pre2 = c.predict(mid, X_new, top_k=2, weights="sparse")
        np.testing.assert_array_equal(pre2["indices"], pre["indices"])
        np.testing.assert_array_equal(pre2["weights_sparse"], pre["weights_sparse"])


def test_float32_through_the_client(client: TestClient, graph: Graph) -> None:
    c = OKBoostClient("http://localhost", transport=client._transport)
    body = diffusion_request(graph)
    X32 = np.asarray(body["inputs"], dtype=np.float32)
    mid = c.train(X32, {**body["output_kernel"]}, params=SMALL, wait=True)["model_id"]
    out = c.kernel(mid, graph.features[graph.test].astype(np.float32), top_k=2)
    assert out["kernel"].shape == (len(graph.test), len(graph.test))
