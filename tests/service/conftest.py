"""Fixtures: an app on a temporary store, a TestClient, small data, a trained model."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

with warnings.catch_warnings():  # starlette nudges towards httpx2; httpx is what we ship
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from svc_data import Graph, clustered_graph

from service.app import create_app
from service.config import Settings

SMALL = {"n_estimators": 15, "learning_rate": 0.2, "max_splits": 3, "random_state": 0}


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(model_dir=tmp_path / "models", **overrides)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as c:
        yield c


@pytest.fixture(scope="session")
def graph() -> Graph:
    return clustered_graph()


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


@pytest.fixture
def trained(client: TestClient, graph: Graph) -> dict[str, Any]:
    """A diffusion-kernel OKBoost model trained with wait = true."""
    r = client.post("/train", json=diffusion_request(graph))
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def post_json(client: TestClient, path: str, body: Any) -> Any:
    """POST JSON as Python writes it (NaN and Infinity literals allowed, as many clients do)."""
    return client.post(path, content=json.dumps(body), headers={"content-type": "application/json"})
