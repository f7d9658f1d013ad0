"""The CPU budget of the bipartite default (BipartiteRegressor(max_cpu_seconds=...)): the
boosted member stops at the first round after its share is spent, the other members run in
full, the fit stays within the automatic choice's stated tolerance of the budget (on the
same process-CPU accounting), a generous budget changes nothing, a named model refuses
a budget, and a budgeted fit runs BLAS on one thread."""

from __future__ import annotations

import time

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from okcore import OKBoostRegressor
from okcore.auto import BUDGET_TOLERANCE
from okcore.auto.engine import BUDGET_SLACK_SECONDS
from okcore.bipartite import BipartiteRegressor, NeighbourRegressor
from okcore.bipartite.budget import MemberBudget, boosted_members
from okcore.callbacks import FitProgress
from okcore.exceptions import DataError


def _network() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    Xr, Xc = rng.normal(size=(40, 4)), rng.normal(size=(30, 3))
    Y = (Xr[:, :1] @ Xc[:, :1].T + 0.5 * rng.normal(size=(40, 30)) > 0.8).astype(float)
    return Xr, Xc, Y


def _boosted(model: BipartiteRegressor) -> list[BipartiteRegressor]:
    members = model.default_model_.members_
    return [members[i] for i in sorted(boosted_members(members))]


def test_a_spent_budget_stops_the_boosted_member_after_one_round() -> None:
    Xr, Xc, Y = _network()
    budget = 1e-3  # spent by the members before the boosted one: each boosted fit's share is 0
    full = BipartiteRegressor().fit(Xr, Xc, Y)  # first: numba's compilation is not the fit's
    start = time.process_time()
    model = BipartiteRegressor(max_cpu_seconds=budget).fit(Xr, Xc, Y)
    spent = time.process_time() - start
    boosted = _boosted(model)
    assert boosted, "the default has a boosted member"
    for member in boosted:
        for side in (member.row_model_, member.col_model_):
            assert side.n_estimators_ == 1 and side.stopped_by_callback_
    for cut, whole in zip(model.default_model_.members_, full.default_model_.members_, strict=True):
        if cut not in boosted:  # the other members run in full: the same model
            np.testing.assert_array_equal(cut.predict(Xr[:3]), whole.predict(Xr[:3]))
    assert spent <= (1 + BUDGET_TOLERANCE) * budget + BUDGET_SLACK_SECONDS
    assert np.all(np.isfinite(model.predict(Xr[:3], Xc[:2])))


def test_a_generous_budget_changes_nothing() -> None:
    Xr, Xc, Y = _network()
    a = BipartiteRegressor(max_cpu_seconds=1e6).fit(Xr, Xc, Y)
    b = BipartiteRegressor().fit(Xr, Xc, Y)
    for args in ((Xr[:4],), (None, Xc[:3]), (Xr[:4], Xc[:3])):
        np.testing.assert_array_equal(a.predict(*args), b.predict(*args))
    assert all(not m.row_model_.stopped_by_callback_ for m in _boosted(a))


def test_each_boosted_fit_gets_its_share_of_what_is_left() -> None:
    heard: list[FitProgress] = []
    budget = MemberBudget(100.0, {1}, heard.append)
    budget.start -= 40.0  # 40 s already spent: 60 s left for two boosted fits
    tree = FitProgress(1, 300, 0.0, part="member-1/rows")
    assert budget(tree) is False and budget.limit == pytest.approx(70.0, abs=0.5)
    budget.start -= 40.0  # 80 s spent: past the rows' share
    assert budget(tree) is True and budget.stopped == ["member-1/rows"]
    columns = FitProgress(1, 300, 0.0, part="member-1/columns")
    assert budget(columns) is False and budget.limit == pytest.approx(100.0, abs=0.5)
    # other members and the members phase are never stopped, and every report is passed on
    assert budget(FitProgress(1, 300, 0.0, part="member-0/rows")) is False
    assert len(heard) == 4


def test_a_named_model_refuses_a_budget() -> None:
    Xr, Xc, Y = _network()
    with pytest.raises(DataError, match="budget of the default"):
        BipartiteRegressor(NeighbourRegressor(3, 0.8, "cosine"), max_cpu_seconds=5.0).fit(Xr, Xc, Y)
    with pytest.raises(Exception, match="max_cpu_seconds"):
        BipartiteRegressor(max_cpu_seconds=0.0).fit(Xr, Xc, Y)
    assert boosted_members([BipartiteRegressor(OKBoostRegressor())]) == {0}


def test_a_budgeted_fit_runs_blas_on_one_thread() -> None:
    Xr, Xc, Y = _network()

    def threads_heard(budget: float | None) -> set[int]:
        heard: set[int] = set()

        def record(progress: FitProgress) -> bool:
            heard.update(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
            return False

        BipartiteRegressor(max_cpu_seconds=budget).fit(Xr, Xc, Y, callback=record)
        return heard

    with threadpool_limits(limits=2, user_api="blas"):
        before = {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
        assert threads_heard(1e6) == {1}
        assert threads_heard(None) == before
