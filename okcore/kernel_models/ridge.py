"""Kernel ridge regression in a kernelized output space: the plain baseline, exact or with a
Nystrom basis, its penalty chosen by inner cross-validation.

In the factor coordinates phi_i (r,) of the output space (math note s. 2) the model is

    F(x) = F_0 + sum_{b in B} k(x, x_b) alpha_b,
    alpha = argmin sum_i ||phi_i - F(x_i)||^2 + lambda alpha^T K_BB alpha,

F_0 the mean of the phi_i (``fit_intercept``; 0 without), B the basis: every training row
(exact: alpha = (K + lambda I)^{-1} (Phi - F_0), scikit-learn's ``KernelRidge``) or
``n_components`` landmark rows drawn at random (Nystrom / subset of regressors:
alpha = (K_NB^T K_NB + lambda K_BB)^{-1} K_NB^T (Phi - F_0)). With a non-linear output kernel
this is kernel dependency estimation; with the linear one, multi-output KRR.

One penalty is one solve (:func:`ridge_solve`: Cholesky, as scikit-learn). Every penalty of
a grid is solved from one eigendecomposition (:class:`RidgePath`): exact,
K = U S U^T gives alpha(lambda) = U (S + lambda)^{-1} U^T R; Nystrom, with W the whitening of
K_BB (:func:`okcore.kernel_models.krr.whitening`) and B^T B = Q T Q^T for B = K_NB W,
alpha(lambda) = W Q (T + lambda)^{-1} Q^T B^T R. Choosing lambda by K-fold CV therefore costs
one factorisation per fold, whatever the grid's length; choosing the RBF width too
(``gamma="cv"``) one per fold and width of :data:`GAMMA_SCALES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import linalg

from .._validation import (
    Interval,
    Options,
    PositiveFloats,
    RandomStateLike,
    dense_float64,
)
from ..base import FitContext, FittedModel, OKEstimator
from ..callbacks import RoundMonitor
from ..cost import StageCost
from ..exceptions import DataError
from ..folds import kfold, positive_rows
from ..losses import weighted_mean
from ..outputs.space import RANK_TOLERANCE
from .ard import ARD_ROWS, ard_widths
from .cost import NYSTROM_BLOCK_ROWS, ridge_cost, ridge_held_bytes, ridge_work
from .kernel_ensemble import KernelEnsemble
from .krr import INPUT_KERNELS, InputKernel, make_input_kernel, whitening

#: The penalties tried by ``alpha="cv"``: 1e-4 ... 1e3, four per decade. lambda is on the
#: summed scale (scikit-learn's KernelRidge ``alpha``), to be compared with the eigenvalues
#: of K, which grow with N.
ALPHA_GRID = tuple(float(a) for a in np.logspace(-4, 3, 29))
#: The RBF widths tried by ``gamma="cv"``: these multiples of ``"auto"``'s 1 / (the mean
#: squared distance between two training rows). Measured (docs/RESULTS.md s. 9.16, on 1,000
#: rows of five problems, bench/krr_widths.py): the CV chose 2 on four and 4 on yeast, its
#: error was higher at 8 and 16 on all five, and the chosen width lowered the held-out error
#: against "auto" on all five (kin40k 0.0445 -> 0.0353 NMSE, yeast's ranking loss 0.1630 ->
#: 0.1588).
GAMMA_SCALES = (0.25, 0.5, 1.0, 2.0, 4.0)
#: Largest kernel matrices the fit may hold (exact: about 3 N x N floats; Nystrom: N x D).
MAX_KERNEL_BYTES = 3 << 30
#: An exact system K + lambda I with |eigenvalue| below this fraction of the largest is
#: singular (a similarity that is not positive semi-definite, with lambda = -eigenvalue).
SINGULAR_TOLERANCE = 1e-12


@dataclass(frozen=True)
class RidgePath:
    """Ridge coefficients for every penalty from one factorisation:
    alpha(lambda) = A diag(1 / (e + lambda)) C, A (D, k), e (k,), C (k, r)."""

    A: np.ndarray
    e: np.ndarray
    C: np.ndarray

    def coef(self, lam: float) -> np.ndarray:
        """alpha(lambda), shape (D, r). O(D k r)."""
        return self.A @ (self.C / (self.e + lam)[:, None])

    def singular(self, lam: float) -> bool:
        """Whether e + lambda (numerically) vanishes: the system has no unique solution."""
        return vanishes(self.e, lam)

    def values(self, K_query: np.ndarray) -> Any:
        """lambda -> k(queries, basis) alpha(lambda), (Q, r), with K_query A computed once:
        O(Q D k) once, then O(Q k r) per penalty."""
        G = K_query @ self.A
        return lambda lam: G @ (self.C / (self.e + lam)[:, None])


def vanishes(eigenvalues: np.ndarray, lam: float) -> bool:
    """Whether some eigenvalue + lambda is (numerically) 0, within SINGULAR_TOLERANCE of the
    largest |eigenvalue|: the ridge system has no unique solution."""
    scale = max(float(np.abs(eigenvalues).max(initial=0.0)), np.finfo(float).tiny)
    return bool(np.abs(eigenvalues + lam).min(initial=np.inf) <= SINGULAR_TOLERANCE * scale)


def singular_system(K: np.ndarray, lam: float) -> bool:
    """Whether the exact system K + lambda I (K symmetrised, as :func:`ridge_solve` takes
    it) has no unique solution: solvable when its Cholesky factor exists (positive
    definite), else by :func:`vanishes` on the eigenvalues of K. O(n^3 / 3), O(n^3) more
    when K + lambda I is not positive definite."""
    A = (K + K.T) / 2.0
    A[np.diag_indices_from(A)] += lam
    try:
        linalg.cho_factor(A, lower=True, check_finite=False)
        return False
    except linalg.LinAlgError:
        return vanishes(linalg.eigvalsh((K + K.T) / 2.0), lam)


def exact_path(K: np.ndarray, R: np.ndarray) -> RidgePath:
    """The exact path on the (n, n) kernel of the fitting rows: K = U S U^T (every eigenvalue
    kept, as scikit-learn's solve of K + lambda I). O(n^3)."""
    s, U = linalg.eigh((K + K.T) / 2.0)
    return RidgePath(U, s, U.T @ R)


def nystrom_path(K_NB: np.ndarray, K_BB: np.ndarray, R: np.ndarray) -> RidgePath:
    """The Nystrom path on k(fitting rows, basis) (n, D) and k(basis, basis) (D, D) (module
    docstring). B = K_NB W (W the whitening of K_BB) enters only through B^T B and B^T R,
    summed over NYSTROM_BLOCK_ROWS rows of B at a time: O(n D^2 + D^3) time, O(D^2 + block
    D) memory beside K_NB (a whole B was a second n x D array: 1.6 GB at n = 100,000,
    D = 2000)."""
    W = whitening((K_BB + K_BB.T) / 2.0)
    gram = np.zeros((W.shape[1], W.shape[1]))
    BtR = np.zeros((W.shape[1], R.shape[1]))
    for start in range(0, K_NB.shape[0], NYSTROM_BLOCK_ROWS):
        B = K_NB[start : start + NYSTROM_BLOCK_ROWS] @ W
        gram += B.T @ B
        BtR += B.T @ R[start : start + NYSTROM_BLOCK_ROWS]
    t, Q = linalg.eigh(gram)
    return RidgePath(W @ Q, np.maximum(t, 0.0), Q.T @ BtR)


def ridge_solve(K_NB: np.ndarray, K_BB: np.ndarray | None, R: np.ndarray, lam: float) -> np.ndarray:
    """alpha (D, r) for one penalty. Exact (``K_BB`` None, K_NB the square kernel): a
    Cholesky solve of K + lambda I, as scikit-learn's KernelRidge (O(n^3 / 3), several times
    cheaper than the eigendecomposition a grid needs), the eigen path when K + lambda I is
    not positive definite (a similarity that is not PSD); Nystrom: its path. A singular
    system is refused naming the penalty."""
    if K_BB is not None:
        path = nystrom_path(K_NB, K_BB, R)
    else:
        A = (K_NB + K_NB.T) / 2.0
        A[np.diag_indices_from(A)] += lam
        try:
            factor = linalg.cho_factor(A, lower=True, check_finite=False)
            return linalg.cho_solve(factor, R, check_finite=False)
        except linalg.LinAlgError:
            path = exact_path(K_NB, R)
    if path.singular(lam):
        raise DataError(
            f"K + alpha I is singular for alpha = {lam}: the input similarity is not "
            "positive semi-definite and -alpha is one of its eigenvalues; choose another alpha"
        )
    return path.coef(lam)


def _weight_scale(weight: np.ndarray | None, rows: np.ndarray, exact: bool) -> np.ndarray | None:
    """sqrt(w) of the ``rows``, by which an exact weighted fit scales its basis columns and
    coefficients (:func:`_scaled_system`); None when unweighted or for a Nystrom basis."""
    return None if weight is None or not exact else np.sqrt(weight[rows])


def _scaled_system(
    K_NB: np.ndarray,
    K_BB: np.ndarray | None,
    R: np.ndarray,
    weight: np.ndarray | None,
    rows: np.ndarray,
    scale: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """The ridge system of the weighted fit argmin sum_i w_i ||r_i - (K_NB a)_i||^2 +
    lambda a^T K_BB a, as the unweighted solvers take it: the rows of K_NB and R times
    sqrt(w_i) (W^1/2 scaling); exact (K_BB None), the columns too, so that the solution
    c of (W^1/2 K W^1/2 + lambda I) c = W^1/2 R gives a = W^1/2 c (``scale``: that sqrt(w),
    by which the caller multiplies the coefficients, :func:`_weight_scale`). A row of
    weight 0 drops out. O(N D)."""
    if weight is None:
        return K_NB, K_BB, R
    s = np.sqrt(weight[rows])[:, None]
    scaled = s * K_NB if scale is None else s * K_NB * scale[None, :]
    return scaled, K_BB, s * R


class KernelRidgeRegressor(OKEstimator):
    """Kernel ridge regression in a kernelized output space, exact or Nystrom, with its
    penalty (and, with ``gamma="cv"``, its RBF width) chosen by inner cross-validation.

    Parameters
    ----------
    alpha : "cv", float or list of floats
        lambda, the ridge penalty ||R - K_NB a||^2 + lambda a^T K_BB a (summed, not averaged:
        scikit-learn's KernelRidge ``alpha``). "cv" (default): the best of
        :data:`ALPHA_GRID` by ``cv``-fold cross-validation on the training rows; a list: the
        best of those values. The error compared is Err^phi, sum ||phi(y_i) - F(x_i)||^2 over
        the held-out rows of every fold (paper eq. 7).
    cv : int >= 2
        Folds of that inner cross-validation (at most N); shuffled with ``random_state``.
    input_kernel : {"rbf", "linear", "precomputed"}
        The kernel on inputs. "precomputed": X is the (N, N) input Gram (similarity) matrix of
        the training items at fit and the (Q, N) similarity of new items to them at
        prediction (columns in the training order), as scikit-learn's ``kernel="precomputed"``;
        cross-validation slices it (okcore.model_selection) and must not see the test items'
        columns.
    gamma : "auto", "cv", "ard", float or list of floats
        RBF k(x, x') = exp(-sum_d gamma_d (x_d - x'_d)^2): one width, or one per feature
        (ARD); "auto": 1 / the mean squared distance between two training inputs; "cv": the
        best multiple of "auto" among :data:`GAMMA_SCALES`, chosen with lambda by the same
        inner cross-validation (the same folds for every width; a float ``alpha`` is then
        the only penalty tried); "ard": one width per input, those of largest Gaussian-process
        marginal likelihood of the output features on a seeded subsample of at most
        :data:`~okcore.kernel_models.ard.ARD_ROWS` training rows
        (:mod:`okcore.kernel_models.ard`), then lambda by the cross-validation. Unused by the
        linear and precomputed kernels.
    n_components : int or None
        None (default): exact KRR, O(N^3) time and about 3 N^2 floats (refused above 3 GiB).
        An int D: Nystrom KRR on D landmark rows drawn uniformly at random, O(N D^2 + D^3)
        time and N D floats (:func:`~okcore.kernel_models.cost.ridge_held_bytes`).
    fit_intercept : bool
        True (default): F_0 = the mean training feature, the ridge fitted to the centred
        rows (predictions shrink to the mean output, not to 0, far from the data). False:
        no intercept, exactly scikit-learn's KernelRidge.
    factor_rank, factor_tol, n_landmarks :
        The output factor, as :class:`~okcore.boosting.OKBoostRegressor`.
    random_state : None, int or Generator
        Seeds the CV folds and the Nystrom landmarks.

    Fitted attributes: those of every estimator (``ensemble_`` a one-stage
    :class:`~okcore.kernel_models.kernel_ensemble.KernelEnsemble`, ``train_loss_`` (1,)),
    ``alpha_`` the penalty used, ``cv_alphas_`` and ``cv_errors_`` (the grid and its mean
    held-out Err^phi per row; None for a float ``alpha`` and a width not searched), and
    ``cv_gammas_`` (with ``gamma="cv"``: the widths tried, (len(GAMMA_SCALES), p); then
    ``cv_errors_`` is (widths, penalties); else None); the RBF widths used are
    ``ensemble_.gamma``. W^F (``predict_weights``) are the
    minimum-norm weights of F(x) over the training features (as for boosted KRR).
    Cost: one factorisation per fit and per CV fold (N^3, or N D^2 with Nystrom), times
    len(GAMMA_SCALES) folds' worth with ``gamma="cv"``; with ``gamma="ard"`` plus the
    likelihood's maximisation, independent of N (:mod:`okcore.kernel_models.ard`).
    """

    supports_sample_weight = True

    _parameter_constraints = {
        "alpha": [Options(("cv",)), Interval(float, 0.0, None, "neither"), PositiveFloats()],
        "cv": [Interval(int, 2, None, "left")],
        "input_kernel": [Options(INPUT_KERNELS)],
        "gamma": [
            Options(("auto", "cv", "ard")),
            Interval(float, 0.0, None, "neither"),
            PositiveFloats(),
        ],
        "n_components": [Interval(int, 1, None, "left"), Options((None,))],
        "fit_intercept": [Options((False, True))],
        "factor_rank": [Interval(int, 1, None, "left"), Options((None,))],
        "factor_tol": [Interval(float, 0.0, 1.0, "left")],
        "n_landmarks": [Interval(int, 1, None, "left"), Options((None,))],
        "random_state": [RandomStateLike()],
    }

    def __init__(
        self,
        *,
        alpha: Any = "cv",
        cv: int = 5,
        input_kernel: str = "rbf",
        gamma: Any = "auto",
        n_components: int | None = None,
        fit_intercept: bool = True,
        factor_rank: int | None = None,
        factor_tol: float = RANK_TOLERANCE,
        n_landmarks: int | None = None,
        random_state: Any = None,
    ) -> None:
        self.alpha = alpha
        self.cv = cv
        self.input_kernel = input_kernel
        self.gamma = gamma
        self.n_components = n_components
        self.fit_intercept = fit_intercept
        self.factor_rank = factor_rank
        self.factor_tol = factor_tol
        self.n_landmarks = n_landmarks
        self.random_state = random_state

    @property
    def pairwise_inputs(self) -> bool:
        """Whether X is a precomputed similarity among the training items (its columns are
        items: cross-validation gives a fold the columns of its training items only)."""
        return self.input_kernel == "precomputed"

    @property
    def _searches_width(self) -> bool:
        """Whether the fit chooses the RBF width by CV (``gamma="cv"``)."""
        return self.gamma == "cv" and self.input_kernel == "rbf"

    def _alpha_grid(self) -> tuple[float, ...]:
        if isinstance(self.alpha, str):
            return ALPHA_GRID
        if isinstance(self.alpha, list | tuple | np.ndarray):
            return tuple(float(a) for a in np.ravel(self.alpha))
        return (float(self.alpha),)

    def _fit_model(self, context: FitContext) -> FittedModel:
        """Penalty by CV when a grid is given (one factorisation per fold), with
        ``gamma="cv"`` for each RBF width of GAMMA_SCALES on the same folds, then the ridge
        on every training row."""
        X, space, rng = dense_float64(context.X), context.space, context.rng
        weight = context.sample_weight
        monitor = RoundMonitor(1, context.callback)
        monitor.begin()  # the search and the solve are the one round, not the output space
        searches_width = self._searches_width
        if self.gamma == "ard" and self.input_kernel == "rbf":
            widths = ard_widths(X, space.phi, rng, sample_weight=weight)
            kernel = make_input_kernel("rbf", widths, X)
        else:
            automatic = searches_width or self.gamma == "ard"
            kernel = make_input_kernel(self.input_kernel, "auto" if automatic else self.gamma, X)
        n = X.shape[0]
        n_basis = n if self.n_components is None else min(int(self.n_components), n)
        self._check_memory(n, n_basis)
        grid = self._alpha_grid()
        self.cv_alphas_: np.ndarray | None = None
        self.cv_errors_: np.ndarray | None = None
        self.cv_gammas_: np.ndarray | None = None
        alpha = grid[0]
        if searches_width:
            kernels = [InputKernel("rbf", kernel.gamma * scale) for scale in GAMMA_SCALES]
            fold_seed = int(rng.integers(2**63))  # the same folds for every width
            errors = np.array(
                [
                    self._cv_errors(k, X, space.phi, grid, np.random.default_rng(fold_seed), weight)
                    for k in kernels
                ]
            )
            width, alpha = self._best_penalty(errors, grid)
            kernel = kernels[width]
            self.cv_gammas_ = np.array([k.gamma for k in kernels])
            self.cv_alphas_, self.cv_errors_ = np.array(grid), errors
        elif len(grid) > 1:
            errors = self._cv_errors(kernel, X, space.phi, grid, rng, weight)
            _, alpha = self._best_penalty(errors[None], grid)
            self.cv_alphas_, self.cv_errors_ = np.array(grid), errors
        rows = np.arange(n)
        basis = rows if n_basis == n else np.sort(rng.choice(n, n_basis, replace=False))
        init, K_NB, R, K_BB = self._system(kernel, X, space.phi, rows, basis, weight)
        scale = _weight_scale(weight, rows, K_BB is None)
        coef = ridge_solve(*_scaled_system(K_NB, K_BB, R, weight, rows, scale), alpha)
        if scale is not None:
            coef *= scale[:, None]
        F = init + K_NB @ coef
        train_loss = weighted_mean(np.sum((space.phi - F) ** 2, axis=1), weight)
        self.alpha_ = float(alpha)
        ensemble = KernelEnsemble(
            kernel=kernel.name,
            gamma=kernel.gamma,
            init=init,
            coef=np.ones(1),
            basis_offset=np.array([0, len(basis)], dtype=np.int64),
            basis_index=basis.astype(np.int64),
            basis_inputs=np.empty((len(basis), 0)) if kernel.name == "precomputed" else X[basis],
            alpha=coef,
            train_phi=space.phi,
        )
        stopped = monitor.end_round(0, train_loss)
        return FittedModel(
            ensemble,
            space,
            rows,
            n_estimators=1,
            stopped_by_callback=stopped,
            train_loss=np.array([train_loss]),
            resolved_params=self._resolved_params(kernel, float(alpha)),
        )

    @staticmethod
    def _resolved_params(kernel: InputKernel, alpha: float) -> dict[str, Any]:
        """The fitted ``resolved_params_``: the penalty (``alpha="cv"`` resolved) and an RBF
        kernel's width when every feature has the same one (``gamma`` "auto" or "cv"
        resolved; differing per-feature widths are in ``ensemble_.gamma``)."""
        resolved: dict[str, Any] = {"alpha": alpha}
        widths = np.ravel(np.asarray(kernel.gamma, dtype=np.float64))
        if kernel.name == "rbf" and widths.size and np.all(widths == widths[0]):
            resolved["gamma"] = float(widths[0])
        return resolved

    @staticmethod
    def _best_penalty(errors: np.ndarray, grid: tuple[float, ...]) -> tuple[int, float]:
        """(width index, penalty) of least CV error in ``errors`` (widths, penalties); ties
        (and a flat curve) go to the first width (the widest kernel), then to the largest
        penalty: the smoother model."""
        if not np.isfinite(errors).any():
            raise DataError(
                f"every alpha of {list(grid)} makes K + alpha I singular for some fold: "
                "the input similarity is not positive semi-definite; give larger alphas"
            )
        flipped = errors[:, ::-1]  # largest penalty first
        width, j = np.unravel_index(int(np.argmin(flipped)), flipped.shape)
        return int(width), grid[len(grid) - 1 - int(j)]

    def _system(
        self,
        kernel: InputKernel,
        X: np.ndarray,
        phi: np.ndarray,
        rows: np.ndarray,
        basis: np.ndarray,
        weight: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """(F_0, k(rows, basis), the targets phi - F_0, k(basis, basis) or None when exact)
        of a fit on training ``rows`` (sorted) with ``basis`` among them; F_0 the mean, the
        weighted mean with sample weights ``weight`` (N,)."""
        K_NB = kernel.cross(X[rows], basis, None if kernel.name == "precomputed" else X[basis])
        init = (
            np.average(phi[rows], axis=0, weights=None if weight is None else weight[rows])
            if self.fit_intercept
            else np.zeros(phi.shape[1])
        )
        exact = len(basis) == len(rows)
        K_BB = None if exact else K_NB[np.searchsorted(rows, basis)]
        return init, K_NB, phi[rows] - init, K_BB

    def _cv_errors(
        self,
        kernel: InputKernel,
        X: np.ndarray,
        phi: np.ndarray,
        grid: tuple[float, ...],
        rng: np.random.Generator,
        weight: np.ndarray | None = None,
    ) -> np.ndarray:
        """Mean held-out ||phi_i - F(x_i)||^2 per penalty of ``grid`` over ``cv`` folds of the
        training rows (inf where a fold's system is singular). Only the fold's training
        rows (and, for a precomputed kernel, their columns) fit each fold's path. With
        sample weights ``weight`` (N,) each fold is a weighted fit and the held-out errors
        a weighted mean (the folds split the weights with the rows, the positive ones spread
        over the folds: :func:`~okcore.folds.kfold`)."""

        n = X.shape[0]
        n_folds = min(int(self.cv), n)
        if n_folds < 2:
            raise DataError(
                "choosing alpha by cross-validation needs at least 2 training rows "
                f"(n_samples = {n}); give alpha a float"
            )
        n_positive = positive_rows(n, weight)
        if n_positive < 2:
            raise DataError(
                "choosing alpha (and gamma='cv') by cross-validation needs at least 2 training "
                f"rows with positive sample_weight (each fold is fitted on the others): got "
                f"{n_positive}; give alpha (and gamma) a float, or more rows a positive weight"
            )
        errors = np.zeros(len(grid))
        for train, test in kfold(n, n_folds, rng, weight):
            m = len(train) if self.n_components is None else min(self.n_components, len(train))
            basis = train if m == len(train) else np.sort(rng.choice(train, m, replace=False))
            errors += self._fold_errors(kernel, X, phi, grid, (train, test, basis), weight)
        return errors / (n if weight is None else float(weight.sum()))

    def _fold_errors(
        self,
        kernel: InputKernel,
        X: np.ndarray,
        phi: np.ndarray,
        grid: tuple[float, ...],
        fold: tuple[np.ndarray, np.ndarray, np.ndarray],
        weight: np.ndarray | None,
    ) -> np.ndarray:
        """The summed (weighted) held-out ||phi_i - F(x_i)||^2 of one fold per penalty of
        ``grid`` (inf where its system is singular); ``fold`` = (training rows, test rows,
        basis rows). Its kernel blocks are freed when it returns, before the next fold
        builds its own (held across the loop they were a second n x D, or n x n, array)."""
        train, test, basis = fold
        init, K_NB, R, K_BB = self._system(kernel, X, phi, train, basis, weight)
        scale = _weight_scale(weight, train, K_BB is None)
        K_NB, K_BB, R = _scaled_system(K_NB, K_BB, R, weight, train, scale)
        path = exact_path(K_NB, R) if K_BB is None else nystrom_path(K_NB, K_BB, R)
        inputs = None if kernel.name == "precomputed" else X[basis]
        K_test = kernel.cross(X[test], basis, inputs)
        values = path.values(K_test if scale is None else K_test * scale)
        w_test = np.ones(len(test)) if weight is None else weight[test]
        errors = np.full(len(grid), np.inf)
        for j, lam in enumerate(grid):
            if not path.singular(lam):
                errors[j] = float(w_test @ np.sum((phi[test] - init - values(lam)) ** 2, axis=1))
        return errors

    def _check_memory(self, n_rows: int, n_basis: int) -> None:
        """Refuse, before any work, kernel matrices beyond MAX_KERNEL_BYTES."""
        exact = n_basis == n_rows
        held = ridge_held_bytes(n_rows, n_basis)
        if held > MAX_KERNEL_BYTES:
            fix = "set n_components (Nystrom)" if exact else "lower n_components"
            raise DataError(
                f"kernel ridge on {n_rows} rows with {n_basis} basis rows holds "
                f"{held / 2**30:.1f} GiB of kernel values (limit "
                f"{MAX_KERNEL_BYTES / 2**30:.0f} GiB): {fix}"
            )

    def estimate_work(
        self, n_samples: int, n_features: int, rank: int
    ) -> tuple[float, float, float]:
        """(kernel operations, factorisation flops, likelihood flops) of :meth:`fit` with
        these parameters on ``n_samples`` rows of ``n_features`` inputs and output features
        of ``rank`` columns (the outputs' columns for the linear kernel): the final fit, the
        CV fits of the penalty and width search, and the per-input widths' likelihood
        (:func:`okcore.kernel_models.cost.ridge_work`). What :meth:`estimate_cost` prices,
        given apart so that the rates can be calibrated (bench/krr_cost.py). O(1)."""
        return ridge_work(
            n_samples,
            n_features,
            rank,
            n_components=self.n_components,
            n_folds=int(self.cv) if len(self._alpha_grid()) > 1 or self._searches_width else 0,
            precomputed=self.input_kernel == "precomputed",
            n_widths=len(GAMMA_SCALES) if self._searches_width else 1,
            ard_rows=ARD_ROWS if self.gamma == "ard" and self.input_kernel == "rbf" else 0,
        )

    def _estimate_stages(self, n_samples: int, n_features: int, rank: int) -> StageCost:
        """The fit's cost: :meth:`estimate_work` priced by
        :func:`okcore.kernel_models.cost.ridge_cost`."""
        return ridge_cost(
            n_samples,
            n_features,
            rank,
            self.estimate_work(n_samples, n_features, rank),
            n_components=self.n_components,
            precomputed=self.input_kernel == "precomputed",
        )
