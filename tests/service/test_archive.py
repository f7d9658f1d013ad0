"""Model export / import: a round trip between two servers, and hostile archives refused."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from svc_data import Graph, TestClient, diffusion_request, make_settings, vector_data

import okcore
from service.app import create_app
from service.store.archives import MANIFEST, MAX_MEMBERS, ROOT

Members = dict[str, bytes]


@pytest.fixture
def other(tmp_path: Path) -> Iterator[TestClient]:
    """A second server with its own store."""
    with TestClient(create_app(make_settings(tmp_path / "other"))) as c:
        yield c


@pytest.fixture
def with_ids(client: TestClient, graph: Graph) -> dict[str, Any]:
    ids = [f"v{i}" for i in range(len(graph.train))]
    r = client.post("/train", json=diffusion_request(graph, ids=ids))
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def _export(client: TestClient, model_id: str) -> bytes:
    r = client.get(f"/models/{model_id}/export")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/gzip"
    assert f"okboost-model-{model_id}.tar.gz" in r.headers["content-disposition"]
    return r.content


def _import(client: TestClient, data: bytes, **params: str) -> Any:
    return client.post(
        "/models/import",
        content=data,
        params=params,
        headers={"content-type": "application/gzip"},
    )


def _members(archive: bytes) -> Members:
    out = {}
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        for m in tar.getmembers():
            f = tar.extractfile(m)
            if f is not None:
                out[m.name] = f.read()
    return out


def _pack(members: Members, extra: Callable[[tarfile.TarFile], None] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if extra is not None:
            extra(tar)
    return buf.getvalue()


def _queries(graph: Graph) -> dict[str, Any]:
    return {"inputs": graph.features[graph.test].tolist(), "top_k": 3}


# ---------------------------------------------------------------- round trip
def test_round_trip_gives_identical_answers(
    client: TestClient, other: TestClient, with_ids: dict[str, Any], graph: Graph
) -> None:
    model_id = with_ids["model_id"]
    archive = _export(client, model_id)
    names = set(_members(archive))
    assert f"{ROOT}/{MANIFEST}" in names and f"{ROOT}/estimator/manifest.json" in names
    assert f"{ROOT}/ids.json" in names and f"{ROOT}/inputs.npy" in names
    r = _import(other, archive)
    assert r.status_code == 201, r.text
    assert r.json()["model_id"] == model_id and r.headers["location"] == f"/models/{model_id}"
    assert r.json()["status"] == "ready" and r.json()["has_ids"] is True
    for path in ("/kernel", "/predict"):
        body = {"model_id": model_id, **_queries(graph)}
        assert client.post(path, json=body).json() == other.post(path, json=body).json()
    curves = {"curves": True}
    imported = other.get(f"/models/{model_id}", params=curves).json()["train_loss"]
    assert (
        imported
        and imported == client.get(f"/models/{model_id}", params=curves).json()["train_loss"]
    )


def test_an_id_clash_is_a_409_unless_renamed(
    client: TestClient, trained: dict[str, Any], graph: Graph
) -> None:
    archive = _export(client, trained["model_id"])
    r = _import(client, archive)
    assert r.status_code == 409 and r.json()["error"]["code"] == "model_exists"
    assert "on_conflict=rename" in r.json()["error"]["message"]
    r = _import(client, archive, on_conflict="rename")
    assert r.status_code == 201, r.text
    new_id = r.json()["model_id"]
    assert new_id != trained["model_id"] and r.json()["job_id"] is None
    body = {"model_id": new_id, **_queries(graph)}
    want = client.post("/kernel", json={**body, "model_id": trained["model_id"]}).json()
    got = client.post("/kernel", json=body).json()
    assert got["kernel"] == want["kernel"] and got["model_id"] == new_id
    assert len(client.get("/models").json()["models"]) == 2


def test_export_of_a_missing_or_unready_model(client: TestClient) -> None:
    assert client.get(f"/models/{'0' * 32}/export").status_code == 404
    assert client.get("/models/not-an-id/export").status_code == 404


def test_nothing_is_left_behind(
    client: TestClient, other: TestClient, trained: dict[str, Any], tmp_path: Path
) -> None:
    archive = _export(client, trained["model_id"])
    assert _import(other, archive[: len(archive) // 2]).status_code == 422
    root = tmp_path / "other" / "models"
    assert not [p for p in root.iterdir() if p.name.startswith(".tmp-")]
    assert other.get("/models").json()["models"] == []
    store = tmp_path / "models"
    assert not [p for p in store.iterdir() if p.name.startswith(".tmp-")]  # export temp gone


# ---------------------------------------------------------------- hostile archives
@pytest.fixture
def good(client: TestClient, trained: dict[str, Any]) -> Members:
    return _members(_export(client, trained["model_id"]))


def _relist(members: Members) -> Members:
    """Rewrite export.json so that its checksums match the (tampered) members."""
    import hashlib

    manifest = json.loads(members[f"{ROOT}/{MANIFEST}"])
    manifest["files"] = {
        name.removeprefix(f"{ROOT}/"): {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)}
        for name, d in members.items()
        if name != f"{ROOT}/{MANIFEST}"
    }
    return {**members, f"{ROOT}/{MANIFEST}": json.dumps(manifest).encode()}


def _versioned(members: Members, version: Any) -> bytes:
    """export.json with another format_version."""
    return json.dumps(
        {**json.loads(members[f"{ROOT}/{MANIFEST}"]), "format_version": version}
    ).encode()


def _link(kind: bytes, name: str, target: str) -> Callable[[tarfile.TarFile], None]:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, target
        tar.addfile(info)

    return add


def _device(kind: bytes) -> Callable[[tarfile.TarFile], None]:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(f"{ROOT}/dev")
        info.type, info.devmajor, info.devminor = kind, 1, 3
        tar.addfile(info)

    return add


HOSTILE: dict[str, tuple[Callable[[Members], bytes], int, str]] = {
    "absolute path": (
        lambda m: _pack({**m, "/etc/okboost-evil": b"x"}),
        422,
        "is an absolute path",
    ),
    "dot-dot": (
        lambda m: _pack({**m, f"{ROOT}/../evil.json": b"x"}),
        422,
        "contains '..'",
    ),
    "outside the folder": (
        lambda m: _pack({**m, "elsewhere/evil.json": b"x"}),
        422,
        f"is not inside the folder '{ROOT}/'",
    ),
    "hidden name": (lambda m: _pack({**m, f"{ROOT}/.evil": b"x"}), 422, "not a plain path"),
    "newer export": (
        lambda m: _pack({**m, f"{ROOT}/{MANIFEST}": _versioned(m, 99)}),
        422,
        "exported by a newer okboost: upgrade this service",
    ),
    "version true": (
        lambda m: _pack({**m, f"{ROOT}/{MANIFEST}": _versioned(m, True)}),
        422,
        "export format version True is not supported",
    ),
    "symlink": (
        lambda m: _pack(m, _link(tarfile.SYMTYPE, f"{ROOT}/ids.json", "/etc/passwd")),
        422,
        "is a symbolic link",
    ),
    "hard link": (
        lambda m: _pack(m, _link(tarfile.LNKTYPE, f"{ROOT}/x", "/etc/passwd")),
        422,
        "is a hard link",
    ),
    "character device": (lambda m: _pack(m, _device(tarfile.CHRTYPE)), 422, "is a device file"),
    "block device": (lambda m: _pack(m, _device(tarfile.BLKTYPE)), 422, "is a device file"),
    "fifo": (lambda m: _pack(m, _device(tarfile.FIFOTYPE)), 422, "is a FIFO"),
    "too many members": (
        lambda m: _pack({**m, **{f"{ROOT}/f{i}": b"" for i in range(MAX_MEMBERS)}}),
        422,
        f"more than {MAX_MEMBERS} members",
    ),
    "duplicate member": (
        lambda m: _pack(m, lambda t: t.addfile(_info(f"{ROOT}/ids.json", 2), io.BytesIO(b"[]"))),
        422,
        "appears twice",
    ),
    "unlisted file": (
        lambda m: _pack({**m, f"{ROOT}/extra.json": b"{}"}),
        422,
        "archive member 'extra.json' is not listed",
    ),
    "missing file": (
        lambda m: _pack({k: v for k, v in m.items() if not k.endswith("inputs.npy")}),
        422,
        "file 'inputs.npy' listed in 'export.json' is missing",
    ),
    "checksum": (
        lambda m: _pack({**m, f"{ROOT}/record.json": m[f"{ROOT}/record.json"] + b" "}),
        422,
        "file 'record.json' fails its checksum",
    ),
    "no manifest": (
        lambda m: _pack({k: v for k, v in m.items() if not k.endswith(MANIFEST)}),
        422,
        "has no 'okboost-model/export.json'",
    ),
    "pickled inputs": (
        lambda m: _pack(_relist({**m, f"{ROOT}/inputs.npy": _pickled_npy()})),
        422,
        "cannot be read",
    ),
    "tampered estimator": (
        lambda m: _pack(_relist({**m, f"{ROOT}/estimator/manifest.json": _tampered(m)})),
        422,
        "cannot be loaded",
    ),
    "inconsistent ids": (
        lambda m: _pack(_relist({**m, f"{ROOT}/ids.json": b'["a", "b"]'})),
        422,
        "ids is [2] but the estimator has",
    ),
    "not ready": (
        lambda m: _pack(_relist({**m, f"{ROOT}/record.json": b'{"status": "training"}'})),
        422,
        "does not describe a ready model",
    ),
    "created not a number": (
        lambda m: _pack(_relist(_edit_record(m, created="x"))),
        422,
        "not a valid model record: created: Input should be a valid number",
    ),
    "train_loss not a list": (
        lambda m: _pack(_relist(_edit_record(m, train_loss={"a": 1}))),
        422,
        "not a valid model record: train_loss: Input should be a valid list",
    ),
    "record names another model": (
        lambda m: _pack(_relist(_edit_record(m, model="krr"))),
        422,
        "its record names model 'krr' (KernelRidgeRegressor) but its estimator is a "
        "OKBoostRegressor",
    ),
    "unknown record field": (
        lambda m: _pack(_relist(_edit_record(m, padding="x" * 100))),
        422,
        "padding: Extra inputs are not permitted",
    ),
    "not an archive": (lambda m: b"hello, this is not a tar file", 422, "not a readable"),
    "not a tar inside gzip": (lambda m: gzip.compress(b"x" * 2000), 422, "not a readable"),
}


def _edit_record(m: Members, **changes: Any) -> Members:
    record = json.loads(m[f"{ROOT}/record.json"])
    return {**m, f"{ROOT}/record.json": json.dumps({**record, **changes}).encode()}


def _info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    return info


def _pickled_npy() -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    return buf.getvalue()


def _tampered(m: Members) -> bytes:
    manifest = json.loads(m[f"{ROOT}/estimator/manifest.json"])
    first = next(iter(manifest["arrays"].values()))
    first["sha256"] = "0" * 64
    return json.dumps(manifest).encode()


@pytest.fixture
def with_ids_members(client: TestClient, with_ids: dict[str, Any]) -> Members:
    return _members(_export(client, with_ids["model_id"]))


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_archives_are_refused(
    other: TestClient, with_ids_members: Members, case: str, tmp_path: Path
) -> None:
    build, status, message = HOSTILE[case]
    r = _import(other, build(with_ids_members))
    assert r.status_code == status, r.text
    assert message in r.json()["error"]["message"], r.json()
    models = other.get("/models")
    assert models.status_code == 200 and models.json()["models"] == []
    root = tmp_path / "other" / "models"
    assert sorted(p.name for p in root.iterdir()) == ["jobs"]  # nothing written, nothing left


def test_archives_over_the_size_limit_are_a_413(
    tmp_path: Path, client: TestClient, trained: dict[str, Any]
) -> None:
    archive = _export(client, trained["model_id"])
    settings = make_settings(tmp_path / "small", max_archive_bytes=4096)
    with TestClient(create_app(settings)) as small:
        r = _import(small, archive)
        assert r.status_code == 413, r.text
        assert "OKBOOST_MAX_ARCHIVE_BYTES" in r.json()["error"]["message"]
        # a gzip bomb: a member declaring little but the stream expanding to a lot
        bomb = gzip.compress(b"\0" * (1 << 22))
        r = _import(small, bomb)
        assert r.status_code in (413, 422), r.text


def test_import_needs_the_archive_as_the_body(client: TestClient) -> None:
    r = client.post("/models/import", files={"archive": ("m.tar.gz", b"x")})
    assert r.status_code == 415 and "--data-binary" in r.json()["error"]["message"]
    r = client.post("/models/import", content=b"", headers={"content-type": "application/gzip"})
    assert r.status_code == 422 and "empty" in r.json()["error"]["message"]


# ---------------------------------------------------------------- rows held out
def _held_out_model(client: TestClient) -> str:
    """An OKBoost model whose early stopping held rows out: its estimator keeps fewer rows
    (okcore's n_train_, train_indices_) than the inputs, outputs and ids stored beside it."""
    X, Y = vector_data(n=40)
    body = {"model": "okboost", "inputs": X.tolist(), "ids": [f"v{i}" for i in range(40)],
            "output_kernel": {"type": "rbf", "sigma": 1.5, "outputs": Y.tolist()},
            "params": {"n_estimators": 100, "n_iter_no_change": 3, "random_state": 0},
            "wait": True}  # fmt: skip
    r = client.post("/train", json=body)
    assert r.status_code == 201 and r.json()["model"]["n_train"] == 40, r.text
    return str(r.json()["model_id"])


def test_a_model_that_held_rows_out_round_trips(client: TestClient, other: TestClient) -> None:
    """Its import was a 422 ("'inputs.npy' has shape [40, 3] but the estimator was trained
    on 36 rows"): the estimator's N is the rows it kept, the record's n_train those given."""
    model_id = _held_out_model(client)
    r = _import(other, _export(client, model_id))
    assert r.status_code == 201, r.text
    X, Y = vector_data(n=40)
    query = {"model_id": model_id, "inputs": (X[:4] + 0.1).tolist(), "top_k": 3}
    for path, extra in (
        ("/predict", {"weights": "dense", "return_outputs": True}),
        ("/kernel", {"top_k": 2}),  # scores against its training rows' inputs: all 40
        ("/evaluate", {"outputs": Y[:4].tolist()}),
    ):
        if path == "/evaluate":
            query.pop("top_k")
        want = client.post(path, json={**query, **extra})
        assert want.status_code == 200 and other.post(path, json={**query, **extra}).json() == (
            want.json()
        )
    assert other.get(f"/models/{model_id}").json()["n_train"] == 40


def test_kept_rows_outside_the_rows_given_are_refused(
    client: TestClient, other: TestClient, tmp_path: Path
) -> None:
    members = _members(_export(client, _held_out_model(client)))
    folder = tmp_path / "estimator"
    folder.mkdir()
    for name in ("manifest.json", "arrays.npz"):
        (folder / name).write_bytes(members[f"{ROOT}/estimator/{name}"])
    est = okcore.load(folder)
    est.train_indices_ = est.train_indices_ + 40 - est.train_indices_[-1]  # past the last row
    okcore.save(est, folder)
    tampered = {
        **members,
        **{
            f"{ROOT}/estimator/{n}": (folder / n).read_bytes()
            for n in ("manifest.json", "arrays.npz")
        },
    }
    r = _import(other, _pack(_relist(tampered)))
    assert r.status_code == 422, r.text
    assert "train_indices_ are not" in r.json()["error"]["message"]
    assert other.get("/models").json()["models"] == []
