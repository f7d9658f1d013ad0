"""Unknown pairs of a bipartite network: NaN entries of the interaction matrix.

A pair of a drug-target (or any bipartite) interaction matrix Y is an interaction (1, or a
weight > 0), a known non-interaction (0) or **unknown** (NaN: never tested, withheld, or
ambiguous). An unknown pair is never read as a negative:

- training (:func:`fill_unknown`, used by :class:`~okcore.bipartite.BipartiteRegressor`):
  every unknown entry takes the value its neighbours give it, as the interaction recovery
  does (:func:`~okcore.bipartite.recover_interactions`) but over the observed entries only.
  With W_r (n_rows, n_rows) and W_c (n_cols, n_cols) the neighbour weights of each side
  among its training vertices (:func:`~okcore.bipartite.neighbour_weights`, a vertex never
  its own neighbour) and M the 0/1 mask of observed entries,

      R = W_r (M * Y) / W_r M,    C = (M * Y) W_c^T / M W_c^T    (entrywise divisions),

  the weighted mean of the observed entries of the same column among the row's nearest
  rows, and of the same row among the column's nearest columns. An unknown (i, j) takes the
  mean of R_ij and C_ij where both have observed neighbour weight, the one that has
  otherwise, and the mean of all observed entries (the network's base rate) when neither
  has. Observed entries are kept as they are. Every part of the model (the one-sided fits,
  the recovery, the pair models) then learns the filled matrix.
- evaluation (:func:`~okcore.bipartite.block_scores`,
  :func:`~okcore.bipartite.bipartite_cross_validate`): unknown pairs are left out of AUROC
  and average precision, and out of the degrees that stratify the folds.

Cost: O(n_rows^2 n_cols + n_rows n_cols^2) for the two weighted sums (dense products), the
weights as :func:`~okcore.bipartite.neighbour_weights`; nothing when no pair is unknown.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_real
from ..exceptions import DataError, DataTypeError
from .neighbours import neighbour_weights


def check_interactions(Y: Any, name: str = "Y") -> np.ndarray:
    """The interaction matrix as a 2-D float64 array whose NaN entries are unknown pairs:
    infinite values are refused, and so is a matrix without any observed entry."""
    if Y is None:
        raise DataError(f"{name} is required")
    try:
        arr = np.asarray(Y)
        check_real(arr, name)
        arr = arr.astype(np.float64, copy=False)
    except TypeError as exc:
        raise DataTypeError(f"{name} must be a numeric array: {exc}") from None
    except ValueError as exc:
        raise DataError(f"{name} must be a numeric array: {exc}") from None
    if arr.ndim != 2 or arr.size == 0:
        raise DataError(f"{name} must be a non-empty (n_rows, n_cols) matrix: got {arr.shape}")
    if np.isinf(arr).any():
        i, j = (int(v) for v in np.argwhere(np.isinf(arr))[0])
        raise DataError(
            f"{name}[{i}, {j}] is infinite: interactions are finite numbers, NaN for an "
            "unknown pair"
        )
    if np.isnan(arr).all():
        raise DataError(f"every pair of {name} is unknown (NaN): there is nothing to learn")
    return arr


def observed(Y: np.ndarray) -> np.ndarray:
    """The mask of observed (not NaN) entries of an interaction matrix."""
    return ~np.isnan(Y)


def fill_unknown(
    Y: np.ndarray, S_rows: np.ndarray, S_cols: np.ndarray, n_neighbors: int, eta: float
) -> np.ndarray:
    """Y with every unknown (NaN) entry replaced by its neighbours' estimate (module
    docstring); S_rows and S_cols are the square similarities among the training vertices
    of each side, ``n_neighbors`` and ``eta`` the neighbours kept and their decay by rank.
    A matrix without unknown entries comes back as it is."""
    unknown = np.isnan(Y)
    if not unknown.any():
        return Y
    mask = (~unknown).astype(np.float64)
    Y0 = np.where(unknown, 0.0, Y)
    W_rows = neighbour_weights(S_rows, n_neighbors, eta, exclude_self=True)
    W_cols = neighbour_weights(S_cols, n_neighbors, eta, exclude_self=True)
    estimates, weights = [], []
    for total, weight in ((W_rows @ Y0, W_rows @ mask), (Y0 @ W_cols.T, mask @ W_cols.T)):
        has = weight > 0
        estimates.append(np.divide(total, weight, out=np.zeros_like(total), where=has))
        weights.append(has.astype(np.float64))
    n_estimates = weights[0] + weights[1]
    base_rate = float(Y0.sum() / mask.sum())
    mean = np.divide(
        estimates[0] * weights[0] + estimates[1] * weights[1],
        n_estimates,
        out=np.full_like(Y0, base_rate),
        where=n_estimates > 0,
    )
    return np.where(unknown, mean, Y)
