"""End to end over real HTTP: network completion, restart, crash recovery, concurrency."""

from __future__ import annotations

import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from e2e_server import Server
from svc_data import clustered_graph

import okcore
from okboost_client import OKBoostClient, OKBoostError

PARAMS = {"n_estimators": 30, "learning_rate": 0.2, "max_splits": 4, "random_state": 0}


def _edges_set(rows: np.ndarray) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b, _ in rows}


def test_network_completion_matches_okcore_and_survives_restart(
    server_factory: type[Server], tmp_path: Path
) -> None:
    g = clustered_graph(n=60, n_test=8, seed=3)
    X_train, X_new = g.features[g.train], g.features[g.test]
    edges = g.train_edges()
    kernel_spec = {"type": "diffusion", "beta": 1.0, "edges": edges}
    server = server_factory(tmp_path / "models").start()
    with OKBoostClient(server.url) as client:
        accepted = client.train(X_train, kernel_spec, params=PARAMS, name="net")
        assert accepted["state"] in ("queued", "running")
        seen: list[dict[str, Any]] = []
        job = client.wait(accepted["job_id"], poll=0.02, on_progress=seen.append)
        assert job["state"] == "done" and job["progress"]["done"] == PARAMS["n_estimators"]
        assert job["last_train_loss"] is not None and "train_loss" not in job
        mid = accepted["model_id"]
        first = client.kernel(mid, X_new, top_k=3)
        thresholded = client.kernel(mid, X_new, threshold=0.05, return_kernel=False)
        weights = client.predict(mid, X_new, top_k=2, weights="dense")
        json_client = OKBoostClient(server.url, binary=False)
        same_by_json = json_client.kernel(mid, X_new, top_k=3)
        json_client.close()

    # okcore called directly, same data and parameters
    est = okcore.OKBoostRegressor(**PARAMS).fit(
        X_train, kernel={"type": "diffusion", "beta": 1.0, "edges": edges.tolist()}
    )
    k_nn = est.predict_kernel(X_new)
    k_nk = est.predict_kernel(X_new, X_train)
    np.testing.assert_allclose(first["kernel"], k_nn, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(same_by_json["kernel"], first["kernel"], rtol=0, atol=0)
    want_nk = {(a, int(i)) for a in range(len(X_new)) for i in np.argsort(-k_nk[a])[:3]}
    assert _edges_set(first["edges"]["new_known"]) == want_nk
    want_nn = {
        (a, b) for a in range(len(X_new)) for b in range(a + 1, len(X_new)) if k_nn[a, b] >= 0.05
    }
    assert _edges_set(thresholded["edges"]["new_new"]) == want_nn
    np.testing.assert_allclose(
        weights["weights"], est.predict_weights(X_new), rtol=1e-9, atol=1e-12
    )
    idx, _ = est.predict_index(X_new, top_k=2)
    np.testing.assert_array_equal(weights["indices"], idx)

    # restart on the same store: identical answers
    server.stop()
    again = server_factory(tmp_path / "models").start()
    with OKBoostClient(again.url) as client:
        assert [m["model_id"] for m in client.models()] == [mid]
        after = client.kernel(mid, X_new, top_k=3)
        after_w = client.predict(mid, X_new, top_k=2, weights="dense")
    np.testing.assert_array_equal(after["kernel"], first["kernel"])
    np.testing.assert_array_equal(after["edges"]["new_known"], first["edges"]["new_known"])
    np.testing.assert_array_equal(after["edges"]["new_new"], first["edges"]["new_new"])
    np.testing.assert_array_equal(after_w["weights"], weights["weights"])


def test_crash_marks_running_job_failed_and_keeps_finished_models(
    server_factory: type[Server], tmp_path: Path
) -> None:
    g = clustered_graph()
    X = g.features[g.train]
    spec = {"type": "diffusion", "beta": 1.0, "edges": g.train_edges()}
    server = server_factory(tmp_path / "models").start()
    with OKBoostClient(server.url) as client:
        done = client.train(X, spec, params=PARAMS, wait=True)
        answer = client.kernel(done["model_id"], X[:3])
        long = client.train(X, spec, params={**PARAMS, "n_estimators": 20_000})
        for _ in range(400):
            if client.job(long["job_id"])["progress"]["done"] > 0:
                break
            time.sleep(0.02)
    server.stop(signal.SIGKILL)  # a crash: no shutdown handler runs
    again = server_factory(tmp_path / "models").start()
    with OKBoostClient(again.url) as client:
        job = client.job(long["job_id"])
        assert job["state"] == "failed" and job["error"] == "interrupted by server restart"
        try:
            client.predict(long["model_id"], X[:1])
            raise AssertionError("expected 409")
        except OKBoostError as exc:
            assert exc.status == 409 and "interrupted by server restart" in exc.message
        np.testing.assert_array_equal(
            client.kernel(done["model_id"], X[:3])["kernel"], answer["kernel"]
        )


def _alive_in_group(pgid: int) -> list[int]:
    """The processes of a process group that have not ended (zombies have)."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(stat.parent.name))
    return alive


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_crash_while_the_output_kernel_is_factorised_takes_the_training_along(
    server_factory: type[Server], tmp_path: Path
) -> None:
    """kill -9 of the server while its training process factorised the output kernel (no
    report for seconds, the GIL held) left that process running unwatched, its fork server
    waiting for it. Now the whole process group ends, and the restarted server reports the
    job failed, its model absent from the ready ones."""
    n = 3000
    rng = np.random.default_rng(0)
    edges = [[i, (i * 7 + 3) % n] for i in range(n)] + [[i, (i + 1) % n] for i in range(n)]
    server = server_factory(tmp_path / "models").start()
    assert server.proc is not None
    with OKBoostClient(server.url) as client:
        job = client.train(
            rng.normal(size=(n, 10)), {"type": "diffusion", "edges": edges},
            params={"n_estimators": 300},
        )  # fmt: skip
        for _ in range(6000):  # a hang guard
            if client.job(job["job_id"])["phase"] in ("output_space", "binning", "trees"):
                break
            time.sleep(0.01)
    group = server.proc.pid
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait()
    for _ in range(600):  # a hang guard: without the fix the factorisation ran on
        if not _alive_in_group(group):
            break
        time.sleep(0.05)
    assert _alive_in_group(group) == []
    again = server_factory(tmp_path / "models").start()
    with OKBoostClient(again.url) as client:
        ended = client.job(job["job_id"])
        assert ended["state"] == "failed" and ended["error"] == "interrupted by server restart"
        assert [m["status"] for m in client.models()] == ["failed"]
    assert not list((tmp_path / "models").glob(".tmp-*"))


def test_sigterm_answers_a_waiting_train_request_and_stops_at_once(
    server_factory: type[Server], tmp_path: Path
) -> None:
    """A "wait": true request held a server asked to stop (SIGTERM) until the wait timed
    out, the job training on meanwhile, and was then told the job was running. Now the job
    is stopped, the request answered 503 shutting_down, and the server stops."""
    g = clustered_graph()
    X = g.features[g.train]
    spec = {"type": "diffusion", "beta": 1.0, "edges": g.train_edges().tolist()}
    server = server_factory(tmp_path / "models", OKBOOST_WAIT_TIMEOUT="600").start()
    body = {"inputs": X.tolist(), "output_kernel": spec, "wait": True,
            "params": {**PARAMS, "n_estimators": 40_000}}  # fmt: skip
    with ThreadPoolExecutor(1) as pool, OKBoostClient(server.url) as client:
        reply = pool.submit(httpx.post, f"{server.url}/train", json=body, timeout=700)
        for _ in range(6000):  # a hang guard
            jobs = client.jobs()
            if jobs and jobs[0]["state"] == "running" and jobs[0]["progress"]["done"] > 0:
                break
            time.sleep(0.01)
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        answer = reply.result()  # before the fix: the connection dropped when stop() killed it
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "shutting_down"
    server.stop()
    again = server_factory(tmp_path / "models").start()
    with OKBoostClient(again.url) as client:
        assert client.jobs()[0]["error"] == "interrupted by server shutdown"


def test_predictions_run_concurrently_while_training(server: Server) -> None:
    """160 predictions from 16 clients all answered while a training job runs, and the job
    keeps growing trees meanwhile (how fast each side goes is measured by
    bench/responsiveness.py, not asserted here: CI machines are loaded)."""
    g = clustered_graph()
    X = g.features[g.train]
    spec = {"type": "diffusion", "beta": 1.0, "edges": g.train_edges()}
    with OKBoostClient(server.url) as client:
        mid = client.train(X, spec, params=PARAMS, wait=True)["model_id"]
        long = client.train(X, spec, params={**PARAMS, "n_estimators": 20_000})
        body = {"model_id": mid, "inputs": X[:1].tolist(), "top_k": 3}
        while client.job(long["job_id"])["progress"]["done"] == 0:
            time.sleep(0.05)
        before = client.job(long["job_id"])["progress"]["done"]

        http = httpx.Client(
            base_url=server.url, timeout=120, limits=httpx.Limits(max_connections=16)
        )
        statuses: list[int] = []
        with ThreadPoolExecutor(16) as pool:
            # rounds of 16 predictions until the job reports more trees (it writes its
            # progress about once a second): both sides advanced at the same time
            while len(statuses) < 160 or client.job(long["job_id"])["progress"]["done"] == before:
                body_calls = pool.map(
                    lambda _: http.post("/kernel", json=body).status_code, range(16)
                )
                statuses += list(body_calls)
                assert len(statuses) < 16_000, "the job made no progress"
        http.close()
        assert statuses == [200] * len(statuses)
        assert client.job(long["job_id"])["state"] == "running"
        client.cancel(long["job_id"])


def test_service_stays_responsive_while_a_gram_matrix_is_factorised(server: Server) -> None:
    """scipy's eigh holds the GIL for seconds at this size: training runs in a child
    process, so liveness checks and predictions keep answering meanwhile. Checked without
    a clock: several liveness checks and predictions are answered one after the other while
    the job still reports its output_space phase (a factorisation holding the server's GIL
    would let none through until it ends, when the job has moved on). The latencies are
    measured by bench/responsiveness.py."""
    g = clustered_graph()
    X = g.features[g.train]
    with OKBoostClient(server.url) as client:
        mid = client.train(
            X, {"type": "diffusion", "edges": g.train_edges()}, params=PARAMS, wait=True
        )["model_id"]
        rng = np.random.default_rng(0)
        n = 1200
        A = rng.normal(size=(n, n // 2))
        big = client.train(
            rng.normal(size=(n, 5)),
            {"type": "precomputed", "gram": A @ A.T / n},
            params={"n_estimators": 3, "max_splits": 2},
        )
        during_factor, state = 0, "queued"
        with httpx.Client(base_url=server.url, timeout=120) as http:
            while state in ("queued", "running"):
                job = http.get(f"/jobs/{big['job_id']}").json()
                state = job["state"]
                assert http.get("/health/live").status_code == 200
                kernel = http.post("/kernel", json={"model_id": mid, "inputs": X[:1].tolist()})
                assert kernel.status_code == 200
                if job["phase"] == "output_space":
                    during_factor += 1
        assert state == "done"
    assert during_factor >= 3, during_factor
