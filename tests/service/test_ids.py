"""Vertex ids: training with ids and edges by id, answers by id, validation, storage."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pytest
from svc_data import Graph, TestClient, diffusion_request

from service.app import create_app
from service.config import Settings
from service.vertex_ids import VertexIds, as_id_array


def _ids(n: int, prefix: str = "v") -> list[str]:
    return [f"{prefix}{i:03d}" for i in range(n)]


def _by_id_request(g: Graph, **extra: Any) -> dict[str, Any]:
    """The toy request with ids and its edges given by id (ids in reversed order)."""
    n = len(g.train)
    ids = _ids(n)[::-1]
    edges = [[ids[a], ids[b]] for a, b in g.train_edges().tolist()]
    body = diffusion_request(g, ids=ids, **extra)
    body["output_kernel"]["edges"] = edges
    return body


@pytest.fixture
def with_ids(client: TestClient, graph: Graph) -> dict[str, Any]:
    r = client.post("/train", json=_by_id_request(graph))
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def test_edges_by_id_train_the_same_model_as_edges_by_row(
    client: TestClient, graph: Graph, with_ids: dict[str, Any], trained: dict[str, Any]
) -> None:
    assert with_ids["model"]["has_ids"] is True and trained["model"]["has_ids"] is False
    X_new = graph.features[graph.test].tolist()
    ask = {"inputs": X_new, "top_k": 3, "against": "predicted"}
    by_id = client.post("/kernel", json={"model_id": with_ids["model_id"], **ask}).json()
    by_row = client.post("/kernel", json={"model_id": trained["model_id"], **ask}).json()
    assert by_id["kernel"] == by_row["kernel"]
    assert by_id["edges"]["new_known"] == by_row["edges"]["new_known"]
    assert "new_known_ids" not in by_row["edges"] or by_row["edges"]["new_known_ids"] is None


def test_kernel_edges_are_answered_by_id(
    client: TestClient, graph: Graph, with_ids: dict[str, Any]
) -> None:
    ids = _ids(len(graph.train))[::-1]
    X_new = graph.features[graph.test].tolist()
    new_ids = [f"new-{i}" for i in range(len(X_new))]
    body = {"model_id": with_ids["model_id"], "inputs": X_new, "top_k": 2, "ids": new_ids}
    edges = client.post("/kernel", json=body).json()["edges"]
    assert len(edges["new_known_ids"]) == len(edges["new_known"]) > 0
    for (a, i, _), (id_a, id_i) in zip(edges["new_known"], edges["new_known_ids"], strict=True):
        assert isinstance(a, int) and isinstance(i, int)
        assert id_a == new_ids[a] and id_i == ids[i]
    for (a, b, _), pair in zip(edges["new_new"], edges["new_new_ids"], strict=True):
        assert pair == [new_ids[a], new_ids[b]]
    # without ids for the new vertices they are named by their row number
    del body["ids"]
    edges = client.post("/kernel", json=body).json()["edges"]
    assert [p[0] for p in edges["new_known_ids"]] == [str(e[0]) for e in edges["new_known"]]


def test_request_ids_alone_name_new_vertices(
    client: TestClient, graph: Graph, trained: dict[str, Any]
) -> None:
    body = {
        "model_id": trained["model_id"],
        "inputs": graph.features[graph.test[:2]].tolist(),
        "ids": ["x", "y"],
        "top_k": 1,
    }
    edges = client.post("/kernel", json=body).json()["edges"]
    assert edges["new_new_ids"] == [["x", "y"]]
    assert edges["new_known_ids"] == [[["x", "y"][a], str(i)] for a, i, _ in edges["new_known"]]


def test_predict_names_pre_images_and_weights_by_id(
    client: TestClient, graph: Graph, with_ids: dict[str, Any]
) -> None:
    ids = _ids(len(graph.train))[::-1]
    body = {
        "model_id": with_ids["model_id"],
        "inputs": graph.features[graph.test].tolist(),
        "top_k": 3,
        "weights": "sparse",
        "weights_top_k": 2,
        "ids": [f"q{i}" for i in range(len(graph.test))],
    }
    out = client.post("/predict", json=body).json()
    assert out["index_ids"] == [[ids[i] for i in row] for row in out["indices"]]
    want = [[f"q{int(r)}", ids[int(i)]] for r, i, _ in out["weights_sparse"]]
    assert out["weights_sparse_ids"] == want


def test_ids_survive_a_restart(settings: Settings, graph: Graph) -> None:
    with TestClient(create_app(settings)) as c:
        model_id = c.post("/train", json=_by_id_request(graph)).json()["model_id"]
    with TestClient(create_app(settings)) as c:
        body = {"model_id": model_id, "inputs": graph.features[graph.test].tolist()}
        out = c.post("/predict", json=body).json()
    ids = _ids(len(graph.train))[::-1]
    assert out["index_ids"] == [[ids[row[0]]] for row in out["indices"]]


def test_ids_and_edges_as_text_parts_of_a_multipart_upload(
    client: TestClient, graph: Graph, with_ids: dict[str, Any]
) -> None:
    ids = _ids(len(graph.train))[::-1]
    tsv = "".join(f"{ids[a]}\t{ids[b]}\r\n" for a, b in graph.train_edges().tolist())
    buf = io.BytesIO()
    np.save(buf, graph.features[graph.train])
    files = {
        "inputs": ("X.npy", buf.getvalue(), "application/octet-stream"),
        "ids": ("ids.txt", ("\n".join(ids) + "\n").encode(), "text/plain"),
        "output_kernel.edges": ("edges.tsv", tsv.encode(), "text/tab-separated-values"),
    }
    req = diffusion_request(graph)
    json_part = {k: v for k, v in req.items() if k != "inputs"}
    json_part["output_kernel"] = {"type": "diffusion", "beta": 1.0}
    r = client.post("/train", data={"json": json.dumps(json_part)}, files=files)
    assert r.status_code == 201, r.text
    ask = {"inputs": graph.features[graph.test].tolist(), "top_k": 2}
    a = client.post("/kernel", json={"model_id": r.json()["model_id"], **ask}).json()
    b = client.post("/kernel", json={"model_id": with_ids["model_id"], **ask}).json()
    assert a["edges"] == b["edges"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b.update(ids=b["ids"][:-1]), "ids has 33 entries but inputs has 34 rows"),
        (lambda b: b["ids"].__setitem__(5, b["ids"][2]), "ids[5] = 'v031' repeats ids[2]"),
        (lambda b: b["ids"].__setitem__(0, 17), "ids[0] = 17 is a number; ids are strings"),
        (lambda b: b["ids"].__setitem__(0, ""), "ids[0] must have 1 to 256 characters"),
        (lambda b: b["ids"].__setitem__(0, "a\tb"), "contains a control character"),
        (lambda b: b["ids"].__setitem__(0, "x" * 257), "1 to 256 characters: got 257"),
        (
            lambda b: b["output_kernel"]["edges"].__setitem__(0, ["v033", "nope"]),
            "output_kernel.edges[0][1] = 'nope' is not one of the 34 ids",
        ),
        (
            lambda b: b["output_kernel"]["edges"].__setitem__(0, ["v033", 4]),
            "mixes ids and row indices",
        ),
        (lambda b: b.pop("ids"), "edges name vertices by id but the request has no ids"),
        (lambda b: b.update(ids="v1,v2"), "ids must be a list of strings"),
    ],
)
def test_bad_ids_are_a_clear_422(
    client: TestClient, graph: Graph, change: Any, message: str
) -> None:
    body = _by_id_request(graph)
    change(body)
    r = client.post("/train", json=body)
    assert r.status_code == 422, r.text
    assert message in r.json()["error"]["message"]


def test_bad_new_ids_are_a_clear_422(
    client: TestClient, graph: Graph, trained: dict[str, Any]
) -> None:
    X_new = graph.features[graph.test].tolist()
    body = {"model_id": trained["model_id"], "inputs": X_new, "ids": ["a"]}
    r = client.post("/kernel", json=body)
    assert r.status_code == 422 and "ids has 1 entries but inputs has 6 rows" in r.text
    r = client.post("/predict", json={**body, "ids": ["a"] * len(X_new)})
    assert r.status_code == 422 and "ids[1] = 'a' repeats ids[0]" in r.text


def test_edge_text_part_with_a_bad_line_is_a_422(client: TestClient, graph: Graph) -> None:
    buf = io.BytesIO()
    np.save(buf, graph.features[graph.train])
    files = {
        "inputs": ("X.npy", buf.getvalue(), "application/octet-stream"),
        "ids": ("ids.txt", "\n".join(_ids(len(graph.train))).encode(), "text/plain"),
        "output_kernel.edges": ("e.tsv", b"v000\tv001\nv002 v003\n", "text/tab-separated-values"),
    }
    r = client.post(
        "/train", data={"json": '{"output_kernel": {"type": "diffusion"}}'}, files=files
    )
    assert r.status_code == 422
    assert (
        "line 2 has 1 columns but line 1 has 2 (separated by tabs)" in r.json()["error"]["message"]
    )


def test_vertex_id_lookup_is_vectorised_and_exact() -> None:
    ids = VertexIds(as_id_array(["b", "a", "c"]))
    rows = ids.rows_of(as_id_array(["c", "a"]).reshape(1, 2), "edges")
    assert rows.tolist() == [[2, 1]]
    with pytest.raises(ValueError, match=r"edges\[0\] = 'zz' is not one of the 3 ids"):
        ids.rows_of(as_id_array(["zz"]), "edges")
