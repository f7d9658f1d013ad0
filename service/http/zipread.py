"""Reading zip members (``.npz`` files) a bounded chunk at a time.

``zipfile`` reads a whole member with one call that lets the decompressor produce up to
1 GiB before the result is cut to the size the member declares: a member of a few bytes
whose deflate stream expands to hundreds of megabytes costs those megabytes first. Here a
member is inflated ``CHUNK`` bytes at a time (the decompressor's output per call is
bounded by what is asked), into a buffer of its declared size, so what a member can make
the server hold is that declared size, which callers bound before reading.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator

CHUNK = 1 << 20


def iter_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """The member's bytes, ``CHUNK`` at a time (never more than its declared size in all).
    Raises zipfile.BadZipFile (or OSError / EOFError) when the member is corrupted, or when
    it ends before its declared size."""
    left = info.file_size
    with zf.open(info) as fh:
        while left > 0:
            chunk = fh.read(min(CHUNK, left))
            if not chunk:
                raise zipfile.BadZipFile(
                    f"member '{info.filename}' ends {left} bytes before its declared size"
                )
            left -= len(chunk)
            yield chunk


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytearray:
    """The whole member in one buffer of its declared size, inflated a chunk at a time."""
    buf = bytearray(info.file_size)
    pos = 0
    for chunk in iter_member(zf, info):
        buf[pos : pos + len(chunk)] = chunk
        pos += len(chunk)
    return buf
