"""Multi-label classification with any okcore regressor: label rows as outputs under the
linear output kernel, scores in [0, 1], a decision threshold chosen by inner cross-validation
on the training rows only, and 0/1 label rows as predictions.

With the linear kernel on 0/1 label rows y_i, a model's prediction is F(x) = W^F(x) Y
(paper eq. 5-6), the W^F-weighted average of the training label rows:
- trees and forests: W^F rows are non-negative and sum to 1, so F(x) is a vector of label
  frequencies in [0, 1] (a leaf's share of genes carrying each label);
- OKBoost and boosted KRR: W^F rows sum to 1 but have negative entries (the shrunk stages
  correct each other), so F(x) leaves [0, 1] by a few hundredths.
Two maps to [0, 1] are offered (``scores``):
- "clip": min(max(F, 0), 1). Identity for trees and forests. For boosting, scores beyond
  the bounds tie at 0 or 1, which costs ranking measures a little where a relevant and an
  irrelevant label tie.
- "sigmoid": sigma(a F + b), one (a, b) for all labels fitted by logistic regression on
  out-of-fold scores of the training rows (Platt 1999). Strictly increasing, so every
  ranking measure equals that of the raw scores, and the scores are calibrated probabilities
  on the training distribution.
Measured on yeast (docs/RESULTS.md, section 8.2): clipping OKBoost's scores raised the
ranking loss by 0.0003 (0.1703 against 0.1700 for the raw or sigmoid scores), and the
thresholded measures were within 0.005 of each other. The default is "sigmoid": the scores
are then probabilities calibrated on out-of-fold scores, and the threshold is chosen on that
calibrated scale, where the window below has one meaning for every model.

The threshold rule (:func:`choose_thresholds`): on the out-of-fold scores of the training
rows, the measure is evaluated at every threshold of :data:`THRESHOLD_GRID`, averaged over a
window of +-``window`` around each, and the threshold with the best window mean is kept (ties:
nearest 0.5). Near its best a measure such as micro-F1 is flat over a few hundredths, and the
raw arg max wanders across that flat top with the folds' and the model's seeds (moving the
Hamming loss by up to 0.017 on yeast); the window mean picks the centre of the top instead.

With no estimator named, the model is the average (:class:`~okcore.AveragedRegressor`) of
OK3-et + OKBoost (300 rounds of extra-trees splits, learning rate 0.05, 10 splits, sqrt(p)
candidate features, row subsampling 0.8) and OK3 extra-trees (300 trees, sqrt(p) candidate
features, no bootstrap): averaging a boosted model with a forest ranked labels better out of
fold than any single model on the yeast training genes (docs/results/yeast-multilabel.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import metrics
from ._validation import (
    Interval,
    Options,
    check_inputs,
    check_is_fitted,
    check_matrix,
    validate_params,
)
from .averaging import AveragedRegressor
from .boosting import OKBoostRegressor
from .callbacks import check_callback, part_callback
from .exceptions import DataError
from .meta import MetaEstimator, clone
from .model_selection import kfold
from .trees.forest import OK3ForestRegressor

THRESHOLD_METRICS = ("micro_f1", "macro_f1", "hamming_loss", "subset_accuracy")
"""The decision measures a threshold can be chosen for (``MultiLabelClassifier(metric=...)``;
the losses are minimised, the others maximised)."""
THRESHOLD_GRID = np.round(np.linspace(0.01, 0.99, 99), 2)
"""The candidate thresholds of the inner search: 0.01, 0.02, ..., 0.99."""


def fit_sigmoid(raw: np.ndarray, labels: np.ndarray, n_iter: int = 50) -> tuple[float, float]:
    """(a, b) of the logistic map sigma(a s + b) maximising the likelihood of the 0/1
    ``labels`` given the scores ``raw`` (Platt scaling), by Newton's method with a tiny ridge
    on a for separable data. O(n_iter n)."""
    s, t = np.asarray(raw, float).ravel(), np.asarray(labels, float).ravel()
    a, b = 4.0, -2.0  # sigma(4 s - 2): 0.5 at s = 0.5, a sensible start for 0/1 targets
    for _ in range(n_iter):
        p = 1.0 / (1.0 + np.exp(-(a * s + b)))
        g = np.array([np.dot(p - t, s) + 1e-6 * a, np.sum(p - t)])
        w = p * (1 - p)
        H = np.array([[np.dot(w, s * s) + 1e-6, np.dot(w, s)], [np.dot(w, s), w.sum() + 1e-12]])
        step = np.linalg.solve(H, g)
        a, b = a - step[0], b - step[1]
        if np.abs(step).max() < 1e-10:
            break
    return float(a), float(b)


def _decision_score(metric: str, Y: np.ndarray, P: np.ndarray) -> float:
    """The chosen measure of decisions P, oriented so that higher is better."""
    function, _, higher = metrics.MULTILABEL_METRICS[metric]
    value = function(Y, P)
    return value if higher else -value


def window_means(values: Any, grid: np.ndarray, window: float) -> np.ndarray:
    """Mean of ``values`` (one per grid threshold) over the thresholds within +-``window`` of
    each (fewer at the ends of the grid); ``window`` 0 returns the values."""
    v = np.asarray(values, dtype=np.float64)
    if window <= 0:
        return v
    near = np.abs(grid[:, None] - grid[None, :]) <= window + 1e-9
    return (near @ v) / near.sum(axis=1)


def choose_thresholds(
    Y: np.ndarray,
    scores: np.ndarray,
    *,
    metric: str = "micro_f1",
    per_label: bool = False,
    window: float = 0.0,
) -> np.ndarray:
    """Thresholds (L,) maximising ``metric`` of the decisions scores >= t on (Y, scores).

    Global: the t of :data:`THRESHOLD_GRID` whose measure, averaged over the grid points
    within +-``window`` of t, is best (ties: the one nearest 0.5; ``window`` 0: the plain
    arg max). Per label:
    from the global t, two sweeps of coordinate ascent, each label's t over the grid with the
    others fixed (exact for measures that add over labels: macro-F1, Hamming loss).
    O(G Q L) global, O(2 G Q L^2) per label, G = 99 candidates.
    """
    n_labels = Y.shape[1]
    grid = THRESHOLD_GRID
    values = window_means([_decision_score(metric, Y, scores >= t) for t in grid], grid, window)
    best = max(range(len(grid)), key=lambda i: (values[i], -abs(grid[i] - 0.5)))
    thresholds = np.full(n_labels, grid[best])
    if not per_label:
        return thresholds
    for _ in range(2):
        for label in range(n_labels):
            trial = thresholds.copy()
            found = []
            for t in grid:
                trial[label] = t
                found.append(_decision_score(metric, Y, scores >= trial))
            current = _decision_score(metric, Y, scores >= thresholds)
            i = int(np.argmax(found))
            if found[i] > current:
                thresholds[label] = grid[i]
    return thresholds


class MultiLabelClassifier(MetaEstimator):
    """Label sets from an okcore regressor fitted on 0/1 label rows with the linear kernel.

    Parameters
    ----------
    estimator : okcore estimator or None
        Any okcore regressor (OKBoostRegressor, OK3Regressor, OK3ForestRegressor,
        KRRBoostRegressor); None = the average of OK3-et + OKBoost and OK3 extra-trees
        (module docstring), seeded by ``random_state``. Cloned, never fitted in place.
    scores : {"sigmoid", "clip"}
        The map of F(x) = W^F(x) Y to [0, 1] (module docstring): a logistic map fitted on
        out-of-fold scores (calibrated probabilities; strictly increasing: rankings of the
        raw scores kept), or clipping.
    threshold : "cv" or float in (0, 1)
        "cv": chosen by ``n_splits``-fold cross-validation on the training rows given to
        :meth:`fit` (out-of-fold scores of every row, then :func:`choose_thresholds`); a
        float: that threshold for every label.
    per_label : bool
        One threshold per label (coordinate ascent) instead of one for all.
    metric : {"micro_f1", "macro_f1", "hamming_loss", "subset_accuracy"}
        What the threshold maximises (losses are minimised).
    threshold_window : float in [0, 0.5)
        The threshold maximises the measure averaged over +-``threshold_window`` around it
        (module docstring), so that it does not wander with the seeds; 0 = the plain arg max.
    n_splits : int >= 2
        Folds of the inner cross-validation.
    random_state : None or int
        Seeds the inner folds, and the default estimator when none is named (a named
        estimator keeps its own ``random_state``).

    Fitted attributes: ``estimator_`` (fitted on all rows), ``thresholds_`` (L,),
    ``sigmoid_`` ((a, b) or None), ``oof_scores_`` ((N, L) out-of-fold scores in [0, 1], or
    None with a fixed threshold and "clip"), ``n_labels_``, ``resolved_params_`` (the final
    estimator's: what its fit made of its "auto" values).
    Cost: n_splits + 1 fits of the estimator when anything is chosen by CV, else one.
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "scores": [Options(("clip", "sigmoid"))],
        "threshold": [Options(("cv",)), Interval(float, 0.0, 1.0, "neither")],
        "per_label": [Options((True, False))],
        "metric": [Options(THRESHOLD_METRICS)],
        "threshold_window": [Interval(float, 0.0, 0.5, "left")],
        "n_splits": [Interval(int, 2, None, "left")],
        "random_state": [Options((None,)), Interval(int, 0, None, "left")],
    }

    def __init__(
        self,
        estimator: Any = None,
        *,
        scores: str = "sigmoid",
        threshold: Any = "cv",
        per_label: bool = False,
        metric: str = "micro_f1",
        threshold_window: float = 0.05,
        n_splits: int = 3,
        random_state: Any = 0,
    ) -> None:
        self.estimator = estimator
        self.scores = scores
        self.threshold = threshold
        self.per_label = per_label
        self.metric = metric
        self.threshold_window = threshold_window
        self.n_splits = n_splits
        self.random_state = random_state

    def _fresh_estimator(self) -> Any:
        if self.estimator is not None:
            return clone(self.estimator)
        seed = self.random_state
        boost = OKBoostRegressor(
            splitter="random", max_features="sqrt", n_estimators=300, learning_rate=0.05,
            max_splits=10, subsample=0.8, random_state=seed,
        )  # fmt: skip
        forest = OK3ForestRegressor(
            n_estimators=300, splitter="random", bootstrap=False, max_features="sqrt",
            random_state=seed,
        )  # fmt: skip
        return AveragedRegressor([boost, forest])

    def fit(self, X: Any, Y: Any, *, callback: Any = None) -> MultiLabelClassifier:
        """Fit on inputs X (N, p) and 0/1 label rows Y (N, L). Only these rows are used: the
        inner folds that choose the threshold (and the sigmoid) split them.
        ``callback(FitProgress)`` hears every inner fit's phases and trees, in the order
        run, with ``part`` "fold 1" ... "fold K" (the inner cross-validation's fits) then
        "final"; returning True stops the fit that reports. The estimator must then take a
        ``callback`` (every okcore estimator the service names does)."""
        validate_params(self, self._parameter_constraints)
        check_callback(callback)
        X = check_inputs(X)
        labels = np.asarray(Y)
        if labels.ndim != 2 or not np.isin(labels, (0, 1)).all():
            raise DataError("Y must be a 2-D array of 0/1 label rows (samples x labels)")
        if X.shape[0] != labels.shape[0]:
            raise DataError(f"X has {X.shape[0]} rows but Y has {labels.shape[0]}")
        labels = labels.astype(np.float64)
        self.n_labels_ = labels.shape[1]
        self.sigmoid_: tuple[float, float] | None = None
        self.oof_scores_: np.ndarray | None = None
        if self.threshold == "cv" or self.scores == "sigmoid":
            raw = np.empty_like(labels)
            folds = kfold(X.shape[0], self.n_splits, self.random_state)
            for k, (train, test) in enumerate(folds):
                heard = part_callback(callback, f"fold {k + 1}")
                model = self._fresh_estimator().fit(X[train], labels[train], **heard)
                raw[test] = self._raw(model, X[test])
            if self.scores == "sigmoid":
                self.sigmoid_ = fit_sigmoid(raw, labels)
            self.oof_scores_ = self._map(raw)
        if self.threshold == "cv":
            assert self.oof_scores_ is not None
            self.thresholds_ = choose_thresholds(
                labels.astype(bool), self.oof_scores_, metric=self.metric,
                per_label=self.per_label, window=float(self.threshold_window),
            )  # fmt: skip
        else:
            self.thresholds_ = np.full(self.n_labels_, float(self.threshold))
        self.estimator_ = self._fresh_estimator().fit(X, labels, **part_callback(callback, "final"))
        self.resolved_params_ = dict(getattr(self.estimator_, "resolved_params_", {}))
        return self

    @staticmethod
    def _raw(model: Any, X: Any) -> np.ndarray:
        """F(x) = W^F(x) Y as (Q, L), also for a single label."""
        F = np.asarray(model.predict(X), dtype=np.float64)
        return F.reshape(F.shape[0], -1)

    def _map(self, raw: np.ndarray) -> np.ndarray:
        if self.sigmoid_ is not None:
            a, b = self.sigmoid_
            return 1.0 / (1.0 + np.exp(-(a * raw + b)))
        return np.clip(raw, 0.0, 1.0)

    def decision_function(self, X: Any) -> np.ndarray:
        """The raw scores F(x) = W^F(x) Y, shape (Q, L). O(one prediction)."""
        check_is_fitted(self, "estimator_")
        return self._raw(self.estimator_, X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Label scores in [0, 1], shape (Q, L): the ``scores`` map of
        :meth:`decision_function`. Rank labels with it (ranking loss, one-error, coverage)."""
        return self._map(self.decision_function(X))

    def predict(self, X: Any) -> np.ndarray:
        """0/1 label rows (Q, L): label l is predicted when its score >= ``thresholds_[l]``."""
        return (self.predict_proba(X) >= self.thresholds_).astype(np.int8)

    def score(self, X: Any, Y: Any) -> float:
        """Micro-F1 of :meth:`predict` against the 0/1 label rows Y."""
        return metrics.micro_f1(check_matrix(Y, "Y"), self.predict(X))
