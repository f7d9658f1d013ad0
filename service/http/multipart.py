"""Reading a multipart/form-data body with every byte it makes the server hold bounded.

python-multipart parses the stream (it bounds the headers of each part: 8 lines of at most
4224 bytes). Every part, a file or a text field, is written as it arrives to a spooled
temporary file that stays in memory up to :data:`SPOOL_BYTES` and moves to disk beyond, so
a large part costs disk, not memory, until a route reads it. Text fields (parts without a
filename: the ``json`` part, ``<path>.shape``, JSON text parts) are counted together against
``max_text_bytes`` while they stream, and the request is refused the moment they pass it;
only a form within that budget has its text fields decoded into strings. File parts are
bounded by the request cap (:class:`service.http.guards.BodyLimits`) and read later, one by
one, by the body reader.

The part counts are bounded too: ``max_files`` file parts and ``max_fields`` text fields;
so are the parts held in memory together (:data:`MEMORY_BYTES`: past it every further part
goes to disk as it streams). Each part's name is checked by the caller's ``check_name`` the
moment its headers arrive, before any byte of its body is held. A ``charset`` parameter
must name a text encoding of documents (:func:`text_codec`).
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from tempfile import SpooledTemporaryFile

from python_multipart import MultipartParser
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import parse_options_header
from starlette.datastructures import FormData, Headers, UploadFile
from starlette.requests import Request

from service.errors import InvalidRequest, TooLarge, UnsupportedMediaType

SPOOL_BYTES = 1 << 20
"""A part is held in memory up to this many bytes, then spooled to a temporary file."""
MEMORY_BYTES = 8 << 20
"""All parts of one request together are held in memory up to this many bytes; past it, every
part is written to its temporary file on disk."""
NOT_CHARSETS = frozenset({"idna", "punycode", "undefined", "unicode-escape", "raw-unicode-escape"})
"""Text codecs that are not character sets of documents (host names, escape sequences, a
codec that always fails)."""


@dataclass
class _Part:
    upload: UploadFile
    is_text: bool


@dataclass
class _Reader:
    """python-multipart's callbacks: parts collected into spooled files, counted as they
    stream. File writes are queued and done by :func:`read_form` between two chunks, off the
    event loop once a file is on disk (what ``UploadFile.write`` does)."""

    max_files: int
    max_fields: int
    max_text_bytes: int
    check_name: Callable[[str], None]
    parts: list[tuple[str, _Part]] = field(default_factory=list)
    pending: list[tuple[UploadFile, bytes]] = field(default_factory=list)
    files: int = 0
    fields: int = 0
    text_bytes: int = 0
    memory_bytes: int = 0  # bytes of every part held in memory so far
    ended: bool = False  # the closing boundary was read
    _headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    _header_name: bytes = b""
    _header_value: bytes = b""
    _current: _Part | None = None

    def on_part_begin(self) -> None:
        self._headers, self._current = [], None

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def on_header_end(self) -> None:
        self._headers.append((self._header_name.lower(), self._header_value))
        self._header_name, self._header_value = b"", b""

    def on_headers_finished(self) -> None:
        disposition = next((v for k, v in self._headers if k == b"content-disposition"), b"")
        _, options = parse_options_header(disposition)
        if b"name" not in options:
            raise InvalidRequest(
                "a part of the multipart request has no name: give each part a Content-"
                'Disposition header such as form-data; name="inputs"'
            )
        name = options[b"name"].decode("utf-8", "replace")
        self.check_name(name)  # before any byte of its body is held
        filename = options.get(b"filename")
        if filename is None:
            self.fields += 1
            if self.fields > self.max_fields:
                raise InvalidRequest(
                    f"the multipart request has more than {self.max_fields} text fields: send "
                    "one part per field of the request"
                )
        else:
            self.files += 1
            if self.files > self.max_files:
                raise InvalidRequest(
                    f"the multipart request has more than {self.max_files} file parts: send "
                    "one part per array of the request"
                )
        upload = UploadFile(
            SpooledTemporaryFile(max_size=SPOOL_BYTES),  # type: ignore[arg-type]
            size=0,
            filename=None if filename is None else filename.decode("utf-8", "replace"),
            headers=Headers(raw=self._headers),
        )
        self._current = _Part(upload, is_text=filename is None)
        self.parts.append((name, self._current))

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        part = self._current
        assert part is not None  # python-multipart calls on_headers_finished first
        if part.is_text:
            self.text_bytes += end - start
            if self.text_bytes > self.max_text_bytes:
                name = self.parts[-1][0]
                raise TooLarge(
                    f"text part '{name[:80]}' and the text fields before it exceed "
                    f"the limit of {self.max_text_bytes} bytes for JSON "
                    "(OKBOOST_MAX_JSON_BYTES): send large arrays as binary file parts (.npy "
                    "or raw values), or a large JSON request as a file part (with a filename)"
                )
        self.memory_bytes += end - start
        if self.memory_bytes > MEMORY_BYTES:
            part.upload.file.rollover()  # type: ignore[attr-defined]  # SpooledTemporaryFile
        self.pending.append((part.upload, data[start:end]))

    def on_part_end(self) -> None:
        self._current = None

    def on_end(self) -> None:
        self.ended = True


def text_codec(charset: str) -> str:
    """The codec of a ``charset`` parameter when it is a text encoding of documents (UTF-8,
    Latin-1, UTF-16 ...), else a 415: ``str.encode`` refuses the bytes-to-bytes codecs
    (``base64``, ``zlib``, ``rot13`` ...), and :data:`NOT_CHARSETS` lists the text codecs
    that are not character sets."""
    try:
        name = codecs.lookup(charset).name
        "".encode(name)  # LookupError for a codec that does not encode text
    except (LookupError, UnicodeError):  # unknown, not text, or never encodes (undefined)
        name = ""
    if not name or name in NOT_CHARSETS:
        raise UnsupportedMediaType(
            f"charset '{charset[:40]}' in the Content-Type is not a text encoding: send "
            "UTF-8 text (charset=utf-8, or no charset)"
        )
    return name


def _charset(content_type: str) -> str:
    _, params = parse_options_header(content_type)
    return text_codec(params.get(b"charset", b"utf-8").decode("latin-1"))


def _any_name(name: str) -> None:
    """A ``check_name`` that takes every part name."""


async def read_form(
    request: Request,
    *,
    max_files: int,
    max_fields: int,
    max_text_bytes: int,
    check_name: Callable[[str], None] = _any_name,
) -> FormData:
    """The parts of a multipart body: file parts as :class:`UploadFile` (spooled), text
    fields as strings. 413 when the text fields pass ``max_text_bytes`` together, 422 for a
    body that is not multipart, has too many parts or a part whose name ``check_name``
    refuses (called as each part's headers arrive), 415 for a charset that is not a text
    encoding; the caller closes the form."""
    content_type = request.headers.get("content-type", "")
    _, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if not boundary:
        raise InvalidRequest(
            "multipart body cannot be parsed: the Content-Type has no boundary (let your "
            "HTTP library build the multipart body and its header)"
        )
    charset = _charset(content_type)
    reader = _Reader(max_files, max_fields, max_text_bytes, check_name)
    callbacks = {
        "on_part_begin": reader.on_part_begin,
        "on_part_data": reader.on_part_data,
        "on_part_end": reader.on_part_end,
        "on_header_field": reader.on_header_field,
        "on_header_value": reader.on_header_value,
        "on_header_end": reader.on_header_end,
        "on_headers_finished": reader.on_headers_finished,
        "on_end": reader.on_end,
    }
    try:
        parser = MultipartParser(boundary, callbacks)  # type: ignore[arg-type]
        async with aclosing(request.stream()) as stream:
            async for chunk in stream:
                parser.write(chunk)
                for upload, data in reader.pending:
                    await upload.write(data)
                reader.pending.clear()
        parser.finalize()
        if not reader.ended:
            last = f" inside part '{reader.parts[-1][0][:80]}'" if reader.parts else ""
            raise InvalidRequest(
                f"multipart body cannot be parsed: it ends{last} before its closing boundary "
                "(a truncated upload?): send the whole body"
            )
        items: list[tuple[str, str | UploadFile]] = []
        for name, part in reader.parts:
            await part.upload.seek(0)
            if not part.is_text:
                items.append((name, part.upload))
                continue
            raw = await part.upload.read()
            await part.upload.close()
            try:
                items.append((name, raw.decode(charset)))
            except (UnicodeError, ValueError):  # UnicodeDecodeError, or a codec's own
                raise InvalidRequest(
                    f"text part '{name[:80]}' is not valid {charset} text: send text "
                    "fields as UTF-8"
                ) from None
    except FormParserError as exc:
        await _close(reader)
        raise InvalidRequest(f"multipart body cannot be parsed: {exc}") from None
    except BaseException:
        await _close(reader)
        raise
    return FormData(items)


async def _close(reader: _Reader) -> None:
    for _, part in reader.parts:
        await part.upload.close()
