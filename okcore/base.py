"""What every okcore estimator shares: scikit-learn parameter handling, fitting set-up and
the prediction API (paper eq. 5-8) computed from a :class:`FittedEnsemble`: an
:class:`~okcore.trees.ensemble.TreeEnsemble` (OK3 trees, forests, OKBoost) or a
:class:`~okcore.kernel_models.kernel_ensemble.KernelEnsemble` (boosted sparse KRR).
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np

from ._validation import (
    Callable_,
    Interval,
    Options,
    RandomStateLike,
    check_inputs,
    check_is_fitted,
    check_kernel_diag,
    check_random_state,
    dense_float64,
    resolve_max_features,
    validate_params,
)
from .exceptions import DataError, OKCoreError
from .outputs import preimage
from .outputs.kernels import DiffusionKernel, make_kernel
from .outputs.space import OutputSpace, estimate_factor_seconds
from .trees.binning import MAX_BINS, BinnedInputs, bin_inputs
from .trees.builder import TreeParams
from .trees.ensemble import TreeEnsemble

#: Constraints shared by every estimator that grows OK3 trees.
TREE_CONSTRAINTS: dict[str, list] = {
    "splitter": [Options(("best", "random"))],
    "max_splits": [Interval(int, 1, None, "left"), Options((None,))],
    "max_features": [
        Options((None, "sqrt", "log2")),
        Interval(int, 1, None, "left"),
        Interval(float, 0.0, 1.0, "right"),
    ],
    "leaf_order": [Options(("variance", "gain"))],
    "min_samples_leaf": [Interval(int, 1, None, "left")],
    "max_depth": [Interval(int, 1, None, "left"), Options((None,))],
    "max_bins": [Interval(int, 2, MAX_BINS, "both"), Options((None,))],
    "refine_cuts": [Options((True, False))],
    "factor_rank": [Interval(int, 1, None, "left"), Options((None,))],
    "factor_tol": [Interval(float, 0.0, 1.0, "left")],
    "n_landmarks": [Interval(int, 1, None, "left"), Options((None,))],
    "n_jobs": [Options((None, -1)), Interval(int, 1, None, "left")],
    "random_state": [RandomStateLike()],
}
CALLBACK_CONSTRAINT: list[Any] = [Callable_(), Options((None,))]


@dataclass(frozen=True)
class FitProgress:
    """What a fit callback receives: at the start of each set-up phase, then after each tree.

    ``phase`` is "output_space" (factorising the output kernel), "binning" (histogram bins
    of the inputs) or "trees"; set-up phases report ``done=0`` and, when one can be given,
    ``phase_eta``, an estimate in seconds of how long the phase will take (its cost model is
    stated where it is computed). Losses are OKBoost's only.
    """

    done: int
    total: int
    elapsed: float
    train_loss: float | None = None
    val_loss: float | None = None
    phase: str = "trees"
    phase_eta: float | None = None


class RoundMonitor:
    """The per-round bookkeeping of a boosting stage loop (trees or kernel models): the
    validation loss's best round and early stopping (``n_iter_no_change`` rounds without an
    improvement by ``tol``), progress to ``callback`` and its stop request. The clock starts
    when the monitor is made."""

    def __init__(
        self,
        n_estimators: int,
        n_iter_no_change: int | None,
        tol: float,
        callback: Callable[[FitProgress], bool | None] | None,
    ) -> None:
        self.n_estimators, self.n_iter_no_change, self.tol = n_estimators, n_iter_no_change, tol
        self.callback, self.start = callback, time.perf_counter()
        self.best_loss, self.best_iteration, self.stale = np.inf, 0, 0
        self.improved = self.stopped = False

    def end_round(self, m: int, train_loss: float, val_loss: float | None = None) -> bool:
        """Record round m (0-based); True when the loop should stop. ``improved`` then says
        whether m is the best round so far, ``stopped`` whether the callback asked to stop."""
        self.improved = False
        if val_loss is not None:
            if val_loss < self.best_loss - self.tol:
                self.best_loss, self.best_iteration, self.stale = val_loss, m, 0
                self.improved = True
            else:
                self.stale += 1
        progress = FitProgress(
            done=m + 1,
            total=self.n_estimators,
            elapsed=time.perf_counter() - self.start,
            train_loss=train_loss,
            val_loss=val_loss,
        )
        if self.callback is not None and self.callback(progress):
            self.stopped = True
            return True
        return self.n_iter_no_change is not None and self.stale >= self.n_iter_no_change

    def best_round(self, n_rounds: int) -> int:
        """The round to keep: the last one, or with early stopping the best one."""
        return n_rounds - 1 if self.n_iter_no_change is None else self.best_iteration


def report_phase(
    callback: Any, phase: str, total: int, elapsed: float = 0.0, eta: float | None = None
) -> None:
    """Tell a fit callback that a set-up phase starts (done=0). A stop request returned here
    is honoured after the first tree: set-up phases are not interruptible."""
    if callback is not None:
        callback(FitProgress(done=0, total=total, elapsed=elapsed, phase=phase, phase_eta=eta))


def binning_seconds(n_samples: int, n_features: int) -> float:
    """Cost model of :func:`okcore.trees.binning.bin_inputs` for the "binning" phase ETA: one sort
    per feature, ~2e-8 s per element and log2 step on this 2-core class of machine."""
    return 2e-8 * n_samples * n_features * max(np.log2(max(n_samples, 2)), 1.0)


def check_callback(callback: Any) -> None:
    """A fit callback is None or callable."""
    if not any(c.accepts(callback) for c in CALLBACK_CONSTRAINT):
        raise DataError(f"callback must be callable: got {callback!r}")


def target_features(
    space: OutputSpace,
    Y: Any = None,
    gram_cross: Any = None,
    gram_diag: Any = None,
    n_rows: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Factor coordinates and k(y, y) of true outputs in ``space``: Y, or a Gram (Q, N)
    against the training outputs with its diagonal (Q,). Used by losses and metrics."""
    if (Y is None) == (gram_cross is None):
        raise DataError("pass the true outputs Y, or gram_cross (with gram_diag), not both")
    if Y is not None:
        phi, diag = space.embed(Y)
    else:
        phi = space.embed_gram(gram_cross)
        diag = check_kernel_diag(gram_diag, "gram_diag")
        if diag.shape[0] != phi.shape[0]:
            raise DataError(
                f"gram_diag has {diag.shape[0]} values but gram_cross has {phi.shape[0]} rows"
            )
    if n_rows is not None and phi.shape[0] != n_rows:
        raise DataError(f"X has {n_rows} rows but the true outputs describe {phi.shape[0]}")
    return phi, diag


class FittedEnsemble(Protocol):
    """What the prediction API needs from a fitted model's ``ensemble_``: F(x) in the factor
    coordinates of the output space, W^F over the training outputs, the number of stages
    (trees or kernel models) and truncation to the first ones (early stopping)."""

    @property
    def n_trees(self) -> int: ...

    def decision(self, X: Any) -> np.ndarray:
        """F(x), shape (Q, r)."""
        ...

    def weights(self, X: Any, *, n_threads: int = 1) -> np.ndarray:
        """W^F, shape (Q, N): F(x) = W^F(x) Phi. Its cost is stated by each ensemble."""
        ...

    def truncate(self, n_trees: int) -> Any:
        """The ensemble of the first ``n_trees`` stages."""
        ...


@dataclass
class EvalData:
    """Validation inputs with the factor coordinates and k(y, y) of their true outputs."""

    X: Any
    phi: np.ndarray
    diag: np.ndarray


def embed_eval_set(eval_set: Any, space: OutputSpace, n_features: int) -> EvalData:
    """A boosting ``eval_set``, (X_val, Y_val) or (X_val, K_val_train, k_val_diag), checked
    and embedded in the training output space."""
    if not isinstance(eval_set, tuple | list) or len(eval_set) not in (2, 3):
        raise DataError("eval_set must be (X_val, Y_val) or (X_val, K_val_train, k_val_diag)")
    X_val = check_inputs(eval_set[0], n_features, name="eval_set X")
    if len(eval_set) == 2:
        phi, diag = target_features(space, Y=eval_set[1], n_rows=X_val.shape[0])
    else:
        phi, diag = target_features(
            space, gram_cross=eval_set[1], gram_diag=eval_set[2], n_rows=X_val.shape[0]
        )
    return EvalData(X_val, phi, diag)


def hold_out_rows(
    n: int, fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Early stopping without an eval_set: (training rows, validation rows), both sorted, the
    validation rows a random ``fraction`` of the n rows."""
    n_val = int(round(fraction * n))
    if n_val < 1 or n - n_val < 2:
        raise DataError(
            f"validation_fraction={fraction} of {n} rows leaves no usable "
            "validation or training set for early stopping; give more data or an eval_set"
        )
    perm = rng.permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


@dataclass
class FitContext:
    """What the shared fit path hands an estimator's :meth:`OKEstimator._fit_model` hook:
    checked inputs X (N, p), the output space of the N training outputs, the seeded random
    generator, the progress callback, the eval set (OKBoost only) and the start time."""

    X: Any
    space: OutputSpace
    rng: np.random.Generator
    callback: Callable[[FitProgress], bool | None] | None
    eval_set: tuple | None
    start: float

    def elapsed(self) -> float:
        return time.perf_counter() - self.start


@dataclass
class FittedModel:
    """What an estimator's hook returns; the shared fit path makes it the fitted attributes.

    ``space`` may differ from the context's (early stopping holds out rows:
    ``train_indices`` are then the rows whose outputs the model is made of). Losses are
    per round (boosting); None where they do not apply.
    """

    ensemble: FittedEnsemble
    space: OutputSpace
    train_indices: np.ndarray
    n_estimators: int
    stopped_by_callback: bool = False
    train_loss: np.ndarray | None = None
    validation_loss: np.ndarray | None = None
    max_bins: int | None = None
    sketch_dim: int | None = None


#: The fitted attributes of every estimator (None where one does not apply), set by
#: :meth:`OKEstimator.fit` from a :class:`FittedModel`.
FITTED_ATTRIBUTES = (
    "output_space_",
    "ensemble_",
    "n_features_in_",
    "n_train_",
    "train_indices_",
    "n_estimators_",
    "train_loss_",
    "validation_loss_",
    "stopped_by_callback_",
    "max_bins_",
    "sketch_dim_",
    "fit_time_",
)


class OKEstimator:
    """The estimator contract: scikit-learn parameter handling, one fit path, and the
    prediction API computed from the fitted :class:`FittedEnsemble`.

    A subclass stores its keyword-only ``__init__`` arguments unchanged, declares
    ``_parameter_constraints`` and implements :meth:`_fit_model` (what differs between
    estimators: growing one tree, a forest, or boosting rounds). :meth:`fit` does the rest
    (validation, the output space, fitted attributes: :data:`FITTED_ATTRIBUTES`).
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {}
    #: Whether ``fit`` takes an ``eval_set`` (validation loss per round).
    _supports_eval_set: ClassVar[bool] = False
    # parameters of the tree estimators (TREE_CONSTRAINTS); every estimator declares the
    # output-space ones (factor_rank, factor_tol, n_landmarks) and random_state
    splitter: str
    max_splits: int | None
    max_features: Any
    leaf_order: str
    min_samples_leaf: int
    max_depth: int | None
    max_bins: Any
    refine_cuts: bool
    factor_rank: int | None
    factor_tol: float
    n_landmarks: int | None
    n_jobs: int | None
    random_state: Any
    # fitted attributes
    output_space_: OutputSpace
    ensemble_: FittedEnsemble
    n_features_in_: int
    n_train_: int
    output_1d_: bool

    # ------------------------------------------------------------------ parameters
    @classmethod
    def _get_param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return sorted(p.name for p in signature.parameters.values() if p.name != "self")

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params: Any) -> OKEstimator:
        valid = self._get_param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(
                    f"Invalid parameter {name!r} for estimator {type(self).__name__}. "
                    f"Valid parameters are: {valid}."
                )
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = {
            p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()
        }
        changed = [
            f"{k}={v!r}"
            for k, v in self.get_params().items()
            if not (
                v is defaults.get(k) or (isinstance(v, int | float | str) and v == defaults.get(k))
            )
        ]
        return f"{type(self).__name__}({', '.join(changed)})"

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's estimator tags (scikit-learn >= 1.6 asks for them in ``clone``,
        ``cross_val_score`` and ``GridSearchCV``): a multi-output regressor taking dense or
        sparse inputs. Imported here: okcore itself does not depend on scikit-learn."""
        from sklearn.utils import InputTags, RegressorTags, Tags, TargetTags

        return Tags(
            estimator_type="regressor",
            target_tags=TargetTags(required=False, multi_output=True, single_output=True),
            regressor_tags=RegressorTags(),
            input_tags=InputTags(sparse=True),
        )

    def validate_params(self) -> None:
        """Check every parameter against its constraints (fit does it first); raises
        :class:`~okcore.exceptions.InvalidParameterError` naming the parameter, the allowed
        values and the value given. Callers (the service) may check before fitting."""
        validate_params(self, self._parameter_constraints)

    # ------------------------------------------------------------------ fitting
    def fit(
        self,
        X: Any,
        Y: Any = None,
        *,
        gram: Any = None,
        kernel: Any = None,
        eval_set: tuple | None = None,
        callback: Callable[[FitProgress], bool | None] | None = None,
    ) -> OKEstimator:
        """Fit on inputs X (N, p) and outputs Y with ``kernel`` ("linear" by default), a
        Gram matrix ``gram`` (N, N), or a diffusion ``kernel`` over the N training vertices.

        ``eval_set`` (OKBoost): (X_val, Y_val), or (X_val, K_val_train, k_val_diag) for Gram
        outputs; its loss is recorded per round. ``callback(FitProgress)`` hears each set-up
        phase and each tree; returning True stops. Cost: the output factor (O(N^3) exact,
        less with a low-rank factor), then the estimator's growth (see its class).
        """
        self.validate_params()
        check_callback(callback)
        if eval_set is not None and not self._supports_eval_set:
            raise DataError(f"eval_set applies to boosting only, not to {type(self).__name__}")
        start = time.perf_counter()
        X, space = self._check_fit_data(X, Y, gram, kernel, callback, self._n_stages())
        context = FitContext(
            X, space, check_random_state(self.random_state), callback, eval_set, start
        )
        model = self._fit_model(context)
        self.output_space_ = model.space
        self.ensemble_ = model.ensemble
        self.n_train_ = model.space.n_samples
        self.train_indices_ = model.train_indices
        self.n_estimators_ = model.n_estimators
        self.train_loss_ = model.train_loss
        self.validation_loss_ = model.validation_loss
        self.stopped_by_callback_ = model.stopped_by_callback
        self.max_bins_, self.sketch_dim_ = model.max_bins, model.sketch_dim
        self.fit_time_ = time.perf_counter() - start
        return self

    def _n_stages(self) -> int:
        """Trees the fit will grow (progress totals)."""
        return 1

    def _fit_model(self, context: FitContext) -> FittedModel:
        """Grow the model on the context's inputs and output space (the estimator's part of
        :meth:`fit`)."""
        raise NotImplementedError

    def _tree_params(self, n_features: int) -> TreeParams:
        return TreeParams(
            splitter=self.splitter,
            max_splits=self.max_splits,
            max_features=resolve_max_features(self.max_features, n_features, self.splitter),
            leaf_order=self.leaf_order,
            min_samples_leaf=self.min_samples_leaf,
            max_depth=self.max_depth,
            n_threads=self._n_threads(),
            refine_cuts=self.refine_cuts,
        )

    def _search_inputs(
        self,
        X: Any,
        max_bins: int | None,
        callback: Any = None,
        total: int = 1,
        elapsed: float = 0.0,
    ) -> tuple[np.ndarray | None, BinnedInputs | None]:
        """What the split search reads: (XT float64 (p, n), None) for the exact search
        (``max_bins`` None), or (None, bins of X) for the histogram search, announced to
        ``callback`` as the "binning" phase. O(p n log n)."""
        if max_bins is None:
            return np.ascontiguousarray(dense_float64(X).T), None
        report_phase(callback, "binning", total, elapsed, binning_seconds(*X.shape))
        keep_values = self.refine_cuts and self.splitter == "best"  # refinement reads them
        return None, bin_inputs(X, max_bins, keep_values)

    def _n_threads(self) -> int:
        n_jobs = getattr(self, "n_jobs", None)  # estimators without threads of their own
        if n_jobs == -1:
            return os.cpu_count() or 1
        return n_jobs or 1

    # ------------------------------------------------------------------ fitting set-up
    def _check_fit_data(
        self,
        X: Any,
        Y: Any,
        gram: Any,
        kernel: Any,
        callback: Any = None,
        total: int = 1,
    ) -> tuple[Any, OutputSpace]:
        """Validate X and build the output space; record the fitted shapes.

        ``callback`` hears the "output_space" phase start (done=0 of ``total`` trees).
        """
        # A refit forgets the previous model first: a fit failing after this point (e.g. on
        # OKBoost's eval_set) must leave an unfitted estimator, not old trees with new shapes.
        self.__dict__.pop("ensemble_", None)
        X = check_inputs(X)
        report_phase(
            callback, "output_space", total, eta=self._factor_eta(X.shape[0], gram, kernel)
        )
        space = OutputSpace.build(
            X.shape[0],
            Y,
            gram=gram,
            kernel=kernel,
            rank=self.factor_rank,
            tol=self.factor_tol,
            n_landmarks=self.n_landmarks,
            random_state=check_random_state(self.random_state),
        )
        self.n_features_in_ = X.shape[1]
        self.n_train_ = X.shape[0]
        self.output_1d_ = Y is not None and np.ndim(Y) == 1
        return X, space

    def _factor_eta(self, n_samples: int, gram: Any, kernel: Any) -> float | None:
        """The "output_space" phase ETA from :func:`okcore.outputs.space.estimate_factor_seconds`;
        None when the kernel spec is invalid (``build`` then raises the clear error)."""
        try:
            kern = make_kernel("precomputed" if gram is not None else kernel or "linear")
        except OKCoreError:
            return None
        n_edges = len(kern.edges) if isinstance(kern, DiffusionKernel) else None
        return estimate_factor_seconds(n_samples, kern, self.factor_rank, self.n_landmarks, n_edges)

    def _target_features(
        self,
        Y: Any = None,
        gram_cross: Any = None,
        gram_diag: Any = None,
        n_rows: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """:func:`target_features` in this estimator's fitted output space."""
        return target_features(self.output_space_, Y, gram_cross, gram_diag, n_rows)

    # ------------------------------------------------------------------ predictions
    def predict_features(self, X: Any) -> np.ndarray:
        """F(x) in the factor coordinates of the output space, shape (Q, r). O(M Q r).

        <F(x), F(x')> is the predicted kernel (eq. 7) and <F(x), phi(y_i)> the score against
        training output i, so callers that score many pairs can compute F once and reuse it.
        """
        check_is_fitted(self)
        return self.ensemble_.decision(check_inputs(X, self.n_features_in_))

    def predict_weights(self, X: Any) -> np.ndarray:
        """W^F: weights of F(x) over the training outputs phi(y_i), shape (Q, N) (eq. 5-6),
        with F(x) = W^F(x) Phi.

        Trees: the algorithm's own weights, rows sum to 1, O(M Q N) time, O(Q N) memory,
        never N x N matrices. Kernel models: see
        :meth:`okcore.kernel_models.kernel_ensemble.KernelEnsemble.weights`.
        """
        check_is_fitted(self)
        X = check_inputs(X, self.n_features_in_)
        return self.ensemble_.weights(X, n_threads=self._n_threads())

    def predict_kernel(self, X: Any, X2: Any = None) -> np.ndarray:
        """<F(x), F(x')> for x in X, x' in X2 (default X), shape (Q, Q2) (eq. 7). O(Q Q2 r)."""
        F = self.predict_features(X)
        return F @ (F if X2 is None else self.predict_features(X2)).T

    def predict_kernel_train(self, X: Any) -> np.ndarray:
        """<F(x), phi(y_i)> against every training output, shape (Q, N). O(Q N r)."""
        return self.predict_features(X) @ self.output_space_.phi.T

    def predict_index(
        self,
        X: Any,
        candidates: Any = None,
        top_k: int = 1,
        *,
        candidate_gram: Any = None,
        candidate_diag: Any = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Pre-images (eq. 8): the ``top_k`` candidates closest to F(x) in the feature space.

        Candidates are the training outputs by default, else output vectors ``candidates``
        (embedded through the kernel) or a kernel ``candidate_gram`` (C, N) against the
        training outputs with ``candidate_diag`` (C,) = k(c, c). Returns (indices (Q, k),
        squared feature-space distances (Q, k)), closest first. O(Q C r).
        """
        if isinstance(top_k, bool) or not isinstance(top_k, int | np.integer) or top_k < 1:
            raise DataError(f"top_k must be an int >= 1: got {top_k!r}")
        F = self.predict_features(X)
        space = self.output_space_
        if candidates is not None and candidate_gram is not None:
            raise DataError("pass candidates or candidate_gram, not both")
        if candidates is not None:
            cand_phi, cand_diag = space.embed(candidates)
        elif candidate_gram is not None:
            cand_phi = space.embed_gram(candidate_gram)
            cand_diag = check_kernel_diag(candidate_diag, "candidate_diag")
            if cand_diag.shape[0] != cand_phi.shape[0]:
                raise DataError(
                    f"candidate_diag has {cand_diag.shape[0]} values but candidate_gram has "
                    f"{cand_phi.shape[0]} rows"
                )
        else:
            cand_phi, cand_diag = space.phi, space.diag
        return preimage.decode(F, cand_phi, cand_diag, top_k)

    def predict(self, X: Any) -> np.ndarray:
        """Pre-images as outputs.

        Linear kernel: F(x) itself (the exact pre-image, i.e. the regression prediction),
        shape (Q, d) or (Q,) for 1-d outputs. Other kernels with known outputs: the closest
        training output, (Q, d). Gram or graph outputs: the index of the closest training
        output, (Q,).
        """
        check_is_fitted(self)
        space = self.output_space_
        if space.kernel.name == "linear" and space.eigenvalues is None:
            F = self.predict_features(X)
            return F.ravel() if self.output_1d_ else F
        index = self.predict_index(X)[0][:, 0]
        return index if space.outputs is None else space.outputs[index]

    def score(self, X: Any, Y: Any) -> float:
        """Kernelized R^2 on (X, Y): 1 - Err^phi / Var^phi, with Err^phi = sum_q
        ||phi(y_q) - F(x_q)||^2 (eq. 7) and Var^phi = sum_q ||phi(y_q) - mean_q' phi(y_q')||^2
        the spread of the given outputs around their own mean, as in scikit-learn's r2_score:
        with the linear kernel it is ``r2_score(Y, predict(X), multioutput="variance_weighted")``,
        so scikit-learn's ``cross_val_score`` and ``GridSearchCV`` work. 1 is perfect, 0 is
        the outputs' mean. Needs output vectors; for Gram or graph outputs use
        :func:`okcore.model_selection.cross_validate`. O(Q^2 d) kernel evaluations, in blocks.
        """
        check_is_fitted(self)
        kernel = self.output_space_.kernel
        if not kernel.needs_outputs:
            raise DataError(
                "score needs output vectors Y; this model was fitted on a Gram matrix or a graph "
                "(use okcore.model_selection.cross_validate with gram= or a diffusion kernel)"
            )
        F = self.predict_features(X)
        phi, diag = self._target_features(Y, n_rows=F.shape[0])
        err = float(
            np.sum(diag - 2.0 * np.einsum("ij,ij->i", F, phi) + np.einsum("ij,ij->i", F, F))
        )
        Y = np.asarray(Y, dtype=np.float64).reshape(len(diag), -1)
        total = sum(float(kernel.gram(Y[s : s + 512], Y).sum()) for s in range(0, len(Y), 512))
        spread = float(diag.sum()) - total / len(Y)
        if spread <= 0.0:
            raise DataError("R^2 is undefined: the given outputs are all the same")
        return 1.0 - err / spread

    @property
    def feature_importances_(self) -> np.ndarray:
        """Total reduction of N*var brought by each input over all splits, normalized to 1."""
        check_is_fitted(self)
        e = self.ensemble_
        assert isinstance(e, TreeEnsemble)  # estimators of kernel models override this
        internal = e.feature >= 0
        totals = np.bincount(
            e.feature[internal], weights=e.gain[internal], minlength=self.n_features_in_
        )
        s = totals.sum()
        return totals / s if s > 0 else totals
