"""The one-output level search (okcore.trees._one_output_kernels.level_gains_one_output)
against the level loop's kernels: the chunk's histogram (build_level) scanned by
add_level_gains. The trees it grows are pinned to the level loop's in test_oblivious.py
(test_one_output_compiled_tree_equals_the_level_loop) and to saved models in
test_oblivious_reference.py."""

import numpy as np
import pytest

from okcore.trees._oblivious_kernels import NO_MEMBERS, add_level_gains, build_level
from okcore.trees._one_output_kernels import build_slot_block, level_gains_one_output
from okcore.trees.binning import bin_inputs

#: (rows, features, distinct values per feature (None: continuous), slots, slot_lo,
#: min_samples_leaf, lambda)
CASES = [
    (400, 3, None, 1, 0, 1, 0.0),
    (900, 5, None, 8, 0, 3, 0.0),
    (900, 5, None, 8, 0, 3, 30.0),
    (2000, 4, 7, 16, 0, 20, 3.0),  # few values: many empty bins and exact ties
    (2000, 6, None, 64, 0, 20, 30.0),  # deep: most (bin, node) cells empty
    (1500, 4, None, 12, 5, 2, 1.5),  # a chunk of slots: rows of other slots skipped
    (1500, 3, 40, 4, 0, 90, 0.0),  # min_samples_leaf near the nodes' halves
]


def level(n, p, distinct, n_slots, seed):
    """Binned inputs, residuals, and each row's slot (-1 for about 10 % of the rows: final
    leaves), as a level of an oblivious tree has them."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, p))
    if distinct is not None:
        X = np.floor(X * distinct)
    binned = bin_inputs(X, 255)
    values = rng.standard_normal(n) + X[:, 0]
    slot = rng.integers(0, n_slots + 3, n).astype(np.int32)
    slot[rng.random(n) < 0.1] = -1
    return binned, values, slot


@pytest.mark.parametrize(("n", "p", "distinct", "width", "lo", "min_leaf", "l2"), CASES)
def test_level_gains_equal_the_level_loops_histogram_scan(n, p, distinct, width, lo, min_leaf, l2):
    """Counts per bin and the cuts that can be made equal exactly; the level gains bit for
    bit at lambda = 0, and with lambda within 1e-12 of the level's largest gain (the
    penalised gain's fused multiply-adds may round differently in the two kernels; cuts
    tie within 1e-9 of the best)."""
    binned, values, slot = level(n, p, distinct, lo + width, seed=n + width)
    codes = np.ascontiguousarray(binned.codes)
    offset, features = binned.bin_offset, np.arange(p, dtype=np.int32)
    in_chunk = (slot >= lo) & (slot < lo + width)
    node_n = np.bincount(slot[in_chunk] - lo, minlength=width).astype(np.int64)
    sums = np.bincount(slot[in_chunk] - lo, weights=values[in_chunk], minlength=width)
    node_mu = (sums / np.maximum(node_n, 1))[:, None]
    n_bins = binned.n_bins_total

    def outputs():
        return np.zeros(n_bins), np.zeros(n_bins, dtype=bool), np.zeros(n_bins, dtype=np.int64)

    gain, cut, rows_in_bin = outputs()
    hist = np.empty((n_bins, width, 2))
    build_level(codes, slot, lo, NO_MEMBERS, values[:, None], offset, features, hist)
    add_level_gains(hist, offset, features, node_n, node_mu, min_leaf, l2, gain, cut, rows_in_bin)

    gain1, cut1, rows_in_bin1 = outputs()
    buffer = np.full(2 * width * 255, np.nan)  # stale contents must not leak in
    level_gains_one_output(
        codes, slot, lo, values, offset, features, node_n, node_mu, min_leaf, l2, buffer,
        gain1, cut1, rows_in_bin1,
    )  # fmt: skip
    np.testing.assert_array_equal(rows_in_bin1, rows_in_bin)
    np.testing.assert_array_equal(cut1, cut)
    assert cut.any()
    if l2 == 0.0:
        np.testing.assert_array_equal(gain1, gain)
    else:
        np.testing.assert_allclose(gain1, gain, rtol=0.0, atol=1e-12 * np.abs(gain).max())


def test_slot_block_cells_are_the_histograms_cells():
    """build_slot_block's cell (slot s, bin b) is build_level's cell (b, s) bit for bit:
    the same rows added in the same order."""
    binned, values, slot = level(3000, 2, None, 6, seed=3)
    codes = np.ascontiguousarray(binned.codes)
    features = np.arange(2, dtype=np.int32)
    hist = np.empty((binned.n_bins_total, 6, 2))
    build_level(codes, slot, 0, NO_MEMBERS, values[:, None], binned.bin_offset, features, hist)
    offset = np.where((slot >= 0) & (slot < 6), slot, -1).astype(np.int64)
    for f in features:
        lo, hi = binned.bin_offset[f], binned.bin_offset[f + 1]
        block = np.full(2 * 6 * (hi - lo), np.nan)
        build_slot_block(codes[f], offset, values, hi - lo, block)
        np.testing.assert_array_equal(block.reshape(6, hi - lo, 2), hist[lo:hi].transpose(1, 0, 2))
