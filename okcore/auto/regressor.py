""":class:`AutoRegressor`: the regressor that chooses its model on the user's data."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._validation import check_is_fitted
from ..exceptions import DataError, InvalidParameterError
from ..meta import MetaEstimator
from .candidates import regression_candidates
from .engine import Candidate, SelectionProgress, default_budget, rebuild, select


class AutoRegressor(MetaEstimator):
    """A structured-output regressor that chooses among okcore's models by inner validation
    on the data it is fitted on, within a CPU budget (:func:`okcore.auto.select`).

    The candidates (:func:`okcore.auto.regression_candidates`): ``OKBoostRegressor()`` as
    documented, boosted oblivious trees of depth 4 and 6 and best-first trees of 31 splits
    with up to 2,000 rounds stopped early on the inner validation rows, OK3-et + OKBoost,
    kernel ridge with its RBF width and penalty by CV, and equal-weight averages of the best
    two and three. Successive halving gives the budget to the promising ones; the best is
    refitted on all rows. Its predictions are those of an okcore estimator (W^F, predicted
    kernels, pre-images), in the output space of the rows it was fitted on.

    Parameters
    ----------
    max_cpu_seconds : float or None
        CPU budget of the whole fit (process CPU seconds, every thread); None: 60 s up to
        5,000 rows, proportionally more above (:func:`okcore.auto.default_budget`). The
        fit stays within it up to the tolerance stated in :mod:`okcore.auto.engine`.
    scoring : None, str or callable
        What the inner validation compares: a score name of :mod:`okcore.scoring` or a
        callable ``scorer(estimator, X_val, y_val)`` (higher is better); None: ``err_phi``,
        the squared loss in the output feature space.
    cv : float, int or list of (train, validation) index arrays
        The inner validation: a holdout fraction (default 0.2), K folds, or the folds.
    candidates : list of str or None
        Names of the candidates to try (a subset of the portfolio); None: all.
    ensemble : bool
        Also score averages of the best members (default True).
    random_state : None or int
        Seeds the inner split, the subsamples and every candidate; with an int the fit is
        deterministic unless the budget cuts a fit short (the leaderboard says "capped" or
        "skipped: budget").

    Fitted attributes
    -----------------
    best_estimator_ : the chosen model fitted on all rows (an okcore estimator or an
        :class:`~okcore.AveragedRegressor` of them).
    best_name_ : its leaderboard name. ``members_``: (candidate, settled parameters) of its
        members. ``leaderboard_``: one dict per candidate and average, best first (name,
        inner score, rows of its last fit, rung, CPU seconds, settled parameters, status).
    score_name_, greater_is_better_ : the inner score. ``cpu_seconds_``: CPU of the whole
        fit; ``refit_cpu_seconds_``: of the final refit; ``max_cpu_seconds_``: the budget.
    resolved_params_ : the chosen members' full parameters.
    seed_ : the integer seed every candidate was given.
    """

    def __init__(
        self,
        *,
        max_cpu_seconds: float | None = None,
        scoring: Any = None,
        cv: Any = 0.2,
        candidates: list[str] | None = None,
        ensemble: bool = True,
        random_state: Any = None,
    ) -> None:
        self.max_cpu_seconds = max_cpu_seconds
        self.scoring = scoring
        self.cv = cv
        self.candidates = candidates
        self.ensemble = ensemble
        self.random_state = random_state

    def validate_params(self) -> None:
        """Check the parameters (fit does it first)."""
        budget = self.max_cpu_seconds
        if budget is not None and (
            isinstance(budget, bool)
            or not isinstance(budget, int | float | np.integer | np.floating)
            or not budget > 0
        ):
            raise InvalidParameterError(
                f"The 'max_cpu_seconds' parameter of AutoRegressor must be a number > 0 or "
                f"None. Got {budget!r} instead."
            )
        if self.candidates is not None:
            known = [c.name for c in regression_candidates(1)]
            names = list(self.candidates)
            unknown = [n for n in names if n not in known]
            if not names or unknown:
                raise InvalidParameterError(
                    f"The 'candidates' parameter of AutoRegressor must be a non-empty list of "
                    f"{known} or None. Got {self.candidates!r} instead."
                )
        if not isinstance(self.ensemble, bool | np.bool_):
            raise InvalidParameterError(
                f"The 'ensemble' parameter of AutoRegressor must be True or False. Got "
                f"{self.ensemble!r} instead."
            )

    def _portfolio(self, n_samples: int) -> list[Candidate]:
        portfolio = regression_candidates(n_samples)
        if self.candidates is None:
            return portfolio
        return [c for c in portfolio if c.name in set(self.candidates)]

    def fit(
        self,
        X: Any,
        Y: Any = None,
        *,
        gram: Any = None,
        kernel: Any = None,
        callback: Callable[[SelectionProgress], Any] | None = None,
    ) -> AutoRegressor:
        """Choose and fit (:func:`okcore.auto.select`) on X (N, p) and Y with ``kernel``, or
        a Gram matrix ``gram``; ``callback`` hears each fit before it starts."""
        self.validate_params()
        n = int(np.shape(X)[0])
        if isinstance(self.random_state, np.random.Generator):
            raise DataError("AutoRegressor takes an int or None as random_state")
        selection = select(
            self._portfolio(n),
            X,
            Y,
            gram=gram,
            kernel=kernel,
            scoring=self.scoring,
            cv=self.cv,
            max_cpu_seconds=self.max_cpu_seconds,
            random_state=self.random_state,
            ensemble=bool(self.ensemble),
            callback=callback,
        )
        self._adopt(selection.estimator, selection.members, selection.seed)
        self.best_name_ = selection.name
        self.leaderboard_ = selection.leaderboard
        self.score_name_ = selection.score_name
        self.greater_is_better_ = selection.greater_is_better
        self.cpu_seconds_ = selection.cpu_seconds
        self.refit_cpu_seconds_ = selection.refit_cpu_seconds
        self.max_cpu_seconds_ = selection.budget
        self.n_rungs_ = selection.n_rungs
        return self

    def _adopt(self, estimator: Any, members: list, seed: int) -> None:
        """Set the chosen model (a fit, or :mod:`okcore.io` loading a saved one)."""
        self.best_estimator_ = estimator
        self.members_ = [(str(name), dict(params)) for name, params in members]
        self.seed_ = int(seed)
        inner = getattr(estimator, "estimators_", [estimator])
        self.resolved_params_ = [
            {"candidate": name, "estimator": type(m).__name__, "params": m.get_params()}
            for (name, _), m in zip(self.members_, inner, strict=True)
        ]

    def unfitted_best(self) -> Any:
        """The chosen model's unfitted estimator (its members with their settled
        parameters and seed): refitting it on the same rows gives the same model."""
        check_is_fitted(self, "best_estimator_")
        return rebuild(regression_candidates(self.n_train_), self.members_, self.seed_)

    @staticmethod
    def budget_for(n_samples: int) -> float:
        """The default budget (CPU seconds) for ``n_samples`` rows."""
        return default_budget(n_samples)

    # ------------------------------------------------------------------ predictions
    # the chosen model's (an okcore estimator or an average of them sharing one output space)
    def _best(self) -> Any:
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_

    @property
    def output_space_(self) -> Any:
        """The output space of the training rows (the chosen model's)."""
        return self._best().output_space_

    @property
    def n_features_in_(self) -> int:
        return int(self._best().n_features_in_)

    @property
    def n_train_(self) -> int:
        return int(self.output_space_.n_samples)

    def predict(self, X: Any) -> np.ndarray:
        """The chosen model's predictions (pre-images as outputs)."""
        return np.asarray(self._best().predict(X))

    def predict_features(self, X: Any) -> np.ndarray:
        """F(x) in the factor coordinates of the output space, (Q, r)."""
        return np.asarray(self._best().predict_features(X))

    def predict_weights(self, X: Any) -> np.ndarray:
        """W^F(x) over the training outputs, (Q, N): F(x) = W^F(x) Phi."""
        return np.asarray(self._best().predict_weights(X))

    def predict_kernel(self, X: Any, X2: Any = None) -> np.ndarray:
        """<F(x), F(x')>, (Q, Q2)."""
        return np.asarray(self._best().predict_kernel(X, X2))

    def predict_kernel_train(self, X: Any) -> np.ndarray:
        """<F(x), phi(y_i)> against every training output, (Q, N)."""
        return np.asarray(self._best().predict_kernel_train(X))

    def predict_index(self, X: Any, candidates: Any = None, top_k: int = 1, **kwargs: Any) -> Any:
        """Pre-images (eq. 8): the ``top_k`` closest candidates to F(x) and their squared
        feature-space distances (:meth:`okcore.base.OKEstimator.predict_index`)."""
        return self._best().predict_index(X, candidates, top_k, **kwargs)

    def score(self, X: Any, y: Any) -> float:
        """Kernelized R^2 on (X, y) (:meth:`okcore.base.OKEstimator.score`)."""
        return float(self._best().score(X, y))

    def _target_features(self, *args: Any, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        return self._best()._target_features(*args, **kwargs)  # type: ignore[no-any-return]

    def _fitted_inputs(self, X: Any) -> Any:
        return self._best()._fitted_inputs(X)
