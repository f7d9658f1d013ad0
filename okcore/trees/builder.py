"""Best-first growth of one OK3 tree on a residual factor (paper section 2.4.2).

The builder works with rich per-node state (segments of presorted rows, means, heaps) and
returns :class:`TreeArrays`, the flat arrays prediction and persistence use.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..threads import ChunkRunner
from ._histogram import best_split as best_split_histogram
from ._histogram import best_split_random as best_split_random_binned
from ._histogram import (
    build_dense,
    build_dense_rows,
    build_sparse,
    gather_rows_into,
    partition_sparse,
    refine_split,
    row_major_codes,
    use_row_wise,
)
from .binning import BinnedInputs
from .missing import add_twins, fold_twins, twin_columns
from .oblivious import build_oblivious_tree
from .splitter import (
    beats,
    best_split_exact,
    best_split_random,
    column_statistics,
    node_statistics,
    orthonormalise_columns,
    partition,
    pick_exact,
    presort,
    project,
    project_rows,
    range_columns,
)

#: A node whose N*var is below this fraction of the root's is treated as constant (a leaf).
CONSTANT_NODE_TOLERANCE = 1e-12
#: Exact searches over fewer (rows x features x outputs) than this stay on one thread.
PARALLEL_SEARCH_MIN_WORK = 200_000


@dataclass(frozen=True)
class TreeParams:
    """Resolved growth parameters of one tree (validated by the estimators)."""

    splitter: str  # "best" or "random"
    max_splits: int | None  # J; None grows the tree fully
    max_features: int  # candidate features per node
    leaf_order: str  # "variance" (paper) or "gain" (scikit-learn's best-first)
    min_samples_leaf: int
    max_depth: int | None
    n_threads: int = 1  # threads of the executor the search may use
    refine_cuts: bool = False  # histogram search: exact cut inside the bins of the chosen edge
    l2_regularization: float = 0.0  # lambda: leaf value = sum of rows / (n + lambda)
    tree_type: str = "best-first"  # or "oblivious": one shared cut per level (oblivious.py)
    tree_features: int | None = None  # features drawn for each tree (None: all)
    # inputs holding missing values, whose twin columns follow the inputs (missing.py)
    missing: tuple[int, ...] = ()


@dataclass(frozen=True)
class TreeArrays:
    """One fitted tree as flat arrays, nodes in creation order (root = 0).

    feature, left, right, leaf : int32 (n_nodes,), -1 where not applicable (leaf / internal)
    threshold, impurity, gain : float64 (n_nodes,); x[feature] <= threshold goes left;
        impurity is the node's N*var (eq. 11), gain the reduction of N*var by its split
        (of the penalised objective with lambda > 0, see :mod:`okcore.trees.splitter`).
    n_samples : int32 (n_nodes,) fitting rows reaching the node (bootstrap repeats counted).
    value : float64 (n_leaves, r) mean residual row of each leaf, numbered by ``leaf``; with
        a penalty lambda the ridge leaf sum / (n + lambda) = mean * n / (n + lambda).
    missing_left : uint8 (n_nodes,) or None: 1 where a missing x[feature] goes left
        (:mod:`okcore.trees.missing`); None: every missing value goes right.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    leaf: np.ndarray
    n_samples: np.ndarray
    impurity: np.ndarray
    gain: np.ndarray
    value: np.ndarray
    missing_left: np.ndarray | None = None

    @property
    def n_leaves(self) -> int:
        return int(self.value.shape[0])


class _ExactSearch:
    """Split search on presorted float inputs (exact "best") or a plain row list ("random")."""

    def __init__(
        self,
        XT: np.ndarray,
        R: np.ndarray,
        R_search: np.ndarray,
        params: TreeParams,
        order: np.ndarray | None,
        executor: Executor | None,
    ) -> None:
        self.XT, self.R, self.R_search = XT, R, R_search
        self.params, self.executor = params, executor
        n_fit = XT.shape[1]
        if params.splitter == "best":
            self.index = presort(XT) if order is None else order.copy()
        else:
            self.index = np.arange(n_fit, dtype=np.int32)[None, :]
        self.buffer = np.empty(n_fit, dtype=np.int32)
        self.goes_left = np.empty(n_fit, dtype=np.uint8)
        self.feature_pool = np.arange(XT.shape[0], dtype=np.int32)  # the tree's features
        self.twin_column = np.empty(0, dtype=np.int32)  # twin of each input (missing.py)

    @property
    def samples(self) -> np.ndarray:
        return self.index[0]

    def find(
        self, node: int, start: int, end: int, mu: np.ndarray, rng: np.random.Generator
    ) -> tuple | None:
        p = self.params
        if p.splitter == "best":
            features = add_twins(_best_features(p, self.feature_pool, rng), self.twin_column)
            return self._search_exact(start, end, mu, features)
        features = rng.permutation(self.feature_pool).astype(np.int32)
        uniforms = np.asarray(rng.random(len(features)))
        return best_split_random(
            self.index[0],
            start,
            end,
            self.XT,
            self.R_search,
            mu,
            features,
            uniforms,
            p.max_features,
            p.min_samples_leaf,
            p.l2_regularization,
            self.twin_column,
        )

    def _search_exact(self, start: int, end: int, mu: np.ndarray, features: np.ndarray) -> tuple:
        """Exact search, over feature chunks on the executor's threads when the node is large.

        Each chunk writes its features' best cuts, which are then compared in feature order
        as a single-threaded search compares them (:func:`~.splitter.pick_exact`): the same
        split for any number of threads.
        """
        gain = np.empty(len(features))
        pos = np.empty(len(features), dtype=np.int64)

        def search(lo: int, hi: int) -> tuple:
            return best_split_exact(
                self.index,
                start,
                end,
                self.XT,
                self.R_search,
                mu,
                features[lo:hi],
                self.params.min_samples_leaf,
                self.params.l2_regularization,
                gain[lo:hi],
                pos[lo:hi],
            )

        work = (end - start) * len(features) * self.R_search.shape[1]
        if self.executor is None or work < PARALLEL_SEARCH_MIN_WORK or len(features) < 2:
            return search(0, len(features))
        n_chunks = min(len(features), self.params.n_threads)
        bounds = np.linspace(0, len(features), n_chunks + 1).astype(int)
        list(self.executor.map(search, bounds[:-1], bounds[1:]))
        return pick_exact(self.index, start, self.XT, features, gain, pos)

    def statistics(self, start: int, end: int) -> tuple[np.ndarray, float]:
        """(mean, N*var) of the rows samples[start:end] of the leaf-value rows R."""
        return node_statistics(self.samples, start, end, self.R)

    def statistics_before_search(self, start: int, end: int) -> tuple[np.ndarray, float]:
        """The same, for a node about to be searched (nothing to prepare)."""
        return self.statistics(start, end)

    def split(self, node: int, start: int, end: int, split: tuple) -> None:
        partition(self.index, start, end, self.XT, split[0], split[2], self.goes_left, self.buffer)

    def children(self, node: int, left: tuple, right: tuple) -> None:
        """Nothing to carry from a parent to its children."""

    def forget(self, node: int) -> None:
        """Nothing is kept per node."""

    def child_statistics(self, growth: _Growth, node: int, cut: int) -> tuple:
        """(mean, N*var) of both children, each from its own rows (the paper's reference
        path: no derived quantities, so ties resolve as in the brute-force tests)."""
        start, end = growth.start[node], growth.end[node]
        return self.statistics(start, cut), self.statistics(cut, end)


class HistogramPool:
    """Reusable histogram buffers (B x k floats + B counts) for all the trees of one fit:
    fresh ~1 MB arrays per node cost page faults on first touch (~0.1 ms each). Also
    holds the row-major copy of the fit's dense codes that row-wise builds read (N p
    bytes, made once per fit instead of once per tree)."""

    def __init__(self, n_bins: int) -> None:
        self.n_bins = n_bins
        self._free: list[tuple[np.ndarray, np.ndarray]] = []
        self._lock = threading.Lock()  # forests grow trees on several threads
        self._row_codes: tuple[np.ndarray, np.ndarray] | None = None  # (codes, their copy)

    def __reduce__(self) -> tuple[Any, tuple[int]]:
        """Pickled (to a cluster worker, see okcore._shipping) as the receiving process's
        own pool for this bin count: buffers live in one process, a lock does not pickle,
        and the trees a worker grows one after another reuse its buffers as threads do
        (fresh buffers per tree cost a tree 1.3x its time in a Dask worker, measured)."""
        return process_pool, (self.n_bins,)

    def take(self, width: int) -> tuple[np.ndarray, np.ndarray]:
        """A (B, width) sum buffer and a (B,) count buffer, contents undefined."""
        with self._lock:
            if self._free and self._free[-1][0].shape[1] == width:
                return self._free.pop()
        return np.empty((self.n_bins, width)), np.empty(self.n_bins, dtype=np.int64)

    def give(self, buffers: tuple[np.ndarray, np.ndarray]) -> None:
        with self._lock:
            self._free.append(buffers)

    def row_codes(self, codes: np.ndarray) -> np.ndarray:
        """The (N, p) row-major copy of dense ``codes`` (p, N), kept for the last codes
        asked for (one fit's)."""
        with self._lock:
            if self._row_codes is None or self._row_codes[0] is not codes:
                self._row_codes = (codes, row_major_codes(codes))
            return self._row_codes[1]


_PROCESS_POOL: list[HistogramPool] = []


def process_pool(n_bins: int) -> HistogramPool:
    """This process's pool for ``n_bins`` bins; one is kept (the last fit's), so a worker
    holds the buffers of one fit at most."""
    if not _PROCESS_POOL or _PROCESS_POOL[0].n_bins != n_bins:
        _PROCESS_POOL[:] = [HistogramPool(n_bins)]
    return _PROCESS_POOL[0]


class _HistogramSearch:
    """Split search on binned inputs: per-node histograms, the larger child by subtraction.

    A histogram (counts and sums of the search residuals per bin) is made when its node is
    searched; a parent's is kept until its children's exist, so memory is O(open leaves x
    B k). In the paper's variance order most final leaves are never searched and cost
    nothing; in the gain order every child is searched when created.

    With ``refine_cuts`` (splitter "best", ``binned`` made with ``keep_values=True``) the
    chosen cut moves to the best exact cut inside the two bins around its edge
    (:func:`~okcore.trees._histogram.refine_split`) and rows are partitioned on raw values.
    """

    def __init__(
        self,
        binned: BinnedInputs,
        R: np.ndarray,
        R_search: np.ndarray,
        params: TreeParams,
        rows: np.ndarray | None,
        runner: ChunkRunner,
        pool: HistogramPool | None = None,
    ) -> None:
        self.binned, self.R = binned, R
        self.R_search = np.ascontiguousarray(R_search, dtype=np.float64)  # compiled kernels' layout
        self.params, self.runner = params, runner
        self.pool = HistogramPool(binned.n_bins_total) if pool is None else pool
        n = binned.n_samples
        self._samples = (
            np.arange(n, dtype=np.int32)
            if rows is None
            else np.ascontiguousarray(rows, dtype=np.int32)
        )
        self.buffer = np.empty(len(self._samples), dtype=np.int32)
        self.goes_left = np.empty(n, dtype=np.uint8)
        self.feature_pool = np.arange(binned.n_features, dtype=np.int32)  # the tree's features
        self.twin_column = np.empty(0, dtype=np.int32)  # twin of each input (missing.py)
        empty_codes = np.zeros((0, 0), dtype=np.uint8)
        if binned.is_sparse:
            self.codes2d, self.codes1d = empty_codes, binned.codes
            self.indptr, self.indices = binned.indptr, binned.indices
        else:
            self.codes2d, self.codes1d = binned.codes, np.zeros(0, dtype=np.uint8)
            self.indptr = np.zeros(0, dtype=np.int64)
            self.indices = np.zeros(0, dtype=np.int32)
        self.refine = params.refine_cuts and params.splitter == "best"
        if self.refine and binned.values is None:
            raise ValueError("refine_cuts needs the raw values: bin_inputs(keep_values=True)")
        self.values2d, self.values1d = np.zeros((0, 0)), np.zeros(0)
        if self.refine:
            assert binned.values is not None
            if binned.is_sparse:
                self.values1d = binned.values
            else:
                self.values2d = binned.values
        self.hists: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        # ((start, end), histogram) built beside the statistics of a node about to be searched
        self.prebuilt: tuple[tuple[int, int], tuple[np.ndarray, np.ndarray]] | None = None
        # child -> (parent, sibling, sibling's row range, sibling may be searched)
        self.family: dict[int, tuple[int, int, tuple[int, int], bool]] = {}

    @property
    def samples(self) -> np.ndarray:
        return self._samples

    def _drop(self, node: int) -> None:
        """Forget a node's histogram, returning its buffers to the pool."""
        buffers = self.hists.pop(node, None)
        if buffers is not None:
            self.pool.give(buffers)

    def release_all(self) -> None:
        """Return every histogram still held to the pool (the tree is grown)."""
        for node in list(self.hists):
            self._drop(node)
        self._drop_prebuilt()

    def _drop_prebuilt(self) -> None:
        if self.prebuilt is not None:
            self.pool.give(self.prebuilt[1])
            self.prebuilt = None

    def _build(self, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """Histogram of the rows samples[start:end]; dense codes over feature chunks on the
        executor's threads when the node is large (each thread owns a feature range). The
        histogram prebuilt for these rows beside their statistics, if any, is taken."""
        if self.prebuilt is not None and self.prebuilt[0] == (start, end):
            buffers, self.prebuilt = self.prebuilt[1], None
            return buffers
        hist, counts = self.pool.take(self.R_search.shape[1])
        b = self.binned
        if b.is_sparse:
            build_sparse(
                b.codes, b.indptr, b.indices, b.zero_code, self._samples, start, end,
                self.R_search, b.bin_offset, hist, counts,
            )  # fmt: skip
            return hist, counts
        p, k, n = b.n_features, self.R_search.shape[1], end - start
        if use_row_wise(k):  # row by row, the rows read in place
            build_rows = self._row_wise_build(start, end, hist, counts)
            self.runner(n * p * k, p, build_rows)  # each feature's bins: one thread
            return hist, counts
        rows = np.empty((n, k))

        def gather(lo: int, hi: int) -> None:
            gather_rows_into(self._samples, start, start + lo, start + hi, self.R_search, rows)

        def build(f_lo: int, f_hi: int) -> None:
            build_dense(
                b.codes, self._samples, start, end, rows, b.bin_offset, f_lo, f_hi, hist, counts
            )

        self.runner(n * k, n, gather)
        self.runner(n * p * k, p, build)  # each feature's bins built by one thread
        return hist, counts

    def _row_wise_build(
        self, start: int, end: int, hist: np.ndarray, counts: np.ndarray
    ) -> Callable[[int, int], None]:
        """build(f_lo, f_hi): the bins of features f_lo..f_hi-1 of the rows
        samples[start:end], built row by row (:func:`build_dense_rows`)."""
        b = self.binned
        row_codes = self.pool.row_codes(b.codes)

        def build_rows(f_lo: int, f_hi: int) -> None:
            build_dense_rows(
                row_codes, self._samples, start, end, self.R_search, b.bin_offset,
                f_lo, f_hi, hist, counts,
            )  # fmt: skip

        return build_rows

    def find(
        self, node: int, start: int, end: int, mu: np.ndarray, rng: np.random.Generator
    ) -> tuple | None:
        p = self.params
        if p.splitter == "random":
            return self._find_random(node, start, end, mu, rng)
        hist, counts = self._histogram(node, start, end)
        features = add_twins(_best_features(p, self.feature_pool, rng), self.twin_column)
        return self._scan(start, end, mu, hist, counts, features)

    def _scan(
        self,
        start: int,
        end: int,
        mu: np.ndarray,
        hist: np.ndarray,
        counts: np.ndarray,
        features: np.ndarray,
    ) -> tuple:
        """The best cut of a node's histogram, refined inside its bins when asked."""
        p, b = self.params, self.binned
        split = best_split_histogram(
            hist, counts, b.bin_offset, b.bin_min, b.bin_max, features, end - start, mu,
            p.min_samples_leaf, p.l2_regularization,
        )  # fmt: skip
        if not self.refine or split[0] < 0:
            return split
        return refine_split(
            self._samples, start, end, self.codes2d, self.values2d,
            self.codes1d, self.values1d, self.indptr, self.indices, b.zero_code, hist, counts,
            b.bin_offset, self.R_search, mu, split, p.min_samples_leaf, p.l2_regularization,
        )  # fmt: skip

    def _find_random(
        self, node: int, start: int, end: int, mu: np.ndarray, rng: np.random.Generator
    ) -> tuple:
        """The randomized splitter's cut (no histogram)."""
        p, b = self.params, self.binned
        features = rng.permutation(self.feature_pool).astype(np.int32)
        uniforms = rng.random(len(features))
        return best_split_random_binned(
            self._samples, start, end, self.codes2d, self.codes1d, self.indptr,
            self.indices, b.zero_code, b.bin_offset, b.bin_min, b.bin_max, b.edges,
            self.R_search, mu, features, uniforms, p.max_features, p.min_samples_leaf,
            p.l2_regularization, self.twin_column,
        )  # fmt: skip

    def _histogram(self, node: int, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """The node's histogram, made when the node is first searched (never for leaves that
        are not): the parent's minus the sibling's when the parent's is kept, building only
        the smaller of the two siblings from its rows."""
        if node in self.hists:
            return self.hists[node]
        parent, sibling, sibling_range, sibling_open = self.family.pop(
            node, (-1, -1, (0, 0), False)
        )
        if parent not in self.hists:
            self.hists[node] = self._build(start, end)
            return self.hists[node]
        if sibling not in self.hists:
            if end - start <= sibling_range[1] - sibling_range[0]:
                self.hists[node] = self._build(start, end)
                if not sibling_open:  # nobody will subtract it from the parent
                    self._drop(parent)
                return self.hists[node]
            self.hists[sibling] = self._build(*sibling_range)
        hist, counts = self.hists.pop(parent)  # reused in place: no longer needed
        hist -= self.hists[sibling][0]
        counts -= self.hists[sibling][1]
        if not sibling_open:
            self._drop(sibling)
        self.hists[node] = (hist, counts)
        return hist, counts

    def forget(self, node: int) -> None:
        """Release the histogram of a node that will not be split."""
        self._drop(node)

    def statistics(self, start: int, end: int) -> tuple[np.ndarray, float]:
        """(mean, N*var) of the rows samples[start:end] of R, the columns shared between
        the threads (:func:`~okcore.trees.splitter.column_statistics`: the same numbers for
        any number of threads). O(n r)."""
        r = self.R.shape[1]
        mu, spread = np.empty(r), np.empty(r)

        def run(c_lo: int, c_hi: int) -> None:
            column_statistics(self._samples, start, end, self.R, c_lo, c_hi, mu, spread)

        # chunks of 8 columns: whole cache lines of each row per thread
        self.runner((end - start) * r, r, run, grain=8)
        return mu, float(spread.sum())

    def statistics_before_search(self, start: int, end: int) -> tuple[np.ndarray, float]:
        """(mean, N*var) of the rows samples[start:end], whose histogram the search is about
        to build: with threads, the histogram is built now, its feature blocks taken by the
        other threads while this one scans the rows for the statistics (two independent
        kernels, each bound by reading rows, overlapped instead of each split in two), and
        kept for :meth:`_build`. Dense row-wise builds only; else :meth:`statistics`."""
        b, k, r = self.binned, self.R_search.shape[1], self.R.shape[1]
        if b.is_sparse or not use_row_wise(k) or self.params.splitter != "best":
            return self.statistics(start, end)
        self._drop_prebuilt()
        buffers = self.pool.take(k)
        mu, spread = np.empty(r), np.empty(r)

        def scan_rows() -> None:
            column_statistics(self._samples, start, end, self.R, 0, r, mu, spread)

        n = end - start
        self.runner.overlapped(
            n * b.n_features * k, scan_rows, b.n_features,
            self._row_wise_build(start, end, *buffers),
        )  # fmt: skip
        self.prebuilt = ((start, end), buffers)
        return mu, float(spread.sum())

    def child_statistics(self, growth: _Growth, node: int, cut: int) -> tuple:
        """(mean, N*var) of both children, scanning only the smaller one's rows: the larger's
        mean from the parent's sum, its N*var by Chan et al.'s parallel formula
        N*var_P = N*var_L + N*var_S + (n_L n_S / n_P) ||mu_L - mu_S||^2. O(n_small r)
        instead of O(n r): at large N these r-wide row scans cost as much as the histograms.

        In the gain order both children are searched at once and the smaller one's rows
        are built into a histogram either way (directly, or to subtract it from the
        parent's): that build overlaps the scan (:meth:`statistics_before_search`).
        """
        start, end = growth.start[node], growth.end[node]
        n, n_left = end - start, cut - start
        small_left = n_left <= n - n_left
        lo, hi = (start, cut) if small_left else (cut, end)
        p = self.params
        searched_next = p.leaf_order == "gain" and (
            p.max_depth is None or growth.depth[node] + 1 < p.max_depth
        )
        if searched_next and n - (hi - lo) >= 2 * p.min_samples_leaf:
            mu_s, var_s = self.statistics_before_search(lo, hi)
        else:
            mu_s, var_s = self.statistics(lo, hi)
        n_s = hi - lo
        n_l = n - n_s
        mu_l = (n * growth.mean[node] - n_s * mu_s) / n_l
        d = mu_l - mu_s
        var_l = max(growth.impurity[node] - var_s - n_l * n_s / n * float(d @ d), 0.0)
        small, large = (mu_s, var_s), (mu_l, var_l)
        return (small, large) if small_left else (large, small)

    def split(self, node: int, start: int, end: int, split: tuple) -> None:
        """Rows whose bin of the split feature is <= its last left bin go left; with refined
        cuts, rows whose raw value is <= the threshold."""
        self._drop_prebuilt()  # rows move: a histogram prebuilt for a range is stale
        feature, last_bin = split[0], split[4]
        if self.refine:
            if self.binned.is_sparse:
                partition_sparse(
                    self._samples, start, end, self.values1d, self.indptr, self.indices,
                    np.zeros(self.binned.n_features), feature, split[2], self.buffer,
                )  # fmt: skip
            else:
                partition(
                    self._samples[None, :], start, end, self.values2d, feature, split[2],
                    self.goes_left, self.buffer,
                )  # fmt: skip
            return
        if self.binned.is_sparse:
            partition_sparse(
                self._samples, start, end, self.codes1d, self.indptr, self.indices,
                self.binned.zero_code, feature, last_bin, self.buffer,
            )  # fmt: skip
        else:  # codes as the (p, n) "inputs" of the exact search's partition
            partition(
                self._samples[None, :], start, end, self.codes2d, feature, last_bin,
                self.goes_left, self.buffer,
            )  # fmt: skip

    def children(self, node: int, left: tuple, right: tuple) -> None:
        """Remember each child's parent and sibling; the parent's histogram is kept only if a
        child may still be searched."""
        (left_id, left_start, left_end, left_open) = left
        (right_id, right_start, right_end, right_open) = right
        larger = max(left_end - left_start, right_end - right_start)
        # subtraction saves building the larger child, O(n_large p k), for O(B k): not worth
        # keeping the parent's histogram (memory) for small children, which build directly
        worth = larger * self.binned.n_features > self.binned.n_bins_total
        if not (left_open or right_open) or not worth:
            self._drop(node)
            return
        self.family[left_id] = (node, right_id, (right_start, right_end), right_open)
        self.family[right_id] = (node, left_id, (left_start, left_end), left_open)


def _project(R: np.ndarray, G: np.ndarray, runner: ChunkRunner) -> np.ndarray:
    """R @ G (the sketch of the residual rows), the rows shared between the threads."""
    out = np.empty((R.shape[0], G.shape[1]))
    GT = np.ascontiguousarray(G.T)

    def run(lo: int, hi: int) -> None:
        project_rows(R, GT, lo, hi, out)

    runner(R.size * G.shape[1], R.shape[0], run)
    return out


#: The sketch's range finder keeps this many times ``sketch_dim`` leading directions of the
#: residual, and the search reads k Gaussian combinations of them: with r at most that many
#: columns, the whole row space (the distribution of a Gaussian sketch in any basis).
SKETCH_RANGE_FACTOR = 2


def sketch_projection(
    R: np.ndarray,
    rows: np.ndarray | None,
    k: int,
    rng: np.random.Generator,
    runner: ChunkRunner,
) -> np.ndarray:
    """The projection (r, k) of a sketched split search (math note, "Faster split search on
    wide outputs"): Q H / sqrt(k), Q an orthonormal basis (r, L) of the span of R^T G, G a
    Gaussian (n, L) drawn over the fitted rows (``rows`` of R, or all of them) with
    L = min(r, SKETCH_RANGE_FACTOR k), and H a Gaussian (L, k). Q spans the residual's L
    leading directions approximately (a randomized range finder of R^T), and the sketch
    R @ projection is a Gaussian sketch of the residual's part in them. Drawn in the rows'
    space, it is the same for any orthogonal change of the factor's basis, R -> R Q'
    (projection -> Q'^T projection, the sketch unchanged). O(n r L) (threads split R's
    columns) plus O(r L^2), about twice the O(n r k) of forming the sketch."""
    fit_rows = np.arange(R.shape[0]) if rows is None else rows
    L = min(R.shape[1], SKETCH_RANGE_FACTOR * k)
    G = rng.standard_normal((len(fit_rows), L))
    M = np.empty((R.shape[1], L))

    def run(lo: int, hi: int) -> None:
        range_columns(R, fit_rows, G, lo, hi, M)

    runner(len(fit_rows) * R.shape[1] * L, R.shape[1], run)
    orthonormalise_columns(M)
    return project(M, rng.standard_normal((L, k)) / np.sqrt(k))


def _best_features(params: TreeParams, pool: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Candidate features of the "best" splitter: all of the tree's ``pool`` (sorted int32),
    or a sorted random subset of ``max_features`` of them."""
    if params.max_features < len(pool):
        return np.sort(rng.choice(pool, params.max_features, replace=False)).astype(np.int32)
    return pool


def _tree_feature_pool(params: TreeParams, n_features: int, rng: np.random.Generator) -> np.ndarray:
    """The features a tree may split on: all, or ``tree_features`` of them drawn at random
    for this tree (per-tree feature subsampling), sorted. Draws nothing when all are kept,
    so models grown without subsampling are unchanged."""
    q = params.tree_features
    if q is None or q >= n_features:
        return np.arange(n_features, dtype=np.int32)
    return np.sort(rng.choice(n_features, q, replace=False)).astype(np.int32)


class _Growth:
    """Mutable state of one tree while it grows: node arrays plus one split search."""

    def __init__(
        self,
        R: np.ndarray,
        projection: np.ndarray | None,
        params: TreeParams,
        rng: np.random.Generator,
        search: Any,
    ) -> None:
        self.R, self.params, self.rng, self.search = R, params, rng, search
        self.projection = projection
        self.start: list[int] = []
        self.end: list[int] = []
        self.depth: list[int] = []
        self.mean: list[np.ndarray] = []
        self.impurity: list[float] = []
        self.feature: list[int] = []
        self.threshold: list[float] = []
        self.gain: list[float] = []
        self.search_mean = self.mean if projection is None else []
        self.left: list[int] = []
        self.right: list[int] = []

    def add_node(self, start: int, end: int, depth: int, stats: tuple | None = None) -> int:
        """Append a node over samples[start:end]; ``stats`` = (mean, N*var) when known."""
        if stats is None:
            stats = self.search.statistics(start, end)
        mu, total = stats
        if self.projection is not None:  # the mean of the sketched rows is the sketched mean
            self.search_mean.append(mu @ self.projection)
        self.start.append(start)
        self.end.append(end)
        self.depth.append(depth)
        self.mean.append(mu)
        self.impurity.append(total)
        self.feature.append(-1)
        self.threshold.append(0.0)
        self.gain.append(0.0)
        self.left.append(-1)
        self.right.append(-1)
        return len(self.start) - 1

    def splittable(self, node: int) -> bool:
        p = self.params
        return (
            self.end[node] - self.start[node] >= 2 * p.min_samples_leaf
            and (p.max_depth is None or self.depth[node] < p.max_depth)
            and self.impurity[node] > CONSTANT_NODE_TOLERANCE * self.impurity[0]
        )

    def find_split(self, node: int) -> tuple | None:
        split = self.search.find(
            node, self.start[node], self.end[node], self.search_mean[node], self.rng
        )
        if split[0] >= 0 and split[3] > 0:
            return split
        self.search.forget(node)  # a final leaf: nothing of its search is needed again
        return None

    def apply_split(self, node: int, split: tuple) -> tuple[int, int]:
        feature, n_left, threshold, gain = split[:4]
        start, end = self.start[node], self.end[node]
        self.search.split(node, start, end, split)
        left_stats, right_stats = self.search.child_statistics(self, node, start + n_left)
        left = self.add_node(start, start + n_left, self.depth[node] + 1, left_stats)
        right = self.add_node(start + n_left, end, self.depth[node] + 1, right_stats)
        self.search.children(
            node,
            (left, start, start + n_left, self.splittable(left)),
            (right, start + n_left, end, self.splittable(right)),
        )
        if self.projection is not None:
            # a sketched search's gain is approximate: record the true reduction
            gain = self._true_gain(node, left, right)
        self.feature[node], self.threshold[node], self.gain[node] = feature, threshold, gain
        self.left[node], self.right[node] = left, right
        return left, right

    def _true_gain(self, node: int, left: int, right: int) -> float:
        """Reduction of N*var by a split (of the penalised objective with lambda > 0: the
        sum over children of ||T||^2 / (n + lambda), T = n mu, minus the parent's)."""
        l2 = self.params.l2_regularization
        if l2 == 0.0:
            return max(self.impurity[node] - self.impurity[left] - self.impurity[right], 0.0)

        def score(i: int) -> float:
            n = self.end[i] - self.start[i]
            return n * n * float(self.mean[i] @ self.mean[i]) / (n + l2)

        return max(score(left) + score(right) - score(node), 0.0)

    def leaf_of_rows(self, out: np.ndarray) -> None:
        """Write the leaf number of every fitted row into ``out`` (indexed by row id)."""
        number = 0
        for node in range(len(self.start)):
            if self.left[node] < 0:
                out[self.search.samples[self.start[node] : self.end[node]]] = number
                number += 1

    def to_arrays(self) -> TreeArrays:
        internal = np.array(self.left) >= 0
        leaf = np.full(len(internal), -1, dtype=np.int32)
        leaf[~internal] = np.arange(int((~internal).sum()), dtype=np.int32)
        leaves = np.flatnonzero(~internal)
        value = np.array([self.mean[i] for i in leaves]).reshape(-1, self.R.shape[1])
        l2 = self.params.l2_regularization
        if l2 > 0.0:  # the ridge leaf argmin_v sum ||r_i - v||^2 + lambda ||v||^2
            n = (np.array(self.end) - np.array(self.start))[leaves]
            value = value * (n / (n + l2))[:, None]
        return TreeArrays(
            feature=np.array(self.feature, dtype=np.int32),
            threshold=np.array(self.threshold, dtype=np.float64),
            left=np.array(self.left, dtype=np.int32),
            right=np.array(self.right, dtype=np.int32),
            leaf=leaf,
            n_samples=(np.array(self.end) - np.array(self.start)).astype(np.int32),
            impurity=np.array(self.impurity, dtype=np.float64),
            gain=np.array(self.gain, dtype=np.float64),
            value=value,
        )


class _Frontier:
    """The leaves waiting to be split, best first: the largest key (a leaf's N*var, or the
    gain of its best split), and of the leaves whose keys are equal to the largest within
    the tie margin of the split searches (:func:`~.splitter.beats`) the one created first,
    so that rounding never picks the next leaf. A heap: O(log L) per push, O((t + 1) log L)
    per pop for the t leaves tied with the top (usually none)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, tuple | None]] = []

    def __bool__(self) -> bool:
        return bool(self._heap)

    def push(self, key: float, node: int, split: tuple | None) -> None:
        heapq.heappush(self._heap, (-key, node, split))

    def pop(self) -> tuple[int, tuple | None]:
        """(node, split) of the next leaf to split, taken out."""
        top = heapq.heappop(self._heap)
        tied = []
        while self._heap and not beats(-top[0], -self._heap[0][0]):
            tied.append(heapq.heappop(self._heap))
        if tied:
            first = min([top, *tied], key=lambda entry: entry[1])
            for entry in (top, *tied):
                if entry is not first:
                    heapq.heappush(self._heap, entry)
            top = first
        return top[1], top[2]


def build_tree(
    XT: np.ndarray | None,
    R: np.ndarray,
    params: TreeParams,
    rng: np.random.Generator,
    order: np.ndarray | None = None,
    executor: Executor | None = None,
    projection: np.ndarray | None = None,
    binned: BinnedInputs | None = None,
    rows: np.ndarray | None = None,
    row_leaf: np.ndarray | None = None,
    histogram_pool: HistogramPool | None = None,
) -> TreeArrays:
    """Grow one OK3 tree best-first on residual rows R (n, r) and inputs XT (p, n) or ``binned``.

    ``leaf_order="variance"`` splits the leaf of highest N*var next (the paper); a leaf that
    cannot be split is skipped for the next by N*var. ``"gain"`` splits the leaf whose best
    split reduces N*var most (scikit-learn's BestFirstTreeBuilder). At most ``max_splits``
    splits. ``executor`` (threads) parallelises the search over features. ``projection``
    (r, k) makes the split search run on the sketch R @ projection (math note s. 2); leaf
    values stay the exact means of R. ``params.l2_regularization`` (lambda > 0) scores splits
    by the reduction of the penalised objective and shrinks each leaf's mean by
    n / (n + lambda) (:mod:`okcore.trees.splitter`).

    Exact search (``binned`` None): ``order`` may pass presorted rows (``presort(XT)``)
    shared across trees. Cost: O(p n log n) presort (unless given) + O(max_features n r) per
    searched node (r -> k with a sketch) + O(p n) per split for the partition.

    Histogram search (``binned`` from :func:`okcore.trees.binning.bin_inputs` on all N rows; XT
    unused): the tree is fitted on ``rows`` (indices into the N rows, repeats allowed for a
    bootstrap; default all) and R holds all N rows. Cost: O(n p k) histogram builds for the
    root and each split's smaller child, O(B k) per scan and subtraction, O(n) partitions.

    ``row_leaf`` (int32, one entry per row of R), if given, receives the leaf number of
    every fitted row, so callers need not re-apply the tree to them. ``histogram_pool``
    lends histogram buffers across the trees of a fit.

    ``params.tree_features`` (per-tree feature subsampling) draws the features this tree may
    split on before anything else; ``max_features`` then draws each node's candidates among
    them. ``params.tree_type="oblivious"`` grows a symmetric tree instead (one cut per level,
    :mod:`okcore.trees.oblivious`; histogram search only).
    """
    runner = ChunkRunner(executor, params.n_threads)
    R_search = R if projection is None else _project(R, projection, runner)
    n_columns = binned.n_features if binned is not None else len(XT)  # type: ignore[arg-type]
    n_features = n_columns - len(params.missing)  # the inputs; their twins follow
    pool = _tree_feature_pool(params, n_features, rng)
    twin_column = twin_columns(n_features, params.missing)
    if params.tree_type == "oblivious":
        if binned is None:
            raise ValueError("oblivious trees need the histogram search (binned inputs)")
        fields = build_oblivious_tree(
            binned, R, R_search, projection, params, rng,
            add_twins(pool, twin_column) if params.max_features >= len(pool)  # every level's
            else lambda level_rng: add_twins(_best_features(params, pool, level_rng), twin_column),
            rows=rows, row_leaf=row_leaf, histogram_pool=histogram_pool, runner=runner,
        )  # fmt: skip
        fold_twins(fields, n_features, params.missing)
        return TreeArrays(**fields)
    search: _ExactSearch | _HistogramSearch
    if binned is None:
        assert XT is not None  # the exact search reads the inputs
        search = _ExactSearch(XT, R, R_search, params, order, executor)
    else:
        search = _HistogramSearch(binned, R, R_search, params, rows, runner, histogram_pool)
    search.feature_pool, search.twin_column = pool, twin_column
    g = _Growth(R, projection, params, rng, search)
    frontier = _Frontier()

    def push(node: int) -> None:
        if not g.splittable(node):
            return
        if params.leaf_order == "gain":
            split = g.find_split(node)
            if split is not None:
                frontier.push(split[3], node, split)
        else:
            frontier.push(g.impurity[node], node, None)

    n_fit = len(search.samples)
    push(g.add_node(0, n_fit, 0, search.statistics_before_search(0, n_fit)))
    n_splits = 0
    while frontier and (params.max_splits is None or n_splits < params.max_splits):
        node, split = frontier.pop()
        split = split if split is not None else g.find_split(node)
        if split is None:
            continue
        left, right = g.apply_split(node, split)
        n_splits += 1
        push(left)
        push(right)
    if row_leaf is not None:
        g.leaf_of_rows(row_leaf)
    if isinstance(search, _HistogramSearch):
        search.release_all()
    tree = g.to_arrays()
    fields = {name: getattr(tree, name) for name in TreeArrays.__dataclass_fields__}
    fold_twins(fields, n_features, params.missing)
    return TreeArrays(**fields)
