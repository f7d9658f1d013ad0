"""Models made of okcore estimators (bipartite networks, multi-label classifiers) in the
store's model folder, as data (no pickle).

A composite model keeps the store's layout for its primary estimator, so that everything
that reads a folder (loads, archives) finds what it expects, and adds files beside it:

- bipartite: ``estimator/`` is the row model (row inputs -> interaction profiles over the
  known columns), ``inputs.npy`` the row inputs, ``outputs.npy`` the n_rows x n_cols
  interaction matrix Y (the row model's outputs), ``ids.json`` the row ids; beside them
  ``col_estimator/`` (the column model, fitted on Y^T), ``col_inputs.npy`` (or
  ``col_inputs.npz``, sparse) and ``col_ids.json``;
- bipartite with model "auto" (okcore's default, a rank average of bipartite models):
  ``estimator/`` is the whole fitted ``BipartiteRegressor`` (okcore's format for bipartite
  models: the rank average and every member in folders of their own, each member keeping
  the inputs it predicts with), ``inputs.npy`` the row inputs, ``outputs.npy`` the learnt
  interactions, ``ids.json`` the row ids; beside them ``col_ids.json``;
- multi-label: ``estimator/`` is the inner regressor fitted on the 0/1 label rows
  (``outputs.npy``): the named model, or for the default ("auto") the weighted average of
  its kept candidates (okcore.save stores an AveragedRegressor as a composite); the
  stacking weights, the thresholds (of the trained measure and of every other), the threshold
  rule and the score map (one (a, b), or one per label) are in the record's ``multilabel``.
  Records written before the default have no weights, rule nor other measures'
  thresholds, and scores "clip" or "sigmoid": they load as they were written.

:func:`rebuild` turns the files and the record back into okcore's fitted
``BipartiteRegressor`` / ``MultiLabelClassifier`` by their documented fitted attributes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

import okcore
from service.vertex_ids import VertexIds, as_id_array

COL_ESTIMATOR = "col_estimator"
COL_INPUTS = "col_inputs.npy"
COL_SPARSE_INPUTS = "col_inputs.npz"  # sparse (CSR) column features, scipy's format
COL_IDS = "col_ids.json"


def write_bipartite_extra(
    folder: Path, model: okcore.bipartite.BipartiteRegressor, col_ids: np.ndarray | None
) -> None:
    """The column side's files of a fitted bipartite model (the row side is the store's)."""
    okcore.save(model.col_model_, folder / COL_ESTIMATOR)
    if sp.issparse(model.X_cols_):
        sp.save_npz(folder / COL_SPARSE_INPUTS, sp.csr_matrix(model.X_cols_), compressed=False)
    else:
        np.save(folder / COL_INPUTS, np.ascontiguousarray(model.X_cols_), allow_pickle=False)
    if col_ids is not None:
        with (folder / COL_IDS).open("w", encoding="utf-8") as fh:
            json.dump(col_ids.tolist(), fh, ensure_ascii=False)


def write_default_extra(folder: Path, col_ids: np.ndarray | None) -> None:
    """The files beside a bipartite default model (okcore saves the model whole)."""
    if col_ids is not None:
        with (folder / COL_IDS).open("w", encoding="utf-8") as fh:
            json.dump(col_ids.tolist(), fh, ensure_ascii=False)


def is_default(record: dict[str, Any]) -> bool:
    """Whether a model record is a bipartite default (model "auto"), saved whole."""
    return record.get("task") == "bipartite" and record.get("model") == "auto"


def _rebuild_default(
    folder: Path, estimator: Any, inputs: Any, outputs: Any
) -> tuple[Any, VertexIds | None]:
    """The loaded default, checked against the store's files."""
    if (
        not isinstance(estimator, okcore.bipartite.BipartiteRegressor)
        or getattr(estimator, "default_model_", None) is None
    ):
        raise ValueError("a bipartite model 'auto' holds okcore's default bipartite model")
    if outputs is None or outputs.shape != estimator.Y_.shape:
        raise ValueError("outputs.npy does not hold the model's interactions")
    if inputs.shape[0] != estimator.n_rows_:
        raise ValueError("the row inputs do not match the interactions")
    col_ids = _col_ids(folder)
    if col_ids is not None and len(col_ids) != estimator.n_cols_:
        raise ValueError("the column ids do not match the interactions")
    return estimator, col_ids


def _col_ids(folder: Path) -> VertexIds | None:
    path = folder / COL_IDS
    if not path.exists():
        return None
    with path.open(encoding="utf-8") as fh:
        return VertexIds(as_id_array(json.load(fh), COL_IDS))


def _multilabel(
    record: dict[str, Any], estimator: Any, outputs: np.ndarray
) -> okcore.MultiLabelClassifier:
    """The fitted MultiLabelClassifier of a multi-label record and its estimator."""
    info = record["multilabel"]
    auto = record["model"] == "auto"
    ml = okcore.MultiLabelClassifier(
        None if auto else okcore.make_estimator(record["model"], record["params"]),
        scores=info["scores"],
        threshold=info["threshold"],
        per_label=info["per_label"],
        metric=info["metric"],
        threshold_rule=info.get("threshold_rule", "auto"),
        n_splits=info["n_splits"],
        random_state=info["random_state"],
        max_cpu_seconds=info.get("max_cpu_seconds"),
    )
    n_labels = outputs.shape[1]
    thresholds = np.asarray(info["thresholds"], dtype=np.float64)
    if thresholds.shape != (n_labels,):
        raise ValueError("the record's thresholds do not match the labels")
    by_metric = info.get("thresholds_by_metric") or {}
    if any(np.shape(t) != (n_labels,) for t in by_metric.values()):
        raise ValueError("the record's thresholds of the other measures do not match the labels")
    sigmoid: Any = None
    if info["sigmoid"] is not None:
        sigmoid = np.asarray(info["sigmoid"], dtype=np.float64)
        if sigmoid.shape not in ((2,), (n_labels, 2)):
            raise ValueError("the record's score map does not match the labels")
        sigmoid = tuple(sigmoid.tolist()) if sigmoid.ndim == 1 else sigmoid
    weights = info.get("weights")
    ml.estimator_, ml.thresholds_, ml.n_labels_ = estimator, thresholds, n_labels
    ml.sigmoid_ = sigmoid
    names = info.get("label_names")
    ml.label_names_ = None if names is None else [str(name) for name in names]
    ml.weights_ = np.ones(1) if weights is None else np.asarray(weights, dtype=np.float64)
    ml.oof_log_loss_ = info.get("oof_log_loss")
    ml.oof_scores_ = None
    ml.resolved_params_ = dict(getattr(estimator, "resolved_params_", {}))
    return ml


def rebuild(
    folder: Path, record: dict[str, Any], estimator: Any, inputs: Any, outputs: Any
) -> tuple[Any, VertexIds | None]:
    """(The fitted composite model, the column ids) of a bipartite or multi-label model
    folder; (None, None) for a structured-output model. Raises ValueError when the files
    disagree with the record (okcore.PersistenceError for a damaged estimator)."""
    task = record.get("task", "structured")
    if task == "structured":
        return None, None
    if is_default(record):
        return _rebuild_default(folder, estimator, inputs, outputs)
    template = okcore.make_estimator(record["model"], record["params"])
    if outputs is None:
        raise ValueError(f"a {task} model needs outputs.npy")
    if task == "multilabel":
        return _multilabel(record, estimator, outputs), None
    info = record["bipartite"]
    col_model = okcore.load(folder / COL_ESTIMATOR)
    sparse_path = folder / COL_SPARSE_INPUTS
    col_inputs: Any = (
        sp.load_npz(sparse_path).tocsr()
        if sparse_path.exists()
        else np.load(folder / COL_INPUTS, allow_pickle=False)
    )
    if col_inputs.shape[0] != outputs.shape[1] or inputs.shape[0] != outputs.shape[0]:
        raise ValueError("the column inputs or the row inputs do not match the interactions")
    col_ids = _col_ids(folder)
    if col_ids is not None and len(col_ids) != outputs.shape[1]:
        raise ValueError("the column ids do not match the interactions")
    bip = okcore.bipartite.BipartiteRegressor(template, new_pairs=info["new_pairs"])
    bip.row_model_, bip.col_model_, bip.Y_ = estimator, col_model, outputs
    bip.n_rows_, bip.n_cols_ = outputs.shape
    bip.X_rows_, bip.X_cols_ = inputs, col_inputs
    return bip, col_ids
