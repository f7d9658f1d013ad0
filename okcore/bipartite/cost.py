"""Cost models of the bipartite models (their ``estimate_cost``, a
:class:`~okcore.cost.BipartiteCost`): the terms they add to their one-sided estimators'
own cost models (:meth:`~okcore.base.OKEstimator.estimate_cost`), as flop counts over
DENSE_FLOP_RATE. With n_r rows, n_c columns, p_r and p_c input columns per side (a
similarity side: p = its vertices):

    weighted neighbours (one side of n items, p inputs, d outputs; :func:`neighbour_cost`)
        flops n^2 (p + NEIGHBOUR_SELECT_FLOPS): the similarities among the items (cosine:
        n^2 p) and the choice of each item's nearest (a sort, about 20 per pair);
        memory 8 n^2 (the n x n similarities or weights), disk 8 n (p + d)
    interaction recovery (:func:`recovery_seconds`)
        flops 2 (n_r^2 n_c + n_r n_c^2): the dense products W_r Y and Y W_c^T
    output similarity (:func:`output_similarity_seconds`)
        flops (EIGH_FLOPS + 2) (n_r^3 + n_c^3) + 2 n_r n_c (n_r + n_c): the square root of
        each side's similarity (an eigendecomposition, a product) and Y S^(1/2)
    Kronecker ridge for new pairs (:func:`kronecker_seconds`, :func:`kronecker_bytes`)
        flops KRONECKER_FLOPS (n_r^3 + n_c^3): the two sides' eigendecompositions and the
        products that rotate Y into their bases and back; disk 8 (n_r n_c + n_r p_r +
        n_c p_c) (the dual coefficients and the training inputs it keeps)
    NRLMF, per sweep (:func:`nrlmf_cost`)
        flops (NRLMF_FACTOR_FLOPS r + NRLMF_PAIR_FLOPS) n_r n_c: U V^T three times (both
        gradients, the objective) and R V, R^T U, 2 r each per pair, plus the element-wise
        sigmoid, log-sum and weights; memory NRLMF_PAIR_BYTES n_r n_c (six dense n_r x n_c
        arrays); disk 8 (n_r + n_c) (r + max(p_r, p_c)) (each side's latent vectors and
        training inputs)

A bipartite regressor adds these to its row and column fits (each fit's n_outputs the
other side's size), a rank average adds up its members (:func:`ensemble_cost`), and the
default under a CPU budget gives its boosted members what the others leave
(:func:`within_budget`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..cost import BipartiteCost, FitCost
from ..kernel_models.cost import EIGH_FLOPS

DENSE_FLOP_RATE = 2e9
"""Flops per second of the bipartite models' dense linear algebra (numpy products and
eigendecompositions of a few hundred vertices, one thread, a loaded machine)."""
NEIGHBOUR_SELECT_FLOPS = 20.0
"""Flops per pair of items of choosing each item's nearest neighbours (a sort)."""
KRONECKER_FLOPS = 10.0
"""Flops of Kronecker ridge regression's fit per n^3 of each side."""
NRLMF_FACTOR_FLOPS, NRLMF_PAIR_FLOPS = 10.0, 60.0
"""Flops of one NRLMF sweep per pair and latent factor, and per pair."""
NRLMF_PAIR_BYTES = 48.0
"""Bytes NRLMF holds per pair of the network (six float64 arrays of its size)."""


def neighbour_cost(n_samples: int, n_features: int, n_outputs: int | None) -> FitCost:
    """The cost of one side's weighted nearest neighbours
    (:class:`~okcore.bipartite.NeighbourRegressor`) on ``n_samples`` items of
    ``n_features`` inputs with ``n_outputs`` outputs (None: ``n_samples``, a bound): O(n^2 p)
    (module docstring), no stages."""
    n, p = n_samples, n_features
    d = n if n_outputs is None else n_outputs
    return FitCost(
        n_samples=n,
        n_features=p,
        rank=max(int(d), 1),
        n_stages=0,
        stage_size=0,
        search="neighbours",
        memory_bytes=8.0 * n * n,
        factor_seconds=0.0,
        setup_seconds=n * n * (p + NEIGHBOUR_SELECT_FLOPS) / DENSE_FLOP_RATE,
        stage_seconds=0.0,
        disk_bytes=8.0 * n * (p + d),
    )


def recovery_seconds(n_rows: int, n_cols: int) -> float:
    """The interaction recovery's products, 2 (n_r^2 n_c + n_r n_c^2) flops."""
    return 2.0 * (n_rows * n_rows * n_cols + n_rows * n_cols * n_cols) / DENSE_FLOP_RATE


def output_similarity_seconds(n_rows: int, n_cols: int) -> float:
    """Each side's similarity square root and the profiles through it,
    (EIGH_FLOPS + 2) (n_r^3 + n_c^3) + 2 n_r n_c (n_r + n_c) flops."""
    cubes = (EIGH_FLOPS + 2.0) * (n_rows**3 + n_cols**3)
    return (cubes + 2.0 * n_rows * n_cols * (n_rows + n_cols)) / DENSE_FLOP_RATE


def kronecker_seconds(n_rows: int, n_cols: int) -> float:
    """Kronecker ridge regression's fit, KRONECKER_FLOPS (n_r^3 + n_c^3) flops."""
    return KRONECKER_FLOPS * (n_rows**3 + n_cols**3) / DENSE_FLOP_RATE


def kronecker_bytes(n_rows: int, n_cols: int, row_features: int, col_features: int) -> float:
    """Kronecker ridge regression's saved model: its dual coefficients and training inputs."""
    return 8.0 * (n_rows * n_cols + n_rows * row_features + n_cols * col_features)


def nrlmf_cost(
    n_rows: int,
    n_cols: int,
    row_features: int,
    col_features: int,
    *,
    n_factors: int,
    max_iter: int,
) -> BipartiteCost:
    """NRLMF's fit: ``max_iter`` sweeps of O(n_r n_c r) (module docstring)."""
    r = int(n_factors)
    sweeps = max_iter * (NRLMF_FACTOR_FLOPS * r + NRLMF_PAIR_FLOPS) * n_rows * n_cols
    return BipartiteCost(
        n_rows=n_rows,
        n_cols=n_cols,
        parts={"sweeps": sweeps / DENSE_FLOP_RATE},
        memory_bytes=NRLMF_PAIR_BYTES * n_rows * n_cols,
        disk_bytes=8.0 * (n_rows + n_cols) * (r + max(row_features, col_features)),
    )


def ensemble_cost(n_rows: int, n_cols: int, members: Sequence[BipartiteCost]) -> BipartiteCost:
    """Members fitted one after another: their seconds, disk, stages and rounds add up, the
    peak memory is the largest member's; part "member-i" is member i's seconds."""
    return BipartiteCost(
        n_rows=n_rows,
        n_cols=n_cols,
        parts={f"member-{i}": m.seconds for i, m in enumerate(members)},
        memory_bytes=max((m.memory_bytes for m in members), default=0.0),
        disk_bytes=sum((m.disk_bytes for m in members), 0.0),
        n_stages=sum(m.n_stages for m in members),
        n_rounds=sum(m.n_rounds for m in members),
        members=tuple(members),
    )


def within_budget(cost: BipartiteCost, max_cpu_seconds: float) -> BipartiteCost:
    """An ensemble's cost under a CPU budget as :mod:`okcore.bipartite.budget` spends it:
    the members without boosting rounds run in full; those with share what they leave of
    ``max_cpu_seconds`` (each scaled by min(1, left / their seconds), set-up included)."""
    members = cost.members
    boosted = sum(m.seconds for m in members if m.n_rounds)
    left = max(float(max_cpu_seconds) - sum(m.seconds for m in members if not m.n_rounds), 0.0)
    scale = min(1.0, left / boosted) if boosted > 0 else 1.0
    scaled = [
        replace(m, parts={k: v * scale for k, v in m.parts.items()}) if m.n_rounds else m
        for m in members
    ]
    return ensemble_cost(cost.n_rows, cost.n_cols, scaled)
