"""Best-first growth of one OK3 tree on a residual factor (paper section 2.4.2).

The builder works with rich per-node state (segments of presorted rows, means, heaps) and
returns :class:`TreeArrays`, the flat arrays prediction and persistence use.
"""

from __future__ import annotations

import heapq
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np

from ._splitter import (
    best_split_exact,
    best_split_random,
    node_statistics,
    partition,
    presort,
    project,
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


@dataclass(frozen=True)
class TreeArrays:
    """One fitted tree as flat arrays, nodes in creation order (root = 0).

    feature, left, right, leaf : int32 (n_nodes,), -1 where not applicable (leaf / internal)
    threshold, impurity, gain : float64 (n_nodes,); x[feature] <= threshold goes left;
        impurity is the node's N*var (eq. 11), gain the reduction of N*var by its split.
    n_samples : int32 (n_nodes,) fitting rows reaching the node (bootstrap repeats counted).
    value : float64 (n_leaves, r) mean residual row of each leaf, numbered by ``leaf``.
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

    @property
    def n_leaves(self) -> int:
        return int(self.value.shape[0])


class _Growth:
    """Mutable state of one tree while it grows."""

    def __init__(self, XT, R, projection, params: TreeParams, rng, order, executor):
        self.XT, self.R, self.params, self.rng, self.executor = XT, R, params, rng, executor
        self.projection = projection
        self.R_search = R if projection is None else project(R, projection)
        n_fit = XT.shape[1]
        if params.splitter == "best":
            self.index = presort(XT) if order is None else order.copy()
        else:
            self.index = np.arange(n_fit, dtype=np.int32)[None, :]
        self.buffer = np.empty(n_fit, dtype=np.int32)
        self.goes_left = np.empty(n_fit, dtype=np.uint8)
        self.start, self.end, self.depth, self.mean = [], [], [], []
        self.impurity, self.feature, self.threshold, self.gain = [], [], [], []
        self.search_mean = self.mean if projection is None else []
        self.left, self.right = [], []

    def add_node(self, start: int, end: int, depth: int) -> int:
        mu, total = node_statistics(self.index[0], start, end, self.R)
        if self.projection is not None:  # the mean of the sketched rows is the sketched mean
            self.search_mean.append(mu @ self.projection)
        for column, value in (
            (self.start, start),
            (self.end, end),
            (self.depth, depth),
            (self.mean, mu),
            (self.impurity, total),
            (self.feature, -1),
            (self.threshold, 0.0),
            (self.gain, 0.0),
            (self.left, -1),
            (self.right, -1),
        ):
            column.append(value)
        return len(self.start) - 1

    def splittable(self, node: int) -> bool:
        p = self.params
        return (
            self.end[node] - self.start[node] >= 2 * p.min_samples_leaf
            and (p.max_depth is None or self.depth[node] < p.max_depth)
            and self.impurity[node] > CONSTANT_NODE_TOLERANCE * self.impurity[0]
        )

    def find_split(self, node: int) -> tuple[int, int, float, float] | None:
        p, n_features = self.params, self.XT.shape[0]
        start, end, mu = self.start[node], self.end[node], self.search_mean[node]
        if p.splitter == "best":
            if p.max_features < n_features:
                features = np.sort(self.rng.choice(n_features, p.max_features, replace=False))
            else:
                features = np.arange(n_features)
            split = self._search_exact(start, end, mu, features.astype(np.int32))
        else:
            features = self.rng.permutation(n_features).astype(np.int32)
            uniforms = self.rng.random(n_features)
            split = best_split_random(
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
            )
        return split if split[0] >= 0 and split[3] > 0 else None

    def _search_exact(self, start: int, end: int, mu: np.ndarray, features: np.ndarray):
        """Exact search, over feature chunks on the executor's threads when the node is large.

        Chunks keep the feature order and ties go to the earliest chunk, so the result is the
        same as a single-threaded search.
        """

        def search(chunk: np.ndarray):
            return best_split_exact(
                self.index,
                start,
                end,
                self.XT,
                self.R_search,
                mu,
                chunk,
                self.params.min_samples_leaf,
            )

        work = (end - start) * len(features) * self.R_search.shape[1]
        if self.executor is None or work < PARALLEL_SEARCH_MIN_WORK or len(features) < 2:
            return search(features)
        n_chunks = min(len(features), getattr(self.executor, "_max_workers", 2))
        results = list(self.executor.map(search, np.array_split(features, n_chunks)))
        return max(results, key=lambda split: split[3])  # max keeps the first on ties

    def apply_split(self, node: int, split: tuple[int, int, float, float]) -> tuple[int, int]:
        feature, n_left, threshold, gain = split
        start, end = self.start[node], self.end[node]
        partition(self.index, start, end, self.XT, feature, threshold, self.goes_left, self.buffer)
        left = self.add_node(start, start + n_left, self.depth[node] + 1)
        right = self.add_node(start + n_left, end, self.depth[node] + 1)
        if self.projection is not None:
            # a sketched search's gain is approximate: record the true reduction of N*var
            gain = max(self.impurity[node] - self.impurity[left] - self.impurity[right], 0.0)
        self.feature[node], self.threshold[node], self.gain[node] = feature, threshold, gain
        self.left[node], self.right[node] = left, right
        return left, right

    def to_arrays(self) -> TreeArrays:
        internal = np.array(self.left) >= 0
        leaf = np.full(len(internal), -1, dtype=np.int32)
        leaf[~internal] = np.arange(int((~internal).sum()), dtype=np.int32)
        return TreeArrays(
            feature=np.array(self.feature, dtype=np.int32),
            threshold=np.array(self.threshold, dtype=np.float64),
            left=np.array(self.left, dtype=np.int32),
            right=np.array(self.right, dtype=np.int32),
            leaf=leaf,
            n_samples=(np.array(self.end) - np.array(self.start)).astype(np.int32),
            impurity=np.array(self.impurity, dtype=np.float64),
            gain=np.array(self.gain, dtype=np.float64),
            value=np.array([self.mean[i] for i in np.flatnonzero(~internal)]).reshape(
                -1, self.R.shape[1]
            ),
        )


def build_tree(
    XT: np.ndarray,
    R: np.ndarray,
    params: TreeParams,
    rng: np.random.Generator,
    order: np.ndarray | None = None,
    executor: Executor | None = None,
    projection: np.ndarray | None = None,
) -> TreeArrays:
    """Grow one OK3 tree best-first on inputs XT (p, n) and residual factor R (n, r).

    ``leaf_order="variance"`` splits the leaf of highest N*var next (the paper); a leaf that
    cannot be split is skipped for the next by N*var. ``"gain"`` splits the leaf whose best
    split reduces N*var most (scikit-learn's BestFirstTreeBuilder). At most ``max_splits``
    splits. ``order`` may pass presorted rows (``presort(XT)``) shared across trees;
    ``executor`` (threads) parallelises the exact search over features. ``projection``
    (r, k) makes the split search run on the sketch R @ projection (math note s. 2); leaf
    values stay the exact means of R. Cost: O(p n log n) presort (unless given) + O(max_features n r) per
    searched node (r -> k with a sketch) + O(p n) per split for the partition.
    """
    g = _Growth(XT, R, projection, params, rng, order, executor)
    heap: list[tuple[float, int, tuple | None]] = []

    def push(node: int) -> None:
        if not g.splittable(node):
            return
        if params.leaf_order == "gain":
            split = g.find_split(node)
            if split is not None:
                heapq.heappush(heap, (-split[3], node, split))
        else:
            heapq.heappush(heap, (-g.impurity[node], node, None))

    push(g.add_node(0, XT.shape[1], 0))
    n_splits = 0
    while heap and (params.max_splits is None or n_splits < params.max_splits):
        _, node, split = heapq.heappop(heap)
        split = split if split is not None else g.find_split(node)
        if split is None:
            continue
        left, right = g.apply_split(node, split)
        n_splits += 1
        push(left)
        push(right)
    return g.to_arrays()
