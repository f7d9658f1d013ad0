"""Per-input RBF widths (automatic relevance determination) chosen by the Gaussian-process
marginal likelihood: ``KernelRidgeRegressor(gamma="ard")``.

One RBF width for every input (``gamma`` "auto" or "cv") treats an irrelevant or a
differently scaled input like the others; one width per input, k(x, x') =
exp(-sum_d gamma_d (x_d - x'_d)^2), lets the kernel ignore the first and rescale the second.
The widths are those of the Gaussian process whose marginal likelihood of the training
outputs is largest (Rasmussen & Williams 2006, *Gaussian Processes for Machine Learning*,
s. 5.4): each centred output feature column phi_k (paper eq. 4's factor coordinates, r
columns) of n training rows is modelled as N(0, C), C = s_f K_gamma + s_n I, the columns
independent with shared hyper-parameters theta = (log gamma_1 .. log gamma_p, log s_f,
log s_n), and

    log p(Phi | theta) = -1/2 tr(Phi^T C^{-1} Phi) - r/2 log|C| - n r/2 log(2 pi)

is maximised by L-BFGS-B from every width at twice "auto"'s (the multiple the width CV
chooses most often), with the analytic gradient

    d log p / d theta_t = 1/2 tr(M dC/d theta_t),   M = A A^T - r C^{-1},  A = C^{-1} Phi:

with P = M o (s_f K), d/d log gamma_d = -gamma_d (sum_i x_id^2 (P 1)_i - x_d^T P x_d),
d/d log s_f = 1/2 sum_ij P_ij, d/d log s_n = s_n/2 tr(M).

Only the widths are kept: kernel ridge's penalty is then chosen by its own cross-validation
(the likelihood's s_n / s_f would be one candidate penalty among many).

Cost: the likelihood is evaluated on at most ``n_rows`` training rows (a seeded subsample;
rows of zero weight left out), O(n^3 + n^2 (p + r)) per evaluation, at most ``max_iter``
L-BFGS iterations: a few seconds at n = 400, independent of N. Memory O(n^2 + n p).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import linalg, optimize

from ..exceptions import DataError

#: Most training rows the likelihood is evaluated on (a seeded subsample above).
ARD_ROWS = 400
#: Most L-BFGS-B iterations of the likelihood's maximisation.
ARD_MAX_ITER = 60
#: The widths start at this multiple of "auto"'s (1 / the mean squared distance between two
#: rows): the multiple kernel ridge's width CV chose on four of five problems
#: (okcore.kernel_models.ridge.GAMMA_SCALES).
START_SCALE = 2.0
#: Each log-width may move this far (natural log) below / above its start: widths down to
#: e^-12 of the start (an input ignored) and up to e^6 times it.
LOG_WIDTH_RANGE = (-12.0, 6.0)
#: The jitter added to C's diagonal so that its Cholesky factor exists at tiny noise.
JITTER = 1e-8


def neg_log_likelihood(
    theta: np.ndarray, X: np.ndarray, Phi: np.ndarray
) -> tuple[float, np.ndarray]:
    """(-log p(Phi | theta) up to its constant, its gradient in theta) for the model of the
    module docstring: X (n, p) inputs, Phi (n, r) centred output features, theta (p + 2,)
    = (log gamma_1 .. log gamma_p, log s_f, log s_n). O(n^3 + n^2 (p + r))."""
    n, p = X.shape
    r = Phi.shape[1]
    gamma = np.exp(theta[:p])
    s_f, s_n = float(np.exp(theta[p])), float(np.exp(theta[p + 1]))
    Xs = X * np.sqrt(gamma)
    sq = np.sum(Xs * Xs, axis=1)
    K = np.exp(-np.maximum(sq[:, None] + sq[None, :] - 2.0 * (Xs @ Xs.T), 0.0))
    C = s_f * K
    C[np.diag_indices(n)] += s_n + JITTER
    try:
        factor = linalg.cho_factor(C, lower=True, check_finite=False)
    except linalg.LinAlgError:
        return float("inf"), np.zeros_like(theta)
    A = linalg.cho_solve(factor, Phi, check_finite=False)
    C_inv = linalg.cho_solve(factor, np.eye(n), check_finite=False)
    log_det = 2.0 * float(np.sum(np.log(np.diag(factor[0]))))
    value = 0.5 * float(np.sum(Phi * A)) + 0.5 * r * log_det
    M = A @ A.T - r * C_inv
    P = M * (s_f * K)
    row_sums = P.sum(axis=1)
    d_gamma = -gamma * ((X * X).T @ row_sums - np.sum(X * (P @ X), axis=0))
    d_signal = 0.5 * float(P.sum())
    d_noise = 0.5 * s_n * float(np.trace(M))
    return value, -np.concatenate([d_gamma, [d_signal, d_noise]])


def ard_widths(
    X: Any,
    Phi: Any,
    rng: np.random.Generator,
    *,
    sample_weight: Any = None,
    n_rows: int = ARD_ROWS,
    max_iter: int = ARD_MAX_ITER,
) -> np.ndarray:
    """One RBF width per input column of X (N, p), shape (p,), maximising the marginal
    likelihood of the output features Phi (N, r) on at most ``n_rows`` rows drawn with
    ``rng`` among those of non-zero ``sample_weight`` (module docstring). Deterministic
    given the generator's state."""
    X = np.asarray(X, dtype=np.float64)
    Phi = np.asarray(Phi, dtype=np.float64).reshape(X.shape[0], -1)
    rows = np.arange(X.shape[0])
    if sample_weight is not None:
        rows = rows[np.asarray(sample_weight) > 0]
    if rows.size > n_rows:
        rows = np.sort(rng.choice(rows, n_rows, replace=False))
    Xs, Ps = X[rows], Phi[rows] - Phi[rows].mean(axis=0)
    with np.errstate(over="ignore", invalid="ignore"):  # inf: refused below, with the fix
        theta_sq = 2.0 * float(Xs.var(axis=0).sum())
    variance = float(np.mean(Ps * Ps))
    if rows.size < 2 or theta_sq <= 0.0 or variance <= 0.0:
        raise DataError(
            "gamma='ard' needs at least two training rows with differing inputs and outputs"
        )
    p = X.shape[1]
    low, high = LOG_WIDTH_RANGE
    with np.errstate(divide="ignore", over="ignore"):  # the overflow is the check's to say
        start_width = np.log(START_SCALE / theta_sq)
        overflows = not (np.isfinite(theta_sq) and np.isfinite(np.exp(start_width + high)))
    if overflows:
        raise DataError(
            "gamma='ard' cannot take inputs of this scale: their squared distances "
            f"(twice the summed column variances: {theta_sq:.3g}) overflow float64, or the "
            "widths for them do; scale the inputs (e.g. standardise each column)"
        )
    constant = Xs.var(axis=0) == 0.0  # an input with one value: its width does not matter
    start = np.concatenate([np.full(p, start_width), [np.log(variance), np.log(0.1 * variance)]])
    bounds = [(start_width + low, start_width + high)] * p + [
        (np.log(variance) - 10.0, np.log(variance) + 5.0),
        (np.log(variance) - 14.0, np.log(variance) + 3.0),
    ]
    result = optimize.minimize(
        neg_log_likelihood,
        start,
        args=(Xs, Ps),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": int(max_iter)},
    )
    widths = np.exp(result.x[:p])
    widths[constant] = np.exp(start_width)
    return widths
