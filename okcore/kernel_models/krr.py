"""Sparse kernel ridge regression on random subsets: the kernel-model base learner of
Sun & Yao, "Boosting Kernel Models for Regression" (ICDM 2006), in the output factor space.

One stage draws ``subset_size`` training rows, selects ``n_basis`` = D basis vectors among
them (at random, or greedily by an information-gain criterion), and fits

    alpha_D = argmin ||R - K_D alpha||^2 + lambda alpha^T K_DD alpha
            = (K_D^T K_D + lambda K_DD)^{-1} K_D^T R

on the stage's target rows R (n, r) (r = columns of the output factor; r = 1 for a scalar
output with the linear output kernel), K_D = k(subset, basis) (n, D), K_DD = k(basis, basis).
The sum is not averaged, so with the subset = the basis = all N rows the fit is
scikit-learn's ``KernelRidge(alpha=lambda)``. Cost O(n D^2 + D^3) per stage; never N x N.

Input kernels: Gaussian RBF k(x, x') = exp(-sum_d gamma_d (x_d - x'_d)^2) with one width
(all gamma_d equal) or one per input dimension (ARD), linear k = x . x', or a precomputed
input Gram matrix (X is then the kernel against the N training rows, as scikit-learn's
``kernel="precomputed"``: basis vectors are columns of X).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy import linalg

from ..exceptions import DataError

INPUT_KERNELS = ("rbf", "linear", "precomputed")
BASIS_SELECTIONS = ("info-gain", "random")
#: Directions of K_DD with eigenvalue below this fraction of the largest are dropped from the
#: fit: they are functions of (numerically) zero RKHS norm, so zero at every input. Keeps the
#: solve stable when basis vectors (nearly) coincide or the kernel has low rank (linear).
EIGEN_TOLERANCE = 1e-12
#: Selection stops early when no candidate keeps more than this fraction of its k(x, x)
#: outside the span of the basis already chosen (the subset's kernel has lower rank).
RESIDUAL_VARIANCE_TOLERANCE = 1e-10
#: Query rows whose kernel values are computed at once (bounds a (rows, D) block).
ROW_BLOCK = 2048
#: Relative asymmetry tolerated in a precomputed input Gram matrix.
SYMMETRY_TOLERANCE = 1e-8


@dataclass(frozen=True)
class InputKernel:
    """The kernel on inputs: ``name`` in :data:`INPUT_KERNELS`; ``gamma`` (p,) per-dimension
    inverse squared widths of the RBF kernel (empty otherwise)."""

    name: str
    gamma: np.ndarray

    def cross(
        self, X: np.ndarray, basis_index: np.ndarray, basis_inputs: np.ndarray | None
    ) -> np.ndarray:
        """k(x, b) for the rows x of X and the basis vectors b, shape (len(X), D).

        ``basis_index`` are training rows (columns of X for a precomputed kernel),
        ``basis_inputs`` their input rows (unused for a precomputed kernel). O(Q D p).
        """
        if self.name == "precomputed":
            return np.ascontiguousarray(X[:, basis_index], dtype=np.float64)
        assert basis_inputs is not None
        if self.name == "linear":
            return X @ basis_inputs.T
        scale = np.sqrt(self.gamma)
        A, B = X * scale, basis_inputs * scale
        # -||a - b||^2 = 2 a.b - |a|^2 - |b|^2, built in place: one (Q, D) array
        out = A @ (2.0 * B.T)
        out -= np.einsum("ij,ij->i", A, A)[:, None]
        out -= np.einsum("ij,ij->i", B, B)[None, :]
        np.minimum(out, 0.0, out=out)
        return np.exp(out, out=out)

    def diag(self, X: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """k(x_i, x_i) of training rows ``rows`` (X: the training inputs). O(n p)."""
        if self.name == "precomputed":
            return X[rows, rows].astype(np.float64)
        if self.name == "linear":
            return np.einsum("ij,ij->i", X[rows], X[rows])
        return np.ones(len(rows))

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.name, "gamma": [float(g) for g in self.gamma]}


def check_auto_gamma(X: Any) -> None:
    """Raise DataError when the RBF width ``gamma='auto'`` (Sun & Yao's: one over the mean
    squared distance between two training rows) is undefined on the training inputs X
    (N, p), dense or scipy sparse: one row, or rows that are all the same, have no spread to
    take a width from; the message says which and to give ``gamma``. The rule
    KernelRidgeRegressor and KRRBoostRegressor apply when they fit, for a caller to check
    inputs before fitting. O(N p), without a dense copy of a sparse X."""
    n = int(X.shape[0])
    if n > 1 and sp.issparse(X):
        varies = bool((X.max(axis=0) - X.min(axis=0)).count_nonzero())
    elif n > 1:
        varies = bool(np.ptp(np.asarray(X, dtype=np.float64), axis=0).any())
    else:
        varies = False
    if not varies:
        why = (
            f"there is {'one training sample' if n == 1 else 'no training sample'} "
            f"(n_samples = {n})"
            if n <= 1
            else "every training input is the same"
        )
        raise DataError(f"gamma='auto' is undefined when {why}; give gamma")


def make_input_kernel(name: str, gamma: Any, X: np.ndarray) -> InputKernel:
    """The input kernel for training inputs X (N, p): RBF widths resolved (``gamma`` "auto":
    Sun & Yao's single width, gamma = 1 / theta with theta the mean squared distance between
    two distinct training rows, = 2 N / (N - 1) sum_d var(x_d), O(N p)); a precomputed Gram
    matrix checked square and symmetric (O(N^2))."""
    n, p = X.shape
    if name == "precomputed":
        if p != n:
            raise DataError(
                f"a precomputed input kernel needs X as the (N, N) Gram matrix of the training "
                f"inputs: got shape {X.shape}"
            )
        scale = max(float(np.abs(X).max()), np.finfo(float).tiny)
        if float(np.abs(X - X.T).max()) > SYMMETRY_TOLERANCE * scale:
            raise DataError("the precomputed input Gram matrix X is not symmetric")
        return InputKernel(name, np.empty(0))
    if name == "linear":
        return InputKernel(name, np.empty(0))
    with np.errstate(over="ignore"):  # an overflow is refused below, with the fix
        squared_norm = float(np.max(np.einsum("ij,ij->i", X, X), initial=0.0))
    if not np.isfinite(squared_norm):
        raise DataError(
            "the RBF input kernel cannot take inputs of this scale: their squared norms "
            "overflow float64, so every kernel value would be 0 or undefined; scale the "
            "inputs (e.g. standardise each column)"
        )
    if isinstance(gamma, str):  # "auto"
        theta = 2.0 * n / max(n - 1, 1) * float(X.var(axis=0).sum())
        if theta <= 0.0:
            check_auto_gamma(X)  # one row, or every row the same: says so
            raise DataError(
                "gamma='auto' is undefined for inputs of this scale: their squared "
                "distances underflow to 0 in float64; scale the inputs (e.g. standardise "
                "each column) or give gamma"
            )
        widths = np.full(p, 1.0 / theta)
    elif isinstance(gamma, numbers.Real):
        widths = np.full(p, float(gamma))
    else:
        widths = np.asarray(gamma, dtype=np.float64)
        if widths.shape != (p,):
            raise DataError(
                f"gamma has {widths.size} values but X has {p} features: give one float, or "
                "one per input feature (ARD)"
            )
    return InputKernel(name, widths)


# ---------------------------------------------------------------------------- the sparse fit
def whitening(K_DD: np.ndarray) -> np.ndarray:
    """W = V S^{-1/2} (D, k) from K_DD = V S V^T, the directions with eigenvalue below
    EIGEN_TOLERANCE x the largest dropped: W^T K_DD W = I, so on the features K_D W the
    penalty alpha^T K_DD alpha becomes ||beta||^2 (alpha = W beta). O(D^3)."""
    s, V = linalg.eigh(K_DD)
    keep = s > EIGEN_TOLERANCE * max(float(s[-1]), np.finfo(float).tiny)
    return V[:, keep] / np.sqrt(s[keep])


def solve_sparse_krr(gram_blocks: Any, K_DD: np.ndarray, lam: float, n_targets: int) -> np.ndarray:
    """alpha (D, r) minimising ||R - K_D alpha||^2 + lam alpha^T K_DD alpha.

    ``gram_blocks`` yields (K_D block (b, D), R block (b, r)) over the fitting rows, so K_D
    need not be held whole. Stable form: with W = :func:`whitening` (K_DD), alpha = W beta
    where beta is the ridge solution (B^T B + lam I)^{-1} B^T R on the features B = K_D W
    (the penalty becomes ||beta||^2, so the system's eigenvalues are >= lam).
    O(n D^2 + D^3).
    """
    W = whitening(K_DD)
    k = W.shape[1]
    BtB, BtR = np.zeros((k, k)), np.zeros((k, n_targets))
    for K_block, R_block in gram_blocks:
        B = K_block @ W
        BtB += B.T @ B
        BtR += B.T @ R_block
    BtB[np.diag_indices(k)] += lam
    beta = linalg.solve(BtB, BtR, assume_a="pos")
    return W @ beta


# ---------------------------------------------------------------------------- basis selection
def select_info_gain(
    columns: Any, diag: np.ndarray, R: np.ndarray, n_basis: int, lam: float
) -> np.ndarray:
    """Greedy forward selection of basis vectors among n candidates, positions (D',), D' <= D.

    An information-gain criterion in the spirit of Seeger, Williams & Lawrence's fast
    forward selection (AISTATS 2003), scoring only the candidate's own marginal. With the
    basis I chosen so far and the sparse KRR on it read as a Gaussian process with noise
    variance lam (projected-process model), candidate i has p_i = k_ii - Q_ii of its prior
    variance outside span{k(., x_I)} (Nystrom residual), and the current fit predicts its
    targets R_i with mean mu_i (r,) and variance s_i^2. Adding i lets that part be learnt
    from R_i; the score is the KL divergence from prior to posterior of that part,

        Delta_i = 1/2 [ r (log(1 + p_i / v_i) - p_i / (p_i + v_i))
                        + p_i ||R_i - mu_i||^2 / (p_i + v_i)^2 ],   v_i = lam + s_i^2,

    summed over the r output columns (independent GPs sharing the kernel). It favours rows
    far from the basis (large p_i) that the current fit predicts badly (large residual).
    p, mu and s^2 are updated for all candidates in O(n (D + r)) per added vector (rank-one
    updates of the incomplete Cholesky factor of K and of the Cholesky factor of
    lam K_II + K_In K_nI), so the selection costs O(n D (D + r)) plus n D kernel values.
    Stops early when every candidate's p_i is below RESIDUAL_VARIANCE_TOLERANCE x max k_ii.

    ``columns(j)`` returns the kernel column k(candidates, candidate j), shape (n,).
    """
    n, r = R.shape
    D = min(n_basis, n)
    G = np.zeros((D, n))  # K ~ G^T G: rows of the incomplete Cholesky factor
    V = np.zeros((D, n))  # rows of L^{-1} K_In, L L^T = lam K_II + K_In K_nI
    L = np.zeros((D, D))
    K_cols = np.zeros((D, n))
    p = diag.astype(np.float64).copy()
    mu = np.zeros_like(R)
    s2 = np.zeros(n)
    chosen: list[int] = []
    available = np.ones(n, dtype=bool)
    floor = RESIDUAL_VARIANCE_TOLERANCE * max(float(diag.max()), np.finfo(float).tiny)
    for t in range(D):
        pp = np.where(available, np.maximum(p, 0.0), 0.0)
        if pp.max() <= floor:
            break
        v = lam + s2
        res2 = ((R - mu) ** 2).sum(1)
        score = 0.5 * (r * (np.log1p(pp / v) - pp / (pp + v)) + pp * res2 / (pp + v) ** 2)
        score[pp <= floor] = -np.inf
        j = int(np.argmax(score))
        k = columns(j)
        # incomplete Cholesky of K: the new row, then the residual variances
        g = (k - G[:t].T @ G[:t, j]) / np.sqrt(pp[j])
        G[t] = g
        p -= g * g
        # Cholesky of M = lam K_II + K_In K_nI grown by one row and column
        m = lam * K_cols[:t, j] + K_cols[:t] @ k
        m_jj = lam * diag[j] + k @ k
        l_row = (
            linalg.solve_triangular(L[:t, :t], m, lower=True, check_finite=False)
            if t
            else np.zeros(0)
        )
        l_jj = np.sqrt(max(m_jj - l_row @ l_row, np.finfo(float).tiny))
        L[t, :t], L[t, t] = l_row, l_jj
        v_row = (k - l_row @ V[:t]) / l_jj
        V[t], K_cols[t] = v_row, k
        # the sparse fit's mean V^T V R and variance lam ||V_i||^2, one rank-one term more
        mu += np.outer(v_row, v_row @ R)
        s2 += lam * v_row * v_row
        available[j] = False
        chosen.append(j)
    return np.array(chosen, dtype=np.int64)


# ---------------------------------------------------------------------------- the learner
@dataclass(frozen=True)
class KRRStage:
    """One fitted sparse KRR: ``basis`` training rows (D,) (columns of a precomputed Gram),
    ``positions`` (D,) of those rows among the learner's training rows, ``alpha`` (D, r)."""

    basis: np.ndarray
    positions: np.ndarray
    alpha: np.ndarray


class SparseKRRLearner:
    """Fits one :class:`KRRStage` per call on a random subset of the training rows.

    ``X`` holds every row given to ``fit`` (for a precomputed kernel, the N x N Gram matrix);
    ``rows`` (sorted) are those the learner may use (all, or the rows left after an early
    stopping hold-out), so targets are indexed by position in ``rows``. ``weight`` (one per
    row of ``rows``, > 0): sample weights; each stage then fits the weighted sum
    sum_i w_i ||R_i - K_i alpha||^2 + lambda alpha^T K_DD alpha by scaling the rows of K_D
    and R by sqrt(w_i) (as :class:`~okcore.kernel_models.ridge.KernelRidgeRegressor`); the
    subsets and the basis selection do not see the weights.
    """

    def __init__(
        self,
        X: np.ndarray,
        rows: np.ndarray,
        kernel: InputKernel,
        *,
        subset_size: int,
        n_basis: int,
        selection: str,
        alpha: float,
        weight: np.ndarray | None = None,
    ) -> None:
        self.X, self.rows, self.kernel = X, rows, kernel
        self.root_weight = None if weight is None else np.sqrt(weight)[:, None]
        self.subset_size = min(subset_size, len(rows))
        self.n_basis = min(n_basis, self.subset_size)
        self.selection, self.alpha = selection, alpha

    def basis_inputs(self, basis: np.ndarray) -> np.ndarray | None:
        """The input rows of basis vectors (None for a precomputed kernel)."""
        return None if self.kernel.name == "precomputed" else self.X[basis]

    def cross(self, positions: np.ndarray, basis: np.ndarray) -> np.ndarray:
        """k(x, b) for the learner's rows at ``positions`` and the basis rows, (n, D)."""
        return self.kernel.cross(self.X[self.rows[positions]], basis, self.basis_inputs(basis))

    def fit_stage(self, target: np.ndarray, rng: np.random.Generator) -> KRRStage:
        """A sparse KRR fitted to ``target`` (one row per learner row, r columns) on a random
        subset, with its basis chosen by the selection rule. O(n D (D + r + p))."""
        n_rows = len(self.rows)
        subset = (
            np.arange(n_rows)
            if self.subset_size == n_rows
            else np.sort(rng.choice(n_rows, self.subset_size, replace=False))
        )
        R = target[subset]
        if self.selection == "random":
            local = np.sort(rng.choice(len(subset), self.n_basis, replace=False))
        else:
            X_sub = self.X[self.rows[subset]]

            def column(j: int) -> np.ndarray:
                b = self.rows[subset[[j]]]
                return self.kernel.cross(X_sub, b, self.basis_inputs(b))[:, 0]

            diag = self.kernel.diag(self.X, self.rows[subset])
            local = np.sort(select_info_gain(column, diag, R, self.n_basis, self.alpha))
        positions = subset[local]
        basis = self.rows[positions]
        K_DD = self.cross(positions, basis)

        def blocks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            for s in range(0, len(subset), ROW_BLOCK):
                part = subset[s : s + ROW_BLOCK]
                K_part, R_part = self.cross(part, basis), R[s : s + ROW_BLOCK]
                if self.root_weight is None:
                    yield K_part, R_part
                else:  # W^1/2 K_D, W^1/2 R: the weighted sum of squares
                    yield self.root_weight[part] * K_part, self.root_weight[part] * R_part

        alpha = solve_sparse_krr(blocks(), (K_DD + K_DD.T) / 2.0, self.alpha, R.shape[1])
        return KRRStage(basis=basis, positions=positions, alpha=alpha)
