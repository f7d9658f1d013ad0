"""Export / import of bipartite and multi-label models: the archive carries the column
side and the thresholds, the imported model answers as the original, and a column side
that disagrees with the interactions is refused."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, TestClient, bipartite_network, label_data, make_settings

from service.app import create_app
from service.store.archives import ROOT

NET = bipartite_network()


@pytest.fixture
def other(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(tmp_path / "other"))) as c:
        yield c


def _round_trip(client: TestClient, other: TestClient, model_id: str) -> bytes:
    r = client.get(f"/models/{model_id}/export")
    assert r.status_code == 200, r.text
    imported = other.post("/models/import", content=r.content,
                          headers={"content-type": "application/gzip"})  # fmt: skip
    assert imported.status_code == 201, imported.text
    return r.content


def _members(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_bipartite_round_trip(client: TestClient, other: TestClient) -> None:
    body: dict[str, Any] = {
        "task": "bipartite",
        "model": "okboost",
        "rows": {"inputs": NET.rows[:30].tolist(), "ids": NET.row_ids[:30]},
        "cols": {"inputs": NET.cols[:20].tolist(), "ids": NET.col_ids[:20]},
        "edges": NET.edges(range(30), range(20)),
        "params": SMALL,
        "wait": True,
    }
    model_id = client.post("/train", json=body).json()["model_id"]
    archive = _round_trip(client, other, model_id)
    names = set(_members(archive))
    assert {f"{ROOT}/col_estimator/manifest.json", f"{ROOT}/col_inputs.npy",
            f"{ROOT}/col_ids.json"} <= names  # fmt: skip
    query = {"model_id": model_id, "rows": {"inputs": NET.rows[30:].tolist()},
             "cols": {"inputs": NET.cols[20:].tolist()}, "top_k": 2}  # fmt: skip
    assert client.post("/kernel", json=query).json() == other.post("/kernel", json=query).json()
    assert other.get(f"/models/{model_id}").json()["task"] == "bipartite"


def test_bipartite_archive_with_a_foreign_column_side_is_refused(
    client: TestClient, other: TestClient
) -> None:
    body: dict[str, Any] = {
        "task": "bipartite",
        "model": "okboost",
        "rows": {"inputs": NET.rows[:30].tolist()},
        "cols": {"inputs": NET.cols[:20].tolist()},
        "edges": NET.edges(range(30), range(20)),
        "params": SMALL,
        "wait": True,
    }
    model_id = client.post("/train", json=body).json()["model_id"]
    members = _members(client.get(f"/models/{model_id}/export").content)
    buf = io.BytesIO()
    np.save(buf, np.zeros((7, 2)))
    members[f"{ROOT}/col_inputs.npy"] = buf.getvalue()
    manifest = json.loads(members[f"{ROOT}/export.json"])
    manifest["files"]["col_inputs.npy"] = {
        "sha256": hashlib.sha256(buf.getvalue()).hexdigest(),
        "size": len(buf.getvalue()),
    }
    members[f"{ROOT}/export.json"] = json.dumps(manifest).encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    r = other.post("/models/import", content=out.getvalue(),
                   headers={"content-type": "application/gzip"})  # fmt: skip
    assert r.status_code == 422, r.text
    assert "col_inputs.npy" in r.json()["error"]["message"]


@pytest.mark.parametrize("model", [{"model": "okboost", "params": SMALL}, {}])
def test_multilabel_round_trip(client: TestClient, other: TestClient, model: dict) -> None:
    """A named model, and the default (the weighted average of its kept candidates)."""
    X, Y = label_data()
    body = {"task": "multilabel", "inputs": X[:45].tolist(), "labels": Y[:45].tolist(),
            "label_names": ["a", "b", "c", "d"], "wait": True, **model}  # fmt: skip
    model_id = client.post("/train", json=body).json()["model_id"]
    _round_trip(client, other, model_id)
    for metric in (None, "hamming_loss"):
        query = {"model_id": model_id, "inputs": X[45:].tolist(), "metric": metric}
        assert (
            client.post("/predict", json=query).json() == other.post("/predict", json=query).json()
        )
