"""Boosted sparse kernel ridge regression in the output feature space (Sun & Yao, "Boosting
Kernel Models for Regression", ICDM 2006): the second family of base learner of okcore.

The stage loop :func:`krr_boost` is a plain function on the factor Phi of the output Gram
matrix (math note s. 2): F_0 the mean of the phi_i, then per stage a sparse KRR
(:class:`okcore.kernel_models.krr.SparseKRRLearner`) fitted to the residual rows phi_i - F(x_i), added
with Sun & Yao's coefficient, CG refinement and optional re-weighting
(:mod:`okcore.kernel_models.sun_yao`), or with Friedman's plain shrinkage nu. In the output-kernel
setting each stage is a kernel dependency estimation (KDE) step on the residuals, so
"boosted KDE" is this estimator with a non-linear output kernel. O(M (N D (p + r) + n D^2))
for M stages of D basis vectors on subsets of n rows; never N x N.
:class:`KRRBoostRegressor` is the scikit-learn style estimator around it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import (
    Interval,
    Options,
    PositiveFloats,
    RandomStateLike,
    dense_float64,
)
from ..base import (
    EvalData,
    FitContext,
    FittedModel,
    OKEstimator,
    StagedPredictions,
    embed_eval_set,
    hold_out_rows,
)
from ..callbacks import EarlyStopping, FitProgress, RoundMonitor, early_stopping
from ..cost import StageCost
from ..exceptions import DataError
from ..losses import SquaredFeatureLoss
from ..outputs.space import RANK_TOLERANCE
from .cost import krr_stages_cost
from .kernel_ensemble import KernelEnsemble
from .krr import BASIS_SELECTIONS, INPUT_KERNELS, KRRStage, SparseKRRLearner, make_input_kernel
from .sun_yao import Reweighting, refine_stage, stage_coefficient

REGULARIZATIONS = ("sun-yao", "shrinkage")
#: Largest k(training rows, basis) matrix a stage may hold (N x D float64): the fit
#: refuses larger ones before it starts rather than swap.
MAX_STAGE_KERNEL_BYTES = 2 << 30
#: Largest store of per-stage training (and validation) values that re-weighting may keep.
MAX_REWEIGHT_BYTES = 2 << 30


@dataclass(frozen=True)
class StepRule:
    """How a new model joins the ensemble: ``regularization`` "sun-yao" (eq. 20 with penalty
    ``mu``, ``cg_iter`` CG steps of eq. 21, ``reweight`` all coefficients) or "shrinkage"
    (c = ``learning_rate``)."""

    regularization: str
    mu: float
    learning_rate: float
    cg_iter: int
    reweight: bool


@dataclass
class KRRBoostResult:
    """The stages (basis rows, alphas) with their coefficients, F_0, per-stage losses and
    penalised objective J (eq. 12), and the best round for early stopping (with the
    coefficients at that round: re-weighting changes earlier ones)."""

    stages: list[KRRStage]
    coef: np.ndarray
    init: np.ndarray
    train_loss: np.ndarray
    objective: np.ndarray
    val_loss: np.ndarray | None
    best_iteration: int
    best_coef: np.ndarray
    stopped_by_callback: bool = False


def krr_boost(
    learner: SparseKRRLearner,
    phi: np.ndarray,
    diag: np.ndarray,
    *,
    rule: StepRule,
    n_estimators: int,
    rng: np.random.Generator,
    eval_data: EvalData | None = None,
    stopping: EarlyStopping | None = None,
    callback: Callable[[FitProgress], bool | None] | None = None,
    weight: np.ndarray | None = None,
) -> KRRBoostResult:
    """Boosting of sparse KRR models on the factor rows ``phi`` (N, r) of the learner's rows.

    Per stage m: g_m = a sparse KRR fitted to the residuals on a random subset; with
    "sun-yao", c_m by eq. 20, then ``cg_iter`` CG steps of eq. 21 on c_m alpha_m over all N
    rows, then (``reweight``) every c re-solved; with "shrinkage", c_m = nu. The training
    loss (mean ||phi - F||^2) and J = 1/2 sum ||phi_i - F(x_i)||^2 + mu/2 ||F - F_0||_H^2 are
    recorded per stage; J never increases with "sun-yao" (each step minimises it exactly
    or by CG from the previous point). Early stopping and ``callback`` as in
    :func:`okcore.boosting.boost`. O(N D (p + r + cg_iter r) + n D (D + r + p)) per stage.

    ``weight`` (N,), > 0: sample weights (the learner's too). F_0 is then the weighted mean,
    J and the loss weighted (sum_i w_i ||phi_i - F(x_i)||^2, the loss its weighted mean),
    so eq. 20, the CG of eq. 21 and the re-weighting see W^1/2 g, W^1/2 R and W^1/2 K_NB:
    integer weights fit as repeated rows.
    """
    monitor = RoundMonitor(n_estimators, callback, stopping)
    loss = SquaredFeatureLoss()
    init = phi.mean(axis=0) if weight is None else (weight / weight.sum()) @ phi
    root = None if weight is None else np.sqrt(weight)[:, None]

    def scaled(A: np.ndarray) -> np.ndarray:
        """W^1/2 A: rows scaled by sqrt(w_i) (A itself unweighted)."""
        return A if root is None else root * A

    F = np.tile(init, (phi.shape[0], 1))
    residual = phi - F
    kernel = learner.kernel
    F_val = None if eval_data is None else np.tile(init, (eval_data.X.shape[0], 1))
    reweighting = Reweighting(residual.copy(), rule.mu, weight) if rule.reweight else None
    val_values: list[np.ndarray] = []
    stages: list[KRRStage] = []
    coef: list[float] = []
    train_loss, objective, val_loss = [], [], []
    penalty = 0.0  # ||F - F_0||_H^2 = c^T Q c
    best_coef = np.zeros(0)
    for m in range(n_estimators):
        stage = learner.fit_stage(residual, rng)
        K_NB = learner.cross(np.arange(len(learner.rows)), stage.basis)
        K_BB = K_NB[stage.positions]
        alpha = stage.alpha
        g = K_NB @ alpha
        ensemble_at_basis = F[stage.positions] - init
        if rule.regularization == "shrinkage":
            c = rule.learning_rate
        else:
            c = stage_coefficient(
                scaled(g), scaled(residual), ensemble_at_basis, alpha, K_BB, rule.mu
            )
            if rule.cg_iter and c != 0.0:
                beta = refine_stage(
                    scaled(K_NB), K_BB, scaled(residual), ensemble_at_basis, c * alpha,
                    rule.mu, rule.cg_iter,
                )  # fmt: skip
                alpha = beta / c
                g = K_NB @ alpha
        stage = KRRStage(stage.basis, stage.positions, alpha)
        stages.append(stage)
        g_val = None
        if eval_data is not None:
            g_val = kernel.cross(eval_data.X, stage.basis, learner.basis_inputs(stage.basis))
            g_val = g_val @ alpha
        if reweighting is None:
            penalty += 2.0 * c * float(np.vdot(ensemble_at_basis, alpha))
            penalty += c * c * float(np.vdot(alpha, K_BB @ alpha))
            coef.append(c)
            F += c * g
            residual -= c * g
            if F_val is not None and g_val is not None:
                F_val += c * g_val
        else:
            coef = list(reweighting.add(g, stage.positions, alpha))
            penalty = reweighting.penalty(np.array(coef))
            F = init + reweighting.combine(np.array(coef))
            residual = phi - F
            if F_val is not None and g_val is not None:
                val_values.append(g_val)
                F_val = init + sum(cj * v for cj, v in zip(coef, val_values, strict=True))
        train_loss.append(loss(phi, diag, F, weight))
        data_term = float(np.vdot(scaled(residual), scaled(residual)))
        objective.append(0.5 * data_term + 0.5 * rule.mu * penalty)
        if eval_data is not None and F_val is not None:
            val_loss.append(loss(eval_data.phi, eval_data.diag, F_val, eval_data.weight))
        stop = monitor.end_round(m, train_loss[-1], val_loss[-1] if val_loss else None)
        if monitor.improved:
            best_coef = np.array(coef)
        if stop:
            break
    if stopping is None:
        best_coef = np.array(coef)
    return KRRBoostResult(
        stages=stages,
        coef=np.array(coef, dtype=np.float64),
        init=init,
        train_loss=np.array(train_loss),
        objective=np.array(objective),
        val_loss=np.array(val_loss) if eval_data is not None else None,
        best_iteration=monitor.best_round(len(stages)),
        best_coef=np.asarray(best_coef, dtype=np.float64),
        stopped_by_callback=monitor.stopped,
    )


class KRRBoostRegressor(StagedPredictions, OKEstimator):
    """Boosted sparse kernel ridge regression in a kernelized output space (Sun & Yao 2006).

    Each of ``n_estimators`` stages fits a sparse KRR with ``n_basis`` basis vectors on a
    random subset of ``subset_size`` training rows to the current residuals in the output
    feature space, then joins the ensemble with Sun & Yao's regularized coefficient or a
    plain shrinkage. With a scalar output and the linear output kernel this is the paper's
    boosted KRR; with another output kernel it is boosted kernel dependency estimation.

    Parameters
    ----------
    n_estimators : int
        M, the number of KRR stages (paper: 150).
    subset_size : int
        Rows each stage is fitted on (paper: 2,000); at most N (larger values use all rows).
    n_basis : int
        D, basis vectors per stage, chosen among the subset's rows (paper: 200); at most
        ``subset_size``.
    basis_selection : {"info-gain", "random"}
        "info-gain": greedy forward selection by an information-gain criterion
        (:func:`okcore.kernel_models.krr.select_info_gain`, O(n D (D + r)) per stage); "random": a uniform
        draw from the subset.
    input_kernel : {"rbf", "linear", "precomputed"}
        The kernel on inputs. "precomputed": X is the (N, N) input Gram matrix at fit and the
        (Q, N) kernel against the N training rows at prediction.
    gamma : "auto", float or list of floats
        RBF k(x, x') = exp(-sum_d gamma_d (x_d - x'_d)^2): one float for one width, one per
        input feature for ARD (e.g. from a Gaussian-process marginal likelihood fit:
        gamma_d = 1 / (2 l_d^2)); "auto" (default): Sun & Yao's heuristic gamma = 1 / theta,
        theta = the mean squared distance between two training inputs. RBF only. Stages fit
        residuals and want narrower widths than one model fitted to the targets: choose a
        factor on a GP's gammas on held-out rows (kin40k: 3).
    alpha : float
        lambda, the ridge penalty of every stage's KRR, ||R - K_D a||^2 + lambda a^T K_DD a
        (not averaged: scikit-learn's KernelRidge ``alpha``).
    regularization : {"sun-yao", "shrinkage"}
        How a stage joins: "sun-yao" (default), the coefficient minimising the penalised
        objective 1/2 sum ||phi_i - F(x_i)||^2 + mu/2 ||F - F_0||_H^2 (eq. 12, 19-20, see
        :mod:`okcore.kernel_models.sun_yao`), then ``cg_iter`` CG steps on the stage's alphas (eq. 21);
        "shrinkage": F += ``learning_rate`` x the stage (Friedman).
    mu : float or None
        The ensemble penalty (eq. 12) on the same, summed scale as ``alpha``; None = alpha.
    cg_iter : int
        CG steps of eq. 21 per stage ("sun-yao" only; 0 skips the refinement).
    reweight : bool
        Re-solve every coefficient after each stage (Sun & Yao's appendix, O(N r M^2) in
        all, holds N r M floats; "sun-yao" only). The better ensemble wherever the store
        fits (kin40k, docs/RESULTS.md s. 7.1: NMSE 0.0141 against 0.0239, same CPU time).
    learning_rate : float
        nu in (0, 1] for "shrinkage" (unused by "sun-yao").
    n_iter_no_change, validation_fraction, tol :
        Early stopping on the validation loss, as :class:`~okcore.boosting.OKBoostRegressor`.
    factor_rank, factor_tol, n_landmarks :
        The output factor, as :class:`~okcore.boosting.OKBoostRegressor`.
    random_state : None, int or Generator

    Fitted attributes: those of every estimator (``output_space_``, ``ensemble_`` a
    :class:`~okcore.kernel_models.kernel_ensemble.KernelEnsemble`, ``train_loss_`` and ``validation_loss_``
    per stage, ...) and ``objective_`` (M,), the penalised objective after each stage.
    Memory: a stage holds k(training rows, basis), N x D floats (refused above 2 GiB).
    Inputs are used dense (a sparse X is densified). No ``feature_importances_``.

    ``fit(X, Y, sample_weight=w)``: the weighted squared loss, each stage's sparse KRR
    weighted as :class:`~okcore.kernel_models.ridge.KernelRidgeRegressor` (rows of K_D and of
    the residuals scaled by sqrt(w_i)), F_0 the weighted mean, Sun & Yao's objective, CG and
    re-weighting on the weighted sum (:func:`krr_boost`); the training and hold-out losses
    are weighted means (an ``eval_set``'s is not). Rows of weight 0 are dropped (neither
    fitted nor basis vectors, nor in ``gamma="auto"``'s unweighted mean distance); the random subsets and the basis selection do not see the
    weights, so integer weights equal repeated rows where every row is in every stage's
    subset and basis.

    ``staged_predict``, ``staged_predict_kernel``, ``staged_predict_features``
    (:class:`~okcore.base.StagedPredictions`): predictions after each stage, equal to refits
    with ``n_estimators=m``, except with ``reweight=True``, whose re-weighting changes earlier
    stages' coefficients: stage m is then the first m stages with the final coefficients
    (as ``staged_loss``).
    """

    supports_eval_set = True
    supports_sample_weight = True
    _parameter_constraints = {
        "n_estimators": [Interval(int, 1, None, "left")],
        "subset_size": [Interval(int, 1, None, "left")],
        "n_basis": [Interval(int, 1, None, "left")],
        "basis_selection": [Options(BASIS_SELECTIONS)],
        "input_kernel": [Options(INPUT_KERNELS)],
        "gamma": [Options(("auto",)), Interval(float, 0.0, None, "neither"), PositiveFloats()],
        "alpha": [Interval(float, 0.0, None, "neither")],
        "regularization": [Options(REGULARIZATIONS)],
        "mu": [Interval(float, 0.0, None, "left"), Options((None,))],
        "cg_iter": [Interval(int, 0, None, "left")],
        "reweight": [Options((False, True))],
        "learning_rate": [Interval(float, 0.0, 1.0, "right")],
        "n_iter_no_change": [Interval(int, 1, None, "left"), Options((None,))],
        "validation_fraction": [Interval(float, 0.0, 1.0, "neither")],
        "tol": [Interval(float, 0.0, None, "left")],
        "factor_rank": [Interval(int, 1, None, "left"), Options((None,))],
        "factor_tol": [Interval(float, 0.0, 1.0, "left")],
        "n_landmarks": [Interval(int, 1, None, "left"), Options((None,))],
        "random_state": [RandomStateLike()],
    }

    def __init__(
        self,
        *,
        n_estimators: int = 100,
        subset_size: int = 2000,
        n_basis: int = 200,
        basis_selection: str = "info-gain",
        input_kernel: str = "rbf",
        gamma: Any = "auto",
        alpha: float = 1.0,
        regularization: str = "sun-yao",
        mu: float | None = None,
        cg_iter: int = 3,
        reweight: bool = False,
        learning_rate: float = 0.1,
        n_iter_no_change: int | None = None,
        validation_fraction: float = 0.1,
        tol: float = 1e-7,
        factor_rank: int | None = None,
        factor_tol: float = RANK_TOLERANCE,
        n_landmarks: int | None = None,
        random_state: Any = None,
    ) -> None:
        self.n_estimators = n_estimators
        self.subset_size = subset_size
        self.n_basis = n_basis
        self.basis_selection = basis_selection
        self.input_kernel = input_kernel
        self.gamma = gamma
        self.alpha = alpha
        self.regularization = regularization
        self.mu = mu
        self.cg_iter = cg_iter
        self.reweight = reweight
        self.learning_rate = learning_rate
        self.n_iter_no_change = n_iter_no_change
        self.validation_fraction = validation_fraction
        self.tol = tol
        self.factor_rank = factor_rank
        self.factor_tol = factor_tol
        self.n_landmarks = n_landmarks
        self.random_state = random_state

    def _n_stages(self, n_samples: int) -> int:
        return self.n_estimators

    def _fit_model(self, context: FitContext) -> FittedModel:
        """:func:`krr_boost` on the context's inputs; the eval set is embedded in the training
        space first, early stopping without one holds out ``validation_fraction`` of the
        rows (for a precomputed input kernel, rows of X; its columns stay the N given)."""
        X, space, rng = dense_float64(context.X), context.space, context.rng
        if self.reweight and self.regularization != "sun-yao":
            raise DataError("reweight=True applies to regularization='sun-yao' only")
        rows = np.arange(X.shape[0])
        weight = context.sample_weight
        fitted = X if weight is None or self.input_kernel == "precomputed" else X[weight > 0]
        kernel = make_input_kernel(self.input_kernel, self.gamma, fitted)
        eval_data = None
        if context.eval_set is not None:  # embedded before rows are dropped: all N columns
            eval_data = embed_eval_set(
                context.eval_set, space, self.n_features_in_, type(self).__name__
            )
            eval_data.X = dense_float64(eval_data.X)
        if weight is not None and not (weight > 0).all():  # weight 0: a dropped row
            rows = np.flatnonzero(weight > 0)
            space, weight = space.subset(rows), weight[rows]
        if context.eval_set is None and self.n_iter_no_change is not None:
            train, val = hold_out_rows(len(rows), self.validation_fraction, rng)
            held_weight = None if weight is None else weight[val]
            eval_data = EvalData(X[rows[val]], space.phi[val], space.diag[val], held_weight)
            space, rows = space.subset(train), rows[train]
            weight = None if weight is None else weight[train]
        self._check_memory(len(rows), space.rank, eval_data)
        learner = SparseKRRLearner(
            X, rows, kernel, subset_size=self.subset_size, n_basis=self.n_basis,
            selection=self.basis_selection, alpha=self.alpha, weight=weight,
        )  # fmt: skip
        rule = StepRule(
            self.regularization,
            self.alpha if self.mu is None else float(self.mu),
            self.learning_rate,
            self.cg_iter,
            bool(self.reweight),
        )
        result = krr_boost(
            learner,
            space.phi,
            space.diag,
            rule=rule,
            n_estimators=self.n_estimators,
            rng=rng,
            eval_data=eval_data,
            stopping=early_stopping(self.n_iter_no_change, self.tol),
            callback=context.callback,
            weight=weight,
        )
        keep = result.best_iteration + 1
        stages = result.stages[:keep]
        basis = np.concatenate([s.basis for s in stages])
        inputs = learner.basis_inputs(basis)
        ensemble = KernelEnsemble(
            kernel=kernel.name,
            gamma=kernel.gamma,
            init=result.init,
            coef=result.best_coef[:keep],
            basis_offset=np.cumsum([0] + [len(s.basis) for s in stages]).astype(np.int64),
            basis_index=basis.astype(np.int64),
            basis_inputs=np.empty((len(basis), 0)) if inputs is None else inputs,
            alpha=np.concatenate([s.alpha for s in stages]),
            train_phi=space.phi,
        )
        self.objective_ = result.objective
        return FittedModel(
            ensemble,
            space,
            rows,
            n_estimators=keep,
            stopped_by_callback=result.stopped_by_callback,
            train_loss=result.train_loss,
            validation_loss=result.val_loss,
        )

    def _estimate_stages(self, n_samples: int, n_features: int, rank: int) -> StageCost:
        """The stages' cost (:mod:`okcore.kernel_models.cost`)."""
        return krr_stages_cost(
            n_samples,
            n_features,
            rank,
            n_stages=self.n_estimators,
            subset_size=self.subset_size,
            n_basis=self.n_basis,
            cg_iter=self.cg_iter if self.regularization != "shrinkage" else 0,
            reweight=bool(self.reweight),
            precomputed=self.input_kernel == "precomputed",
        )

    def _check_memory(self, n_rows: int, rank: int, eval_data: EvalData | None) -> None:
        """Refuse, before any work, a stage kernel block or a re-weighting store that would
        not fit the stated limits, naming the cost and the parameter to lower."""
        n_basis = min(self.n_basis, self.subset_size, n_rows)
        stage_bytes = 8.0 * n_rows * n_basis
        if stage_bytes > MAX_STAGE_KERNEL_BYTES:
            raise DataError(
                f"a stage would hold k(training rows, basis) of {n_rows} x {n_basis} floats "
                f"({stage_bytes / 2**30:.1f} GiB, limit {MAX_STAGE_KERNEL_BYTES / 2**30:.0f} "
                "GiB): lower n_basis"
            )
        if self.reweight:
            n_val = 0 if eval_data is None else eval_data.X.shape[0]
            store = 8.0 * (n_rows + n_val) * rank * self.n_estimators
            if store > MAX_REWEIGHT_BYTES:
                raise DataError(
                    f"reweight=True keeps every stage's values, (N + N_val) r M = "
                    f"{n_rows + n_val} x {rank} x {self.n_estimators} floats "
                    f"({store / 2**30:.1f} GiB, limit {MAX_REWEIGHT_BYTES / 2**30:.0f} GiB): "
                    "lower n_estimators, use a low-rank output factor (factor_rank), or "
                    "reweight=False"
                )

    def staged_loss(
        self, X: Any, Y: Any = None, *, gram_cross: Any = None, gram_diag: Any = None
    ) -> np.ndarray:
        """Err^phi = mean ||phi(y) - F_m(x)||^2 after each stage m = 1..M with the fitted
        coefficients, shape (M,). O(Q T (p + r))."""
        X = dense_float64(self._fitted_inputs(X))
        phi, diag = self._target_features(Y, gram_cross, gram_diag, n_rows=X.shape[0])
        e = self.ensemble_
        assert isinstance(e, KernelEnsemble)
        F = np.tile(e.init, (X.shape[0], 1))
        loss = SquaredFeatureLoss()
        out = np.empty(e.n_trees)
        for m, h in enumerate(e.stage_values(X)):
            F += h
            out[m] = loss(phi, diag, F)
        return out
