"""Losses in the output feature space: the square loss (paper section 2.3) and the robust
absolute and Huber losses (Friedman 2001, kernelized) with their geometric-median leaves."""

from __future__ import annotations

import numpy as np
import pytest
from okdata import make_regression

from okcore import OKBoostRegressor
from okcore.losses import (
    AbsoluteFeatureLoss,
    HuberFeatureLoss,
    SquaredFeatureLoss,
    geometric_median_weights,
    inverted_cdf_quantile,
    make_loss,
    weighted_median_weights,
    weighted_quantile_row,
)


def test_squared_feature_loss():
    rng = np.random.default_rng(0)
    phi, F = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    loss = SquaredFeatureLoss()
    assert loss.name == "squared"
    init, weights = loss.initial(phi)
    np.testing.assert_allclose(init, phi.mean(axis=0), rtol=1e-14)
    assert weights is None  # the mean: uniform weights, not stored
    residual = phi - F
    assert loss.stage_target(residual) is residual  # no copy on the fast path
    # k(y, y) = ||phi(y)||^2 for an exact factor: the loss is the mean squared distance
    value = loss(phi, np.sum(phi**2, axis=1), F)
    assert isinstance(value, float)
    np.testing.assert_allclose(value, np.mean(np.sum((phi - F) ** 2, axis=1)), rtol=1e-12)
    # k(y, y) from the kernel counts what the factor misses: a larger diag adds to the loss
    np.testing.assert_allclose(loss(phi, np.sum(phi**2, axis=1) + 0.5, F), value + 0.5, rtol=1e-12)


def numeric_negative_gradient(loss_of_F, F, eps=1e-6):
    """-d loss / d F by central differences, one coordinate at a time."""
    out = np.empty_like(F)
    for idx in np.ndindex(F.shape):
        step = np.zeros_like(F)
        step[idx] = eps
        out[idx] = -(loss_of_F(F + step) - loss_of_F(F - step)) / (2 * eps)
    return out


@pytest.mark.parametrize("loss", [AbsoluteFeatureLoss(), HuberFeatureLoss(alpha=0.5)])
def test_stage_targets_are_the_negative_gradient(loss):
    """The rows a tree is fitted to are -dl/dF (house style: analytic derivatives checked
    against finite differences), delta held at the value set from the residuals."""
    rng = np.random.default_rng(1)
    phi, F = rng.normal(size=(9, 3)), rng.normal(size=(9, 3))
    target = loss.stage_target(phi - F)
    n = len(phi)
    numeric = numeric_negative_gradient(lambda G: n * loss(phi, np.zeros(n), G), F)
    np.testing.assert_allclose(target, numeric, atol=1e-7)


def test_absolute_target_is_the_unit_direction_and_zero_at_a_zero_residual():
    residual = np.array([[3.0, 4.0], [0.0, 0.0], [0.0, -2.0]])
    np.testing.assert_array_equal(
        AbsoluteFeatureLoss().stage_target(residual), [[0.6, 0.8], [0.0, 0.0], [0.0, -1.0]]
    )


def test_huber_delta_is_the_inverted_cdf_quantile_and_clips_the_gradient():
    rng = np.random.default_rng(2)
    residual = rng.normal(size=(37, 2))
    norms = np.linalg.norm(residual, axis=1)
    loss = HuberFeatureLoss(alpha=0.7)
    target = loss.stage_target(residual)
    assert loss.delta_ == np.quantile(norms, 0.7, method="inverted_cdf")
    clipped = norms > loss.delta_
    np.testing.assert_allclose(np.linalg.norm(target[clipped], axis=1), loss.delta_, rtol=1e-14)
    np.testing.assert_array_equal(target[~clipped], residual[~clipped])


@pytest.mark.parametrize("alpha", [0.01, 0.1, 0.5, 0.9, 0.95, 0.999])
@pytest.mark.parametrize("n", [1, 2, 10, 37, 100])
def test_inverted_cdf_quantile_is_numpys(alpha, n):
    values = np.random.default_rng(n).random(n)
    assert inverted_cdf_quantile(values, alpha) == np.quantile(values, alpha, method="inverted_cdf")


def sum_of_distances(X, m):
    return np.linalg.norm(X - m, axis=1).sum()


@pytest.mark.parametrize("shape", [(5, 2), (40, 3), (200, 30)])
def test_geometric_median_is_optimal(shape):
    """At the median m the unit vectors towards the rows cancel; every other point is worse."""
    rng = np.random.default_rng(shape[0])
    X = rng.standard_t(2, size=shape)
    w = geometric_median_weights(X)
    np.testing.assert_allclose(w.sum(), 1.0, rtol=1e-12)
    m = w @ X
    units = (X - m) / np.linalg.norm(X - m, axis=1)[:, None]
    assert np.linalg.norm(units.sum(axis=0)) < 1e-6 * len(X)
    best = sum_of_distances(X, m)
    for _ in range(20):
        assert sum_of_distances(X, m + 1e-4 * rng.normal(size=shape[1])) > best


def test_geometric_median_at_a_data_point_is_exact():
    """Three points with a 150-degree angle at the first: the median is that point, snapped
    to exactly (one-hot weights) rather than approached by slow Weiszfeld steps."""
    angle = np.deg2rad(150.0)
    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0 * np.cos(angle), 2.0 * np.sin(angle)]]) + 5.0
    np.testing.assert_array_equal(geometric_median_weights(X), [1.0, 0.0, 0.0])
    # a majority of identical rows is the median too (Vardi-Zhang: weight 3 > pull of 2)
    Y = np.r_[np.tile([[1.0, 2.0]], (3, 1)), [[4.0, 0.0], [-2.0, 7.0]]]
    np.testing.assert_allclose(geometric_median_weights(Y), [1 / 3, 1 / 3, 1 / 3, 0, 0])


def test_geometric_median_singular_cases():
    # a single row, or rows all at the origin (the start): the median without iterating
    np.testing.assert_array_equal(geometric_median_weights(np.array([[1.0, -2.0]])), [1.0])
    np.testing.assert_array_equal(geometric_median_weights(np.zeros((4, 3))), np.zeros(4))
    # two rows: every point between them is a minimiser; Weiszfeld from 0 keeps its point
    X = np.array([[1.0, 0.0], [0.0, 3.0]])
    w = geometric_median_weights(X)
    assert np.all(w > 0) and abs(w.sum() - 1.0) < 1e-15
    # a row at the start (a zero residual) that is not the median: stepped off (Vardi-Zhang)
    Z = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.1], [1.0, -0.1], [1.1, 0.0]])
    m = geometric_median_weights(Z) @ Z
    assert m[0] > 0.5 and sum_of_distances(Z, m) < sum_of_distances(Z, np.zeros(2))


def test_one_dimensional_median_conventions():
    x = np.array([[5.0], [1.0], [4.0], [2.0]])
    np.testing.assert_array_equal(geometric_median_weights(x), [0, 0, 0, 1])  # lower: 2
    np.testing.assert_array_equal(geometric_median_weights(x, lower=False), [0, 0, 0.5, 0.5])
    np.testing.assert_array_equal(geometric_median_weights(x[:3]), [0, 0, 1])  # odd: 4


@pytest.mark.parametrize("loss", [AbsoluteFeatureLoss(), HuberFeatureLoss(0.6)])
def test_leaf_values_are_weighted_residual_rows(loss):
    """leaf_values (from residual rows and leaf ids, no tree): each leaf's value is weights @ its in-bag residual rows; out-of-bag rows
    weigh 0; absolute: the geometric median; Huber: median + mean clipped deviation."""
    rng = np.random.default_rng(3)
    residual = rng.normal(size=(30, 4))
    leaf = rng.integers(0, 3, size=30).astype(np.int32)
    in_bag = rng.random(30) < 0.8
    loss.stage_target(residual)  # sets delta for the Huber loss
    value, weights = loss.leaf_values(residual, leaf, in_bag, 3)
    assert value is not None and weights is not None
    assert np.all(weights[~in_bag] == 0)
    for L in range(3):
        rows = np.flatnonzero((leaf == L) & in_bag)
        np.testing.assert_allclose(weights[rows].sum(), 1.0, rtol=1e-12)
        np.testing.assert_allclose(value[L], weights[rows] @ residual[rows], atol=1e-14)
        m = geometric_median_weights(residual[rows]) @ residual[rows]
        if loss.name == "absolute":
            np.testing.assert_allclose(value[L], m, atol=1e-14)
        else:
            d = residual[rows] - m
            norms = np.linalg.norm(d, axis=1)
            clipped = d * np.minimum(1.0, loss.delta_ / norms)[:, None]
            np.testing.assert_allclose(value[L], m + clipped.mean(axis=0), atol=1e-13)


def test_make_loss():
    assert isinstance(make_loss("squared", 0.9), SquaredFeatureLoss)
    assert isinstance(make_loss("absolute", 0.9), AbsoluteFeatureLoss)
    huber = make_loss("huber", 0.8)
    assert isinstance(huber, HuberFeatureLoss) and huber.alpha == 0.8


@pytest.mark.parametrize("learning_rate", [0.3, 1.0])
@pytest.mark.parametrize("kernel", ["linear", {"type": "rbf", "sigma": 1.0}])
def test_absolute_loss_training_loss_never_increases(learning_rate, kernel):
    """Absolute loss, nu in (0, 1], no subsampling: each leaf step is a descent step (the
    geometric median from Weiszfeld started at the zero step, and convexity); rounding
    aside, the training loss is non-increasing."""
    X, Y = make_regression(n=60, seed=4)
    Y[::7] += 3.0  # outliers
    est = OKBoostRegressor(
        loss="absolute", n_estimators=40, learning_rate=learning_rate, max_splits=4
    ).fit(X, Y, kernel=kernel)
    assert np.all(np.diff(est.train_loss_) <= 1e-12 * est.train_loss_[0])
    assert est.train_loss_[-1] < est.train_loss_[0]


@pytest.mark.parametrize("loss", ["absolute", "huber"])
def test_robust_fit_keeps_F_in_the_span_and_w_f_rows_sum_to_one(loss):
    X, Y = make_regression(n=50, seed=5)
    est = OKBoostRegressor(loss=loss, n_estimators=15, max_splits=3, subsample=0.7, random_state=0)
    est.fit(X, Y, kernel={"type": "rbf", "gamma": 0.5})
    Xq, _ = make_regression(n=7, seed=6)
    W = est.predict_weights(Xq)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(W @ est.output_space_.phi, est.predict_features(Xq), atol=1e-12)


def test_squared_loss_is_unchanged_by_the_loss_parameter():
    """loss="squared" is the default and stores no weights (the fast path and old format)."""
    X, Y = make_regression(n=50, seed=7)
    a = OKBoostRegressor(n_estimators=10, random_state=0).fit(X, Y)
    b = OKBoostRegressor(loss="squared", alpha=0.5, n_estimators=10, random_state=0).fit(X, Y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert a.ensemble_.train_weight is None and a.ensemble_.init_weight is None


def test_weighted_quantile_is_sklearns_weighted_percentile():
    stats = pytest.importorskip("sklearn.utils.stats")
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 50):
        x = rng.standard_normal(n)
        w = rng.random(n) * 3
        w[rng.random(n) < 0.2] = 0.0
        if not w.sum() > 0:
            w[0] = 1.0
        for alpha in (0.5, 0.9, 0.1):
            ours = x[weighted_quantile_row(x, w, alpha)]
            assert ours == stats._weighted_percentile(x, w, 100 * alpha)


def test_weighted_medians_with_integer_weights_are_the_repeated_rows_medians():
    rng = np.random.default_rng(4)
    for n in (2, 5, 12):
        x = rng.standard_normal(n)
        w = rng.integers(0, 4, n).astype(float)
        w[0] = max(w[0], 1.0)
        rep = np.repeat(x, w.astype(int))
        mid = weighted_median_weights(x, w, lower=False) @ x
        assert mid == np.median(rep)
        lower = geometric_median_weights(x[:, None], weight=w) @ x
        assert lower == np.sort(rep)[(len(rep) - 1) // 2]
        X = rng.standard_normal((n, 3))
        c = geometric_median_weights(X, weight=w)
        assert c[w == 0].sum() == 0 and np.isclose(c.sum(), 1.0)
        np.testing.assert_allclose(
            c @ X, geometric_median_weights(np.repeat(X, w.astype(int), axis=0)) @ np.repeat(
                X, w.astype(int), axis=0
            ), atol=1e-7,
        )  # fmt: skip


def test_a_weighted_mean_over_rows_of_zero_weight_is_a_clear_error():
    """Losses and scores over rows whose weights sum to zero: a DataError saying what is
    needed, not numpy's ZeroDivisionError."""
    from okcore import metrics
    from okcore.exceptions import DataError

    X, Y = make_regression(n=20)
    model = OKBoostRegressor(n_estimators=3, random_state=0).fit(X, Y)
    zero = np.zeros(5)
    phi = np.ones((5, 2))
    with pytest.raises(DataError, match="weights of these 5 rows sum to zero"):
        SquaredFeatureLoss()(phi, np.ones(5), phi, zero)
    with pytest.raises(DataError, match="weights of these 5 rows sum to zero"):
        AbsoluteFeatureLoss()(phi, np.ones(5), phi, zero)
    for score in (metrics.err_phi, metrics.err_y):
        with pytest.raises(DataError, match="weights of these 5 rows sum to zero"):
            score(model, X[:5], Y[:5], sample_weight=zero)
    with pytest.raises(DataError, match="weights of these 5 rows sum to zero"):
        model.score(X[:5], Y[:5], sample_weight=zero)
