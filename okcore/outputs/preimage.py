"""Pre-images (paper eq. 8): the candidate output closest to F(x) in the feature space."""

from __future__ import annotations

import numpy as np

#: Rows of queries scored at once, so (chunk, n_candidates) stays small in memory.
QUERY_CHUNK = 2048


def squared_distances(F: np.ndarray, cand_phi: np.ndarray, cand_diag: np.ndarray) -> np.ndarray:
    """||phi(c) - F(x)||^2 = k(c, c) - 2 F(x) . phi(c) + ||F(x)||^2, shape (Q, C). O(Q C r).

    Exact when F lies in the span of the training features and phi(c) is the projection
    of the candidate on that span (Nystrom embedding), since k(c, c) comes from the kernel.
    """
    sq = np.einsum("ij,ij->i", F, F)
    return cand_diag[None, :] - 2.0 * (F @ cand_phi.T) + sq[:, None]


def decode(
    F: np.ndarray, cand_phi: np.ndarray, cand_diag: np.ndarray, top_k: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Indices and squared distances of the ``top_k`` closest candidates, ascending.

    Returns (indices int64 (Q, k), scores float64 (Q, k)); ties keep the lower index.
    """
    k = min(int(top_k), cand_phi.shape[0])
    indices = np.empty((F.shape[0], k), dtype=np.int64)
    scores = np.empty((F.shape[0], k))
    for start in range(0, F.shape[0], QUERY_CHUNK):
        rows = slice(start, start + QUERY_CHUNK)
        D = squared_distances(F[rows], cand_phi, cand_diag)
        if k < D.shape[1]:
            part = np.argpartition(D, k - 1, axis=1)[:, :k]
            # order the k best by (distance, index) for deterministic ties
            part = np.sort(part, axis=1)
            order = np.argsort(np.take_along_axis(D, part, 1), axis=1, kind="stable")
            best = np.take_along_axis(part, order, 1)
        else:
            best = np.argsort(D, axis=1, kind="stable")
        indices[rows] = best
        scores[rows] = np.take_along_axis(D, best, 1)
    return indices, scores
