"""Neighbourhood-regularised logistic matrix factorisation (NRLMF; Liu, Wu, Miao, Zhao & Li
2016, "Neighborhood Regularized Logistic Matrix Factorization for Drug-Target Interaction
Prediction", PLoS Comput. Biol. 12(2): e1004760).

Each row vertex i gets a latent vector u_i, each column vertex j a latent vector v_j
(``n_factors`` of each), and the interaction probability is p_ij = sigmoid(u_i . v_j). An
observed interaction counts ``positive_weight`` (c) times, an unknown pair once, as a
negative (paper eq. 3). U (n_rows, r) and V (n_cols, r) minimise (paper eq. 7-8)

    J = sum_ij [(1 + (c - 1) y_ij) log(1 + exp(u_i . v_j)) - c y_ij u_i . v_j]
        + lambda_rows / 2 ||U||^2 + lambda_cols / 2 ||V||^2
        + alpha / 2 tr(U^T L_r U) + beta / 2 tr(V^T L_c V),

where L_r = (D_r + D~_r) / 2 - (A_r + A_r^T) / 2 is the Laplacian of the row similarity kept
to each row's ``n_neighbors`` most similar other rows (A_r; D_r and D~_r its row and column
sums), so that similar rows get close latent vectors; likewise L_c. The gradients
(paper eq. 9-10) are

    dJ/dU = ((1 + (c - 1) Y) o P - c Y) V + lambda_rows U + alpha L_r U,
    dJ/dV = ((1 + (c - 1) Y) o P - c Y)^T U + lambda_cols V + beta L_c V,

P = sigmoid(U V^T), o the element-wise product. Both are minimised alternately by AdaGrad
(step ``learning_rate`` / sqrt(sum of the squared past gradients), per entry) for
``max_iter`` sweeps from a seeded normal start (standard deviation 1 / sqrt(r)).

New vertices (the inductive setting, paper section "prediction"): the latent vector of a new
row is the weighted mean of the latent vectors of its ``n_neighbors`` most similar training
rows, u(x) = sum_k w(x, d_k) u_{d_k} with the weights of
:func:`~okcore.bipartite.neighbour_weights` (decay ``eta`` by rank; eta = 1 is the paper's
similarity-weighted mean). So W^F exists, in the latent space: ``row_weights(x)`` are those
weights, u(x) = W^F(x) U; the scores sigmoid(u(x) . v_j) are not W^F(x) Y, so NRLMF is a
score model (no pre-image, no output kernel). Both sides new: sigmoid(u(x) . v(z)).

Implemented with one :class:`~okcore.bipartite.NeighbourRegressor` per side whose training
"outputs" are that side's latent vectors; :func:`okcore.io.save` stores those two (no
pickle). Cost per sweep O(n_rows n_cols r) (the products U V^T, P V, P^T U) plus
O((n_rows + n_cols) k r) for the sparse Laplacians; memory O(n_rows n_cols).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from scipy.special import expit

from .._validation import (
    Interval,
    Options,
    RandomStateLike,
    check_is_fitted,
    check_matrix,
    check_random_state,
    validate_params,
)
from ..cost import BipartiteCost
from ..exceptions import DataError
from .cost import nrlmf_cost
from .labels import check_vertex_labels
from .neighbours import NeighbourRegressor, side_similarity
from .pairs import SIDE_INPUTS, predict_block


def knn_laplacian(S: np.ndarray, n_neighbors: int) -> np.ndarray:
    """L = (diag(A 1 + A^T 1) - (A + A^T)) / 2 with A the similarity S (n, n) kept to each
    item's ``n_neighbors`` most similar other items (ties: lower index first; negative
    similarities count as 0). Symmetric, positive semi-definite. O(n^2 log n)."""
    S = np.maximum(np.asarray(S, dtype=np.float64), 0.0)
    n = S.shape[0]
    k = min(int(n_neighbors), n - 1)
    A = np.zeros_like(S)
    if k > 0:
        ranked = S.copy()
        np.fill_diagonal(ranked, -1.0)
        order = np.argsort(-ranked, axis=1, kind="stable")[:, :k]
        rows = np.arange(n)[:, None]
        A[rows, order] = S[rows, order]
    return 0.5 * (np.diag(A.sum(axis=1) + A.sum(axis=0)) - (A + A.T))


def nrlmf_objective(
    U: np.ndarray,
    V: np.ndarray,
    Y: np.ndarray,
    L_rows: np.ndarray,
    L_cols: np.ndarray,
    c: float,
    lambdas: tuple[float, float],
    alpha: float,
    beta: float,
) -> float:
    """J(U, V) of the module docstring (paper eq. 8)."""
    X = U @ V.T
    loss = np.sum((1.0 + (c - 1.0) * Y) * np.logaddexp(0.0, X) - c * Y * X)
    return float(
        loss
        + 0.5 * lambdas[0] * np.sum(U * U)
        + 0.5 * lambdas[1] * np.sum(V * V)
        + 0.5 * alpha * np.sum(U * (L_rows @ U))
        + 0.5 * beta * np.sum(V * (L_cols @ V))
    )


def nrlmf_gradients(
    U: np.ndarray,
    V: np.ndarray,
    Y: np.ndarray,
    L_rows: np.ndarray,
    L_cols: np.ndarray,
    c: float,
    lambdas: tuple[float, float],
    alpha: float,
    beta: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(dJ/dU, dJ/dV) of the module docstring (paper eq. 9-10)."""
    R = (1.0 + (c - 1.0) * Y) * expit(U @ V.T) - c * Y
    return (
        R @ V + lambdas[0] * U + alpha * (L_rows @ U),
        R.T @ U + lambdas[1] * V + beta * (L_cols @ V),
    )


def check_probabilities(Y: np.ndarray) -> np.ndarray:
    """``Y`` (known pairs, NaN for unknown ones) if its entries are in [0, 1], the
    interactions NRLMF models as probabilities; outside it (weights, a -1 / 1 coding) its
    objective is unbounded below and the fit diverges, so a DataError says what to send."""
    known = Y[~np.isnan(Y)]
    if known.size and (known.min() < 0.0 or known.max() > 1.0):
        raise DataError(
            f"Y holds values outside [0, 1] (from {known.min():.4g} to {known.max():.4g}): "
            "NRLMF, a member of the default BipartiteRegressor(), models interaction "
            "probabilities and diverges on weights. Send 0/1 interactions (e.g. "
            "(Y > 0).astype(float); NaN for an unknown pair), or name a model that learns "
            "weights, e.g. BipartiteRegressor(OKBoostRegressor())"
        )
    return Y


class NRLMF:
    """Neighbourhood-regularised logistic matrix factorisation on a bipartite network
    (module docstring), with the prediction interface of
    :class:`~okcore.bipartite.BipartiteRegressor`.

    Parameters
    ----------
    n_factors : int >= 1
        r, the length of each latent vector.
    positive_weight : float >= 1
        c, how many times an observed interaction counts against an unknown pair.
    lambda_rows, lambda_cols : float >= 0
        Ridge penalties of U and V.
    alpha, beta : float >= 0
        Weights of the row and column neighbourhood regularisation.
    n_neighbors : int >= 1
        Neighbours of a vertex in the Laplacians and in the latent vector of a new vertex.
    eta : float in (0, 1]
        Decay by rank of a new vertex's neighbour weights (1: the paper's weighted mean).
    learning_rate : float > 0
        AdaGrad's step (theta of the paper).
    max_iter : int >= 1
        Sweeps (one U step and one V step each).
    inputs : {"features", "similarity"}
        What X_rows and X_cols are: feature rows (compared by cosine similarity), or each
        side's similarity (at fit the square similarity among the training vertices, at
        prediction the similarities of new vertices to them).
    random_state : None or int
        Seeds the starting U and V.

    Fitted attributes: ``row_model_``, ``col_model_`` (the
    :class:`~okcore.bipartite.NeighbourRegressor` of each side, its training outputs ``Y_``
    that side's latent vectors U or V), ``Y_`` (the training interactions), ``n_rows_``,
    ``n_cols_``, ``objective_`` (J after each sweep), ``pair_model_`` (None: both sides new
    uses the two latent maps), ``resolved_params_`` (empty), ``fit_time_``.
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "n_factors": [Interval(int, 1, None, "left")],
        "positive_weight": [Interval(float, 1.0, None, "left")],
        "lambda_rows": [Interval(float, 0.0, None, "left")],
        "lambda_cols": [Interval(float, 0.0, None, "left")],
        "alpha": [Interval(float, 0.0, None, "left")],
        "beta": [Interval(float, 0.0, None, "left")],
        "n_neighbors": [Interval(int, 1, None, "left")],
        "eta": [Interval(float, 0.0, 1.0, "right")],
        "learning_rate": [Interval(float, 0.0, None, "neither")],
        "max_iter": [Interval(int, 1, None, "left")],
        "inputs": [Options(SIDE_INPUTS)],
        "random_state": [RandomStateLike()],
    }

    def __init__(
        self,
        n_factors: int = 50,
        *,
        positive_weight: float = 5.0,
        lambda_rows: float = 0.625,
        lambda_cols: float = 0.625,
        alpha: float = 0.1,
        beta: float = 0.1,
        n_neighbors: int = 5,
        eta: float = 1.0,
        learning_rate: float = 0.5,
        max_iter: int = 100,
        inputs: str = "features",
        random_state: Any = 0,
    ) -> None:
        self.n_factors = n_factors
        self.positive_weight = positive_weight
        self.lambda_rows = lambda_rows
        self.lambda_cols = lambda_cols
        self.alpha = alpha
        self.beta = beta
        self.n_neighbors = n_neighbors
        self.eta = eta
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.inputs = inputs
        self.random_state = random_state

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._parameter_constraints}

    def set_params(self, **params: Any) -> NRLMF:
        for key, value in params.items():
            if key not in self._parameter_constraints:
                raise ValueError(f"Invalid parameter {key!r} for estimator NRLMF.")
            setattr(self, key, value)
        return self

    def fit(self, X_rows: Any, X_cols: Any, Y: Any) -> NRLMF:
        """Learn U and V on the interaction matrix Y (n_rows, n_cols) (module docstring)."""
        validate_params(self, self._parameter_constraints)
        start = time.process_time()
        check_vertex_labels(X_rows, X_cols, Y, self.inputs, self.inputs)
        Y = check_probabilities(check_matrix(Y, "Y"))
        n_rows, n_cols = np.shape(X_rows)[0], np.shape(X_cols)[0]  # lists, arrays, CSR
        if n_rows != Y.shape[0] or n_cols != Y.shape[1]:
            raise DataError(
                f"Y is {Y.shape[0]} x {Y.shape[1]} but X_rows has {n_rows} rows and "
                f"X_cols {n_cols}: one input row per row and per column vertex"
            )
        L_rows = knn_laplacian(side_similarity(X_rows, self.inputs), self.n_neighbors)
        L_cols = knn_laplacian(side_similarity(X_cols, self.inputs), self.n_neighbors)
        r = int(self.n_factors)
        rng = check_random_state(self.random_state)
        U = rng.normal(0.0, 1.0 / np.sqrt(r), size=(Y.shape[0], r))
        V = rng.normal(0.0, 1.0 / np.sqrt(r), size=(Y.shape[1], r))
        terms = (
            Y, L_rows, L_cols, float(self.positive_weight),
            (float(self.lambda_rows), float(self.lambda_cols)), float(self.alpha), float(self.beta),
        )  # fmt: skip
        sum_u, sum_v = np.zeros_like(U), np.zeros_like(V)
        theta, tiny = float(self.learning_rate), np.finfo(np.float64).tiny
        objective = []
        for _ in range(int(self.max_iter)):
            grad_u = nrlmf_gradients(U, V, *terms)[0]
            sum_u += grad_u * grad_u
            U = U - theta * grad_u / np.sqrt(sum_u + tiny)
            grad_v = nrlmf_gradients(U, V, *terms)[1]
            sum_v += grad_v * grad_v
            V = V - theta * grad_v / np.sqrt(sum_v + tiny)
            objective.append(nrlmf_objective(U, V, *terms))
        kernel = "precomputed" if self.inputs == "similarity" else "cosine"
        self.row_model_ = NeighbourRegressor(self.n_neighbors, self.eta, kernel).fit(X_rows, U)
        self.col_model_ = NeighbourRegressor(self.n_neighbors, self.eta, kernel).fit(X_cols, V)
        self.Y_ = Y
        self.n_rows_, self.n_cols_ = Y.shape
        self.objective_ = np.asarray(objective)
        self.pair_model_ = None
        self.resolved_params_: dict[str, dict[str, Any]] = {"rows": {}, "cols": {}}
        self.fit_time_ = time.process_time() - start
        return self

    def estimate_cost(
        self, n_rows: int, n_cols: int, row_features: int, col_features: int
    ) -> BipartiteCost:
        """What :meth:`fit` should cost on an ``n_rows`` x ``n_cols`` network whose sides
        have ``row_features`` and ``col_features`` input columns (a similarity side: its
        vertices), before any work: ``max_iter`` sweeps of O(n_rows n_cols n_factors)
        (part "sweeps"; :func:`okcore.bipartite.cost.nrlmf_cost`), no one-sided fits."""
        validate_params(self, self._parameter_constraints)
        return nrlmf_cost(
            n_rows, n_cols, row_features, col_features,
            n_factors=self.n_factors, max_iter=self.max_iter,
        )  # fmt: skip

    @classmethod
    def from_side_models(
        cls, row_model: NeighbourRegressor, col_model: NeighbourRegressor
    ) -> NRLMF:
        """The model whose latent maps are two fitted (e.g. loaded) neighbour models, each
        holding its side's latent vectors as training outputs; scores only (``Y_`` and the
        objective are not part of a saved model)."""
        check_is_fitted(row_model, "Y_")
        check_is_fitted(col_model, "Y_")
        if row_model.Y_.shape[1] != col_model.Y_.shape[1]:
            raise DataError(
                f"the latent vectors of the two sides differ in length: "
                f"{row_model.Y_.shape[1]} and {col_model.Y_.shape[1]}"
            )
        kind = "similarity" if row_model.input_kernel == "precomputed" else "features"
        model = cls(
            row_model.Y_.shape[1], n_neighbors=row_model.n_neighbors, eta=row_model.eta, inputs=kind
        )
        model.row_model_, model.col_model_ = row_model, col_model
        model.n_rows_, model.n_cols_ = row_model.Y_.shape[0], col_model.Y_.shape[0]
        model.pair_model_ = None
        model.resolved_params_ = {"rows": {}, "cols": {}}
        return model

    def row_weights(self, X_new_rows: Any) -> np.ndarray:
        """W^F of new rows over the training rows (q, n_rows): u(x) = W^F(x) U."""
        check_is_fitted(self, "row_model_")
        return self.row_model_.predict_weights(X_new_rows)

    def col_weights(self, X_new_cols: Any) -> np.ndarray:
        """W^F of new columns over the training columns (q', n_cols): v(z) = W^F(z) V."""
        check_is_fitted(self, "col_model_")
        return self.col_model_.predict_weights(X_new_cols)

    def predict_new_rows(self, X_new_rows: Any) -> np.ndarray:
        """sigmoid(u(x) V^T): new rows x the training columns, (q, n_cols)."""
        return expit(self.row_weights(X_new_rows) @ self.row_model_.Y_ @ self.col_model_.Y_.T)

    def predict_new_cols(self, X_new_cols: Any) -> np.ndarray:
        """sigmoid(U v(z)^T): the training rows x new columns, (n_rows, q')."""
        return expit(self.row_model_.Y_ @ (self.col_weights(X_new_cols) @ self.col_model_.Y_).T)

    def predict_new_pairs(self, X_new_rows: Any, X_new_cols: Any) -> np.ndarray:
        """sigmoid(u(x) v(z)^T): new rows x new columns, (q, q')."""
        latent_rows = self.row_weights(X_new_rows) @ self.row_model_.Y_
        return expit(latent_rows @ (self.col_weights(X_new_cols) @ self.col_model_.Y_).T)

    def predict_train(self) -> np.ndarray:
        """sigmoid(U V^T): the scores of the training pairs, (n_rows, n_cols)."""
        check_is_fitted(self, "row_model_")
        return expit(self.row_model_.Y_ @ self.col_model_.Y_.T)

    def predict(self, X_rows: Any = None, X_cols: Any = None) -> np.ndarray:
        """Scores of the block the arguments name (as
        :meth:`~okcore.bipartite.BipartiteRegressor.predict`)."""
        return predict_block(self, X_rows, X_cols)
