"""A CPU budget for the bipartite default (``BipartiteRegressor(max_cpu_seconds=...)`` with no
model named).

Accounting: CPU seconds of the whole process (``time.process_time``: every thread, numba's
and BLAS's included), from the start of the default's fit, as :mod:`okcore.auto`'s engine
counts them. The members whose fits do not report boosting rounds (weighted neighbours,
kernel ridge, NRLMF: about a tenth of the default's CPU together) always run in full. Each
one-sided fit of a boosted member (a member whose one-sided estimator boosts, e.g.
OK3-et + OKBoost) gets a share of the budget left when it starts: what is left over the
boosted fits not yet started, itself included. Its progress callback stops it at the first
round after its share is spent, and it keeps the rounds grown (``stopped_by_callback_``).

So a budgeted fit exceeds the budget by at most one round per boosted fit, plus the members
that run after the budget is spent (the boosted member is the default's last), plus what a
boosted fit spends before its first round (its output space and bins).
"""

from __future__ import annotations

import time
from typing import Any

from ..cost import reports_rounds


def boosted_members(members: list[Any]) -> set[int]:
    """The indices of the members whose one-sided fits report boosting rounds (a
    :class:`~okcore.bipartite.BipartiteRegressor` over a boosting estimator)."""
    out = set()
    for i, member in enumerate(members):
        estimators = [
            getattr(member, "row_estimator", None),
            getattr(member, "col_estimator", None),
        ]
        if any(reports_rounds(e) for e in estimators if e is not None):
            out.add(i)
    return out


class MemberBudget:
    """The default's fit callback under a CPU budget (module docstring): hears every report
    (``part`` "member-i/rows" / "member-i/columns" for the members' one-sided fits), returns
    True to stop a boosted fit whose share is spent, and passes every report on to
    ``callback`` (whose own stop request is honoured too).

    ``stopped`` lists the parts it stopped; ``spent()`` the CPU seconds since it was made.
    """

    def __init__(self, budget: float, boosted: set[int], callback: Any = None) -> None:
        self.budget, self.boosted, self.callback = float(budget), boosted, callback
        self.start = time.process_time()
        self.fits_left = 2 * len(boosted)  # a row and a column fit per boosted member
        self.part: str | None = None
        self.limit = float("inf")
        self.stopped: list[str] = []

    def spent(self) -> float:
        return time.process_time() - self.start

    def __call__(self, progress: Any) -> bool:
        stop = False
        part = progress.part
        member = part.partition("/")[0].removeprefix("member-") if part and "/" in part else ""
        if member.isdigit() and int(member) in self.boosted:
            if part != self.part:  # a boosted fit starts: its share of what is left
                self.part, spent = part, self.spent()
                self.limit = spent + max(self.budget - spent, 0.0) / max(self.fits_left, 1)
                self.fits_left = max(self.fits_left - 1, 0)
            if progress.phase == "trees" and self.spent() > self.limit:
                stop = True
                if not self.stopped or self.stopped[-1] != part:
                    self.stopped.append(part)
        heard = self.callback(progress) if self.callback is not None else None
        return stop or bool(heard)
