"""OK3: output kernel trees (Geurts et al. 2006; paper section 2.4.2), one tree estimator."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..base import FitContext, FittedModel
from ..callbacks import FitProgress
from ..losses import leaf_row_weights
from ..outputs.space import RANK_TOLERANCE
from .builder import TreeArrays, build_tree
from .ensemble import TreeEnsemble, tree_leaves
from .estimator import TREE_CONSTRAINTS, TreeEstimator
from .missing import missing_features
from .weighted import build_weighted_tree, weighted_max_bins


class OK3Regressor(TreeEstimator):
    """One output kernel tree, grown best-first on the factor of the output Gram matrix.

    Parameters
    ----------
    splitter : {"best", "random"}
        "best" scans every feature and every midpoint; "random" (OK3-et) draws one uniform
        cut per candidate feature and keeps the best of ``max_features`` candidates.
    max_splits : int or None
        J, the number of splits (J + 1 leaves); None grows the tree fully.
    max_features : None, "sqrt", "log2", int or float
        Candidate features per node: a count, a fraction of p, "sqrt" or "log2" of p. Default
        1.0, all p, also for "random" (scikit-learn's and Geurts' extra-trees regression
        default: measured in docs/RESULTS.md sections 1 and 9.4, all p costs up to 5x the CPU
        of sqrt(p) and was better wherever few inputs carry the signal). None = all for
        "best", sqrt(p) for "random": the former default, which the paper preset and models
        saved with it keep.
    leaf_order : {"variance", "gain"}
        Next leaf to split: highest N*var (the paper) or largest improvement (scikit-learn).
    min_samples_leaf : int
    max_depth : int or None
    max_bins : int in [2, 255] or None
        Histogram split search on inputs binned once per fit into at most ``max_bins``
        quantile bins (scikit-learn HGB, LightGBM); exactly the exact search's tree when no
        feature has more distinct values. None (default): the exact presorted search.
    refine_cuts : bool
        With ``max_bins`` and ``splitter="best"``: once the histogram has chosen a feature
        and a bin edge, move the cut to the best exact cut (midpoint between distinct
        values) inside the two bins around that edge, so a sharp step is not missed by up to
        one bin (default True; keeps the raw inputs, 8 bytes per value, during the fit).
        False: cuts at bin edges only.
    factor_rank, factor_tol : int or None, float
        Truncation of the output factor Phi: at most ``factor_rank`` eigenpairs of K, and only
        eigenvalues above ``factor_tol`` times the largest (default: exact up to 1e-12).
    n_landmarks : int or None
        Nystrom factor of an RBF / polynomial output kernel on that many landmark outputs
        (random training outputs, seeded by ``random_state``): O(N m) memory, no N x N.
    n_jobs : int or None
        Threads for the binning and the split search (the exact search's features; the
        histogram search's builds, scans and row statistics) (None = 1, -1 = all cores).
        The tree does not depend on it.
    random_state : None, int or Generator
    """

    _parameter_constraints = dict(TREE_CONSTRAINTS)

    def __init__(
        self,
        *,
        splitter: str = "best",
        max_splits: int | None = None,
        max_features: Any = 1.0,
        leaf_order: str = "variance",
        min_samples_leaf: int = 1,
        max_depth: int | None = None,
        max_bins: int | None = None,
        refine_cuts: bool = True,
        factor_rank: int | None = None,
        factor_tol: float = RANK_TOLERANCE,
        n_landmarks: int | None = None,
        n_jobs: int | None = None,
        random_state: Any = None,
    ) -> None:
        self.splitter = splitter
        self.max_splits = max_splits
        self.max_features = max_features
        self.leaf_order = leaf_order
        self.min_samples_leaf = min_samples_leaf
        self.max_depth = max_depth
        self.max_bins = max_bins
        self.refine_cuts = refine_cuts
        self.factor_rank = factor_rank
        self.factor_tol = factor_tol
        self.n_landmarks = n_landmarks
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _fit_model(self, context: FitContext) -> FittedModel:
        """One tree on all rows; the callback hears it once grown. Cost: O(p N log N)
        presort and O(max_features n r) per split node of n rows (exact), or O(p N log N)
        binning and O(p n r) histograms per split (``max_bins``)."""
        X, space, weight = context.X, context.space, context.sample_weight
        missing = missing_features(X)
        max_bins = self.max_bins
        if weight is not None:
            max_bins = weighted_max_bins(type(self).__name__, max_bins, X)
        XT, binned = self._search_inputs(
            X, max_bins, context.callback, 1, context.elapsed(), missing=missing
        )
        params = self._tree_params(X.shape[1], missing)
        if context.callback is not None:  # the tree is the fit's one round: it starts now
            context.callback(FitProgress(done=0, total=1, elapsed=context.elapsed()))
        if weight is not None:
            assert binned is not None  # checked above
            tree = TreeArrays(**build_weighted_tree(binned, space.phi, weight, params, context.rng))
        else:
            n_threads = self._n_threads()
            executor = ThreadPoolExecutor(n_threads) if n_threads > 1 else None
            try:
                tree = build_tree(
                    XT, space.phi, params, context.rng, executor=executor, binned=binned
                )
            finally:
                if executor is not None:
                    executor.shutdown()
        n = X.shape[0]
        leaf = tree_leaves(tree, X)
        ensemble = TreeEnsemble.from_trees(
            [tree],
            leaf[None, :],
            np.ones((1, n), dtype=np.int32),
            combine="average",
            init=np.zeros(space.rank),
            train_weight=None
            if weight is None
            else leaf_row_weights(leaf, weight, tree.n_leaves, params.l2_regularization)[None],
        )
        if context.callback is not None:
            context.callback(FitProgress(done=1, total=1, elapsed=context.elapsed()))
        return FittedModel(
            ensemble, space, np.arange(n), n_estimators=1, max_bins=self.max_bins,
            resolved_params=self._resolved_tree_params(X.shape[1]),
        )  # fmt: skip
