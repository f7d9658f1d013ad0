"""Job manager: states, cancellation, progress, restart recovery (no HTTP)."""

from __future__ import annotations

import errno
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from svc_data import model_record

import okcore
import service.jobs.manager as jobs_module
import service.jobs.records as job_records
from service.errors import Busy, JobRecordInvalid, NotFound, ShuttingDown
from service.jobs.manager import RESTART_REASON, JobManager
from service.jobs.progress import CURVE_POINTS, PhasePlan, Progress
from service.jobs.records import Job, JobRecords, QuarantinedJob
from service.store.ids import new_id
from service.store.model_store import ModelStore


class Tree:
    """What okcore reports after a tree (a FitProgress without its phase)."""

    def __init__(self, done: int, total: int, loss: float) -> None:
        self.done, self.total, self.elapsed = done, total, 0.0
        self.train_loss, self.val_loss = loss, None


def _manager(tmp_path: Path, **kw: Any) -> tuple[ModelStore, JobManager]:
    store = ModelStore(tmp_path)
    return store, JobManager(store, **kw)


def _model(store: ModelStore) -> str:
    mid = new_id()
    store.create_record(model_record(mid))
    return mid


def test_done_with_progress_and_loss(tmp_path: Path) -> None:
    store, jobs = _manager(tmp_path)

    def task(progress: Any) -> str:
        for i in range(1, 4):
            assert progress(Tree(i, 3, 1.0 / i)) is False
        return "done"

    job = jobs.submit(_model(store), task, total=3)
    assert jobs.wait(job.job_id, 5)
    info = jobs.get(job.job_id).info()
    assert info["state"] == "done" and info["progress"] == {
        "done": 3,
        "total": 3,
        "fraction": 1.0,
        "unit": "tree",
    }
    assert info["last_train_loss"] == 1 / 3 and info["eta"] == 0.0 and "train_loss" not in info
    curves = jobs.get(job.job_id).info(curves=True)
    assert curves["train_loss"] == [1.0, 0.5, 1 / 3] and curves["curve_step"] == 1
    on_disk = json.loads((tmp_path / "jobs" / f"{job.job_id}.json").read_text())
    assert on_disk["state"] == "done" and on_disk["done"] == 3
    jobs.shutdown()


def test_an_answer_is_one_record_even_while_the_final_one_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job's state flips to done a moment before its final record is on disk: an answer
    read then is the previous record whole (still running), never "done" with the progress
    of a tree ago (what made a client's end-to-end test fail now and then)."""
    store, jobs = _manager(tmp_path)
    writing_final, release = threading.Event(), threading.Event()
    write = job_records.write_json_atomic

    def slow_final_write(path: Path, record: dict[str, Any]) -> None:
        if record["state"] == "done":
            writing_final.set()
            assert release.wait(5)
        write(path, record)

    monkeypatch.setattr(job_records, "write_json_atomic", slow_final_write)

    def task(progress: Any) -> str:
        for i in range(1, 51):  # trees faster than PERSIST_EVERY: the last one is not written
            progress(Tree(i, 50, 1.0 / i))
        return "done"

    job = jobs.submit(_model(store), task, total=50)
    assert writing_final.wait(5)
    during = job.info()  # the job as GET /jobs/{id} holds it (found before the flip)
    release.set()
    assert jobs.wait(job.job_id, 5)
    after = jobs.get(job.job_id).info()
    assert during["state"] == "running" and during["finished"] is None
    assert during["progress"]["done"] < 50
    assert after["state"] == "done" and after["progress"]["done"] == 50


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
            if progress(Tree(i, 10_000, 1.0)):
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


def test_restart_fails_only_the_jobs_of_a_dead_runner(tmp_path: Path) -> None:
    """Replicas share a store: a replica starting up leaves the jobs of live replicas (a
    live process on this host, or another host) and of the Dask cluster alone."""
    store = ModelStore(tmp_path)
    (tmp_path / "jobs").mkdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    host = socket.gethostname()
    runners = {
        "dead replica": {"kind": "local", "host": host, "pid": gone.pid},
        "live replica": {"kind": "local", "host": host, "pid": os.getppid()},
        "other host": {"kind": "local", "host": host + "-elsewhere", "pid": 1},
        "cluster": {"kind": "dask", "key": "okboost-train-x"},
    }
    ids = {}
    for name, runner in runners.items():
        ids[name] = job_id = new_id()
        record = {"job_id": job_id, "model_id": _model(store), "total": 5, "state": "running",
                  "created": 0.0, "runner": runner}  # fmt: skip
        (tmp_path / "jobs" / f"{job_id}.json").write_text(json.dumps(record))
    jobs = JobManager(store)
    states = {name: jobs.get(job_id).state for name, job_id in ids.items()}
    assert states == {"dead replica": "failed", "live replica": "running",
                      "other host": "running", "cluster": "running"}  # fmt: skip
    jobs.shutdown()


def _abandoned_record(job_id: str, model_id: str, **fields: Any) -> dict[str, Any]:
    """The record of a job left running by a server that was killed (its runner is gone)."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    runner = {"kind": "local", "host": socket.gethostname(), "pid": gone.pid}
    record = {"job_id": job_id, "model_id": model_id, "total": 50, "state": "running",
              "created": 100.0, "started": 101.0, "updated": 130.0, "runner": runner}  # fmt: skip
    return {**record, **fields}


def _write_job(tmp_path: Path, record: dict[str, Any]) -> None:
    (tmp_path / "jobs").mkdir(exist_ok=True)
    (tmp_path / "jobs" / f"{record['job_id']}.json").write_text(json.dumps(record))


def test_a_job_ended_by_a_restart_keeps_its_progress_and_ends_when_last_heard(
    tmp_path: Path,
) -> None:
    """Its phase, unit, count and loss curves as last written; its end when it was last
    heard of, not when the server came back (the downtime is no training time)."""
    store = ModelStore(tmp_path)
    job_id, mid = new_id(), _model(store)
    _write_job(tmp_path, _abandoned_record(job_id, mid, done=7, phase="trees", unit="tree",
               train_loss=[3.0, 2.0, 1.0], last_train_loss=1.0, curve_step=3))  # fmt: skip
    jobs = JobManager(store)
    info = jobs.get(job_id).info(curves=True)
    assert info["state"] == "failed" and info["error"] == RESTART_REASON
    assert (info["phase"], info["progress"]["done"], info["progress"]["unit"]) == (
        "trees",
        7,
        "tree",
    )
    assert info["train_loss"] == [3.0, 2.0, 1.0] and info["last_train_loss"] == 1.0
    assert info["finished"] == 130.0 and info["elapsed"] == 29.0
    on_disk = json.loads((tmp_path / "jobs" / f"{job_id}.json").read_text())
    assert on_disk["phase"] == "trees" and on_disk["train_loss"] == [3.0, 2.0, 1.0]
    jobs.shutdown()


def test_a_model_saved_before_its_server_died_makes_its_job_done(tmp_path: Path) -> None:
    """The training process finished its save (the model's record says ready only once all
    its files are in place) but its server was killed before it heard: the model is whole,
    and its job says done, not failed."""
    store = ModelStore(tmp_path)
    job_id, mid = new_id(), _model(store)
    store.update_record(mid, status="ready")
    _write_job(tmp_path, _abandoned_record(job_id, mid, done=40))
    jobs = JobManager(store)
    job = jobs.get(job_id)
    assert job.state == "done" and job.error is None
    assert job.info()["progress"]["done"] == 50 and store.read_record(mid)["status"] == "ready"
    jobs.shutdown()


def test_a_restart_removes_the_save_its_dead_job_left(tmp_path: Path) -> None:
    """A server killed while its training process saved the model leaves the files written
    so far: the restarted server removes them at once (the model's job is over), and leaves
    the writes of models whose jobs still run (another replica's) alone."""
    store = ModelStore(tmp_path)
    job_id, mid, other = new_id(), _model(store), _model(store)
    half = tmp_path / f".tmp-{mid}-x1y2"
    (half / "estimator").mkdir(parents=True)
    (half / "inputs.npy").write_bytes(b"\x93NUMPY half")
    in_progress = tmp_path / f".tmp-{other}-a3b4"
    in_progress.mkdir()
    _write_job(tmp_path, _abandoned_record(job_id, mid))
    jobs = JobManager(store)
    assert jobs.get(job_id).state == "failed"
    assert not half.exists() and in_progress.exists()
    jobs.shutdown()


def _full_disk(*_: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def _record_on_disk(tmp_path: Path, job_id: str) -> dict[str, Any]:
    return json.loads((tmp_path / "jobs" / f"{job_id}.json").read_text())


def test_a_job_that_ends_on_a_full_disk_is_answered_and_written_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its model said "training" for good when the disk filled before the job's end was
    written: now the job and its model are answered as ended, and their records are written
    once the disk has room."""
    store, jobs = _manager(tmp_path)
    mid = _model(store)

    def fills_the_disk(progress: Any) -> str:
        progress(Tree(1, 2, 1.0))
        monkeypatch.setattr(os, "fsync", _full_disk)
        raise ValueError("no space for the model")

    job = jobs.submit(mid, fills_the_disk, total=2)
    assert jobs.wait(job.job_id, 30)
    assert jobs.get(job.job_id).state == "failed"
    assert _record_on_disk(tmp_path, job.job_id)["state"] == "running"
    assert store.read_record(mid)["status"] == "training"
    view = jobs.model_view(store.read_record(mid))
    assert view["status"] == "failed" and view["error"] == "no space for the model"
    monkeypatch.undo()  # the disk has room again
    assert jobs.get(job.job_id).state == "failed"
    assert _record_on_disk(tmp_path, job.job_id)["state"] == "failed"
    assert store.read_record(mid)["status"] == "failed"
    jobs.shutdown()


def test_a_server_starts_on_a_full_disk_with_a_job_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server killed with a job running, restarted on a full disk, refused to start (the
    interrupted job's record could not be written): the user could not even delete models
    to make room. It starts, answers the job as failed, and writes it once it can."""
    store = ModelStore(tmp_path)
    job_id, mid = new_id(), _model(store)
    _write_job(tmp_path, _abandoned_record(job_id, mid))
    monkeypatch.setattr(os, "fsync", _full_disk)
    jobs = JobManager(store)
    assert jobs.get(job_id).state == "failed" and jobs.get(job_id).error == RESTART_REASON
    assert jobs.model_view(store.read_record(mid))["status"] == "failed"
    assert [j.state for j in jobs.all_jobs()] == ["failed"]
    monkeypatch.undo()
    jobs.all_jobs()
    assert _record_on_disk(tmp_path, job_id)["state"] == "failed"
    assert store.read_record(mid)["status"] == "failed"
    jobs.shutdown()


def test_a_server_asked_to_stop_stops_its_jobs_at_once(tmp_path: Path) -> None:
    """SIGTERM used to wait for a "wait": true request until OKBOOST_WAIT_TIMEOUT while its
    job trained on: stop_jobs (called on the signal) fails the queued jobs and stops the
    running ones after their current tree, each failing with a 503 for whoever waits."""
    store, jobs = _manager(tmp_path, max_workers=1)
    started = threading.Event()

    def endless(progress: Any) -> str:
        started.set()
        for i in range(1, 10**9):
            if progress(Tree(i, 10**9, 1.0)):
                return "cancelled"
            time.sleep(0.001)
        return "done"

    running = jobs.submit(_model(store), endless, total=10**9)
    assert started.wait(30)
    queued = jobs.submit(_model(store), endless, total=10**9)
    jobs.stop_jobs()
    for job in (running, queued):
        assert jobs.wait(job.job_id, 60)  # a hang guard: the job would run for ever
        assert job.state == "failed" and job.error == jobs_module.SHUTDOWN_REASON
        assert isinstance(job.exception, ShuttingDown) and job.exception.status == 503
        assert store.read_record(job.model_id)["status"] == "failed"
    jobs.shutdown()


def test_a_queued_job_has_an_eta(tmp_path: Path) -> None:
    """A queued job's ETA was null: now the running job's ETA, then the estimates of the
    jobs ahead, then its own."""
    store, jobs = _manager(tmp_path, max_workers=1)
    gate, started = threading.Event(), threading.Event()

    def blocked(progress: Any) -> str:
        started.set()
        gate.wait(60)
        return "done"

    plan = PhasePlan(factor=10.0, setup=5.0, per_tree=1.0, save=2.0)
    running = jobs.submit(_model(store), blocked, total=100, plan=plan)
    assert started.wait(30)
    ahead = jobs.submit(_model(store), blocked, total=100, plan=plan)
    mine = jobs.submit(_model(store), blocked, total=10, plan=plan)
    assert jobs.queued_eta(running.job_id) is None  # running: its own ETA is answered
    busy = jobs.get(running.job_id).info()["eta"]
    first, second = jobs.queued_eta(ahead.job_id), jobs.queued_eta(mine.job_id)
    assert busy is not None and busy > 60.0 and first is not None and second is not None
    # the running job's ETA, then 117 s for the job ahead, then 27 s its own (the running
    # one counts down between the calls)
    assert first == pytest.approx(busy + 117.0, abs=5.0)
    assert second == pytest.approx(busy + 117.0 + 27.0, abs=5.0)
    gate.set()
    for job in (running, ahead, mine):
        assert jobs.wait(job.job_id, 30)
    assert jobs.queued_eta(mine.job_id) is None
    jobs.shutdown()


def test_a_job_is_cancelled_through_another_replica(tmp_path: Path) -> None:
    store, here = _manager(tmp_path)
    there = JobManager(ModelStore(tmp_path))  # a second replica over the same store
    started = threading.Event()

    def slow(progress: Any) -> str:
        started.set()
        for i in range(1, 100_000):
            if progress(Tree(i, 100_000, 1.0)):
                return "cancelled"
            time.sleep(0.001)
        return "done"

    job = here.submit(_model(store), slow, total=100_000)
    assert started.wait(5)
    assert there.cancel(job.job_id).state == "running"  # asked through its stop file
    assert here.wait(job.job_id, 30) and job.state == "cancelled"
    assert there.get(job.job_id).state == "cancelled"
    assert not list((tmp_path / "jobs").glob("*.stop"))
    here.shutdown()
    there.shutdown()


# ------------------------------------------------------------------ process isolation
def _steps(reporter: Any) -> str:
    for i in range(1, 4):
        if reporter(Tree(i, 3, 1.0 / i)):
            return "cancelled"
    reporter.saving()
    return "done"


def _refuse(reporter: Any) -> str:
    raise ValueError("edges[0] = [0, 9] refers to vertex 9 but there are 4 training vertices")


def _die(reporter: Any) -> str:
    os._exit(3)


def _stuck(reporter: Any) -> str:
    time.sleep(3600)  # like a long eigendecomposition: no callback to ask
    return "done"


def test_process_jobs_report_progress_errors_and_crashes(tmp_path: Path) -> None:
    store, jobs = _manager(tmp_path, isolation="process", max_workers=2)
    ok = jobs.submit(_model(store), _steps, total=3)
    bad = jobs.submit(_model(store), _refuse, total=1)
    assert jobs.wait(ok.job_id, 60) and jobs.wait(bad.job_id, 60)
    assert ok.state == "done" and ok.progress.train_loss == [1.0, 0.5, 1 / 3] and ok.done == 3
    assert bad.state == "failed" and bad.error is not None and "refers to vertex 9" in bad.error
    assert isinstance(bad.exception, ValueError)  # the child's exception, for a 422
    dead = jobs.submit(_model(store), _die, total=1)
    assert jobs.wait(dead.job_id, 60)
    assert dead.state == "failed" and "exited unexpectedly (exit code 3)" in (dead.error or "")
    jobs.shutdown()


def _killed_while_saving(root: Path, model_id: str, reporter: Any) -> str:
    """A training process killed (the OOM killer, kill -9) half-way through its save."""
    half = Path(tempfile.mkdtemp(prefix=f".tmp-{model_id}-", dir=root))
    (half / "inputs.npy").write_bytes(b"\x93NUMPY half")
    os.kill(os.getpid(), signal.SIGKILL)
    return "done"


def test_a_training_process_killed_while_saving_leaves_nothing(tmp_path: Path) -> None:
    """Its half-written files stayed in the store until a restart an hour later; the job's
    error said only "RuntimeError: ... (exit code -9)"."""
    store, jobs = _manager(tmp_path, isolation="process")
    mid = _model(store)
    job = jobs.submit(mid, functools.partial(_killed_while_saving, tmp_path, mid), total=1)
    assert jobs.wait(job.job_id, 120)
    assert job.state == "failed"
    assert job.error is not None and job.error.startswith(
        "the training process was killed by SIGKILL"
    )
    assert not list(tmp_path.glob(".tmp-*"))
    assert store.read_record(mid)["status"] == "failed"
    jobs.shutdown()


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_training_process_ends_with_its_service() -> None:
    """A service killed with kill -9 left its training process running (its fork server
    waits for it): it saved its model after the restarted service had failed the job, or
    ran on for minutes unwatched. It now ends when the reader of its report pipe is gone."""
    script = (
        "import multiprocessing, os, time\n"
        "from service.jobs.process import die_with_service\n"
        "receiver, sender = multiprocessing.Pipe(duplex=False)\n"
        "if os.fork() == 0:\n"
        "    receiver.close()  # as a training process: only the service reads the pipe\n"
        "    die_with_service(sender)\n"
        "    print(os.getpid(), flush=True)\n"
        "    time.sleep(3600)  # a phase that reports nothing\n"
        "    os._exit(0)\n"
        "sender.close()\n"
        "time.sleep(3600)\n"
    )
    root = Path(__file__).resolve().parents[2]
    service = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, cwd=root)
    assert service.stdout is not None
    child = int(service.stdout.readline())
    assert not _ended(child)
    service.kill()
    service.wait()
    for _ in range(600):  # a hang guard: the child would sleep for an hour
        if _ended(child):
            break
        time.sleep(0.05)
    assert _ended(child)


def _ended(pid: int) -> bool:
    """Whether a process is gone or a zombie (ended, not reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


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
    jobs.cancel(job.job_id)
    # the task would sleep for an hour: ending at all (the wait is a hang guard, not a speed
    # check) means the process was killed
    assert jobs.wait(job.job_id, 120)
    assert job.state == "cancelled"
    jobs.shutdown()


# ------------------------------------------------------------------ phases and ETA
def _phase(phase: str, total: int, phase_eta: float | None, done: int = 0) -> Any:
    return okcore.FitProgress(done=done, total=total, elapsed=0.0, phase=phase, phase_eta=phase_eta)


PLAN = PhasePlan(factor=30.0, setup=4.0, per_tree=0.5)


def test_eta_covers_every_phase() -> None:
    """In a set-up phase: what is left of it plus the estimated phases still to come."""
    p = Progress(total=50, plan=PLAN)
    assert p.eta(100.0, started=100.0) == pytest.approx(30 + 4 + 50 * 0.5)  # nothing reported
    p.report(_phase("output_space", 50, 30.0), now=100.0)
    assert p.phase == "output_space" and p.done == 0
    assert p.eta(110.0, 100.0) == pytest.approx(20 + 4 + 25)  # 30 s estimated, 10 s spent
    # past two thirds of its estimate, the phase counts as two thirds done: half the time
    # spent is left (an ETA stuck at the trees' time would say nothing while it overruns)
    assert p.eta(125.0, 100.0) == pytest.approx(12.5 + 4 + 25)
    assert p.eta(160.0, 100.0) == pytest.approx(30 + 4 + 25)
    p.report(_phase("binning", 50, None), now=137.0)
    assert p.eta(138.0, 100.0) == pytest.approx(3 + 25)  # okcore gave none: the plan's 4 s
    p.report(_phase("binning", 50, 3.0), now=137.5)  # okcore's own estimate comes first
    assert p.phase_started == 137.0 and p.eta(138.0, 100.0) == pytest.approx(2 + 25)
    p.report(Tree(1, 50, 0.5), now=141.0)  # no interval measured yet: the estimate per tree
    assert p.phase == "trees" and p.eta(141.0, 100.0) == pytest.approx(0.5 * 49)


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_job_saving_its_model_says_so_with_an_eta(tmp_path: Path, isolation: str) -> None:
    """After its last tree a job showed the phase "trees", an ETA of 0 and the count of
    the last record written while its model was written, for as long as that took."""
    store, jobs = _manager(tmp_path, isolation=isolation)
    gate = tmp_path / "saved"
    plan = PhasePlan(factor=1.0, setup=1.0, per_tree=0.1, save=60.0)
    job = jobs.submit(_model(store), functools.partial(_saves_until, gate), total=3, plan=plan)
    for _ in range(1200):  # a hang guard
        info = jobs.get(job.job_id).info()
        if info["phase"] == "saving":
            break
        time.sleep(0.05)
    assert info["state"] == "running" and info["phase"] == "saving"
    assert info["progress"]["done"] == 3 and info["eta"] is not None and info["eta"] > 0
    assert _record_on_disk(tmp_path, job.job_id)["phase"] == "saving"
    gate.touch()
    assert jobs.wait(job.job_id, 60) and jobs.get(job.job_id).state == "done"
    jobs.shutdown()


def _saves_until(gate: Path, reporter: Any) -> str:
    """Three trees, then a save that lasts until ``gate`` exists."""
    for i in range(1, 4):
        reporter(Tree(i, 3, 1.0 / i))
    reporter.saving()
    while not gate.exists():
        time.sleep(0.02)
    return "done"


def test_tree_time_blends_the_estimate_with_the_median_of_measured_trees() -> None:
    p = Progress(total=100, plan=PLAN)
    p.report(Tree(1, 100, 1.0), now=0.0)
    p.report(Tree(2, 100, 1.0), now=2.0)  # one tree measured: 2 s
    assert p.per_tree() == pytest.approx((2 * 0.5 + 1 * 2.0) / 3)
    for done in range(3, 23):  # 20 more at 2 s each
        p.report(Tree(done, 100, 1.0), now=2.0 * (done - 1))
    assert p.per_tree() == pytest.approx((2 * 0.5 + 21 * 2.0) / 23)
    assert p.eta(42.0, 0.0) == pytest.approx(p.per_tree() * 78)  # at the last report


def test_one_slow_tree_does_not_swing_the_eta() -> None:
    """The ETA was once 9x off at 2 of 50 trees. A tree slowed once (a compilation,
    the machine's other load) counts as one interval of many: the median ignores it."""
    p = Progress(total=50, plan=PhasePlan(factor=1.0, setup=0.0, per_tree=2.0))
    now = 0.0
    for done in range(1, 11):
        now += 20.0 if done == 2 else 2.0
        p.report(Tree(done, 50, 1.0), now=now)
    assert p.per_tree() == pytest.approx(2.0)


def test_without_an_estimate_the_eta_is_measured_only() -> None:
    p = Progress(total=4)
    p.report(_phase("output_space", 4, None), now=0.0)
    assert p.eta(1.0, 0.0) is None  # nothing known
    p.report(_phase("trees", 4, None), now=8.0)  # the trees phase announced at its start
    p.report(Tree(1, 4, 0.3), now=9.5)
    assert p.eta(9.5, 0.0) == pytest.approx(1.5 * 3)


def test_job_records_stay_small_and_never_lag_what_is_reported(tmp_path: Path) -> None:
    """10,000 trees: the record on disk holds at most CURVE_POINTS points of the curve (a
    few KB), and every answer is the record as written (never ahead of the disk)."""
    store, jobs = _manager(tmp_path)
    seen: list[tuple[int, int]] = []
    record_path: list[Path] = []

    def task(reporter: Any) -> str:
        for i in range(1, 10_001):
            reporter(Tree(i, 10_000, 1.0 / i))
            if i % 500 == 0:
                info = jobs.get(job_id).info()
                on_disk = json.loads(record_path[0].read_text())
                seen.append((info["progress"]["done"], on_disk["done"]))
        return "done"

    job_id = new_id()
    record_path.append(tmp_path / "jobs" / f"{job_id}.json")
    job = jobs.submit(_model(store), task, total=10_000, job_id=job_id)
    assert jobs.wait(job.job_id, 60) and job.state == "done"
    assert seen and all(reported == written for reported, written in seen)
    record = record_path[0].read_text()
    assert len(record) < 8_000, len(record)
    assert json.loads(record)["curve_step"] == 50
    assert len(job.info(curves=True)["train_loss"]) == 10_000  # whole while the server runs
    jobs.shutdown()
    back = JobManager(store).get(job.job_id)  # as after a restart: the sampled curve
    curves = back.info(curves=True)
    assert curves["curve_step"] == 50 and len(curves["train_loss"]) == CURVE_POINTS
    assert curves["train_loss"][0] == pytest.approx(1 / 50, rel=1e-5)


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_jobs_show_the_phase_while_it_runs(tmp_path: Path, isolation: str) -> None:
    store, jobs = _manager(tmp_path, isolation=isolation)
    gate = tmp_path / "gate"
    job = jobs.submit(_model(store), functools.partial(_phased_task, str(gate)), total=5, plan=PLAN)
    seen = []
    for _ in range(6000):  # the training process server may start slowly on a loaded machine
        info = jobs.get(job.job_id).info()
        seen.append(info["phase"])
        if info["phase"] == "binning":
            assert info["progress"]["done"] == 0 and info["eta"] is not None
            assert 0.0 <= info["eta"] <= 1000.0 + 5 * PLAN.per_tree
            record = tmp_path / "jobs" / f"{job.job_id}.json"
            assert json.loads(record.read_text())["phase"] == "binning"  # written before shown
            gate.touch()
            break
        time.sleep(0.02)
    assert "binning" in seen
    assert jobs.wait(job.job_id, 60)
    info = jobs.get(job.job_id).info(curves=True)
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
        reporter(Tree(i, 5, 1.0 / i))
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


# ------------------------------------------------------------------ memory budget
def _allocate(n_bytes: int, reporter: Any) -> str:
    block = np.ones(n_bytes // 8)  # touched: resident, as a real fit's arrays are
    reporter(Tree(1, 1, float(block[-1])))
    return "done"


def test_a_training_process_past_its_memory_budget_fails_the_job(tmp_path: Path) -> None:
    """Not the OOM killer: the allocation fails inside the job, which names the budget."""
    budget = 256 * 1024 * 1024
    store, jobs = _manager(tmp_path, isolation="process", memory_budget=budget)
    small = jobs.submit(_model(store), functools.partial(_allocate, budget // 4), total=1)
    big = jobs.submit(_model(store), functools.partial(_allocate, 4 * budget), total=1)
    assert jobs.wait(small.job_id, 60) and jobs.wait(big.job_id, 60)
    assert small.state == "done"
    assert big.state == "failed" and big.error is not None
    assert "needed more than its memory budget of 0.268 GB (OKBOOST_MAX_JOB_MEMORY)" in big.error
    assert store.read_record(big.model_id)["status"] == "failed"
    jobs.shutdown()


def test_tree_times_come_from_the_fits_clock() -> None:
    """Reports drained in a burst by a busy server arrive 1 ms apart; the fit says 2 s."""
    p = Progress(total=10)
    for done in range(1, 6):
        tree = Tree(done, 10, 1.0)
        tree.elapsed = 2.0 * done
        p.report(tree, now=100.0 + 0.001 * done)
    assert p.per_tree() == pytest.approx(2.0)


def test_a_job_is_answered_as_its_last_record_says(tmp_path: Path) -> None:
    """A job finishing in another thread gets its new state before its final record is
    written: until then an answer pairs the previous record's state with its progress."""
    job = Job(job_id=new_id(), model_id=new_id(), progress=Progress(total=50))
    JobRecords(ModelStore(tmp_path)).persist(job)
    job.state, job.finished = "done", time.time()  # what finish() sets before writing
    job.progress.done = 50
    info = job.info()
    assert info["state"] == "queued" and info["finished"] is None
    assert info["progress"]["done"] == 0


def test_an_invalid_job_record_is_reported_not_a_500(tmp_path: Path) -> None:
    store, jobs = _manager(tmp_path)
    done = [jobs.submit(_model(store), lambda progress: "done", total=1) for _ in range(2)]
    for job in done:
        assert jobs.wait(job.job_id, 5)
    jobs.shutdown()
    path = tmp_path / "jobs" / f"{done[1].job_id}.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "created": "x"}))
    jobs = JobManager(store)  # a fresh replica: every record from disk
    listed = {job.job_id: job for job in jobs.all_jobs()}
    assert listed.keys() == {done[0].job_id, done[1].job_id}
    assert listed[done[0].job_id].state == "done"
    bad = listed[done[1].job_id]
    assert isinstance(bad, QuarantinedJob) and bad.state == "invalid"
    assert bad.model_id == done[1].model_id
    assert "created: Input should be a valid number" in bad.error
    with pytest.raises(JobRecordInvalid, match="created: Input should be a valid number"):
        jobs.get(done[1].job_id)
    assert jobs.recover() == []  # never resumed
    jobs.shutdown()
