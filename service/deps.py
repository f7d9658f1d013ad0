"""Dependencies shared by the routers: the app's services, the bearer-token check and who
the client is."""

from __future__ import annotations

import hashlib
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
    """401 unless a configured bearer token is presented (no-op when none is set). A
    client token (``OKBOOST_CLIENT_TOKENS_FILE``) also says who the client is, for the
    per-client quotas (:func:`client_key`)."""
    settings = _services(request).settings
    tokens = settings.tokens()
    if not tokens:
        return
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    if not header:
        raise Unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
    presented = given.strip().encode()
    matched = None
    for token in tokens:  # each compared in constant time, every one of them
        if secrets.compare_digest(presented, token.encode()):
            matched = token
    if scheme.lower() != "bearer" or matched is None:
        raise Unauthorized("wrong bearer token")
    if matched in settings.client_tokens():
        request.state.client_key = token_key(matched)


def token_key(token: str) -> str:
    """A client token as a client's key: ``token:`` and the first 16 hex digits of its
    SHA-256 (the token itself is never stored)."""
    return "token:" + hashlib.sha256(token.encode()).hexdigest()[:16]


def client_key(request: Request) -> str | None:
    """Who a request comes from, for the per-client quotas (queued jobs, stored models and
    bytes) and the ``client`` of the models it trains or imports: the client token that
    authenticated it (:func:`token_key`), else its address (the shared ``OKBOOST_TOKEN``
    names no one: all who hold it are told apart by their addresses)."""
    key = getattr(request.state, "client_key", None)
    if key is not None:
        return str(key)
    return request.client.host if request.client is not None else None
