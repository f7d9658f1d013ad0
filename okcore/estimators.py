"""The public estimator registry: the names users, the service and saved models know them by.

``make_estimator(name, params)`` builds an unfitted estimator and checks every parameter
now (the same checks and messages as ``fit``), so a caller can refuse bad parameters before
any work starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import OKEstimator
from .boosting import OKBoostRegressor
from .exceptions import InvalidParameterError
from .forest import OK3ForestRegressor
from .tree import OK3Regressor

#: Estimator classes by their public name.
ESTIMATORS: dict[str, type[OKEstimator]] = {
    "okboost": OKBoostRegressor,
    "ok3": OK3Regressor,
    "ok3-forest": OK3ForestRegressor,
}


def estimator_parameters(name: str) -> dict[str, Any]:
    """The parameters of estimator ``name`` with their defaults."""
    return _estimator_class(name)().get_params()


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
