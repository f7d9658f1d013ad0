"""What okcore's CPU budgets share: the clock they count on and the stop they put in a fit.

Accounting: CPU seconds of the whole process (``time.process_time``: every thread of the
process, numba's and BLAS's included) since a start (:class:`CpuClock`). A fit under a limit
gets a :class:`CpuCap` as its progress callback: the first round it reports (a "trees"
report) after the clock has passed the limit stops it, and the fit keeps the rounds grown.
Set-up phases are not stopped (a fit cannot stop them), so a capped fit exceeds its limit by
at most one round plus what it spends before its first round.

How a budget divides itself among its fits is the budget's own rule:
:mod:`okcore.auto.engine` (a share per fit of each rung of the successive halving),
:mod:`okcore.bipartite.budget` (a share per one-sided fit of the bipartite default's boosted
members) and :class:`okcore.multilabel.CandidateBudget` (candidates in priority order, with
their folds). Which fits report rounds, so that a cap can stop them between rounds, is
:func:`okcore.cost.reports_rounds`.
"""

from __future__ import annotations

import time

from .callbacks import FitProgress, RoundCallback


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
