"""A 422 about one field says which in its details: `loc` is the field's path in the
request (no "body" prefix, as for pydantic's own errors), also for the checks the request
models make between fields (lengths, shapes, which model takes what) and for the refusals
made when the job is planned. The message is unchanged: it names the field in its words."""

from __future__ import annotations

from typing import Any

import pytest
from svc_data import SMALL, TestClient, bipartite_network, label_data, vector_data

X, Y = vector_data(n=40)
XL, LABELS = label_data()
NET = bipartite_network()


def regression(**extra: Any) -> dict[str, Any]:
    body = {"model": "okboost", "inputs": X.tolist(), "params": dict(SMALL), "wait": True,
            "output_kernel": {"type": "linear", "outputs": Y.tolist()}}  # fmt: skip
    body.update(extra)
    return body


def multilabel(**extra: Any) -> dict[str, Any]:
    body = {"task": "multilabel", "model": "okboost", "params": dict(SMALL), "wait": True,
            "inputs": XL[:45].tolist(), "labels": LABELS[:45].tolist()}  # fmt: skip
    body.update(extra)
    return body


def bipartite(**extra: Any) -> dict[str, Any]:
    body = {"task": "bipartite", "model": "okboost", "params": dict(SMALL), "wait": True,
            "rows": {"inputs": NET.rows[:30].tolist()}, "cols": {"inputs": NET.cols[:20].tolist()},
            "edges": NET.edges(range(30), range(20))}  # fmt: skip
    body.update(extra)
    return body


CASES = {
    "weights too few": (regression(sample_weight=[1.0] * 39), ["sample_weight"], "one weight per training row (40)"),
    "weights negative": (regression(sample_weight=[-1.0] + [1.0] * 39), ["sample_weight"], "negative"),
    "weights all zero": (regression(sample_weight=[0.0] * 40), ["sample_weight"], "all zero"),
    "bad param value": (regression(params={"n_estimators": -1}), ["params"], "'n_estimators' parameter"),
    "outputs rows": (regression(output_kernel={"type": "linear", "outputs": Y[:30].tolist()}), ["output_kernel", "outputs"], "has 30 rows"),
    "gram rows": (regression(output_kernel={"type": "precomputed", "gram": (Y[:30] @ Y[:30].T).tolist()}), ["output_kernel", "gram"], "30 x 30"),
    "ids count": (regression(ids=["a", "b", "c"]), ["ids"], "ids has 3 entries"),
    "output_weight": (regression(output_weight=[1.0]), ["output_weight"], "one per output column"),
    "input_map": (regression(input_map="kpca"), ["input_map"], "input_kind 'similarity'"),
    "similarity shape": (regression(input_kind="similarity"), ["inputs"], "square N x N"),
    "eval_set columns": (regression(eval_set={"inputs": [[1.0]], "outputs": [[1.0, 2.0]]}), ["eval_set", "inputs"], "columns"),
    "eval_set model": (regression(model="ok3", params={}, eval_set={"inputs": X[:2].tolist(), "outputs": Y[:2].tolist()}), ["eval_set"], "only used by"),
    "labels rows": (multilabel(labels=LABELS[:40].tolist()), ["labels"], "labels has 40 rows"),
    "labels not 0/1": (multilabel(labels=(2 * LABELS[:45]).tolist()), ["labels"], "must be 0/1"),
    "label_names count": (multilabel(label_names=["a"]), ["label_names"], "label_names has 1"),
    "multilabel auto params": (multilabel(model="auto"), ["params"], "name a model"),
    "bipartite folds": (bipartite(cv={"folds": [2, 30]}), ["cv", "folds"], "cv.folds must be"),
    "bipartite edge row": (bipartite(edges=[[100, 0]]), ["edges"], "names row 100"),
}  # fmt: skip


@pytest.mark.parametrize(("body", "loc", "message"), CASES.values(), ids=list(CASES))
def test_a_refused_field_is_the_422s_loc(
    client: TestClient, body: dict[str, Any], loc: list[str], message: str
) -> None:
    r = client.post("/train", json=body)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["details"][0]["loc"] == loc, error
    assert message in error["message"]
    assert not error["message"].startswith(f"{'.'.join(loc)}: {'.'.join(loc)}"), error


def test_a_refused_parameter_value_keeps_its_code(client: TestClient) -> None:
    r = client.post("/train", json=regression(params={"max_splits": 0}))
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "invalid_parameter"


def test_the_other_endpoints_name_their_field(client: TestClient) -> None:
    """/predict, /kernel, /evaluate and a new bipartite vertex: a check between fields
    that names one field puts it in loc."""
    model = client.post("/train", json=regression()).json()["model"]["model_id"]
    net = client.post("/train", json=bipartite()).json()["model"]["model_id"]
    q = X[:3].tolist()
    cases = [
        ("/predict", {"model_id": model, "inputs": q, "candidate_gram": [[1.0]] * 3,
                      "candidate_diag": [1.0, 1.0]}, ["candidate_diag"], "candidate_diag has 2"),
        ("/kernel", {"model_id": model, "inputs": q, "inputs2": q, "against": "training"},
         ["inputs2"], "only used with"),
        ("/evaluate", {"model_id": model, "inputs": q, "outputs": Y[:2].tolist()},
         ["outputs"], "outputs has 2 rows"),
        ("/kernel", {"model_id": net, "rows": {"inputs": NET.rows[30:32].tolist(),
                                               "similarity_ids": ["a"]}},
         ["rows", "similarity_ids"], "send one"),
    ]  # fmt: skip
    for path, body, loc, message in cases:
        r = client.post(path, json=body)
        assert r.status_code == 422, (path, r.text)
        error = r.json()["error"]
        assert error["details"][0]["loc"] == loc, error
        assert message in error["message"], error
