"""Compiled kernels of the oblivious level search (:mod:`okcore.trees.oblivious`).

Rows stay in the fitted order for the whole tree; each row carries its node's slot (its
node's place among the level's open nodes, -1 for rows of final leaves), so a level needs no
partition of the rows, and every histogram cell sums its rows in the same order whatever the
slots, the chunks of slots or the threads (results do not depend on them).

Histogram layout: (B, S, k + 1) per chunk of S slots, the k search columns of a (bin, slot)
cell followed by its row count (a float: exact below 2^53), so one row's update touches one
cache line; a feature's block (B_f, S, k + 1) is built in one sequential pass over the rows
and scanned for the level's gains while it is still in cache.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .splitter import penalised_gain


@njit(cache=True, nogil=True, fastmath=True)
def search_level(
    codes: np.ndarray,
    slot: np.ndarray,
    slot_lo: int,
    rows: np.ndarray,
    bin_offset: np.ndarray,
    features: np.ndarray,
    node_n: np.ndarray,
    node_mu: np.ndarray,
    min_leaf: int,
    l2: float,
    hist: np.ndarray,
    gain: np.ndarray,
    cut: np.ndarray,
    rows_in_bin: np.ndarray,
) -> None:  # pragma: no cover - jit
    """Histograms and summed gains of one chunk of a level's nodes, for ``features``.

    Slots slot_lo .. slot_lo + S - 1 (S = hist.shape[1]) with node_n[s] rows and search mean
    node_mu[s] (S, k); ``codes`` (p, n_fit) the bins of the fitted rows, ``rows`` (n_fit, k)
    their search residuals, ``slot`` (n_fit,) their slots. For each feature f: builds its
    bins of ``hist`` (counts and row sums per (bin, slot)), then adds to gain[b], for the cut
    after bin b (bins <= b go left), each node's ||S_L - n_L mu||^2 n / (n_L n_R) (the
    penalised gain with ``l2`` > 0) when both children keep ``min_leaf`` rows (then cut[b] =
    True); rows_in_bin[b] counts the level's rows in bin b. Callers may split ``features``
    between threads: each feature writes only its own bins. O(n_fit len(features) k) builds
    + O(len(features) B_f S k) scans.
    """
    n_fit, k = rows.shape
    width = hist.shape[1]
    mu_sq = np.zeros(width)
    for s in range(width):
        for c in range(k):
            mu_sq[s] += node_mu[s, c] * node_mu[s, c]
    S = np.empty((width, k))
    n_left = np.empty(width, dtype=np.int64)
    for f in features:
        b_lo, b_hi = bin_offset[f], bin_offset[f + 1]
        hist[b_lo:b_hi] = 0.0
        codes_f = codes[f]
        if k == 1:  # one output: the generic column loop costs twice the adds
            for t in range(n_fit):
                s = slot[t] - slot_lo
                if s < 0 or s >= width:
                    continue
                b = b_lo + codes_f[t]
                hist[b, s, 0] += rows[t, 0]
                hist[b, s, 1] += 1.0
        else:
            for t in range(n_fit):
                s = slot[t] - slot_lo
                if s < 0 or s >= width:
                    continue
                b = b_lo + codes_f[t]
                for c in range(k):
                    hist[b, s, c] += rows[t, c]
                hist[b, s, k] += 1.0
        S[:] = 0.0
        n_left[:] = 0
        for b in range(b_lo, b_hi):
            for s in range(width):
                m = np.int64(hist[b, s, k])
                if m == 0:
                    continue
                rows_in_bin[b] += m
                n_left[s] += m
                for c in range(k):
                    S[s, c] += hist[b, s, c]
            if b == b_hi - 1:
                break  # the last bin: nothing goes right
            total = 0.0
            for s in range(width):
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
def group_statistics(
    samples: np.ndarray, group: np.ndarray, n_groups: int, R: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - jit
    """(counts, row sums (G, r), sums of squared row norms) of R's rows samples[t] over the
    groups group[t] in [0, n_groups) (-1: skipped). O(n r)."""
    r = R.shape[1]
    counts = np.zeros(n_groups, dtype=np.int64)
    sums = np.zeros((n_groups, r))
    squares = np.zeros(n_groups)
    for t in range(samples.shape[0]):
        g = group[t]
        if g < 0:
            continue
        _add_row(R, samples[t], g, counts, sums, squares)
    return counts, sums, squares


@njit(cache=True, nogil=True, inline="always")
def _add_row(
    R: np.ndarray, i: int, g: int, counts: np.ndarray, sums: np.ndarray, squares: np.ndarray
) -> None:  # pragma: no cover - jit
    """counts[g] += 1, sums[g] += R[i], squares[g] += ||R[i]||^2 (columns in order)."""
    counts[g] += 1
    acc = 0.0
    for c in range(R.shape[1]):
        x = R[i, c]
        sums[g, c] += x
        acc += x * x
    squares[g] += acc


@njit(cache=True, nogil=True)
def cut_level(
    codes_f: np.ndarray,
    last_bin: int,
    slot: np.ndarray,
    slot_count: np.ndarray,
    min_leaf: int,
    samples: np.ndarray,
    R: np.ndarray,
    node_of: np.ndarray,
    first_child: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - jit
    """Apply the level's cut (bins <= ``last_bin`` of the feature whose fitted rows' bins are
    ``codes_f`` go left) to the open nodes (slots with slot_count[s] rows).

    A node is cut when both children keep ``min_leaf`` rows; the j-th cut node (in slot
    order) gets children first_child + 2 j (left) and + 2 j + 1 (right), and its rows'
    ``node_of`` moves to them. Returns (place (S,): j or -1 for a node passing whole, and
    the children's counts (2 J,), row sums of R (2 J, r) and sums of squared row norms,
    each summed in row order). O(n_fit r).
    """
    n_fit, n_slots = slot.shape[0], slot_count.shape[0]
    n_left = np.zeros(n_slots, dtype=np.int64)
    for t in range(n_fit):
        s = slot[t]
        if s >= 0 and codes_f[t] <= last_bin:
            n_left[s] += 1
    place = np.full(n_slots, -1, dtype=np.int64)
    n_cut = 0
    for s in range(n_slots):
        if n_left[s] >= min_leaf and slot_count[s] - n_left[s] >= min_leaf:
            place[s] = n_cut
            n_cut += 1
    r = R.shape[1]
    counts = np.zeros(2 * n_cut, dtype=np.int64)
    sums = np.zeros((2 * n_cut, r))
    squares = np.zeros(2 * n_cut)
    for t in range(n_fit):
        s = slot[t]
        if s < 0 or place[s] < 0:
            continue
        g = 2 * place[s] + (0 if codes_f[t] <= last_bin else 1)
        _add_row(R, samples[t], g, counts, sums, squares)
        node_of[t] = first_child + g
    return place, counts, sums, squares


@njit(cache=True, nogil=True)
def assign_slots(node_of: np.ndarray, slot_of: np.ndarray, slot: np.ndarray) -> None:
    """slot[t] = slot_of[node_of[t]] (the next level's slots; -1 for final leaves). O(n)."""
    for t in range(node_of.shape[0]):
        slot[t] = slot_of[node_of[t]]
