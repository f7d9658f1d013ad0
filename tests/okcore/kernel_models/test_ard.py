"""Per-input RBF widths by the Gaussian-process marginal likelihood
(okcore.kernel_models.ard, ``KernelRidgeRegressor(gamma="ard")``)."""

from __future__ import annotations

import numpy as np
import pytest

import okcore
from okcore.kernel_models.ard import ARD_ROWS, ard_widths, neg_log_likelihood


def _brute_neg_log_likelihood(theta: np.ndarray, X: np.ndarray, Phi: np.ndarray) -> float:
    """-log p(Phi | theta) up to its constant, by the definition: a sum over the columns of
    the Gaussian log-density, with a dense inverse and determinant."""
    n, p = X.shape
    gamma, s_f, s_n = np.exp(theta[:p]), np.exp(theta[p]), np.exp(theta[p + 1])
    K = np.array([[np.exp(-np.sum(gamma * (a - b) ** 2)) for b in X] for a in X])
    C = s_f * K + (s_n + 1e-8) * np.eye(n)
    inv, (_, log_det) = np.linalg.inv(C), np.linalg.slogdet(C)
    return float(sum(0.5 * phi @ inv @ phi + 0.5 * log_det for phi in Phi.T))


def test_likelihood_and_gradient_match_the_definition() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(25, 3))
    Phi = np.column_stack([np.sin(X[:, 0]), X[:, 1] ** 2]) + 0.1 * rng.normal(size=(25, 2))
    Phi -= Phi.mean(axis=0)
    theta = rng.normal(scale=0.4, size=5)
    value, grad = neg_log_likelihood(theta, X, Phi)
    assert value == pytest.approx(_brute_neg_log_likelihood(theta, X, Phi), rel=1e-10)
    h = 1e-6
    numeric = [
        (neg_log_likelihood(theta + e, X, Phi)[0] - neg_log_likelihood(theta - e, X, Phi)[0])
        / (2 * h)
        for e in np.eye(5) * h
    ]
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


def _relevance_problem(n: int = 600, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two informative inputs out of six, the others noise; two outputs."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 6))
    Y = np.column_stack([np.sin(2 * X[:, 0]), np.cos(X[:, 1]) * X[:, 0]])
    return X, Y + 0.05 * rng.normal(size=Y.shape)


def test_irrelevant_inputs_get_far_smaller_widths() -> None:
    X, Y = _relevance_problem()
    widths = ard_widths(X, Y, np.random.default_rng(0))
    assert widths.shape == (6,)
    assert widths[2:].max() < 0.01 * widths[:2].min()


def test_widths_are_seeded_and_use_at_most_ard_rows() -> None:
    X, Y = _relevance_problem(n=ARD_ROWS + 200)
    a = ard_widths(X, Y, np.random.default_rng(3))
    b = ard_widths(X, Y, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
    # rows of zero weight are never drawn: their outputs may be anything
    weight = np.ones(len(X))
    weight[:200] = 0.0
    spoiled = Y.copy()
    spoiled[:200] = 1e6
    np.testing.assert_array_equal(
        ard_widths(X, Y, np.random.default_rng(1), sample_weight=weight),
        ard_widths(X, spoiled, np.random.default_rng(1), sample_weight=weight),
    )


def test_kernel_ridge_with_ard_widths_beats_one_width_on_irrelevant_inputs() -> None:
    X, Y = _relevance_problem(n=900, seed=1)
    Xt, Yt = _relevance_problem(n=400, seed=2)
    ard = okcore.KernelRidgeRegressor(gamma="ard", cv=3, random_state=0).fit(X, Y)
    one = okcore.KernelRidgeRegressor(gamma="cv", cv=3, random_state=0).fit(X, Y)
    widths = np.ravel(ard.ensemble_.gamma)
    assert widths.shape == (6,) and widths[2:].max() < widths[:2].min()
    err_ard = np.mean((ard.predict(Xt) - Yt) ** 2)
    err_one = np.mean((one.predict(Xt) - Yt) ** 2)
    assert err_ard < 0.5 * err_one
    # the same model as kernel ridge given those widths and that penalty
    given = okcore.KernelRidgeRegressor(gamma=list(widths), alpha=ard.alpha_).fit(X, Y)
    np.testing.assert_allclose(given.predict(Xt), ard.predict(Xt), rtol=1e-8, atol=1e-10)
    # W^F and pre-images keep working
    W = ard.predict_weights(Xt[:5])
    assert W.shape == (5, len(X))


def test_ard_refuses_constant_data_clearly() -> None:
    X = np.ones((10, 3))
    Y = np.arange(10.0)[:, None]
    with pytest.raises(okcore.DataError, match="gamma='ard'"):
        okcore.KernelRidgeRegressor(gamma="ard").fit(X, Y)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("scale", [1e300, 1e160, 1e-160])
def test_inputs_whose_squared_distances_overflow_are_a_clear_error(scale):
    """Inputs so large (or small) that their squared distances or the widths for them
    overflow float64: a DataError saying to scale them, not an optimiser's KeyError, and
    no numpy overflow warning before it."""
    rng = np.random.default_rng(0)
    X = rng.random((80, 3))
    y = X[:, 0] + 0.1 * rng.standard_normal(80)
    with pytest.raises(okcore.DataError, match="scale the inputs"):
        okcore.KernelRidgeRegressor(gamma="ard").fit(X * scale, y)
