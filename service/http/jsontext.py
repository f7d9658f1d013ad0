"""JSON text from clients, parsed safely: UTF-8 checked, nesting depth bounded before parsing.

Python's parser recurses once per level of nesting: a body of 100,000 ``[`` raises
RecursionError deep inside it, and a value nested 900 levels deep passes it but breaks
whatever walks it next. :func:`loads` counts the depth first with a vectorised scan
(strings, which may hold brackets, are blanked out by one regular expression), so such a
body is a 422 that names the limit.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from service.errors import InvalidRequest

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_STEP = np.zeros(256, dtype=np.int8)
_STEP[[ord("["), ord("{")]] = 1
_STEP[[ord("]"), ord("}")]] = -1
_CHUNK = 1 << 20  # bytes scanned at once: bounded temporaries whatever the body's size


def nesting_depth(raw: bytes, limit: int) -> int:
    """The deepest nesting of arrays / objects in JSON text, or the first depth over
    ``limit`` (the scan stops there). Brackets inside strings do not count."""
    text = _STRING.sub(b'""', raw) if b'"' in raw else raw
    codes = np.frombuffer(text, dtype=np.uint8)
    depth, deepest = 0, 0
    for start in range(0, codes.size, _CHUNK):
        levels = np.cumsum(_STEP[codes[start : start + _CHUNK]], dtype=np.int64) + depth
        deepest = max(deepest, int(levels.max()))
        if deepest > limit:
            return deepest
        depth = int(levels[-1])
    return deepest


def loads(raw: bytes | str, what: str, max_depth: int) -> Any:
    """Parse JSON from a client; InvalidRequest (422) naming ``what`` when it is not UTF-8,
    nested deeper than ``max_depth`` or not JSON. NaN and Infinity literals parse (as
    Python writes them); the schemas refuse them where numbers must be finite."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequest(
            f"{what} is not UTF-8 text (invalid byte at position {exc.start}): send JSON "
            "encoded as UTF-8"
        ) from None
    if nesting_depth(raw, max_depth) > max_depth:
        raise InvalidRequest(
            f"{what} nests arrays / objects more than {max_depth} levels deep "
            "(OKBOOST_MAX_JSON_DEPTH); requests need at most 4"
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidRequest(f"{what} is not valid JSON: {exc}") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise InvalidRequest(
            f"{what} holds a number Python does not read ({exc}); send finite numbers, "
            "at most about 1.8e308 (a float64)"
        ) from None
