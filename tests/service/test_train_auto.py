"""/train with "model": "auto" (okcore.AutoRegressor): the automatic choice trained through
the service, predicting exactly as okcore, its leaderboard in the record and GET
/models/{id}, progress per candidate, its budget bounded by the server, export / import."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from svc_data import TestClient, make_settings, vector_data

import okcore
from service.app import create_app

PARAMS = {"max_cpu_seconds": 600, "candidates": ["okboost", "kernel-ridge"], "random_state": 0}


def train(client: TestClient, params: dict[str, Any], **extra: Any) -> Any:
    X, Y = vector_data(n=60)
    body = {
        "model": "auto",
        "inputs": X.tolist(),
        "output_kernel": {"type": "linear", "outputs": Y.tolist()},
        "params": params,
        "wait": True,
        **extra,
    }
    return client.post("/train", json=body)


def test_auto_trains_predicts_as_okcore_and_records_its_leaderboard(client: TestClient) -> None:
    r = train(client, PARAMS)
    assert r.status_code == 201, r.text
    model_id = r.json()["model_id"]
    X, Y = vector_data(n=60)
    est = okcore.AutoRegressor(**PARAMS).fit(X, Y, kernel={"type": "linear"})
    record = client.get(f"/models/{model_id}").json()
    assert record["model"] == "auto" and record["params"]["max_cpu_seconds"] == 600
    auto = record["auto"]
    assert auto["chosen"] == est.best_name_
    assert [row["name"] for row in auto["leaderboard"]] == [row["name"] for row in est.leaderboard_]
    assert auto["leaderboard"][0]["status"] == "chosen" and auto["max_cpu_seconds"] == 600
    Xq = X[:5] + 0.1
    out = client.post(
        "/predict", json={"model_id": model_id, "inputs": Xq.tolist(), "weights": "dense"}
    ).json()
    np.testing.assert_allclose(out["weights"], est.predict_weights(Xq), rtol=1e-9, atol=1e-12)
    kernel = client.post("/kernel", json={"model_id": model_id, "inputs": Xq.tolist()})
    assert kernel.status_code == 200, kernel.text
    np.testing.assert_allclose(kernel.json()["kernel"], est.predict_kernel(Xq), atol=1e-10)


def test_auto_reports_progress_per_candidate() -> None:
    seen: list[Any] = []
    X, Y = vector_data(n=60)
    okcore.AutoRegressor(**PARAMS).fit(X, Y, callback=seen.append)
    done = [p.done for p in seen]
    assert {p.phase for p in seen} == {"selection"} and done == sorted(done) and done[0] == 0
    assert all(p.total >= p.done and p.phase_eta == 600 for p in seen)
    # returning True stops the selection: the estimator stays unfitted
    stopped = okcore.AutoRegressor(**PARAMS).fit(X, Y, callback=lambda p: True)
    assert stopped.stopped_by_callback_ and not hasattr(stopped, "best_estimator_")


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ({"cv": {"folds": 3}}, "leave out cv"),
        ({"input_kind": "similarity"}, "feature inputs"),
    ],
)
def test_what_auto_does_not_take_is_a_422(client: TestClient, extra: dict, match: str) -> None:
    if extra.get("input_kind") == "similarity":
        X, Y = vector_data(n=60)
        S = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))
        extra = {**extra, "inputs": S.tolist()}
    r = train(client, PARAMS, **extra)
    assert r.status_code == 422, r.text
    assert match in r.text


def test_bad_auto_params_are_a_422(client: TestClient) -> None:
    r = train(client, {"max_cpu_seconds": -1})
    assert r.status_code == 422 and "max_cpu_seconds" in r.text
    r = train(client, {"candidates": ["lightgbm"]})
    assert r.status_code == 422 and "candidates" in r.text


def test_the_budget_is_bounded_by_the_server(tmp_path: Path) -> None:
    with TestClient(create_app(make_settings(tmp_path, max_job_seconds=30.0))) as client:
        r = train(client, {**PARAMS, "max_cpu_seconds": 100})
        assert r.status_code == 422 and "MAX_JOB_SECONDS" in r.text


def test_export_import_reproduces_the_chosen_model(client: TestClient, tmp_path: Path) -> None:
    r = train(client, PARAMS)
    model_id = r.json()["model_id"]
    archive = client.get(f"/models/{model_id}/export")
    assert archive.status_code == 200, archive.text
    with TestClient(create_app(make_settings(tmp_path / "other"))) as other:
        imported = other.post(
            "/models/import",
            content=io.BytesIO(archive.content).getvalue(),
            headers={"content-type": "application/gzip"},
        )
        assert imported.status_code == 201, imported.text
        X, _ = vector_data(n=60)
        body = {"model_id": model_id, "inputs": (X[:4] + 0.2).tolist(), "top_k": 2}
        for path in ("/kernel", "/predict"):
            assert client.post(path, json=body).json() == other.post(path, json=body).json()
        assert (
            other.get(f"/models/{model_id}").json()["auto"]
            == (client.get(f"/models/{model_id}").json()["auto"])
        )


@pytest.mark.parametrize(
    ("params", "extra", "model"),
    [
        ({"max_cpu_seconds": 600, "candidates": ["okboost"], "random_state": 0}, {}, "auto"),
        ({"n_estimators": 5, "random_state": 0}, {}, "okboost"),
        ({"n_estimators": 5}, {"cv": {"folds": 3}}, "okboost"),
        (
            {},
            {"output_kernel": {"type": "diffusion", "edges": [[0, 1], [1, 2]]}},
            "okboost",
        ),
    ],
)
def test_a_request_naming_no_model_gets_auto_where_it_applies(
    client: TestClient, params: dict, extra: dict, model: str
) -> None:
    X, Y = vector_data(n=60)
    body = {
        "inputs": X.tolist(),
        "output_kernel": {"type": "linear", "outputs": Y.tolist()},
        "params": params,
        "wait": True,
        **extra,
    }
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    record = client.get(f"/models/{r.json()['model_id']}").json()
    assert record["model"] == model
    assert (record.get("auto") is not None) == (model == "auto")


@pytest.mark.parametrize("what", ["missing input", "unknown output", "output_weight"])
def test_data_auto_does_not_take_gets_okboost_unnamed_and_a_422_named(
    client: TestClient, what: str
) -> None:
    """Missing input values, unknown output entries and output weights are okboost's: a
    request naming no model gets okboost, one naming auto a 422 saying what to name."""
    X, Y = vector_data(n=60)
    inputs: list = X.tolist()
    outputs: list = Y.tolist()
    extra: dict[str, Any] = {}
    if what == "missing input":
        inputs[3][1] = None
    elif what == "unknown output":
        outputs[4][0] = None
    else:
        extra["output_weight"] = [1.0] * Y.shape[1]
    body = {
        "inputs": inputs,
        "output_kernel": {"type": "linear", "outputs": outputs},
        "params": {"random_state": 0},
        "wait": True,
        **extra,
    }
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    assert client.get(f"/models/{r.json()['model_id']}").json()["model"] == "okboost"
    named = client.post("/train", json={**body, "model": "auto"})
    assert named.status_code == 422, named.text
    assert "name" in named.json()["error"]["message"]


def _vectors(n: int, binary: bool = False) -> dict[str, Any]:
    X, Y = vector_data(n=max(n, 2))
    Y = (Y > 0).astype(float) if binary else Y
    return {
        "inputs": X[:n].tolist(),
        "output_kernel": {"type": "linear", "outputs": Y[:n].tolist()},
    }


@pytest.mark.parametrize(
    ("extra", "feature"),
    [
        ({"output_kernel": {"type": "diffusion", "edges": [[0, 1], [1, 2]]}}, "diffusion"),
        ({"cv": {"folds": 3}}, "cv"),
        ({"eval_set": {"inputs": [[0.0, 0.0, 0.0]], "outputs": [[0.0, 0.0]]}}, "eval_set"),
        ({"missing_input": True}, "missing input values"),
        ({"null_output": True}, "unknown (null / NaN) output entries"),
        ({"output_weight": [1.0, 1.0]}, "output_weight"),
    ],
)
def test_auto_params_where_the_automatic_choice_does_not_apply_say_why(
    client: TestClient, extra: dict, feature: str
) -> None:
    """A request naming no model, with the automatic choice's max_cpu_seconds, that falls
    to okboost: the 422 says the automatic choice does not apply, why, and what to send."""
    body: dict[str, Any] = {**_vectors(30), "params": {"max_cpu_seconds": 3}}
    if extra.pop("missing_input", False):
        body["inputs"][2][1] = None
    elif extra.pop("null_output", False):
        body["output_kernel"]["outputs"][2][0] = None
    body.update(extra)
    r = client.post("/train", json=body)
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    for fragment in (
        "no model was named",
        "the automatic choice does not apply",
        feature,
        "okboost",
        "max_cpu_seconds",
        "`model`",
        "n_estimators",
    ):
        assert fragment in message, message


def test_a_params_typo_naming_no_model_says_how_params_were_read(client: TestClient) -> None:
    r = client.post("/train", json={**_vectors(30), "params": {"n_trees": 5}})
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    for fragment in (
        "unknown parameter 'n_trees'",
        "no model was named",
        "automatic choice",
        "read as okboost's",
        "n_estimators",
        "max_cpu_seconds",
    ):
        assert fragment in message, message


@pytest.mark.parametrize(
    ("n", "extra", "fragments"),
    [
        (80, {"params": {"scoring": "auc"}}, ("params.scoring 'auc'", "output vectors", "r2")),
        (80, {"params": {"scoring": "auroc"}}, ("params.scoring 'auroc'", "not all 0 or 1")),
        (80, {"params": {"cv": 200}}, ("params.cv = 200", "80 training rows", "at most 80")),
        (80, {"model": "auto", "params": {"cv": 0.001}}, ("params.cv = 0.001", "such as 0.0125")),
        (6, {"params": {"cv": 0.99}}, ("fewer than 2 rows to fit", "such as 0.667")),
        (2, {}, ("params.cv = 0.2", "needs 3 rows", "give more rows", "name a model")),
        (1, {"model": "auto"}, ("params.cv = 0.2", "needs 3 rows", "name a model")),
        (1, {"model": "krr"}, ("params.gamma", "undefined on 1 row")),
        (1, {"model": "krr-boost"}, ("params.gamma", "undefined on 1 row")),
    ],
)
def test_what_the_automatic_choice_cannot_do_is_a_422_before_queueing(
    client: TestClient, n: int, extra: dict, fragments: tuple[str, ...]
) -> None:
    """Settings and data the automatic choice (or a kernel model's gamma 'auto') cannot
    work with are refused at once, naming the field to change, not a failed job."""
    body = {**_vectors(n), **extra}  # outputs not all 0 or 1
    r = client.post("/train", json=body)
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    for fragment in fragments:
        assert fragment in message, message


def test_auroc_on_0_1_outputs_is_accepted(client: TestClient) -> None:
    body = {**_vectors(80, binary=True), "params": {**PARAMS, "scoring": "auroc"}, "wait": True}
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text


def test_a_done_auto_job_counts_candidates_to_its_total(client: TestClient) -> None:
    """The automatic choice's job counts candidate fits ("candidate"), from the start, and
    a done job has done == total."""
    params = {**PARAMS, "candidates": ["okboost", "kernel-ridge", "krr-boost"]}
    queued = train(client, params, wait=False)
    assert queued.status_code == 202, queued.text
    first = client.get(f"/jobs/{queued.json()['job_id']}").json()["progress"]
    assert first["unit"] == "candidate", first
    r = train(client, params)
    assert r.status_code == 201, r.text
    progress = client.get(f"/jobs/{r.json()['job_id']}").json()["progress"]
    assert progress["unit"] == "candidate", progress
    assert progress["done"] == progress["total"] and progress["fraction"] == 1.0, progress


@pytest.mark.parametrize("n", [3, 4])
def test_the_automatic_choice_trains_on_three_or_four_rows(client: TestClient, n: int) -> None:
    """Rows enough for its holdout (one validation row) are enough: okcore skips the 5-fold
    re-check it cannot fill."""
    body = {**_vectors(n), "params": PARAMS, "wait": True}
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["model"]["model"] == "auto"


@pytest.mark.parametrize(
    ("folds", "status"),
    [
        ([[[0, 1, 2], [3, 4]]], 201),  # sides of unequal length: the job's size was a 500
        ([[[0, 1, 2], [3, 4, 5]]], 201),
        ([[[0, 1, 2], [3, 99]]], 422),  # a row that does not exist
        ([[[0, 1], [0, 2]]], 422),  # a row on both sides
    ],
)
def test_params_cv_as_given_folds(client: TestClient, folds: list, status: int) -> None:
    body = {**_vectors(6), "params": {**PARAMS, "cv": folds}, "wait": True}
    r = client.post("/train", json=body)
    assert r.status_code == status, r.text


@pytest.mark.parametrize(
    ("folds", "weight", "says"),
    [
        ([[[0, 1, 2], [3, 99]]], None, "disjoint index arrays in [0, 6)"),
        ([[[0, 1], [0, 2]]], None, "disjoint index arrays"),
        ([[[0, 1, 2]]], None, "(train rows, validation rows)"),
        ([], None, "cv gave no folds"),
        ([[[0, 1, 2], [3, 4]]], [1, 1, 1, 0, 0, 1], "positive weight"),
    ],
)
def test_given_folds_that_cannot_serve_are_refused_before_queueing(
    client: TestClient, folds: list, weight: list | None, says: str
) -> None:
    """They were queued (202) and the job failed; now a 422 names params.cv."""
    body = {**_vectors(6), "params": {**PARAMS, "cv": folds}, "wait": False}
    if weight is not None:
        body["sample_weight"] = weight
    r = client.post("/train", json=body)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert "params.cv = the folds given" in error["message"] and says in error["message"]
