"""Every error class: status code, the one JSON shape, and a message a user can act on."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from svc_data import (
    SMALL,
    Graph,
    TestClient,
    diffusion_request,
    make_settings,
    post_json,
    vector_data,
)

from service.app import create_app
from service.schemas.api import ErrorResponse

ID = "0" * 32


def assert_error(r: Any, status: int, code: str, *fragments: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    ErrorResponse.model_validate(body)
    err = body["error"]
    assert err["status"] == status and err["code"] == code, err
    for fragment in fragments:
        assert fragment in err["message"], err["message"]
    return err


# ------------------------------------------------------------------ 401
def test_token_required_everywhere_but_health(tmp_path: Path) -> None:
    with TestClient(create_app(make_settings(tmp_path, token="s3cret"))) as c:
        assert c.get("/health/live").status_code == 200
        assert c.get("/health/ready").status_code == 200
        r = c.get("/models")
        assert_error(r, 401, "unauthorized", "missing bearer token")
        assert r.headers["www-authenticate"] == "Bearer"
        assert_error(
            c.get("/version", headers={"Authorization": "Bearer nope"}),
            401,
            "unauthorized",
            "wrong bearer token",
        )
        assert_error(
            c.post("/predict", json={}, headers={"Authorization": "Basic s3cret"}),
            401,
            "unauthorized",
        )
        for path in ("/version", "/models", "/jobs"):
            assert c.get(path, headers={"Authorization": "Bearer s3cret"}).status_code == 200


# ------------------------------------------------------------------ 404
def test_unknown_model_and_job(client: TestClient) -> None:
    assert_error(client.get(f"/models/{ID}"), 404, "not_found", f"unknown model '{ID}'")
    assert_error(client.delete(f"/models/{ID}"), 404, "not_found")
    assert_error(client.get(f"/jobs/{ID}"), 404, "not_found", f"unknown job '{ID}'")
    assert_error(client.delete(f"/jobs/{ID}"), 404, "not_found")
    assert_error(
        client.post("/predict", json={"model_id": ID, "inputs": [[1.0]]}), 404, "not_found"
    )
    assert_error(client.post("/kernel", json={"model_id": ID, "inputs": [[1.0]]}), 404, "not_found")
    assert_error(client.get("/no/such/route"), 404, "not_found")


@pytest.mark.parametrize("bad", ["..", "../../etc/passwd", "%2e%2e%2fjobs", "ABCDEF" * 6, "a" * 33])
def test_path_tricks_are_unknown_ids(client: TestClient, bad: str) -> None:
    r = client.get(f"/models/{bad}")
    assert r.status_code == 404
    r = client.post("/predict", json={"model_id": bad, "inputs": [[1.0]]})
    assert_error(r, 404, "not_found", "32 hex digits")


# ------------------------------------------------------------------ 405 / 415
def test_wrong_method_and_media_type(client: TestClient) -> None:
    assert_error(client.get("/train"), 405, "method_not_allowed")
    r = client.post("/train", content=b"inputs=1", headers={"content-type": "text/plain"})
    assert_error(r, 415, "unsupported_media_type", "text/plain", "multipart/form-data")


# ------------------------------------------------------------------ 409
def _wait_state(client: TestClient, job_id: str, states: tuple[str, ...]) -> dict[str, Any]:
    for _ in range(400):
        job: dict[str, Any] = client.get(f"/jobs/{job_id}").json()
        if job["state"] in states:
            return job
        time.sleep(0.025)
    raise AssertionError(f"job {job_id} never reached {states}: {job}")


def test_model_not_ready_then_cancelled(graph: Graph, tmp_path: Path) -> None:
    # one worker slot and no slot for short jobs, so the second job really waits
    with TestClient(create_app(make_settings(tmp_path, short_job_seconds=0))) as client:
        _not_ready_then_cancelled(client, graph)


def _not_ready_then_cancelled(client: TestClient, graph: Graph) -> None:
    long = diffusion_request(graph, wait=False, params={**SMALL, "n_estimators": 20_000})
    running = client.post("/train", json=long).json()
    for _ in range(400):  # running and at least one tree done, so an ETA exists
        job = client.get(f"/jobs/{running['job_id']}").json()
        if job["progress"]["done"] > 0:
            break
        time.sleep(0.025)
    queued = client.post("/train", json=diffusion_request(graph, wait=False)).json()
    assert client.get(f"/jobs/{queued['job_id']}").json()["state"] == "queued"
    for mid in (running["model_id"], queued["model_id"]):
        r = client.post("/predict", json={"model_id": mid, "inputs": [[0, 0, 0, 0]]})
        assert_error(r, 409, "model_not_ready", "still training", "GET /jobs/")
    job = client.get(f"/jobs/{running['job_id']}").json()
    assert job["progress"]["total"] == 20_000 and job["eta"] is not None
    # cancel the queued one at once, the running one after its current tree
    assert client.delete(f"/jobs/{queued['job_id']}").json()["state"] == "cancelled"
    client.delete(f"/jobs/{running['job_id']}")
    job = _wait_state(client, running["job_id"], ("cancelled",))
    assert job["error"] == "cancelled by request" and 0 < job["progress"]["done"] < 20_000
    r = client.post("/kernel", json={"model_id": running["model_id"], "inputs": [[0, 0, 0, 0]]})
    assert_error(r, 409, "model_not_ready", "cancelled")
    assert client.get(f"/models/{queued['model_id']}").json()["status"] == "cancelled"


def test_failed_job_reports_reason_and_model_is_409(client: TestClient) -> None:
    X, _ = vector_data(n=6)
    bad = -np.eye(6)  # symmetric, finite, clearly not PSD: found while factorising, in the job
    r = client.post(
        "/train",
        json={
            "inputs": X.tolist(),
            "params": SMALL,
            "output_kernel": {"type": "precomputed", "gram": bad.tolist()},
        },
    )
    assert r.status_code == 202
    job = _wait_state(client, r.json()["job_id"], ("failed",))
    assert "positive semi-definite" in job["error"]
    r = client.post("/predict", json={"model_id": r.json()["model_id"], "inputs": X.tolist()})
    assert_error(r, 409, "model_not_ready", "failed", "positive semi-definite")


# ------------------------------------------------------------------ 413
def test_too_large_by_content_length_and_by_stream(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, max_request_bytes=8192, max_json_bytes=2048)
    with TestClient(create_app(settings)) as c:
        body = b'{"inputs": [' + b"1.0, " * 1000 + b"1.0]}"
        r = c.post("/train", content=body, headers={"content-type": "application/json"})
        assert_error(
            r,
            413,
            "request_too_large",
            "exceeds the limit of 2048 bytes for JSON",
            "OKBOOST_MAX_JSON_BYTES",
            "multipart",
        )
        assert r.headers["connection"] == "close"
        # binary uploads have their own, higher cap
        r = c.post("/train", files={"json": (None, "{}"), "inputs": ("x.npy", b"\0" * 9000)})
        assert_error(
            r,
            413,
            "request_too_large",
            "exceeds the limit of 8192 bytes",
            "OKBOOST_MAX_REQUEST_BYTES",
        )

        def chunks():  # no Content-Length: the size is counted while streaming
            for _ in range(100):
                yield b" " * 100

        r = c.post("/predict", content=chunks(), headers={"content-type": "application/json"})
        assert_error(r, 413, "request_too_large")
        assert c.get("/health/live").status_code == 200


# ------------------------------------------------------------------ 422
X4 = [[0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [0.2, 0.8]]


def _train(client: TestClient, **body: Any) -> Any:
    base = {
        "inputs": X4,
        "output_kernel": {"type": "linear", "outputs": [1, 2, 3, 4]},
        "params": {"n_estimators": 3},
        "wait": True,
    }
    base.update(body)
    return post_json(client, "/train", base)


@pytest.mark.parametrize(
    ("body", "code", "fragments"),
    [
        (
            {"inputs": [[0.0, float("inf")]] + X4[1:]},
            "invalid_data",
            ("inputs", "infinity", "[0, 1]"),
        ),
        ({"inputs": [[0.0, 1.0], [1.0]] + X4[2:]}, "invalid_data", ("inputs", "equal length")),
        ({"inputs": [1.0, 2.0, 3.0, 4.0]}, "invalid_data", ("inputs must be a 2-D", "[[...]]")),
        ({"inputs": []}, "invalid_data", ("inputs",)),
        (
            {"output_kernel": {"type": "precomputed", "gram": np.eye(4)[:, :3].tolist()}},
            "invalid_data",
            ("gram must be square: got 4 x 3",),
        ),
        (
            {"output_kernel": {"type": "precomputed", "gram": np.eye(3).tolist()}},
            "invalid_data",
            ("output_kernel.gram is 3 x 3 but inputs has 4 rows",),
        ),
        (
            {
                "output_kernel": {
                    "type": "precomputed",
                    "gram": [[1, 2, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
                }
            },
            "invalid_kernel",
            ("not symmetric",),
        ),
        (
            {"output_kernel": {"type": "precomputed", "gram": (-np.eye(4)).tolist()}},
            "invalid_kernel",
            ("not positive semi-definite",),
        ),
        (
            {"output_kernel": {"type": "linear", "outputs": [1, 2, 3]}},
            "invalid_data",
            ("outputs has 3 rows but inputs has 4",),
        ),
        (
            {"output_kernel": {"type": "cosine", "outputs": [1, 2, 3, 4]}},
            "invalid_data",
            ("output_kernel", "'cosine'", "'diffusion'"),
        ),
        ({"output_kernel": {"outputs": [1, 2, 3, 4]}}, "invalid_data", ("output_kernel",)),
        (
            {"output_kernel": {"type": "rbf", "outputs": [1, 2, 3, 4], "sigma": -1}},
            "invalid_data",
            ("sigma", "greater than 0"),
        ),
        (
            {"output_kernel": {"type": "rbf", "outputs": [1, 2, 3, 4], "sigma": 1, "gamma": 1}},
            "invalid_data",
            ("either sigma or gamma",),
        ),
        (
            {"output_kernel": {"type": "diffusion", "edges": [[0, 1], [1, 2], [2, 3], [3, 400]]}},
            "invalid_data",
            ("edges[3] = [3, 400] refers to vertex 400 but there are 4 training vertices",),
        ),
        (
            {"output_kernel": {"type": "diffusion", "edges": [[0, 1.5]]}},
            "invalid_data",
            ("edges[0]", "integer"),
        ),
        (
            {"output_kernel": {"type": "diffusion", "edges": [[0, 1, 2]]}},
            "invalid_data",
            ("pairs",),
        ),
        ({"params": {"max_splits": 0}}, "invalid_parameter", ("max_splits",)),
        ({"params": {"learning_rate": "fast"}}, "invalid_parameter", ("learning_rate",)),
        (
            {"params": {"n_trees": 5}},
            "invalid_data",
            ("unknown parameter 'n_trees'", "n_estimators"),
        ),
        ({"model": "xgboost"}, "invalid_data", ("model", "okboost")),
        ({"inputs_typo": X4}, "invalid_data", ("inputs_typo", "not permitted")),
        (
            {"eval_set": {"inputs": X4, "outputs": [1, 2, 3, 4]}, "model": "ok3"},
            "invalid_data",
            ("eval_set is only used by models 'okboost', 'krr-boost'",),
        ),
        # eval_set shapes, the output entries: a 422 at once, not a queued job that fails
        (
            {"eval_set": {"inputs": [[0.0, 1.0, 2.0]], "outputs": [1]}, "wait": False},
            "invalid_data",
            ("eval_set.inputs has 3 columns but inputs has 2",),
        ),
        (
            {"eval_set": {"inputs": X4[:2], "outputs": [[1, 2], [3, 4]]}, "wait": False},
            "invalid_data",
            ("eval_set.outputs has 2 columns but output_kernel.outputs has 1",),
        ),
        (
            {"eval_set": {"inputs": X4[:3], "outputs": [1, 2]}, "wait": False},
            "invalid_data",
            ("eval_set.outputs has 2 rows but eval_set.inputs has 3",),
        ),
        (
            {
                "output_kernel": {"type": "precomputed", "gram": np.eye(4).tolist()},
                "eval_set": {
                    "inputs": X4[:2],
                    "gram_cross": np.eye(2, 3).tolist(),
                    "gram_diag": [1.0, 1.0],
                },
                "wait": False,
            },
            "invalid_data",
            ("eval_set.gram_cross is 2 x 3", "2 x 4"),
        ),
        (
            {
                "output_kernel": {"type": "precomputed", "gram": np.eye(4).tolist()},
                "eval_set": {
                    "inputs": X4[:2],
                    "gram_cross": np.eye(2, 4).tolist(),
                    "gram_diag": [1.0],
                },
                "wait": False,
            },
            "invalid_data",
            ("eval_set.gram_diag has 1 values but eval_set.inputs has 2 rows",),
        ),
        (
            {"output_kernel": {"type": "linear", "outputs": [None] * 4}, "wait": False},
            "invalid_data",
            ("every entry of output_kernel.outputs is unknown", "known"),
        ),
    ],
)
def test_train_invalid_data(
    client: TestClient, body: dict[str, Any], code: str, fragments: tuple[str, ...]
) -> None:
    err = assert_error(_train(client, **body), 422, code, *fragments)
    if code == "invalid_data" and "details" in err and err["details"]:
        assert all("loc" in d and "msg" in d for d in err["details"])


def test_invalid_json_and_empty_body(client: TestClient) -> None:
    r = client.post(
        "/train", content=b'{"inputs": [[1, 2]', headers={"content-type": "application/json"}
    )
    assert_error(r, 422, "invalid_data", "not valid JSON")
    r = client.post("/predict", content=b"", headers={"content-type": "application/json"})
    assert_error(r, 422, "invalid_data", "empty")
    assert_error(client.post("/predict", json=[1, 2]), 422, "invalid_data")


def test_predict_and_kernel_invalid_data(client: TestClient, trained: dict[str, Any]) -> None:
    mid = trained["model_id"]
    r = client.post("/predict", json={"model_id": mid, "inputs": [[1.0, 2.0]]})
    assert_error(r, 422, "invalid_data", "inputs has 2 columns but model", "trained on 4 features")
    r = client.post("/predict", json={"model_id": mid, "inputs": [[1, 2, 3, 4]], "top_k": 0})
    assert_error(r, 422, "invalid_data", "top_k")
    r = client.post(
        "/predict", json={"model_id": mid, "inputs": [[1, 2, 3, 4]], "return_outputs": True}
    )
    assert_error(r, 422, "invalid_data", "return_outputs needs outputs", "diffusion")
    r = client.post(
        "/predict", json={"model_id": mid, "inputs": [[1, 2, 3, 4]], "candidates": [[1.0]]}
    )
    assert_error(r, 422, "invalid_data", "candidate_gram")
    r = client.post(
        "/predict",
        json={
            "model_id": mid,
            "inputs": [[1, 2, 3, 4]],
            "candidate_gram": [[1.0, 2.0]],
            "candidate_diag": [1.0],
        },
    )
    assert_error(r, 422, "invalid_data", "candidate_gram has 2 columns")
    r = post_json(client, "/kernel", {"model_id": mid, "inputs": [[1, 2, 3, float("inf")]]})
    assert_error(r, 422, "invalid_data", "inputs contains infinity (first at [0, 3])")
    r = client.post(
        "/kernel",
        json={
            "model_id": mid,
            "inputs": [[1, 2, 3, 4]],
            "inputs2": [[1, 2, 3, 4]],
            "against": "training",
        },
    )
    assert_error(r, 422, "invalid_data", "inputs2 is only used with against = 'predicted'")
    r = client.post("/kernel", json={"model_id": mid, "inputs": [[1, 2, 3, 4]], "against": "both"})
    assert_error(r, 422, "invalid_data", "against")


def test_multipart_errors(client: TestClient) -> None:
    r = client.post(
        "/predict",
        data={"json": '{"model_id": "x"'},
        files={"inputs": ("a.bin", b"\x00" * 16, "application/octet-stream")},
    )
    assert_error(r, 422, "invalid_data", "part 'json' is not valid JSON")
    r = client.post(
        "/predict",
        data={"json": "{}"},
        files={"inputs": ("a.bin", b"\x00" * 16, "application/octet-stream")},
    )
    assert_error(r, 422, "invalid_data", "need a shape field 'inputs.shape'")
    r = client.post(
        "/predict",
        data={"json": "{}", "inputs.shape": "3,3"},
        files={"inputs": ("a.bin", b"\x00" * 16, "application/octet-stream")},
    )
    assert_error(r, 422, "invalid_data", "has 16 bytes but shape [3, 3] of float64 needs 72")
    obj = (
        b"\x93NUMPY\x01\x00v\x00{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"
        + b" " * 50
        + b"\n"
        + b"\x80\x04N."
    )
    r = client.post(
        "/predict",
        data={"json": "{}"},
        files={"inputs": ("a.npy", obj, "application/octet-stream")},
    )
    assert_error(r, 422, "invalid_data", "part 'inputs'")


# ------------------------------------------------------------------ never a 500
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 500)
    | st.floats(allow_nan=True)
    | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "inputs",
                    "output_kernel",
                    "type",
                    "gram",
                    "edges",
                    "params",
                    "model_id",
                    "outputs",
                    "top_k",
                    "wait",
                    "beta",
                    "sigma",
                    "against",
                    "threshold",
                ]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(
    max_examples=40,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(path=st.sampled_from(["/train", "/predict", "/kernel"]), body=_json)
def test_fuzzed_bodies_never_500(client: TestClient, path: str, body: Any) -> None:
    r = post_json(client, path, body)
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        ErrorResponse.model_validate(r.json())
