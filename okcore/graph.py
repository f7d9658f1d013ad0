"""Graphs for network completion (paper section 3): Laplacian, diffusion kernel, edge lists."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import linalg, sparse

from .exceptions import DataError


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


def diffusion_gram(edges: Any, n_vertices: int, beta: float = 1.0) -> np.ndarray:
    """Diffusion kernel K = expm(-beta L) (Kondor & Lafferty 2002), shape (n, n). O(n^3)."""
    lam, U = linalg.eigh(laplacian(edges, n_vertices).toarray())
    return (U * np.exp(-beta * lam)) @ U.T


def adjacency(edges: Any, n_vertices: int) -> np.ndarray:
    """Dense symmetric 0/1 adjacency matrix (no self-loops), shape (n, n)."""
    L = laplacian(edges, n_vertices)
    return (np.diag(L.diagonal()) - L.toarray()).astype(np.int8)


def edges_from_scores(
    scores: Any,
    *,
    threshold: float | None = None,
    top_k: int | None = None,
    symmetric: bool = False,
) -> list[tuple[int, int, float]]:
    """Edges (a, b, score) from a score matrix S (rows = new vertices), highest first.

    ``threshold`` keeps S[a, b] >= threshold; ``top_k`` keeps the k best columns of each row;
    both may be given (an edge must pass both). ``symmetric`` treats S as square among the same
    vertices: only a < b is returned (no self-pairs).
    """
    S = np.asarray(scores, dtype=np.float64)
    if S.ndim != 2:
        raise DataError(f"scores must be a 2-d matrix: got shape {S.shape}")
    if threshold is None and top_k is None:
        raise DataError("give a threshold or top_k to turn scores into edges")
    if top_k is not None and (
        isinstance(top_k, bool) or not isinstance(top_k, int | np.integer) or top_k < 1
    ):
        raise DataError(f"top_k must be an int >= 1: got {top_k!r}")
    keep = np.ones(S.shape, dtype=bool)
    if symmetric:
        if S.shape[0] != S.shape[1]:
            raise DataError(f"symmetric scores must be square: got shape {S.shape}")
        keep &= np.triu(np.ones(S.shape, dtype=bool), k=1)
    if threshold is not None:
        keep &= S >= threshold
    if top_k is not None:
        masked = np.where(np.eye(S.shape[0], dtype=bool), -np.inf, S) if symmetric else S
        k = min(int(top_k), S.shape[1])
        top = np.zeros(S.shape, dtype=bool)
        if k > 0:
            np.put_along_axis(top, np.argpartition(-masked, k - 1, axis=1)[:, :k], True, axis=1)
        keep &= (top | top.T) if symmetric else top  # symmetric: a top-k neighbour either way
    a, b = np.nonzero(keep)
    order = np.argsort(-S[a, b], kind="stable")
    return [(int(a[i]), int(b[i]), float(S[a[i], b[i]])) for i in order]
