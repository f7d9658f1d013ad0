"""What a training job runs: a task, called with a reporter (okcore's fit callback plus a
"saving" notice). The jobs layer runs tasks without knowing what they fit
(service.training builds them); a task runs in a worker thread, a training process
(service.jobs.process) or on a Dask worker (service.jobs.cluster).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
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


class Cancelled(Exception):
    """The job was asked to stop (heard after a tree of one of its fits)."""


@dataclass
class FitsProgress:
    """The job's reporter over fits run one after another (``trees``: each fit's planned
    trees; the one-sided fits of a bipartite model, the inner and final fits of a
    multi-label one): a fit's reports shifted past the trees of the fits before it, scaled
    to its planned trees if it grows another number, with the time since the job started as
    ``elapsed`` (each fit's own clock restarts at 0). Raises :class:`Cancelled` when asked
    to stop. ``unit``: what the planned counts are when they are not trees (the fits of the
    multi-label default differ in cost: each is planned as its share of the job's
    estimated CPU)."""

    reporter: Reporter
    trees: list[int]
    started: float = field(default_factory=time.perf_counter)
    unit: str | None = None
    reported: int = 0  # the last count reported

    def fit(self, i: int, progress: Any) -> None:
        """The i-th fit's report (okcore's FitProgress, heard by that fit's callback)."""
        planned = self.trees[i]
        done = sum(self.trees[:i]) + planned * min(progress.done, progress.total) // max(
            progress.total, 1
        )
        elapsed = time.perf_counter() - self.started
        unit = self.unit or progress.unit
        total = sum(self.trees)
        self.reported = done
        if self.reporter(replace(progress, done=done, total=total, elapsed=elapsed, unit=unit)):
            raise Cancelled
