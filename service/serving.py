"""``okboost serve``: the app under uvicorn, its training jobs stopped as soon as the server
is asked to stop.

On SIGTERM / Ctrl-C uvicorn waits for the open requests to end before the app's shutdown
runs (service.app's lifespan, which stops the jobs): a request waiting for a training job
(``"wait": true``) held the server for up to OKBOOST_WAIT_TIMEOUT seconds while the job
trained on, then answered that it was still running. The jobs are now stopped at once
(service.jobs.manager.JobManager.stop_jobs), and such a request is answered 503
``shutting_down``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import FrameType

import uvicorn
from fastapi import FastAPI

from service.config import Settings


class StoppingServer(uvicorn.Server):
    """uvicorn's server, calling ``stop_jobs`` when it is asked to stop."""

    def __init__(self, config: uvicorn.Config, stop_jobs: Callable[[], None]) -> None:
        super().__init__(config)
        self._stop_jobs = stop_jobs

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        # a signal handler: the jobs' lock may be held by this very thread
        threading.Thread(target=self._stop_jobs, name="okboost-stop-jobs").start()


def serve(app: FastAPI, settings: Settings) -> None:
    """Serve ``app`` (service.app.create_app) on the settings' host and port."""
    config = uvicorn.Config(
        app, host=settings.host, port=settings.port, log_level=settings.log_level
    )
    StoppingServer(config, app.state.services.jobs.stop_jobs).run()
