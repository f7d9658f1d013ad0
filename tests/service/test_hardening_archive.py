"""Archive bombs on POST /models/import: every byte an archive can make the server hold is
bounded before it is held (tar headers, decompressed members, .npz members, JSON files)."""

from __future__ import annotations

import io
import json
import tarfile
import tracemalloc
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from svc_data import TestClient, make_settings
from test_archive import Members, _export, _import, _members, _relist

from service.app import create_app
from service.store.archives import MAX_HEADER_BYTES, MAX_MODEL_DEPTH, MAX_SUBMODELS, ROOT

MiB = 1 << 20


@pytest.fixture
def other(tmp_path: Path) -> Iterator[TestClient]:
    """A second server (default limits) with its own store."""
    with TestClient(create_app(make_settings(tmp_path / "other"))) as c:
        yield c


@pytest.fixture
def good(client: TestClient, trained: dict[str, Any]) -> Members:
    return _members(_export(client, trained["model_id"]))


def _tar_gz(members: Members, *, fmt: int = tarfile.PAX_FORMAT, **extra: Any) -> bytes:
    """A .tar.gz of ``members``; ``extra`` goes into the first member's TarInfo."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=fmt, compresslevel=9) as tar:
        for i, (name, data) in enumerate(members.items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            for key, value in (extra if i == 0 else {}).items():
                setattr(info, key, value)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _nothing_left(root: Path, client: TestClient) -> None:
    assert client.get("/models").json()["models"] == []
    assert sorted(p.name for p in root.iterdir()) == ["jobs"]


def test_a_real_gzip_bomb_over_the_decompressed_limit_is_a_413(tmp_path: Path) -> None:
    """A 64 KB upload that expands to 64 MiB (a tar member of zeros), limit 1 MiB."""
    bomb = _tar_gz({f"{ROOT}/export.json": b"{}", f"{ROOT}/inputs.npy": bytes(64 * MiB)})
    assert len(bomb) < 256 * 1024
    with TestClient(create_app(make_settings(tmp_path, max_archive_bytes=MiB))) as small:
        r = _import(small, bomb)
        assert r.status_code == 413, r.text
        assert "OKBOOST_MAX_ARCHIVE_BYTES" in r.json()["error"]["message"]
        _nothing_left(tmp_path / "models", small)


def test_a_pax_header_bomb_is_refused_before_it_is_read(
    other: TestClient, good: Members, tmp_path: Path
) -> None:
    """A valid model archive whose first member carries a 32 MiB PAX comment: tarfile reads
    a PAX header whole, so it must be refused while it streams in."""
    bomb = _tar_gz(good, pax_headers={"comment": "a" * (32 * MiB)})
    r = _import(other, bomb)
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "PAX extended header" in message and str(MAX_HEADER_BYTES) in message
    _nothing_left(tmp_path / "other" / "models", other)


def test_a_gnu_long_name_bomb_is_refused(other: TestClient, good: Members, tmp_path: Path) -> None:
    members = {f"{ROOT}/" + "a" * (4 * MiB): b"x", **good}
    r = _import(other, _tar_gz(members, fmt=tarfile.GNU_FORMAT))
    assert r.status_code == 422, r.text
    assert "long name" in r.json()["error"]["message"]
    _nothing_left(tmp_path / "other" / "models", other)


def _with_npz_member(good: Members, name: str, array: np.ndarray) -> Members:
    """The model's arrays.npz with one more (deflated) member, export.json relisted."""
    key = f"{ROOT}/estimator/arrays.npz"
    buf = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(good[key])) as src,
        zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info), zipfile.ZIP_STORED)
        npy = io.BytesIO()
        np.save(npy, array)
        dst.writestr(name, npy.getvalue())
    return _relist({**good, key: buf.getvalue()})


def test_an_npz_member_bomb_is_refused_before_it_is_inflated(
    other: TestClient, good: Members
) -> None:
    """arrays.npz with an extra 64 MiB zero array (64 KB deflated): refused from the zip
    directory and the okcore manifest, without inflating it (peak allocation measured)."""
    archive = _tar_gz(_with_npz_member(good, "zeros.npy", np.zeros(8 * MiB)))
    assert len(archive) < 512 * 1024
    tracemalloc.start()
    try:
        r = _import(other, archive)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert r.status_code == 422, r.text
    assert "'estimator/arrays.npz' does not hold the arrays" in r.json()["error"]["message"]
    assert peak < 24 * MiB, f"{peak / MiB:.0f} MiB allocated while refusing the archive"


def test_a_compressed_npz_member_is_refused(other: TestClient, good: Members) -> None:
    """A listed array, deflated: np.load would inflate it in one call, so only the stored
    form the service writes is read."""
    key = f"{ROOT}/estimator/arrays.npz"
    buf = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(good[key])) as src,
        zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    r = _import(other, _tar_gz(_relist({**good, key: buf.getvalue()})))
    assert r.status_code == 422, r.text
    assert "is compressed" in r.json()["error"]["message"]


@pytest.mark.parametrize("name", ["record.json", "estimator/manifest.json"])
def test_json_files_over_their_cap_are_refused_before_parsing(
    other: TestClient, good: Members, name: str
) -> None:
    key = f"{ROOT}/{name}"
    data = json.loads(good[key])
    data["padding"] = "x" * (9 * MiB)
    r = _import(other, _tar_gz(_relist({**good, key: json.dumps(data).encode()})))
    assert r.status_code == 422, r.text
    assert f"'{name}' holds" in r.json()["error"]["message"]
    assert other.get("/models").status_code == 200


def test_a_valid_archive_still_imports(other: TestClient, good: Members) -> None:
    r = _import(other, _tar_gz(good))
    assert r.status_code == 201, r.text


def test_training_arrays_of_the_wrong_shape_are_refused_before_they_are_read(
    other: TestClient, good: Members
) -> None:
    """inputs.npy holding 64 MiB of zeros (a 64 KB archive): its header is compared with the
    estimator's N and p before np.load reads it."""
    npy = io.BytesIO()
    np.save(npy, np.zeros((8 * MiB // 4, 4)))
    archive = _tar_gz(_relist({**good, f"{ROOT}/inputs.npy": npy.getvalue()}))
    assert len(archive) < 512 * 1024
    tracemalloc.start()
    try:
        r = _import(other, archive)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert r.status_code == 422, r.text
    assert "'inputs.npy' has shape [2097152, 4]" in r.json()["error"]["message"]
    assert peak < 24 * MiB, f"{peak / MiB:.0f} MiB allocated while refusing the archive"


def test_a_member_folders_manifest_over_its_cap_is_refused_before_parsing(
    other: TestClient, good: Members
) -> None:
    """A model made of models keeps a manifest.json per member folder, at any depth: each is
    capped (MANIFEST_BYTES) before it is parsed."""
    name = "estimator/member-0/manifest.json"
    padded = json.dumps({"padding": "x" * (9 * MiB)}).encode()
    r = _import(other, _tar_gz(_relist({**good, f"{ROOT}/{name}": padded})))
    assert r.status_code == 422, r.text
    assert f"'{name}' holds" in r.json()["error"]["message"]
    assert other.get("/models").json()["models"] == []


@pytest.mark.parametrize(
    "members",
    [[f"member-{i}" for i in range(MAX_SUBMODELS + 1)], ["../evil"], ["member-0", "member-0"]],
    ids=["too many", "not a folder name", "repeated"],
)
def test_a_manifest_naming_members_beyond_the_bounds_is_refused(
    other: TestClient, good: Members, members: list[str]
) -> None:
    key = f"{ROOT}/estimator/manifest.json"
    manifest = json.loads(good[key])
    manifest["members"] = members
    r = _import(other, _tar_gz(_relist({**good, key: json.dumps(manifest).encode()})))
    assert r.status_code == 422, r.text
    assert "lists members that are not folders of a model" in r.json()["error"]["message"]


def test_member_folders_nested_beyond_the_depth_bound_are_refused(
    other: TestClient, good: Members
) -> None:
    """Each manifest names one member folder below it, deeper than MAX_MODEL_DEPTH."""
    folders = ["estimator"]
    for _ in range(MAX_MODEL_DEPTH):
        folders.append(f"{folders[-1]}/m")
    nested = {
        f"{ROOT}/{folder}/manifest.json": json.dumps({"members": ["m"]}).encode()
        for folder in folders
    }
    r = _import(other, _tar_gz(_relist({**good, **nested})))
    assert r.status_code == 422, r.text
    assert "levels deep" in r.json()["error"]["message"]
