"""Compiled kernels of the oblivious level search (:mod:`okcore.trees.oblivious`).

Rows stay in the fitted order for the whole tree; each row carries its node's slot (its
node's place among the level's open nodes, -1 for rows of final leaves), so a level needs no
partition of the rows, and every histogram cell sums its rows in the same order whatever the
slots, the chunks of slots or the threads (results do not depend on them).

Histogram layout: (B, S, k + 1) per chunk of S slots, the k search columns of a (bin, slot)
cell followed by its row count (a float: exact below 2^53), so one row's update touches one
cell (16 bytes for one output) instead of a sum cell and a separate count; a feature's block
(B_f, S, k + 1) is built in one sequential pass over the rows.
The build and the gain scan are separate kernels: the build is compiled with LLVM's SLP
vectorizer, the scan without it, as before, so that its float sums keep their order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._histogram import compiled_with_slp
from .splitter import penalised_gain


@compiled_with_slp(
    "void(uint8[:, ::1], int32[::1], int64, float64[:, ::1], int64[::1], int32[::1],"
    " float64[:, :, ::1])"
)
def build_level(
    codes: np.ndarray,
    slot: np.ndarray,
    slot_lo: int,
    rows: np.ndarray,
    bin_offset: np.ndarray,
    features: np.ndarray,
    hist: np.ndarray,
) -> None:  # pragma: no cover - jit
    """Histograms of one chunk of a level's nodes (slots slot_lo .. slot_lo + S - 1, S =
    hist.shape[1]) for ``features``: for every fitted row t of such a slot, hist[b, s, :k]
    += rows[t] and hist[b, s, k] += 1 at b = its bin, s = slot[t] - slot_lo. ``codes``
    (p, n_fit) the bins of the fitted rows, ``rows`` (n_fit, k) their search residuals.
    Overwrites those features' bins of hist (B, S, k + 1). O(n_fit len(features) k).

    Indices are unsigned and each row's cell offset inside a bin is computed once, so the
    inner loop is a load of the row's bin and its adds; the columns go four at a time, all
    four loads before the four stores, which the SLP vectorizer makes one 256-bit
    load-add-store (as the best-first histogram kernel).
    """
    n_fit, k = rows.shape
    width = hist.shape[1]
    cell = k + 1
    stride = np.uint64(width * cell)  # one bin: S cells
    offset = np.empty(n_fit, dtype=np.int64)  # row's cell inside its bin, -1 outside the chunk
    for t in range(n_fit):
        s = np.uint64(np.int64(slot[t]) - slot_lo)
        offset[t] = np.int64(s) * cell if s < np.uint64(width) else -1
    flat = hist.reshape(-1)
    values = rows.reshape(-1)
    k_groups = np.uint64(k - k % 4)
    one, two, three, four = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
    uk = np.uint64(k)
    for f in features:
        hist[bin_offset[f] : bin_offset[f + 1]] = 0.0
        base = np.uint64(bin_offset[f]) * stride
        codes_f = codes[f]
        if k == 1:  # one output: no column loop
            for t in range(n_fit):
                o = offset[t]
                if o < 0:
                    continue
                j = base + np.uint64(codes_f[t]) * stride + np.uint64(o)
                flat[j] += values[t]
                flat[j + one] += 1.0
            continue
        for t in range(n_fit):
            o = offset[t]
            if o < 0:
                continue
            j = base + np.uint64(codes_f[t]) * stride + np.uint64(o)
            r = np.uint64(t) * uk
            c = np.uint64(0)
            while c < k_groups:
                a0, a1 = values[r + c], values[r + c + one]
                a2, a3 = values[r + c + two], values[r + c + three]
                h0, h1 = flat[j + c], flat[j + c + one]
                h2, h3 = flat[j + c + two], flat[j + c + three]
                flat[j + c] = h0 + a0
                flat[j + c + one] = h1 + a1
                flat[j + c + two] = h2 + a2
                flat[j + c + three] = h3 + a3
                c += four
            while c < uk:
                flat[j + c] += values[r + c]
                c += one
            flat[j + uk] += 1.0


@njit(cache=True, nogil=True)
def slot_totals(
    slot: np.ndarray, slot_lo: int, rows: np.ndarray, totals: np.ndarray
) -> None:  # pragma: no cover - jit
    """totals[s, :k] = the sum of the search rows of slot slot_lo + s (in row order) and
    totals[s, k] their count, for the S = totals.shape[0] slots of a chunk. O(n k)."""
    n_fit, k = rows.shape
    width = totals.shape[0]
    totals[:] = 0.0
    for t in range(n_fit):
        s = np.int64(slot[t]) - slot_lo
        if s < 0 or s >= width:
            continue
        for c in range(k):
            totals[s, c] += rows[t, c]
        totals[s, k] += 1.0


@njit(cache=True, nogil=True)
def build_level_sparse(
    codes: np.ndarray,
    slot: np.ndarray,
    slot_lo: int,
    rows: np.ndarray,
    bin_offset: np.ndarray,
    features: np.ndarray,
    common: np.ndarray,
    outside_ptr: np.ndarray,
    outside_rows: np.ndarray,
    totals: np.ndarray,
    hist: np.ndarray,
) -> None:  # pragma: no cover - jit
    """:func:`build_level` for features with a common bin (:func:`common_bin_layout`):
    only the rows outside the common bin are added, in row order, to their (bin, slot)
    cells; the common bin's cell of each slot is the slot's total (:func:`slot_totals`)
    minus the feature's other bins (its count exact, its sums equal to the direct sum up
    to rounding: the same for any threads or chunks). O(nnz_f k + B_f S k) per feature
    instead of O(n k)."""
    k = rows.shape[1]
    width = hist.shape[1]
    for f in features:
        lo, hi = bin_offset[f], bin_offset[f + 1]
        hist[lo:hi] = 0.0
        codes_f = codes[f]
        for j in range(outside_ptr[f], outside_ptr[f + 1]):
            t = outside_rows[j]
            s = np.int64(slot[t]) - slot_lo
            if s < 0 or s >= width:
                continue
            b = lo + np.int64(codes_f[t])
            for c in range(k):
                hist[b, s, c] += rows[t, c]
            hist[b, s, k] += 1.0
        top = common[f]
        for node_slot in range(width):
            for c in range(k + 1):
                acc = totals[node_slot, c]
                for other in range(lo, hi):
                    if other != top:
                        acc -= hist[other, node_slot, c]
                hist[top, node_slot, c] = acc


@njit(cache=True, nogil=True, fastmath=True)
def add_level_gains(
    hist: np.ndarray,
    bin_offset: np.ndarray,
    features: np.ndarray,
    node_n: np.ndarray,
    node_mu: np.ndarray,
    min_leaf: int,
    l2: float,
    gain: np.ndarray,
    cut: np.ndarray,
    rows_in_bin: np.ndarray,
) -> None:  # pragma: no cover - jit
    """Add, for every cut after bin b of a feature of ``features`` (bins <= b go left), the
    gains of the nodes of one :func:`build_level` histogram (slots s with node_n[s] rows and
    search mean node_mu[s]) to gain[b]: each node's ||S_L - n_L mu||^2 n / (n_L n_R) (the
    penalised gain with ``l2`` > 0) when both its children keep ``min_leaf`` rows (then
    cut[b] = True), nothing otherwise; rows_in_bin[b] counts the level's rows in bin b.
    Each feature writes only its own bins. O(len(features) B_f S k)."""
    n_slots, k = hist.shape[1], hist.shape[2] - 1
    mu_sq = np.zeros(n_slots)
    for s in range(n_slots):
        for c in range(k):
            mu_sq[s] += node_mu[s, c] * node_mu[s, c]
    S = np.empty((n_slots, k))
    n_left = np.empty(n_slots, dtype=np.int64)
    for f in features:
        S[:] = 0.0
        n_left[:] = 0
        for b in range(bin_offset[f], bin_offset[f + 1]):
            for s in range(n_slots):
                m = np.int64(hist[b, s, k])
                if m == 0:
                    continue
                rows_in_bin[b] += m
                n_left[s] += m
                for c in range(k):
                    S[s, c] += hist[b, s, c]
            if b == bin_offset[f + 1] - 1:
                break  # the last bin: nothing goes right
            total = 0.0
            for s in range(n_slots):
                nl = n_left[s]
                nr = node_n[s] - nl
                if nl < min_leaf or nr < min_leaf:
                    continue
                acc = 0.0
                dot = 0.0
                for c in range(k):
                    d = S[s, c] - nl * node_mu[s, c]
                    acc += d * d
                    dot += d * node_mu[s, c]
                if l2 > 0.0:
                    total += penalised_gain(acc, dot, mu_sq[s], nl, nr, l2)
                else:
                    total += acc * node_n[s] / (nl * nr)
                cut[b] = True
            gain[b] += total


@njit(cache=True, nogil=True)
def row_squares(
    samples: np.ndarray, lo: int, hi: int, R: np.ndarray, out: np.ndarray
) -> None:  # pragma: no cover - jit
    """out[t] = ||R[samples[t]]||^2 (columns summed in order) for t in lo .. hi - 1. O(n r)."""
    for t in range(lo, hi):
        i = samples[t]
        acc = 0.0
        for c in range(R.shape[1]):
            x = R[i, c]
            acc += x * x
        out[t] = acc


@njit(cache=True, nogil=True)
def child_statistics(
    codes_f: np.ndarray,
    last_bin: int,
    slot: np.ndarray,
    samples: np.ndarray,
    R: np.ndarray,
    row_sq: np.ndarray,
    block: int,
    block_lo: int,
    block_hi: int,
    counts: np.ndarray,
    sums: np.ndarray,
    squares: np.ndarray,
) -> None:  # pragma: no cover - jit
    """Statistics of both children of every open node under the level's cut (bins <=
    ``last_bin`` of the feature whose fitted rows' bins are ``codes_f`` go left), per block
    of ``block`` fitted rows: row t of slot s >= 0 goes to group g = 2 s + (0 left, 1
    right), and for every block j of block_lo .. block_hi - 1 (rows j block .. (j + 1) block
    - 1) counts[j, g] = its rows in g, sums[j, g] = the sum of their rows R[samples[t]] and
    squares[j, g] = of their row_sq[t], each taken in row order. Overwrites those blocks.
    O((rows of the blocks) r).

    Blocks of rows rather than R's columns split the work between threads: each thread
    reads only its rows (a column split made every thread walk every row, and its half
    rows ran slower than whole rows). The blocks are fixed by ``block``, not by the
    threads, and :func:`add_blocks` adds them in block order, so the numbers do not depend
    on the threads. A block's sums are taken in arrays of this call and copied out at its
    end (no cache line of the outputs is written by two threads at once). The side is
    arithmetic, not a branch (a coin flip per row: a branch on it mispredicts half the
    time)."""
    n_fit, r = slot.shape[0], R.shape[1]
    n_groups = sums.shape[1]
    acc = np.empty((n_groups, r))
    n_rows = np.empty(n_groups, dtype=np.int64)
    sq = np.empty(n_groups)
    for j in range(block_lo, block_hi):
        acc[:] = 0.0
        n_rows[:] = 0
        sq[:] = 0.0
        for t in range(j * block, min((j + 1) * block, n_fit)):
            s = slot[t]
            if s < 0:
                continue
            g = 2 * s + np.int64(codes_f[t] > last_bin)
            i = samples[t]
            for c in range(r):
                acc[g, c] += R[i, c]
            n_rows[g] += 1
            sq[g] += row_sq[t]
        sums[j] = acc
        counts[j] = n_rows
        squares[j] = sq


@njit(cache=True, nogil=True)
def add_blocks(blocks: np.ndarray) -> np.ndarray:  # pragma: no cover - jit
    """The sum over the first axis of ``blocks`` (n_blocks, ...), added in block order:
    blocks[0] + blocks[1] + ... (one block: itself, bit for bit). O(blocks.size)."""
    total = blocks[0].copy()
    flat = total.reshape(-1)
    for j in range(1, blocks.shape[0]):
        flat += blocks[j].reshape(-1)
    return total


@njit(cache=True, nogil=True)
def child_statistics_one_output(
    codes_f: np.ndarray,
    last_bin: int,
    slot: np.ndarray,
    samples: np.ndarray,
    R: np.ndarray,
    row_sq: np.ndarray,
    counts: np.ndarray,
    sums: np.ndarray,
    squares: np.ndarray,
) -> None:  # pragma: no cover - jit
    """:func:`child_statistics` of all the columns of an R with one column, without the
    column loop (half the time; a separate kernel, as a branch to it inside
    :func:`child_statistics` made the compiled column loop slower). O(n_fit)."""
    for t in range(slot.shape[0]):
        s = slot[t]
        if s < 0:
            continue
        g = 2 * s + np.int64(codes_f[t] > last_bin)
        sums[g, 0] += R[samples[t], 0]
        counts[g] += 1
        squares[g] += row_sq[t]


@njit(cache=True, nogil=True)
def move_rows(
    codes_f: np.ndarray,
    last_bin: int,
    place: np.ndarray,
    first_child: int,
    slot_of: np.ndarray,
    node_of: np.ndarray,
    slot: np.ndarray,
) -> None:  # pragma: no cover - jit
    """Rows of the j-th cut node (place[slot] = j >= 0) move to its child first_child + 2 j
    (left, bins <= ``last_bin``) or + 2 j + 1 (right); every row of an open node then takes
    its node's next slot, slot_of[node] (-1: a final leaf). O(n)."""
    for t in range(slot.shape[0]):
        s = slot[t]
        if s < 0:
            continue
        j = place[s]
        if j >= 0:
            node_of[t] = first_child + 2 * j + np.int64(codes_f[t] > last_bin)
        slot[t] = slot_of[node_of[t]]
