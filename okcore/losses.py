"""Losses for the OKBoost stage loop, in the output feature space (factor form).

A loss is a small object: the initial model, the residuals a tree is fitted to, and the
loss value. Only the square loss of the paper exists now; robust losses plug in here.
"""

from __future__ import annotations

import numpy as np
from numba import njit


class SquaredFeatureLoss:
    """l(y, F) = ||phi(y) - F||^2 (paper section 2.3), so the negative gradient is phi - F."""

    name = "squared"

    def init_estimate(self, phi: np.ndarray) -> np.ndarray:
        """F_0: the mean of the training features (Algorithm 3, line 1), shape (r,)."""
        return phi.mean(axis=0)

    def negative_gradient(self, phi: np.ndarray, F: np.ndarray) -> np.ndarray:
        """Residuals phi_i - F(x_i) the next tree is fitted to, shape (n, r)."""
        return phi - F

    def __call__(self, phi: np.ndarray, diag: np.ndarray, F: np.ndarray) -> float:
        """Mean of k(y, y) - 2 <F, phi(y)> + ||F||^2 over the rows. O(n r)."""
        return float(
            np.mean(diag - 2.0 * np.einsum("ij,ij->i", F, phi) + np.einsum("ij,ij->i", F, F))
        )

    def step(
        self,
        phi: np.ndarray,
        diag: np.ndarray,
        F: np.ndarray,
        value: np.ndarray,
        leaf: np.ndarray,
        learning_rate: float,
        residual: np.ndarray,
    ) -> float:
        """One boosting round in one pass: F += nu * value[leaf] in place, the next residuals
        phi - F written into ``residual``, and the new loss returned. O(N r), reading phi and
        F once (the separate numpy steps took ~5 passes over N x r arrays)."""
        return float(_squared_step(phi, diag, F, value, leaf, learning_rate, residual))


@njit(cache=True, nogil=True)  # no fastmath: F must round as F + nu * v does in numpy
def _squared_step(phi, diag, F, value, leaf, nu, residual):  # pragma: no cover - jit
    n, r = phi.shape
    total = 0.0
    for i in range(n):
        row = leaf[i]
        acc = diag[i]
        for c in range(r):
            f = F[i, c] + nu * value[row, c]
            F[i, c] = f
            d = phi[i, c] - f
            residual[i, c] = d
            acc += f * f - 2.0 * f * phi[i, c]
        total += acc
    return total / n
