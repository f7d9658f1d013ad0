"""Missing input values (NaN) in the split search of every tree type.

As in LightGBM and scikit-learn's HistGradientBoosting, a split learns where the rows
whose split feature is missing go: both sides are tried and the better kept. Here both
directions are searched by the unchanged kernels (exact, histogram, oblivious) on *twin
columns*: for a feature f holding NaN in the training rows, the search inputs carry

- column f with NaN read as +inf: the missing values sort above every value, fall in a bin
  of their own (:func:`~okcore.trees.binning.bin_inputs` never merges +/-inf with other
  values) and every cut ``x <= t`` sends them right;
- a twin column (after the p inputs) with NaN read as -inf: they sort below every value and
  every cut sends them left; its cut at the -inf bin (threshold -inf) is "missing or not".

Each split search scans both columns, so it tries every cut with the missing rows on each
side and keeps the best by the house rule (:func:`~okcore.trees.splitter.beats`: on equal
gains the lower column, so **a tie sends missing values right**, the side NaN took before
missing values were accepted, ``NaN <= t`` being false). A feature's column and its twin are
one candidate: ``max_features`` draws among the p inputs and a drawn feature brings its
twin. The randomized splitter (OK3-et) draws a feature's cut in the range of its observed
values and scores that one cut on both columns. An oblivious tree's level cut is one (feature, threshold, direction) for the whole
level. When the tree is grown (:func:`fold_twins`), a cut on a twin becomes a cut on f with
``missing_left`` set, so prediction reads the p inputs only.

Prediction sends a missing value the learned way (``missing_left``; right when the array is
absent, as models saved before it did). A split on a feature that had **no** missing value
in the fit's training rows learned nothing about them: a NaN met at prediction goes to the
child with more training rows (scikit-learn's rule), right on a tie. A feature that had
missing values, but none in the node's rows, scores both sides equally: the tie rule sends
them right.

Data without missing values gets no twin column: the search inputs, the draws and so the
trees are exactly those of before. Costs: O(n m) memory and search work for the m features
that hold missing values (LightGBM and scikit-learn scan both directions too).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse


def missing_features(X: Any) -> np.ndarray:
    """Sorted features (int64) of X (dense, or CSR: its stored entries) holding NaN. O(n p)
    (O(nnz))."""
    if sparse.issparse(X):
        csr = sparse.csr_matrix(X)
        return np.unique(csr.indices[np.isnan(csr.data)]).astype(np.int64)
    arr = np.asarray(X)
    if arr.dtype.kind != "f":
        return np.empty(0, dtype=np.int64)
    return np.flatnonzero(np.isnan(arr).any(axis=0)).astype(np.int64)


def with_twins(X: Any, twins: np.ndarray) -> Any:
    """The search inputs (n, p + m) of X (n, p) with NaN in the features ``twins`` (m,):
    NaN read as +inf in X's columns, and the twin columns X[:, twins] with NaN read as -inf
    appended (module docstring). Dense X keeps its float dtype; CSR X stays CSR (an implicit
    zero is a zero, a stored NaN is missing). X itself when ``twins`` is empty. O(n (p + m))
    (O(nnz))."""
    if len(twins) == 0:
        return X
    if sparse.issparse(X):
        csr = sparse.csr_matrix(X, dtype=np.float64, copy=True)
        twin = sparse.csr_matrix(csr[:, twins])
        csr.data[np.isnan(csr.data)] = np.inf
        twin.data[np.isnan(twin.data)] = -np.inf
        out = sparse.hstack([csr, twin], format="csr")
        out.sort_indices()
        return out
    arr = np.asarray(X)
    twin = arr[:, twins]
    out = np.concatenate(
        [np.where(np.isnan(arr), np.inf, arr), np.where(np.isnan(twin), -np.inf, twin)], axis=1
    )
    return np.ascontiguousarray(out, dtype=arr.dtype)


def add_twins(features: np.ndarray, twin_column: np.ndarray) -> np.ndarray:
    """Candidate features (sorted int32) with the twin columns of those that have one
    (``twin_column[f]``, -1 for none) appended: still sorted, the twins lying after every
    input. ``features`` itself when no input has a twin."""
    if len(twin_column) == 0:
        return features
    twins = twin_column[features]
    twins = twins[twins >= 0]
    if len(twins) == 0:
        return features
    return np.concatenate([features, twins]).astype(np.int32)


def twin_columns(n_features: int, twins: tuple[int, ...]) -> np.ndarray:
    """``twin_column`` of :func:`add_twins`: the column n_features + j of input twins[j],
    -1 for the others; empty when there are no twins."""
    if not twins:
        return np.empty(0, dtype=np.int32)
    column = np.full(n_features, -1, dtype=np.int32)
    column[list(twins)] = n_features + np.arange(len(twins), dtype=np.int32)
    return column


def fold_twins(fields: dict[str, np.ndarray], n_features: int, twins: tuple[int, ...]) -> None:
    """Turn the grown tree's ``fields`` (TreeArrays' arrays, on the search inputs'
    n_features + m columns) into a tree on the n_features inputs, in place: a cut on twin
    j becomes a cut on input twins[j] with missing values left; ``missing_left`` (uint8
    per node) is added: 1 on those, and on cuts of features with no missing value in
    training when the left child holds more training rows (module docstring). O(nodes)."""
    feature, left, right = fields["feature"], fields["left"], fields["right"]
    internal = left >= 0
    missing_left = np.zeros(len(feature), dtype=np.uint8)
    is_twin = internal & (feature >= n_features)
    had_missing = np.zeros(n_features, dtype=bool)
    had_missing[list(twins)] = True
    if is_twin.any():
        feature[is_twin] = np.asarray(twins, dtype=np.int32)[feature[is_twin] - n_features]
        missing_left[is_twin] = 1
    never = np.flatnonzero(internal & ~had_missing[np.where(internal, feature, 0)])
    n = fields["n_samples"]
    missing_left[never] = n[left[never]] > n[right[never]]
    fields["missing_left"] = missing_left
