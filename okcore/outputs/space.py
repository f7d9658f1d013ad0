"""The output feature space seen through a factor Phi of the Gram matrix (math note section 2).

K = Phi Phi^T with Phi of shape (N, r). Every learner works on Phi, never on N x N blocks.
The exact factor comes from the eigendecomposition K = U diag(lam) U^T, Phi = U sqrt(lam)
(r = numerical rank); a linear kernel uses Phi = Y itself. New outputs are embedded by the
Nystrom extension phi(y) -> k(y, Y) U lam^{-1/2} = k(y, Y) Phi / lam, which is the exact
projection of phi(y) on span{phi(y_i)}: inner products with any F in that span are exact.

Low-rank spaces never form an N x N matrix (math note section 2, "Low-rank diffusion factors
without N x N"): the diffusion kernel from the k smallest eigenpairs of the sparse Laplacian
(Lanczos), kernels on output vectors by the Nystrom method on m landmark outputs (Williams &
Seeger 2001), K ~ K_nm K_mm^+ K_mn. Above AUTO_RANK_MIN_SAMPLES outputs a non-linear kernel
switches to them by default; ``rank >= N`` keeps the exact factor.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np
from scipy import linalg
from scipy.sparse.linalg import LinearOperator, eigsh

from .._validation import check_matrix, check_real
from ..exceptions import DataError, KernelError
from . import graph
from .kernels import DiffusionKernel, Kernel, LinearKernel, PrecomputedKernel, make_kernel

#: Relative tolerance for asymmetry and for negative eigenvalues of a user Gram matrix.
PSD_TOLERANCE = 1e-8
#: Eigenvalues below this fraction of the largest are dropped from the exact factor.
RANK_TOLERANCE = 1e-12
#: Above this many outputs a non-linear kernel gets a low-rank factor by default (rank=None):
#: the dense eigendecomposition costs O(N^3) time and 8 N^2 bytes per N x N matrix (at 4000,
#: tens of seconds and 128 MB on the project machine; docs/PERFORMANCE.md, "Low-rank output
#: spaces"). ``rank >= N`` still forces the exact factor.
AUTO_RANK_MIN_SAMPLES = 4000
#: Rank of that default low-rank factor (Laplacian eigenpairs, or Nystrom directions kept).
AUTO_RANK = 128
#: Landmark outputs of the default Nystrom factor (the best AUTO_RANK directions are kept).
AUTO_LANDMARKS = 2 * AUTO_RANK
#: Rows of K_nm computed at a time by the Nystrom factor (bounds the temporary block).
_NYSTROM_BLOCK = 4096
#: Cost model of :func:`estimate_factor_seconds`: flop rates measured on the project machine
#: (bench/lowrank_factors.py) for dense eigendecompositions / BLAS-3, and for sparse mat-vecs
#: and Lanczos, and the number of Lanczos restarts assumed.
FLOP_RATE = 2e10
SPARSE_FLOP_RATE = 1e9
LANCZOS_RESTARTS = 4
#: N x N float64 arrays alive at once in the dense eigendecomposition (the Gram matrix or the
#: Laplacian, eigh's copy of it, the eigenvectors), for :func:`estimate_factor_cost`.
DENSE_EIGH_COPIES = 3


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
    trace_fraction : float
        sum(eigenvalues kept) / trace(K), the share of the kernel's trace the factor keeps
        (1.0 for the exact factor up to ``tol`` and for phi = Y; trace from ``diag``).
    diag_exact : bool
        False when ``diag`` is an estimate (the low-rank diffusion kernel, see
        :func:`okcore.outputs.graph.diffusion_diagonal`), True when computed exactly.
    landmarks : ndarray of shape (m, n_outputs) or None
        Nystrom spaces: the landmark outputs; phi(y) = k(y, landmarks) @ feature_map.
    feature_map : ndarray of shape (m, rank) or None
        Nystrom spaces: the map U_m Lambda_m^{-1/2} V from kernel values against the landmarks
        to factor coordinates (V rotates phi to orthogonal columns).
    landmark_index : ndarray of shape (m,) or None
        Rows of the training outputs that are the landmarks (None after :meth:`subset`).
    """

    phi: np.ndarray
    diag: np.ndarray
    kernel: Kernel
    eigenvalues: np.ndarray | None = None
    outputs: np.ndarray | None = None
    trace_fraction: float = 1.0
    diag_exact: bool = True
    landmarks: np.ndarray | None = None
    feature_map: np.ndarray | None = None
    landmark_index: np.ndarray | None = None

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
        n_landmarks: int | None = None,
        random_state: Any = None,
    ) -> OutputSpace:
        """Space of outputs Y (N, d) under ``kernel``.

        - linear kernel, no ``rank``/``n_landmarks``: phi = Y, O(N d);
        - linear kernel with ``rank``: the same eigen-factor from a thin SVD of Y, O(N d^2);
        - ``n_landmarks`` = m, or a non-linear kernel with N > AUTO_RANK_MIN_SAMPLES and
          ``rank`` < N (default m = max(AUTO_LANDMARKS, rank), rank AUTO_RANK): Nystrom,
          O(N m (d + m)) time, O(N m) memory (:func:`nystrom_factor`);
        - otherwise the exact eigendecomposition of the Gram matrix, O(N^3).
        """
        kern = make_kernel(kernel)
        if not kern.needs_outputs:
            raise KernelError(f"the {kern.name!r} kernel takes no outputs Y")
        Y = check_matrix(Y, "Y", allow_1d=True)
        n = Y.shape[0]
        _check_truncation(rank, tol, n)
        _check_landmarks(n_landmarks, n)
        linear = isinstance(kern, LinearKernel)
        if n_landmarks is None and not linear and _auto_low_rank(n, rank):
            # the default above the threshold: Nystrom, never the N x N Gram matrix
            n_landmarks = min(n, max(AUTO_LANDMARKS, rank or 0))
            rank = AUTO_RANK if rank is None else rank
        diag = _kernel_diag(kern, Y, "Y")
        if n_landmarks is not None:
            rng = np.random.default_rng(random_state)
            index = np.sort(rng.choice(n, size=n_landmarks, replace=False))
            phi, lam, fmap = nystrom_factor(kern, Y, index, rank=rank, tol=tol)
            return cls(
                phi=phi,
                diag=diag,
                kernel=kern,
                eigenvalues=lam,
                outputs=Y,
                trace_fraction=_fraction(lam, diag),
                landmarks=Y[index].copy(),
                feature_map=fmap,
                landmark_index=index,
            )
        if linear and rank is None:
            return cls(phi=Y.copy(), diag=diag, kernel=kern, outputs=Y)
        if linear:
            phi, lam = _linear_factor(Y, rank=rank, tol=tol)
        else:
            phi, lam = factorize_gram(
                kern.gram(Y), rank=rank, tol=tol, name=f"{kern.name} Gram matrix"
            )
        return cls(
            phi=phi,
            diag=diag,
            kernel=kern,
            eigenvalues=lam,
            outputs=Y,
            trace_fraction=_fraction(lam, diag),
        )

    @classmethod
    def from_gram(
        cls, gram: Any, *, rank: int | None = None, tol: float = RANK_TOLERANCE
    ) -> OutputSpace:
        """Space of a precomputed Gram matrix (N, N), validated (square, finite, symmetric, PSD).

        With rank None and N > AUTO_RANK_MIN_SAMPLES the factor keeps AUTO_RANK eigenpairs
        (:func:`factorize_gram`: Lanczos instead of O(N^3)); ``rank >= N`` keeps them all.
        """
        K = check_gram(gram)
        n = K.shape[0]
        _check_truncation(rank, tol, n)
        if rank is None and _auto_low_rank(n, rank):
            rank = AUTO_RANK
        phi, lam = factorize_gram(K, rank=rank, tol=tol, name="gram")
        diag = np.diag(K).copy()
        return cls(
            phi=phi,
            diag=diag,
            kernel=PrecomputedKernel(),
            eigenvalues=lam,
            trace_fraction=_fraction(lam, diag),
        )

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
        Exact (dense eigh of L, O(N^3), exact ``diag``, then truncated to ``rank``) when N <=
        AUTO_RANK_MIN_SAMPLES or 4 rank >= N. Otherwise (N above the threshold, rank None ->
        AUTO_RANK, or rank < N / 4) low rank without N x N work: the rank smallest
        eigenpairs of the sparse L by Lanczos (:func:`okcore.outputs.graph.smallest_eigenpairs`,
        disconnected graphs handled exactly), and ``diag`` = the kept part exactly plus a
        stochastic estimate of the rest (:func:`okcore.outputs.graph.diffusion_diagonal`),
        ``diag_exact=False``. Memory O(N rank + edges).
        """
        kernel.check_vertices(n_vertices)
        _check_truncation(rank, tol, n_vertices)
        L = graph.laplacian(kernel.edges, n_vertices)
        low_rank = _auto_low_rank(n_vertices, rank)
        if low_rank:
            rank = AUTO_RANK if rank is None else rank
        if low_rank and rank is not None and 4 * rank < n_vertices:
            lam_l, U = graph.smallest_eigenpairs(L, rank)
            diag = graph.diffusion_diagonal(L, kernel.beta, lam_l, U)
            diag_exact = False
        else:
            lam_l, U = linalg.eigh(L.toarray())
            # k(v, v) from every eigenpair: truncation never biases diag
            diag = np.einsum("ij,ij,j->i", U, U, np.exp(-kernel.beta * lam_l))
            diag_exact = True
        lam = np.exp(-kernel.beta * lam_l)
        keep = _kept(lam, rank, tol)
        lam, U = lam[keep], U[:, keep]
        phi = U * np.sqrt(lam)
        return cls(
            phi=phi,
            diag=diag,
            kernel=kernel,
            eigenvalues=lam,
            trace_fraction=_fraction(lam, diag),
            diag_exact=diag_exact,
        )

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
        n_landmarks: int | None = None,
        random_state: Any = None,
    ) -> OutputSpace:
        """Dispatch of ``fit(X, Y=None, *, gram=None, kernel=None)``; checks N against X.

        ``n_landmarks`` (kernels on output vectors only) asks for a Nystrom factor on that many
        landmark outputs drawn without replacement by ``np.random.default_rng(random_state)``.
        """
        if gram is not None:
            if Y is not None or (kernel is not None and make_kernel(kernel).name != "precomputed"):
                raise DataError("pass either gram=... or outputs Y with a kernel, not both")
            _no_landmarks(n_landmarks, "a precomputed Gram matrix")
            space = cls.from_gram(gram, rank=rank, tol=tol)
        elif kernel is not None and isinstance(make_kernel(kernel), DiffusionKernel):
            if Y is not None:
                raise DataError(
                    "the diffusion kernel takes no outputs Y: its outputs are the vertices"
                )
            _no_landmarks(n_landmarks, "the diffusion kernel")
            graph_kernel = make_kernel(kernel)
            assert isinstance(graph_kernel, DiffusionKernel)
            space = cls.from_graph(graph_kernel, n_samples, rank=rank, tol=tol)
        elif Y is not None:
            space = cls.from_outputs(
                Y,
                "linear" if kernel is None else kernel,
                rank=rank,
                tol=tol,
                n_landmarks=n_landmarks,
                random_state=random_state,
            )
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
            landmark_index=None,  # the landmarks keep their feature map, not their rows
        )

    def embed(self, Y_new: Any, name: str = "candidates") -> tuple[np.ndarray, np.ndarray]:
        """Factor coordinates and k(y, y) of new outputs: ((C, rank), (C,)). O(C N d + C N r),
        O(C m (d + r)) for a Nystrom space (the feature map of its m landmarks). ``name``
        is the argument the refusals name (candidates, true outputs Y, an eval_set's)."""
        if not self.kernel.needs_outputs:
            raise DataError(
                f"a {self.kernel.name!r} output space cannot embed output vectors; "
                "pass candidate_gram and candidate_diag instead"
            )
        width = self.outputs.shape[1] if self.outputs is not None else None
        Y_new = check_matrix(Y_new, name, allow_1d=width == 1)
        if width is not None and Y_new.shape[1] != width:
            verb = "have" if name.endswith("s") else "has"
            raise DataError(f"{name} {verb} {Y_new.shape[1]} columns but the outputs have {width}")
        diag = _kernel_diag(self.kernel, Y_new, name)
        if self.eigenvalues is None:  # linear kernel, phi = Y
            return Y_new, diag
        if self.feature_map is not None:  # Nystrom: the training feature map, O(C m (d + r))
            return self.kernel.gram(Y_new, self.landmarks) @ self.feature_map, diag
        return self.embed_gram(self.kernel.gram(Y_new, self.outputs)), diag

    def embed_gram(self, gram_cross: Any, name: str = "candidate_gram") -> np.ndarray:
        """Nystrom coordinates from the kernel between new and training outputs (C, N) -> (C, rank);
        ``name`` is the argument the refusals name."""
        G = check_matrix(gram_cross, name)
        if G.shape[1] != self.n_samples:
            raise DataError(
                f"{name} must have one column per training output ({self.n_samples}): "
                f"got shape {G.shape}"
            )
        if self.landmark_index is not None:  # Nystrom: the same map as embed, O(C m r)
            return G[:, self.landmark_index] @ self.feature_map
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
        if self.eigenvalues is None:
            return False
        return bool(np.allclose(norms, self.eigenvalues, rtol=1e-9, atol=0.0))


#: Rows of a Gram matrix compared with its columns at a time by :func:`check_gram`.
GRAM_CHECK_ROWS = 512


def check_gram(gram: Any, name: str = "gram") -> np.ndarray:
    """Validate a Gram matrix: square, finite, not all zero, symmetric (relative tolerance
    PSD_TOLERANCE); return its symmetrised copy (K + K^T) / 2. O(N^2) time; memory: that
    copy (and the float64 conversion of another dtype) beside a block of GRAM_CHECK_ROWS
    rows, never a whole |K| or K - K^T (three more N x N arrays at N = 20,000 were 9.6 GB)."""
    check_real(gram, name, KernelError)
    try:
        K = np.asarray(gram, dtype=np.float64)
    except (TypeError, ValueError):
        raise KernelError(f"{name} must be a numeric N x N matrix") from None
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        shape = " x ".join(str(s) for s in K.shape) if K.ndim else "a scalar"
        raise KernelError(f"{name} must be square: got {shape}")
    if K.shape[0] == 0:
        raise KernelError(f"{name} is empty")
    low, high = float(K.min()), float(K.max())  # NaN or infinity make them non-finite
    if not (np.isfinite(low) and np.isfinite(high)):
        i, j = np.argwhere(~np.isfinite(K))[0]
        raise KernelError(f"{name} contains NaN or infinity (first at [{i}, {j}])")
    if low == high == 0.0:
        raise KernelError(
            f"{name} is zero everywhere (its largest eigenvalue is 0): it says nothing about "
            "the outputs; send the kernel values k(y_i, y_j) of the training outputs"
        )
    scale = max(high, -low)
    asym, at = 0.0, (0, 0)
    n = K.shape[0]
    for start in range(0, n, GRAM_CHECK_ROWS):
        gap = np.abs(K[start : start + GRAM_CHECK_ROWS] - K[:, start : start + GRAM_CHECK_ROWS].T)
        worst = int(np.argmax(gap))
        if gap.flat[worst] > asym:
            asym, at = float(gap.flat[worst]), (start + worst // n, worst % n)
    if asym > PSD_TOLERANCE * scale:
        i, j = at
        raise KernelError(
            f"{name} is not symmetric: |K[{i},{j}] - K[{j},{i}]| = {asym:.3g} "
            f"({asym / scale:.2e} of the largest entry; tolerance {PSD_TOLERANCE:g})"
        )
    sym = K + K.T
    sym *= 0.5
    return sym


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
        lam, U = eigsh(K, k=rank, which="LA", v0=_lanczos_start(n))
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


def nystrom_factor(
    kernel: Kernel,
    Y: np.ndarray,
    index: np.ndarray,
    *,
    rank: int | None = None,
    tol: float = RANK_TOLERANCE,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nystrom factor of k on outputs Y (N, d) from the landmarks Y[index] (Williams & Seeger
    2001; math note section 2): phi0 = K_nm U_m Lambda_m^{-1/2}, so phi0 phi0^T = K_nm K_mm^+
    K_mn, with the eigenvalues of K_mm below tol x the largest dropped. phi0 is then rotated
    to orthogonal columns (eigenvectors V of phi0^T phi0, largest first, at most ``rank``
    kept: the best rank-r approximation of the Nystrom kernel), so its eigenvalues are those
    of the approximation and every new output is embedded by the same map.

    Returns (phi (N, r), eigenvalues (r,), feature map U Lambda^{-1/2} V (m, r)); with m = N
    it is the exact factor. O(N m (d + m)) time, O(N m) memory; no N x N array.
    """
    landmarks = Y[index]
    lam_m, U = linalg.eigh(kernel.gram(landmarks))
    if lam_m[-1] <= 0:
        raise KernelError(
            f"the {kernel.name} kernel matrix of the landmark outputs is zero: "
            "no feature space to embed into"
        )
    keep = lam_m > tol * lam_m[-1]
    W = U[:, keep] / np.sqrt(lam_m[keep])
    phi0 = np.empty((len(Y), W.shape[1]))
    for start in range(0, len(Y), _NYSTROM_BLOCK):  # K_nm by blocks of rows: O(block m)
        stop = start + _NYSTROM_BLOCK
        phi0[start:stop] = kernel.gram(Y[start:stop], landmarks) @ W
    sig, V = linalg.eigh(phi0.T @ phi0)
    kept = _kept(sig, rank, tol)
    V = V[:, kept]
    return np.ascontiguousarray(phi0 @ V), sig[kept], np.ascontiguousarray(W @ V)


def estimate_factor_seconds(
    n_samples: int,
    kernel: Any,
    rank: int | None,
    n_landmarks: int | None,
    n_edges: int | None = None,
) -> float:
    """Seconds :meth:`OutputSpace.build` should take, for the ETA of the "output_space" phase
    (:func:`estimate_factor_cost`)."""
    return estimate_factor_cost(n_samples, kernel, rank, n_landmarks, n_edges).seconds


@dataclass(frozen=True)
class FactorCost:
    """What :meth:`OutputSpace.build` should cost (see :func:`estimate_factor_cost`)."""

    seconds: float
    peak_bytes: float  # arrays built beyond the given data (Y, gram, edges), at the peak
    rank: int  # an upper bound on the factor's columns r


def estimate_factor_cost(
    n_samples: int,
    kernel: Any,
    rank: int | None,
    n_landmarks: int | None,
    n_edges: int | None = None,
    n_outputs: int | None = None,
) -> FactorCost:
    """Time, memory and factor width of :meth:`OutputSpace.build`, for the "output_space"
    phase ETA and for refusing absurd work before it starts.

    Time is a stated flop count divided by a rate measured on the project machine
    (bench/lowrank_factors.py, docs/PERFORMANCE.md "Low-rank output spaces"); memory counts
    the float64 arrays built (8 bytes a value). It follows the same dispatch as ``build``
    (N = n_samples, k = rank, m = n_landmarks, E = n_edges, d = n_outputs, default 1):

    - linear kernel, no rank or landmarks: 0 s (phi = Y), 8 N d bytes, r = d; linear with
      rank: the time of a Nystrom of m = k (4 N d^2 is unknown without d), a thin SVD's
      3 x 8 N d bytes, r = min(k, d);
    - Nystrom (m landmarks): flops = 4 N m^2 + 2 N m k + 10 m^3 + 30 N m  (K_nm and its
      products; the kernel values are counted at 30 flops each); bytes = 8 (2 m^2 + 2 N m
      + 4096 m + N k) (K_mm and its eigenvectors, phi0, one block of K_nm, phi); r = k;
    - Lanczos on a graph (low-rank diffusion): flops = LANCZOS_RESTARTS x (2k) x (4 (2E + N)
      + 8 N k)  (2k Lanczos vectors per restart: a sparse mat-vec plus re-orthogonalisation)
      plus the diagonal estimate, DIAG_PROBES x 100 mat-vecs of 4 (2E + N) flops; bytes =
      8 N (ncv + k + 5 DIAG_PROBES) + 24 (2E + N), ncv = max(2k + 1, 20) Lanczos vectors;
    - Lanczos on a dense Gram (rank k < N / 4): flops = LANCZOS_RESTARTS x 2k x 2 N^2;
      bytes = 8 (2 N^2 + N ncv) (the symmetrised Gram and its transient sum);
    - otherwise the dense eigendecomposition: flops = 10 N^3 (+ 2 N^2 for the Gram); bytes =
      DENSE_EIGH_COPIES x 8 N^2 (the Gram or Laplacian, eigh's copy of it, the
      eigenvectors); r = min(k, N).

    seconds = flops / FLOP_RATE (dense BLAS-3 work) or / SPARSE_FLOP_RATE (mat-vecs).
    """
    kern = make_kernel(kernel) if kernel is not None else LinearKernel()
    n, d = int(n_samples), int(n_outputs or 1)
    if kern.name == "linear" and rank is None and n_landmarks is None:
        return FactorCost(0.0, 8.0 * n * d, d)
    graph_kernel = isinstance(kern, DiffusionKernel)
    if rank is None and _auto_low_rank(n, rank) and kern.name != "linear":
        rank = AUTO_RANK
        if kern.needs_outputs and n_landmarks is None:
            n_landmarks = min(n, AUTO_LANDMARKS)
    if kern.needs_outputs and (n_landmarks is not None or kern.name == "linear"):
        m = n_landmarks if n_landmarks is not None else min(n, rank or n)
        k = min(m, rank or m)
        flops = 4.0 * n * m * m + 2.0 * n * m * k + 10.0 * m**3 + 30.0 * n * m
        if n_landmarks is None:  # linear kernel with a rank: thin SVD of Y
            return FactorCost(flops / FLOP_RATE, 3 * 8.0 * n * d, min(k, d))
        peak = 8.0 * (2 * m * m + 2 * n * m + _NYSTROM_BLOCK * m + n * k)
        return FactorCost(flops / FLOP_RATE, peak, k)
    if rank is not None and 4 * rank < n and (not graph_kernel or _auto_low_rank(n, rank)):
        ncv = max(2 * rank + 1, 20)
        if graph_kernel:
            edges = n_edges if n_edges is not None else len(getattr(kern, "edges", ()))
            nnz = 2.0 * edges + n
            lanczos = LANCZOS_RESTARTS * 2 * rank * (4 * nnz + 8.0 * n * rank)
            seconds = (lanczos + graph.DIAG_PROBES * 100 * 4 * nnz) / SPARSE_FLOP_RATE
            peak = 8.0 * n * (ncv + rank + 5 * graph.DIAG_PROBES) + 24.0 * nnz
            return FactorCost(seconds, peak, rank)
        seconds = LANCZOS_RESTARTS * 2 * rank * 2.0 * n * n / SPARSE_FLOP_RATE
        return FactorCost(seconds, 8.0 * (2.0 * n * n + n * ncv), rank)
    seconds = (10.0 * n**3 + 2.0 * n * n) / FLOP_RATE
    return FactorCost(seconds, DENSE_EIGH_COPIES * 8.0 * n * n, min(rank or n, n))


def _linear_factor(Y: np.ndarray, *, rank: int | None, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Eigen-factor of K = Y Y^T from the thin SVD Y = U S V^T: phi = U S, eigenvalues S^2.
    O(N d min(N, d)); no N x N matrix."""
    U, S, _ = linalg.svd(Y, full_matrices=False)
    lam = S * S
    if lam.size == 0 or lam.max() <= 0:
        raise KernelError(
            "linear Gram matrix is not positive semi-definite: its largest eigenvalue is 0"
        )
    keep = _kept(lam, rank, tol)
    return np.ascontiguousarray(U[:, keep] * S[keep]), lam[keep]


def _kernel_diag(kernel: Kernel, Y: np.ndarray, name: str) -> np.ndarray:
    """k(y_i, y_i) of the rows of Y, finite: every |k(y, y')| is at most the larger of two
    such values (Cauchy-Schwarz), so a finite diagonal means no kernel value overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        diag = kernel.diag(Y)
    if not np.all(np.isfinite(diag)):
        i = int(np.flatnonzero(~np.isfinite(diag))[0])
        raise KernelError(
            f"the {kernel.name} kernel overflows on {name}: k(y, y) of row {i} is not a finite "
            f"float64 ({kernel.describe()}); scale the outputs down or lower gamma / degree"
        )
    return np.asarray(diag, dtype=np.float64)


def _fraction(eigenvalues: np.ndarray, diag: np.ndarray) -> float:
    """trace_fraction: sum of the kept eigenvalues over trace(K) = sum(diag), at most 1."""
    trace = float(np.sum(diag))
    return min(1.0, float(np.sum(eigenvalues)) / trace) if trace > 0 else 1.0


def _auto_low_rank(n_samples: int, rank: int | None) -> bool:
    """Whether a non-linear kernel on ``n_samples`` outputs gets a low-rank factor: N above
    AUTO_RANK_MIN_SAMPLES and rank not >= N (which forces the exact factor)."""
    return n_samples > AUTO_RANK_MIN_SAMPLES and (rank is None or rank < n_samples)


def _check_landmarks(n_landmarks: Any, n_samples: int) -> None:
    """n_landmarks: None or an int in [1, N]."""
    if n_landmarks is not None and (
        isinstance(n_landmarks, bool)
        or not isinstance(n_landmarks, numbers.Integral)
        or not 1 <= int(n_landmarks) <= n_samples
    ):
        raise DataError(
            f"n_landmarks must be None or an int in [1, {n_samples}] (at most the number of "
            f"outputs): got {n_landmarks!r}"
        )


def _no_landmarks(n_landmarks: Any, what: str) -> None:
    if n_landmarks is not None:
        raise DataError(
            f"n_landmarks (Nystrom) applies to kernels on output vectors, not to {what}: "
            "use rank=... for a low-rank factor"
        )


def _check_truncation(rank: Any, tol: Any, n_samples: int | None = None) -> None:
    """rank: None or an int in [1, N]; tol in [0, 1) (a negative tol would keep negative
    eigenvalues)."""
    if rank is not None and (
        isinstance(rank, bool) or not isinstance(rank, numbers.Integral) or int(rank) < 1
    ):
        raise DataError(f"rank must be None or an int >= 1: got {rank!r}")
    if rank is not None and n_samples is not None and int(rank) > n_samples:
        raise DataError(
            f"rank must be at most the number of outputs ({n_samples}): got {rank}; "
            "rank = N keeps the exact factor"
        )
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not 0 <= float(tol) < 1:
        raise DataError(f"tol must be a number in [0, 1): got {tol!r}")


def _smallest_eigenvalue_bound(K: np.ndarray, lam_max: float) -> float:
    """An upper bound on the smallest eigenvalue of K, for the PSD check of the rank path.

    Lanczos for the smallest eigenvalue stalls on the cluster of near-zero eigenvalues of a
    PSD kernel matrix; the largest eigenvalue of lam_max I - K is an extreme one, found in a
    few iterations. Its Ritz value is a lower bound, so lam_max minus it never reports a
    negative eigenvalue that is not there. O(N^2) per iteration.
    """
    shifted = LinearOperator(K.shape, matvec=lambda v: lam_max * v - K @ v, dtype=np.float64)
    start = _lanczos_start(K.shape[0])
    top = eigsh(shifted, k=1, which="LA", tol=1e-3, v0=start, return_eigenvectors=False)[0]
    return lam_max - float(top)


def _lanczos_start(n: int) -> np.ndarray:
    """A seeded Lanczos start vector: without one ARPACK draws it from a generator whose
    state depends on the process's earlier calls, so the same fit in another process (a
    joblib or Dask worker) would give a factor different in the last digits."""
    return np.random.default_rng(graph.LANCZOS_SEED).standard_normal(n)


def _kept(lam: np.ndarray, rank: int | None, tol: float) -> np.ndarray:
    """Indices of eigenvalues kept, largest first: above tol * max, at most ``rank``."""
    order = np.argsort(lam)[::-1]
    order = order[lam[order] > tol * lam.max()]
    return order[:rank] if rank is not None else order
