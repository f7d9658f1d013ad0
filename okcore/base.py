"""What every okcore estimator shares: scikit-learn parameter handling, fitting set-up and
the prediction API computed from an :class:`~okcore.ensemble.TreeEnsemble` (paper eq. 5-8).
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import preimage
from ._builder import TreeParams
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
from .binning import MAX_BINS, BinnedInputs, bin_inputs
from .exceptions import DataError, OKCoreError
from .kernels import DiffusionKernel, make_kernel
from .space import OutputSpace, estimate_factor_seconds

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
    "factor_rank": [Interval(int, 1, None, "left"), Options((None,))],
    "factor_tol": [Interval(float, 0.0, 1.0, "left")],
    "n_landmarks": [Interval(int, 1, None, "left"), Options((None,))],
    "n_jobs": [Options((None, -1)), Interval(int, 1, None, "left")],
    "random_state": [RandomStateLike()],
}
CALLBACK_CONSTRAINT = [Callable_(), Options((None,))]


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


def report_phase(
    callback: Any, phase: str, total: int, elapsed: float = 0.0, eta: float | None = None
) -> None:
    """Tell a fit callback that a set-up phase starts (done=0). A stop request returned here
    is honoured after the first tree: set-up phases are not interruptible."""
    if callback is not None:
        callback(FitProgress(done=0, total=total, elapsed=elapsed, phase=phase, phase_eta=eta))


def binning_seconds(n_samples: int, n_features: int) -> float:
    """Cost model of :func:`okcore.binning.bin_inputs` for the "binning" phase ETA: one sort
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


class OKEstimator:
    """Base class: get_params/set_params like scikit-learn's BaseEstimator, shared predictions.

    Subclasses store their keyword-only ``__init__`` arguments unchanged, declare
    ``_parameter_constraints``, and set in ``fit`` the attributes ``output_space_``,
    ``ensemble_``, ``n_features_in_``, ``n_train_`` and ``fit_time_``.
    """

    _parameter_constraints: dict[str, list] = {}

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

    def _validate_params(self) -> None:
        validate_params(self, self._parameter_constraints)

    def _tree_params(self, n_features: int) -> TreeParams:
        return TreeParams(
            splitter=self.splitter,
            max_splits=self.max_splits,
            max_features=resolve_max_features(self.max_features, n_features, self.splitter),
            leaf_order=self.leaf_order,
            min_samples_leaf=self.min_samples_leaf,
            max_depth=self.max_depth,
            n_threads=self._n_threads(),
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
        return None, bin_inputs(X, max_bins)

    def _n_threads(self) -> int:
        n_jobs = getattr(self, "n_jobs", None)
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
        """The "output_space" phase ETA from :func:`okcore.space.estimate_factor_seconds`;
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
        """W^F: weights of F(x) over the training outputs phi(y_i), shape (Q, N) (eq. 5-6).

        Rows sum to 1. O(M Q N) time, O(Q N) memory; never forms N x N matrices.
        """
        check_is_fitted(self)
        X = check_inputs(X, self.n_features_in_)
        # depends only on the fitted trees: computed once per ensemble (a refit replaces it)
        cached = self.__dict__.get("_coefficients")
        if not (isinstance(cached, tuple) and cached[0] is self.ensemble_):
            cached = self._coefficients = (self.ensemble_, self.ensemble_.tree_coefficients())
        return self.ensemble_.weights(X, cached[1], n_threads=self._n_threads())

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
        internal = e.feature >= 0
        totals = np.bincount(
            e.feature[internal], weights=e.gain[internal], minlength=self.n_features_in_
        )
        s = totals.sum()
        return totals / s if s > 0 else totals
