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
    arr = np.fromiter(  # no list of the checked ids beside the array
        (_check_one(v, f"{name}[{i}]") for i, v in enumerate(value)), dtype=object, count=len(value)
    )
    order = np.argsort(arr, kind="stable")
    ordered = arr[order]
    same = np.flatnonzero(ordered[1:] == ordered[:-1])
    del ordered
    ids = arr
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

    def find(self, names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows of ``names`` as int64, mask of the names found), both of ``names``' shape;
        the row of a name not found is meaningless."""
        flat = names.ravel()
        pos = np.searchsorted(self._sorted, flat)
        pos = np.minimum(pos, len(self._sorted) - 1)
        found = self._sorted[pos] == flat
        rows = self._order[pos].astype(np.int64)
        return rows.reshape(names.shape), found.reshape(names.shape)

    def rows_of(self, names: np.ndarray, name: str, hint: str = "") -> np.ndarray:
        """Rows of ``names`` (any shape) as int64; ``ValueError`` naming the first unknown,
        how many there are and (up to five) which, then ``hint``."""
        rows, found = self.find(names)
        if not found.all():
            unknown = np.argwhere(~found)
            where = ["[" + "][".join(str(int(i)) for i in pos) + "]" for pos in unknown[:5]]
            listed = ", ".join(
                f"{names[tuple(pos)]!r} at {w}" for pos, w in zip(unknown[:5], where, strict=True)
            )
            raise ValueError(
                f"{name}{where[0]} = {names[tuple(unknown[0])]!r} is not one of the "
                f"{len(self)} ids ({len(unknown)} unknown in all; the first "
                f"{min(5, len(unknown))}: {listed}){hint}"
            )
        return rows

    def names(self, rows: np.ndarray) -> np.ndarray:
        return self.values[rows]
