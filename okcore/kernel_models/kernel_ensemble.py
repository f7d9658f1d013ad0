"""Flat arrays of a fitted ensemble of kernel models (boosted sparse KRR, Sun & Yao 2006) and
the predictions computed from them: the counterpart of :class:`okcore.trees.ensemble.TreeEnsemble`
for the prediction API of :class:`okcore.base.OKEstimator`.

F(x) = F_0 + sum_j c_j sum_{b in D_j} k(x, x_b) alpha_{j,b}, in the factor coordinates of the
output space: F_0 (r,) the training mean, c_j the stage coefficients, D_j the stage's basis
rows, alpha_j (D_j, r). The stages' basis rows and alphas are stored concatenated with
offsets; the basis input rows are stored too (not for a precomputed input kernel, whose
queries are kernel values against the training rows), so a saved model predicts alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .._validation import dense_float64
from ..outputs.space import RANK_TOLERANCE
from .krr import ROW_BLOCK, InputKernel


@dataclass(frozen=True)
class KernelEnsemble:
    """M kernel models over the N training rows.

    kernel : str, "rbf", "linear" or "precomputed"; gamma : float64 (p,) RBF widths (ARD),
        empty otherwise.
    init : float64 (r,) F_0.  coef : float64 (M,) c_j.
    basis_offset : int64 (M + 1,) prefix offsets of the stages' basis vectors.
    basis_index : int64 (T,) training row of each basis vector (T = sum_j D_j).
    basis_inputs : float64 (T, p) their inputs, (T, 0) for a precomputed kernel.
    alpha : float64 (T, r).
    train_phi : the output space's factor (N, r) the weights are expressed over (not saved:
        it is the output space's ``phi``).
    """

    kernel: str
    gamma: np.ndarray
    init: np.ndarray
    coef: np.ndarray
    basis_offset: np.ndarray
    basis_index: np.ndarray
    basis_inputs: np.ndarray
    alpha: np.ndarray
    train_phi: np.ndarray = field(repr=False, compare=False)

    @property
    def n_trees(self) -> int:
        """M, the number of stages (named as the trees' count: the prediction API's word)."""
        return len(self.coef)

    @property
    def input_kernel(self) -> InputKernel:
        return InputKernel(self.kernel, self.gamma)

    def truncate(self, n_stages: int) -> KernelEnsemble:
        """The first ``n_stages`` stages with their coefficients (early stopping)."""
        end = int(self.basis_offset[n_stages])
        return KernelEnsemble(
            kernel=self.kernel,
            gamma=self.gamma,
            init=self.init,
            coef=self.coef[:n_stages],
            basis_offset=self.basis_offset[: n_stages + 1],
            basis_index=self.basis_index[:end],
            basis_inputs=self.basis_inputs[:end],
            alpha=self.alpha[:end],
            train_phi=self.train_phi,
        )

    # ------------------------------------------------------------------ predictions
    def stage_values(self, X: np.ndarray) -> Iterator[np.ndarray]:
        """h_j(x) = c_j k(x, D_j) alpha_j for j = 1..M, each (Q, r), a block of at most
        ROW_BLOCK queries' kernel values at a time. O(Q T (p + r)) in all."""
        X = dense_float64(X)
        kernel = self.input_kernel
        inputs = None if self.kernel == "precomputed" else self.basis_inputs
        for j in range(self.n_trees):
            lo, hi = int(self.basis_offset[j]), int(self.basis_offset[j + 1])
            out = np.empty((X.shape[0], self.alpha.shape[1]))
            for s in range(0, X.shape[0], ROW_BLOCK):
                K = kernel.cross(
                    X[s : s + ROW_BLOCK],
                    self.basis_index[lo:hi],
                    None if inputs is None else inputs[lo:hi],
                )
                out[s : s + ROW_BLOCK] = self.coef[j] * (K @ self.alpha[lo:hi])
            yield out

    def decision(self, X: np.ndarray) -> np.ndarray:
        """F(x) in factor coordinates, (Q, r). O(Q T (p + r)) for T basis vectors in all."""
        F = np.tile(self.init, (X.shape[0], 1))
        for h in self.stage_values(X):
            F += h
        return F

    def staged_decision(self, X: np.ndarray) -> Iterator[np.ndarray]:
        """F(x) after each stage j = 1..M with the fitted coefficients, each a new (Q, r)
        array (the last is :meth:`decision`). O(Q T (p + r)) in all."""
        F = np.tile(self.init, (X.shape[0], 1))
        for h in self.stage_values(X):
            F += h
            yield F.copy()

    @cached_property
    def _phi_pinv(self) -> np.ndarray:
        """(Phi^T Phi)^+ Phi^T, shape (r, N), from the eigendecomposition of the r x r Gram
        Phi^T Phi (eigenvalues below RANK_TOLERANCE x the largest dropped). O(N r^2)."""
        s, U = np.linalg.eigh(self.train_phi.T @ self.train_phi)
        keep = s > RANK_TOLERANCE * max(float(s[-1]), np.finfo(float).tiny)
        return (U[:, keep] / s[keep]) @ (U[:, keep].T @ self.train_phi.T)

    def weights(self, X: np.ndarray, n_threads: int = 1) -> np.ndarray:
        """W^F, (Q, N): the minimum-norm weights w(x) with w(x) Phi = F(x).

        F(x) lies in span{phi(y_i)} (F_0 is their mean and every alpha a combination of
        residual rows), so these weights reproduce F(x), and with it every kernel
        prediction, pre-image and loss, exactly. Unlike the trees' W^F they are not the
        algorithm's own smoother (with Sun & Yao's c_j, the CG refinement or the info-gain
        selection, F depends on the outputs non-linearly, so there is none), and their rows
        need not sum to 1. O(N r^2) once per model, then O(Q (T (p + r) + N r)).
        ``n_threads`` is unused (BLAS threads apply).
        """
        return self.weights_of(self.decision(X))

    def weights_of(self, F: np.ndarray) -> np.ndarray:
        """The minimum-norm weights w with w Phi = F for features F (Q, r) in span{phi(y_i)},
        (Q, N). O(N r^2) once per model, then O(Q N r)."""
        return F @ self._phi_pinv
