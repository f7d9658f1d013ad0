"""Models of new row x new column pairs that do not go through the one-sided models: a tree
ensemble on pair rows and Kronecker kernel ridge regression.

- Trees on pairs (the "global" approach of Schrynemackers, Wehenkel, Babu & Geurts 2015): a
  pair (i, j) is the row of features [x_i, x_j] (the row vertex's inputs next to the column
  vertex's) with the single output y_ij, and one single-output regressor learns all pairs. The
  n_rows n_cols training pairs are bounded by ``max_pairs``: every pair with a non-zero
  interaction is kept (up to the bound) and pairs without one are sampled uniformly to fill
  it, so the rare interactions are never sampled away. The sampling shifts the base rate,
  not the order of the pairs' scores, which is what AUROC and average precision measure.
- Kronecker kernel ridge regression (Pahikkala et al. 2014; Stock et al. 2018): with input
  kernels K_r (n_rows, n_rows) and K_c (n_cols, n_cols), the dual coefficients A solve
  (K_c (x) K_r + alpha I) vec(A) = vec(Y - m), m the mean interaction, in closed form from the
  eigendecompositions K_r = U diag(l) U^T, K_c = V diag(s) V^T:
  A = U [(U^T (Y - m) V) / (l s^T + alpha)] V^T, and f(r, c) = m + k_r^T A k_c.
  Negative eigenvalues of an indefinite similarity are set to 0 (the nearest PSD kernel).
  O(n_rows^3 + n_cols^3) to fit, O(q n_rows n_cols + q q' n_cols) to predict q x q' pairs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from ..exceptions import DataError

PAIR_KERNELS = ("linear", "precomputed")
#: Pair feature rows built at once at prediction (bounds the temporary matrix).
PAIR_BLOCK_ENTRIES = 2**23


def dense_inputs(X: Any, name: str) -> np.ndarray:
    """Dense float64 inputs; sparse inputs are refused (pair rows concatenate both sides)."""
    if sparse.issparse(X):
        raise DataError(
            f"{name} is sparse: trees on pairs and Kronecker ridge regression take dense inputs "
            "(convert with .toarray(), or use new_pairs='two-step')"
        )
    return np.asarray(X, dtype=np.float64)


def sample_pairs(Y: np.ndarray, max_pairs: int, rng: np.random.Generator) -> np.ndarray:
    """Flat indices (into Y.ravel()) of at most ``max_pairs`` training pairs: the non-zero
    entries first (a uniform subset if they alone exceed the bound), then zero entries drawn
    uniformly without replacement. O(n_rows n_cols)."""
    flat = np.asarray(Y).ravel()
    if flat.size <= max_pairs:
        return np.arange(flat.size)
    nonzero = np.flatnonzero(flat != 0)
    if nonzero.size >= max_pairs:
        return np.sort(rng.choice(nonzero, size=max_pairs, replace=False))
    zero = np.flatnonzero(flat == 0)
    filler = rng.choice(zero, size=max_pairs - nonzero.size, replace=False)
    return np.sort(np.concatenate([nonzero, filler]))


def pair_rows(X_rows: np.ndarray, X_cols: np.ndarray, rows: Any, cols: Any) -> np.ndarray:
    """Feature rows [x_rows[i], x_cols[j]] of the pairs (rows[k], cols[k])."""
    return np.hstack([X_rows[rows], X_cols[cols]])


def predict_block(model: Any, X_rows: Any = None, X_cols: Any = None) -> np.ndarray:
    """Scores of the block the arguments name, from ``model``'s ``predict_new_rows`` /
    ``predict_new_cols`` / ``predict_new_pairs``: new rows x known columns (X_rows only),
    known rows x new columns (X_cols only) or new rows x new columns (both)."""
    if X_rows is None and X_cols is None:
        raise DataError("pass X_rows (new rows), X_cols (new columns) or both")
    if X_cols is None:
        return model.predict_new_rows(X_rows)
    if X_rows is None:
        return model.predict_new_cols(X_cols)
    return model.predict_new_pairs(X_rows, X_cols)


class PairTrees:
    """A single-output regressor (okcore tree ensemble) over pair rows [x_i, x_j] -> y_ij."""

    method = "pair-trees"

    def __init__(self, estimator: Any, max_pairs: int, rng: np.random.Generator) -> None:
        self.estimator = estimator
        self.max_pairs = max_pairs
        self.rng = rng

    def fit(self, X_rows: np.ndarray, X_cols: np.ndarray, Y: np.ndarray) -> PairTrees:
        picked = sample_pairs(Y, self.max_pairs, self.rng)
        rows, cols = np.divmod(picked, Y.shape[1])
        features = pair_rows(X_rows, X_cols, rows, cols)
        self.estimator.fit(features, np.asarray(Y, np.float64).ravel()[picked][:, None])
        self.n_pairs_ = picked.size
        return self

    def predict(self, X_rows: np.ndarray, X_cols: np.ndarray) -> np.ndarray:
        """Scores (q, q') of every new row x new column, built in blocks of rows."""
        q, q2 = len(X_rows), len(X_cols)
        width = X_rows.shape[1] + X_cols.shape[1]
        step = max(1, PAIR_BLOCK_ENTRIES // max(1, q2 * width))
        out = np.empty((q, q2))
        cols = np.arange(q2)
        for start in range(0, q, step):
            block = np.arange(start, min(q, start + step))
            rows = np.repeat(block, q2)
            F = self.estimator.predict(pair_rows(X_rows, X_cols, rows, np.tile(cols, block.size)))
            out[block] = np.asarray(F, np.float64).reshape(block.size, q2)
        return out


def side_gram(X_train: np.ndarray, X_new: np.ndarray | None, kind: str) -> np.ndarray:
    """The input kernel of one side: "linear" X X'^T / p over feature rows (or over an
    empirical kernel map), "precomputed" the inputs themselves (X_train the (n, n) similarity
    among training vertices, X_new the (q, n) similarity of new ones), symmetrised at fit."""
    if kind == "linear":
        other = X_train if X_new is None else X_new
        return (other @ X_train.T) / max(1, X_train.shape[1])
    if X_new is not None:
        return X_new
    if X_train.shape[0] != X_train.shape[1]:
        raise DataError(
            f"pair_kernel='precomputed' needs the (n, n) similarity among the training vertices "
            f"as inputs of each side: got {X_train.shape}"
        )
    return 0.5 * (X_train + X_train.T)


class KroneckerRidge:
    """Kronecker kernel ridge regression on an interaction matrix (module docstring)."""

    method = "kronecker"

    def __init__(self, alpha: float, kernel: str) -> None:
        self.alpha = alpha
        self.kernel = kernel

    def fit(self, X_rows: np.ndarray, X_cols: np.ndarray, Y: np.ndarray) -> KroneckerRidge:
        lr, U = np.linalg.eigh(side_gram(X_rows, None, self.kernel))
        lc, V = np.linalg.eigh(side_gram(X_cols, None, self.kernel))
        lr, lc = np.maximum(lr, 0.0), np.maximum(lc, 0.0)
        self.offset_ = float(np.mean(Y))
        core = U.T @ (np.asarray(Y, np.float64) - self.offset_) @ V
        self.dual_ = U @ (core / (np.outer(lr, lc) + self.alpha)) @ V.T
        self.X_rows_, self.X_cols_ = X_rows, X_cols
        return self

    def predict(self, X_rows: np.ndarray, X_cols: np.ndarray) -> np.ndarray:
        k_rows = side_gram(self.X_rows_, X_rows, self.kernel)  # (q, n_rows)
        k_cols = side_gram(self.X_cols_, X_cols, self.kernel)  # (q', n_cols)
        return self.offset_ + (k_rows @ self.dual_) @ k_cols.T


SIDE_INPUTS = ("features", "similarity")


def side_inputs(X: Any, items: np.ndarray, train: np.ndarray, kind: str = "features") -> Any:
    """Inputs of ``items`` for a model fitted on the ``train`` items of the same side.

    "features": the rows ``X[items]``. "similarity": X is the (n, n) similarity among all
    items of that side and the inputs are the empirical kernel map restricted to the training
    items, ``X[items][:, train]``: no similarity to an item outside ``train`` is ever used.
    """
    if kind not in SIDE_INPUTS:
        raise DataError(f"side inputs must be one of {SIDE_INPUTS}: got {kind!r}")
    if kind == "features":
        return X[items]
    S = np.asarray(X)
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise DataError(f"a similarity input must be a square (n, n) matrix: got {S.shape}")
    return S[np.ix_(items, train)]
