"""Job manager: states, cancellation, progress, restart recovery (no HTTP)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import service.jobs as jobs_module
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


# ------------------------------------------------------------------ process isolation
def _steps(reporter: Any) -> str:
    for i in range(1, 4):
        if reporter(Progress(i, 3, 1.0 / i)):
            return "cancelled"
    reporter.saving()
    return "done"


def _refuse(reporter: Any) -> str:
    raise ValueError("edges[0] = [0, 9] refers to vertex 9 but there are 4 training vertices")


def _die(reporter: Any) -> str:
    os._exit(3)


def _stuck(reporter: Any) -> str:
    time.sleep(60)  # like a long eigendecomposition: no callback to ask
    return "done"


def test_process_jobs_report_progress_errors_and_crashes(tmp_path: Path) -> None:
    store, jobs = _manager(tmp_path, isolation="process", max_workers=2)
    ok = jobs.submit(_model(store), _steps, total=3)
    bad = jobs.submit(_model(store), _refuse, total=1)
    assert jobs.wait(ok.job_id, 60) and jobs.wait(bad.job_id, 60)
    assert ok.state == "done" and ok.train_loss == [1.0, 0.5, 1 / 3] and ok.done == 3
    assert bad.state == "failed" and bad.error is not None and "refers to vertex 9" in bad.error
    assert isinstance(bad.exception, ValueError)  # the child's exception, for a 422
    dead = jobs.submit(_model(store), _die, total=1)
    assert jobs.wait(dead.job_id, 60)
    assert dead.state == "failed" and "exit code 3" in (dead.error or "")
    jobs.shutdown()


def test_process_job_that_cannot_stop_is_killed_on_cancel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs_module, "CANCEL_GRACE", 0.2)
    store, jobs = _manager(tmp_path, isolation="process")
    job = jobs.submit(_model(store), _stuck, total=1)
    for _ in range(200):
        if job.state == "running":
            break
        time.sleep(0.01)
    t0 = time.monotonic()
    jobs.cancel(job.job_id)
    assert jobs.wait(job.job_id, 10)
    assert job.state == "cancelled" and time.monotonic() - t0 < 5
    jobs.shutdown()
