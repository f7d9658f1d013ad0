"""Cluster jobs' failure paths the live-replica tests (tests/e2e/test_replicas.py) cannot
provoke: a task the scheduler lost, a worker that does not see the store or cannot import
okboost, a job past the time limit, a scheduler gone or misnamed; the store's path as workers elsewhere see it; what
/metrics says of the cluster."""

from __future__ import annotations

import functools
import json
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest
from svc_data import TestClient, make_settings, model_record, until

from service.app import create_app
from service.jobs.manager import JobManager
from service.jobs.quotas import QueueQuotas
from service.jobs.records import JobRecords
from service.store.ids import new_id
from service.store.model_store import ModelStore

cluster = pytest.importorskip("service.jobs.cluster", reason="needs the [dask] extra")


def test_a_job_whose_task_the_scheduler_lost_is_marked_failed_by_any_replica(
    dask_client: Any, tmp_path: Path
) -> None:
    store = ModelStore(tmp_path)
    model_id, job_id = new_id(), new_id()
    store.create_record(model_record(model_id))
    record = {
        "job_id": job_id, "model_id": model_id, "total": 5, "state": "running", "created": 0.0,
        "updated": time.time() - cluster.LOST_GRACE - 1,  # its task never wrote again
        "runner": {"kind": "dask", "key": cluster.TASK_PREFIX + job_id},
    }  # fmt: skip
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / f"{job_id}.json").write_text(json.dumps(record))
    jobs = JobManager(store, dask_scheduler=dask_client.scheduler.address)
    job = jobs.get(job_id)  # recover() left it to the cluster; reading it asks the scheduler
    assert job.state == "failed" and job.error == cluster.lost_reason(None)
    assert store.read_record(model_id)["status"] == "failed"
    jobs.shutdown()


def test_a_worker_that_does_not_see_the_store_fails_the_job_with_how_to_fix_it(
    dask_client: Any, tmp_path: Path
) -> None:
    elsewhere = str(tmp_path / "not-mounted")
    future = dask_client.submit(
        cluster.run_on_worker, len, elsewhere, new_id(), None, QueueQuotas(), pure=False
    )
    error = future.exception()
    assert isinstance(error, cluster.StoreNotShared)
    assert "mount the replicas' store at the same path on every worker" in str(error)


def test_a_cluster_job_running_past_the_time_limit_is_stopped_and_failed(
    dask_client: Any, tmp_path: Path
) -> None:
    """OKBOOST_MAX_JOB_SECONDS holds on the cluster as in the local pool: the task stops
    after the tree that passes it and the job fails naming the setting."""
    store = ModelStore(tmp_path)
    jobs = JobManager(
        store, dask_scheduler=dask_client.scheduler.address, quotas=QueueQuotas(max_seconds=0.3)
    )

    class Tree:
        done, total, elapsed, train_loss, val_loss = 1, 1000, 0.0, 1.0, None

    def endless(progress: Any) -> str:  # a local function: Dask ships it by value
        for _ in range(1000):
            if progress(Tree()):
                return "cancelled"
            time.sleep(0.05)
        return "done"

    model_id = new_id()
    store.create_record(model_record(model_id))
    job = jobs.submit(model_id, endless, total=1000)
    assert jobs.wait(job.job_id, 120)
    job = jobs.get(job.job_id)
    assert job.state == "failed" and job.error == QueueQuotas(max_seconds=0.3).overtime_reason()
    assert store.read_record(model_id)["status"] == "failed"
    jobs.shutdown()


def test_a_store_given_by_a_relative_path_is_found_by_workers_started_elsewhere(
    dask_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`okboost serve --model-dir models`: the workers, started in another directory, are
    sent the store's absolute path (a relative one named a folder of their own)."""
    monkeypatch.chdir(tmp_path)  # the workers' working directory is not this one
    store = ModelStore(Path("models"))
    assert store.root == tmp_path / "models"
    jobs = JobManager(store, dask_scheduler=dask_client.scheduler.address)
    model_id = new_id()
    store.create_record(model_record(model_id))
    job = jobs.submit(model_id, lambda progress: "done", total=1)
    assert jobs.wait(job.job_id, 120)
    assert jobs.get(job.job_id).state == "done", jobs.get(job.job_id).error
    jobs.shutdown()


def test_metrics_say_whether_the_scheduler_is_connected_and_how_many_workers_it_has(
    dask_client: Any, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path, dask_scheduler=dask_client.scheduler.address)
    with TestClient(create_app(settings)) as client:
        text = client.get("/metrics").text
    assert "okboost_dask_scheduler_up 1.0" in text
    assert f"okboost_dask_workers {float(len(dask_client.nthreads()))}" in text


def test_a_lost_scheduler_is_tried_again_at_most_every_few_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the scheduler is gone, a /train (or a GET /jobs of another replica's job) is told
    at once that it cannot be reached, instead of each waiting out a connection timeout."""
    distributed = pytest.importorskip("distributed")
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", "2s")  # how long the client waits for it
    monkeypatch.setattr(cluster, "RECONNECT_TIMEOUT", "1s")
    local = distributed.LocalCluster(
        n_workers=0, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=":0"
    )
    jobs = cluster.ClusterJobs(
        local.scheduler_address, JobRecords(ModelStore(tmp_path)), QueueQuotas()
    )
    assert jobs.state() == (True, 0)
    local.close()
    until(lambda: jobs.client.status in ("closing", "closed"))
    assert jobs.state() == (False, 0)
    with pytest.raises(cluster.ClusterUnavailable, match="retry when it is back") as first:
        jobs._connected()

    def no_second_try(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the scheduler was tried again at once")

    monkeypatch.setattr(cluster, "Client", no_second_try)
    with pytest.raises(cluster.ClusterUnavailable) as again:
        jobs._connected()
    assert again.value is first.value
    jobs.close()


def test_a_scheduler_address_dask_cannot_use_names_the_setting() -> None:
    with pytest.raises(ValueError, match=r"OKBOOST_DASK_SCHEDULER .*tcp://host:8786"):
        cluster.ClusterJobs("http://127.0.0.1:8786", None, QueueQuotas())  # type: ignore[arg-type]


def test_a_worker_that_cannot_import_the_task_fails_the_job_with_how_to_fix_it_and_lives(
    dask_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker without okboost (no --preload to stop it at start-up) used to close on the
    task it could not unpickle, leaving the job queued; it now fails the job, saying what to
    install, and stays in the cluster."""
    missing = types.ModuleType("okboost_not_on_the_workers")  # importable here only
    exec("def train(progress):\n    return 'done'\n", missing.__dict__)
    monkeypatch.setitem(sys.modules, missing.__name__, missing)
    store = ModelStore(tmp_path)
    jobs = JobManager(store, dask_scheduler=dask_client.scheduler.address)
    model_id = new_id()
    store.create_record(model_record(model_id))
    job = jobs.submit(model_id, functools.partial(missing.train), total=1)
    assert jobs.wait(job.job_id, 120)
    job = jobs.get(job.job_id)
    assert job.state == "failed" and "--preload service.jobs.cluster" in (job.error or "")
    assert "No module named 'okboost_not_on_the_workers'" in (job.error or "")
    assert len(dask_client.nthreads()) == 2  # no worker closed
    jobs.shutdown()
