"""Sun & Yao's regularized ensemble step for boosted kernel models ("Boosting Kernel Models
for Regression", ICDM 2006, eq. 10-12 and 19-21, appendix).

The ensemble F = F_0 + sum_j c_j g_j of kernel models g_j(x) = k(x, D_j) alpha_j is fitted
to the penalised objective (their eq. 12)

    J(c) = 1/2 sum_i ||phi_i - F(x_i)||^2 + mu/2 c^T Q c,   Q_jl = <g_j, g_l>_H,

where c^T Q c = ||F - F_0||_H^2 (the outputs' RKHS norm: a sum over the r factor columns);
with sample weights the data term is 1/2 sum_i w_i ||phi_i - F(x_i)||^2: the callers pass
W^1/2 g, W^1/2 R and W^1/2 K_NB to :func:`stage_coefficient` and :func:`refine_stage`, and
the weights to :class:`Reweighting`.
The data term is summed, not averaged, so that mu is on the scale of the base learner's
lambda: with mu = lambda, J is the full-data KRR objective restricted to the span of the
stage models (the paper's 1/N-averaged form has mu_paper = mu / N). F_0 is not penalised.

Every inner product in H is computed by the reproducing property,
<h, g_l>_H = sum_{b in D_l} alpha_{l,b} . h(x_b), from values at training rows: no kernel
matrix beyond the stage's own.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg


def stage_coefficient(
    g: np.ndarray,
    residual: np.ndarray,
    ensemble_at_basis: np.ndarray,
    alpha: np.ndarray,
    K_BB: np.ndarray,
    mu: float,
) -> float:
    """Eq. 20: the c minimising eq. 19, J(c) = 1/2 ||R - c g||^2 + mu/2 (c^2 <g, g>_H +
    2 c <F - F_0, g>_H), with the previous coefficients fixed:

        c = (<g, R> - mu <F - F_0, g>_H) / (||g||^2 + mu <g, g>_H).

    ``g`` (N, r) the new model at the training rows, ``residual`` R = phi - F there,
    ``ensemble_at_basis`` (D, r) F - F_0 at the model's basis rows, ``alpha`` (D, r),
    ``K_BB`` (D, D) the kernel between the basis rows. O(N r + D^2 r).
    """
    norm_h = float(np.vdot(alpha, K_BB @ alpha))
    denominator = float(np.vdot(g, g)) + mu * norm_h
    if denominator <= 0.0:  # the model is zero at every training row and in H
        return 0.0
    return (float(np.vdot(g, residual)) - mu * float(np.vdot(ensemble_at_basis, alpha))) / (
        denominator
    )


def refine_stage(
    K_NB: np.ndarray,
    K_BB: np.ndarray,
    residual: np.ndarray,
    ensemble_at_basis: np.ndarray,
    beta: np.ndarray,
    mu: float,
    n_iter: int,
) -> np.ndarray:
    """Eq. 21: ``n_iter`` conjugate-gradient steps on the new model's coefficients
    beta = c alpha (D, r), the previous models fixed, from the given beta:

        min_beta 1/2 ||R - K_NB beta||^2 + mu/2 (beta^T K_BB beta + 2 <F - F_0, beta>_H),

    i.e. (K_NB^T K_NB + mu K_BB) beta = K_NB^T R - mu (F - F_0)(basis), one CG per output
    column (the objective separates over columns). Every CG iterate minimises the quadratic
    over a growing affine subspace through the start, so J never increases. O(N D r) per
    step: K_NB^T K_NB is never formed. Columns already at their minimum stop.
    """

    def apply(P: np.ndarray) -> np.ndarray:
        return K_NB.T @ (K_NB @ P) + mu * (K_BB @ P)

    beta = beta.copy()
    rhs = K_NB.T @ residual - mu * ensemble_at_basis
    res = rhs - apply(beta)
    direction = res.copy()
    rr = np.einsum("ij,ij->j", res, res)
    tiny = np.finfo(float).tiny
    for _ in range(n_iter):
        active = rr > 1e-30 * max(float(np.einsum("ij,ij->j", rhs, rhs).max()), tiny)
        if not active.any():
            break
        A_dir = apply(direction)
        curvature = np.einsum("ij,ij->j", direction, A_dir)
        step = np.where(active & (curvature > 0), rr / np.maximum(curvature, tiny), 0.0)
        beta += step * direction
        res -= step * A_dir
        rr_new = np.einsum("ij,ij->j", res, res)
        direction = res + np.where(active, rr_new / np.maximum(rr, tiny), 0.0) * direction
        rr = rr_new
    return beta


class Reweighting:
    """Sun & Yao's re-weighting of all coefficients (appendix): after each new model, c is
    the exact minimiser of J over every c_j,

        (G + mu Q) c = b,   G_jl = <g_j, g_l> over the training rows, b_j = <g_j, phi - F_0>.

    Adding model m computes one row of G, Q and b, O(N r m) (Q by the reproducing property
    from the stored training values of the g_j), and solves the m x m system, O(m^3): in all
    O(N r M^2 + M^4). Holds every g_j at the training rows: N r M floats.
    """

    def __init__(self, target: np.ndarray, mu: float, weight: np.ndarray | None = None) -> None:
        """``target`` phi - F_0 (N, r) at the training rows; ``weight`` (N,): sample
        weights, G and b then weighted inner products over the rows (None: unweighted)."""
        self.target, self.mu = target, mu
        self.weight = None if weight is None else weight[:, None]
        self.values: list[np.ndarray] = []  # g_j at the training rows, (N, r) each
        self.positions: list[np.ndarray] = []
        self.alphas: list[np.ndarray] = []
        self.G = np.zeros((0, 0))
        self.Q = np.zeros((0, 0))
        self.b = np.zeros(0)

    def add(self, g: np.ndarray, positions: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        """Record model g (values (N, r) at the training rows; basis ``positions`` among
        them, ``alpha``) and return the re-solved coefficients (m,)."""
        m = len(self.values)
        self.values.append(g)
        self.positions.append(positions)
        self.alphas.append(alpha)
        wg = g if self.weight is None else self.weight * g  # sum_i w_i <., g(x_i)>
        g_row = np.array([np.vdot(v, wg) for v in self.values])
        # <g_j, g_m>_H = sum_b alpha_m,b . g_j(x_b) = sum_b alpha_j,b . g_m(x_b)
        q_row = np.array([np.vdot(alpha, v[positions]) for v in self.values])
        self.G = _grow(self.G, g_row)
        self.Q = _grow(self.Q, q_row)
        self.b = np.append(self.b, np.vdot(wg, self.target))
        A = self.G + self.mu * (self.Q + self.Q.T) / 2.0
        try:
            c = linalg.solve(A, self.b, assume_a="pos")
        except (linalg.LinAlgError, ValueError):
            c = linalg.lstsq(A, self.b)[0]  # collinear models: the minimum-norm minimiser
        assert len(c) == m + 1
        return np.asarray(c, dtype=np.float64)

    def penalty(self, c: np.ndarray) -> float:
        """c^T Q c = ||F - F_0||_H^2."""
        return float(c @ self.Q @ c)

    def combine(self, c: np.ndarray) -> np.ndarray:
        """sum_j c_j g_j at the training rows, (N, r). O(N r M)."""
        out = np.zeros_like(self.values[0])
        for cj, v in zip(c, self.values, strict=True):
            out += cj * v
        return out


def _grow(A: np.ndarray, row: np.ndarray) -> np.ndarray:
    """The symmetric matrix A with ``row`` appended as last row and column."""
    m = len(row)
    out = np.empty((m, m))
    out[: m - 1, : m - 1] = A
    out[m - 1, :] = row
    out[:, m - 1] = row
    return out
