"""Weighted rank averaging of bipartite models: each member scores the block asked for, its
scores are replaced by their ranks among the pairs of that block, and the ranks are averaged
with the members' weights.

For a block of m pairs (the q x n_cols pairs of new rows, the n_rows x q' pairs of new
columns, or the q x q' new x new pairs of one call), member t's score s_t(p) of pair p
becomes its normalised rank rho_t(p) = rank_t(p) / m in (0, 1] (ties share their mean rank,
as in :func:`scipy.stats.rankdata`), and the ensemble's score is
sum_t w_t rho_t(p) / sum_t w_t. Members whose scores live on different scales (neighbour
averages, kernel ridge predictions, logistic probabilities) so count by their ordering only,
which is what AUROC and average precision measure.

A score is therefore relative to the pairs predicted in the same call: it orders those
pairs, it is not a probability, and scores from two calls are not comparable (a call with a
single pair scores 1). Ask for all the pairs to be ranked in one call. There is no W^F and no
pre-image: a score model.

Cost: the members' fits and predictions, plus O(m log m) per member to rank a block;
:meth:`RankAveragedBipartite.estimate_cost` adds up the members' own estimates.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import replace
from typing import Any

import numpy as np
from scipy.stats import rankdata

from .._validation import check_is_fitted
from ..callbacks import FitProgress, check_callback
from ..cost import BipartiteCost
from ..exceptions import DataError
from ..meta import MetaEstimator, clone
from .cost import ensemble_cost
from .validation import BLOCKS


def rank_average(scores: list[np.ndarray], weights: list[float]) -> np.ndarray:
    """sum_t w_t rank(s_t) / (m sum_t w_t) over the m entries of same-shaped score arrays
    (module docstring)."""
    total = np.zeros(np.shape(scores[0]))
    for s, w in zip(scores, weights, strict=True):
        s = np.asarray(s, dtype=np.float64)
        total += w * rankdata(s.ravel()).reshape(s.shape) / max(s.size, 1)
    return total / float(np.sum(weights))


def _member_callback(callback: Any, part: str) -> Any:
    """``callback`` hearing a member's progress with ``part`` prefixed by the member's."""
    return lambda p: callback(replace(p, part=part if p.part is None else f"{part}/{p.part}"))


class RankAveragedBipartite(MetaEstimator):
    """The weighted rank average of bipartite models (module docstring).

    Parameters
    ----------
    members : list of bipartite models
        Models with ``fit(X_rows, X_cols, Y)`` and ``predict_new_rows`` /
        ``predict_new_cols`` / ``predict_new_pairs`` (e.g.
        :class:`~okcore.bipartite.BipartiteRegressor`, :class:`~okcore.bipartite.NRLMF`);
        each is cloned and fitted on the same data.
    weights : list of float > 0 or None
        One weight per member; None = equal weights.
    block_weights : dict or None
        Weights for some blocks instead of ``weights``: a block name ("new_rows",
        "new_cols", "new_pairs") -> one weight >= 0 per member, not all 0. A member of
        weight 0 in a block is not asked to score it. None = ``weights`` for every block.

    Fitted attributes: ``members_`` (the fitted clones), ``n_rows_``, ``n_cols_``.
    """

    def __init__(self, members: Any = None, weights: Any = None, block_weights: Any = None) -> None:
        self.members = members
        self.weights = weights
        self.block_weights = block_weights

    def weights_for(self, block: str | None = None) -> list[float]:
        """The members' weights in ``block`` ("new_rows", "new_cols", "new_pairs": its
        ``block_weights`` if given, else ``weights``; None: ``weights``), checked; 1 each when
        no weights are given."""
        if not self.members:
            raise DataError("members must list at least one bipartite model")
        given = self.block_weights or {}
        unknown = set(given) - set(BLOCKS)
        if unknown:
            raise DataError(
                f"block_weights names blocks {sorted(given)}: each must be one of {list(BLOCKS)}"
            )
        if block in given:
            weights = [float(w) for w in given[block]]
            if len(weights) != len(self.members) or min(weights) < 0 or max(weights) <= 0:
                raise DataError(
                    f"block_weights[{block!r}] must be {len(self.members)} numbers >= 0, one "
                    f"per member, not all 0: got {given[block]!r}"
                )
            return weights
        if self.weights is None:
            return [1.0] * len(self.members)
        weights = [float(w) for w in self.weights]
        if len(weights) != len(self.members) or min(weights) <= 0:
            raise DataError(
                f"weights must be {len(self.members)} positive numbers, one per member: "
                f"got {self.weights!r}"
            )
        return weights

    def fit(
        self, X_rows: Any, X_cols: Any, Y: Any, *, callback: Any = None
    ) -> RankAveragedBipartite:
        """Fit a clone of every member on the same network. ``callback(FitProgress)`` hears
        phase "members" (``done`` members of ``total`` fitted, unit "member", ``part``
        "member-i" of the one that starts; ``done`` = ``total`` once all are) and the
        progress of members whose fit takes a callback, with ``part`` "member-i" (or
        "member-i/rows", "member-i/columns" for a member's one-sided fits)."""
        for block in (None, *BLOCKS):
            self.weights_for(block)
        check_callback(callback)
        start, n = time.perf_counter(), len(self.members)
        self.members_ = []
        for i, member in enumerate(self.members):
            part = f"member-{i}"
            if callback is not None:
                callback(FitProgress(i, n, time.perf_counter() - start, phase="members",
                                     unit="member", part=part))  # fmt: skip
            heard = {}
            if callback is not None and "callback" in inspect.signature(member.fit).parameters:
                heard = {"callback": _member_callback(callback, part)}
            self.members_.append(clone(member).fit(X_rows, X_cols, Y, **heard))
        if callback is not None:
            callback(FitProgress(n, n, time.perf_counter() - start, phase="members", unit="member"))
        self.n_rows_, self.n_cols_ = np.shape(Y)
        return self

    def estimate_cost(
        self, n_rows: int, n_cols: int, row_features: int, col_features: int
    ) -> BipartiteCost:
        """What :meth:`fit` should cost on an ``n_rows`` x ``n_cols`` network whose sides
        have ``row_features`` and ``col_features`` input columns, before any work: each
        member's own ``estimate_cost`` (``members``, in order; part "member-i"), fitted one
        after another (:func:`okcore.bipartite.cost.ensemble_cost`: seconds and disk add
        up, memory is the largest member's). The members' fits dominate: ranking a
        block is a prediction's cost, not the fit's."""
        self.weights_for()
        costs = []
        for i, member in enumerate(self.members):
            if not hasattr(member, "estimate_cost"):
                raise DataError(
                    f"member {i} ({type(member).__name__}) has no cost model (estimate_cost): "
                    "the ensemble's cost is its members'"
                )
            costs.append(member.estimate_cost(n_rows, n_cols, row_features, col_features))
        return ensemble_cost(n_rows, n_cols, costs)

    def _average(self, block: str, *args: Any) -> np.ndarray:
        """The rank average of the members of weight > 0 in ``block`` over its pairs."""
        check_is_fitted(self, "members_")
        used = [
            (m, w) for m, w in zip(self.members_, self.weights_for(block), strict=True) if w > 0
        ]
        scores = [getattr(m, f"predict_{block}")(*args) for m, _ in used]
        return rank_average(scores, [w for _, w in used])

    def predict_new_rows(self, X_new_rows: Any) -> np.ndarray:
        """Rank-averaged scores of new rows x the known columns, (q, n_cols)."""
        return self._average("new_rows", X_new_rows)

    def predict_new_cols(self, X_new_cols: Any) -> np.ndarray:
        """Rank-averaged scores of the known rows x new columns, (n_rows, q')."""
        return self._average("new_cols", X_new_cols)

    def predict_new_pairs(self, X_new_rows: Any, X_new_cols: Any) -> np.ndarray:
        """Rank-averaged scores of new rows x new columns, (q, q')."""
        return self._average("new_pairs", X_new_rows, X_new_cols)
