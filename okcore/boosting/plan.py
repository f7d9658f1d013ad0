"""How an OKBoost fit grows its trees: the :class:`GrowthPlan` resolved once per fit from the
parameters, the inputs and the output factor by the rules of :mod:`okcore.defaults`, and the
paper's preset (:data:`PAPER_PRESET`), which pins every parameter the rules would resolve.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from .. import defaults
from ..cost import StageCost
from ..outputs.space import RANK_TOLERANCE
from ..trees.estimator import max_leaves
from ..trees.oblivious import HISTOGRAM_BYTES


@dataclass(frozen=True)
class GrowthPlan:
    """How one OKBoost fit grows its trees, resolved once from the parameters, the inputs
    and the output factor (:meth:`OKBoostRegressor.growth_plan`), and read by the fit, each
    tree's growth parameters and the cost model; a warm start continues with its fit's plan.

    tree_type : "best-first" or "oblivious" ("auto" resolved).
    max_splits : J of a best-first tree (None resolved to
        :data:`~okcore.defaults.DEFAULT_MAX_SPLITS`).
    max_depth : the depth limit; an oblivious tree's None resolved to
        :func:`~okcore.defaults.default_oblivious_depth` of the factor's rank.
    l2_regularization : lambda ("auto" resolved).
    max_bins, sketch_dim : the split search (:func:`~okcore.defaults.resolve_search`; None:
        exact, all r columns).
    refine_cuts : whether the histogram search refines its cuts.
    max_leaves : the leaves a tree can have on the fit's rows (the cost model's bound).
    """

    tree_type: str
    max_splits: int
    max_depth: int | None
    l2_regularization: float
    max_bins: int | None
    sketch_dim: int | None
    refine_cuts: bool
    max_leaves: int

    def resolved(self) -> dict[str, Any]:
        """The resolved parameters the plan holds, as JSON values (the fitted
        ``resolved_params_`` starts from them): all fields but the cost model's
        ``max_leaves``."""
        return {k: v for k, v in asdict(self).items() if k != "max_leaves"}


#: The paper's algorithm (Geurts, Wehenkel & d'Alche-Buc 2007: Algorithm 3 with OK3 trees grown
#: best-first by highest N*var, section 2.4.2), with Table 1's M = 500 and nu = 0.01, as
#: :meth:`OKBoostRegressor.paper` builds it: every parameter that changes the fitted model is
#: pinned here, so changing the estimator's defaults never changes the preset. J is chosen by
#: cross-validation in [1, 40] in the paper: 10 here, to override.
PAPER_PRESET: dict[str, Any] = {
    "loss": "squared",
    "n_estimators": 500,
    "learning_rate": 0.01,
    "max_splits": 10,
    "splitter": "best",
    "max_features": None,
    "leaf_order": "variance",
    "min_samples_leaf": 1,
    "max_depth": None,
    "l2_regularization": 0.0,
    "subsample": 1.0,
    "colsample_bytree": 1.0,
    "tree_type": "best-first",
    "early_stopping": False,
    "n_iter_no_change": None,
    "sketch_dim": None,
    "max_bins": None,
    "refine_cuts": False,
    "factor_rank": None,
    "factor_tol": RANK_TOLERANCE,
    "n_landmarks": None,
    "init": None,  # F_0 the training mean (Algorithm 3, line 1)
}


def dearer_stages(primary: StageCost, other: StageCost) -> StageCost:
    """``primary``'s stages with the larger seconds and bytes of the two: the cost of a
    stage loop that may turn out to be ``other`` (known at fit time only)."""
    return replace(
        primary,
        setup_seconds=max(primary.setup_seconds, other.setup_seconds),
        stage_seconds=max(primary.stage_seconds, other.stage_seconds),
        work_bytes=max(primary.work_bytes, other.work_bytes),
        model_bytes=max(primary.model_bytes, other.model_bytes),
    )


def plan_growth(
    tree_type: str,
    n_samples: int,
    rank: int,
    *,
    max_splits: int | None,
    max_depth: int | None,
    l2_regularization: float | str,
    loss: str,
    max_bins: int | str | None,
    sketch_dim: int | str | None,
    refine_cuts: bool | str,
    min_samples_leaf: int,
) -> GrowthPlan:
    """The plan of a fit growing ``tree_type`` trees (resolved) on ``n_samples`` rows and a
    factor of ``rank`` columns, the parameters resolved by the rules of
    :mod:`okcore.defaults` (``refine_cuts`` False where the search cannot refine). O(1)."""
    oblivious = tree_type == "oblivious"
    splits = max_splits or defaults.DEFAULT_MAX_SPLITS
    if oblivious and max_depth is None:
        max_depth = defaults.default_oblivious_depth(rank, n_samples)
    penalty = defaults.resolve_l2_regularization(l2_regularization, tree_type, loss, rank)
    bins, sketch = defaults.resolve_search(max_bins, sketch_dim, n_samples, rank, oblivious)
    level_splits = 2 ** int(max_depth or 0) - 1  # an oblivious tree's leaves, less one
    return GrowthPlan(  # plain ints: the plan is saved as JSON
        tree_type=tree_type,
        max_splits=int(splits),
        max_depth=None if max_depth is None else int(max_depth),
        l2_regularization=float(penalty),
        max_bins=None if bins is None else int(bins),
        sketch_dim=None if sketch is None else int(sketch),
        refine_cuts=refine_cuts is not False
        and defaults.resolve_refine_cuts(refine_cuts, oblivious, rank),
        max_leaves=max_leaves(
            n_samples, level_splits if oblivious else splits, min_samples_leaf, max_depth
        ),
    )


def level_histogram_bytes(plan: GrowthPlan, stage_size: int, n_features: int, rank: int) -> float:
    """What an oblivious tree adds to a stage's work memory: a level histogram (B bins x the
    level's nodes x the search width, at most HISTOGRAM_BYTES), and with a search width
    above 1 a second one for the histogram subtraction (the parents' and the built
    children's, :mod:`okcore.trees.oblivious`); 0 for best-first trees."""
    if plan.tree_type != "oblivious":
        return 0.0
    width = min(rank, plan.sketch_dim) if plan.sketch_dim else rank
    nodes = max(stage_size // 2, 1)
    bins = plan.max_bins or defaults.AUTO_MAX_BINS
    level = min(8.0 * n_features * bins * nodes * width, HISTOGRAM_BYTES)
    return (2 if width > 1 else 1) * level
