"""Typed settings of the service, read from ``OKBOOST_*`` environment variables."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Service settings.

    Every field can be set by an environment variable ``OKBOOST_<NAME>``
    (for example ``OKBOOST_MODEL_DIR=/data/models``) or passed to
    :func:`service.app.create_app` directly. No module-level instance exists:
    the app factory receives one, so tests build apps on temporary stores.
    """

    model_config = SettingsConfigDict(env_prefix="OKBOOST_", extra="ignore")

    model_dir: Path = Field(
        Path("models"), description="Directory of the model store (one folder per model)."
    )
    host: str = Field("127.0.0.1", description="Interface `okboost serve` binds to.")
    port: int = Field(8000, ge=0, le=65535, description="TCP port of `okboost serve`.")
    token: str | None = Field(
        None,
        description="Bearer token; when set, every endpoint but /health/* requires "
        "`Authorization: Bearer <token>`.",
    )
    max_request_bytes: int = Field(
        512 * 1024 * 1024,
        ge=1024,
        description="Largest accepted request body in bytes (checked on Content-Length "
        "and while streaming, before parsing); larger requests get 413.",
    )
    max_workers: int = Field(1, ge=1, description="Training jobs that run at the same time.")
    job_isolation: Literal["process", "thread"] = Field(
        "process",
        description="Run each training job in a child process (default; keeps the service "
        "responsive while scipy factorises a Gram matrix) or in the worker thread.",
    )
    max_queued_jobs: int = Field(
        64, ge=1, description="Training jobs waiting for a worker before new ones get 429."
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
        description="Largest dense matrix an answer may hold, in values (Q x N for "
        "/predict weights = dense and /kernel against = training, Q x Q or Q x Q2 for the "
        "predicted kernel), the most edges one /kernel answer and the most triples one "
        "sparse W^F answer may list; larger asks get "
        "422 naming the sparse alternative (weights = sparse, top_k edges, fewer rows).",
    )
    log_level: str = Field("info", description="uvicorn log level.")
