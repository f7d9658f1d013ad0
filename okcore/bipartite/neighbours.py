"""Weighted nearest neighbours on a bipartite network and the recovery of unlabelled
interactions (van Laarhoven & Marchiori 2013; Ezzat et al. 2017; Liu, Pliakos, Vens &
Tsoumakas 2022, "WkNNIR").

In a drug-target matrix a 0 is an unknown pair, not a known non-interaction. The methods here
read a vertex's profile from those of its most similar vertices:

- weights (:func:`neighbour_weights`, WkNNIR eq. 1): for an item x with similarities
  s(x, d) to the n training items of its side, let d_1, ..., d_k be its k most similar ones
  (ties: lower index first). Then
  w(x, d_r) = eta^(r-1) s(x, d_r) / z_x,  z_x = sum_{r=1..k} s(x, d_r),
  and w(x, d) = 0 for the others: a decaying weight by rank, times the similarity;
- recovery (:func:`recover_interactions`, WKNKN, Ezzat et al. 2017 eq. 6-8): each training
  row's profile is re-estimated from its k nearest training rows (itself excluded),
  Y_r = W_r Y, each column's from its nearest columns, Y_c = Y W_c^T, and
  Y_rec = max(Y, (Y_r + Y_c) / 2):
  known interactions stay 1, unknown pairs get a score in [0, 1] from both neighbourhoods.
  Any bipartite learner can then learn Y_rec instead of Y
  (:class:`~okcore.bipartite.BipartiteRegressor` does with ``recovery_neighbors`` > 0);
- :class:`NeighbourRegressor`: the one-sided weighted k-nearest-neighbour model, W^F(x) the
  weights above, so F(x) = W^F(x) Y. In :class:`~okcore.bipartite.BipartiteRegressor` it is
  WkNN on each side, and the two-step combination W_row Y W_col^T scores new x new pairs;
  on the recovered matrix it is WkNNIR.

Cost: O(q n) to read the similarities and O(q n log k) to select the neighbours of q items;
the recovery O(n_rows^2 + n_cols^2) for the neighbours plus O(k n_rows n_cols) for the
profiles. Memory O(q n) (the weights are returned dense, as every okcore W^F is).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import Interval, Options, check_is_fitted, check_matrix, validate_params
from ..cost import FitCost
from ..exceptions import DataError
from .cost import neighbour_cost
from .pairs import dense_inputs

NEIGHBOUR_INPUTS = ("precomputed", "cosine")


def neighbour_weights(
    S: Any, n_neighbors: int, eta: float, exclude_self: bool = False
) -> np.ndarray:
    """Weights (q, n) of q items over n training items from their similarities S (q, n).

    Row x keeps its ``n_neighbors`` most similar items d_1..d_k (ties: lower index first) with
    w(x, d_r) = eta^(r-1) s(x, d_r) / sum_r s(x, d_r) (module docstring); negative
    similarities count as 0. ``exclude_self``: S is the square similarity among the training
    items and an item is never its own neighbour (the recovery). O(q n log n).
    """
    S = np.maximum(np.asarray(S, dtype=np.float64), 0.0)
    if S.ndim != 2:
        raise DataError(f"similarities must be a 2-D (items, training items) array: got {S.shape}")
    q, n = S.shape
    if exclude_self:
        if q != n:
            raise DataError(f"recovery needs the square similarity among training items: {S.shape}")
        S = S.copy()
        np.fill_diagonal(S, -1.0)  # below every real similarity: ranked last, never kept
    k = min(int(n_neighbors), n - 1 if exclude_self else n)
    W = np.zeros((q, n))
    if k <= 0:
        return W
    # stable sort of -S: equal similarities keep the lower index first
    order = np.argsort(-S, axis=1, kind="stable")[:, :k]
    rows = np.arange(q)[:, None]
    kept = S[rows, order]
    kept = np.maximum(kept, 0.0)
    z = kept.sum(axis=1, keepdims=True)
    decay = float(eta) ** np.arange(k)
    W[rows, order] = np.divide(kept * decay, z, out=np.zeros_like(kept), where=z > 0)
    return W


def recover_interactions(
    Y: Any, S_rows: Any, S_cols: Any, n_neighbors: int = 5, eta: float = 0.7
) -> np.ndarray:
    """Y_rec = max(Y, (W_r Y + Y W_c^T) / 2): unknown pairs scored from the k nearest rows
    and the k nearest columns (module docstring; Ezzat et al. 2017 eq. 6-8).

    S_rows (n_rows, n_rows) and S_cols (n_cols, n_cols) are the similarities among the
    training rows and columns; a vertex is never its own neighbour.
    """
    Y = check_matrix(Y, "Y")
    S_rows, S_cols = np.asarray(S_rows), np.asarray(S_cols)
    if S_rows.shape != (Y.shape[0],) * 2 or S_cols.shape != (Y.shape[1],) * 2:
        raise DataError(
            f"Y is {Y.shape[0]} x {Y.shape[1]}: the recovery needs the {Y.shape[0]} x "
            f"{Y.shape[0]} row similarity and the {Y.shape[1]} x {Y.shape[1]} column "
            f"similarity, got {S_rows.shape} and {S_cols.shape}"
        )
    W_rows = neighbour_weights(S_rows, n_neighbors, eta, exclude_self=True)
    W_cols = neighbour_weights(S_cols, n_neighbors, eta, exclude_self=True)
    return np.maximum(Y, 0.5 * (W_rows @ Y + Y @ W_cols.T))


def cosine_similarity(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Cosine similarity of the rows of A (q, p) to the rows of B (n, p); 0 for a zero row."""
    na = np.linalg.norm(A, axis=1, keepdims=True)
    nb = np.linalg.norm(B, axis=1, keepdims=True)
    A = np.divide(A, na, out=np.zeros_like(A), where=na > 0)
    B = np.divide(B, nb, out=np.zeros_like(B), where=nb > 0)
    return A @ B.T


def side_similarity(X: Any, inputs: str) -> np.ndarray:
    """The similarity among one side's training vertices: the cosine similarity of feature
    rows (negatives read as 0) for ``inputs="features"``, the symmetrised square similarity
    (S + S^T) / 2 for ``inputs="similarity"``."""
    X = dense_inputs(X, "X_rows / X_cols")
    if inputs == "features":
        return np.maximum(cosine_similarity(X, X), 0.0)
    if X.ndim != 2 or X.shape[0] != X.shape[1]:
        raise DataError(
            f"inputs='similarity' needs the square similarity among the training vertices "
            f"of each side at fit: got {X.shape}"
        )
    return 0.5 * (X + X.T)


class NeighbourRegressor:
    """Weighted k-nearest-neighbour regression with W^F (WkNN, module docstring).

    Parameters
    ----------
    n_neighbors : int >= 1
        k, the neighbours kept per item.
    eta : float in (0, 1]
        Decay of the weight by rank (eta^(r-1)); 1 = similarity-weighted kNN.
    input_kernel : {"precomputed", "cosine"}
        "precomputed": the inputs are similarities to the training items (at fit the square
        similarity among them, at prediction the (q, n) similarities of new items, as
        :func:`okcore.bipartite.side_inputs` slices them); "cosine": feature rows, compared by
        cosine similarity.

    Fitted attributes: ``Y_`` (n, d) the training outputs, ``X_fit_`` (cosine only: the
    training rows), ``n_features_in_``, ``fit_time_`` (0: nothing is learnt).
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "n_neighbors": [Interval(int, 1, None, "left")],
        "eta": [Interval(float, 0.0, 1.0, "right")],
        "input_kernel": [Options(NEIGHBOUR_INPUTS)],
    }

    def __init__(
        self, n_neighbors: int = 5, eta: float = 0.7, input_kernel: str = "precomputed"
    ) -> None:
        self.n_neighbors = n_neighbors
        self.eta = eta
        self.input_kernel = input_kernel

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"n_neighbors": self.n_neighbors, "eta": self.eta, "input_kernel": self.input_kernel}

    def set_params(self, **params: Any) -> NeighbourRegressor:
        for key, value in params.items():
            if key not in self.get_params():
                raise ValueError(f"Invalid parameter {key!r} for estimator NeighbourRegressor.")
            setattr(self, key, value)
        return self

    def fit(self, X: Any, Y: Any, kernel: Any = None, **_: Any) -> NeighbourRegressor:
        """Store the training outputs Y (n, d) (and, for "cosine", the rows X). ``kernel``
        (the output kernel of other okcore models) is accepted and unused: W^F does not depend
        on the outputs."""
        validate_params(self, self._parameter_constraints)
        Y = check_matrix(Y, "Y")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] != Y.shape[0]:
            raise DataError(f"X must have one row per output row ({Y.shape[0]}): got {X.shape}")
        if self.input_kernel == "precomputed" and X.shape[1] != X.shape[0]:
            raise DataError(
                "input_kernel='precomputed' takes the (n, n) similarity among the training "
                f"items at fit: got {X.shape}"
            )
        self.Y_ = Y
        self.X_fit_ = X if self.input_kernel == "cosine" else None
        self.n_features_in_ = X.shape[1]
        self.fit_time_ = 0.0
        return self

    def estimate_cost(
        self,
        n_samples: int,
        n_features: int,
        *,
        kernel: Any = None,
        n_outputs: int | None = None,
    ) -> FitCost:
        """What a fit on ``n_samples`` items of ``n_features`` inputs (a similarity:
        ``n_samples``) with ``n_outputs`` outputs costs, with the one-sided estimators'
        signature (:meth:`~okcore.base.OKEstimator.estimate_cost`; ``kernel`` is unused):
        O(n^2 p) for the similarities among the items and their nearest, no stages
        (:func:`okcore.bipartite.cost.neighbour_cost`)."""
        validate_params(self, self._parameter_constraints)
        return neighbour_cost(n_samples, n_features, n_outputs)

    def predict_weights(self, X: Any) -> np.ndarray:
        """W^F (q, n): the neighbour weights of new items over the training items."""
        check_is_fitted(self, "Y_")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise DataError(
                f"X must have {self.n_features_in_} columns (a similarity to each training "
                f"item, or the training features): got shape {X.shape}"
                + (": one new item is a row, X.reshape(1, -1)" if X.ndim == 1 else "")
            )
        S = X if self.X_fit_ is None else cosine_similarity(X, self.X_fit_)
        return neighbour_weights(S, self.n_neighbors, self.eta)

    def predict(self, X: Any) -> np.ndarray:
        """F(x) = W^F(x) Y, shape (q, d)."""
        return self.predict_weights(X) @ self.Y_
