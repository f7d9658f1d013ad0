"""Flat arrays of a fitted tree ensemble and the predictions computed from them.

An ensemble of M trees over N training outputs stores the trees' node arrays concatenated
(with offsets), the leaf values (r-vectors), and for each tree the leaf of every training
point (M x N, the smallest unsigned integer type holding the leaf numbers) with its fitting
count (bootstrap / subsample multiplicity; not stored when every row fitted every tree once).
Two combinations:

- ``"boosting"`` (Algorithm 3): F(x) = F_0 + nu * sum_m h_m(x), F_0 the training mean
  (robust losses: the geometric median, a weighted combination of the phi_i).
- ``"average"`` (single trees, bagging, extra-trees): F(x) = (1/M) sum_m h_m(x).

W^F (the weights of F(x) over the phi(y_i), paper eq. 5-6) is computed without N x N
matrices by the backward recursion of the math note, O(M Q N), compiled with numba. It
needs the weight of each training row's residual in its leaf's value: c / n_c (count over
leaf size) for leaf means, c / (n_c + lambda) with an L2 penalty lambda on the leaf values
(a leaf's weights then sum to n_c / (n_c + lambda) < 1; the rows of a boosted W^F still sum
to 1, since F_0's weights do and every residual phi_i - F(x_i) has weights summing to 0),
stored per row (``train_weight``) for the robust losses, whose
leaf values are geometric medians and Huber steps; likewise F_0's weights (``init_weight``,
uniform 1/N when None).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from numba import njit
from scipy import sparse

from ._sparse import csr_find
from .builder import TreeArrays

#: Queries handled together by the W^F kernels (the (N, block) work array stays in cache).
#: Measured on a quiet machine, M = 500, N = 4000, per 1000 queries on one thread: blocks of
#: 16: 0.90 s, 24: 0.82 s, 32: 0.71 s, 48: 0.93 s, 64: 1.11 s (N = 16000: 4.7-4.8 s for all).
WEIGHTS_BLOCK = 32

NODE_FIELDS = ("feature", "threshold", "left", "right", "leaf", "n_samples", "impurity", "gain")
#: ``missing_left`` of trees that have none: every missing input goes right.
NO_MISSING_LEFT = np.zeros(0, dtype=np.uint8)


@dataclass(frozen=True)
class TreeEnsemble:
    """Concatenated flat trees. ``node_offset``/``leaf_offset`` are (M + 1,) prefix offsets.

    train_leaf : integer (M, N) leaf of training point i in tree m (local leaf number); an
        unsigned type as small as the leaf numbers allow (uint8 up to 256 leaves), int32 in
        models saved before that.
    train_count : integer (M, N) or None: times point i was in tree m's fitting rows (0 when
        left out); None when every point fitted every tree once (boosting without
        subsampling): the counts are then implicit ones, not an M x N array of them.
    init : float64 (r,) F_0 for boosting, zeros for averages.
    train_weight : float64 (M, N) or None: weight of point i's residual in the value of its
        leaf of tree m; None when every leaf value is the mean of its fitting rows.
    init_weight : float64 (N,) or None: F_0 = init_weight @ phi; None for the mean.
    l2_regularization : lambda of the leaf values sum / (n + lambda) (0: leaf means).
    missing_left : uint8 (n_nodes,) or None: 1 where a missing input goes left
        (:mod:`okcore.trees.missing`); None (models saved before it): every one goes right.
    """

    combine: str  # "boosting" or "average"
    learning_rate: float
    init: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    leaf: np.ndarray
    n_samples: np.ndarray
    impurity: np.ndarray
    gain: np.ndarray
    value: np.ndarray
    node_offset: np.ndarray
    leaf_offset: np.ndarray
    train_leaf: np.ndarray
    train_count: np.ndarray | None
    train_weight: np.ndarray | None = None
    init_weight: np.ndarray | None = None
    l2_regularization: float = 0.0
    missing_left: np.ndarray | None = None

    @classmethod
    def from_trees(
        cls,
        trees: list[TreeArrays],
        train_leaf: np.ndarray,
        train_count: np.ndarray | None,
        *,
        combine: str,
        learning_rate: float = 1.0,
        init: np.ndarray,
        train_weight: np.ndarray | None = None,
        init_weight: np.ndarray | None = None,
        l2_regularization: float = 0.0,
    ) -> TreeEnsemble:
        """Stack trees (with their training leaves, counts and weights, each (M, N); counts
        that are all ones, or None, are stored as None). Unsigned leaf and count arrays are
        kept as they are (no copy when contiguous), others become int32."""
        nodes = {f: np.concatenate([getattr(t, f) for t in trees]) for f in NODE_FIELDS}
        missing_left = None
        if any(t.missing_left is not None for t in trees):
            missing_left = np.concatenate(
                [
                    np.zeros(len(t.feature), np.uint8) if t.missing_left is None
                    else t.missing_left.astype(np.uint8)
                    for t in trees
                ]
            )  # fmt: skip
        train_count = stored_counts(train_count)
        return cls(
            combine=combine,
            learning_rate=float(learning_rate),
            init=np.asarray(init, float),
            value=np.concatenate([t.value for t in trees]),
            node_offset=np.cumsum([0] + [len(t.feature) for t in trees]).astype(np.int64),
            leaf_offset=np.cumsum([0] + [t.n_leaves for t in trees]).astype(np.int64),
            train_leaf=_index_array(train_leaf),
            train_count=None if train_count is None else _index_array(train_count),
            train_weight=_float_array(train_weight),
            init_weight=_float_array(init_weight),
            l2_regularization=float(l2_regularization),
            missing_left=missing_left,
            **nodes,
        )

    @property
    def n_trees(self) -> int:
        return len(self.node_offset) - 1

    def trees(self) -> list[TreeArrays]:
        """The trees as :meth:`from_trees` took them (views of the concatenated arrays):
        stacking them again gives these arrays bit for bit."""
        out = []
        for m in range(self.n_trees):
            nodes = slice(int(self.node_offset[m]), int(self.node_offset[m + 1]))
            values = slice(int(self.leaf_offset[m]), int(self.leaf_offset[m + 1]))
            fields = {f: getattr(self, f)[nodes] for f in NODE_FIELDS}
            missing = None if self.missing_left is None else self.missing_left[nodes]
            out.append(TreeArrays(**fields, value=self.value[values], missing_left=missing))
        return out

    def fit_counts(self) -> np.ndarray:
        """``train_count`` as an (M, N) array, implicit ones written out (for inspection:
        W^F never builds it)."""
        if self.train_count is None:
            return np.ones(self.train_leaf.shape, dtype=np.uint8)
        return self.train_count

    def truncate(self, n_trees: int) -> TreeEnsemble:
        """The first ``n_trees`` trees (early stopping keeps the best iteration)."""
        n_nodes, n_leaves = int(self.node_offset[n_trees]), int(self.leaf_offset[n_trees])
        fields = {f: getattr(self, f)[:n_nodes] for f in NODE_FIELDS}
        return TreeEnsemble(
            combine=self.combine,
            learning_rate=self.learning_rate,
            init=self.init,
            value=self.value[:n_leaves],
            node_offset=self.node_offset[: n_trees + 1],
            leaf_offset=self.leaf_offset[: n_trees + 1],
            train_leaf=self.train_leaf[:n_trees],
            train_count=None if self.train_count is None else self.train_count[:n_trees],
            train_weight=None if self.train_weight is None else self.train_weight[:n_trees],
            init_weight=self.init_weight,
            l2_regularization=self.l2_regularization,
            missing_left=None if self.missing_left is None else self.missing_left[:n_nodes],
            **fields,
        )

    # ------------------------------------------------------------------ predictions
    def apply(self, X: np.ndarray | sparse.csr_matrix) -> np.ndarray:
        """Leaf (local number) of each query in each tree, int32 (M, Q). O(M Q depth)
        (times log of the row's non-zeros for a CSR matrix)."""
        return apply_trees(
            X, self.feature, self.threshold, self.left, self.right, self.leaf, self.node_offset,
            self.missing_left,
        )  # fmt: skip

    def decision(self, X: np.ndarray) -> np.ndarray:
        """F(x) in factor coordinates, (Q, r): the leaf values summed over trees. O(M Q r)."""
        total = _sum_leaf_values(self.apply(X), self.leaf_offset, self.value)
        if self.combine == "boosting":
            return self.init + self.learning_rate * total
        return total / self.n_trees

    def staged_decision(self, X: np.ndarray) -> Iterator[np.ndarray]:
        """F(x) after each tree m = 1..M, each a new (Q, r) array: the leaf values of the
        first m trees summed in the order :meth:`decision` sums them, so stage m is exactly
        the decision of :meth:`truncate` (m). O(M Q r) in all plus routing."""
        leaves = self.apply(X)
        total = np.zeros((X.shape[0], self.value.shape[1]))
        for m in range(self.n_trees):
            total += self.value[self.leaf_offset[m] + leaves[m]]
            if self.combine == "boosting":
                yield self.init + self.learning_rate * total
            else:
                yield total / (m + 1)

    def tree_coefficients(self) -> np.ndarray:
        """Weight of each training point's residual in its leaf's value, float64 (M, N).

        Row i of tree m's weight matrix W~^m is nonzero on the points of i's leaf, with these
        values: ``train_weight`` if stored, else c_i / (n_c(leaf_m(i)) + lambda) (c_i the
        count, 1 when not stored; n_c = fitting rows in the leaf, bootstrap/subsample counts
        included; lambda the L2 penalty, 0 for leaf means).
        """
        if self.train_weight is not None:
            return self.train_weight
        leaf_size = self.n_samples[self.node_offset[:-1, None] + self._leaf_nodes()]
        denominator = np.take_along_axis(leaf_size, self.train_leaf, axis=1)
        count = 1.0 if self.train_count is None else self.train_count
        if self.l2_regularization > 0.0:
            return count / (denominator + self.l2_regularization)
        return count / denominator

    @cached_property
    def _coefficients(self) -> np.ndarray:
        """:meth:`tree_coefficients`, computed once per ensemble (they depend only on it)."""
        return self.tree_coefficients()

    def _leaf_nodes(self) -> np.ndarray:
        """Local node id of every leaf, padded, shape (M, max leaves)."""
        width = int(np.diff(self.leaf_offset).max())
        out = np.zeros((self.n_trees, width), dtype=np.int64)
        for m in range(self.n_trees):
            lo, hi = self.node_offset[m], self.node_offset[m + 1]
            leaves = self.leaf[lo:hi]
            out[m, leaves[leaves >= 0]] = np.flatnonzero(leaves >= 0)
        return out

    def weights(
        self, X: np.ndarray, coefficients: np.ndarray | None = None, n_threads: int = 1
    ) -> np.ndarray:
        """W^F for the queries X, shape (Q, N); rows sum to 1 (boosting: with or without an
        L2 penalty on the leaf values, see the module docstring). O(M Q N), no N x N matrix.

        ``coefficients`` is :meth:`tree_coefficients` (computed once and cached when None).
        Boosting evaluates w^F = P^0 + nu sum_m P^m A_{m-1}...A_0 backwards (Horner),
        A_m = I - nu W~^m, A_0 = I - 1 w_0^T and P^0 = w_0 (F_0 = w_0 . phi); an average
        is (1/M) sum_m P^m.

        Blocks of WEIGHTS_BLOCK queries go through joblib: ``n_threads`` threads, or the
        active joblib backend (under ``joblib.parallel_config(backend="dask")``, tasks on
        the cluster, the training leaves and coefficients scattered once per call).
        """
        if coefficients is None:
            coefficients = self._coefficients
        leaves = self.apply(X)
        n_train = self.train_leaf.shape[1]
        # the mean's weights are not stored: an empty array selects the exact 1/N path
        init_weight = np.empty(0) if self.init_weight is None else self.init_weight
        n_leaves_max = int(np.diff(self.leaf_offset).max())
        out = np.empty((X.shape[0], n_train))
        starts = range(0, X.shape[0], WEIGHTS_BLOCK)
        shared = (self.train_leaf, coefficients, self.combine, self.learning_rate)
        if len(starts) == 1:  # one block is computed here, not sent anywhere
            out[:] = _block_weights(leaves, *shared, n_leaves_max, init_weight)
            return out
        blocks = Parallel(n_jobs=n_threads, prefer="threads", return_as="generator")(
            delayed(_block_weights)(
                np.ascontiguousarray(leaves[:, s : s + WEIGHTS_BLOCK]),
                *shared,
                n_leaves_max,
                init_weight,
            )
            for s in starts
        )
        for s, block in zip(starts, blocks, strict=True):
            out[s : s + WEIGHTS_BLOCK] = block
        return out


def _block_weights(
    q_leaves: np.ndarray,
    train_leaf: np.ndarray,
    coefficients: np.ndarray,
    combine: str,
    learning_rate: float,
    n_leaves_max: int,
    init_weight: np.ndarray,
) -> np.ndarray:
    """W^F of one block of queries from their leaves (M, B): shape (B, N)."""
    q_leaves = np.ascontiguousarray(q_leaves)
    if combine == "boosting":
        work = _boosting_weights(
            q_leaves, train_leaf, coefficients, learning_rate, n_leaves_max, init_weight
        )
    else:
        work = _average_weights(q_leaves, train_leaf, coefficients)
    return work.T


def stored_counts(count: np.ndarray | None) -> np.ndarray | None:
    """Fitting counts as an ensemble stores them: None when there are none or all are 1
    (every row fitted every tree once), so no M x N array of ones is held."""
    if count is None or (np.asarray(count).dtype.kind in "iu" and np.all(count == 1)):
        return None
    return count


def _index_array(a: np.ndarray) -> np.ndarray:
    """A contiguous integer array: unsigned types kept (the stage loop's smallest type),
    anything else as int32."""
    a = np.asarray(a)
    return np.ascontiguousarray(a, dtype=a.dtype if a.dtype.kind == "u" else np.int32)


def _float_array(a: np.ndarray | None) -> np.ndarray | None:
    return None if a is None else np.ascontiguousarray(a, dtype=np.float64)


def tree_leaves(tree: TreeArrays, X: np.ndarray | sparse.csr_matrix) -> np.ndarray:
    """Leaf number of each row of X in one tree, int32 (Q,). O(Q depth)."""
    offsets = np.array([0, len(tree.feature)], dtype=np.int64)
    return apply_trees(
        X, tree.feature, tree.threshold, tree.left, tree.right, tree.leaf, offsets,
        tree.missing_left,
    )[0]  # fmt: skip


def apply_trees(
    X: Any,
    feature: np.ndarray,
    threshold: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    leaf: np.ndarray,
    node_offset: np.ndarray,
    missing_left: np.ndarray | None = None,
) -> np.ndarray:
    """Leaves of the rows of X (dense array of any real dtype, or canonical CSR) in each tree;
    a missing (NaN) input goes left where ``missing_left`` is 1 (None: always right)."""
    go_left = NO_MISSING_LEFT if missing_left is None else missing_left
    if sparse.issparse(X):
        return _apply_sparse(
            X.data, X.indices, X.indptr, feature, threshold, left, right, leaf, node_offset,
            go_left,
        )  # fmt: skip
    return _apply(X, feature, threshold, left, right, leaf, node_offset, go_left)


@njit(cache=True, nogil=True)
def _apply(
    X: np.ndarray,
    feature: np.ndarray,
    threshold: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    leaf: np.ndarray,
    node_offset: np.ndarray,
    missing_left: np.ndarray,
) -> np.ndarray:  # pragma: no cover - jit
    n_trees = node_offset.shape[0] - 1
    out = np.empty((n_trees, X.shape[0]), dtype=np.int32)
    has_missing_left = missing_left.shape[0] > 0
    for m in range(n_trees):
        base = node_offset[m]
        for q in range(X.shape[0]):
            node = 0
            while left[base + node] >= 0:
                x = X[q, feature[base + node]]
                if x <= threshold[base + node] or (
                    x != x and has_missing_left and missing_left[base + node] != 0
                ):
                    node = left[base + node]
                else:
                    node = right[base + node]
            out[m, q] = leaf[base + node]
    return out


@njit(cache=True, nogil=True)
def _apply_sparse(
    data: np.ndarray,
    indices: np.ndarray,
    indptr: np.ndarray,
    feature: np.ndarray,
    threshold: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    leaf: np.ndarray,
    node_offset: np.ndarray,
    missing_left: np.ndarray,
) -> np.ndarray:  # pragma: no cover - jit
    """_apply on CSR rows (sorted indices): a feature's value by binary search, 0 if absent."""
    n_trees = node_offset.shape[0] - 1
    n_queries = indptr.shape[0] - 1
    out = np.empty((n_trees, n_queries), dtype=np.int32)
    for m in range(n_trees):
        base = node_offset[m]
        for q in range(n_queries):
            node = 0
            while left[base + node] >= 0:
                at = csr_find(indptr, indices, q, feature[base + node])
                x = data[at] if at >= 0 else 0.0
                if x <= threshold[base + node] or (
                    x != x and missing_left.shape[0] > 0 and missing_left[base + node] != 0
                ):
                    node = left[base + node]
                else:
                    node = right[base + node]
            out[m, q] = leaf[base + node]
    return out


@njit(cache=True, nogil=True)
def _sum_leaf_values(
    leaves: np.ndarray, leaf_offset: np.ndarray, value: np.ndarray
) -> np.ndarray:  # pragma: no cover - jit
    n_trees, n_queries = leaves.shape
    out = np.zeros((n_queries, value.shape[1]))
    for m in range(n_trees):
        for q in range(n_queries):
            row = leaf_offset[m] + leaves[m, q]
            for c in range(value.shape[1]):
                out[q, c] += value[row, c]
    return out


@njit(cache=True, nogil=True, fastmath=True)
def _boosting_weights(
    q_leaves: np.ndarray,
    train_leaf: np.ndarray,
    coef: np.ndarray,
    nu: float,
    n_leaves_max: int,
    init_weight: np.ndarray,
) -> np.ndarray:  # pragma: no cover - jit
    """Horner evaluation of w^F for one block of B queries; returns the (N, B) transpose.

    R <- nu P^M; for m = M-1..1: R <- R A_m + nu P^m; w = R A_0 + P^0 (math note section 2),
    where (R A_m)[:, l] = R[:, l] - nu coef_m[l] * (sum of R over the points of l's leaf) and
    P^m[b, l] = coef_m[l] [leaf_m(l) == leaf_m(x_b)]. Tree m = 0 here is the paper's h_1.
    Both terms depend on l only through its leaf L: a table D[L, b] = hit - leaf sum turns
    the update into one branch-free FMA pass. (Fusing the next tree's leaf sums into that
    pass measured 2x slower: the scatter stops vectorisation.)
    """
    n_trees, n_train = train_leaf.shape
    B = q_leaves.shape[1]
    R = np.zeros((n_train, B))
    sums = np.zeros((n_leaves_max, B))
    D = np.empty((n_leaves_max, B))
    for m in range(n_trees - 1, -1, -1):
        sums[:, :] = 0.0
        for i in range(n_train):
            L = train_leaf[m, i]
            for b in range(B):
                sums[L, b] += R[i, b]
        for L in range(n_leaves_max):
            for b in range(B):
                D[L, b] = (1.0 if q_leaves[m, b] == L else 0.0) - sums[L, b]
        for i in range(n_train):
            L = train_leaf[m, i]
            w = nu * coef[m, i]
            for b in range(B):
                R[i, b] += w * D[L, b]
    # A_0 = I - 1 w_0^T and P^0 = w_0 (F_0 = w_0 . phi is unshrunk); w_0 = 1/N for the mean.
    total = np.zeros(B)
    for i in range(n_train):
        for b in range(B):
            total[b] += R[i, b]
    uniform = init_weight.shape[0] == 0
    for i in range(n_train):
        for b in range(B):
            if uniform:
                R[i, b] += (1.0 - total[b]) / n_train
            else:
                R[i, b] += (1.0 - total[b]) * init_weight[i]
    return R


@njit(cache=True, nogil=True, fastmath=True)
def _average_weights(
    q_leaves: np.ndarray, train_leaf: np.ndarray, coef: np.ndarray
) -> np.ndarray:  # pragma: no cover - jit
    """(1/M) sum_m P^m for one block of queries; returns the (N, B) transpose."""
    n_trees, n_train = train_leaf.shape
    B = q_leaves.shape[1]
    R = np.zeros((n_train, B))
    hit = np.zeros((int(train_leaf.max()) + 1, B))
    for m in range(n_trees):
        hit[:, :] = 0.0
        for b in range(B):
            hit[q_leaves[m, b], b] = 1.0 / n_trees
        for i in range(n_train):
            L = train_leaf[m, i]
            w = coef[m, i]
            for b in range(B):
                R[i, b] += w * hit[L, b]
    return R
