"""GET /health/live, GET /health/ready, GET /version (no token needed for health)."""

from __future__ import annotations

import platform

import numpy as np
from fastapi import APIRouter
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

import okcore
from service import __version__
from service.deps import ServicesDep
from service.errors import error_body
from service.routes.openapi import responses
from service.schemas.api import HealthResponse, VersionResponse

API_VERSION = "1"

health_router = APIRouter(tags=["health"])
version_router = APIRouter(tags=["health"])


@health_router.get(
    "/health/live",
    summary="The process answers",
    response_model=HealthResponse,
    responses=responses(200, HealthResponse, {"status": "live"}),
)
async def live() -> JSONResponse:
    return JSONResponse({"status": "live"})


@health_router.get(
    "/health/ready",
    summary="The model store is writable and the service can take requests",
    response_model=HealthResponse,
    responses={
        **responses(200, HealthResponse, {"status": "ready"}),
        503: {
            "description": "Not ready",
            "content": {
                "application/json": {
                    "example": error_body(
                        503, "not_ready", "model store /data/models is not writable"
                    )
                }
            },
        },
    },
)
async def ready(svc: ServicesDep) -> JSONResponse:
    """Ready when a record can be written to the model store now (a probe file is written,
    fsynced and removed: a full disk is not ready even if the directory is writable)."""
    problem = await run_in_threadpool(svc.store.check_writable)
    if problem is not None:
        return JSONResponse(error_body(503, "not_ready", problem), 503)
    return JSONResponse({"status": "ready"})


@version_router.get(
    "/version",
    summary="Versions of the service, okcore and the API",
    response_model=VersionResponse,
    responses=responses(
        200,
        VersionResponse,
        {"service": "0.1.0", "okcore": "0.1.0", "api": "1", "python": "3.11.9", "numpy": "2.1.0"},
        401,
    ),
)
async def version() -> JSONResponse:
    return JSONResponse(
        {
            "service": __version__,
            "okcore": str(getattr(okcore, "__version__", "unknown")),
            "api": API_VERSION,
            "python": platform.python_version(),
            "numpy": np.__version__,
        }
    )
