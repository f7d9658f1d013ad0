"""The output feature space seen through a factor Phi of the Gram matrix (math note section 2).

K = Phi Phi^T with Phi of shape (N, r). Every learner works on Phi, never on N x N blocks.
The exact factor comes from the eigendecomposition K = U diag(lam) U^T, Phi = U sqrt(lam)
(r = numerical rank); a linear kernel uses Phi = Y itself. New outputs are embedded by the
Nystrom extension phi(y) -> k(y, Y) U lam^{-1/2} = k(y, Y) Phi / lam, which is the exact
projection of phi(y) on span{phi(y_i)}: inner products with any F in that span are exact.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np
from scipy import linalg
from scipy.sparse.linalg import LinearOperator, eigsh

from . import graph
from ._validation import check_matrix
from .exceptions import DataError, KernelError
from .kernels import DiffusionKernel, Kernel, LinearKernel, PrecomputedKernel, make_kernel

#: Relative tolerance for asymmetry and for negative eigenvalues of a user Gram matrix.
PSD_TOLERANCE = 1e-8
#: Eigenvalues below this fraction of the largest are dropped from the exact factor.
RANK_TOLERANCE = 1e-12


@dataclass(frozen=True)
class OutputSpace:
    """Training outputs in factor form.

    Attributes
    ----------
    phi : ndarray of shape (n_samples, rank)
        Factor with K = phi @ phi.T (exactly, up to dropped eigenvalues below ``tol``).
    diag : ndarray of shape (n_samples,)
        k(y_i, y_i), from the kernel (not from phi, so truncation never biases it).
    kernel : Kernel
        The output kernel (``PrecomputedKernel`` for a user Gram matrix).
    eigenvalues : ndarray of shape (rank,) or None
        Eigenvalues of K kept in the factor (None when phi = Y for the linear kernel).
    outputs : ndarray of shape (n_samples, n_outputs) or None
        Training outputs when known (None for Gram-only or graph outputs).
    """

    phi: np.ndarray
    diag: np.ndarray
    kernel: Kernel
    eigenvalues: np.ndarray | None = None
    outputs: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        return int(self.phi.shape[0])

    @property
    def rank(self) -> int:
        return int(self.phi.shape[1])

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_outputs(
        cls,
        Y: Any,
        kernel: Kernel | str | dict = "linear",
        *,
        rank: int | None = None,
        tol: float = RANK_TOLERANCE,
    ) -> OutputSpace:
        """Space of outputs Y (N, d) under ``kernel``. O(N^3) eigendecomposition unless linear."""
        kern = make_kernel(kernel)
        if not kern.needs_outputs:
            raise KernelError(f"the {kern.name!r} kernel takes no outputs Y")
        Y = check_matrix(Y, "Y", allow_1d=True)
        if isinstance(kern, LinearKernel) and rank is None:
            return cls(phi=Y.copy(), diag=kern.diag(Y), kernel=kern, outputs=Y)
        phi, lam = factorize_gram(kern.gram(Y), rank=rank, tol=tol, name=f"{kern.name} Gram matrix")
        return cls(phi=phi, diag=kern.diag(Y), kernel=kern, eigenvalues=lam, outputs=Y)

    @classmethod
    def from_gram(
        cls, gram: Any, *, rank: int | None = None, tol: float = RANK_TOLERANCE
    ) -> OutputSpace:
        """Space of a precomputed Gram matrix (N, N), validated (square, finite, symmetric, PSD)."""
        K = check_gram(gram)
        phi, lam = factorize_gram(K, rank=rank, tol=tol, name="gram")
        return cls(phi=phi, diag=np.diag(K).copy(), kernel=PrecomputedKernel(), eigenvalues=lam)

    @classmethod
    def from_graph(
        cls,
        kernel: DiffusionKernel,
        n_vertices: int,
        *,
        rank: int | None = None,
        tol: float = RANK_TOLERANCE,
    ) -> OutputSpace:
        """Diffusion kernel expm(-beta L) over ``n_vertices`` training vertices.

        Phi = U exp(-beta Lambda / 2) from the eigenvectors of the Laplacian L (math note s. 3).
        """
        kernel.check_vertices(n_vertices)
        _check_truncation(rank, tol)
        L = graph.laplacian(kernel.edges, n_vertices).toarray()
        lam_l, U = linalg.eigh(L)
        lam = np.exp(-kernel.beta * lam_l)
        # k(v, v) from every eigenpair, as the class promises: truncation never biases diag
        diag = np.einsum("ij,ij,j->i", U, U, lam)
        keep = _kept(lam, rank, tol)
        lam, U = lam[keep], U[:, keep]
        phi = U * np.sqrt(lam)
        return cls(phi=phi, diag=diag, kernel=kernel, eigenvalues=lam)

    @classmethod
    def build(
        cls,
        n_samples: int,
        Y: Any = None,
        *,
        gram: Any = None,
        kernel: Any = None,
        rank: int | None = None,
        tol: float = RANK_TOLERANCE,
    ) -> OutputSpace:
        """Dispatch of ``fit(X, Y=None, *, gram=None, kernel=None)``; checks N against X."""
        if gram is not None:
            if Y is not None or (kernel is not None and make_kernel(kernel).name != "precomputed"):
                raise DataError("pass either gram=... or outputs Y with a kernel, not both")
            space = cls.from_gram(gram, rank=rank, tol=tol)
        elif kernel is not None and isinstance(make_kernel(kernel), DiffusionKernel):
            if Y is not None:
                raise DataError(
                    "the diffusion kernel takes no outputs Y: its outputs are the vertices"
                )
            space = cls.from_graph(make_kernel(kernel), n_samples, rank=rank, tol=tol)
        elif Y is not None:
            space = cls.from_outputs(Y, "linear" if kernel is None else kernel, rank=rank, tol=tol)
        else:
            raise DataError(
                "no outputs given: pass Y (with an optional kernel), gram=K, or a diffusion kernel"
            )
        if space.n_samples != n_samples:
            what = "gram" if gram is not None else "Y"
            raise DataError(
                f"X has {n_samples} rows but {what} describes {space.n_samples} outputs; "
                "they must match"
            )
        return space

    # ------------------------------------------------------------------ use
    def subset(self, rows: np.ndarray) -> OutputSpace:
        """The same space restricted to training rows ``rows`` (exact: a sub-factor)."""
        return replace(
            self,
            phi=self.phi[rows],
            diag=self.diag[rows],
            outputs=None if self.outputs is None else self.outputs[rows],
        )

    def embed(self, Y_new: Any) -> tuple[np.ndarray, np.ndarray]:
        """Factor coordinates and k(y, y) of new outputs: ((C, rank), (C,)). O(C N d + C N r)."""
        if not self.kernel.needs_outputs:
            raise DataError(
                f"a {self.kernel.name!r} output space cannot embed output vectors; "
                "pass candidate_gram and candidate_diag instead"
            )
        width = self.outputs.shape[1] if self.outputs is not None else None
        Y_new = check_matrix(Y_new, "candidates", allow_1d=width == 1)
        if width is not None and Y_new.shape[1] != width:
            raise DataError(
                f"candidates have {Y_new.shape[1]} columns but the outputs have {width}"
            )
        diag = self.kernel.diag(Y_new)
        if self.eigenvalues is None:  # linear kernel, phi = Y
            return Y_new, diag
        return self.embed_gram(self.kernel.gram(Y_new, self.outputs)), diag

    def embed_gram(self, gram_cross: Any) -> np.ndarray:
        """Nystrom coordinates from the kernel between new and training outputs (C, N) -> (C, rank)."""
        G = check_matrix(gram_cross, "candidate_gram")
        if G.shape[1] != self.n_samples:
            raise DataError(
                f"candidate_gram must have one column per training output ({self.n_samples}): "
                f"got shape {G.shape}"
            )
        if self.eigenvalues is None or not self._orthogonal_factor:
            # phi = Y (linear) or a subset's rows: the minimum-norm c with phi c = g is the
            # projection on span{phi(y_i)}, as G phi / lam is for the whole factor
            coef, *_ = np.linalg.lstsq(self.phi, G.T, rcond=None)
            return np.ascontiguousarray(coef.T)
        return (G @ self.phi) / self.eigenvalues

    @cached_property
    def _orthogonal_factor(self) -> bool:
        """phi^T phi = diag(eigenvalues): true for the factor of a whole Gram matrix, false for
        :meth:`subset` rows (e.g. OKBoost's early-stopping hold-out), where G phi / lam is not
        the Nystrom projection. O(N r) once per space."""
        norms = np.einsum("ij,ij->j", self.phi, self.phi)
        return bool(np.allclose(norms, self.eigenvalues, rtol=1e-9, atol=0.0))


def check_gram(gram: Any, name: str = "gram") -> np.ndarray:
    """Validate a Gram matrix: square, finite, symmetric (relative tolerance PSD_TOLERANCE)."""
    try:
        K = np.asarray(gram, dtype=np.float64)
    except (TypeError, ValueError):
        raise KernelError(f"{name} must be a numeric N x N matrix") from None
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        shape = " x ".join(str(s) for s in K.shape) if K.ndim else "a scalar"
        raise KernelError(f"{name} must be square: got {shape}")
    if K.shape[0] == 0:
        raise KernelError(f"{name} is empty")
    if not np.all(np.isfinite(K)):
        i, j = np.argwhere(~np.isfinite(K))[0]
        raise KernelError(f"{name} contains NaN or infinity (first at [{i}, {j}])")
    scale = max(float(np.abs(K).max()), np.finfo(float).tiny)
    asym = float(np.abs(K - K.T).max())
    if asym > PSD_TOLERANCE * scale:
        i, j = np.unravel_index(np.argmax(np.abs(K - K.T)), K.shape)
        raise KernelError(
            f"{name} is not symmetric: |K[{i},{j}] - K[{j},{i}]| = {asym:.3g} "
            f"({asym / scale:.2e} of the largest entry; tolerance {PSD_TOLERANCE:g})"
        )
    return (K + K.T) / 2.0


def factorize_gram(
    K: np.ndarray, *, rank: int | None = None, tol: float = RANK_TOLERANCE, name: str = "gram"
) -> tuple[np.ndarray, np.ndarray]:
    """Factor K = Phi Phi^T from its eigendecomposition; reject clearly non-PSD matrices.

    Returns (phi (N, r), eigenvalues (r,)). Full eigh is O(N^3); with ``rank`` << N the
    Lanczos solver (eigsh) is used, O(N^2 rank), and one more Lanczos run bounds the
    smallest eigenvalue for the PSD check.
    """
    _check_truncation(rank, tol)
    n = K.shape[0]
    if rank is not None and rank < n // 4:
        lam, U = eigsh(K, k=rank, which="LA")
        lam_min = _smallest_eigenvalue_bound(K, float(lam.max()))
    else:
        lam, U = linalg.eigh(K)
        lam_min = float(lam[0])
    lam_max = float(lam.max())
    if lam_max <= 0:
        raise KernelError(
            f"{name} is not positive semi-definite: its largest eigenvalue is {lam_max:.3g}"
        )
    if lam_min < -PSD_TOLERANCE * lam_max:
        raise KernelError(
            f"{name} is not positive semi-definite: smallest eigenvalue {lam_min:.3g} is "
            f"{-lam_min / lam_max:.2e} of the largest (tolerance {PSD_TOLERANCE:g}); "
            "a valid kernel matrix has no clearly negative eigenvalues"
        )
    keep = _kept(lam, rank, tol)
    lam, U = lam[keep], U[:, keep]
    return np.ascontiguousarray(U * np.sqrt(lam)), lam


def _check_truncation(rank: Any, tol: Any) -> None:
    """rank: None or an int >= 1; tol in [0, 1) (a negative tol would keep negative eigenvalues)."""
    if rank is not None and (
        isinstance(rank, bool) or not isinstance(rank, numbers.Integral) or rank < 1
    ):
        raise DataError(f"rank must be None or an int >= 1: got {rank!r}")
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not 0 <= tol < 1:
        raise DataError(f"tol must be a number in [0, 1): got {tol!r}")


def _smallest_eigenvalue_bound(K: np.ndarray, lam_max: float) -> float:
    """An upper bound on the smallest eigenvalue of K, for the PSD check of the rank path.

    Lanczos for the smallest eigenvalue stalls on the cluster of near-zero eigenvalues of a
    PSD kernel matrix; the largest eigenvalue of lam_max I - K is an extreme one, found in a
    few iterations. Its Ritz value is a lower bound, so lam_max minus it never reports a
    negative eigenvalue that is not there. O(N^2) per iteration.
    """
    shifted = LinearOperator(K.shape, matvec=lambda v: lam_max * v - K @ v, dtype=np.float64)
    top = eigsh(shifted, k=1, which="LA", tol=1e-3, return_eigenvectors=False)[0]
    return lam_max - float(top)


def _kept(lam: np.ndarray, rank: int | None, tol: float) -> np.ndarray:
    """Indices of eigenvalues kept, largest first: above tol * max, at most ``rank``."""
    order = np.argsort(lam)[::-1]
    order = order[lam[order] > tol * lam.max()]
    return order[:rank] if rank is not None else order
