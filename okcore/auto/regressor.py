""":class:`AutoRegressor`: the regressor that chooses its model on the user's data."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from .._validation import (
    Callable_,
    Interval,
    Options,
    RandomStateLike,
    Subset,
    check_inputs,
    check_is_fitted,
    record_feature_names,
    validate_params,
)
from ..callbacks import FitProgress
from ..cost import FitCost
from ..defaults import AUTO_CANDIDATES, AUTO_HOLDOUT
from ..exceptions import DataError, UnknownParameterError
from ..meta import MetaEstimator, regressor_tags
from ..scoring import SCORERS
from .candidates import LONG_ROUNDS, regression_candidates
from .engine import (
    BUDGET_SLACK_SECONDS,
    BUDGET_TOLERANCE,
    Candidate,
    SelectionCancelled,
    SelectionProgress,
    default_budget,
    rebuild,
    select,
)

#: The registry name of the automatic choice (okcore.make_estimator, the service's model).
AUTO_MODEL = "auto"
#: The FitProgress phase the selection reports.
SELECTION_PHASE = "selection"
#: What its ``done`` / ``total`` count: candidate fits (the final refit's included).
SELECTION_UNIT = "candidate"


class AutoRegressor(MetaEstimator):
    """A structured-output regressor that chooses among okcore's models by inner validation
    on the data it is fitted on, within a CPU budget (:func:`okcore.auto.select`).

    The candidates (:func:`okcore.auto.regression_candidates`): ``OKBoostRegressor()`` as
    documented, boosted oblivious trees of depth 4 and 6 and best-first trees of 31 splits
    with up to 2,000 rounds stopped early on the inner validation rows, OK3-et + OKBoost,
    kernel ridge with its RBF width and penalty by CV, kernel ridge with one RBF width per
    input (``gamma="ard"``: by the Gaussian-process marginal likelihood), boosting started
    from the first kernel ridge (``init``: the trees fit what it leaves), and equal-weight
    averages of the best two and three. Successive halving gives the budget to the promising ones; with a holdout
    ``cv``, the budget it leaves validates the last rung again by 5 folds over all rows
    (when affordable); the best is refitted on all rows. Its predictions are those of an okcore estimator (W^F, predicted
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
    random_state : None, int, numpy Generator or RandomState
        Seeds the inner split, the subsamples and every candidate (a Generator or
        RandomState gives them a seed drawn from it, ``seed_``); with an int the fit is
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
    resolved_params_ : what the fit resolved (the chosen entry, the budget, the seed);
        ``member_params_``: the chosen members' full parameters.
    seed_ : the integer seed every candidate was given.
    fit_time_ (wall seconds), n_estimators_ (the chosen model's stages, summed over the
    members of an average), train_loss_ and validation_loss_ (None), stopped_by_callback_:
    as every okcore estimator.

    ``callback`` (okcore's fit callback) hears a :class:`~okcore.callbacks.FitProgress`
    before each candidate fit: ``phase`` "selection", ``unit`` "candidate", ``done`` /
    ``total`` the candidate fits done and planned (the final refit included; at the refit
    the total is exact), ``phase_eta`` the CPU budget (the
    phase's estimate) and ``elapsed`` the CPU spent; returning True stops the selection (the
    estimator is then left unfitted, ``stopped_by_callback_`` True). The candidates' own
    rounds are not reported (their fits are short: each gets a share of the budget).
    """

    supports_sample_weight = True  # each candidate that takes them; the others fail

    supports_eval_set: ClassVar[bool] = False
    _parameter_constraints: ClassVar[dict[str, list]] = {
        "max_cpu_seconds": [Interval(float, 0.0, None, "neither"), Options((None,))],
        "cv": [Interval(float, 0.0, 1.0, "neither"), Interval(int, 2, None, "left")],
        "ensemble": [Options((False, True))],
        "random_state": [RandomStateLike()],
        "candidates": [Subset(AUTO_CANDIDATES), Options((None,))],
        "scoring": [Options((*SCORERS, None)), Callable_()],
    }

    def __init__(
        self,
        *,
        max_cpu_seconds: float | None = None,
        scoring: Any = None,
        cv: Any = AUTO_HOLDOUT,
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

    def __sklearn_tags__(self) -> Any:
        """A regressor's tags (:func:`okcore.meta.regressor_tags`): missing inputs (NaN) are
        taken (the trees learn where they go; candidates that refuse them fail), and sparse
        inputs (the candidates that refuse them, the oblivious trees, fail)."""
        return regressor_tags(allow_nan=True, sparse=True)

    @classmethod
    def check_parameter_names(cls, names: Any, owner: str | None = None) -> None:
        """:class:`~okcore.exceptions.UnknownParameterError` listing the ``names`` this
        estimator does not take (as :meth:`okcore.base.OKEstimator.check_parameter_names`)."""
        valid = cls._get_param_names()
        unknown = sorted(set(names) - set(valid))
        if unknown:
            raise UnknownParameterError(
                f"unknown parameter(s) {unknown} for {owner or cls.__name__!r}; "
                f"its parameters are {valid}",
                unknown,
                valid,
            )

    def validate_params(self) -> None:
        """Check the parameters (fit does it first): the constraints, given folds as a list
        of (train, validation) pairs for ``cv``, the candidate names."""
        constraints = dict(self._parameter_constraints)
        if isinstance(self.cv, list | tuple):
            constraints.pop("cv")  # given folds: checked by the engine against the rows
        validate_params(self, constraints)

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
        callback: Callable[[FitProgress], bool | None] | None = None,
        sample_weight: Any = None,
        eval_set: Any = None,
        output_weight: Any = None,
    ) -> AutoRegressor:
        """Choose and fit (:func:`okcore.auto.select`) on X (N, p) and Y with ``kernel``, or
        a Gram matrix ``gram``; ``callback`` hears each fit before it starts (see the class
        docstring); ``sample_weight`` (N,) weights every fit and the validation scores.
        ``eval_set`` and ``output_weight`` (OKBoostRegressor's) are taken only to be
        refused with what to do instead: the choice validates on its own inner rows
        (``cv``), and its candidates and score weigh every output column alike."""
        if eval_set is not None:
            raise DataError(
                "AutoRegressor takes no eval_set: the automatic choice validates every "
                "candidate on inner validation rows of X (cv: a holdout fraction, K folds, or "
                "your own (train rows, validation rows) index pairs) and stops its boosted "
                "candidates early on them. To validate on your rows, stack them under X and "
                "Y and pass cv=[(train_rows, your_rows)] (the chosen model is then refitted "
                "on all rows, yours included); or fit a model that takes eval_set: "
                "OKBoostRegressor or KRRBoostRegressor"
            )
        if output_weight is not None:
            raise DataError(
                "AutoRegressor takes no output_weight: most of its candidates cannot weigh "
                "output columns, and its inner score weighs them alike, so the choice would "
                "not be made for your weights. Fit OKBoostRegressor (loss='squared', linear "
                "output kernel), which weighs the output columns, or leave output_weight out"
            )
        self.validate_params()
        self._forget_fit()
        record_feature_names(self, X)  # the candidates are fitted on X's values
        # an array first: any array-like (np.shape fails on some), read once
        X = check_inputs(X, owner=type(self).__name__, allow_missing=True)
        n = int(X.shape[0])
        start = time.perf_counter()
        try:
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
                callback=None if callback is None else _Progress(callback),
                sample_weight=sample_weight,
            )
        except SelectionCancelled:
            self.stopped_by_callback_ = True
            return self
        self.stopped_by_callback_ = False
        self._adopt(selection.estimator, selection.members, selection.seed)
        self.best_name_ = selection.name
        self.leaderboard_ = selection.leaderboard
        self.score_name_ = selection.score_name
        self.greater_is_better_ = selection.greater_is_better
        self.cpu_seconds_ = selection.cpu_seconds
        self.refit_cpu_seconds_ = selection.refit_cpu_seconds
        self.max_cpu_seconds_ = selection.budget
        self.n_rungs_ = selection.n_rungs
        self.fit_time_ = time.perf_counter() - start
        return self

    # ------------------------------------------------------------------ fitted summary
    @property
    def n_estimators_(self) -> int:
        """The chosen model's stages (trees, kernel models), summed over an average's."""
        best = self._best()
        return int(sum(m.n_estimators_ for m in getattr(best, "estimators_", [best])))

    @property
    def train_loss_(self) -> None:
        return None

    @property
    def validation_loss_(self) -> None:
        return None

    def estimate_cost(
        self,
        n_samples: int,
        n_features: int,
        *,
        kernel: Any = "linear",
        n_outputs: int | None = None,
    ) -> FitCost:
        """What :meth:`fit` costs on ``n_samples`` rows: its CPU budget (within the stated
        tolerance, as one set-up phase), the largest memory and disk of a candidate fitted
        on all rows (three members for an average), and as stages the candidates' most
        boosting rounds (LONG_ROUNDS)."""
        budget = default_budget(n_samples) if self.max_cpu_seconds is None else self.max_cpu_seconds
        costs = [
            c.make(0).estimate_cost(n_samples, n_features, kernel=kernel, n_outputs=n_outputs)
            for c in self._portfolio(n_samples)
        ]
        return FitCost(
            n_samples=n_samples,
            n_features=n_features,
            rank=max(c.rank for c in costs),
            n_stages=LONG_ROUNDS,
            stage_size=max(c.stage_size for c in costs),
            search="selection",
            memory_bytes=max(c.memory_bytes for c in costs),
            factor_seconds=0.0,
            setup_seconds=(1.0 + BUDGET_TOLERANCE) * float(budget) + BUDGET_SLACK_SECONDS,
            stage_seconds=0.0,
            disk_bytes=3.0 * max(c.disk_bytes for c in costs),
        )

    def _adopt(self, estimator: Any, members: list, seed: int) -> None:
        """Set the chosen model (a fit, or :mod:`okcore.io` loading a saved one)."""
        self.best_estimator_ = estimator
        self.members_ = [(str(name), dict(params)) for name, params in members]
        self.seed_ = int(seed)
        inner = getattr(estimator, "estimators_", [estimator])
        self.member_params_ = [
            {"candidate": name, "estimator": type(m).__name__, "params": m.get_params()}
            for (name, _), m in zip(self.members_, inner, strict=True)
        ]

    @property
    def resolved_params_(self) -> dict[str, Any]:
        """What the fit resolved, as scalars: the chosen entry, the budget and the seed (the
        members' full parameters are ``member_params_``)."""
        check_is_fitted(self, "best_estimator_")
        return {
            "chosen": self.best_name_,
            "max_cpu_seconds": float(self.max_cpu_seconds_),
            "seed": int(self.seed_),
        }

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
        return np.asarray(self._best().predict(self._fitted_inputs(X)))

    def predict_features(self, X: Any) -> np.ndarray:
        """F(x) in the factor coordinates of the output space, (Q, r)."""
        return np.asarray(self._best().predict_features(self._fitted_inputs(X)))

    def predict_weights(self, X: Any) -> np.ndarray:
        """W^F(x) over the training outputs, (Q, N): F(x) = W^F(x) Phi."""
        return np.asarray(self._best().predict_weights(self._fitted_inputs(X)))

    def predict_kernel(self, X: Any, X2: Any = None) -> np.ndarray:
        """<F(x), F(x')>, (Q, Q2)."""
        X2 = None if X2 is None else self._fitted_inputs(X2)
        return np.asarray(self._best().predict_kernel(self._fitted_inputs(X), X2))

    def predict_kernel_train(self, X: Any) -> np.ndarray:
        """<F(x), phi(y_i)> against every training output, (Q, N)."""
        return np.asarray(self._best().predict_kernel_train(self._fitted_inputs(X)))

    def predict_index(self, X: Any, candidates: Any = None, top_k: int = 1, **kwargs: Any) -> Any:
        """Pre-images (eq. 8): the ``top_k`` closest candidates to F(x) and their squared
        feature-space distances (:meth:`okcore.base.OKEstimator.predict_index`)."""
        return self._best().predict_index(self._fitted_inputs(X), candidates, top_k, **kwargs)

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Kernelized R^2 on (X, y) (:meth:`okcore.base.OKEstimator.score`)."""
        return float(self._best().score(self._fitted_inputs(X), y, sample_weight))

    def _target_features(self, *args: Any, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        return self._best()._target_features(*args, **kwargs)  # type: ignore[no-any-return]

    def _fitted_inputs(self, X: Any) -> Any:
        """X checked against the fitted width (:meth:`okcore.meta.MetaEstimator._checked_inputs`:
        its messages name AutoRegressor, not the chosen model)."""
        self._best()  # NotFittedError first
        return self._checked_inputs(X)


class _Progress:
    """The engine's progress as okcore's fit callback hears it (class docstring)."""

    def __init__(self, callback: Callable[[FitProgress], bool | None]) -> None:
        self.callback = callback

    def __call__(self, p: SelectionProgress) -> bool:
        progress = FitProgress(
            done=p.done,
            total=max(p.total, p.done, 1),
            elapsed=p.cpu_seconds,
            phase=SELECTION_PHASE,
            phase_eta=p.budget,
            unit=SELECTION_UNIT,
        )
        return bool(self.callback(progress))
