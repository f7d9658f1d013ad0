"""What okcore's CPU budgets share: the clock they count on and the stop they put in a fit.

Accounting: CPU seconds of the whole process (``time.process_time``: every thread of the
process, numba's and BLAS's included) since a start (:class:`CpuClock`). A fit under a limit
gets a :class:`CpuCap` as its progress callback: the first round it reports (a "trees"
report) after the clock has passed the limit stops it, and the fit keeps the rounds grown.
Set-up phases are not stopped (a fit cannot stop them), so a capped fit exceeds its limit by
at most one round plus what it spends before its first round.

Threads: a budgeted fit runs BLAS on one thread (:func:`on_one_blas_thread`,
:func:`budgeted_fit`). A budget counts CPU seconds, and a multi-threaded BLAS spends more of
them for the same result: its threads spin while they wait for each other, and far more so
when the machine is busy (kernel ridge with its width by CV on 720 rows: 1.2 CPU s on one
thread, 5.9 CPU s and a longer wall time on two, on 2 cores with three other processes
running). The cost models the budgets plan with were measured on one thread, so on one
thread their predictions hold whatever the load.

How a budget divides itself among its fits is the budget's own rule:
:mod:`okcore.auto.engine` (a share per fit of each rung of the successive halving),
:mod:`okcore.bipartite.budget` (a share per one-sided fit of the bipartite default's boosted
members) and :class:`okcore.multilabel.CandidateBudget` (candidates in priority order, with
their folds). Which fits report rounds, so that a cap can stop them between rounds, is
:func:`okcore.cost.reports_rounds`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

from threadpoolctl import threadpool_limits

from .callbacks import FitProgress, RoundCallback

_Fit = TypeVar("_Fit", bound=Callable[..., Any])


class CpuClock:
    """The process's CPU seconds (``time.process_time``) since ``start``: when it was made."""

    def __init__(self) -> None:
        self.start = time.process_time()

    def spent(self) -> float:
        """CPU seconds since ``start``."""
        return time.process_time() - self.start


class CpuCap:
    """A fit's progress callback that stops it (True) at the first "trees" report after
    ``clock`` has passed ``limit`` CPU seconds; ``stopped`` says whether it did. Every report
    is passed on to ``callback`` (the caller's own, or None), whose stop request is honoured
    too (it does not count as ``stopped``)."""

    def __init__(
        self, clock: CpuClock, limit: float, callback: RoundCallback | None = None
    ) -> None:
        self.clock, self.limit, self.callback = clock, float(limit), callback
        self.stopped = False

    def __call__(self, progress: FitProgress) -> bool:
        stop = progress.phase == "trees" and self.clock.spent() > self.limit
        self.stopped = self.stopped or stop
        heard = self.callback(progress) if self.callback is not None else None
        return stop or bool(heard)


def on_one_blas_thread(fit: _Fit) -> _Fit:
    """Decorate a function that fits under a CPU budget: BLAS runs on one thread while it
    runs (module docstring), and the caller's thread setting is restored afterwards."""

    @functools.wraps(fit)
    def run(*args: Any, **kwargs: Any) -> Any:
        with threadpool_limits(limits=1, user_api="blas"):
            return fit(*args, **kwargs)

    return run  # type: ignore[return-value]


def budgeted_fit(fit: _Fit) -> _Fit:
    """Decorate an estimator's ``fit`` whose ``max_cpu_seconds`` (None: no budget) budgets
    it: with a budget, BLAS runs on one thread during the fit (:func:`on_one_blas_thread`);
    without one, the caller's thread setting applies."""

    threaded = on_one_blas_thread(fit)

    @functools.wraps(fit)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        return (fit if self.max_cpu_seconds is None else threaded)(self, *args, **kwargs)

    return run  # type: ignore[return-value]
