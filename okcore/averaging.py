""":class:`AveragedRegressor`: the average of several regressors fitted on the same rows,
itself a model of their shared output space (W^F, predicted kernels, pre-images)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import check_inputs, check_is_fitted, record_feature_names
from .base import OKEstimator, check_known_outputs, kernel_r2, target_features
from .exceptions import DataError
from .meta import MetaEstimator, clone, members_accept, regressor_tags


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

    When every member is an okcore estimator fitted with the same output factor (the same
    outputs, kernel and factor parameters: the members' ``output_space_`` hold equal
    ``phi``), the average is a model of that output space as any okcore estimator:
    F(x) = sum_m w_m F_m(x) (:meth:`predict_features`), the predicted kernel
    <F(x), F(x')>, pre-images (:meth:`predict_index`, :meth:`predict`) and the kernelized
    R^2 (:meth:`score`) are those of :class:`~okcore.base.OKEstimator` on that F.

    Fitted attributes: ``estimators_`` (fitted clones), ``weights_`` (normalised).
    Cost: the sum of the members' fits and predictions.
    """

    def __init__(self, estimators: Any, *, weights: Any = None) -> None:
        self.estimators = estimators
        self.weights = weights

    def fit(self, X: Any, Y: Any = None, **fit_params: Any) -> AveragedRegressor:
        self._forget_fit()
        members = list(self.estimators) if isinstance(self.estimators, list | tuple) else []
        if not members:
            raise DataError("estimators must be a non-empty list of regressors")
        try:
            w = np.ones(len(members)) if self.weights is None else np.asarray(self.weights, float)
        except (TypeError, ValueError):  # words, nested lists: said below as any bad weights
            w = np.full(0, np.nan)
        if w.shape != (len(members),) or not np.all(w >= 0) or w.sum() <= 0:
            raise DataError(
                f"weights must be {len(members)} non-negative numbers, not all 0: got "
                f"{self.weights!r}"
            )
        self.weights_ = w / w.sum()
        record_feature_names(self, X)
        # the members take X's values: this average checks its column names at prediction
        # and passes them on as arrays
        X = check_inputs(X, owner=type(self).__name__, allow_missing=True)
        self.estimators_ = [clone(m).fit(X, Y, **fit_params) for m in members]
        return self

    def __sklearn_tags__(self) -> Any:
        """A regressor's tags (:func:`okcore.meta.regressor_tags`): sparse or missing inputs
        when every member takes them."""
        members = list(self.estimators) if isinstance(self.estimators, list | tuple) else []
        return regressor_tags(
            allow_nan=members_accept(members, "allow_nan"),
            sparse=members_accept(members, "sparse"),
        )

    @classmethod
    def from_fitted(cls, estimators: list, weights: Any = None) -> AveragedRegressor:
        """The average of already fitted ``estimators`` (fitted on the same rows), without
        refitting them: ``estimators`` and ``estimators_`` are the given objects."""
        model = cls(list(estimators), weights=weights)
        w = np.ones(len(model.estimators)) if weights is None else np.asarray(weights, float)
        if not model.estimators or w.shape != (len(model.estimators),) or w.sum() <= 0:
            raise DataError("from_fitted needs a non-empty list and matching weights")
        model.weights_ = w / w.sum()
        model.estimators_ = list(estimators)
        return model

    # ------------------------------------------------------------------ output space
    @property
    def output_space_(self) -> Any:
        """The members' shared output space (raises :class:`DataError` when their output
        factors differ: their F(x) are then in different coordinates)."""
        check_is_fitted(self, "estimators_")
        spaces = [getattr(m, "output_space_", None) for m in self.estimators_]
        first = spaces[0]
        if first is None or any(
            s is None or (s is not first and not np.array_equal(s.phi, first.phi)) for s in spaces
        ):
            raise DataError(
                "the members of this average do not share one output factor (fit them on "
                "the same outputs with the same kernel and factor parameters)"
            )
        return first

    @property
    def n_features_in_(self) -> int:
        check_is_fitted(self, "estimators_")
        return int(self.estimators_[0].n_features_in_)

    @property
    def n_train_(self) -> int:
        """The training rows (the members')."""
        check_is_fitted(self, "estimators_")
        return int(self.estimators_[0].n_train_)

    @property
    def output_1d_(self) -> bool:
        check_is_fitted(self, "estimators_")
        return bool(getattr(self.estimators_[0], "output_1d_", False))

    def predict_features(self, X: Any) -> np.ndarray:
        """F(x) = sum_m w_m F_m(x) in the shared factor coordinates, shape (Q, r)."""
        self.output_space_  # noqa: B018  (checks the members share their output factor)
        return self._weighted_sum("predict_features", X)

    def predict_kernel(self, X: Any, X2: Any = None) -> np.ndarray:
        """<F(x), F(x')>, shape (Q, Q2) (:meth:`okcore.base.OKEstimator.predict_kernel`)."""
        return OKEstimator.predict_kernel(self, X, X2)  # type: ignore[arg-type]

    def predict_kernel_train(self, X: Any) -> np.ndarray:
        """<F(x), phi(y_i)> against every training output, shape (Q, N)."""
        check_known_outputs(self, "predict_kernel_train")
        return self.predict_features(X) @ self.output_space_.phi.T

    def predict_index(self, X: Any, candidates: Any = None, top_k: int = 1, **kwargs: Any) -> Any:
        """Pre-images (eq. 8) of the averaged F (:meth:`okcore.base.OKEstimator.predict_index`)."""
        return OKEstimator.predict_index(self, X, candidates, top_k, **kwargs)  # type: ignore[arg-type]

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Kernelized R^2 of the averaged F (:meth:`okcore.base.OKEstimator.score`)."""
        check_is_fitted(self, "estimators_")
        return kernel_r2(self, X, y, sample_weight)

    def _outputs_of(self, F: np.ndarray) -> np.ndarray:
        return OKEstimator._outputs_of(self, F)  # type: ignore[arg-type]

    def _target_features(self, *args: Any, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        return target_features(self.output_space_, *args, **kwargs)

    def _fitted_inputs(self, X: Any) -> Any:
        """X checked against the fitted width (:meth:`okcore.meta.MetaEstimator._checked_inputs`:
        its messages name AveragedRegressor, not a member)."""
        check_is_fitted(self, "estimators_")
        return self._checked_inputs(X)

    def predict(self, X: Any) -> np.ndarray:
        """sum_m w_m F_m(X), shape (Q, L) (or the members' shape); for members sharing a
        non-linear output kernel, the pre-image of the averaged F."""
        check_is_fitted(self, "estimators_")
        space = getattr(self.estimators_[0], "output_space_", None)
        if space is None or (space.kernel.name == "linear" and space.eigenvalues is None):
            return self._weighted_sum("predict", X)
        return self._outputs_of(self.predict_features(X))

    def predict_weights(self, X: Any) -> np.ndarray:
        """W^F(X) = sum_m w_m W_m^F(X), shape (Q, N_train)."""
        return self._weighted_sum("predict_weights", X)

    def _weighted_sum(self, method: str, X: Any) -> np.ndarray:
        """sum_m w_m (member m's ``method``)(X)."""
        X = self._fitted_inputs(X)
        return sum(  # type: ignore[return-value]
            w * np.asarray(getattr(m, method)(X), dtype=np.float64)
            for w, m in zip(self.weights_, self.estimators_, strict=True)
        )
