"""Evaluation measures: the paper's (section 3: Err^phi, Err^Y, edge AUC), average precision, and
the multi-label measures (Hamming loss, F1, ranking loss, one-error, coverage, LRAP)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from scipy.stats import rankdata

from ._validation import check_matrix
from .exceptions import DataError
from .losses import SquaredFeatureLoss, weighted_mean


def err_phi(
    estimator: Any,
    X: Any,
    Y: Any = None,
    *,
    gram_cross: Any = None,
    gram_diag: Any = None,
    sample_weight: Any = None,
) -> float:
    """Mean feature-space square loss ||phi(y) - F(x)||^2 over (X, Y), weighted by
    ``sample_weight`` (Q,) when given.

    True outputs are Y (embedded through the kernel) or, for Gram / graph outputs, their
    kernel ``gram_cross`` (Q, N) against the training outputs and ``gram_diag`` (Q,) = k(y, y).
    """
    F = estimator.predict_features(X)
    phi, diag = estimator._target_features(Y, gram_cross, gram_diag, n_rows=F.shape[0])
    return SquaredFeatureLoss()(phi, diag, F, sample_weight)


def err_y(
    estimator: Any,
    X: Any,
    Y: Any = None,
    *,
    gram_cross: Any = None,
    gram_diag: Any = None,
    sample_weight: Any = None,
) -> float:
    """Mean kernel loss of the pre-image: k(y,y) - 2 k(y, y^) + k(y^, y^), with y^ the
    training output closest to F(x) (eq. 8). Same arguments as :func:`err_phi`."""
    X = estimator._fitted_inputs(X)
    index = estimator.predict_index(X)[0][:, 0]
    phi, diag = estimator._target_features(Y, gram_cross, gram_diag, n_rows=X.shape[0])
    space = estimator.output_space_
    # k(y, y^) from the kernel itself: phi . space.phi[index] would miss the components of
    # phi(y^) on eigenvalues dropped from the factor (error ~ sqrt(tol), not ~ tol)
    if gram_cross is not None:
        cross = np.asarray(gram_cross, dtype=np.float64)[np.arange(len(index)), index]
    else:
        Y = check_matrix(Y, "Y", allow_1d=True)
        cross = np.concatenate(
            [
                np.diag(space.kernel.gram(Y[s : s + 256], space.outputs[index[s : s + 256]]))
                for s in range(0, len(index), 256)
            ]
        )
    weight = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    return weighted_mean(diag - 2.0 * cross + space.diag[index], weight)


def edge_auc(scores: Any, truth: Any) -> float:
    """Area under the ROC curve of ``scores`` for the 0/1 labels ``truth`` (Mann-Whitney,
    ties counted one half). O(n log n)."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    t = np.asarray(truth).ravel().astype(bool)
    if s.shape != t.shape:
        raise DataError(f"scores and truth differ in size: {s.size} vs {t.size}")
    n_pos, n_neg = int(t.sum()), int((~t).sum())
    if n_pos == 0 or n_neg == 0:
        raise DataError("AUC needs at least one edge and one non-edge among the pairs")
    ranks = rankdata(s)
    return float((ranks[t].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def network_pairs(
    k_new_new: Any, k_new_known: Any, adj_new_new: Any, adj_new_known: Any
) -> tuple[np.ndarray, np.ndarray]:
    """(scores, 0/1 truth) of every pair with at least one new vertex (paper section 3): the
    new-new pairs above the diagonal, then all new-known pairs, scored by predicted kernels."""
    S1, A1 = np.asarray(k_new_new, float), np.asarray(adj_new_new)
    S2, A2 = np.asarray(k_new_known, float), np.asarray(adj_new_known)
    if S1.shape != A1.shape or S2.shape != A2.shape or S1.shape[0] != S2.shape[0]:
        raise DataError("kernel and adjacency blocks must have matching shapes")
    upper = np.triu_indices(S1.shape[0], k=1)
    return np.r_[S1[upper], S2.ravel()], np.r_[A1[upper], A2.ravel()]


def network_auc(k_new_new: Any, k_new_known: Any, adj_new_new: Any, adj_new_known: Any) -> float:
    """Edge AUC over every pair with at least one new vertex (:func:`network_pairs`)."""
    return edge_auc(*network_pairs(k_new_new, k_new_known, adj_new_new, adj_new_known))


def network_average_precision(
    k_new_new: Any, k_new_known: Any, adj_new_new: Any, adj_new_known: Any
) -> float:
    """:func:`average_precision` of the edges over every pair with at least one new vertex
    (:func:`network_pairs`): the area under the precision-recall curve, which unlike the
    AUC weighs the top of the ranking, where sparse graphs' few edges must be found."""
    return average_precision(*network_pairs(k_new_new, k_new_known, adj_new_new, adj_new_known))


# --------------------------------------------------------------------------------------------
# Multi-label measures (Tsoumakas, Katakis & Vlahavas 2010, "Mining multi-label data"; the
# conventions of scikit-learn where it has the measure, so the numbers compare directly).
# Y_true, Y_pred: 0/1 label rows (Q, L); scores: real label scores (Q, L), higher = more likely.
# --------------------------------------------------------------------------------------------
def _label_rows(Y: Any, name: str) -> np.ndarray:
    """A (Q, L) 0/1 matrix as bool; a clear error for anything else."""
    arr = np.asarray(Y)
    if arr.ndim != 2 or arr.size == 0:
        raise DataError(f"{name} must be a non-empty 2-D array of 0/1 label rows: got {arr.shape}")
    if not np.isin(arr, (0, 1)).all():
        raise DataError(f"{name} must hold only 0 and 1 (label rows)")
    return arr.astype(bool)


def _labels_and_scores(Y_true: Any, scores: Any) -> tuple[np.ndarray, np.ndarray]:
    T = _label_rows(Y_true, "Y_true")
    S = check_matrix(scores, "scores")
    if S.shape != T.shape:
        raise DataError(f"Y_true and scores differ in shape: {T.shape} vs {S.shape}")
    return T, S


def _labels_pair(Y_true: Any, Y_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    T, P = _label_rows(Y_true, "Y_true"), _label_rows(Y_pred, "Y_pred")
    if T.shape != P.shape:
        raise DataError(f"Y_true and Y_pred differ in shape: {T.shape} vs {P.shape}")
    return T, P


def hamming_loss(Y_true: Any, Y_pred: Any) -> float:
    """Fraction of (sample, label) entries predicted wrongly. O(Q L)."""
    T, P = _labels_pair(Y_true, Y_pred)
    return float(np.mean(T != P))


def subset_accuracy(Y_true: Any, Y_pred: Any) -> float:
    """Fraction of samples whose whole label set is predicted exactly (scikit-learn's
    ``accuracy_score`` on label rows). O(Q L)."""
    T, P = _labels_pair(Y_true, Y_pred)
    return float(np.mean((T == P).all(axis=1)))


def _f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, zero_division: float) -> np.ndarray:
    """2 TP / (2 TP + FP + FN), ``zero_division`` where the denominator is 0."""
    den = 2.0 * tp + fp + fn
    return np.where(den > 0, 2.0 * tp / np.where(den > 0, den, 1.0), zero_division)


def micro_f1(Y_true: Any, Y_pred: Any, *, zero_division: float = 0.0) -> float:
    """F1 of the pooled (sample, label) decisions: 2 TP / (2 TP + FP + FN) over all entries.
    O(Q L)."""
    T, P = _labels_pair(Y_true, Y_pred)
    tp, fp, fn = (T & P).sum(), (~T & P).sum(), (T & ~P).sum()
    return float(_f1(np.asarray(tp), np.asarray(fp), np.asarray(fn), zero_division))


def macro_f1(Y_true: Any, Y_pred: Any, *, zero_division: float = 0.0) -> float:
    """Mean over labels of each label's F1; a label never present nor predicted scores
    ``zero_division`` (0, as scikit-learn's default). O(Q L)."""
    T, P = _labels_pair(Y_true, Y_pred)
    tp, fp, fn = (T & P).sum(0), (~T & P).sum(0), (T & ~P).sum(0)
    return float(np.mean(_f1(tp, fp, fn, zero_division)))


#: Most (sample, label, label) comparisons :func:`_pair_counts` holds at once: its blocks of
#: samples shrink as the labels grow (4096 samples of 1,000 labels were 4 GB of comparisons,
#: and 32 GB once ranking_loss made them floats).
PAIR_BLOCK_VALUES = 1 << 22


def _pair_counts(T: np.ndarray, S: np.ndarray) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Per sample: for each label j, the number of labels k with s_k >= s_j, split into
    relevant and all. O(Q L^2) time, in blocks of samples of at most PAIR_BLOCK_VALUES
    comparisons (at least one sample): O(max(L^2, PAIR_BLOCK_VALUES)) memory."""
    n_labels = max(T.shape[1], 1)
    block = max(1, PAIR_BLOCK_VALUES // (n_labels * n_labels))
    for start in range(0, T.shape[0], block):
        s, t = S[start : start + block], T[start : start + block]
        geq = s[:, None, :] >= s[:, :, None]  # [q, j, k] = s_k >= s_j
        yield start, t, geq


def ranking_loss(Y_true: Any, scores: Any) -> float:
    """Fraction of (relevant, irrelevant) label pairs ordered wrongly (irrelevant scored at
    least as high), averaged over samples; samples with no relevant or no irrelevant label
    count 0. scikit-learn's ``label_ranking_loss``. O(Q L^2)."""
    T, S = _labels_and_scores(Y_true, scores)
    loss = np.zeros(T.shape[0])
    for start, t, geq in _pair_counts(T, S):
        # pairs (j relevant, k irrelevant) with s_k >= s_j
        wrong = np.einsum("qj,qjk,qk->q", t.astype(float), geq.astype(float), (~t).astype(float))
        n_pos = t.sum(1)
        n_pairs = n_pos * (t.shape[1] - n_pos)
        loss[start : start + len(t)] = np.where(n_pairs > 0, wrong / np.maximum(n_pairs, 1), 0.0)
    return float(loss.mean())


def one_error(Y_true: Any, scores: Any) -> float:
    """Fraction of samples whose top-scored label is not relevant (ties: the first label in
    column order). O(Q L)."""
    T, S = _labels_and_scores(Y_true, scores)
    top = np.argmax(S, axis=1)
    return float(np.mean(~T[np.arange(T.shape[0]), top]))


def coverage(Y_true: Any, scores: Any) -> float:
    """How far down the ranked labels one must go to cover every relevant label: the number
    of labels scored at least as high as the lowest-scored relevant one, averaged over
    samples (0 for a sample with no relevant label). scikit-learn's ``coverage_error``;
    MULAN's "coverage" is this minus 1. O(Q L)."""
    T, S = _labels_and_scores(Y_true, scores)
    lowest = np.where(T, S, np.inf).min(axis=1, keepdims=True)
    cov = (S >= lowest).sum(axis=1)
    return float(np.mean(np.where(T.any(axis=1), cov, 0)))


def label_ranking_average_precision(Y_true: Any, scores: Any) -> float:
    """For every relevant label, the fraction of relevant labels among those scored at least
    as high; averaged over relevant labels, then samples (1 for a sample with no relevant or
    no irrelevant label). scikit-learn's ``label_ranking_average_precision_score``.
    O(Q L^2)."""
    T, S = _labels_and_scores(Y_true, scores)
    out = np.ones(T.shape[0])
    n_labels = T.shape[1]
    for start, t, geq in _pair_counts(T, S):
        rank_all = geq.sum(axis=2)  # [q, j]: labels k with s_k >= s_j
        rank_rel = (geq & t[:, None, :]).sum(axis=2)
        ratio = np.where(t, rank_rel / rank_all, 0.0)
        n_pos = t.sum(1)
        ok = (n_pos > 0) & (n_pos < n_labels)
        out[start : start + len(t)] = np.where(ok, ratio.sum(1) / np.maximum(n_pos, 1), 1.0)
    return float(out.mean())


def average_precision(scores: Any, truth: Any) -> float:
    """Average precision of ``scores`` for the 0/1 labels ``truth``: sum over distinct score
    thresholds, highest first, of (recall gain) x precision (tied scores form one threshold).
    scikit-learn's ``average_precision_score``; the area under the precision-recall curve
    without interpolation. O(n log n)."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    t = np.asarray(truth).ravel().astype(bool)
    if s.shape != t.shape:
        raise DataError(f"scores and truth differ in size: {s.size} vs {t.size}")
    n_pos = int(t.sum())
    if n_pos == 0:
        raise DataError("average precision needs at least one positive among the pairs")
    order = np.argsort(-s, kind="mergesort")
    s, t = s[order], t[order]
    last = np.r_[np.flatnonzero(np.diff(s) != 0), s.size - 1]  # end of each tie group
    tp = np.cumsum(t)[last]
    precision = tp / (last + 1.0)
    recall_gain = np.diff(np.r_[0, tp]) / n_pos
    return float(np.sum(recall_gain * precision))


#: The multi-label measures by name: (function, takes scores rather than 0/1 predictions,
#: higher is better).
MULTILABEL_METRICS: dict[str, tuple[Any, bool, bool]] = {
    "hamming_loss": (hamming_loss, False, False),
    "subset_accuracy": (subset_accuracy, False, True),
    "micro_f1": (micro_f1, False, True),
    "macro_f1": (macro_f1, False, True),
    "ranking_loss": (ranking_loss, True, False),
    "one_error": (one_error, True, False),
    "coverage": (coverage, True, False),
    "label_ranking_average_precision": (label_ranking_average_precision, True, True),
}
