"""Session fixtures shared by the okcore and service tests: one real Dask cluster."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


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
