"""The typed ``params`` of POST /train in the OpenAPI schema, built from okcore at import.

One schema model per estimator the service trains (``OKBoostParams``, ``OK3Params``,
``OK3ForestParams``), made with ``pydantic.create_model`` from
``okcore.estimator_parameter_schema``: every parameter the estimator takes, with its JSON
type, range, default and the words of okcore's error message. They come from the
constraints okcore's ``fit`` checks, so the schema cannot drift from the estimators. The
TrainRequest schema ties each to its ``model`` (``if`` model is "ok3" ``then`` params is
OK3Params).

These models document. Validation stays okcore's (``okcore.make_estimator`` in
:mod:`service.training`), so an unknown parameter or a bad value is a 422 with okcore's
message, whatever a schema validator would have said.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, WithJsonSchema, create_model

import okcore

if TYPE_CHECKING:
    ModelName = str
    EstimatorName = str
else:
    ModelName = Literal[okcore.estimator_names(include_auto=True)]
    EstimatorName = Literal[okcore.estimator_names()]
"""The models POST /train fits (TrainRequest.model): every name of okcore's registry
(``okcore.estimator_names()``) and "auto", the automatic choice among them
(okcore.AutoRegressor), an enum in the OpenAPI schema. ``EstimatorName``: the registry's
names only, for the tasks whose models wrap one estimator (bipartite, multi-label)."""
EVAL_SET_MODELS = okcore.eval_set_estimators()
"""The models that take an ``eval_set`` (``supports_eval_set`` in okcore's registry)."""
SAMPLE_WEIGHT_MODELS = okcore.sample_weight_estimators(include_auto=True)
"""The models whose fit takes a ``sample_weight`` (``supports_sample_weight``)."""
MASKED_OUTPUT_MODELS = tuple(
    name
    for name in okcore.estimator_names()
    if okcore.estimator_class(name).supports_masked_outputs
)
"""The models whose fit takes output vectors with unknown (NaN) entries."""


def _example(schema: dict[str, Any], default: Any) -> Any:
    """A value to show for a parameter: its default, else the first non-null value its
    schema allows (the lower bound of a range, the first option)."""
    if default is not None:
        return default
    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") in ("integer", "number"):
            return branch.get("minimum", 1)
        values = [v for v in branch.get("enum", []) if v is not None]
        if values:
            return values[0]
    return None


def _params_model(name: str) -> type[BaseModel]:
    """The schema model of estimator ``name``'s parameters (OKBoostRegressor ->
    OKBoostParams)."""
    cls = okcore.estimator_class(name)
    fields: dict[str, Any] = {}
    for param, schema in okcore.estimator_parameter_schema(name).items():
        typed = {k: v for k, v in schema.items() if k not in ("default", "description")}
        default = schema["default"]
        fields[param] = (
            Annotated[Any, WithJsonSchema(typed)],
            Field(
                default,
                description=schema.get("description", ""),
                examples=[_example(typed, default)],
            ),
        )
    # the defaults, those that are null left out (as a client would)
    example = {k: v for k, v in okcore.estimator_parameters(name).items() if v is not None}
    title = cls.__name__.removesuffix("Regressor") + "Params"
    config = ConfigDict(
        extra="forbid",
        title=title,
        json_schema_extra={
            "description": f"Parameters of model '{name}' (okcore.{cls.__name__}); a value "
            "left out takes its default.",
            "examples": [example],
        },
    )
    model: type[BaseModel] = create_model(title, __config__=config, **fields)
    return model


PARAM_MODELS: dict[str, type[BaseModel]] = {
    name: _params_model(name) for name in okcore.estimator_names(include_auto=True)
}
"""The schema model of each estimator's parameters, by model name."""


def _as_dict(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(
            'params must be an object of parameter names and values, e.g. {"n_estimators": 100}'
        )
    return value


Params = Annotated[
    dict[str, Any],
    PlainValidator(
        _as_dict,
        json_schema_input_type=Union[tuple(PARAM_MODELS.values())],  # type: ignore[valid-type]  # noqa: UP007
    ),
]
"""The ``params`` field: documented as one of the PARAM_MODELS, checked by okcore."""


def params_by_model(
    extra: Callable[[dict[str, Any]], None], default_models: tuple[str, ...]
) -> Callable[[dict[str, Any]], None]:
    """``json_schema_extra`` for a request with ``model`` and ``params``: ``extra``, then one
    ``if`` / ``then`` per model saying which params schema applies, and for a request that
    leaves ``model`` out, the params of any of ``default_models`` (the server picks among
    them by the request)."""

    def link(schema: dict[str, Any]) -> None:
        extra(schema)
        # the references pydantic wrote for the params union, in PARAM_MODELS order
        refs = dict(
            zip(
                PARAM_MODELS,
                [b["$ref"] for b in schema["properties"]["params"]["anyOf"]],
                strict=True,
            )
        )
        rules: list[dict[str, Any]] = [
            {
                "if": {"properties": {"model": {"const": name}}, "required": ["model"]},
                "then": {"properties": {"params": {"$ref": ref}}},
            }
            for name, ref in refs.items()
        ]
        defaults = [{"$ref": refs[name]} for name in default_models]
        rules.append(
            {
                "if": {"not": {"required": ["model"]}},
                "then": {"properties": {"params": {"anyOf": defaults}}},
            }
        )
        schema["allOf"] = rules

    return link
