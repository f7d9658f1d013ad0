"""Two service replicas over one model store, training on a real Dask cluster (LocalCluster,
2 worker processes): the topology of docs/DEPLOY.md with processes instead of containers.

The replicas are started once for the module (a start costs seconds); the tests run in file
order, and the second one kills replica a for good."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from e2e_server import Server
from svc_data import clustered_graph, until

from okboost_client import OKBoostClient, OKBoostError

pytest.importorskip("distributed", reason="needs the [dask] extra")
# their own servers (not the e2e fixtures'); the cluster's xdist group keeps them in one process
pytestmark = pytest.mark.server

QUICK = {"n_estimators": 20, "learning_rate": 0.2, "max_splits": 4, "random_state": 0}
# 0.1-0.5 ms a tree (idle to loaded machine): LONG runs 5-25 s unless cancelled, RERUN 2-10 s
LONG = dict(QUICK, n_estimators=50_000, learning_rate=0.001)
RERUN = dict(LONG, n_estimators=20_000)
GRAPH = clustered_graph(n=60, n_test=8, seed=3)
KERNEL = {"type": "diffusion", "beta": 1.0, "edges": GRAPH.train_edges()}


@pytest.fixture(scope="module")
def replicas(dask_client: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    """Replicas a and b over one store on the cluster, started together."""
    store = tmp_path_factory.mktemp("shared") / "models"
    store.mkdir()
    servers = [Server(store, OKBOOST_DASK_SCHEDULER=dask_client.scheduler.address) for _ in "ab"]
    try:
        with ThreadPoolExecutor(2) as pool:
            a, b = pool.map(Server.start, servers)
        yield Replicas(store, a, b)
    finally:  # also when one of the two did not start
        for server in servers:
            server.stop()


@dataclass
class Replicas:
    store: Path
    a: Server
    b: Server


def _running(client: OKBoostClient, job_id: str) -> dict[str, Any] | None:
    job = client.job(job_id)
    assert job["state"] in ("queued", "running"), job
    return job if job["state"] == "running" and job["progress"]["done"] > 0 else None


def _record(store: Path, job_id: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((store / "jobs" / f"{job_id}.json").read_text())
    return record


def _finished(client: OKBoostClient, job_id: str) -> dict[str, Any] | None:
    job = client.job(job_id)
    return job if job["state"] not in ("queued", "running") else None


def test_a_job_trained_through_one_replica_runs_on_the_cluster_and_the_other_serves_it(
    dask_client: Any, replicas: Replicas
) -> None:
    store, a, b = replicas.store, replicas.a, replicas.b
    X_new = GRAPH.features[GRAPH.test]
    with OKBoostClient(a.url) as via_a, OKBoostClient(b.url) as via_b:
        accepted = via_a.train(GRAPH.features[GRAPH.train], KERNEL, params=QUICK)
        job = until(lambda: _finished(via_b, accepted["job_id"]))
        assert job["state"] == "done" and job["progress"]["done"] == QUICK["n_estimators"]
        runner = _record(store, accepted["job_id"])["runner"]
        assert (
            runner["kind"] == "dask" and runner["worker"] in dask_client.scheduler_info()["workers"]
        )
        mid = accepted["model_id"]
        from_b = via_b.kernel(mid, X_new, top_k=3)
        from_a = via_a.kernel(mid, X_new, top_k=3)  # now in a's cache
        np.testing.assert_array_equal(from_a["kernel"], from_b["kernel"])
        via_b.delete_model(mid)
        with pytest.raises(OKBoostError) as gone:
            via_a.kernel(mid, X_new, top_k=3)
        assert gone.value.status == 404
        assert [m["model_id"] for m in via_a.models()] == []


def test_a_job_outlives_the_replica_that_submitted_it_and_cancels_from_another(
    replicas: Replicas,
) -> None:
    store, a, b = replicas.store, replicas.a, replicas.b
    with OKBoostClient(a.url) as via_a, OKBoostClient(b.url) as via_b:
        quick = via_a.train(GRAPH.features[GRAPH.train], KERNEL, params=QUICK)
        long = via_a.train(GRAPH.features[GRAPH.train], KERNEL, params=LONG)
        a.stop(signal.SIGKILL)  # the submitting replica dies with both jobs on the cluster
        assert until(lambda: _finished(via_b, quick["job_id"]))["state"] == "done"
        via_b.kernel(quick["model_id"], GRAPH.features[GRAPH.test], top_k=2)
        running = until(lambda: _running(via_b, long["job_id"]))
        assert running["eta"] is not None and running["phase"] == "trees"  # as a local job's
        before = running["progress"]["done"]
        until(lambda: via_b.job(long["job_id"])["progress"]["done"] > before)  # it goes on
        via_b.cancel(long["job_id"])
        job = until(lambda: _finished(via_b, long["job_id"]))
        assert job["state"] == "cancelled" and job["progress"]["done"] < LONG["n_estimators"]
        assert via_b.model(long["model_id"])["status"] == "cancelled"
    # no model written: the model's folder holds its record (status "cancelled") only
    assert sorted(p.name for p in (store / long["model_id"]).iterdir()) == ["record.json"]


def test_killing_the_worker_that_runs_a_job_reruns_it_and_leaves_no_half_written_model(
    dask_client: Any, replicas: Replicas
) -> None:
    store, params = replicas.store, RERUN
    before = {p.name for p in store.iterdir()}
    with OKBoostClient(replicas.b.url) as client:
        accepted = client.train(GRAPH.features[GRAPH.train], KERNEL, params=params)
        until(lambda: _running(client, accepted["job_id"]))
        key = _record(store, accepted["job_id"])["runner"]["key"]
        worker = next(w for w, keys in dask_client.processing().items() if key in keys)
        pid = dask_client.run(os.getpid, workers=[worker])[worker]
        os.kill(pid, signal.SIGKILL)
        job = until(lambda: _finished(client, accepted["job_id"]))
        assert job["state"] == "done" and job["progress"]["done"] == params["n_estimators"]
        record = _record(store, accepted["job_id"])
        assert record["attempt"] == 2 and record["runner"]["worker"] != worker
        client.kernel(accepted["model_id"], GRAPH.features[GRAPH.test], top_k=2)
    new = [p.name for p in store.iterdir() if p.is_dir() and p.name not in before]
    assert new == [accepted["model_id"]]  # the dead worker left no model, whole or half
