"""Binning of the inputs (okcore.trees.binning): edges, codes and bin ranges, dense and
sparse, checked against their definition."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from okcore.trees.binning import MAX_BINS, bin_inputs, code_features


def feature_edges(binned, f: int) -> np.ndarray:
    o = binned.bin_offset
    return binned.edges[o[f] - f : o[f + 1] - f - 1]


def dense_codes(binned) -> np.ndarray:
    """(p, n) codes of a binning, dense or CSR (implicit entries take the zero code)."""
    if not binned.is_sparse:
        return binned.codes
    n = binned.n_samples
    out = np.repeat(binned.zero_code[:, None], n, axis=1)
    for i in range(n):
        lo, hi = binned.indptr[i], binned.indptr[i + 1]
        out[binned.indices[lo:hi], i] = binned.codes[lo:hi]
    return out


def check_definition(X: np.ndarray, binned, max_bins: int) -> None:
    """Edge b-1 < x <= edge b for the code b of every value; bins hold their values'
    range; at most max_bins bins per feature; increasing edges."""
    codes = dense_codes(binned)
    for f in range(X.shape[1]):
        edges = feature_edges(binned, f)
        n_bins = binned.bin_offset[f + 1] - binned.bin_offset[f]
        assert 1 <= n_bins <= max_bins and len(edges) == n_bins - 1
        assert np.all(np.diff(edges) > 0)
        x, c = X[:, f], codes[f].astype(np.int64)
        assert np.all(c < n_bins)
        upper = np.append(edges, np.inf)[c]
        lower = np.insert(edges, 0, -np.inf)[c]
        assert np.all((lower < x) & (x <= upper))
        flat = binned.bin_offset[f] + c
        assert np.all(binned.bin_min[flat] <= x) and np.all(x <= binned.bin_max[flat])


@settings(max_examples=40, deadline=None)
@given(
    data=st.lists(st.lists(st.integers(-20, 20), min_size=3, max_size=3), min_size=2, max_size=60),
    max_bins=st.integers(2, 12),
)
def test_codes_follow_the_edges_dense_and_sparse(data: list[list[int]], max_bins: int) -> None:
    X = np.array(data, dtype=np.float64) / 4.0
    X[X < 0] = 0.0  # many zeros: the CSR matrix stores few entries
    for source in (X, sparse.csr_matrix(X)):
        binned = bin_inputs(source, max_bins)
        check_definition(X, binned, max_bins)
    # the same bins whether dense or sparse
    dense, sp = bin_inputs(X, max_bins), bin_inputs(sparse.csr_matrix(X), max_bins)
    np.testing.assert_array_equal(dense_codes(dense), dense_codes(sp))
    np.testing.assert_array_equal(dense.edges, sp.edges)


def test_few_distinct_values_get_the_exact_searchs_midpoints() -> None:
    X = np.array([[3.0], [1.0], [2.0], [1.0], [5.0]])
    binned = bin_inputs(X, 255)
    np.testing.assert_array_equal(feature_edges(binned, 0), [1.5, 2.5, 4.0])
    np.testing.assert_array_equal(binned.codes[0], [2, 0, 1, 0, 3])


def test_many_distinct_values_get_bins_of_about_equal_counts() -> None:
    x = np.random.default_rng(0).permutation(1000).astype(np.float64)
    binned = bin_inputs(x[:, None], 10)
    counts = np.bincount(binned.codes[0], minlength=10)
    assert len(counts) == 10 and counts.min() >= 90 and counts.max() <= 110


def test_max_bins_outside_the_uint8_codes_is_refused() -> None:
    with pytest.raises(ValueError, match="max_bins"):
        bin_inputs(np.zeros((3, 1)), MAX_BINS + 1)


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_codes_are_numpys_searchsorted_for_any_number_of_threads(monkeypatch, n_threads):
    """The compiled binary search gives numpy's searchsorted (side "left") of each value in
    its feature's edges, ties on an edge included, with the features on any threads."""
    import okcore.threads

    monkeypatch.setattr(okcore.threads, "PARALLEL_ROWS_MIN_WORK", 0)
    rng = np.random.default_rng(7)
    X = np.c_[
        rng.random(500), np.floor(rng.random(500) * 5), np.full(500, 2.0),
        rng.standard_normal(500).astype(np.float32), rng.integers(-3, 3, 500),
    ]  # fmt: skip
    binned = bin_inputs(X, 16, n_threads=n_threads)
    serial = bin_inputs(X, 16, n_threads=1)  # each feature's distinct values on any thread
    for name in ("codes", "edges", "bin_offset", "bin_min", "bin_max", "zero_code"):
        np.testing.assert_array_equal(getattr(binned, name), getattr(serial, name), err_msg=name)
    for f in range(X.shape[1]):
        e = binned.edges[binned.bin_offset[f] - f : binned.bin_offset[f + 1] - f - 1]
        np.testing.assert_array_equal(binned.codes[f], np.searchsorted(e, X[:, f], side="left"))
        edge_values = np.r_[e, np.nextafter(e, np.inf), np.nextafter(e, -np.inf)]
        codes = np.empty((X.shape[1], len(edge_values)), dtype=np.uint8)
        Xe = np.zeros((len(edge_values), X.shape[1]))
        Xe[:, f] = edge_values
        code_features(Xe, binned.edges, binned.bin_offset, f, f + 1, codes)
        np.testing.assert_array_equal(codes[f], np.searchsorted(e, edge_values, side="left"))


def test_codes_of_any_real_dtype_and_layout_are_numpys():
    """Inputs are coded in place whatever their real dtype and layout (no float64 copy),
    with the codes numpy's searchsorted gives."""
    rng = np.random.default_rng(8)
    base = rng.random((400, 6)) * 100 - 50
    for X in (
        np.asfortranarray(base), base[:, ::2], base.astype(np.float32),
        np.floor(base).astype(np.int64), np.floor(base).astype(np.int8),
        np.abs(np.floor(base)).astype(np.uint16), base > 0, base.astype(np.float16),
    ):  # fmt: skip
        binned = bin_inputs(X, 32)
        for f in range(X.shape[1]):
            e = binned.edges[binned.bin_offset[f] - f : binned.bin_offset[f + 1] - f - 1]
            np.testing.assert_array_equal(
                binned.codes[f], np.searchsorted(e, X[:, f], side="left"), err_msg=str(X.dtype)
            )
