"""The bipartite task's default over HTTP: /train without a model fits okcore's
BipartiteRegressor() (the rank average), the record names its members and weights, /kernel
answers okcore's scores and edges, a reload and an export / import answer the same, K x K
cross-validation with given folds and unknown pairs work, the job counts the members' steps,
and what needs a named model (params, new_pairs, one-set routes needing W^F) is a 422 in
the one error shape."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from svc_data import TestClient, bipartite_network, make_settings

import okcore
from okcore.bipartite import BipartiteRegressor
from service.app import create_app
from service.jobs.progress import Progress
from service.schemas.bipartite import BipartiteTrainRequest
from service.store.ids import new_id
from service.store.model_store import ModelStore
from service.training.bipartite import plan_bipartite, run_bipartite

NET = bipartite_network()
R, C = np.arange(30), np.arange(20)
TR, TC = np.arange(30, 36), np.arange(20, 24)


def _body(**extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "task": "bipartite",
        "rows": {"inputs": NET.rows[R].tolist(), "ids": NET.row_ids[:30]},
        "cols": {"inputs": NET.cols[C].tolist(), "ids": NET.col_ids[:20]},
        "edges": NET.edges(R, C),
        "wait": True,
    }
    body.update(extra)
    return body


def _train(client: TestClient, **extra: Any) -> dict[str, Any]:
    r = client.post("/train", json=_body(**extra))
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()
    return out


QUERY = {"rows": {"inputs": NET.rows[TR].tolist()}, "cols": {"inputs": NET.cols[TC].tolist()},
         "threshold": 0.5, "top_k": 3}  # fmt: skip


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("default")
    with TestClient(create_app(make_settings(root))) as client:
        yield client, _train(client), root


def test_the_default_is_okcores_rank_average(trained: Any) -> None:
    client, fit, _ = trained
    record = client.get(f"/models/{fit['model_id']}").json()
    assert record["model"] == "auto" and record["params"] == {}
    info = record["bipartite"]
    default = info["default"]
    names = [m["name"] for m in default["members"]]
    reference = BipartiteRegressor(random_state=0).fit(
        NET.rows[R], NET.cols[C], NET.Y[np.ix_(R, C)]
    )
    assert len(names) == len(reference.default_model_.members_)
    assert [m["weight"] for m in default["members"]] == [
        float(w) for w in reference.default_model_.weights
    ]
    assert [m["block_weights"]["new_rows"] for m in default["members"]] == (
        reference.default_model_.weights_for("new_rows")
    )
    assert "rank" in default["scores"] and info["new_pairs"] is None
    answer = client.post("/kernel", json={"model_id": fit["model_id"], **QUERY}).json()
    Xr, Xc = NET.rows[TR], NET.cols[TC]
    np.testing.assert_allclose(answer["scores"]["new_rows"], reference.predict(Xr))
    np.testing.assert_allclose(answer["scores"]["new_cols"], reference.predict(None, Xc))
    np.testing.assert_allclose(answer["scores"]["new_pairs"], reference.predict(Xr, Xc))
    assert answer["edges"]["new_rows_ids"]  # thresholded, ranked edges, by id


def test_reload_and_export_import_answer_the_same(trained: Any, tmp_path: Path) -> None:
    client, fit, root = trained
    want = client.post("/kernel", json={"model_id": fit["model_id"], **QUERY}).json()
    with TestClient(create_app(make_settings(root))) as again:  # a fresh load from disk
        assert again.post("/kernel", json={"model_id": fit["model_id"], **QUERY}).json() == want
    archive = client.get(f"/models/{fit['model_id']}/export")
    assert archive.status_code == 200, archive.text
    with TestClient(create_app(make_settings(tmp_path / "other"))) as other:
        imported = other.post("/models/import", content=archive.content,
                              headers={"content-type": "application/gzip"})  # fmt: skip
        assert imported.status_code == 201, imported.text
        assert other.post("/kernel", json={"model_id": fit["model_id"], **QUERY}).json() == want
        truth = {"new_rows": NET.edges(TR, C), "new_pairs": NET.edges(TR, TC)}  # block indices
        body = {"model_id": fit["model_id"], "rows": QUERY["rows"], "cols": QUERY["cols"],
                "edges": truth}  # fmt: skip
        scored = other.post("/evaluate", json=body)
        assert scored.status_code == 200, scored.text
        assert scored.json() == client.post("/evaluate", json=body).json()
        assert scored.json()["new_rows"]["auroc"] is not None


def test_routes_that_need_wf_say_which_model_to_train(trained: Any) -> None:
    client, fit, _ = trained
    for route in ("/kernel", "/predict"):
        r = client.post(route, json={"model_id": fit["model_id"], "inputs": [[0.0, 1.0, 2.0]]})
        assert r.status_code == 422, r.text
        error = r.json()["error"]
        assert set(error) >= {"code", "message"}
        assert "bipartite" in error["message"]


def test_weights_above_1_with_auto_are_422_before_queueing(trained: Any) -> None:
    """NRLMF (a member) diverges on weights: the default refuses them naming the field; a
    named model learns them, and fractions in [0, 1] stay the default's."""
    client, _, _ = trained
    Y = NET.Y[np.ix_(R, C)]
    weighted = _body(edges=None, adjacency=(2.5 * Y).tolist())
    del weighted["edges"]
    r = client.post("/train", json=weighted)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["message"].startswith("adjacency holds weights above 1 (up to 2.5)")
    assert '"model": "okboost"' in error["message"]
    assert error["details"][0]["loc"] == ["adjacency"]
    named = {**weighted, "model": "okboost", "params": {"n_estimators": 3}}
    assert client.post("/train", json=named).status_code == 201


@pytest.mark.parametrize(
    ("extra", "where"),
    [({"params": {"n_estimators": 5}}, "params"), ({"new_pairs": "refit"}, "new_pairs")],
)
def test_named_model_settings_with_auto_are_422(trained: Any, extra: Any, where: str) -> None:
    client, _, _ = trained
    r = client.post("/train", json=_body(**extra))
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert "auto" in error["message"] and "name" in error["message"]
    assert error["details"][0]["loc"] == [where]


def test_a_cpu_budget_cuts_the_boosted_member_and_the_record_says_so(trained: Any) -> None:
    client, fit, _ = trained
    full = fit["model"]["bipartite"]["default"]
    assert full["max_cpu_seconds"] is None
    assert [m["rounds"] for m in full["members"] if "rounds" in m] == [[300, 300]]
    cut = _train(client, max_cpu_seconds=1e-6)["model"]["bipartite"]["default"]
    assert cut["max_cpu_seconds"] == 1e-6
    assert [m["rounds"] for m in cut["members"] if "rounds" in m] == [[1, 1]]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"model": "okboost", "max_cpu_seconds": 5}, "budget of model 'auto'"),
        ({"max_cpu_seconds": 0}, "greater than 0"),
        ({"max_cpu_seconds": 1e5}, "less than or equal to 3600"),
    ],
)
def test_a_budget_is_bounded_and_for_auto_only(trained: Any, extra: Any, message: str) -> None:
    client, _, _ = trained
    r = client.post("/train", json=_body(**extra))
    assert r.status_code == 422, r.text
    assert message in r.json()["error"]["message"]


@pytest.mark.slow
def test_cv_with_given_folds_and_unknown_pairs(trained: Any) -> None:
    client, _, _ = trained
    rows = np.arange(30) % 3
    cols = np.arange(20) % 2
    unknown = [[i, j] for i, j in np.argwhere(NET.Y[np.ix_(R, C)] == 0)[::9].tolist()]
    fit = _train(client, unknown_pairs=unknown,
                 cv={"row_folds": rows.tolist(), "col_folds": cols.tolist()})  # fmt: skip
    info = fit["model"]["bipartite"]
    assert info["n_unknown"] == len(unknown) and info["cv"]["folds"] == [3, 2]
    Y = NET.Y[np.ix_(R, C)].copy()
    Y[tuple(np.asarray(unknown).T)] = np.nan
    want = okcore.bipartite.bipartite_cross_validate(
        BipartiteRegressor(), NET.rows[R], NET.cols[C], Y, row_folds=rows, col_folds=cols
    ).summary()
    got = info["cv"]["mean"]
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key


class _Recorder:
    """A job's reporter keeping (phase, part, done, total, the ETA the job would answer)."""

    def __init__(self, progress: Progress | None = None, stop_at: int | None = None) -> None:
        self.progress, self.stop_at = progress, stop_at
        self.seen: list[tuple[str, str | None, int, int, float | None]] = []

    def __call__(self, p: Any, /) -> bool:
        eta = None
        if self.progress is not None:
            now = time.time()
            self.progress.report(p, now)
            eta = self.progress.eta(now, None)
        self.seen.append((p.phase, p.part, p.done, p.total, eta))
        return self.stop_at is not None and len(self.seen) >= self.stop_at

    def saving(self) -> None:
        pass


def _stored_plan(tmp_path: Path, **extra: Any) -> tuple[Any, ModelStore, str]:
    plan = plan_bipartite(BipartiteTrainRequest.model_validate(_body(**extra)), 10**7)
    store, model_id = ModelStore(tmp_path), new_id()
    plan.record.update(model_id=model_id, job_id=new_id())
    store.create_record(plan.record)
    return plan, store, model_id


def test_the_job_counts_every_members_steps_with_an_eta(tmp_path: Path) -> None:
    plan, store, model_id = _stored_plan(tmp_path, cv={"folds": 2})
    n_members = len(plan.default.steps)
    assert plan.total == 5 * sum(plan.default.steps)
    phases = plan.phases()
    assert phases.counted == "members" and phases.per_tree > 0
    recorder = _Recorder(Progress(total=plan.total, plan=phases))
    assert run_bipartite(plan, store.root, model_id, recorder) == "done"
    seen = recorder.seen
    assert all(phase == "members" for phase, *_ in seen)
    done = [d for _, _, d, _, _ in seen]
    assert done == sorted(done) and done[-1] == plan.total
    assert all(eta is not None for *_, eta in seen)
    # every member of every fit is heard starting, the boosted ones tree by tree between
    starts = [part for _, part, *_ in seen if part and "/" not in part]
    assert len(starts) == 5 * n_members
    assert len(set(done)) > 5 * n_members + 5
    record = store.read_record(model_id)
    assert (
        record["status"] == "ready" and len(record["bipartite"]["default"]["members"]) == n_members
    )


def test_a_cancel_is_heard_between_members(tmp_path: Path) -> None:
    plan, store, model_id = _stored_plan(tmp_path)
    assert run_bipartite(plan, store.root, model_id, _Recorder(stop_at=2)) == "cancelled"


@pytest.mark.parametrize("side", ["rows", "cols"])
def test_the_default_on_one_vertex_of_a_side_is_a_422_before_queueing(
    client: TestClient, side: str
) -> None:
    """Its kernel ridge member takes its RBF width from the spread of a side's inputs, and
    the default takes no params to give one: a 422 at once saying what to send."""
    body = _body(wait=False)
    keep = {"rows": [0], "cols": list(range(20))} if side == "rows" else {
        "rows": list(range(30)), "cols": [0]}  # fmt: skip
    body["rows"] = {"inputs": NET.rows[keep["rows"]].tolist()}
    body["cols"] = {"inputs": NET.cols[keep["cols"]].tolist()}
    Y = np.ones((len(keep["rows"]), len(keep["cols"])))
    Y[0, 0] = 0.0 if Y.size > 1 else 1.0
    body.pop("edges")
    body["adjacency"] = Y.tolist()
    r = client.post("/train", json=body)
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    for fragment in (side, "undefined on 1 row", "name a model"):
        assert fragment in message, message
