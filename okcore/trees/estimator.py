"""What every estimator that grows OK3 trees shares (:class:`~okcore.trees.tree.OK3Regressor`,
:class:`~okcore.trees.forest.OK3ForestRegressor`, :class:`~okcore.boosting.OKBoostRegressor`):
the tree parameters' constraints, the growth parameters of one tree, the inputs the split
search reads (exact or histogram), the cost model of the stages and feature importances.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import Interval, Options, RandomStateLike, check_is_fitted, dense_float64
from ..base import OKEstimator
from ..callbacks import report_phase
from ..cost import StageCost
from .binning import MAX_BINS, BinnedInputs, bin_inputs
from .builder import TreeParams
from .cost import binning_seconds, tree_stages_cost
from .ensemble import TreeEnsemble
from .missing import with_twins

#: Constraints shared by every estimator that grows OK3 trees.
TREE_CONSTRAINTS: dict[str, list[Any]] = {
    "splitter": [Options(("best", "random"))],
    "max_splits": [Interval(int, 1, None, "left"), Options((None,))],
    "max_features": [
        Options((None, "sqrt", "log2")),
        Interval(int, 1, None, "left"),
        Interval(float, 0.0, 1.0, "right"),
    ],
    "leaf_order": [Options(("variance", "gain"))],
    "min_samples_leaf": [Interval(int, 1, None, "left")],
    "max_depth": [Interval(int, 1, None, "left"), Options((None,))],
    "max_bins": [Interval(int, 2, MAX_BINS, "both"), Options((None,))],
    "refine_cuts": [Options((True, False))],
    "factor_rank": [Interval(int, 1, None, "left"), Options((None,))],
    "factor_tol": [Interval(float, 0.0, 1.0, "left")],
    "n_landmarks": [Interval(int, 1, None, "left"), Options((None,))],
    "n_jobs": [Options((None, -1)), Interval(int, 1, None, "left")],
    "random_state": [RandomStateLike()],
}


def resolve_max_features(max_features: Any, n_features: int, splitter: str) -> int:
    """Number of candidate features per node (None: all for "best", sqrt(p) for "random",
    the paper preset's and older models' rule; the estimators' default is 1.0, all p), the
    one rule of the tree growth and of its cost model."""
    if max_features is None:
        return n_features if splitter == "best" else max(1, int(np.sqrt(n_features)))
    if max_features == "sqrt":
        return max(1, int(np.sqrt(n_features)))
    if max_features == "log2":
        return max(1, int(np.log2(n_features)))
    if isinstance(max_features, int | np.integer):
        return min(int(max_features), n_features)
    return max(1, int(float(max_features) * n_features))


def max_leaves(
    n_samples: int, max_splits: int | None, min_samples_leaf: int, max_depth: int | None
) -> int:
    """Leaves a tree on ``n_samples`` rows can have: max_splits + 1 (None: no limit), at most
    N / min_samples_leaf and 2^max_depth, at least 1; the cost model's one rule."""
    leaves = n_samples if max_splits is None else max_splits + 1
    leaves = min(leaves, max(n_samples // int(min_samples_leaf or 1), 1))
    if max_depth:
        leaves = min(leaves, 2 ** min(int(max_depth), 62))
    return max(int(leaves), 1)


class TreeEstimator(OKEstimator):
    """An estimator of OK3 trees: a subclass takes the parameters of TREE_CONSTRAINTS and
    says how many trees it grows on how many rows (:meth:`_n_stages`, :meth:`_rows_per_tree`);
    one that resolves its tree sizes and search from the data (OKBoost's growth plan) prices
    its trees with :meth:`_stages_cost` in its own :meth:`_estimate_stages`."""

    supports_sample_weight = True

    splitter: str
    max_splits: int | None
    max_features: Any
    leaf_order: str
    min_samples_leaf: int
    max_depth: int | None
    max_bins: Any
    refine_cuts: bool | str
    n_jobs: int | None
    #: Trees learn where missing inputs (NaN) go (okcore.trees.missing).
    accepts_missing = True

    def _tree_params(self, n_features: int, missing: np.ndarray | None = None) -> TreeParams:
        """The growth parameters of one tree on ``n_features`` inputs, of which the features
        ``missing`` (:func:`~okcore.trees.missing.missing_features`) hold missing values."""
        missing = np.empty(0, dtype=np.int64) if missing is None else missing
        return TreeParams(
            splitter=self.splitter,
            max_splits=self.max_splits,
            max_features=resolve_max_features(self.max_features, n_features, self.splitter),
            leaf_order=self.leaf_order,
            min_samples_leaf=self.min_samples_leaf,
            max_depth=self.max_depth,
            n_threads=self._n_threads(),
            refine_cuts=self._refines_cuts(),
            missing=tuple(int(f) for f in missing),
        )

    def _resolved_tree_params(self, n_features: int) -> dict[str, Any]:
        """The fitted ``resolved_params_`` of trees grown as given: the candidate features
        per node on ``n_features`` inputs (``max_features`` resolved), the split search and
        whether its cuts were refined."""
        return {
            "max_features": resolve_max_features(self.max_features, n_features, self.splitter),
            "max_bins": self.max_bins,
            "refine_cuts": self._refines_cuts() and self.max_bins is not None,
        }

    def _refines_cuts(self) -> bool:
        """Whether the histogram search refines its cuts (and so keeps the raw values):
        ``refine_cuts`` with the best splitter (OKBoost's "auto" is True here; its growth
        plan resolves it by tree type and output columns)."""
        return bool(self.refine_cuts) and self.splitter == "best"

    def _search_inputs(
        self,
        X: Any,
        max_bins: int | None,
        callback: Any = None,
        total: int = 1,
        elapsed: float = 0.0,
        *,
        refine_cuts: bool | None = None,
        missing: np.ndarray | None = None,
    ) -> tuple[np.ndarray | None, BinnedInputs | None]:
        """What the split search reads: (XT float64 (p, n), None) for the exact search
        (``max_bins`` None), or (None, bins of X) for the histogram search, announced to
        ``callback`` as the "binning" phase, keeping the raw values when the cuts are refined
        (``refine_cuts``; None: :meth:`_refines_cuts`). The features ``missing`` get their
        twin columns (:func:`~okcore.trees.missing.with_twins`). O(p n log n)."""
        if missing is not None:
            X = with_twins(X, missing)
        if max_bins is None:
            return np.ascontiguousarray(dense_float64(X).T), None
        report_phase(callback, "binning", total, elapsed, binning_seconds(*X.shape))
        refine = self._refines_cuts() if refine_cuts is None else refine_cuts
        # refinement reads the values
        return None, bin_inputs(X, max_bins, refine, n_threads=self._n_threads())

    # ------------------------------------------------------------------ cost model
    def _rows_per_tree(self, n_samples: int) -> float:
        """Rows each tree is fitted on."""
        return float(n_samples)

    def _estimate_stages(self, n_samples: int, n_features: int, rank: int) -> StageCost:
        """The trees' cost (:mod:`okcore.trees.cost`): ``max_bins`` as given, no sketch."""
        leaves = max_leaves(n_samples, self.max_splits, self.min_samples_leaf, self.max_depth)
        return self._stages_cost(n_samples, n_features, rank, (self.max_bins, None), leaves)

    def _stages_cost(
        self,
        n_samples: int,
        n_features: int,
        rank: int,
        search: tuple[int | None, int | None],
        leaves: int,
        refined: bool | None = None,
    ) -> StageCost:
        """:func:`~okcore.trees.cost.tree_stages_cost` of trees of at most ``leaves`` leaves
        found by ``search`` (max_bins, sketch_dim), resolved; ``refined``: whether a
        histogram search refines its cuts (None: :meth:`_refines_cuts`)."""
        max_bins, sketch = search
        return tree_stages_cost(
            n_samples,
            n_features,
            rank,
            n_trees=self._n_stages(n_samples),
            leaves=leaves,
            histogram=max_bins is not None,
            presorted=self.splitter == "best",
            features_tried=resolve_max_features(self.max_features, n_features, self.splitter),
            search_width=min(rank, sketch) if sketch else rank,
            n_fit=self._rows_per_tree(n_samples),
            leaf_row_bytes=self._leaf_row_bytes(leaves),
            refined=max_bins is not None and (self._refines_cuts() if refined is None else refined),
        )

    def _leaf_row_bytes(self, leaves: int) -> float:
        """Bytes held per training row and tree for its leaf and fit count (trees grown one
        by one: int32 leaves and counts, per tree and concatenated)."""
        return 16.0

    # ------------------------------------------------------------------ fitted extras
    def _tree_ensemble(self) -> TreeEnsemble:
        """The fitted trees (boosting from a starting model holds more than its trees)."""
        e = self.ensemble_
        assert isinstance(e, TreeEnsemble)
        return e

    @property
    def feature_importances_(self) -> np.ndarray:
        """Total reduction of N*var brought by each input over all splits, normalized to 1."""
        check_is_fitted(self)
        e = self._tree_ensemble()
        internal = e.feature >= 0
        totals = np.bincount(
            e.feature[internal], weights=e.gain[internal], minlength=self.n_features_in_
        )
        s = totals.sum()
        return totals / s if s > 0 else totals
