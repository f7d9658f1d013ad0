"""Array helpers: JSON lists and binary parts to ndarrays and CSR matrices.

Binary parts are what a client in any language can produce without numpy:

- a ``.npy`` file (format version 1 or 2, little-endian bool / integer / float; read
  with ``allow_pickle=False`` after its header is checked against its size);
- raw little-endian values in row-major (C) order, together with a text field
  ``<name>.shape`` such as ``300,5`` and optionally ``<name>.dtype``: ``<f8`` (the
  default), ``<f4``, ``|u1``, ``<i4`` or ``<i8``;
- for inputs, a scipy sparse matrix saved by ``scipy.sparse.save_npz`` (csr, csc or coo;
  read member by member without pickle, sizes checked before anything is allocated).

Inputs may also be a CSR matrix given as its three arrays ``data``, ``indices``,
``indptr`` and its ``shape`` (JSON object, or parts ``inputs.data`` ... plus the text
field ``inputs.shape``); :func:`as_csr` checks its structure.
"""

from __future__ import annotations

import io
import math
import zipfile
from itertools import chain
from typing import Any

import numpy as np
import scipy.sparse as sp

from service.errors import InvalidRequest, TooLarge
from service.http.tables import MISSING_CELLS
from service.http.zipread import read_member

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"
RAW_DTYPES: dict[str, np.dtype[Any]] = {
    "<f8": np.dtype("<f8"),
    "<f4": np.dtype("<f4"),
    "|u1": np.dtype("u1"),
    "u1": np.dtype("u1"),
    "<i4": np.dtype("<i4"),
    "<i8": np.dtype("<i8"),
}
"""dtypes a raw part may declare in ``<name>.dtype`` (numpy's array-protocol strings)."""
INPUT_DTYPES = (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.uint8))
"""Input dtypes kept as sent (okcore accepts them); others become float64."""
MAX_SPARSE_COLUMNS = 1_000_000
"""Most columns a sparse input may declare (its shape is not bounded by its bytes)."""
MAX_SPARSE_ROWS = 10_000_000
"""Most rows a sparse input may declare: a COO or CSC matrix with few entries can declare
any number of rows, and its CSR form holds rows + 1 row pointers (80 MB at this bound)."""
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
CSR_MEMBERS = ("data", "indices", "indptr")


class DecodeBudget:
    """Bytes that decoding the parts of one request may allocate, all parts together: the
    members of compressed ``.npz`` parts as they inflate, and the row pointers of a sparse
    matrix converted to CSR (its declared rows, not its bytes). Each part is capped by the
    request-size limit on its own; without a shared budget, 40 small sparse parts each
    declaring 10^7 rows cost gigabytes before the request is validated."""

    def __init__(self, limit: int) -> None:
        self.limit, self.used = limit, 0

    def charge(self, size: int, what: str) -> None:
        """Count ``size`` more bytes for ``what``, or 413 when the total would pass the limit."""
        if self.used + size > self.limit:
            others = f" after {self.used} bytes of its other parts" if self.used else ""
            raise TooLarge(
                f"{what} expands to {size} bytes once decoded{others}: over the limit of "
                f"{self.limit} bytes for all parts of one request together "
                "(OKBOOST_MAX_REQUEST_BYTES); send fewer rows per request"
            )
        self.used += size


def parse_shape(text: str, name: str) -> tuple[int, ...]:
    """Parse ``"300,5"``, ``"300x5"`` or ``"[300, 5]"`` into a shape tuple."""
    cleaned = text.strip().strip("[]()").replace("x", ",").replace(" ", "")
    try:
        shape = tuple(int(part) for part in cleaned.split(",") if part != "")
    except ValueError:
        shape = ()
    if not shape or any(s < 0 for s in shape):
        raise InvalidRequest(
            f"{name}.shape must be comma-separated non-negative integers such as '300,5': "
            f"got {text!r}"
        )
    return shape


def _npy_header(
    data: bytes | bytearray, name: str
) -> tuple[np.dtype[Any], tuple[int, ...], bool, int]:
    """(dtype, shape, fortran_order, data offset) of a .npy file, checked against its size."""
    fp = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
        else:
            raise InvalidRequest(
                f"part '{name}' is a .npy file of format version {version[0]}.{version[1]}; "
                "send version 1.0 or 2.0 (what np.save writes for numeric arrays)"
            )
    except (ValueError, OSError, EOFError, SyntaxError) as exc:
        raise InvalidRequest(f"part '{name}' is not a readable .npy file: {exc}") from None
    if dtype.hasobject:
        raise InvalidRequest(
            f"part '{name}' is not a readable .npy file: it holds Python objects (dtype "
            f"{dtype}), which would need pickle; send bool, integer or float numbers"
        )
    if dtype.byteorder == ">":
        raise InvalidRequest(
            f"part '{name}' is big-endian ({dtype.str}); send little-endian "
            f"({dtype.newbyteorder('<').str}), e.g. np.save(f, a.astype(a.dtype.newbyteorder('<')))"
        )
    needed = math.prod(shape) * dtype.itemsize
    held = len(data) - fp.tell()
    if held != needed:
        raise InvalidRequest(
            f"part '{name}' declares shape {list(shape)} of {dtype.str} ({needed} bytes) but "
            f"holds {held} bytes of data"
        )
    return dtype, tuple(shape), bool(fortran), fp.tell()


def _parse_npy(data: bytes | bytearray, name: str, *, allow_text: bool = False) -> np.ndarray:
    dtype, shape, fortran, offset = _npy_header(data, name)
    if allow_text and dtype.kind in "SU" and math.prod(shape) <= 16:
        return np.load(io.BytesIO(data), allow_pickle=False)
    if dtype.hasobject or dtype.kind not in "biuf":
        raise InvalidRequest(
            f"part '{name}' has dtype {dtype}; send bool, integer or float numbers"
        )
    arr = np.frombuffer(data, dtype=dtype, count=math.prod(shape), offset=offset)
    return arr.reshape(shape, order="F" if fortran else "C")


def _parse_sparse_npz(data: bytes, name: str, budget: DecodeBudget) -> sp.csr_matrix:
    try:
        return _read_sparse_npz(data, name, budget)
    except ValueError as exc:
        raise InvalidRequest(f"part '{name}': {exc}") from None


def _read_sparse_npz(data: bytes, name: str, budget: DecodeBudget) -> sp.csr_matrix:
    """A scipy.sparse.save_npz file (csr, csc or coo) as a checked CSR matrix, no pickle.

    Every member's uncompressed size is read from the zip directory and charged to the
    request's budget before anything is decompressed; members are then inflated a chunk at
    a time, never past that size (:mod:`service.http.zipread`). The row pointers of a CSC or COO
    matrix's CSR form are charged from its declared rows before it is converted."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = {info.filename: info for info in zf.infolist()}
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise InvalidRequest(
            f"part '{name}' is not a readable .npz file (scipy.sparse.save_npz): {exc}"
        ) from None
    budget.charge(sum(info.file_size for info in infos.values()), f"part '{name}'")

    def member(key: str, *, allow_text: bool = False) -> np.ndarray:
        info = infos.get(f"{key}.npy")
        if info is None:
            raise InvalidRequest(
                f"part '{name}' is an .npz file without '{key}': send a sparse matrix saved "
                "by scipy.sparse.save_npz"
            )
        try:
            raw = read_member(zf, info)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise InvalidRequest(f"part '{name}': member '{key}' cannot be read: {exc}") from None
        return _parse_npy(raw, f"{name}[{key}]", allow_text=allow_text)

    fmt_arr = member("format", allow_text=True)
    fmt = fmt_arr.item() if fmt_arr.size == 1 else None
    fmt = fmt.decode("ascii", "replace") if isinstance(fmt, bytes) else fmt
    shape = member("shape")
    if fmt in ("csr", "csc"):
        arrays = {k: member(k) for k in CSR_MEMBERS}
        if fmt == "csr":
            return as_csr({**arrays, "shape": shape}, name)
        # a CSC matrix is the CSR matrix of the transpose: check it so, then convert
        rows, _ = _csr_shape(shape, name)  # what it declares, before any conversion
        budget.charge(2 * 8 * (rows + 1), f"part '{name}' (the row pointers of {rows} rows)")
        shape_t = np.asarray(shape)[::-1] if np.ndim(shape) == 1 else shape
        csr_t = as_csr({**arrays, "shape": shape_t}, name, max_columns=None)
        return as_csr(csr_t.T.tocsr(), name)
    if fmt == "coo":
        if "coords.npy" in infos:
            coords = member("coords")
            if coords.ndim != 2 or coords.shape[0] != 2:
                raise InvalidRequest(f"part '{name}': coo coords must have shape (2, nnz)")
            row, col = coords[0], coords[1]
        else:
            row, col = member("row"), member("col")
        values = member("data")
        coo_shape = _csr_shape(shape, name)
        budget.charge(
            2 * 8 * (coo_shape[0] + 1), f"part '{name}' (the row pointers of {coo_shape[0]} rows)"
        )
        for label, idx, bound in (("row", row, coo_shape[0]), ("col", col, coo_shape[1])):
            idx = _integer_vector(idx, f"{name}.{label}")
            if idx.shape[0] != values.shape[0] or (
                idx.size and (idx.min() < 0 or idx.max() >= bound)
            ):
                raise InvalidRequest(
                    f"part '{name}': coo {label} indices must be {values.shape[0]} values in "
                    f"[0, {bound})"
                )
            if label == "row":
                row = idx
            else:
                col = idx
        coo = sp.coo_matrix((_sparse_values(values, name), (row, col)), shape=coo_shape)
        return as_csr(coo.tocsr(), name)
    raise InvalidRequest(
        f"part '{name}' holds a sparse matrix of format {fmt!r}; send csr (or csc / coo)"
    )


def parse_binary(
    data: bytes,
    name: str,
    shape_text: str | None,
    dtype_text: str | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    vector: bool = False,
    budget: DecodeBudget | None = None,
) -> Any:
    """Decode one binary part: ``.npy``, scipy ``.npz`` (sparse), or raw values.

    ``vector``: a raw part without a shape field is read as a 1-D array (the parts of a
    CSR matrix). Sizes are checked against the bytes received before any array is made;
    what decoding allocates beyond them is charged to ``budget`` (the request's, shared by
    its parts; by default ``max_bytes`` for this part alone).
    """
    if data.startswith(NPY_MAGIC):
        arr = _parse_npy(data, name)
        if dtype_text is not None and _raw_dtype(dtype_text, name) != arr.dtype:
            raise InvalidRequest(
                f"part '{name}' is a .npy file of dtype {arr.dtype.str} but {name}.dtype says "
                f"{dtype_text}"
            )
        if shape_text is not None and tuple(arr.shape) != parse_shape(shape_text, name):
            raise InvalidRequest(
                f"part '{name}' has shape {list(arr.shape)} but {name}.shape says {shape_text}"
            )
        return arr
    if data.startswith(ZIP_MAGIC):
        return _parse_sparse_npz(data, name, budget or DecodeBudget(max_bytes))
    dtype = _raw_dtype(dtype_text or "<f8", name)
    if shape_text is None:
        if not vector:
            raise InvalidRequest(
                f"part '{name}' is not a .npy file; raw little-endian parts need a "
                f"shape field '{name}.shape' such as '300,5' (and '{name}.dtype' unless "
                "float64)"
            )
        if len(data) % dtype.itemsize:
            raise InvalidRequest(
                f"part '{name}' has {len(data)} bytes, not a whole number of {dtype.name} "
                f"values ({dtype.itemsize} bytes each)"
            )
        shape: tuple[int, ...] = (len(data) // dtype.itemsize,)
    else:
        shape = parse_shape(shape_text, name)
    expected = math.prod(shape) * dtype.itemsize
    if len(data) != expected:
        raise InvalidRequest(
            f"part '{name}' has {len(data)} bytes but shape {list(shape)} of {dtype.name} "
            f"needs {expected} bytes"
        )
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def _raw_dtype(text: str, name: str) -> np.dtype[Any]:
    key = text.strip()
    if key in RAW_DTYPES:
        return RAW_DTYPES[key]
    accepted = "'<f8' (default), '<f4', '|u1', '<i4' or '<i8'"
    if key.startswith(">"):
        raise InvalidRequest(
            f"part '{name}' declares big-endian dtype {key!r}; send little-endian values "
            f"and declare one of {accepted} in '{name}.dtype'"
        )
    raise InvalidRequest(
        f"part '{name}' declares dtype {key!r}, which raw parts do not take: declare one of "
        f"{accepted} in '{name}.dtype', or send a .npy file"
    )


def to_npy_bytes(arr: Any) -> bytes:
    """Encode an array as ``.npy`` bytes (used by the Python client)."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(arr), allow_pickle=False)
    return buf.getvalue()


#: The models whose trees learn where missing input values go.
MISSING_VALUE_MODELS = "okboost (without params.init), ok3 or ok3-forest"


def _missing_rows(name: str, arr: np.ndarray) -> tuple[str, list[int]]:
    """'<name> has missing values (NaN) in rows 3, 7, the first at [3, 0] (row 3, column 0)'
    and that first position, for a matrix holding NaN."""
    bad = [int(i) for i in np.argwhere(np.isnan(arr))[0]]
    rows = np.flatnonzero(np.isnan(arr).any(axis=1))
    listed = ", ".join(str(int(r)) for r in rows[:5])
    more = f" and {rows.size - 5} more" if rows.size > 5 else ""
    where = f"{name} has missing values (NaN) in rows {listed}{more}, the first at {bad} "
    return where + f"(row {bad[0]}, column {bad[1]})", bad


def missing_problem(arr: Any, name: str, model: str, accepts: bool, similarity: bool) -> str | None:
    """Why inputs ``arr`` (dense or CSR) cannot be taken, when they hold missing values
    (NaN: a table's ``NA``, ``nan`` or empty cells) and ``model`` does not take them
    (``accepts``: its class's ``accepts_missing``) or they are a ``similarity`` (whose
    entries are all needed); None otherwise. O(n p)."""
    values = arr.data if sp.issparse(arr) else np.asarray(arr)
    if values.dtype.kind != "f" or not np.isnan(values).any() or (accepts and not similarity):
        return None
    if sp.issparse(arr):
        coo = arr.tocoo()
        row = int(coo.row[int(np.flatnonzero(np.isnan(coo.data))[0])])
        where = f"{name} has a missing value (NaN) in row {row}"
    else:
        where, bad = _missing_rows(name, values)
        row = bad[0]
    if similarity:
        return (
            f"{where}: a similarity must be complete; fill each missing similarity in "
            "(e.g. 0 for unrelated items) before sending"
        )
    return (
        f"{where}: model '{model}' does not accept missing values; impute them (fill each "
        f"in, e.g. with its column's mean) or drop row {row} and the others before sending, "
        f"or train {MISSING_VALUE_MODELS}, whose trees learn where missing values go"
    )


IMPUTE = "impute it (fill each in, e.g. with its column's mean)"
"""How a missing value of numbers is filled in: what a 422 advises by default."""


def _non_finite(name: str, arr: np.ndarray, fill: str = IMPUTE) -> str:
    """Where the first non-finite value of ``arr`` is, and for a matrix the fix: missing
    values (NaN, as a table's ``NA`` or empty cells become) are named by their rows, with
    ``fill``, how to fill them in."""
    bad = [int(i) for i in np.argwhere(~np.isfinite(arr))[0]]
    if len(bad) == 2 and np.isnan(arr[bad[0], bad[1]]):
        where, _ = _missing_rows(name, arr)
        return (
            f"{where}: a missing value cannot be sent here; {fill} or drop row {bad[0]} and "
            "the others before sending"
        )
    message = f"{name} contains NaN, infinite or null values (first at {bad})"
    if len(bad) == 2:
        message += (
            f": row {bad[0]}, column {bad[1]}; a missing value cannot be sent, fill it in "
            f"(impute) or drop row {bad[0]} before sending"
        )
    return message


def _infinite(name: str, arr: np.ndarray) -> str:
    """Where the first infinite value of ``arr`` is (inputs that may hold missing values)."""
    bad = [int(i) for i in np.argwhere(np.isinf(arr))[0]]
    where = f": row {bad[0]}, column {bad[1]}" if len(bad) == 2 else ""
    return (
        f"{name} contains infinity (first at {bad}){where}; send finite numbers (a missing "
        "value is NaN, null or an empty table cell)"
    )


_NUMBER_TYPES = frozenset({int, float, type(None)})
"""What a JSON array of numbers holds: numbers, and null (a missing value)."""


def _only_numbers(value: list[Any]) -> bool:
    """Whether nested lists hold JSON numbers and null only (no true / false, no text):
    one C-level pass over each innermost list's element types."""
    types = set(map(type, value))
    if types == {list}:  # rows: their entries in one pass
        types = set(map(type, chain.from_iterable(value)))
        if types == {list}:
            return all(_only_numbers(row) for row in value)
    return types <= _NUMBER_TYPES


def _entry_problem(entry: Any, where: str, row: int | None, allow_nan: bool) -> str | None:
    """Why one entry of a JSON array is not a number, or None when it is one (``allow_nan``:
    the field takes missing values, sent as null)."""
    if not isinstance(entry, bool) and isinstance(entry, int | float | None):
        return None
    send = "send numbers as JSON numbers" + ("; a missing value is null" if allow_nan else "")
    if isinstance(entry, bool):
        return f"{where} is {str(entry).lower()}, not a number: {send}"
    if not isinstance(entry, str):
        kind = "an array" if isinstance(entry, list | tuple) else type(entry).__name__
        return f"{where} is {kind}, not a number: {send}"
    text = f"{where} is the text {entry[:40]!r}"
    try:
        number = float(entry)
    except ValueError:
        number = None
    if number is not None and not math.isnan(number):
        return f"{text}: send numbers as JSON numbers, without quotes"
    if (number is not None or entry.strip().lower() in MISSING_CELLS) and not allow_nan:
        drop = f" or drop row {row}" if row is not None else ""
        return (
            f"{text}, not a number: a missing value cannot be sent here; fill it in "
            f"(impute){drop} before sending"
        )
    return f"{text}, not a number: {send}"


def _unreadable_entry(value: Any, name: str, ndim: int, allow_nan: bool) -> str | None:
    """Why nested lists are not a ``ndim``-D array of numbers: the first row whose length
    differs from the first row's, or the first entry that is not a number (true / false and
    text included), by row and column; None when the cause is elsewhere. Runs only once the
    lists are known to hold something else than numbers and null."""
    if not isinstance(value, list | tuple):
        return None
    if ndim == 1 or not any(isinstance(r, list | tuple) for r in value):
        for j, entry in enumerate(value):
            problem = _entry_problem(entry, f"{name}[{j}]", None, allow_nan)
            if problem is not None:
                return problem
        return None
    rows = [r for r in value if isinstance(r, list | tuple)]
    width = len(rows[0])
    for i, row in enumerate(value):
        if not isinstance(row, list | tuple):
            return f"{name}[{i}] is not a row (a list of {width} numbers) like {name}[0]"
        if len(row) != width:
            return (
                f"{name}[{i}] has {len(row)} values but {name}[0] has {width}: rows must "
                "be of equal length, one value per column"
            )
        for j, entry in enumerate(row):
            where = f"{name}[{i}][{j}] (row {i}, column {j})"
            problem = _entry_problem(entry, where, i, allow_nan)
            if problem is not None:
                return problem
    return None


def _huge_as_infinite(value: Any) -> Any:
    """Nested lists with each integer too large for a float replaced by infinity of its
    sign, as a JSON number such as 1e400 is read (the rare path of an OverflowError)."""
    if isinstance(value, list):
        return [_huge_as_infinite(v) for v in value]
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    return value


def float64_array(value: Any, name: str, ndim: int, *, allow_nan: bool = False) -> np.ndarray:
    """A nested list or ndarray as a float64 array, its shape and values not yet checked.
    A list holds JSON numbers and null (NaN) only: true / false and text (``"1.5"``) are
    refused, as every field of the request models is strictly typed (``allow_nan``: the
    field takes missing values, which the message then says are null); an integer too
    large for a float is infinity. Raises ``ValueError`` naming the first bad entry."""
    if isinstance(value, list) and not _only_numbers(value):
        numbers = f"{name} must be a {ndim}-D array of numbers"
        raise ValueError(_unreadable_entry(value, name, ndim, allow_nan) or numbers)
    try:
        try:
            arr = np.asarray(value, dtype=np.float64)
        except OverflowError:
            arr = np.asarray(_huge_as_infinite(value), dtype=np.float64)
    except (ValueError, TypeError) as exc:
        why = _unreadable_entry(value, name, ndim, allow_nan)
        if why is not None:
            raise ValueError(why) from None
        reason = str(exc).split(".")[0]
        raise ValueError(
            f"{name} must be a {ndim}-D array of numbers with rows of equal length ({reason})"
        ) from None
    return arr


def as_float_array(
    value: Any,
    name: str,
    ndim: int,
    *,
    allow_1d_column: bool = False,
    allow_nan: bool = False,
    fill: str = IMPUTE,
) -> np.ndarray:
    """Convert a nested list (of JSON numbers and null: :func:`float64_array`) or an
    ndarray to a finite float64 array of ``ndim`` dimensions (``allow_nan``: NaN, which
    null becomes, is kept for the caller to judge; never infinity; else ``fill`` says how
    to fill a missing value in).

    Raises ``ValueError`` (turned into a 422 by the schema layer) with a message
    that names the field and what to change.
    """
    arr = float64_array(value, name, ndim, allow_nan=allow_nan)
    if arr.size == 0 and arr.ndim <= ndim:
        one = "one row of numbers" if ndim == 2 else "one number"
        raise ValueError(f"{name} is empty (shape {list(arr.shape)}): send at least {one}")
    if allow_1d_column and arr.ndim == 1 and ndim == 2:
        arr = arr.reshape(-1, 1)
    if arr.ndim != ndim:
        hint = " (wrap a single row as [[...]])" if ndim == 2 and arr.ndim == 1 else ""
        raise ValueError(f"{name} must be a {ndim}-D array: got {arr.ndim}-D{hint}")
    if not np.isfinite(arr).all():
        if not allow_nan:
            raise ValueError(_non_finite(name, arr, fill))
        if np.isinf(arr).any():
            raise ValueError(_infinite(name, arr))
    return arr


MAX_INDEX = 2**53 - 1
"""The largest row or vertex index a request may send: float64 holds every integer up to it
exactly, and no table comes near it, so larger ones are refused before a cast to int64 could
wrap them around (an index of 2**63 became -2**63: a 500)."""


def as_edge_array(value: Any, name: str = "edges") -> np.ndarray:
    """Convert ``[[i, j], ...]`` to an int64 array of shape (E, 2) of non-negative indices
    (at most :data:`MAX_INDEX`; the caller compares them with its vertex count).

    Integer arrays are taken as they are; floats must hold integer values; bool is refused.
    """
    if isinstance(value, np.ndarray) and value.dtype.kind == "b":
        raise ValueError(f"{name} must hold integer vertex indices: got dtype bool")
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
        arr = value
    else:
        arr = float64_array(value, name, 2)  # raises, naming the entry that is not a number
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(
            f"{name} must be a list of [i, j] pairs of vertex indices: got shape {list(arr.shape)}"
        )
    bad = (arr < 0) | (arr > MAX_INDEX)
    if arr.dtype.kind == "f":
        bad |= ~np.isfinite(arr) | (arr != np.round(arr))
    if bad.any():
        k = int(np.argwhere(bad)[0][0])
        raise ValueError(
            f"{name}[{k}] = {arr[k].tolist()} is not a pair of vertex indices: non-negative "
            "integers counted from 0 (rows of the table they index)"
        )
    return arr.astype(np.int64)


# ---------------------------------------------------------------- inputs: dense or CSR
def _integer_vector(value: Any, name: str) -> np.ndarray:
    """A 1-D array of integers (integer-valued floats accepted) as int64; a JSON list holds
    numbers only (:func:`float64_array`)."""
    arr = float64_array(value, name, 1) if isinstance(value, list) else np.asarray(value)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array: got shape {list(arr.shape)}")
    if arr.dtype.kind == "f" or (arr.dtype == object and arr.size == 0):
        arr = arr.astype(np.float64)
        bad = ~np.isfinite(arr) | (arr != np.round(arr)) | (np.abs(arr) > MAX_INDEX)
    elif arr.dtype.kind in "iu":
        bad = np.abs(arr.astype(np.float64)) > MAX_INDEX
    else:
        raise ValueError(f"{name} must hold integers: got dtype {arr.dtype}")
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(
            f"{name} must hold integers of at most {MAX_INDEX}: {name}[{k}] = {arr[k]}"
        )
    return arr.astype(np.int64, copy=False)


def _sparse_values(value: Any, name: str) -> np.ndarray:
    """The stored values of a sparse input: 1-D, no infinity (a stored NaN is a missing
    value: :func:`refuse_missing`); float32 / uint8 kept."""
    if isinstance(value, list):
        arr = float64_array(value, f"{name}.data", 1, allow_nan=True)
    else:
        arr = np.asarray(value)
    if arr.dtype not in INPUT_DTYPES:
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (ValueError, TypeError):
            raise ValueError(f"{name}.data must be numbers") from None
    if arr.ndim != 1:
        raise ValueError(f"{name}.data must be a 1-D array: got shape {list(arr.shape)}")
    if arr.dtype.kind == "f" and np.isinf(arr).any():
        k = int(np.argmax(np.isinf(arr)))
        raise ValueError(f"{name}.data contains infinite values (first at [{k}])")
    return arr


def _csr_shape(
    value: Any, name: str, max_columns: int | None = MAX_SPARSE_COLUMNS
) -> tuple[int, int]:
    if isinstance(value, str):
        shape: Any = parse_shape(value, name)
    else:
        shape = np.asarray(value).ravel().tolist() if value is not None else []
    ok = len(shape) == 2 and all(
        isinstance(v, int | np.integer) or (isinstance(v, float) and v.is_integer()) for v in shape
    )
    if not ok:
        raise ValueError(f"{name}.shape must be two integers [rows, columns]: got {value!r}")
    n, p = int(shape[0]), int(shape[1])
    if n < 1 or p < 1:
        raise ValueError(f"{name} must not be empty: got shape [{n}, {p}]")
    if max_columns is not None and p > max_columns:
        raise ValueError(f"{name} declares {p} columns; at most {max_columns} are accepted")
    if n > MAX_SPARSE_ROWS:
        raise ValueError(f"{name} declares {n} rows; at most {MAX_SPARSE_ROWS} are accepted")
    return n, p


def as_csr(value: Any, name: str, *, max_columns: int | None = MAX_SPARSE_COLUMNS) -> sp.csr_matrix:
    """A checked CSR matrix from a scipy sparse matrix or ``{data, indices, indptr, shape}``.

    indptr has N + 1 entries, starts at 0, never decreases and ends at nnz (the length of
    data and indices); indices are in [0, p); data is finite. Duplicate or unsorted column
    indices within a row are summed and sorted (the same matrix). Raises ``ValueError``.
    """
    if sp.issparse(value):
        m = value.tocsr() if value.format != "csr" else value
        parts: dict[str, Any] = {
            "data": m.data,
            "indices": m.indices,
            "indptr": m.indptr,
            "shape": list(m.shape),
        }
    elif isinstance(value, dict):
        missing = [k for k in (*CSR_MEMBERS, "shape") if k not in value]
        extra = sorted(set(value) - {*CSR_MEMBERS, "shape"})
        if missing or extra:
            raise ValueError(
                f"{name} as a sparse matrix is an object with data, indices, indptr and "
                f"shape ([rows, columns]) in CSR layout"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unknown {', '.join(extra)}" if extra else "")
            )
        parts = value
    else:
        raise ValueError(f"{name} must be a matrix or a CSR object")
    n, p = _csr_shape(parts["shape"], name, max_columns)
    data = _sparse_values(parts["data"], name)
    indices = _integer_vector(parts["indices"], f"{name}.indices")
    indptr = _integer_vector(parts["indptr"], f"{name}.indptr")
    nnz = data.shape[0]
    if indptr.shape[0] != n + 1:
        raise ValueError(
            f"{name}.indptr must have rows + 1 = {n + 1} entries: got {indptr.shape[0]}"
        )
    if indptr[0] != 0 or indptr[-1] != nnz or (np.diff(indptr) < 0).any():
        raise ValueError(
            f"{name}.indptr must start at 0, never decrease and end at nnz = {nnz} (the "
            f"length of data): got {indptr[0]} ... {indptr[-1]}"
        )
    if indices.shape[0] != nnz:
        raise ValueError(
            f"{name}.indices has {indices.shape[0]} entries but data has {nnz}: one column "
            "index per stored value"
        )
    if nnz and (indices.min() < 0 or indices.max() >= p):
        k = int(np.argmax((indices < 0) | (indices >= p)))
        raise ValueError(f"{name}.indices[{k}] = {indices[k]} is not a column index in [0, {p})")
    index_dtype = np.int32 if max(nnz, p) < np.iinfo(np.int32).max else np.int64
    m = sp.csr_matrix((data, indices.astype(index_dtype), indptr.astype(index_dtype)), shape=(n, p))
    if not m.has_canonical_format:
        m.sum_duplicates()
    return m


def as_input_matrix(value: Any, name: str, *, allow_nan: bool = False) -> Any:
    """Inputs: a dense 2-D array (float64, float32 and uint8 kept as sent, anything else as
    float64), or a CSR matrix (scipy sparse, or ``{data, indices, indptr, shape}``), without
    infinity; ``allow_nan``: NaN is a missing value, kept (whether the model takes it:
    :func:`missing_problem`), else refused."""
    if sp.issparse(value) or isinstance(value, dict):
        csr = as_csr(value, name)
        if not allow_nan and np.isnan(csr.data).any():
            k = int(np.argmax(np.isnan(csr.data)))
            raise ValueError(
                f"{name}.data holds a missing value (NaN) at [{k}]: a missing value cannot be "
                "sent here; impute it (fill it in) before sending"
            )
        return csr
    if isinstance(value, np.ndarray) and value.dtype in INPUT_DTYPES:
        if value.ndim != 2:
            hint = " (wrap a single row as [[...]])" if value.ndim == 1 else ""
            raise ValueError(f"{name} must be a 2-D array: got {value.ndim}-D{hint}")
        if value.size == 0:
            raise ValueError(f"{name} must not be empty: got shape {list(value.shape)}")
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            if not allow_nan:
                raise ValueError(_non_finite(name, value))
            if np.isinf(value).any():
                raise ValueError(_infinite(name, value))
        return value
    return as_float_array(value, name, 2, allow_nan=allow_nan)
