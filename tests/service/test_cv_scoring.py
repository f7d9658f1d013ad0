"""POST /train "cv" with okcore.scoring's scores and successive halving: the record's table is
okcore's on the same data and seed, the job counts okcore's fits, and scores or searches that
do not apply are 422 before queueing with the names that do."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, Graph, TestClient, diffusion_request

import okcore
from okcore import FitProgress, defaults, model_selection
from service.http.bodies import validate
from service.schemas.api import TrainRequest
from service.schemas.cv import Score
from service.training import cv as service_cv
from service.training.fit import plan_training


def _labels(n: int = 36, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    Y = (np.c_[X[:, 0], 1 - X[:, 0], X[:, 1]] + 0.3 * rng.random((n, 3)) > 0.7).astype(float)
    return X, Y


def _label_body(cv: dict[str, Any], Y: np.ndarray | None = None) -> dict[str, Any]:
    X, labels = _labels()
    outputs = labels if Y is None else Y
    return {
        "inputs": X.tolist(),
        "output_kernel": {"type": "linear", "outputs": outputs.tolist()},
        "params": SMALL,
        "cv": cv,
        "wait": True,
    }


def test_the_service_offers_every_okcore_score() -> None:
    assert set(Score.__args__) == set(okcore.scoring.SCORERS)  # type: ignore[attr-defined]


def test_label_scores_equal_okcore_grid_search(client: TestClient) -> None:
    grid = {"max_splits": [1, 4]}
    scores = ["f1", "auroc", "hamming_loss", "ranking_loss"]
    r = client.post("/train", json=_label_body({"folds": 3, "grid": grid, "scoring": scores}))
    assert r.status_code == 201, r.text
    X, Y = _labels()
    expected = model_selection.grid_search(
        okcore.OKBoostRegressor(**SMALL), grid, X, Y, kernel="linear", scoring=scores, cv=3,
        random_state=0, refit=False,
    )  # fmt: skip
    cv = r.json()["model"]["cv"]
    assert cv["table"] == expected.table and cv["best_params"] == expected.best_params
    assert cv["criterion"] == "f1" and cv["search"] == "grid"


def test_halving_equals_okcore_and_counts_its_fits(client: TestClient, graph: Graph) -> None:
    grid = {"max_splits": [1, 2, 3], "learning_rate": [0.1, 0.3, 0.5]}
    spec = {"folds": 3, "grid": grid, "scoring": "auc", "search": "halving"}
    body = diffusion_request(graph, cv=spec)
    body["params"] = {**SMALL, "n_estimators": 18}
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    X = graph.features[graph.train]
    kernel = okcore.DiffusionKernel(graph.train_edges(), 1.0)
    expected = model_selection.grid_search(
        okcore.OKBoostRegressor(**{**SMALL, "n_estimators": 18}), grid, X, kernel=kernel,
        scoring="auc", cv=3, random_state=0, refit=False, search="halving",
    )  # fmt: skip
    cv = r.json()["model"]["cv"]
    assert expected.n_candidates == [9, 3, 1] and expected.n_resources == [2, 6, 18]
    assert cv["table"] == expected.table and cv["best_params"] == expected.best_params
    assert cv["n_candidates"] == [9, 3, 1] and cv["n_resources"] == [2, 6, 18]
    assert r.json()["model"]["params"]["n_estimators"] == 18
    job = client.get(f"/jobs/{r.json()['job_id']}").json()
    # the survivors' fits are continued (warm start): each iteration grows the trees it adds
    cv_trees = 3 * (9 * 2 + 3 * (6 - 2) + 1 * (18 - 6))
    assert job["progress"]["total"] == cv_trees + 18 == job["progress"]["done"]


def test_a_grid_over_n_estimators_is_one_fit_per_fold_in_the_plan(graph: Graph) -> None:
    cv = {"folds": 3, "grid": {"n_estimators": [5, 15, 10]}}
    plan = plan_training(validate(TrainRequest, diffusion_request(graph, cv=cv)))
    assert plan.cv.task_trees == (15, 15, 15)
    assert plan.estimate.cv_fits == 3
    heard: list[int] = []
    service_cv.run_cv(
        plan.cv, plan.estimator, graph.features[graph.train], None,
        {"kernel": plan.fit_kwargs["kernel"]},
        service_cv.CVProgress(lambda p: heard.append(p.done) and False, plan.cv),
    )  # fmt: skip
    assert max(heard) == 45  # the three fits' trees, as planned


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        (
            _label_body({"scoring": "f1"}, Y=_labels()[1] * 2.5),
            ("cv.scoring 'f1' does not apply", "not all 0 or 1", "use err_phi, err_y, r2"),
        ),
        (
            {**_label_body({"grid": {"n_estimators": [5, 10]}, "search": "halving"})},
            ("cv.search 'halving'", "leave n_estimators out of cv.grid"),
        ),
        (
            {
                **_label_body({"grid": {"max_splits": [1, 2]}, "search": "halving"}),
                "model": "ok3",
                "params": {},
            },
            ("cv.search 'halving'", "does not have"),
        ),
        (_label_body({"scoring": "accuracy"}), ("cv.scoring", "auroc", "hamming_loss")),
        (_label_body({"search": "random"}), ("cv.search", "'grid' or 'halving'")),
        (_label_body({"factor": 1}), ("cv.factor", "greater than or equal to 2")),
    ],
    ids=[
        "f1-not-labels",
        "halving-over-grid-trees",
        "halving-without-trees",
        "unknown-score",
        "unknown-search",
        "factor",
    ],  # fmt: skip
)
def test_scores_and_searches_that_do_not_apply_are_422(
    client: TestClient, body: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    r = client.post("/train", json={**body, "wait": False})
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_the_halving_plan_reports_fits_in_okcores_task_order(graph: Graph) -> None:
    cv = {"folds": 2, "grid": {"max_splits": [1, 2, 3, 4]}, "search": "halving", "factor": 2}
    plan = plan_training(validate(TrainRequest, diffusion_request(graph, cv=cv)))
    # 4 candidates x 3 trees, 2 x 6, 1 x 12 (min_resources: 15 // 2^2 = 3), on 2 folds; the
    # survivors' fits are continued, so the fits grow 3, then 6 - 3, then 12 - 6 trees
    assert plan.cv.task_trees == (3,) * 8 + (3,) * 4 + (6,) * 2
    assert plan.estimate.cv_fits == 14
    reporter_done = []
    progress = service_cv.CVProgress(lambda p: reporter_done.append(p.done) and False, plan.cv)
    progress.fold(12, FitProgress(done=1, total=6, elapsed=0.0))
    assert reporter_done == [8 * 3 + 4 * 3 + 1]


def test_halving_with_the_default_tree_count_races_up_to_the_folds_count(
    graph: Graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    """n_estimators "auto" races up to the count of the folds' training rows, as okcore's
    search does: with the rule's threshold at all the rows, the folds (fewer rows) get 9
    trees where a fit on all rows would get 27."""
    rows = len(graph.train)
    monkeypatch.setattr(defaults, "AUTO_N_ESTIMATORS_MIN_ROWS", rows)
    monkeypatch.setattr(defaults, "AUTO_N_ESTIMATORS_SMALL", 9)
    monkeypatch.setattr(defaults, "AUTO_N_ESTIMATORS_LARGE", 27)
    cv = {"folds": 3, "grid": {"max_splits": [1, 2, 3]}, "search": "halving"}
    body = diffusion_request(graph, cv=cv)
    body["params"] = {**SMALL, "n_estimators": "auto"}
    plan = plan_training(validate(TrainRequest, body))
    # 3 candidates x 3 trees, then 1 x 9 continued by 6, on 3 folds; the final fit: 9 trees
    assert plan.cv.task_trees == (3,) * 9 + (6,) * 3
    assert plan.estimate.n_trees == 9
    X = graph.features[graph.train]
    kernel = okcore.DiffusionKernel(graph.train_edges(), 1.0)
    expected = model_selection.grid_search(
        okcore.OKBoostRegressor(**body["params"]), cv["grid"], X, kernel=kernel,
        scoring="auc", cv=3, random_state=0, refit=False, search="halving",
    )  # fmt: skip
    assert expected.n_resources == [3, 9] and expected.best_params["n_estimators"] == 9


def test_the_halving_estimate_costs_continued_fits(graph: Graph) -> None:
    """The survivors' fits add trees to their models: each continued fit is costed as its
    added trees without an output factor, and the racing candidates' held models (model
    and F, N x r) are memory the job needs."""
    cv = {"folds": 2, "grid": {"max_splits": [1, 2, 3, 4]}, "search": "halving", "factor": 2}
    body = diffusion_request(graph, cv=cv)
    req = validate(TrainRequest, body)
    halving = plan_training(req)
    grid = plan_training(validate(TrainRequest, {**body, "cv": {**cv, "search": "grid"}}))
    n = len(graph.train)
    sizes = [n - len(t) for t in np.array_split(np.arange(n), 2)]
    params = service_cv.estimator_params(halving.estimator)
    kernel = halving.fit_kwargs["kernel"]

    def folds(trees: int, max_splits: int) -> list[Any]:
        spec = {**params, "n_estimators": trees, "max_splits": max_splits}
        return [
            service_cv.estimate_job(
                req.model, spec, np.broadcast_to(np.uint8(0), (rows, 4)), kernel, None, 0
            )
            for rows in sizes
        ]

    def costliest(trees: int, count: int) -> list[Any]:
        every = [folds(trees, j) for j in (1, 2, 3, 4)]
        every.sort(key=lambda f: -sum(e.seconds for e in f))
        return [e for f in every[:count] for e in f]

    # okcore's order: 4 candidates x 3 trees, then 2 x 3 trees added, then 1 x 6 added
    first = sum(e.seconds for e in costliest(3, 4))
    added = sum(e.seconds - e.factor_seconds for e in costliest(3, 2) + costliest(6, 1))
    assert all(e.factor_seconds > 0 for e in costliest(3, 2))
    assert halving.cv.estimate.cv_seconds == pytest.approx(first + added, rel=1e-9)
    held = sum(e.disk_bytes + 8.0 * e.n_train * e.rank for e in costliest(3, 4))

    def final(trees: int) -> float:  # the final fit's memory (grid: 15 trees, halving: 12)
        return max(
            service_cv.estimate_job(
                req.model, {**params, "n_estimators": trees, "max_splits": j}, req.inputs,
                kernel, None, 0,
            ).memory_bytes
            for j in (1, 2, 3, 4)
        )  # fmt: skip

    assert halving.cv.estimate.memory_bytes == pytest.approx(
        grid.cv.estimate.memory_bytes - final(15) + final(12) + held, rel=1e-9
    )
