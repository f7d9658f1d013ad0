"""Session fixtures shared by the okcore and service tests (one real Dask cluster); the
``server`` marker on every test that starts a live server through the e2e fixtures, and the
tests on the cluster kept in one process when xdist runs the tests in parallel."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

# the fixtures of tests/e2e/conftest.py that start `okboost serve`
SERVER_FIXTURES = {"server", "server_factory"}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``server`` each test that uses a live server fixture, directly or through another
    fixture, so the fast tier leaves it out without a hand-written mark; group the tests on
    the Dask cluster."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if SERVER_FIXTURES & fixtures:
            item.add_marker(pytest.mark.server)
        if "dask_client" in fixtures:
            # one test process runs every test on the cluster (xdist's --dist loadgroup):
            # one cluster is started, not one per process, and tests/e2e/test_replicas.py's
            # tests, which share replicas and run in file order, stay together
            item.add_marker(pytest.mark.xdist_group("dask"))


@pytest.fixture(scope="session")
def dask_client() -> Iterator[Any]:
    """A distributed.Client on a LocalCluster of 2 worker processes with 1 thread each (the
    ``[dask]`` extra; skipped without it). Its scheduler runs in the test process and
    listens on 127.0.0.1, so service replicas started by the tests can connect to it."""
    distributed = pytest.importorskip("distributed", reason="needs the [dask] extra")
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=":0",  # any free port: no clash with a dashboard on 8787
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()
