"""GET /metrics: Prometheus text exposition (needs the token like every non-health route)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from service.deps import ServicesDep
from service.errors import error_body
from service.prometheus import CONTENT_TYPE
from service.routes.openapi import ERROR_EXAMPLES

router = APIRouter(tags=["health"])

EXAMPLE = """\
# HELP okboost_http_requests_total HTTP requests by method, route template and status.
# TYPE okboost_http_requests_total counter
okboost_http_requests_total{method="POST",route="/kernel",status="200"} 1024.0
# HELP okboost_jobs Training jobs on record by state.
# TYPE okboost_jobs gauge
okboost_jobs{state="running"} 1.0
"""


@router.get(
    "/metrics",
    summary="Prometheus metrics: requests, latency, jobs, model cache, training seconds",
    response_class=Response,
    responses={
        200: {
            "description": "Prometheus text format 0.0.4",
            "content": {"text/plain": {"schema": {"type": "string"}, "example": EXAMPLE}},
        },
        401: {
            "description": ERROR_EXAMPLES[401][2],
            "content": {
                "application/json": {
                    "example": error_body(401, ERROR_EXAMPLES[401][0], ERROR_EXAMPLES[401][1])
                }
            },
        },
    },
)
async def metrics(svc: ServicesDep) -> Response:
    """Requests by route template and status, latency histograms per route, jobs by state,
    training seconds, model-cache hits and misses, and the server process's memory and CPU.
    Scrape it with the service's bearer token when one is set (`authorization` in
    Prometheus's scrape config)."""
    body = await run_in_threadpool(svc.metrics.render)
    return Response(body, media_type=CONTENT_TYPE)
