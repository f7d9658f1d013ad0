"""Typed settings of the service, read from ``OKBOOST_*`` environment variables."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, PrivateAttr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from service.http.guards import LOCAL_HOSTS, default_allowed_hosts


def physical_memory() -> int:
    """Bytes of RAM of this machine (0 when the platform does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0


def _client_tokens(path: Path, shared: str | None) -> tuple[str, ...]:
    """The client tokens in the file ``path``: one per line, each another client's."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ValueError(f"client_tokens_file {path} cannot be read: {exc}") from None
    tokens = tuple(line.strip() for line in lines if line.strip())
    if not tokens:
        raise ValueError(f"client_tokens_file {path} holds no token")
    if len(set(tokens)) < len(tokens) or shared in tokens:
        raise ValueError(
            f"client_tokens_file {path} repeats a token (or holds the shared token): give "
            "each client its own"
        )
    return tokens


class Settings(BaseSettings):
    """Service settings.

    Every field can be set by an environment variable ``OKBOOST_<NAME>``
    (for example ``OKBOOST_MODEL_DIR=/data/models``) or passed to
    :func:`service.app.create_app` directly. No module-level instance exists:
    the app factory receives one, so tests build apps on temporary stores.
    """

    # every number a limit: infinity or NaN (OKBOOST_WAIT_TIMEOUT=inf) is no limit at all
    model_config = SettingsConfigDict(env_prefix="OKBOOST_", extra="ignore", allow_inf_nan=False)

    model_dir: Path = Field(
        Path("models"), description="Directory of the model store (one folder per model)."
    )
    host: str = Field("127.0.0.1", description="Interface `okboost serve` binds to.")
    port: int = Field(8000, ge=0, le=65535, description="TCP port of `okboost serve`.")
    token: str | None = Field(
        None,
        description="Bearer token; when set (or client tokens are: client_tokens_file), every "
        "endpoint but the health probes (/health/*) and the documentation pages (/docs, "
        "/redoc, /openapi.json) requires `Authorization: Bearer <token>`, with this token "
        "or a client token.",
    )
    token_file: Path | None = Field(
        None,
        description="File holding the bearer token (its first line; kept out of the "
        "process list, unlike a command-line argument). Used when `token` is not set.",
    )
    client_tokens_file: Path | None = Field(
        None,
        description="File of client tokens, one per line (blank lines skipped), each "
        "accepted as the token is and naming its holder: the per-client quotas count a "
        "request made with one by its token (a hash of it, never the token itself), not "
        "by its address. Without it, clients are told apart by their addresses.",
    )
    allowed_hosts: str | None = Field(
        None,
        description="Comma-separated Host header values the server answers to ('*': any). "
        "Default: localhost, 127.0.0.1, [::1] and the bound host when it is a specific "
        "interface; any host when a token is set (the token then keeps other sites out).",
    )
    allowed_origins: str | None = Field(
        None,
        description="Comma-separated origins (scheme://host:port, such as "
        "https://app.example.org) of web pages allowed to send state-changing requests "
        "(POST, DELETE) to the service from a browser; they also get CORS answers. Default: "
        "none, a browser request from a page of another site is refused (403): any page the "
        "user visits could otherwise send forms to a server on localhost.",
    )
    allow_remote_without_token: bool = Field(
        False,
        description="Let `okboost serve` listen on a non-loopback interface (such as "
        "0.0.0.0 in a container) without a token. Off by default: anyone who can reach the "
        "port could then train and delete models.",
    )
    max_request_bytes: int = Field(
        512 * 1024 * 1024,
        ge=1024,
        description="Largest accepted request body in bytes (checked on Content-Length "
        "and while streaming, before parsing); larger requests get 413. JSON bodies have "
        "their own, lower cap (max_json_bytes).",
    )
    max_json_bytes: int = Field(
        64 * 1024 * 1024,
        ge=1024,
        description="Largest accepted JSON request body in bytes (413 beyond), and the most "
        "text the parts of one multipart request parsed as JSON or tables may hold together "
        "(counted while they stream). Parsed JSON numbers take about 2.5 times their text "
        "in memory, binary parts their size: large arrays go as multipart parts (up to "
        "max_request_bytes).",
    )
    max_json_depth: int = Field(
        32,
        ge=4,
        le=500,  # deeper is Python's own recursion limit (1000 frames) in sight
        description="Deepest nesting of arrays and objects a JSON body (or the json part of "
        "a multipart request) may have; checked before parsing (422 beyond).",
    )
    body_read_timeout: float = Field(
        30.0,
        gt=0,
        description="Longest wait, in seconds, for the next part of a request body; a client "
        "that stops sending gets 408 and its connection is closed.",
    )
    body_deadline: float = Field(
        300.0,
        gt=0,
        description="Longest time, in seconds, a request body may take to arrive in full, "
        "counted from its first read (a client that sends one byte just within "
        "body_read_timeout, again and again, is cut off too): 408 and the connection closed. "
        "At the default, a 512 MiB upload needs about 1.8 MB/s.",
    )
    max_archive_bytes: int = Field(
        4 * 1024 * 1024 * 1024,
        ge=1024,
        description="Largest total size, in bytes, of the files in a model archive uploaded "
        "to POST /models/import, counted while it is decompressed; larger archives get 413. "
        "The upload itself is bounded by max_request_bytes.",
    )
    max_workers: int = Field(1, ge=1, description="Training jobs that run at the same time.")
    warm_up: bool = Field(
        True,
        description="Start the training processes at start-up, in the background (okcore's "
        "numba kernels load, or on a first run compile: seconds to minutes), so the first "
        "job does not wait for them; /health answers meanwhile. Off: the first job starts "
        "them (its phase says 'starting').",
    )
    short_job_seconds: float = Field(
        60.0,
        ge=0,
        description="Jobs estimated to take at most this many seconds may also run on one "
        "more worker slot kept for them, so a short job does not wait behind long ones "
        "(0: no such slot, every job waits its turn on the max_workers slots).",
    )
    max_train_rows: int = Field(
        200_000, ge=1, description="Largest N (training rows) a /train request may have."
    )
    max_features: int = Field(
        1_000_000, ge=1, description="Largest p (input features) a /train request may have."
    )
    max_estimators: int = Field(
        50_000, ge=1, description="Most trees (n_estimators) a training job may grow."
    )
    max_job_memory: int | None = Field(
        None,
        ge=64 * 1024 * 1024,
        description="Memory budget of one training job in bytes (default: half the machine's "
        "memory divided by max_workers). /train refuses (422) a job whose estimated memory "
        "is over it, and a training process that allocates more than it beyond its start "
        "is stopped (the job fails with a clear reason).",
    )
    max_job_seconds: float = Field(
        86_400.0,
        gt=0,
        description="Longest training time, in seconds: /train refuses (422) a job estimated "
        "to take longer, and a job that runs longer is stopped (it fails, naming this "
        "setting).",
    )
    job_isolation: Literal["process", "thread"] = Field(
        "process",
        description="Run each training job in a child process (default; keeps the service "
        "responsive while scipy factorises a Gram matrix) or in the worker thread.",
    )
    dask_scheduler: str | None = Field(
        None,
        description="Address of a Dask scheduler (e.g. tcp://scheduler:8786): /train then runs "
        "each fit as a task on that cluster instead of a local process (docs/DEPLOY.md). The "
        "workers must see the model store at the same absolute path as the service (model_dir, "
        "a relative one taken from the service's working directory). Needs "
        "the [dask] extra. Default: none, training jobs run in local processes.",
    )
    max_queued_jobs: int = Field(
        64, ge=1, description="Training jobs waiting for a worker before new ones get 429."
    )
    max_queued_jobs_per_client: int = Field(
        16,
        ge=1,
        description="Training jobs one client (by its client token, else its address) may "
        "have waiting; its next one "
        "gets 429, so one client cannot fill the queue for all.",
    )
    max_queued_bytes: int = Field(
        1024 * 1024 * 1024,
        ge=1024,
        description="Bytes of data all waiting training jobs may hold together (their "
        "requests' arrays, kept compact: a network's edges, not its dense matrix); a job "
        "that would pass it gets 429.",
    )
    max_store_bytes: int | None = Field(
        None,
        ge=1024,
        description="Largest size of the model store, in bytes of its models' files: a "
        "/train whose model (by its estimated size) or an import whose archive's files would "
        "pass it gets 507. Default: no limit but the disk's free space.",
    )
    max_models_per_client: int | None = Field(
        None,
        ge=1,
        description="Models one client (by its client token, else its address) may keep in "
        "the store; its next /train or import gets 429 until it deletes some. Default: no "
        "limit.",
    )
    max_store_bytes_per_client: int | None = Field(
        None,
        ge=1024,
        description="Bytes of models one client (by its client token, else its address) may "
        "keep in the store; a /train or import that would pass it gets 507. Default: no "
        "limit.",
    )
    cache_size: int = Field(8, ge=1, description="Loaded models kept in memory (LRU).")
    wait_timeout: float = Field(
        120.0,
        gt=0,
        description='Longest time `"wait": true` blocks a /train request before answering '
        "202 with the job to poll.",
    )
    predict_threads: int = Field(
        0,
        ge=0,
        description="Predictions computed at the same time (0: the number of CPU cores); "
        "further requests wait in line.",
    )
    blas_threads: int = Field(
        1,
        ge=0,
        description="BLAS threads in the server process (0: the library's default). Requests "
        "already run in parallel threads; a multi-threaded BLAS under them made a one-vertex "
        "prediction 4x slower on 2 cores. Training processes are not limited.",
    )
    max_dense_values: int = Field(
        20_000_000,
        ge=1,
        description="Largest dense matrix an answer or an intermediate may hold, in values "
        "(Q x N for /predict weights = dense and /kernel against = training, Q x Q or Q x Q2 "
        "for the predicted kernel, Q x top_k pre-images (times d with return_outputs), C x N "
        "for candidates sent to /predict, Q x top_k new-known edges), the most edges one "
        "/kernel answer and the most triples one sparse W^F answer may list; pre-images are "
        "computed in blocks of rows within it. Larger asks get 422 naming the way around "
        "(weights = sparse, top_k edges, fewer rows or candidates per request).",
    )
    log_level: str = Field("info", description="uvicorn log level.")
    _client_tokens: tuple[str, ...] = PrivateAttr(())

    @model_validator(mode="after")
    def _token_from_file(self) -> Settings:
        if self.token is None and self.token_file is not None:
            try:
                lines = self.token_file.read_text(encoding="utf-8").splitlines()
            except OSError as exc:
                raise ValueError(f"token_file {self.token_file} cannot be read: {exc}") from None
            token = lines[0].strip() if lines else ""
            if not token:
                raise ValueError(f"token_file {self.token_file} is empty")
            self.token = token
        if self.client_tokens_file is not None:
            self._client_tokens = _client_tokens(self.client_tokens_file, self.token)
        return self

    def tokens(self) -> tuple[str, ...]:
        """Every bearer token accepted: ``token`` and the client tokens."""
        return ((self.token,) if self.token else ()) + self._client_tokens

    def client_tokens(self) -> tuple[str, ...]:
        """The tokens of ``client_tokens_file``: each names one client."""
        return self._client_tokens

    def job_memory_budget(self) -> int:
        """``max_job_memory``, or half the machine's memory over ``max_workers``."""
        if self.max_job_memory is not None:
            return self.max_job_memory
        return max(physical_memory() // (2 * self.max_workers), 64 * 1024 * 1024)

    def allowed_host_list(self) -> list[str]:
        """The Host header values answered (see ``allowed_hosts``)."""
        if self.allowed_hosts is not None:
            return [h.strip() for h in self.allowed_hosts.split(",") if h.strip()]
        return ["*"] if self.tokens() else default_allowed_hosts(self.host)

    def allowed_origin_list(self) -> list[str]:
        """The origins of ``allowed_origins``."""
        return [o.strip() for o in (self.allowed_origins or "").split(",") if o.strip()]

    def exposure_problem(self) -> str | None:
        """Why `okboost serve` must not start with these settings: a non-loopback interface
        without a token (unless allow_remote_without_token), else None."""
        if self.tokens() or self.allow_remote_without_token:
            return None
        if self.host.strip().lower() in (*LOCAL_HOSTS, "::1") or self.host.startswith("127."):
            return None
        return (
            f"refusing to listen on {self.host} without a token: anyone who can reach the "
            "port could train and delete models. Set OKBOOST_TOKEN or OKBOOST_TOKEN_FILE "
            "(or --token-file), or bind 127.0.0.1, or set OKBOOST_ALLOW_REMOTE_WITHOUT_TOKEN=1 "
            "if the network is trusted"
        )
