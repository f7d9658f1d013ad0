"""A CPU budget for the bipartite default (``BipartiteRegressor(max_cpu_seconds=...)`` with no
model named).

Accounting: :mod:`okcore.budget`'s (CPU seconds of the whole process, every thread
included), from the start of the default's fit. The members whose fits do not report
boosting rounds (weighted neighbours, kernel ridge, NRLMF: about a tenth of the default's CPU
together) always run in full. Each one-sided fit of a boosted member (a member whose
one-sided estimator boosts, e.g. OK3-et + OKBoost) gets a share of the budget left when it
starts: what is left over the boosted fits not yet started, itself included. Its progress
callback (a :class:`~okcore.budget.CpuCap`) stops it at the first round after its share is
spent, and it keeps the rounds grown (``stopped_by_callback_``). Which fit reports is read
from the report's ``part``, which :meth:`~okcore.bipartite.RankAveragedBipartite.fit`
composes: "member-i/rows" and "member-i/columns" for member i's one-sided fits.

So a budgeted fit exceeds the budget by at most one round per boosted fit, plus the members
that run after the budget is spent (the boosted member is the default's last), plus what a
boosted fit spends before its first round (its output space and bins).
"""

from __future__ import annotations

from typing import Any

from ..budget import CpuCap, CpuClock
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


class MemberBudget(CpuClock):
    """The default's fit callback under a CPU budget (module docstring), its clock started
    when it is made: hears every report (``part`` "member-i/rows" / "member-i/columns" for
    the members' one-sided fits) and gives each boosted one-sided fit a
    :class:`~okcore.budget.CpuCap` at its share, which stops it after its share is spent.
    Every report is passed on to ``callback``, whose own stop request is honoured too.

    ``limit`` is the CPU limit of the last boosted fit started (its clock's seconds).
    """

    def __init__(self, budget: float, boosted: set[int], callback: Any = None) -> None:
        super().__init__()
        self.budget, self.boosted, self.callback = float(budget), boosted, callback
        self.fits_left = 2 * len(boosted)  # a row and a column fit per boosted member
        self.limit = float("inf")
        self.caps: list[tuple[str, CpuCap]] = []  # each boosted fit's part and cap
        self.others = CpuCap(self, float("inf"), callback)  # every other report: no limit

    @property
    def stopped(self) -> list[str]:
        """The parts of the boosted fits it stopped, in order."""
        return [part for part, cap in self.caps if cap.stopped]

    def __call__(self, progress: Any) -> bool:
        part = progress.part
        member = part.partition("/")[0].removeprefix("member-") if part and "/" in part else ""
        if not (member.isdigit() and int(member) in self.boosted):
            return self.others(progress)
        if not self.caps or self.caps[-1][0] != part:  # a boosted fit starts: its share
            spent = self.spent()
            self.limit = spent + max(self.budget - spent, 0.0) / max(self.fits_left, 1)
            self.fits_left = max(self.fits_left - 1, 0)
            self.caps.append((part, CpuCap(self, self.limit, self.callback)))
        return self.caps[-1][1](progress)
