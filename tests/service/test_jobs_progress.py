"""Progress and ETA of every phase: never frozen while nothing is reported, counted from the
work done in any phase a fit reports, and advancing through every one-sided fit of a
bipartite job and every inner fit of a cross-validating one."""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from svc_data import SMALL, bipartite_network, model_record, vector_data

import okcore
from service.http.bodies import validate
from service.jobs.manager import JobManager
from service.jobs.progress import PhasePlan, Progress
from service.schemas.api import TrainRequest
from service.schemas.bipartite import BipartiteTrainRequest
from service.store.ids import new_id
from service.store.model_store import ModelStore
from service.training.bipartite import plan_bipartite, run_bipartite
from service.training.fit import plan_training, run_training


def _tree(done: int, total: int, **kw: Any) -> okcore.FitProgress:
    return okcore.FitProgress(done=done, total=total, elapsed=0.0, train_loss=1.0, **kw)


def test_the_eta_counts_down_between_reports_and_grows_past_the_time_of_one_tree() -> None:
    p = Progress(total=10, plan=PhasePlan(factor=0.0, setup=0.0, per_tree=2.0))
    p.report(_tree(5, 10), now=100.0)
    etas = [p.eta(100.0 + t, None) for t in (0.0, 1.0, 2.0, 10.0, 100.0)]
    assert etas[0] == pytest.approx(10.0)  # 5 trees of 2 s
    assert etas[1] == pytest.approx(9.0)  # 1 s of the tree under way spent
    # past the time of one tree, the tree under way counts as two thirds done: half the time
    # spent is left, so the ETA grows while nothing is reported, never stands still
    assert etas[2] == pytest.approx(8.0 + 1.0)
    assert etas[3] == pytest.approx(8.0 + 5.0) and etas[4] == pytest.approx(8.0 + 50.0)


def test_any_phase_a_fit_reports_is_counted_in_its_own_unit() -> None:
    """A fit made of several (e.g. a model choice over candidates) reports its own phase:
    its ETA is the measured time of its units, whatever the trees were estimated at."""
    p = Progress(total=50, plan=PhasePlan(factor=0.0, setup=0.0, per_tree=0.1))
    p.report(_tree(50, 50), now=0.0)
    p.report(_tree(0, 4, phase="candidates", unit="candidate"), now=10.0)
    assert p.eta(10.0, None) is None  # nothing measured yet in this phase
    p.report(_tree(1, 4, phase="candidates", unit="candidate"), now=40.0)
    assert p.eta(40.0, None) == pytest.approx(3 * 30.0)  # the phase's mean rate so far
    p.report(_tree(2, 4, phase="candidates", unit="candidate"), now=60.0)
    assert p.eta(60.0, None) == pytest.approx(2 * 25.0)  # the median interval: 30 s, 20 s
    record = p.record()
    assert record["phase"] == "candidates" and record["unit"] == "candidate"
    assert (record["done"], record["total"]) == (2, 4)


@dataclass
class Recorder:
    """A job's reporter that keeps, at every report, the phase, the count and the ETA the
    job would answer (on the job's own Progress, with the job's plan)."""

    progress: Progress
    seen: list[tuple[str, str | None, int, int, float | None]] = field(default_factory=list)

    def __call__(self, p: Any, /) -> bool:
        now = time.time()
        self.progress.report(p, now)
        eta = self.progress.eta(now, None)
        self.seen.append((p.phase, p.part, self.progress.done, self.progress.total, eta))
        return False

    def saving(self) -> None:
        pass


def _check_advances(seen: list[tuple[str, str | None, int, int, float | None]]) -> None:
    dones = [done for _, _, done, _, _ in seen]
    assert dones == sorted(dones)  # never back
    assert dones[-1] == seen[-1][3]  # ends at its total
    assert all(eta is not None for *_, eta in seen)


def _trained(tmp_path: Path, body: dict[str, Any]) -> tuple[Any, Recorder]:
    """A one-set /train ``body`` run to the end in a store under ``tmp_path``: its plan and
    the reports it made, as the job heard them."""
    plan = plan_training(validate(TrainRequest, body))
    store, model_id = ModelStore(tmp_path), new_id()
    store.create_record(model_record(model_id))
    plan.record.update(model_id=model_id)
    recorder = Recorder(Progress(total=plan.total, plan=plan.phases()))
    assert run_training(plan, store.root, model_id, recorder) == "done"
    return plan, recorder


def test_a_bipartite_job_advances_through_both_sides_of_every_fit(tmp_path: Path) -> None:
    net = bipartite_network()
    body = {"task": "bipartite", "model": "okboost", "rows": {"inputs": net.rows[:30].tolist()},
            "cols": {"inputs": net.cols[:20].tolist()}, "edges": net.edges(range(30), range(20)),
            "params": dict(SMALL), "cv": {"folds": [2, 2]}}  # fmt: skip
    plan = plan_bipartite(BipartiteTrainRequest.model_validate(body), 10**7)
    store, model_id = ModelStore(tmp_path), new_id()
    plan.record.update(model_id=model_id, job_id=new_id())
    store.create_record(plan.record)
    recorder = Recorder(Progress(total=plan.total, plan=plan.phases()))
    assert run_bipartite(plan, store.root, model_id, recorder) == "done"
    seen = recorder.seen
    _check_advances(seen)
    assert plan.total == SMALL["n_estimators"] * 2 * (2 * 2 + 1)
    # every one-sided fit (4 configurations and the final fit, rows then columns) reports
    # its output space, then its trees
    starts = [part for phase, part, *_ in seen if phase == "output_space"]
    assert starts == ["rows", "columns"] * 5
    trees = [done for phase, _, done, _, _ in seen if phase == "trees"]
    assert len(trees) == plan.total and trees == list(range(1, plan.total + 1))


def test_a_cross_validating_job_advances_through_every_inner_fit(tmp_path: Path) -> None:
    X, Y = vector_data(n=30)
    body = {"inputs": X.tolist(), "output_kernel": {"type": "linear", "outputs": Y.tolist()},
            "params": dict(SMALL), "cv": {"folds": 3, "grid": {"max_splits": [1, 3]}}}  # fmt: skip
    plan, recorder = _trained(tmp_path, body)
    seen = recorder.seen
    _check_advances(seen)
    assert plan.total == SMALL["n_estimators"] * (2 * 3 + 1)
    assert sum(phase == "output_space" for phase, *_ in seen) == 2 * 3 + 1  # each fit's


def test_a_running_job_says_starting_until_its_fit_reports(tmp_path: Path) -> None:
    store = ModelStore(tmp_path)
    jobs = JobManager(store)
    model_id = new_id()
    store.create_record(model_record(model_id))
    go = threading.Event()

    def task(reporter: Any) -> str:
        assert go.wait(30)
        reporter(_tree(1, 1))
        return "done"

    plan = PhasePlan(factor=1.0, setup=0.0, per_tree=1.0)
    job = jobs.submit(model_id, task, total=1, plan=plan)
    try:
        for _ in range(500):
            info = jobs.get(job.job_id).info()
            if info["state"] == "running":
                break
            time.sleep(0.01)
        assert info["phase"] == "starting" and info["eta"] is not None
        assert info["phase_elapsed"] is not None
    finally:
        go.set()
    assert jobs.wait(job.job_id, 30) and jobs.get(job.job_id).info()["phase"] == "trees"
    jobs.shutdown()


@pytest.mark.slow  # starts the training process server: 10-60 s on a loaded machine
def test_the_training_processes_warm_up_in_the_background(tmp_path: Path) -> None:
    jobs = JobManager(ModelStore(tmp_path), isolation="process", warm_up=True)
    assert not jobs.warmed.is_set() or jobs.warmed.wait(0)  # the constructor did not block
    assert jobs.warmed.wait(600)
    jobs.shutdown()


def test_a_set_up_phase_run_again_is_estimated_at_the_pace_measured_the_first_time() -> None:
    """A job of several fits factorises an output kernel once per fit: okcore's estimate of
    each is scaled by how long the first one took against its own estimate."""
    p = Progress(total=20, plan=PhasePlan(factor=10.0, setup=0.0, per_tree=1.0))
    p.report(_tree(0, 20, phase="output_space", phase_eta=10.0), now=0.0)
    assert p.eta(0.0, None) == pytest.approx(10.0 + 20 * 1.0)
    p.report(_tree(1, 20), now=30.0)  # the factor took 30 s, three times its estimate
    p.report(_tree(10, 20), now=39.0)
    p.report(_tree(10, 20, phase="output_space", phase_eta=4.0), now=40.0)  # the next fit
    assert p.eta(40.0, None) == pytest.approx(3 * 4.0 + 10 * p.per_tree())


def _burst_then_wait(gate: str, reporter: Any) -> str:
    """Two units in a burst (the second within PERSIST_EVERY of the first, so not written
    then), then a long unit: until ``gate`` exists."""
    reporter(_tree(0, 4, phase="selection", unit="candidate"))
    reporter(_tree(1, 4, phase="selection", unit="candidate"))
    for _ in range(6000):
        if os.path.exists(gate):
            break
        time.sleep(0.01)
    for done in (2, 3, 4):
        reporter(_tree(done, 4, phase="selection", unit="candidate"))
    return "done"


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_count_the_throttle_held_back_is_written_while_the_next_unit_runs(
    tmp_path: Path, isolation: str
) -> None:
    """A unit done just after a write (the automatic choice's first candidate fits are quick,
    the next ones slow) is on record, and answered, while the next unit runs: not the count
    of a unit ago until the next report, however long that takes."""
    store = ModelStore(tmp_path)
    jobs = JobManager(store, isolation=isolation)
    model_id, gate = new_id(), tmp_path / "gate"
    store.create_record(model_record(model_id))
    job = jobs.submit(model_id, functools.partial(_burst_then_wait, str(gate)), total=4)
    record = tmp_path / "jobs" / f"{job.job_id}.json"
    try:
        for _ in range(6000):  # the training process server may start slowly
            if json.loads(record.read_text())["done"] == 1:
                break
            time.sleep(0.01)
        assert jobs.get(job.job_id).info()["progress"]["done"] == 1
        assert json.loads(record.read_text())["state"] == "running"  # not the job's end
    finally:
        gate.touch()
    assert jobs.wait(job.job_id, 60) and jobs.get(job.job_id).info()["progress"]["done"] == 4
    jobs.shutdown()


def test_a_kernel_ridge_job_counts_its_search_and_solve_down_as_its_round(
    tmp_path: Path,
) -> None:
    """Kernel ridge with its width by CV: once the output space is built the job is in its
    round ("trees", 0 of 1), whose ETA is the estimated time of the round counted down,
    not an output-space phase running over its estimate (an ETA that grew all along)."""
    X, Y = vector_data(n=30)
    body = {"inputs": X.tolist(), "output_kernel": {"type": "linear", "outputs": Y.tolist()},
            "model": "krr", "params": {"gamma": "cv"}}  # fmt: skip
    plan, recorder = _trained(tmp_path, body)
    assert [(phase, done) for phase, _, done, *_ in recorder.seen] == [
        ("output_space", 0),
        ("trees", 0),
        ("trees", 1),
    ]
    round_started = Progress(total=1, plan=plan.phases())
    round_started.report(okcore.FitProgress(done=0, total=1, elapsed=0.5), now=100.0)
    per_round = plan.phases().per_tree
    assert round_started.eta(100.0, None) == pytest.approx(per_round)
    assert round_started.eta(100.0 + per_round / 2, None) == pytest.approx(per_round / 2)


def test_the_automatic_choice_keeps_its_estimate_until_a_candidate_fit_is_measured() -> None:
    """Planned in candidate fits (its estimate: its budget's bound), the automatic choice's
    first report (0 of the fits it plans) leaves its ETA its estimate counted down, not
    unknown until the second report."""
    plan = PhasePlan(factor=0.0, setup=20.0, per_tree=0.0, unit="candidate")
    p = Progress(total=8, plan=plan)
    p.start(100.0)
    assert p.eta(100.0, 100.0) == pytest.approx(20.0)
    p.report(_tree(0, 11, phase="selection", unit="candidate"), now=101.0)
    assert p.eta(104.0, 100.0) == pytest.approx(16.0)
    assert p.eta(150.0, 100.0) == pytest.approx(25.0)  # past it: half the time spent
    p.report(_tree(1, 11, phase="selection", unit="candidate"), now=106.0)
    assert p.eta(106.0, 100.0) == pytest.approx(10 * 5.0)  # measured from then on
