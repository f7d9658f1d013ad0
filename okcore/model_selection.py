"""Cross-validation and grid search for okcore estimators: the paper's protocol as a call.

Outputs come in three forms, and each splits differently into folds:

- **vectors** Y with an output kernel: the fold's rows of X and Y;
- a **precomputed Gram** matrix K (N, N): the fold trains on the block K[train, train] and is
  scored with K[test, train] and diag(K)[test] (the test outputs' kernel against the training
  outputs, which is what a prediction is compared with, paper eq. 7);
- a **graph** (a diffusion kernel over N vertices, ``DiffusionKernel(edges, beta)``): the fold
  trains on the graph *induced* on its training vertices (renumbered 0..n_train-1; no edge
  touching a test vertex is seen), as in the paper's network-completion protocol, and is
  scored by the edge AUC over every pair with at least one test vertex (new-new pairs from
  predicted kernels, new-known pairs from predicted kernels against the training vertices).

Scores: any named score of :mod:`okcore.scoring` that applies to the outputs' form ("err_phi",
"err_y", "r2"; for graphs "auc", "auc_known", "average_precision"; for 0/1 vectors "auroc",
"average_precision", "f1" and the multi-label measures), each knowing whether higher is
better, or a callable ``scorer(estimator, X_test, y_test)`` (higher is better).

Candidates that differ only in ``n_estimators`` share one fit per fold at the largest value
when the estimator's stages never look ahead (OKBoost, boosted KRR without reweighting, no
early stopping): the others are scored on its first stages (:func:`first_stages`), which are
exactly the refits' models. ``search="halving"`` races the candidates by successive halving
over the number of trees (:func:`halving_schedule`), continuing the survivors' fits by warm
start where the estimator has it (:func:`continues_fits`), exactly the refits' models.

Folds run in turn, or in joblib threads with ``n_jobs`` (each task gets its own estimator clone).
Under ``joblib.parallel_config(backend="dask")`` with a ``distributed.Client`` every
(candidate, fold) task runs on the cluster, and X and the outputs are scattered to the
workers once per search (see okcore._shipping), not pickled into each task.
A ``callback(task, progress)`` hears every fold fit's :class:`~okcore.base.FitProgress`, with the
index of its (candidate, fold) task, so a caller can report progress across the whole search.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from joblib import Parallel, delayed

from ._shipping import nbytes_with_arrays
from ._validation import check_inputs, check_sample_weight
from .callbacks import FitProgress
from .exceptions import DataError
from .folds import kfold
from .meta import clone
from .outputs.graph import sparse_adjacency
from .outputs.kernels import DiffusionKernel, make_kernel
from .scoring import BoundScorer, FoldTruth, check_scoring
from .similarity import fold_inputs

#: Graph AUCs score every (test vertex, vertex) pair from dense predicted kernels: refused
#: beyond this many pairs (1.6 GB of float64) with a message instead of running out of memory.
MAX_PAIR_VALUES = 200_000_000
#: ``callback(task, progress)`` of :func:`cross_validate` and :func:`grid_search`.
SearchCallback = Callable[[int, FitProgress], object]


MIN_TRAIN_SAMPLES = 20
"""Fewer training rows than this draw a warning: any score of such a model is anecdotal."""
MIN_TEST_FOLD = 5
"""Test folds smaller than this draw a warning: a fold's score rests on a handful of rows."""


def training_warnings(n_samples: int, cv_folds: int | None = None) -> list[str]:
    """What is too small about a training set (and its K-fold CV), one sentence each.

    A test fold holds floor(n / K) or ceil(n / K) rows; with fewer than ``MIN_TEST_FOLD``
    its score rests on a handful of rows (5-fold CV on 5 vertices scores each fold on one
    vertex: an AUC of 1.0 +- 0 says little), and the folds' standard deviation understates
    the uncertainty.
    """
    out = []
    if n_samples < MIN_TRAIN_SAMPLES:
        out.append(
            f"only {n_samples} training rows: the model and its scores are anecdotal (at "
            f"least {MIN_TRAIN_SAMPLES} are advised)"
        )
    if cv_folds is not None and cv_folds >= 2:
        smallest = n_samples // cv_folds
        if smallest < MIN_TEST_FOLD:
            out.append(
                f"{cv_folds}-fold CV of {n_samples} rows tests each fold on {smallest} to "
                f"{-(-n_samples // cv_folds)} rows: the scores and their spread say little "
                f"(ask for fewer folds, or bring at least {MIN_TEST_FOLD * cv_folds} rows)"
            )
    return out


def induced_edges(edges: np.ndarray, keep: np.ndarray, n_vertices: int) -> np.ndarray:
    """The edges with both ends in ``keep``, renumbered 0..len(keep)-1 in the order of keep."""
    position = np.full(n_vertices, -1, dtype=np.int64)
    position[keep] = np.arange(len(keep))
    renumbered = position[np.asarray(edges, dtype=np.int64).reshape(-1, 2)]
    return renumbered[(renumbered >= 0).all(axis=1)]


@dataclass(frozen=True)
class Outputs:
    """The outputs of a CV problem in one of the three forms (see the module docstring)."""

    Y: np.ndarray | None = None
    kernel: Any = None
    gram: np.ndarray | None = None
    sample_weight: np.ndarray | None = None  # one weight per row, split with the folds

    def __sizeof__(self) -> int:  # the arrays too: scattered once to a cluster (_shipping)
        edges = self.graph_edges.nbytes if self.graph is not None else 0
        return nbytes_with_arrays(self) + edges

    @property
    def graph(self) -> DiffusionKernel | None:
        kernel = None if self.kernel is None else make_kernel(self.kernel)
        return kernel if isinstance(kernel, DiffusionKernel) else None

    @property
    def graph_edges(self) -> np.ndarray:
        graph = self.graph
        assert graph is not None
        return np.asarray(graph.edges)

    @property
    def vectors(self) -> np.ndarray:
        assert self.Y is not None
        return self.Y

    @property
    def form(self) -> str:
        """ "vectors", "gram" or "graph" (:data:`okcore.scoring.FORMS`)."""
        if self.graph is not None:
            return "graph"
        return "gram" if self.gram is not None else "vectors"

    def fit(
        self, estimator: Any, X: Any, train: np.ndarray, n_samples: int, callback: Any = None
    ) -> Any:
        """Fit ``estimator`` on the training fold only (no test vertex or output is passed);
        ``callback`` is the fit's progress callback; the fold's sample weights, if any."""
        report: dict[str, Any] = {} if callback is None else {"callback": callback}
        if self.sample_weight is not None:
            report["sample_weight"] = self.sample_weight[train]
        if self.gram is not None:
            return estimator.fit(X[train], gram=self.gram[np.ix_(train, train)], **report)
        graph = self.graph
        if graph is not None:
            edges = induced_edges(self.graph_edges, train, n_samples)
            kernel = DiffusionKernel(edges, float(graph.beta))
            return estimator.fit(X[train], kernel=kernel, **report)
        return estimator.fit(X[train], self.vectors[train], kernel=self.kernel, **report)

    def truth(self, X: Any, train: np.ndarray, test: np.ndarray, n_samples: int) -> FoldTruth:
        """What the test rows of a fold are scored against (:class:`~okcore.scoring.FoldTruth`),
        with their sample weights."""
        truth = self._truth(X, train, test, n_samples)
        if self.sample_weight is None:
            return truth
        return replace(truth, sample_weight=self.sample_weight[test])

    def _truth(self, X: Any, train: np.ndarray, test: np.ndarray, n_samples: int) -> FoldTruth:
        if self.graph is not None:
            pairs = len(test) * n_samples
            if pairs > MAX_PAIR_VALUES:
                raise DataError(
                    f"the AUC over every pair with a test vertex needs {pairs:.3g} kernel values "
                    f"(test x all vertices), more than {MAX_PAIR_VALUES:.3g}: use more folds or "
                    "score a sample of the vertices"
                )
            A = sparse_adjacency(self.graph_edges, n_samples)
            return FoldTruth(
                adjacency_test=A[test][:, test].toarray(),
                adjacency_train=A[test][:, train].toarray(),
                X_train=X[train],
            )
        if self.gram is not None:
            return FoldTruth(
                gram_cross=self.gram[np.ix_(test, train)], gram_diag=np.diag(self.gram)[test]
            )
        return FoldTruth(Y=self.vectors[test])

    def score(self, estimator: Any, X: Any, train: np.ndarray, test: np.ndarray,
              n_samples: int, scorers: Mapping[str, BoundScorer]) -> dict[str, float]:  # fmt: skip
        """The scores of a fitted fold on its test rows, by name."""
        truth = self.truth(X, train, test, n_samples)
        Xt = X[test]
        return {name: scorer(estimator, Xt, truth, self.form) for name, scorer in scorers.items()}


def _check_scoring(outputs: Outputs, scoring: Any) -> dict[str, BoundScorer]:
    return check_scoring(scoring, outputs.form, outputs.Y)


@dataclass(frozen=True)
class _TaskReport:
    """A fold fit's progress callback: hands each report to the search's callback with the
    task's index, and never asks the fit to stop (a truncated fit would be scored as a
    whole one; to stop the search, the callback raises)."""

    callback: SearchCallback
    task: int
    rounds_before: int = 0  # a continued fit (warm start): counts its added rounds only

    def __call__(self, progress: FitProgress) -> None:
        if self.rounds_before:
            done = max(progress.done - self.rounds_before, 0)
            progress = replace(progress, done=done, total=progress.total - self.rounds_before)
        self.callback(self.task, progress)


def _fold_scores(estimator: Any, X: Any, outputs: Outputs, train: np.ndarray,
                 test: np.ndarray, n_samples: int, scorers: Mapping[str, BoundScorer],
                 report: _TaskReport | None = None,
                 stages: Sequence[int | None] = (None,)) -> list[dict[str, float]]:  # fmt: skip
    """Fit a clone on the fold and score it on the test rows: once per entry of ``stages``,
    the fitted model itself (None) or its first m stages (:func:`first_stages`)."""
    # a precomputed input similarity: the fold sees its training items' columns only
    X = fold_inputs(estimator, X, train)
    fitted = outputs.fit(_clone(estimator), X, train, n_samples, report)
    return [
        outputs.score(
            fitted if m is None else first_stages(fitted, m), X, train, test, n_samples, scorers
        )
        for m in stages
    ]


def _report(
    callback: SearchCallback | None, task: int, rounds_before: int = 0
) -> _TaskReport | None:
    return None if callback is None else _TaskReport(callback, task, rounds_before)


def _continued_fold(estimator: Any, fitted: Any, params: Mapping[str, Any], X: Any,
                    outputs: Outputs, train: np.ndarray, test: np.ndarray, n_samples: int,
                    scorers: Mapping[str, BoundScorer], callback: SearchCallback | None,
                    task: int) -> tuple[Any, dict[str, float]]:  # fmt: skip
    """A halving fit on a fold by warm start: ``fitted`` (this candidate's model of the
    previous iteration on the same fold, None at the first) continued to ``params``'
    ``n_estimators``, or a warm-startable clone fitted anew; the model and its scores."""
    X = fold_inputs(estimator, X, train)
    if fitted is None:
        model, before = _clone(estimator).set_params(**params, **{WARM_START: True}), 0
    else:
        model, before = fitted.set_params(**{RESOURCE: params[RESOURCE]}), len(fitted.train_loss_)
    model = outputs.fit(model, X, train, n_samples, _report(callback, task, before))
    return model, outputs.score(model, X, train, test, n_samples, scorers)


def _clone(estimator: Any) -> Any:
    """A fresh unfitted estimator with the same parameters, inner estimators cloned too
    (scikit-learn's clone, without the dependency)."""
    return clone(estimator)


def outputs_of(
    X: Any, Y: Any, gram: Any, kernel: Any, sample_weight: Any = None
) -> tuple[Any, Outputs, int]:
    """(X, the outputs in their form with the rows' sample weights, the number of rows),
    checked. X is converted first (a DataFrame or a list to an array, a sparse matrix kept
    sparse, missing values kept for the estimator to take or refuse): the folds index its
    rows by position."""
    X = check_inputs(X, allow_missing=True)
    n_samples = X.shape[0]
    given = sum(v is not None for v in (Y, gram)) + (kernel is not None and Y is None)
    if given != 1:
        raise DataError(
            "pass the outputs in one form: Y (with an optional kernel), gram=K, or "
            "kernel=DiffusionKernel(edges, beta) for a graph over the rows of X"
        )
    if gram is not None:
        gram = np.asarray(gram, dtype=np.float64)
        if gram.shape != (n_samples, n_samples):
            raise DataError(
                f"gram must be ({n_samples}, {n_samples}) for {n_samples} rows of X: got {gram.shape}"
            )
    vectors = None if Y is None else np.asarray(Y)
    if vectors is not None and vectors.dtype.kind == "f" and np.isnan(vectors).any():
        raise DataError(
            "Y has unknown (NaN) entries: cross-validation and the automatic choice score "
            "whole outputs; fit OKBoostRegressor on the partly known outputs directly"
        )
    weight = check_sample_weight(sample_weight, n_samples)
    outputs = Outputs(Y=vectors, kernel=kernel, gram=gram, sample_weight=weight)
    if Y is None and gram is None and outputs.graph is None:
        raise DataError(
            "without Y or gram, the kernel must be a diffusion kernel over the rows of X"
        )
    if vectors is not None and len(vectors) != n_samples:
        raise DataError(f"X has {n_samples} rows but Y has {len(vectors)}")
    return X, outputs, n_samples


def cross_validate(
    estimator: Any,
    X: Any,
    Y: Any = None,
    *,
    gram: Any = None,
    kernel: Any = None,
    scoring: Any = None,
    cv: int | Iterable[tuple] = 5,
    random_state: Any = None,
    n_jobs: int | None = None,
    callback: SearchCallback | None = None,
    sample_weight: Any = None,
) -> dict[str, np.ndarray]:
    """Scores of ``estimator`` over CV folds: {score name: (n_folds,) array}.

    ``scoring``: a score name, a callable ``scorer(estimator, X_test, y_test)``, a list of
    them or a dict {name: scorer} (:func:`okcore.scoring.check_scoring`); default: the
    outputs' form's :data:`~okcore.scoring.DEFAULT_SCORES`.
    ``cv`` is a number of shuffled folds (:func:`kfold` with ``random_state``; with
    ``sample_weight`` holding zeros, the rows of positive weight are spread over the folds)
    or an iterable of (train, test) index arrays. Outputs: Y (+ ``kernel``), ``gram`` (N, N) or
    ``kernel=DiffusionKernel(edges, beta)`` over the N rows (graph). Each fold fits a clone.
    ``callback(fold, progress)`` hears each fold fit's FitProgress (see the module docstring;
    with ``n_jobs`` it runs in the worker). ``sample_weight`` (N,): each fold fits on its
    training rows' weights and is scored on its test rows' (the weighted scores,
    :data:`~okcore.scoring.WEIGHTED_SCORES`). Cost: one fit and one prediction of the test
    rows per fold.
    """
    X, outputs, n_samples = outputs_of(X, Y, gram, kernel, sample_weight)
    scorers = _check_scoring(outputs, scoring)
    folds = (
        kfold(n_samples, cv, random_state, outputs.sample_weight)
        if isinstance(cv, int)
        else list(cv)
    )
    results = Parallel(n_jobs=n_jobs, prefer="threads")(
        delayed(_fold_scores)(
            estimator, X, outputs, train, test, n_samples, scorers, _report(callback, k)
        )  # fmt: skip
        for k, (train, test) in enumerate(folds)
    )
    return {name: np.array([fold[0][name] for fold in results]) for name in scorers}


@dataclass
class GridSearchResult:
    """What :func:`grid_search` found: the best parameters by the mean of ``criterion``, the
    table of every candidate (its parameters, and per score the fold mean and standard
    deviation; with halving one row per candidate and iteration, its ``iteration`` too) and,
    with ``refit``, the best estimator fitted on all the data. Halving: the candidates and the
    trees of each iteration (``n_candidates``, ``n_resources``; both empty for a full grid)."""

    best_params: dict[str, Any]
    criterion: str
    table: list[dict[str, Any]] = field(default_factory=list)
    best_estimator: Any = None
    n_candidates: list[int] = field(default_factory=list)
    n_resources: list[int] = field(default_factory=list)


def parameter_grid(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in the order of the keys then the values."""
    if not grid:
        raise DataError("the parameter grid is empty")
    for name, values in grid.items():
        if isinstance(values, str) or not isinstance(values, Sequence) or not len(values):
            raise DataError(f"grid values of {name!r} must be a non-empty list: got {values!r}")
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values())]


RESOURCE = "n_estimators"
"""The resource successive halving gives the surviving candidates more of: boosting rounds."""
WARM_START = "warm_start"
"""The parameter that lets halving continue a surviving candidate's fits (scikit-learn's)."""


def continues_fits(estimator: Any) -> bool:
    """Whether successive halving continues the surviving candidates' fits (``warm_start``:
    OKBoost) instead of refitting them with more trees."""
    return WARM_START in estimator.get_params()


def planned_resource(estimator: Any, n_samples: int) -> int | None:
    """The ``n_estimators`` a fit of ``estimator`` on ``n_samples`` training rows runs to,
    its "auto" resolved (OKBoost's :meth:`~okcore.boosting.OKBoostRegressor.resolve_n_estimators`);
    None when the estimator has no ``n_estimators``."""
    resolve = getattr(estimator, "resolve_n_estimators", None)
    if resolve is not None:
        return int(resolve(n_samples))
    most = estimator.get_params().get(RESOURCE)
    return None if most is None else int(most)


def _stages_are_refits(estimator: Any) -> bool:
    """Whether the model of the first m stages of a fit is the refit with n_estimators=m: a
    staged estimator whose stages never look ahead (no early stopping, no reweighting)."""
    params = estimator.get_params()
    stopping = params.get("early_stopping", False)
    stops_early = params.get("n_iter_no_change") is not None or (
        not isinstance(stopping, str) and bool(stopping)  # True; "auto" needs a patience
    )
    return (
        hasattr(estimator, "staged_predict_features")
        and RESOURCE in params
        and not stops_early
        and not params.get("reweight", False)
    )


def first_stages(estimator: Any, n_estimators: int) -> Any:
    """A fitted staged estimator cut to its first ``n_estimators`` stages: a shallow copy that
    shares everything but the (truncated) ``ensemble_``. Its predictions are those of
    ``staged_predict*`` at that stage, exactly a refit's with ``n_estimators`` when the stages
    never look ahead (OKBoost; boosted KRR without reweighting; no early stopping). O(1) in
    the data; the truncated arrays are views."""
    if not 1 <= n_estimators <= estimator.n_estimators_:
        raise DataError(
            f"the model has {estimator.n_estimators_} stages: cannot keep {n_estimators}"
        )
    view = copy.copy(estimator)
    view.ensemble_ = estimator.ensemble_.truncate(n_estimators)
    view.n_estimators_ = view.n_estimators = n_estimators
    if hasattr(estimator, "n_estimators_planned_"):  # the refit's: "auto" or not, m rounds
        view.n_estimators_planned_ = n_estimators
    return view


@dataclass(frozen=True)
class SearchFit:
    """One fit (per fold) of a search: the parameters it is fitted with (on top of the
    estimator's) and the candidates it scores, as (candidate index, stages): stages None for
    the fitted model, m for its first m stages."""

    params: dict[str, Any]
    scores: tuple[tuple[int, int | None], ...]


def search_fits(estimator: Any, candidates: Sequence[Mapping[str, Any]]) -> list[SearchFit]:
    """The fits that score ``candidates``, in the order of their first candidate: one per
    candidate, except that candidates differing only in ``n_estimators`` share the fit with
    the largest value when the estimator's stages are refits (:func:`first_stages`); the
    others are scored on its first stages. The search runs each fit on every fold."""
    groups: dict[str, list[int]] = {}
    order: list[str] = []
    for c, params in enumerate(candidates):
        staged = (
            isinstance(params.get(RESOURCE), int | np.integer)  # "auto": M by each fold's rows
            and _stages_are_refits(_clone(estimator).set_params(**params))
        )
        others = sorted((k, repr(v)) for k, v in params.items() if k != RESOURCE)
        key = repr(others) if staged else f"alone {c}"
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(c)
    fits = []
    for key in order:
        members = groups[key]
        if len(members) == 1:
            fits.append(SearchFit(dict(candidates[members[0]]), ((members[0], None),)))
            continue
        trees = [int(candidates[c][RESOURCE]) for c in members]
        largest = members[int(np.argmax(trees))]
        fits.append(
            SearchFit(
                dict(candidates[largest]),
                tuple(
                    (c, None if c == largest else m) for c, m in zip(members, trees, strict=True)
                ),
            )
        )
    return fits


def halving_schedule(
    n_candidates: int, max_resources: int, factor: int = 3, min_resources: int | str = "exhaust"
) -> list[tuple[int, int]]:
    """Successive halving's iterations as (candidates, trees) (scikit-learn's
    ``HalvingGridSearchCV`` with the resource ``n_estimators``).

    Iteration i fits ceil(n_{i-1} / factor) candidates (n_0 = ``n_candidates``) with
    ``min_resources`` * factor^i trees (at most ``max_resources``); the best 1/factor go on.
    The iterations are as many as needed to leave fewer than ``factor`` candidates (1 + the
    largest k with factor^k <= n_candidates), fewer when the resources run out first
    (1 + the largest k with factor^k <= max_resources // min_resources). ``"exhaust"``: the
    first iteration's trees chosen so that the last needed iteration gets as many as
    possible, max(1, max_resources // factor^(iterations needed - 1)). Total fits per fold:
    the sum of the candidates; trees: the sum of candidates x trees, about (iterations) x
    ``n_candidates`` x ``min_resources`` instead of a full grid's
    ``n_candidates`` x ``max_resources``.
    """
    for name, value in (("n_candidates", n_candidates), ("max_resources", max_resources)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise DataError(f"{name} must be an integer >= 1: got {value!r}")
    if isinstance(factor, bool) or not isinstance(factor, int | np.integer) or factor < 2:
        raise DataError(f"factor must be an integer >= 2: got {factor!r}")

    def iterations_within(n: int) -> int:  # 1 + the largest k with factor^k <= n
        k = 0
        while factor ** (k + 1) <= n:
            k += 1
        return k + 1

    required = iterations_within(n_candidates)
    if min_resources == "exhaust":
        smallest = max(1, max_resources // factor ** (required - 1))
    elif (
        isinstance(min_resources, int | np.integer)
        and not isinstance(min_resources, bool)
        and 1 <= min_resources <= max_resources
    ):
        smallest = int(min_resources)
    else:
        raise DataError(
            f'min_resources must be "exhaust" or an integer in [1, {max_resources}] (the '
            f"trees of the first iteration): got {min_resources!r}"
        )
    n_iterations = min(required, iterations_within(max_resources // smallest))
    schedule, alive = [], n_candidates
    for i in range(n_iterations):
        schedule.append((alive, min(smallest * factor**i, max_resources)))
        alive = -(-alive // factor)
    return schedule


def grid_search(
    estimator: Any,
    grid: Mapping[str, Sequence[Any]],
    X: Any,
    Y: Any = None,
    *,
    gram: Any = None,
    kernel: Any = None,
    scoring: Any = None,
    criterion: str | None = None,
    cv: int = 5,
    random_state: Any = None,
    refit: bool = True,
    n_jobs: int | None = None,
    callback: SearchCallback | None = None,
    search: str = "grid",
    factor: int = 3,
    min_resources: int | str = "exhaust",
    max_resources: int | str = "auto",
    sample_weight: Any = None,
) -> GridSearchResult:
    """Cross-validate the combinations of ``grid`` on the same folds and pick the best mean
    ``criterion`` (default: the first score; each score knows whether higher is better,
    callables are maximised; ties go to the earlier candidate). The paper selects J, M and
    nu this way (inner CV). ``scoring`` as in :func:`cross_validate`.

    ``search="grid"``: every combination. Those differing only in ``n_estimators`` share
    one fit per fold when the stages are refits (:func:`search_fits`): a grid over M costs
    one fit at the largest M (an ``n_estimators="auto"`` candidate is fitted apart: its M
    follows each fold's rows).

    ``search="halving"``: successive halving over the number of trees (scikit-learn's
    ``HalvingGridSearchCV`` with the resource ``n_estimators``, which must then not be in the
    grid): every combination is cross-validated with few trees, the best 1/``factor`` of
    them (by the mean criterion) again with ``factor`` times more trees, and so on
    (:func:`halving_schedule` with ``max_resources``, "auto" = the estimator's
    ``n_estimators``, its own "auto" resolved on the folds' training rows). An estimator with ``warm_start`` (OKBoost) continues each surviving
    candidate's fold models with the added trees only (:func:`continues_fits`): the same
    models and scores as refits with the larger ``n_estimators``, for the cost of the
    survivors' added trees and no new output factor; the search then holds every racing
    candidate's fold models (each its output factor and F, N x r floats) until it drops out.
    Others (boosted KRR, SimilarityInputs) refit each iteration's candidates, as
    scikit-learn does. The best is the best of the last iteration, and ``best_params`` hold
    its ``n_estimators``.

    Every fit on a fold is one joblib task when ``n_jobs`` is set; task f * n_folds + k is
    fit f on fold k (a full grid: the fits of :func:`search_fits`, without shared fits
    candidate f; halving: the candidates of each iteration in turn, numbered on across
    iterations), and ``callback(task, progress)`` hears its FitProgress. With ``refit``, the
    best candidate is fitted on all rows (``best_estimator``, not reported to the callback).

    ``sample_weight`` (N,): as in :func:`cross_validate`, the folds split the weights with
    the rows; halving then refits each iteration's candidates (a warm start does not take
    weights), and the refit uses every row's weight.
    """
    X, outputs, n_samples = outputs_of(X, Y, gram, kernel, sample_weight)
    scorers = _check_scoring(outputs, scoring)
    criterion = next(iter(scorers)) if criterion is None else criterion
    if criterion not in scorers:
        raise DataError(f"criterion {criterion!r} must be one of the scores {list(scorers)}")
    higher = scorers[criterion].greater_is_better
    candidates = parameter_grid(grid)
    estimator.check_parameter_names(candidates[0])
    folds = kfold(n_samples, cv, random_state, outputs.sample_weight)
    run = _SearchRun(estimator, X, outputs, n_samples, scorers, folds, n_jobs, callback)
    if search == "grid":
        table = run.table(candidates, search_fits(estimator, candidates))
        best = _best(table, criterion, higher, range(len(table)))
        result = GridSearchResult(dict(table[best]["params"]), criterion, table)
    elif search == "halving":
        result = _halving(run, estimator, candidates, criterion, higher, factor,
                          min_resources, max_resources)  # fmt: skip
    else:
        raise DataError(f'search must be "grid" or "halving": got {search!r}')
    if refit:
        all_rows = np.arange(n_samples)
        result.best_estimator = outputs.fit(
            _clone(estimator).set_params(**result.best_params), X, all_rows, n_samples
        )
    return result


def _best(table: list[dict[str, Any]], criterion: str, higher: bool, rows: Iterable[int]) -> int:
    """The row of the best mean criterion among ``rows`` (ties: the first)."""
    sign = -1.0 if higher else 1.0
    return min(rows, key=lambda c: sign * table[c][criterion]["mean"])


def _halving(run: _SearchRun, estimator: Any, candidates: list[dict[str, Any]],
             criterion: str, higher: bool, factor: int, min_resources: int | str,
             max_resources: int | str) -> GridSearchResult:  # fmt: skip
    """Successive halving over ``n_estimators`` (see :func:`grid_search`)."""
    if RESOURCE in candidates[0]:
        raise DataError(
            f"halving searches over {RESOURCE} itself (the resource): leave it out of the grid "
            f"and set the largest in the estimator (or max_resources)"
        )
    if RESOURCE not in estimator.get_params():
        raise DataError(f"halving needs an estimator with {RESOURCE}: {type(estimator).__name__}")
    most: int | str | None = max_resources
    if max_resources == "auto":  # the estimator's M on the folds' training rows
        most = planned_resource(estimator, max(len(train) for train, _ in run.folds))
    if most is None or isinstance(most, str):
        raise DataError(f'max_resources must be "auto" or an integer >= 1: got {most!r}')
    schedule = halving_schedule(len(candidates), most, factor, min_resources)
    table: list[dict[str, Any]] = []
    alive = list(range(len(candidates)))
    models: dict[int, list[Any]] = {}  # warm start: each racing candidate's fold models
    for iteration, (n_alive, trees) in enumerate(schedule):
        alive = alive[:n_alive]
        rungs = [{**candidates[c], RESOURCE: trees} for c in alive]
        if continues_fits(estimator) and run.outputs.sample_weight is None:
            previous = [models.get(c) for c in alive]
            models.clear()  # the candidates that dropped out free their models now
            rows, fitted = run.continued(rungs, previous)
            models = dict(zip(alive, fitted, strict=True))
        else:
            rows = run.table(rungs, [SearchFit(p, ((i, None),)) for i, p in enumerate(rungs)])
        for row in rows:
            row["iteration"] = iteration
        sign = -1.0 if higher else 1.0
        ranked = sorted(range(len(rows)), key=lambda i: sign * rows[i][criterion]["mean"])
        alive = [alive[i] for i in ranked]
        table.extend(rows)
    last = range(len(table) - schedule[-1][0], len(table))
    best = _best(table, criterion, higher, last)
    return GridSearchResult(
        dict(table[best]["params"]),
        criterion,
        table,
        n_candidates=[n for n, _ in schedule],
        n_resources=[m for _, m in schedule],
    )


@dataclass
class _SearchRun:
    """Runs fits on every fold and tabulates the candidates' scores; numbers the tasks on
    across calls (halving's iterations)."""

    estimator: Any
    X: Any
    outputs: Outputs
    n_samples: int
    scorers: Mapping[str, BoundScorer]
    folds: list[tuple]
    n_jobs: int | None
    callback: SearchCallback | None
    tasks_run: int = 0

    def table(self, candidates: list[dict[str, Any]], fits: list[SearchFit]) -> list[dict]:
        """One row per candidate: its params and per score the folds' mean, std and values."""
        n_folds, first = len(self.folds), self.tasks_run
        self.tasks_run += len(fits) * n_folds
        scores = Parallel(n_jobs=self.n_jobs, prefer="threads")(
            delayed(_fold_scores)(
                _clone(self.estimator).set_params(**fit.params),
                self.X,
                self.outputs,
                train,
                test,
                self.n_samples,
                self.scorers,
                _report(self.callback, first + task),
                [m for _, m in fit.scores],
            )  # fmt: skip
            for task, (fit, (train, test)) in enumerate(itertools.product(fits, self.folds))
        )
        by_candidate: list[list[dict[str, float]]] = [[] for _ in candidates]
        for f, fit in enumerate(fits):
            for k in range(n_folds):
                for (c, _), fold in zip(fit.scores, scores[f * n_folds + k], strict=True):
                    by_candidate[c].append(fold)
        return self._rows(candidates, by_candidate)

    def continued(
        self, candidates: list[dict[str, Any]], fitted: list[list[Any] | None]
    ) -> tuple[list[dict], list[list[Any]]]:
        """Halving by warm start: each candidate's fold models of the previous iteration
        (``fitted``, None for a new candidate) continued to its ``n_estimators``, scored;
        its table rows and the fold models, which hold their training state until the
        candidate drops out. The models and scores of refits with those ``n_estimators``,
        for the added trees' cost (:class:`~okcore.boosting.OKBoostRegressor`'s
        ``warm_start``)."""
        n_folds, first = len(self.folds), self.tasks_run
        self.tasks_run += len(candidates) * n_folds
        tasks = list(itertools.product(range(len(candidates)), range(n_folds)))
        previous = [[None] * n_folds if f is None else f for f in fitted]
        done = Parallel(n_jobs=self.n_jobs, prefer="threads")(
            delayed(_continued_fold)(
                self.estimator,
                previous[c][k],
                candidates[c],
                self.X,
                self.outputs,
                *self.folds[k],
                self.n_samples,
                self.scorers,
                self.callback,
                first + task,
            )
            for task, (c, k) in enumerate(tasks)
        )
        models: list[list[Any]] = [[] for _ in candidates]
        by_candidate: list[list[dict[str, float]]] = [[] for _ in candidates]
        for (c, _), (model, fold) in zip(tasks, done, strict=True):
            models[c].append(model)
            by_candidate[c].append(fold)
        return self._rows(candidates, by_candidate), models

    def _rows(
        self, candidates: list[dict[str, Any]], by_candidate: list[list[dict[str, float]]]
    ) -> list[dict]:
        """One table row per candidate from its folds' scores."""
        table = []
        for params, folds_scores in zip(candidates, by_candidate, strict=True):
            row: dict[str, Any] = {"params": params}
            for name in self.scorers:
                values = np.array([s[name] for s in folds_scores])
                row[name] = {"mean": float(values.mean()), "std": float(values.std()),
                             "folds": values.tolist()}  # fmt: skip
            table.append(row)
        return table
