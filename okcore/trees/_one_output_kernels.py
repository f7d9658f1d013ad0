"""The oblivious tree of one output column in one compiled call, and its level scan.

:func:`grow_one_output` grows a one-column oblivious tree (:mod:`okcore.trees.oblivious`)
with the level loop's bookkeeping, every level in one call. Its level search,
:func:`level_gains_one_output`, builds and scans one feature at a time, in a block whose
cells are slot-major (a node's bins side by side), instead of the level loop's
histogram of every feature with bin-major cells (:func:`~._oblivious_kernels.build_level`,
:func:`~._oblivious_kernels.add_level_gains`). At depth 8-10 a level holds hundreds of
nodes, and the level histogram (B bins x L nodes x 16 bytes: 16 MB at B = 2,040, L = 512)
outgrew the caches: it was written, zeroed and read back from memory. A feature's block
(B_f x L x 16 bytes) is reused from feature to feature, and each node's bins are scanned
as a run in registers, its gain recomputed only at the bins holding its rows.

The numbers are the level loop's: every cell sums its rows in row order, each node's left
sums add its cells in bin order, and the level gain of a cut adds the nodes' gains in node
order (a running sum per bin, node after node), so the counts, the cuts that can be made
and the gains at lambda = 0 are bit for bit those of ``add_level_gains``; with lambda > 0
the penalised gain (:func:`~.splitter.penalised_gain`) may round its fused multiply-adds
differently in the two kernels (tests/okcore/trees/test_one_output_kernels.py: within 1e-12
of the level's largest gain, where cuts tie within 1e-9 of the best: the tie margin of
:func:`~.splitter.beats`, by which the level's cut is chosen in both), and the trees are the
level loop's (tests/okcore/trees/test_oblivious.py, with and without lambda).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._oblivious_kernels import (
    best_level_cut,
    build_level,
    child_statistics_one_output,
    move_rows,
    refine_level_cut,
    row_squares,
)
from .splitter import penalised_gain

#: The level scan's float flags: fastmath without reassociation, so that its sums keep
#: their order (and value) instead of being regrouped.
NO_REASSOCIATION = {"nnan", "ninf", "nsz", "arcp", "contract", "afn"}


@njit(cache=True, nogil=True)
def build_slot_block(
    codes_f: np.ndarray, offset: np.ndarray, values: np.ndarray, n_bins_f: int, block: np.ndarray
) -> None:  # pragma: no cover - jit
    """One feature's cells of a chunk of slots, slot-major: block[2 (s B_f + b)] = the sum
    of ``values`` over the fitted rows t in bin b of the feature (``codes_f``) with
    offset[t] = s, in row order, and block[2 (s B_f + b) + 1] their count; rows with
    offset -1 are skipped. Overwrites block[: 2 S B_f]. O(n_fit + S B_f)."""
    block[:] = 0.0
    row_cells = np.uint64(2 * n_bins_f)  # one slot: its bins' cells
    one, two = np.uint64(1), np.uint64(2)
    for t in range(offset.shape[0]):
        o = offset[t]
        if o < 0:
            continue
        j = np.uint64(o) * row_cells + np.uint64(codes_f[t]) * two
        block[j] += values[t]
        block[j + one] += 1.0


@njit(cache=True, nogil=True, fastmath=NO_REASSOCIATION)
def add_slot_block_gains(
    block: np.ndarray,
    n_bins_f: int,
    node_n: np.ndarray,
    node_mu: np.ndarray,
    min_leaf: int,
    l2: float,
    total: np.ndarray,
    any_cut: np.ndarray,
    rows_in_bin: np.ndarray,
    run: np.ndarray,
) -> None:  # pragma: no cover - jit
    """Add the gains of the S = len(node_n) slots of a :func:`build_slot_block` block to the
    running sums of its cuts: for the cut after bin b < B_f - 1 (bins <= b go left),
    total[b] += each slot's gain (node n = node_n[s] rows, mean mu = node_mu[s, 0]) when
    both its children keep ``min_leaf`` rows (any_cut[b] is then set), slot after slot;
    rows_in_bin[b] += the rows of bin b. A slot's gain, ||S_L - n_L mu||^2 n / (n_L n_R) or
    the penalised gain with ``l2`` > 0, changes only at a bin holding its rows and is
    recomputed there only; ``run`` (>= B_f floats) holds one slot's gains over the bins
    before they are added. O(S B_f)."""
    last = n_bins_f - 1  # nothing goes right of the last bin
    for s in range(node_n.shape[0]):
        mu = node_mu[s, 0]
        mu_sq = 0.0
        mu_sq += mu * mu
        n = node_n[s]
        left_sum = 0.0
        n_left = 0
        can_cut = False
        slot_gain = 0.0
        cells = 2 * s * n_bins_f
        for b in range(last):
            m = int(block[cells + 2 * b + 1])
            if m > 0:
                rows_in_bin[b] += m
                n_left += m
                left_sum += block[cells + 2 * b]
                n_right = n - n_left
                can_cut = n_left >= min_leaf and n_right >= min_leaf
                if can_cut:
                    d = left_sum - n_left * mu
                    acc = 0.0
                    dot = 0.0
                    acc += d * d
                    dot += d * mu
                    if l2 > 0.0:
                        slot_gain = penalised_gain(acc, dot, mu_sq, n_left, n_right, l2)
                    else:
                        slot_gain = acc * n / (n_left * n_right)
            run[b] = slot_gain if can_cut else 0.0
            any_cut[b] |= can_cut
        rows_in_bin[last] += int(block[cells + 2 * last + 1])
        for b in range(last):
            total[b] += run[b]


@njit(cache=True, nogil=True)
def level_gains_one_output(
    codes: np.ndarray,
    slot: np.ndarray,
    slot_lo: int,
    values: np.ndarray,
    bin_offset: np.ndarray,
    features: np.ndarray,
    node_n: np.ndarray,
    node_mu: np.ndarray,
    min_leaf: int,
    l2: float,
    buffer: np.ndarray,
    gain: np.ndarray,
    cut: np.ndarray,
    rows_in_bin: np.ndarray,
) -> None:  # pragma: no cover - jit
    """A level's gains over the S = len(node_n) slots slot_lo .. slot_lo + S - 1 of one
    output column (``values``, the fitted rows' residuals; ``codes`` (p, n_fit) their bins):
    for every cut after bin b of a feature of ``features``, gain[b] += the sum of the cut
    nodes' gains, cut[b] set when one node can be cut, rows_in_bin[b] += the slots' rows in
    b, as :func:`~._oblivious_kernels.add_level_gains` of the chunk's histogram (module
    docstring). ``buffer`` holds one feature's block (>= 2 S B_f floats).
    O(n_fit + len(features) (n_fit + S B_f))."""
    n_fit = slot.shape[0]
    width = node_n.shape[0]
    offset = np.empty(n_fit, dtype=np.int64)  # row's slot in the chunk, -1 outside it
    for t in range(n_fit):
        s = np.uint64(np.int64(slot[t]) - slot_lo)
        offset[t] = np.int64(s) if s < np.uint64(width) else -1
    widest = 0
    for f in features:
        widest = max(widest, bin_offset[f + 1] - bin_offset[f])
    total = np.empty(widest)
    any_cut = np.empty(widest, dtype=np.bool_)
    run = np.empty(widest)
    for f in features:
        lo, hi = bin_offset[f], bin_offset[f + 1]
        n_bins_f = hi - lo
        block = buffer[: 2 * width * n_bins_f]
        build_slot_block(codes[f], offset, values, n_bins_f, block)
        total[:] = 0.0
        any_cut[:] = False
        add_slot_block_gains(
            block, n_bins_f, node_n, node_mu, min_leaf, l2, total, any_cut,
            rows_in_bin[lo:hi], run,
        )  # fmt: skip
        for b in range(n_bins_f - 1):
            if any_cut[b]:
                cut[lo + b] = True
            gain[lo + b] += total[b]


@njit(cache=True, nogil=True)
def _add_node(
    node: int,
    n_rows: int,
    row_sum: float,
    squares: float,
    count: np.ndarray,
    sums: np.ndarray,
    impurity: np.ndarray,
) -> None:  # pragma: no cover - jit
    """Node ``node``'s count, row sum and N*var = squares - sum^2 / n (0 when empty)."""
    count[node] = n_rows
    sums[node] = row_sum
    spread = squares - (row_sum * row_sum) / n_rows if n_rows > 0 else 0.0
    impurity[node] = max(spread, 0.0)


@njit(cache=True, nogil=True)
def grow_one_output(
    codes: np.ndarray,
    samples: np.ndarray,
    search_rows: np.ndarray,
    R: np.ndarray,
    bin_offset: np.ndarray,
    bin_min: np.ndarray,
    bin_max: np.ndarray,
    features: np.ndarray,
    depth: int,
    min_leaf: int,
    l2: float,
    chunk: int,
    hist_buffer: np.ndarray,
    constant_tolerance: float,
    all_left: int,
    values: np.ndarray,
    row_leaf: np.ndarray,
) -> tuple[np.ndarray, ...]:  # pragma: no cover - jit
    """One oblivious tree on a one-column R (N, 1), every level in one compiled call: the
    level loop of :func:`okcore.trees.oblivious.build_oblivious_tree` (its node bookkeeping
    and its float operations in the same order, its level search by
    :func:`level_gains_one_output`: the same tree) without a Python step per level and
    node. ``features`` are every level's candidates (fixed: no random draw per level);
    ``codes`` (p, n_fit) and ``search_rows`` (n_fit, 1) are the fitted rows' bins and
    residuals, ``samples`` their rows of R; ``chunk`` slots per level search (the level
    loop's histogram chunks) in ``hist_buffer`` (flat, >= B chunk 2 floats). ``values``
    (p, N), the raw inputs, refines every level's cut (:func:`refine_level_cut`, from the
    chosen feature's histogram when one chunk holds the level); empty (0, 0): the binned
    cuts. ``row_leaf`` (N, or empty: not wanted) receives the leaf of every fitted row.

    Returns the TreeArrays fields (feature, threshold, left, right, leaf, n_samples,
    impurity, gain, value). O(d (n f + f B_f L)) for depth d.
    """
    n_fit = samples.shape[0]
    n_bins = bin_offset[bin_offset.shape[0] - 1]
    max_nodes = 2 ** (depth + 1) - 1
    count = np.zeros(max_nodes, dtype=np.int64)
    node_sum = np.zeros(max_nodes)
    impurity = np.zeros(max_nodes)
    feature_of = np.full(max_nodes, -1, dtype=np.int32)
    threshold_of = np.zeros(max_nodes)
    left_of = np.full(max_nodes, -1, dtype=np.int32)
    right_of = np.full(max_nodes, -1, dtype=np.int32)
    gain_of = np.zeros(max_nodes)

    row_sq = np.empty(n_fit)
    row_squares(samples, 0, n_fit, R, row_sq)
    slot = np.zeros(n_fit, dtype=np.int32)
    node_of = np.zeros(n_fit, dtype=np.int32)
    c_counts = np.zeros(2, dtype=np.int64)
    c_sums, c_squares = np.zeros((2, 1)), np.zeros(2)
    child_statistics_one_output(
        codes[0], all_left, slot, samples, R, row_sq, c_counts, c_sums, c_squares
    )
    _add_node(0, c_counts[0], c_sums[0, 0], c_squares[0], count, node_sum, impurity)
    n_nodes = 1
    floor = constant_tolerance * impurity[0]
    frontier = np.zeros(1, dtype=np.int64)
    if not (count[0] >= 2 * min_leaf and impurity[0] > floor):
        frontier = frontier[:0]

    gain = np.empty(n_bins)
    cut = np.empty(n_bins, dtype=np.bool_)
    rows_in_bin = np.empty(n_bins, dtype=np.int64)
    no_members = np.empty(0, dtype=np.int32)  # every row tested (build_level)
    refine = values.shape[0] > 0
    side = np.empty(n_fit if refine else 0, dtype=np.uint8)  # the refined cut's sides
    no_histogram = np.empty((0, 0, 2))  # refine_level_cut's left sums from the rows
    chosen = np.zeros(1, dtype=np.int32)  # the level's feature, for its histogram
    residuals = search_rows.reshape(-1)
    for _level in range(depth):
        n_slots = frontier.shape[0]
        if n_slots == 0:
            break
        node_n = np.empty(n_slots, dtype=np.int64)
        node_mu = np.empty((n_slots, 1))
        for s in range(n_slots):
            node_n[s] = count[frontier[s]]
            node_mu[s, 0] = node_sum[frontier[s]] / count[frontier[s]]
        gain[:] = 0.0
        cut[:] = False
        rows_in_bin[:] = 0
        for lo in range(0, n_slots, chunk):
            hi = min(lo + chunk, n_slots)
            level_gains_one_output(
                codes, slot, lo, residuals, bin_offset, features, node_n[lo:hi],
                node_mu[lo:hi], min_leaf, l2, hist_buffer, gain, cut, rows_in_bin,
            )  # fmt: skip
        feature, last_bin, threshold, level_gain = best_level_cut(
            gain, cut, rows_in_bin, bin_offset, bin_min, bin_max, features
        )
        if feature < 0 or level_gain <= 0.0:
            break
        c_counts = np.zeros(2 * n_slots, dtype=np.int64)
        c_sums, c_squares = np.zeros((2 * n_slots, 1)), np.zeros(2 * n_slots)
        codes_f = codes[feature]
        if refine:
            hist = no_histogram  # the left sums from the rows, unless one chunk holds all
            if n_slots <= chunk:  # the level loop's histogram, of the chosen feature only
                hist = hist_buffer[: n_bins * n_slots * 2].reshape((n_bins, n_slots, 2))
                chosen[0] = feature
                build_level(codes, slot, 0, no_members, search_rows, bin_offset, chosen, hist)
            threshold, level_gain = refine_level_cut(
                codes_f, values, feature, samples, slot, search_rows, node_n, node_mu, hist,
                rows_in_bin, bin_offset, last_bin, min_leaf, l2, side,
            )  # fmt: skip
            codes_f = side
        child_statistics_one_output(
            codes_f, last_bin, slot, samples, R, row_sq, c_counts, c_sums, c_squares
        )
        place = np.full(n_slots, -1, dtype=np.int64)
        first_child = n_nodes
        next_frontier = np.empty(2 * n_slots, dtype=np.int64)
        n_next = 0
        n_cut = 0
        for s in range(n_slots):
            node = frontier[s]
            if c_counts[2 * s] < min_leaf or c_counts[2 * s + 1] < min_leaf:
                next_frontier[n_next] = node  # passes whole to the next level's cut
                n_next += 1
                continue
            place[s] = n_cut
            n_cut += 1
            left, right = n_nodes, n_nodes + 1
            n_nodes += 2
            _add_node(
                left, c_counts[2 * s], c_sums[2 * s, 0], c_squares[2 * s],
                count, node_sum, impurity,
            )  # fmt: skip
            _add_node(
                right, c_counts[2 * s + 1], c_sums[2 * s + 1, 0], c_squares[2 * s + 1],
                count, node_sum, impurity,
            )  # fmt: skip
            if l2 == 0.0:
                node_gain = max(impurity[node] - impurity[left] - impurity[right], 0.0)
            else:
                node_gain = (
                    (node_sum[left] * node_sum[left]) / (count[left] + l2)
                    + (node_sum[right] * node_sum[right]) / (count[right] + l2)
                    - (node_sum[node] * node_sum[node]) / (count[node] + l2)
                )
            feature_of[node], threshold_of[node] = feature, threshold
            left_of[node], right_of[node], gain_of[node] = left, right, node_gain
            for child in (left, right):
                if count[child] >= 2 * min_leaf and impurity[child] > floor:
                    next_frontier[n_next] = child
                    n_next += 1
        frontier = np.sort(next_frontier[:n_next])
        slot_of = np.full(n_nodes, -1, dtype=np.int32)
        for s in range(frontier.shape[0]):
            slot_of[frontier[s]] = s
        move_rows(
            codes_f, last_bin, place, first_child, slot_of, node_of, slot, no_members, no_members,
            no_members,
        )  # fmt: skip

    leaf = np.full(n_nodes, -1, dtype=np.int32)
    n_leaves = 0
    for node in range(n_nodes):
        if left_of[node] < 0:
            leaf[node] = n_leaves
            n_leaves += 1
    value = np.empty((n_leaves, 1))
    for node in range(n_nodes):
        if left_of[node] < 0:
            value[leaf[node], 0] = node_sum[node] / (count[node] + l2)
    if row_leaf.shape[0] > 0:
        for t in range(n_fit):
            row_leaf[samples[t]] = leaf[node_of[t]]
    return (
        feature_of[:n_nodes].copy(),
        threshold_of[:n_nodes].copy(),
        left_of[:n_nodes].copy(),
        right_of[:n_nodes].copy(),
        leaf,
        count[:n_nodes].astype(np.int32),
        impurity[:n_nodes].copy(),
        gain_of[:n_nodes].copy(),
        value,
    )
