"""Bipartite and multi-label training jobs: their cost checked against the job limits before
they are queued (422 naming the limit), their progress counted in trees (bipartite and
multi-label: every inner fit's), their job records."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from svc_data import SMALL, TestClient, bipartite_network, label_data, make_settings

from service.app import create_app

NET = bipartite_network()
X, Y = label_data()


def _bipartite(**extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "task": "bipartite",
        "model": "okboost",
        "rows": {"inputs": NET.rows[:30].tolist()},
        "cols": {"inputs": NET.cols[:20].tolist()},
        "edges": NET.edges(range(30), range(20)),
        "params": dict(SMALL),
    }
    body.update(extra)
    return body


def _labels(**extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"task": "multilabel", "inputs": X.tolist(), "labels": Y.tolist(),
                            "model": "okboost", "params": dict(SMALL)}  # fmt: skip
    body.update(extra)
    return body


@pytest.mark.parametrize(
    ("settings_change", "body", "setting"),
    [
        ({"max_estimators": 10}, _bipartite(), "OKBOOST_MAX_ESTIMATORS"),
        ({"max_train_rows": 25}, _bipartite(), "OKBOOST_MAX_TRAIN_ROWS"),
        ({"max_features": 2}, _bipartite(), "OKBOOST_MAX_FEATURES"),
        ({"max_estimators": 10}, _labels(), "OKBOOST_MAX_ESTIMATORS"),
        ({"max_train_rows": 50}, _labels(), "OKBOOST_MAX_TRAIN_ROWS"),
    ],
)
def test_job_limits(tmp_path: Path, settings_change: dict[str, Any], body: dict[str, Any],
                    setting: str) -> None:  # fmt: skip
    with TestClient(create_app(make_settings(tmp_path, **settings_change))) as c:
        r = c.post("/train", json=body)
        assert r.status_code == 422, r.text
        assert setting in r.json()["error"]["message"]
        assert c.get("/models").json()["models"] == []  # nothing left behind


def _finished(client: TestClient, job_id: str) -> dict[str, Any]:
    for _ in range(600):
        job: dict[str, Any] = client.get(f"/jobs/{job_id}").json()
        if job["state"] not in ("queued", "running"):
            return job
        time.sleep(0.05)
    raise AssertionError("the job did not finish")


def test_progress_counts_fits(client: TestClient) -> None:
    r = client.post("/train", json=_bipartite(cv={"folds": [3, 2]}))
    assert r.status_code == 202, r.text
    job = _finished(client, r.json()["job_id"])
    assert job["state"] == "done"
    # the trees of both one-sided fits of every CV configuration, then of the final fit
    trees = SMALL["n_estimators"] * 2 * (3 * 2 + 1)
    assert job["progress"]["total"] == trees and job["progress"]["done"] == trees
    # the trees of every inner fold's fit, then of the final fit
    r = client.post("/train", json=_labels(n_splits=4))
    job = _finished(client, r.json()["job_id"])
    trees = SMALL["n_estimators"] * (4 + 1)
    assert job["state"] == "done" and job["progress"]["total"] == trees
    assert job["progress"]["done"] == trees and job["progress"]["unit"] == "tree"
    r = client.post("/train", json=_labels(threshold=0.5, scores="clip"))
    job = _finished(client, r.json()["job_id"])
    assert job["progress"]["total"] == SMALL["n_estimators"]


def test_multilabel_progress_is_per_fit_and_cancels(tmp_path: Path) -> None:
    """Each inner fit reports its trees, shifted past the fits before it: the count never
    goes back, reaches the total, and a stop asked in the second fold ends the job there."""
    from service.schemas.multilabel import MultiLabelTrainRequest
    from service.training.multilabel import plan_multilabel, run_multilabel

    req = MultiLabelTrainRequest.model_validate(_labels(n_splits=3))
    plan = plan_multilabel(req)
    assert plan.fits == [SMALL["n_estimators"]] * 4
    plan.record.update(model_id="0" * 32, job_id="1" * 32, error=None, client=None)

    class Heard:
        def __init__(self, stop_at: int | None) -> None:
            self.reports: list[Any] = []
            self.stop_at = stop_at

        def __call__(self, p: Any) -> bool:
            self.reports.append(p)
            return self.stop_at is not None and p.done >= self.stop_at

        def saving(self) -> None:
            pass

    heard = Heard(None)
    model_id = "0" * 32  # no such model folder: the fit runs, nothing is written
    assert run_multilabel(plan, tmp_path, model_id, heard) == "deleted"
    done = [p.done for p in heard.reports]
    assert done == sorted(done) and done[-1] == plan.total
    assert {p.total for p in heard.reports} == {plan.total}
    assert [p.part for p in heard.reports if p.phase == "trees"][:: SMALL["n_estimators"]] == [
        "fold 1",
        "fold 2",
        "fold 3",
        "final",
    ]
    stop = Heard(SMALL["n_estimators"] + 3)
    assert run_multilabel(plan, tmp_path, model_id, stop) == "cancelled"
    assert stop.reports[-1].part == "fold 2" and stop.reports[-1].done == SMALL["n_estimators"] + 3


def test_warnings_about_the_data(client: TestClient) -> None:
    body = _bipartite(wait=True)
    body["edges"] = [e for e in body["edges"] if e[0] != 0]  # row 0 without interactions
    record = client.post("/train", json=body).json()["model"]
    assert "1 row vertex has no interaction" in record["warnings"]
    labels = Y.copy()
    labels[:, 0] = 0
    record = client.post("/train", json=_labels(labels=labels.tolist(), wait=True)).json()["model"]
    assert "1 label is on no training row" in record["warnings"]


def test_per_label_threshold_search_is_bounded(client: TestClient, monkeypatch: Any) -> None:
    from service.training import multilabel

    monkeypatch.setattr(multilabel, "MAX_THRESHOLD_WORK", 1e5)
    r = client.post("/train", json=_labels(per_label=True))
    assert r.status_code == 422 and "per_label false" in r.json()["error"]["message"]
    assert client.post("/train", json=_labels(per_label=True, threshold=0.5)).status_code == 202


def test_the_service_knows_okcore_multilabel_choices() -> None:
    """The schema's metrics are okcore's (a pydantic Literal is written out statically)."""
    from typing import get_args

    from okcore import THRESHOLD_METRICS
    from service.schemas.multilabel import ThresholdMetric

    assert set(get_args(ThresholdMetric)) == set(THRESHOLD_METRICS)
