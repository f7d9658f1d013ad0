"""Job manager: states, cancellation, progress, restart recovery (no HTTP)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from service.errors import Busy, NotFound
from service.jobs import RESTART_REASON, JobManager
from service.store import ModelStore, new_id


class Progress:
    def __init__(self, done: int, total: int, loss: float) -> None:
        self.done, self.total, self.elapsed = done, total, 0.0
        self.train_loss, self.val_loss = loss, None


def _manager(tmp_path: Path, **kw: Any) -> tuple[ModelStore, JobManager]:
    store = ModelStore(tmp_path)
    return store, JobManager(store, **kw)


def _model(store: ModelStore) -> str:
    mid = new_id()
    store.create_record({"model_id": mid, "status": "training", "created": 0.0})
    return mid


def test_done_with_progress_and_loss(tmp_path: Path) -> None:
    store, jobs = _manager(tmp_path)

    def task(progress: Any) -> str:
        for i in range(1, 4):
            assert progress(Progress(i, 3, 1.0 / i)) is False
        return "done"

    job = jobs.submit(_model(store), task, total=3)
    assert jobs.wait(job.job_id, 5)
    info = jobs.get(job.job_id).info()
    assert info["state"] == "done" and info["progress"] == {"done": 3, "total": 3, "fraction": 1.0}
    assert info["train_loss"] == [1.0, 0.5, 1 / 3] and info["eta"] == 0.0
    on_disk = json.loads((tmp_path / "jobs" / f"{job.job_id}.json").read_text())
    assert on_disk["state"] == "done"
    jobs.shutdown()


def test_failure_keeps_the_reason(tmp_path: Path) -> None:
    store, jobs = _manager(tmp_path)

    def task(progress: Any) -> str:
        raise ValueError("gram is not positive semi-definite")

    mid = _model(store)
    job = jobs.submit(mid, task, total=1)
    jobs.wait(job.job_id, 5)
    assert job.state == "failed" and job.error == "gram is not positive semi-definite"
    assert store.read_record(mid)["status"] == "failed"
    jobs.shutdown()


def test_cancel_queued_and_running(tmp_path: Path) -> None:
    store, jobs = _manager(tmp_path, max_workers=1)
    started = threading.Event()

    def slow(progress: Any) -> str:
        started.set()
        for i in range(1, 10_000):
            if progress(Progress(i, 10_000, 1.0)):
                return "cancelled"
            time.sleep(0.001)
        return "done"

    running = jobs.submit(_model(store), slow, total=10_000)
    queued = jobs.submit(_model(store), slow, total=10_000)
    assert started.wait(5)
    assert jobs.cancel(queued.job_id).state == "cancelled"
    jobs.cancel(running.job_id)
    assert jobs.wait(running.job_id, 5)
    assert running.state == "cancelled" and 0 < running.done < 10_000
    assert store.read_record(running.model_id)["status"] == "cancelled"
    jobs.shutdown()


def test_queue_is_bounded(tmp_path: Path) -> None:
    store, jobs = _manager(tmp_path, max_workers=1, max_queued=1)
    gate = threading.Event()

    def blocked(progress: Any) -> str:
        gate.wait(5)
        return "done"

    jobs.submit(_model(store), blocked, total=1)
    time.sleep(0.05)
    jobs.submit(_model(store), blocked, total=1)
    with pytest.raises(Busy, match="already waiting"):
        jobs.submit(_model(store), blocked, total=1)
    gate.set()
    jobs.shutdown()


def test_restart_marks_interrupted_jobs_failed(tmp_path: Path) -> None:
    store = ModelStore(tmp_path)
    (tmp_path / "jobs").mkdir()
    mids = [_model(store) for _ in range(2)]
    ids = [new_id() for _ in range(3)]
    for job_id, mid, state in zip(
        ids, [*mids, mids[0]], ["running", "queued", "done"], strict=True
    ):
        (tmp_path / "jobs" / f"{job_id}.json").write_text(
            json.dumps(
                {"job_id": job_id, "model_id": mid, "total": 5, "state": state, "created": 0.0}
            )
        )
    jobs = JobManager(store)
    assert [jobs.get(i).state for i in ids] == ["failed", "failed", "done"]
    assert jobs.get(ids[0]).error == RESTART_REASON
    for mid in mids:
        record = store.read_record(mid)
        assert record["status"] == "failed" and record["error"] == RESTART_REASON
    with pytest.raises(NotFound):
        jobs.get("../../etc")
    jobs.shutdown()
