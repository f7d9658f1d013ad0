"""Scorers of cross-validation and grid search: the named scores of each output form, and
callables, behind one interface (a scorer scores a fitted fold model on its test rows).

Named scores, each computed by :mod:`okcore.metrics` (the outputs it applies to; which way
is better):

- ``err_phi`` (vectors, Gram; lower): mean ||phi(y) - F(x)||^2 (eq. 7);
- ``err_y`` (vectors, Gram; lower): the pre-image's kernel loss (eq. 8);
- ``r2`` (vectors; higher): the kernelized R^2 of ``estimator.score``;
- ``auc`` (graph; higher): the edge AUC over every pair with a test vertex, new-known pairs
  scored <F(x), F(x_i)>; ``auroc`` is the same number;
- ``auc_known`` (graph; higher): the same pairs, new-known ones scored <F(x), phi(y_i)>;
- ``average_precision`` (graph; higher): the average precision of the pairs of ``auc``;
- ``auroc``, ``average_precision`` (0/1 vectors; higher): the predicted values ranked against
  the true 0/1 entries, all (row, column) entries pooled (the micro average);
- ``f1`` (0/1 vectors; higher): the micro-F1 of the predictions >= 0.5;
- the multi-label measures of ``metrics.MULTILABEL_METRICS`` (0/1 vectors): hamming_loss,
  subset_accuracy, micro_f1, macro_f1 of the predictions >= 0.5, and ranking_loss,
  one_error, coverage, label_ranking_average_precision of the predicted values.

"The predicted values" are ``estimator.predict(X_test)``: F(x) for the linear kernel (for 0/1
label rows, label frequencies of the training rows, see :mod:`okcore.multilabel`); with
another kernel, the closest training output, itself 0/1, so rankings are coarse. "0/1
vectors" means output vectors holding only 0 and 1 (label rows, a 1-d 0/1 target, links);
those scores are refused for other outputs.

With sample weights (``sample_weight`` of :func:`~okcore.model_selection.cross_validate`
and :func:`~okcore.model_selection.grid_search`), ``err_phi``, ``err_y`` and ``r2`` are
weighted over the test rows (:data:`WEIGHTED_SCORES`: weighted means; R^2 with the weighted
mean and spread, as scikit-learn's ``r2_score(sample_weight=...)``); the other scores and
callables are refused.

A **callable** follows scikit-learn's convention ``scorer(estimator, X_test, y_test) ->
float``, higher is better (negate a loss), with ``estimator`` the fold's fitted model and
``y_test``:

- output vectors: the test rows' outputs ``Y[test]`` (so ``sklearn.metrics.make_scorer``
  scorers work as they are);
- a Gram matrix or a graph: a :class:`FoldTruth`, whose ``gram_cross`` (K[test, train]) and
  ``gram_diag`` feed :func:`okcore.metrics.err_phi` and :func:`~okcore.metrics.err_y`, and
  whose adjacency blocks and ``X_train`` score predicted links, e.g.
  ``metrics.network_auc(est.predict_kernel(X), est.predict_kernel(X, t.X_train),
  t.adjacency_test, t.adjacency_train)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import metrics
from .exceptions import DataError

#: The forms of outputs a CV problem can have (see :mod:`okcore.model_selection`).
FORMS = ("vectors", "gram", "graph")
FORM_NAMES = {"vectors": "vector", "gram": "Gram", "graph": "graph"}
#: The scores computed when none is asked for, by form (the first picks the best).
DEFAULT_SCORES = {
    "vectors": ("err_phi", "err_y", "r2"),
    "gram": ("err_phi", "err_y"),
    "graph": ("auc", "auc_known"),
}
DECISION_THRESHOLD = 0.5
"""Predicted values at or above this are predicted 1 by the thresholded 0/1 scores."""


@dataclass(frozen=True)
class FoldTruth:
    """What a fold's test rows are scored against (fields of the other forms are None).

    Y: the test rows' output vectors. gram_cross (Q, n_train), gram_diag (Q,): for a Gram
    matrix, the test outputs' kernel against the training outputs, and k(y, y). For a graph:
    adjacency_test (Q, Q) and adjacency_train (Q, n_train), the dense 0/1 links among the test
    vertices and to the training vertices, and X_train, the training vertices' inputs.
    """

    Y: np.ndarray | None = None
    gram_cross: np.ndarray | None = None
    gram_diag: np.ndarray | None = None
    adjacency_test: np.ndarray | None = None
    adjacency_train: np.ndarray | None = None
    X_train: Any = None
    sample_weight: np.ndarray | None = None  # the test rows' weights (a weighted search)


ScoreFunction = Callable[[Any, Any, FoldTruth], float]


@dataclass(frozen=True)
class Scorer:
    """A score by name: whether higher is better, and its computation for each output form it
    applies to. ``labels``: it needs 0/1 output vectors."""

    name: str
    greater_is_better: bool
    by_form: Mapping[str, ScoreFunction]
    labels: bool = False
    weighted: bool = False  # a weighted mean over the test rows when they have weights

    def __call__(self, estimator: Any, X_test: Any, truth: FoldTruth, form: str) -> float:
        if truth.sample_weight is not None and not self.weighted:
            raise DataError(
                f"score {self.name!r} does not take sample weights: score a weighted search "
                f"with {list(WEIGHTED_SCORES)}"
            )
        return float(self.by_form[form](estimator, X_test, truth))


# ------------------------------------------------------------------ the score functions
def _err_phi(estimator: Any, X: Any, t: FoldTruth) -> float:
    return metrics.err_phi(
        estimator, X, t.Y, gram_cross=t.gram_cross, gram_diag=t.gram_diag,
        sample_weight=t.sample_weight,
    )  # fmt: skip


def _err_y(estimator: Any, X: Any, t: FoldTruth) -> float:
    return metrics.err_y(
        estimator, X, t.Y, gram_cross=t.gram_cross, gram_diag=t.gram_diag,
        sample_weight=t.sample_weight,
    )  # fmt: skip


def _r2(estimator: Any, X: Any, t: FoldTruth) -> float:
    if t.sample_weight is None:
        return float(estimator.score(X, t.Y))
    return float(estimator.score(X, t.Y, sample_weight=t.sample_weight))


def _pair_scores(estimator: Any, X: Any, t: FoldTruth, known: bool) -> tuple[Any, ...]:
    """The predicted kernels of the pairs with a test vertex, with their adjacency blocks."""
    k_test = estimator.predict_kernel(X)
    k_train = estimator.predict_kernel_train(X) if known else estimator.predict_kernel(X, t.X_train)
    return k_test, k_train, t.adjacency_test, t.adjacency_train


def _graph_auc(estimator: Any, X: Any, t: FoldTruth) -> float:
    return metrics.network_auc(*_pair_scores(estimator, X, t, known=False))


def _graph_auc_known(estimator: Any, X: Any, t: FoldTruth) -> float:
    return metrics.network_auc(*_pair_scores(estimator, X, t, known=True))


def _graph_average_precision(estimator: Any, X: Any, t: FoldTruth) -> float:
    return metrics.network_average_precision(*_pair_scores(estimator, X, t, known=False))


def _labels_and_values(estimator: Any, X: Any, t: FoldTruth) -> tuple[np.ndarray, np.ndarray]:
    """The true 0/1 test rows and the predicted values, both (Q, L)."""
    assert t.Y is not None
    truth = np.asarray(t.Y).reshape(len(t.Y), -1)
    values = np.asarray(estimator.predict(X), dtype=np.float64).reshape(truth.shape)
    return truth, values


def _vector_auroc(estimator: Any, X: Any, t: FoldTruth) -> float:
    truth, values = _labels_and_values(estimator, X, t)
    return metrics.edge_auc(values, truth)


def _vector_average_precision(estimator: Any, X: Any, t: FoldTruth) -> float:
    truth, values = _labels_and_values(estimator, X, t)
    return metrics.average_precision(values, truth)


def _label_measure(function: Callable[[Any, Any], float], takes_values: bool) -> ScoreFunction:
    """A multi-label measure of the predicted values, or of the predictions >= 0.5."""

    def score(estimator: Any, X: Any, t: FoldTruth) -> float:
        truth, values = _labels_and_values(estimator, X, t)
        return function(truth, values if takes_values else values >= DECISION_THRESHOLD)

    return score


def _registry() -> dict[str, Scorer]:
    scorers = [
        Scorer("err_phi", False, {"vectors": _err_phi, "gram": _err_phi}, weighted=True),
        Scorer("err_y", False, {"vectors": _err_y, "gram": _err_y}, weighted=True),
        Scorer("r2", True, {"vectors": _r2}, weighted=True),
        Scorer("auc", True, {"graph": _graph_auc}),
        Scorer("auc_known", True, {"graph": _graph_auc_known}),
        Scorer("auroc", True, {"graph": _graph_auc, "vectors": _vector_auroc}, labels=True),
        Scorer(
            "average_precision",
            True,
            {"graph": _graph_average_precision, "vectors": _vector_average_precision},
            labels=True,
        ),
        Scorer("f1", True, {"vectors": _label_measure(metrics.micro_f1, False)}, labels=True),
    ]
    for name, (function, takes_values, higher) in metrics.MULTILABEL_METRICS.items():
        scorers.append(
            Scorer(name, higher, {"vectors": _label_measure(function, takes_values)}, labels=True)
        )
    return {s.name: s for s in scorers}


#: Every named score.
SCORERS: dict[str, Scorer] = _registry()
#: The scores a search with sample weights computes, as weighted means over the test rows.
WEIGHTED_SCORES = tuple(name for name, s in SCORERS.items() if s.weighted)


def available_scores(form: str, Y: Any = None) -> tuple[str, ...]:
    """The names of the scores of outputs in ``form`` ("vectors", "gram" or "graph"); for
    vectors, those needing 0/1 vectors only if ``Y`` is None or holds only 0 and 1."""
    labels = Y is None or _is_labels(Y)
    return tuple(
        name
        for name, s in SCORERS.items()
        if form in s.by_form and (labels or not (s.labels and form == "vectors"))
    )


def _is_labels(Y: Any) -> bool:
    return Y is not None and bool(np.isin(np.asarray(Y), (0, 1)).all())


@dataclass(frozen=True)
class _Callable:
    """A user's ``scorer(estimator, X_test, y_test)``: y_test is Y[test] for vectors, else
    the :class:`FoldTruth`."""

    function: Callable[..., Any]
    name: str
    greater_is_better: bool = True

    def __call__(self, estimator: Any, X_test: Any, truth: FoldTruth, form: str) -> float:
        if truth.sample_weight is not None:
            raise DataError(
                f"scorer {self.name!r} is called without the sample weights: score a "
                f"weighted search with {list(WEIGHTED_SCORES)}"
            )
        value = self.function(estimator, X_test, truth.Y if form == "vectors" else truth)
        try:
            return float(value)
        except (TypeError, ValueError):
            raise DataError(
                f"scorer {self.name!r} must return a number: got {type(value).__name__}"
            ) from None


BoundScorer = Scorer | _Callable
"""A named or callable scorer, called as ``scorer(estimator, X_test, truth, form)``."""


def check_scoring(scoring: Any, form: str, Y: Any = None) -> dict[str, BoundScorer]:
    """The scorers asked for, by name, checked against the outputs' ``form`` (and, for the
    0/1 scores, the output vectors ``Y``).

    ``scoring``: None (:data:`DEFAULT_SCORES` of the form), a name, a callable (named
    "score"), a list of names and callables (a callable by its ``__name__``), or a mapping
    {name: name or callable}. Raises :class:`DataError` naming the scores available for the
    form when one does not apply, or when two share a name.
    """
    if scoring is None:
        scoring = DEFAULT_SCORES[form]
    if isinstance(scoring, str) or callable(scoring):
        items = [("score" if callable(scoring) else scoring, scoring)]
    elif isinstance(scoring, Mapping):
        items = list(scoring.items())
    elif isinstance(scoring, Sequence):
        items = [(s if isinstance(s, str) else getattr(s, "__name__", "score"), s) for s in scoring]
    else:
        raise DataError(
            f"scoring must be a name, a callable, a list or a dict of them: got {scoring!r}"
        )
    if not items:
        raise DataError(f"scoring is empty; use some of {list(available_scores(form, Y))}")
    out: dict[str, BoundScorer] = {}
    for key, spec in items:
        if not isinstance(key, str):
            raise DataError(f"score names must be strings: got {key!r}")
        if key in out:
            raise DataError(f"two scores are named {key!r}: pass a dict {{name: scorer}}")
        out[key] = _bind(key, spec, form, Y)
    return out


def _bind(key: str, spec: Any, form: str, Y: Any) -> BoundScorer:
    if callable(spec) and not isinstance(spec, Scorer):
        return _Callable(spec, key)
    scorer = SCORERS.get(spec) if isinstance(spec, str) else None
    allowed = list(available_scores(form, Y))
    if scorer is None or form not in scorer.by_form:
        what = "unknown" if scorer is None else f"not available for {FORM_NAMES[form]} outputs"
        raise DataError(f"scoring {spec!r} is {what}; use some of {allowed} or a callable")
    if scorer.labels and form == "vectors" and not _is_labels(Y):
        raise DataError(
            f"scoring {spec!r} ranks or thresholds 0/1 outputs (labels or links), but Y holds "
            "other values; use err_phi, err_y or r2, or a callable"
        )
    return scorer
