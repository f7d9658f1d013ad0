"""What fitting an estimator will cost, estimated before it starts: the public result of
every estimator's :meth:`~okcore.base.OKEstimator.estimate_cost`.

Each estimator family owns its model of the stages it grows (OK3 trees:
:mod:`okcore.trees.cost`; boosted sparse KRR: :mod:`okcore.kernel_models.cost`); the
output factor's cost is :func:`okcore.outputs.space.estimate_factor_cost`, the same for
every family. The constants of both were fitted to real fits on the project machine
(2 cores, with other work running) by bench/job_cost.py; docs/API.md ("Job limits") has
the estimates beside the measurements.

The bipartite models (:mod:`okcore.bipartite`) estimate a fit on an interaction matrix as a
:class:`BipartiteCost`: their one-sided estimators' :class:`FitCost` plus their own terms
(:mod:`okcore.bipartite.cost`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .exceptions import OKCoreError


@dataclass(frozen=True)
class StageCost:
    """What an estimator family estimates for its stages (trees or kernel models) with an
    output factor of r columns: ``n_stages`` stages of ``stage_size`` (leaves per tree,
    basis vectors per KRR stage) found by ``search`` ("exact", "histogram" or "kernel");
    ``work_bytes`` held at the peak of the stage loop, ``setup_seconds`` before the first
    stage (binning, presorting), ``stage_seconds`` per stage, ``model_bytes`` of the saved
    stages."""

    n_stages: int
    stage_size: int
    search: str
    work_bytes: float
    setup_seconds: float
    stage_seconds: float
    model_bytes: float


@dataclass(frozen=True)
class FitCost:
    """The estimated cost of one fit (:meth:`~okcore.base.OKEstimator.estimate_cost`) on
    ``n_samples`` rows of ``n_features`` inputs with an output factor of ``rank`` columns
    (an upper bound: N for an exact factor of a kernel on vectors, whose numerical rank may
    be lower, and the estimate is then high).

    ``memory_bytes`` is the fit's peak beyond the process and the given data: the larger
    of the factor's peak and the stage loop's work. ``disk_bytes`` is the saved model
    beyond the given data: the factor (8 N r) and the stages. Seconds: the factor, the
    set-up, then ``n_stages`` x ``stage_seconds``.
    """

    n_samples: int
    n_features: int
    rank: int
    n_stages: int
    stage_size: int  # leaves per tree, or basis vectors per KRR stage
    search: str  # "exact", "histogram", "kernel" or "neighbours"
    memory_bytes: float
    factor_seconds: float
    setup_seconds: float
    stage_seconds: float
    disk_bytes: float

    @property
    def seconds(self) -> float:
        """The whole fit: factor + set-up + every stage."""
        return self.factor_seconds + self.setup_seconds + self.n_stages * self.stage_seconds


@dataclass(frozen=True)
class BipartiteCost:
    """The estimated cost of one fit of a bipartite model on an ``n_rows`` x ``n_cols``
    interaction matrix (``estimate_cost(n_rows, n_cols, row_features, col_features)`` of
    :class:`~okcore.bipartite.BipartiteRegressor`, :class:`~okcore.bipartite.NRLMF` and
    :class:`~okcore.bipartite.RankAveragedBipartite`; the terms are
    :mod:`okcore.bipartite.cost`'s).

    ``parts``: the CPU seconds of each part of the fit, in the order it runs ("rows" and
    "columns": the one-sided fits; "recovery", "output_similarity", "kronecker",
    "pair_model", "sweeps" (NRLMF); "member-i" for an ensemble's members), whose sum is
    :attr:`seconds`. ``memory_bytes``: the peak beyond the process and the given data, the
    largest of the parts' (they run one after another). ``disk_bytes``: the saved model
    beyond the given data, the parts' sum. ``n_stages``: the stages (trees, kernel models)
    of its one-sided fits; ``n_rounds``: those grown by boosting, whose fits report every
    round and so can be stopped between rounds by a CPU budget
    (:mod:`okcore.bipartite.budget`). ``sides``: the row and the column fit's
    :class:`FitCost` (empty without one-sided fits); ``members``: an ensemble's members'
    costs, in order (their seconds, disk, stages and rounds add up to the ensemble's; its
    memory is their largest).
    """

    n_rows: int
    n_cols: int
    parts: Mapping[str, float]
    memory_bytes: float
    disk_bytes: float
    n_stages: int = 0
    n_rounds: int = 0
    sides: tuple[FitCost, ...] = ()
    members: tuple[BipartiteCost, ...] = ()

    @property
    def seconds(self) -> float:
        """The whole fit: the sum of its parts."""
        return sum(self.parts.values(), 0.0)


def predicted_seconds(
    estimator: Any, n_samples: int, n_features: int, *, kernel: Any, n_outputs: int | None
) -> float:
    """The CPU seconds the ``estimator``'s cost model predicts for one fit on ``n_samples``
    rows (:meth:`~okcore.base.OKEstimator.estimate_cost`), or 0 when it has no cost model or
    cannot cost these data: what a CPU budget plans its first fits with."""
    if not hasattr(estimator, "estimate_cost"):
        return 0.0
    try:
        cost = estimator.estimate_cost(n_samples, n_features, kernel=kernel, n_outputs=n_outputs)
    except (OKCoreError, TypeError, ValueError):
        return 0.0
    return float(cost.seconds)


def reports_rounds(estimator: Any) -> bool:
    """Whether the ``estimator``'s fit hears its progress callback after every round
    (boosting: it has ``staged_predict``), so that a CPU budget can stop it between rounds."""
    return hasattr(estimator, "staged_predict")
