"""Test helpers: small deterministic graphs with vertex features, request builders."""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from service.config import Settings

with warnings.catch_warnings():  # starlette nudges towards httpx2; httpx is what we ship
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient as _TestClient

__all__ = ["TestClient"]


class TestClient(_TestClient):
    """fastapi's TestClient addressed as http://localhost: a name the service answers to by
    default (its Host allow-list refuses fastapi's default 'testserver')."""

    __test__ = False  # not a test class for pytest

    def __init__(self, app: Any, **kwargs: Any) -> None:
        kwargs.setdefault("base_url", "http://localhost")
        super().__init__(app, **kwargs)


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


# ---------------------------------------------------------------- request helpers
SMALL = {"n_estimators": 15, "learning_rate": 0.2, "max_splits": 3, "random_state": 0}


def model_record(model_id: str, **extra: Any) -> dict[str, Any]:
    """A valid model record (service.schemas.records.ModelRecord) saying "training"."""
    return {
        "model_id": model_id,
        "status": "training",
        "created": 0.0,
        "model": "okboost",
        "params": {},
        "kernel": {"type": "diffusion"},
        "n_train": 1,
        "n_features": 1,
        **extra,
    }


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(model_dir=tmp_path / "models", **overrides)


def diffusion_request(g: Graph, **extra: Any) -> dict[str, Any]:
    body = {
        "name": "toy",
        "inputs": g.features[g.train].tolist(),
        "output_kernel": {"type": "diffusion", "beta": 1.0, "edges": g.train_edges().tolist()},
        "params": dict(SMALL),
        "wait": True,
    }
    body.update(extra)
    return body


def vector_data(
    n: int = 30, p: int = 3, d: int = 2, seed: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] * X[:, 2]])[:, :d]
    return X, Y


def post_json(client: TestClient, path: str, body: Any) -> Any:
    """POST JSON as Python writes it (NaN and Infinity literals allowed, as many clients do)."""
    return client.post(path, content=json.dumps(body), headers={"content-type": "application/json"})


@dataclass
class Bipartite:
    """A bipartite network between row vertices (drugs) and column vertices (targets) in
    families: features near their family's centre, interactions mostly within a family."""

    rows: np.ndarray  # (n_rows, p) row features
    cols: np.ndarray  # (n_cols, p') column features
    Y: np.ndarray  # (n_rows, n_cols) 0/1 interactions

    @property
    def row_ids(self) -> list[str]:
        return [f"d{i}" for i in range(len(self.rows))]

    @property
    def col_ids(self) -> list[str]:
        return [f"t{j}" for j in range(len(self.cols))]

    def edges(self, rows: Any = None, cols: Any = None) -> list[list[int]]:
        """[i, j] pairs of the interactions among the given rows and columns (all by default),
        numbered within them."""
        r = np.arange(len(self.rows)) if rows is None else np.asarray(rows)
        c = np.arange(len(self.cols)) if cols is None else np.asarray(cols)
        return np.argwhere(self.Y[np.ix_(r, c)] != 0).tolist()


def bipartite_network(n_rows: int = 36, n_cols: int = 24, seed: int = 0) -> Bipartite:
    rng = np.random.default_rng(seed)
    fr, fc = rng.integers(0, 3, n_rows), rng.integers(0, 3, n_cols)
    centres = rng.normal(scale=3.0, size=(3, 3))
    rows = centres[fr] + rng.normal(scale=0.5, size=(n_rows, 3))
    cols = centres[fc][:, :2] + rng.normal(scale=0.5, size=(n_cols, 2))
    prob = np.where(fr[:, None] == fc[None, :], 0.6, 0.03)
    return Bipartite(rows, cols, (rng.random((n_rows, n_cols)) < prob).astype(float))


def label_data(
    n: int = 60, p: int = 4, n_labels: int = 4, seed: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and 0/1 label rows: label l is on when a linear score of the inputs is high."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    W = rng.normal(size=(p, n_labels))
    labels = (X @ W + 0.3 * rng.normal(size=(n, n_labels)) > 0.2).astype(float)
    return X, labels


def until(what: Callable[[], Any], limit: float = 180.0) -> Any:
    """Poll ``what`` until it returns something truthy (a hang guard, not a timing check)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = what()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"gave up waiting after {limit} s")
