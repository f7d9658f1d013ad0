"""The folder format every saved okcore model shares (:mod:`okcore.io` and
:mod:`okcore.io_bipartite`): its format name, the checksums of its arrays, parameters as
JSON values, the atomic write of a folder and the checked read of its arrays. No pickle: the
arrays are read with ``allow_pickle=False`` and checked against the manifest's shapes,
dtypes and SHA-256 sums."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .exceptions import PersistenceError

FORMAT = "okcore-model"


def sha256(array: np.ndarray) -> str:
    """The SHA-256 of an array's bytes (C order), as saved in the manifest."""
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def array_entries(arrays: dict[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    """The manifest's ``arrays``: each array's checksum, shape and dtype, which
    :func:`read_arrays` checks."""
    return {
        k: {"sha256": sha256(v), "shape": list(v.shape), "dtype": v.dtype.str}
        for k, v in arrays.items()
    }


def write_files(
    folder: Path, manifest: dict[str, Any], arrays: dict[str, np.ndarray], default: Any = None
) -> None:
    """``arrays.npz`` (no pickle) and ``manifest.json`` (``default``: json's fallback for
    values it cannot write) into ``folder``."""
    with open(folder / "arrays.npz", "wb") as fh:
        np.savez(fh, **arrays)  # type: ignore[arg-type]  # numpy's stub: allow_pickle
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, default=default))


def write_folder(path: Path, write: Any) -> Path:
    """``write(tmp)`` fills a temporary sibling folder, renamed to ``path`` when done.

    ``path`` may be new (its parent folders are created), an empty folder or a saved model,
    which is replaced; anything else there is refused, never deleted."""
    _check_target(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    except OSError as exc:
        raise PersistenceError(
            f"cannot save a model at {path}: its folder {path.parent} cannot be created or "
            f"written ({exc.strerror}: {exc.filename}); choose a path in a writable folder"
        ) from None
    try:
        write(tmp)
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return path


def _check_target(path: Path) -> None:
    """Refuse to save over a file or a folder that is not a saved model (``save`` replaces
    what is at ``path``: only a previous model, or nothing, may be lost)."""
    if not (path.exists() or path.is_symlink()):
        return
    if path.is_symlink() or not path.is_dir():
        what = "a symbolic link" if path.is_symlink() else "a file"
        raise PersistenceError(
            f"cannot save a model at {path}: it is {what}, not a model folder; "
            "save to a new path, or remove it first"
        )
    if (path / "manifest.json").is_file() or not any(path.iterdir()):
        return
    raise PersistenceError(
        f"cannot save a model at {path}: it is a folder that holds other files, not a saved "
        "model (no manifest.json), and saving would delete them; save to a new path, or "
        "remove it first"
    )


def json_value(value: Any) -> Any:
    """A parameter of a composite as JSON: scalars, lists (or 1-d numeric arrays) of
    scalars; anything else (a callable scorer, given folds) as None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "biuf":
        value = value.tolist()  # numbers given as an array (an average's weights)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple) and all(
        isinstance(v, bool | int | float | str) for v in value
    ):
        return list(value)
    return None


def read_arrays(file: Path, expected: dict) -> dict[str, np.ndarray]:
    """The arrays of ``arrays.npz``, each checked against the manifest's ``expected``
    shape, dtype and checksum; PersistenceError when missing, corrupted or modified."""
    try:
        with np.load(file, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except FileNotFoundError:
        raise PersistenceError(f"model arrays missing: {file}") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise PersistenceError(f"model arrays at {file} are corrupted: {exc}") from None
    if set(arrays) != set(expected):
        raise PersistenceError(f"model arrays at {file} do not match the manifest's list")
    for name, meta in expected.items():
        a = arrays[name]
        if (
            list(a.shape) != meta["shape"]
            or a.dtype.str != meta["dtype"]
            or sha256(a) != meta["sha256"]
        ):
            raise PersistenceError(
                f"model array {name!r} at {file} fails its checksum (corrupted or modified)"
            )
    return arrays
