"""POST /train with "cv": the table in the model record is okcore.model_selection's on the
same data and seed, the final model is fitted with the chosen params, the job counts every
CV fit (progress and cost), and a bad CV spec is a 422 before queueing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, Graph, TestClient, diffusion_request, make_settings, vector_data

import okcore
from okcore import FitProgress, model_selection
from service.app import create_app
from service.http.bodies import validate
from service.schemas.api import TrainRequest
from service.training import cv as service_cv
from service.training.fit import plan_training

GRID = {"max_splits": [1, 3], "learning_rate": [0.1, 0.3]}


def test_graph_cv_table_equals_okcore_grid_search(client: TestClient, graph: Graph) -> None:
    spec = {"folds": 3, "grid": GRID, "scoring": ["auc", "auc_known"], "random_state": 4}
    r = client.post("/train", json=diffusion_request(graph, cv=spec))
    assert r.status_code == 201, r.text
    record = client.get(f"/models/{r.json()['model_id']}").json()
    X = graph.features[graph.train]
    kernel = okcore.DiffusionKernel(graph.train_edges(), 1.0)
    expected = model_selection.grid_search(
        okcore.OKBoostRegressor(**SMALL), GRID, X, kernel=kernel, scoring=["auc", "auc_known"],
        cv=3, random_state=4, refit=False,
    )  # fmt: skip
    cv = record["cv"]
    assert cv["table"] == expected.table
    assert cv["best_params"] == expected.best_params and cv["criterion"] == "auc"
    assert cv["folds"] == 3 and cv["random_state"] == 4 and cv["grid"] == GRID
    for name, value in expected.best_params.items():
        assert record["params"][name] == value
    # the final model is okcore's fit with the chosen params on all rows
    final = okcore.OKBoostRegressor(**{**SMALL, **expected.best_params}).fit(X, kernel=kernel)
    Xt = graph.features[graph.test]
    answer = client.post(
        "/kernel", json={"model_id": record["model_id"], "inputs": Xt.tolist()}
    ).json()
    np.testing.assert_allclose(answer["kernel"], final.predict_kernel(Xt), rtol=1e-10)
    # every CV fit's trees, then the final fit's
    job = client.get(f"/jobs/{record['job_id']}").json()
    done = 4 * 3 * 15 + 15
    assert job["progress"] == {"done": done, "total": done, "fraction": 1.0, "unit": "tree"}


def test_vector_cv_without_grid_equals_okcore_cross_validate(client: TestClient) -> None:
    X, Y = vector_data(n=30)
    kernel = {"type": "rbf", "sigma": 1.0}
    body = {
        "inputs": X.tolist(),
        "output_kernel": {**kernel, "outputs": Y.tolist()},
        "params": SMALL,
        "cv": {"folds": 4},
        "wait": True,
    }
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    cv = r.json()["model"]["cv"]
    scores = model_selection.cross_validate(
        okcore.OKBoostRegressor(**SMALL), X, Y, kernel=kernel, cv=4, random_state=0
    )
    assert cv["scoring"] == ["err_phi", "err_y", "r2"] and cv["best_params"] == {}
    [row] = cv["table"]
    assert row["params"] == {}
    for name, values in scores.items():
        assert row[name] == {
            "mean": float(values.mean()),
            "std": float(values.std()),
            "folds": values.tolist(),
        }


def test_gram_cv_with_an_ok3_grid(client: TestClient) -> None:
    X, Y = vector_data(n=24)
    K = Y @ Y.T + 1.0
    body = {
        "model": "ok3",
        "inputs": X.tolist(),
        "output_kernel": {"type": "precomputed", "gram": K.tolist()},
        "params": {"random_state": 0},
        "cv": {"folds": 3, "grid": {"max_splits": [2, 5]}, "scoring": "err_y"},
        "wait": True,
    }
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    expected = model_selection.grid_search(
        okcore.OK3Regressor(random_state=0), {"max_splits": [2, 5]}, X, gram=K,
        scoring="err_y", cv=3, random_state=0, refit=False,
    )  # fmt: skip
    assert r.json()["model"]["cv"]["table"] == expected.table
    job = client.get(f"/jobs/{r.json()['job_id']}").json()
    assert job["progress"]["total"] == 2 * 3 + 1  # one tree per fit


@pytest.mark.parametrize(
    ("cv", "code", "fragments"),
    [
        ({"folds": 1}, "invalid_data", ("cv.folds", "greater than or equal to 2")),
        ({"folds": 40}, "invalid_data", ("cv.folds = 40", "only 34 training rows")),
        ({"grid": {"depth": [1, 2]}}, "invalid_data", ("cv.grid names 'depth'", "max_splits")),
        ({"grid": {"max_splits": [2, 0]}}, "invalid_parameter", ("cv.grid.max_splits[1]",)),
        ({"grid": {"max_splits": []}}, "invalid_data", ("cv.grid.max_splits", "at least 1")),
        ({"grid": {}}, "invalid_data", ("cv.grid", "at least 1")),
        ({"grid": {"max_splits": 3}}, "invalid_data", ("cv.grid.max_splits", "list")),
        ({"scoring": "err_phi"}, "invalid_data", ("'err_phi' does not apply", "auc")),
        ({"scoring": "mse"}, "invalid_data", ("cv.scoring",)),
        ({"random_state": -1}, "invalid_data", ("cv.random_state",)),
        ({"folds": "3"}, "invalid_data", ("cv.folds", "integer")),
        ({"shuffle": True}, "invalid_data", ("cv.shuffle", "not permitted")),
        (
            {"grid": {"max_splits": list(range(1, 41)), "learning_rate": [0.1] * 30}},
            "invalid_data",
            ("1200 combinations", "1000"),
        ),
        (
            {"folds": 20, "grid": {"max_splits": list(range(1, 61))}},
            "invalid_data",
            ("60 candidates x 20 folds = 1200 fits",),
        ),
    ],
)
def test_bad_cv_specs_are_422_before_queueing(
    client: TestClient, graph: Graph, cv: dict[str, Any], code: str, fragments: tuple[str, ...]
) -> None:
    r = client.post("/train", json=diffusion_request(graph, cv=cv, wait=False))
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == code
    for fragment in fragments:
        assert fragment in error["message"], (fragment, error["message"])
    assert client.get("/jobs").json()["jobs"] == []


def test_a_vector_score_on_a_graph_and_a_graph_score_on_vectors_are_refused(
    client: TestClient,
) -> None:
    X, Y = vector_data(n=20)
    body = {"inputs": X.tolist(), "output_kernel": {"type": "linear", "outputs": Y.tolist()}}
    r = client.post("/train", json={**body, "cv": {"scoring": ["r2", "auc"]}})
    assert r.status_code == 422
    assert "'auc' does not apply to a model trained on output vectors" in r.text
    r = client.post("/train", json={**body, "cv": {"folds": 5}, "params": {"n_landmarks": 18}})
    assert r.status_code == 422 and "n_landmarks = 18" in r.text and "16 training rows" in r.text


def test_a_graph_fold_without_an_edge_is_refused(client: TestClient) -> None:
    body = {
        "inputs": np.arange(20.0).reshape(10, 2).tolist(),
        "output_kernel": {"type": "diffusion", "edges": [[0, 1]]},
        "cv": {"folds": 5},
    }
    r = client.post("/train", json=body)
    assert r.status_code == 422
    assert "has no edge among the pairs of its 2 test vertices" in r.json()["error"]["message"]


def _plan(graph: Graph, cv: dict[str, Any] | None) -> Any:
    body = diffusion_request(graph, cv=cv) if cv else diffusion_request(graph)
    return plan_training(validate(TrainRequest, body))


def test_the_job_estimate_counts_every_cv_fit(graph: Graph) -> None:
    plain = _plan(graph, None)
    plan = _plan(graph, {"folds": 3, "grid": GRID})
    estimate = plan.estimate
    assert estimate.cv_fits == 12 and estimate.cv_trees == 12 * 15
    assert plan.total == 12 * 15 + 15
    assert estimate.seconds > plain.estimate.seconds + estimate.cv_seconds * 0.99
    assert estimate.memory_bytes > plain.estimate.memory_bytes
    # the ETA's plan spreads the time after the first set-up over every reported tree
    phases = estimate.phases()
    left = estimate.seconds - phases.factor - phases.setup
    assert phases.per_tree * plan.total == pytest.approx(left)


def test_a_cv_over_the_time_limit_is_refused_with_its_fits(graph: Graph, tmp_path: Path) -> None:
    plain, cv = _plan(graph, None).estimate, _plan(graph, {"folds": 3, "grid": GRID}).estimate
    limit = (plain.seconds + cv.seconds) / 2
    with TestClient(create_app(make_settings(tmp_path, max_job_seconds=limit))) as client:
        # accepted (the limit is also enforced while a job runs, so no waiting for its end)
        assert client.post("/train", json=diffusion_request(graph, wait=False)).status_code == 202
        r = client.post("/train", json=diffusion_request(graph, cv={"folds": 3, "grid": GRID}))
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "after 12 cross-validation fits of 180 trees in all" in message
    assert "fewer cv.folds, a smaller cv.grid" in message


@dataclass
class _Reporter:
    stop_after: int
    heard: list[tuple[int, int, float]]

    def __call__(self, progress: Any, /) -> bool:
        self.heard.append((progress.done, progress.total, progress.elapsed))
        return len(self.heard) >= self.stop_after

    def saving(self) -> None:
        pass


def test_progress_is_one_count_and_a_cancel_stops_the_cv(graph: Graph) -> None:
    plan = _plan(graph, {"folds": 3, "grid": {"max_splits": [1, 2]}})
    reporter = _Reporter(10**9, [])
    progress = service_cv.CVProgress(reporter, plan.cv)
    progress.fold(2, FitProgress(done=4, total=15, elapsed=9.0))
    progress(FitProgress(done=3, total=15, elapsed=0.5))  # the final fit: its clock restarted
    assert [(d, t) for d, t, _ in reporter.heard] == [(34, 105), (93, 105)]
    # elapsed is the job's clock: it never goes back from one fit to the next
    assert reporter.heard[0][2] <= reporter.heard[1][2] < 9.0

    reporter = _Reporter(5, [])
    X, kernel = graph.features[graph.train], plan.fit_kwargs["kernel"]
    stopped = service_cv.run_cv(
        plan.cv, plan.estimator, X, None, {"kernel": kernel},
        service_cv.CVProgress(reporter, plan.cv),
    )  # fmt: skip
    assert stopped is None and len(reporter.heard) == 5  # stopped at the report that asked


def test_cv_and_eval_set_together(client: TestClient) -> None:
    X, Y = vector_data(n=30)
    body = {
        "inputs": X[:24].tolist(),
        "output_kernel": {"type": "linear", "outputs": Y[:24].tolist()},
        "params": SMALL,
        "eval_set": {"inputs": X[24:].tolist(), "outputs": Y[24:].tolist()},
        "cv": {"folds": 3, "grid": {"max_splits": [1, 2]}, "scoring": "r2"},
        "wait": True,
    }
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    model = client.get(f"/models/{r.json()['model_id']}", params={"curves": True}).json()
    assert len(model["validation_loss"]) == 15  # the final fit's eval_set curve
    assert model["cv"]["criterion"] == "r2"
