"""Graphs for network completion (paper section 3): Laplacian, diffusion kernel, edge lists."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import linalg, sparse
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh, expm_multiply

from ..exceptions import DataError, KernelError

#: Seed of the Lanczos start vector and of the diagonal probes: factors are deterministic.
LANCZOS_SEED = 0
#: Relative accuracy asked of ARPACK for the Laplacian eigenpairs (of the shifted operator).
LANCZOS_TOL = 1e-10
#: Rademacher probes of the stochastic diagonal estimate (error ~ 1 / sqrt(probes)).
DIAG_PROBES = 32


def laplacian(edges: Any, n_vertices: int) -> sparse.csr_matrix:
    """Graph Laplacian L = D - A of an undirected, unweighted graph, shape (n, n).

    Duplicate edges count once, self-loops are ignored (they cancel in D - A).
    """
    E = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if E.size and (E.min() < 0 or E.max() >= n_vertices):
        raise DataError(f"edges refer to vertices outside 0..{n_vertices - 1}")
    E = E[E[:, 0] != E[:, 1]]
    A = sparse.coo_matrix(
        (np.ones(2 * len(E)), (np.r_[E[:, 0], E[:, 1]], np.r_[E[:, 1], E[:, 0]])),
        shape=(n_vertices, n_vertices),
    ).tocsr()
    A.data[:] = 1.0  # duplicates summed by tocsr: back to a 0/1 adjacency
    degree = np.asarray(A.sum(axis=1)).ravel()
    return (sparse.diags(degree) - A).tocsr()


def graph_warnings(edges: Any, n_vertices: int) -> list[str]:
    """What is degenerate about a training graph, one sentence each (empty when nothing).

    Edges are (E, 2) 0-based vertex indices in ``0..n_vertices-1``. Reports a graph without
    edges (the diffusion kernel is then the identity: every pair of vertices looks equally
    unrelated), self-loops and duplicate edges (both are ignored by :func:`laplacian`:
    likely a mistake in the data), and isolated vertices (no edge: their outputs are all
    alike, so they teach the model nothing about links). O(E log E).
    """
    E = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if len(E) == 0:
        return [
            f"the graph has no edges: the diffusion kernel of {n_vertices} isolated vertices is "
            "the identity, so there are no links to learn"
        ]
    out = []
    loops = E[:, 0] == E[:, 1]
    if loops.any():
        k = int(np.argmax(loops))
        out.append(
            f"{int(loops.sum())} self-loops (the first: edge {k}, vertex {int(E[k, 0])}) are "
            "ignored: the Laplacian L = D - A has no self-loops"
        )
    pairs = np.sort(E[~loops], axis=1)
    unique = np.unique(pairs, axis=0)
    if len(unique) < len(pairs):
        out.append(
            f"{len(pairs) - len(unique)} duplicate edges (a pair given twice, in either order) "
            "count once"
        )
    degree = np.bincount(unique.ravel(), minlength=n_vertices)
    isolated = np.flatnonzero(degree == 0)
    if isolated.size:
        out.append(
            f"{isolated.size} of {n_vertices} training vertices have no edge (the first: "
            f"{', '.join(str(int(v)) for v in isolated[:5])}): their outputs are all alike, "
            "they teach nothing about links"
        )
    return out


def diffusion_gram(edges: Any, n_vertices: int, beta: float = 1.0) -> np.ndarray:
    """Diffusion kernel K = expm(-beta L) (Kondor & Lafferty 2002), shape (n, n). O(n^3)."""
    lam, U = linalg.eigh(laplacian(edges, n_vertices).toarray())
    return (U * np.exp(-beta * lam)) @ U.T


def smallest_eigenpairs(L: sparse.spmatrix, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest eigenpairs of a graph Laplacian L (sparse, n x n), ascending.

    The null space of L is known exactly: one normalised indicator vector per connected
    component (isolated vertices included), eigenvalue 0. Those come first, largest components
    first (when k is smaller than the number of components, the k largest are kept: every
    one has eigenvalue 0, so any choice is a best rank-k approximation). The remaining
    eigenpairs are the largest of the operator P (c I - L) P, c = 2 max degree >= lambda_max
    (Gershgorin), P the projector off the component indicators, found by implicitly
    restarted Lanczos (ARPACK eigsh, which="LA") from a seeded start vector: only sparse
    mat-vecs, O(nnz(L) + n k) per iteration and O(n k) memory; L is never densified.
    Deflating the null space exactly keeps Lanczos away from the 0 eigenvalue of
    multiplicity "number of components", on which it would otherwise return too few copies
    (math note section 2, "Low-rank diffusion factors without N x N"; shift-invert is not
    used: its sparse LU fills in).
    """
    n = L.shape[0]
    n_comp, comp = connected_components(L, directed=False)
    sizes = np.bincount(comp, minlength=n_comp)
    by_size = np.argsort(-sizes, kind="stable")
    Z = np.zeros((n, min(k, n_comp)))
    for j, c in enumerate(by_size[: Z.shape[1]]):
        members = comp == c
        Z[members, j] = 1.0 / np.sqrt(sizes[c])
    n_more = k - Z.shape[1]
    if n_more <= 0:
        return np.zeros(k), Z

    def project(v: np.ndarray) -> np.ndarray:
        """Off every component indicator (not only the kept ones): subtract component means."""
        return v - (np.bincount(comp, weights=v, minlength=n_comp) / sizes)[comp]

    shift = 2.0 * float(L.diagonal().max())

    def matvec(v: np.ndarray) -> np.ndarray:
        v = project(np.ravel(v))
        return project(shift * v - L @ v)

    op = LinearOperator((n, n), matvec=matvec, dtype=np.float64)
    v0 = project(np.random.default_rng(LANCZOS_SEED).standard_normal(n))
    try:
        mu, U = eigsh(op, k=n_more, which="LA", v0=v0, tol=LANCZOS_TOL)
    except ArpackNoConvergence:
        raise KernelError(
            f"Lanczos did not converge for {k} Laplacian eigenpairs of a {n}-vertex graph; "
            "ask for a smaller rank, or rank >= n for the exact (dense) factor"
        ) from None
    order = np.argsort(-mu)
    lam = np.maximum(shift - mu[order], 0.0)
    return np.r_[np.zeros(Z.shape[1]), lam], np.hstack([Z, U[:, order]])


def diffusion_diagonal(
    L: sparse.spmatrix,
    beta: float,
    lam: np.ndarray,
    U: np.ndarray,
    n_probes: int = DIAG_PROBES,
) -> np.ndarray:
    """Estimate of diag(expm(-beta L)) from its k smallest Laplacian eigenpairs (lam, U).

    diag = sum_{j<=k} exp(-beta lam_j) U_vj^2 (exact) + r_v, the remainder r = diag(R),
    R = expm(-beta L) - U exp(-beta lam) U^T, estimated with Rademacher probes z_s as
    mean_s z_s * (R z_s) (Bekas, Kokiopoulou & Saad 2007; deflated as in Diag++, Baston &
    Nakatsukasa 2022): R z = expm_multiply(-beta L, z) - U (exp(-beta lam) * U^T z). Each
    estimate is then clipped to its exact bounds w_v exp(-beta lam_max) <= r_v <=
    w_v exp(-beta lam_{k+1}), with w_v = 1 - ||U_v||^2, lam_{k+1} >= lam_k and lam_max <=
    2 max degree, so the estimate is never further off than those bounds allow.
    Cost O(n_probes * (matvecs of expm_multiply) * nnz(L) + n k n_probes); memory
    O(n (k + n_probes)). The error is measured in bench/lowrank_factors.py (docs/PERFORMANCE.md).
    """
    n = L.shape[0]
    kept = np.exp(-beta * lam)
    truncated = np.einsum("ij,ij,j->i", U, U, kept)
    w = np.clip(1.0 - np.einsum("ij,ij->i", U, U), 0.0, 1.0)
    upper = w * np.exp(-beta * float(lam.max()))
    lower = w * np.exp(-beta * 2.0 * float(L.diagonal().max()))
    if not np.any(upper > lower):  # nothing left out (all eigenpairs kept)
        return truncated + upper
    rng = np.random.default_rng(LANCZOS_SEED)
    Z = rng.choice(np.array([-1.0, 1.0]), size=(n, n_probes))
    RZ = expm_multiply(-beta * sparse.csr_matrix(L, dtype=np.float64), Z)
    RZ -= U @ (kept[:, None] * (U.T @ Z))
    remainder = np.mean(Z * RZ, axis=1)
    return truncated + np.clip(remainder, lower, upper)


def adjacency(edges: Any, n_vertices: int) -> np.ndarray:
    """Dense symmetric 0/1 adjacency matrix (no self-loops), shape (n, n)."""
    return sparse_adjacency(edges, n_vertices).toarray()


def sparse_adjacency(edges: Any, n_vertices: int) -> sparse.csr_matrix:
    """Symmetric 0/1 adjacency matrix (no self-loops) as int8 CSR, O(E) memory."""
    L = laplacian(edges, n_vertices)
    A = sparse.diags(L.diagonal()) - L
    A.eliminate_zeros()
    return sparse.csr_matrix(A, dtype=np.int8)


def ranked_edges(
    scores: Any,
    *,
    threshold: float | None = None,
    top_k: int | None = None,
    symmetric: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The edges of a score matrix S (rows = new vertices), ranked: (a, b, S[a, b]) as int64,
    int64 and float64 arrays, grouped by row a in increasing order and best first within a
    row (decreasing score, ties by increasing column b).

    ``threshold`` keeps S[a, b] >= threshold; ``top_k`` keeps the k best columns of each row
    (more than there are columns: all); both may be given (an edge must pass both), neither
    keeps every edge. Non-finite scores are never edges. ``symmetric`` treats S as square
    among the same vertices: the diagonal is ignored, a pair is kept when either endpoint
    selects it and reported once with a < b. O(Q N) for a Q x N matrix plus O(E log E) for
    the E edges; a caller bounds Q (the service scores a block of rows at a time).
    """
    S = np.asarray(scores, dtype=np.float64)
    if S.ndim != 2:
        raise DataError(f"scores must be a 2-d matrix: got shape {S.shape}")
    if top_k is not None and (
        isinstance(top_k, bool) or not isinstance(top_k, int | np.integer) or top_k < 1
    ):
        raise DataError(f"top_k must be an int >= 1: got {top_k!r}")
    if symmetric:
        if S.shape[0] != S.shape[1]:
            raise DataError(f"symmetric scores must be square: got shape {S.shape}")
        S = S.copy()
        np.fill_diagonal(S, -np.inf)  # never a vertex's own neighbour
    keep = np.isfinite(S)
    if top_k is not None and S.shape[1] > 0:
        k = min(int(top_k), S.shape[1])
        top = np.zeros(S.shape, dtype=bool)
        np.put_along_axis(top, np.argpartition(-S, k - 1, axis=1)[:, :k], True, axis=1)
        keep &= (top | top.T) if symmetric else top  # symmetric: a top-k neighbour either way
    if threshold is not None:
        keep &= S >= threshold
    if symmetric:
        keep &= np.triu(np.ones(S.shape, dtype=bool), k=1)
    a, b = np.nonzero(keep)
    a, b = a.astype(np.int64), b.astype(np.int64)
    values = S[a, b]
    order = np.lexsort((b, -values, a))
    return a[order], b[order], values[order]


def edges_from_scores(
    scores: Any,
    *,
    threshold: float | None = None,
    top_k: int | None = None,
    symmetric: bool = False,
) -> list[tuple[int, int, float]]:
    """The edges of :func:`ranked_edges` as (a, b, score) tuples, highest score first (ties:
    by row, then column). A threshold or top_k must be given."""
    if threshold is None and top_k is None:
        raise DataError("give a threshold or top_k to turn scores into edges")
    a, b, values = ranked_edges(scores, threshold=threshold, top_k=top_k, symmetric=symmetric)
    order = np.argsort(-values, kind="stable")
    return [(int(a[i]), int(b[i]), float(values[i])) for i in order]
