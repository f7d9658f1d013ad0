"""Stores written before the record moved into the model's folder open as they were: a
committed store of that layout (tests/service/data/store_v0, SOURCE.md there) and the
crash leftovers of that layout, built by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from svc_data import TestClient, make_settings

from service.app import create_app
from service.errors import NotFound
from service.store.ids import new_id
from service.store.model_store import RECORD_FILE, ModelStore

OLD_STORE = Path(__file__).parent / "data" / "store_v0"
READY, FAILED = "f47ebfaf49a7411a8733bc31fcfa7705", "767f448c95a84e0590db545f3050add1"


def _old_store(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    shutil.copytree(OLD_STORE / "models", root)
    return root


def _record(root: Path, model_id: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((root / model_id / RECORD_FILE).read_text())
    return record


def test_the_committed_old_store_serves_as_before(tmp_path: Path) -> None:
    root = _old_store(tmp_path)
    before = {m: json.loads((root / f"{m}.json").read_text()) for m in (READY, FAILED)}
    expected = json.loads((OLD_STORE / "expected_kernel.json").read_text())
    with TestClient(create_app(make_settings(tmp_path, job_isolation="thread"))) as client:
        listed = client.get("/models", params={"curves": True, "importances": True}).json()
        assert {m["model_id"]: m["status"] for m in listed["models"]} == {
            READY: "ready",
            FAILED: "failed",
        }
        for model_id, record in before.items():
            info = client.get(f"/models/{model_id}", params={"curves": True}).json()
            assert info["name"] == record["name"] and info["error"] == record["error"]
        r = client.post("/kernel", json={"model_id": READY, "inputs": expected["inputs"]})
        assert r.status_code == 200, r.text
        got, want = r.json(), expected["kernel"]
        np.testing.assert_allclose(got["kernel"], want["kernel"], rtol=1e-12)
        assert got["shape"] == want["shape"]
        assert client.get(f"/jobs/{before[READY]['job_id']}").json()["state"] == "done"
        assert client.get(f"/models/{READY}/export").status_code == 200
    # one record per model, in its folder; none beside
    assert sorted(p.name for p in root.glob("*.json")) == []
    for model_id, record in before.items():
        assert _record(root, model_id) == record
    assert sorted(p.name for p in (root / FAILED).iterdir()) == [RECORD_FILE]


def test_old_layout_leftovers_of_crashes(tmp_path: Path) -> None:
    root = _old_store(tmp_path)
    ready = json.loads((root / f"{READY}.json").read_text())
    # crash between renaming the folder into place and updating the record beside it
    crashed = new_id()
    shutil.copytree(root / READY, root / crashed)
    (root / crashed / RECORD_FILE).write_text(json.dumps({**ready, "model_id": crashed}))
    (root / f"{crashed}.json").write_text(
        json.dumps({**ready, "model_id": crashed, "status": "training", "train_loss": None})
    )
    # crash in a deletion, after the folder went and before the record did
    deleted = new_id()
    (root / f"{deleted}.json").write_text(json.dumps({**ready, "model_id": deleted}))
    # not a model's record: left alone
    (root / "notes.json").write_text("{}")
    store = ModelStore(root)
    assert store.read_record(crashed)["status"] == "ready"
    assert store.read_record(crashed)["train_loss"] == ready["train_loss"]
    assert store.load(crashed).model_id == crashed
    with pytest.raises(NotFound):
        store.read_record(deleted)
    assert not (root / deleted).exists()
    assert sorted(p.name for p in root.glob("*.json")) == ["notes.json"]
    assert ModelStore(root).migrate_records() == []  # once is enough
