"""Model store on disk: one folder per model, atomic writes, strict ids, LRU cache.

Layout under ``root`` (``models/`` by default)::

    <id>/              one folder per model, made when its training is queued
        record.json    the model's record: name, created, status, params, kernel, N, p,
                       curves ... (the only one: "training", then "ready", "failed" or
                       "cancelled")
        estimator/     okcore.save() output (JSON manifest + .npz, no pickle)
        inputs.npy     training inputs (needed for new-known edge scores), or
        inputs.npz     sparse (CSR) training inputs, scipy.sparse.save_npz (no pickle)
        outputs.npy    training outputs, when the kernel is on output vectors
        ids.json       the training vertices' ids (a JSON list of strings), when given
    jobs/<job>.json    training job records (see service.jobs.records)

A record is always replaced whole (written to a temporary file, then ``os.replace``-d).
A trained model's files are written in a temporary folder beside the model's, moved into
it, and only then is its record replaced by the one that says "ready": that replace is
the moment the model exists, so a crash never leaves a half-written model visible (its
files are never read while the record says otherwise). Ids are server-generated
32-hex-digit strings and are checked against a regex before any path is built from them.

Stores written before the record moved into the model's folder kept it beside the folder
(``<id>.json``) and, once trained, a copy inside; :meth:`ModelStore.migrate_records` turns
them into this layout when a store is opened.

Several service replicas and Dask workers may share one store (docs/DEPLOY.md): a cached
model is served only while its folder on disk is the one that was loaded (one stat per
load), so a model deleted through another replica is gone here too; and the leftovers of
interrupted writes are removed at start-up only once they are STALE_TEMPORARY old, since a
fresh one may be another process's write in progress.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import stat
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from pydantic import ValidationError

import okcore
from service.errors import (
    NotFound,
    NotReady,
    RecordInvalid,
    StorageFull,
    StoreCorrupted,
    UnknownModel,
)
from service.schemas.records import ModelRecord, validation_reason
from service.store import composite, pagination
from service.store.ids import new_id, valid_id
from service.vertex_ids import VertexIds, as_id_array

_TMP_PREFIX = ".tmp-"
STALE_TEMPORARY = 3600.0
"""Seconds since its last change after which a temporary file or folder is a leftover."""
IDS_FILE = "ids.json"
RECORD_FILE = "record.json"

log = logging.getLogger("okboost.store")


class IdTaken(Exception):
    """A model id is already used in this store (see :meth:`ModelStore.adopt`)."""


@contextmanager
def disk_full_is_507(what: str) -> Iterator[None]:
    """Raise StorageFull (507) instead of the OSError of a full disk or quota."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise StorageFull(
            f"the model store has no space left ({exc.strerror}) while writing {what}; nothing "
            "half-written was kept: free disk space (or delete models), then retry"
        ) from exc


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write JSON to ``path`` through a temporary file and ``os.replace``."""
    with disk_full_is_507(path.name):
        fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=".json", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def check_record(record: dict[str, Any]) -> None:
    """Refuse to write a model record the store could not read back (a ValueError: a bug)."""
    try:
        ModelRecord.model_validate(record)
    except ValidationError as exc:
        reason = validation_reason(exc)
        raise ValueError(f"model record not written, it is invalid: {reason}") from None


def write_model(
    root: Path,
    model_id: str,
    estimator: Any,
    inputs: Any,
    outputs: np.ndarray | None,
    record: dict[str, Any],
    ids: np.ndarray | None = None,
    extra: Callable[[Path], None] | None = None,
) -> bool:
    """Write the model ``model_id`` of the store at ``root``: its files, then ``record``
    (the model is ready once the record says so). Returns whether the model was written:
    deletion wins, so a model deleted meanwhile (its folder is gone, before or while its
    files are written) is not, and nothing of it is left. ``extra`` writes a composite
    model's further files into the folder being written (service.store.composite).

    A plain function (no store object) so that a training process can call it.
    """
    if not valid_id(model_id):
        raise NotFound(f"unknown model '{model_id[:64]}'")
    check_record(record)
    if not (root / model_id).is_dir():
        return False  # deleted before its files were written: none are
    tmp = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{model_id}-", dir=root))
    try:
        with disk_full_is_507(f"model {model_id}"):
            _write_model_files(tmp, estimator, inputs, outputs, ids)
            if extra is not None:
                extra(tmp)
            write_json_atomic(tmp / RECORD_FILE, record)
            return _publish(tmp, root / model_id)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _write_model_files(
    folder: Path, estimator: Any, inputs: Any, outputs: np.ndarray | None, ids: np.ndarray | None
) -> None:
    okcore.save(estimator, folder / "estimator")
    if sp.issparse(inputs):  # CSR arrays in an .npz (scipy's format, no pickle)
        sp.save_npz(folder / "inputs.npz", sp.csr_matrix(inputs), compressed=False)
    else:
        np.save(folder / "inputs.npy", np.ascontiguousarray(inputs), allow_pickle=False)
    if outputs is not None:
        np.save(folder / "outputs.npy", np.ascontiguousarray(outputs), allow_pickle=False)
    if ids is not None:
        with (folder / IDS_FILE).open("w", encoding="utf-8") as fh:
            json.dump(ids.tolist(), fh, ensure_ascii=False)


def _publish(tmp: Path, folder: Path) -> bool:
    """Move the files written in ``tmp`` into the model's ``folder``, then its record (one
    ``os.replace``: the commit); whether it was committed. Nothing happens once the folder
    is gone (the model was deleted while it trained; a deletion renames the folder away in
    one step, so it is either before the commit, which then fails, or after it, and takes
    the model): a rename into it fails, and the rest stays in ``tmp``."""
    try:
        for entry in sorted(tmp.iterdir()):
            if entry.name == RECORD_FILE:
                continue
            target = folder / entry.name
            if target.exists():  # left by an interrupted write: never read (not ready)
                _remove(target)
            os.rename(entry, target)
        os.replace(tmp / RECORD_FILE, folder / RECORD_FILE)
    except FileNotFoundError:
        if folder.exists():
            raise
        return False  # deleted meanwhile: whatever was moved went with the folder
    return True


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


def _stale(path: Path) -> bool:
    """Whether nothing in ``path`` changed for STALE_TEMPORARY seconds."""
    try:
        paths = [path, *path.rglob("*")] if path.is_dir() else [path]
        newest = max(p.lstat().st_mtime for p in paths)
    except OSError:
        return False  # renamed or removed meanwhile by its writer
    return time.time() - newest > STALE_TEMPORARY


def _load_inputs(folder: Path) -> Any:
    """Training inputs: inputs.npy (dense), or inputs.npz (sparse CSR; scipy's load_npz
    reads it with allow_pickle=False)."""
    sparse_path = folder / "inputs.npz"
    if sparse_path.exists():
        return sp.load_npz(sparse_path).tocsr()
    return np.load(folder / "inputs.npy", allow_pickle=False)


def store_files(folder: Path) -> list[Path]:
    """Every file of a model folder, found without following links (sorted): the folder
    and everything in it must be what the store writes, directories and regular files. A
    symbolic link (to a folder outside the store, say), a fifo or a device raises
    :class:`ForeignEntry` naming it, before anything is read through it."""
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise ForeignEntry(folder.name, "the model folder")
    files = []
    for top, dirs, names in os.walk(folder, followlinks=False):
        for name in [*dirs, *names]:
            path = Path(top, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                files.append(path)
            elif not stat.S_ISDIR(mode):
                raise ForeignEntry(path.relative_to(folder).as_posix(), "a file of it")
    return sorted(files)


class ForeignEntry(Exception):
    """A model folder holds (or is) something the store never writes: a link, a fifo ..."""

    def __init__(self, name: str, what: str) -> None:
        super().__init__(f"{what}, '{name[:80]}', is a symbolic link or a special file")


def read_model_folder(folder: Path, model_id: str, record: dict[str, Any]) -> LoadedModel:
    """Everything a model folder holds, read without pickle and checked as okcore.load
    checks its arrays; raises okcore.PersistenceError, OSError or ValueError."""
    estimator = okcore.load(folder / "estimator")
    inputs = _load_inputs(folder)
    out_path = folder / "outputs.npy"
    outputs = np.load(out_path, allow_pickle=False) if out_path.exists() else None
    task_model, col_ids = composite.rebuild(folder, record, estimator, inputs, outputs)
    return LoadedModel(
        model_id, estimator, inputs, outputs, record, load_ids(folder), task_model, col_ids
    )


def load_ids(folder: Path) -> VertexIds | None:
    """The training vertices' ids of a model folder (checked as on upload), or None."""
    path = folder / IDS_FILE
    if not path.exists():
        return None
    with path.open(encoding="utf-8") as fh:
        return VertexIds(as_id_array(json.load(fh), IDS_FILE))


@dataclass(frozen=True)
class LoadedModel:
    """A model ready to answer: the estimator and what the service keeps beside it.

    It also carries what every prediction against the training vertices needs and that
    depends only on the model: F(x_i) of the N training vertices in factor form (N, r),
    computed once on first use (thread-safe) and dropped with the model when the store's
    LRU cache evicts it. With it, the new-known scores of one new vertex cost O(N r)
    instead of re-predicting all N training vertices (O(M N r)) on every call.
    """

    model_id: str
    estimator: Any
    inputs: Any  # (N, p) training inputs: ndarray, or scipy.sparse CSR matrix
    outputs: np.ndarray | None  # (N, d) training outputs, when known
    record: dict[str, Any]
    ids: VertexIds | None = None  # names of the N training vertices, when given
    # a bipartite or multi-label model: okcore's fitted composite (service.store.composite)
    task_model: Any = None
    col_ids: VertexIds | None = None  # a bipartite model's column ids, when given
    _derived: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    _derived_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def kept_rows(self) -> np.ndarray | None:
        """The stored training rows the model's training outputs are, in its order, when
        early stopping held some rows out (okcore's ``train_indices_``: its pre-image
        indices and W^F columns count those rows only); None when they are all the rows."""
        rows = getattr(self.estimator, "train_indices_", None)
        if rows is None or len(rows) == self.inputs.shape[0]:
            return None
        return np.asarray(rows, dtype=np.int64)

    def train_features(self) -> np.ndarray:
        """F(x_i) of the training vertices, shape (N, r), read-only; computed on first use."""
        cached = self._derived.get("train_features")
        if cached is not None:
            return cached
        with self._derived_lock:
            cached = self._derived.get("train_features")
            if cached is None:
                cached = np.ascontiguousarray(self.estimator.predict_features(self.inputs))
                cached.setflags(write=False)
                self._derived["train_features"] = cached
            return cached

    def train_factor(self) -> np.ndarray:
        """phi(y_i) of the training outputs, shape (N, r) (observed new-known scores)."""
        phi: np.ndarray = self.estimator.output_space_.phi
        return phi


class ModelStore:
    """Models on disk plus a bounded in-memory cache of loaded ones (thread-safe)."""

    def __init__(self, root: Path, cache_size: int = 8) -> None:
        # absolute: training tasks get this path and may run in another working directory
        # (a Dask worker started elsewhere), where a relative one names another folder
        self.root = Path(root).absolute()
        self.root.mkdir(parents=True, exist_ok=True)
        self.cache_size = cache_size
        self._cache: OrderedDict[str, LoadedModel] = OrderedDict()
        self._lock = threading.Lock()
        self._load_locks: dict[str, threading.Lock] = {}
        self.cache_hits = 0  # load() answered from memory (for /metrics)
        self.cache_misses = 0  # load() read the model from disk
        self._created: dict[str, float] = {}  # creation times of records once read (fixed)
        self._stamps: dict[str, tuple[int, int] | None] = {}  # folder (inode, mtime) when loaded
        self._quarantined: set[str] = set()  # models whose invalid record was logged
        # a record as it stands (set by the job manager: a model whose job ended without its
        # status being written, on a full disk, has the job's), for what is answered and loaded
        self.as_it_stands: Callable[[dict[str, Any]], dict[str, Any]] = lambda record: record
        self._clean_temporaries()
        self.migrate_records()

    # ------------------------------------------------------------ paths
    def _check(self, model_id: str) -> str:
        if not valid_id(model_id):
            raise NotFound(f"unknown model '{model_id[:64]}': model ids are 32 hex digits")
        return model_id

    def record_path(self, model_id: str) -> Path:
        return self.model_path(model_id) / RECORD_FILE

    def model_path(self, model_id: str) -> Path:
        return self.root / self._check(model_id)

    def _clean_temporaries(self) -> None:
        """Remove leftovers of writes interrupted by a crash (STALE_TEMPORARY old)."""
        inside_models = self.root.glob(f"*/{_TMP_PREFIX}*")  # records being replaced
        for path in [*self.root.glob(_TMP_PREFIX + "*"), *inside_models]:
            if not _stale(path):
                continue  # perhaps another replica's or worker's write in progress
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)

    def remove_temporaries(self, model_id: str) -> None:
        """Remove what an interrupted save of the model left in the store: called once its
        writer is gone (a training process that was killed, or whose service was), so no
        write of it is under way."""
        for path in self.root.glob(f"{_TMP_PREFIX}{self._check(model_id)}-*"):
            shutil.rmtree(path, ignore_errors=True)

    def migrate_records(self) -> list[str]:
        """Move the records of the old layout into their model's folder; the ids moved.

        The old layout kept the record beside the folder (``<id>.json``) and, once the
        model was written, a copy inside (``<id>/record.json``). The one beside was the live
        one, except while it still said "training" beside a complete folder (a crash
        between the two writes): then the copy inside was the model's. A record that says
        "ready" without a folder is the leftover of a deletion: it is removed. Safe to run
        from several replicas at once (each step is atomic and idempotent)."""
        moved = []
        for old in sorted(self.root.glob("*.json")):
            model_id = old.stem
            if not valid_id(model_id):
                continue
            if not old.is_file() or old.is_symlink():
                log.warning("old-layout model record %s is not a regular file, left as is", old)
                continue
            try:
                with old.open(encoding="utf-8") as fh:
                    record = json.load(fh)
            except FileNotFoundError:
                continue  # moved meanwhile by another replica
            except (OSError, ValueError) as exc:
                log.warning("old-layout model record %s cannot be read, left as is: %s", old, exc)
                continue
            folder = self.model_path(model_id)
            inside = folder / RECORD_FILE
            if record.get("status") == "ready" and not folder.is_dir():
                pass  # deleted, but the record was left: the model is gone
            elif not (record.get("status") == "training" and inside.exists()):
                folder.mkdir(exist_ok=True)
                write_json_atomic(inside, record)
            old.unlink(missing_ok=True)
            moved.append(model_id)
        return moved

    # ------------------------------------------------------------ records
    def create_record(self, record: dict[str, Any]) -> None:
        """Make the model's folder with its first record (status "training")."""
        check_record(record)
        folder = self.model_path(record["model_id"])
        with disk_full_is_507(f"the record of model {record['model_id']}"):
            folder.mkdir()
        try:
            write_json_atomic(folder / RECORD_FILE, record)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise

    def read_record(self, model_id: str) -> dict[str, Any]:
        """The model's record, validated (service.schemas.records.ModelRecord): 404 when
        there is none, RecordInvalid (409) when it is not JSON or fails validation."""
        path = self.record_path(model_id)
        try:
            self._only_store_entries(model_id, path.parent, path)
            with path.open(encoding="utf-8") as fh:
                record: Any = json.load(fh)
        except FileNotFoundError:
            raise UnknownModel(model_id) from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise self._invalid(model_id, f"record.json is not JSON: {exc}") from None
        except OSError as exc:
            raise StoreCorrupted(f"record of model '{model_id}' cannot be read: {exc}") from exc
        try:
            ModelRecord.model_validate(record)
        except ValidationError as exc:
            raise self._invalid(model_id, f"record.json: {validation_reason(exc)}") from None
        if record["model_id"] != model_id:
            raise self._invalid(model_id, f"record.json names model '{record['model_id']}'")
        return dict(record)

    def _only_store_entries(self, model_id: str, *paths: Path) -> None:
        """409 (the model quarantined) when one of ``paths`` is not a directory or regular
        file the store wrote: a link would make the store read what lies elsewhere."""
        for path in paths:
            mode = os.lstat(path).st_mode  # FileNotFoundError for an unknown model
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                name = path.relative_to(self.root).as_posix()
                raise self.foreign(model_id, ForeignEntry(name, "an entry of the store"))

    def foreign(self, model_id: str, exc: ForeignEntry) -> RecordInvalid:
        """The quarantine of a model whose folder holds what the store never writes."""
        reason = f"{exc}, which the store never writes"
        if model_id not in self._quarantined:
            self._quarantined.add(model_id)
            log.warning("model %s is quarantined (listed as invalid): %s", model_id, reason)
        return RecordInvalid(
            f"model '{model_id}' is refused: {reason}. Nothing is read through it: remove "
            f"it (DELETE /models/{model_id}) and train or import the model again",
            details=[{"loc": ["record", model_id], "msg": reason}],
        )

    def _invalid(self, model_id: str, reason: str) -> RecordInvalid:
        """The quarantine of a model whose record fails validation (logged once)."""
        if model_id not in self._quarantined:
            self._quarantined.add(model_id)
            log.warning("model %s is quarantined (listed as invalid): %s", model_id, reason)
        return RecordInvalid(
            f"model '{model_id}' is quarantined, its record is invalid ({reason}): delete it "
            f"(DELETE /models/{model_id}) and train or import it again",
            details=[{"loc": ["record", model_id], "msg": reason}],
        )

    def describe(self, model_id: str) -> dict[str, Any]:
        """The model's record, or for a quarantined model what GET /models reports instead:
        its id, the status "invalid", a creation time and the reason (404 if unknown)."""
        try:
            return self.as_it_stands(self.read_record(model_id))
        except RecordInvalid as exc:
            return {
                "model_id": model_id,
                "status": "invalid",
                "created": self._creation_time(model_id),
                "error": exc.details[0]["msg"],
            }

    def _creation_time(self, model_id: str) -> float:
        """When a model was created: its record's ``created``, or for a quarantined model
        when its record file was last written (kept once read: it orders listings)."""
        created = self._created.get(model_id)
        if created is not None:
            return created
        try:
            created = float(self.read_record(model_id)["created"])
        except RecordInvalid:
            try:
                created = self.record_path(model_id).stat().st_mtime
            except FileNotFoundError:
                raise NotFound(f"unknown model '{model_id}'") from None
        self._created[model_id] = created
        return created

    def update_record(self, model_id: str, **changes: Any) -> dict[str, Any]:
        with self._lock:
            record = self.read_record(model_id)
            record.update(changes)
            check_record(record)
            try:
                write_json_atomic(self.record_path(model_id), record)
            except FileNotFoundError:
                raise NotFound(f"unknown model '{model_id}' (deleted meanwhile)") from None
        return record

    def list_keys(self) -> list[tuple[float, str]]:
        """(created, id) of every stored model. A record is read once for its creation
        time, which never changes, so listing a page reads only that page's records."""
        on_disk = {
            p.parent.name for p in self.root.glob(f"*/{RECORD_FILE}") if valid_id(p.parent.name)
        }
        for model_id in on_disk - set(self._created):
            try:
                self._creation_time(model_id)
            except (NotFound, StoreCorrupted):
                continue  # deleted meanwhile, or unreadable (a disk error): not listed
        return [(c, i) for i, c in self._created.items() if i in on_disk]

    def list_records(self) -> list[dict[str, Any]]:
        records, _ = self.page(None, None)
        return records

    def page(
        self, limit: int | None, cursor: str | None, status: str | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Records oldest first, ``limit`` of them after ``cursor`` (service.store.pagination),
        only those whose status is ``status`` if given, and the next page's cursor; a record
        deleted or unreadable meanwhile is left out, a quarantined one is described as such
        (:meth:`describe`, status "invalid")."""
        keys = self.list_keys()
        if status is not None:
            keys = [key for key in keys if self._status(key[1]) == status]
        keys, next_cursor = pagination.select(keys, limit or len(keys), cursor)
        records = []
        for _, model_id in keys:
            try:
                records.append(self.describe(model_id))
            except (NotFound, StoreCorrupted):
                continue
        return records, next_cursor

    def _status(self, model_id: str) -> str | None:
        """A model's status as answered, None when it cannot be read (deleted meanwhile)."""
        try:
            return str(self.describe(model_id).get("status"))
        except (NotFound, StoreCorrupted):
            return None

    def check_writable(self) -> str | None:
        """Why the store cannot take a new model now (not a writable directory, or a probe
        record cannot be written: a full disk), or None."""
        if not (self.root.is_dir() and os.access(self.root, os.W_OK | os.X_OK)):
            return f"model store {self.root} is not writable"
        probe = self.root / ".ready-probe.json"
        try:
            write_json_atomic(probe, {"probe": time.time()})
        except (StorageFull, OSError) as exc:
            return f"model store {self.root} cannot be written: {exc}"
        finally:
            probe.unlink(missing_ok=True)
        return None

    # ------------------------------------------------------------ models
    def save_model(
        self,
        model_id: str,
        estimator: Any,
        inputs: Any,
        outputs: np.ndarray | None,
        record: dict[str, Any],
        ids: np.ndarray | None = None,
    ) -> bool:
        """Write the model's files, then its ``record`` (saying "ready"): see write_model."""
        return write_model(
            self.root, self._check(model_id), estimator, inputs, outputs, record, ids
        )

    def _folder_stamp(self, model_id: str) -> tuple[int, int] | None:
        """(inode, mtime) of the model's folder, None when there is none."""
        try:
            st = os.stat(self.model_path(model_id))
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns

    def load(self, model_id: str) -> LoadedModel:
        """Return the loaded model (from the cache when possible); 404 / 409 otherwise.

        A cached model is used only while its folder is the one loaded: deleted (or deleted
        and imported again) through another replica, it is read again, or not found."""
        self._check(model_id)
        stamp = self._folder_stamp(model_id)
        with self._lock:
            if model_id in self._cache and self._stamps.get(model_id) != stamp:
                del self._cache[model_id]
            hit = self._cache.get(model_id)
            if hit is not None:
                self._cache.move_to_end(model_id)
                self.cache_hits += 1
                return hit
            load_lock = self._load_locks.setdefault(model_id, threading.Lock())
        with load_lock:
            try:
                with self._lock:
                    hit = self._cache.get(model_id)
                    if hit is not None:
                        self.cache_hits += 1
                        return hit
                    self.cache_misses += 1
                loaded = self._load_from_disk(model_id)
                with self._lock:
                    self._cache[model_id] = loaded
                    self._stamps[model_id] = stamp
                    self._cache.move_to_end(model_id)
                    while len(self._cache) > self.cache_size:
                        evicted, _ = self._cache.popitem(last=False)
                        self._stamps.pop(evicted, None)
                return loaded
            finally:  # loaded or not (an unknown id): no lock is kept per id asked for
                with self._lock:
                    if self._load_locks.get(model_id) is load_lock:
                        del self._load_locks[model_id]

    def _load_from_disk(self, model_id: str) -> LoadedModel:
        record = self.as_it_stands(self.read_record(model_id))
        status = record.get("status")
        if status != "ready":
            reason = f": {record['error']}" if record.get("error") else ""
            if status == "training":
                raise NotReady(
                    f"model '{model_id}' is not ready: it is still training "
                    f"(poll GET /jobs/{record.get('job_id')})"
                )
            raise NotReady(f"model '{model_id}' is not usable: training {status}{reason}")
        folder = self.model_path(model_id)
        try:
            store_files(folder)  # links and special files refused before anything is read
            return read_model_folder(folder, model_id, record)
        except ForeignEntry as exc:
            raise self.foreign(model_id, exc) from None
        except (okcore.PersistenceError, OSError, ValueError) as exc:
            if not (self.record_path(model_id).exists() and folder.is_dir()):
                # deleted while it was read (a concurrent DELETE): gone, not corrupted
                raise NotFound(f"unknown model '{model_id}' (deleted meanwhile)") from exc
            if isinstance(exc, okcore.PersistenceError):
                raise StoreCorrupted(f"model '{model_id}' cannot be loaded: {exc}") from exc
            raise StoreCorrupted(f"model '{model_id}' files cannot be read: {exc}") from exc

    def adopt(self, folder: Path, record: dict[str, Any], *, model_id: str, rename: bool) -> str:
        """Move a complete model ``folder`` (written under ``root`` with the temporary
        prefix) into place as ``model_id``, or under a new id when that one is taken and
        ``rename``; its record (``record`` with the final id) is written into it first, so
        the model appears whole with one rename. Raises :class:`IdTaken` when the id is
        taken and not ``rename``. Returns the id."""
        self._check(model_id)
        with self._lock:
            if self.model_path(model_id).exists():
                if not rename:
                    raise IdTaken(model_id)
                model_id = new_id()
            write_json_atomic(folder / RECORD_FILE, dict(record, model_id=model_id))
            try:
                os.rename(folder, self.model_path(model_id))
            except OSError as exc:  # taken meanwhile through another replica
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
                raise IdTaken(model_id) from exc
        return model_id

    def cached_ids(self) -> list[str]:
        with self._lock:
            return list(self._cache)

    def delete_files(self, model_id: str) -> None:
        """Remove a model's folder (renamed out of sight first) and drop it from the cache."""
        folder = self.model_path(model_id)
        with self._lock:
            self._cache.pop(model_id, None)
            self._created.pop(model_id, None)
            self._quarantined.discard(model_id)
        trash = self.root / f"{_TMP_PREFIX}del-{model_id}-{time.time_ns()}"
        try:
            os.replace(folder, trash)  # one step: a training's save either precedes it or fails
        except FileNotFoundError:
            raise NotFound(f"unknown model '{model_id}' (deleted meanwhile)") from None
        if trash.is_symlink():  # a link put in the store: removed, never what it points to
            trash.unlink()
        else:
            shutil.rmtree(trash, ignore_errors=True)

    def delete(self, model_id: str) -> None:
        """Remove a model with its record (the folder is first renamed out of sight)."""
        if not self.model_path(model_id).exists():
            raise UnknownModel(model_id)
        self.delete_files(model_id)
