"""Small deterministic graphs with vertex features for service tests (no files needed)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Graph:
    features: np.ndarray  # (n, p)
    edges: np.ndarray  # (E, 2) over all n vertices
    train: np.ndarray  # indices of training vertices
    test: np.ndarray  # indices of held-out vertices

    def train_edges(self) -> np.ndarray:
        """Edges among training vertices, relabelled 0..len(train)-1."""
        pos = {int(v): i for i, v in enumerate(self.train)}
        kept = [(pos[a], pos[b]) for a, b in self.edges if a in pos and b in pos]
        return np.asarray(kept, dtype=np.int64).reshape(-1, 2)


def clustered_graph(n: int = 40, p: int = 4, n_test: int = 6, seed: int = 0) -> Graph:
    """Vertices in 3 clusters: features near the cluster centre, edges mostly within clusters."""
    rng = np.random.default_rng(seed)
    cluster = rng.integers(0, 3, size=n)
    centres = rng.normal(scale=3.0, size=(3, p))
    features = centres[cluster] + rng.normal(scale=0.5, size=(n, p))
    edges = []
    for a in range(n):
        for b in range(a + 1, n):
            prob = 0.35 if cluster[a] == cluster[b] else 0.02
            if rng.random() < prob:
                edges.append((a, b))
    order = rng.permutation(n)
    return Graph(
        features,
        np.asarray(edges, dtype=np.int64),
        np.sort(order[n_test:]),
        np.sort(order[:n_test]),
    )
