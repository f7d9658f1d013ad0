"""Ensembles of OK3 trees: bagging, random forests and extra-trees (paper Table 1 baselines).

F(x) is the average of the trees' leaf means; W^F the average of their leaf weights.
- bagging: ``bootstrap=True``, all features (``splitter="best"``);
- random forest: ``bootstrap=True``, ``max_features="sqrt"``;
- extra-trees: ``splitter="random"``, ``bootstrap=False`` (all p candidate features by
  default, as scikit-learn's ExtraTreesRegressor; ``max_features="sqrt"`` is cheaper).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from joblib import Parallel, delayed

from .._validation import Interval, Options
from ..base import FitContext, FittedModel
from ..callbacks import FitProgress
from ..losses import leaf_row_weights
from ..outputs.space import RANK_TOLERANCE
from .binning import BinnedInputs
from .builder import HistogramPool, TreeArrays, TreeParams, build_tree
from .ensemble import TreeEnsemble, tree_leaves
from .estimator import TREE_CONSTRAINTS, TreeEstimator
from .missing import missing_features
from .splitter import presort
from .weighted import build_weighted_tree, weighted_max_bins


def _bootstrap(rng: np.random.Generator, n: int, weight: np.ndarray | None) -> np.ndarray:
    """n of the n rows drawn with replacement; with sample ``weight``, drawn again (from
    the same generator) until the sample holds a row of positive weight: a tree of zero
    weight would predict 0 and W^F rows would not sum to 1. A sample misses k rows of
    positive weight with probability (1 - k/n)^n <= 1/e: at most 1.6 draws expected."""
    rows = rng.integers(0, n, n)
    while weight is not None and not weight[rows].sum() > 0:
        rows = rng.integers(0, n, n)
    return rows


def _fit_one_tree(
    X: Any,
    XT: np.ndarray | None,
    binned: BinnedInputs | None,
    order: np.ndarray | None,
    phi: np.ndarray,
    params: TreeParams,
    seed: int,
    bootstrap: bool,
    pool: HistogramPool | None = None,
    weight: np.ndarray | None = None,
) -> tuple[TreeArrays, np.ndarray, np.ndarray, np.ndarray | None]:
    """One tree on a bootstrap sample (:func:`_bootstrap`) or all rows: (tree, leaf of every
    row, row counts, each row's coefficient in its leaf's value or None for the leaf mean).

    Exact search on XT (p, N), or histogram search on ``binned`` when XT is None; with
    sample weights ``weight``, the weighted trees (:mod:`okcore.trees.weighted`), a row
    drawn c times weighing c times its weight."""
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    rows = _bootstrap(rng, n, weight) if bootstrap else None
    if weight is not None:
        assert binned is not None  # checked by the estimator
        tree = TreeArrays(**build_weighted_tree(binned, phi, weight, params, rng, rows=rows))
        count = np.ones(n) if rows is None else np.bincount(rows, minlength=n).astype(float)
        leaf = tree_leaves(tree, X)
        coefficient = leaf_row_weights(
            leaf, weight * count, tree.n_leaves, params.l2_regularization
        )
        return tree, leaf, count.astype(np.int32), coefficient
    if binned is not None:
        fit_rows = None if rows is None else np.sort(rows)
        tree = build_tree(None, phi, params, rng, binned=binned, rows=fit_rows, histogram_pool=pool)
    elif rows is not None:
        assert XT is not None  # exact search: XT given
        tree = build_tree(np.ascontiguousarray(XT[:, rows]), phi[rows], params, rng)
    else:
        tree = build_tree(XT, phi, params, rng, order=order)
    count = (
        np.ones(n, dtype=np.int32)
        if rows is None
        else np.bincount(rows, minlength=n).astype(np.int32)
    )
    return tree, tree_leaves(tree, X), count, None


class OK3ForestRegressor(TreeEstimator):
    """Bagging / random forest / extra-trees ensemble of OK3 trees.

    Parameters
    ----------
    n_estimators : int
        Number of trees.
    bootstrap : bool
        Fit each tree on a bootstrap sample (bagging, random forests) or on all rows.
    splitter, max_splits, max_features, leaf_order, min_samples_leaf, max_depth, max_bins,
    refine_cuts :
        Growth of each tree, see :class:`~okcore.trees.tree.OK3Regressor` (fully grown by default).
    factor_rank, factor_tol : int or None, float
        Truncation of the output factor Phi: at most ``factor_rank`` eigenpairs of K, and only
        eigenvalues above ``factor_tol`` times the largest (default: exact up to 1e-12).
    n_landmarks : int or None
        Nystrom factor of an RBF / polynomial output kernel on that many landmark outputs
        (random training outputs, seeded by ``random_state``): O(N m) memory, no N x N.
    n_jobs : int or None
        Trees fitted in parallel threads through joblib (None = 1, -1 = all cores). Under
        ``joblib.parallel_config(backend="dask")`` with a ``distributed.Client``, each tree
        is a task on the cluster instead (n_jobs is then the cluster's), and the inputs, their
        bins and the output factor are scattered to the workers once per fit. Trees are
        seeded one by one from ``random_state``: the same forest on either backend.
    random_state : None, int or Generator
    """

    _parameter_constraints = {
        **TREE_CONSTRAINTS,
        "n_estimators": [Interval(int, 1, None, "left")],
        "bootstrap": [Options((True, False))],
    }

    def __init__(
        self,
        *,
        n_estimators: int = 100,
        bootstrap: bool = True,
        splitter: str = "best",
        max_features: Any = 1.0,
        max_splits: int | None = None,
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
        self.n_estimators = n_estimators
        self.bootstrap = bootstrap
        self.splitter = splitter
        self.max_features = max_features
        self.max_splits = max_splits
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

    def _n_stages(self, n_samples: int) -> int:
        return self.n_estimators

    def _fit_model(self, context: FitContext) -> FittedModel:
        """``n_estimators`` trees on bootstrap samples or all rows, through joblib (threads,
        or the active joblib backend); the callback hears each tree (True stops)."""
        X, space, callback = context.X, context.space, context.callback
        max_bins = self.max_bins
        if context.sample_weight is not None:
            max_bins = weighted_max_bins(type(self).__name__, max_bins, X)
        seeds = context.rng.integers(0, 2**63 - 1, size=self.n_estimators)
        missing = missing_features(X)
        params = self._tree_params(X.shape[1], missing)  # first: refuses what it cannot grow
        XT, binned = self._search_inputs(
            X, max_bins, callback, self.n_estimators, context.elapsed(), missing=missing
        )
        presorted = self.splitter == "best" and not self.bootstrap
        order = presort(XT) if XT is not None and presorted else None
        pool = None if binned is None else HistogramPool(binned.n_bins_total)
        if callback is not None:  # the trees start (a stop is heard after the first tree)
            callback(FitProgress(done=0, total=self.n_estimators, elapsed=context.elapsed()))
        results, stopped = [], False
        jobs = Parallel(n_jobs=self._n_threads(), prefer="threads", return_as="generator")(
            delayed(_fit_one_tree)(
                X,
                XT,
                binned,
                order,
                space.phi,
                params,
                int(s),
                self.bootstrap,
                pool,
                context.sample_weight,
            )
            for s in seeds
        )
        for result in jobs:
            results.append(result)
            progress = FitProgress(
                done=len(results), total=self.n_estimators, elapsed=context.elapsed()
            )
            if callback is not None and callback(progress):
                stopped = True
                break
        trees, leaves, counts, coefficients = zip(*results, strict=True)
        ensemble = TreeEnsemble.from_trees(
            list(trees),
            np.array(leaves),
            np.array(counts),
            combine="average",
            init=np.zeros(space.rank),
            train_weight=None if context.sample_weight is None else np.array(coefficients),
        )
        return FittedModel(
            ensemble, space, np.arange(X.shape[0]), n_estimators=len(trees),
            stopped_by_callback=stopped, max_bins=self.max_bins,
            resolved_params=self._resolved_tree_params(X.shape[1]),
        )  # fmt: skip
