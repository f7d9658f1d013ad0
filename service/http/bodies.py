"""Reading request bodies: JSON, or multipart with binary array parts.

A multipart request has one part ``json`` holding the JSON request (big arrays
left out) and one part per array, named by its path in the JSON request
(``inputs``, ``output_kernel.gram``, ``output_kernel.edges``, ``candidates``
...). A file part is a ``.npy`` file, a scipy sparse ``.npz`` file (inputs), or raw
little-endian values with a text part ``<path>.shape`` (for example ``300,300``) and
optionally ``<path>.dtype`` (``<f8`` by default); a text part is a JSON array. A CSR
input comes as parts ``<path>.data``, ``<path>.indices``, ``<path>.indptr`` (raw parts
of these need no shape) plus the text part ``<path>.shape`` (``N,p``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar, get_args

from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from service.errors import FieldError, InvalidRequest, TooLarge, UnsupportedMediaType
from service.http.arrays import CSR_MEMBERS, DecodeBudget, parse_binary, parse_shape
from service.http.guards import is_json_media
from service.http.jsontext import loads
from service.http.multipart import read_form
from service.http.tables import (
    EDGE_PARTS,
    column_names,
    declared_header,
    declared_id_column,
    edges_of,
    ids_of,
    labelled_matrix_of,
    looks_like_text,
    matrix_of,
    media_separator,
    new_similarity_of,
    parse_table,
    similarity_of,
)
from service.http.tables import Kind as TableKind  # noqa: I001 - one name, renamed

TABLE_FIELDS = ("header", "id_column")
"""Text fields ``<part>.<field>`` that declare how a table part is read."""

M = TypeVar("M", bound=BaseModel)
INLINE_BYTES = 32 * 1024
"""JSON bodies up to this size are decoded on the event loop; larger ones in the thread pool."""
_SEGMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def from_validation_error(exc: ValidationError | Any) -> InvalidRequest:
    """One actionable message plus details from pydantic's error list."""
    details, wheres = [], []
    for err in exc.errors():
        loc = [p for p in err.get("loc", ()) if p != "body"]
        msg = str(err.get("msg", "invalid value"))
        msg = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
        # the message names a FieldError's field itself: its loc goes to the details only
        wheres.append(".".join(str(p) for p in loc))
        cause = err.get("ctx", {}).get("error")
        details.append(
            {"loc": loc + (cause.loc if isinstance(cause, FieldError) else []), "msg": msg}
        )
    if not details:
        return InvalidRequest("invalid request")
    first, where = details[0], wheres[0]
    message = f"{where}: {first['msg']}" if where else str(first["msg"])
    if len(details) > 1:
        message += f" (and {len(details) - 1} more problem{'s' if len(details) > 2 else ''})"
    return InvalidRequest(message, details=details)


def validate(model_cls: type[M], data: Any) -> M:
    try:
        return model_cls.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc) from None


@dataclass(frozen=True)
class BodyChoice:
    """Several request models on one route (a one-graph /train or a bipartite one), told
    apart by the body's keys: ``pick`` names the model of a decoded body; a multipart part
    may name a field of any of ``models``."""

    models: tuple[type[BaseModel], ...]
    pick: Callable[[dict[str, Any]], type[BaseModel]]

    def of(self, data: Any) -> type[BaseModel]:
        return self.pick(data) if isinstance(data, dict) else self.models[0]


def _from_json(raw: bytes, model_cls: type[M] | BodyChoice, max_depth: int) -> Any:
    if not raw.strip():
        raise InvalidRequest("request body is empty: send a JSON object")
    data = loads(raw, "request body", max_depth)
    return validate(model_cls.of(data) if isinstance(model_cls, BodyChoice) else model_cls, data)


def _set_path(data: dict[str, Any], path: str, value: Any, source: str | None = None) -> None:
    """Put a part's value at ``path`` of the request; 422 when the json part gives that
    field already (``source``: what gives it, when not the part named ``path``)."""
    parts = path.split(".")
    if len(parts) > 3 or not all(_SEGMENT.match(p) for p in parts):
        raise InvalidRequest(f"part name '{path[:80]}' is not a field path such as 'inputs'")
    node = data
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise InvalidRequest(f"part '{path}' conflicts with field '{part}' of the json part")
        node = child
    if node.get(parts[-1]) is not None:
        given = source or f"as part '{path}'"
        raise InvalidRequest(
            f"field '{path}' is given twice: in part 'json' and {given}; send it once "
            "(either in json or as a file part)"
        )
    node[parts[-1]] = value


@dataclass
class _TablePart:
    data: bytes
    separator: str | None
    header: bool | None
    id_column: str | None


def _is_table(name: str, content_type: str | None, raw: bytes, has_shape: bool) -> bool:
    """A part read as a CSV / TSV table: ``ids``, a part sent as ``text/...``, or one
    without a shape field whose bytes are clearly text (see :mod:`service.http.tables`)."""
    media = (content_type or "").split(";")[0].strip().lower()
    if name == "ids" or name.endswith(".ids") or media.startswith("text/"):
        return True
    return not has_shape and looks_like_text(raw)


ID_INPUTS = {"inputs": "ids", "rows.inputs": "rows.ids", "cols.inputs": "cols.ids"}
"""Table parts whose id column gives the ids of their vertices, and where those go."""
SIMILARITY_PARTS = {"rows.similarity": "rows.ids", "cols.similarity": "cols.ids"}
"""Square similarity parts (and ``inputs`` with input_kind similarity): a labelled one gives
the ids of its side."""
LABEL_PARTS = ("labels",)
"""Table parts of 0/1 label rows whose header names the labels (``label_names``)."""


def _get_path(data: dict[str, Any], path: str) -> Any:
    node: Any = data
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _known_ids(data: dict[str, Any]) -> set[str] | None:
    """Every id the request gives so far (its ``ids``, a bipartite request's row and column
    ids): what tells a header row from an edge in an edge table."""
    found = [_get_path(data, path) for path in ID_INPUTS.values()]
    lists = [i for i in found if isinstance(i, list) and all(isinstance(v, str) for v in i)]
    return {v for i in lists for v in i} if lists else None


def _named_labels(data: dict[str, Any], header: list[str] | None, part: str) -> None:
    """The header of a label table gives ``label_names``; 422 when the json part names the
    labels otherwise (which names the columns would be a guess)."""
    given = data.get("label_names")
    if given is None:
        data["label_names"] = header
    elif given != header:
        raise InvalidRequest(
            f"label_names {given} and the header of part '{part}' {header} name the label "
            "columns differently: leave label_names out (the header names the labels) or "
            "make the two the same"
        )


def _tables_into(data: dict[str, Any], tables: dict[str, _TablePart], budget: DecodeBudget) -> None:
    """Parse the table parts into ``data``: ids first, then arrays (the id column of
    ``inputs``, ``rows.inputs`` and ``cols.inputs`` gives their ids; the header of
    ``labels`` the label names), then edges, read as ids when the request has ids. Their
    numbers are charged to ``budget`` (8 bytes each) before they are held."""

    predicting = "model_id" in data  # /predict, /evaluate: the parts are a model's new rows

    def parse(name: str, kind: TableKind) -> Any:
        t = tables[name]
        table = parse_table(
            t.data,
            name,
            separator=t.separator,
            header=t.header,
            kind=kind,
            id_column=t.id_column,
            max_bytes=budget.limit - budget.used,
            booleans=name in LABEL_PARTS or (name == "outputs" and predicting),
        )
        budget.charge(table.values.nbytes, f"table part '{name}'")
        return table

    similar = dict(SIMILARITY_PARTS)
    if data.get("input_kind") == "similarity":
        similar["inputs"] = "ids"
    names = sorted(tables, key=lambda n: (n != "ids", n in EDGE_PARTS))
    for name in names:
        if name == "ids" or name.endswith(".ids"):
            _set_path(data, name, ids_of(parse(name, "ids")))
        elif name not in EDGE_PARTS:
            table = parse(name, "matrix")
            if name == "adjacency" and not predicting:  # a bipartite network's, at /train
                matrix, ids, columns = labelled_matrix_of(
                    table, "a labelled adjacency names the column vertices of its"
                )
                if ids is not None and columns is not None:  # matched by id by the schema
                    source = f"by the labels of part '{name}'"
                    _set_path(data, "adjacency_row_ids", ids, source)
                    _set_path(data, "adjacency_col_ids", columns, source)
                    ids = None  # the side's own ids are matched, not replaced
            elif name in SIMILARITY_PARTS and predicting:
                matrix, ids, columns = new_similarity_of(table)
                if columns is not None:  # matched to the model's training ids by the route
                    _set_path(data, f"{name}_ids", columns, f"by the header of part '{name}'")
            elif name in similar:
                matrix, ids = similarity_of(table)
            else:
                matrix, ids = matrix_of(table, with_ids=name in ID_INPUTS)
                header = column_names(table) if name == "inputs" and predicting else None
                if header is not None:  # a similarity's columns may be named by id
                    _set_path(data, "input_columns", header, "by the header of part 'inputs'")
            _set_path(data, name, matrix)
            if name in LABEL_PARTS and table.header is not None:
                _named_labels(data, column_names(table), name)
            if name == "outputs" and predicting and table.header is not None:
                _set_path(
                    data, "output_columns", column_names(table), "by the header of part 'outputs'"
                )
            if ids is not None:
                target = similar.get(name) or ID_INPUTS[name]
                if _get_path(data, target) is not None:
                    raise InvalidRequest(
                        f"ids are given twice: by the id column of part '{name}' and by "
                        f"'{target}'; send one of them"
                    )
                _set_path(data, target, ids)
        else:
            _set_path(data, name, edges_of(parse(name, "edges"), _known_ids(data)))


def _submodels(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models a field's type names (through unions, Optional, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _submodels(arg)]


def _is_field_path(model_cls: type[BaseModel], parts: list[str]) -> bool:
    """Whether ``parts`` names a field of ``model_cls`` (a nested one through its models)."""
    field = model_cls.model_fields.get(parts[0])
    if field is None:
        return False
    inner = _submodels(field.annotation)
    return len(parts) == 1 or not inner or any(_is_field_path(m, parts[1:]) for m in inner)


class _PartNames:
    """The part-name check of one multipart request, called as each part's headers arrive
    (before its body is held): 422 for a part named twice or not after a field of the
    request. Decoding is what costs (a small sparse part may declare 10^7 rows), and an
    unknown part would otherwise be spooled whole before being refused."""

    def __init__(self, model_cls: type[BaseModel] | BodyChoice) -> None:
        self.models = model_cls.models if isinstance(model_cls, BodyChoice) else (model_cls,)
        self.seen: set[str] = set()

    def __call__(self, name: str) -> None:
        if name in self.seen:
            raise InvalidRequest(
                f"part '{name[:80]}' is sent twice: send each field of the request once"
            )
        self.seen.add(name)
        if name == "json":
            return
        parts = name.split(".")
        if len(parts) > 1 and parts[-1] in ("shape", "dtype", *TABLE_FIELDS, *CSR_MEMBERS):
            parts = parts[:-1]  # a raw part's shape or dtype, a table's header flag, a CSR member
        if not any(_is_field_path(m, parts) for m in self.models):
            fields = ", ".join(sorted({f for m in self.models for f in m.model_fields}))
            raise InvalidRequest(
                f"part '{name[:80]}' is not a field of the request: name each part by the "
                f"path of its field ({fields}, or 'json' for the rest)"
            )


class _JsonBudget:
    """The text of all parts of one request that are parsed into Python objects (the json
    part, JSON text parts and CSV / TSV tables), counted against max_json_bytes before each
    is parsed, as a JSON body would be."""

    def __init__(self, limit: int, max_depth: int) -> None:
        self.limit, self.used, self.max_depth = limit, 0, max_depth

    def count(self, size: int, what: str) -> None:
        self.used += size
        if self.used > self.limit:
            raise TooLarge(
                f"the text of the multipart request ({what} and the parts before it) "
                f"exceeds the limit of {self.limit} bytes for JSON and tables "
                "(OKBOOST_MAX_JSON_BYTES): send large arrays as binary file parts (.npy or "
                "raw values)"
            )

    def loads(self, text: bytes | str, what: str) -> Any:
        self.count(len(text), what)
        return loads(text, what, self.max_depth)


async def _from_multipart(
    request: Request, model_cls: type[BaseModel] | BodyChoice, max_bytes: int, settings: Any
) -> dict[str, Any]:
    max_json = settings.max_json_bytes
    form = await read_form(
        request,
        max_files=256,
        max_fields=256,
        max_text_bytes=max_json,
        check_name=_PartNames(model_cls),
    )
    try:
        json_text = _JsonBudget(max_json, settings.max_json_depth)
        budget = DecodeBudget(max_bytes)
        data: dict[str, Any] = {}
        if "json" in form:
            raw = form["json"]
            if isinstance(raw, UploadFile) and (raw.size or 0) > max_json:
                raise TooLarge(
                    f"part 'json' holds {raw.size} bytes, over the limit of {max_json} bytes "
                    "for JSON (OKBOOST_MAX_JSON_BYTES): send large arrays as binary file parts"
                )
            text = await raw.read() if isinstance(raw, UploadFile) else raw
            data = json_text.loads(text, "part 'json'") if text.strip() else {}
            if not isinstance(data, dict):
                raise InvalidRequest("part 'json' must be a JSON object")
        csr_groups = {
            name.rsplit(".", 1)[0] for name in form if name.endswith(".indptr") and "." in name
        }
        tables: dict[str, _TablePart] = {}
        for name, value in form.multi_items():
            if name == "json" or name.endswith((".dtype", *(f".{f}" for f in TABLE_FIELDS))):
                continue
            if name.endswith(".shape"):
                prefix = name.rsplit(".", 1)[0]
                if prefix in csr_groups:  # the shape of a CSR matrix, not of a raw part
                    text = value if isinstance(value, str) else (await value.read()).decode()
                    _set_path(data, name, list(parse_shape(text, prefix)))
                continue
            if isinstance(value, UploadFile):
                shape = form.get(f"{name}.shape")
                dtype = form.get(f"{name}.dtype")
                is_csr_part = "." in name and (
                    name.rsplit(".", 1)[0] in csr_groups and name.rsplit(".", 1)[1] in CSR_MEMBERS
                )
                raw_part = await value.read()
                has_shape = shape is not None or is_csr_part
                if _is_table(name, value.content_type, raw_part, has_shape):
                    json_text.count(len(raw_part), f"table part '{name}'")
                    field = form.get(f"{name}.header")
                    separator = media_separator(value.content_type)
                    if (name == "ids" or name.endswith(".ids")) and separator is None:
                        separator = ""  # one id per line, whatever characters it holds
                    id_field = form.get(f"{name}.id_column")
                    tables[name] = _TablePart(
                        raw_part,
                        separator,
                        declared_header(
                            value.content_type, field if isinstance(field, str) else None, name
                        ),
                        declared_id_column(
                            value.content_type, id_field if isinstance(id_field, str) else None
                        ),
                    )
                    continue
                decode = partial(
                    parse_binary,
                    raw_part,
                    name,
                    shape if isinstance(shape, str) else None,
                    dtype if isinstance(dtype, str) else None,
                    max_bytes=max_bytes,
                    vector=is_csr_part,
                    budget=budget,
                )
                if len(raw_part) <= INLINE_BYTES:
                    array: Any = decode()
                else:  # header checks, checksums, decompression: off the event loop
                    array = await run_in_threadpool(decode)
            else:
                array = json_text.loads(value, f"text part '{name}' (a JSON array, or send a file)")
            _set_path(data, name, array)
        if tables:
            size = sum(len(t.data) for t in tables.values())
            if size <= INLINE_BYTES:
                _tables_into(data, tables, budget)
            else:
                await run_in_threadpool(_tables_into, data, tables, budget)
        return data
    finally:
        await form.close()


async def read_body(request: Request, model_cls: type[M], max_bytes: int) -> M:
    """Parse and validate the body; CPU-heavy decoding runs in the thread pool."""
    body: M = await read_body_of(request, model_cls, max_bytes)
    return body


async def read_body_of(request: Request, model_cls: type[M] | BodyChoice, max_bytes: int) -> Any:
    """:func:`read_body` for one request model or a :class:`BodyChoice` of several."""
    ctype = request.headers.get("content-type", "application/json")
    media = ctype.split(";")[0].strip().lower()
    settings = request.app.state.services.settings
    max_depth = settings.max_json_depth
    if is_json_media(ctype):
        raw = await request.body()
        if len(raw) <= INLINE_BYTES:  # microseconds of work: a thread hop would cost more
            return _from_json(raw, model_cls, max_depth)
        return await run_in_threadpool(_from_json, raw, model_cls, max_depth)
    if media == "multipart/form-data":
        data = await _from_multipart(request, model_cls, max_bytes, settings)
        chosen = model_cls.of(data) if isinstance(model_cls, BodyChoice) else model_cls
        return await run_in_threadpool(validate, chosen, data)
    raise UnsupportedMediaType(
        f"content type '{media}' is not supported: send application/json or "
        "multipart/form-data (see the docs, Uploads)"
    )
