"""The bipartite default's job estimate comes from okcore's cost model of the default
(``BipartiteRegressor().estimate_cost``) and is the one the service's own flop counts gave
before that model moved into okcore; under a CPU budget the members without boosting
rounds (kernel ridge among them) keep their whole estimate."""

from __future__ import annotations

import pytest

from service.training.bipartite_default import default_estimate, member_costs, member_steps

# Computed by service/training/bipartite_default.py's own flop counts (_member_costs,
# MEMBER_FLOP_RATE = 2e9) before they moved into okcore: (name, seconds, memory, disk) per
# member, the boosted member's 600 rounds (300 per side), the progress steps, and the job
# estimate's seconds, memory and disk for data_bytes. The boosted member's numbers follow
# okcore's tree cost constants (okcore/trees/cost.py), kernel ridge's its rates
# (okcore/kernel_models/cost.py, recalibrated since: its seconds here are the new rates'):
# a change of those changes them.
OLD = {
    ("features", (30, 20), (5, 7), 12345): (
        [
            ("wknnir", 4.665e-05, 7200.0, 11920.0),
            ("krr_recovered", 0.00031331333333333333, 27840.0, 29040.0),
            ("nrlmf", 0.0168, 28800.0, 22800.0),
            ("ok3et_okboost_recovered", 0.03831162488125243, 2455680.0, 2294400.0),
        ],
        [1, 6, 303, 691],
        (0.05547158821458576, 252480370.0, 2370505.0),
    ),
    ("similarity", (95, 223), (95, 223), 10**6): (
        [
            ("wknnir", 0.013297841000000001, 397832.0, 808992.0),
            ("krr_recovered", 0.08914113354, 1364760.0, 1319976.0),
            ("nrlmf", 0.59318, 1016880.0, 694512.0),
            ("ok3et_okboost_recovered", 17.911189885750545, 13433920.0, 10342160.0),
        ],
        [1, 5, 32, 963],
        (18.606808860290545, 265433920.0, 14165640.0),
    ),
}


@pytest.mark.parametrize("case", list(OLD), ids=["features", "similarity"])
def test_the_default_estimate_is_unchanged(case: tuple) -> None:
    inputs, shape, widths, data_bytes = case
    members, steps, (seconds, memory, disk) = OLD[case]
    costs = member_costs(inputs, shape, widths)
    assert [(c.name, c.seconds, c.memory_bytes, c.disk_bytes) for c in costs] == [
        (name, pytest.approx(s, rel=1e-12), m, d) for name, s, m, d in members
    ]
    assert [c.trees for c in costs] == [0, 0, 0, 600]
    assert member_steps(costs) == steps
    estimate = default_estimate(costs, shape, widths, data_bytes)
    assert estimate.seconds == pytest.approx(seconds, rel=1e-12)
    assert (estimate.memory_bytes, estimate.disk_bytes, estimate.n_trees) == (memory, disk, 300)


def test_a_budget_leaves_kernel_ridge_its_whole_estimate() -> None:
    """okcore's budget stops boosted fits only (okcore.bipartite.budget): kernel ridge runs
    in full. The service's old estimate counted kernel ridge's one stage per side as trees
    and cut it with the boosted member (to 0 s here, where NRLMF alone spends the budget)."""
    shape, widths = (95, 223), (95, 223)
    full = member_costs("similarity", shape, widths)
    for budget in (0.5, 2.0):
        cut = member_costs("similarity", shape, widths, budget)
        assert [c for c in cut if not c.trees] == [c for c in full if not c.trees]
        fixed = sum(c.seconds for c in full if not c.trees)
        assert sum(c.seconds for c in cut) == pytest.approx(max(budget, fixed), rel=1e-12)
    assert cut[1].name == "krr_recovered" and cut[1].seconds == pytest.approx(0.08914113354)
