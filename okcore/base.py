"""What every okcore estimator shares: scikit-learn parameter handling, fitting set-up and
the prediction API (paper eq. 5-8) computed from a :class:`FittedEnsemble`: an
:class:`~okcore.trees.ensemble.TreeEnsemble` (OK3 trees, forests, OKBoost) or a
:class:`~okcore.kernel_models.kernel_ensemble.KernelEnsemble` (boosted sparse KRR).
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from ._validation import (
    check_feature_names,
    check_inputs,
    check_is_fitted,
    check_kernel_diag,
    check_matrix,
    check_random_state,
    check_sample_weight,
    masked_outputs,
    record_feature_names,
    validate_params,
)
from .callbacks import FitProgress, check_callback, report_phase
from .cost import FitCost, StageCost
from .exceptions import DataError, OKCoreError, UnknownParameterError
from .losses import weight_total
from .meta import params_repr, regressor_tags
from .outputs import preimage
from .outputs.kernels import DiffusionKernel, make_kernel
from .outputs.space import OutputSpace, estimate_factor_cost, estimate_factor_seconds
from .routing import MetadataRequests


def target_features(
    space: OutputSpace,
    Y: Any = None,
    gram_cross: Any = None,
    gram_diag: Any = None,
    n_rows: int | None = None,
    names: tuple[str, str] = ("Y", "gram_cross"),
) -> tuple[np.ndarray, np.ndarray]:
    """Factor coordinates and k(y, y) of true outputs in ``space``: Y, or a Gram (Q, N)
    against the training outputs with its diagonal (Q,). Used by losses and metrics;
    ``names`` are the user's names of Y and the Gram, which the refusals say."""
    if (Y is None) == (gram_cross is None):
        raise DataError("pass the true outputs Y, or gram_cross (with gram_diag), not both")
    if Y is not None:
        phi, diag = space.embed(Y, names[0])
    else:
        phi = space.embed_gram(gram_cross, names[1])
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

    def staged_decision(self, X: Any) -> Iterator[np.ndarray]:
        """F_m(x) after each stage m = 1..M, each (Q, r); the last is :meth:`decision`."""
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
    weight: np.ndarray | None = None  # the rows' sample weights (a weighted hold-out)


def embed_eval_set(
    eval_set: Any, space: OutputSpace, n_features: int, owner: str, allow_missing: bool = False
) -> EvalData:
    """A boosting ``eval_set``, (X_val, Y_val) or (X_val, K_val_train, k_val_diag), checked
    (``n_features`` inputs, as estimator ``owner`` was fitted with) and embedded in the
    training output space."""
    if not isinstance(eval_set, tuple | list) or len(eval_set) not in (2, 3):
        raise DataError("eval_set must be (X_val, Y_val) or (X_val, K_val_train, k_val_diag)")
    X_val = check_inputs(
        eval_set[0], n_features, name="eval_set X", owner=owner, allow_missing=allow_missing
    )
    names = ("eval_set Y", "eval_set K_val_train")
    if len(eval_set) == 2:
        phi, diag = target_features(space, Y=eval_set[1], n_rows=X_val.shape[0], names=names)
    else:
        phi, diag = target_features(
            space,
            gram_cross=eval_set[1],
            gram_diag=eval_set[2],
            n_rows=X_val.shape[0],
            names=names,
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
    generator, the progress callback, the eval set (OKBoost only), the start time and the
    checked sample weights (None: unweighted, :func:`~okcore._validation.check_sample_weight`)."""

    X: Any
    space: OutputSpace
    rng: np.random.Generator
    callback: Callable[[FitProgress], bool | None] | None
    eval_set: tuple | None
    start: float
    sample_weight: np.ndarray | None = None
    entry_weight: np.ndarray | None = None  # (N, r): masked outputs / output weights

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
    resolved_params: dict[str, Any] = field(default_factory=dict)


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
    "resolved_params_",
    "fit_time_",
)


def check_known_outputs(estimator: Any, what: str) -> None:
    """Refuse what needs every training output whole (W^F, the training outputs as
    candidates) on a model fitted on partly known outputs or with output weights
    (``resolved_params_["masked_outputs"]``): its leaf values weigh each output column on
    its own, so no weights over the training outputs give F(x). Also for estimators that
    borrow :class:`OKEstimator`'s methods (an average: any of its fitted ``estimators_``)."""
    models = [estimator, *getattr(estimator, "estimators_", ())]
    if any((getattr(m, "resolved_params_", None) or {}).get("masked_outputs") for m in models):
        raise DataError(
            f"{what} needs the training outputs whole, but this model was fitted on "
            "partly known outputs (or with output_weight): use predict / "
            "predict_features / predict_kernel, or pass candidates"
        )


class OKEstimator(MetadataRequests):
    """The estimator contract: scikit-learn parameter handling, one fit path, and the
    prediction API computed from the fitted :class:`FittedEnsemble`.

    A subclass stores its keyword-only ``__init__`` arguments unchanged, declares
    ``_parameter_constraints`` and implements :meth:`_fit_model` (what differs between
    estimators: growing one tree, a forest, or boosting rounds). :meth:`fit` does the rest
    (validation, the output space, fitted attributes: :data:`FITTED_ATTRIBUTES`).
    scikit-learn's metadata routing requests come from :class:`~okcore.routing.MetadataRequests`.
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {}
    #: Whether ``fit`` takes an ``eval_set`` (validation loss per round): public, so
    #: callers (the service's schemas) read it from the registry.
    supports_eval_set: ClassVar[bool] = False
    #: Whether ``fit`` takes a ``sample_weight`` (public, as ``supports_eval_set``).
    supports_sample_weight: ClassVar[bool] = False
    #: Whether ``fit`` takes output vectors with unknown (NaN) entries and ``output_weight``.
    supports_masked_outputs: ClassVar[bool] = False
    #: Whether inputs may hold missing values (NaN): trees learn where they go
    #: (:mod:`okcore.trees.missing`); the others refuse them with a message saying what to
    #: do. Public, so callers (the service) read it from an estimator (OKBoostRegressor's
    #: depends on its ``init``).
    accepts_missing: ClassVar[bool] = False
    # every estimator declares the output-space parameters and random_state
    factor_rank: int | None
    factor_tol: float
    n_landmarks: int | None
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

    @classmethod
    def check_parameter_names(cls, names: Iterable[str], owner: str | None = None) -> None:
        """The one check of parameter names (estimator registry, grid searches, the
        service): :class:`~okcore.exceptions.UnknownParameterError` listing the ``names``
        this estimator does not take (``owner`` names it in the message, default the
        class name) and its parameters."""
        valid = cls._get_param_names()
        unknown = sorted(set(names) - set(valid))
        if unknown:
            raise UnknownParameterError(
                f"unknown parameter(s) {unknown} for {owner or cls.__name__!r}; "
                f"its parameters are {valid}",
                unknown,
                valid,
            )

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
        return params_repr(self, self.get_params())

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's estimator tags (scikit-learn >= 1.6 asks for them in ``clone``,
        ``cross_val_score`` and ``GridSearchCV``): a multi-output regressor taking dense or
        sparse inputs, missing values when ``accepts_missing`` (:func:`~okcore.meta.regressor_tags`)."""
        return regressor_tags(allow_nan=self.accepts_missing, sparse=True)

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
        sample_weight: Any = None,
        output_weight: Any = None,
    ) -> OKEstimator:
        """Fit on inputs X (N, p) and outputs Y with ``kernel`` ("linear" by default), a
        Gram matrix ``gram`` (N, N), or a diffusion ``kernel`` over the N training vertices.

        ``eval_set`` (OKBoost): (X_val, Y_val), or (X_val, K_val_train, k_val_diag) for Gram
        outputs; its loss is recorded per round. ``callback(FitProgress)`` hears each set-up
        phase and each tree; returning True stops. ``sample_weight`` (N,): a weight >= 0 per
        training row, the loss a weighted sum (scikit-learn's convention; integer weights
        fit as repeated rows, weight 0 as a dropped row; see the estimator for where it
        applies). Estimators with ``supports_masked_outputs`` (OKBoost) also take output
        vectors Y with unknown (NaN) entries and ``output_weight`` (d,), a weight per output
        column (linear kernel only, :func:`~okcore._validation.masked_outputs`). Cost: the
        output factor (O(N^3) exact, less with a low-rank factor), then the estimator's
        growth (see its class).
        """
        self.validate_params()
        check_callback(callback)
        if eval_set is not None and not self.supports_eval_set:
            raise DataError(f"eval_set applies to boosting only, not to {type(self).__name__}")
        start = time.perf_counter()
        if sample_weight is not None and not self.supports_sample_weight:
            raise DataError(f"sample_weight is not supported by {type(self).__name__}")
        entry = None
        if self.supports_masked_outputs:
            low_rank = self.factor_rank is not None or self.n_landmarks is not None
            Y, entry = masked_outputs(Y, kernel, output_weight, low_rank)
        elif output_weight is not None:
            raise DataError(
                f"output_weight is not supported by {type(self).__name__}: fit "
                "OKBoostRegressor (loss='squared', linear output kernel), which weighs the "
                "output columns, or leave output_weight out"
            )
        X, space = self._check_fit_data(X, Y, gram, kernel, callback)
        weight = check_sample_weight(sample_weight, X.shape[0])
        if entry is not None and weight is not None:
            entry, weight = entry * weight[:, None], None
        context = FitContext(
            X, space, check_random_state(self.random_state), callback, eval_set, start, weight,
            entry,
        )  # fmt: skip
        self._set_fitted(self._fit_model(context), start)
        return self

    def _set_fitted(self, model: FittedModel, start: float) -> None:
        """The fitted attributes (:data:`FITTED_ATTRIBUTES`) of ``model``, a fit started at
        ``start`` (``time.perf_counter``)."""
        self.output_space_ = model.space
        self.ensemble_ = model.ensemble
        self.n_train_ = model.space.n_samples
        self.train_indices_ = model.train_indices
        self.n_estimators_ = model.n_estimators
        self.train_loss_ = model.train_loss
        self.validation_loss_ = model.validation_loss
        self.stopped_by_callback_ = model.stopped_by_callback
        self.max_bins_, self.sketch_dim_ = model.max_bins, model.sketch_dim
        self.resolved_params_ = dict(model.resolved_params)
        self.fit_time_ = time.perf_counter() - start

    def _n_stages(self, n_samples: int) -> int:
        """Stages (trees, kernel models) a fit on ``n_samples`` training rows will grow:
        progress totals, cost model."""
        return 1

    def _fit_model(self, context: FitContext) -> FittedModel:
        """Grow the model on the context's inputs and output space (the estimator's part of
        :meth:`fit`)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ cost model
    def estimate_cost(
        self,
        n_samples: int,
        n_features: int,
        *,
        kernel: Any = "linear",
        n_outputs: int | None = None,
    ) -> FitCost:
        """What :meth:`fit` with these parameters should cost on ``n_samples`` rows of
        ``n_features`` inputs, before any work: the output factor of ``kernel`` (a kernel
        spec as ``fit`` takes it, "precomputed" for a Gram matrix; ``n_outputs`` columns of
        Y when known) from :func:`okcore.outputs.space.estimate_factor_cost`, then this
        estimator's stages (its family's cost model). See :class:`~okcore.cost.FitCost`."""
        n_edges = None
        if isinstance(kernel, dict) and kernel.get("type") == "diffusion":
            n_edges = len(kernel["edges"])
        elif isinstance(kernel, DiffusionKernel):
            n_edges = len(kernel.edges)
        factor = estimate_factor_cost(
            n_samples, kernel, self.factor_rank, self.n_landmarks, n_edges, n_outputs
        )
        rank = max(int(factor.rank), 1)
        stages = self._estimate_stages(n_samples, n_features, rank)
        return FitCost(
            n_samples=n_samples,
            n_features=n_features,
            rank=rank,
            n_stages=stages.n_stages,
            stage_size=stages.stage_size,
            search=stages.search,
            memory_bytes=max(factor.peak_bytes, stages.work_bytes),
            factor_seconds=factor.seconds,
            setup_seconds=stages.setup_seconds,
            stage_seconds=stages.stage_seconds,
            disk_bytes=8.0 * n_samples * rank + stages.model_bytes,
        )

    def _estimate_stages(self, n_samples: int, n_features: int, rank: int) -> StageCost:
        """The stages' cost with a factor of ``rank`` columns (each family's cost model)."""
        raise NotImplementedError

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
    ) -> tuple[Any, OutputSpace]:
        """Validate X and build the output space; record the fitted shapes.

        ``callback`` hears the "output_space" phase start (done=0 of the
        :meth:`_n_stages` of X's rows).
        """
        # A refit forgets the previous model first: a fit failing after this point (e.g. on
        # OKBoost's eval_set) must leave an unfitted estimator, not old trees with new shapes.
        self.__dict__.pop("ensemble_", None)
        record_feature_names(self, X)
        X = check_inputs(X, owner=type(self).__name__, allow_missing=self.accepts_missing)
        report_phase(
            callback,
            "output_space",
            self._n_stages(X.shape[0]),
            eta=self._factor_eta(X.shape[0], gram, kernel),
        )
        space = self._output_space(X.shape[0], Y, gram, kernel)
        self.n_features_in_ = X.shape[1]
        self.n_train_ = X.shape[0]
        # np.asarray, not np.ndim: array-likes that only convert (scikit-learn's NotAnArray);
        # Y has been checked by the output space already
        self.output_1d_ = Y is not None and np.asarray(Y).ndim == 1
        return X, space

    def _output_space(self, n_samples: int, Y: Any, gram: Any, kernel: Any) -> OutputSpace:
        """The output space of the ``n_samples`` training outputs as a fit builds it from
        this estimator's factor parameters (deterministic for an int ``random_state``)."""
        return OutputSpace.build(
            n_samples,
            Y,
            gram=gram,
            kernel=kernel,
            rank=self.factor_rank,
            tol=self.factor_tol,
            n_landmarks=self.n_landmarks,
            random_state=check_random_state(self.random_state),
        )

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
    def _fitted_inputs(self, X: Any) -> Any:
        """Inputs checked against the fitted estimator: :class:`NotFittedError` before
        ``fit``, :class:`DataError` unless X has ``n_features_in_`` columns (scikit-learn's
        message: "X has 3 features, but OKBoostRegressor is expecting 4 features as input")
        and, after a fit on a pandas DataFrame, unless X's columns are ``feature_names_in_``
        in the same order (:func:`~okcore._validation.check_feature_names`)."""
        check_is_fitted(self)
        check_feature_names(self, X)
        return check_inputs(
            X, self.n_features_in_, owner=type(self).__name__, allow_missing=self.accepts_missing
        )

    def predict_features(self, X: Any) -> np.ndarray:
        """F(x) in the factor coordinates of the output space, shape (Q, r). O(M Q r).

        <F(x), F(x')> is the predicted kernel (eq. 7) and <F(x), phi(y_i)> the score against
        training output i, so callers that score many pairs can compute F once and reuse it.
        """
        X = self._fitted_inputs(X)  # first: NotFittedError before reading ensemble_
        return self.ensemble_.decision(X)

    def predict_weights(self, X: Any) -> np.ndarray:
        """W^F: weights of F(x) over the training outputs phi(y_i), shape (Q, N) (eq. 5-6),
        with F(x) = W^F(x) Phi.

        Trees: the algorithm's own weights, rows sum to 1, O(M Q N) time, O(Q N) memory,
        never N x N matrices. Kernel models: see
        :meth:`okcore.kernel_models.kernel_ensemble.KernelEnsemble.weights`.
        """
        check_known_outputs(self, "predict_weights")
        X = self._fitted_inputs(X)
        return self.ensemble_.weights(X, n_threads=self._n_threads())

    def predict_kernel(self, X: Any, X2: Any = None) -> np.ndarray:
        """<F(x), F(x')> for x in X, x' in X2 (default X), shape (Q, Q2) (eq. 7). O(Q Q2 r)."""
        F = self.predict_features(X)
        return F @ (F if X2 is None else self.predict_features(X2)).T

    def predict_kernel_train(self, X: Any) -> np.ndarray:
        """<F(x), phi(y_i)> against every training output, shape (Q, N). O(Q N r)."""
        check_known_outputs(self, "predict_kernel_train")
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
            check_known_outputs(self, "predict_index without candidates")
            cand_phi, cand_diag = space.phi, space.diag
        return preimage.decode(F, cand_phi, cand_diag, top_k)

    def predict(self, X: Any) -> np.ndarray:
        """Pre-images as outputs.

        Linear kernel: F(x) itself (the exact pre-image, i.e. the regression prediction),
        shape (Q, d) or (Q,) for 1-d outputs. Other kernels with known outputs: the closest
        training output, (Q, d). Gram or graph outputs: the index of the closest training
        output, (Q,).
        """
        return self._outputs_of(self.predict_features(X))

    def _outputs_of(self, F: np.ndarray) -> np.ndarray:
        """What :meth:`predict` returns for the features F (Q, r): F itself for a linear
        kernel, else the closest training output (or its index). O(Q N r) for pre-images."""
        space = self.output_space_
        if space.kernel.name == "linear" and space.eigenvalues is None:
            return F.ravel() if self.output_1d_ else F
        index = preimage.decode(F, space.phi, space.diag, 1)[0][:, 0]
        return index if space.outputs is None else space.outputs[index]

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Kernelized R^2 on (X, y), y the true output vectors (scikit-learn's name for the
        argument, which its tools pass by keyword): 1 - Err^phi / Var^phi, with Err^phi = sum_q
        ||phi(y_q) - F(x_q)||^2 (eq. 7) and Var^phi = sum_q ||phi(y_q) - mean_q' phi(y_q')||^2
        the spread of the given outputs around their own mean, as in scikit-learn's r2_score:
        with the linear kernel it is ``r2_score(Y, predict(X), multioutput="variance_weighted")``,
        so scikit-learn's ``cross_val_score`` and ``GridSearchCV`` work. 1 is perfect, 0 is
        the outputs' mean. ``sample_weight`` (Q,): both sums weighted and the mean the
        weighted mean (scikit-learn's ``r2_score(sample_weight=...)``). Needs output vectors; for Gram or graph outputs use
        :func:`okcore.model_selection.cross_validate`. O(Q^2 d) kernel evaluations, in blocks.
        """
        check_is_fitted(self)
        return kernel_r2(self, X, y, sample_weight)


def kernel_r2(model: Any, X: Any, y: Any, sample_weight: Any = None) -> float:
    """The kernelized R^2 of a fitted ``model`` on (X, y) (:meth:`OKEstimator.score`, which
    documents it): any model with ``output_space_``, ``predict_features`` and
    ``_target_features``, such as an average of okcore estimators."""
    kernel = model.output_space_.kernel
    if not kernel.needs_outputs:
        raise DataError(
            "score needs output vectors Y; this model was fitted on a Gram matrix or a graph "
            "(use okcore.model_selection.cross_validate with gram= or a diffusion kernel)"
        )
    F = model.predict_features(X)
    phi, diag = model._target_features(y, n_rows=F.shape[0])
    row_err = diag - 2.0 * np.einsum("ij,ij->i", F, phi) + np.einsum("ij,ij->i", F, F)
    Y = np.asarray(y, dtype=np.float64).reshape(len(diag), -1)
    if sample_weight is None:
        err = float(np.sum(row_err))
        total = sum(float(kernel.gram(Y[s : s + 512], Y).sum()) for s in range(0, len(Y), 512))
        spread = float(diag.sum()) - total / len(Y)
    else:
        w = check_matrix(sample_weight, "sample_weight", ndim=1)
        if w.shape != diag.shape:
            raise DataError(f"sample_weight must hold one weight per row of X ({len(diag)})")
        err = float(w @ row_err)
        total = sum(
            float(w[s : s + 512] @ kernel.gram(Y[s : s + 512], Y) @ w)
            for s in range(0, len(Y), 512)
        )
        spread = float(w @ diag) - total / weight_total(w)
    if spread <= 0.0:
        raise DataError("R^2 is undefined: the given outputs are all the same")
    return 1.0 - err / spread


class StagedPredictions:
    """Predictions after each stage of a boosted ensemble, as scikit-learn's
    ``staged_predict``: choose the number of stages M on held-out data from one fit, without
    refits. Stage m's predictions are those of the same model fitted with
    ``n_estimators=m`` whenever no stage changes earlier ones (OKBoost: always; boosted KRR:
    unless ``reweight=True``). Each is a generator over the ``n_estimators_`` stages kept.
    """

    def staged_predict_features(self: Any, X: Any) -> Iterator[np.ndarray]:
        """F_m(x) for m = 1..M, each (Q, r). O(M Q r) in all (plus routing the queries)."""
        X = self._fitted_inputs(X)  # first: NotFittedError before reading ensemble_
        return self.ensemble_.staged_decision(X)

    def staged_predict(self: Any, X: Any) -> Iterator[np.ndarray]:
        """:meth:`~OKEstimator.predict` after each stage m = 1..M: F_m(x) for a linear kernel
        (the regression prediction), else the closest training output or its index. Each
        stage costs O(Q N r) with pre-images."""
        for F in self.staged_predict_features(X):
            yield self._outputs_of(F)

    def staged_predict_kernel(self: Any, X: Any, X2: Any = None) -> Iterator[np.ndarray]:
        """:meth:`~OKEstimator.predict_kernel` after each stage: <F_m(x), F_m(x')> for x in
        X, x' in X2 (default X), each (Q, Q2) (eq. 7). O(Q Q2 r) per stage."""
        if X2 is None:
            for F in self.staged_predict_features(X):
                yield F @ F.T
            return
        pairs = zip(self.staged_predict_features(X), self.staged_predict_features(X2), strict=True)
        for F, F2 in pairs:
            yield F @ F2.T
