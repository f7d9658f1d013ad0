"""Ranked answers: /kernel edges and /predict pre-images come best first for each vertex."""

from __future__ import annotations

from typing import Any

import numpy as np
from svc_data import Graph, TestClient

import okcore
from service.inference.predict import edges_against, select_edges


def _best_first_per_vertex(triples: list[list[float]]) -> None:
    rows = [int(a) for a, _, _ in triples]
    assert rows == sorted(rows), "edges are grouped by vertex, in row order"
    for a in set(rows):
        scores = [s for r, _, s in triples if int(r) == a]
        assert scores == sorted(scores, reverse=True), f"vertex {a}: {scores}"


def test_ranked_edges_order_by_row_then_score_then_column() -> None:
    """okcore's one ranking, the service's answers: row, then score, ties by column."""
    S = np.array([[0.9, 0.1, 0.9, 0.0], [0.2, 0.2, -1.0, np.nan]])
    r, c, v = okcore.graph.ranked_edges(S, threshold=0.1)
    assert r.tolist() == [0, 0, 0, 1, 1]
    assert c.tolist() == [0, 2, 1, 0, 1]  # 0.9 (tie: column 0 before 2), 0.1; then a tie
    assert v.tolist() == [0.9, 0.9, 0.1, 0.2, 0.2]
    everything = okcore.graph.ranked_edges(S)  # neither filter: every finite score
    assert everything[0].tolist() == [0, 0, 0, 0, 1, 1, 1]


def test_select_edges_is_okcore_ranked_edges() -> None:
    rng = np.random.default_rng(1)
    S = rng.normal(size=(6, 6))
    for square in (False, True):
        t = select_edges(S, threshold=0.0, top_k=2, square=square)
        a, b, v = okcore.graph.ranked_edges(S, threshold=0.0, top_k=2, symmetric=square)
        np.testing.assert_array_equal(t.a, a)
        np.testing.assert_array_equal(t.b, b)
        np.testing.assert_array_equal(t.value, v)


def test_select_edges_and_edges_against_agree_and_rank() -> None:
    rng = np.random.default_rng(0)
    F, G = rng.normal(size=(7, 3)), rng.normal(size=(40, 3))
    for threshold, top_k in ((None, 5), (0.5, None), (0.0, 4)):
        whole = select_edges(F @ G.T, threshold=threshold, top_k=top_k, square=False)
        blocked = edges_against(F, G, threshold=threshold, top_k=top_k)
        np.testing.assert_array_equal(whole.a, blocked.a)
        np.testing.assert_array_equal(whole.b, blocked.b)
        for t in (whole, blocked):
            _best_first_per_vertex(np.column_stack([t.a, t.b, t.value]).tolist())
    square = select_edges(F @ F.T, threshold=None, top_k=3, square=True)
    assert (square.a < square.b).all()
    _best_first_per_vertex(np.column_stack([square.a, square.b, square.value]).tolist())


def test_kernel_top_k_edges_are_best_first(
    client: TestClient, graph: Graph, trained: dict[str, Any]
) -> None:
    X_new = graph.features[graph.test].tolist()
    r = client.post(
        "/kernel",
        json={"model_id": trained["model_id"], "inputs": X_new, "top_k": 10},
    )
    assert r.status_code == 200, r.text
    edges = r.json()["edges"]
    assert len(edges["new_known"]) == 10 * len(X_new)
    _best_first_per_vertex(edges["new_known"])
    _best_first_per_vertex(edges["new_new"])
    kernel = np.asarray(r.json()["kernel"])
    for a, b, s in edges["new_new"]:
        assert np.isclose(kernel[int(a), int(b)], s)


def test_predict_pre_images_are_best_first(
    client: TestClient, graph: Graph, trained: dict[str, Any]
) -> None:
    r = client.post(
        "/predict",
        json={"model_id": trained["model_id"], "inputs": graph.features[graph.test].tolist(),
              "top_k": 8},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    scores = np.asarray(r.json()["scores"])  # squared distances: smaller is better
    assert scores.shape == (len(graph.test), 8)
    assert (np.diff(scores, axis=1) >= 0).all()
