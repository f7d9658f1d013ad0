"""okcore.budget, what the CPU budgets share: the process-CPU clock, and the cap that stops a
fit at its first round ("trees" report) after a CPU limit, passing every report on to the
caller's callback and honouring its stop; budgeted fits run BLAS on one thread. The clock is moved by its ``start`` (no timing
assertions): its CPU seconds since then only grow."""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from okcore import MultiLabelClassifier, OKBoostRegressor
from okcore.auto import Candidate, select
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


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


class ThreadRecordingBoost(OKBoostRegressor):
    """Records the BLAS thread counts each fit runs with."""

    seen: list[list[int]] = []

    def fit(self, X, Y=None, **kwargs):
        ThreadRecordingBoost.seen.append(_blas_threads())
        return super().fit(X, Y, **kwargs)


def _rows(n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    return X, np.c_[X[:, 0], X[:, 1] > 0].astype(float)


def test_budgeted_fits_run_blas_on_one_thread_and_restore_the_callers_setting() -> None:
    X, Y = _rows()
    candidates = [Candidate("boost", lambda s: ThreadRecordingBoost(n_estimators=5))]
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        ThreadRecordingBoost.seen.clear()
        select(candidates, X, Y, max_cpu_seconds=30.0, random_state=0)
        assert ThreadRecordingBoost.seen and all(
            threads == [1] * len(before) for threads in ThreadRecordingBoost.seen
        )
        assert _blas_threads() == before
        labels = (Y[:, 1:] > 0).astype(int)
        labels = np.c_[labels, 1 - labels]
        for budget, expected in ((30.0, 1), (None, 2)):
            ThreadRecordingBoost.seen.clear()
            MultiLabelClassifier(
                estimator=ThreadRecordingBoost(n_estimators=5), max_cpu_seconds=budget
            ).fit(X, labels)
            assert ThreadRecordingBoost.seen and all(
                threads == [min(expected, b) for b in before]
                for threads in ThreadRecordingBoost.seen
            )
            assert _blas_threads() == before
