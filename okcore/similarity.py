"""Input similarity matrices as the inputs of any estimator.

Biology gives drug-drug and protein-protein similarities, not features. A similarity over
the N training items, S (N, N), and at prediction the similarity of Q new items to those N
training items, S_q (Q, N) (columns in the training order), become tree (or kernel model)
inputs through one of two documented maps (:class:`SimilarityMap`):

- ``"kernel_map"`` (the empirical kernel map): an item's features are its similarities to
  the N training items, z(x) = (s(x, x_1), ..., s(x, x_N)): the features of the training
  items are the rows of S, those of new items the rows of S_q. No fitted state; S need not
  be symmetric or positive semi-definite.
- ``"kpca"`` (kernel PCA, Schoelkopf, Smola & Mueller 1998): the coordinates of the items
  on the leading principal axes of the centred similarity. With S_c = H S_sym H (H the
  centring matrix, S_sym = (S + S^T) / 2) = U L U^T, the k components with the largest
  positive eigenvalues give z(x) = s_c(x) U_k L_k^{-1/2}, where s_c(x) is the item's row
  centred with the training column means and total mean; the training items get
  U_k L_k^{1/2}. k = ``n_components``, or every component above
  ``KPCA_TOLERANCE`` x the largest eigenvalue.

:class:`SimilarityInputs` wraps any okcore estimator: ``fit(S, Y)`` maps S and fits the
estimator on the features; every prediction takes S_q. Cross-validation and grid search
(okcore.model_selection) see ``pairwise_inputs`` and give each fold the block
S[train, train] to fit and S[test, train] to predict: a test item's column never reaches a
fold's training. Kernel ridge models take a similarity directly as their input kernel
(``input_kernel="precomputed"``), with the same slicing.

Measured on the Yamanishi drug-target sets (docs/RESULTS.md, "Similarities as inputs"):
see there which map is the default and by how much.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from scipy import linalg

from ._validation import Interval, Options, check_inputs, dense_float64, record_feature_names
from .base import FITTED_ATTRIBUTES, OKEstimator
from .boosting import OKBoostRegressor
from .cost import FitCost
from .exceptions import DataError, UnknownParameterError
from .meta import MetaEstimator, clone

SIMILARITY_MAPS = ("kernel_map", "kpca")
#: Kernel PCA keeps, without ``n_components``, the components whose eigenvalue exceeds this
#: fraction of the largest (the numerically non-zero part of the spectrum).
KPCA_TOLERANCE = 1e-10
#: Seconds per floating-point operation of the kPCA eigendecomposition (as the kernel models').
KPCA_FLOP_SECONDS = 1e-9


def pairwise_inputs(estimator: Any) -> bool:
    """Whether ``estimator`` takes X as a similarity among the training items (columns are
    items, to be sliced with the rows): :class:`SimilarityInputs`, and kernel models with
    ``input_kernel="precomputed"``."""
    return bool(getattr(estimator, "pairwise_inputs", False))


def check_similarity(S: Any, name: str = "X") -> np.ndarray:
    """A training similarity: a finite, dense (N, N) float64 matrix (a missing similarity,
    NaN, is refused: every entry is needed)."""
    S = dense_float64(check_inputs(S, name=name, allow_missing=True))
    if np.isnan(S).any():
        i, j = (int(k) for k in np.argwhere(np.isnan(S))[0])
        raise DataError(
            f"{name} holds a missing value (NaN) at [{i}, {j}]: a similarity must be complete; "
            "fill each missing similarity in (e.g. 0 for unrelated items)"
        )
    if S.shape[0] != S.shape[1]:
        raise DataError(
            f"{name} must be the square (N, N) similarity among the N training items: got "
            f"shape {S.shape}"
        )
    return S


@dataclass(frozen=True)
class SimilarityFold:
    """The similarity (N, N) as one cross-validation fold sees it: ``fold[rows]`` is
    S[rows, train], the rows' similarities to the fold's training items only."""

    S: Any
    train: np.ndarray

    def __getitem__(self, rows: np.ndarray) -> Any:
        return self.S[np.ix_(rows, self.train)]


def fold_inputs(estimator: Any, X: Any, train: np.ndarray) -> Any:
    """X as a fold with training rows ``train`` must see it: for an estimator with
    :func:`pairwise_inputs`, a :class:`SimilarityFold` (X must be square), else X."""
    if not pairwise_inputs(estimator):
        return X
    if X.ndim != 2 or X.shape[0] != X.shape[1]:
        raise DataError(
            f"{type(estimator).__name__} takes X as the square (N, N) similarity among the N "
            f"items: got shape {X.shape}"
        )
    return SimilarityFold(X, np.asarray(train))


@dataclass(frozen=True)
class SimilarityMap:
    """A fitted map from similarities to the N training items to input features.

    kind : "kernel_map" or "kpca".  n_items : N.
    column_mean : (N,) training column means of S_sym (kpca; empty otherwise).
    total_mean : their mean.  projection : (N, k) U_k L_k^{-1/2} (kpca; (0, 0) otherwise).
    """

    kind: str
    n_items: int
    column_mean: np.ndarray
    total_mean: float
    projection: np.ndarray

    @property
    def n_features(self) -> int:
        return self.n_items if self.kind == "kernel_map" else int(self.projection.shape[1])

    def transform(self, S: Any) -> Any:
        """Features (Q, n_features) of items given by their similarity (Q, N) to the training
        items. O(Q N k) for kpca; the matrix itself for the kernel map."""
        if self.kind == "kernel_map":
            return S
        S = dense_float64(S)
        centred = S - self.column_mean - S.mean(axis=1, keepdims=True) + self.total_mean
        return centred @ self.projection

    @classmethod
    def fit(cls, kind: str, S: np.ndarray, n_components: int | None = None) -> SimilarityMap:
        """The map of ``kind`` for the training similarity S (N, N). kpca: O(N^3)."""
        n = S.shape[0]
        if kind == "kernel_map":
            return cls(kind, n, np.empty(0), 0.0, np.empty((0, 0)))
        sym = (S + S.T) / 2.0
        column_mean = sym.mean(axis=0)
        total_mean = float(column_mean.mean())
        centred = sym - column_mean[:, None] - column_mean[None, :] + total_mean
        values, vectors = linalg.eigh(centred)
        order = np.argsort(values)[::-1]
        values, vectors = values[order], vectors[:, order]
        keep = values > KPCA_TOLERANCE * max(float(values[0]), np.finfo(float).tiny)
        k = int(keep.sum()) if n_components is None else min(int(n_components), int(keep.sum()))
        if k < 1:
            raise DataError("the centred similarity has no positive eigenvalue: kpca is empty")
        projection = vectors[:, :k] / np.sqrt(values[:k])
        return cls(kind, n, column_mean, total_mean, projection)

    def arrays(self) -> dict[str, np.ndarray]:
        """The fitted arrays (for okcore.io)."""
        return {"column_mean": self.column_mean, "projection": self.projection}


# MetaEstimator.set_params handles estimator__<name> keys: it returns the MetaEstimator type
def _given(**arguments: Any) -> dict[str, Any]:
    """The keyword arguments that are not None (passed on only when given)."""
    return {name: value for name, value in arguments.items() if value is not None}


class SimilarityInputs(MetaEstimator, OKEstimator):  # type: ignore[misc]
    """Any okcore estimator on a precomputed input similarity, through a documented map.

    Parameters
    ----------
    estimator : okcore estimator or None
        The estimator fitted on the mapped features (cloned, never fitted in place); None =
        ``OKBoostRegressor()``. Its parameters are ``estimator__<name>`` in grid searches.
    map : {"kernel_map", "kpca"}
        The map of the module docstring: similarities to the training items as features
        (empirical kernel map), or kernel PCA components.
    n_components : int or None
        kpca: components kept (None: every one with a positive eigenvalue). Unused by the
        kernel map.

    ``fit(S, Y | gram= | kernel=)`` takes the (N, N) similarity among the training items;
    ``predict``, ``predict_features``, ``predict_weights``, ``predict_kernel``,
    ``predict_index`` and ``score`` take the (Q, N) similarity of new items to them (columns
    in the training order). An ``eval_set`` gives its X as (V, N) similarities too.

    Fitted attributes: those of every estimator (copied from the fitted estimator, with
    ``n_features_in_`` = N, the training items), ``estimator_`` (fitted on the features) and
    ``input_map_`` (a :class:`SimilarityMap`). :meth:`transform` gives the features.
    Cost: the map (kpca: an N x N eigendecomposition) then the estimator's fit on
    ``input_map_.n_features`` inputs.
    """

    supports_sample_weight = True  # passed to the estimator, which may refuse it

    pairwise_inputs: ClassVar[bool] = True
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "map": [Options(SIMILARITY_MAPS)],
        "n_components": [Interval(int, 1, None, "left"), Options((None,))],
    }

    def __init__(
        self, estimator: Any = None, *, map: str = "kernel_map", n_components: int | None = None
    ) -> None:
        self.estimator = estimator
        self.map = map
        self.n_components = n_components

    def _template(self) -> OKEstimator:
        est = OKBoostRegressor() if self.estimator is None else self.estimator
        if not isinstance(est, OKEstimator) or isinstance(est, SimilarityInputs):
            raise DataError(
                f"estimator must be an okcore estimator (not a SimilarityInputs): got {est!r}"
            )
        if pairwise_inputs(est):
            raise DataError(
                "the estimator takes the similarity itself (input_kernel='precomputed'): fit "
                "it on the similarity directly, without SimilarityInputs"
            )
        return est

    @classmethod
    def check_parameter_names(cls, names: Any, owner: str | None = None) -> None:
        """Own parameters, and ``estimator__<name>`` (checked by the grid's candidates)."""
        unknown = sorted(n for n in names if n not in cls._get_param_names() and "__" not in n)
        if unknown:
            valid = cls._get_param_names()
            raise UnknownParameterError(
                f"unknown parameter(s) {unknown} for {owner or cls.__name__!r}; its parameters "
                f"are {valid} and estimator__<name> for the estimator's",
                unknown,
                valid,
            )

    def fit(
        self,
        X: Any,
        Y: Any = None,
        *,
        gram: Any = None,
        kernel: Any = None,
        eval_set: tuple | None = None,
        callback: Any = None,
        sample_weight: Any = None,
        output_weight: Any = None,
    ) -> SimilarityInputs:
        """Map the (N, N) training similarity X and fit a clone of the estimator on it
        (``sample_weight`` and ``output_weight``, when given, passed to its fit)."""
        self.validate_params()
        start = time.perf_counter()
        self.__dict__.pop("ensemble_", None)
        record_feature_names(self, X)
        S = check_similarity(X)
        input_map = SimilarityMap.fit(self.map, S, self.n_components)
        if eval_set is not None:
            if not isinstance(eval_set, tuple | list) or len(eval_set) not in (2, 3):
                raise DataError(
                    "eval_set must be (S_val, Y_val) or (S_val, K_val_train, k_val_diag)"
                )
            S_val = check_inputs(eval_set[0], S.shape[0], "eval_set X", type(self).__name__)
            eval_set = (input_map.transform(S_val), *eval_set[1:])
        inner = clone(self._template())
        inner.fit(
            input_map.transform(S), Y, gram=gram, kernel=kernel, eval_set=eval_set,
            callback=callback, **_given(sample_weight=sample_weight, output_weight=output_weight),
        )  # fmt: skip
        self._adopt(inner, input_map)
        self.fit_time_ = time.perf_counter() - start
        return self

    def _adopt(self, inner: OKEstimator, input_map: SimilarityMap) -> None:
        """Take the fitted estimator's attributes as this model's (fit, and okcore.io)."""
        self.estimator_, self.input_map_ = inner, input_map
        for name in (*FITTED_ATTRIBUTES, "output_1d_"):
            setattr(self, name, getattr(inner, name))
        self.n_features_in_ = input_map.n_items

    def transform(self, X: Any) -> Any:
        """The features (Q, k) of items given by their (Q, N) similarity to the training
        items (checked: N columns)."""
        return self.input_map_.transform(self._fitted_inputs(X))

    def predict_features(self, X: Any) -> np.ndarray:
        """F(x), (Q, r), from the (Q, N) similarities (every prediction goes through here)."""
        return self.ensemble_.decision(self.transform(X))

    def predict_weights(self, X: Any) -> np.ndarray:
        """W^F (Q, N) of the estimator, from the (Q, N) similarities."""
        return self.ensemble_.weights(self.transform(X), n_threads=self._n_threads())

    def _n_threads(self) -> int:
        return self.estimator_._n_threads()

    def estimate_cost(
        self,
        n_samples: int,
        n_features: int | None = None,
        *,
        kernel: Any = "linear",
        n_outputs: int | None = None,
    ) -> FitCost:
        """The estimator's cost on the mapped features (N for the kernel map, the kpca
        components: at most N), plus the kpca eigendecomposition (4 N^3 flops, 3 N^2
        floats). ``n_features`` is ignored: the inputs are N similarities."""
        width = n_samples if self.n_components is None else min(self.n_components, n_samples)
        cost = self._template().estimate_cost(n_samples, width, kernel=kernel, n_outputs=n_outputs)
        if self.map == "kernel_map":
            return cost
        return replace(
            cost,
            n_features=n_samples,
            setup_seconds=cost.setup_seconds + KPCA_FLOP_SECONDS * 4.0 * n_samples**3,
            memory_bytes=max(cost.memory_bytes, 24.0 * n_samples**2),
            disk_bytes=cost.disk_bytes + 8.0 * n_samples * (width + 1),
        )
