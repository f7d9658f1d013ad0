"""Small data and independent reference computations for the okcore unit tests (tiny on purpose)."""

from __future__ import annotations

import numpy as np

from okcore.trees.splitter import TIE_ABSOLUTE, TIE_RELATIVE


def make_regression(
    n: int = 40, p: int = 4, d: int = 3, seed: int = 0, noise: float = 0.1
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (n, p) uniform in [0, 1) and outputs (n, d) that depend on the first two inputs.

    The function is the same for every ``seed`` (only the sample changes), so two seeds give
    a training and a test set.
    """
    rng = np.random.default_rng(seed)
    X = rng.random((n, p))
    W = np.random.default_rng(12345).normal(size=(2, d))
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


def route(ensemble, m: int, x: np.ndarray) -> int:
    """Local leaf number of x in tree m of a TreeEnsemble, by walking the flat arrays."""
    base, node = int(ensemble.node_offset[m]), 0
    while ensemble.left[base + node] >= 0:
        go_left = x[ensemble.feature[base + node]] <= ensemble.threshold[base + node]
        node = int(ensemble.left[base + node] if go_left else ensemble.right[base + node])
    return int(ensemble.leaf[base + node])


def tree_nodes(ensemble, m: int) -> dict[str, np.ndarray]:
    """Node arrays of tree m (local numbering)."""
    lo, hi = int(ensemble.node_offset[m]), int(ensemble.node_offset[m + 1])
    fields = ("feature", "threshold", "left", "right", "leaf", "n_samples", "impurity", "gain")
    return {f: getattr(ensemble, f)[lo:hi] for f in fields}


def node_depths(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Depth of every node (root 0) from child arrays."""
    depth = np.zeros(len(left), dtype=int)
    for node in range(len(left)):  # children are created after their parent
        if left[node] >= 0:
            depth[left[node]] = depth[right[node]] = depth[node] + 1
    return depth


def beats_reference(gain: float, best: float) -> bool:
    """okcore's tie rule (okcore.trees.splitter.beats) in plain Python, for the references
    that pick a best split or leaf: a candidate met later replaces the best so far only when
    its gain is larger by more than TIE_RELATIVE of the larger gain (plus TIE_ABSOLUTE)."""
    return gain - best > TIE_RELATIVE * max(abs(gain), abs(best)) + TIE_ABSOLUTE


#: Relative tolerance for comparing saved reference arrays that numpy's reductions or BLAS
#: compute (node impurities and gains, Huber leaf values, kernel ridge's products): their
#: last bits move with the CPU's SIMD width and the library release. An AVX-512 Xeon and the
#: AVX2 EPYC that saved them differ by up to 5e-13 relative in node gains (sums of squares
#: differenced) and 1e-15 in predictions; any change of model or format differs by far more.
ROUNDING = 1e-10


def assert_equal_to_rounding(actual: np.ndarray, desired: np.ndarray, err_msg: str = "") -> None:
    """``actual`` equals ``desired`` up to floating-point rounding (:data:`ROUNDING` relative
    to each value, or to the array's largest magnitude for values near 0)."""
    desired = np.asarray(desired)
    scale = float(np.abs(desired).max()) if desired.size else 0.0
    np.testing.assert_allclose(
        actual, desired, rtol=ROUNDING, atol=ROUNDING * scale, err_msg=err_msg
    )
