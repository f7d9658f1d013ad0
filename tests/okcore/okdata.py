"""Small data and independent reference computations for the okcore unit tests (tiny on purpose)."""

from __future__ import annotations

import numpy as np


def make_regression(
    n: int = 40, p: int = 4, d: int = 3, seed: int = 0, noise: float = 0.1
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (n, p) uniform in [0, 1) and outputs (n, d) that depend on the first two inputs."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, p))
    W = rng.normal(size=(2, d))
    Y = np.sin(3.0 * X[:, :2]) @ W + noise * rng.normal(size=(n, d))
    return X, Y


def rbf_gram(A: np.ndarray, B: np.ndarray, gamma: float) -> np.ndarray:
    """exp(-gamma ||a - b||^2) by explicit broadcasting (independent of okcore's cdist)."""
    diff = A[:, None, :] - B[None, :, :]
    return np.exp(-gamma * np.sum(diff * diff, axis=2))


def ring_edges(n: int, chords: int = 0, seed: int = 0) -> np.ndarray:
    """A cycle over n vertices plus ``chords`` random extra edges, shape (E, 2)."""
    rng = np.random.default_rng(seed)
    cycle = np.c_[np.arange(n), (np.arange(n) + 1) % n]
    extra = rng.integers(0, n, size=(chords, 2))
    return np.r_[cycle, extra]


def laplacian_dense(edges: np.ndarray, n: int) -> np.ndarray:
    """D - A with a 0/1 adjacency (duplicates once, self-loops dropped), built with plain loops."""
    A = np.zeros((n, n))
    for a, b in edges:
        if a != b:
            A[a, b] = A[b, a] = 1.0
    return np.diag(A.sum(axis=1)) - A
