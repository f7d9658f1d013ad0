"""OKBoostRegressor: eval sets, early stopping, callbacks, subsampling, staged losses."""

from __future__ import annotations

import numpy as np
import pytest
from okdata import make_regression, rbf_gram, route

from okcore import (
    DataError,
    FitProgress,
    InvalidParameterError,
    NotFittedError,
    OKBoostRegressor,
    UnknownParameterError,
    metrics,
)
from okcore.boosting import PAPER_PRESET, boost
from okcore.defaults import resolve_refine_cuts
from okcore.learners import TreeLearner
from okcore.losses import SquaredFeatureLoss

GAMMA = 1.0


@pytest.fixture(scope="module")
def data():
    X, Y = make_regression(n=60, p=4, seed=10, noise=0.3)
    Xv, Yv = make_regression(n=20, p=4, seed=11, noise=0.3)
    return X, Y, Xv, Yv


@pytest.fixture(scope="module")
def noisy():
    """Few rows, much noise: a fast booster overfits within a few rounds."""
    X, Y = make_regression(n=50, p=4, seed=12, noise=1.5)
    Xv, Yv = make_regression(n=30, p=4, seed=13, noise=1.5)
    return X, Y, Xv, Yv


OVERFIT = {"n_estimators": 40, "learning_rate": 1.0, "max_splits": 12, "random_state": 0}


# ---------------------------------------------------------------------- eval set and stages
@pytest.mark.parametrize("kernel", [None, {"type": "rbf", "gamma": GAMMA}])
def test_validation_loss_is_the_staged_loss_on_the_eval_set(kernel, data):
    X, Y, Xv, Yv = data
    est = OKBoostRegressor(n_estimators=12, learning_rate=0.3, max_splits=4, random_state=0)
    est.fit(X, Y, kernel=kernel, eval_set=(Xv, Yv))
    assert est.validation_loss_.shape == (12,) and est.n_estimators_ == 12
    np.testing.assert_allclose(est.validation_loss_, est.staged_loss(Xv, Yv), rtol=1e-12)
    assert est.staged_loss(Xv, Yv)[-1] == pytest.approx(metrics.err_phi(est, Xv, Yv), rel=1e-12)


def test_eval_set_in_gram_form(data):
    X, Y, Xv, Yv = data
    est = OKBoostRegressor(n_estimators=10, learning_rate=0.3, max_splits=4, random_state=0)
    K, Kv = rbf_gram(Y, Y, GAMMA), rbf_gram(Yv, Y, GAMMA)
    est.fit(X, gram=K, eval_set=(Xv, Kv, np.ones(len(Xv))))
    staged = est.staged_loss(Xv, gram_cross=Kv, gram_diag=np.ones(len(Xv)))
    np.testing.assert_allclose(est.validation_loss_, staged, rtol=1e-12)
    by_outputs = OKBoostRegressor(n_estimators=10, learning_rate=0.3, max_splits=4, random_state=0)
    by_outputs.fit(X, Y, kernel={"type": "rbf", "gamma": GAMMA}, eval_set=(Xv, Yv))
    np.testing.assert_allclose(est.validation_loss_, by_outputs.validation_loss_, rtol=1e-8)


def test_staged_training_loss_is_the_train_loss(data):
    X, Y, _, _ = data
    est = OKBoostRegressor(n_estimators=15, learning_rate=0.2, max_splits=3, random_state=0)
    est.fit(X, Y, kernel={"type": "rbf", "gamma": GAMMA})
    assert est.validation_loss_ is None and est.train_loss_.shape == (15,)
    np.testing.assert_allclose(est.staged_loss(X, Y), est.train_loss_, rtol=1e-12)
    assert est.train_loss_[-1] == pytest.approx(metrics.err_phi(est, X, Y), rel=1e-12)


def test_decision_is_the_initial_mean_plus_shrunk_leaf_values(data):
    X, Y, Xv, _ = data
    est = OKBoostRegressor(n_estimators=6, learning_rate=0.25, max_splits=3, random_state=0)
    est.fit(X, Y)
    e = est.ensemble_
    np.testing.assert_allclose(e.init, Y.mean(axis=0), rtol=1e-13)  # F_0 is not shrunk
    expected = np.array(
        [
            Y.mean(axis=0)
            + 0.25 * sum(e.value[e.leaf_offset[m] + route(e, m, x)] for m in range(6))
            for x in Xv
        ]
    )
    np.testing.assert_allclose(est.predict(Xv), expected, rtol=1e-12, atol=1e-13)
    one = OKBoostRegressor(n_estimators=1, learning_rate=1e-9, max_splits=3).fit(X, Y)
    np.testing.assert_allclose(one.predict(Xv), np.tile(Y.mean(axis=0), (len(Xv), 1)), atol=1e-8)


def test_every_tree_has_at_most_max_splits_splits(data):
    X, Y, _, _ = data
    est = OKBoostRegressor(n_estimators=5, max_splits=4, random_state=0).fit(X, Y)
    leaves = np.diff(est.ensemble_.leaf_offset)
    np.testing.assert_array_equal(leaves, 5)  # J = 4 splits are always possible here


# ---------------------------------------------------------------------- early stopping
def test_early_stopping_on_an_eval_set_keeps_the_best_iteration(noisy):
    X, Y, Xv, Yv = noisy
    est = OKBoostRegressor(**OVERFIT, n_iter_no_change=3, tol=0.0)
    est.fit(X, Y, eval_set=(Xv, Yv))
    loss = est.validation_loss_
    best = int(np.argmin(loss))
    assert len(loss) < 40, "the data should make the booster overfit"
    assert len(loss) == best + 1 + 3  # stopped after 3 rounds without improvement
    assert est.n_estimators_ == best + 1 == est.ensemble_.n_trees
    assert len(est.train_loss_) == len(loss)
    staged = est.staged_loss(Xv, Yv)
    np.testing.assert_allclose(staged, loss[: best + 1], rtol=1e-12)
    assert metrics.err_phi(est, Xv, Yv) == pytest.approx(loss.min(), rel=1e-12)
    np.testing.assert_allclose(est.predict_weights(Xv) @ Y, est.predict(Xv), atol=1e-12)


def test_early_stopping_tolerance(noisy):
    X, Y, Xv, Yv = noisy
    strict = OKBoostRegressor(**OVERFIT, n_iter_no_change=2, tol=0.0).fit(X, Y, eval_set=(Xv, Yv))
    lax = OKBoostRegressor(**OVERFIT, n_iter_no_change=2, tol=1e3).fit(X, Y, eval_set=(Xv, Yv))
    # with a huge tol no round counts as an improvement after the first
    assert lax.n_estimators_ == 1 and len(lax.validation_loss_) == 3
    assert strict.n_estimators_ >= lax.n_estimators_


@pytest.mark.parametrize("gamma", [None, 0.1, 0.003])  # 0.003: a truncated factor
def test_early_stopping_on_a_hold_out(gamma, noisy):
    X, Y, Xv, Yv = noisy
    est = OKBoostRegressor(**OVERFIT, n_iter_no_change=3, tol=0.0, validation_fraction=0.2)
    est.fit(X, Y, kernel=None if gamma is None else {"type": "rbf", "gamma": gamma})
    rows = est.train_indices_
    held_out = np.setdiff1d(np.arange(len(X)), rows)
    assert len(rows) == 40 and len(held_out) == 10 and np.all(np.diff(rows) > 0)
    assert est.n_train_ == 40 and est.output_space_.n_samples == 40
    if gamma == 0.003:  # the case that needs a true projection to embed new outputs
        assert est.output_space_.rank < len(X)
    assert est.ensemble_.train_leaf.shape == (est.n_estimators_, 40)
    assert est.predict_weights(Xv).shape == (len(Xv), 40)
    np.testing.assert_array_equal(est.output_space_.outputs, Y[rows])
    loss = est.validation_loss_
    assert est.n_estimators_ == int(np.argmin(loss)) + 1 and len(loss) < 40
    # the recorded validation loss is the loss on exactly the held-out rows
    staged = est.staged_loss(X[held_out], Y[held_out])
    np.testing.assert_allclose(staged, loss[: est.n_estimators_], rtol=1e-10)
    # and err_phi on new data agrees with a computation from W^F and the kernel
    W = est.predict_weights(Xv)
    if gamma is None:
        K, cross, diag = Y[rows] @ Y[rows].T, Yv @ Y[rows].T, np.sum(Yv**2, axis=1)
    else:
        K, cross, diag = rbf_gram(Y[rows], Y[rows], gamma), rbf_gram(Yv, Y[rows], gamma), 1.0
    by_hand = np.mean(diag - 2 * np.sum(W * cross, axis=1) + np.einsum("qi,ij,qj->q", W, K, W))
    assert metrics.err_phi(est, Xv, Yv) == pytest.approx(by_hand, rel=1e-9)


def test_without_early_stopping_every_row_is_used(data):
    X, Y, _, _ = data
    est = OKBoostRegressor(n_estimators=3, max_splits=2).fit(X, Y)
    np.testing.assert_array_equal(est.train_indices_, np.arange(len(X)))
    assert est.n_train_ == len(X)


def test_hold_out_too_small(data):
    X, Y, _, _ = data
    with pytest.raises(DataError, match="validation_fraction=0.01 of 10 rows leaves no usable"):
        OKBoostRegressor(n_iter_no_change=2, validation_fraction=0.01).fit(X[:10], Y[:10])


def test_early_stopping_auto_needs_a_patience():
    """ "auto" stops early when n_iter_no_change is given, at any size, and never holds rows
    out otherwise (scikit-learn's GradientBoostingRegressor rule)."""
    rng = np.random.default_rng(3)
    X = rng.random((12_000, 2))  # above scikit-learn HistGradientBoosting's size threshold
    Y = np.column_stack([X[:, 0] > 0.5, X[:, 1]]) + 0.1 * rng.normal(size=(len(X), 2))
    small = {"n_estimators": 3, "max_splits": 2, "random_state": 0}
    auto = OKBoostRegressor(**small).fit(X, Y)
    assert auto.early_stopping == "auto" and auto.early_stopping_patience() is None
    assert auto.validation_loss_ is None and auto.n_train_ == len(X)
    patient = OKBoostRegressor(**small, n_iter_no_change=4).fit(X[:500], Y[:500])
    assert patient.early_stopping_patience() == 4 and patient.validation_loss_ is not None
    assert patient.n_train_ == 500 - round(0.1 * 500)


def test_early_stopping_true_is_a_patience_of_ten(noisy):
    """early_stopping=True on any size is n_iter_no_change=10 (DEFAULT_N_ITER_NO_CHANGE)."""
    X, Y, _, _ = noisy
    on = OKBoostRegressor(**OVERFIT, early_stopping=True, tol=0.0).fit(X, Y)
    explicit = OKBoostRegressor(**OVERFIT, n_iter_no_change=10, tol=0.0).fit(X, Y)
    assert on.n_estimators_ < OVERFIT["n_estimators"]  # it stopped
    assert on.n_estimators_ == explicit.n_estimators_
    np.testing.assert_array_equal(on.train_indices_, explicit.train_indices_)
    np.testing.assert_array_equal(on.predict(X), explicit.predict(X))


def test_a_patience_turns_early_stopping_on_under_auto(data):
    """Before early_stopping existed, n_iter_no_change alone asked for it: still so."""
    X, Y, _, _ = data
    est = OKBoostRegressor(n_estimators=3, max_splits=2, n_iter_no_change=2).fit(X, Y)
    assert est.validation_loss_ is not None and est.n_train_ < len(X)


@pytest.mark.parametrize("off", [False, np.False_])
def test_a_patience_with_early_stopping_off_is_refused(off, data):
    X, Y, _, _ = data
    assert OKBoostRegressor(early_stopping=off).early_stopping_patience() is None
    assert OKBoostRegressor(early_stopping=np.True_).early_stopping_patience() == 10
    est = OKBoostRegressor(early_stopping=off, n_iter_no_change=5)
    with pytest.raises(InvalidParameterError, match="set early_stopping=True"):
        est.fit(X, Y)
    with pytest.raises(InvalidParameterError, match="'early_stopping' parameter"):
        OKBoostRegressor(early_stopping="yes").fit(X, Y)


# ---------------------------------------------------------------------- callbacks
def test_callback_receives_progress(data):
    X, Y, Xv, Yv = data
    seen: list[FitProgress] = []
    est = OKBoostRegressor(n_estimators=7, learning_rate=0.3, max_splits=3, random_state=0)
    est.fit(X, Y, eval_set=(Xv, Yv), callback=seen.append)
    # the set-up phase is announced first (done=0), then one call per tree
    assert [(p.phase, p.done) for p in seen[:1]] == [("output_space", 0)]
    seen = seen[1:]
    assert [p.done for p in seen] == list(range(1, 8)) and {p.phase for p in seen} == {"trees"}
    assert all(isinstance(p, FitProgress) and p.total == 7 for p in seen)
    elapsed = [p.elapsed for p in seen]
    assert elapsed[0] >= 0 and elapsed == sorted(elapsed) and elapsed[-1] <= est.fit_time_
    np.testing.assert_array_equal([p.train_loss for p in seen], est.train_loss_)
    np.testing.assert_array_equal([p.val_loss for p in seen], est.validation_loss_)
    assert est.stopped_by_callback_ is False


def test_callback_without_eval_set_has_no_validation_loss(data):
    X, Y, _, _ = data
    seen: list[FitProgress] = []
    OKBoostRegressor(n_estimators=3, max_splits=2).fit(X, Y, callback=seen.append)
    trees = [p for p in seen if p.phase == "trees"]
    assert [p.val_loss for p in trees] == [None, None, None]
    assert all(isinstance(p.train_loss, float) for p in trees)


def test_callback_returning_true_stops(data):
    X, Y, Xv, _ = data
    est = OKBoostRegressor(n_estimators=20, learning_rate=0.3, max_splits=3, random_state=0)
    est.fit(X, Y, callback=lambda p: p.done >= 4)
    assert est.stopped_by_callback_ is True
    assert est.n_estimators_ == 4 == est.ensemble_.n_trees and len(est.train_loss_) == 4
    full = OKBoostRegressor(n_estimators=20, learning_rate=0.3, max_splits=3, random_state=0)
    full.fit(X, Y)
    np.testing.assert_allclose(est.train_loss_, full.train_loss_[:4], rtol=1e-12)
    np.testing.assert_allclose(est.predict_weights(Xv).sum(axis=1), 1.0, rtol=1e-12)


def test_callback_stop_with_early_stopping(noisy):
    X, Y, Xv, Yv = noisy
    est = OKBoostRegressor(**OVERFIT, n_iter_no_change=50, tol=0.0)
    est.fit(X, Y, eval_set=(Xv, Yv), callback=lambda p: p.done == 6)
    assert est.stopped_by_callback_ is True and len(est.validation_loss_) == 6
    assert est.n_estimators_ == int(np.argmin(est.validation_loss_)) + 1


# ---------------------------------------------------------------------- subsampling
@pytest.mark.parametrize("subsample", [0.5, 0.8])
def test_subsample_weights_sum_to_one_and_give_the_decision(subsample, data):
    X, Y, Xv, _ = data
    est = OKBoostRegressor(
        n_estimators=10, learning_rate=0.5, max_splits=4, subsample=subsample, random_state=0
    )
    est.fit(X, Y)
    counts = est.ensemble_.train_count
    np.testing.assert_array_equal(counts.sum(axis=1), round(subsample * len(X)))
    assert set(np.unique(counts)) == {0, 1}
    Xq = np.r_[Xv, X[:5]]
    W = est.predict_weights(Xq)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(W @ Y, est.predict(Xq), atol=1e-12)


def test_subsample_with_a_kernel(data):
    X, Y, Xv, _ = data
    est = OKBoostRegressor(n_estimators=8, learning_rate=0.5, max_splits=4, subsample=0.6)
    est.fit(X, Y, kernel={"type": "rbf", "gamma": GAMMA})
    W, K = est.predict_weights(Xv), rbf_gram(Y, Y, GAMMA)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(est.predict_kernel_train(Xv), W @ K, atol=1e-10)
    np.testing.assert_allclose(est.predict_kernel(Xv), W @ K @ W.T, atol=1e-10)


# ---------------------------------------------------------------------- randomness
@pytest.mark.parametrize(
    "params",
    [
        {"subsample": 0.7},
        {"splitter": "random"},
        {"max_features": 2},
        {"n_iter_no_change": 2, "validation_fraction": 0.25},
    ],
)
def test_random_state_reproducibility(params, data):
    X, Y, Xv, _ = data

    def weights(seed):
        est = OKBoostRegressor(n_estimators=6, max_splits=3, random_state=seed, **params)
        return est.fit(X, Y).predict_weights(Xv)

    np.testing.assert_array_equal(weights(3), weights(3))
    assert not np.array_equal(weights(3), weights(4))


def test_random_state_generator_is_used_not_reset(data):
    X, Y, Xv, _ = data
    rng = np.random.default_rng(0)
    est = OKBoostRegressor(n_estimators=4, max_splits=3, subsample=0.5, random_state=rng)
    first = est.fit(X, Y).predict_weights(Xv)
    second = est.fit(X, Y).predict_weights(Xv)
    assert not np.array_equal(first, second)  # the Generator advanced, as in scikit-learn


# ---------------------------------------------------------------------- importances, splitters
def test_feature_importances(data):
    rng = np.random.default_rng(0)
    X = rng.random((80, 5))
    Y = np.c_[np.sin(6 * X[:, 2]), np.cos(4 * X[:, 2])] + 0.01 * rng.normal(size=(80, 2))
    est = OKBoostRegressor(n_estimators=20, learning_rate=0.3, max_splits=3, random_state=0)
    importances = est.fit(X, Y).feature_importances_
    assert importances.shape == (5,) and np.all(importances >= 0)
    assert importances.sum() == pytest.approx(1.0, rel=1e-12)
    assert np.argmax(importances) == 2 and importances[2] > 0.8
    # the total is the recorded split gains, normalized
    e = est.ensemble_
    internal = e.left >= 0
    raw = np.array([e.gain[internal & (e.feature == f)].sum() for f in range(5)])
    np.testing.assert_allclose(importances, raw / raw.sum(), rtol=1e-12)


def test_feature_importances_of_constant_outputs_are_zero():
    X = np.random.default_rng(0).random((20, 3))
    est = OKBoostRegressor(n_estimators=3, max_splits=2).fit(X, np.ones((20, 2)))
    np.testing.assert_array_equal(est.feature_importances_, np.zeros(3))


def test_random_splitter(data):
    X, Y, Xv, Yv = data
    est = OKBoostRegressor(
        n_estimators=30, learning_rate=0.3, max_splits=4, splitter="random", random_state=0
    )
    est.fit(X, Y, eval_set=(Xv, Yv))
    loss = est.train_loss_
    assert np.all(np.diff(loss) <= 1e-12 * loss[0])
    mean_loss = np.mean(np.sum((Yv - Y.mean(axis=0)) ** 2, axis=1))
    assert est.validation_loss_[-1] < 0.5 * mean_loss
    thresholds = est.ensemble_.threshold[est.ensemble_.left >= 0]
    # random cut points, not midpoints between training values
    sorted_x = np.sort(X, axis=0)
    midpoints = (sorted_x[1:] + sorted_x[:-1]) / 2
    assert not np.all(np.isin(thresholds, midpoints))


def test_boost_is_a_plain_function(data):
    X, Y, _, _ = data
    from okcore.trees.builder import TreeParams

    params = TreeParams(
        splitter="best",
        max_splits=3,
        max_features=4,
        leaf_order="variance",
        min_samples_leaf=1,
        max_depth=None,
    )
    result = boost(
        X,
        Y,
        np.sum(Y**2, axis=1),
        loss=SquaredFeatureLoss(),
        learner=TreeLearner(X, params, XT=np.ascontiguousarray(X.T)),
        n_estimators=5,
        learning_rate=0.5,
        subsample=1.0,
        rng=np.random.default_rng(0),
    )
    assert len(result.trees) == 5 and result.train_leaf.shape == (5, len(X))
    assert result.best_iteration == 4 and result.val_loss is None
    np.testing.assert_allclose(result.init, Y.mean(axis=0))
    est = OKBoostRegressor(
        n_estimators=5, learning_rate=0.5, max_splits=3, leaf_order="variance"
    ).fit(X, Y)
    np.testing.assert_allclose(result.train_loss, est.train_loss_, rtol=1e-12)


def test_a_bad_eval_set_fails_before_anything_is_fitted():
    rng = np.random.default_rng(0)
    X, Y = rng.random((30, 3)), rng.random((30, 2))
    est = OKBoostRegressor(n_estimators=3)
    with pytest.raises(DataError, match="eval_set X has 4 features"):
        est.fit(X, Y, eval_set=(rng.random((5, 4)), rng.random((5, 2))))
    assert not hasattr(est, "output_space_") and not hasattr(est, "ensemble_")


def test_factor_truncation_by_rank_and_tolerance():
    rng = np.random.default_rng(3)
    X, Y = rng.random((80, 4)), rng.random((80, 3))
    kernel = {"type": "rbf", "sigma": 0.5}
    exact = OKBoostRegressor(n_estimators=20).fit(X, Y, kernel=kernel)
    by_rank = OKBoostRegressor(n_estimators=20, factor_rank=10).fit(X, Y, kernel=kernel)
    by_tol = OKBoostRegressor(n_estimators=20, factor_tol=1e-3).fit(X, Y, kernel=kernel)
    lam = np.sort(np.linalg.eigvalsh(rbf_gram(Y, Y, 1 / (2 * 0.5**2))))[::-1]
    assert by_rank.output_space_.rank == 10
    assert by_tol.output_space_.rank == int(np.sum(lam > 1e-3 * lam[0]))
    assert exact.output_space_.rank > by_rank.output_space_.rank
    for est in (by_rank, by_tol):  # k(y, y) stays exact; W^F still reproduces F
        np.testing.assert_allclose(est.output_space_.diag, 1.0)
        W = est.predict_weights(X[:5])
        np.testing.assert_allclose(
            W @ est.output_space_.phi, est.predict_features(X[:5]), atol=1e-10
        )


def test_set_up_phases_report_an_eta(data):
    X, Y, _, _ = data
    seen: list[FitProgress] = []
    OKBoostRegressor(n_estimators=2, max_bins=32).fit(
        X, Y, kernel={"type": "rbf", "sigma": 1.0}, callback=seen.append
    )
    assert [p.phase for p in seen] == ["output_space", "binning", "trees", "trees"]
    assert all(p.done == 0 and p.phase_eta is not None and p.phase_eta >= 0 for p in seen[:2])


# ---------------------------------------------------------------------- L2 penalty
PENALISED_SEARCHES = [
    {"max_bins": None, "sketch_dim": None},
    {"max_bins": 16, "sketch_dim": None},
    {"max_bins": 16, "sketch_dim": 2},
    {"max_bins": None, "splitter": "random"},
    {"max_bins": None, "subsample": 0.7},
    {"max_bins": 16, "subsample": 0.7},
    {"tree_type": "oblivious", "max_depth": 3},
    {"tree_type": "oblivious", "max_depth": 3, "sketch_dim": 2, "subsample": 0.7},
    {"max_bins": 16, "colsample_bytree": 0.5},
]


@pytest.mark.parametrize("search", PENALISED_SEARCHES)
def test_penalised_weights_reproduce_the_decision(search, data):
    X, Y, Xv, _ = data
    est = OKBoostRegressor(
        n_estimators=8, learning_rate=0.5, max_splits=4, l2_regularization=3.0, random_state=0,
        **search,
    )  # fmt: skip
    est.fit(X, Y)
    Xq = np.r_[Xv, X[:5]]
    W = est.predict_weights(Xq)
    np.testing.assert_allclose(W @ est.output_space_.phi, est.predict_features(Xq), atol=1e-12)
    # F_0's weights sum to 1 and every residual's to 0: a boosted W^F's rows still sum to 1
    np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=1e-12)


def test_penalised_leaves_are_ridge_leaves_of_the_residuals(data):
    X, Y, _, _ = data
    l2 = 4.0
    est = OKBoostRegressor(
        n_estimators=1, max_splits=5, l2_regularization=l2, max_bins=None, random_state=0
    ).fit(X, Y)
    e = est.ensemble_
    residual = Y - Y.mean(axis=0)
    for L in range(len(e.value)):
        rows = residual[e.train_leaf[0] == L]
        ridge = np.linalg.solve((len(rows) + l2) * np.eye(Y.shape[1]), rows.sum(axis=0))
        np.testing.assert_allclose(e.value[L], ridge, atol=1e-12)
    # each leaf's weights over its residual rows sum to n / (n + lambda)
    W_tree = e.tree_coefficients()[0]
    for L in range(len(e.value)):
        n_leaf = int(np.sum(e.train_leaf[0] == L))
        assert W_tree[e.train_leaf[0] == L].sum() == pytest.approx(n_leaf / (n_leaf + l2))


def test_penalty_shrinks_and_zero_penalty_is_the_unpenalised_model(data):
    X, Y, Xv, _ = data
    base = {"n_estimators": 10, "max_splits": 4, "random_state": 0}
    plain = OKBoostRegressor(**base).fit(X, Y)
    zero = OKBoostRegressor(**base, l2_regularization=0.0).fit(X, Y)
    np.testing.assert_array_equal(zero.ensemble_.value, plain.ensemble_.value)
    np.testing.assert_array_equal(zero.predict_weights(Xv), plain.predict_weights(Xv))
    penalised = OKBoostRegressor(**base, l2_regularization=10.0).fit(X, Y)
    assert penalised.train_loss_[-1] > plain.train_loss_[-1]


@pytest.mark.parametrize("loss", ["absolute", "huber"])
def test_penalty_with_a_robust_loss_is_refused(loss, data):
    X, Y, _, _ = data
    est = OKBoostRegressor(loss=loss, l2_regularization=1.0)
    with pytest.raises(InvalidParameterError, match="applies to loss='squared' only"):
        est.fit(X, Y)
    OKBoostRegressor(loss=loss, l2_regularization=0.0, n_estimators=2).fit(X, Y)


def test_negative_penalty_is_refused(data):
    X, Y, _, _ = data
    with pytest.raises(InvalidParameterError, match="'l2_regularization' parameter"):
        OKBoostRegressor(l2_regularization=-1.0).fit(X, Y)


# ---------------------------------------------------------------------- the paper preset
def test_the_paper_preset_pins_every_parameter_of_the_algorithm():
    """Only parameters that cannot change the fitted model are left to the defaults, so a
    change of defaults never changes the preset (a new parameter must be pinned too)."""
    free = {"random_state", "n_jobs", "alpha", "validation_fraction", "tol", "warm_start"}
    assert set(PAPER_PRESET) == set(OKBoostRegressor().get_params()) - free
    est = OKBoostRegressor.paper()
    assert {k: v for k, v in est.get_params().items() if k in PAPER_PRESET} == PAPER_PRESET
    assert (est.max_bins, est.sketch_dim, est.leaf_order) == (None, None, "variance")
    assert (est.n_estimators, est.learning_rate, est.l2_regularization) == (500, 0.01, 0.0)


def test_the_defaults_are_the_measured_ones_and_the_preset_keeps_the_former(data):
    """The estimator's defaults (docs/RESULTS.md sections 9.4, 9.7 and 9.14) differ from the paper
    preset in tree type, leaf order, M, nu, search, penalty and early stopping; with
    splitter="random" the preset keeps sqrt(p) candidates (max_features=None), the default
    draws all p."""
    default = OKBoostRegressor()
    assert (default.leaf_order, default.n_estimators, default.learning_rate) == (
        "gain",
        "auto",
        0.1,
    )
    assert (default.max_features, default.early_stopping, default.l2_regularization) == (
        1.0,
        "auto",
        "auto",
    )
    assert (default.tree_type, default.max_splits, default.max_depth) == ("auto", None, None)
    assert (PAPER_PRESET["tree_type"], PAPER_PRESET["max_splits"]) == ("best-first", 10)
    assert PAPER_PRESET["l2_regularization"] == 0.0
    X, Y, _, _ = data
    paper = OKBoostRegressor.paper(n_estimators=4, splitter="random", random_state=0).fit(X, Y)
    explicit = OKBoostRegressor(
        n_estimators=4, learning_rate=0.01, max_splits=10, splitter="random",
        max_features="sqrt", leaf_order="variance", max_bins=None, sketch_dim=None,
        refine_cuts=False, early_stopping=False, random_state=0,
    ).fit(X, Y)  # fmt: skip
    for field in ("feature", "threshold", "value", "train_leaf"):
        np.testing.assert_array_equal(
            getattr(paper.ensemble_, field), getattr(explicit.ensemble_, field), err_msg=field
        )
    all_p = OKBoostRegressor.paper(
        n_estimators=4, splitter="random", max_features=1.0, random_state=0
    ).fit(X, Y)
    assert not np.array_equal(all_p.ensemble_.threshold, paper.ensemble_.threshold)


def test_the_paper_preset_takes_overrides_and_refuses_unknown_names(data):
    X, Y, _, _ = data
    est = OKBoostRegressor.paper(n_estimators=3, splitter="random", random_state=0)
    assert (est.n_estimators, est.splitter, est.max_bins) == (3, "random", None)
    est.fit(X, Y)
    assert est.max_bins_ is None and est.sketch_dim_ is None
    with pytest.raises(UnknownParameterError, match="not_a_parameter"):
        OKBoostRegressor.paper(not_a_parameter=1)


def test_the_paper_preset_searches_exactly_at_any_size():
    rng = np.random.default_rng(0)  # N x r above the fast default's threshold
    X, Y = rng.random((4100, 3)), rng.normal(size=(4100, 60))
    est = OKBoostRegressor.paper(n_estimators=1, max_splits=2).fit(X, Y)
    assert est.max_bins_ is None and est.sketch_dim_ is None
    assert OKBoostRegressor(n_estimators=1, max_splits=2).fit(X, Y).max_bins_ == 255


# ---------------------------------------------------------------------- staged predictions
STAGED_SETTINGS = [
    ({}, None),
    ({"max_bins": 16, "sketch_dim": 2}, None),
    ({"subsample": 0.7, "l2_regularization": 2.0}, None),
    ({"loss": "huber", "splitter": "random"}, None),
    ({}, {"type": "rbf", "gamma": GAMMA}),
    ({"tree_type": "oblivious", "max_depth": 3, "colsample_bytree": 0.5}, None),
]


@pytest.mark.parametrize(("params", "kernel"), STAGED_SETTINGS)
def test_staged_predictions_are_truncated_refits(params, kernel, data):
    X, Y, Xv, _ = data
    base = {"learning_rate": 0.4, "max_splits": 4, "random_state": 0, **params}
    full = OKBoostRegressor(n_estimators=9, **base).fit(X, Y, kernel=kernel)
    features = list(full.staged_predict_features(Xv))
    predictions = list(full.staged_predict(Xv))
    kernels = list(full.staged_predict_kernel(Xv, X[:5]))
    assert len(features) == len(predictions) == len(kernels) == 9
    for m in (1, 4, 9):
        refit = OKBoostRegressor(n_estimators=m, **base).fit(X, Y, kernel=kernel)
        np.testing.assert_array_equal(features[m - 1], refit.predict_features(Xv))
        np.testing.assert_array_equal(predictions[m - 1], refit.predict(Xv))
        np.testing.assert_array_equal(kernels[m - 1], refit.predict_kernel(Xv, X[:5]))
    np.testing.assert_array_equal(predictions[-1], full.predict(Xv))
    square = list(full.staged_predict_kernel(Xv))
    np.testing.assert_allclose(square[-1], full.predict_kernel(Xv), rtol=1e-13)


def test_staged_predictions_of_an_early_stopped_model_stop_at_the_kept_trees(noisy):
    X, Y, Xv, Yv = noisy
    est = OKBoostRegressor(**OVERFIT, n_iter_no_change=3, tol=0.0)
    est.fit(X, Y, eval_set=(Xv, Yv))
    staged = list(est.staged_predict(Xv))
    assert len(staged) == est.n_estimators_ < OVERFIT["n_estimators"]
    np.testing.assert_array_equal(staged[-1], est.predict(Xv))
    errors = [float(np.mean(np.sum((Yv - P) ** 2, axis=1))) for P in staged]
    np.testing.assert_allclose(errors, est.staged_loss(Xv, Yv), rtol=1e-10)


def test_staged_predictions_need_a_fitted_model(data):
    with pytest.raises(NotFittedError):
        next(OKBoostRegressor().staged_predict(data[0]))


# ---------------------------------------------------------------------- oblivious trees
def test_oblivious_boosting_shares_one_cut_per_level_and_keeps_w_f(data):
    X, Y, Xv, _ = data
    est = OKBoostRegressor(tree_type="oblivious", max_depth=3, n_estimators=6, random_state=0).fit(
        X, Y
    )
    assert est.max_bins_ == 255  # "auto": histograms at every size
    e = est.ensemble_
    for m in range(e.n_trees):
        lo, hi = e.node_offset[m], e.node_offset[m + 1]
        internal = e.feature[lo:hi] >= 0
        cuts = set(zip(e.feature[lo:hi][internal], e.threshold[lo:hi][internal], strict=True))
        assert 1 <= len(cuts) <= 3 and e.leaf_offset[m + 1] - e.leaf_offset[m] <= 8
    W = est.predict_weights(Xv)
    np.testing.assert_allclose(W @ est.output_space_.phi, est.predict_features(Xv), atol=1e-12)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=1e-12)
    assert est.train_loss_[-1] < est.train_loss_[0]


def test_oblivious_depth_defaults_to_four_for_many_outputs_by_the_rows_for_one_in_the_cost():
    est = OKBoostRegressor(tree_type="oblivious", n_estimators=10)
    assert est.growth_plan(10_000, 1).max_leaves == 1024  # one output column: depth 10
    assert est.growth_plan(500, 1).max_leaves == 64  # depth 6
    assert est.growth_plan(10_000, 5).max_leaves == 16  # many: depth 4
    deep = OKBoostRegressor(tree_type="oblivious", max_depth=8, min_samples_leaf=50)
    assert deep.growth_plan(10_000, 5).max_leaves == 200
    one = est.estimate_cost(4000, 20, kernel={"type": "linear"}, n_outputs=1)
    assert (one.search, one.stage_size) == ("histogram", 256)  # depth 8 at N = 4,000
    cost = est.estimate_cost(4000, 20, kernel={"type": "linear"}, n_outputs=5)
    assert (cost.search, cost.stage_size) == ("histogram", 16)
    best_first = OKBoostRegressor(tree_type="best-first", n_estimators=10, max_bins=255)
    plain = best_first.estimate_cost(4000, 20, kernel={"type": "linear"}, n_outputs=5)
    assert cost.memory_bytes > plain.memory_bytes  # the level histogram


def test_the_cost_counts_two_level_histograms_for_many_outputs(monkeypatch):
    """Oblivious trees searching several columns hold the level's histogram and its
    parents' (histogram subtraction); one column holds one."""
    import okcore.boosting.plan as plan
    from okcore.trees.oblivious import HISTOGRAM_BYTES

    est = OKBoostRegressor(tree_type="oblivious", max_depth=12, n_estimators=10)

    def histogram_bytes(n_outputs: int) -> float:
        def memory() -> float:
            kernel = {"type": "linear"}
            return est.estimate_cost(200_000, 400, kernel=kernel, n_outputs=n_outputs).memory_bytes

        full = memory()
        monkeypatch.setattr(plan, "HISTOGRAM_BYTES", 0)
        without = memory()
        monkeypatch.undo()
        return full - without

    assert histogram_bytes(50) == 2 * HISTOGRAM_BYTES  # capped: 2^11 nodes x 255 bins x 400
    assert histogram_bytes(1) == HISTOGRAM_BYTES


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"splitter": "random"}, "needs splitter='best'"),
        ({"max_bins": None}, "histogram split search only"),
        ({"max_depth": 17}, r"int in \[1, 16\]"),
        ({"tree_type": "symmetric"}, "'tree_type' parameter"),
    ],
)
def test_what_oblivious_trees_refuse(params, match, data):
    X, Y, _, _ = data
    with pytest.raises(InvalidParameterError, match=match):
        OKBoostRegressor(**{"tree_type": "oblivious", **params}).fit(X, Y)


def test_oblivious_trees_refuse_sparse_inputs(data):
    from scipy import sparse

    X, Y, _, _ = data
    with pytest.raises(InvalidParameterError, match="needs dense inputs"):
        OKBoostRegressor(tree_type="oblivious").fit(sparse.csr_matrix(X), Y)


def test_oblivious_model_round_trips_and_old_models_load_as_best_first(data, tmp_path):
    import json

    from okcore import load, save

    X, Y, Xv, _ = data
    est = OKBoostRegressor(
        tree_type="oblivious", max_depth=3, n_estimators=5, colsample_bytree=0.5,
        l2_regularization=1.0, random_state=0,
    ).fit(X, Y)  # fmt: skip
    path = save(est, tmp_path / "oblivious")
    loaded = load(path)
    assert (loaded.tree_type, loaded.colsample_bytree) == ("oblivious", 0.5)
    np.testing.assert_array_equal(loaded.predict_weights(Xv), est.predict_weights(Xv))
    np.testing.assert_array_equal(loaded.predict(Xv), est.predict(Xv))
    # a manifest written before the parameters existed: grown best-first on all features
    assert loaded.tree_type_ == "oblivious"
    plain = OKBoostRegressor(tree_type="best-first", n_estimators=3, random_state=0).fit(X, Y)
    path = save(plain, tmp_path / "old")
    manifest = json.loads((path / "manifest.json").read_text())
    for name in ("tree_type", "colsample_bytree"):
        del manifest["params"][name]
    del manifest["attributes"]["tree_type_"]
    (path / "manifest.json").write_text(json.dumps(manifest))
    old = load(path)
    assert (old.tree_type, old.tree_type_, old.colsample_bytree) == ("best-first",) * 2 + (1.0,)
    np.testing.assert_array_equal(old.predict(Xv), plain.predict(Xv))
    # a model saved before "auto" existed reports the tree type it names as the one grown
    path = save(est, tmp_path / "before_auto")
    manifest = json.loads((path / "manifest.json").read_text())
    del manifest["attributes"]["tree_type_"]
    (path / "manifest.json").write_text(json.dumps(manifest))
    assert load(path).tree_type_ == "oblivious"


def test_auto_tree_type_is_oblivious_where_it_applies_else_best_first(data, tmp_path):
    """The default ``tree_type="auto"``: oblivious trees of depth 4 and lambda 10 (r > 1
    output columns) or depth 6 and lambda 3 (one) on dense inputs with the best splitter, histograms and no ``max_splits``;
    best-first trees of J = 10 (or the given ``max_splits``) otherwise. The fitted model is
    the one of the resolved type, and it round-trips with ``tree_type_``."""
    from scipy import sparse

    from okcore import load, save

    X, Y, Xv, _ = data
    base = {"n_estimators": 4, "random_state": 0}

    def fitted(X, Y, **params):
        return OKBoostRegressor(**base, **params).fit(X, Y)

    def depths(est):  # the levels of each tree: its distinct cuts
        e, levels = est.ensemble_, set()
        for m in range(e.n_trees):
            lo, hi = e.node_offset[m], e.node_offset[m + 1]
            internal = e.feature[lo:hi] >= 0
            cuts = zip(e.feature[lo:hi][internal], e.threshold[lo:hi][internal], strict=True)
            levels.add(len(set(cuts)))
        return levels

    auto = fitted(X, Y)
    assert auto.tree_type_ == "oblivious" and auto.tree_type == "auto"
    assert depths(auto) == {4}
    same = fitted(X, Y, tree_type="oblivious", max_depth=4)
    np.testing.assert_array_equal(auto.predict_weights(Xv), same.predict_weights(Xv))
    assert auto.ensemble_.l2_regularization == 10.0  # l2_regularization="auto", r > 1
    assert (auto.max_bins_, auto.sketch_dim_) == (255, None)  # r <= 8: no sketch
    wide = fitted(X, np.c_[Y, Y**2, np.sin(Y), np.cos(Y)])  # r > 8: the "auto" sketch at any size
    assert (wide.tree_type_, wide.max_bins_, wide.sketch_dim_) == ("oblivious", 255, 8)
    assert (
        fitted(X, np.c_[Y, Y**2, np.sin(Y), np.cos(Y)], max_splits=3).sketch_dim_ is None
    )  # best-first: exact
    assert fitted(X, Y, loss="huber").ensemble_.l2_regularization == 0.0  # no penalised mean
    assert fitted(X, Y, max_splits=3).ensemble_.l2_regularization == 0.0  # best-first
    # one output column, few rows: depth 6 (lambda 30 stops some trees' growth on 60 rows)
    assert depths(fitted(X, Y[:, :1], l2_regularization=3.0)) == {6}
    assert fitted(X, Y[:, :1]).ensemble_.l2_regularization == 30.0  # one output: lambda 30
    assert depths(fitted(X, Y, max_depth=2)) == {2}
    for params in ({"max_splits": 3}, {"splitter": "random"}, {"max_bins": None}):
        est = fitted(X, Y, **params)
        assert est.tree_type_ == "best-first"
        pinned = fitted(X, Y, **{"tree_type": "best-first", **params})
        np.testing.assert_array_equal(est.predict_weights(Xv), pinned.predict_weights(Xv))
    assert np.diff(fitted(X, Y, max_bins=None).ensemble_.leaf_offset).max() == 11  # J = 10
    sparse_fit = fitted(sparse.csr_matrix(X), Y)
    assert sparse_fit.tree_type_ == "best-first"
    loaded = load(save(auto, tmp_path / "auto"))
    assert (loaded.tree_type, loaded.tree_type_) == ("auto", "oblivious")
    np.testing.assert_array_equal(loaded.predict(Xv), auto.predict(Xv))


@pytest.mark.parametrize(
    "params",
    [{}, {"max_splits": 3}, {"loss": "huber"}, {"early_stopping": True}, {"max_bins": None}],
)
def test_the_fitted_model_is_the_one_of_its_growth_plan(data, params):
    """One resolution per fit: the trees' type, sizes, penalty and search are those of
    ``growth_plan`` on the rows the trees are fitted to."""
    X, Y, _, _ = data
    est = OKBoostRegressor(n_estimators=3, random_state=0, **params).fit(X, Y)
    plan = est.growth_plan(est.n_train_, est.output_space_.rank, est.resolve_tree_type(X))
    assert (plan.tree_type, plan.max_bins, plan.sketch_dim) == (
        est.tree_type_, est.max_bins_, est.sketch_dim_,
    )  # fmt: skip
    assert plan.l2_regularization == est.ensemble_.l2_regularization
    leaves = np.diff(est.ensemble_.leaf_offset)
    assert leaves.max() <= plan.max_leaves
    oblivious, rank = plan.tree_type == "oblivious", est.output_space_.rank
    assert plan.refine_cuts == (
        est.splitter == "best" and resolve_refine_cuts(est.refine_cuts, oblivious, rank)
    )
    if plan.tree_type == "oblivious":
        assert plan.max_leaves == 2**plan.max_depth


def test_one_output_default_depth_grows_with_the_rows():
    """One output column: depth floor(log2(N / 8)) between 6 and 10 and lambda 30
    (docs/RESULTS.md section 9.11), fixed at fit time by the rows given (also for a warm
    start); many outputs: depth 4, lambda 10."""
    from okcore.defaults import default_oblivious_depth, default_oblivious_l2

    assert (default_oblivious_l2(1), default_oblivious_l2(None), default_oblivious_l2(2)) == (
        30.0, 30.0, 10.0,
    )  # fmt: skip

    assert [default_oblivious_depth(1, n) for n in (50, 1023, 1024, 2047, 2048, 4000)] == [
        6, 6, 7, 7, 8, 8,
    ]  # fmt: skip
    assert [default_oblivious_depth(1, n) for n in (8191, 8192, 36000, 10**7)] == [9, 10, 10, 10]
    assert default_oblivious_depth(1) == 10  # N not known yet: the largest
    assert {default_oblivious_depth(r, n) for r in (2, 50) for n in (None, 50, 10**6)} == {4}
    rng = np.random.default_rng(0)
    X = rng.random((2100, 5))
    y = np.sin(6 * X[:, 0]) * X[:, 1] + X[:, 2] * X[:, 3] + 0.1 * rng.standard_normal(2100)
    est = OKBoostRegressor(n_estimators=3, random_state=0).fit(X, y)
    pinned = OKBoostRegressor(n_estimators=3, random_state=0, max_depth=8).fit(X, y)
    assert est.max_depth is None and est.tree_type_ == "oblivious"
    np.testing.assert_array_equal(est.ensemble_.feature, pinned.ensemble_.feature)
    np.testing.assert_array_equal(est.predict(X[:50]), pinned.predict(X[:50]))
    feature, threshold = (getattr(est.ensemble_, a)[: est.ensemble_.node_offset[1]] for a in (
        "feature", "threshold"))  # fmt: skip
    cuts = zip(feature[feature >= 0], threshold[feature >= 0], strict=True)
    assert len(set(cuts)) == 8  # the first tree's levels
    more = OKBoostRegressor(n_estimators=2, random_state=0, warm_start=True).fit(X, y)
    more.set_params(n_estimators=3).fit(X, y)
    np.testing.assert_array_equal(more.predict(X[:50]), est.predict(X[:50]))


# ---------------------------------------------------------------------- feature subsampling
def test_colsample_bytree_one_is_the_model_without_subsampling(data):
    X, Y, Xv, _ = data
    base = {"n_estimators": 6, "max_splits": 4, "max_bins": 16, "random_state": 0}
    plain = OKBoostRegressor(**base).fit(X, Y)
    full = OKBoostRegressor(**base, colsample_bytree=1.0).fit(X, Y)
    np.testing.assert_array_equal(full.predict_features(Xv), plain.predict_features(Xv))


@pytest.mark.parametrize(
    "params",
    [
        {"max_bins": 16},
        {"max_bins": None},
        {"max_bins": None, "splitter": "random"},
        {"tree_type": "oblivious", "max_depth": 3},
    ],
)
def test_colsample_bytree_draws_each_trees_features(params, data):
    X, Y, _, _ = data
    X = np.c_[X, X[:, ::-1] + 0.1]  # 8 features
    est = OKBoostRegressor(
        n_estimators=12, max_splits=6, colsample_bytree=0.25, random_state=0, **params
    ).fit(X, Y)
    e = est.ensemble_
    used = [set(e.feature[e.node_offset[m] : e.node_offset[m + 1]]) - {-1} for m in range(12)]
    assert all(len(features) <= 2 for features in used)  # round(0.25 x 8)
    assert len(set().union(*used)) > 2  # each tree draws its own


def test_colsample_bytree_out_of_range_is_refused(data):
    X, Y, _, _ = data
    with pytest.raises(InvalidParameterError, match="'colsample_bytree' parameter"):
        OKBoostRegressor(colsample_bytree=0.0).fit(X, Y)


@pytest.mark.parametrize("params", [{"early_stopping": True}, {"n_iter_no_change": 3}, {}])
@pytest.mark.parametrize("sparse_rows", ["both", "validation"])
def test_sparse_inputs_with_early_stopping_or_an_eval_set_fit_as_dense_ones(params, sparse_rows):
    """Sparse (CSR) inputs and validation rows are counted by their shape, not len(): the
    fit is the dense inputs' fit, with early stopping (its held-out rows) and with an
    ``eval_set`` ({}: the last 20 rows)."""
    from scipy import sparse

    rng = np.random.default_rng(0)
    X = rng.random((80, 3))
    y = X[:, 0] + 0.1 * rng.standard_normal(80)
    X = np.where(X > 0.5, X, 0.0)
    base = {"n_estimators": 10, "tree_type": "best-first", "random_state": 0, **params}

    def fitted(X_fit, X_val):
        eval_set = None if params else (X_val, y[60:])
        return OKBoostRegressor(**base).fit(X_fit, y[:60], eval_set=eval_set)

    dense = fitted(X[:60], X[60:])
    X_fit = sparse.csr_matrix(X[:60]) if sparse_rows == "both" else X[:60]
    fit = fitted(X_fit, sparse.csr_matrix(X[60:]))
    np.testing.assert_array_equal(fit.predict(X[60:]), dense.predict(X[60:]))
    np.testing.assert_array_equal(fit.validation_loss_, dense.validation_loss_)
