"""Vertex ids: names for the training vertices of a model and for new vertices.

A client may name the N rows of the training inputs with ``ids`` (strings) and then give
the graph's edges by id; /kernel and /predict answer edges and pre-images with ids
beside the row indices. Ids are strings of 1 to ``MAX_ID_LENGTH`` characters without
control characters (so that one id per line, or two per line separated by a tab, is an
unambiguous text format), unique within a list. Numbers are refused rather than
converted: an edge ``[3, 7]`` is always a pair of rows, ``["3", "7"]`` a pair of ids.

Lookups are vectorised (``np.searchsorted`` over the sorted ids), so resolving 10^6
edges by id costs a sort, not 2 x 10^6 dict lookups in Python.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from service.errors import InvalidRequest

MAX_ID_LENGTH = 256
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _check_one(value: Any, where: str) -> str:
    if not isinstance(value, str):
        kind = "a number" if isinstance(value, int | float) else type(value).__name__
        raise ValueError(
            f"{where} = {value!r} is {kind}; ids are strings (send {str(value)!r}): numbers "
            "in edges are row indices, strings are ids"
        )
    if not value or len(value) > MAX_ID_LENGTH:
        raise ValueError(f"{where} must have 1 to {MAX_ID_LENGTH} characters: got {len(value)}")
    if _CONTROL.search(value):
        raise ValueError(
            f"{where} = {value[:80]!r} contains a control character (tab, newline ...)"
        )
    return value


def _object_array(values: list[Any]) -> np.ndarray:
    """Strings in an object array: memory follows each id's length, where a fixed-width
    unicode array would give every id the longest one's 4 bytes per character."""
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def as_id_array(value: Any, name: str = "ids") -> np.ndarray:
    """A validated 1-D object array of unique id strings; raises ``ValueError``."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "UO":
        value = value.tolist()
    if not isinstance(value, list | tuple):
        raise ValueError(f"{name} must be a list of strings, one per row")
    if not value:
        raise ValueError(f"{name} must not be empty")
    ids = [_check_one(v, f"{name}[{i}]") for i, v in enumerate(value)]
    arr = _object_array(ids)
    order = np.argsort(arr, kind="stable")
    same = np.flatnonzero(arr[order][1:] == arr[order][:-1])
    if same.size:
        first, second = sorted((int(order[same[0]]), int(order[same[0] + 1])))
        raise ValueError(
            f"{name}[{second}] = {ids[second]!r} repeats {name}[{first}]: ids are unique"
        )
    return arr


def is_id_edges(value: Any) -> bool:
    """True when ``value`` looks like edges given by id (a list whose first pair holds a string)."""
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "UO"
    if isinstance(value, list | tuple) and value and isinstance(value[0], list | tuple):
        return any(isinstance(v, str) for v in value[0])
    return False


def as_id_edges(value: Any, name: str = "edges") -> np.ndarray:
    """Edges ``[[id_a, id_b], ...]`` as an (E, 2) object array of strings; raises ``ValueError``."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    pairs: list[str] = []
    for k, pair in enumerate(value):
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise ValueError(f"{name}[{k}] must be a pair [a, b] of vertex ids")
        if not all(isinstance(v, str) for v in pair):
            raise ValueError(
                f"{name}[{k}] = {list(pair)!r} mixes ids and row indices: give every edge as "
                "two ids (strings) or every edge as two row indices (integers)"
            )
        pairs.extend(_check_one(v, f"{name}[{k}][{j}]") for j, v in enumerate(pair))
    return _object_array(pairs).reshape(-1, 2)


class VertexIds:
    """The ids of a model's N training vertices: row -> id and id -> row."""

    def __init__(self, ids: np.ndarray) -> None:
        self.values = ids
        self._order = np.argsort(ids, kind="stable")
        self._sorted = ids[self._order]

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def rows_of(self, names: np.ndarray, name: str) -> np.ndarray:
        """Rows of ``names`` (any shape) as int64; ``ValueError`` naming the first unknown."""
        flat = names.ravel()
        pos = np.searchsorted(self._sorted, flat)
        pos = np.minimum(pos, len(self._sorted) - 1)
        found = self._sorted[pos] == flat
        if not found.all():
            k = int(np.argmin(found))
            where = np.unravel_index(k, names.shape)
            raise ValueError(
                f"{name}[{']['.join(str(int(i)) for i in where)}] = {flat[k]!r} is not one of "
                f"the {len(self)} ids"
            )
        return self._order[pos].astype(np.int64).reshape(names.shape)

    def names(self, rows: np.ndarray) -> np.ndarray:
        return self.values[rows]


# ---------------------------------------------------------------- text parts (multipart)
def _lines(data: bytes, part: str) -> list[str]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidRequest(f"part '{part}' is not UTF-8 text: {exc}") from None
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a final newline ends the last line
    return lines


def id_lines(data: bytes, part: str) -> list[str]:
    """A text part of ids: UTF-8, one id per line."""
    return _lines(data, part)


def is_text_part(name: str, content_type: str | None) -> bool:
    """Multipart file parts read as text lines: ``ids`` always, ``output_kernel.edges``
    when sent with a ``text/...`` content type (e.g. ``text/tab-separated-values``)."""
    if name == "ids":
        return True
    return name == "output_kernel.edges" and (content_type or "").lower().startswith("text/")


def text_part(name: str, data: bytes) -> list[Any]:
    """The ids (one per line) or edges by id (two per line, tab-separated) of a text part."""
    return id_lines(data, name) if name == "ids" else edge_lines(data, name)


def edge_lines(data: bytes, part: str) -> list[list[str]]:
    """A text part of edges by id: UTF-8, one edge per line, two ids separated by a tab."""
    edges = []
    for k, line in enumerate(_lines(data, part)):
        pair = line.split("\t")
        if len(pair) != 2:
            raise InvalidRequest(
                f"part '{part}' line {k + 1} must hold two vertex ids separated by one tab: "
                f"got {line[:80]!r}"
            )
        edges.append(pair)
    return edges
