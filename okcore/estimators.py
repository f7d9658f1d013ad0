"""The public estimator registry: the names users, the service and saved models know them by.

``make_estimator(name, params)`` builds an unfitted estimator and checks every parameter
now (the same checks and messages as ``fit``), so a caller can refuse bad parameters before
any work starts. ``estimator_parameter_schema(name)`` describes the same parameters and
checks as JSON Schema, for API schemas that must not drift from the estimators.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._validation import constraints_json_schema
from .base import OKEstimator
from .boosting import OKBoostRegressor
from .exceptions import InvalidParameterError
from .kernel_models.krr_boosting import KRRBoostRegressor
from .trees.forest import OK3ForestRegressor
from .trees.tree import OK3Regressor

#: Estimator classes by their public name.
ESTIMATORS: dict[str, type[OKEstimator]] = {
    "okboost": OKBoostRegressor,
    "ok3": OK3Regressor,
    "ok3-forest": OK3ForestRegressor,
    "krr-boost": KRRBoostRegressor,
}


def estimator_parameters(name: str) -> dict[str, Any]:
    """The parameters of estimator ``name`` with their defaults."""
    return _estimator_class(name)().get_params()


def estimator_parameter_schema(name: str) -> dict[str, dict[str, Any]]:
    """JSON Schema (draft 2020-12) of each parameter of estimator ``name``, in the order of
    :func:`estimator_parameters`: the types and ranges ``fit`` accepts (from the same
    constraints it checks, so the two cannot differ), the ``default``, and a ``description``
    in the words of the error message ("an int in [1, inf) or None"). Values that are not
    JSON (a numpy Generator as ``random_state``) are left out of the schema."""
    cls = _estimator_class(name)
    schemas = {}
    for param, default in estimator_parameters(name).items():
        constraints = cls._parameter_constraints.get(param, [])
        schema = constraints_json_schema(constraints) if constraints else {}
        if constraints:
            allowed = " or ".join(c.describe() for c in constraints)
            schema["description"] = f"{allowed[0].upper()}{allowed[1:]}."
        schemas[param] = {**schema, "default": default}
    return schemas


def make_estimator(name: str, params: Mapping[str, Any] | None = None) -> OKEstimator:
    """An unfitted estimator ``name`` with ``params``, validated: an unknown name or
    parameter, or a bad value, raises :class:`~okcore.exceptions.InvalidParameterError`
    that says which and what is allowed."""
    cls = _estimator_class(name)
    params = dict(params or {})
    valid = cls().get_params()
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise InvalidParameterError(
            f"unknown parameter(s) {unknown} for {name!r}; its parameters are {sorted(valid)}"
        )
    estimator = cls(**params)
    estimator.validate_params()
    return estimator


def _estimator_class(name: str) -> type[OKEstimator]:
    if name not in ESTIMATORS:
        raise InvalidParameterError(
            f"unknown estimator {name!r}; expected one of {sorted(ESTIMATORS)}"
        )
    return ESTIMATORS[name]
