"""Fixtures for tests against a live server; helpers live in e2e_server.py."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))  # svc_data helpers

from e2e_server import Server  # noqa: E402


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[type[Server]]:
    started: list[Server] = []

    class Tracked(Server):
        def start(self) -> Server:
            started.append(self)
            return super().start()

    yield Tracked
    for server in started:
        server.stop()


@pytest.fixture
def server(server_factory: type[Server], tmp_path: Path) -> Server:
    return server_factory(tmp_path / "models").start()
