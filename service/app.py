"""The app factory: settings -> FastAPI app with routers, limits and error handlers."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic.json_schema import models_json_schema
from starlette.exceptions import HTTPException as StarletteHTTPException
from threadpoolctl import threadpool_limits

import okcore
from service import __version__
from service.config import Settings
from service.deps import Services, require_token
from service.errors import NotFound, ServiceError, UnknownJob, UnknownModel, error_body
from service.http.bodies import from_validation_error
from service.http.docs_pages import create_offline_docs_app
from service.http.guards import (
    SAFE_METHODS,
    BodyLimits,
    CrossSiteGuard,
    HostAllowList,
    LastResort,
    normalise_origin,
)
from service.jobs.manager import JobManager
from service.jobs.quotas import QueueQuotas
from service.prometheus import Metrics, MetricsMiddleware
from service.routes import (
    archives,
    evaluate,
    health,
    jobs,
    kernel,
    models,
    predict,
    prometheus,
    train,
)
from service.routes.openapi import cross_site_response
from service.schemas.api import KernelRequest, PredictRequest, TrainRequest
from service.schemas.bipartite import (
    BipartiteEvaluateRequest,
    BipartiteKernelRequest,
    BipartiteTrainRequest,
)
from service.schemas.evaluate import EvaluateRequest
from service.schemas.multilabel import MultiLabelTrainRequest
from service.store.model_store import ModelStore

log = logging.getLogger("okboost.service")

TRAINING_PRELOAD = ("service.training.warmup", "service.cli")
"""What the training processes' fork server imports once (service.jobs.process): okcore
with warm numba kernels and the training task's module, and the CLI (the main module of
``okboost serve``, which every child would otherwise import again)."""

DESCRIPTION = """\
Gradient boosting in kernelized output spaces (OKBoost / OK3 trees, Geurts,
Wehenkel & d'Alché-Buc, ICML 2007) as a REST service: train on inputs and an
output kernel (precomputed Gram, linear / rbf / polynomial on output vectors,
or a diffusion kernel on a graph), then predict pre-images, W^F weights,
kernel values and network edges for new inputs.

Every error is answered as
`{"error": {"status": 422, "code": "invalid_data", "message": "...", "details": [...]}}`.
Large arrays can be sent as `.npy` or raw float64 parts of a multipart request.
"""

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    409: "model_not_ready",
    413: "request_too_large",
    415: "unsupported_media_type",
    422: "invalid_data",
}


_METHODS = frozenset({"GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE"})


def _okcore_status(exc: Exception) -> tuple[int, str]:
    if isinstance(exc, okcore.InvalidParameterError):
        return 422, "invalid_parameter"
    if isinstance(exc, okcore.KernelError):
        return 422, "invalid_kernel"
    if isinstance(exc, okcore.DataError):
        return 422, "invalid_data"
    if isinstance(exc, okcore.NotFittedError):
        return 409, "model_not_ready"
    if isinstance(exc, okcore.PersistenceError):
        return 500, "model_corrupted"
    return 500, "internal_error"


def _allowed_methods(request: Request) -> list[str]:
    """The methods the OpenAPI schema documents for this request's path (its routes are one
    per method, and a 405 raised by one of them knows only its own)."""
    methods: set[str] = set()
    for template, operations in request.app.openapi()["paths"].items():
        pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
        if re.fullmatch(pattern, request.url.path):
            methods |= {m.upper() for m in operations if m.upper() in _METHODS}
    return sorted(methods)


def _unknown_model(exc: UnknownModel, jobs: JobManager) -> ServiceError:
    """The 404 of an unknown model id, saying so when the id is a training job's (the id a
    202 from /train answers first)."""
    if not jobs.path(exc.model_id).exists():
        return exc
    return NotFound(
        f"'{exc.model_id}' is the id of a training job, not of a model: GET "
        f"/jobs/{exc.model_id} tells the job's state and, once it is done, the model_id "
        "to use here"
    )


def _unknown_job(exc: UnknownJob, store: ModelStore) -> ServiceError:
    """The 404 of an unknown job id, saying so when the id is a model's."""
    if not store.record_path(exc.job_id).exists():
        return exc
    return NotFound(
        f"'{exc.job_id}' is the id of a model, not of a training job: GET "
        f"/models/{exc.job_id} describes the model, and its job_id names the job that "
        "trained it"
    )


def _install_error_handlers(app: FastAPI) -> None:
    async def service_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ServiceError)
        if isinstance(exc, UnknownModel):
            exc = _unknown_model(exc, request.app.state.services.jobs)
        elif isinstance(exc, UnknownJob):
            exc = _unknown_job(exc, request.app.state.services.store)
        return JSONResponse(exc.body(), exc.status, headers=exc.headers or None)

    async def okcore_error(_: Request, exc: Exception) -> JSONResponse:
        status, code = _okcore_status(exc)
        if status >= 500:
            log.error("okcore error: %s", exc, exc_info=exc)
        return JSONResponse(error_body(status, code, str(exc)), status)

    async def validation_error(_: Request, exc: Exception) -> JSONResponse:
        err = from_validation_error(exc)
        return JSONResponse(err.body(), err.status)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 405:  # every method of the path, not only the first route's
            headers["Allow"] = ", ".join(_allowed_methods(request))
        return JSONResponse(
            error_body(exc.status_code, code, str(exc.detail)),
            exc.status_code,
            headers=headers or None,
        )

    app.add_exception_handler(ServiceError, service_error)
    app.add_exception_handler(okcore.OKCoreError, okcore_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)


def _openapi_with_request_models(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema plus the request models, referenced by the hand-written bodies."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    requests = (
        TrainRequest,
        PredictRequest,
        KernelRequest,
        EvaluateRequest,
        BipartiteTrainRequest,
        MultiLabelTrainRequest,
        BipartiteKernelRequest,
        BipartiteEvaluateRequest,
    )
    _, defs = models_json_schema(
        [(m, "validation") for m in requests],
        ref_template="#/components/schemas/{model}",
    )
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for name, definition in defs.get("$defs", {}).items():
        components.setdefault(name, definition)
    for operations in schema.get("paths", {}).values():  # what CrossSiteGuard may answer
        for method, operation in operations.items():
            if method.upper() in _METHODS - SAFE_METHODS:
                operation.setdefault("responses", {}).setdefault("403", cross_site_response())
    app.openapi_schema = schema
    return schema


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the service on ``settings`` (read from ``OKBOOST_*`` variables if omitted)."""
    settings = settings or Settings.model_validate({})
    store = ModelStore(settings.model_dir, cache_size=settings.cache_size)
    job_manager = JobManager(
        store,
        settings.max_workers,
        settings.max_queued_jobs,
        isolation=settings.job_isolation,
        memory_budget=settings.job_memory_budget(),
        dask_scheduler=settings.dask_scheduler,
        preload=TRAINING_PRELOAD,
        short_job_seconds=settings.short_job_seconds,
        warm_up=settings.warm_up,
        quotas=QueueQuotas(
            max_queued=settings.max_queued_jobs,
            max_queued_per_client=settings.max_queued_jobs_per_client,
            max_queued_bytes=settings.max_queued_bytes,
            max_seconds=settings.max_job_seconds,
        ),
    )
    services = Services(
        settings=settings, store=store, jobs=job_manager, metrics=Metrics(store, job_manager)
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        services.cpu_limiter = anyio.CapacityLimiter(
            settings.predict_threads or max(os.cpu_count() or 1, 1)
        )
        limiter = (
            threadpool_limits(settings.blas_threads, user_api="blas")
            if settings.blas_threads
            else None
        )
        try:
            yield
        finally:
            job_manager.shutdown()
            if limiter is not None:
                limiter.restore_original_limits()

    app = create_offline_docs_app(
        title="okboost",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.services = services
    # the last added runs first: Host check, cross-site check, body caps, last-resort 500
    app.add_middleware(LastResort)
    app.add_middleware(
        BodyLimits,
        max_bytes=settings.max_request_bytes,
        max_json_bytes=settings.max_json_bytes,
        read_timeout=settings.body_read_timeout,
        deadline=settings.body_deadline,
    )
    app.add_middleware(CrossSiteGuard, allowed_origins=settings.allowed_origin_list())
    if settings.allowed_origin_list():  # their pages must read answers and pass preflights
        app.add_middleware(
            CORSMiddleware,
            allow_origins=[normalise_origin(o) for o in settings.allowed_origin_list()],
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "Accept"],
            expose_headers=["Location"],
        )
    app.add_middleware(HostAllowList, allowed_hosts=settings.allowed_host_list())
    # added last, so it runs first: every request is counted, refused ones included
    app.add_middleware(
        MetricsMiddleware, metrics=services.metrics, templates=lambda: app.openapi()["paths"]
    )
    _install_error_handlers(app)

    auth = [Depends(require_token)]
    app.include_router(health.health_router)
    app.include_router(health.version_router, dependencies=auth)
    for module in (train, predict, kernel, evaluate, archives, models, jobs, prometheus):
        app.include_router(module.router, dependencies=auth)
    app.openapi = lambda: _openapi_with_request_models(app)  # type: ignore[method-assign]
    return app
