"""Pre-images (paper eq. 8): the candidate output closest to F(x) in the feature space."""

from __future__ import annotations

import numpy as np

#: Rows of queries scored at once, so (chunk, n_candidates) stays small in memory...
QUERY_CHUNK = 2048
#: ...and at most this many distances per chunk (32 MiB of float64), whatever the number of
#: candidates: 2048 rows against 100,000 training outputs held 4.9 GB of distances and their
#: temporaries.
CHUNK_VALUES = 1 << 22


def chunk_rows(n_candidates: int) -> int:
    """Query rows per chunk: QUERY_CHUNK, fewer when a (rows, n_candidates) block of
    distances would pass CHUNK_VALUES (at least one row)."""
    return max(1, min(QUERY_CHUNK, CHUNK_VALUES // max(n_candidates, 1)))


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
    O(Q C r) time; O(Q k) memory beside a chunk of distances (:func:`chunk_rows`: about
    CHUNK_VALUES, never Q x C).
    """
    k = min(int(top_k), cand_phi.shape[0])
    indices = np.empty((F.shape[0], k), dtype=np.int64)
    scores = np.empty((F.shape[0], k))
    step = chunk_rows(cand_phi.shape[0])
    for start in range(0, F.shape[0], step):
        rows = slice(start, start + step)
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
