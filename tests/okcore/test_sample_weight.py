"""sample_weight in fit: the weighted trees (okcore.trees.weighted), the weighted squared loss
of boosting, the tree and forest estimators.

Inputs take few distinct values (multiples of 1/8 in [0, 1]: at most 9 per feature, exact in
float32), so that binning into max_bins=255 bins puts one value per bin whatever the rows
or their repeats: repeated rows and integer weights then see the same cuts."""

import numpy as np
import pytest

from okcore import OK3ForestRegressor, OK3Regressor, OKBoostRegressor
from okcore.exceptions import DataError, InvalidParameterError
from okcore.trees.binning import bin_inputs
from okcore.trees.builder import TreeParams, build_tree
from okcore.trees.weighted import build_weighted_tree


def data(seed, n=200, p=4, d=3):
    rng = np.random.default_rng(seed)
    X = np.round(rng.random((n, p)) * 8) / 8
    Y = np.c_[np.sin(3 * X[:, 0]) + X[:, 1] ** 2, X[:, 2] - X[:, 0], X[:, 3]][:, :d]
    Y = Y + 0.1 * rng.standard_normal((n, d))
    return X, Y, rng.integers(0, 4, n).astype(float)


def params(tree_type, l2=0.0, **kw):
    base = dict(
        splitter="best", max_splits=None if tree_type == "oblivious" else 9, max_features=4,
        leaf_order="variance", min_samples_leaf=1, max_depth=3 if tree_type == "oblivious" else None,
        l2_regularization=l2, tree_type=tree_type,
    )  # fmt: skip
    base.update(kw)
    return TreeParams(**base)


@pytest.mark.parametrize("tree_type", ["best-first", "oblivious"])
@pytest.mark.parametrize("l2", [0.0, 1.5])
def test_weighted_tree_with_unit_and_integer_weights_is_the_tree_of_repeated_rows(tree_type, l2):
    X, Y, w = data(0)
    binned = bin_inputs(X, 255)
    p = params(tree_type, l2)
    unit = build_weighted_tree(binned, Y, np.ones(len(X)), p, np.random.default_rng(1))
    plain = build_tree(None, Y, p, np.random.default_rng(1), binned=binned)
    repeated = build_tree(
        None, Y, p, np.random.default_rng(1), binned=binned,
        rows=np.repeat(np.arange(len(X)), w.astype(int)),
    )  # fmt: skip
    weighted = build_weighted_tree(binned, Y, w, p, np.random.default_rng(1))
    for ours, theirs in ((unit, plain), (weighted, repeated)):
        np.testing.assert_array_equal(ours["feature"], theirs.feature)
        np.testing.assert_array_equal(ours["threshold"], theirs.threshold)
        np.testing.assert_allclose(ours["value"], theirs.value, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(ours["gain"], theirs.gain, rtol=1e-9, atol=1e-12)


def test_per_entry_weights_equal_row_weights_when_every_entry_has_its_row_weight():
    X, Y, w = data(1)
    binned = bin_inputs(X, 255)
    p = params("best-first", 0.5)
    rows = build_weighted_tree(binned, Y, w, p, np.random.default_rng(0))
    entries = build_weighted_tree(
        binned, Y, np.repeat(w[:, None], 3, 1), p, np.random.default_rng(0)
    )
    np.testing.assert_array_equal(rows["feature"], entries["feature"])
    np.testing.assert_allclose(rows["value"], entries["value"], rtol=1e-12)


@pytest.mark.parametrize("tree_type", ["best-first", "oblivious"])
def test_okboost_integer_weights_equal_repeated_rows(tree_type):
    X, Y, w = data(2)
    kw = dict(n_estimators=15, learning_rate=0.3, tree_type=tree_type, max_bins=255,
              early_stopping=False, l2_regularization=0.0)  # fmt: skip
    if tree_type == "best-first":
        kw["max_splits"] = 7
    rep = np.repeat(np.arange(len(X)), w.astype(int))
    ours = OKBoostRegressor(**kw).fit(X, Y, sample_weight=w)
    theirs = OKBoostRegressor(**kw).fit(X[rep], Y[rep])
    Xq = data(3)[0]
    np.testing.assert_allclose(ours.predict(Xq), theirs.predict(Xq), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.train_loss_, theirs.train_loss_, rtol=1e-9)
    # W^F: the weights of the training outputs reproduce the predictions
    Wq = ours.predict_weights(Xq)
    np.testing.assert_allclose(Wq @ Y, ours.predict(Xq), atol=1e-10)


@pytest.mark.parametrize("tree_type", ["best-first", "oblivious"])
def test_weights_with_missing_inputs_equal_repeated_rows(tree_type):
    """Weighted trees search missing values' twin columns as the default path does."""
    X, Y, w = data(2)
    X = X.copy()
    X[np.random.default_rng(7).random(X.shape) < 0.2] = np.nan
    kw = dict(n_estimators=15, learning_rate=0.3, tree_type=tree_type, max_bins=255,
              early_stopping=False, l2_regularization=0.0)  # fmt: skip
    if tree_type == "best-first":
        kw["max_splits"] = 7
    rep = np.repeat(np.arange(len(X)), w.astype(int))
    ours = OKBoostRegressor(**kw).fit(X, Y, sample_weight=w)
    theirs = OKBoostRegressor(**kw).fit(X[rep], Y[rep])
    Xq = data(3)[0].copy()
    Xq[::3, 0] = np.nan
    np.testing.assert_allclose(ours.predict(Xq), theirs.predict(Xq), rtol=1e-9, atol=1e-12)


def test_weighted_random_splits_refuse_missing_inputs_with_the_fix():
    X, Y, w = data(2)
    X = X.copy()
    X[0, 1] = np.nan
    with pytest.raises(InvalidParameterError, match="impute them, or use splitter='best'"):
        OK3Regressor(splitter="random", random_state=0).fit(X, Y, sample_weight=w)


def test_okboost_zero_weight_is_a_dropped_row():
    X, Y, w = data(4)
    kw = dict(n_estimators=10, tree_type="best-first", max_splits=5, max_bins=255,
              early_stopping=False, l2_regularization=1.0)  # fmt: skip
    w[w == 0] = 0.0
    keep = w > 0
    ours = OKBoostRegressor(**kw).fit(X, Y, sample_weight=w)
    theirs = OKBoostRegressor(**kw).fit(X[keep], Y[keep], sample_weight=w[keep])
    np.testing.assert_allclose(ours.predict(X[keep]), theirs.predict(X[keep]), rtol=1e-10)


def test_okboost_unit_weights_are_the_unweighted_fit_bit_for_bit():
    X, Y, _ = data(5)
    kw = dict(n_estimators=8, random_state=0)
    ours = OKBoostRegressor(**kw).fit(X, Y, sample_weight=np.ones(len(X)))
    theirs = OKBoostRegressor(**kw).fit(X, Y)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))


def test_okboost_weighted_stumps_are_sklearn_gradient_boosting_with_sample_weight():
    sklearn_ensemble = pytest.importorskip("sklearn.ensemble")
    X, Y, _ = data(6, n=300)
    y = Y[:, 0]
    w = np.random.default_rng(7).random(len(X)) * 3
    ours = OKBoostRegressor(
        n_estimators=40, learning_rate=0.2, max_splits=1, tree_type="best-first",
        max_bins=255, early_stopping=False, l2_regularization=0.0,
    ).fit(X, y, sample_weight=w)  # fmt: skip
    theirs = sklearn_ensemble.GradientBoostingRegressor(
        n_estimators=40, learning_rate=0.2, max_depth=1, random_state=0
    ).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), atol=1e-8)
    np.testing.assert_allclose(ours.train_loss_, theirs.train_score_, rtol=1e-8)


ROBUST_SKLEARN = {"absolute": "absolute_error", "huber": "huber"}


def robust_kw(J, **kw):
    return dict(n_estimators=20, learning_rate=0.2, max_splits=J, leaf_order="gain",
                tree_type="best-first", max_bins=255, early_stopping=False, **kw)  # fmt: skip


def scalar_heavy_tailed(seed, n=300):
    """Few distinct input values (one bin per value: scikit-learn's exact cuts) and Student-t
    noise, so that the robust losses' medians and clipping matter."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.random((n, 6)) * 16) / 16
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.3 * rng.standard_t(2, n)
    return X, y


@pytest.mark.parametrize("loss", ["absolute", "huber"])
@pytest.mark.parametrize("J", [1, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_weighted_robust_losses_are_sklearn_gradient_boosting_with_sample_weight(loss, J, seed):
    """Weighted medians (inverted CDF) for F_0 and the leaves, Huber's delta the weighted
    alpha-quantile: scikit-learn's conventions. Real-valued weights, so that no cumulative
    weight lands exactly on the half (where okcore's F_0 takes the midpoint). A weighted
    F_0 is a data point: its row's residual is 0, whose direction is 0 in okcore and +-1 in
    scikit-learn (test_sklearn_equivalence.py); with the absolute loss that row can move a
    split of the first tree (it does for seeds 3 and 5 here), so the seeds are ones where
    it does not."""
    sklearn_ensemble = pytest.importorskip("sklearn.ensemble")
    X, y = scalar_heavy_tailed(seed)
    w = np.random.default_rng(7).random(len(X)) * 3
    ours = OKBoostRegressor(loss=loss, **robust_kw(J)).fit(X, y, sample_weight=w)
    theirs = sklearn_ensemble.GradientBoostingRegressor(
        loss=ROBUST_SKLEARN[loss], max_leaf_nodes=J + 1, max_depth=None, learning_rate=0.2,
        n_estimators=20, random_state=0,
    ).fit(X, y, sample_weight=w)  # fmt: skip
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-8)
    np.testing.assert_allclose(ours.train_loss_, theirs.train_score_, rtol=1e-8)


@pytest.mark.parametrize("loss", ["absolute", "huber"])
@pytest.mark.parametrize("d", [1, 3])
def test_weighted_robust_losses_with_integer_weights_equal_repeated_rows(loss, d):
    """One column: weighted medians; three: the weighted Weiszfeld iterations (equal to
    the repeated rows' up to its stopping tolerance)."""
    X, Y, w = data(15, d=d)
    Y = Y[:, 0] if d == 1 else Y
    rep = np.repeat(np.arange(len(X)), w.astype(int))
    kw = robust_kw(3, subsample=1.0)
    ours = OKBoostRegressor(loss=loss, **kw).fit(X, Y, sample_weight=w)
    theirs = OKBoostRegressor(loss=loss, **kw).fit(X[rep], Y[rep])
    Xq = data(16)[0]
    tol = 1e-12 if d == 1 else 1e-6
    np.testing.assert_allclose(ours.predict(Xq), theirs.predict(Xq), rtol=0, atol=tol)
    np.testing.assert_allclose(ours.train_loss_, theirs.train_loss_, rtol=tol)
    # W^F: the weights of the training outputs reproduce the predictions
    np.testing.assert_allclose(ours.predict_weights(Xq) @ Y, ours.predict(Xq), atol=1e-10)


@pytest.mark.parametrize("loss", ["absolute", "huber"])
def test_weighted_robust_losses_zero_weight_is_a_dropped_row_and_unit_weights_unweighted(loss):
    X, Y, w = data(17)
    keep = w > 0
    kw = robust_kw(3)
    ours = OKBoostRegressor(loss=loss, **kw).fit(X, Y, sample_weight=w)
    theirs = OKBoostRegressor(loss=loss, **kw).fit(X[keep], Y[keep], sample_weight=w[keep])
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-9)
    unit = OKBoostRegressor(loss=loss, n_estimators=5).fit(X, Y, sample_weight=np.ones(len(X)))
    plain = OKBoostRegressor(loss=loss, n_estimators=5).fit(X, Y)
    np.testing.assert_array_equal(unit.predict(X), plain.predict(X))


def test_robust_losses_refuse_unknown_outputs_with_the_fix():
    X, Y, _ = data(18)
    Y = Y.copy()
    Y[0, 1] = np.nan
    with pytest.raises(InvalidParameterError, match="need loss='squared'"):
        OKBoostRegressor(loss="huber", n_estimators=2).fit(X, Y)


def test_forest_and_tree_integer_weights_equal_repeated_rows():
    X, Y, w = data(8)
    rep = np.repeat(np.arange(len(X)), w.astype(int))
    tree_w = OK3Regressor(max_bins=255, max_splits=9).fit(X, Y, sample_weight=w)
    tree_r = OK3Regressor(max_bins=255, max_splits=9).fit(X[rep], Y[rep])
    np.testing.assert_allclose(tree_w.predict(X), tree_r.predict(X), rtol=1e-10)
    np.testing.assert_allclose(tree_w.predict_weights(X) @ Y, tree_w.predict(X), atol=1e-10)
    forest = OK3ForestRegressor(n_estimators=5, max_bins=255, random_state=0)
    fitted = forest.fit(X, Y, sample_weight=w)
    np.testing.assert_allclose(fitted.predict_weights(X) @ Y, fitted.predict(X), atol=1e-10)


def test_okboost_from_kernel_ridge_integer_weights_equal_repeated_rows():
    # the starting kernel ridge is fitted with the boosting's sample weights, then the trees
    X, Y, w = data(4)
    kw = dict(n_estimators=10, learning_rate=0.3, max_bins=255, early_stopping=False,
              l2_regularization=0.0,
              init={"alpha": 0.3, "gamma": 1.0})  # fmt: skip
    rep = np.repeat(np.arange(len(X)), w.astype(int))
    ours = OKBoostRegressor(**kw).fit(X, Y, sample_weight=w)
    theirs = OKBoostRegressor(**kw).fit(X[rep], Y[rep])
    Xq = data(3)[0]
    np.testing.assert_allclose(ours.predict(Xq), theirs.predict(Xq), rtol=1e-8, atol=1e-10)
    searched = OKBoostRegressor(n_estimators=5, init="kernel_ridge", random_state=0)
    assert np.isfinite(searched.fit(X, Y, sample_weight=w).predict(Xq)).all()


@pytest.mark.parametrize(
    "weight, message",
    [
        (np.ones(3), "one weight per training row"),
        (np.ones((200, 1)), "1-D"),
        (np.r_[np.nan, np.ones(199)], "not finite"),
        (np.r_[-1.0, np.ones(199)], "negative"),
        (np.zeros(200), "all zero"),
    ],
)
def test_bad_sample_weight_is_a_clear_error(weight, message):
    X, Y, _ = data(9)
    with pytest.raises(DataError, match=message):
        OKBoostRegressor(n_estimators=2).fit(X, Y, sample_weight=weight)


@pytest.mark.parametrize(
    "est, message",
    [
        (OKBoostRegressor(n_estimators=2, max_bins=None, tree_type="best-first"), "max_bins"),
        (OK3Regressor(), "max_bins"),
        (OKBoostRegressor(n_estimators=2, warm_start=True), "warm_start"),
    ],
)
def test_weighted_fits_not_covered_say_how_to_fix_them(est, message):
    X, Y, w = data(10, n=400)
    X[:, 0] = np.arange(len(X))  # 400 distinct values: max_bins=None cannot bin them exactly
    with pytest.raises(InvalidParameterError, match=message):
        est.fit(X, Y, sample_weight=w + 1)


def test_auto_search_of_a_weighted_fit_is_histograms_where_exact_would_be_refused():
    # max_bins="auto" resolves to the exact search on small best-first fits; weighted trees
    # search histograms only, so "auto" bins them (255 bins) instead of refusing the inputs
    X, Y, w = data(10, n=400)
    X[:, 0] = np.arange(len(X))  # 400 distinct values
    kw = dict(n_estimators=5, tree_type="best-first", random_state=0)
    auto = OKBoostRegressor(**kw).fit(X, Y, sample_weight=w + 1)
    binned = OKBoostRegressor(max_bins=255, **kw).fit(X, Y, sample_weight=w + 1)
    assert auto.max_bins_ == 255
    np.testing.assert_array_equal(auto.predict(X), binned.predict(X))
    assert OKBoostRegressor(**kw).fit(X, Y).max_bins_ is None  # unweighted: still exact


def test_exact_search_with_few_distinct_values_is_weighted_on_one_bin_per_value():
    X, Y, w = data(13)
    rep = np.repeat(np.arange(len(X)), w.astype(int))
    ours = OK3Regressor(max_splits=9).fit(X, Y, sample_weight=w)
    theirs = OK3Regressor(max_splits=9).fit(X[rep], Y[rep])
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-10)


def test_kernel_ridge_integer_and_zero_weights_equal_repeated_and_dropped_rows():
    from okcore import KernelRidgeRegressor

    X, Y, w = data(11, n=80)
    rep = np.repeat(np.arange(len(X)), w.astype(int))
    for n_components in (None, 30):
        kw = dict(
            alpha=0.3, input_kernel="rbf", gamma=1.0, n_components=n_components, random_state=0
        )
        ours = KernelRidgeRegressor(**kw).fit(X, Y, sample_weight=w)
        if n_components is None:
            theirs = KernelRidgeRegressor(**kw).fit(X[rep], Y[rep])
            np.testing.assert_allclose(ours.predict(X), theirs.predict(X), atol=1e-8)
        keep = w > 0
        dropped = KernelRidgeRegressor(**dict(kw, n_components=None)).fit(
            X[keep], Y[keep], sample_weight=w[keep]
        )
        if n_components is None:
            np.testing.assert_allclose(ours.predict(X), dropped.predict(X), atol=1e-8)
    cv = KernelRidgeRegressor(alpha="cv", random_state=0).fit(X, Y, sample_weight=w)
    assert cv.alpha_ > 0


def test_an_estimator_without_weights_refuses_them():
    from okcore.kernel_models.krr_boosting import KRRBoostRegressor

    class Unweighted(KRRBoostRegressor):
        supports_sample_weight = False

    X, Y, w = data(12, n=40)
    with pytest.raises(DataError, match="sample_weight is not supported by Unweighted"):
        Unweighted().fit(X, Y, sample_weight=w)


@pytest.mark.parametrize(
    "rule",
    [
        dict(regularization="sun-yao", cg_iter=3),
        dict(regularization="sun-yao", cg_iter=2, reweight=True),
        dict(regularization="shrinkage", learning_rate=0.5),
    ],
)
def test_krr_boost_integer_weights_equal_repeated_rows(rule):
    """Every row in every stage's subset and basis (the draws do not see the weights): the
    weighted stages, eq. 20, CG and re-weighting are those of the repeated rows."""
    from okcore.kernel_models.krr_boosting import KRRBoostRegressor

    X, Y, w = data(19, n=40)
    rep = np.repeat(np.arange(len(X)), w.astype(int))
    kw = dict(n_estimators=6, subset_size=1000, n_basis=1000, basis_selection="random",
              gamma=2.0, alpha=0.5, random_state=0, **rule)  # fmt: skip
    ours = KRRBoostRegressor(**kw).fit(X, Y, sample_weight=w)
    theirs = KRRBoostRegressor(**kw).fit(X[rep], Y[rep])
    Xq = data(20, n=30)[0]
    np.testing.assert_allclose(ours.predict(Xq), theirs.predict(Xq), rtol=0, atol=1e-7)
    np.testing.assert_allclose(ours.train_loss_, theirs.train_loss_, rtol=1e-7)
    np.testing.assert_allclose(ours.objective_, theirs.objective_, rtol=1e-7)


def test_krr_boost_zero_weight_is_a_dropped_row():
    """Random subsets, info-gain bases and the early-stopping hold-out are drawn among the
    rows of positive weight: the same draws as without the dropped rows."""
    from okcore.kernel_models.krr_boosting import KRRBoostRegressor

    X, Y, w = data(21, n=80)
    keep = w > 0
    kw = dict(n_estimators=8, subset_size=30, n_basis=10, n_iter_no_change=3, random_state=0)
    ours = KRRBoostRegressor(**kw).fit(X, Y, sample_weight=w)
    theirs = KRRBoostRegressor(**kw).fit(X[keep], Y[keep], sample_weight=w[keep])
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.validation_loss_, theirs.validation_loss_, rtol=1e-10)
    unit = KRRBoostRegressor(**kw).fit(X, Y, sample_weight=np.ones(len(X)))
    plain = KRRBoostRegressor(**kw).fit(X, Y)
    np.testing.assert_array_equal(unit.predict(X), plain.predict(X))


def test_cross_validation_splits_the_weights_with_the_folds_and_weights_the_scores():
    from okcore.metrics import err_phi
    from okcore.model_selection import cross_validate, kfold

    X, Y, w = data(14, n=120)
    w = w + 0.5
    est = OK3Regressor(max_bins=255, max_splits=5)
    folds = kfold(len(X), 3, 0)
    scores = cross_validate(est, X, Y, cv=folds, sample_weight=w, scoring=["err_phi", "r2"])
    for k, (train, test) in enumerate(folds):
        fitted = OK3Regressor(max_bins=255, max_splits=5).fit(
            X[train], Y[train], sample_weight=w[train]
        )
        expected = err_phi(fitted, X[test], Y[test], sample_weight=w[test])
        np.testing.assert_allclose(scores["err_phi"][k], expected, rtol=1e-12)
        r2 = fitted.score(X[test], Y[test], sample_weight=w[test])
        np.testing.assert_allclose(scores["r2"][k], r2, rtol=1e-12)


def test_weighted_r2_with_unit_weights_is_r2_and_matches_sklearn():
    from sklearn.metrics import r2_score

    X, Y, w = data(15, n=100)
    fitted = OK3Regressor(max_bins=255, max_splits=5).fit(X, Y)
    np.testing.assert_allclose(
        fitted.score(X, Y, sample_weight=np.ones(len(X))), fitted.score(X, Y), rtol=1e-12
    )
    expected = r2_score(Y, fitted.predict(X), sample_weight=w, multioutput="variance_weighted")
    np.testing.assert_allclose(fitted.score(X, Y, sample_weight=w), expected, rtol=1e-10)


def test_grid_search_refits_the_best_with_every_weight_and_refuses_unweighted_scores():
    from okcore.model_selection import grid_search

    X, Y, w = data(16, n=90)
    result = grid_search(
        OK3Regressor(max_bins=255), {"max_splits": [2, 6]}, X, Y, cv=3, random_state=0,
        sample_weight=w,
    )  # fmt: skip
    direct = OK3Regressor(max_bins=255, **result.best_params).fit(X, Y, sample_weight=w)
    np.testing.assert_array_equal(result.best_estimator.predict(X), direct.predict(X))
    labels = (Y > Y.mean(0)).astype(float)
    with pytest.raises(DataError, match="does not take sample weights"):
        grid_search(
            OK3Regressor(max_bins=255), {"max_splits": [2]}, X, labels, cv=3, scoring="f1",
            sample_weight=w + 1,
        )  # fmt: skip


@pytest.mark.parametrize("bootstrap", [False, True])
def test_extra_trees_integer_weights_equal_repeated_rows(bootstrap):
    X, Y, w = data(17)
    rep = np.repeat(np.arange(len(X)), w.astype(int))
    tree = dict(splitter="random", max_bins=255, max_splits=9, random_state=3)
    ours = OK3Regressor(**tree).fit(X, Y, sample_weight=w)
    theirs = OK3Regressor(**tree).fit(X[rep], Y[rep])
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-10)
    forest = OK3ForestRegressor(
        n_estimators=4, splitter="random", bootstrap=bootstrap, max_bins=255, random_state=0
    ).fit(X, Y, sample_weight=w)
    np.testing.assert_allclose(forest.predict_weights(X) @ Y, forest.predict(X), atol=1e-10)


def test_multilabel_classifier_passes_the_weights_to_every_fit():
    from okcore import MultiLabelClassifier

    X, Y, w = data(18, n=120)
    labels = (Y > np.median(Y, axis=0)).astype(int)
    rep = np.repeat(np.arange(len(X)), w.astype(int))
    inner = OK3Regressor(max_bins=255, max_splits=6)
    ours = MultiLabelClassifier(inner, threshold=0.5, scores="clip").fit(X, labels, sample_weight=w)
    theirs = MultiLabelClassifier(inner, threshold=0.5, scores="clip").fit(X[rep], labels[rep])
    np.testing.assert_allclose(ours.decision_function(X), theirs.decision_function(X), rtol=1e-10)
    cv = MultiLabelClassifier(inner, random_state=0).fit(X, labels, sample_weight=w + 1)
    assert cv.thresholds_.shape == (labels.shape[1],)


def test_a_weighted_model_is_not_continued_by_warm_start(tmp_path):
    import okcore

    X, Y, w = data(19)
    est = OKBoostRegressor(n_estimators=3, max_bins=255, random_state=0).fit(X, Y, sample_weight=w)
    assert est.resolved_params_["sample_weight"] is True
    okcore.save(est, tmp_path / "m")
    loaded = okcore.load(tmp_path / "m").set_params(warm_start=True, n_estimators=5)
    with pytest.raises(InvalidParameterError, match="fitted with sample_weight"):
        loaded.fit(X, Y)


def test_kernel_ridge_cv_with_few_positive_weights_spreads_them_or_says_what_is_needed():
    """Kernel ridge's penalty (and width) CV deals the positive-weight rows out to its folds
    so that every fold is fitted on some; with one positive row it says what is needed."""
    from okcore import KernelRidgeRegressor

    rng = np.random.default_rng(0)
    X = rng.random((80, 3))
    y = X[:, 0] + 0.1 * rng.standard_normal(80)
    with pytest.raises(DataError, match="at least 2 training rows with positive sample_weight"):
        KernelRidgeRegressor(random_state=0).fit(X, y, sample_weight=np.r_[1.0, np.zeros(79)])
    for seed in range(10):
        for gamma in ("auto", "cv"):
            model = KernelRidgeRegressor(gamma=gamma, random_state=seed).fit(
                X, y, sample_weight=np.r_[np.ones(2), np.zeros(78)]
            )
            assert np.isfinite(model.cv_errors_).any() and np.isfinite(model.predict(X)).all()


def test_weighted_bootstrap_samples_always_hold_a_row_of_positive_weight():
    """A bootstrap sample without positive weight would grow a tree predicting 0: it is
    drawn again (seeded), so W^F rows sum to 1 and predictions stay among the weighted
    targets; the same seed gives the same forest."""
    rng = np.random.default_rng(0)
    X = rng.random((40, 3))
    y = X[:, 0] + 0.1 * rng.standard_normal(40)
    weight = np.r_[1.0, 1.0, np.zeros(38)]

    def fitted():
        return OK3ForestRegressor(n_estimators=5, random_state=0).fit(X, y, sample_weight=weight)

    forest = fitted()
    W = forest.predict_weights(X)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-12)
    assert np.abs(W[:, 2:]).max() == 0.0  # the zero-weight rows count for nothing
    predictions = forest.predict(X)
    assert y[:2].min() - 1e-12 <= predictions.min() and predictions.max() <= y[:2].max() + 1e-12
    np.testing.assert_array_equal(fitted().predict(X), predictions)


def test_multilabel_inner_folds_spread_the_rows_of_positive_weight():
    """MultiLabelClassifier's inner folds were drawn without the weights: with few rows of
    positive weight, a fold could be fitted on rows all of weight 0 ("sample_weight is all
    zero", though the caller's were not). They are dealt out as cross_validate's are; one
    such row is refused saying what is needed."""
    from okcore import MultiLabelClassifier

    X, Y, _ = data(20, n=60)
    labels = (Y > np.median(Y, axis=0)).astype(int)
    inner = OK3Regressor(max_bins=255, max_splits=4)
    w = np.r_[np.ones(3), np.zeros(57)]
    fitted = MultiLabelClassifier(inner, n_splits=3, random_state=0).fit(X, labels, sample_weight=w)
    assert fitted.thresholds_.shape == (labels.shape[1],)
    with pytest.raises(DataError, match="at least 2 rows with positive weight"):
        MultiLabelClassifier(inner, n_splits=3).fit(
            X, labels, sample_weight=np.r_[1.0, np.zeros(59)]
        )
