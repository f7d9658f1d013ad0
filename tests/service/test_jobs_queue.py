"""The job queue: where a queued job stands, and the worker slot kept for short jobs."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from svc_data import SMALL, Graph, TestClient, diffusion_request, make_settings, model_record

from service.app import create_app
from service.jobs.manager import JobManager
from service.store.ids import new_id
from service.store.model_store import ModelStore


def _model(store: ModelStore) -> str:
    mid = new_id()
    store.create_record(model_record(mid))
    return mid


class Gate:
    """A task that says when it starts and runs until it is let go."""

    def __init__(self, name: str, started: list[str]) -> None:
        self.name, self.started = name, started
        self.go = threading.Event()
        self.running = threading.Event()

    def __call__(self, progress: Any) -> str:
        self.started.append(self.name)
        self.running.set()
        assert self.go.wait(30)
        return "done"


def _submit(jobs: JobManager, store: ModelStore, gate: Gate, seconds: float) -> str:
    return jobs.submit(_model(store), gate, total=1, seconds=seconds).job_id


def test_a_short_job_runs_beside_a_long_one_and_long_ones_wait_their_turn(
    tmp_path: Path,
) -> None:
    store = ModelStore(tmp_path)
    jobs = JobManager(store, max_workers=1, short_job_seconds=60.0)
    started: list[str] = []
    gates = {n: Gate(n, started) for n in ("long1", "long2", "short1", "short2")}
    try:
        ids = {"long1": _submit(jobs, store, gates["long1"], 3600.0)}
        assert gates["long1"].running.wait(10)
        for name, seconds in (("long2", 3600.0), ("short1", 27.0), ("short2", 5.0)):
            ids[name] = _submit(jobs, store, gates[name], seconds)
        assert gates["short1"].running.wait(10)  # beside long1, before long2
        assert jobs.queue_position(ids["long1"]) is None  # running
        assert jobs.queue_position(ids["short1"]) is None
        assert jobs.queue_position(ids["long2"]) == 1
        assert jobs.queue_position(ids["short2"]) == 1  # next on the short slot
        assert jobs.get(ids["long2"]).state == "queued"
        gates["short1"].go.set()
        assert gates["short2"].running.wait(10)  # the short slot takes the next short job
        assert jobs.get(ids["long2"]).state == "queued"  # long1 still holds the pool
        gates["long1"].go.set()
        assert gates["long2"].running.wait(10)
        gates["short2"].go.set()
        gates["long2"].go.set()
        for job_id in ids.values():
            assert jobs.wait(job_id, 10) and jobs.get(job_id).state == "done"
        assert started == ["long1", "short1", "short2", "long2"]
    finally:
        for gate in gates.values():
            gate.go.set()
        jobs.shutdown()


def test_without_the_short_slot_jobs_run_in_order_and_say_where_they_stand(
    tmp_path: Path,
) -> None:
    store = ModelStore(tmp_path)
    jobs = JobManager(store, max_workers=1, short_job_seconds=0.0)
    started: list[str] = []
    gates = [Gate(str(i), started) for i in range(4)]
    try:
        ids = [_submit(jobs, store, gates[0], 3600.0)]
        assert gates[0].running.wait(10)
        ids += [_submit(jobs, store, g, 1.0) for g in gates[1:]]
        assert [jobs.queue_position(i) for i in ids] == [None, 1, 2, 3]
        jobs.cancel(ids[1])  # a cancelled job leaves the line
        assert [jobs.queue_position(i) for i in ids] == [None, None, 1, 2]
        for gate in gates:
            gate.go.set()
        for job_id in ids[2:]:
            assert jobs.wait(job_id, 10)
        assert started == ["0", "2", "3"]
        assert jobs.queue_position(ids[3]) is None  # done
    finally:
        for gate in gates:
            gate.go.set()
        jobs.shutdown()


def test_a_job_without_an_estimate_is_never_short(tmp_path: Path) -> None:
    store = ModelStore(tmp_path)
    jobs = JobManager(store, max_workers=1, short_job_seconds=60.0)
    started: list[str] = []
    first, second = Gate("first", started), Gate("second", started)
    try:
        a = _submit(jobs, store, first, 3600.0)
        assert first.running.wait(10)
        b = jobs.submit(_model(store), second, total=1).job_id  # no seconds
        assert jobs.queue_position(b) == 1 and not second.running.wait(0.3)
        first.go.set()
        second.go.set()
        assert jobs.wait(a, 10) and jobs.wait(b, 10)
    finally:
        first.go.set()
        second.go.set()
        jobs.shutdown()


def test_get_job_says_where_a_queued_job_stands(tmp_path: Path, graph: Graph) -> None:
    settings = make_settings(tmp_path, max_workers=1, short_job_seconds=0.0)
    with TestClient(create_app(settings)) as c:
        body = diffusion_request(graph, wait=False, params={**SMALL, "n_estimators": 20_000})
        first, second = (c.post("/train", json=body).json() for _ in range(2))
        info = c.get(second["job_url"]).json()
        assert info["state"] == "queued" and info["queue_position"] == 1
        assert c.get(first["job_url"]).json()["queue_position"] is None
        listed = {j["job_id"]: j for j in c.get("/jobs").json()["jobs"]}
        assert listed[second["job_id"]]["queue_position"] == 1
        for job in (second, first):
            assert c.delete(job["job_url"]).status_code == 200
