"""Dependencies shared by the routers: the app's services and the bearer-token check."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import anyio
from fastapi import Depends, Request

from service.config import Settings
from service.errors import Unauthorized
from service.jobs.manager import JobManager
from service.prometheus import Metrics
from service.store.model_store import ModelStore

T = TypeVar("T")


@dataclass
class Services:
    """What the routes need, built once per app by :func:`service.app.create_app`."""

    settings: Settings
    store: ModelStore
    jobs: JobManager
    metrics: Metrics
    cpu_limiter: anyio.CapacityLimiter | None = None

    async def run_cpu(self, func: Callable[..., T], *args: Any) -> T:
        """Run CPU-bound ``func(*args)`` in a worker thread, at most ``predict_threads`` at
        once (first come, first served): memory stays bounded under a flood of requests,
        and the event loop keeps threads for everything else."""
        return await anyio.to_thread.run_sync(func, *args, limiter=self.cpu_limiter)


async def get_services(request: Request) -> Services:
    # async: a sync dependency would cost a thread-pool round trip on every request
    return _services(request)


def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


async def require_token(request: Request) -> None:
    """401 unless the configured bearer token is presented (no-op when none is set)."""
    token = _services(request).settings.token
    if not token:
        return
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    if not header:
        raise Unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
    if scheme.lower() != "bearer" or not secrets.compare_digest(
        given.strip().encode(), token.encode()
    ):
        raise Unauthorized("wrong bearer token")
