"""What a training job runs: a task, called with a reporter (okcore's fit callback plus a
"saving" notice). The jobs layer runs tasks without knowing what they fit
(service.training builds them); a task runs in a worker thread, a training process
(service.jobs.process) or on a Dask worker (service.jobs.cluster).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class Reporter(Protocol):
    """What a training task reports to: okcore's fit callback plus a 'saving' notice."""

    def __call__(self, progress: Any, /) -> bool:
        """Called after each tree with a FitProgress; returns True to stop."""
        ...

    def saving(self) -> None:
        """Called once before the model is written (it is no longer killed on cancel)."""
        ...


TrainTask = Callable[[Reporter], str]
"""Runs the fit; returns "done", "cancelled" or "deleted" (the model was deleted before it
was saved); raises on failure. With process isolation
it must be picklable (a module-level function or a functools.partial of one)."""
