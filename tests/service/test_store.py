"""Model store: atomic folders, strict ids, restart survival, crash leftovers, LRU bound."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, Graph, TestClient, diffusion_request, make_settings, model_record

import okcore
from service.app import create_app
from service.errors import NotFound, NotReady, StoreCorrupted
from service.store.ids import new_id, valid_id
from service.store.model_store import STALE_TEMPORARY, ModelStore, write_model


def _fitted(g: Graph) -> Any:
    est = okcore.OKBoostRegressor(**SMALL)
    return est.fit(
        g.features[g.train], kernel={"type": "diffusion", "edges": g.train_edges().tolist()}
    )


def _record(model_id: str, **extra: Any) -> dict[str, Any]:
    return model_record(model_id, **extra)


def _store_with_model(root: Path, g: Graph) -> tuple[ModelStore, str]:
    store = ModelStore(root)
    mid = new_id()
    store.create_record(_record(mid))
    store.save_model(mid, _fitted(g), g.features[g.train], None, _record(mid, status="ready"))
    return store, mid


def test_ids_are_strict() -> None:
    assert valid_id(new_id()) and len(new_id()) == 32
    for bad in ("", "..", "../x", "A" * 32, "g" * 32, "0" * 31, "0" * 33, "0" * 32 + "\n"):
        assert not valid_id(bad)


def test_save_is_atomic_and_loads_back(tmp_path: Path, graph: Graph) -> None:
    store = ModelStore(tmp_path, cache_size=2)
    mid = new_id()
    store.create_record(_record(mid))
    with pytest.raises(NotReady, match="still training"):
        store.load(mid)
    est = _fitted(graph)
    X = graph.features[graph.train]
    store.save_model(mid, est, X, None, _record(mid, status="ready"))
    assert [p.name for p in tmp_path.iterdir()] == [mid]  # one folder, the record inside
    assert sorted(p.name for p in (tmp_path / mid).iterdir()) == [
        "estimator",
        "inputs.npy",
        "record.json",
    ]
    loaded = ModelStore(tmp_path).load(mid)  # a fresh store: from disk
    np.testing.assert_array_equal(loaded.inputs, X)
    X_new = graph.features[graph.test]
    np.testing.assert_allclose(loaded.estimator.predict_kernel(X_new), est.predict_kernel(X_new))


def test_crash_leftovers_are_cleaned(tmp_path: Path, graph: Graph) -> None:
    store, mid = _store_with_model(tmp_path, graph)
    # crash in the middle of writing another model, or a record, an hour ago
    leftovers = [
        tmp_path / f".tmp-{new_id()}-x",
        tmp_path / ".tmp-abc.json",
        tmp_path / mid / ".tmp-def.json",
    ]
    leftovers[0].mkdir()
    leftovers[1].write_text("{")
    leftovers[2].write_text("{")
    old = time.time() - STALE_TEMPORARY - 1
    for path in leftovers:
        os.utime(path, (old, old))
    # another replica's (or Dask worker's) write in progress over the same store
    (tmp_path / f".tmp-{new_id()}-y").mkdir()
    store = ModelStore(tmp_path)
    assert [p.name[-2:] for p in tmp_path.glob(".tmp-*")] == ["-y"]  # only the fresh one kept
    assert not leftovers[2].exists()
    assert store.read_record(mid)["status"] == "ready"
    assert store.load(mid).model_id == mid


def test_a_model_deleted_while_it_trains_is_not_written(tmp_path: Path, graph: Graph) -> None:
    store = ModelStore(tmp_path)
    mid = new_id()
    store.create_record(_record(mid))
    store.delete(mid)
    write_model(tmp_path, mid, _fitted(graph), graph.features[graph.train], None, _record(mid))
    assert list(tmp_path.iterdir()) == []  # no model, no temporary folder
    with pytest.raises(NotFound):
        store.read_record(mid)


def test_a_model_deleted_through_another_replica_leaves_this_ones_cache(
    tmp_path: Path, graph: Graph
) -> None:
    here, mid = _store_with_model(tmp_path, graph)
    there = ModelStore(tmp_path)  # a second replica over the same directory
    assert here.load(mid) is here.load(mid)  # cached
    there.delete(mid)
    with pytest.raises(NotFound):
        here.load(mid)
    assert mid not in here.cached_ids()


def test_corrupted_model_is_a_server_error_not_a_crash(tmp_path: Path, graph: Graph) -> None:
    store, mid = _store_with_model(tmp_path, graph)
    (tmp_path / mid / "estimator" / "manifest.json").write_text("{not json")
    with pytest.raises(StoreCorrupted, match="cannot be loaded"):
        ModelStore(tmp_path).load(mid)


def test_lru_cache_is_bounded(tmp_path: Path, graph: Graph) -> None:
    store = ModelStore(tmp_path, cache_size=2)
    est = _fitted(graph)
    ids = [new_id() for _ in range(3)]
    for mid in ids:
        store.create_record(_record(mid))
        store.save_model(mid, est, graph.features[graph.train], None, _record(mid, status="ready"))
    for mid in ids:
        store.load(mid)
    assert store.cached_ids() == ids[1:]
    store.load(ids[1])
    assert store.cached_ids() == [ids[2], ids[1]]
    store.delete(ids[1])
    assert store.cached_ids() == [ids[2]]
    with pytest.raises(NotFound):
        store.read_record(ids[1])
    assert not (tmp_path / ids[1]).exists()


def test_models_survive_a_restart(tmp_path: Path, graph: Graph) -> None:
    settings = make_settings(tmp_path)
    X_new = graph.features[graph.test].tolist()
    with TestClient(create_app(settings)) as c:
        mid = c.post("/train", json=diffusion_request(graph)).json()["model_id"]
        before = c.post("/kernel", json={"model_id": mid, "inputs": X_new}).json()
    with TestClient(create_app(settings)) as c:
        assert [m["model_id"] for m in c.get("/models").json()["models"]] == [mid]
        after = c.post("/kernel", json={"model_id": mid, "inputs": X_new}).json()
    assert after == before


@pytest.mark.parametrize(
    ("corrupt", "reason"),
    [
        (lambda r: {**r, "created": "x"}, "created: Input should be a valid number"),
        (lambda r: {**r, "train_loss": {"a": 1}}, "train_loss: Input should be a valid list"),
        (lambda r: "{not json", "record.json is not JSON"),
    ],
)
def test_a_record_corrupted_on_disk_is_quarantined_not_a_500(
    settings: Any, graph: Graph, corrupt: Any, reason: str
) -> None:
    with TestClient(create_app(settings)) as client:
        body = diffusion_request(graph, params={**SMALL, "n_estimators": 2})
        good, bad = (client.post("/train", json=body).json()["model_id"] for _ in range(2))
        path = settings.model_dir / bad / "record.json"
        record = json.loads(path.read_text())
        damaged = corrupt(record)
        path.write_text(damaged if isinstance(damaged, str) else json.dumps(damaged))

        listing = client.get("/models")
        assert listing.status_code == 200, listing.text
        models = {m["model_id"]: m for m in listing.json()["models"]}
        assert models[good]["status"] == "ready"
        assert models[bad]["status"] == "invalid" and reason in models[bad]["error"]
        one = client.get(f"/models/{bad}")
        assert one.status_code == 200 and one.json() == models[bad]
        r = client.post("/predict", json={"model_id": bad, "inputs": [[0.0] * 4]})
        assert r.status_code == 409 and r.json()["error"]["code"] == "model_invalid"
        assert reason in r.json()["error"]["message"]
        assert client.delete(f"/models/{bad}").status_code == 200
        assert not (settings.model_dir / bad).exists()
        assert [m["model_id"] for m in client.get("/models").json()["models"]] == [good]


@pytest.mark.parametrize(
    ("corrupt", "reason"),
    [
        (lambda r: {**r, "created": "x"}, "created: Input should be a valid number"),
        (lambda r: {**r, "state": "paused"}, "state: Input should be"),
        (lambda r: {**r, "job_id": "0" * 32}, "the record names job '" + "0" * 32),
        (lambda r: "{not json", "the record is not JSON"),
    ],
)
def test_a_job_record_corrupted_on_disk_is_quarantined_and_reported(
    settings: Any, graph: Graph, corrupt: Any, reason: str
) -> None:
    """As a model's: listed with the state "invalid" and the reason (never a 500, never
    left out), answered by GET /jobs/{id}; DELETE /jobs/{id} removes the record."""
    with TestClient(create_app(settings)) as client:
        body = diffusion_request(graph, params={**SMALL, "n_estimators": 2}, wait=True)
        trained = [client.post("/train", json=body).json() for _ in range(2)]
        good, bad = (t["job_id"] for t in trained)
        path = settings.model_dir / "jobs" / f"{bad}.json"
        damaged = corrupt(json.loads(path.read_text()))
        path.write_text(damaged if isinstance(damaged, str) else json.dumps(damaged))

    with TestClient(create_app(settings)) as client:  # a fresh server: records from disk
        listing = client.get("/jobs")
        assert listing.status_code == 200, listing.text
        jobs = {j["job_id"]: j for j in listing.json()["jobs"]}
        assert jobs.keys() == {good, bad} and jobs[good]["state"] == "done"
        assert jobs[bad]["state"] == "invalid" and reason in jobs[bad]["error"]
        named = None if isinstance(damaged, str) else trained[1]["model_id"]
        assert jobs[bad]["model_id"] == named
        one = client.get(f"/jobs/{bad}")
        assert one.status_code == 200 and one.json() == jobs[bad]
        assert client.get("/models").status_code == 200
        metrics = client.get("/metrics").text
        assert 'okboost_jobs{state="invalid"} 1.0' in metrics

        removed = client.delete(f"/jobs/{bad}")
        assert removed.status_code == 200 and removed.json() == jobs[bad]
        assert not path.exists()
        assert client.get(f"/jobs/{bad}").status_code == 404
        assert [j["job_id"] for j in client.get("/jobs").json()["jobs"]] == [good]


def test_an_invalid_record_is_never_written(tmp_path: Path) -> None:
    store = ModelStore(tmp_path)
    with pytest.raises(ValueError, match="n_train: Input should be a valid integer"):
        store.create_record(_record(new_id(), n_train="12"))
    assert list(tmp_path.iterdir()) == []
