"""Seed fields of the requests (``cv.random_state``, a multi-label ``random_state``): JSON
null is the default seed.

A client that serialises an unset seed writes null; these fields have a default seed, so
null takes it (the model record keeps the seed used, and the fit reproduces under it),
rather than a 422 that says "Input should be a valid integer". An estimator's own
``params.random_state`` is okcore's parameter and takes null as okcore does (unseeded).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

DEFAULT_SEED = 0
"""The seed of a seed field left out or null."""


def _null_is_default(value: Any) -> Any:
    """JSON null read as the default seed; any other value is checked as an integer."""
    return DEFAULT_SEED if value is None else value


Seed = Annotated[
    int,
    Field(ge=0),
    BeforeValidator(_null_is_default, json_schema_input_type=Annotated[int, Field(ge=0)] | None),
]
"""A seed >= 0; null is :data:`DEFAULT_SEED`."""

FoldSeed = Annotated[
    int,
    Field(ge=0, lt=2**32),
    BeforeValidator(
        _null_is_default, json_schema_input_type=Annotated[int, Field(ge=0, lt=2**32)] | None
    ),
]
"""A seed of numpy's legacy generator (0 <= seed < 2**32), as the CV folds' shuffle takes;
null is :data:`DEFAULT_SEED`."""
