"""Pagination of GET /models and GET /jobs: oldest first, ``limit`` items after a cursor.

A cursor is the position of the last item of a page, ``<created>_<id>`` (its creation time
and id), handed out as ``next_cursor``: the next page starts after it, so items created or
deleted meanwhile never shift a page (an offset would).
"""

from __future__ import annotations

from collections.abc import Iterable

from service.errors import InvalidRequest
from service.store.ids import valid_id

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
CURSOR_PATTERN = r"^[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?_[0-9a-f]{32}$"
"""What a cursor looks like (a creation time as Python writes it, then an id)."""

Key = tuple[float, str]
"""(created, id): the order of a listing."""


def encode_cursor(key: Key) -> str:
    return f"{key[0]!r}_{key[1]}"


def decode_cursor(cursor: str) -> Key:
    created, _, item_id = cursor.rpartition("_")
    try:
        value = float(created)
    except ValueError:
        value = float("nan")
    if not valid_id(item_id) or value != value:
        raise InvalidRequest(
            f"cursor {cursor[:80]!r} is not one this server handed out: pass the "
            "next_cursor of the previous page, or no cursor for the first page"
        )
    return value, item_id


def select(keys: Iterable[Key], limit: int, cursor: str | None) -> tuple[list[Key], str | None]:
    """The page's keys in order, and the cursor of the next page (None on the last)."""
    ordered = sorted(keys)
    if cursor is not None:
        after = decode_cursor(cursor)
        ordered = [k for k in ordered if k > after]
    page = ordered[:limit]
    return page, encode_cursor(page[-1]) if len(ordered) > limit else None
