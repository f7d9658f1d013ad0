"""A seed field sent as JSON null (a client serialising an unset seed) takes the field's
default seed, 0: the regression and bipartite `cv.random_state` and the multi-label
`random_state`. The model trained is the one trained with 0, and its record says 0."""

from __future__ import annotations

from typing import Any

import pytest
from svc_data import SMALL, TestClient, bipartite_network, label_data, vector_data

X, Y = vector_data(n=40)
XL, LABELS = label_data()
NET = bipartite_network()


def regression(seed: Any) -> dict[str, Any]:
    return {"model": "okboost", "inputs": X.tolist(), "params": dict(SMALL), "wait": True,
            "output_kernel": {"type": "linear", "outputs": Y.tolist()},
            "cv": {"folds": 3, "scoring": "err_phi", "random_state": seed}}  # fmt: skip


def multilabel(seed: Any) -> dict[str, Any]:
    return {"task": "multilabel", "model": "okboost", "params": dict(SMALL), "wait": True,
            "inputs": XL[:45].tolist(), "labels": LABELS[:45].tolist(),
            "random_state": seed}  # fmt: skip


def bipartite(seed: Any) -> dict[str, Any]:
    return {"task": "bipartite", "model": "okboost", "params": dict(SMALL), "wait": True,
            "rows": {"inputs": NET.rows[:30].tolist()}, "cols": {"inputs": NET.cols[:20].tolist()},
            "edges": NET.edges(range(30), range(20)),
            "cv": {"folds": 2, "random_state": seed}}  # fmt: skip


def _seed_and_result(record: dict[str, Any]) -> tuple[Any, Any]:
    """The seed the record keeps and what it made (CV table, thresholds)."""
    if "multilabel" in record and record["multilabel"]:
        info = record["multilabel"]
        return info["random_state"], info["thresholds"]
    if record.get("bipartite"):
        cv = record["bipartite"]["cv"]
        return cv["random_state"], cv["mean"]
    return record["cv"]["random_state"], record["cv"]["table"]


@pytest.mark.parametrize("request_of", [regression, multilabel, bipartite])
def test_a_null_seed_is_the_default_seed(client: TestClient, request_of: Any) -> None:
    null = client.post("/train", json=request_of(None))
    assert null.status_code == 201, null.text
    zero = client.post("/train", json=request_of(0))
    assert zero.status_code == 201, zero.text
    seed, made = _seed_and_result(null.json()["model"])
    assert seed == 0
    assert (seed, made) == _seed_and_result(zero.json()["model"])


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        (regression(-1), ["cv", "random_state"]),
        (multilabel("seven"), ["random_state"]),
        (bipartite(-1), ["cv", "random_state"]),
    ],
)
def test_a_bad_seed_is_still_a_422_naming_it(
    client: TestClient, body: dict[str, Any], loc: list[str]
) -> None:
    r = client.post("/train", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["details"][0]["loc"] == loc
