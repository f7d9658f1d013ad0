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

from ._histogram import compiled_with_slp, use_row_wise
from .splitter import (
    FEATURE_THRESHOLD,
    beats,
    midpoint_threshold,
    penalised_gain,
    threshold_after_bin,
)

#: The numba signature of the two level builds, feature by feature and row by row (codes
#: (p, n) or (n, p), slot, slot_lo, members, search rows, bin offsets, features, histogram).
LEVEL_BUILD_SIGNATURE = (
    "void(uint8[:, ::1], int32[::1], int64, int32[::1], float64[:, ::1], int64[::1], int32[::1],"
    " float64[:, :, ::1])"
)


@compiled_with_slp(LEVEL_BUILD_SIGNATURE)
def build_level(
    codes: np.ndarray,
    slot: np.ndarray,
    slot_lo: int,
    members: np.ndarray,
    rows: np.ndarray,
    bin_offset: np.ndarray,
    features: np.ndarray,
    hist: np.ndarray,
) -> None:  # pragma: no cover - jit
    """Histograms of a chunk of a level's nodes (slots slot_lo .. slot_lo + S - 1, S =
    hist.shape[1]) for ``features``: for every fitted row t of such a slot, hist[b, s, :k]
    += rows[t] and hist[b, s, k] += 1 at b = its bin, s = slot[t] - slot_lo. ``codes``
    (p, n_fit) the bins of the fitted rows, ``rows`` (n_fit, k) their search residuals.
    Overwrites those features' bins of hist (B, S, k + 1). O(n_fit len(features) k).

    ``members``, when not empty, lists the rows to visit (increasing, a superset of those
    rows; :func:`move_rows` lists them): O(len(members) len(features) k), for the children built
    by a subtraction, whose rows are scattered: testing every row's slot there mispredicts
    half the time (microbenchmark, 64,000 rows, p = 50, k = 8, half the rows: 18 ms
    tested, 11 ms listed; all rows: 16 ms either way). With one column the test is
    cheaper than the list (0.48 against 0.58 ms at 36,000 rows, p = 8).

    Indices are unsigned and each row's cell offset inside a bin is computed once, so the
    inner loop is a load of the row's bin and its adds; the columns go four at a time, all
    four loads before the four stores, which the SLP vectorizer makes one 256-bit
    load-add-store (as the best-first histogram kernel). The row loop is written once for
    both ways of visiting rows: a helper for its body measured 1.3x slower inlined, 3.5x
    not.
    """
    n_fit, k = rows.shape
    width = hist.shape[1]
    cell = k + 1
    stride = np.uint64(width * cell)  # one bin: S cells
    offset = np.empty(n_fit, dtype=np.int64)  # row's cell inside its bin, -1 outside the chunk
    for row in range(n_fit):
        s = np.uint64(np.int64(slot[row]) - slot_lo)
        offset[row] = np.int64(s) * cell if s < np.uint64(width) else -1
    flat = hist.reshape(-1)
    values = rows.reshape(-1)
    k_groups = np.uint64(k - k % 4)
    one, two, three, four = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
    uk = np.uint64(k)
    n_members = members.shape[0]
    n_steps = n_members if n_members > 0 else n_fit
    for f in features:
        hist[bin_offset[f] : bin_offset[f + 1]] = 0.0
        base = np.uint64(bin_offset[f]) * stride
        codes_f = codes[f]
        for i in range(n_steps):
            t = np.uint64(members[i]) if n_members > 0 else np.uint64(i)
            o = offset[t]
            if o < 0:
                continue
            j = base + np.uint64(codes_f[t]) * stride + np.uint64(o)
            if k == 1:
                flat[j] += values[t]
                flat[j + one] += 1.0
                continue
            r = t * uk
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


#: build_level's ``members`` when the rows are tested, not listed.
NO_MEMBERS = np.empty(0, dtype=np.int32)
#: Largest level histogram (bytes of its sums, B x S x (k + 1) float64) built row by row
#: (:func:`build_level_rows`): a row's adds then land in cells spread over the whole
#: histogram, which must stay in cache. Microbenchmark, 64,000 rows, p = 50, 255 bins, one
#: thread: k = 8, 1-8 slots (up to 7.3 MB): 1.09-1.42x faster than :func:`build_level`; 16
#: slots (14.7 MB): 2.7x slower; k = 4, up to 16 slots (8.2 MB): 1.45-2.3x faster, 32 slots
#: (16 MB): 2.3x slower.
ROW_WISE_LEVEL_BYTES = 8 << 20


def use_row_wise_level(n_bins: int, n_slots: int, k: int) -> bool:
    """Whether a level histogram of ``n_slots`` slots and k search columns is built row by
    row (:func:`build_level_rows`): k is 4 or 8 (:func:`~._histogram.use_row_wise`) and
    its sums fit ROW_WISE_LEVEL_BYTES."""
    return use_row_wise(k) and 8 * n_bins * n_slots * (k + 1) <= ROW_WISE_LEVEL_BYTES


@compiled_with_slp(LEVEL_BUILD_SIGNATURE)
def build_level_rows(
    row_codes: np.ndarray,
    slot: np.ndarray,
    slot_lo: int,
    members: np.ndarray,
    rows: np.ndarray,
    bin_offset: np.ndarray,
    features: np.ndarray,
    hist: np.ndarray,
) -> None:  # pragma: no cover - jit
    """:func:`build_level` row by row (LightGBM's row-wise histograms), for k = 4 or 8
    search columns: a row's k values are loaded once into registers and added to its cell
    of every feature of ``features``, from ``row_codes`` (n_fit, p), the fitted rows' codes
    as one contiguous run per row (:func:`~._histogram.row_major_codes`). Every cell still
    adds its rows in row order, so the histogram is :func:`build_level`'s bit for bit;
    the k columns are read once per row instead of once per feature (chosen by
    :func:`use_row_wise_level`). Same arguments otherwise. O(n_fit len(features) k).
    """
    n_fit, k = rows.shape
    width = hist.shape[1]
    cell = k + 1
    stride = np.uint64(width * cell)  # one bin: S cells
    flat = hist.reshape(-1)
    values = rows.reshape(-1)
    n_features = features.shape[0]
    base = np.empty(n_features, dtype=np.uint64)  # each feature's first cell
    for q in range(n_features):
        f = features[q]
        hist[bin_offset[f] : bin_offset[f + 1]] = 0.0
        base[q] = np.uint64(bin_offset[f]) * stride
    one, two, three, four = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
    five, six, seven = np.uint64(5), np.uint64(6), np.uint64(7)
    uk = np.uint64(k)
    n_members = members.shape[0]
    n_steps = n_members if n_members > 0 else n_fit
    for i in range(n_steps):
        t = np.uint64(members[i]) if n_members > 0 else np.uint64(i)
        s = np.uint64(np.int64(slot[t]) - slot_lo)
        if s >= np.uint64(width):
            continue
        o = s * np.uint64(cell)
        r = t * uk
        a0, a1, a2, a3 = values[r], values[r + one], values[r + two], values[r + three]
        if k == 8:
            a4, a5 = values[r + four], values[r + five]
            a6, a7 = values[r + six], values[r + seven]
            for q in range(n_features):
                j = base[q] + np.uint64(row_codes[t, features[q]]) * stride + o
                h0, h1, h2, h3 = flat[j], flat[j + one], flat[j + two], flat[j + three]
                h4, h5, h6, h7 = flat[j + four], flat[j + five], flat[j + six], flat[j + seven]
                flat[j] = h0 + a0
                flat[j + one] = h1 + a1
                flat[j + two] = h2 + a2
                flat[j + three] = h3 + a3
                flat[j + four] = h4 + a4
                flat[j + five] = h5 + a5
                flat[j + six] = h6 + a6
                flat[j + seven] = h7 + a7
                flat[j + uk] += 1.0
        else:
            for q in range(n_features):
                j = base[q] + np.uint64(row_codes[t, features[q]]) * stride + o
                h0, h1, h2, h3 = flat[j], flat[j + one], flat[j + two], flat[j + three]
                flat[j] = h0 + a0
                flat[j + one] = h1 + a1
                flat[j + two] = h2 + a2
                flat[j + three] = h3 + a3
                flat[j + uk] += 1.0


@njit(cache=True, nogil=True)
def derive_level(
    parent: np.ndarray,
    built: np.ndarray,
    from_parent: np.ndarray,
    from_built: np.ndarray,
    bin_offset: np.ndarray,
    features: np.ndarray,
    hist: np.ndarray,
) -> None:  # pragma: no cover - jit
    """A level's histogram from the previous level's (``parent``) and the built children's
    (``built``), for ``features``: slot s of ``hist`` is parent[:, from_parent[s]] minus
    built[:, from_built[s]] (a child whose sibling was built), built[:, from_built[s]]
    (a built child: from_parent[s] = -1) or parent[:, from_parent[s]] (a node that passed
    the previous cut whole: from_built[s] = -1). A cell whose count comes out 0 gets sums
    of exactly 0, as a built empty cell. Each cell is computed by one subtraction whatever
    the threads (which split the features). O(len(features) B_f S k)."""
    n_slots, cell = hist.shape[1], hist.shape[2]
    k = cell - 1
    for f in features:
        for b in range(bin_offset[f], bin_offset[f + 1]):
            for s in range(n_slots):
                p, q = from_parent[s], from_built[s]
                if p < 0:
                    for c in range(cell):
                        hist[b, s, c] = built[b, q, c]
                elif q < 0:
                    for c in range(cell):
                        hist[b, s, c] = parent[b, p, c]
                elif parent[b, p, k] == built[b, q, k]:
                    for c in range(cell):
                        hist[b, s, c] = 0.0
                else:
                    for c in range(cell):
                        hist[b, s, c] = parent[b, p, c] - built[b, q, c]


#: Histogram subtraction pays at a level when the rows it saves from the build (times the
#: candidate features) exceed this many times the cells it derives (bins x the level's
#: nodes): a derived cell reads two cells and writes one, where building it costs the
#: adds of its rows; deep one-output levels have more cells than rows and build directly.
SUBTRACTION_MIN_SAVING = 2.0


@njit(cache=True, nogil=True)
def subtraction_plan(
    parent_frontier: np.ndarray,
    place: np.ndarray,
    first_child: int,
    count: np.ndarray,
    slot_of: np.ndarray,
    n_slots: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:  # pragma: no cover - jit
    """How a level's histogram derives from its parents' (:func:`derive_level`) after the
    previous level's cut: of each cut node's two children (place[s] = j >= 0: nodes
    first_child + 2 j, + 1) with an open one (slot_of[node] >= 0), the one with fewer rows
    (``count``; the left on a tie) is built, the other is its parent minus it; a node that
    passed whole (place[s] = -1) keeps its parent histogram. Returns (built_slot of every
    node, -1 unless built; from_parent, from_built of the ``n_slots`` open slots; the number
    of built children; their rows). O(nodes)."""
    built_slot = np.full(count.shape[0], -1, dtype=np.int32)
    from_parent = np.full(n_slots, -1, dtype=np.int32)
    from_built = np.full(n_slots, -1, dtype=np.int32)
    n_built = 0
    built_rows = 0
    for s in range(parent_frontier.shape[0]):
        j = place[s]
        if j < 0:
            from_parent[slot_of[parent_frontier[s]]] = s
            continue
        left = first_child + 2 * j
        right = left + 1
        if slot_of[left] < 0 and slot_of[right] < 0:
            continue
        small, other = (left, right) if count[left] <= count[right] else (right, left)
        built_slot[small] = n_built
        built_rows += count[small]
        if slot_of[small] >= 0:
            from_built[slot_of[small]] = n_built
        if slot_of[other] >= 0:
            from_parent[slot_of[other]] = s
            from_built[slot_of[other]] = n_built
        n_built += 1
    return built_slot, from_parent, from_built, n_built, built_rows


@njit(cache=True, nogil=True)
def subtraction_pays(
    level_rows: int, built_rows: int, n_features: int, feature_bins: int, n_slots: int
) -> bool:  # pragma: no cover - jit
    """Whether deriving a level of ``n_slots`` nodes holding ``level_rows`` rows, after
    building children of ``built_rows`` rows, costs less than building it: the rows saved
    times the features against SUBTRACTION_MIN_SAVING times the cells derived
    (``feature_bins``: the candidate features' bins)."""
    saved = (level_rows - built_rows) * n_features
    return saved > SUBTRACTION_MIN_SAVING * feature_bins * n_slots


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
def best_level_cut(
    gain: np.ndarray,
    cut: np.ndarray,
    rows_in_bin: np.ndarray,
    bin_offset: np.ndarray,
    bin_min: np.ndarray,
    bin_max: np.ndarray,
    features: np.ndarray,
) -> tuple[int, int, float, float]:  # pragma: no cover - jit
    """The level's cut (feature, last left bin of the feature, threshold, summed gain) from
    :func:`add_level_gains`' sums over all the level's nodes: the highest summed gain over
    cuts after a bin holding rows of the level (other cuts repeat a partition) that cut at
    least one node; ties go to the first feature, then the leftmost cut; feature -1 when no
    node can be cut. The threshold lies midway between the largest value of the last left
    bin and the smallest of the next bin holding rows of the level. O(B)."""
    best_f, best_bin, best_gain = -1, -1, 0.0
    for f in features:
        for b in range(bin_offset[f], bin_offset[f + 1] - 1):
            if rows_in_bin[b] == 0 or not cut[b]:
                continue
            if best_f < 0 or beats(gain[b], best_gain):
                best_f, best_bin, best_gain = f, b, gain[b]
    threshold = 0.0
    if best_f >= 0:
        threshold = threshold_after_bin(rows_in_bin, bin_min, bin_max, best_bin)
        best_bin -= bin_offset[best_f]
    return best_f, best_bin, threshold, best_gain


@njit(cache=True, nogil=True)
def _slot_gain(
    S: np.ndarray, s: int, nl: int, n: int, mu: np.ndarray, mu_sq: float, l2: float
) -> float:  # pragma: no cover - jit
    """One node's gain under a cut, as :func:`add_level_gains` takes it: from the left rows'
    search sum S[s] (not centred), nl of the node's n rows left and its search mean mu[s]."""
    acc = 0.0
    dot = 0.0
    for c in range(S.shape[1]):
        d = S[s, c] - nl * mu[s, c]
        acc += d * d
        dot += d * mu[s, c]
    if l2 > 0.0:
        return penalised_gain(acc, dot, mu_sq, nl, n - nl, l2)
    return acc * n / (nl * (n - nl))


@njit(cache=True, nogil=True)
def refine_level_cut(
    codes_f: np.ndarray,
    values: np.ndarray,
    feature: int,
    samples: np.ndarray,
    slot: np.ndarray,
    search_rows: np.ndarray,
    node_n: np.ndarray,
    node_mu: np.ndarray,
    hist: np.ndarray,
    rows_in_bin: np.ndarray,
    bin_offset: np.ndarray,
    last_bin: int,
    min_leaf: int,
    l2: float,
    side: np.ndarray,
) -> tuple[float, float]:  # pragma: no cover - jit
    """The best exact cut of the level's ``feature`` inside the two bins around its chosen
    edge (the oblivious form of :func:`~okcore.trees._histogram.refine_split`): (threshold,
    summed gain).

    ``last_bin`` is the level's last left bin of the feature (its own numbering, as
    ``codes_f``, the fitted rows' bins of the feature) and b' the next bin holding rows of
    the level (``rows_in_bin``, over the flat bin axis of ``bin_offset``). The open nodes'
    left sums start from their rows in the bins below ``last_bin``, read from the level's
    histogram ``hist`` (B, L, k + 1) when it holds all L open nodes (else, e.g. empty, from
    the rows); the level's rows in
    ``last_bin`` and b' are sorted by raw value (``values`` (p, N) read at samples[t]) and
    every cut between consecutive distinct values (more than FEATURE_THRESHOLD apart) is
    scored by the level gain of :func:`add_level_gains`: the sum of the cut nodes' gains
    (a node is cut when both children keep ``min_leaf`` rows). The chosen edge is one of
    these cuts, so the gain never drops (up to the tie margin); ties
    (:func:`~okcore.trees.splitter.beats`) keep the leftmost cut. The threshold is the
    exact search's midpoint (:func:`~okcore.trees.splitter.midpoint_threshold`).

    ``side`` (uint8, n_fit) receives ``codes_f`` with the rows of the two bins recoded to
    ``last_bin`` (value <= threshold) or b': :func:`child_statistics` and
    :func:`move_rows` with ``last_bin`` then route the rows as the threshold does.
    O(n_fit) to find the rows (O(n_fit k) without the histogram), O(B_f L k) for the left
    sums and O(m log m + m k + L k) for the m rows of the two bins and L open nodes (each
    cut rescores only the nodes whose rows moved).
    """
    n_slots, k = node_mu.shape
    base = bin_offset[feature]
    nxt = base + last_bin + 1
    while rows_in_bin[nxt] == 0:
        nxt += 1
    next_bin = nxt - base
    # the rows below the two bins start on the left: their sums from the level's histogram
    # when it holds every open node (O(B_f L k)), else from the rows (O(n k))
    S = np.zeros((n_slots, k))
    n_left = np.zeros(n_slots, dtype=np.int64)
    if hist.shape[1] == n_slots:
        for b in range(base, base + last_bin):
            for s in range(n_slots):
                n_left[s] += np.int64(hist[b, s, k])
                for c in range(k):
                    S[s, c] += hist[b, s, c]
    else:
        for t in range(slot.shape[0]):
            s = slot[t]
            if s >= 0 and codes_f[t] < last_bin:
                n_left[s] += 1
                for c in range(k):
                    S[s, c] += search_rows[t, c]
    m = rows_in_bin[base + last_bin] + rows_in_bin[nxt]  # the level's rows in the two bins
    rows = np.empty(m, dtype=np.int64)
    x = np.empty(m)
    j = 0
    for t in range(slot.shape[0]):
        code = codes_f[t]
        if (code == last_bin or code == next_bin) and slot[t] >= 0:
            rows[j] = t
            x[j] = values[feature, samples[t]]
            j += 1
    order = np.argsort(x, kind="mergesort")
    mu_sq = np.zeros(n_slots)
    for s in range(n_slots):
        for c in range(k):
            mu_sq[s] += node_mu[s, c] * node_mu[s, c]
    # each cuttable node's gain at the current cut and their sum, updated for the nodes
    # whose rows moved since the last cut scored: O(k) per row and per cut, not O(L k)
    slot_gain = np.zeros(n_slots)
    cuttable = np.zeros(n_slots, dtype=np.bool_)
    total, n_cuttable = 0.0, 0
    for s in range(n_slots):
        if n_left[s] >= min_leaf and node_n[s] - n_left[s] >= min_leaf:
            slot_gain[s] = _slot_gain(S, s, n_left[s], node_n[s], node_mu, mu_sq[s], l2)
            cuttable[s] = True
            total += slot_gain[s]
            n_cuttable += 1
    moved = np.zeros(n_slots, dtype=np.bool_)
    moved_slots = np.empty(n_slots, dtype=np.int64)
    n_moved = 0
    best_pos, best_gain = -1, 0.0
    for j in range(m - 1):
        t = rows[order[j]]
        s = slot[t]
        n_left[s] += 1
        for c in range(k):
            S[s, c] += search_rows[t, c]
        if not moved[s]:
            moved[s] = True
            moved_slots[n_moved] = s
            n_moved += 1
        if x[order[j + 1]] <= x[order[j]] + FEATURE_THRESHOLD:
            continue
        for i in range(n_moved):
            s = moved_slots[i]
            moved[s] = False
            if cuttable[s]:
                total -= slot_gain[s]
                n_cuttable -= 1
            cuttable[s] = n_left[s] >= min_leaf and node_n[s] - n_left[s] >= min_leaf
            if cuttable[s]:
                slot_gain[s] = _slot_gain(S, s, n_left[s], node_n[s], node_mu, mu_sq[s], l2)
                total += slot_gain[s]
                n_cuttable += 1
        n_moved = 0
        if n_cuttable > 0 and (best_pos < 0 or beats(total, best_gain)):
            best_pos, best_gain = j, total
    side[:] = codes_f
    for j in range(m):
        side[rows[order[j]]] = last_bin if j <= best_pos else next_bin
    return midpoint_threshold(x[order[best_pos]], x[order[best_pos + 1]]), best_gain


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
    fill_row_sq: bool,
) -> None:  # pragma: no cover - jit
    """Statistics of both children of every open node under the level's cut (bins <=
    ``last_bin`` of the feature whose fitted rows' bins are ``codes_f`` go left), per block
    of ``block`` fitted rows: row t of slot s >= 0 goes to group g = 2 s + (0 left, 1
    right), and for every block j of block_lo .. block_hi - 1 (rows j block .. (j + 1) block
    - 1) counts[j, g] = its rows in g, sums[j, g] = the sum of their rows R[samples[t]] and
    squares[j, g] = of their row_sq[t], each taken in row order. Overwrites those blocks.
    ``fill_row_sq`` (the root's pass, every row in a slot): row_sq[t] is first computed,
    ||R[samples[t]]||^2 with the columns summed in order as :func:`row_squares`, from the
    values the row's sum reads anyway (a pass over R less per tree).
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
            if fill_row_sq:
                norm = 0.0
                for c in range(r):
                    x = R[i, c]
                    acc[g, c] += x
                    norm += x * x
                row_sq[t] = norm
            else:
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
    built_slot: np.ndarray,
    row_slot: np.ndarray,
    members: np.ndarray,
) -> int:  # pragma: no cover - jit
    """Rows of the j-th cut node (place[slot] = j >= 0) move to its child first_child + 2 j
    (left, bins <= ``last_bin``) or + 2 j + 1 (right); every row of an open node then takes
    its node's next slot, slot_of[node] (-1: a final leaf). O(n).

    When ``built_slot`` is not empty (the next level builds the children of
    :func:`subtraction_plan` and derives their siblings), the same pass lists them:
    row_slot[t] = built_slot of row t's node (-1: not built) and members[:m] the rows with
    one, increasing (:func:`build_level`'s ``slot`` and ``members``); returns m (else 0)."""
    listing = built_slot.shape[0] > 0
    n_members = 0
    for t in range(slot.shape[0]):
        s = slot[t]
        if s >= 0:
            j = place[s]
            if j >= 0:
                node_of[t] = first_child + 2 * j + np.int64(codes_f[t] > last_bin)
            slot[t] = slot_of[node_of[t]]
        if listing:
            b = built_slot[node_of[t]]
            row_slot[t] = b
            if b >= 0:
                members[n_members] = t
                n_members += 1
    return n_members
