"""The multi-label task's default over HTTP: no model named trains okcore's
MultiLabelClassifier() (stacked candidates, label-sigmoid scores, calibrated thresholds),
stored without pickle and rebuilt exactly; /predict and /evaluate take another measure's
thresholds from the same fit; records written before the default still load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, TestClient, label_data, make_settings

import okcore
from okcore import metrics
from service.app import create_app

X, LABELS = label_data()
TRAIN, TEST = slice(0, 45), slice(45, 60)


def _body(**extra: Any) -> dict[str, Any]:
    body = {"task": "multilabel", "inputs": X[TRAIN].tolist(), "labels": LABELS[TRAIN].tolist(),
            "wait": True}  # fmt: skip
    body.update(extra)
    return body


@pytest.fixture(scope="module")
def reference() -> okcore.MultiLabelClassifier:
    """okcore's default, seeded as the service seeds it (random_state 0)."""
    return okcore.MultiLabelClassifier(random_state=0).fit(X[TRAIN], LABELS[TRAIN])


@pytest.fixture
def default_model(client: TestClient) -> dict[str, Any]:
    r = client.post("/train", json=_body())
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()["model"]
    return out


def _predict(client: TestClient, model_id: str, **extra: Any) -> dict[str, Any]:
    r = client.post("/predict", json={"model_id": model_id, "inputs": X[TEST].tolist(), **extra})
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def test_default_is_okcores_stacked_classifier(
    default_model: dict[str, Any], reference: okcore.MultiLabelClassifier
) -> None:
    assert default_model["model"] == "auto" and default_model["params"] == {}
    info = default_model["multilabel"]
    assert info["scores"] == "label_sigmoid" and info["threshold_rule"] == "auto"
    assert info["weights"] == reference.weights_.tolist()
    assert sum(info["weights"]) == pytest.approx(1.0)
    board = info["leaderboard"]
    assert [row["candidate"] for row in board] == ["krr", "okboost", "ok3-forest"]
    assert [row["weight"] for row in board] == info["weights"]
    assert info["oof_log_loss"] == pytest.approx(reference.oof_log_loss_)
    assert info["thresholds"] == pytest.approx(reference.thresholds_.tolist())
    assert np.shape(info["sigmoid"]) == (4, 2)
    for metric in okcore.THRESHOLD_METRICS:
        assert info["thresholds_by_metric"][metric] == pytest.approx(
            reference.thresholds_for(metric).tolist()
        )


def test_reload_predicts_identically(
    tmp_path: Path, reference: okcore.MultiLabelClassifier
) -> None:
    """The model read back from its files (a new server on the same store) answers exactly
    okcore's in-memory classifier."""
    settings = make_settings(tmp_path)
    with TestClient(create_app(settings)) as c:
        model_id = c.post("/train", json=_body()).json()["model_id"]
        first = _predict(c, model_id)
    with TestClient(create_app(settings)) as c:
        again = _predict(c, model_id)
    assert again == first
    np.testing.assert_array_equal(
        np.array(again["probabilities"]), reference.predict_proba(X[TEST])
    )
    assert again["labels"] == reference.predict(X[TEST]).tolist()
    assert again["metric"] == "micro_f1"


@pytest.mark.parametrize("metric", ["macro_f1", "hamming_loss", "subset_accuracy", "micro_f1"])
def test_metric_at_predict_uses_that_measures_thresholds(
    client: TestClient,
    default_model: dict[str, Any],
    reference: okcore.MultiLabelClassifier,
    metric: str,
) -> None:
    out = _predict(client, default_model["model_id"], metric=metric)
    want = reference.thresholds_for(metric)
    assert out["metric"] == metric and out["thresholds"] == pytest.approx(want.tolist())
    P = reference.predict_proba(X[TEST])
    assert out["labels"] == (P >= want).astype(int).tolist()
    r = client.post("/evaluate", json={"model_id": default_model["model_id"], "metric": metric,
                                       "inputs": X[TEST].tolist(),
                                       "outputs": LABELS[TEST].tolist()})  # fmt: skip
    assert r.status_code == 200, r.text
    for name in ("hamming_loss", "micro_f1", "macro_f1", "subset_accuracy"):
        value = metrics.MULTILABEL_METRICS[name][0](LABELS[TEST], P >= want)
        assert r.json()[name] == pytest.approx(value), name


def test_params_with_auto_is_422(client: TestClient) -> None:
    r = client.post("/train", json=_body(params=dict(SMALL), wait=False))
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert "name a model" in error["message"] and error["code"]


def test_metric_on_a_structured_model_is_422(client: TestClient) -> None:
    kernel = {"type": "linear", "outputs": X[TRAIN].tolist()}
    r = client.post("/train", json={"inputs": X[TRAIN].tolist(), "output_kernel": kernel,
                                    "model": "okboost", "params": dict(SMALL), "wait": True})  # fmt: skip
    assert r.status_code == 201, r.text
    r = client.post("/predict", json={"model_id": r.json()["model_id"],
                                      "inputs": X[TEST].tolist(), "metric": "micro_f1"})  # fmt: skip
    assert r.status_code == 422 and "multi-label models only" in r.json()["error"]["message"]


def test_a_record_written_before_the_default_still_loads(tmp_path: Path) -> None:
    """A named model with clipped scores, its record stripped of what the default added:
    it loads and predicts as okcore's classifier of the same options; another measure's
    thresholds are a clear 422."""
    settings = make_settings(tmp_path)
    body = _body(model="okboost", params=dict(SMALL), scores="clip", per_label=False)
    with TestClient(create_app(settings)) as c:
        model_id = c.post("/train", json=body).json()["model_id"]
    path = next(tmp_path.rglob(f"{model_id}/record.json"))
    record = json.loads(path.read_text())
    for key in ("thresholds_by_metric", "weights", "oof_log_loss", "leaderboard", "threshold_rule"):
        del record["multilabel"][key]
    path.write_text(json.dumps(record))
    ref = okcore.MultiLabelClassifier(
        okcore.make_estimator("okboost", SMALL),
        scores="clip",
        per_label=False,
        threshold_rule="window",
    ).fit(X[TRAIN], LABELS[TRAIN])
    with TestClient(create_app(settings)) as c:
        out = _predict(c, model_id)
        np.testing.assert_array_equal(np.array(out["probabilities"]), ref.predict_proba(X[TEST]))
        assert out["labels"] == ref.predict(X[TEST]).tolist()
        r = c.post("/predict", json={"model_id": model_id, "inputs": X[TEST].tolist(),
                                     "metric": "hamming_loss"})  # fmt: skip
        assert r.status_code == 422 and "before other measures" in r.json()["error"]["message"]


def test_default_progress_counts_reach_the_total(tmp_path: Path) -> None:
    """Every fit of the default (3 candidates x 3 folds, then the kept candidates' final
    fits) is planned as its share of the estimated CPU: the count never goes back and
    reaches the total, in unit "work"."""
    from service.schemas.multilabel import MultiLabelTrainRequest
    from service.training.multilabel import WORK_UNITS, plan_multilabel, run_multilabel

    req = MultiLabelTrainRequest.model_validate(_body())
    plan = plan_multilabel(req)
    assert len(plan.fits) == 3 * 3 + 3 and abs(plan.total - WORK_UNITS) <= len(plan.fits)
    assert plan.parts[0] == "fold 1, candidate 1" and plan.parts[-1] == "final, candidate 3"
    assert plan.estimate.cv_fits == 9 and plan.estimate.seconds > 0
    plan.record.update(model_id="0" * 32, job_id="1" * 32, error=None, client=None)
    reports: list[Any] = []

    class Heard:
        def __call__(self, p: Any) -> bool:
            reports.append(p)
            return False

        def saving(self) -> None:
            pass

    assert run_multilabel(plan, tmp_path, "0" * 32, Heard()) == "deleted"  # no folder
    done = [p.done for p in reports]
    assert done == sorted(done) and done[-1] == plan.total
    assert {p.total for p in reports} == {plan.total} and {p.unit for p in reports} == {"work"}


def test_a_cpu_budget_is_kept_and_reported(client: TestClient) -> None:
    """max_cpu_seconds reaches okcore: the fit's own CPU accounting within the stated bound,
    each candidate's status in the leaderboard, the job's estimate within the bound too."""
    from okcore.auto import BUDGET_SLACK_SECONDS, BUDGET_TOLERANCE
    from service.schemas.multilabel import MultiLabelTrainRequest
    from service.training.multilabel import plan_multilabel

    bound = (1 + BUDGET_TOLERANCE) * 0.5 + BUDGET_SLACK_SECONDS
    plan = plan_multilabel(MultiLabelTrainRequest.model_validate(_body(max_cpu_seconds=0.5)))
    assert plan.estimate.seconds <= bound + 1e-9
    r = client.post("/train", json=_body(max_cpu_seconds=0.5))
    assert r.status_code == 201, r.text
    info = r.json()["model"]["multilabel"]
    assert info["max_cpu_seconds"] == 0.5 and info["cpu_seconds"] <= bound
    for row in info["leaderboard"]:
        assert row["status"] in ("fitted", "capped") or row["status"].startswith("skipped")
        assert row["weight"] == 0.0 or not row["status"].startswith("skipped")
    assert _predict(client, r.json()["model_id"])["labels"]


@pytest.mark.parametrize("bad", [0, -1, 1e6])
def test_a_bad_budget_is_422(client: TestClient, bad: float) -> None:
    r = client.post("/train", json=_body(max_cpu_seconds=bad, wait=False))
    assert r.status_code == 422 and "max_cpu_seconds" in r.json()["error"]["message"]
