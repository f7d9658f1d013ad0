"""Automatic model choice: okboost picks among its own models by inner validation on the
user's data and metric, within a CPU budget.

- :func:`select` (:mod:`okcore.auto.engine`): the generic engine. Candidates are
  :class:`Candidate` (a name and ``seed -> unfitted estimator``); successive halving on an
  inner holdout or K folds; a leaderboard; the best (or an average of the best) refitted on
  all rows; a CPU budget kept within a stated tolerance. Task wrappers build their own
  portfolios and call it.
- :func:`regression_candidates`: the regression / structured-output portfolio.
- :class:`AutoRegressor`: the scikit-learn style regressor over both.
"""

from .candidates import regression_candidates
from .engine import (
    BUDGET_SLACK_SECONDS,
    BUDGET_TOLERANCE,
    Candidate,
    Selection,
    SelectionCancelled,
    SelectionProgress,
    default_budget,
    inner_folds,
    rebuild,
    select,
)
from .regressor import AUTO_MODEL, SELECTION_UNIT, AutoRegressor

__all__ = [
    "AUTO_MODEL",
    "AutoRegressor",
    "BUDGET_SLACK_SECONDS",
    "BUDGET_TOLERANCE",
    "Candidate",
    "Selection",
    "SelectionCancelled",
    "SELECTION_UNIT",
    "SelectionProgress",
    "default_budget",
    "inner_folds",
    "rebuild",
    "regression_candidates",
    "select",
]
