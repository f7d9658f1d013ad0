"""Estimators built on other estimators (multi-label, bipartite, averages): scikit-learn's
parameter protocol for an estimator whose parameters include estimators, ``clone``, and
:class:`AveragedRegressor`.

Nested parameters follow scikit-learn: ``get_params(deep=True)`` lists ``estimator__<name>``
for every parameter of an inner estimator and ``set_params`` accepts them, so grid searches
and ``sklearn.base.clone`` work on these wrappers as on any okcore estimator.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ._validation import check_is_fitted
from .exceptions import DataError


def clone(estimator: Any) -> Any:
    """A fresh unfitted estimator with the same parameters (inner estimators cloned too);
    scikit-learn's ``clone`` without the dependency."""
    params = {
        name: clone(value)
        if hasattr(value, "get_params") and not isinstance(value, type)
        else value
        for name, value in estimator.get_params(deep=False).items()
    }
    return type(estimator)(**params)


class MetaEstimator:
    """Parameter handling for estimators whose ``__init__`` stores keyword arguments, some of
    them estimators (``get_params`` / ``set_params`` with ``<inner>__<name>`` keys)."""

    @classmethod
    def _get_param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return sorted(p.name for p in signature.parameters.values() if p.name != "self")

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        params = {name: getattr(self, name) for name in self._get_param_names()}
        if deep:
            for name, value in list(params.items()):
                if hasattr(value, "get_params") and not isinstance(value, type):
                    for key, inner in value.get_params(deep=True).items():
                        params[f"{name}__{key}"] = inner
        return params

    def set_params(self, **params: Any) -> MetaEstimator:
        valid = self._get_param_names()
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, _, inner = key.partition("__")
            if name not in valid:
                raise ValueError(
                    f"Invalid parameter {name!r} for estimator {type(self).__name__}. "
                    f"Valid parameters are: {valid}."
                )
            if inner:
                nested.setdefault(name, {})[inner] = value
            else:
                setattr(self, name, value)
        for name, inner_params in nested.items():
            getattr(self, name).set_params(**inner_params)
        return self

    def __repr__(self) -> str:
        return params_repr(self, self.get_params(deep=False))


def params_repr(estimator: Any, params: dict[str, Any]) -> str:
    """``Name(a=1, b='x')`` with the parameters that differ from the constructor's defaults,
    as scikit-learn prints an estimator."""
    defaults = {
        p.name: p.default for p in inspect.signature(type(estimator).__init__).parameters.values()
    }
    changed = [
        f"{k}={v!r}"
        for k, v in params.items()
        if not (v is defaults.get(k) or (isinstance(v, str | int | float) and v == defaults.get(k)))
    ]
    return f"{type(estimator).__name__}({', '.join(changed)})"


class AveragedRegressor(MetaEstimator):
    """The average of several regressors fitted on the same rows: F(x) = sum_m w_m F_m(x)
    with weights w summing to 1 (equal by default).

    For okcore estimators every member's prediction is W_m^F(x) Y over the same training rows,
    so the average is again a weighted average of training outputs, W^F = sum_m w_m W_m^F
    (:meth:`predict_weights`). Averaging models whose errors differ (a forest's label
    frequencies and a boosted model's shrunk corrections) improves the ranking of labels: on
    yeast, OK3-et + OKBoost averaged with OK3 extra-trees reached ranking loss 0.162 and
    micro-F1 0.683 against at best 0.163 and 0.680 for one model (docs/RESULTS.md, 8.2.1);
    OKBoost's default averaged with ``KernelRidgeRegressor(gamma="cv")`` was the best model
    on yeast, USPS and whole Cora (docs/RESULTS.md, 9.16).

    Parameters
    ----------
    estimators : list of estimators
        Cloned and fitted on the same (X, Y); each needs fit / predict (and predict_weights
        for :meth:`predict_weights`).
    weights : list of float or None
        Non-negative weights, normalised to sum 1; None = equal.

    Fitted attributes: ``estimators_`` (fitted clones), ``weights_`` (normalised).
    Cost: the sum of the members' fits and predictions.
    """

    def __init__(self, estimators: Any, *, weights: Any = None) -> None:
        self.estimators = estimators
        self.weights = weights

    def fit(self, X: Any, Y: Any, **fit_params: Any) -> AveragedRegressor:
        members = list(self.estimators) if isinstance(self.estimators, list | tuple) else []
        if not members:
            raise DataError("estimators must be a non-empty list of regressors")
        w = np.ones(len(members)) if self.weights is None else np.asarray(self.weights, float)
        if w.shape != (len(members),) or not np.all(w >= 0) or w.sum() <= 0:
            raise DataError(
                f"weights must be {len(members)} non-negative numbers, not all 0: got "
                f"{self.weights!r}"
            )
        self.weights_ = w / w.sum()
        self.estimators_ = [clone(m).fit(X, Y, **fit_params) for m in members]
        return self

    def predict(self, X: Any) -> np.ndarray:
        """sum_m w_m F_m(X), shape (Q, L) (or the members' shape)."""
        return self._weighted_sum("predict", X)

    def predict_weights(self, X: Any) -> np.ndarray:
        """W^F(X) = sum_m w_m W_m^F(X), shape (Q, N_train)."""
        return self._weighted_sum("predict_weights", X)

    def _weighted_sum(self, method: str, X: Any) -> np.ndarray:
        """sum_m w_m (member m's ``method``)(X)."""
        check_is_fitted(self, "estimators_")
        return sum(  # type: ignore[return-value]
            w * np.asarray(getattr(m, method)(X), dtype=np.float64)
            for w, m in zip(self.weights_, self.estimators_, strict=True)
        )
