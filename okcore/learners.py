"""Base learners of the OKBoost stage loop (paper section 2: "a general class of base
learners working in kernelized output spaces").

The stage loop (:func:`okcore.boosting.boost`) asks its base learner, once per round, for
a stage fitted to target rows in the output factor space. A stage partitions the input
space: it is a :class:`~okcore.trees.builder.TreeArrays` (routing of a point to a leaf, one
r-vector per leaf) together with the leaf of every training row, so that the loss can
re-fit leaf values (robust losses) and the ensemble can give W^F, kernels and pre-images
with no change. A new base learner implements :class:`BaseLearner`; the loop does not
change.

Kernel models are the second family (Sun & Yao 2006): their stages are not partitions but
sparse kernel ridge regressions (:class:`okcore.kernel_models.krr.SparseKRRLearner`), and Sun & Yao's
ensemble step (a penalised coefficient per stage, CG refinement, re-weighting) is not a
per-leaf update, so they have their own stage loop (:func:`okcore.kernel_models.krr_boosting.krr_boost`)
and ensemble (:class:`okcore.kernel_models.kernel_ensemble.KernelEnsemble`); both families meet the
prediction API through :class:`okcore.base.FittedEnsemble`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np

from .threads import ChunkRunner
from .trees.binning import BinnedInputs
from .trees.builder import HistogramPool, TreeArrays, TreeParams, build_tree, sketch_projection
from .trees.ensemble import tree_leaves
from .trees.splitter import presort, restrict_presorted
from .trees.weighted import build_weighted_tree


class BaseLearner(Protocol):
    """What the stage loop calls. A learner that owns threads may also have a ``runner``
    (:class:`~okcore.threads.ChunkRunner`): the loop then runs the loss's step on them."""

    def fit_stage(
        self, target: np.ndarray, rng: np.random.Generator, rows: np.ndarray | None
    ) -> tuple[TreeArrays, np.ndarray]:
        """A stage fitted to ``target`` (N, r), on the sorted training ``rows`` only when
        given (subsampling), and the leaf (int32) of every one of the N training rows."""
        ...

    def close(self) -> None:
        """Release what the learner holds across rounds (threads, buffers)."""
        ...


class TreeLearner:
    """OK3 trees (paper section 2.4.2) grown on the stage's target rows: the exact presorted
    search on ``XT`` (p, N) or the histogram search on ``binned``, and optionally a sketch of
    ``sketch_dim`` columns for the split search (SketchBoost; leaf values exact), drawn by
    :func:`~okcore.trees.builder.sketch_projection` (the same for any basis of the factor).

    ``weight`` (N,), sample weights: each stage is a weighted tree
    (:func:`~okcore.trees.weighted.build_weighted_tree`, histogram search), a subsampled
    row weighing its weight, an unsampled one nothing.

    Costs per stage: O(p n r) per searched node (k for r with a sketch) exact, O(p n k)
    histogram builds per split plus O(B k) scans with bins; O(n r k) to draw and form a
    sketch; O(N) to place the other rows.
    """

    def __init__(
        self,
        X: Any,
        tree_params: TreeParams,
        *,
        XT: np.ndarray | None = None,
        binned: BinnedInputs | None = None,
        sketch_dim: int | None = None,
        n_threads: int = 1,
        weight: np.ndarray | None = None,
    ) -> None:
        self.X, self.params, self.XT, self.binned = X, tree_params, XT, binned
        self.weight = weight  # sample weights: the weighted trees (okcore.trees.weighted)
        self.sketch_dim = sketch_dim
        self.order = presort(XT) if XT is not None and tree_params.splitter == "best" else None
        self.executor = ThreadPoolExecutor(n_threads) if n_threads > 1 else None
        self.runner = ChunkRunner(self.executor, n_threads)  # lent to the loss's step too
        self.pool = None if binned is None else HistogramPool(binned.n_bins_total)
        self.row_leaf = np.empty(X.shape[0], dtype=np.int32)

    def fit_stage(
        self, target: np.ndarray, rng: np.random.Generator, rows: np.ndarray | None
    ) -> tuple[TreeArrays, np.ndarray]:
        n = self.X.shape[0]
        fit_XT, fit_R, fit_order, fit_rows = self.XT, target, self.order, None
        if rows is not None:
            if self.binned is not None:  # histograms index the rows; R keeps all N
                fit_rows = rows
            else:
                assert self.XT is not None  # exact search: XT given
                fit_XT, fit_R = np.ascontiguousarray(self.XT[:, rows]), target[rows]
                fit_order = None if self.order is None else restrict_presorted(self.order, rows, n)
        projection = None
        if self.sketch_dim is not None and self.sketch_dim < fit_R.shape[1]:
            projection = sketch_projection(fit_R, fit_rows, self.sketch_dim, rng, self.runner)
        if self.weight is not None:
            assert self.binned is not None  # weighted trees search histograms
            weighted = build_weighted_tree(
                self.binned, target, self.weight, self.params, rng, projection=projection,
                rows=rows,
            )  # fmt: skip
            tree = TreeArrays(**weighted)
            return tree, tree_leaves(tree, self.X)
        tree = build_tree(
            fit_XT,
            fit_R,
            self.params,
            rng,
            order=fit_order,
            executor=self.executor,
            projection=projection,
            binned=self.binned,
            rows=fit_rows,
            row_leaf=self.row_leaf,
            histogram_pool=self.pool,
        )
        # the growth knows the leaf of every fitted row: apply the tree to the others only
        if rows is None and self.binned is not None:
            return tree, self.row_leaf.copy()
        return tree, tree_leaves(tree, self.X)

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown()
