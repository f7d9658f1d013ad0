"""Cross-field rules of request models stated in their JSON Schema.

The model validators check rules between fields ("candidates or candidate_gram, not
both"); stating the same rules in the schema makes the OpenAPI document the contract a
client or a fuzzer can rely on: a request the schema allows is one the validators accept
(as far as a JSON Schema can say: shapes and values between fields stay the validators').
A field counts as given when it is present and not null, as the validators' ``is None``
tests count it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

SchemaExtra = Callable[[dict[str, Any]], None]


def _given(name: str) -> dict[str, Any]:
    return {"required": [name], "properties": {name: {"not": {"type": "null"}}}}


def with_rules(
    extra: SchemaExtra,
    *,
    exclusive: Sequence[tuple[str, str]] = (),
    together: Sequence[tuple[str, str]] = (),
    any_of: Sequence[str] = (),
) -> SchemaExtra:
    """``json_schema_extra``: ``extra`` (examples), then the rules: each pair of
    ``exclusive`` never given both, each pair of ``together`` given both or neither, and at
    least one field of ``any_of`` given."""

    def apply(schema: dict[str, Any]) -> None:
        extra(schema)
        rules: list[dict[str, Any]] = [
            {"not": {"allOf": [_given(a), _given(b)]}} for a, b in exclusive
        ]
        for a, b in together:
            rules += [{"if": _given(a), "then": _given(b)}, {"if": _given(b), "then": _given(a)}]
        if any_of:
            rules.append({"anyOf": [_given(name) for name in any_of]})
        if rules:
            schema["allOf"] = [*schema.get("allOf", []), *rules]

    return apply
