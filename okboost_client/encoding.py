"""Request bodies of the okboost service from Python values, and its binary answers, with
numpy only.

Arrays become ``.npy`` parts of a multipart request (or JSON lists); scipy sparse
matrices are recognised without importing scipy (a caller that has one has scipy) and
travel in CSR layout: parts ``<name>.data``, ``<name>.indices``, ``<name>.indptr`` and the
text field ``<name>.shape``. Arrays of strings (vertex ids, edges by id) become text parts:
one id per line, or two ids per line separated by a tab.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

KEPT_INPUT_DTYPES = (np.float64, np.float32, np.uint8)
"""Input dtypes sent as they are; any other input is sent as float64."""


def is_sparse(value: Any) -> bool:
    """True for a scipy sparse matrix or array (checked by its module, scipy not imported)."""
    return type(value).__module__.startswith("scipy.sparse") and hasattr(value, "tocsr")


def as_inputs(value: Any) -> Any:
    """Inputs as the client sends them: CSR for any scipy sparse matrix, an ndarray kept in
    float64 / float32 / uint8, anything else as float64."""
    if is_sparse(value):
        return value.tocsr()
    arr = np.asarray(value)
    if arr.dtype in KEPT_INPUT_DTYPES:
        return arr
    return np.asarray(value, dtype=float)


def is_data_frame(value: Any) -> bool:
    """True for a pandas DataFrame (checked by its module, pandas not imported)."""
    return type(value).__module__.startswith("pandas") and hasattr(value, "columns")


NUMERIC_KINDS = "biuf"


def table_inputs(value: Any, ids: Any, name: str = "inputs") -> tuple[Any, Any]:
    """(inputs, ids) from a pandas DataFrame: its id column ("id", or else the first
    non-numeric column) gives the ids, the other columns, all numeric, the inputs. Anything
    else is returned as it is."""
    if not is_data_frame(value):
        return value, ids
    kinds = {column: value[column].dtype.kind for column in value.columns}
    id_column = (
        "id"
        if "id" in kinds
        else next((column for column, kind in kinds.items() if kind not in NUMERIC_KINDS), None)
    )
    if id_column is not None:
        if ids is not None:
            raise ValueError(
                f"{name}: give the ids as its id column {id_column!r} or as ids=, not both"
            )
        ids = np.asarray([str(v) for v in value[id_column].tolist()])
        value = value.drop(columns=[id_column])
        del kinds[id_column]
    bad = next((column for column, kind in kinds.items() if kind not in NUMERIC_KINDS), None)
    if bad is not None:
        raise TypeError(
            f"{name}: column {bad!r} is not numeric ({value[bad].dtype}); only one column "
            "(the id column) may hold ids"
        )
    return value.to_numpy(dtype=float), ids


def axis_labels(value: Any, axis: str) -> list[str] | None:
    """The labels of a DataFrame's ``axis`` ("index" or "columns") as strings, or None for
    anything else and for pandas' default 0..n-1 index (no labels)."""
    if not is_data_frame(value):
        return None
    labels = getattr(value, axis)
    if type(labels).__name__ == "RangeIndex":
        return None
    return [str(v) for v in labels]


def labelled_similarity(
    value: Any, ids: Any, name: str, *, training: bool
) -> tuple[Any, Any, list[str] | None]:
    """(similarity, ids, column ids) from a DataFrame labelled by id (as
    ``pandas.read_csv(path, index_col=0)`` reads a published similarity): its index gives
    the ids. At training (square) its columns are put in its rows' order by id, as the
    service does with a labelled file, and the column ids are None; for new items its
    columns name the training items (the request's ``similarity_ids``, matched by the
    service). Anything else is returned as it is, with no column ids."""
    rows, columns = axis_labels(value, "index"), axis_labels(value, "columns")
    if rows is None or columns is None:
        return value, ids, None
    if ids is not None:
        raise ValueError(f"{name}: give the ids as the similarity's index or as ids=, not both")
    matrix = value.to_numpy(dtype=float)
    if not training:
        return matrix, np.asarray(rows), columns
    if sorted(rows) != sorted(columns) or len(set(rows)) != len(rows):
        raise ValueError(
            f"{name}: a labelled similarity names the same items once each in its index and "
            "its columns, in any order"
        )
    position = {v: k for k, v in enumerate(columns)}
    return matrix[:, [position[v] for v in rows]], np.asarray(rows), None


def pairs(value: Any) -> np.ndarray:
    """Edges as an array: pairs of rows (numbers) or of ids (strings; object arrays, as
    pandas gives, become unicode)."""
    arr = np.asarray(value)
    return arr.astype(str) if arr.dtype.kind == "O" else arr


def npy_bytes(arr: Any) -> bytes:
    """``arr`` as the bytes of a ``.npy`` file (never pickled)."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(arr), allow_pickle=False)
    return buf.getvalue()


Part = tuple[str, bytes, str]
"""A file part as httpx takes it: (file name, content, content type)."""


def id_array(values: Any, name: str = "ids") -> np.ndarray:
    """Vertex ids (or pairs of ids) as a string array; numbers are refused, as the service
    refuses them (a number is a row index, a string an id)."""
    arr = np.asarray(values)
    if arr.dtype.kind != "U":
        raise TypeError(f"{name} must be strings (numbers are row indices): got {arr.dtype}")
    return arr


def text_lines(arr: np.ndarray) -> bytes:
    """Ids one per line (1-D), or pairs of ids separated by a tab (2-D), as UTF-8."""
    rows = arr.reshape(len(arr), -1).tolist()
    bad = next((v for row in rows for v in row if any(c in v for c in "\t\n\r")), None)
    if bad is not None:
        raise ValueError(f"id {bad[:80]!r} contains a tab or a line break; ids cannot")
    return "".join("\t".join(row) + "\n" for row in rows).encode("utf-8")


@dataclass(frozen=True)
class TableFile:
    """A CSV / TSV file sent as it is, a table part the service parses (a labelled
    similarity is matched to its rows by id there)."""

    name: str
    data: bytes
    media: str


def table_file(path: str | os.PathLike[str]) -> TableFile:
    """The file at ``path`` as a table part: TSV for ``.tsv`` / ``.tab``, CSV for ``.csv``,
    else plain text whose separator the service sniffs from its first line (the published
    drug-target ``.txt`` files are tab-separated)."""
    p = Path(path)
    suffix = p.suffix.lower()
    media = {".tsv": "text/tab-separated-values", ".tab": "text/tab-separated-values"}
    return TableFile(
        p.name, p.read_bytes(), media.get(suffix, "text/csv" if suffix == ".csv" else "text/plain")
    )


def npy_part(path: str, arr: Any) -> Part:
    return (f"{path}.npy", npy_bytes(arr), "application/octet-stream")


def split_arrays(
    body: dict[str, Any], prefix: str = ""
) -> tuple[dict[str, Any], dict[str, Part], dict[str, str]]:
    """Move ndarray and sparse values (up to two levels deep) out of ``body`` into file
    parts named by their path: ``.npy`` for numbers, text for strings (ids, edges by id);
    returns (JSON rest, file parts, text fields)."""
    plain: dict[str, Any] = {}
    parts: dict[str, Part] = {}
    texts: dict[str, str] = {}
    for key, value in body.items():
        path = f"{prefix}{key}"
        if is_sparse(value):
            csr = value.tocsr()
            for member in ("data", "indices", "indptr"):
                parts[f"{path}.{member}"] = npy_part(f"{path}.{member}", getattr(csr, member))
            texts[f"{path}.shape"] = f"{csr.shape[0]},{csr.shape[1]}"
        elif isinstance(value, TableFile):
            parts[path] = (value.name, value.data, value.media)
        elif isinstance(value, np.ndarray) and value.dtype.kind == "U":
            parts[path] = (f"{path}.tsv", text_lines(value), "text/tab-separated-values")
        elif isinstance(value, np.ndarray):
            parts[path] = npy_part(path, value)
        elif isinstance(value, dict) and not prefix:
            inner, inner_parts, inner_texts = split_arrays(value, prefix=f"{path}.")
            plain[key] = inner
            parts.update(inner_parts)
            texts.update(inner_texts)
        else:
            plain[key] = value
    return plain, parts, texts


def jsonable(value: Any) -> Any:
    """``value`` with arrays as lists (NaN as null) and sparse matrices as ``{data, indices,
    indptr, shape}``."""
    if is_sparse(value):
        csr = value.tocsr()
        return {
            "data": csr.data.tolist(),
            "indices": csr.indices.tolist(),
            "indptr": csr.indptr.tolist(),
            "shape": list(csr.shape),
        }
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f" and np.isnan(value).any():  # JSON has no NaN: null
            cells = value.astype(object)
            cells[np.isnan(value)] = None
            return cells.tolist()
        return value.tolist()
    if isinstance(value, TableFile):
        raise TypeError(f"{value.name} is sent as a file: use the client with binary=True")
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def from_npz(content: bytes) -> dict[str, Any]:
    """A binary answer (``.npz``, members named by their dotted path in the JSON answer) as
    the nested dict the JSON answer would give, with ndarrays for arrays and Python values
    for 0-d members."""
    out: dict[str, Any] = {}
    with np.load(io.BytesIO(content), allow_pickle=False) as npz:
        for name in npz.files:
            arr = npz[name]
            *parents, leaf = name.split(".")
            node = out
            for parent in parents:
                node = node.setdefault(parent, {})
            node[leaf] = arr.item() if arr.ndim == 0 else arr
    return out


def edge_arrays(edges: dict[str, Any]) -> dict[str, np.ndarray]:
    """An answer's ``edges`` as arrays: ``*_ids`` lists as (E, 2) strings, the others as
    (E, 3) [a, b, score] floats; absent lists left out."""
    return {
        k: np.asarray(v, dtype=str).reshape(-1, 2)
        if k.endswith("_ids")
        else np.asarray(v, dtype=float).reshape(-1, 3)
        for k, v in edges.items()
        if v is not None
    }
