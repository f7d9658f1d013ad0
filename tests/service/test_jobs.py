"""Job manager: states, cancellation, progress, restart recovery (no HTTP)."""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import okcore
import service.jobs as jobs_module
from service.errors import Busy, NotFound
from service.jobs import RESTART_REASON, Job, JobManager
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


# ------------------------------------------------------------------ phases and ETA
def _phase(phase: str, total: int, phase_eta: float | None, done: int = 0) -> Any:
    return okcore.FitProgress(done=done, total=total, elapsed=0.0, phase=phase, phase_eta=phase_eta)


def test_eta_covers_set_up_phases_then_uses_the_per_tree_rate() -> None:
    job = Job(job_id=new_id(), model_id=new_id(), total=50, state="running", started=100.0)
    assert job._running_eta(100.0) is None
    job.report(_phase("output_space", 50, 30.0), now=100.0)
    assert job.phase == "output_space" and job.done == 0
    assert job._running_eta(110.0) == 20.0  # 30 s estimated, 10 s spent
    assert job._running_eta(145.0) == 0.0  # over the estimate: never negative
    job.report(_phase("binning", 50, None), now=137.0)
    assert job.phase == "binning" and job._running_eta(140.0) is None  # no estimate given
    job.report(_phase("binning", 50, 4.0), now=137.5)  # a later estimate for the same phase
    assert job.phase_started == 137.0 and job._running_eta(139.0) == 2.0
    # first tree at 141: the trees started at the latest after binning began (137)
    job.report(Progress(1, 50, 0.5), now=141.0)
    assert job.phase == "trees" and job._running_eta(141.0) == pytest.approx(4.0 * 49)
    # from the second tree on: the time between tree reports, set-up excluded
    job.report(Progress(3, 50, 0.4), now=142.0)
    assert job._running_eta(150.0) == pytest.approx(0.5 * 47)
    info = job.info()
    assert info["phase"] == "trees" and info["progress"]["done"] == 3
    assert "phase_started" not in info and "phase_eta" not in info


def test_trees_phase_reported_at_its_start_gives_an_exact_rate() -> None:
    job = Job(job_id=new_id(), model_id=new_id(), total=10, state="running", started=0.0)
    job.report(_phase("output_space", 10, 5.0), now=0.0)
    job.report(_phase("trees", 10, None), now=8.0)
    job.report(Progress(2, 10, 0.1), now=9.0)
    assert job._running_eta(9.0) == pytest.approx(0.5 * 8)


def test_without_phases_the_rate_runs_from_the_job_start() -> None:
    job = Job(job_id=new_id(), model_id=new_id(), total=4, state="running", started=10.0)
    job.report(Progress(1, 4, 0.3), now=12.0)
    assert job.phase == "trees" and job._running_eta(12.0) == pytest.approx(6.0)


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_jobs_show_the_phase_while_it_runs(tmp_path: Path, isolation: str) -> None:
    store, jobs = _manager(tmp_path, isolation=isolation)
    gate = tmp_path / "gate"
    job = jobs.submit(_model(store), functools.partial(_phased_task, str(gate)), total=5)
    seen = []
    for _ in range(600):
        info = jobs.get(job.job_id).info()
        seen.append(info["phase"])
        if info["phase"] == "binning":
            assert info["progress"]["done"] == 0 and info["eta"] is not None
            assert 0.0 <= info["eta"] <= 1000.0
            record = tmp_path / "jobs" / f"{job.job_id}.json"
            for _ in range(200):  # a new phase is written at once (just after it is shown)
                if json.loads(record.read_text()).get("phase") == "binning":
                    break
                time.sleep(0.01)
            assert json.loads(record.read_text())["phase"] == "binning"
            gate.touch()
            break
        time.sleep(0.02)
    assert "binning" in seen
    assert jobs.wait(job.job_id, 60)
    info = jobs.get(job.job_id).info()
    assert info["state"] == "done" and info["phase"] == "trees" and info["eta"] == 0.0
    assert info["progress"]["done"] == 5 and len(info["train_loss"]) == 5
    jobs.shutdown()


def _phased_task(gate: str, reporter: Any) -> str:
    reporter(_phase("output_space", 5, 2.0))
    reporter(_phase("binning", 5, 1000.0))
    for _ in range(3000):  # until the test has seen the binning phase
        if os.path.exists(gate):
            break
        time.sleep(0.01)
    for i in range(1, 6):
        reporter(Progress(i, 5, 1.0 / i))
    return "done"


def test_a_real_fit_reports_its_phases(tmp_path: Path) -> None:
    """A small okcore fit through the job manager: every report has a known phase, set-up
    phases (when okcore reports them) come first with done = 0, and the job ends in trees."""
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(60, 3)), rng.normal(size=(60, 2))
    reports: list[tuple[str, int]] = []

    def task(reporter: Any) -> str:
        def spy(p: Any) -> bool:
            reports.append((p.phase, p.done))
            return reporter(p)

        okcore.OKBoostRegressor(n_estimators=4, max_splits=3, random_state=0).fit(
            X, Y, callback=spy
        )
        return "done"

    store, jobs = _manager(tmp_path)
    job = jobs.submit(_model(store), task, total=4)
    assert jobs.wait(job.job_id, 60) and job.state == "done", job.error
    phases = [phase for phase, _ in reports]
    assert set(phases) <= {"output_space", "binning", "trees"} and phases[-1] == "trees"
    first_tree = phases.index("trees")
    assert all(done == 0 for _, done in reports[:first_tree])
    assert job.info()["phase"] == "trees" and job.done == 4
    jobs.shutdown()
