"""Model archives: export a stored model as one ``.tar.gz``, import it on another server.

An archive holds one folder, ``okboost-model/``, with every file of the model's folder
(``estimator/manifest.json``, ``estimator/arrays.npz``, ``inputs.npy`` or ``inputs.npz``,
``outputs.npy``, ``ids.json``, ``record.json``; a model made of models keeps its members in
folders below ``estimator/``, as okcore writes them) and ``export.json``: the format, the
model's id and the SHA-256 and size of every file.

An import is checked as a load, before anything becomes visible:

- the archive is read as a stream (gzip or plain tar), never with ``extract``: at most
  ``MAX_MEMBERS`` members and ``max_bytes`` bytes in total, decompression included;
  only directories and regular files whose path stays inside ``okboost-model/``
  (segments of letters, digits, ``_``, ``-`` and ``.``, not starting with a dot: no
  absolute path, no ``..``); symbolic and hard links, devices, FIFOs and sparse files
  are refused;
- every file is listed in ``export.json`` with its checksum and size, and every listed
  file is there;
- its ``record.json`` is a valid model record (service.schemas.records: a 422 names the
  field that is not), saying ``ready``;
- the model loads as the store loads it (okcore's manifest checksums and tree checks,
  ``.npy`` / ``.npz`` read with ``allow_pickle=False``), and
  the inputs, outputs and ids agree with the estimator on N and p.

Files are written under a temporary name in the store's folder and renamed into place
(the store's rule), so a failed import leaves nothing behind. An id already used on this
server is a 409 unless the client asks for a new id (``on_conflict=rename``).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import re
import shutil
import tarfile
import tempfile
import time
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any

import numpy as np
from pydantic import ValidationError

import okcore
from service import __version__
from service.errors import InvalidRequest, NotFound, ServiceError, TooLarge
from service.schemas.records import ModelRecord, validation_reason
from service.store.ids import valid_id
from service.store.model_store import (
    ForeignEntry,
    IdTaken,
    ModelStore,
    read_model_folder,
    store_files,
)
from service.store.usage import Quotas

ROOT = "okboost-model"
MANIFEST = "export.json"
FORMAT = "okboost-model-export"
FORMAT_VERSION = 1
MAX_MEMBERS = 128
"""Most members (files and directories) an archive may have; a model has about ten, a
bipartite model made of models (okcore's default rank average) about fifty."""
MAX_MANIFEST_BYTES = 1 << 20
MAX_HEADER_BYTES = 256 * 1024
"""Most bytes tarfile may read between the end of one member's data and the start of the
next one's: its header block plus PAX extended headers and GNU long names (a model's are
well under a kilobyte), with room for read-ahead. tarfile reads such headers whole, so a
PAX header holding a 300 MB comment would be held in memory without this bound."""
MAX_SUBMODELS = 16
"""Most member folders one okcore manifest may name (an average, a rank average, the sides
of a bipartite model)."""
MAX_MODEL_DEPTH = 4
"""Deepest nesting of member folders (a bipartite default: its rank average, a member, the
member's one-sided models)."""
_MEMBER_FOLDER = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
MANIFEST_BYTES = 8 << 20
"""Largest okcore ``manifest.json`` of any member folder."""
MAX_JSON_FILE_BYTES = {
    "record.json": 8 << 20,  # curves of up to 50,000 trees take about 1 MB each
    "estimator/manifest.json": 8 << 20,
    "ids.json": 64 << 20,  # 200,000 ids of 256 ASCII characters, quoted: 52 MB
    "col_estimator/manifest.json": 8 << 20,  # a bipartite model's column side
    "col_ids.json": 64 << 20,
}
"""Largest size of each JSON file of an archive, checked before it is parsed (``export.json``
has MAX_MANIFEST_BYTES, the ``manifest.json`` of a member folder MANIFEST_BYTES)."""
_SEGMENT = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")
_CHUNK = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"


class InvalidArchive(InvalidRequest):
    """The uploaded archive is not a model this service can import (422)."""

    code = "invalid_archive"


class ModelExists(ServiceError):
    """An imported model's id is already used on this server (409)."""

    status = 409
    code = "model_exists"


# ---------------------------------------------------------------- export
def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _tar_info(name: str, size: int, mtime: float) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, int(mtime), 0o644
    return info


def export_model(store: ModelStore, model_id: str, dest: Path) -> None:
    """Write the archive of the ready model ``model_id`` to ``dest`` (404 / 409 as a load)."""
    store.load(model_id)  # a model that loads (ready, checksums fine) is worth exporting
    try:
        _write_archive(store.model_path(model_id), model_id, dest)
    except ForeignEntry as exc:  # put there since it was loaded
        raise store.foreign(model_id, exc) from None
    except FileNotFoundError:
        raise NotFound(f"model '{model_id}' was deleted while it was exported") from None


def export_to_file(store: ModelStore, model_id: str) -> Path:
    """The archive of ``model_id`` in a new temporary file of the store's folder (the
    caller removes it once sent)."""
    fd, name = tempfile.mkstemp(prefix=".tmp-export-", suffix=".tar.gz", dir=store.root)
    os.close(fd)
    path = Path(name)
    try:
        export_model(store, model_id, path)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def _write_archive(folder: Path, model_id: str, dest: Path) -> None:
    """``export.json`` then every file of ``folder``, under ``okboost-model/``."""
    files = store_files(folder)  # no link followed: a link raises ForeignEntry
    sizes = {p.relative_to(folder).as_posix(): p.stat().st_size for p in files}
    listing = {
        rel: {"sha256": _sha256(p), "size": sizes[rel]} for p, rel in zip(files, sizes, strict=True)
    }
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model_id": model_id,
        "exported": time.time(),
        "service_version": __version__,
        "okcore_version": str(getattr(okcore, "__version__", "unknown")),
        "files": listing,
    }
    now = time.time()
    # level 1: float arrays barely compress (an N = 2000 model: 71 MB of files, 65.5 MB
    # at level 6 or 65.8 MB at level 1), and level 1 takes half the time
    with tarfile.open(dest, "w:gz", compresslevel=1, format=tarfile.PAX_FORMAT) as tar:
        raw = json.dumps(manifest, indent=1).encode()
        tar.addfile(_tar_info(f"{ROOT}/{MANIFEST}", len(raw), now), io.BytesIO(raw))
        for path in files:
            rel = path.relative_to(folder).as_posix()
            with path.open("rb") as fh:
                tar.addfile(_tar_info(f"{ROOT}/{rel}", sizes[rel], now), fh)


# ---------------------------------------------------------------- import
class _Bounded(io.RawIOBase):
    """A reader that refuses to give more than ``limit`` bytes (decompressed) in total, and
    no more than the window set by :meth:`allow` (a member's data plus MAX_HEADER_BYTES)
    from where that window was opened: tar headers cannot make tarfile hold more."""

    def __init__(self, inner: IO[bytes], limit: int) -> None:
        self.inner, self.limit, self.count = inner, limit, 0
        self.window_end = MAX_HEADER_BYTES

    def readable(self) -> bool:
        return True

    def allow(self, size: int) -> None:
        """Let ``size`` more bytes (a member's data) and MAX_HEADER_BYTES be read from here."""
        self.window_end = self.count + size + MAX_HEADER_BYTES

    def read(self, size: int = -1) -> bytes:
        data = self.inner.read(size if size is not None and size >= 0 else _CHUNK)
        self.count += len(data)
        if self.count > self.limit:
            raise TooLarge(
                f"the archive expands to more than {self.limit} bytes (OKBOOST_MAX_ARCHIVE_BYTES)"
            )
        if self.count > self.window_end:
            raise InvalidArchive(
                f"a tar header of the archive (a PAX extended header or a long name) holds "
                f"more than {MAX_HEADER_BYTES} bytes; a model's headers take under a "
                "kilobyte: not an okboost model export"
            )
        return data

    def readinto(self, buffer: Any) -> int:  # pragma: no cover - tarfile calls read()
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _relative_path(member: tarfile.TarInfo) -> str | None:
    """The member's path inside ``okboost-model/`` (None for that folder itself), or a 422
    saying why the path is refused."""
    name = member.name
    why = None
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        why = "is an absolute path"
    elif "\\" in name or "\x00" in name:
        why = "contains a backslash or a NUL character"
    elif ".." in name.split("/"):
        why = "contains '..'"
    if why is None:
        parts = name.rstrip("/").split("/") if member.isdir() else name.split("/")
        if parts[0] != ROOT:
            why = f"is not inside the folder '{ROOT}/'"
        elif not all(_SEGMENT.match(p) for p in parts[1:]) or len(parts) > 3 + MAX_MODEL_DEPTH:
            why = "is not a plain path (letters, digits, '_', '-', '.'; no leading dot)"
        else:
            return "/".join(parts[1:]) or None
    raise InvalidArchive(f"archive member '{name[:200]}' {why}: refused")


def _member_kind(member: tarfile.TarInfo) -> str | None:
    """Why a member of this type is refused, or None for files and directories."""
    if member.issym():
        return f"is a symbolic link (to '{member.linkname[:200]}')"
    if member.islnk():
        return f"is a hard link (to '{member.linkname[:200]}')"
    if member.ischr() or member.isblk():
        return "is a device file"
    if member.isfifo():
        return "is a FIFO"
    if member.issparse():
        return "is a sparse file"
    if not (member.isreg() or member.isdir()):
        return f"has an unsupported type ({member.type!r})"
    return None


def _extract(
    source: IO[bytes], dest: Path, max_bytes: int, quotas: Quotas | None = None
) -> dict[str, tuple[str, int]]:
    """Write the regular files of the archive under ``dest``; returns {path: (sha256, size)}.
    Nothing but validated paths is ever created, and no link is followed or made. The sizes
    the members declare, added up, are checked against ``max_bytes`` and the store's
    ``quotas`` before each member is written."""
    head = source.read(2)
    source.seek(0)
    stream: IO[bytes] = (
        gzip.GzipFile(fileobj=source) if head == GZIP_MAGIC else source  # type: ignore[assignment]
    )
    guard = _Bounded(stream, max_bytes + MAX_HEADER_BYTES * (MAX_MEMBERS + 1))
    bounded = io.BufferedReader(guard)
    written: dict[str, tuple[str, int]] = {}
    total = 0
    with tarfile.open(fileobj=bounded, mode="r|") as tar:
        for count, member in enumerate(tar, start=1):
            guard.allow(member.size)
            if count > MAX_MEMBERS:
                raise InvalidArchive(
                    f"the archive has more than {MAX_MEMBERS} members; a model has about ten"
                )
            kind = _member_kind(member)
            if kind is not None:
                raise InvalidArchive(f"archive member '{member.name[:200]}' {kind}: refused")
            rel = _relative_path(member)
            if member.isdir():
                continue
            if rel is None:
                raise InvalidArchive(f"archive member '{ROOT}' must be a folder, not a file")
            if rel in written:
                raise InvalidArchive(f"archive member '{member.name[:200]}' appears twice")
            total += member.size
            if total > max_bytes:
                raise TooLarge(
                    f"the archive's files hold more than {max_bytes} bytes "
                    "(OKBOOST_MAX_ARCHIVE_BYTES)"
                )
            if quotas is not None:
                quotas.check(total, estimated=False)  # 507 / 429 as for /train
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            fh = tar.extractfile(member)
            assert fh is not None  # a regular file
            digest, size = hashlib.sha256(), 0
            with target.open("xb") as out:
                while chunk := fh.read(_CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
            written[rel] = (digest.hexdigest(), size)
    return written


def _read_manifest(dest: Path, written: dict[str, tuple[str, int]]) -> dict[str, Any]:
    if MANIFEST not in written:
        raise InvalidArchive(f"the archive has no '{ROOT}/{MANIFEST}': not an okboost model export")
    if written[MANIFEST][1] > MAX_MANIFEST_BYTES:
        raise InvalidArchive(f"'{MANIFEST}' is larger than {MAX_MANIFEST_BYTES} bytes")
    try:
        manifest = json.loads((dest / MANIFEST).read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArchive(f"'{MANIFEST}' is not valid JSON: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InvalidArchive(f"'{MANIFEST}' does not describe an okboost model export")
    version = manifest.get("format_version")
    if type(version) is not int or version != FORMAT_VERSION:
        newer = type(version) is int and version > FORMAT_VERSION
        raise InvalidArchive(
            f"export format version {version!r} is not supported "
            f"(this service reads version {FORMAT_VERSION})"
            + ("; it was exported by a newer okboost: upgrade this service to import it"
               if newer else "")
        )  # fmt: skip
    model_id, files = manifest.get("model_id"), manifest.get("files")
    if not isinstance(model_id, str) or not valid_id(model_id):
        raise InvalidArchive(f"'{MANIFEST}' has no valid model_id (32 hex digits)")
    if not isinstance(files, dict):
        raise InvalidArchive(f"'{MANIFEST}' has no 'files' listing")
    return manifest


def _verify_files(manifest: dict[str, Any], written: dict[str, tuple[str, int]]) -> None:
    listed: dict[str, Any] = manifest["files"]
    present = {k: v for k, v in written.items() if k != MANIFEST}
    for rel in sorted(set(present) - set(listed)):
        raise InvalidArchive(f"archive member '{rel}' is not listed in '{MANIFEST}'")
    for rel in sorted(set(listed) - set(present)):
        raise InvalidArchive(f"file '{rel}' listed in '{MANIFEST}' is missing from the archive")
    for rel, (sha, size) in sorted(present.items()):
        meta = listed[rel]
        if not isinstance(meta, dict) or meta.get("sha256") != sha or meta.get("size") != size:
            raise InvalidArchive(
                f"file '{rel}' fails its checksum in '{MANIFEST}' (corrupted or modified)"
            )


def _check_json_sizes(written: dict[str, tuple[str, int]]) -> None:
    """422 for a JSON file larger than its MAX_JSON_FILE_BYTES, before any is parsed."""
    for rel, (_, size) in written.items():
        limit = MAX_JSON_FILE_BYTES.get(rel)
        if limit is None and rel.endswith("/manifest.json"):
            limit = MANIFEST_BYTES
        if limit is not None and size > limit:
            raise InvalidArchive(
                f"'{rel}' holds {size} bytes, over the {limit} bytes such a file may have: "
                "not an okboost model export"
            )


def _npy_header(fh: IO[bytes], what: str) -> tuple[list[int], str, bool, int]:
    """(shape, dtype string, fortran order, header length) of the .npy stream ``fh``."""
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        else:
            raise ValueError(f"format version {version} of .npy")
    except (ValueError, OSError, EOFError, SyntaxError) as exc:
        raise InvalidArchive(f"{what} is not a readable .npy array: {exc}") from None
    return list(shape), dtype.str, bool(fortran), fh.tell()


def _check_npz(path: Path, what: str, expected: dict[str, Any] | None) -> None:
    """Check an .npz of the archive without inflating anything: its members are stored
    (as the service writes them; np.load would inflate a compressed member in one call),
    are .npy arrays whose headers agree with their sizes and, for the estimator's arrays,
    are exactly the arrays ``expected`` (okcore's manifest) lists, with their shapes, dtypes
    and SHA-256 (streamed). okcore and scipy then load only what was checked."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_MEMBERS:
                raise InvalidArchive(f"{what} has more than {MAX_MEMBERS} arrays")
            names = {info.filename.removesuffix(".npy") for info in infos}
            if expected is not None and (len(names) != len(infos) or names != set(expected)):
                raise InvalidArchive(f"{what} does not hold the arrays its manifest lists")
            for info in infos:
                if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
                    raise InvalidArchive(
                        f"{what} member '{info.filename[:200]}' is compressed; model files "
                        "are written uncompressed"
                    )
                _check_npz_member(zf, info, f"{what} member '{info.filename[:200]}'", expected)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise InvalidArchive(f"{what} is not a readable .npz file: {exc}") from None


def _check_npz_member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, what: str, expected: dict[str, Any] | None
) -> None:
    with zf.open(info) as fh:
        shape, dtype, fortran, offset = _npy_header(fh, what)
        if math.prod(shape) * np.dtype(dtype).itemsize != info.file_size - offset:
            raise InvalidArchive(f"{what} declares shape {shape} but holds another size")
        if expected is None:
            return
        meta = expected[info.filename.removesuffix(".npy")]
        if not isinstance(meta, dict) or [shape, dtype] != [meta.get("shape"), meta.get("dtype")]:
            raise InvalidArchive(f"{what} does not have the shape and dtype its manifest lists")
    if fortran:  # okcore hashes the C-order bytes: checked by okcore.load, from here on
        return
    digest = hashlib.sha256()
    with zf.open(info) as fh:
        fh.seek(offset)
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    if digest.hexdigest() != meta.get("sha256"):
        raise InvalidArchive(f"{what} fails its checksum (corrupted or modified)")


def _check_arrays(folder: Path) -> None:
    """The estimators' arrays (a bipartite model has a second one, ``col_estimator/``; a
    model made of models, each member's in its folder, those of the members' members too)
    and sparse inputs, checked as :func:`_check_npz` says."""
    for estimator, inputs in (("estimator", "inputs"), ("col_estimator", "col_inputs")):
        if estimator == "col_estimator" and not (folder / estimator).exists():
            continue
        manifest = _estimator_manifest(folder, estimator)
        _check_model_arrays(folder, estimator, inputs, manifest, 0)
        attributes = manifest.get("attributes")
        attributes = dict(attributes) if isinstance(attributes, dict) else {}
        if inputs == "inputs":
            attributes["n_train_"] = _stored_rows(folder, manifest, attributes.get("n_train_"))
        _check_training_arrays(folder, attributes, inputs)


def _stored_rows(folder: Path, manifest: dict[str, Any], n: Any) -> Any:
    """The training rows stored beside the estimator: its N, or for a model whose early
    stopping held rows out (it lists ``train_indices_``, the rows it kept) the record's
    ``n_train``, the rows it was given (:func:`_check_model` checks the kept rows)."""
    arrays = manifest.get("arrays")
    if not isinstance(arrays, dict) or "train_indices_" not in arrays:
        return n
    try:
        record = json.loads((folder / "record.json").read_text("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return n  # _check_model says what is wrong with it
    given = record.get("n_train") if isinstance(record, dict) else None
    held_out = type(given) is int and type(n) is int and given > n
    return given if held_out else n


def _check_model_arrays(
    folder: Path, estimator: str, inputs: str, manifest: dict[str, Any], depth: int
) -> None:
    """One okcore model folder's arrays, and those of the member folders its manifest names
    (okcore's composites: at most MAX_SUBMODELS names of lower-case letters, digits and
    dashes, at most MAX_MODEL_DEPTH deep)."""
    members = manifest.get("members")
    if members is None:
        _check_estimator_arrays(folder, estimator, inputs, manifest)
        return
    if (
        not isinstance(members, list)
        or not 1 <= len(members) <= MAX_SUBMODELS
        or not all(isinstance(m, str) and _MEMBER_FOLDER.match(m) for m in members)
        or len(set(members)) != len(members)
        or depth >= MAX_MODEL_DEPTH
    ):
        raise InvalidArchive(
            f"'{estimator}/manifest.json' lists members that are not folders of a model "
            f"(at most {MAX_SUBMODELS} per model, {MAX_MODEL_DEPTH} levels deep)"
        )
    if "arrays" in manifest:  # a model made of models with arrays of its own (bipartite)
        _check_estimator_arrays(folder, estimator, inputs, manifest)
    for member in members:
        sub = f"{estimator}/{member}"
        _check_model_arrays(folder, sub, inputs, _estimator_manifest(folder, sub), depth + 1)


def _estimator_manifest(folder: Path, estimator: str) -> dict[str, Any]:
    try:
        text = (folder / estimator / "manifest.json").read_text("utf-8")
        manifest = json.loads(text)
    except FileNotFoundError:
        raise InvalidArchive(f"the archive has no '{estimator}/manifest.json'") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArchive(f"'{estimator}/manifest.json' is not valid JSON: {exc}") from None
    if not isinstance(manifest, dict):
        raise InvalidArchive(f"'{estimator}/manifest.json' has no 'arrays' listing")
    return manifest


def _check_estimator_arrays(
    folder: Path, estimator: str, inputs: str, manifest: dict[str, Any] | None = None
) -> None:
    """One estimator folder's ``arrays.npz`` against its manifest's listing."""
    if manifest is None:
        manifest = _estimator_manifest(folder, estimator)
    arrays = manifest.get("arrays")
    if not isinstance(arrays, dict):
        raise InvalidArchive(f"'{estimator}/manifest.json' has no 'arrays' listing")
    try:
        what = f"'{estimator}/arrays.npz'"
        _check_npz(folder / estimator / "arrays.npz", what, arrays)
        if (folder / f"{inputs}.npz").exists():
            _check_npz(folder / f"{inputs}.npz", f"'{inputs}.npz'", None)
    except InvalidArchive as exc:
        raise InvalidArchive(f"the model in the archive cannot be loaded: {exc.message}") from None


def _check_training_arrays(folder: Path, attributes: Any, inputs: str = "inputs") -> None:
    """The shapes of ``inputs.npy`` and ``outputs.npy`` (a bipartite model's column side:
    ``col_inputs.npy``), read from their headers, against the estimator's N and p (okcore's
    manifest), before np.load reads them whole: an archive of a few kilobytes can hold
    gigabytes of zeros there."""
    attributes = attributes if isinstance(attributes, dict) else {}
    n, p = attributes.get("n_train_"), attributes.get("n_features_in_")
    arrays = [(f"{inputs}.npy", [n, p])] + ([("outputs.npy", [n])] if inputs == "inputs" else [])
    for name, want in arrays:
        if not (folder / name).exists():
            continue
        with (folder / name).open("rb") as fh:
            shape, dtype, _, _ = _npy_header(fh, f"'{name}'")
        if np.dtype(dtype).hasobject:
            raise InvalidArchive(
                f"the model's files cannot be read: '{name}' holds Python objects, which "
                "would need pickle"
            )
        if shape[: len(want)] != want or (name == f"{inputs}.npy" and len(shape) != 2):
            raise InvalidArchive(
                f"the model in the archive is inconsistent: '{name}' has shape {shape} but "
                f"the estimator was trained on {n} rows" + (f" of {p} features" if p else "")
            )


def _check_model(folder: Path, model_id: str) -> dict[str, Any]:
    """Load the model as the store would and check that its parts agree; its record."""
    try:
        record = json.loads((folder / "record.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidArchive("the archive has no 'record.json'") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArchive(f"'record.json' is not valid JSON: {exc}") from None
    if not isinstance(record, dict) or record.get("status") != "ready":
        raise InvalidArchive("'record.json' does not describe a ready model")
    record["model_id"] = model_id  # the store gives it its final id (service.store.adopt)
    try:
        ModelRecord.model_validate(record)
    except ValidationError as exc:
        raise InvalidArchive(
            f"'record.json' is not a valid model record: {validation_reason(exc)}",
            details=[
                {"loc": ["record.json", *err["loc"]], "msg": err["msg"]} for err in exc.errors()
            ],
        ) from None
    try:
        loaded = read_model_folder(folder, model_id, record)
    except okcore.PersistenceError as exc:
        raise InvalidArchive(f"the model in the archive cannot be loaded: {exc}") from None
    except (OSError, ValueError, KeyError) as exc:
        raise InvalidArchive(f"the model's files cannot be read: {exc}") from None
    est = loaded.estimator
    _check_model_type(record, est)
    n, p = int(getattr(est, "n_train_", -1)), int(getattr(est, "n_features_in_", -1))
    if loaded.task_model is est:  # a bipartite default, saved whole: its rows' inputs
        # (their width was checked against okcore's manifest, which its load verified)
        n, p = int(est.n_rows_), int(loaded.inputs.shape[1])
    n = _given_rows(est, n, record.get("n_train"))
    checks: list[tuple[str, tuple[Any, ...], tuple[int, ...]]] = [
        ("inputs", tuple(loaded.inputs.shape), (n, p)),
        ("record n_train / n_features", (record.get("n_train"), record.get("n_features")), (n, p)),
    ]
    if loaded.outputs is not None:
        checks.append(("outputs rows", (loaded.outputs.shape[0],), (n,)))
    if loaded.ids is not None:
        checks.append(("ids", (len(loaded.ids),), (n,)))
    for what, got, want in checks:
        if got != want:
            raise InvalidArchive(
                f"the model in the archive is inconsistent: {what} is {list(got)} but the "
                f"estimator has {list(want)}"
            )
    return record


def _check_model_type(record: dict[str, Any], est: Any) -> None:
    """422 when the estimator is not the model its record names (``model``: a name of okcore's
    registry, or "auto" for the automatic choice); one wrapped in its input similarity map
    counts as the model it wraps. The multi-label and bipartite defaults ("auto" with a
    ``task``) are checked as the store rebuilds them (service.store.composite)."""
    name = record["model"]
    if name == "auto" and record.get("task", "structured") != "structured":
        return
    inner = est.estimator_ if isinstance(est, okcore.SimilarityInputs) else est
    expected = okcore.estimator_class(name)
    if not isinstance(inner, expected):
        raise InvalidArchive(
            f"the model in the archive is inconsistent: its record names model '{name}' "
            f"({expected.__name__}) but its estimator is a {type(inner).__name__}"
        )


def _given_rows(est: Any, n: int, given: Any) -> int:
    """The rows a model was trained on as given: its N, or ``given`` (the record's n_train)
    when early stopping held rows out and its ``train_indices_`` are N increasing rows among
    them (pre-image indices and W^F columns are mapped through them to the given rows)."""
    kept = getattr(est, "train_indices_", None)
    if kept is None or type(given) is not int or given <= n:
        return n
    kept = np.asarray(kept)
    if (
        kept.shape != (n,)
        or kept.dtype.kind not in "iu"
        or (n > 0 and (kept[0] < 0 or kept[-1] >= given))
        or np.any(np.diff(kept) <= 0)
    ):
        raise InvalidArchive(
            "the model in the archive is inconsistent: its train_indices_ are not "
            f"{n} increasing rows of the {given} training rows its record states"
        )
    return given


def import_model(
    store: ModelStore,
    source: IO[bytes],
    *,
    rename: bool,
    max_bytes: int,
    quotas: Quotas | None = None,
) -> dict[str, Any]:
    """Validate the archive in ``source`` and add its model to ``store``; the new record.
    ``quotas``: the store's quotas for the importing client (service.store.usage), checked
    before anything is read (its models) and as the members' sizes arrive (its bytes); the
    model is then counted as its (the record's ``client``)."""
    if quotas is not None:
        quotas.check(0, estimated=False)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-import-", dir=store.root))
    try:
        try:
            written = _extract(source, tmp, max_bytes, quotas)
        except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise InvalidArchive(
                f"the upload is not a readable .tar.gz or .tar archive: {exc}"
            ) from None
        manifest = _read_manifest(tmp, written)
        _verify_files(manifest, written)
        (tmp / MANIFEST).unlink()
        _check_json_sizes(written)
        _check_arrays(tmp)
        record = _check_model(tmp, manifest["model_id"])
        record.update(job_id=None, error=None, client=None if quotas is None else quotas.client)
        try:
            model_id = store.adopt(tmp, record, model_id=manifest["model_id"], rename=rename)
        except IdTaken:
            raise ModelExists(
                f"model '{manifest['model_id']}' already exists on this server: import with "
                "?on_conflict=rename to give the imported model a new id, or delete the "
                "existing model first"
            ) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return store.read_record(model_id)


def import_file(
    store: ModelStore, upload: Path, *, rename: bool, max_bytes: int, quotas: Quotas | None = None
) -> dict[str, Any]:
    """:func:`import_model` of the archive in the file ``upload``."""
    with upload.open("rb") as fh:
        return import_model(store, fh, rename=rename, max_bytes=max_bytes, quotas=quotas)
