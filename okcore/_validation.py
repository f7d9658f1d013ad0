"""Parameter constraints and array checks, one message format for the whole library.

Each estimator declares ``_parameter_constraints`` (name -> list of constraints) once;
:func:`validate_params` checks them in ``fit`` and raises :class:`InvalidParameterError`
with the message "The 'name' parameter of Class must be <description>. Got <value> instead."
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from .exceptions import DataError, DataTypeError, InvalidParameterError, NotFittedError


@dataclass(frozen=True)
class Interval:
    """A real or integer interval constraint, e.g. ``Interval(int, 1, None, "left")``."""

    kind: type
    low: float | None
    high: float | None
    closed: str  # "left", "right", "both", "neither"

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool):
            return False
        if self.kind is int and not isinstance(value, numbers.Integral):
            return False
        if self.kind is float and not isinstance(value, numbers.Real):
            return False
        if not np.isfinite(float(value)):
            return False
        if self.low is not None:
            if value < self.low or (value == self.low and self.closed in ("right", "neither")):
                return False
        if self.high is not None:
            if value > self.high or (value == self.high and self.closed in ("left", "neither")):
                return False
        return True

    def describe(self) -> str:
        left = "[" if self.closed in ("left", "both") else "("
        right = "]" if self.closed in ("right", "both") else ")"
        low = "-inf" if self.low is None else repr(self.low)
        high = "inf" if self.high is None else repr(self.high)
        name = "an int" if self.kind is int else "a float"
        return f"{name} in {left}{low}, {high}{right}"

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "integer" if self.kind is int else "number"}
        if self.low is not None:
            inclusive = self.closed in ("left", "both")
            schema["minimum" if inclusive else "exclusiveMinimum"] = self.low
        if self.high is not None:
            inclusive = self.closed in ("right", "both")
            schema["maximum" if inclusive else "exclusiveMaximum"] = self.high
        return schema


@dataclass(frozen=True)
class Options:
    """One of a fixed set of values (strings, None, ...)."""

    values: tuple

    def accepts(self, value: Any) -> bool:
        return any(value is v or self._equal(value, v) for v in self.values)

    @staticmethod
    def _equal(value: Any, v: Any) -> bool:
        """Equal and of the same kind: np.int64(-1) is -1 and np.True_ is True, but 1 is not True."""
        if isinstance(v, str):
            return isinstance(value, str) and value == v
        if isinstance(v, bool):
            return isinstance(value, bool | np.bool_) and bool(value) == v
        if isinstance(v, int):
            return (
                isinstance(value, numbers.Integral)
                and not isinstance(value, bool | np.bool_)
                and value == v
            )
        return False

    def describe(self) -> str:
        if len(self.values) == 1:  # "an int in [1, inf) or None", not "or one of None"
            return repr(self.values[0])
        return "one of " + ", ".join(repr(v) for v in self.values)

    def json_schema(self) -> dict[str, Any]:
        if self.values == (None,):
            return {"type": "null"}
        if set(self.values) == {True, False} and all(isinstance(v, bool) for v in self.values):
            return {"type": "boolean"}
        return {"enum": list(self.values)}


class Callable_:
    """A callable (used for callbacks)."""

    def accepts(self, value: Any) -> bool:
        return callable(value)

    def describe(self) -> str:
        return "a callable"

    def json_schema(self) -> None:
        return None  # not a JSON value


class PositiveFloats:
    """A non-empty list of finite floats > 0 (e.g. one RBF width per input feature)."""

    def accepts(self, value: Any) -> bool:
        if not isinstance(value, list | tuple | np.ndarray) or len(value) == 0:
            return False
        positive = Interval(float, 0.0, None, "neither")
        return all(positive.accepts(v) for v in np.asarray(value, dtype=object).ravel())

    def describe(self) -> str:
        return "a non-empty list of floats in (0, inf)"

    def json_schema(self) -> dict[str, Any]:
        return {"type": "array", "minItems": 1, "items": {"type": "number", "exclusiveMinimum": 0}}


class Subset:
    """A non-empty list of distinct values among ``values`` (e.g. candidate names)."""

    def __init__(self, values: tuple) -> None:
        self.values = values

    def accepts(self, value: Any) -> bool:
        if not isinstance(value, list | tuple) or not value:
            return False
        return len(set(value)) == len(value) and all(
            isinstance(v, str) and v in self.values for v in value
        )

    def describe(self) -> str:
        return "a non-empty list of distinct values among " + ", ".join(map(repr, self.values))

    def json_schema(self) -> dict[str, Any]:
        return {
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": {"enum": list(self.values)},
        }


class RandomStateLike:
    """None, an int seed, or a numpy Generator / RandomState."""

    def accepts(self, value: Any) -> bool:
        if value is None:
            return True
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return 0 <= int(value) < 2**32
        return isinstance(value, np.random.Generator | np.random.RandomState)

    def describe(self) -> str:
        return "None, an int in [0, 2**32) or a numpy random Generator"

    def json_schema(self) -> dict[str, Any]:
        # a Generator is no JSON value: the seeds and None are
        seeds = {"type": "integer", "minimum": 0, "maximum": 2**32 - 1}
        return {"anyOf": [seeds, {"type": "null"}]}


def validate_params(estimator: Any, constraints: dict[str, list]) -> None:
    """Check every declared parameter of ``estimator``; raise one clear message on the first failure."""
    for name, options in constraints.items():
        value = getattr(estimator, name)
        if any(c.accepts(value) for c in options):
            continue
        described = " or ".join(c.describe() for c in options)
        raise InvalidParameterError(
            f"The {name!r} parameter of {type(estimator).__name__} must be {described}. "
            f"Got {value!r} instead."
        )


def constraints_json_schema(constraints: list) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the JSON values ``constraints`` accept: one
    sub-schema per constraint (a range, an enum), joined by ``anyOf``; constraints no JSON
    value meets (a callable) are left out. Defaults and descriptions are the caller's."""
    schemas = [s for s in (c.json_schema() for c in constraints) if s is not None]
    flat = [part for s in schemas for part in s.get("anyOf", [s])]
    return flat[0] if len(flat) == 1 else {"anyOf": flat}


def check_matrix(
    array: Any,
    name: str,
    *,
    ndim: int = 2,
    min_rows: int = 1,
    allow_1d: bool = False,
    keep_dtypes: tuple[np.dtype, ...] = (),
    allow_nan: bool = False,
) -> np.ndarray:
    """Convert to a finite float64 array of the given ndim; raise :class:`DataError` otherwise
    (:class:`DataTypeError` for elements that are no numbers at all).

    ``allow_1d`` turns a vector of length n into an (n, 1) matrix (a single output); an
    ndarray whose dtype is in ``keep_dtypes`` is checked without conversion; ``allow_nan``
    lets NaN (a missing value) through, never infinity. The messages
    contain scikit-learn's patterns ("Reshape your data", "0 feature(s) (shape=(n, 0)) while
    a minimum of 1 is required", "Complex data not supported"), which tools built on
    scikit-learn match.
    """
    if array is None:
        raise DataError(f"{name} is required")
    try:
        arr = np.asarray(array)
        if arr.dtype not in keep_dtypes and arr.dtype.kind != "c":
            arr = arr.astype(np.float64, copy=False)
    except TypeError as exc:  # numpy's word for an element that is no number (a dict)
        raise DataTypeError(f"{name} must be a numeric array: {exc}") from None
    except ValueError as exc:  # a string that is no number, rows of different lengths
        raise DataError(f"{name} must be a numeric array: {exc}") from None
    check_real(arr, name)
    if allow_1d and arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != ndim:
        hint = ""
        if ndim == 2 and arr.ndim == 1:
            hint = (
                f". Reshape your data: {name}.reshape(-1, 1) if it has a single feature, "
                f"{name}.reshape(1, -1) if it is a single sample"
            )
        raise DataError(f"{name} must be a {ndim}-d array: got shape {arr.shape}{hint}")
    if arr.shape[0] < min_rows:
        raise DataError(
            f"{name} must have at least {min_rows} row(s): got {arr.shape[0]} sample(s) "
            f"(shape={arr.shape}) while a minimum of {min_rows} is required."
        )
    if ndim == 2 and arr.shape[1] < 1:
        raise DataError(
            f"{name} must have at least one column: got 0 feature(s) (shape={arr.shape}) "
            "while a minimum of 1 is required."
        )
    if not np.all(np.isfinite(arr)):
        bad_values = np.isinf(arr) if allow_nan else ~np.isfinite(arr)
        if bad_values.any():
            bad = np.argwhere(bad_values)[0]
            what = "infinity" if allow_nan else "NaN or infinity"
            raise DataError(
                f"{name} contains {what} (first at index {tuple(int(i) for i in bad)}); "
                "remove or impute those values"
            )
    return np.ascontiguousarray(arr)


def check_real(arr: Any, name: str, error: type[DataError] = DataError) -> None:
    """Refuse an array (dense or sparse) of complex dtype: a cast to float64 would silently
    drop the imaginary parts. (Complex elements of a list or an object array make the cast
    itself fail.)"""
    if getattr(getattr(arr, "dtype", None), "kind", None) == "c":
        raise error(
            f"Complex data not supported: {name} holds complex numbers; pass real values "
            "(e.g. the real and imaginary parts as separate columns)"
        )


def check_kernel_diag(diag: Any, name: str) -> np.ndarray:
    """Kernel values k(c, c) (squared norms in feature space): a finite vector, none clearly
    negative (below -1e-8 x the largest magnitude, rounding of a zero norm)."""
    arr = check_matrix(diag, name, ndim=1)
    scale = max(float(np.abs(arr).max()), np.finfo(float).tiny)
    if (arr < -1e-8 * scale).any():
        i = int(np.argmax(arr < -1e-8 * scale))
        raise DataError(
            f"{name}[{i}] = {arr[i]:.6g} is negative: k(c, c) is a squared norm in the "
            "feature space and cannot be"
        )
    return arr


#: Input dtypes kept as they are (compact inputs); any other is converted to float64.
COMPACT_DTYPES = (np.dtype(np.float32), np.dtype(np.uint8))


#: Estimators that learn where missing input values go (okcore.trees.missing).
MISSING_VALUE_MODELS = "OKBoostRegressor, OK3Regressor or OK3ForestRegressor"


def check_inputs(
    X: Any,
    n_features: int | None = None,
    name: str = "X",
    owner: str = "the model",
    allow_missing: bool = False,
    missing_fix: str = f"use {MISSING_VALUE_MODELS}",
) -> Any:
    """Validate an input matrix (n_samples, n_features), optionally against the width
    ``n_features`` the estimator named ``owner`` was fitted with (scikit-learn's message).
    ``allow_missing``: NaN entries are missing values, kept (trees learn where they go);
    otherwise they are refused with a message naming ``owner`` and what to do: impute, or
    ``missing_fix`` (the models whose trees take them).

    Returns a C-contiguous ndarray, float64 unless it is float32 or uint8 (kept: compact
    inputs), or, for any scipy sparse matrix, a canonical CSR matrix with float64 values
    (duplicates summed, indices sorted; a copy, the caller's matrix is not modified).
    """
    if sparse.issparse(X):
        arr = _check_sparse(X, name)
        values = arr.data
    else:
        arr = check_matrix(X, name, keep_dtypes=COMPACT_DTYPES, allow_nan=True)
        values = arr
    if not allow_missing and values.dtype.kind == "f" and np.isnan(values).any():
        raise DataError(
            f"{name} holds missing values (NaN): {owner} does not accept them; impute them "
            f"first (e.g. each column's training mean) or {missing_fix}, whose trees learn "
            "where missing values go"
        )
    if n_features is not None and arr.shape[1] != n_features:
        raise DataError(
            f"{name} has {arr.shape[1]} features, but {owner} is expecting {n_features} "
            f"features as input: it was fitted with {n_features} input columns"
        )
    return arr


def _check_sparse(X: Any, name: str) -> sparse.csr_matrix:
    """A canonical float64 CSR copy of a sparse matrix with finite values and >= 1 row/column."""
    check_real(X, name)
    try:
        csr = sparse.csr_matrix(X, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name} must be a numeric sparse matrix: {exc}") from None
    if csr.shape[0] < 1 or csr.shape[1] < 1:
        raise DataError(f"{name} must have at least one row and one column: got shape {csr.shape}")
    csr.sum_duplicates()  # canonical: sorted indices, no duplicates
    if np.isinf(csr.data).any():  # a stored NaN is a missing value (check_inputs)
        row = int(np.searchsorted(csr.indptr, np.flatnonzero(np.isinf(csr.data))[0], "right")) - 1
        raise DataError(
            f"{name} contains infinity (first in row {row}); remove or impute those values"
        )
    return csr


def dense_float64(X: Any) -> np.ndarray:
    """Checked inputs as a dense float64 array (the exact search's form). O(n p) memory."""
    if sparse.issparse(X):
        return np.ascontiguousarray(X.toarray(), dtype=np.float64)
    return np.ascontiguousarray(X, dtype=np.float64)


def axis_labels(data: Any, axis: str) -> list[Any] | None:
    """The labels of ``axis`` ("index" or "columns") of a pandas DataFrame (or a Series'
    index), or None for anything else and for pandas' default 0..n-1 RangeIndex (no
    labels)."""
    labels = getattr(data, axis, None) if hasattr(data, "iloc") else None
    if labels is None or type(labels).__name__ == "RangeIndex":
        return None
    return list(labels)


def feature_names(X: Any) -> np.ndarray | None:
    """The column names of a pandas DataFrame ``X`` when every one is a string, as an
    object array (scikit-learn's ``feature_names_in_``); None for anything else (arrays,
    sparse matrices, a DataFrame with pandas' default 0..p-1 or other non-string columns).
    Names of mixed kinds raise :class:`DataTypeError` saying how to make them strings."""
    columns = getattr(X, "columns", None) if hasattr(X, "iloc") else None
    if columns is None:
        return None
    names = np.asarray(columns, dtype=object)
    is_str = [isinstance(n, str) for n in names]
    if not any(is_str):
        return None
    if not all(is_str):
        kinds = sorted({type(n).__name__ for n in names})
        raise DataTypeError(
            f"X's column names are of several kinds ({kinds}): feature names are checked "
            "only when every column name is a string. Make them strings (X.columns = "
            "X.columns.astype(str)), or pass X.to_numpy() to use the columns by position"
        )
    return names


def record_feature_names(estimator: Any, X: Any) -> None:
    """At ``fit``: keep ``X``'s column names as ``estimator.feature_names_in_`` (pandas
    DataFrame with string column names), or forget those of an earlier fit (scikit-learn's
    convention: the attribute exists only after a fit on named columns)."""
    names = feature_names(X)
    if names is not None:
        estimator.feature_names_in_ = names
    else:
        estimator.__dict__.pop("feature_names_in_", None)


def check_feature_names(estimator: Any, X: Any) -> None:
    """At prediction: ``X``'s column names must be the fitted ``feature_names_in_``, in the
    same order (the columns are used by position, so another order would silently predict
    from the wrong inputs): :class:`DataError` with scikit-learn's message otherwise. Names
    on one side only warn, as scikit-learn does (a UserWarning)."""
    fitted = getattr(estimator, "feature_names_in_", None)
    names = feature_names(X)
    owner = type(estimator).__name__
    if fitted is None and names is None:
        return
    if fitted is None:
        warnings.warn(
            f"X has feature names, but {owner} was fitted without feature names",
            UserWarning,
            stacklevel=3,
        )
        return
    if names is None:
        warnings.warn(
            f"X does not have valid feature names, but {owner} was fitted with feature names",
            UserWarning,
            stacklevel=3,
        )
        return
    if len(names) == len(fitted) and bool((names == fitted).all()):
        return
    unseen = sorted(set(names) - set(fitted))
    missing = sorted(set(fitted) - set(names))
    message = "The feature names should match those that were passed during fit.\n"
    if unseen:
        message += "Feature names unseen at fit time:\n" + _listed(unseen)
    if missing:
        message += "Feature names seen at fit time, yet now missing:\n" + _listed(missing)
    if not unseen and not missing:
        message += "Feature names must be in the same order as they were in fit.\n"
    raise DataError(
        f"{message}Pass X with the columns {owner} was fitted on, in that order "
        f"(X[list(model.feature_names_in_)] selects and orders them)"
    )


def _listed(names: list[str], most: int = 5) -> str:
    """Names as scikit-learn lists them in its message: one "- name" line each, at most
    ``most`` and "- ..." for the rest."""
    lines = [f"- {n}\n" for n in names[:most]]
    return "".join(lines) + ("- ...\n" if len(names) > most else "")


def check_is_fitted(estimator: Any, attribute: str = "ensemble_") -> None:
    """Raise :class:`NotFittedError` unless ``estimator`` has the fitted attribute.

    ``ensemble_`` is set last by every ``fit``, so a fit that failed half-way (e.g. on its
    eval set, after ``output_space_`` was set) still counts as not fitted.
    """
    if not hasattr(estimator, attribute):
        raise NotFittedError(
            f"This {type(estimator).__name__} instance is not fitted yet. "
            "Call 'fit' with appropriate arguments before using this estimator."
        )


def check_random_state(seed: Any) -> np.random.Generator:
    """Turn None / int / Generator / RandomState into a numpy Generator."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.RandomState):
        return np.random.default_rng(seed.randint(0, 2**32 - 1))
    return np.random.default_rng(seed)


def weight_argument(weight: np.ndarray | None, rows: np.ndarray | None = None) -> dict[str, Any]:
    """The ``sample_weight`` fit argument of ``rows`` (all rows when None) of a checked
    ``weight``, or nothing when unweighted: ``est.fit(X, Y, **weight_argument(w, rows))``."""
    if weight is None:
        return {}
    return {"sample_weight": weight if rows is None else weight[rows]}


def check_sample_weight(sample_weight: Any, n_samples: int) -> np.ndarray | None:
    """``fit``'s ``sample_weight``: None, or one finite weight >= 0 per training row with a
    positive sum (scikit-learn's rules), as float64 (n_samples,). Weights all equal to 1
    are returned as None: the unweighted fit, bit for bit. Raises DataError naming what is
    wrong."""
    if sample_weight is None:
        return None
    check_real(sample_weight, "sample_weight")
    try:
        w = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"sample_weight must be numbers: {exc}") from None
    if w.ndim != 1 or len(w) != n_samples:
        raise DataError(
            f"sample_weight must be a 1-D array of one weight per training row "
            f"({n_samples}); got shape {w.shape}"
        )
    if not np.isfinite(w).all():
        i = int(np.flatnonzero(~np.isfinite(w))[0])
        raise DataError(f"sample_weight[{i}] = {w[i]} is not finite: weights must be numbers")
    if (w < 0).any():
        i = int(np.flatnonzero(w < 0)[0])
        raise DataError(f"sample_weight[{i}] = {w[i]:.6g} is negative: weights must be >= 0")
    if not w.sum() > 0:
        raise DataError("sample_weight is all zero: at least one row needs a positive weight")
    if (w == 1.0).all():
        return None
    return np.ascontiguousarray(w)


def masked_outputs(
    Y: Any, kernel: Any, output_weight: Any, low_rank: bool
) -> tuple[Any, np.ndarray | None]:
    """Output vectors with unknown (NaN) entries, and a weight per output column: (Y with
    the unknown entries set to 0, the (N, d) weight of each entry: ``output_weight[c]`` where
    observed, 0 where not), or (Y, None) when every entry is known and no column weight is
    given (the usual fit, unchanged). Only the linear output kernel without a low-rank factor
    (``low_rank`` False) has one factor column per output column (phi = Y), so only it can
    leave an entry out; other kernels, where a partly known output has no feature vector, are
    refused with a DataError saying so. O(N d)."""
    if Y is None:
        if output_weight is not None:
            raise DataError("output_weight weighs the columns of output vectors Y: give Y")
        return Y, None
    try:
        Ya = np.asarray(Y)
        if np.iscomplexobj(Ya):
            return Y, None  # refused by the output space (no silent cast, no warning)
        Ya = Ya.astype(np.float64)
    except (TypeError, ValueError):
        return Y, None  # the output space says what is wrong with Y
    unknown = np.isnan(Ya)
    if output_weight is None and not unknown.any():
        return Y, None
    from .outputs.kernels import LinearKernel, make_kernel  # kernels validate with this module

    if kernel is not None and not isinstance(make_kernel(kernel), LinearKernel) or low_rank:
        what = "unknown (NaN) output entries" if unknown.any() else "output_weight"
        raise DataError(
            f"{what} need the linear output kernel without a low-rank factor (factor_rank and "
            "n_landmarks None), whose factor columns are the output columns: under another "
            "kernel a partly known output has no feature vector. Impute the outputs, or "
            "train with the linear kernel."
        )
    d = 1 if Ya.ndim == 1 else Ya.shape[1]
    weight = (
        np.ones(d)
        if output_weight is None
        else check_matrix(output_weight, "output_weight", ndim=1)
    )
    if len(weight) != d or (weight < 0).any() or not weight.sum() > 0:
        raise DataError(
            f"output_weight must be {d} numbers >= 0 (one per output column), not all 0: got "
            f"{np.asarray(output_weight).tolist()}"
        )
    filled = np.where(unknown, 0.0, Ya)
    entry = (~unknown).reshape(len(Ya), -1) * weight[None, :]
    if not entry.any():
        raise DataError("every output entry is unknown (NaN): nothing to fit")
    return filled, entry
