"""Label sets and their scores from a multi-label model (POST /predict and /evaluate on a
model trained with ``"task": "multilabel"``; no HTTP here).

Scores are okcore's ``predict_proba`` (in [0, 1]), label sets the scores at or above each
label's threshold (the trained measure's, or with ``metric`` another measure's, kept in the
record); the measures are okcore.metrics' (those of thresholded label rows on the
label sets, the ranking ones on the scores).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from okcore import metrics
from service.errors import InvalidRequest
from service.inference.predict import check_dense, check_features
from service.schemas.api import PredictRequest
from service.schemas.evaluate import EvaluateRequest
from service.schemas.multilabel import not_label_rows
from service.store.model_store import LoadedModel

THRESHOLDED = ("hamming_loss", "subset_accuracy", "micro_f1", "macro_f1")
RANKED = ("ranking_loss", "one_error", "coverage", "label_ranking_average_precision")


def is_multilabel(m: LoadedModel) -> bool:
    return m.record.get("task") == "multilabel"


def _refuse(fields: list[str], route: str) -> None:
    if fields:
        raise InvalidRequest(
            f"{', '.join(fields)} do not apply to a multi-label model: {route} answers label "
            "scores and label sets for `inputs`"
        )


def refuse_metric(metric: str | None, route: str) -> None:
    """A ``metric`` sent to a model that is not multi-label: 422."""
    if metric is not None:
        raise InvalidRequest(
            f"metric applies to multi-label models only (the measure whose thresholds "
            f"decide the label sets): leave it out of {route} for this model"
        )


def _same(value: Any, default: Any) -> bool:
    return not isinstance(value, np.ndarray) and bool(value == default)


def thresholds(m: LoadedModel, metric: str | None) -> tuple[np.ndarray, str]:
    """(The L thresholds, the measure they are for): the trained measure's, or those the
    record keeps for ``metric`` (chosen at training from the same out-of-fold scores)."""
    info = m.record["multilabel"]
    trained = str(info["metric"])
    if metric is None or metric == trained:
        return np.asarray(m.task_model.thresholds_, dtype=float), trained
    by_metric = info.get("thresholds_by_metric")
    if not by_metric or metric not in by_metric:
        retrain = f"train with metric {metric!r}"
        fixed = info.get("threshold", "cv")
        own = f"the model's {trained!r}" if fixed == "cv" else f"its fixed threshold {fixed}"
        if "thresholds_by_metric" not in info:
            why = "it was trained before other measures' thresholds were stored"
        elif not by_metric:
            why = "it was trained without out-of-fold scores (fixed threshold, clipped scores)"
            retrain = f'train with threshold "cv" and metric {metric!r} (or scores "label_sigmoid")'
        else:
            why = "their search was too large for the job"
        raise InvalidRequest(
            f"this model has no thresholds for metric {metric!r}: {why}. Leave metric out "
            f"({own}), or {retrain}"
        )
    return np.asarray(by_metric[metric], dtype=float), metric


def _scores(
    m: LoadedModel, inputs: Any, max_dense: int, metric: str | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """(Label scores, 0/1 label rows, the thresholds, their measure)."""
    check_features(m, inputs, "inputs")
    n_labels = int(m.record["multilabel"]["n_labels"])
    check_dense(inputs.shape[0], n_labels, max_dense, "the label scores (Q x L)",
                "send fewer rows per request")  # fmt: skip
    cut, measure = thresholds(m, metric)
    proba = np.asarray(m.task_model.predict_proba(inputs), dtype=float)
    return proba, (proba >= cut).astype(np.int64), cut, measure


def predict(m: LoadedModel, req: PredictRequest, *, max_dense: int) -> dict[str, Any]:
    """Label scores in [0, 1], 0/1 label rows and, with label names, each row's label set."""
    defaults = {name: f.default for name, f in PredictRequest.model_fields.items()}
    changed = [
        name
        for name in (
            "top_k",
            "return_outputs",
            "weights",
            "weights_top_k",
            "candidates",
            "candidate_gram",
            "candidate_diag",
        )  # fmt: skip
        if getattr(req, name) is not None and not _same(getattr(req, name), defaults[name])
    ]
    _refuse(changed, "/predict")
    if req.ids is not None and req.ids.shape[0] != req.inputs.shape[0]:
        raise InvalidRequest(
            f"ids has {req.ids.shape[0]} entries but inputs has {req.inputs.shape[0]} rows"
        )
    proba, labels, cut, measure = _scores(m, req.inputs, max_dense, req.metric)
    info = m.record["multilabel"]
    names = info.get("label_names")
    return {
        "model_id": m.model_id,
        "task": "multilabel",
        "probabilities": proba,
        "labels": labels,
        "label_names": names,
        "label_sets": None
        if names is None
        else [[names[j] for j in np.flatnonzero(row)] for row in labels],
        "thresholds": cut,
        "metric": measure,
        "ids": None if req.ids is None else req.ids.tolist(),
    }


def by_label_name(names: list[str] | None, truth: np.ndarray, columns: list[str] | None) -> Any:
    """The true label rows with their columns in the model's label order: ``columns`` (the
    names of the columns of ``outputs``, a table's header) matched to the model's label
    ``names`` by name; as sent when either has no names. 422 for a name that is not one of
    the model's labels, or a label named twice: a column read as another label would be
    scored silently."""
    if names is None or columns is None or list(columns) == list(names):
        return truth
    unknown = [c for c in columns if c not in names]
    if unknown or len(set(columns)) != len(columns) or len(columns) != truth.shape[1]:
        what = f"names {unknown}, not labels of this model" if unknown else "a label twice"
        raise InvalidRequest(
            f"output_columns (the header of outputs) has {what}: name the columns by the "
            f"model's labels {names}, in any order, or send outputs without a header (its "
            "columns are then the labels in the model's order)"
        )
    return truth[:, [list(columns).index(name) for name in names]]


def evaluate(m: LoadedModel, req: EvaluateRequest, *, max_dense: int) -> dict[str, Any]:
    """The multi-label measures of the model on test inputs with their true 0/1 label rows
    (``outputs``)."""
    _refuse(
        [f for f in ("gram_cross", "gram_diag", "edges") if getattr(req, f) is not None],
        "/evaluate",
    )
    if req.outputs is None:
        raise InvalidRequest(
            "a multi-label model is evaluated against the test rows' true labels: send "
            "outputs, Q x L 0/1 label rows"
        )
    truth = req.outputs
    n_labels = int(m.record["multilabel"]["n_labels"])
    if truth.shape[1] != n_labels:
        raise InvalidRequest(
            f"outputs has {truth.shape[1]} columns but the model has {n_labels} labels"
        )
    problem = not_label_rows("outputs", truth)
    if problem:
        raise InvalidRequest(problem)
    truth = by_label_name(m.record["multilabel"].get("label_names"), truth, req.output_columns)
    proba, labels, _, _ = _scores(m, req.inputs, max_dense, req.metric)
    out: dict[str, Any] = {"model_id": m.model_id, "task": "multilabel", "n_test": len(truth)}
    for name in THRESHOLDED:
        out[name] = float(metrics.MULTILABEL_METRICS[name][0](truth, labels))
    for name in RANKED:
        out[name] = float(metrics.MULTILABEL_METRICS[name][0](truth, proba))
    return out
