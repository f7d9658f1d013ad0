"""Kernel ridge regression (KernelRidgeRegressor): scikit-learn's KernelRidge to 1e-8 for every
input kernel, the Nystrom solve against its normal equations, the penalty (and the RBF
width) chosen by CV on training folds only (against a hand-written CV with KernelRidge),
persistence and refusals."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from okdata import make_regression, rbf_gram
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics.pairwise import rbf_kernel

import okcore
from okcore import KernelRidgeRegressor
from okcore.exceptions import DataError
from okcore.kernel_models import cost as kernel_cost
from okcore.kernel_models import ridge
from okcore.kernel_models.ridge import ALPHA_GRID, GAMMA_SCALES, exact_path
from okcore.model_selection import kfold

GAMMA = 0.7


def data(n: int = 50, q: int = 20):
    X, Y = make_regression(n=n, p=3, d=2, seed=0)
    Xq, Yq = make_regression(n=q, p=3, d=2, seed=1)
    return X, Y, Xq, Yq


@pytest.mark.parametrize("kernel", ["rbf", "linear", "precomputed"])
@pytest.mark.parametrize("intercept", [False, True])
def test_equals_scikit_learns_kernel_ridge(kernel, intercept):
    """fit_intercept=False is KernelRidge; True is KernelRidge on the centred outputs plus
    their mean."""
    X, Y, Xq, _ = data()
    offset = Y.mean(0) if intercept else np.zeros(2)
    if kernel == "precomputed":
        fit_X, query = rbf_kernel(X, X, gamma=GAMMA), rbf_kernel(Xq, X, gamma=GAMMA)
        reference = KernelRidge(alpha=0.05, kernel="precomputed")
    else:
        fit_X, query = X, Xq
        reference = KernelRidge(alpha=0.05, kernel=kernel, gamma=GAMMA)
    expected = reference.fit(fit_X, Y - offset).predict(query) + offset
    est = KernelRidgeRegressor(
        alpha=0.05, input_kernel=kernel, gamma=GAMMA, fit_intercept=intercept
    ).fit(fit_X, Y)
    np.testing.assert_allclose(est.predict(query), expected, rtol=0, atol=1e-8)
    assert est.alpha_ == 0.05 and est.cv_errors_ is None and est.n_estimators_ == 1
    # W^F reproduces F(x) over the training features
    W = est.predict_weights(query)
    np.testing.assert_allclose(W @ est.output_space_.phi, est.predict_features(query), atol=1e-8)


def test_nystrom_solves_the_subset_of_regressors_normal_equations():
    X, Y, Xq, _ = data(n=60)
    est = KernelRidgeRegressor(alpha=0.3, gamma=GAMMA, n_components=15, random_state=3)
    est.fit(X, Y)
    basis = est.ensemble_.basis_index
    assert len(basis) == 15 and len(np.unique(basis)) == 15
    K_NB, K_BB = rbf_kernel(X, X[basis], gamma=GAMMA), rbf_kernel(X[basis], X[basis], gamma=GAMMA)
    R = Y - Y.mean(0)
    alpha = np.linalg.solve(K_NB.T @ K_NB + 0.3 * K_BB, K_NB.T @ R)
    expected = Y.mean(0) + rbf_kernel(Xq, X[basis], gamma=GAMMA) @ alpha
    np.testing.assert_allclose(est.predict(Xq), expected, atol=1e-7)
    # every row as a landmark is the exact model
    full = KernelRidgeRegressor(alpha=0.3, gamma=GAMMA, n_components=60).fit(X, Y)
    exact = KernelRidgeRegressor(alpha=0.3, gamma=GAMMA).fit(X, Y)
    np.testing.assert_allclose(full.predict(Xq), exact.predict(Xq), atol=1e-10)


def test_one_eigendecomposition_gives_every_penalty():
    X, Y, _, _ = data()
    K = rbf_kernel(X, X, gamma=GAMMA)
    path = exact_path(K, Y)
    for lam in (1e-3, 0.1, 10.0):
        np.testing.assert_allclose(
            path.coef(lam), np.linalg.solve(K + lam * np.eye(len(K)), Y), atol=1e-8
        )


@pytest.mark.parametrize("kernel", ["rbf", "precomputed"])
def test_alpha_is_chosen_by_cv_on_the_training_folds_only(kernel):
    """cv_errors_ equal a hand-written K-fold CV with KernelRidge fitted on each fold's
    training rows (for a similarity: its block among them) and scored on the held-out rows;
    the test set never enters (refitting on other query rows changes nothing)."""
    X, Y, _, _ = data(n=40)
    grid = [0.01, 0.1, 1.0, 10.0]
    fit_X = rbf_kernel(X, X, gamma=GAMMA) if kernel == "precomputed" else X
    est = KernelRidgeRegressor(
        alpha=grid, cv=4, input_kernel=kernel, gamma=GAMMA, random_state=5
    ).fit(fit_X, Y)
    expected = np.zeros(len(grid))
    for train, test in kfold(40, 4, 5):
        offset = Y[train].mean(0)
        for j, lam in enumerate(grid):
            if kernel == "precomputed":
                ridge = KernelRidge(alpha=lam, kernel="precomputed")
                ridge.fit(fit_X[np.ix_(train, train)], Y[train] - offset)
                pred = ridge.predict(fit_X[np.ix_(test, train)]) + offset
            else:
                ridge = KernelRidge(alpha=lam, kernel="rbf", gamma=GAMMA)
                pred = ridge.fit(X[train], Y[train] - offset).predict(X[test]) + offset
            expected[j] += np.sum((Y[test] - pred) ** 2)
    np.testing.assert_allclose(est.cv_errors_, expected / 40, rtol=1e-8)
    assert est.alpha_ == grid[int(np.argmin(expected))]
    np.testing.assert_array_equal(est.cv_alphas_, grid)


def test_width_and_alpha_are_chosen_by_cv_on_the_same_folds(tmp_path):
    """gamma="cv": every width of GAMMA_SCALES x "auto"'s is scored by a hand-written K-fold
    CV with KernelRidge on one draw of folds (the same for every width); the fitted model
    is the one of the least error (ties: the largest penalty), and it round-trips."""
    X, Y, Xq, _ = data(n=40)
    grid = [0.01, 0.1, 1.0]
    est = KernelRidgeRegressor(alpha=grid, cv=4, gamma="cv", random_state=5).fit(X, Y)
    auto = KernelRidgeRegressor(alpha=1.0).fit(X, Y).ensemble_.gamma
    np.testing.assert_allclose(est.cv_gammas_, [auto * s for s in GAMMA_SCALES], rtol=1e-12)
    fold_seed = int(np.random.default_rng(5).integers(2**63))  # the fit's one draw
    expected = np.zeros((len(GAMMA_SCALES), len(grid)))
    for i, widths in enumerate(est.cv_gammas_):
        for train, test in kfold(40, 4, np.random.default_rng(fold_seed)):
            offset = Y[train].mean(0)
            for j, lam in enumerate(grid):
                ridge = KernelRidge(alpha=lam, kernel="rbf", gamma=float(widths[0]))
                pred = ridge.fit(X[train], Y[train] - offset).predict(X[test]) + offset
                expected[i, j] += np.sum((Y[test] - pred) ** 2)
    np.testing.assert_allclose(est.cv_errors_, expected / 40, rtol=1e-8)
    i, j = np.unravel_index(np.argmin(expected), expected.shape)
    np.testing.assert_array_equal(est.ensemble_.gamma, est.cv_gammas_[i])
    assert est.alpha_ == grid[j]
    refit = KernelRidgeRegressor(alpha=grid[j], gamma=float(est.cv_gammas_[i][0])).fit(X, Y)
    np.testing.assert_allclose(est.predict(Xq), refit.predict(Xq), rtol=1e-10)
    okcore.save(est, tmp_path / "m")
    loaded = okcore.load(tmp_path / "m")
    np.testing.assert_array_equal(loaded.cv_gammas_, est.cv_gammas_)
    np.testing.assert_array_equal(loaded.predict(Xq), est.predict(Xq))
    assert KernelRidgeRegressor(alpha=1.0).fit(X, Y).cv_gammas_ is None


def test_a_width_search_with_one_alpha_and_without_rbf():
    """gamma="cv" with a float alpha searches the width alone; the linear kernel has no
    width, so "cv" changes nothing there."""
    X, Y, _, _ = data(n=40)
    est = KernelRidgeRegressor(alpha=0.1, gamma="cv", random_state=0).fit(X, Y)
    assert est.cv_errors_.shape == (len(GAMMA_SCALES), 1) and est.alpha_ == 0.1
    linear = KernelRidgeRegressor(input_kernel="linear", gamma="cv", random_state=0).fit(X, Y)
    plain = KernelRidgeRegressor(input_kernel="linear", random_state=0).fit(X, Y)
    assert linear.cv_gammas_ is None
    np.testing.assert_array_equal(linear.cv_errors_, plain.cv_errors_)


def test_default_grid_and_nystrom_cv():
    X, Y, Xq, Yq = data(n=80)
    est = KernelRidgeRegressor(random_state=0).fit(X, Y)
    assert est.alpha_ in ALPHA_GRID and len(est.cv_errors_) == len(ALPHA_GRID)
    assert est.score(Xq, Yq) > 0.5
    nys = KernelRidgeRegressor(n_components=30, random_state=0).fit(X, Y)
    assert np.all(np.isfinite(nys.cv_errors_)) and nys.score(Xq, Yq) > 0.5


def test_output_kernels_pre_images_and_persistence(tmp_path):
    X, Y, Xq, _ = data()
    est = KernelRidgeRegressor(alpha=[0.1, 1.0], random_state=0)
    est.fit(X, gram=rbf_gram(Y, Y, 0.5))
    index, _ = est.predict_index(Xq, top_k=3)
    assert index.shape == (20, 3)
    assert est.predict_kernel(Xq).shape == (20, 20)
    okcore.save(est, tmp_path / "m")
    loaded = okcore.load(tmp_path / "m")
    np.testing.assert_array_equal(loaded.predict_kernel(Xq), est.predict_kernel(Xq))
    assert loaded.alpha_ == est.alpha_ and loaded.get_params() == est.get_params()
    np.testing.assert_array_equal(loaded.cv_errors_, est.cv_errors_)


def test_a_fixed_alpha_round_trips_without_cv_arrays(tmp_path):
    X, Y, Xq, _ = data()
    est = KernelRidgeRegressor(alpha=0.5, input_kernel="linear").fit(X, Y)
    okcore.save(est, tmp_path / "m")
    loaded = okcore.load(tmp_path / "m")
    assert loaded.cv_errors_ is None and loaded.alpha_ == 0.5
    np.testing.assert_array_equal(loaded.predict(Xq), est.predict(Xq))


def test_refusals_say_what_to_change():
    X, Y, _, _ = data()
    S = np.eye(50)
    S[0, 0] = -0.5  # eigenvalue -0.5: S + 0.5 I is singular
    with pytest.raises(DataError, match="singular for alpha = 0.5"):
        KernelRidgeRegressor(alpha=0.5, input_kernel="precomputed").fit(S, Y)
    with pytest.raises(DataError, match="needs X as the \\(N, N\\) Gram"):
        KernelRidgeRegressor(input_kernel="precomputed").fit(X, Y)
    with pytest.raises(DataError, match="set n_components"):
        KernelRidgeRegressor()._check_memory(20_000, 20_000)
    assert KernelRidgeRegressor(input_kernel="precomputed").pairwise_inputs
    assert not KernelRidgeRegressor().pairwise_inputs


@pytest.mark.parametrize("gamma", ["cv", "auto", 1.0])
@pytest.mark.filterwarnings("error")
def test_inputs_whose_distances_overflow_or_underflow_are_refused_with_the_fix(gamma):
    """Inputs of 1e300 made every RBF kernel value 0: gamma "cv" and "auto" predicted the
    training mean with overflow warnings, a given width failed in scipy; 1e-300 was called
    'every training input is the same'."""
    X, Y, _, _ = data()
    with pytest.raises(DataError, match="squared norms overflow float64.*standardise"):
        KernelRidgeRegressor(gamma=gamma).fit(X * 1e300, Y)
    if isinstance(gamma, str):
        with pytest.raises(DataError, match="underflow to 0 in float64.*standardise"):
            KernelRidgeRegressor(gamma=gamma).fit(X * 1e-300, Y)


def test_the_cost_counts_the_cv_folds_and_the_basis():
    exact = KernelRidgeRegressor(alpha=1.0).estimate_cost(2000, 5)
    cv = KernelRidgeRegressor(alpha="cv", cv=5).estimate_cost(2000, 5)
    nystrom = KernelRidgeRegressor(alpha=1.0, n_components=100).estimate_cost(2000, 5)
    assert exact.n_stages == 1 and exact.stage_size == 2000 and exact.search == "kernel"
    assert cv.stage_seconds > 3 * exact.stage_seconds  # 5 fits on 4/5 of the rows more
    assert nystrom.stage_size == 100 and nystrom.memory_bytes < exact.memory_bytes / 10
    assert nystrom.stage_seconds < exact.stage_seconds / 10
    widths = KernelRidgeRegressor(alpha="cv", cv=5, gamma="cv").estimate_cost(2000, 5)
    one_width = cv.stage_seconds - exact.stage_seconds
    assert widths.stage_seconds == pytest.approx(exact.stage_seconds + 5 * one_width)


def test_nystrom_path_in_blocks_of_rows_is_the_whole_path(monkeypatch):
    """B = K_NB W is summed into B^T B and B^T R a block of rows at a time: the same
    coefficients as with B formed whole (a second N x D array, 1.6 GB at N = 100,000,
    D = 2000)."""
    X, Y, Xq, _ = data(n=60)
    whole = KernelRidgeRegressor(alpha=0.3, gamma=GAMMA, n_components=15, random_state=3)
    whole.fit(X, Y)
    monkeypatch.setattr(ridge, "NYSTROM_BLOCK_ROWS", 7)
    blocks = KernelRidgeRegressor(alpha=0.3, gamma=GAMMA, n_components=15, random_state=3)
    np.testing.assert_allclose(blocks.fit(X, Y).predict(Xq), whole.predict(Xq), atol=1e-10)


def test_a_nystrom_fit_holds_what_its_cost_counts(monkeypatch):
    """N = 100,000, D = 2000 with alpha "cv" reached 2.8 GB (and rising) where the cost said
    2 GB: each CV fold's kernel block was still held while the next fold built its own, and
    the whitened basis was a second N x D array. The fit's peak of traced allocations
    (numpy's among them) is now within the fit's own arrays (N x r outputs, F) of the
    kernel bytes its cost counts (on 6,000 x 100: 10.6 MB before, 6.5 MB now)."""
    monkeypatch.setattr(ridge, "NYSTROM_BLOCK_ROWS", 64)
    monkeypatch.setattr(kernel_cost, "NYSTROM_BLOCK_ROWS", 64)
    n, d = 6000, 100
    X, Y = make_regression(n=n, p=3, d=2, seed=0)
    est = KernelRidgeRegressor(n_components=d, random_state=0)
    tracemalloc.start()
    try:
        est.fit(X, Y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.3 * kernel_cost.ridge_held_bytes(n, d)
    assert est.cv_alphas_ is not None  # the CV folds ran
