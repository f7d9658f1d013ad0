"""Prometheus metrics of one app (prometheus-client, a registry per app, no globals).

- ``okboost_http_requests_total{method, route, status}`` and
  ``okboost_http_request_duration_seconds{method, route}`` (histogram), counted by an
  ASGI middleware around the whole app, so refusals before routing (413, 400 ...) are
  counted too. ``route`` is the route's template (``/models/{model_id}``), never the raw
  path, and ``unmatched`` for paths no route serves; ``method`` is one of the HTTP
  methods or ``OTHER``: label cardinality stays bounded whatever clients send.
- ``okboost_jobs{state}``: training jobs on record by state (queued, running, done,
  failed, cancelled), and ``okboost_training_seconds`` (histogram): wall seconds from
  start to end of each finished job that trained a model (state done); both read
  from the job manager when scraped.
- ``okboost_model_cache_hits_total``, ``okboost_model_cache_misses_total`` (loads of a
  model answered from memory / read from disk) and ``okboost_model_cache_models``.
- With a Dask scheduler (``OKBOOST_DASK_SCHEDULER``): ``okboost_dask_scheduler_up`` (1 while
  this server is connected to it, else 0) and ``okboost_dask_workers`` (the workers it has;
  0 while it is not connected), asked of the scheduler when scraped.
- ``process_*`` (resident memory, CPU seconds, open files ...) of the server process.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.jobs.manager import JobManager
from service.jobs.records import QuarantinedJob
from service.store.model_store import ModelStore

CONTENT_TYPE = CONTENT_TYPE_LATEST
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "unmatched"
JOB_STATES = ("queued", "running", "done", "failed", "cancelled", "invalid")
"""Job states counted by okboost_jobs; "invalid": quarantined, its record fails validation."""
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
TRAINING_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0)


class _ServiceCollector(Collector):
    """Jobs by state, training seconds and the model cache, read when scraped."""

    def __init__(self, store: ModelStore, jobs: JobManager) -> None:
        self.store = store
        self.jobs = jobs

    def collect(self) -> Iterator[Metric]:
        by_state = dict.fromkeys(JOB_STATES, 0)
        durations = []
        for job in self.jobs.all_jobs():
            by_state[job.state] = by_state.get(job.state, 0) + 1
            if isinstance(job, QuarantinedJob):
                continue
            if job.state == "done" and job.started is not None and job.finished is not None:
                durations.append(max(job.finished - job.started, 0.0))
        states = GaugeMetricFamily(
            "okboost_jobs", "Training jobs on record by state.", labels=["state"]
        )
        for state, count in by_state.items():
            states.add_metric([state], count)
        yield states
        buckets = [
            (repr(bound), sum(1 for d in durations if d <= bound)) for bound in TRAINING_BUCKETS
        ]
        buckets.append(("+Inf", len(durations)))
        yield HistogramMetricFamily(
            "okboost_training_seconds",
            "Wall seconds from start to end of each training job that trained a model.",
            buckets=buckets,
            sum_value=sum(durations),
        )
        yield CounterMetricFamily(
            "okboost_model_cache_hits",
            "Model loads answered from the in-memory cache.",
            value=self.store.cache_hits,
        )
        yield CounterMetricFamily(
            "okboost_model_cache_misses",
            "Model loads that read the model from disk.",
            value=self.store.cache_misses,
        )
        yield GaugeMetricFamily(
            "okboost_model_cache_models",
            "Models held in the in-memory cache.",
            value=len(self.store.cached_ids()),
        )
        if self.jobs.cluster is not None:
            up, workers = self.jobs.cluster.state()
            yield GaugeMetricFamily(
                "okboost_dask_scheduler_up",
                "1 while this server is connected to its Dask scheduler, else 0.",
                value=int(up),
            )
            yield GaugeMetricFamily(
                "okboost_dask_workers",
                "Workers of the Dask scheduler (0 while it is not connected).",
                value=workers,
            )


class Metrics:
    """The registry of one app and the instruments the middleware feeds."""

    def __init__(self, store: ModelStore, jobs: JobManager) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "okboost_http_requests",
            "HTTP requests by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "okboost_http_request_duration_seconds",
            "Seconds from the request's arrival to the end of its answer, by route template.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        ProcessCollector(registry=self.registry)
        self.registry.register(_ServiceCollector(store, jobs))

    def render(self) -> bytes:
        """The text exposition format (reads job records: call it off the event loop)."""
        return generate_latest(self.registry)


class RouteNames:
    """The route template of a request: the route the app's router chose (``scope["route"]``,
    set while routing), or, for requests refused before routing (413, Host check ...),
    the first documented path template that matches; else ``unmatched``."""

    def __init__(self, templates: Callable[[], Iterable[str]]) -> None:
        self._templates = templates
        self._compiled: list[tuple[re.Pattern[str], str]] | None = None

    def of(self, scope: Scope) -> str:
        path = getattr(scope.get("route"), "path", None)
        if isinstance(path, str):
            return path
        if self._compiled is None:
            self._compiled = [(compile_path(t)[0], t) for t in self._templates()]
        for regex, template in self._compiled:
            if regex.match(scope.get("path", "")):
                return template
        return UNMATCHED


class MetricsMiddleware:
    """Counts every HTTP request and times it, labelled by route template and status."""

    def __init__(
        self, app: ASGIApp, metrics: Metrics, templates: Callable[[], Iterable[str]]
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = RouteNames(templates)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope["method"] if scope["method"] in METHODS else "OTHER"
        status = 500  # unless the app starts an answer
        started = time.perf_counter()

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = self.routes.of(scope)
            self.metrics.requests.labels(method, route, str(status)).inc()
            self.metrics.latency.labels(method, route).observe(time.perf_counter() - started)
