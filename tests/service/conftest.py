"""Fixtures: an app on a temporary store, a TestClient, small data, a trained model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from svc_data import Graph, TestClient, clustered_graph, diffusion_request, make_settings

from service.app import create_app
from service.config import Settings


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


@pytest.fixture
def trained(client: TestClient, graph: Graph) -> dict[str, Any]:
    """A diffusion-kernel OKBoost model trained with wait = true."""
    r = client.post("/train", json=diffusion_request(graph))
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body
