"""Tables as users have them: CSV and TSV parts (and the CLI's files), one parser.

A table part is UTF-8 text, one row per line (``\\n``, ``\\r\\n`` or ``\\r``, blank lines
skipped): ``text/csv`` is comma-separated with RFC 4180 quoting (a quoted cell may hold the
separator, quotes and line ends), ``text/tab-separated-values`` split on tabs (no quoting,
as IANA defines TSV). A part without either type whose bytes are text (no ``.npy`` or zip
magic, UTF-8 without control characters other than tab and line ends) is read the same
way, its separator sniffed from its first line (tab, comma, runs of spaces, or one column).

**Missing values.** A cell that is empty, ``NA``, ``N/A``, ``nan``, ``NaN``, ``null`` or
``None`` (:data:`MISSING_CELLS`, any case) is a missing value: NaN in a numeric table. It is
never an error of the table and never an id; whether a model takes missing values is the
request's business (the service says so with a 422 where it does not).

A first **header** row is declared (the content-type parameter ``header=present`` or
``absent``, RFC 4180; or a text field ``<part>.header`` = ``true`` / ``false``) or
detected: the first row is a header when one of its cells is not a number in a column
whose other cells all are (some may be missing, not all; or, a first row of names only,
mostly are; a single row of text without a number: a header without data rows). A table
of edges by id has no numeric column: its first row is a header when neither of its ids is
one of the request's ids.

**pandas' layouts** (a numeric table whose header is not declared absent): a first row whose
first cell is empty and whose other cells are not, over a first column of distinct
non-negative integers, is ``DataFrame.to_csv()``'s header over its row index, a column
never read (:attr:`Table.index`); over a first column of text, a header over ids (not when
one of those other cells is a number with a point or an exponent: a row of data missing its
first value). A first
row ``0,1,...,k-1`` (k >= 1) is the header of a frame without column names, or of an
unnamed Series (``to_csv(index=False)``), when a number below it is written with a point or
an exponent;
over integers only it may be data as well, a 422 asking which for k >= 3 (``0,1`` over 0/1
rows is data).

**The id column** of an ``inputs`` table is, in this order: the column declared by the
content-type parameter ``id_column=<name or 1-based number>`` or the text field
``<part>.id_column``; the column whose header is ``id`` (any case); or the first column
when none of its cells (after the header) is a number or a missing value. No other column
is ever read as ids: a table whose ids are numbers declares its id column.

What a table becomes depends on its part (:func:`table_value`):

- ``ids``: one id per row (the first column, or the column named ``id``);
- edges (``output_kernel.edges``, ``edges.new_new``, ``edges.new_known``): two columns of
  vertex ids when the request has ids, else of row indices; an optional third column of
  weights must be all 1 (every graph here is unweighted: the diffusion kernel's Laplacian
  is L = D - A with a 0/1 adjacency A), so a weighted table is refused rather than read
  as unweighted;
- a similarity (``rows.similarity``, ``cols.similarity``, and ``inputs`` with
  ``"input_kind": "similarity"``): a square matrix, plain or labelled (its rows' ids in the
  id column, its columns' ids in the header, in any order: columns are matched to rows by
  id, :func:`similarity_of`); at prediction (a request with a ``model_id``), the new items'
  similarity to the training items, whose labelled header names those training items in any
  order (:func:`new_similarity_of`: the model matches them by id);
- any other array (``inputs``, ``output_kernel.outputs`` ...): a numeric matrix, with the
  id column above for ``inputs``.

**Bounds**, checked as the rows arrive (422 or 413 beyond): :data:`MAX_TABLE_ROWS` rows,
:data:`MAX_TABLE_COLUMNS` columns, :data:`MAX_CELL_CHARS` characters a cell and
:data:`MAX_ROW_CHARS` a row; the numbers, 8 bytes each, within the caller's ``max_bytes``
before they are held. The text is decoded and split one row at a time; numbers go into one
float64 buffer as they are read and only the id column's cells are kept as strings, so a
table costs about 8 bytes per number (plus its ids), not a Python object per cell.
Time: O(cells).
"""

from __future__ import annotations

import csv
import io
import math
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from service.errors import InvalidRequest, TooLarge

MAX_TABLE_BYTES = 64 * 1024 * 1024
"""Largest CSV / TSV part or file: bigger arrays travel as .npy."""
MAX_TABLE_ROWS = 2_000_000
"""Most rows (or ids, or edges) one table may hold."""
MAX_TABLE_COLUMNS = 100_000
"""Most columns one table may hold: wider inputs travel as .npy (or sparse .npz)."""
MAX_CELL_CHARS = 1024
"""Longest cell, in characters (ids are at most 256)."""
MAX_ROW_CHARS = 2 * 1024 * 1024
"""Longest row, in characters: the cells of one row are Python strings while it is read."""
MISSING_CELLS = frozenset({"", "na", "n/a", "nan", "-nan", "null", "none", "#n/a", "<na>"})
"""Cells read as missing values (compared in lower case, blanks stripped)."""
BOOLEAN_CELLS = {"true": "1", "false": "0"}
"""Cells of a table of booleans (``parse_table(booleans=True)``) and the numbers they are."""
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
    "unknown_pairs",  # a bipartite network's unknown pairs, at /train and /evaluate
    "unknown_pairs.by_id",
    "unknown_pairs.new_rows",
    "unknown_pairs.new_cols",
    "unknown_pairs.new_pairs",
)
ID_COLUMN = "id"
_BINARY_MAGIC = (b"\x93NUMPY", b"PK\x03\x04")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_TRUE, _FALSE = ("true", "1", "yes", "present"), ("false", "0", "no", "absent")
_NUMBER, _MISSING, _TEXT = 0, 1, 2  # what a cell is

Kind = Literal["matrix", "ids", "edges"]


@dataclass
class Table:
    """A table part as parsed: its numbers, its header, and the cells kept as text.

    ``values`` (rows x columns, float64) holds every cell that is a number, NaN elsewhere
    (a missing value, or text). ``text`` keeps, by column, the cells of the columns that
    may be read as text (every column of an edge table; an ids table's first column and the
    candidate id column of a matrix); ``first_text`` the first text cell of each column
    (its row), for messages."""

    part: str
    header: list[str] | None
    values: np.ndarray
    text: dict[int, list[str]]
    missing: np.ndarray  # bool per column: a cell of it is a missing value
    first_text: dict[int, tuple[int, str]]  # column -> (row, cell) of its first text cell
    lines: np.ndarray  # 1-based line where each row starts, for messages
    id_column: str | None = None  # declared (a header name or a 1-based number)
    first_cells: list[str] = field(default_factory=list)  # the first row as text
    index: bool = False  # the first column is a row index (pandas' layout), never read

    @property
    def n_rows(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_columns(self) -> int:
        return int(self.values.shape[1])


def media_separator(content_type: str | None) -> str | None:
    """The separator of a table media type (``text/csv``: comma, TSV: tab), else None."""
    media = (content_type or "").split(";")[0].strip().lower()
    return TABLE_MEDIA.get(media)


def _media_param(content_type: str | None, name: str) -> str | None:
    for param in (content_type or "").split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == name:
            return value.strip().strip('"')
    return None


def declared_header(content_type: str | None, field: str | None, part: str) -> bool | None:
    """The header declared by ``header=present|absent`` in the content type or by the text
    field ``<part>.header``; None when neither declares it; a 422 when both do and disagree."""
    declared = [_header_word(v, part) for v in (_media_param(content_type, "header"), field)]
    given = {d for d in declared if d is not None}
    if len(given) > 1:
        raise InvalidRequest(
            f"part '{part}' declares its header twice and both ways: header="
            f"{'present' if declared[0] else 'absent'} in its content type, and the text field "
            f"'{part}.header' = {field!r}; declare it once"
        )
    return given.pop() if given else None


def _header_word(value: str | None, part: str) -> bool | None:
    """A header declaration's word as True (present) / False (absent), None if not given."""
    if value is None:
        return None
    word = value.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise InvalidRequest(
        f"{part}.header must be true or false (header=present / absent): got {value[:40]!r}"
    )


def declared_id_column(content_type: str | None, field: str | None) -> str | None:
    """The id column declared by ``id_column=<name or number>`` in the content type or by
    the text field ``<part>.id_column``; None when neither declares one."""
    value = _media_param(content_type, "id_column") or field
    return None if value is None or not value.strip() else value.strip()[:MAX_CELL_CHARS]


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


class _Lines:
    """The lines of a text stream, each at most :data:`MAX_ROW_CHARS` characters, counted
    per row (the caller resets ``row_chars`` when a row is complete: a quoted cell may span
    lines)."""

    def __init__(self, stream: io.TextIOBase, part: str) -> None:
        self.stream, self.part = stream, part
        self.row_chars = 0

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        try:
            line = self.stream.readline(MAX_ROW_CHARS + 1)
        except UnicodeDecodeError as exc:
            raise InvalidRequest(f"part '{self.part}' is not UTF-8 text: {exc}") from None
        if not line:
            raise StopIteration
        self.row_chars += len(line)
        if self.row_chars > MAX_ROW_CHARS:
            raise InvalidRequest(
                f"part '{self.part}' has a row longer than {MAX_ROW_CHARS} characters: send "
                "wide arrays as .npy (or a sparse .npz)"
            )
        return line


def _rows(data: bytes, part: str, separator: str | None) -> Iterator[tuple[int, list[str]]]:
    """(1-based line where the row starts, its cells stripped) of every non-blank row."""
    if len(data) > MAX_TABLE_BYTES:
        raise TooLarge(
            f"part '{part}' is a table of {len(data)} bytes, over the limit of "
            f"{MAX_TABLE_BYTES} bytes for CSV / TSV: send it as a .npy file"
        )
    stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")
    lines = _Lines(stream, part)
    line_no = 0
    first = ""
    for first in lines:  # the separator is sniffed from the first non-blank line
        line_no += 1
        if first.strip():
            break
    else:
        return
    lines.row_chars = 0
    if separator is None:
        separator = "\t" if "\t" in first else ("," if "," in first else "")
        if not separator and len(first.split()) > 1:
            separator = " "  # columns separated by runs of spaces (a numpy savetxt file)
    rest: Iterator[str] = _chain(first, lines)
    if separator in (",", "\t"):
        reader = (
            csv.reader(rest, quoting=csv.QUOTE_MINIMAL, strict=True)
            if separator == ","
            else csv.reader(rest, delimiter="\t", quoting=csv.QUOTE_NONE, strict=True)
        )
        start = line_no
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise InvalidRequest(
                    f"part '{part}' is not readable CSV (line {line_no + reader.line_num - 1}):"
                    f" {exc}"
                ) from None
            lines.row_chars = 0
            if len(row) > 1 or (row and row[0].strip()):  # a row of empty cells is missing values
                yield start, [c.strip() for c in row]
            start = line_no + reader.line_num
    else:
        for line in rest:
            lines.row_chars = 0
            if line.strip():
                yield line_no, line.split() if separator == " " else [line.strip()]
            line_no += 1


def _chain(first: str, rest: Iterator[str]) -> Iterator[str]:
    yield first
    yield from rest


def parse_table(
    data: bytes,
    part: str,
    *,
    separator: str | None = None,
    header: bool | None = None,
    kind: Kind = "matrix",
    id_column: str | None = None,
    max_bytes: int = 1 << 30,
    booleans: bool = False,
) -> Table:
    """Parse a CSV / TSV part as a stream (``separator`` None: sniffed from the first line:
    tab, else comma, else runs of spaces, else one column; ``""``: one column), its header
    declared or detected (module docstring). ``kind`` says which columns keep their cells
    as text: every column of ``edges`` (at most 3), the first of ``ids``, and of a
    ``matrix`` its candidate id columns only. ``max_bytes``: the most its numbers may take
    (8 bytes each), checked before each row is held (413 beyond). ``booleans``: cells
    ``true`` / ``false`` (any case: R's and pandas' logical columns) are 1 / 0, as in a table
    of 0/1 label rows."""
    values = array("d")
    kinds = array("b")  # what each cell is, one byte a cell
    first_text: dict[int, tuple[int, str]] = {}  # column -> first text cell after row 0
    text: dict[int, list[str]] = {}
    starts = array("q")
    first: list[str] = []
    width = 0
    named: set[int] = set()
    numeric = kind != "ids"  # an ids table is text only
    default_names = False  # a first row 0, 1, ..., k-1: pandas' default column names
    decimals = False  # a number after the first row written with a point or an exponent
    for i, (line_no, row) in enumerate(_rows(data, part, separator)):
        if i == 0:
            first, width = row, len(row)
            _check_width(part, width, kind)
            named = _named_id(first, id_column)
            text = {j: [] for j in _kept_columns(first, kind, named)}
            default_names = kind == "matrix" and header is None and _default_names(first)
        elif len(row) != width:
            name = {",": "commas", "\t": "tabs"}.get(separator or "", "separators")
            raise InvalidRequest(
                f"part '{part}' line {line_no} has {len(row)} columns but line "
                f"{starts[0]} has {width}" + (f" (separated by {name})" if separator else "")
            )
        if i >= MAX_TABLE_ROWS:
            raise TooLarge(
                f"part '{part}' has more than {MAX_TABLE_ROWS} rows: send large arrays as .npy"
            )
        if numeric and 8 * width * (i + 1) > max_bytes:
            raise TooLarge(
                f"part '{part}' holds more than {i} rows of {width} numbers, over "
                f"{max_bytes} bytes once read (8 bytes a number; OKBOOST_MAX_REQUEST_BYTES "
                "for all parts of one request): send fewer rows per request"
            )
        if numeric or not starts:  # an ids table's line numbers are never named
            starts.append(line_no)
        for j, cells in text.items():
            cell = row[j]
            if len(cell) > MAX_CELL_CHARS:
                _long_cell(part, line_no, j, cell)
            cells.append(cell)
        if not numeric:
            continue
        for j, cell in enumerate(row):
            try:
                value = float(BOOLEAN_CELLS.get(cell.lower(), cell) if booleans else cell)
            except ValueError:
                what = _MISSING if cell.lower() in MISSING_CELLS else _TEXT
                value = math.nan
            else:  # inf - inf and nan - nan are nan: neither is a finite number
                what = _NUMBER if value - value == 0 else _TEXT if value == value else _MISSING
            values.append(value if what == _NUMBER else math.nan)
            kinds.append(what)
            if default_names and i and what == _NUMBER and not cell.lstrip("+-").isdigit():
                decimals, default_names = True, False  # seen: no need to look further
            if what == _TEXT:
                if len(cell) > MAX_CELL_CHARS:
                    _long_cell(part, line_no, j, cell)
                if i and j not in first_text:
                    first_text[j] = (i, cell[:40])
        if i and kind == "matrix" and 0 in text and 0 not in named and kinds[-width] != _TEXT:
            del text[0]  # a number or a missing value: column 1 is not the id column
    if not starts:
        raise InvalidRequest(f"part '{part}' is empty: send one row per line")
    lines = np.frombuffer(starts, dtype=np.int64)
    if not numeric:  # a header only when declared: ids are text
        skip = 1 if header else 0
        ids = {j: cells[skip:] if skip else cells for j, cells in text.items()}
        empty = np.zeros((len(next(iter(ids.values()))), 0))
        return Table(part, first if header else None, empty, ids, np.zeros(0, bool), {},
                     lines[:0], None, first)  # fmt: skip
    n = len(starts)
    matrix = np.frombuffer(values, dtype=np.float64).reshape(n, width)
    what_of = np.frombuffer(kinds, dtype=np.int8).reshape(n, width)
    first_kinds, rest = what_of[0], what_of[1:]
    text_count = (rest == _TEXT).sum(axis=0)
    missing_count = (rest == _MISSING).sum(axis=0)
    missing = missing_count > 0
    pandas = header is not False and kind == "matrix"
    index = _index_under_blank(first, rest, matrix) if pandas else None
    if header is None:
        header = (
            _detected_header(first_kinds, text_count, missing_count, n - 1, kind)
            or index is not None
            or decimals  # pandas' default names over its floats
            or _header_only(first_kinds, n, kind)
        )
        if not header and default_names and n > 1 and len(first) > 2:  # 0,1 over 0/1 rows: data
            _ambiguous_names(part, first)
    if header:
        return Table(
            part,
            first,
            matrix[1:],
            {j: cells[1:] for j, cells in text.items()},
            missing,
            {j: (r - 1, c) for j, (r, c) in first_text.items()},
            lines[1:],
            id_column,
            first,
            index == "index",
        )
    missing |= first_kinds == _MISSING
    first_text.update({int(j): (0, first[j][:40]) for j in np.flatnonzero(first_kinds == _TEXT)})
    return Table(part, None, matrix, text, missing, first_text, lines, id_column, first)


def _long_cell(part: str, line_no: int, j: int, cell: str) -> None:
    raise InvalidRequest(
        f"part '{part}' line {line_no} column {j + 1} has a cell of {len(cell)} characters, "
        f"over the limit of {MAX_CELL_CHARS}"
    )


def _check_width(part: str, width: int, kind: Kind) -> None:
    if width > MAX_TABLE_COLUMNS:
        raise InvalidRequest(
            f"part '{part}' has {width} columns, over the limit of {MAX_TABLE_COLUMNS} for "
            "CSV / TSV: send wide arrays as .npy (or a sparse .npz)"
        )
    if kind == "edges" and width not in (2, 3):
        raise InvalidRequest(
            f"part '{part}' has {width} columns: edges are two columns of "
            "vertices (ids or row indices) and an optional third column of weights"
        )


def _named_id(first: list[str], id_column: str | None) -> set[int]:
    """Columns the first row (as a header) names as the id column."""
    if id_column is not None:
        if id_column.isdigit():
            return {int(id_column) - 1}
        return {j for j, c in enumerate(first) if c == id_column}
    return {j for j, c in enumerate(first) if c.lower() == ID_COLUMN}


def _kept_columns(first: list[str], kind: Kind, named: set[int]) -> set[int]:
    """The columns whose cells are kept as text while the table is read (``named``: the
    columns the first row names as ids)."""
    if kind == "edges":
        return set(range(len(first)))
    if kind == "ids":
        return {min(named)} if named else {0}
    return {0} | {j for j in named if j < len(first)}


def _detected_header(
    first: np.ndarray, text: np.ndarray, missing: np.ndarray, n_rest: int, kind: Kind
) -> bool:
    """A first row with a text cell where a column's other cells are all numbers (some
    missing, not all);
    or a first row of text only over a column whose other cells are mostly numbers (so
    that a typo further down is reported, not taken for a header's absence). O(columns)."""
    if n_rest < 1 or kind == "ids":
        return False
    first_text = first == _TEXT
    numbers = n_rest - text - missing
    all_numeric = first_text & (text == 0) & (numbers > 0)  # missing ones aside
    mostly = first_text & (2 * numbers > n_rest)
    return bool(all_numeric.any() or (first_text.all() and mostly.any()))


def _default_names(first: list[str]) -> bool:
    """Whether a first row is 0, 1, ..., k-1 (k >= 1): the names pandas gives the columns
    of a frame made from an array (or an unnamed Series), as ``to_csv(index=False)`` writes
    them."""
    return len(first) >= 1 and first == [str(j) for j in range(len(first))]


def _index_under_blank(first: list[str], rest: np.ndarray, matrix: np.ndarray) -> str | None:
    """pandas' ``DataFrame.to_csv()`` layout: a first row whose first cell is empty and
    whose other cells are not (the index has no name, the columns do) over a first column
    that is the row index: ``"index"`` when it holds distinct non-negative integers (a
    RangeIndex, perhaps filtered or shuffled), ``"ids"`` when every cell of it is text.
    None for any other table (a first data row with one missing value, say). O(rows)."""
    if len(first) < 2 or first[0] or not all(first[1:]) or not rest.shape[0]:
        return None
    if any(_written_as_fraction(cell) for cell in first[1:]):
        return None  # a row of data missing its first value: pandas names no column 0.53
    if (rest[:, 0] == _TEXT).all():
        return "ids"
    column = matrix[1:, 0]
    if not (rest[:, 0] == _NUMBER).all() or (column < 0).any() or (column % 1).any():
        return None
    return "index" if np.unique(column).size == column.size else None


def _written_as_fraction(cell: str) -> bool:
    """Whether a cell is a number written with a point or an exponent (``0.53``, ``1e-3``),
    which pandas never writes as a column name of its own."""
    try:
        float(cell)
    except ValueError:
        return False
    return not cell.strip().lstrip("+-").isdigit()


def _header_only(first: np.ndarray, n: int, kind: Kind) -> bool:
    """A table of one row of text, without a number: a header without data rows."""
    return kind == "matrix" and n == 1 and bool((first == _TEXT).any() and (first != _NUMBER).all())


def _ambiguous_names(part: str, first: list[str]) -> None:
    """422 for a first row 0, 1, ..., k-1 (k >= 3) over rows of integers only: pandas'
    default column names over an integer frame, or a first row of data; the sender says
    which. (A first row 0,1 over integers is data: 0/1 rows are common.)"""
    shown = ",".join(first) if len(first) <= 6 else ",".join(first[:3]) + ",...," + first[-1]
    raise InvalidRequest(
        f"part '{part}' starts with the line '{shown}', which may be the header pandas "
        "writes for a frame without column names (DataFrame.to_csv(index=False)) or a row "
        "of data: name the columns (e.g. df.columns = ['f0', 'f1', ...]) or declare the "
        f"header, ';type=text/csv;header=present' (or absent) or a text field "
        f"'{part}.header' = true / false"
    )


def _id_column(table: Table, with_ids: bool) -> int | None:
    """The id column (module docstring), or None; a first column of text is one only
    ``with_ids`` (elsewhere it is a table of text, said as such)."""
    if table.id_column is not None:
        declared = _named_id(table.first_cells, table.id_column)
        if table.id_column.isdigit():
            declared = {j for j in declared if 0 <= j < table.n_columns}
        elif table.header is None:
            declared = set()
        if not declared:
            raise InvalidRequest(
                f"part '{table.part}' has no column {table.id_column!r} (the declared "
                "id_column): name a column of its header, or give its number from 1"
            )
        return min(declared)
    if table.header is not None:
        named = _named_id(table.header, None)
        if named:
            return min(named)
    if with_ids and table.n_rows and 0 in table.text and not table.missing[0]:
        if not np.isfinite(table.values[:, 0]).any():  # no number in any row
            return 0
    return None


def _numbers(table: Table, columns: np.ndarray, what: str) -> np.ndarray:
    """The cells of ``columns`` as a float64 (rows, len(columns)) array, missing values NaN;
    a 422 naming the first cell that is text (a word, or an infinite number)."""
    bad = [j for j in columns.tolist() if j in table.first_text]
    if bad:
        j = min(bad, key=lambda c: (table.first_text[c][0], c))
        i, cell = table.first_text[j]
        raise InvalidRequest(
            f"part '{table.part}' line {int(table.lines[i])} column {j + 1}{_named(table, j)} "
            f"is {cell!r}, not a finite number ({what})"
        )
    if columns.size == table.n_columns:
        return table.values
    return table.values[:, columns]


def _not_numbers(table: Table, id_column: int | None) -> set[int]:
    """The columns of a table that are not numbers of its matrix: its id column and a
    row index (pandas' layout)."""
    return {j for j in (id_column, 0 if table.index else None) if j is not None}


def _named(table: Table, j: int) -> str:
    return f" ({table.header[j]!r})" if table.header else ""


def matrix_of(table: Table, *, with_ids: bool) -> tuple[np.ndarray, list[str] | None]:
    """A numeric matrix (missing values NaN) and, when ``with_ids``, the ids of its id
    column (module docstring)."""
    id_column = _id_column(table, with_ids)
    if id_column is not None and not with_ids:
        raise InvalidRequest(
            f"part '{table.part}' has an id column (column {id_column + 1}"
            f"{_named(table, id_column)}); only 'inputs' takes one: send numbers only"
        )
    if not table.n_rows:
        raise InvalidRequest(
            f"part '{table.part}' has a header but no data rows: send at least one row below it"
        )
    ids = None if id_column is None else table.text[id_column]  # kept as text (_kept_columns)
    skipped = _not_numbers(table, id_column)
    columns = np.asarray([j for j in range(table.n_columns) if j not in skipped], dtype=np.int64)
    if not columns.size:
        raise InvalidRequest(f"part '{table.part}' has no numeric column besides its ids")
    what = (
        "features are numbers or missing values besides one id column: the column named "
        "'id', a declared id_column, or a first column of text in every row"
        if with_ids
        else "numbers or missing values only"
    )
    return _numbers(table, columns, what), ids


def similarity_of(table: Table) -> tuple[np.ndarray, list[str] | None]:
    """A square similarity, plain (numbers only: rows and columns in the training order)
    or **labelled**: the ids of its rows in its id column and those of its columns in its
    header, in any order. A labelled one comes back with its columns put in its rows'
    order, and the row ids (the request's ids of that side). 422 for a labelled one that
    is not square, repeats an id, or names different ids in its header and its rows."""
    id_column = _id_column(table, with_ids=True)
    if id_column is None:
        return matrix_of(table, with_ids=False)[0], None
    if table.header is None:
        raise InvalidRequest(
            f"part '{table.part}' has row ids (column {id_column + 1}) but no header row: a "
            "labelled similarity names its columns in a first row (its first cell empty or "
            "'id'), the same ids as its rows, in any order"
        )
    S, row_ids = matrix_of(table, with_ids=True)
    assert row_ids is not None
    col_ids = [h for j, h in enumerate(table.header) if j != id_column]
    part = table.part
    if len(row_ids) != len(col_ids):
        raise InvalidRequest(
            f"part '{part}' is a labelled similarity of {len(row_ids)} rows and "
            f"{len(col_ids)} columns: it must be square, one row and one column per item"
        )
    for ids, where in ((row_ids, "rows"), (col_ids, "columns")):
        seen: dict[str, int] = {}
        for k, v in enumerate(ids):
            if v in seen:
                raise InvalidRequest(
                    f"part '{part}' names {v[:80]!r} twice among its {where} ({seen[v] + 1} and "
                    f"{k + 1}): each item has one row and one column"
                )
            seen[v] = k
    position = {v: k for k, v in enumerate(col_ids)}
    unknown = [v for v in row_ids if v not in position]
    if unknown:
        extra = [v for v in col_ids if v not in set(row_ids)]
        raise InvalidRequest(
            f"part '{part}': {len(unknown)} row ids are not in its header (e.g. "
            f"{unknown[0][:80]!r}), which names {len(extra)} others (e.g. "
            f"{extra[0][:80]!r}): its rows and columns must name the same items"
        )
    order = np.fromiter((position[v] for v in row_ids), dtype=np.int64, count=len(row_ids))
    return S[:, order], row_ids


def column_names(table: Table) -> list[str] | None:
    """The header's names of the numeric columns of an ``inputs`` table (its id column
    left out), or None without a header: at prediction they may name the training items
    of a similarity model (the route matches them)."""
    if table.header is None:
        return None
    skipped = _not_numbers(table, _id_column(table, with_ids=True))
    return [h for j, h in enumerate(table.header) if j not in skipped]


def new_similarity_of(table: Table) -> tuple[np.ndarray, list[str] | None, list[str] | None]:
    """The similarity of new items to the training items (at prediction), plain (numbers
    only: columns in the training order) or **labelled**: its rows' ids in its id column
    and the training items' ids in its header, in any order (the model matches them by
    id). Returns (matrix as read, row ids, column ids); 422 for a labelled one without a
    header or naming an id twice."""
    return labelled_matrix_of(table, "a labelled similarity names the training items of its")


def labelled_matrix_of(
    table: Table, labelled: str
) -> tuple[np.ndarray, list[str] | None, list[str] | None]:
    """A matrix whose rows and columns may be named: plain (numbers only), or
    **labelled**, its rows' ids in its id column and its columns' in its header (a new
    similarity at prediction, a bipartite adjacency at training). Returns (matrix as read,
    row ids, column ids), ids None when plain; 422 for a labelled one without a header or
    naming a column twice, whose message starts its fix with ``labelled`` (what the
    header names: "... of its columns in a first row")."""
    id_column = _id_column(table, with_ids=True)
    if id_column is None:
        return matrix_of(table, with_ids=False)[0], None, None
    if table.header is None:
        raise InvalidRequest(
            f"part '{table.part}' has row ids (column {id_column + 1}) but no header row: "
            f"{labelled} columns in a first row (its first cell empty or 'id')"
        )
    S, row_ids = matrix_of(table, with_ids=True)
    col_ids = [h for j, h in enumerate(table.header) if j != id_column]
    seen: dict[str, int] = {}
    for k, v in enumerate(col_ids):
        if v in seen:
            raise InvalidRequest(
                f"part '{table.part}' names {v[:80]!r} twice in its header ({seen[v] + 1} and "
                f"{k + 1}): one column per vertex or item"
            )
        seen[v] = k
    return S, row_ids, col_ids


def edges_of(table: Table, request_ids: set[str] | None) -> list[list[Any]]:
    """Edges as [a, b] pairs: ids (strings) when the request has ids, else row indices
    (integers; a cell that is not one stays a string, for the schema's message). A table
    parsed with ``kind="edges"``."""
    _check_width(table.part, table.n_columns, "edges")
    a, b = table.text[0], table.text[1]
    start = 0
    if table.header is None and request_ids is not None and a:
        if a[0] not in request_ids and b[0] not in request_ids:
            start = 1  # by id, a header can only be told by its names
    if table.n_columns == 3 and len(a) > start:
        if table.first_text.get(2, (-1, ""))[0] >= start:
            _numbers(table, np.asarray([2]), "edge weights")  # a 422 naming the text cell
        off = np.flatnonzero(~(table.values[start:, 2] == 1.0))  # missing ones: not 1
        if off.size:
            k = int(off[0])
            raise InvalidRequest(
                f"part '{table.part}' has a third column of edge weights ({off.size} not 1, "
                f"e.g. {table.text[2][start + k]!r}), but the graph is unweighted (the "
                "diffusion kernel's Laplacian L = D - A has a 0/1 adjacency A): send two "
                "columns, keeping the edges you trust, or weights of 1"
            )
    if request_ids is not None:
        return [[x, y] for x, y in zip(a[start:], b[start:], strict=True)]
    return [[_index(x), _index(y)] for x, y in zip(a[start:], b[start:], strict=True)]


def _index(cell: str) -> Any:
    return int(cell) if cell.isdigit() else cell


def ids_of(table: Table) -> list[str]:
    """The ids of an ids part (parsed with ``kind="ids"``): its first column, or the column
    named ``id``."""
    (ids,) = table.text.values()
    return ids


def read_table_file(path: str, data: bytes, kind: Kind = "matrix") -> Table:
    """A CSV / TSV file of the CLI, read as its part would be (separator from the suffix)."""
    sep = {"csv": ",", "tsv": "\t", "tab": "\t"}.get(path.rsplit(".", 1)[-1].lower())
    return parse_table(data, path, separator=sep, kind=kind)
