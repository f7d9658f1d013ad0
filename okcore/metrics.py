"""Evaluation measures of the paper (section 3): Err^phi, Err^Y and edge AUC."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import rankdata

from ._validation import check_matrix
from .exceptions import DataError
from .losses import SquaredFeatureLoss


def err_phi(
    estimator: Any, X: Any, Y: Any = None, *, gram_cross: Any = None, gram_diag: Any = None
) -> float:
    """Mean feature-space square loss ||phi(y) - F(x)||^2 over (X, Y).

    True outputs are Y (embedded through the kernel) or, for Gram / graph outputs, their
    kernel ``gram_cross`` (Q, N) against the training outputs and ``gram_diag`` (Q,) = k(y, y).
    """
    F = estimator.predict_features(X)
    phi, diag = estimator._target_features(Y, gram_cross, gram_diag, n_rows=F.shape[0])
    return SquaredFeatureLoss()(phi, diag, F)


def err_y(
    estimator: Any, X: Any, Y: Any = None, *, gram_cross: Any = None, gram_diag: Any = None
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
    return float(np.mean(diag - 2.0 * cross + space.diag[index]))


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


def network_auc(k_new_new: Any, k_new_known: Any, adj_new_new: Any, adj_new_known: Any) -> float:
    """Edge AUC over every pair with at least one new vertex (paper section 3): the
    new-new pairs above the diagonal and all new-known pairs, scored by predicted kernels."""
    S1, A1 = np.asarray(k_new_new, float), np.asarray(adj_new_new)
    S2, A2 = np.asarray(k_new_known, float), np.asarray(adj_new_known)
    if S1.shape != A1.shape or S2.shape != A2.shape or S1.shape[0] != S2.shape[0]:
        raise DataError("kernel and adjacency blocks must have matching shapes")
    upper = np.triu_indices(S1.shape[0], k=1)
    return edge_auc(np.r_[S1[upper], S2.ravel()], np.r_[A1[upper], A2.ravel()])
