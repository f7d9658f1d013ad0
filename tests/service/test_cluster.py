"""Cluster jobs' failure paths the live-replica tests (tests/e2e/test_replicas.py) cannot
provoke: a task the scheduler lost, a worker that does not see the store."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from svc_data import model_record

from service.jobs.manager import JobManager
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
    future = dask_client.submit(cluster.run_on_worker, len, elsewhere, new_id(), None, pure=False)
    error = future.exception()
    assert isinstance(error, cluster.StoreNotShared)
    assert "mount the replicas' store at the same path on every worker" in str(error)
