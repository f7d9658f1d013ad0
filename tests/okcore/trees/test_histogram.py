"""Histogram split search: exactly the exact search when bins hold one distinct
value each, subtraction = direct builds, orthogonal sketches keep the gains, CSR = dense."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse
from scipy.stats import ortho_group

from okcore import OK3ForestRegressor, OK3Regressor, OKBoostRegressor
from okcore.trees._histogram import (
    build_dense,
    build_dense_rows,
    build_sparse,
    gather_rows,
    row_major_codes,
)
from okcore.trees.binning import bin_inputs
from okcore.trees.builder import TreeParams, build_tree

TREE_FIELDS = ("feature", "threshold", "left", "right", "n_samples")


def _data(n=150, p=6, r=4, seed=0):
    """Continuous inputs (n <= 255 distinct values per feature) and non-linear outputs."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, p))
    Y = np.c_[np.sin(5 * X[:, 0]), X[:, 1] * X[:, 2], X[:, 3] > 0.5, X[:, 4] ** 2][:, :r]
    return X, Y + 0.1 * rng.standard_normal(Y.shape), rng.random((40, p))


def _same_trees(a, b):
    for field in TREE_FIELDS:
        np.testing.assert_array_equal(getattr(a.ensemble_, field), getattr(b.ensemble_, field))


@pytest.mark.parametrize("leaf_order", ["variance", "gain"])
@pytest.mark.parametrize("splitter", ["best", "random"])
@pytest.mark.parametrize("kernel", ["linear", {"type": "rbf", "sigma": 1.0}])
def test_boosting_with_distinct_value_bins_grows_the_exact_trees(leaf_order, splitter, kernel):
    X, Y, Xq = _data()
    common = dict(
        n_estimators=15, learning_rate=0.3, max_splits=5, leaf_order=leaf_order,
        splitter=splitter, random_state=3,
    )  # fmt: skip
    exact = OKBoostRegressor(**common).fit(X, Y, kernel=kernel)
    hist = OKBoostRegressor(max_bins=255, **common).fit(X, Y, kernel=kernel)
    _same_trees(exact, hist)
    np.testing.assert_allclose(hist.predict_weights(Xq), exact.predict_weights(Xq), atol=1e-10)
    np.testing.assert_allclose(hist.predict_kernel(Xq), exact.predict_kernel(Xq), atol=1e-10)


@pytest.mark.parametrize("min_samples_leaf", [1, 4])
def test_single_tree_and_subsampled_boosting_match_the_exact_search(min_samples_leaf):
    X, Y, Xq = _data(seed=1)
    tree_e = OK3Regressor(max_splits=12, min_samples_leaf=min_samples_leaf).fit(X, Y)
    tree_h = OK3Regressor(max_splits=12, min_samples_leaf=min_samples_leaf, max_bins=200).fit(X, Y)
    _same_trees(tree_e, tree_h)
    assert tree_h.ensemble_.n_samples[tree_h.ensemble_.leaf >= 0].min() >= min_samples_leaf
    boost = dict(n_estimators=10, max_splits=4, subsample=0.6, random_state=0)
    e = OKBoostRegressor(**boost).fit(X, Y)
    h = OKBoostRegressor(max_bins=255, **boost).fit(X, Y)
    _same_trees(e, h)
    np.testing.assert_allclose(h.predict_weights(Xq), e.predict_weights(Xq), atol=1e-10)


@pytest.mark.parametrize(("bootstrap", "splitter"), [(True, "best"), (False, "random")])
def test_forests_with_distinct_value_bins_match_the_exact_search(bootstrap, splitter):
    """Trees of 6 splits: fully grown bootstrap trees end in nodes of 2-3 rows where several
    features induce the same partition (a genuine tie), which the two searches may break
    differently by rounding; both choices are optimal."""
    X, Y, Xq = _data(n=120, seed=2)
    common = dict(
        n_estimators=5, bootstrap=bootstrap, splitter=splitter, max_splits=6, random_state=0
    )
    e = OK3ForestRegressor(**common).fit(X, Y)
    h = OK3ForestRegressor(max_bins=255, **common).fit(X, Y)
    _same_trees(e, h)
    np.testing.assert_allclose(h.predict_weights(Xq), e.predict_weights(Xq), atol=1e-10)


def test_histogram_subtraction_equals_a_direct_build():
    X, Y, _ = _data(n=200, p=5)
    b = bin_inputs(X, 32)
    samples = np.argsort(X[:, 0]).astype(np.int32)  # left child = the 70 smallest x0
    shape = (b.n_bins_total, Y.shape[1])
    parent, left, right = (np.empty(shape) for _ in range(3))
    counts = [np.empty(b.n_bins_total, dtype=np.int64) for _ in range(3)]
    for (h, c), (lo, hi) in zip(
        zip((parent, left, right), counts, strict=True), ((0, 200), (0, 70), (70, 200)), strict=True
    ):
        rows = gather_rows(samples, lo, hi, Y)
        build_dense(b.codes, samples, lo, hi, rows, b.bin_offset, 0, X.shape[1], h, c)
    np.testing.assert_allclose(parent - left, right, atol=1e-12)
    np.testing.assert_array_equal(counts[0] - counts[1], counts[2])


@pytest.mark.parametrize("k", [1, 3, 4, 8, 11])
def test_dense_build_equals_a_numpy_reference(k):
    """The compiled build (columns four at a time, then the rest) on a feature range."""
    rng = np.random.default_rng(k)
    X = rng.random((150, 6))
    R = rng.standard_normal((150, k))
    b = bin_inputs(X, 20)
    samples = np.sort(rng.choice(150, 90, replace=False)).astype(np.int32)
    hist, counts = np.full((b.n_bins_total, k), np.nan), np.full(b.n_bins_total, -1)
    build_dense(b.codes, samples, 5, 85, gather_rows(samples, 5, 85, R), b.bin_offset, 2, 5,
                hist, counts)  # fmt: skip
    expected, expected_counts = np.zeros((b.n_bins_total, k)), np.zeros(b.n_bins_total, int)
    rows = samples[5:85]
    for f in range(2, 5):
        bins = b.bin_offset[f] + b.codes[f, rows]
        np.add.at(expected, bins, R[rows])
        np.add.at(expected_counts, bins, 1)
    owned = slice(b.bin_offset[2], b.bin_offset[5])
    np.testing.assert_allclose(hist[owned], expected[owned], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(counts[owned], expected_counts[owned])
    assert np.isnan(hist[: b.bin_offset[2]]).all()  # other features' bins untouched


@pytest.mark.parametrize("k", [4, 8, 12])
def test_row_wise_build_equals_the_feature_wise_one_bit_for_bit(k):
    """Both layouts add each bin's rows in node order: the same numbers, for a feature
    range too (threads own feature ranges), with scattered rows (the prefetch path)."""
    rng = np.random.default_rng(k)
    X = rng.random((400, 7))
    R = rng.standard_normal((400, k))
    b = bin_inputs(X, 30)
    samples = rng.permutation(400).astype(np.int32)
    shape = (b.n_bins_total, k)
    hist, counts = np.full(shape, np.nan), np.full(b.n_bins_total, -1)
    build_dense(b.codes, samples, 20, 380, gather_rows(samples, 20, 380, R), b.bin_offset, 0, 7,
                hist, counts)  # fmt: skip
    rows_hist, rows_counts = np.full(shape, np.nan), np.full(b.n_bins_total, -1)
    row_codes = row_major_codes(b.codes)
    for f_lo, f_hi in ((0, 3), (3, 4), (4, 7)):
        build_dense_rows(row_codes, samples, 20, 380, R, b.bin_offset, f_lo, f_hi, rows_hist,
                         rows_counts)  # fmt: skip
    np.testing.assert_array_equal(rows_hist, hist)
    np.testing.assert_array_equal(rows_counts, counts)


def test_sparse_histograms_equal_dense_ones():
    rng = np.random.default_rng(0)
    X = sparse.random(120, 9, density=0.2, format="csr", random_state=1)
    X.data = np.round(X.data * 4) - 2.0  # negative, zero-valued stored and positive entries
    R = rng.standard_normal((120, 3))
    dense, csr = bin_inputs(X.toarray(), 255), bin_inputs(X, 255)
    np.testing.assert_array_equal(dense.zero_code, csr.zero_code)
    np.testing.assert_array_equal(dense.edges, csr.edges)
    samples = rng.permutation(120).astype(np.int32)
    out = []
    for b in (dense, csr):
        h, c = np.empty((b.n_bins_total, 3)), np.empty(b.n_bins_total, dtype=np.int64)
        if b.is_sparse:
            build_sparse(b.codes, b.indptr, b.indices, b.zero_code, samples, 10, 90, R,
                         b.bin_offset, h, c)  # fmt: skip
        else:
            rows = gather_rows(samples, 10, 90, R)
            build_dense(b.codes, samples, 10, 90, rows, b.bin_offset, 0, 9, h, c)
        out.append((h, c))
    np.testing.assert_allclose(out[0][0], out[1][0], atol=1e-12)
    np.testing.assert_array_equal(out[0][1], out[1][1])


@pytest.mark.parametrize("max_bins", [None, 255])
def test_an_orthogonal_sketch_with_k_equal_r_keeps_the_exact_gains(max_bins):
    X, Y, _ = _data(n=150, p=6, r=4)
    R = Y - Y.mean(axis=0)
    Q = ortho_group.rvs(4, random_state=0)
    params = TreeParams("best", 8, 6, "gain", 1, None)
    binned = None if max_bins is None else bin_inputs(X, max_bins)
    XT = None if binned else np.ascontiguousarray(X.T)
    plain = build_tree(XT, R, params, np.random.default_rng(0), binned=binned)
    sketched = build_tree(XT, R, params, np.random.default_rng(0), projection=Q, binned=binned)
    for field in ("feature", "threshold", "left", "n_samples"):
        np.testing.assert_array_equal(getattr(plain, field), getattr(sketched, field))
    np.testing.assert_allclose(plain.gain, sketched.gain, rtol=1e-9)


@pytest.mark.parametrize("max_bins", [None, 255, 8])
def test_csr_and_dense_inputs_give_identical_models(max_bins):
    rng = np.random.default_rng(4)
    X = sparse.random(150, 30, density=0.08, format="csr", random_state=5)
    Y = np.c_[X[:, 0].toarray().ravel() + X[:, 1].toarray().ravel(), rng.random(150)]
    Xq = sparse.random(20, 30, density=0.1, format="csr", random_state=6)
    common = dict(n_estimators=8, max_splits=4, max_bins=max_bins, random_state=0)
    d = OKBoostRegressor(**common).fit(X.toarray(), Y)
    s = OKBoostRegressor(**common).fit(X, Y)
    _same_trees(d, s)
    np.testing.assert_allclose(s.predict_features(Xq), d.predict_features(Xq.toarray()), atol=1e-12)
    np.testing.assert_allclose(s.predict_weights(Xq), d.predict_weights(Xq.toarray()), atol=1e-10)
    f = OK3ForestRegressor(n_estimators=3, splitter="random", max_bins=max_bins, random_state=0)
    np.testing.assert_allclose(
        f.fit(X, Y).predict(Xq.tocsc()), f.fit(X.toarray(), Y).predict(Xq.toarray()), atol=1e-12
    )


def test_quantile_bins_route_training_rows_as_the_thresholds_do():
    """With more distinct values than bins, every stored threshold sends each training row
    to the child the bins sent it to: leaf sizes equal the counts of the training leaves."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((2000, 4))
    Y = np.c_[np.sin(3 * X[:, 0]), X[:, 1] * X[:, 2]]
    est = OKBoostRegressor(n_estimators=10, max_splits=8, max_bins=16, random_state=0).fit(X, Y)
    e = est.ensemble_
    for m in range(e.n_trees):
        nodes = slice(e.node_offset[m], e.node_offset[m + 1])
        sizes = e.n_samples[nodes][e.leaf[nodes] >= 0][
            np.argsort(e.leaf[nodes][e.leaf[nodes] >= 0])
        ]
        np.testing.assert_array_equal(np.bincount(e.train_leaf[m], minlength=len(sizes)), sizes)
    # and the fit is close to the exact search's on the same budget
    exact = OKBoostRegressor(n_estimators=10, max_splits=8, random_state=0).fit(X, Y)
    assert est.train_loss_[-1] < 1.1 * exact.train_loss_[-1]


def test_bins_follow_the_exact_search_thresholds():
    x = np.array([0.0, 1.0, 1.0 + 5e-8, 2.0, 3.0, 3.0, 7.5])  # 1 and 1+5e-8 are one value
    b = bin_inputs(x[:, None], 255)
    np.testing.assert_array_equal(b.edges, [0.5, (1.0 + 5e-8) / 2.0 + 1.0, 2.5, 5.25])
    np.testing.assert_array_equal(b.codes[0], [0, 1, 1, 2, 3, 3, 4])
    assert b.zero_code[0] == 0
    few = bin_inputs(np.arange(1000.0)[:, None], 10)
    assert few.n_bins_total == 10 and np.all(np.bincount(few.codes[0]) == 100)
    with pytest.raises(ValueError, match="max_bins"):
        bin_inputs(x[:, None], 256)


@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_compact_inputs_are_kept_and_fit_like_float64(dtype):
    rng = np.random.default_rng(8)
    X = (rng.random((100, 5)) * 200).astype(dtype)
    Y = rng.random((100, 2)) + X[:, :2].astype(float) / 200
    for max_bins in (None, 255):
        a = OKBoostRegressor(n_estimators=5, max_splits=3, max_bins=max_bins).fit(X, Y)
        b = OKBoostRegressor(n_estimators=5, max_splits=3, max_bins=max_bins).fit(
            X.astype(np.float64), Y
        )
        _same_trees(a, b)
        np.testing.assert_allclose(a.predict(X), b.predict(X.astype(np.float64)), atol=1e-12)


def test_auto_search_is_exact_below_the_threshold_and_fast_above(monkeypatch):
    from okcore import defaults

    assert defaults.resolve_search("auto", "auto", 1000, 50) == (None, None)
    assert defaults.resolve_search("auto", "auto", 40_000, 50) == (255, 8)
    assert defaults.resolve_search("auto", "auto", 400_000, 4) == (255, None)  # r <= k: no sketch
    assert defaults.resolve_search(None, "auto", 40_000, 50) == (None, 8)
    X, Y, Xq = _data()
    # best-first trees (oblivious trees, the default's on dense X, search histograms always)
    default = OKBoostRegressor(tree_type="best-first", n_estimators=5, random_state=0).fit(X, Y)
    exact = OKBoostRegressor(n_estimators=5, max_bins=None, sketch_dim=None, random_state=0)
    _same_trees(default, exact.fit(X, Y))
    assert (default.max_bins_, default.sketch_dim_) == (None, None)
    monkeypatch.setattr(defaults, "AUTO_FAST_MIN_WORK", 100)
    fast = OKBoostRegressor(tree_type="best-first", n_estimators=5, random_state=0).fit(X, Y)
    assert (fast.max_bins_, fast.sketch_dim_) == (255, None)  # r = 4 <= 8
