"""The selection engine: successive halving of candidate estimators under a CPU budget.

:func:`select` takes candidate estimator factories (:class:`Candidate`: a name and a
function ``seed -> unfitted estimator``), training data in any output form okcore's
estimators take (Y with an output kernel, or a Gram matrix), an inner validation split
(a holdout fraction, K folds, or the folds themselves), a score and a CPU budget; it
returns the chosen model refitted on all the rows, with its leaderboard
(:class:`Selection`).

The scheme (Jamieson & Talwalkar, "Non-stochastic best arm identification and
hyperparameter optimization", AISTATS 2016; Li et al., "Hyperband", JMLR 2018):

1. The inner training rows are shuffled once (rows of positive sample weight spread evenly
   through the shuffle when some weigh 0); rung k fits every surviving candidate on the
   first n_k of them (n_k = n_in / eta^(R-1-k), nested subsamples, at least ``min_rows``;
   the last rung on all n_in) and scores it on the whole inner validation set. Only the
   best 1/eta (at least ``keep_last``) go to the next rung: cheap fidelity first, the
   budget to the promising candidates.
2. A candidate with ``early_stopping`` (boosting) is fitted with the inner validation rows
   as its ``eval_set`` and keeps its best round; its final model is refitted with that
   number of rounds on all the rows (with K folds: the mean over the folds).
3. With a holdout split, when the budget left affords it (predicted from the last rung's
   fits) and there are at least ``refine_folds`` rows (of positive weight, with sample
   weights; fewer: the step is skipped), the last rung's candidates are validated again by
   ``refine_folds`` folds over all the rows, and the folds' mean score ranks them (a holdout of a few hundred rows cannot
   separate models a few per cent apart); the leaderboard's ``folds`` says which ranked.
   Equal-weight averages of the best two and three members are then scored on the same
   validation rows (no refit: the members' predictions are averaged) and enter the
   leaderboard.
4. The best entry of the last rung reached is refitted on all the rows (an entry dropped
   or skipped earlier was scored on fewer rows: its score is not compared).

Budget (CPU seconds of the whole process, ``time.process_time``: every thread of the
process, numba's and BLAS's included; :mod:`okcore.budget`'s clock and cap):
AUTO_REFIT_RESERVE of it is kept for the final refit, and in each rung

- the fits the budget cannot stop (kernel ridge; boosting started from it, whose start
  cannot be stopped) go first, in rank order, each launched only when the predicted cost of
  what cannot be stopped fits what is left beyond an equal share (the rest over the rung's
  fits still to come) kept for every stoppable fit to come (predicted: the cost model of
  okcore's estimators for a first fit; afterwards the candidate's measured CPU times its
  cost model's growth with the rows, or the rows ratio to the power ``cost_exponent`` for an
  estimator without a cost model; for boosting started from kernel ridge, the starting
  model's cost model, its rounds being stopped like any booster's): so a kernel ridge fit
  cannot starve the boosters, and the best-ranked ones come first;
- then each fit that reports rounds (boosting) gets its share of what is left (the rest
  over the rung's fits still to come) and is stopped by its progress callback at the first
  round after it (its leaderboard row says ``capped``): it makes do with any share.

The winner is the best entry whose predicted refit fits what is left (else the cheapest).
So the whole selection exceeds the budget by at most one boosting round, plus the
misprediction of a non-boosting fit's cost, plus the refit's; BUDGET_TOLERANCE states the
bound the tests hold it to. With a budget too small for any candidate the first candidate
is still fitted once on all the rows (a model is always returned) and the leaderboard says
so.

Determinism: ``random_state`` seeds the split, the subsamples and every candidate (each
factory receives the same integer seed), so two runs with the same seed and budget give
the same leaderboard and predictions, as long as no fit is capped or skipped by the
budget (those depend on the machine's speed; the leaderboard names them).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_random_state, weight_argument
from ..averaging import AveragedRegressor
from ..budget import CpuCap, CpuClock, on_one_blas_thread
from ..cost import predicted_seconds, reports_rounds
from ..defaults import (
    AUTO_BUDGET_ROWS,
    AUTO_BUDGET_SECONDS,
    AUTO_HALVING_FACTOR,
    AUTO_MAX_RUNGS,
    AUTO_MIN_ROWS,
    AUTO_REFINE_FOLDS,
    AUTO_REFIT_RESERVE,
)
from ..exceptions import DataError, OKCoreError
from ..folds import kfold, positive_rows
from ..model_selection import Outputs
from ..scoring import BoundScorer, FoldTruth, check_scoring

#: The bound the engine's own CPU accounting is held to (tests): at most
#: (1 + BUDGET_TOLERANCE) x budget + BUDGET_SLACK_SECONDS.
BUDGET_TOLERANCE = 0.25
BUDGET_SLACK_SECONDS = 2.0


class SelectionCancelled(OKCoreError):
    """The selection's callback asked it to stop (returned True)."""


def default_budget(n_samples: int) -> float:
    """The CPU seconds :func:`select` spends when given no budget: AUTO_BUDGET_SECONDS
    up to AUTO_BUDGET_ROWS rows, proportionally more above."""
    return AUTO_BUDGET_SECONDS * max(1.0, n_samples / AUTO_BUDGET_ROWS)


@dataclass(frozen=True)
class Candidate:
    """One model the engine may choose.

    name : str
        Its leaderboard name (unique among the candidates).
    make : callable ``seed -> estimator``
        A fresh unfitted okcore estimator (fit / predict_features API) seeded by ``seed``.
    early_stopping : bool
        Whether the estimator stops early on an ``eval_set`` (boosting with
        ``early_stopping=True``): the engine passes the inner validation rows, and the
        final estimator gets the rounds kept (``n_estimators_``, mean over the folds) with
        early stopping off.
    settle : callable ``fitted models -> params`` or None
        Parameters the final estimator takes from the inner fits (one per fold), so the
        refit on all rows does not search again: e.g. kernel ridge's chosen width and
        penalty. Values must be JSON numbers, strings or lists of numbers (saved models
        record them).
    cost_exponent : float
        How its CPU grows with the rows (1: trees and Nystrom kernel ridge; 3: exact
        kernel ridge), to predict a larger fit from a measured one.
    refit_fraction : float
        The settled refit's CPU as a fraction of an inner fit on as many rows (1 for
        boosting; kernel ridge that searched its width and penalty by CV refits once).
    interruptible : bool
        Whether a fit that reports rounds can be stopped by the budget from its start;
        False for boosting after a kernel ridge fit (``init``), whose start cannot: it is
        then launched only when its start's predicted CPU fits, as a fit without rounds,
        and its rounds are stopped by the budget as any booster's.
    """

    name: str
    make: Callable[[int], Any]
    early_stopping: bool = False
    settle: Callable[[Sequence[Any]], dict[str, Any]] | None = None
    cost_exponent: float = 1.0
    refit_fraction: float = 1.0
    interruptible: bool = True

    def settled(self, models: Sequence[Any]) -> dict[str, Any]:
        """The final estimator's parameters learnt from the inner fits ``models``."""
        params: dict[str, Any] = {}
        if self.early_stopping:
            rounds = int(round(float(np.mean([m.n_estimators_ for m in models]))))
            params.update(n_estimators=max(rounds, 1), early_stopping=False, n_iter_no_change=None)
        if self.settle is not None:
            params.update(self.settle(models))
        return params

    def final(self, seed: int, params: dict[str, Any]) -> Any:
        """The estimator refitted on all rows: ``make(seed)`` with the settled ``params``."""
        return self.make(seed).set_params(**params)


@dataclass
class SelectionProgress:
    """What a selection callback hears before each fit: ``stage`` ("rung 1/3", "refit"),
    the ``candidate`` fitted, the fits ``done`` out of at most ``total`` planned (at the
    refit, exactly: the fits done and the refit's, so the last report has done = total - 1
    and its fit then completes the count), and the CPU seconds spent of the ``budget``."""

    stage: str
    candidate: str
    done: int
    total: int
    cpu_seconds: float
    budget: float


@dataclass
class Entry:
    """A leaderboard row: the candidate (or average), its inner validation score (None if
    never scored), the rows it was last fitted on (fidelity), the rung reached, its CPU
    seconds over every fit, the parameters the final estimator settles (rounds kept by early
    stopping, kernel ridge's width and penalty), its status ("chosen", "scored", "dropped at
    rung k", "skipped: budget", "failed: <error>") and whether the budget stopped one of its
    fits before its last round (``capped``)."""

    name: str
    score: float | None = None
    rows: int = 0
    rung: int = 0
    cpu_seconds: float = 0.0
    params: dict[str, Any] = field(default_factory=dict)
    status: str = "scored"
    members: tuple[str, ...] = ()
    capped: bool = False
    last_cpu: float = 0.0  # CPU of its fits at its last rung (all folds)
    folds: int = 1  # the validation folds its score is the mean over

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "score": self.score,
            "rows": self.rows,
            "rung": self.rung,
            "cpu_seconds": round(self.cpu_seconds, 4),
            "params": dict(self.params),
            "status": self.status,
            "capped": self.capped,
            "folds": self.folds,
            "members": list(self.members),
        }


@dataclass
class Selection:
    """What :func:`select` returns: the chosen ``estimator`` fitted on all rows (an okcore
    estimator, or an :class:`~okcore.averaging.AveragedRegressor` of them), its ``name``, the
    ``members`` ((candidate name, settled parameters) of each member, for rebuilding), the
    ``leaderboard`` (best first; see :class:`Entry`), the ``score_name`` and whether
    higher is better, the CPU seconds spent (selection and refit) and the ``budget``."""

    estimator: Any
    name: str
    members: list[tuple[str, dict[str, Any]]]
    leaderboard: list[dict[str, Any]]
    score_name: str
    greater_is_better: bool
    cpu_seconds: float
    refit_cpu_seconds: float
    budget: float
    seed: int
    n_rungs: int = 1
    inner_rows: tuple[int, int] = (0, 0)


def _holdout_problem(cv: float, n_samples: int, n_val: int) -> str:
    """Why a holdout of ``cv`` of ``n_samples`` rows (``n_val`` of them held out) cannot
    work, and which way to move: it needs a validation row and two training rows."""
    start = f"a holdout of {cv} of {n_samples} rows"
    if n_samples < 3:
        return f"{start} cannot work: it needs 3 rows (2 to fit, 1 to validate); give more rows"
    if n_val < 1:
        low = 1.0 / n_samples  # holds one row out
        return f"{start} holds no row out to validate on; give a fraction such as {low:.3g}"
    high = (n_samples - 2.0) / n_samples  # keeps two rows to fit
    return f"{start} leaves fewer than 2 rows to fit; give a fraction such as {high:.3g}"


def inner_folds(
    n_samples: int, cv: Any, rng: np.random.Generator, weight: np.ndarray | None = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The inner split: ``cv`` a float in (0, 1) (one holdout of that fraction), an int
    K >= 2 (shuffled K folds) or an iterable of (train, validation) index arrays.

    With sample ``weight`` (N,) holding zeros, every side must have positive weight (a
    weighted fit and a weighted score need it): the holdout takes its fraction of the
    positive-weight rows (at least one, leaving one) and of the zero-weight rows, each
    drawn by ``rng``; the K folds deal them out in turn (:func:`~okcore.folds.kfold`);
    too few positive-weight rows, or given folds with a side of zero weight, are a
    DataError. Weights without zeros split as no weights, bit for bit."""
    if isinstance(cv, bool):
        raise DataError(f"cv must be a fraction, a number of folds or folds: got {cv!r}")
    n_positive = positive_rows(n_samples, weight)
    if isinstance(cv, float):
        if not 0.0 < cv < 1.0:
            raise DataError(f"a holdout cv must be a fraction in (0, 1): got {cv!r}")
        n_val = int(round(cv * n_samples))
        if n_val < 1 or n_samples - n_val < 2:
            raise DataError(_holdout_problem(cv, n_samples, n_val))
        if weight is None or n_positive == n_samples:
            order = rng.permutation(n_samples)
            return [(np.sort(order[n_val:]), np.sort(order[:n_val]))]
        if n_positive < 2:
            raise DataError(
                "the inner validation needs at least 2 rows with positive weight (one to fit, "
                f"one to validate): got {n_positive}; give more rows a positive sample_weight"
            )
        positive, zero = np.flatnonzero(weight > 0), np.flatnonzero(weight <= 0)
        n_val_positive = min(max(int(round(n_val * n_positive / n_samples)), 1), n_positive - 1)
        held = np.sort(
            np.concatenate(
                [
                    rng.permutation(positive)[:n_val_positive],
                    rng.permutation(zero)[: n_val - n_val_positive],
                ]
            )
        )
        return [(np.setdiff1d(np.arange(n_samples), held), held)]
    if isinstance(cv, int | np.integer):
        if n_positive < cv:
            raise DataError(
                f"a {cv}-fold inner validation needs at least {cv} rows with positive weight "
                f"(one per validation fold): got {n_positive}; give more rows a positive "
                "sample_weight or fewer folds"
            )
        return kfold(n_samples, int(cv), rng, weight)
    folds = []
    malformed = (
        "each given fold must be (train rows, validation rows): disjoint index "
        f"arrays in [0, {n_samples}), at least 2 training rows and 1 validation row"
    )
    for pair in cv:
        try:
            train, val = (np.asarray(a, dtype=np.int64) for a in pair)
        except (TypeError, ValueError):  # not a pair of index arrays
            raise DataError(malformed) from None
        if (
            train.ndim != 1
            or val.ndim != 1
            or len(train) < 2
            or len(val) < 1
            or np.any((train < 0) | (train >= n_samples))
            or np.any((val < 0) | (val >= n_samples))
            or np.intersect1d(train, val).size
        ):
            raise DataError(malformed)
        if weight is not None and not (weight[train].sum() > 0 and weight[val].sum() > 0):
            raise DataError(
                "each given fold needs rows with positive weight among its training rows and "
                "among its validation rows: a weighted fit and a weighted score divide by them"
            )
        folds.append((np.sort(train), np.sort(val)))
    if not folds:
        raise DataError("cv gave no folds")
    return folds


def _nested_order(
    train: np.ndarray, weight: np.ndarray | None, rng: np.random.Generator
) -> np.ndarray:
    """A fold's training rows ``train`` shuffled once for the nested rung subsamples (each
    rung fits on a prefix). With zero ``weight`` among them, the rows of positive weight are
    spread evenly through the same shuffle, so every prefix holds its share of them and the
    first row is one: no rung fits on rows that all weigh 0. Without zeros: the plain
    shuffle, bit for bit. O(n log n)."""
    order = rng.permutation(train)
    if weight is None:
        return order
    positive = weight[order] > 0
    n_positive, n_zero = int(positive.sum()), int((~positive).sum())
    if n_positive == 0 or n_zero == 0:
        return order
    place = np.empty(len(order))  # each row's place in [0, 1) within its group's shuffle
    place[positive] = np.arange(n_positive) / n_positive
    place[~positive] = (np.arange(n_zero) + 0.5) / n_zero
    return order[np.argsort(place, kind="stable")]


def _rung_sizes(n_train: int, eta: int, min_rows: int) -> list[int]:
    """Rows of each rung's fits: n_train / eta^(R-1-k), the first at least ``min_rows``."""
    n_rungs = 1
    while n_rungs < AUTO_MAX_RUNGS and n_train / eta**n_rungs >= min_rows:
        n_rungs += 1
    return [int(math.ceil(n_train / eta ** (n_rungs - 1 - k))) for k in range(n_rungs)]


@dataclass
class _Fold:
    """One inner fold's rows, shuffled once for the nested subsamples."""

    order: np.ndarray  # the training rows, shuffled
    val: np.ndarray


@dataclass
class _Fitted:
    """A candidate's models on the folds at its last rung, with their scores."""

    models: list[Any] = field(default_factory=list)
    train_rows: list[np.ndarray] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)


class _Run:
    """One selection: the data, the split, the clock and the leaderboard."""

    def __init__(
        self,
        X: Any,
        outputs: Outputs,
        scorer: BoundScorer,
        greater: bool,
        folds: list[_Fold],
        budget: float,
        seed: int,
        callback: Callable[[SelectionProgress], Any] | None,
    ) -> None:
        self.X, self.outputs, self.scorer, self.greater = X, outputs, scorer, greater
        self.folds, self.budget, self.seed, self.callback = folds, budget, seed, callback
        self.n = X.shape[0]
        self.clock = CpuClock()
        self.done, self.total = 0, 0
        self.score_name = "err_phi"

    def remaining(self) -> float:
        return self.budget * (1.0 - AUTO_REFIT_RESERVE) - self.clock.spent()

    def report(self, stage: str, name: str) -> None:
        """Tell the callback which fit starts; :class:`SelectionCancelled` if it says stop."""
        if self.callback is not None and self.callback(
            SelectionProgress(stage, name, self.done, self.total, self.clock.spent(), self.budget)
        ):
            raise SelectionCancelled("the selection was stopped by its callback")

    def eval_set(self, rows: np.ndarray, val: np.ndarray) -> tuple:
        """The inner validation rows as an ``eval_set`` against training ``rows``."""
        o = self.outputs
        if o.gram is not None:
            return (self.X[val], o.gram[np.ix_(val, rows)], np.diag(o.gram)[val])
        return (self.X[val], o.vectors[val])

    def score(self, model: Any, rows: np.ndarray, val: np.ndarray) -> float:
        truth: FoldTruth = self.outputs.truth(self.X, rows, val, self.n)
        return float(self.scorer(model, self.X[val], truth, self.outputs.form))

    def sort_key(self, score: float | None) -> float:
        if score is None or not np.isfinite(score):
            return math.inf
        return -score if self.greater else score


def _predicted(
    run: _Run, candidate: Candidate, entry: Entry, rows: int, share: float = 1.0
) -> float:
    """CPU of fits on ``rows`` from the entry's last rung (``share`` of its fits): the
    measured CPU times the growth of the candidate's cost model from the entry's rows to
    ``rows`` (so a part that does not grow with the rows, such as kernel ridge's width
    likelihood on a fixed subsample, is not extrapolated), or times (rows ratio) ^
    ``cost_exponent`` when the estimator has no cost model."""
    if entry.rows <= 0:
        return 0.0
    before = _prior(candidate, run.seed, entry.rows, _n_features(run.X), run.outputs)
    after = _prior(candidate, run.seed, rows, _n_features(run.X), run.outputs)
    growth = (
        after / before
        if before > 0 and after > 0
        else (rows / entry.rows) ** candidate.cost_exponent
    )
    return share * entry.last_cpu * growth


def _unstoppable_cost(
    run: _Run, candidate: Candidate, entry: Entry, rows: int, has_rounds: bool
) -> float:
    """Predicted CPU of the part of the candidate's fits on ``rows`` (every fold) that the
    budget cannot stop: for boosting from a starting model, the start's cost model (the
    rounds are stopped, and their number is not known before early stopping ends them);
    for a fit without rounds, its measured CPU scaled (:func:`_predicted`) or, before its
    first fit, its cost model."""
    n_features, n_folds = _n_features(run.X), len(run.folds)
    if has_rounds:
        return _start_prior(candidate, run.seed, rows, n_features, run.outputs) * n_folds
    if entry.rows:
        return _predicted(run, candidate, entry, rows)
    return _prior(candidate, run.seed, rows, n_features, run.outputs) * n_folds


def _prior(
    candidate: Candidate, seed: int, n_rows: int, n_features: int, outputs: Outputs
) -> float:
    """The cost model's CPU seconds for a first fit (0 when the estimator has none)."""
    return _estimator_prior(candidate.make(seed), n_rows, n_features, outputs)


def _start_prior(
    candidate: Candidate, seed: int, n_rows: int, n_features: int, outputs: Outputs
) -> float:
    """The cost model's CPU seconds for a first fit of the candidate's starting model (the
    boosting's ``init`` estimator, fitted before its first round; 0 when it has none)."""
    start = getattr(candidate.make(seed), "init", None)
    return _estimator_prior(start, n_rows, n_features, outputs) if hasattr(start, "fit") else 0.0


def _estimator_prior(estimator: Any, n_rows: int, n_features: int, outputs: Outputs) -> float:
    kernel = "precomputed" if outputs.gram is not None else (outputs.kernel or "linear")
    n_outputs = None if outputs.Y is None else int(np.prod(np.shape(outputs.Y)[1:]) or 1)
    return predicted_seconds(estimator, n_rows, n_features, kernel=kernel, n_outputs=n_outputs)


@on_one_blas_thread
def select(
    candidates: Sequence[Candidate],
    X: Any,
    Y: Any = None,
    *,
    gram: Any = None,
    kernel: Any = None,
    scoring: Any = None,
    cv: Any = 0.2,
    max_cpu_seconds: float | None = None,
    random_state: Any = None,
    ensemble: bool = True,
    eta: int = AUTO_HALVING_FACTOR,
    min_rows: int = AUTO_MIN_ROWS,
    keep_last: int = 3,
    refine_folds: int | None = AUTO_REFINE_FOLDS,
    callback: Callable[[SelectionProgress], Any] | None = None,
    sample_weight: Any = None,
) -> Selection:
    """Choose among ``candidates`` by successive halving on an inner split of (X, outputs)
    within ``max_cpu_seconds`` of CPU, and refit the best on all rows (module docstring).

    Parameters
    ----------
    candidates : sequence of :class:`Candidate`
        Unique names; the first is the fallback fitted when the budget affords nothing.
    X, Y, gram, kernel :
        The training data as okcore's estimators take it: Y (N, d) with an output
        ``kernel`` (default linear), or a Gram matrix ``gram`` (N, N). Graph outputs are
        refused (no eval set for early stopping).
    scoring : None, a score name or a callable ``scorer(estimator, X_val, y_val)``
        (:func:`okcore.scoring.check_scoring`; the first if several); None: ``err_phi``,
        the squared loss in the output feature space (lower is better).
    cv : float, int or iterable of (train, validation) index arrays
        The inner validation: a holdout fraction (default 0.2), K shuffled folds, or the
        folds. Its rows are never fitted by the models they score (except as the
        ``eval_set`` of early stopping, which reads their loss to pick the rounds).
    max_cpu_seconds : float or None
        The CPU budget (process CPU seconds, every thread); None: :func:`default_budget`.
    random_state : None, int or Generator
        Seeds the split, the subsamples and every candidate.
    ensemble : bool
        Score equal-weight averages of the best two and three members of the last rung.
    eta, min_rows, keep_last :
        Halving factor, smallest rung subsample, fewest candidates kept for the last rung.
    refine_folds : int >= 2 or None
        With a holdout ``cv``: when the budget left affords it and there are at least this
        many rows (of positive weight), the last rung's candidates are scored again by this
        many folds over all the rows, and that ranks them (and their averages); None, or
        fewer rows: the holdout ranks.
    callback : callable(:class:`SelectionProgress`) or None
        Hears each fit before it starts; returning True stops the selection
        (:class:`SelectionCancelled` is raised).
    sample_weight : array (N,) or None
        Each fit takes its rows' weights and each validation score is weighted
        (:data:`okcore.scoring.WEIGHTED_SCORES`); a candidate whose fit refuses weights is
        recorded as failed. An early-stopping ``eval_set``'s loss stays unweighted.

    Cost: at most the budget (within BUDGET_TOLERANCE, module docstring): the candidates'
    fits on the rung subsamples, one prediction of the validation rows per fit, the refit.
    """
    names = [c.name for c in candidates]
    if not candidates or len(set(names)) != len(names):
        raise DataError(f"candidates must be a non-empty list with unique names: got {names}")
    if eta < 2 or keep_last < 1 or min_rows < 2 or (refine_folds is not None and refine_folds < 2):
        raise DataError(
            "eta must be >= 2, keep_last >= 1, min_rows >= 2 and refine_folds None or >= 2"
        )
    X, outputs = _checked_data(X, Y, gram, kernel, sample_weight)
    scorers = check_scoring(scoring if scoring is not None else "err_phi", outputs.form, outputs.Y)
    score_name, scorer = next(iter(scorers.items()))
    greater = bool(getattr(scorer, "greater_is_better", True))
    n = X.shape[0]
    budget = default_budget(n) if max_cpu_seconds is None else float(max_cpu_seconds)
    if not budget > 0:
        raise DataError(f"max_cpu_seconds must be > 0: got {max_cpu_seconds!r}")
    rng = check_random_state(random_state)
    seed = int(rng.integers(2**31 - 1))
    split = inner_folds(n, cv, rng, outputs.sample_weight)
    folds = [_Fold(_nested_order(train, outputs.sample_weight, rng), val) for train, val in split]
    run = _Run(X, outputs, scorer, greater, folds, budget, seed, callback)
    run.score_name = score_name
    n_in = min(len(f.order) for f in folds)
    sizes = _rung_sizes(n_in, eta, min_rows)
    entries = {c.name: Entry(c.name) for c in candidates}
    by_name = {c.name: c for c in candidates}
    fitted: dict[str, _Fitted] = {}
    alive = list(candidates)
    run.total = len(folds) * sum(
        max(len(candidates) // eta**k, min(keep_last, len(candidates))) for k in range(len(sizes))
    )
    rounds = {c.name: c.early_stopping or _reports_rounds(c, seed) for c in candidates}
    stoppable = {c.name: c.interruptible and rounds[c.name] for c in candidates}
    for k, size in enumerate(sizes):
        last = k == len(sizes) - 1
        fitted = {}
        # the fits the budget cannot stop go first (in rank order), so that a stoppable
        # fit, which makes do with any share, takes what they leave
        alive = sorted(alive, key=lambda c: stoppable[c.name])
        for i, candidate in enumerate(alive):
            entry = entries[candidate.name]
            # every stoppable fit still to come keeps an equal share of what is left (the
            # rest over the rung's fits still to come); a fit the budget cannot stop is
            # launched when the predicted cost of what it cannot stop fits the remainder
            to_come = len(alive) - i
            kept = sum(stoppable[c.name] for c in alive[i + 1 :]) / to_come
            if not stoppable[candidate.name] and _unstoppable_cost(
                run, candidate, entry, size, rounds[candidate.name]
            ) > run.remaining() * (1.0 - kept):
                entry.status = "skipped: budget"
                continue
            if run.remaining() <= 0:
                entry.status = "skipped: budget"
                continue
            cap = run.clock.spent() + run.remaining() / (len(alive) - i)
            result = _fit_candidate(run, candidate, entry, size, f"rung {k + 1}/{len(sizes)}", cap)
            if result is not None:
                entry.rung = k + 1
                fitted[candidate.name] = result
        ranked = sorted(fitted, key=lambda name: run.sort_key(entries[name].score))
        if not last:
            keep = max(int(math.ceil(len(ranked) / eta)), min(keep_last, len(ranked)))
            for name in ranked[keep:]:
                entries[name].status = f"dropped at rung {k + 1}"
            alive = [by_name[name] for name in ranked[:keep]]
            if not alive:
                break
    final = [name for name in sorted(fitted, key=lambda nm: run.sort_key(entries[nm].score))]
    if (
        refine_folds is not None
        and isinstance(cv, float)
        and len(final) >= 2
        and positive_rows(n, outputs.sample_weight) >= refine_folds
    ):
        refined = _refine(run, entries, by_name, final, refine_folds, rng)
        if refined is not None:
            fitted, n_in = refined, min(len(f.order) for f in run.folds)
            final = sorted(fitted, key=lambda nm: run.sort_key(entries[nm].score))
    if ensemble and len(final) >= 2:
        for m in (2, 3):
            if len(final) >= m:
                _score_average(run, entries, fitted, final[:m])
    chosen = _choose(run, entries, by_name, n_in)
    return _refit(run, entries, by_name, chosen, len(sizes), n_in)


def _fit_candidate(
    run: _Run, candidate: Candidate, entry: Entry, size: int, stage: str, cap: float
) -> _Fitted | None:
    """Fit ``candidate`` on the first ``size`` rows of every fold of ``run`` (stopped by
    the budget at CPU ``cap``) and score it on the fold's validation rows; its leaderboard
    ``entry`` is updated (None when a fit failed: the entry says why)."""
    result = _Fitted()
    cpu = time.process_time()
    try:
        for fold in run.folds:
            rows = np.sort(fold.order[:size])
            run.report(stage, candidate.name)
            guard = CpuCap(run.clock, cap)
            model = _fit_capped(run, candidate, rows, fold.val, guard)
            run.done += 1
            entry.capped = entry.capped or guard.stopped
            result.models.append(model)
            result.train_rows.append(rows)
            result.scores.append(run.score(model, rows, fold.val))
    except SelectionCancelled:
        raise
    except (OKCoreError, ValueError, np.linalg.LinAlgError) as exc:
        entry.status = f"failed: {exc}"
        entry.cpu_seconds += time.process_time() - cpu
        return None
    entry.last_cpu = time.process_time() - cpu
    entry.cpu_seconds += entry.last_cpu
    entry.rows = size
    entry.score = float(np.mean(result.scores))
    entry.params = candidate.settled(result.models)
    entry.status = "scored"
    entry.folds = len(run.folds)
    return result


def _refine(
    run: _Run,
    entries: dict[str, Entry],
    by_name: dict[str, Candidate],
    final: list[str],
    n_folds: int,
    rng: np.random.Generator,
) -> dict[str, _Fitted] | None:
    """K-fold inner validation of the last rung's candidates ``final`` on all the rows,
    when the budget left affords it for all of them (predicted from their holdout fits):
    the holdout's ranking is replaced by the K folds' mean scores (one holdout of a few
    hundred rows cannot separate models a few per cent apart). Returns their fold models,
    or None (the holdout's ranking stands) when it is not affordable, a fit fails or is
    stopped by the budget; the leaderboard's ``folds`` says which validation ranked."""
    split = inner_folds(run.n, n_folds, rng, run.outputs.sample_weight)
    weight = run.outputs.sample_weight
    folds = [_Fold(_nested_order(train, weight, rng), val) for train, val in split]
    size = min(len(f.order) for f in folds)
    need = sum(n_folds * _predicted(run, by_name[name], entries[name], size) for name in final)
    if need > run.remaining():
        return None
    holdout, kept = run.folds, {name: copy.copy(entries[name]) for name in final}
    run.folds, run.total = folds, run.total + n_folds * len(final)
    fitted: dict[str, _Fitted] = {}
    for i, name in enumerate(final):
        cap = run.clock.spent() + run.remaining() / (len(final) - i)
        entry, capped_before = entries[name], entries[name].capped
        entry.capped = False
        result = _fit_candidate(run, by_name[name], entry, size, "k-fold", cap)
        stopped, entry.capped = entry.capped, capped_before or entry.capped
        if result is None or stopped:
            for other, before in kept.items():  # the holdout's ranking stands
                before.cpu_seconds = entries[other].cpu_seconds  # the CPU was spent
                entries[other] = before
            run.folds = holdout
            return None
        fitted[name] = result
    return fitted


def _checked_data(
    X: Any, Y: Any, gram: Any, kernel: Any, sample_weight: Any = None
) -> tuple[Any, Outputs]:
    from ..model_selection import outputs_of

    X, outputs, _ = outputs_of(X, Y, gram, kernel, sample_weight)
    if outputs.form == "graph":
        raise DataError(
            "the automatic choice takes output vectors Y (with a kernel) or a Gram matrix; "
            "for a graph over the rows give its diffusion Gram matrix as gram="
        )
    return X, outputs


def _n_features(X: Any) -> int:
    return int(X.shape[1]) if len(X.shape) > 1 else 1


def _reports_rounds(candidate: Candidate, seed: int) -> bool:
    """Whether the candidate's fit hears its progress callback after every round (it can be
    stopped): the boosting estimators."""
    return reports_rounds(candidate.make(seed))


def _fit_capped(
    run: _Run, candidate: Candidate, rows: np.ndarray, val: np.ndarray, guard: CpuCap
) -> Any:
    estimator = candidate.make(run.seed)
    fit_params: dict[str, Any] = {
        "callback": guard,
        **weight_argument(run.outputs.sample_weight, rows),
    }
    if candidate.early_stopping:
        fit_params["eval_set"] = run.eval_set(rows, val)
    o = run.outputs
    if o.gram is not None:
        return estimator.fit(run.X[rows], gram=o.gram[np.ix_(rows, rows)], **fit_params)
    return estimator.fit(run.X[rows], o.vectors[rows], kernel=o.kernel, **fit_params)


def _score_average(
    run: _Run, entries: dict[str, Entry], fitted: dict[str, _Fitted], members: list[str]
) -> None:
    """Score the equal-weight average of ``members`` (fitted on the same rows of each fold)."""
    name = "average(" + " + ".join(members) + ")"
    entry = entries[name] = Entry(name, members=tuple(members))
    cpu = time.process_time()
    scores = []
    try:
        for f, fold in enumerate(run.folds):
            rows = fitted[members[0]].train_rows[f]
            if any(not np.array_equal(fitted[m].train_rows[f], rows) for m in members):
                raise DataError("the members were fitted on different rows")
            average = AveragedRegressor.from_fitted([fitted[m].models[f] for m in members])
            scores.append(run.score(average, rows, fold.val))
    except (OKCoreError, ValueError) as exc:
        entry.status = f"failed: {exc}"
        return
    finally:
        entry.cpu_seconds = time.process_time() - cpu
    first = entries[members[0]]
    entry.score, entry.rows, entry.rung = float(np.mean(scores)), first.rows, first.rung
    entry.folds = first.folds
    entry.cpu_seconds += sum(entries[m].cpu_seconds for m in members)


def _member_names(entry: Entry) -> tuple[str, ...]:
    return entry.members or (entry.name,)


def _choose(run: _Run, entries: dict[str, Entry], by_name: dict[str, Candidate], n_in: int) -> str:
    """The best scored entry of the last rung reached whose refit on all rows fits the
    budget left (predicted from its members' last fits), else the cheapest of them, else the
    first candidate. Scores of an earlier rung (entries dropped there, or skipped later for
    the budget) were measured on fewer rows and are not compared with the last rung's."""
    scored = [e for e in entries.values() if e.score is not None and np.isfinite(e.score)]
    if not scored:
        return next(iter(by_name))
    top = max(e.rung for e in scored)
    scored = [e for e in scored if e.rung == top]
    left = run.budget - run.clock.spent()

    def refit_cost(entry: Entry) -> float:
        return sum(
            by_name[m].refit_fraction
            * _predicted(run, by_name[m], entries[m], run.n, 1.0 / len(run.folds))
            for m in _member_names(entry)
        )

    ranked = sorted(scored, key=lambda e: (run.sort_key(e.score), e.name))
    for entry in ranked:
        if refit_cost(entry) <= left:
            return entry.name
    return min(scored, key=lambda e: (refit_cost(e), e.name)).name


def _refit(
    run: _Run,
    entries: dict[str, Entry],
    by_name: dict[str, Candidate],
    chosen: str,
    n_rungs: int,
    n_in: int,
) -> Selection:
    """The chosen entry refitted on all rows, and the selection's record."""
    entry = entries.get(chosen) or entries.setdefault(chosen, Entry(chosen))
    if entry.score is None:
        entry.status = "fallback: nothing scored within the budget"
    members = [(m, entries[m].params) for m in _member_names(entry)]
    run.total = run.done + len(members)  # what is left to fit: the refit (skips are known)
    cpu = time.process_time()
    estimators = []
    for m, params in members:
        run.report("refit", m)
        run.done += 1
        estimators.append(by_name[m].final(run.seed, params))
    model = estimators[0] if len(estimators) == 1 else AveragedRegressor(estimators)
    o = run.outputs
    weights = weight_argument(o.sample_weight)
    if o.gram is not None:
        model.fit(run.X, gram=o.gram, **weights)
    else:
        model.fit(run.X, o.vectors, kernel=o.kernel, **weights)
    refit_cpu = time.process_time() - cpu
    if not entry.status.startswith("fallback"):
        entry.status = "chosen"
    board = sorted(entries.values(), key=lambda e: (run.sort_key(e.score), e.name))
    return Selection(
        estimator=model,
        name=chosen,
        members=members,
        leaderboard=[e.as_dict() for e in board],
        score_name=run.score_name,
        greater_is_better=run.greater,
        cpu_seconds=run.clock.spent(),
        refit_cpu_seconds=refit_cpu,
        budget=run.budget,
        seed=run.seed,
        n_rungs=n_rungs,
        inner_rows=(n_in, len(run.folds[0].val)),
    )


def rebuild(
    candidates: Iterable[Candidate], members: Sequence[tuple[str, dict[str, Any]]], seed: int
) -> Any:
    """The unfitted final estimator of a selection's ``members`` ((name, params) pairs, as
    :attr:`Selection.members`) with its ``seed``: what a loaded model is rebuilt from."""
    by_name = {c.name: c for c in candidates}
    missing = [m for m, _ in members if m not in by_name]
    if missing:
        raise DataError(f"unknown candidate(s) {missing}; known: {sorted(by_name)}")
    estimators = [by_name[m].final(seed, params) for m, params in members]
    return estimators[0] if len(estimators) == 1 else AveragedRegressor(estimators)
