"""Tables as users have them: CSV and TSV parts (and the CLI's files), one parser.

A table part is UTF-8 text, one row per line (``\\n`` or ``\\r\\n``, blank lines skipped):
``text/csv`` is comma-separated with RFC 4180 quoting, ``text/tab-separated-values``
split on tabs (no quoting, as IANA defines TSV). A part without either type whose bytes
are text (no ``.npy`` or zip magic, UTF-8 without control characters other than tab and
line ends) is read the same way, its separator sniffed from its first line (tab, comma, runs of spaces, or one column).

A first **header** row is declared (the content-type parameter ``header=present`` or
``absent``, RFC 4180; or a text field ``<part>.header`` = ``true`` / ``false``) or
detected: the first row is a header when one of its cells is not a number in a column
whose other cells all are (or, a first row of names only, mostly are). A table of edges by id has no numeric column: its first row is
a header when neither of its ids is one of the request's ids.

What a table becomes depends on its part (:func:`table_value`):

- ``ids``: one id per row (the first column);
- edges (``output_kernel.edges``, ``edges.new_new``, ``edges.new_known``): two columns of
  vertex ids when the request has ids, else of row indices; an optional third column of
  weights must be all 1 (every graph here is unweighted: the diffusion kernel's Laplacian
  is L = D - A with a 0/1 adjacency A), so a weighted table is refused rather than read
  as unweighted;
- any other array (``inputs``, ``output_kernel.outputs`` ...): a numeric matrix. For
  ``inputs`` a column named ``id`` (in the header), or else the first non-numeric column,
  gives the vertex ids (the request's ``ids``).

Bounds: a part is capped by the multipart reader before it is parsed; a table part is
also refused past ``MAX_TABLE_BYTES`` (its cells become Python strings, about ten times
the text), with the advice to send ``.npy``.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from service.errors import InvalidRequest, TooLarge

MAX_TABLE_BYTES = 64 * 1024 * 1024
"""Largest CSV / TSV part or file: bigger arrays travel as .npy (no per-cell objects)."""
TABLE_MEDIA = {"text/csv": ",", "text/tab-separated-values": "\t"}
EDGE_PARTS = (
    "output_kernel.edges",
    "edges.new_new",
    "edges.new_known",
    "edges.by_id",
    "edges",  # a bipartite network's interactions
    "edges.new_rows",
    "edges.new_cols",
    "edges.new_pairs",
)
ID_COLUMN = "id"
_BINARY_MAGIC = (b"\x93NUMPY", b"PK\x03\x04")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_TRUE, _FALSE = ("true", "1", "yes", "present"), ("false", "0", "no", "absent")


@dataclass
class Table:
    """The cells of a table part as strings; ``header`` is its first row when it is one."""

    part: str
    header: list[str] | None
    rows: list[list[str]]
    line_of_first_row: int  # 1-based line number of rows[0], for messages

    @property
    def n_columns(self) -> int:
        return len(self.rows[0]) if self.rows else len(self.header or [])


def media_separator(content_type: str | None) -> str | None:
    """The separator of a table media type (``text/csv``: comma, TSV: tab), else None."""
    media = (content_type or "").split(";")[0].strip().lower()
    return TABLE_MEDIA.get(media)


def declared_header(content_type: str | None, field: str | None, part: str) -> bool | None:
    """The header declared by ``header=present|absent`` in the content type or by the text
    field ``<part>.header``; None when neither declares it."""
    for param in (content_type or "").split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "header":
            field = value.strip().strip('"')
    if field is None:
        return None
    word = field.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise InvalidRequest(
        f"{part}.header must be true or false (header=present / absent): got {field[:40]!r}"
    )


def looks_like_text(data: bytes) -> bool:
    """True when a part without a table media type is clearly CSV / TSV text: no .npy or
    zip magic, UTF-8, and no control characters but tab and line ends (raw binary numbers
    almost never are)."""
    if not data or data.startswith(_BINARY_MAGIC):
        return False
    head = data[:65536]
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not a character cut at the 64 KiB boundary
            return False
        text = head[: exc.start].decode("utf-8-sig")
    return not _CONTROL.search(text)


def _text(data: bytes, part: str) -> str:
    if len(data) > MAX_TABLE_BYTES:
        raise TooLarge(
            f"part '{part}' is a table of {len(data)} bytes, over the limit of "
            f"{MAX_TABLE_BYTES} bytes for CSV / TSV: send it as a .npy file"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidRequest(f"part '{part}' is not UTF-8 text: {exc}") from None


def _is_number(cell: str) -> bool:
    try:
        return math.isfinite(float(cell))
    except ValueError:
        return False


def parse_table(
    data: bytes, part: str, *, separator: str | None = None, header: bool | None = None
) -> Table:
    """Cells of a CSV / TSV part (``separator`` None: sniffed from the first line: tab,
    else comma, else runs of spaces, else one column; ``""``: one column), its header declared or detected (module docstring)."""
    text = _text(data, part)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    numbered = [(k + 1, line) for k, line in enumerate(lines) if line.strip()]
    if not numbered:
        raise InvalidRequest(f"part '{part}' is empty: send one row per line")
    if separator is None:
        first = numbered[0][1]
        separator = "\t" if "\t" in first else ("," if "," in first else "")
        if not separator and len(first.split()) > 1:
            separator = " "  # columns separated by runs of spaces (a numpy savetxt file)
    if separator == ",":
        reader = csv.reader([line for _, line in numbered], strict=True)
        try:
            cells = [[c.strip() for c in row] for row in reader]
        except csv.Error as exc:
            raise InvalidRequest(f"part '{part}' is not readable CSV: {exc}") from None
    elif separator == " ":
        cells = [line.split() for _, line in numbered]
    elif separator:
        cells = [[c.strip() for c in line.split(separator)] for _, line in numbered]
    else:
        cells = [[line.strip()] for _, line in numbered]
    width = len(cells[0])
    for (line_no, _), row in zip(numbered, cells, strict=True):
        if len(row) != width:
            name = {",": "commas", "\t": "tabs"}.get(separator, "separators")
            raise InvalidRequest(
                f"part '{part}' line {line_no} has {len(row)} columns but line "
                f"{numbered[0][0]} has {width} (separated by {name})"
            )
    if header is None:
        header = _detected_header(cells)
    if header:
        return Table(part, cells[0], cells[1:], numbered[1][0] if len(numbered) > 1 else 0)
    return Table(part, None, cells, numbered[0][0])


def _detected_header(cells: list[list[str]]) -> bool:
    """A first row with a non-number where a column's other cells are all numbers; or a
    first row of non-numbers only over a column whose other cells are mostly numbers (so
    that a typo further down is reported, not taken for a header's absence)."""
    if len(cells) < 2:
        return False
    first = [not _is_number(c) for c in cells[0]]
    for j, text in enumerate(first):
        if not text:
            continue
        numeric = sum(_is_number(row[j]) for row in cells[1:])
        if numeric == len(cells) - 1 or (all(first) and 2 * numeric > len(cells) - 1):
            return True
    return False


def _numbers(table: Table, columns: list[int], what: str) -> np.ndarray:
    """The cells of ``columns`` as a float64 (rows, len(columns)) array; a 422 naming the
    first cell that is not a finite number."""
    flat = [row[j] for row in table.rows for j in columns]
    try:
        out = np.array(flat, dtype=np.float64).reshape(len(table.rows), len(columns))
        if np.isfinite(out).all():
            return out
    except ValueError:
        pass
    for i, row in enumerate(table.rows):
        for j in columns:
            if not _is_number(row[j]):
                raise InvalidRequest(
                    f"part '{table.part}' line {table.line_of_first_row + i} column "
                    f"{j + 1}{_named(table, j)} is {row[j][:40]!r}, not a finite number "
                    f"({what})"
                )
    raise AssertionError("unreachable")  # pragma: no cover


def _named(table: Table, j: int) -> str:
    return f" ({table.header[j]!r})" if table.header else ""


def matrix_of(table: Table, *, with_ids: bool) -> tuple[np.ndarray, list[str] | None]:
    """A numeric matrix and, when ``with_ids``, the ids of its id column (the column named
    ``id``, or else the first non-numeric one)."""
    columns = list(range(table.n_columns))
    id_column: int | None = None
    if table.header is not None:
        named = [j for j, h in enumerate(table.header) if h.lower() == ID_COLUMN]
        id_column = named[0] if named else None
    if id_column is None and table.rows:
        text = [j for j in columns if not all(_is_number(row[j]) for row in table.rows)]
        id_column = text[0] if text and with_ids else None
    if id_column is not None and not with_ids:
        raise InvalidRequest(
            f"part '{table.part}' has an id column (column {id_column + 1}"
            f"{_named(table, id_column)}); only 'inputs' takes one: send numbers only"
        )
    if not table.rows:
        raise InvalidRequest(f"part '{table.part}' has a header but no rows")
    ids = None
    if id_column is not None:
        ids = [row[id_column] for row in table.rows]
        columns.remove(id_column)
    if not columns:
        raise InvalidRequest(f"part '{table.part}' has no numeric column besides its ids")
    what = "features are numbers besides one id column" if with_ids else "numbers only"
    return _numbers(table, columns, what), ids


def edges_of(table: Table, request_ids: set[str] | None) -> list[list[Any]]:
    """Edges as [a, b] pairs: ids (strings) when the request has ids, else row indices
    (integers; a cell that is not one stays a string, for the schema's message)."""
    if table.n_columns not in (2, 3):
        raise InvalidRequest(
            f"part '{table.part}' has {table.n_columns} columns: edges are two columns of "
            "vertices (ids or row indices) and an optional third column of weights"
        )
    rows, first_line = table.rows, table.line_of_first_row
    if table.header is None and request_ids is not None and rows:
        first = rows[0][:2]  # by id, a header can only be told by its names
        if first[0] not in request_ids and first[1] not in request_ids:
            rows, first_line = rows[1:], first_line + 1
    if table.n_columns == 3 and rows:
        weights = _numbers(Table(table.part, table.header, rows, first_line), [2], "edge weights")
        off = np.flatnonzero(weights[:, 0] != 1.0)
        if off.size:
            k = int(off[0])
            raise InvalidRequest(
                f"part '{table.part}' has a third column of edge weights ({off.size} not 1, "
                f"e.g. {rows[k][2]!r}), but the graph is unweighted (the diffusion "
                "kernel's Laplacian L = D - A has a 0/1 adjacency A): send two columns, "
                "keeping the edges you trust, or weights of 1"
            )
    if request_ids is not None:
        return [row[:2] for row in rows]
    return [[_index(a), _index(b)] for a, b, *_ in rows]


def _index(cell: str) -> Any:
    return int(cell) if cell.isdigit() else cell


def ids_of(table: Table) -> list[str]:
    """The ids of an ids part: its first column (or the column named ``id``)."""
    if table.header is not None:
        named = [j for j, h in enumerate(table.header) if h.lower() == ID_COLUMN]
        j = named[0] if named else 0
        return [row[j] for row in table.rows]
    return [row[0] for row in table.rows]


def read_table_file(path: str, data: bytes) -> Table:
    """A CSV / TSV file of the CLI, read as its part would be (separator from the suffix)."""
    sep = {"csv": ",", "tsv": "\t", "tab": "\t"}.get(path.rsplit(".", 1)[-1].lower())
    return parse_table(data, path, separator=sep)
