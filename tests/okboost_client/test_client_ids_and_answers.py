"""The Python client with vertex ids (text parts or JSON) and binary answers (.npz): the same
results as JSON, names beside the row indices."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from svc_data import SMALL, Graph, TestClient, clustered_graph, make_settings

from okboost_client import OKBoostClient, OKBoostError
from okboost_client.encoding import split_arrays
from service.app import create_app


@pytest.fixture(scope="module")
def graph() -> Graph:
    return clustered_graph()


@pytest.fixture
def http(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(tmp_path))) as client:
        yield client


def names(rows: np.ndarray) -> np.ndarray:
    return np.asarray([f"v{int(i)}" for i in rows])


def test_ids_and_edges_by_id_travel_as_text_parts() -> None:
    ids = np.asarray(["a", "b", "ç"])
    edges = np.asarray([["a", "b"], ["b", "ç"]])
    plain, parts, texts = split_arrays({"ids": ids, "output_kernel": {"edges": edges}})
    assert plain == {"output_kernel": {}} and texts == {}
    assert parts["ids"][1] == "a\nb\nç\n".encode()
    assert parts["output_kernel.edges"][1:] == (
        "a\tb\nb\tç\n".encode(),
        "text/tab-separated-values",
    )
    with pytest.raises(ValueError, match="tab or a line break"):
        split_arrays({"ids": np.asarray(["a\tb"])})


@pytest.mark.parametrize("binary", [True, False])
def test_ids_edges_and_answers_by_id(http: TestClient, graph: Graph, binary: bool) -> None:
    c = OKBoostClient("http://localhost", transport=http._transport, binary=binary)
    train_ids = names(graph.train)
    by_id = train_ids[graph.train_edges()]  # the same graph, edges as pairs of ids
    spec = {"type": "diffusion", "beta": 1.0, "edges": by_id}
    mid = c.train(graph.features[graph.train], spec, ids=train_ids, params=SMALL, wait=True)[
        "model_id"
    ]
    X_new = graph.features[graph.test]
    out = c.kernel(mid, X_new, top_k=3, ids=names(graph.test))
    for key, new_names, other_names in (
        ("new_new", names(graph.test), names(graph.test)),
        ("new_known", names(graph.test), train_ids),
    ):
        rows, named = out["edges"][key], out["edges"][f"{key}_ids"]
        assert named.shape == (len(rows), 2) and named.dtype.kind == "U"
        np.testing.assert_array_equal(named[:, 0], new_names[rows[:, 0].astype(int)])
        np.testing.assert_array_equal(named[:, 1], other_names[rows[:, 1].astype(int)])
    pre = c.predict(mid, X_new, top_k=2)
    np.testing.assert_array_equal(pre["index_ids"], train_ids[pre["indices"]])

    # edges by row index give the same model
    same = c.train(
        graph.features[graph.train],
        {"type": "diffusion", "beta": 1.0, "edges": graph.train_edges()},
        params=SMALL,
        wait=True,
    )["model_id"]
    np.testing.assert_array_equal(c.kernel(same, X_new)["kernel"], out["kernel"])
    with pytest.raises(TypeError, match="must be strings"):
        c.kernel(mid, X_new, ids=list(range(len(X_new))))


def test_binary_answers_equal_json_answers(http: TestClient, graph: Graph) -> None:
    binary = OKBoostClient("http://localhost", transport=http._transport)
    plain = OKBoostClient("http://localhost", transport=http._transport, binary=False)
    mid = binary.train(
        graph.features[graph.train],
        {"type": "diffusion", "beta": 1.0, "edges": graph.train_edges()},
        params=SMALL,
        wait=True,
    )["model_id"]
    X_new = graph.features[graph.test]
    seen: list[str] = []
    http_post = binary._http.post

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        response = http_post(*args, **kwargs)
        seen.append(response.headers["content-type"])
        return response

    binary._http.post = spy  # type: ignore[method-assign]
    for ask in (
        {"top_k": 3},
        {"threshold": 0.01, "return_kernel": False},
        {"against": "training"},
    ):
        a, b = binary.kernel(mid, X_new, **ask), plain.kernel(mid, X_new, **ask)
        assert a.keys() == b.keys() and a["shape"] == b["shape"]
        for key in ("kernel", "edges"):
            if b[key] is None:
                assert a[key] is None
        if b["kernel"] is not None:
            np.testing.assert_array_equal(a["kernel"], b["kernel"])
        for name, edges in (b["edges"] or {}).items():
            np.testing.assert_array_equal(a["edges"][name], edges)
    for ask2 in ({"top_k": 2}, {"weights": "sparse"}, {"weights": "dense"}):
        a, b = binary.predict(mid, X_new, **ask2), plain.predict(mid, X_new, **ask2)
        assert a.keys() == b.keys()
        for key, value in b.items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(a[key], value)
            else:
                assert a[key] == value
    assert seen == ["application/x-npz"] * 6
    with pytest.raises(OKBoostError) as err:
        binary.kernel("0" * 32, X_new)
    assert err.value.status == 404 and err.value.code == "not_found"  # errors stay JSON


def test_export_and_import_between_two_servers(
    http: TestClient, graph: Graph, tmp_path: Path
) -> None:
    c = OKBoostClient("http://localhost", transport=http._transport)
    mid = c.train(
        graph.features[graph.train],
        {"type": "diffusion", "beta": 1.0, "edges": graph.train_edges()},
        ids=names(graph.train),
        params=SMALL,
        wait=True,
    )["model_id"]
    X_new = graph.features[graph.test]
    before = c.kernel(mid, X_new, top_k=3)
    archive = c.export_model(mid, tmp_path / "model.tar.gz")
    assert archive.stat().st_size > 0
    with pytest.raises(OKBoostError) as taken:
        c.import_model(archive)
    assert taken.value.status == 409
    with TestClient(create_app(make_settings(tmp_path / "other"))) as other_http:
        other = OKBoostClient("http://localhost", transport=other_http._transport)
        assert other.import_model(archive)["model_id"] == mid
        after = other.kernel(mid, X_new, top_k=3)
    np.testing.assert_array_equal(after["kernel"], before["kernel"])
    np.testing.assert_array_equal(after["edges"]["new_known_ids"], before["edges"]["new_known_ids"])
    renamed = c.import_model(archive, on_conflict="rename")["model_id"]
    assert renamed != mid
    with pytest.raises(OKBoostError) as missing:
        c.export_model("0" * 32, tmp_path / "none.tar.gz")
    assert missing.value.status == 404


def test_lists_follow_every_page_and_curves_come_on_request(http: TestClient, graph: Graph) -> None:
    c = OKBoostClient("http://localhost", transport=http._transport)
    spec = {"type": "diffusion", "beta": 1.0, "edges": graph.train_edges()}
    made = [
        c.train(graph.features[graph.train], spec, params=SMALL, wait=True)["model_id"]
        for _ in range(3)
    ]
    pages: list[str | None] = []
    get = c._http.get

    def spy(url, params=None, **kwargs):  # type: ignore[no-untyped-def]
        pages.append((params or {}).get("cursor"))
        return get(url, params={**(params or {}), "limit": 2}, **kwargs)

    c._http.get = spy  # type: ignore[method-assign]
    listed = c.models()
    assert [m["model_id"] for m in listed] == made and len(pages) == 2 and pages[1]
    assert "train_loss" not in listed[0]
    assert len(c.models(curves=True)[0]["train_loss"]) == SMALL["n_estimators"]
    assert len(c.model(made[0], importances=True)["feature_importances"]) == graph.features.shape[1]
    assert len(c.jobs()) == 3
    job = c.job(c.jobs()[0]["job_id"], curves=True)
    assert len(job["train_loss"]) == SMALL["n_estimators"]
