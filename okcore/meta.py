"""Estimators built on other estimators (multi-label, bipartite, averages): scikit-learn's
parameter protocol for an estimator whose parameters include estimators and ``clone``
(:class:`~okcore.averaging.AveragedRegressor` builds on them).

Nested parameters follow scikit-learn: ``get_params(deep=True)`` lists ``estimator__<name>``
for every parameter of an inner estimator and ``set_params`` accepts them, so grid searches
and ``sklearn.base.clone`` work on these wrappers as on any okcore estimator.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

from ._validation import check_feature_names, check_inputs
from .exceptions import InvalidParameterError
from .routing import MetadataRequests


def clone(estimator: Any) -> Any:
    """A fresh unfitted estimator with the same parameters (inner estimators cloned too, also
    in lists: an average's members); scikit-learn's ``clone`` without the dependency,
    metadata routing requests (:mod:`okcore.routing`) kept as it keeps them."""
    params = {name: _cloned(value) for name, value in estimator.get_params(deep=False).items()}
    fresh = type(estimator)(**params)
    requests = getattr(estimator, "_metadata_request", None)
    if requests is not None:
        fresh._metadata_request = copy.deepcopy(requests)
    return fresh


def _cloned(value: Any) -> Any:
    """A parameter as :func:`clone` passes it on: an estimator cloned, a list or tuple a new
    one of its items so handled, any other value itself (as scikit-learn's ``clone``)."""
    if hasattr(value, "get_params") and not isinstance(value, type):
        return clone(value)
    if isinstance(value, list) or type(value) is tuple:
        return type(value)(_cloned(v) for v in value)
    return value


class MetaEstimator(MetadataRequests):
    """Parameter handling for estimators whose ``__init__`` stores keyword arguments, some of
    them estimators (``get_params`` / ``set_params`` with ``<inner>__<name>`` keys), and
    scikit-learn's metadata routing requests (:class:`~okcore.routing.MetadataRequests`)."""

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
            inner = getattr(self, name)
            if not hasattr(inner, "set_params") or isinstance(inner, type):
                raise InvalidParameterError(_no_inner_parameters(self, name, inner, inner_params))
            inner.set_params(**inner_params)
        return self

    def _forget_fit(self) -> None:
        """Drop every fitted attribute (the public names ending in "_") before a refit: a fit
        that fails or is stopped leaves an unfitted estimator, not the previous fit's results
        beside a model that predicts nothing."""
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("_")]:
            delattr(self, name)

    def _checked_inputs(self, X: Any) -> Any:
        """X checked against the width this fitted estimator was fitted with
        (``n_features_in_``), the message naming this estimator, not the inner model that
        predicts (:func:`okcore._validation.check_inputs`, as okcore's estimators check).
        Missing values (NaN) are left for the inner model to take or refuse. After a fit on
        a pandas DataFrame, X's columns must be ``feature_names_in_`` in the same order
        (:func:`okcore._validation.check_feature_names`)."""
        width = int(self.n_features_in_)  # type: ignore[attr-defined]  # the subclasses'
        check_feature_names(self, X)
        return check_inputs(X, width, owner=type(self).__name__, allow_missing=True)

    def __repr__(self) -> str:
        return params_repr(self, self.get_params(deep=False))

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's default estimator tags (scikit-learn >= 1.6 asks for them in
        ``clone``, ``cross_val_score`` and ``GridSearchCV``); the regressors and classifiers
        built on other estimators say what they are."""
        from sklearn.utils import Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=False))


def regressor_tags(*, allow_nan: bool, sparse: bool) -> Any:
    """scikit-learn's estimator tags of an okcore regressor: multi-output, outputs optional
    (a Gram matrix or a graph may replace them), inputs sparse and with missing values (NaN)
    as given. Imported here: okcore itself does not depend on scikit-learn."""
    from sklearn.utils import InputTags, RegressorTags, Tags, TargetTags

    return Tags(
        estimator_type="regressor",
        target_tags=TargetTags(required=False, multi_output=True, single_output=True),
        regressor_tags=RegressorTags(),
        input_tags=InputTags(sparse=sparse, allow_nan=allow_nan),
    )


def members_accept(members: list, what: str) -> bool:
    """Whether every estimator of a non-empty ``members`` takes inputs with ``what``
    (scikit-learn's input tag "sparse" or "allow_nan"), by their tags."""
    from sklearn.utils import get_tags

    return bool(members) and all(getattr(get_tags(m).input_tags, what) for m in members)


def _no_inner_parameters(estimator: Any, name: str, inner: Any, params: dict) -> str:
    """Why ``<name>__<key>`` parameters cannot be set on ``estimator`` whose ``name`` holds
    ``inner`` (no estimator), and what to do."""
    keys = ", ".join(f"{name}__{key}" for key in params)
    owner = type(estimator).__name__
    if inner is None:
        return (
            f"cannot set {keys}: {owner}'s {name} is None (its default, whose inner "
            f"parameters are fixed); set {name} first, e.g. set_params({name}="
            f"OKBoostRegressor(), {name}__n_estimators=5)"
        )
    return (
        f"cannot set {keys}: {owner}'s {name} is a {type(inner).__name__}, not an estimator "
        f"with parameters; set {name} itself to the estimator(s) with the parameters wanted"
    )


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
