"""Model and job ids: server-generated, 32 lowercase hex digits, checked against a regex
before any path is built from them."""

from __future__ import annotations

import re
import uuid

ID_RE = re.compile(r"^[0-9a-f]{32}$")


def new_id() -> str:
    """A fresh server-generated id (uuid4, 32 lowercase hex digits)."""
    return uuid.uuid4().hex


def valid_id(value: str) -> bool:
    """Whether ``value`` is an id this server could have made (safe in a path)."""
    return bool(ID_RE.fullmatch(value))
