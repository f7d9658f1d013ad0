"""Cross-validation on bipartite networks: both vertex sets split into K folds, K x K train /
test configurations, and AUROC / average precision on the three blocks a user meets.

For row fold a and column fold b, the model is fitted on the learned rows (not in a) x the
learned columns (not in b) only, and scored on
- "new_rows": test rows x learned columns (a new drug against known targets),
- "new_cols": learned rows x test columns,
- "new_pairs": test rows x test columns (both vertices new),
and on the three pooled ("pooled"). This is the protocol of Schrynemackers et al. (2013,
"On protocols and measures for the validation of supervised methods for the inference of
biological networks"), where the K folds of each side are stratified by degree.
Unknown pairs (NaN in Y, :mod:`okcore.bipartite.unknown`) are left out of every score.
A similarity input is sliced to the learned items of its side in every configuration
(:func:`okcore.bipartite.side_inputs`): a test vertex's similarities never reach a fit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_inputs, check_random_state
from ..exceptions import DataError
from ..meta import clone
from ..metrics import average_precision, edge_auc
from .labels import check_fold_labels, check_vertex_labels
from .pairs import side_inputs
from .unknown import check_interactions

BLOCKS = ("new_rows", "new_cols", "new_pairs")


def degree_stratified_folds(degrees: Any, n_folds: int, random_state: Any = None) -> np.ndarray:
    """Fold id (0..K-1) of every vertex, stratified by degree: vertices sorted by degree
    (random order among equal degrees), each run of K consecutive ones spread over the K folds
    in a random order. Fold sizes differ by at most one and each fold gets a similar degree
    distribution. O(n log n)."""
    d = np.asarray(degrees, dtype=np.float64).ravel()
    if not isinstance(n_folds, int | np.integer) or n_folds < 2:
        raise DataError(f"n_folds must be an integer >= 2: got {n_folds!r}")
    if d.size < n_folds:
        raise DataError(f"{n_folds} folds need at least {n_folds} vertices: got {d.size}")
    rng = check_random_state(random_state)
    order = np.lexsort((rng.random(d.size), d))
    folds = np.empty(d.size, dtype=np.int64)
    for start in range(0, d.size, n_folds):
        run = order[start : start + n_folds]
        folds[run] = rng.permutation(n_folds)[: run.size]
    return folds


def check_folds(folds: Any, n: int, side: str) -> np.ndarray:
    """A given fold assignment of the ``n`` vertices of ``side`` ("row" or "column"): one
    integer fold id per vertex, ids 0..K-1 with K >= 2 and every fold non-empty. Raises
    :class:`DataError` saying what is wrong."""
    a = np.asarray(folds)
    if a.ndim != 1 or a.shape[0] != n:
        raise DataError(f"{side}_folds must give one fold id per {side} ({n}): got shape {a.shape}")
    if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
        a = a.astype(np.int64)
    if a.dtype.kind not in "iu":
        raise DataError(f"{side}_folds must hold integer fold ids: got dtype {a.dtype}")
    a = a.astype(np.int64)
    k = int(a.max()) + 1 if n else 0
    present = np.bincount(a[a >= 0], minlength=k) if n else np.zeros(0)
    if n == 0 or a.min() < 0 or k < 2 or np.any(present == 0):
        from_one = n > 0 and a.min() == 1 and k > 2 and bool(np.all(present[1:] > 0))
        raise DataError(
            f"{side}_folds must number the folds 0..K-1 with K >= 2 and every fold holding "
            f"at least one {side}: got ids {sorted(set(a.tolist()))[:10]}"
            + (
                " (numbered from 1, as in many published protocols: subtract 1 from each)"
                if from_one
                else ""
            )
        )
    return a


def block_scores(truth: Any, scores: Any) -> dict[str, float]:
    """AUROC and average precision of ``scores`` against 0/1 ``truth`` (any shape); a NaN
    in ``truth`` is an unknown pair, left out (never a negative); NaN for a block without
    both an interaction and a non-interaction among its known pairs."""
    truth = np.asarray(truth, dtype=np.float64).ravel()
    known = ~np.isnan(truth)
    t = truth[known] > 0
    s = np.asarray(scores, dtype=np.float64).ravel()[known]
    if t.all() or not t.any():
        return {"auroc": float("nan"), "ap": float("nan")}
    return {"auroc": edge_auc(s, t), "ap": average_precision(s, t)}


@dataclass
class BipartiteCVResult:
    """Per configuration (row fold, column fold): the scores of every block and pooled.

    ``folds[k]`` is {"row_fold", "col_fold", "fit_time", "predict_time", block: {"auroc",
    "ap"}, ..., and "best_params" for a :class:`~okcore.bipartite.BipartiteGridSearch`};
    :meth:`mean` averages a block's measure over configurations (NaNs skipped) and
    :meth:`summary` gives every block's means and the mean over the three blocks.
    """

    row_folds: np.ndarray
    col_folds: np.ndarray
    folds: list[dict[str, Any]] = field(default_factory=list)

    def mean(self, block: str, measure: str) -> float:
        values = [f[block][measure] for f in self.folds if block in f]
        finite = [v for v in values if np.isfinite(v)]
        return float(np.mean(finite)) if finite else float("nan")

    def summary(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for measure in ("auroc", "ap"):
            per_block = [self.mean(b, measure) for b in BLOCKS]
            for block, value in zip(BLOCKS, per_block, strict=True):
                out[f"{block}_{measure}"] = value
            out[f"pooled_{measure}"] = self.mean("pooled", measure)
            out[f"blocks_{measure}"] = float(np.nanmean(per_block))
        return out


def bipartite_cross_validate(
    model: Any,
    X_rows: Any,
    X_cols: Any,
    Y: Any,
    *,
    n_folds: int | tuple[int, int] = 4,
    row_inputs: str = "features",
    col_inputs: str = "features",
    random_state: Any = 0,
    configurations: list[tuple[int, int]] | None = None,
    callback: Callable[[dict[str, Any]], None] | None = None,
    fit_callback: Callable[[int, Any], object] | None = None,
    row_folds: Any = None,
    col_folds: Any = None,
) -> BipartiteCVResult:
    """K x K cross-validation of a :class:`~okcore.bipartite.BipartiteRegressor`-like
    ``model`` (fit(X_rows, X_cols, Y), predict_new_rows / predict_new_cols /
    predict_new_pairs) on the interaction matrix Y (n_rows, n_cols). NaN entries of Y
    are unknown pairs: the fits receive them as NaN, the scores leave them out
    (:func:`block_scores`) and the fold degrees count observed interactions only.

    Parameters
    ----------
    n_folds : int or (int, int)
        K for both sides, or (K_rows, K_cols). Folds are stratified by degree and seeded by
        ``random_state`` (rows first, then columns, from one generator). A side whose folds
        are given (``row_folds``, ``col_folds``) has as many folds as it is given.
    row_folds, col_folds : array of int or None
        A given fold assignment (a published protocol's): the fold id 0..K-1 of every row
        (column), each fold non-empty (:func:`check_folds`); None draws the side's folds.
    row_inputs, col_inputs : {"features", "similarity"}
        "similarity": X_rows (X_cols) is the (n, n) similarity among all vertices of that
        side; every fit and prediction sees only the columns of the learned vertices.
    configurations : list of (row fold, column fold) or None
        A subset of the K x K configurations to run (default: all).
    callback : callable or None
        Called with each configuration's record as it completes.
    fit_callback : callable or None
        ``fit_callback(i, progress)`` hears the FitProgress of the i-th configuration's
        fits (0-based, in the order run; ``part`` says which side fits): the model's
        ``fit`` must then take a ``callback`` (as BipartiteRegressor's does).

    Cost: K_rows x K_cols fits of the model, each two one-sided fits (plus the second-step
    fits of ``new_pairs="refit"``).
    """
    check_vertex_labels(X_rows, X_cols, Y, row_inputs, col_inputs)
    check_fold_labels(row_folds, col_folds, Y)
    Y = check_interactions(Y)
    # arrays first (a DataFrame or a list too): the folds index the rows by position
    X_rows = check_inputs(X_rows, name="X_rows", allow_missing=True)
    X_cols = check_inputs(X_cols, name="X_cols", allow_missing=True)
    if X_rows.shape[0] != Y.shape[0] or X_cols.shape[0] != Y.shape[1]:
        raise DataError(
            f"Y is {Y.shape[0]} x {Y.shape[1]} but X_rows has {X_rows.shape[0]} rows and "
            f"X_cols {X_cols.shape[0]}"
        )
    interacting = np.nan_to_num(Y) != 0  # an unknown pair is no interaction of a degree
    k_rows, k_cols = (n_folds, n_folds) if isinstance(n_folds, int | np.integer) else n_folds
    rng = check_random_state(random_state)
    if row_folds is None:
        row_folds = degree_stratified_folds(interacting.sum(1), k_rows, rng)
    else:
        row_folds = check_folds(row_folds, Y.shape[0], "row")
        k_rows = int(row_folds.max()) + 1
    if col_folds is None:
        col_folds = degree_stratified_folds(interacting.sum(0), k_cols, rng)
    else:
        col_folds = check_folds(col_folds, Y.shape[1], "column")
        k_cols = int(col_folds.max()) + 1
    if configurations is not None and any(
        not (0 <= a < k_rows and 0 <= b < k_cols) for a, b in configurations
    ):
        raise DataError(
            f"configurations must be (row fold, column fold) pairs within {k_rows} x {k_cols} "
            f"folds: got {configurations}"
        )
    result = BipartiteCVResult(row_folds, col_folds)
    todo = configurations or [(a, b) for a in range(k_rows) for b in range(k_cols)]
    for i, (a, b) in enumerate(todo):
        test_r, train_r = np.flatnonzero(row_folds == a), np.flatnonzero(row_folds != a)
        test_c, train_c = np.flatnonzero(col_folds == b), np.flatnonzero(col_folds != b)
        xr_train = side_inputs(X_rows, train_r, train_r, row_inputs)
        xc_train = side_inputs(X_cols, train_c, train_c, col_inputs)
        xr_test = side_inputs(X_rows, test_r, train_r, row_inputs)
        xc_test = side_inputs(X_cols, test_c, train_c, col_inputs)
        fitted = clone(model)
        start = time.process_time()
        heard = {} if fit_callback is None else {"callback": _numbered(fit_callback, i)}
        fitted.fit(xr_train, xc_train, Y[np.ix_(train_r, train_c)], **heard)
        # CPU seconds (the machine may be shared: steadier than wall time)
        record: dict[str, Any] = {"row_fold": a, "col_fold": b}
        record["fit_time"] = time.process_time() - start
        predicted = {
            "new_rows": (fitted.predict_new_rows(xr_test), Y[np.ix_(test_r, train_c)]),
            "new_cols": (fitted.predict_new_cols(xc_test), Y[np.ix_(train_r, test_c)]),
            "new_pairs": (fitted.predict_new_pairs(xr_test, xc_test), Y[np.ix_(test_r, test_c)]),
        }
        for block, (scores, truth) in predicted.items():
            record[block] = block_scores(truth, scores)
        record["pooled"] = block_scores(
            np.concatenate([t.ravel() for _, t in predicted.values()]),
            np.concatenate([s.ravel() for s, _ in predicted.values()]),
        )
        record["predict_time"] = time.process_time() - start - record["fit_time"]
        if hasattr(fitted, "best_params_"):  # a grid search: what its inner CV chose
            record["best_params"] = dict(fitted.best_params_)
        result.folds.append(record)
        if callback is not None:
            callback(record)
    return result


def _numbered(fit_callback: Callable[[int, Any], object], i: int) -> Callable[[Any], object]:
    """The fit callback of configuration ``i``: ``fit_callback(i, progress)``."""
    return lambda progress: fit_callback(i, progress)
