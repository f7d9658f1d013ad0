"""Training on label sets (POST /train with ``"task": "multilabel"``; no HTTP here).

The model is okcore's :class:`~okcore.MultiLabelClassifier` around the requested estimator:
the estimator is fitted on the 0/1 label rows (linear output kernel), its scores are mapped
to [0, 1], and the decision threshold (one, or one per label) is chosen by inner
cross-validation on the training rows only, for the requested metric. The stored model is
the estimator fitted on all rows plus the thresholds and the score map, kept in the
record's ``multilabel`` (service.store.composite rebuilds the classifier from them).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import okcore
from service.errors import InvalidRequest
from service.jobs.progress import PhasePlan
from service.jobs.task import Cancelled, FitsProgress, Reporter
from service.schemas.multilabel import MultiLabelTrainRequest
from service.store.model_store import write_model
from service.training.budget import JobEstimate, array_bytes, estimate_cv, estimate_job
from service.training.fit import (
    checked_estimator,
    float_list,
    output_space_summary,
    resolved_params,
)

LABEL_KERNEL = {"type": "linear"}
MAX_THRESHOLD_WORK = 2e10
"""Most comparisons the threshold search may make (okcore.multilabel.choose_thresholds:
G N L candidates for one threshold, 2 G N L^2 per label, G = len(okcore.THRESHOLD_GRID)): about a minute of numpy."""


@dataclass
class MultiLabelPlan:
    """Everything a worker needs to fit and store one multi-label model (picklable)."""

    model: str
    params: dict[str, Any]
    options: dict[str, Any]  # MultiLabelClassifier's own parameters
    inputs: Any
    labels: np.ndarray
    ids: np.ndarray | None
    estimate: JobEstimate
    fits: list[int]  # the trees of each fit in the order run: the inner folds', the final's
    first: JobEstimate  # the first fit the job runs (its set-up phases)
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """The job's progress counts the trees of every fit."""
        return sum(self.fits)

    def phases(self) -> PhasePlan:
        """The first fit's set-up phases, then the time of one tree: the rest of the job's
        time over all its trees (the later fits' set-up phases included)."""
        first = self.first.factor_seconds + self.first.setup_seconds
        per_tree = max(self.estimate.seconds - first, 0.0) / max(self.total, 1)
        return PhasePlan(self.first.factor_seconds, self.first.setup_seconds, per_tree)


def label_warnings(labels: np.ndarray) -> list[str]:
    """Labels that no training row has, or that every row has (their threshold and their
    F1 rest on nothing)."""
    counts = labels.sum(axis=0)
    out = []
    never, always = int((counts == 0).sum()), int((counts == labels.shape[0]).sum())
    if never:
        out.append(f"{never} label{' is' if never == 1 else 's are'} on no training row")
    if always:
        out.append(f"{always} label{' is' if always == 1 else 's are'} on every training row")
    return out


def plan_multilabel(req: MultiLabelTrainRequest) -> MultiLabelPlan:
    """Check the estimator's parameters and cost the job (the inner CV's fits included)."""
    est = checked_estimator(req.model, req.params)
    params = est.get_params()
    X, labels = req.inputs, req.labels
    n, n_labels = int(X.shape[0]), int(labels.shape[1])
    if req.n_splits > n:
        raise okcore.DataError(f"n_splits = {req.n_splits} but there are only {n} training rows")
    work = len(okcore.THRESHOLD_GRID) * n * n_labels * (2 * n_labels if req.per_label else 1)
    if req.threshold == "cv" and work > MAX_THRESHOLD_WORK:
        raise InvalidRequest(
            f"choosing {'one threshold per label' if req.per_label else 'the threshold'} for "
            f"{n_labels} labels over {n} rows would take {work:.3g} comparisons, over the "
            f"{MAX_THRESHOLD_WORK:.3g} a job may make: "
            + ("use one threshold for all labels (per_label false), " if req.per_label else "")
            + "give a fixed threshold, or train on fewer rows or labels"
        )
    options = {
        "scores": req.scores,
        "threshold": req.threshold,
        "per_label": req.per_label,
        "metric": req.metric,
        "n_splits": req.n_splits,
        "random_state": req.random_state,
    }
    data_bytes = sum(array_bytes(a) for a in (X, labels))
    final = estimate_job(req.model, params, X, LABEL_KERNEL, n_labels, data_bytes)
    inner = req.threshold == "cv" or req.scores == "sigmoid"
    estimate, fits, first = final, [final.n_trees], final
    if inner:
        rows = np.broadcast_to(np.uint8(0), (n - n // req.n_splits, int(X.shape[1])))
        fold = estimate_job(req.model, params, rows, LABEL_KERNEL, n_labels, 0)
        estimate = estimate_cv([final], [fold] * req.n_splits, 0.0)
        fits, first = [fold.n_trees] * req.n_splits + fits, fold
    record = {
        "name": req.name,
        "status": "training",
        "created": time.time(),
        "model": req.model,
        "params": params,
        "kernel": dict(LABEL_KERNEL),
        "n_train": n,
        "n_features": int(X.shape[1]),
        "output_dim": n_labels,
        "has_ids": req.ids is not None,
        "warnings": okcore.model_selection.training_warnings(n) + label_warnings(labels),
        "task": "multilabel",
        "multilabel": {
            "n_labels": n_labels,
            "label_names": req.label_names,
            **options,
            "thresholds": None,
            "sigmoid": None,
        },
    }
    return MultiLabelPlan(
        req.model, params, options, X, labels, req.ids, estimate, fits, first, record
    )


def run_multilabel(plan: MultiLabelPlan, root: Path, model_id: str, progress: Reporter) -> str:
    """Fit (inner CV and final fit), store. Returns "done", "cancelled" or "deleted".
    Progress counts the trees of every fit (each inner fold's, then the final one's), with
    each fit's set-up phases; a cancel is heard after the current tree."""
    started = time.perf_counter()
    fits = FitsProgress(progress, plan.fits)
    order = {f"fold {k + 1}": k for k in range(len(plan.fits) - 1)}
    order["final"] = len(plan.fits) - 1

    def heard(p: okcore.FitProgress) -> None:
        fits.fit(order[p.part or "final"], p)

    template = okcore.make_estimator(plan.model, plan.params)
    classifier = okcore.MultiLabelClassifier(template, **plan.options)
    try:
        classifier.fit(plan.inputs, plan.labels, callback=heard)
    except Cancelled:
        return "cancelled"
    inner = classifier.estimator_
    info = dict(plan.record["multilabel"])
    info["thresholds"] = [float(t) for t in classifier.thresholds_]
    info["sigmoid"] = None if classifier.sigmoid_ is None else list(classifier.sigmoid_)
    record = dict(plan.record)
    record.update(
        status="ready",
        fit_time=time.perf_counter() - started,
        n_estimators=int(inner.n_estimators_),
        train_loss=float_list(getattr(inner, "train_loss_", None)),
        output_space=output_space_summary(inner.output_space_),
        resolved_params=resolved_params(inner),
        multilabel=info,
        error=None,
    )
    progress.saving()
    labels = np.ascontiguousarray(plan.labels, dtype=np.float64)
    if not write_model(root, model_id, inner, plan.inputs, labels, record, plan.ids):
        return "deleted"
    return "done"
