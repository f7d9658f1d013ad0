"""Hostile and absurd inputs, one regression test each: a clear 4xx, never a 500."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import uvicorn
from svc_data import (
    TestClient,
    clustered_graph,
    diffusion_request,
    make_settings,
    model_record,
    post_json,
    vector_data,
)
from test_errors import assert_error

import okcore
from service.app import create_app
from service.config import Settings
from service.store.ids import new_id
from service.store.model_store import ModelStore
from service.training.budget import estimate_job, levers

JSON = {"content-type": "application/json"}


def _vector_train(kernel: dict[str, Any], **extra: Any) -> dict[str, Any]:
    X, Y = vector_data()
    body = {
        "inputs": X.tolist(),
        "output_kernel": {"outputs": Y.tolist(), **kernel},
        "params": {"n_estimators": 3},
        "wait": True,
    }
    body.update(extra)
    return body


# ------------------------------------------------------------------ JSON nesting
DEEP = 100_000


@pytest.mark.parametrize(
    "body",
    [
        "[" * DEEP + "]" * DEEP,  # a bare deep array
        '{"a":' * DEEP + "1" + "}" * DEEP,  # a deep object
        '{"inputs": ' + "[" * DEEP + "]" * DEEP + "}",  # deep inside a field
        '{"params": {"n_estimators": ' + "[" * 40 + "]" * 40 + "}}",  # just over the limit
    ],
    ids=["array", "object", "in-a-field", "just-over"],
)
def test_deeply_nested_json_is_a_422_before_parsing(client: TestClient, body: str) -> None:
    r = client.post("/train", content=body, headers=JSON)
    assert_error(r, 422, "invalid_data", "levels deep", "OKBOOST_MAX_JSON_DEPTH")


def test_brackets_inside_strings_do_not_count_as_nesting(client: TestClient) -> None:
    body = diffusion_request(clustered_graph(), name='"[{[\\"{' * 25, wait=False)
    assert client.post("/train", json=body).status_code == 202


def test_deeply_nested_json_part_and_text_part_are_a_422(client: TestClient) -> None:
    deep = "[" * DEEP + "]" * DEEP
    r = client.post("/train", files={"json": (None, deep)})
    assert_error(r, 422, "invalid_data", "part 'json' nests", "levels deep")
    r = client.post("/train", files={"json": (None, "{}"), "inputs": (None, deep)})
    assert_error(r, 422, "invalid_data", "text part 'inputs'", "levels deep")


def test_json_part_that_is_not_utf8_is_a_422(client: TestClient) -> None:
    r = client.post("/train", files={"json": ("request.json", b'{"name": "\xff\xfe"}')})
    assert_error(r, 422, "invalid_data", "part 'json' is not UTF-8", "position 10")
    r = client.post("/train", content=b'{"name": "\xc3"}', headers=JSON)
    assert_error(r, 422, "invalid_data", "request body is not UTF-8")


# ------------------------------------------------------------------ array headers
def _npy_header_only(shape: tuple[int, ...]) -> bytes:
    header = f"{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}"
    header = header + " " * (117 - len(header)) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()


def test_npy_part_declaring_a_huge_shape_is_a_422(client: TestClient) -> None:
    _, Y = vector_data()
    spec = {"output_kernel": {"type": "linear", "outputs": Y.tolist()}}
    files = {"json": (None, json.dumps(spec)), "inputs": ("x.npy", _npy_header_only((10**8,) * 2))}
    r = client.post("/train", files=files)
    assert_error(r, 422, "invalid_data", "declares shape [100000000, 100000000]", "holds 0 bytes")


@pytest.mark.parametrize("fmt", ["coo", "csc"])
def test_sparse_part_declaring_a_huge_shape_is_a_422(client: TestClient, fmt: str) -> None:
    """A COO / CSC matrix with no entries may declare 10^12 rows; its CSR form would need
    10^12 row pointers (a MemoryError before)."""
    import io
    import zipfile

    members: dict[str, np.ndarray] = {"format": np.array(fmt), "shape": np.array([10**12, 3])}
    if fmt == "coo":
        members.update(row=np.zeros(0, int), col=np.zeros(0, int), data=np.zeros(0))
    else:
        members.update(indices=np.zeros(0, int), indptr=np.zeros(4, int), data=np.zeros(0))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for key, value in members.items():
            part = io.BytesIO()
            np.save(part, value)
            zf.writestr(f"{key}.npy", part.getvalue())
    _, Y = vector_data()
    spec = {"output_kernel": {"type": "linear", "outputs": Y.tolist()}}
    r = client.post(
        "/train", files={"json": (None, json.dumps(spec)), "inputs": ("x.npz", buf.getvalue())}
    )
    assert_error(r, 422, "invalid_data", "declares 1000000000000 rows", "at most 10000000")


# ------------------------------------------------------------------ kernel parameters
@pytest.mark.parametrize("sigma", [1e-300, 5e-324, 1e300])
def test_rbf_width_out_of_float_range_is_a_422(client: TestClient, sigma: float) -> None:
    r = client.post("/train", json=_vector_train({"type": "rbf", "sigma": sigma}))
    assert_error(r, 422, "invalid_kernel", "rbf kernel 'sigma' must be in [1e-150, 1e+150]")


def test_diffusion_beta_1e300_is_a_422(client: TestClient) -> None:
    g = clustered_graph()
    body = diffusion_request(g)
    body["output_kernel"]["beta"] = 1e300
    r = client.post("/train", json=body)
    assert_error(r, 422, "invalid_kernel", "'beta' must be at most 1e+06")


@pytest.mark.parametrize(
    ("kernel", "scale"),
    [({"type": "polynomial", "degree": 20, "gamma": 1e300}, 1.0), ({"type": "polynomial"}, 1e200)],
)
def test_polynomial_overflow_with_wait_is_a_422(
    client: TestClient, kernel: dict[str, Any], scale: float
) -> None:
    """The overflow shows only when the kernel meets the outputs, inside the job: with
    "wait": true it is answered as the 422 it is (a 500 before)."""
    body = _vector_train(kernel)
    body["output_kernel"]["outputs"] = (
        np.asarray(body["output_kernel"]["outputs"]) * scale
    ).tolist()
    r = client.post("/train", json=body)
    assert_error(r, 422, "invalid_kernel", "the polynomial kernel overflows on Y")


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_numbers_in_fields_are_a_422(
    client: TestClient, trained: dict[str, Any], value: float
) -> None:
    g = clustered_graph()
    body = {"model_id": trained["model_id"], "inputs": g.features[:2].tolist(), "threshold": value}
    assert_error(post_json(client, "/kernel", body), 422, "invalid_data", "threshold")
    width = _vector_train({"type": "rbf", "sigma": value})
    assert_error(post_json(client, "/train", width), 422, "invalid_data", "sigma")


def test_negative_candidate_diag_is_a_422(client: TestClient, trained: dict[str, Any]) -> None:
    g = clustered_graph()
    n_train = trained["model"]["n_train"]
    body = {
        "model_id": trained["model_id"],
        "inputs": g.features[:2].tolist(),
        "candidate_gram": [[0.1] * n_train],
        "candidate_diag": [-1.0],
    }
    r = client.post("/predict", json=body)
    assert_error(r, 422, "invalid_data", "candidate_diag[0] = -1 is negative")


# ------------------------------------------------------------------ over a real socket
@contextmanager
def _live(app: Any) -> Iterator[int]:
    """uvicorn serving ``app`` on a free localhost port, in a thread of this process."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        threading.Event().wait(0.01)
    port: int = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join()


def _read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response with a Content-Length body from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"connection closed after {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    while len(body) < int(headers.get("content-length", 0)):
        body += sock.recv(65536)
    return int(status_line.split()[1]), headers, body


def _get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()


def test_a_500_keeps_the_connection_usable(settings: Settings) -> None:
    """An unexpected error is answered as the JSON 500 and the same connection then serves
    the next request (uvicorn used to drop it after Starlette re-raised the error)."""
    app = create_app(settings.model_copy(update={"job_isolation": "thread"}))

    async def broken() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/broken", broken)
    with _live(app) as port, socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(_get("/broken"))
        status, headers, body = _read_response(sock)
        assert status == 500 and json.loads(body)["error"]["code"] == "internal_error"
        assert headers.get("connection") != "close"
        sock.sendall(_get("/health/live"))  # the same socket
        status, _, body = _read_response(sock)
        assert status == 200 and json.loads(body) == {"status": "live"}


def test_a_client_that_stops_sending_its_body_gets_408_and_is_disconnected(
    settings: Settings,
) -> None:
    """2 of 10 promised bytes, then silence: the server answers 408 once
    OKBOOST_BODY_READ_TIMEOUT passes and closes the connection (slowloris)."""
    app = create_app(settings.model_copy(update={"body_read_timeout": 0.5}))
    with _live(app) as port, socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(
            b"POST /train HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 10\r\n\r\n{}"
        )
        status, headers, body = _read_response(sock)
        assert status == 408 and headers["connection"] == "close"
        assert "no part of the request body arrived for 0.5 s (2 bytes received)" in body.decode()
        assert sock.recv(1) == b""  # closed by the server


# ------------------------------------------------------------------ absurd work
def test_absurd_tree_count_is_refused_before_it_starts(client: TestClient) -> None:
    """n_estimators = 10**30 held the only worker for 10 minutes."""
    body = diffusion_request(clustered_graph(), wait=False)
    body["params"]["n_estimators"] = 10**30
    r = client.post("/train", json=body)
    err = assert_error(r, 422, "job_too_large", "n_estimators", "OKBOOST_MAX_ESTIMATORS")
    assert "Estimate: N = 34" in err["message"] and client.get("/jobs").json()["jobs"] == []


def test_the_default_tree_count_is_resolved_from_the_rows_before_the_job_starts(
    tmp_path: Path,
) -> None:
    """n_estimators "auto" (the default) is 500 trees on 10,000 rows, 300 below: a limit of
    400 trees refuses the larger job before it is queued, with the count it resolved to."""
    n = 10_000
    body = {
        "inputs": np.zeros((n, 2)).tolist(),
        "output_kernel": {"type": "linear", "outputs": np.zeros((n, 1)).tolist()},
        "params": {"n_estimators": "auto"},
        "wait": False,
    }
    with TestClient(create_app(make_settings(tmp_path, max_estimators=400))) as c:
        r = c.post("/train", json=body)
        err = assert_error(r, 422, "job_too_large", "n_estimators = 500 trees", "400 trees")
        details = {tuple(d["loc"]): float(d["msg"]) for d in err["details"]}
        assert details[("estimate", "n_trees")] == 500
        assert c.get("/jobs").json()["jobs"] == []
    small = estimate_job("okboost", {}, np.zeros((n - 1, 2)), {"type": "linear"}, 1, 0)
    assert small.n_trees == 300


def test_a_job_whose_memory_estimate_is_over_the_budget_is_refused(tmp_path: Path) -> None:
    """A 20,000-vertex graph once reached 9.5 GB: with an exact factor (rank = N)
    the estimate says so before anything is queued."""
    n = 20_000
    edges = np.c_[np.arange(n - 1), np.arange(1, n)]
    body = {
        "inputs": np.zeros((n, 2)).tolist(),
        "output_kernel": {"type": "diffusion", "edges": edges.tolist()},
        "params": {"factor_rank": n, "n_estimators": 10},
    }
    budget = 2 * 1024**3
    with TestClient(create_app(make_settings(tmp_path, max_job_memory=budget))) as c:
        r = c.post("/train", json=body)
        err = assert_error(r, 422, "job_too_large", "bytes of memory", "OKBOOST_MAX_JOB_MEMORY")
        details = {tuple(d["loc"]): float(d["msg"]) for d in err["details"]}
        assert details[("limit", "memory_bytes")] == budget
        assert details[("estimate", "memory_bytes")] > 3 * 8 * n * n  # three N x N float64
        assert details[("estimate", "rank")] == n


@pytest.mark.parametrize("name", okcore.estimator_names(include_auto=True))
def test_every_estimator_names_params_it_takes_to_lower_its_cost(name: str) -> None:
    """The job limits' 422 told a kernel ridge user to ask for fewer trees and splits, which
    it has none of: each estimator's levers name its own params."""
    asks = levers(okcore.make_estimator(name))
    named = re.findall(r"params\.(\w+)", asks)
    assert named and set(named) <= set(okcore.estimator_parameters(name))


def test_exact_kernel_ridge_over_the_budget_is_told_to_use_nystrom(tmp_path: Path) -> None:
    """Exact KRR at N = 100,000 needs 240 GB (24 N^2 bytes): the refusal names the Nystrom
    basis that fits (params.n_components), not trees; with n_components it is accepted."""
    n = 3000  # 24 N^2 = 216 MB over a 300 MB budget beside the process's own 250 MB
    X = np.random.default_rng(0).normal(size=(n, 2)).round(3)
    body = {"inputs": X.tolist(), "output_kernel": {"type": "linear", "outputs": X.tolist()},
            "model": "krr", "params": {"alpha": 1.0}}  # fmt: skip
    with TestClient(create_app(make_settings(tmp_path, max_job_memory=300 * 10**6))) as c:
        r = c.post("/train", json=body)
        err = assert_error(r, 422, "job_too_large", "OKBOOST_MAX_JOB_MEMORY")
        assert "params.n_components" in err["message"] and "trees" not in err["message"]
    small = estimate_job("krr", {"alpha": 1.0, "n_components": 200}, X, {"type": "linear"}, 2, 0)
    assert small.memory_bytes < 300 * 10**6


def test_the_multilabel_default_over_the_budget_is_told_to_name_a_model(tmp_path: Path) -> None:
    """The multi-label default takes no params: its refusal names what the request can
    change (rows, labels, a named model, the inner folds), not params.n_estimators."""
    rng = np.random.default_rng(0)
    body = {"task": "multilabel", "inputs": rng.normal(size=(60, 2)).tolist(),
            "labels": (rng.random((60, 3)) < 0.5).astype(int).tolist()}  # fmt: skip
    with TestClient(create_app(make_settings(tmp_path, max_job_memory=64 * 1024**2))) as c:
        err = assert_error(c.post("/train", json=body), 422, "job_too_large")
        assert "one named model (model)" in err["message"] and "n_splits" in err["message"]
        assert "params." not in err["message"]


def test_limits_on_rows_and_features(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, max_train_rows=30, max_features=3)
    g = clustered_graph()
    with TestClient(create_app(settings)) as c:
        r = c.post("/train", json=diffusion_request(g))
        assert_error(r, 422, "job_too_large", f"{len(g.train)} training rows", "MAX_TRAIN_ROWS")
        small = clustered_graph(n=20, p=4, n_test=2)
        r = c.post("/train", json=diffusion_request(small))
        assert_error(r, 422, "job_too_large", "4 features", "OKBOOST_MAX_FEATURES")


# ------------------------------------------------------------------ full disk
def _full_disk(*_: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_full_disk_is_507_and_not_ready(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails with ENOSPC (as fsync does on a full disk): /train answers 507
    and leaves nothing behind, /health/ready says not ready; both recover with the disk."""
    settings = make_settings(tmp_path, job_isolation="thread")
    with TestClient(create_app(settings)) as c:
        assert c.get("/health/ready").status_code == 200
        with monkeypatch.context() as m:
            m.setattr(os, "fsync", _full_disk)
            r = c.post("/train", json=diffusion_request(clustered_graph()))
            assert_error(r, 507, "insufficient_storage", "no space left", "nothing half-written")
            ready = c.get("/health/ready")
            assert_error(ready, 503, "not_ready", "No space left on device")
        assert c.get("/models").json()["models"] == [] and c.get("/jobs").json()["jobs"] == []
        assert not [p for p in settings.model_dir.iterdir() if p.name != "jobs"]
        assert c.get("/health/ready").status_code == 200
        assert c.post("/train", json=diffusion_request(clustered_graph())).status_code == 201


def test_a_server_restarted_on_a_full_disk_starts_and_tells_the_truth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed with a job running, then restarted on a full disk, the server refused to start
    (the interrupted job's record could not be written), so no model could be deleted to
    make room. It starts, answers the job and its model as failed (the model said
    "training" for good), and writes both once the disk has room."""
    settings = make_settings(tmp_path, job_isolation="thread")
    store = ModelStore(settings.model_dir)
    mid, job_id = new_id(), new_id()
    store.create_record(model_record(mid, job_id=job_id))
    runner = {"kind": "local", "host": socket.gethostname(), "pid": os.getpid()}  # before restart
    job = {"job_id": job_id, "model_id": mid, "total": 5, "state": "running", "created": 0.0,
           "runner": runner}  # fmt: skip
    (settings.model_dir / "jobs").mkdir()
    (settings.model_dir / "jobs" / f"{job_id}.json").write_text(json.dumps(job))
    monkeypatch.setattr(os, "fsync", _full_disk)
    with TestClient(create_app(settings)) as c:
        assert c.get(f"/jobs/{job_id}").json()["state"] == "failed"
        model = c.get(f"/models/{mid}").json()
        assert model["status"] == "failed" and model["error"] == "interrupted by server restart"
        assert [m["status"] for m in c.get("/models").json()["models"]] == ["failed"]
        r = c.post("/predict", json={"model_id": mid, "inputs": [[0.0]]})
        assert_error(r, 409, "model_not_ready", "training failed: interrupted by server restart")
        assert_error(c.get("/health/ready"), 503, "not_ready", "No space left on device")
        monkeypatch.undo()  # room again
        assert c.get("/jobs").json()["jobs"][0]["state"] == "failed"
    assert store.read_record(mid)["status"] == "failed"
    on_disk = json.loads((settings.model_dir / "jobs" / f"{job_id}.json").read_text())
    assert on_disk["state"] == "failed"


def test_a_model_too_big_for_the_free_disk_is_507(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    usage = shutil.disk_usage("/")
    monkeypatch.setattr(shutil, "disk_usage", lambda _: usage._replace(free=1000))
    r = client.post("/train", json=diffusion_request(clustered_graph()))
    assert_error(r, 507, "insufficient_storage", "has 1e-06 GB free", "needs an estimated")


# ------------------------------------------------------------------ found by schemathesis
def test_405_lists_every_method_of_the_path(client: TestClient) -> None:
    r = client.request("OPTIONS", "/jobs/" + "0" * 32)
    assert r.status_code == 405 and r.headers["allow"] == "DELETE, GET"
    assert r.json()["error"]["code"] == "method_not_allowed"


def test_a_model_deleted_while_it_is_read_is_404_not_500(
    client: TestClient, trained: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DELETE landing while another request reads the model's files (schemathesis ran
    them concurrently): the model is gone, not corrupted."""
    import service.store.model_store

    def deleted_meanwhile(folder: Path, *_: Any) -> Any:
        client.delete(f"/models/{trained['model_id']}")
        raise FileNotFoundError(folder / "inputs.npy")

    monkeypatch.setattr(service.store.model_store, "read_model_folder", deleted_meanwhile)
    body = {"model_id": trained["model_id"], "inputs": clustered_graph().features[:1].tolist()}
    assert_error(client.post("/kernel", json=body), 404, "not_found", "deleted meanwhile")


def test_booleans_are_not_numbers(client: TestClient) -> None:
    """Strict types: `"coef0": false` was read as 0.0 (schemathesis)."""
    r = client.post("/train", json=_vector_train({"type": "polynomial", "coef0": False}))
    assert_error(r, 422, "invalid_data", "coef0")
