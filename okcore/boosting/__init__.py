"""OKBoost: gradient boosting in the output feature space (paper Algorithms 3 and 4).

One job per module: :mod:`~okcore.boosting.loop` the stage loop (a plain function,
:func:`boost`), :mod:`~okcore.boosting.plan` the growth plan a fit resolves and the paper's
preset, :mod:`~okcore.boosting.warm_start` adding rounds to a fitted (or loaded) loop, and
:mod:`~okcore.boosting.estimator` the scikit-learn style :class:`OKBoostRegressor`. The
default rules it resolves live in :mod:`okcore.defaults`.
"""

from .estimator import OKBoostRegressor
from .loop import BoostResult, BoostState, RoundTable, boost, generator_at, generator_state
from .plan import PAPER_PRESET, GrowthPlan
from .warm_start import WARM_START_FREE, Continuation

__all__ = [
    "PAPER_PRESET",
    "WARM_START_FREE",
    "BoostResult",
    "BoostState",
    "Continuation",
    "GrowthPlan",
    "OKBoostRegressor",
    "RoundTable",
    "boost",
    "generator_at",
    "generator_state",
]
