"""okcore.budget, what the CPU budgets share: the process-CPU clock, and the cap that stops a
fit at its first round ("trees" report) after a CPU limit, passing every report on to the
caller's callback and honouring its stop. The clock is moved by its ``start`` (no timing
assertions): its CPU seconds since then only grow."""

from __future__ import annotations

import time

import numpy as np

from okcore import OKBoostRegressor
from okcore.budget import CpuCap, CpuClock
from okcore.callbacks import FitProgress

TREE = FitProgress(1, 10, 0.0)  # a round
SETUP = FitProgress(0, 10, 0.0, phase="binning")  # a set-up phase


def test_the_clock_counts_the_process_cpu_from_its_start() -> None:
    before = time.process_time()
    clock = CpuClock()
    assert before <= clock.start <= time.process_time()
    first = clock.spent()
    assert first >= 0.0 and clock.spent() >= first  # process time never goes back
    clock.start -= 100.0  # as if 100 CPU seconds had been spent since it was made
    assert clock.spent() >= 100.0 + first


def test_the_cap_stops_at_the_first_round_after_its_limit() -> None:
    clock = CpuClock()
    cap = CpuCap(clock, 50.0)
    assert cap(TREE) is False and cap(SETUP) is False and not cap.stopped
    clock.start -= 100.0  # past the limit
    assert cap(SETUP) is False and not cap.stopped  # set-up phases are never stopped
    assert cap(FitProgress(0, 1, 0.0, phase="members")) is False and not cap.stopped
    assert cap(TREE) is True and cap.stopped
    assert cap(TREE) is True and cap.stopped  # every later round too


def test_every_report_is_passed_on_and_the_callers_stop_honoured() -> None:
    heard: list[FitProgress] = []
    clock = CpuClock()
    cap = CpuCap(clock, 50.0, heard.append)
    reports = [SETUP, TREE, FitProgress(2, 10, 0.0, part="rows")]
    assert [cap(p) for p in reports] == [False] * 3
    clock.start -= 100.0
    assert cap(TREE) is True  # stopped by the cap: the caller still hears the round
    assert heard == [*reports, TREE]

    def stop_at_round_2(p: FitProgress) -> bool:
        return p.done >= 2

    cap = CpuCap(CpuClock(), 50.0, stop_at_round_2)
    assert cap(TREE) is False and cap(FitProgress(2, 10, 0.0)) is True
    assert not cap.stopped  # the caller stopped the fit, not the limit


def test_a_capped_fit_keeps_its_rounds() -> None:
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(40, 3)), rng.normal(size=(40, 2))
    spent = CpuClock()
    spent.start -= 100.0
    cap = CpuCap(spent, 50.0)
    model = OKBoostRegressor(n_estimators=20, max_splits=3).fit(X, Y, callback=cap)
    assert cap.stopped and model.stopped_by_callback_ and model.n_estimators_ == 1
    free = CpuCap(CpuClock(), float("inf"))
    model = OKBoostRegressor(n_estimators=20, max_splits=3).fit(X, Y, callback=free)
    assert not free.stopped and not model.stopped_by_callback_ and model.n_estimators_ == 20
