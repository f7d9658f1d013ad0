"""A model's life outside of its fit: deletion wins over a training job's save, whatever
the order (driven deterministically through gate files, in a worker thread and in a
training process)."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import pytest
from svc_data import SMALL, Graph, diffusion_request, make_settings

from service.errors import NotFound
from service.jobs.manager import JobManager
from service.jobs.records import DELETED_REASON
from service.jobs.task import Reporter
from service.schemas.api import TrainRequest
from service.store.model_store import ModelStore
from service.training import fit, lifecycle

WAIT = 300.0  # seconds: a loaded machine may take long to start a training process


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + WAIT
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.01)


class _HoldAtSave:
    """A reporter that, at the "saving" notice (after the last tree), says so and waits."""

    def __init__(self, inner: Reporter, gates: Path) -> None:
        self.inner, self.gates = inner, gates

    def __call__(self, progress: Any, /) -> bool:
        return self.inner(progress)

    def saving(self) -> None:
        self.inner.saving()
        (self.gates / "reached").touch()
        _wait_for(self.gates / "go")


def gated_training(
    gates: str, hook: str, plan: fit.TrainPlan, root: Path, model_id: str, progress: Reporter
) -> str:
    """fit.run_training, held at ``hook``: "before_save" (past the last tree callback, the
    model not written) or "after_save" (written and ready, the job not finished)."""
    gate = Path(gates)
    if hook == "before_save":
        return fit.run_training(plan, root, model_id, _HoldAtSave(progress, gate))
    outcome = fit.run_training(plan, root, model_id, progress)
    (gate / "reached").touch()
    _wait_for(gate / "go")
    return outcome


@pytest.mark.parametrize("isolation", ["thread", "process"])
@pytest.mark.parametrize("hook", ["before_save", "after_save"])
def test_deletion_wins_over_the_save(
    tmp_path: Path, graph: Graph, monkeypatch: pytest.MonkeyPatch, isolation: str, hook: str
) -> None:
    gates = tmp_path / "gates"
    gates.mkdir()
    monkeypatch.setattr(
        lifecycle, "run_training", functools.partial(gated_training, str(gates), hook)
    )
    settings = make_settings(tmp_path)
    store = ModelStore(settings.model_dir)
    jobs = JobManager(store, isolation=isolation)  # type: ignore[arg-type]
    try:
        request = TrainRequest.model_validate(
            diffusion_request(graph, params={**SMALL, "n_estimators": 3})
        )
        job = lifecycle.start_training(fit.plan_training(request), store, jobs, settings)
        _wait_for(gates / "reached")
        status = store.read_record(job.model_id)["status"]
        assert status == ("ready" if hook == "after_save" else "training")
        lifecycle.delete_model(store, jobs, job.model_id)
        (gates / "go").touch()
        assert jobs.wait(job.job_id, WAIT)
        info = jobs.get(job.job_id).info()
        assert (info["state"], info["error"]) == ("cancelled", DELETED_REASON)
        with pytest.raises(NotFound):
            store.read_record(job.model_id)
        with pytest.raises(NotFound):
            store.load(job.model_id)
        assert store.list_records() == []
        left = sorted(p.name for p in settings.model_dir.iterdir())
        assert left == ["jobs"]  # no folder, no temporary files of the save
    finally:
        (gates / "go").touch()
        jobs.shutdown()
