"""Multi-label classification with any okcore regressor: label rows as outputs under the
linear output kernel, scores in [0, 1], a decision threshold chosen by inner cross-validation
on the training rows only, and 0/1 label rows as predictions.

With the linear kernel on 0/1 label rows y_i, a model's prediction is F(x) = W^F(x) Y
(paper eq. 5-6), the W^F-weighted average of the training label rows:
- trees and forests: W^F rows are non-negative and sum to 1, so F(x) is a vector of label
  frequencies in [0, 1] (a leaf's share of genes carrying each label);
- OKBoost and boosted KRR: W^F rows sum to 1 but have negative entries (the shrunk stages
  correct each other), so F(x) leaves [0, 1] by a few hundredths.
Three maps to [0, 1] are offered (``scores``), each but "clip" fitted on out-of-fold scores
of the training rows by logistic regression (Platt 1999):
- "label_sigmoid" (default): sigma(a_l F_l + b_l), one (a_l, b_l) per label: each label's
  scores are calibrated probabilities of that label. Strictly increasing per label, so each
  label's ranking of the rows is kept; the ranking of labels within a row changes (a
  probability replaces a raw frequency), and on the four problems the rule was chosen on it
  ranked labels better than one map for all (lower ranking loss on each);
- "sigmoid": one (a, b) for all labels: every ranking measure equals the raw scores';
- "clip": min(max(F, 0), 1). Identity for trees and forests; boosting's scores beyond the
  bounds tie at 0 or 1.

The thresholds (:func:`choose_thresholds`), from the out-of-fold scores of the training
rows only, by one of two rules (``threshold_rule``):
- "calibrated" (the default with per-label probabilities): the thresholds decision theory
  gives for calibrated probabilities (:func:`calibrated_thresholds`): 0.5 for the Hamming
  loss; half the best micro-F1 for micro-F1; half each label's best F1 for macro-F1, per label;
  for "balanced" (micro-F1 + macro-F1 - 2 Hamming loss), per label, the plug-in maximiser
  of that sum (:func:`balanced_thresholds`), each threshold a weighted mean of the three
  measures' own by how much each measure moves with that label.
  The best value of a flat-topped curve moves far less with the rows than the place of its
  top: resampling the out-of-fold rows moved these thresholds 3-4 times less than the
  window rule's (docs/results/yeast-multilabel.md);
- "window": the measure at every threshold of :data:`THRESHOLD_GRID`, averaged over a
  window of +-``window`` around each, the best window mean kept (ties: nearest 0.5); per
  label for macro-F1 and the Hamming loss, label by label (they add over labels).
One label set cannot be best for every measure: micro-F1 wants labels above about half the
best F1 (0.3-0.35 on yeast), the Hamming loss 0.5, macro-F1 rare labels predicted more.
The default, ``metric="micro_f1"``, optimises micro-F1; ``metric="balanced"`` is a
compromise: frequent labels, which weigh in micro-F1 and the Hamming loss, between those two
measures' thresholds; rare labels, which count fully in macro-F1 only, near their own F1's
(not the default: its rare labels' thresholds moved with the seed, see
docs/results/yeast-multilabel.md). :meth:`MultiLabelClassifier.thresholds_for` gives another
measure's thresholds from the same fit.

With no estimator named, the candidates (:func:`default_candidates`) are kernel ridge
regression (RBF, width and penalty by its own inner CV; Nystrom above
:data:`KRR_EXACT_MAX_ROWS` rows), OK3-et + OKBoost (300 rounds of
extra-trees splits, learning rate 0.05, 10 splits, sqrt(p) candidate features, row
subsampling 0.8) and OK3 extra-trees (100 trees, sqrt(p) candidate features, no
bootstrap); the model is their weighted average (:class:`~okcore.AveragedRegressor`) with
the weights, in steps of 0.25, of least out-of-fold log-loss (:func:`stack_weights`): on the
problems the rule was chosen on, kernel ridge got weight 0.25-0.75 and the average ranked
labels better than the previous default's pair of models on all four, and better than kernel
ridge alone on three (0.0007 behind it on the fourth).
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np
from scipy.special import expit

from . import metrics
from ._validation import (
    MISSING_VALUE_MODELS,
    Interval,
    Options,
    axis_labels,
    check_inputs,
    check_is_fitted,
    check_matrix,
    check_sample_weight,
    record_feature_names,
    validate_params,
    weight_argument,
)
from .averaging import AveragedRegressor
from .boosting import OKBoostRegressor
from .budget import CpuCap, CpuClock, budgeted_fit
from .callbacks import check_callback, part_callback
from .cost import predicted_seconds, reports_rounds
from .defaults import (
    MULTILABEL_FOLDS,
    MULTILABEL_METRIC,
    MULTILABEL_SCORES,
    MULTILABEL_STACK_STEP,
    MULTILABEL_THRESHOLD,
)
from .exceptions import DataError
from .folds import kfold
from .kernel_models.ridge import KernelRidgeRegressor
from .meta import MetaEstimator, clone, members_accept
from .trees.binning import MAX_BINS
from .trees.forest import OK3ForestRegressor

THRESHOLD_METRICS = ("micro_f1", "macro_f1", "hamming_loss", "subset_accuracy", "balanced")
"""The decision measures a threshold can be chosen for (``MultiLabelClassifier(metric=...)``;
the losses are minimised, the others maximised; "balanced" is micro-F1 + macro-F1 - 2
Hamming loss, :func:`balanced_score`)."""
THRESHOLD_GRID = np.round(np.linspace(0.01, 0.99, 99), 2)
"""The candidate thresholds of the inner search: 0.01, 0.02, ..., 0.99."""
SCORE_MAPS = ("sigmoid", "label_sigmoid", "clip")
"""The maps of raw scores to [0, 1] (``MultiLabelClassifier(scores=...)``)."""
PER_LABEL_METRICS = ("macro_f1", "balanced")
"""The measures ``per_label="auto"`` gives one threshold per label (they weigh each label on
its own)."""
SEPARABLE_METRICS = ("macro_f1", "hamming_loss")
"""Measures that add over labels: their per-label thresholds are found label by label."""
KRR_EXACT_MAX_ROWS = 2000
"""Above this many training rows the default kernel ridge candidate is Nystrom with
:data:`KRR_COMPONENTS` landmarks instead of exact (a cost bound: exact kernel ridge with its
width search costs O(N^3) per width and fold)."""
KRR_COMPONENTS = 1000
BALANCED_WEIGHTS = (1.0, 1.0, 2.0)
"""The weights (micro-F1, macro-F1, Hamming loss) of ``metric="balanced"``: the thresholds
maximise w_mi micro-F1 + w_ma macro-F1 - w_h Hamming loss (:func:`balanced_score`). Chosen
among (1, a, b), a, b in {0.5, 1, 2}, on four multi-label problems other than the one it is
reported on, as the least largest shortfall from each measure's own thresholds
(docs/results/yeast-multilabel.md)."""


def fit_sigmoid(raw: np.ndarray, labels: np.ndarray, n_iter: int = 50) -> tuple[float, float]:
    """(a, b) of the logistic map sigma(a s + b) maximising the likelihood of the 0/1
    ``labels`` given the scores ``raw`` (Platt scaling), by Newton's method with a tiny ridge
    on a for separable data. O(n_iter n)."""
    s, t = np.asarray(raw, float).ravel(), np.asarray(labels, float).ravel()
    a, b = 4.0, -2.0  # sigma(4 s - 2): 0.5 at s = 0.5, a sensible start for 0/1 targets
    for _ in range(n_iter):
        p = expit(a * s + b)  # no overflow warning on separable data
        g = np.array([np.dot(p - t, s) + 1e-6 * a, np.sum(p - t)])
        w = p * (1 - p)
        H = np.array([[np.dot(w, s * s) + 1e-6, np.dot(w, s)], [np.dot(w, s), w.sum() + 1e-12]])
        step = np.linalg.solve(H, g)
        a, b = a - step[0], b - step[1]
        if np.abs(step).max() < 1e-10:
            break
    return float(a), float(b)


def fit_label_sigmoids(raw: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """(L, 2): one Platt map (a_l, b_l) per label column (:func:`fit_sigmoid` on each).
    O(n_iter N L)."""
    raw, labels = np.asarray(raw, float), np.asarray(labels, float)
    return np.array([fit_sigmoid(raw[:, j], labels[:, j]) for j in range(raw.shape[1])])


def apply_sigmoid(maps: Any, raw: np.ndarray) -> np.ndarray:
    """sigma(a F + b) of raw scores (Q, L): ``maps`` one (a, b) for every label, or (L, 2)
    one per label."""
    ab = np.asarray(maps, dtype=np.float64)
    return expit(ab[..., 0] * raw + ab[..., 1])


def score_map(raw: np.ndarray, labels: np.ndarray, scores: str) -> Any:
    """The fitted map of ``scores`` ("clip", "sigmoid", "label_sigmoid") on out-of-fold raw
    scores and their 0/1 labels: None for "clip", (a, b) or the (L, 2) array otherwise."""
    if scores == "sigmoid":
        return fit_sigmoid(raw, labels)
    if scores == "label_sigmoid":
        return fit_label_sigmoids(raw, labels)
    return None


def map_scores(maps: Any, raw: np.ndarray) -> np.ndarray:
    """Raw scores F(x) to [0, 1] with a map of :func:`score_map` (None: clipping)."""
    return np.clip(raw, 0.0, 1.0) if maps is None else apply_sigmoid(maps, raw)


def log_loss(labels: np.ndarray, P: np.ndarray) -> float:
    """Mean binary log-loss over every (row, label) entry, scores clipped to [1e-6, 1 - 1e-6]."""
    P = np.clip(P, 1e-6, 1.0 - 1e-6)
    return float(-np.mean(labels * np.log(P) + (1.0 - labels) * np.log1p(-P)))


def simplex_grid(k: int, step: float = MULTILABEL_STACK_STEP) -> np.ndarray:
    """Every weight vector of k non-negative multiples of ``step`` summing to 1, one per row
    (the single-model vectors first, then by decreasing largest weight)."""
    n = int(round(1.0 / step))
    rows = [c for c in itertools.product(range(n + 1), repeat=k) if sum(c) == n]
    rows.sort(key=lambda c: (-max(c), [-x for x in c]))
    return np.array(rows, dtype=np.float64) / n


def stack_weights(
    raws: list[np.ndarray], labels: np.ndarray, scores: str
) -> tuple[np.ndarray, float]:
    """(weights, out-of-fold log-loss) of the weighted average of candidates' out-of-fold
    raw scores ``raws`` (each (N, L)) with the least log-loss once mapped by ``scores`` (the
    map fitted on that average), over :func:`simplex_grid`; ties: the earlier row (fewer,
    more dominant members). O(G (N L + map fit)), G = C(k + 3, 3) grid rows for step 0.25."""
    best: tuple[float, np.ndarray] | None = None
    for w in simplex_grid(len(raws)):
        raw = sum(wi * r for wi, r in zip(w, raws, strict=True) if wi > 0)
        loss = log_loss(labels, map_scores(score_map(raw, labels, scores), raw))
        if best is None or loss < best[0] - 1e-12:
            best = (loss, w)
    assert best is not None
    return best[1], best[0]


def balanced_score(Y: Any, D: Any, weights: tuple[float, float, float] = BALANCED_WEIGHTS) -> float:
    """w_mi micro-F1 + w_ma macro-F1 - w_h Hamming loss of the 0/1 decisions D against the
    0/1 label rows Y (``metric="balanced"``; the default weights :data:`BALANCED_WEIGHTS`:
    micro-F1 + macro-F1 - 2 Hamming loss). O(Q L)."""
    w_micro, w_macro, w_hamming = weights
    return (
        w_micro * metrics.micro_f1(Y, D)
        + w_macro * metrics.macro_f1(Y, D)
        - w_hamming * metrics.hamming_loss(Y, D)
    )


def _decision_score(metric: str, Y: np.ndarray, P: np.ndarray) -> float:
    """The chosen measure of decisions P, oriented so that higher is better."""
    if metric == "balanced":
        return balanced_score(Y, P)
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


def _best(values: np.ndarray, grid: np.ndarray) -> float:
    """The grid point of the largest value (ties: the one nearest 0.5, then the lower)."""
    return float(grid[max(range(len(grid)), key=lambda i: (values[i], -abs(grid[i] - 0.5)))])


def label_curves(Y: np.ndarray, scores: np.ndarray, metric: str) -> np.ndarray:
    """(L, G): each label's own measure at every threshold of :data:`THRESHOLD_GRID`, oriented
    so that higher is better: its F1 (0 when the label is neither present nor predicted) for
    "macro_f1", minus its error rate for "hamming_loss". O(G N L)."""
    grid, Y = THRESHOLD_GRID, np.asarray(Y, dtype=bool)
    out = np.empty((Y.shape[1], len(grid)))
    for j in range(Y.shape[1]):
        decided = scores[:, j][:, None] >= grid[None, :]  # (N, G)
        truth = Y[:, j][:, None]
        if metric == "macro_f1":
            tp = (decided & truth).sum(axis=0)
            denominator = decided.sum(axis=0) + truth.sum()
            out[j] = np.where(denominator > 0, 2.0 * tp / np.maximum(denominator, 1), 0.0)
        else:
            out[j] = -(decided != truth).mean(axis=0)
    return out


def expected_counts(probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(L, G) expected true positives sum_i p_il [p_il >= t] and (L, G) numbers of decisions
    sum_i [p_il >= t] at every threshold t of :data:`THRESHOLD_GRID`, for calibrated
    probabilities (each p_il the chance that row i has label l). O(N L log N + G L)."""
    P = np.sort(np.asarray(probabilities, dtype=np.float64), axis=0)
    n_rows, n_labels = P.shape
    below = np.array([np.searchsorted(P[:, j], THRESHOLD_GRID) for j in range(n_labels)])
    mass = np.vstack([np.zeros(n_labels), np.cumsum(P, axis=0)])  # (N + 1, L)
    taken = mass[-1][:, None] - np.take_along_axis(mass.T, below, axis=1)
    return taken, (n_rows - below).astype(np.float64)


def balanced_thresholds(
    probabilities: np.ndarray,
    start: np.ndarray,
    weights: tuple[float, float, float] = BALANCED_WEIGHTS,
    max_sweeps: int = 100,
) -> np.ndarray:
    """Per-label thresholds (L,) for ``metric="balanced"`` from calibrated probabilities
    (N, L): the plug-in rule for w_mi micro-F1 + w_ma macro-F1 - w_h Hamming loss.

    1. The decisions: each measure with its counts replaced by their expectations under the
       probabilities (true positives sum p_il over the decided entries, positives sum p_il:
       the plug-in estimate of the F-measure literature, Nan et al. 2012), and the weighted
       sum maximised over per-label thresholds of :data:`THRESHOLD_GRID` by coordinate
       ascent from ``start`` (sweeps over the labels until none moves; each step exact, as
       the measure of one label's threshold is a function of its counts and the others'
       totals).
    2. The thresholds: deciding one more entry of probability p changes the measure by
       2 [k_mi (p - F/2) + k_ma,l (p - F_l/2) + k_h (p - 1/2)], with k_mi = w_mi / (D + P),
       k_ma,l = w_ma / (L (D_l + P_l)), k_h = w_h / (N L) (D, P: decided and expected
       positive entries, in all and of label l; F, F_l: micro-F1 and label l's F1 at the
       decisions). It pays from the break-even probability
       (k_mi F + k_ma,l F_l + k_h) / (2 (k_mi + k_ma,l + k_h)), a weighted mean of the
       measures' own thresholds for calibrated probabilities (F/2, F_l/2: Lipton, Elkan &
       Narayanaswamy 2014; 1/2 for the Hamming loss), weighted by how much each measure
       moves with one entry of label l: rare labels (small D_l + P_l) lean to their F1's
       threshold, frequent ones to micro-F1's and the Hamming loss's. Each label's
       threshold is the grid point nearest its break-even among those giving the decisions
       of step 1 on these rows (they all do equally well here; the break-even places the
       threshold where a new row's decision should change, so that it does not sit at an
       arbitrary end of a gap between probabilities and move with the seed).
    With ``weights`` (1, 0, 0) the thresholds are half the best expected micro-F1, with
    (0, 1, 0) half each label's (within a grid step), with (0, 0, 1) 0.5.
    O(N L log N + S L (G + L)), S sweeps (a few; 0.03 CPU s on 1,500 x 14).
    """
    w_micro, w_macro, w_hamming = weights
    P = np.asarray(probabilities, dtype=np.float64)
    n_rows, n_labels = P.shape
    tp, decided = expected_counts(P)  # (L, G) each
    positives = P.sum(axis=0)  # (L,)
    tiny = 1e-12

    at = np.searchsorted(THRESHOLD_GRID, np.round(np.asarray(start, dtype=np.float64), 2))
    at = np.clip(at, 0, len(THRESHOLD_GRID) - 1)
    rows = np.arange(n_labels)
    for _ in range(max_sweeps):
        moved = False
        for j in range(n_labels):  # label j's threshold over the grid, the others fixed
            cur_tp, cur_dec = tp[rows, at], decided[rows, at]
            f1 = 2.0 * cur_tp / np.maximum(cur_dec + positives, tiny)
            tp_all = cur_tp.sum() - cur_tp[j] + tp[j]  # (G,)
            dec_all = cur_dec.sum() - cur_dec[j] + decided[j]
            f1_j = 2.0 * tp[j] / np.maximum(decided[j] + positives[j], tiny)
            values = (
                w_micro * 2.0 * tp_all / np.maximum(dec_all + positives.sum(), tiny)
                + w_macro * (f1.sum() - f1[j] + f1_j) / n_labels
                - w_hamming * (dec_all + positives.sum() - 2.0 * tp_all) / (n_rows * n_labels)
            )
            best = int(np.argmax(values))
            if values[best] > values[at[j]] + tiny:
                at[j], moved = best, True
        if not moved:
            break
    cur_tp, cur_dec = tp[rows, at], decided[rows, at]
    scale = cur_dec.sum() + positives.sum()
    micro = 2.0 * cur_tp.sum() / max(scale, tiny)
    f1 = 2.0 * cur_tp / np.maximum(cur_dec + positives, tiny)
    k_micro = w_micro / max(scale, tiny)
    k_macro = w_macro / (n_labels * np.maximum(cur_dec + positives, tiny))
    k_hamming = w_hamming / (n_rows * n_labels)
    total = np.maximum(k_micro + k_macro + k_hamming, tiny)
    even = (k_micro * micro + k_macro * f1 + k_hamming) / (2.0 * total)
    out = np.empty(n_labels)
    for j in range(n_labels):
        same = THRESHOLD_GRID[decided[j] == cur_dec[j]]  # the grid points of these decisions
        out[j] = same[np.argmin(np.abs(same - even[j]))]
    return out


def thresholds_per_label(metric: str, per_label: Any) -> bool:
    """Whether ``MultiLabelClassifier(metric=..., per_label=...)`` chooses one threshold per
    label: ``per_label`` itself, or for "auto" the measures of :data:`PER_LABEL_METRICS`."""
    return metric in PER_LABEL_METRICS if per_label == "auto" else bool(per_label)


def calibrated_thresholds(
    Y: np.ndarray, probabilities: np.ndarray, metric: str, per_label: bool
) -> np.ndarray | None:
    """The thresholds decision theory gives for calibrated probabilities (L,), or None where
    it gives none (subset accuracy; macro-F1 and "balanced" with one threshold for all
    labels):
    - Hamming loss: 0.5 for every label (predict a label when it is more likely than not);
    - micro-F1: F*/2 for every label, F* the best micro-F1 over :data:`THRESHOLD_GRID` on
      (Y, probabilities); macro-F1 per label: F*_l / 2 with label l's own best F1. The
      threshold that maximises F1 on calibrated probabilities is half the best F1 (Lipton,
      Elkan & Narayanaswamy 2014, theorem 1). The best value of a flat-topped curve moves
      far less with the rows than the place of its top, so these thresholds hardly move with
      the seed. Rounded to 0.01;
    - "balanced" per label: :func:`balanced_thresholds` from the micro-F1 thresholds.
    O(G N L).
    """
    n_labels = Y.shape[1]
    if metric == "hamming_loss":
        return np.full(n_labels, 0.5)
    if metric == "micro_f1" or (metric == "balanced" and per_label):
        best = max(metrics.micro_f1(Y, probabilities >= t) for t in THRESHOLD_GRID)
        micro = np.full(n_labels, _half_best_f1(best))
        return micro if metric == "micro_f1" else balanced_thresholds(probabilities, micro)
    if metric == "macro_f1" and per_label:
        return _half_best_f1(label_curves(Y, probabilities, "macro_f1").max(axis=1))
    return None


def _half_best_f1(best: Any) -> np.ndarray:
    """The F1 thresholds of calibrated probabilities: half the best F1, rounded to 0.01 and
    at least the grid's lowest threshold; 0.5 where the best F1 is 0 (a label on no training
    row: no threshold gives it an F1 above 0, and "half of 0" would predict it for every
    row, so it takes the threshold the other measures want)."""
    best = np.asarray(best, dtype=np.float64)
    half = np.maximum(np.round(best / 2, 2), THRESHOLD_GRID[0])
    return np.where(best > 0, half, 0.5)


def choose_thresholds(
    Y: np.ndarray,
    scores: np.ndarray,
    *,
    metric: str = "micro_f1",
    per_label: bool = False,
    window: float = 0.0,
    rule: str = "window",
) -> np.ndarray:
    """Thresholds (L,) maximising ``metric`` of the decisions scores >= t on (Y, scores).

    ``rule="calibrated"`` (scores that are calibrated probabilities): the thresholds of
    :func:`calibrated_thresholds` where it gives them, else the window rule below.

    Global: the t of :data:`THRESHOLD_GRID` whose measure, averaged over the grid points
    within +-``window`` of t, is best (ties: the one nearest 0.5; ``window`` 0: the plain
    arg max). Per label, for a measure that adds over labels (:data:`SEPARABLE_METRICS`:
    macro-F1, Hamming loss): each label's own measure (:func:`label_curves`) with the same
    window rule, label by label (exact: the labels do not interact). Per label for the other
    measures: from the global t, two sweeps of coordinate ascent, each label's t over the grid
    with the others fixed.
    O(G Q L) global and per label for separable measures, O(2 G Q L^2) by coordinate ascent,
    G = 99 candidates.
    """
    n_labels = Y.shape[1]
    grid = THRESHOLD_GRID
    if rule == "calibrated":
        calibrated = calibrated_thresholds(Y, scores, metric, per_label)
        if calibrated is not None:
            return calibrated
    if per_label and metric in SEPARABLE_METRICS:
        curves = label_curves(Y, scores, metric)
        return np.array([_best(window_means(c, grid, window), grid) for c in curves])
    values = window_means([_decision_score(metric, Y, scores >= t) for t in grid], grid, window)
    thresholds = np.full(n_labels, _best(values, grid))
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


def check_label_rows(Y: Any) -> np.ndarray:
    """``Y`` as an array of 0/1 label rows (samples x labels: numbers or booleans), or a
    :class:`DataError` naming what is not: its shape, text entries, or the first entry that
    is not 0 or 1 (a missing label included). O(N L)."""
    labels = np.asarray(Y)
    if labels.ndim != 2:
        single = " (one label: pass Y.reshape(-1, 1))" if labels.ndim == 1 else ""
        raise DataError(
            f"Y must be a 2-D array of 0/1 label rows (samples x labels): got shape "
            f"{labels.shape}{single}"
        )
    if labels.dtype.kind in "USO" and not all(
        isinstance(v, int | float | np.number | bool | np.bool_) for v in labels.flat
    ):
        raise DataError(
            f"Y must be 0/1 label rows of numbers or booleans: got text entries such as "
            f"{str(labels.flat[0])!r}; convert them first, e.g. Y.astype(int)"
        )
    bad = np.argwhere(~np.isin(labels, (0, 1)))
    if len(bad):
        row, col = (int(i) for i in bad[0])
        raise DataError(
            f"Y must be 0/1 label rows: Y[{row}, {col}] is {labels[row, col]} ({len(bad)} "
            "entries are not 0 or 1); a label is 1 where the sample has it, 0 where not "
            "(fill in or drop the rows of a missing label)"
        )
    return labels


def label_names(Y: Any) -> list[str] | None:
    """The label names of label rows ``Y``: a pandas DataFrame's column names as strings,
    None for anything else and for pandas' default 0..L-1 columns (no names), as okcore
    reads the vertex labels of a bipartite network's DataFrames
    (:func:`okcore._validation.axis_labels`)."""
    names = axis_labels(Y, "columns")
    return None if names is None else [str(name) for name in names]


def refuse_regressor_keywords(eval_set: Any, output_weight: Any) -> None:
    """A :class:`DataError` for OKBoostRegressor's fit keywords ``eval_set`` and
    ``output_weight``, which :meth:`MultiLabelClassifier.fit` takes only to say why it
    cannot use them and what to do instead."""
    if eval_set is not None:
        raise DataError(
            "MultiLabelClassifier takes no eval_set: its stacking weights, score map and "
            "thresholds are chosen by n_splits-fold cross-validation on the training rows, "
            "each row validated once. To stop a boosted candidate early, name it with early "
            "stopping on rows of its own, e.g. "
            "MultiLabelClassifier(OKBoostRegressor(n_iter_no_change=10)), which holds out "
            "validation_fraction of each fit's rows; to measure the model on your validation "
            "rows, fit without them and score its predictions, e.g. "
            "model.score(X_val, Y_val) or okcore.metrics"
        )
    if output_weight is not None:
        raise DataError(
            "MultiLabelClassifier takes no output_weight: its score maps, thresholds and "
            "measures treat every label alike, and its default candidates (kernel ridge, "
            "extra-trees) cannot weigh labels. To leave a label out, drop its column from Y; "
            "to weigh training rows, pass sample_weight; to favour a label's recall or "
            "precision, set its entry of thresholds_ after the fit (lower or higher)"
        )


def default_candidates(random_state: Any, n_rows: int = 0, weighted: bool = False) -> list[Any]:
    """The candidate models of ``MultiLabelClassifier()`` (module docstring), seeded by
    ``random_state``: kernel ridge with its width and penalty by inner CV (exact up to
    :data:`KRR_EXACT_MAX_ROWS` training rows ``n_rows``, else Nystrom), OK3-et + OKBoost and
    OK3 extra-trees; ``weighted`` (a fit with ``sample_weight``): the extra-trees search
    histograms of :data:`~okcore.trees.binning.MAX_BINS` bins, the search weighted forests
    need (the exact one is refused for a feature of more distinct values)."""
    components = None if n_rows <= KRR_EXACT_MAX_ROWS else KRR_COMPONENTS
    return [
        KernelRidgeRegressor(gamma="cv", n_components=components, random_state=random_state),
        OKBoostRegressor(
            splitter="random", max_features="sqrt", n_estimators=300, learning_rate=0.05,
            max_splits=10, subsample=0.8, random_state=random_state,
        ),
        OK3ForestRegressor(
            n_estimators=100, splitter="random", bootstrap=False, max_features="sqrt",
            max_bins=MAX_BINS if weighted else None, random_state=random_state,
        ),
    ]  # fmt: skip


class CandidateBudget(CpuClock):
    """The CPU budget of one :meth:`MultiLabelClassifier.fit` over its candidates' fits
    (``max_cpu_seconds``; :mod:`okcore.budget`'s process time, every thread of the process,
    from when it is made).

    The candidates have priority in their order. Before each fit, the budget left
    (``seconds`` minus the CPU spent) is reduced by the expected cost of the fits still to
    come of the candidates before this one (their inner fold fits and their final fits);
    expected costs are the measured CPU of the candidate's fits so far, scaled by the rows,
    or before its first fit its cost model's (:meth:`~okcore.base.OKEstimator.estimate_cost`;
    0 for an estimator without one), as :mod:`okcore.auto.engine` predicts its fits.

    - A boosted candidate (one with ``staged_predict``: it hears its callback after every
      round) is stopped at the first round after its share of what is left: the rest over
      its fits still to come, by their rows (a :class:`~okcore.budget.CpuCap`; its status
      says ``capped``).
    - A candidate whose fits cannot be stopped (kernel ridge, forests) starts an inner fit
      only while its own expected cost (this fit, its later inner fits and its final fit)
      fits what is left; otherwise it is skipped (weight 0, the reason in its status). Its
      final fit always runs (its weight was chosen on its inner fits).
    - The last candidate not skipped is never skipped (a model is always returned).

    So the fit exceeds the budget by at most one round per boosted fit plus the
    misprediction of the fits that cannot be stopped; the tests hold ``cpu_seconds_`` to
    (1 + BUDGET_TOLERANCE) x budget + BUDGET_SLACK_SECONDS, the automatic choice's bound.
    """

    def __init__(
        self,
        seconds: float,
        candidates: list[Any],
        shape: tuple[int, int, int],
        n_splits: int,
        inner: bool,
    ) -> None:
        super().__init__()
        n_rows, n_features, n_labels = shape
        self.seconds = float(seconds)
        self.n_rows, self.fold_rows = n_rows, n_rows - n_rows // n_splits
        self.folds_left = [n_splits if inner else 0] * len(candidates)
        self.stoppable = [reports_rounds(c) for c in candidates]
        self.predicted = [
            {
                final: predicted_seconds(c, rows, n_features, kernel="linear", n_outputs=n_labels)
                for final, rows in ((False, self.fold_rows), (True, n_rows))
            }
            for c in candidates
        ]
        self.measured: list[list[float]] = [[] for _ in candidates]  # CPU per fold row
        self.status = ["fitted"] * len(candidates)
        self.caps: list[list[CpuCap]] = [[] for _ in candidates]  # the boosted fits' caps
        self.final_left = [True] * len(candidates)  # its final fit is still to come

    def live(self) -> list[bool]:
        """Whether each candidate is fitted (not skipped)."""
        return [not status.startswith("skipped") for status in self.status]

    def _expected(self, j: int, final: bool) -> float:
        """Expected CPU of one fit of candidate j: measured per row times its rows, or the
        cost model's before its first fit."""
        if self.measured[j]:
            return float(np.mean(self.measured[j])) * (self.n_rows if final else self.fold_rows)
        return self.predicted[j][final]

    def _to_come(self, j: int) -> float:
        """Expected CPU of candidate j's fits still to come (inner and final)."""
        final = self._expected(j, True) if self.final_left[j] else 0.0
        return self.folds_left[j] * self._expected(j, False) + final

    def fit_kwargs(self, j: int, final: bool, heard: dict[str, Any], what: str) -> dict[str, Any]:
        """The fit keywords of candidate j's inner (``final`` False) or final fit: the
        caller's callback keywords ``heard``, and for a boosted candidate a stop at the
        first round after its share. Raises :class:`_OverBudget` for an inner fit that
        cannot be stopped and is not expected to fit what is left."""
        live = self.live()
        left = self.seconds - self.spent()
        left -= sum(self._to_come(i) for i in range(j) if live[i])
        if not self.stoppable[j]:
            need = self._to_come(j)
            if not final and need > left and sum(live) > 1:
                raise _OverBudget(
                    f"skipped before its {what} fit: its fits to come need about {need:.3g} s "
                    f"of CPU, over the {max(left, 0.0):.3g} s of the budget left to it"
                )
            return heard
        rows = (self.n_rows if final else self.fold_rows) / (
            self.folds_left[j] * self.fold_rows + self.n_rows
        )
        cap = CpuCap(self, self.spent() + max(left, 0.0) * rows, heard.get("callback"))
        self.caps[j].append(cap)
        return {"callback": cap}

    def done(self, j: int, final: bool, cpu: float) -> None:
        """Candidate j's fit took ``cpu`` seconds."""
        if final:
            self.final_left[j] = False
        else:
            self.folds_left[j] -= 1
            self.measured[j].append(cpu / self.fold_rows)

    def refit(self, kept: list[int]) -> None:
        """Only the candidates ``kept`` (non-zero weight) are fitted on all rows."""
        self.final_left = [j in kept for j in range(len(self.final_left))]

    def drop(self, j: int, reason: str) -> None:
        self.status[j] = reason

    def statuses(self) -> list[str]:
        """Each candidate's status: "fitted", "capped" (a boosted fit was stopped by the
        budget) or "skipped ..." and the reason."""
        return [
            "capped" if any(c.stopped for c in caps) and status == "fitted" else status
            for status, caps in zip(self.status, self.caps, strict=True)
        ]


class _OverBudget(Exception):
    """A fit that cannot be stopped was not started: the budget is spent (its reason)."""


class MultiLabelClassifier(MetaEstimator):
    """Label sets from okcore regressors fitted on 0/1 label rows with the linear kernel.

    Parameters
    ----------
    estimator : okcore estimator, list of estimators, or None
        Any okcore regressor (OKBoostRegressor, OK3Regressor, OK3ForestRegressor,
        KernelRidgeRegressor, KRRBoostRegressor), or a list of candidates: their weighted
        average with the weights of least out-of-fold log-loss (:func:`stack_weights`, steps
        of 0.25) is the model. None = the candidates of :func:`default_candidates` (module
        docstring), seeded by ``random_state``. Cloned, never fitted in place.
    scores : {"label_sigmoid", "sigmoid", "clip"}
        The map of F(x) = W^F(x) Y to [0, 1] (module docstring): one logistic map per label
        or one for all labels, fitted on out-of-fold scores (calibrated probabilities), or
        clipping.
    threshold : "cv" or float in (0, 1)
        "cv": chosen by ``n_splits``-fold cross-validation on the training rows given to
        :meth:`fit` (out-of-fold scores of every row, then :func:`choose_thresholds`); a
        float: that threshold for every label.
    per_label : bool or "auto"
        One threshold per label instead of one for all; "auto": per label for macro-F1 and
        "balanced" (:data:`PER_LABEL_METRICS`: measures that weigh each label on its own),
        one for all otherwise.
    metric : {"micro_f1", "macro_f1", "hamming_loss", "subset_accuracy", "balanced"}
        What the threshold maximises (losses are minimised). The default, micro-F1, keeps
        the labels whose calibrated probability is above about half the best F1; the Hamming
        loss wants about 0.5; macro-F1 wants rare labels predicted more (per-label
        thresholds). "balanced" maximises micro-F1 + macro-F1 - 2 Hamming loss
        (:func:`balanced_score`) with one threshold per label between the three measures'
        own (:func:`balanced_thresholds`): one label set that gives up little on each, but
        whose rare labels' thresholds move with the seed.
    threshold_rule : {"auto", "calibrated", "window"}
        How the thresholds follow from the out-of-fold scores (module docstring):
        "calibrated", the thresholds decision theory gives for calibrated probabilities
        (:func:`calibrated_thresholds`: 0.5 for the Hamming loss, half the best F1 for F1
        measures, :func:`balanced_thresholds` for "balanced"); "window", the best mean of
        the measure over a window of thresholds;
        "auto" = "calibrated" with ``scores="label_sigmoid"`` (each label's probabilities
        calibrated), else "window".
    threshold_window : float in [0, 0.5)
        The window rule's half-width: the threshold maximises the measure averaged over
        +-``threshold_window`` around it, so that it does not wander with the seeds; 0 = the
        plain arg max.
    n_splits : int >= 2
        Folds of the inner cross-validation.
    random_state : None or int
        Seeds the inner folds, and the default candidates when no estimator is named (a
        named estimator keeps its own ``random_state``).
    max_cpu_seconds : float > 0 or None
        A CPU budget (process time) for the whole fit (:class:`CandidateBudget`): boosted
        candidates stop at the first round after their share is spent, a candidate whose
        predicted cost does not fit what is left is skipped (weight 0, the reason in
        ``candidates_``); the fit stays within (1 + BUDGET_TOLERANCE) x budget +
        BUDGET_SLACK_SECONDS of it (:mod:`okcore.auto.engine`'s bound). None (default):
        no budget, every candidate fitted in full, so that a fit reproduces exactly under
        a seed on any machine (a capped fit depends on the machine's speed); the default's
        cost is bounded anyway (Nystrom kernel ridge above KRR_EXACT_MAX_ROWS rows).

    Fitted attributes: ``estimator_`` (fitted on all rows: the candidate, or the
    :class:`~okcore.AveragedRegressor` of the candidates of non-zero weight),
    ``weights_`` (one per candidate), ``oof_log_loss_`` (of the chosen average, None without
    inner CV), ``thresholds_`` (L,), ``sigmoid_`` ((a, b), (L, 2) per label, or None),
    ``oof_scores_`` ((N, L) out-of-fold scores in [0, 1], or None with a fixed threshold,
    "clip" and one candidate), ``n_labels_``, ``label_names_`` (a pandas DataFrame Y's
    column names as strings, in the order of the columns of ``predict``; None for an array
    or unnamed columns), ``resolved_params_`` (the final estimator's:
    what its fit made of its "auto" values), ``candidates_`` (one row per candidate:
    ``estimator``, ``weight``, ``status`` "fitted", "capped" or "skipped: " and why),
    ``cpu_seconds_`` (the fit's process time).
    Cost: n_splits fits of every candidate when anything is chosen by CV, plus one fit of
    each candidate of non-zero weight.
    """

    #: ``fit`` takes a ``sample_weight``, ``score`` (micro-F1) does not (metadata routing)
    routed_methods = ("fit",)
    _parameter_constraints: dict[str, list[Any]] = {
        "scores": [Options(SCORE_MAPS)],
        "threshold": [Options(("cv",)), Interval(float, 0.0, 1.0, "neither")],
        "per_label": [Options((True, False, "auto"))],
        "metric": [Options(THRESHOLD_METRICS)],
        "threshold_rule": [Options(("auto", "calibrated", "window"))],
        "threshold_window": [Interval(float, 0.0, 0.5, "left")],
        "n_splits": [Interval(int, 2, None, "left")],
        "random_state": [Options((None,)), Interval(int, 0, None, "left")],
        "max_cpu_seconds": [Options((None,)), Interval(float, 0.0, None, "neither")],
    }

    def __init__(
        self,
        estimator: Any = None,
        *,
        scores: str = MULTILABEL_SCORES,
        threshold: Any = MULTILABEL_THRESHOLD,
        per_label: Any = "auto",
        metric: str = MULTILABEL_METRIC,
        threshold_rule: str = "auto",
        threshold_window: float = 0.05,
        n_splits: int = MULTILABEL_FOLDS,
        random_state: Any = 0,
        max_cpu_seconds: float | None = None,
    ) -> None:
        self.estimator = estimator
        self.scores = scores
        self.threshold = threshold
        self.per_label = per_label
        self.metric = metric
        self.threshold_rule = threshold_rule
        self.threshold_window = threshold_window
        self.n_splits = n_splits
        self.random_state = random_state
        self.max_cpu_seconds = max_cpu_seconds

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's tags of a multi-label classifier: 2-D 0/1 label rows only (no
        single output, no multi-class targets), missing values and sparse inputs when every
        candidate takes them."""
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

        candidates = self.candidate_models(0)
        return Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True, multi_output=True, single_output=False),
            classifier_tags=ClassifierTags(multi_class=False, multi_label=True),
            input_tags=InputTags(
                sparse=members_accept(candidates, "sparse"),
                allow_nan=members_accept(candidates, "allow_nan"),
            ),
        )

    def candidate_models(self, n_rows: int, weighted: bool = False) -> list[Any]:
        """Fresh unfitted clones of the models :meth:`fit` fits on ``n_rows`` training rows
        (``weighted``: with ``sample_weight``): the default's candidates
        (:func:`default_candidates`, seeded by ``random_state``) when no estimator is named,
        else the named one(s)."""
        if self.estimator is None:
            return default_candidates(self.random_state, n_rows, weighted)
        if isinstance(self.estimator, list | tuple):
            if not self.estimator:
                raise DataError("estimator must be an estimator, a non-empty list of them or None")
            return [clone(e) for e in self.estimator]
        return [clone(self.estimator)]

    @budgeted_fit
    def fit(
        self,
        X: Any,
        Y: Any,
        sample_weight: Any = None,
        *,
        callback: Any = None,
        eval_set: Any = None,
        output_weight: Any = None,
    ) -> MultiLabelClassifier:
        """Fit on inputs X (N, p) and 0/1 label rows Y (N, L). Only these rows are used: the
        inner folds that choose the weights, the threshold and the score map split them.
        ``sample_weight`` (N,): every fit of a candidate takes its rows' weights (the inner
        folds split them, the rows of positive weight dealt out first, so that every inner
        fit has some: :func:`~okcore.folds.kfold`, a DataError with fewer than 2 such rows;
        weights without zeros split as no weights); the stacking weights, the score map and the threshold are chosen
        on the out-of-fold scores unweighted. The candidates must take weights (the
        default's forest then searches histograms of 255 bins, as weighted forests must; a
        named forest with ``max_bins=None`` asks for ``max_bins`` when a feature has more
        than 255 distinct values).
        ``callback(FitProgress)`` hears every inner fit's phases and trees, in the order
        run, with ``part`` "fold 1" ... "fold K" (the inner cross-validation's fits; "fold
        k, candidate j" with several candidates) then "final"; returning True stops the fit
        that reports. The candidates must then take a ``callback`` (every okcore estimator
        the service names does). ``eval_set`` and ``output_weight`` (OKBoostRegressor's)
        are taken only to be refused with what to do instead (:func:`refuse_regressor_keywords`).
        A pandas DataFrame Y keeps its column names as ``label_names_``."""
        refuse_regressor_keywords(eval_set, output_weight)
        started = time.process_time()
        validate_params(self, self._parameter_constraints)
        check_callback(callback)
        self._forget_fit()
        record_feature_names(self, X)  # the candidates are fitted on X's values
        X = check_inputs(
            X,
            owner=(
                "MultiLabelClassifier() (kernel ridge is among its default candidates)"
                if self.estimator is None
                else f"MultiLabelClassifier({type(self.estimator).__name__}(...))"
            ),
            allow_missing=members_accept(self.candidate_models(0), "allow_nan"),
            missing_fix=(
                "name one of "
                f"{MISSING_VALUE_MODELS} as its estimator "
                "(MultiLabelClassifier(OKBoostRegressor()))"
            ),
        )
        labels = check_label_rows(Y)
        if X.shape[0] != labels.shape[0]:
            raise DataError(f"X has {X.shape[0]} rows but Y has {labels.shape[0]}")
        labels = labels.astype(np.float64)
        weight = check_sample_weight(sample_weight, X.shape[0])
        candidates = self.candidate_models(X.shape[0], weight is not None)
        self.n_labels_ = labels.shape[1]
        self.label_names_ = label_names(Y)
        self.sigmoid_: Any = None
        self.oof_scores_: np.ndarray | None = None
        self.oof_log_loss_: float | None = None
        inner = self.threshold == "cv" or self.scores != "clip" or len(candidates) > 1
        budget = (
            None
            if self.max_cpu_seconds is None
            else CandidateBudget(
                self.max_cpu_seconds, candidates, (X.shape[0], X.shape[1], self.n_labels_),
                self.n_splits, inner,
            )
        )  # fmt: skip
        live = [True] * len(candidates) if budget is None else budget.live()
        self.weights_ = np.array(live, dtype=np.float64) / sum(live)
        if inner:
            raws = [np.empty_like(labels) for _ in candidates]
            folds = kfold(X.shape[0], self.n_splits, self.random_state, weight)
            for k, (train, test) in enumerate(folds):
                for j, (raw, candidate) in enumerate(zip(raws, candidates, strict=True)):
                    if not live[j]:
                        continue
                    part = f"fold {k + 1}" + (f", candidate {j + 1}" if len(raws) > 1 else "")
                    heard = part_callback(callback, part)
                    if budget is not None:
                        try:
                            heard = budget.fit_kwargs(j, False, heard, f"fold {k + 1}")
                        except _OverBudget as stop:
                            live[j] = False
                            budget.drop(j, str(stop))
                            continue
                    cpu = time.process_time()
                    model = clone(candidate).fit(
                        X[train], labels[train], **weight_argument(weight, train), **heard
                    )
                    if budget is not None:
                        budget.done(j, False, time.process_time() - cpu)
                    raw[test] = self._raw(model, X[test])
            fitted = [j for j in range(len(candidates)) if live[j]]
            weights, self.oof_log_loss_ = stack_weights(
                [raws[j] for j in fitted], labels, self.scores
            )
            self.weights_ = np.zeros(len(candidates))
            self.weights_[fitted] = weights
            mean: Any = sum(w * r for w, r in zip(self.weights_, raws, strict=True) if w > 0)
            self.sigmoid_ = score_map(mean, labels, self.scores)
            self.oof_scores_ = self._map(mean)
        self.oof_labels_ = None if self.oof_scores_ is None else labels.astype(bool)
        if self.threshold == "cv":
            self.thresholds_ = self.thresholds_for(self.metric, self.per_label)
        else:
            self.thresholds_ = np.full(self.n_labels_, float(self.threshold))
        members = []
        refitted = [int(j) for j in np.flatnonzero(self.weights_ > 0)]
        if budget is not None:
            budget.refit(refitted)
        for j in refitted:
            heard = part_callback(callback, "final")
            if budget is not None:
                heard = budget.fit_kwargs(j, True, heard, "final")
            cpu = time.process_time()
            members.append(clone(candidates[j]).fit(X, labels, **weight_argument(weight), **heard))
            if budget is not None:
                budget.done(j, True, time.process_time() - cpu)
        kept = [float(w) for w in self.weights_ if w > 0]
        self.estimator_ = (
            members[0] if len(members) == 1 else AveragedRegressor.from_fitted(members, kept)
        )
        self.cpu_seconds_ = time.process_time() - started
        statuses = ["fitted"] * len(candidates) if budget is None else budget.statuses()
        self.candidates_ = [
            {"estimator": type(c).__name__, "weight": float(w), "status": status}
            for c, w, status in zip(candidates, self.weights_, statuses, strict=True)
        ]
        self.resolved_params_ = dict(getattr(self.estimator_, "resolved_params_", {}))
        return self

    def thresholds_for(self, metric: str, per_label: Any = "auto") -> np.ndarray:
        """The thresholds (L,) that ``threshold="cv"`` would choose for ``metric`` and
        ``per_label`` (same rule, same window) from this fit's out-of-fold scores, without
        refitting: the thresholds of ``MultiLabelClassifier(metric=metric, ...)`` fitted with
        the same candidates, seed and rows (the weights and the score map do not depend on
        the measure). Set ``thresholds_`` to them to predict for that measure. O(G N L)."""
        if getattr(self, "oof_scores_", None) is None:
            raise DataError(
                "no out-of-fold scores to choose thresholds on: this fit kept none (a fixed "
                "threshold with scores='clip' and one estimator, or not fitted yet); fit with "
                "threshold='cv', or with scores 'label_sigmoid' or 'sigmoid'"
            )
        if metric not in THRESHOLD_METRICS:
            raise DataError(f"metric must be one of {THRESHOLD_METRICS}: got {metric!r}")
        if not (isinstance(per_label, bool | np.bool_) or per_label == "auto"):
            raise DataError(f'per_label must be True, False or "auto": got {per_label!r}')
        assert self.oof_scores_ is not None and self.oof_labels_ is not None
        by_label = thresholds_per_label(metric, per_label)
        rule = self.threshold_rule
        if rule == "auto":
            rule = "calibrated" if self.scores == "label_sigmoid" else "window"
        return choose_thresholds(
            self.oof_labels_, self.oof_scores_, metric=metric, per_label=by_label,
            window=float(self.threshold_window), rule=rule,
        )  # fmt: skip

    @staticmethod
    def _raw(model: Any, X: Any) -> np.ndarray:
        """F(x) = W^F(x) Y as (Q, L), also for a single label."""
        F = np.asarray(model.predict(X), dtype=np.float64)
        return F.reshape(F.shape[0], -1)

    def _map(self, raw: np.ndarray) -> np.ndarray:
        return map_scores(self.sigmoid_, raw)

    def decision_function(self, X: Any) -> np.ndarray:
        """The raw scores F(x) = W^F(x) Y, shape (Q, L). O(one prediction)."""
        check_is_fitted(self, "estimator_")
        return self._raw(self.estimator_, self._checked_inputs(X))

    @property
    def n_features_in_(self) -> int:
        """The input columns of the training rows (the fitted regressor's)."""
        check_is_fitted(self, "estimator_")
        return int(self.estimator_.n_features_in_)

    @property
    def classes_(self) -> np.ndarray:
        """The classes of each label, (L, 2): row l is label l's classes [0, 1]
        (scikit-learn's convention for a multi-label classifier: what lets its scorers by
        name, "f1_micro", "roc_auc", ..., score this model in ``cross_val_score`` and the
        searches). An array, not a list of arrays: :meth:`predict_proba` is one (Q, L)
        array, which ``cross_val_predict(..., method="predict_proba")`` then takes."""
        check_is_fitted(self, "thresholds_")
        return np.tile(np.array([0, 1]), (len(self.thresholds_), 1))

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
