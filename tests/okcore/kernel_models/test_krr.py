"""Boosted sparse kernel ridge regression (Sun & Yao 2006): the KRR base learner against
scikit-learn's KernelRidge, the ensemble step (eq. 19-21) against brute force on full
N x N kernels, the output space, persistence and parameter checks."""

from __future__ import annotations

import json

import numpy as np
import pytest
from okdata import make_regression, rbf_gram
from scipy import optimize, sparse
from sklearn.gaussian_process.kernels import RBF
from sklearn.kernel_ridge import KernelRidge
from test_io import read_arrays, rewrite

import okcore
from okcore import KRRBoostRegressor, load, save
from okcore.exceptions import DataError, InvalidParameterError, PersistenceError
from okcore.kernel_models import krr_boosting as krr_boosting_module
from okcore.kernel_models.kernel_ensemble import KernelEnsemble
from okcore.kernel_models.krr import InputKernel, SparseKRRLearner, select_info_gain
from okcore.kernel_models.sun_yao import stage_coefficient

GAMMA = 2.0
LAMBDA = 0.05


def small(**params) -> KRRBoostRegressor:
    base = {
        "n_estimators": 6,
        "subset_size": 25,
        "n_basis": 8,
        "gamma": GAMMA,
        "alpha": LAMBDA,
        "random_state": 0,
    }
    return KRRBoostRegressor(**{**base, **params})


def ard_gram(A: np.ndarray, B: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """ARD Gaussian kernel through scikit-learn's RBF (length scales l_d, gamma_d = 1/(2 l_d^2))."""
    return RBF(length_scale=1.0 / np.sqrt(2.0 * gamma))(A, B)


# ------------------------------------------------------------------ the base learner
@pytest.mark.parametrize("selection", ["random", "info-gain"])
@pytest.mark.parametrize("kernel", ["rbf", "ard", "linear", "precomputed"])
def test_one_full_stage_is_scikit_learns_kernel_ridge(kernel, selection):
    """subset_size = n_basis = N and one stage with c = 1: F = mean + KernelRidge on the
    centred outputs, to 1e-8, for every input kernel."""
    X, Y = make_regression(n=50, p=3, d=2, seed=0)
    Xq, _ = make_regression(n=30, p=3, d=2, seed=1)
    gamma: object = GAMMA
    if kernel == "rbf":
        reference = KernelRidge(alpha=LAMBDA, kernel="rbf", gamma=GAMMA).fit(X, Y - Y.mean(0))
        expected = reference.predict(Xq)
        fit_X, query = X, Xq
    elif kernel == "linear":
        reference = KernelRidge(alpha=LAMBDA, kernel="linear").fit(X, Y - Y.mean(0))
        expected = reference.predict(Xq)
        fit_X, query = X, Xq
    else:
        widths = np.array([0.5, 2.0, 4.0]) if kernel == "ard" else np.full(3, GAMMA)
        reference = KernelRidge(alpha=LAMBDA, kernel="precomputed")
        reference.fit(ard_gram(X, X, widths), Y - Y.mean(0))
        expected = reference.predict(ard_gram(Xq, X, widths))
        if kernel == "ard":
            fit_X, query, gamma = X, Xq, list(widths)
        else:
            fit_X, query = ard_gram(X, X, widths), ard_gram(Xq, X, widths)
    est = KRRBoostRegressor(
        n_estimators=1, subset_size=50, n_basis=50, basis_selection=selection,
        input_kernel="rbf" if kernel == "ard" else kernel, gamma=gamma, alpha=LAMBDA,
        regularization="shrinkage", learning_rate=1.0, random_state=0,
    ).fit(fit_X, Y)  # fmt: skip
    np.testing.assert_allclose(est.predict(query), expected + Y.mean(0), rtol=0, atol=1e-8)


def test_the_learner_alone_is_kernel_ridge_on_its_targets():
    X, Y = make_regression(n=40, p=3, d=2)
    learner = SparseKRRLearner(
        X, np.arange(40), InputKernel("rbf", np.full(3, GAMMA)), subset_size=40, n_basis=40,
        selection="random", alpha=LAMBDA,
    )  # fmt: skip
    stage = learner.fit_stage(Y, np.random.default_rng(0))
    reference = KernelRidge(alpha=LAMBDA, kernel="rbf", gamma=GAMMA).fit(X, Y)
    Xq, _ = make_regression(n=10, p=3, seed=3)
    ours = rbf_gram(Xq, X[stage.basis], GAMMA) @ stage.alpha
    np.testing.assert_allclose(ours, reference.predict(Xq), rtol=0, atol=1e-8)


def test_info_gain_selection_stops_at_the_rank_of_the_kernel():
    """A linear kernel on p = 3 inputs has rank 3: no fourth basis vector adds anything."""
    X, Y = make_regression(n=30, p=3, d=1)
    K = X @ X.T
    chosen = select_info_gain(lambda j: K[:, j], np.diag(K), Y, 10, LAMBDA)
    assert len(chosen) == 3 and len(set(chosen.tolist())) == 3


def test_info_gain_picks_the_worst_predicted_row_first():
    """With no basis yet every p_i = k_ii = 1 (RBF): the score grows with ||R_i||^2."""
    X, Y = make_regression(n=30, p=3, d=2)
    K = rbf_gram(X, X, GAMMA)
    chosen = select_info_gain(lambda j: K[:, j], np.ones(30), Y, 1, LAMBDA)
    assert chosen[0] == np.argmax((Y**2).sum(1))


# ------------------------------------------------------------------ Sun & Yao's step
def brute_force_objective(est, X, Y, coef: np.ndarray, n_stages: int) -> float:
    """Eq. 12 with full N x N kernels: 1/2 sum ||y_i - F(x_i)||^2 + mu/2 a^T K a, where
    F - F_0 = sum_i a_i k(., x_i) collects every stage's coefficients on its basis rows."""
    e = est.ensemble_
    K = rbf_gram(X, X, GAMMA)
    a = np.zeros((len(X), Y.shape[1]))
    for j in range(n_stages):
        lo, hi = e.basis_offset[j], e.basis_offset[j + 1]
        np.add.at(a, e.basis_index[lo:hi], coef[j] * e.alpha[lo:hi])
    F = Y.mean(0) + K @ a
    return 0.5 * float(np.sum((Y - F) ** 2)) + 0.5 * LAMBDA * float(np.vdot(a, K @ a))


def test_eq20_coefficient_is_the_direct_minimiser_of_eq19():
    """The last stage's c (no CG, no re-weighting) minimises eq. 19 evaluated by brute force
    over c, the earlier coefficients fixed; and eq. 20 on the same quantities agrees."""
    X, Y = make_regression(n=40, p=3, d=2)
    est = small(n_estimators=3, cg_iter=0).fit(X, Y)
    coef = est.ensemble_.coef.copy()

    def J(c: float) -> float:
        return brute_force_objective(est, X, Y, np.r_[coef[:2], c], 3)

    direct = optimize.minimize_scalar(J, bracket=(-1.0, 3.0), tol=1e-12).x
    assert coef[2] == pytest.approx(direct, rel=1e-6)
    # eq. 20 from its inputs: the same c
    e = est.ensemble_
    lo, hi = e.basis_offset[2], e.basis_offset[3]
    K = rbf_gram(X, X, GAMMA)
    g = K[:, e.basis_index[lo:hi]] @ e.alpha[lo:hi]
    F_prev = Y.mean(0) + sum(h for h, _ in zip(e.stage_values(X), range(2), strict=False))
    c = stage_coefficient(
        g, Y - F_prev, F_prev[e.basis_index[lo:hi]] - Y.mean(0), e.alpha[lo:hi],
        K[np.ix_(e.basis_index[lo:hi], e.basis_index[lo:hi])], LAMBDA,
    )  # fmt: skip
    assert c == pytest.approx(coef[2], rel=1e-10)


@pytest.mark.parametrize("reweight", [False, True])
@pytest.mark.parametrize("cg_iter", [0, 3])
@pytest.mark.parametrize("selection", ["random", "info-gain"])
def test_the_penalised_objective_never_increases(selection, cg_iter, reweight):
    X, Y = make_regression(n=60, p=3, d=2)
    est = small(n_estimators=12, basis_selection=selection, cg_iter=cg_iter, reweight=reweight).fit(
        X, Y
    )
    J = est.objective_
    J0 = 0.5 * float(np.sum((Y - Y.mean(0)) ** 2))
    assert J[0] <= J0 and np.all(np.diff(J) <= 1e-10 * J0)
    # the recorded value is eq. 12 itself (brute force, final coefficients)
    assert J[-1] == pytest.approx(
        brute_force_objective(est, X, Y, est.ensemble_.coef, est.n_estimators_), rel=1e-9
    )


def test_reweighting_solves_for_every_coefficient():
    """After re-weighting, no single coefficient can lower eq. 12 (its gradient is 0)."""
    X, Y = make_regression(n=50, p=3, d=2)
    est = small(n_estimators=5, reweight=True).fit(X, Y)
    c = est.ensemble_.coef
    grad = optimize.approx_fprime(c, lambda v: brute_force_objective(est, X, Y, v, 5), 1e-6)
    assert np.abs(grad).max() < 1e-4 * brute_force_objective(est, X, Y, c, 5)


# ------------------------------------------------------------------ output spaces
def test_linear_output_kernel_is_independent_scalar_fits_per_column():
    """With shrinkage and random bases nothing couples the columns: fitting Y (N, 3) at once
    equals three scalar fits."""
    X, Y = make_regression(n=60, p=3, d=3)
    Xq, _ = make_regression(n=20, p=3, seed=5)
    params = {"regularization": "shrinkage", "basis_selection": "random", "learning_rate": 0.5}
    joint = small(**params).fit(X, Y).predict(Xq)
    for k in range(3):
        single = small(**params).fit(X, Y[:, k]).predict(Xq)
        assert single.shape == (20,)
        np.testing.assert_allclose(joint[:, k], single, rtol=0, atol=1e-10)


def test_weights_kernels_and_pre_images_in_an_rbf_output_space():
    X, Y = make_regression(n=50, p=3, d=4)
    Xq, Yq = make_regression(n=15, p=3, d=4, seed=2)
    est = small(n_estimators=5).fit(X, Y, kernel={"type": "rbf", "gamma": 0.5})
    F = est.predict_features(Xq)
    W = est.predict_weights(Xq)
    phi = est.output_space_.phi
    np.testing.assert_allclose(W @ phi, F, atol=1e-10)
    K = rbf_gram(Y, Y, 0.5)
    np.testing.assert_allclose(W @ K @ W.T, est.predict_kernel(Xq), atol=1e-8)
    index, dist = est.predict_index(Xq, top_k=3)
    brute = np.diag(F @ F.T)[:, None] - 2.0 * W @ K + 1.0
    np.testing.assert_array_equal(index[:, 0], np.argmin(brute, axis=1))
    np.testing.assert_allclose(dist[:, 0], brute.min(axis=1), atol=1e-8)
    np.testing.assert_array_equal(est.predict(Xq), Y[index[:, 0]])
    assert est.staged_loss(Xq, Yq)[-1] == pytest.approx(
        okcore.metrics.err_phi(est, Xq, Yq), rel=1e-12
    )


def test_precomputed_input_gram_equals_the_rbf_kernel():
    X, Y = make_regression(n=50, p=3, d=2)
    Xq, _ = make_regression(n=10, p=3, seed=4)
    params = {"basis_selection": "random"}
    a = small(**params).fit(X, Y)
    b = small(input_kernel="precomputed", **params).fit(rbf_gram(X, X, GAMMA), Y)
    np.testing.assert_allclose(b.predict(rbf_gram(Xq, X, GAMMA)), a.predict(Xq), atol=1e-10)


def test_sparse_inputs_are_used_dense():
    X, Y = make_regression(n=40, p=3, d=2)
    dense = small().fit(X, Y).predict(X[:5])
    np.testing.assert_allclose(small().fit(sparse.csr_matrix(X), Y).predict(X[:5]), dense)


# ------------------------------------------------------------------ early stopping, callbacks
@pytest.mark.parametrize("reweight", [False, True])
@pytest.mark.parametrize("early", ["eval_set", "hold_out"])
def test_early_stopping_keeps_the_best_stage(early, reweight):
    X, Y = make_regression(n=80, p=3, d=2, noise=0.5)
    Xv, Yv = make_regression(n=40, p=3, d=2, seed=9, noise=0.5)
    est = small(n_estimators=40, n_iter_no_change=3, reweight=reweight, alpha=1e-4)
    if early == "eval_set":
        est.fit(X, Y, eval_set=(Xv, Yv))
    else:
        est.fit(X, Y)
        assert est.n_train_ == 72 and len(est.train_indices_) == 72
        Xv, Yv = X[np.setdiff1d(np.arange(80), est.train_indices_)], None
    best = est.n_estimators_
    assert best == est.ensemble_.n_trees and best == np.argmin(est.validation_loss_) + 1
    if Yv is not None:  # the kept model is the one that scored the best validation loss
        assert okcore.metrics.err_phi(est, Xv, Yv) == pytest.approx(
            est.validation_loss_[best - 1], rel=1e-10
        )


def test_a_callback_stops_the_fit():
    X, Y = make_regression(n=40, p=3, d=2)
    heard = []
    est = small(n_estimators=10).fit(
        X, Y, callback=lambda p: heard.append(p) or (p.phase == "trees" and p.done == 2)
    )
    assert est.stopped_by_callback_ and est.n_estimators_ == 2
    assert [p.done for p in heard if p.phase == "trees"] == [1, 2]
    assert heard[-1].train_loss == pytest.approx(est.train_loss_[-1])


# ------------------------------------------------------------------ persistence
@pytest.mark.parametrize("kernel", ["ard", "precomputed", "linear"])
def test_save_load_identical(tmp_path, kernel):
    X, Y = make_regression(n=50, p=3, d=2)
    Xq, _ = make_regression(n=10, p=3, seed=4)
    if kernel == "precomputed":
        X, Xq = rbf_gram(X, X, GAMMA), rbf_gram(Xq, X, GAMMA)
        est = small(input_kernel="precomputed", reweight=True)
    elif kernel == "ard":
        est = small(gamma=[0.5, 1.0, 3.0], n_iter_no_change=2)
    else:
        est = small(input_kernel="linear", regularization="shrinkage")
    est.fit(X, Y, kernel={"type": "rbf", "gamma": 0.5})
    loaded = load(save(est, tmp_path / "m"))
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert manifest["format_version"] == 4  # older readers refuse it instead of misreading
    assert isinstance(loaded.ensemble_, KernelEnsemble)
    assert loaded.get_params() == est.get_params()
    for method in ("predict", "predict_features", "predict_weights", "predict_kernel"):
        np.testing.assert_array_equal(getattr(loaded, method)(Xq), getattr(est, method)(Xq))
    for name in ("objective_", "train_loss_", "train_indices_"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(est, name))
    assert not hasattr(loaded, "feature_importances_")


def test_a_kernel_model_with_a_broken_structure_is_refused(tmp_path):
    X, Y = make_regression(n=40, p=3, d=2)
    path = save(small().fit(X, Y), tmp_path / "m")
    arrays = read_arrays(path)
    arrays["kernel_ensemble.basis_offset"] = arrays["kernel_ensemble.basis_offset"][::-1].copy()
    rewrite(path, arrays, rehash=True)
    with pytest.raises(PersistenceError, match="stage offsets do not match"):
        load(path)


# ------------------------------------------------------------------ parameters
BAD_PARAMETERS = {
    "n_estimators": (0, "an int in [1, inf)"),
    "subset_size": (0, "an int in [1, inf)"),
    "n_basis": (1.5, "an int in [1, inf)"),
    "basis_selection": ("greedy", "one of 'info-gain', 'random'"),
    "input_kernel": ("poly", "one of 'rbf', 'linear', 'precomputed'"),
    "gamma": ([1.0, -2.0], "a non-empty list of floats in (0, inf)"),
    "alpha": (0.0, "a float in (0.0, inf)"),
    "regularization": ("l2", "one of 'sun-yao', 'shrinkage'"),
    "mu": (-1.0, "a float in [0.0, inf) or None"),
    "cg_iter": (-1, "an int in [0, inf)"),
    "reweight": ("yes", "one of False, True"),
    "learning_rate": (0.0, "a float in (0.0, 1.0]"),
    "n_iter_no_change": (0, "an int in [1, inf) or None"),
}


@pytest.mark.parametrize("name", sorted(BAD_PARAMETERS))
def test_every_bad_parameter_is_named_with_what_is_allowed(name):
    value, allowed = BAD_PARAMETERS[name]
    X, Y = make_regression(n=20)
    with pytest.raises(InvalidParameterError) as info:
        small(**{name: value}).fit(X, Y)
    message = str(info.value)
    assert message.startswith(f"The '{name}' parameter of KRRBoostRegressor must be ")
    assert allowed in message and repr(value) in message


def test_data_errors_say_what_to_change(monkeypatch):
    X, Y = make_regression(n=30, p=3)
    with pytest.raises(DataError, match="gamma has 2 values but X has 3 features"):
        small(gamma=[1.0, 2.0]).fit(X, Y)
    with pytest.raises(DataError, match=r"needs X as the \(N, N\) Gram matrix"):
        small(input_kernel="precomputed").fit(X, Y)
    with pytest.raises(DataError, match="reweight=True applies to regularization='sun-yao'"):
        small(reweight=True, regularization="shrinkage").fit(X, Y)
    with pytest.raises(DataError, match="every training input is the same"):
        small(gamma="auto").fit(np.ones((30, 3)), Y)
    with pytest.raises(
        DataError,
        match=r"^gamma='auto' is undefined when there is one training sample \(n_samples = 1\)",
    ):
        small(gamma="auto").fit(X[:1], Y[:1])
    monkeypatch.setattr(krr_boosting_module, "MAX_STAGE_KERNEL_BYTES", 1000)
    with pytest.raises(DataError, match="lower n_basis"):
        small().fit(X, Y)


def test_the_auto_width_is_the_mean_squared_distance_heuristic():
    X, Y = make_regression(n=30, p=3)
    est = small(gamma="auto", n_estimators=1).fit(X, Y)
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(2)
    theta = d2.sum() / (30 * 29)
    np.testing.assert_allclose(est.ensemble_.gamma, np.full(3, 1.0 / theta), rtol=1e-12)


def test_scikit_learn_clones_and_cross_validates_it():
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score

    X, Y = make_regression(n=60, p=3, d=2)
    ard = small(gamma=[1.0, 2.0, 3.0])
    assert clone(ard).get_params() == ard.get_params()
    scores = cross_val_score(small(gamma="auto"), X, Y, cv=3)  # R^2 (est.score)
    assert scores.shape == (3,) and np.all(scores > 0.3)


@pytest.mark.parametrize("regularization", ["sun-yao", "shrinkage"])
def test_staged_predictions_are_truncated_refits(regularization):
    """Without re-weighting, Sun & Yao's coefficient and CG refinement act on the stage being
    added only: stage m of a fit is the fit with n_estimators=m."""
    X, Y = make_regression(n=60, p=3, seed=4)
    Xq = make_regression(n=9, p=3, seed=5)[0]
    full = small(regularization=regularization).fit(X, Y)
    features = list(full.staged_predict_features(Xq))
    predictions = list(full.staged_predict(Xq))
    kernels = list(full.staged_predict_kernel(Xq))
    assert len(features) == len(predictions) == len(kernels) == 6
    for m in (1, 3, 6):
        refit = small(regularization=regularization, n_estimators=m).fit(X, Y)
        np.testing.assert_array_equal(features[m - 1], refit.predict_features(Xq))
        np.testing.assert_array_equal(predictions[m - 1], refit.predict(Xq))
        np.testing.assert_allclose(kernels[m - 1], refit.predict_kernel(Xq), rtol=1e-13)


def test_reweighted_staged_predictions_use_the_final_coefficients():
    """reweight=True changes earlier stages' coefficients: stage m sums the first m stages
    with the final ones, as staged_loss, and the last stage is the model."""
    X, Y = make_regression(n=60, p=3, seed=4)
    Xq, Yq = make_regression(n=9, p=3, seed=5)
    est = small(reweight=True).fit(X, Y)
    staged = list(est.staged_predict(Xq))
    errors = [float(np.mean(np.sum((Yq - P) ** 2, axis=1))) for P in staged]
    np.testing.assert_allclose(errors, est.staged_loss(Xq, Yq), rtol=1e-10)
    np.testing.assert_array_equal(staged[-1], est.predict(Xq))


def test_check_auto_gamma_is_the_rule_the_kernel_models_fit_by():
    """okcore.check_auto_gamma refuses what gamma='auto' cannot take a width from (one row,
    rows all the same), dense or sparse, with the message the fit gives; rows that differ
    pass, as their fit does."""
    X, Y = make_regression(n=30, p=3)
    cases = [
        (np.ones((30, 3)), "every training input is the same"),
        (X[:1], "there is one training sample (n_samples = 1)"),
    ]
    for dense, why in cases:
        with pytest.raises(DataError) as fitted:
            small(gamma="auto").fit(dense, Y[: len(dense)])
        assert str(fitted.value) == f"gamma='auto' is undefined when {why}; give gamma"
        for inputs in (dense, sparse.csr_matrix(dense)):
            with pytest.raises(DataError) as checked:
                okcore.check_auto_gamma(inputs)
            assert str(checked.value) == str(fitted.value)
    one_entry_differs = sparse.csr_matrix(np.c_[np.zeros(30), np.arange(30.0) == 3])
    for inputs in (X, sparse.csr_matrix(X), one_entry_differs):
        okcore.check_auto_gamma(inputs)  # no error
