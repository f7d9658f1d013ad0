"""Degenerate training data is trained anyway, with warnings in the model record and job."""

from __future__ import annotations

from svc_data import SMALL, TestClient


def test_tiny_graph_with_loops_duplicates_and_isolated_vertices_warns(client: TestClient) -> None:
    body = {
        "inputs": [[0.0], [0.1], [0.9], [1.0], [0.5]],
        "output_kernel": {"type": "diffusion", "edges": [[0, 1], [1, 0], [2, 2], [2, 3]]},
        "params": SMALL,
        "wait": True,
    }
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    warnings = r.json()["model"]["warnings"]
    joined = " | ".join(warnings)
    for needle in (
        "only 5 training rows",
        "1 self-loops",
        "1 duplicate edges",
        "1 of 5 training vertices have no edge (the first: 4)",
    ):
        assert needle in joined, joined
    job = client.get(r.json()["job_url"]).json()
    assert job["warnings"] == warnings
    assert client.get(r.json()["model_url"]).json()["warnings"] == warnings


def test_no_edges_warns_and_clean_data_does_not(client: TestClient) -> None:
    inputs = [[float(i % 7), float(i % 3)] for i in range(30)]
    ring = [[i, (i + 1) % 30] for i in range(30)]
    for edges, expected in (([], ["the graph has no edges"]), (ring, [])):
        body = {
            "inputs": inputs,
            "output_kernel": {"type": "diffusion", "edges": edges},
            "params": SMALL,
            "wait": True,
        }
        r = client.post("/train", json=body)
        assert r.status_code == 201, r.text
        got = r.json()["model"]["warnings"]
        assert [w[: len(e)] for w, e in zip(got, expected, strict=True)] == expected


def test_cv_folds_too_small_for_their_scores_warn(client: TestClient) -> None:
    body = {
        "inputs": [[0.0], [0.1], [0.9], [1.0], [0.5]],
        "output_kernel": {"type": "diffusion", "edges": [[i, (i + 1) % 5] for i in range(5)]},
        "params": SMALL,
        "cv": {"folds": 5},
        "wait": True,
    }
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    warnings = r.json()["model"]["warnings"]
    assert len(warnings) == 2, warnings
    assert "5-fold CV of 5 rows tests each fold on 1 to 1 rows" in warnings[1]
