"""Cost model of growing OK3 trees (the tree family's part of
:meth:`~okcore.base.OKEstimator.estimate_cost`).

From N training rows, p features, the factor's width r, M trees and L leaves per tree
(L = max_splits + 1, bounded by N / min_samples_leaf and 2^max_depth):

    work     = search + trees
    search   = exact split search: 12 p N (inputs as float64 + presorted int32 orders);
               histograms: p N (uint8 bin codes), + p N when w is 4 or 8 (their
               row-major copy, read by row-wise histogram builds), + 8 p N with refined
               cuts (the raw inputs, float64)
    trees    = 4 x 8 N r (factor, F, residuals, a temporary)
               + M x (b N + 16 L r + 256 L)  (the leaf and fit count of every training row
               in every tree, b bytes a row: 16 for trees grown one by one, int32 leaves and
               counts held twice, as per-tree arrays and as the ensemble's concatenation;
               boosting's round table holds 1 byte a row up to 256 leaves, 2 up to 65,536, +1 with
               subsampling; and each tree's leaf r-vectors and node arrays, twice)
    model    = M x (8 N + 8 L r + 128 L)

    setup    = histograms: :func:`binning_seconds`; exact search with the best splitter:
               SORT_SECONDS x N p log2 N (presorting); else 0
    per_tree = (ROW_SECONDS[search] + COLUMN_SECONDS x w) x n_fit f log2(L + 1)
               + STEP_SECONDS x N r

with f the features tried per node (:func:`okcore.trees.estimator.resolve_max_features`),
w the width the split search reads (r, or the sketch dimension), n_fit the rows each tree
is fitted on. The constants were fitted to real fits on the project machine (2 cores,
with other work running) by bench/job_cost.py; docs/API.md ("Job limits") has the
estimates beside the measurements.
"""

from __future__ import annotations

import math

from ..cost import StageCost
from ._histogram import use_row_wise

SORT_SECONDS = 5e-8
"""Seconds per element and log2 step of sorting one feature's values (presort, bin edges)."""
BINNING_FIXED_SECONDS = 0.1
"""Fixed cost of binning the inputs (allocations, numba dispatch)."""
ROW_SECONDS = {"exact": 5e-8, "histogram": 5e-9}
"""Seconds per row, feature tried and tree level of the split search, by search."""
COLUMN_SECONDS = 2e-9
"""Seconds per row, feature tried, tree level and factor column the search reads."""
STEP_SECONDS = 2e-8
"""Seconds per training row and factor column of a boosting step (F, residuals, loss)."""


def binning_seconds(n_samples: int, n_features: int) -> float:
    """Seconds of :func:`okcore.trees.binning.bin_inputs`: one sort per feature,
    BINNING_FIXED_SECONDS + SORT_SECONDS x N p log2 N. The "binning" phase ETA of a fit
    and the set-up time of a histogram fit's estimate."""
    return BINNING_FIXED_SECONDS + SORT_SECONDS * n_samples * n_features * math.log2(
        max(n_samples, 2)
    )


def tree_stages_cost(
    n_samples: int,
    n_features: int,
    rank: int,
    *,
    n_trees: int,
    leaves: int,
    histogram: bool,
    presorted: bool,
    features_tried: int,
    search_width: int,
    n_fit: float,
    leaf_row_bytes: float = 16.0,
    refined: bool = False,
) -> StageCost:
    """The cost of ``n_trees`` trees of at most ``leaves`` leaves (module docstring):
    ``histogram`` or exact split search (``presorted`` when the exact search sorts the
    inputs once), ``features_tried`` per node, ``search_width`` columns read by the search,
    ``n_fit`` rows each tree is fitted on, ``leaf_row_bytes`` held per training row and tree
    (b above), ``refined``: the histogram search refines its cuts."""
    n, p, r = n_samples, n_features, rank
    search = "histogram" if histogram else "exact"
    codes_bytes = 2.0 if use_row_wise(search_width) else 1.0
    search_bytes = (codes_bytes + (8.0 if refined else 0.0)) * p * n if histogram else 12.0 * p * n
    trees_bytes = 4 * 8.0 * n * r + n_trees * (
        leaf_row_bytes * n + 16.0 * leaves * r + 256.0 * leaves
    )
    if histogram:
        setup = binning_seconds(n, p)
    else:
        setup = SORT_SECONDS * n * p * math.log2(max(n, 2)) if presorted else 0.0
    per_tree = (ROW_SECONDS[search] + COLUMN_SECONDS * search_width) * n_fit * features_tried * (
        math.log2(leaves + 1)
    ) + STEP_SECONDS * n * r
    return StageCost(
        n_stages=n_trees,
        stage_size=leaves,
        search=search,
        work_bytes=search_bytes + trees_bytes,
        setup_seconds=setup,
        stage_seconds=per_tree,
        model_bytes=n_trees * (8.0 * n + 8.0 * leaves * r + 128.0 * leaves),
    )
