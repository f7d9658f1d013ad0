"""Kernel ridge as the boosting's starting model F_0 (OKBoostRegressor's ``init``,
okcore.boosting.start): no rounds is the kernel ridge model, W^F against a brute-force
N x N recursion, kernels and pre-images, save / load, and what is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

import okcore
from okcore import KernelRidgeRegressor, OKBoostRegressor
from okcore.boosting.start import StartedEnsemble
from okcore.exceptions import InvalidParameterError


def _data(n: int = 90, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    Y = np.c_[np.sin(X[:, 0]), X[:, 1] * X[:, 2], np.abs(X[:, 3])] + 0.1 * rng.normal(size=(n, 3))
    return X, Y


def test_no_rounds_is_the_kernel_ridge_model():
    X, Y = _data()
    krr = KernelRidgeRegressor(gamma="cv", cv=3, random_state=4).fit(X[:70], Y[:70])
    model = OKBoostRegressor(
        init=KernelRidgeRegressor(gamma="cv", cv=3, random_state=4), n_estimators=5,
        random_state=0,
    ).fit(X[:70], Y[:70])  # fmt: skip
    assert isinstance(model.ensemble_, StartedEnsemble)
    start = model.ensemble_.truncate(0)
    np.testing.assert_allclose(start.decision(X[70:]), krr.predict_features(X[70:]), atol=1e-12)
    np.testing.assert_allclose(start.weights(X[70:]), krr.predict_weights(X[70:]), atol=1e-12)
    assert model.resolved_params_["init_alpha"] == krr.alpha_
    assert model.resolved_params_["init_gamma"] == krr.resolved_params_["gamma"]


def _brute_force_weights(model: OKBoostRegressor, Xq: np.ndarray, X: np.ndarray) -> np.ndarray:
    """w(x) = w_0(x) + nu sum_m P^m(x) C_{m-1}, C_0 = I - W_0(X_train), C_m = C_{m-1} -
    nu P^m(X_train) C_{m-1}, with N x N matrices (the trees' own leaf weights)."""
    ens = model.ensemble_
    assert isinstance(ens, StartedEnsemble)
    trees, nu = ens.trees, ens.trees.learning_rate
    coef, n = trees.tree_coefficients(), X.shape[0]
    leaves_q, leaves_t = trees.apply(Xq), trees.apply(X)
    C = np.eye(n) - ens.start.weights(X)
    w = ens.start.weights(Xq)
    for m in range(trees.n_trees):
        P_q = coef[m][None, :] * (trees.train_leaf[m][None, :] == leaves_q[m][:, None])
        P_t = coef[m][None, :] * (trees.train_leaf[m][None, :] == leaves_t[m][:, None])
        w = w + nu * P_q @ C
        C = C - nu * P_t @ C
    return w


@pytest.mark.parametrize("tree_type", ["oblivious", "best-first"])
def test_w_f_equals_the_brute_force_recursion_and_reproduces_f(tree_type):
    X, Y = _data(60)
    model = OKBoostRegressor(
        init={"gamma": 0.3, "alpha": 0.5}, n_estimators=8, tree_type=tree_type, subsample=0.8,
        l2_regularization=1.0, random_state=0,
    ).fit(X[:45], Y[:45])  # fmt: skip
    Xq = X[45:]
    W = model.predict_weights(Xq)
    np.testing.assert_allclose(W, _brute_force_weights(model, Xq, X[:45]), atol=1e-10)
    F = model.predict_features(Xq)
    np.testing.assert_allclose(W @ model.output_space_.phi, F, atol=1e-10)
    np.testing.assert_allclose(model.predict_kernel(Xq), F @ F.T, atol=1e-12)
    index, dist = model.predict_index(Xq, top_k=2)
    assert index.shape == (15, 2) and np.all(np.diff(dist, axis=1) >= 0)
    np.testing.assert_allclose(model.predict(Xq), F, atol=1e-12)  # linear kernel: F itself
    staged = list(model.staged_predict_features(Xq))
    assert len(staged) == model.n_estimators_
    np.testing.assert_allclose(staged[-1], F, atol=1e-12)
    np.testing.assert_allclose(model.staged_loss(X[:45], Y[:45]), model.train_loss_, atol=1e-12)
    assert model.feature_importances_.shape == (4,)


def test_the_trees_fit_what_kernel_ridge_leaves_and_early_stopping_holds_rows_out():
    X, Y = _data(120)
    plain = KernelRidgeRegressor(gamma=0.3, alpha=0.5).fit(X[:90], Y[:90])
    model = OKBoostRegressor(
        init={"gamma": 0.3, "alpha": 0.5}, n_estimators=50, early_stopping=True,
        n_iter_no_change=5, random_state=0,
    ).fit(X[:90], Y[:90])  # fmt: skip
    # the starting model and the trees saw only the rows not held out for early stopping
    assert len(model.train_indices_) < 90
    assert model.ensemble_.start.basis_index.max() < len(model.train_indices_)
    start_loss = np.mean(np.sum((model.output_space_.phi - model.ensemble_.train_start) ** 2, 1))
    assert model.train_loss_[0] < start_loss  # the first tree lowers what kernel ridge left
    assert np.isfinite(plain.predict(X[90:])).all()


def test_save_and_load(tmp_path):
    X, Y = _data(80)
    for i, init in enumerate(["kernel_ridge", KernelRidgeRegressor(gamma="cv", cv=3)]):
        model = OKBoostRegressor(init=init, n_estimators=10, random_state=1).fit(X[:60], Y[:60])
        path = okcore.save(model, tmp_path / f"m{i}")
        loaded = okcore.load(path)
        for method in ("predict", "predict_features", "predict_weights", "predict_kernel"):
            np.testing.assert_array_equal(
                getattr(loaded, method)(X[60:]), getattr(model, method)(X[60:])
            )
        manifest = json.loads((path / "manifest.json").read_text())
        assert manifest["format_version"] == 8 and "warm_start" not in manifest
        assert loaded.resolved_params_ == model.resolved_params_
        # the loaded parameters refit the same model (the starting model's own settings)
        refit = OKBoostRegressor(**loaded.get_params()).fit(X[:60], Y[:60])
        np.testing.assert_allclose(refit.predict(X[60:]), model.predict(X[60:]), atol=1e-12)
    arrays = dict(np.load(path / "arrays.npz"))
    arrays["start_model.train_start"] = arrays["start_model.train_start"][:-1]
    np.savez(path / "arrays.npz", **arrays)
    with pytest.raises(okcore.PersistenceError):
        okcore.load(path)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"init": "kernel_ridge", "warm_start": True}, "warm_start"),
        ({"init": {"input_kernel": "precomputed"}}, "'init'"),
        ({"init": {"n_landmarks": 5}}, "'init'"),
        ({"init": "ridge"}, "'init'"),
        ({"init": {"alpha": -1.0}}, "'alpha'"),
    ],
)
def test_refused(params, match):
    X, Y = _data(40)
    with pytest.raises(InvalidParameterError, match=match):
        OKBoostRegressor(n_estimators=3, **params).fit(X, Y)
    fitted = KernelRidgeRegressor(alpha=1.0).fit(X, Y)
    with pytest.raises(InvalidParameterError, match="'init'"):
        OKBoostRegressor(init=fitted).fit(X, Y)


def test_missing_inputs_are_refused_with_the_fix_at_fit_and_prediction():
    """Kernel ridge takes no missing inputs (NaN), so boosting started from it refuses them
    as kernel ridge does (fit and every prediction) and says so (``accepts_missing``); the
    trees alone take them."""
    X, Y = _data(40)
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    model = OKBoostRegressor(init="kernel_ridge", n_estimators=3, random_state=0)
    assert not model.accepts_missing and OKBoostRegressor().accepts_missing
    with pytest.raises(okcore.DataError, match=r"X holds missing values \(NaN\).*impute"):
        model.fit(X_nan, Y)
    model.fit(X, Y)
    for predict in (model.predict, model.predict_weights, lambda X: list(model.staged_predict(X))):
        with pytest.raises(okcore.DataError, match=r"X holds missing values \(NaN\).*impute"):
            predict(X_nan[:5])
