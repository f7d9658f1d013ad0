"""The bipartite models' cost models (``estimate_cost`` of BipartiteRegressor, NRLMF,
RankAveragedBipartite and NeighbourRegressor): each estimate is the sum of its parts, every
part is its stated formula or the one-sided estimator's own cost model, estimates grow with
the network, an ensemble's total is its members', NRLMF's is linear in its sweeps, and the
default under a CPU budget runs its members without boosting in full."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from okcore import BipartiteCost, KernelRidgeRegressor, OK3ForestRegressor, OKBoostRegressor
from okcore.bipartite import NRLMF, BipartiteRegressor, NeighbourRegressor, RankAveragedBipartite
from okcore.bipartite.cost import (
    DENSE_FLOP_RATE,
    kronecker_bytes,
    kronecker_seconds,
    output_similarity_seconds,
    recovery_seconds,
)
from okcore.bipartite.default import default_members
from okcore.exceptions import DataError

SHAPE, WIDTHS = (40, 30), (6, 9)


def _default_members(inputs: str = "features") -> list[Any]:
    return list(default_members(inputs, 0, bipartite=BipartiteRegressor).values())


@pytest.mark.parametrize("inputs", ["features", "similarity"])
def test_each_default_member_is_the_sum_of_its_parts(inputs: str) -> None:
    (n_r, n_c), (p_r, p_c) = SHAPE, WIDTHS
    for member in _default_members(inputs):
        cost = member.estimate_cost(n_r, n_c, p_r, p_c)
        assert isinstance(cost, BipartiteCost) and (cost.n_rows, cost.n_cols) == SHAPE
        assert cost.seconds == pytest.approx(sum(cost.parts.values()), rel=1e-12)
        if isinstance(member, NRLMF):
            assert list(cost.parts) == ["sweeps"] and cost.sides == ()
            continue
        est = member.row_estimator
        row = est.estimate_cost(n_r, p_r, kernel=member.kernel, n_outputs=n_c)
        col = est.estimate_cost(n_c, p_c, kernel=member.kernel, n_outputs=n_r)
        assert cost.sides == (row, col)
        assert cost.parts["rows"] == row.seconds and cost.parts["columns"] == col.seconds
        assert cost.parts["recovery"] == recovery_seconds(n_r, n_c)
        want_disk = row.disk_bytes + col.disk_bytes
        if member.new_pairs == "kronecker":
            assert cost.parts["kronecker"] == kronecker_seconds(n_r, n_c)
            want_disk += kronecker_bytes(n_r, n_c, p_r, p_c)
        assert cost.disk_bytes == want_disk
        assert cost.memory_bytes == max(row.memory_bytes, col.memory_bytes)
        assert cost.n_stages == row.n_stages + col.n_stages
        boosted = isinstance(est, OKBoostRegressor)
        assert cost.n_rounds == (row.n_stages + col.n_stages if boosted else 0)


def test_the_terms_are_their_stated_flop_counts() -> None:
    n_r, n_c, p = 12, 7, 5
    assert recovery_seconds(n_r, n_c) * DENSE_FLOP_RATE == pytest.approx(
        2 * (n_r * n_r * n_c + n_r * n_c * n_c)
    )
    assert kronecker_seconds(n_r, n_c) * DENSE_FLOP_RATE == pytest.approx(10 * (n_r**3 + n_c**3))
    assert output_similarity_seconds(n_r, n_c) * DENSE_FLOP_RATE == pytest.approx(
        6 * (n_r**3 + n_c**3) + 2 * n_r * n_c * (n_r + n_c)
    )
    wknn = NeighbourRegressor(5, 0.8, "cosine").estimate_cost(n_r, p, n_outputs=n_c)
    assert wknn.seconds * DENSE_FLOP_RATE == pytest.approx(n_r * n_r * (p + 20))
    assert (wknn.n_stages, wknn.memory_bytes, wknn.disk_bytes) == (
        0, 8.0 * n_r * n_r, 8.0 * n_r * (p + n_c),
    )  # fmt: skip
    sweeps = NRLMF(n_factors=3, max_iter=4).estimate_cost(n_r, n_c, p, 2 * p)
    assert sweeps.seconds * DENSE_FLOP_RATE == pytest.approx(4 * (10 * 3 + 60) * n_r * n_c)
    assert sweeps.memory_bytes == 48.0 * n_r * n_c
    assert sweeps.disk_bytes == 8.0 * (n_r + n_c) * (3 + 2 * p)


def test_named_models_add_their_pair_model_and_output_similarity() -> None:
    (n_r, n_c), (p_r, p_c) = SHAPE, WIDTHS
    side = KernelRidgeRegressor(alpha=1.0)
    plain = BipartiteRegressor(side).estimate_cost(n_r, n_c, p_r, p_c)
    assert list(plain.parts) == ["rows", "columns"] and plain.n_rounds == 0
    similar = BipartiteRegressor(side, output_similarity=True).estimate_cost(n_r, n_c, p_r, p_c)
    assert similar.parts["output_similarity"] == output_similarity_seconds(n_r, n_c)
    forest = OK3ForestRegressor(n_estimators=7)
    pairs = BipartiteRegressor(side, new_pairs="pair-trees", pair_estimator=forest, max_pairs=500)
    cost = pairs.estimate_cost(n_r, n_c, p_r, p_c)
    want = forest.estimate_cost(500, p_r + p_c, n_outputs=1)  # pair rows [x_r, x_c] -> y_rc
    assert cost.parts["pair_model"] == want.seconds > 0
    assert cost.disk_bytes == plain.disk_bytes + want.disk_bytes
    assert cost.memory_bytes == max(plain.memory_bytes, want.memory_bytes)
    default_forest = BipartiteRegressor(side, new_pairs="pair-trees")  # OK3 extra-trees
    assert default_forest.estimate_cost(n_r, n_c, p_r, p_c).parts["pair_model"] > 0
    # the column model named apart is costed by its own model
    mixed = BipartiteRegressor(side, NeighbourRegressor(5, 0.8, "cosine"))
    assert mixed.estimate_cost(n_r, n_c, p_r, p_c).sides[1].search == "neighbours"


@pytest.mark.parametrize("inputs", ["features", "similarity"])
def test_estimates_grow_with_the_network(inputs: str) -> None:
    models = [*_default_members(inputs), BipartiteRegressor(inputs=inputs)]
    sizes = [(20, 15, 4, 6), (40, 15, 4, 6), (40, 30, 4, 6), (40, 30, 8, 6), (80, 60, 16, 12)]
    for model in models:
        costs = [model.estimate_cost(*s) for s in sizes]
        for small, large in itertools.pairwise(costs):
            assert small.seconds <= large.seconds, type(model).__name__
            assert small.memory_bytes <= large.memory_bytes, type(model).__name__
            assert small.disk_bytes <= large.disk_bytes, type(model).__name__
        assert costs[0].seconds < costs[-1].seconds


def test_the_ensemble_is_its_members_sum() -> None:
    members = _default_members()
    cost = RankAveragedBipartite(members, [1.0, 1.0, 2.0, 1.0]).estimate_cost(*SHAPE, *WIDTHS)
    own = [m.estimate_cost(*SHAPE, *WIDTHS) for m in members]
    assert cost.members == tuple(own)
    assert list(cost.parts) == [f"member-{i}" for i in range(len(members))]
    assert cost.seconds == pytest.approx(sum(m.seconds for m in own), rel=1e-12)
    assert cost.disk_bytes == sum(m.disk_bytes for m in own)
    assert cost.memory_bytes == max(m.memory_bytes for m in own)
    assert cost.n_stages == sum(m.n_stages for m in own)
    assert cost.n_rounds == sum(m.n_rounds for m in own) == 600  # OKBoost's, both sides
    # the default (no model named) is that ensemble
    default = BipartiteRegressor().estimate_cost(*SHAPE, *WIDTHS)
    assert default.members == cost.members


def test_nrlmf_grows_linearly_in_its_sweeps() -> None:
    one = NRLMF(max_iter=1).estimate_cost(*SHAPE, *WIDTHS)
    for max_iter in (2, 10, 100):
        many = NRLMF(max_iter=max_iter).estimate_cost(*SHAPE, *WIDTHS)
        assert many.seconds == pytest.approx(max_iter * one.seconds, rel=1e-12)
        assert (many.memory_bytes, many.disk_bytes) == (one.memory_bytes, one.disk_bytes)


def test_a_budget_cuts_only_the_members_with_boosting_rounds() -> None:
    full = BipartiteRegressor().estimate_cost(*SHAPE, *WIDTHS)
    fixed = sum(m.seconds for m in full.members if not m.n_rounds)
    boosted = full.seconds - fixed
    budget = fixed + 0.25 * boosted
    cut = BipartiteRegressor(max_cpu_seconds=budget).estimate_cost(*SHAPE, *WIDTHS)
    for before, after in zip(full.members, cut.members, strict=True):
        if before.n_rounds:  # what the others leave, set-up included
            assert after.seconds == pytest.approx(0.25 * before.seconds, rel=1e-12)
            assert list(after.parts) == list(before.parts)
        else:  # kernel ridge, neighbours and NRLMF always run in full
            assert after == before
    assert cut.seconds == pytest.approx(budget, rel=1e-12)
    assert cut.memory_bytes == full.memory_bytes and cut.disk_bytes == full.disk_bytes
    spent = BipartiteRegressor(max_cpu_seconds=0.5 * fixed).estimate_cost(*SHAPE, *WIDTHS)
    assert spent.seconds == pytest.approx(fixed, rel=1e-12)
    ample = BipartiteRegressor(max_cpu_seconds=10 * full.seconds).estimate_cost(*SHAPE, *WIDTHS)
    assert ample.seconds == pytest.approx(full.seconds, rel=1e-12)


class _NoCostModel:
    def fit(self, *args: Any, **kwargs: Any) -> _NoCostModel:
        return self


def test_a_part_without_a_cost_model_is_a_clear_error() -> None:
    with pytest.raises(DataError, match="row model _NoCostModel has no cost model"):
        BipartiteRegressor(_NoCostModel()).estimate_cost(*SHAPE, *WIDTHS)
    with pytest.raises(DataError, match=r"member 1 \(_NoCostModel\) has no cost model"):
        RankAveragedBipartite([NRLMF(), _NoCostModel()]).estimate_cost(*SHAPE, *WIDTHS)
    named = BipartiteRegressor(KernelRidgeRegressor(), max_cpu_seconds=5.0)
    with pytest.raises(DataError, match="budget of the default"):  # as its fit says
        named.estimate_cost(*SHAPE, *WIDTHS)
