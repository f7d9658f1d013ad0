"""Binary answers: /kernel and /predict as .npz / .npy when the Accept header asks."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
from svc_data import Graph, TestClient

from service.http.encoding import Triples, npz_bytes

NPZ = {"accept": "application/x-npz"}
NPY = {"accept": "application/x-npy"}


def _npz(content: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(content), allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def test_kernel_npz_holds_the_json_answer(
    client: TestClient, trained: dict[str, Any], graph: Graph
) -> None:
    body = {
        "model_id": trained["model_id"],
        "inputs": graph.features[graph.test].tolist(),
        "top_k": 2,
        "ids": [f"q{i}" for i in range(len(graph.test))],
    }
    js = client.post("/kernel", json=body).json()
    r = client.post("/kernel", json=body, headers=NPZ)
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-npz"
    assert (
        r.headers["vary"] == "Accept"
        and 'filename="kernel.npz"' in r.headers["content-disposition"]
    )
    got = _npz(r.content)
    assert set(got) == {
        "model_id",
        "against",
        "shape",
        "kernel",
        "edges.new_new",
        "edges.new_known",
        "edges.new_new_ids",
        "edges.new_known_ids",
    }
    assert got["model_id"].ndim == 0 and got["against"].ndim == 0  # as documented
    assert got["model_id"].item() == trained["model_id"] and got["against"].item() == "predicted"
    assert got["shape"].dtype == np.int64 and got["shape"].tolist() == js["shape"]
    np.testing.assert_array_equal(got["kernel"], js["kernel"])  # float64 bits, both ways
    for key in ("new_new", "new_known"):
        assert got[f"edges.{key}"].dtype == np.float64
        np.testing.assert_array_equal(
            got[f"edges.{key}"], np.asarray(js["edges"][key]).reshape(-1, 3)
        )
        assert got[f"edges.{key}_ids"].tolist() == js["edges"][f"{key}_ids"]


def test_kernel_npy_is_the_kernel_matrix(
    client: TestClient, trained: dict[str, Any], graph: Graph
) -> None:
    body = {
        "model_id": trained["model_id"],
        "inputs": graph.features[graph.test].tolist(),
        "against": "training",
    }
    js = client.post("/kernel", json=body).json()
    r = client.post("/kernel", json=body, headers=NPY)
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-npy"
    arr = np.load(io.BytesIO(r.content), allow_pickle=False)
    assert arr.shape == (len(graph.test), len(graph.train)) and arr.dtype == np.float64
    np.testing.assert_array_equal(arr, js["kernel"])


@pytest.mark.parametrize(
    ("path", "extra", "reason"),
    [
        ("/kernel", {"top_k": 2}, "this answer has edges"),
        ("/kernel", {"return_kernel": False, "top_k": 1}, "this answer has edges"),
        ("/kernel", {"return_kernel": False}, "return_kernel is false"),
        ("/predict", {}, "a /predict answer has several arrays"),
    ],
)
def test_npy_of_an_answer_with_several_arrays_is_a_406(
    client: TestClient, trained: dict[str, Any], graph: Graph, path: str, extra: Any, reason: str
) -> None:
    body = {"model_id": trained["model_id"], "inputs": graph.features[graph.test].tolist()}
    r = client.post(path, json={**body, **extra}, headers=NPY)
    assert r.status_code == 406, r.text
    err = r.json()["error"]
    assert err["code"] == "not_acceptable" and reason in err["message"]
    assert "application/x-npz" in err["message"]


def test_predict_npz_keeps_integer_indices(
    client: TestClient, trained: dict[str, Any], graph: Graph
) -> None:
    body = {
        "model_id": trained["model_id"],
        "inputs": graph.features[graph.test].tolist(),
        "top_k": 3,
        "weights": "sparse",
        "weights_top_k": 4,
    }
    js = client.post("/predict", json=body).json()
    got = _npz(client.post("/predict", json=body, headers=NPZ).content)
    assert got["indices"].dtype == np.int64 and got["indices"].tolist() == js["indices"]
    np.testing.assert_array_equal(got["scores"], js["scores"])
    np.testing.assert_array_equal(got["weights_sparse"], js["weights_sparse"])
    assert "weights" not in got and "outputs" not in got  # null fields are left out
    assert got["index_space"].item() == "training"


@pytest.mark.parametrize(
    ("accept", "media"),
    [
        ("application/x-npz", "application/x-npz"),
        ("application/json;q=0.5, application/x-npz", "application/x-npz"),
        ("application/x-npz;q=0.2, application/json", "application/json"),
        ("application/x-npz;q=0, application/x-npy;q=0.1", "application/x-npy"),
        ("text/html,application/xhtml+xml,*/*;q=0.8", "application/json"),
        ("*/*", "application/json"),
        ("", "application/json"),
    ],
)
def test_accept_header_negotiation(
    client: TestClient, trained: dict[str, Any], graph: Graph, accept: str, media: str
) -> None:
    body = {"model_id": trained["model_id"], "inputs": graph.features[graph.test].tolist()}
    r = client.post("/kernel", json=body, headers={"accept": accept})
    assert r.status_code == 200 and r.headers["content-type"].startswith(media)


def test_errors_stay_json_when_binary_is_asked(client: TestClient, graph: Graph) -> None:
    body = {"model_id": "0" * 32, "inputs": graph.features[graph.test].tolist()}
    r = client.post("/kernel", json=body, headers=NPZ)
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_npz_members_are_named_by_json_paths() -> None:
    t = Triples(np.array([0, 1]), np.array([2, 3]), np.array([0.5, 0.25]))
    ids = np.empty((2, 2), dtype=object)
    ids[:] = [["a", "b"], ["c", "d"]]
    got = _npz(npz_bytes({"x": None, "e": {"list": t, "list_ids": ids}, "name": "m"}))
    assert set(got) == {"e.list", "e.list_ids", "name"}
    assert got["e.list"].tolist() == [[0, 2, 0.5], [1, 3, 0.25]]
    assert got["e.list_ids"].dtype.kind == "U" and got["e.list_ids"].tolist() == ids.tolist()
    assert t.to_json() == [[0, 2, 0.5], [1, 3, 0.25]] and isinstance(t.to_json()[0][0], int)


def test_openapi_lists_the_binary_media_types(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    kernel = paths["/kernel"]["post"]["responses"]
    assert {"application/json", "application/x-npz", "application/x-npy"} <= set(
        kernel["200"]["content"]
    )
    assert "406" in kernel
    predict = paths["/predict"]["post"]["responses"]["200"]["content"]
    assert "application/x-npz" in predict and "application/x-npy" not in predict
