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

Scores: "err_phi" (mean ||phi(y) - F(x)||^2, eq. 7), "err_y" (the pre-image's kernel loss,
eq. 8), "r2" (the kernelized R^2 of :meth:`score`), "auc" (graphs only), "auc_known" (graphs:
new-known pairs scored against the training vertices' own outputs, ``predict_kernel_train``).
Lower is better for the errors, higher for the others.

Folds run in turn, or in joblib threads with ``n_jobs`` (each task gets its own estimator clone).
Under ``joblib.parallel_config(backend="dask")`` with a ``distributed.Client`` every
(candidate, fold) task runs on the cluster, and X and the outputs are scattered to the
workers once per search (see okcore._shipping), not pickled into each task.
A ``callback(task, progress)`` hears every fold fit's :class:`~okcore.base.FitProgress`, with the
index of its (candidate, fold) task, so a caller can report progress across the whole search.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from joblib import Parallel, delayed

from . import metrics
from ._shipping import nbytes_with_arrays
from ._validation import check_random_state
from .callbacks import FitProgress
from .exceptions import DataError
from .meta import clone
from .outputs.graph import sparse_adjacency
from .outputs.kernels import DiffusionKernel, make_kernel
from .similarity import fold_inputs

#: Scores where larger is better; the others are losses.
MAXIMIZED = frozenset({"r2", "auc", "auc_known"})
VECTOR_SCORES = ("err_phi", "err_y", "r2")
#: Graph AUCs score every (test vertex, vertex) pair from dense predicted kernels: refused
#: beyond this many pairs (1.6 GB of float64) with a message instead of running out of memory.
MAX_PAIR_VALUES = 200_000_000
GRAM_SCORES = ("err_phi", "err_y")
GRAPH_SCORES = ("auc", "auc_known")
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


def kfold(n_samples: int, n_splits: int = 5, random_state: Any = None) -> list[tuple]:
    """Shuffled K-fold splits of range(n_samples): a list of (train, test) index arrays.

    Fold sizes differ by at most one; every index is in exactly one test fold.
    """
    if not isinstance(n_splits, int | np.integer) or n_splits < 2:
        raise DataError(f"n_splits must be an integer >= 2: got {n_splits!r}")
    if n_samples < n_splits:
        raise DataError(f"{n_splits}-fold CV needs at least {n_splits} samples: got {n_samples}")
    order = check_random_state(random_state).permutation(n_samples)
    tests = np.array_split(order, n_splits)
    return [
        (np.sort(np.concatenate(tests[:k] + tests[k + 1 :])), np.sort(tests[k]))
        for k in range(n_splits)
    ]


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

    def default_scoring(self) -> tuple[str, ...]:
        if self.graph is not None:
            return GRAPH_SCORES
        return GRAM_SCORES if self.gram is not None else VECTOR_SCORES

    def fit(
        self, estimator: Any, X: Any, train: np.ndarray, n_samples: int, callback: Any = None
    ) -> Any:
        """Fit ``estimator`` on the training fold only (no test vertex or output is passed);
        ``callback`` is the fit's progress callback."""
        report = {} if callback is None else {"callback": callback}
        if self.gram is not None:
            return estimator.fit(X[train], gram=self.gram[np.ix_(train, train)], **report)
        graph = self.graph
        if graph is not None:
            edges = induced_edges(self.graph_edges, train, n_samples)
            kernel = DiffusionKernel(edges, float(graph.beta))
            return estimator.fit(X[train], kernel=kernel, **report)
        return estimator.fit(X[train], self.vectors[train], kernel=self.kernel, **report)

    def score(self, estimator: Any, X: Any, train: np.ndarray, test: np.ndarray,
              n_samples: int, names: Sequence[str]) -> dict[str, float]:  # fmt: skip
        """The scores ``names`` of a fitted fold on its test rows."""
        Xt = X[test]
        if self.graph is not None:
            pairs = len(test) * n_samples
            if pairs > MAX_PAIR_VALUES:
                raise DataError(
                    f"the AUC over every pair with a test vertex needs {pairs:.3g} kernel values "
                    f"(test x all vertices), more than {MAX_PAIR_VALUES:.3g}: use more folds or "
                    "score a sample of the vertices"
                )
            A = sparse_adjacency(self.graph_edges, n_samples)
            a_nn, a_nk = A[test][:, test].toarray(), A[test][:, train].toarray()
            k_nn = estimator.predict_kernel(Xt)
            out = {}
            if "auc" in names:
                k_nk = estimator.predict_kernel(Xt, X[train])
                out["auc"] = metrics.network_auc(k_nn, k_nk, a_nn, a_nk)
            if "auc_known" in names:
                out["auc_known"] = metrics.network_auc(
                    k_nn, estimator.predict_kernel_train(Xt), a_nn, a_nk
                )
            return out
        if self.gram is not None:
            truth = {"gram_cross": self.gram[np.ix_(test, train)],
                     "gram_diag": np.diag(self.gram)[test]}  # fmt: skip
        else:
            truth = {"Y": self.vectors[test]}
        scorers = {
            "err_phi": lambda: metrics.err_phi(estimator, Xt, **truth),
            "err_y": lambda: metrics.err_y(estimator, Xt, **truth),
            "r2": lambda: estimator.score(Xt, truth["Y"]),
        }
        return {name: float(scorers[name]()) for name in names}


def _check_scoring(outputs: Outputs, scoring: str | Sequence[str] | None) -> tuple[str, ...]:
    names = outputs.default_scoring() if scoring is None else scoring
    names = (names,) if isinstance(names, str) else tuple(names)
    allowed = outputs.default_scoring()
    bad = [name for name in names if name not in allowed]
    if bad or not names:
        form = (
            "graph"
            if outputs.graph is not None
            else "Gram"
            if outputs.gram is not None
            else "vector"
        )
        raise DataError(
            f"scoring {bad or names!r} is not available for {form} outputs; use some of {list(allowed)}"
        )
    return names


@dataclass(frozen=True)
class _TaskReport:
    """A fold fit's progress callback: hands each report to the search's callback with the
    task's index, and never asks the fit to stop (a truncated fit would be scored as a
    whole one; to stop the search, the callback raises)."""

    callback: SearchCallback
    task: int

    def __call__(self, progress: FitProgress) -> None:
        self.callback(self.task, progress)


def _fold_scores(estimator: Any, X: Any, outputs: Outputs, train: np.ndarray,
                 test: np.ndarray, n_samples: int, names: Sequence[str],
                 report: _TaskReport | None = None) -> dict[str, float]:  # fmt: skip
    # a precomputed input similarity: the fold sees its training items' columns only
    X = fold_inputs(estimator, X, train)
    fitted = outputs.fit(_clone(estimator), X, train, n_samples, report)
    return outputs.score(fitted, X, train, test, n_samples, names)


def _report(callback: SearchCallback | None, task: int) -> _TaskReport | None:
    return None if callback is None else _TaskReport(callback, task)


def _clone(estimator: Any) -> Any:
    """A fresh unfitted estimator with the same parameters, inner estimators cloned too
    (scikit-learn's clone, without the dependency)."""
    return clone(estimator)


def _outputs(X: Any, Y: Any, gram: Any, kernel: Any) -> tuple[Any, Outputs, int]:
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
    outputs = Outputs(Y=vectors, kernel=kernel, gram=gram)
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
    scoring: str | Sequence[str] | None = None,
    cv: int | Iterable[tuple] = 5,
    random_state: Any = None,
    n_jobs: int | None = None,
    callback: SearchCallback | None = None,
) -> dict[str, np.ndarray]:
    """Scores of ``estimator`` over CV folds: {score name: (n_folds,) array}.

    ``cv`` is a number of shuffled folds (:func:`kfold` with ``random_state``) or an iterable
    of (train, test) index arrays. Outputs: Y (+ ``kernel``), ``gram`` (N, N) or
    ``kernel=DiffusionKernel(edges, beta)`` over the N rows (graph). Each fold fits a clone.
    ``callback(fold, progress)`` hears each fold fit's FitProgress (see the module docstring;
    with ``n_jobs`` it runs in the worker). Cost: one fit and one prediction of the test rows
    per fold.
    """
    X, outputs, n_samples = _outputs(X, Y, gram, kernel)
    names = _check_scoring(outputs, scoring)
    folds = kfold(n_samples, cv, random_state) if isinstance(cv, int) else list(cv)
    results = Parallel(n_jobs=n_jobs, prefer="threads")(
        delayed(_fold_scores)(
            estimator, X, outputs, train, test, n_samples, names, _report(callback, k)
        )  # fmt: skip
        for k, (train, test) in enumerate(folds)
    )
    return {name: np.array([fold[name] for fold in results]) for name in names}


@dataclass
class GridSearchResult:
    """What :func:`grid_search` found: the best parameters by the mean of ``criterion``, the
    table of every candidate (its parameters, and per score the fold mean and standard
    deviation) and, with ``refit``, the best estimator fitted on all the data."""

    best_params: dict[str, Any]
    criterion: str
    table: list[dict[str, Any]] = field(default_factory=list)
    best_estimator: Any = None


def parameter_grid(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in the order of the keys then the values."""
    if not grid:
        raise DataError("the parameter grid is empty")
    for name, values in grid.items():
        if isinstance(values, str) or not isinstance(values, Sequence) or not len(values):
            raise DataError(f"grid values of {name!r} must be a non-empty list: got {values!r}")
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values())]


def grid_search(
    estimator: Any,
    grid: Mapping[str, Sequence[Any]],
    X: Any,
    Y: Any = None,
    *,
    gram: Any = None,
    kernel: Any = None,
    scoring: str | Sequence[str] | None = None,
    criterion: str | None = None,
    cv: int = 5,
    random_state: Any = None,
    refit: bool = True,
    n_jobs: int | None = None,
    callback: SearchCallback | None = None,
) -> GridSearchResult:
    """Cross-validate every combination of ``grid`` on the same folds and pick the best mean
    ``criterion`` (default: the first score; errors minimised, R^2 and AUC maximised; ties go
    to the earlier candidate). The paper selects J, M and nu this way (inner CV).

    Every (candidate, fold) pair is one joblib task when ``n_jobs`` is set; task
    c * n_folds + k is candidate c on fold k, and ``callback(task, progress)`` hears its fit's
    FitProgress. With ``refit``, the best candidate is fitted on all rows (``best_estimator``,
    not reported to the callback).
    """
    X, outputs, n_samples = _outputs(X, Y, gram, kernel)
    names = _check_scoring(outputs, scoring)
    criterion = names[0] if criterion is None else criterion
    if criterion not in names:
        raise DataError(f"criterion {criterion!r} must be one of the scores {list(names)}")
    candidates = parameter_grid(grid)
    estimator.check_parameter_names(candidates[0])
    folds = kfold(n_samples, cv, random_state)
    tasks = [(params, train, test) for params in candidates for train, test in folds]
    scores = Parallel(n_jobs=n_jobs, prefer="threads")(
        delayed(_fold_scores)(
            _clone(estimator).set_params(**params),
            X,
            outputs,
            train,
            test,
            n_samples,
            names,
            _report(callback, task),
        )
        for task, (params, train, test) in enumerate(tasks)
    )
    table = []
    for c, params in enumerate(candidates):
        folds_scores = scores[c * len(folds) : (c + 1) * len(folds)]
        row: dict[str, Any] = {"params": params}
        for name in names:
            values = np.array([s[name] for s in folds_scores])
            row[name] = {"mean": float(values.mean()), "std": float(values.std()),
                         "folds": values.tolist()}  # fmt: skip
        table.append(row)
    sign = -1.0 if criterion in MAXIMIZED else 1.0
    best = min(range(len(table)), key=lambda c: sign * table[c][criterion]["mean"])
    result = GridSearchResult(best_params=dict(candidates[best]), criterion=criterion, table=table)
    if refit:
        all_rows = np.arange(n_samples)
        result.best_estimator = outputs.fit(
            _clone(estimator).set_params(**candidates[best]), X, all_rows, n_samples
        )
    return result
