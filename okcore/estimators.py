"""The public estimator registry: the names users, the service and saved models know them by.

``estimator_names()``, ``eval_set_estimators()`` and ``sample_weight_estimators()`` say
which estimators there are and which take an ``eval_set`` or a ``sample_weight``; ``make_estimator(name, params)`` builds an unfitted estimator and checks every parameter
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
from .kernel_models.ridge import KernelRidgeRegressor
from .trees.forest import OK3ForestRegressor
from .trees.tree import OK3Regressor

#: Estimator classes by their public name.
ESTIMATORS: dict[str, type[OKEstimator]] = {
    "okboost": OKBoostRegressor,
    "ok3": OK3Regressor,
    "ok3-forest": OK3ForestRegressor,
    "krr-boost": KRRBoostRegressor,
    "krr": KernelRidgeRegressor,
}


def estimator_names(include_auto: bool = False) -> tuple[str, ...]:
    """The public names of the estimators, in registry order (what callers offer as
    choices: the service's ``model``, the CLI's ``--model``); with ``include_auto`` also
    "auto", the automatic choice among them (:class:`okcore.auto.AutoRegressor`, known to
    :func:`make_estimator` and the parameter functions but not one model family)."""
    return (*ESTIMATORS, "auto") if include_auto else tuple(ESTIMATORS)


def eval_set_estimators() -> tuple[str, ...]:
    """The names of the estimators whose ``fit`` takes an ``eval_set`` (their class's
    ``supports_eval_set``), in registry order."""
    return tuple(name for name, cls in ESTIMATORS.items() if cls.supports_eval_set)


def sample_weight_estimators(include_auto: bool = False) -> tuple[str, ...]:
    """The names of the estimators whose ``fit`` takes a ``sample_weight`` (their class's
    ``supports_sample_weight``), in registry order; with ``include_auto`` also "auto"."""
    names = estimator_names(include_auto)
    return tuple(n for n in names if getattr(estimator_class(n), "supports_sample_weight", False))


def estimator_summaries(include_auto: bool = False) -> dict[str, str]:
    """A one-line description of each estimator by name (the first line of its class's
    docstring), in registry order (and "auto" last with ``include_auto``): for choices
    shown to users."""
    return {
        name: (cls.__doc__ or cls.__name__).strip().splitlines()[0].rstrip(".")
        for name, cls in ((name, estimator_class(name)) for name in estimator_names(include_auto))
    }


def check_parameter_names(name: str, names: Any) -> None:
    """:class:`~okcore.exceptions.UnknownParameterError` when ``names`` holds a parameter
    estimator ``name`` does not take (:meth:`~okcore.base.OKEstimator.check_parameter_names`);
    an unknown estimator name raises :class:`~okcore.exceptions.InvalidParameterError`."""
    estimator_class(name).check_parameter_names(names, owner=name)


def estimator_parameters(name: str) -> dict[str, Any]:
    """The parameters of estimator ``name`` with their defaults."""
    return estimator_class(name)().get_params()


def estimator_parameter_schema(name: str) -> dict[str, dict[str, Any]]:
    """JSON Schema (draft 2020-12) of each parameter of estimator ``name``, in the order of
    :func:`estimator_parameters`: the types and ranges ``fit`` accepts (from the same
    constraints it checks, so the two cannot differ), the ``default``, and a ``description``
    in the words of the error message ("an int in [1, inf) or None"). Values that are not
    JSON (a numpy Generator as ``random_state``) are left out of the schema."""
    cls = estimator_class(name)
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
    cls = estimator_class(name)
    params = dict(params or {})
    cls.check_parameter_names(params, owner=name)
    estimator = cls(**params)
    estimator.validate_params()
    return estimator


def estimator_class(name: str) -> Any:
    """The class of estimator ``name`` (the registry's, or "auto":
    :class:`okcore.auto.AutoRegressor`); an unknown name raises
    :class:`~okcore.exceptions.InvalidParameterError`."""
    if name == "auto":
        from .auto import AutoRegressor  # okcore.auto builds on the registry's estimators

        return AutoRegressor
    if name not in ESTIMATORS:
        raise InvalidParameterError(
            f"unknown estimator {name!r}; expected one of {sorted(ESTIMATORS)} or 'auto'"
        )
    return ESTIMATORS[name]
