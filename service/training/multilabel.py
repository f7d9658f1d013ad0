"""Training on label sets (POST /train with ``"task": "multilabel"``; no HTTP here).

The model is okcore's :class:`~okcore.MultiLabelClassifier`: with ``model`` "auto" (the
default) okcore's own default, ``MultiLabelClassifier()`` (kernel ridge, OK3-et + OKBoost and
OK3 extra-trees stacked with the weights of least out-of-fold log-loss), else around the
named estimator. The model is fitted on the 0/1 label rows (linear output kernel), its
scores are mapped to [0, 1], and the decision thresholds are chosen by inner
cross-validation on the training rows only, for the requested metric, and for every other
measure too (``thresholds_by_metric``: /predict and /evaluate take a ``metric``). The
stored model is the estimator fitted on all rows (one model, or the weighted average of the
kept candidates) plus the stacking weights, the thresholds and the score map, kept in the
record's ``multilabel`` (service.store.composite rebuilds the classifier from them).

Progress: a named model's fits count their trees; the default's candidates differ in cost
(one kernel ridge stage against hundreds of trees), so each of its fits is planned as its
share of the job's estimated CPU (WORK_UNITS in all, unit "work"), which keeps the count
and the ETA proportional to the time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

import okcore
from service.errors import InvalidRequest
from service.jobs.progress import PhasePlan, cost_shares
from service.jobs.task import Cancelled, FitsProgress, Reporter
from service.schemas.multilabel import MIN_SPLITS, MultiLabelTrainRequest
from service.store.model_store import write_model
from service.training.budget import (
    JobEstimate,
    array_bytes,
    estimate_cv,
    estimate_fit,
)
from service.training.fit import (
    checked_estimator,
    float_list,
    output_space_summary,
    resolved_params,
)

LABEL_KERNEL = {"type": "linear"}
AUTO = "auto"
MAX_THRESHOLD_WORK = 2e10
"""Most comparisons one threshold search may make (okcore.multilabel.choose_thresholds:
G N L candidates for one threshold, 2 G N L^2 per label by coordinate ascent, G =
len(okcore.THRESHOLD_GRID)): about a minute of numpy. The trained metric's search over it is
refused; another measure's thresholds are then not stored."""
WORK_UNITS = 1000
"""The progress count of a job of the default's candidates (unit "work": thousandths of its
estimated CPU)."""


@dataclass
class MultiLabelPlan:
    """Everything a worker needs to fit and store one multi-label model (picklable)."""

    model: str  # "auto" or a name of okcore's registry
    params: dict[str, Any]
    options: dict[str, Any]  # MultiLabelClassifier's own parameters
    inputs: Any
    labels: np.ndarray
    ids: np.ndarray | None
    sample_weight: np.ndarray | None  # the fit's (okcore.check_sample_weight's: None unweighted)
    estimate: JobEstimate
    fits: list[int]  # the planned count of each fit in the order run (see `parts`)
    parts: list[str]  # the okcore ``part`` of each fit: inner folds (and candidates), finals
    first: JobEstimate  # the first fit the job runs (its set-up phases)
    unit: str | None = None  # "work" for the default's cost shares; None: trees
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """The job's progress counts the planned units of every fit."""
        return sum(self.fits)

    def phases(self) -> PhasePlan:
        """The first fit's set-up phases, then the time of one unit: the rest of the job's
        time over all its units (the later fits' set-up phases included)."""
        first = self.first.factor_seconds + self.first.setup_seconds
        per_tree = max(self.estimate.seconds - first, 0.0) / max(self.total, 1)
        return PhasePlan(
            self.first.factor_seconds, self.first.setup_seconds, per_tree, unit=self.unit or "tree"
        )


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


def _threshold_work(n: int, n_labels: int, metric: str, per_label: Any) -> float:
    """Comparisons of one threshold search (see MAX_THRESHOLD_WORK)."""
    by_label = okcore.thresholds_per_label(metric, per_label)
    ascent = by_label and metric not in ("macro_f1", "hamming_loss")  # not label by label
    return len(okcore.THRESHOLD_GRID) * n * n_labels * (2 * n_labels if ascent else 1)


def candidate_name(estimator: Any) -> str:
    """The registry name of an okcore estimator (its class's), for the record."""
    for name in okcore.estimator_names():
        if type(estimator) is okcore.estimator_class(name):
            return name
    return type(estimator).__name__


def _candidates(req: MultiLabelTrainRequest, n: int, weighted: bool) -> list[Any]:
    """Unfitted copies of the models the classifier fits: the default's candidates (auto;
    ``weighted``: for a fit with sample_weight), or the named estimator (its parameters
    checked by okcore: 422 on a bad one)."""
    if req.model == AUTO:
        default = okcore.MultiLabelClassifier(random_state=req.random_state)
        return default.candidate_models(n, weighted)
    return [checked_estimator(req.model, req.params)]


def _check_weighted_folds(req: MultiLabelTrainRequest, weight: np.ndarray) -> None:
    """The inner folds (okcore's ``kfold`` with the weights, as the classifier draws them)
    fit on rows of positive weight: a 422 on ``sample_weight`` before the job when too few
    rows have one."""
    try:
        okcore.model_selection.kfold(len(weight), req.n_splits, req.random_state, weight)
    except okcore.DataError as exc:
        raise InvalidRequest(
            f"sample_weight, split by the n_splits = {req.n_splits} inner folds that choose "
            f"the thresholds: {exc}",
            loc=["sample_weight"],
        ) from None


def _together(finals: list[JobEstimate]) -> JobEstimate:
    """The final fit of several candidates (the average of those kept): their seconds and
    disk add up, the memory is the largest (they are fitted one after another); stages as
    the candidate with the most, at the time per stage that makes the seconds add up."""
    if len(finals) == 1:
        return finals[0]
    seconds = sum(e.seconds for e in finals)
    factor = sum(e.factor_seconds for e in finals)
    setup = sum(e.setup_seconds for e in finals)
    trees = max(e.n_trees for e in finals)
    widest = max(finals, key=lambda e: e.memory_bytes)
    return replace(
        widest,
        rank=max(e.rank for e in finals),
        n_trees=trees,
        leaves=max(e.leaves for e in finals),
        factor_seconds=factor,
        setup_seconds=setup,
        tree_seconds=max(seconds - factor - setup, 0.0) / max(trees, 1),
        disk_bytes=sum(e.disk_bytes for e in finals),
    )


def _levers(req: MultiLabelTrainRequest, final: JobEstimate, inner: bool) -> str:
    """What a multi-label request can lower to make its job cheaper (the job limits' 422):
    the default takes no params, but a named model does; inner folds are ``n_splits``."""
    asks = (
        "fewer rows or labels, one named model (model) and its params"
        if req.model == AUTO
        else final.levers
    )
    return f"{asks}, fewer inner folds (n_splits)" if inner else asks


def _within_budget(estimate: JobEstimate, budget: float) -> JobEstimate:
    """The job's estimate under a CPU budget: its seconds scaled down to the fit's bound,
    (1 + BUDGET_TOLERANCE) x budget + BUDGET_SLACK_SECONDS, when they are over it."""
    bound = (1.0 + okcore.auto.BUDGET_TOLERANCE) * budget + okcore.auto.BUDGET_SLACK_SECONDS
    if estimate.seconds <= bound:
        return estimate
    f = bound / estimate.seconds
    return replace(
        estimate,
        factor_seconds=f * estimate.factor_seconds,
        setup_seconds=f * estimate.setup_seconds,
        tree_seconds=f * estimate.tree_seconds,
        cv_seconds=f * estimate.cv_seconds,
    )


def plan_multilabel(req: MultiLabelTrainRequest) -> MultiLabelPlan:
    """Check the estimator's parameters and cost the job: every inner fold fit of every
    candidate, then the final fits (of every candidate: which are kept is known only after
    the inner CV), each from the model's own cost function."""
    X, labels = req.inputs, req.labels
    n, n_labels = int(X.shape[0]), int(labels.shape[1])
    weight = okcore.check_sample_weight(req.sample_weight, n)  # None for all 1, as okcore's fit
    candidates = _candidates(req, n, weight is not None)
    if req.n_splits > n:
        fewer = f", or set n_splits to {n}" if n >= MIN_SPLITS else ""
        raise InvalidRequest(
            f"n_splits = {req.n_splits} inner folds need at least {req.n_splits} training "
            f"rows, and inputs has {n}: send at least {req.n_splits} rows{fewer} (each "
            "fold's scores choose the thresholds)",
            details=[{"loc": ["n_splits"], "msg": f"at most the {n} training rows"}],
        )
    work = _threshold_work(n, n_labels, req.metric, req.per_label)
    if req.threshold == "cv" and work > MAX_THRESHOLD_WORK:
        per_label = okcore.thresholds_per_label(req.metric, req.per_label)
        raise InvalidRequest(
            f"choosing {'one threshold per label' if per_label else 'the threshold'} for "
            f"{n_labels} labels over {n} rows would take {work:.3g} comparisons, over the "
            f"{MAX_THRESHOLD_WORK:.3g} a job may make: "
            + ("use one threshold for all labels (per_label false), " if per_label else "")
            + "give a fixed threshold, or train on fewer rows or labels"
        )
    options = {
        "scores": req.scores,
        "threshold": req.threshold,
        "per_label": req.per_label,
        "metric": req.metric,
        "threshold_rule": req.threshold_rule,
        "n_splits": req.n_splits,
        "random_state": req.random_state,
        "max_cpu_seconds": req.max_cpu_seconds,
    }
    data_bytes = sum(array_bytes(a) for a in (X, labels))
    finals = [estimate_fit(c, X, LABEL_KERNEL, n_labels, data_bytes) for c in candidates]
    estimate, first = _together(finals), finals[0]
    inner = req.threshold == "cv" or req.scores != "clip" or len(candidates) > 1
    if inner and weight is not None:
        _check_weighted_folds(req, weight)
    several = len(candidates) > 1
    folds: list[JobEstimate] = []
    parts: list[str] = []
    if inner:
        rows = np.broadcast_to(np.uint8(0), (n - n // req.n_splits, int(X.shape[1])))
        per_fold = [estimate_fit(c, rows, LABEL_KERNEL, n_labels, 0) for c in candidates]
        for k in range(req.n_splits):
            for j, e in enumerate(per_fold):
                folds.append(e)
                parts.append(f"fold {k + 1}" + (f", candidate {j + 1}" if several else ""))
        estimate, first = estimate_cv([estimate], folds, 0.0), per_fold[0]
    estimate = replace(estimate, levers=_levers(req, finals[0], inner))
    if req.max_cpu_seconds is not None:
        estimate = _within_budget(estimate, req.max_cpu_seconds)
    parts += [f"final, candidate {j + 1}" for j in range(len(candidates))] if several else ["final"]
    run = [*folds, *(finals if several else [finals[0]])]
    units = (
        cost_shares([e.seconds for e in run], WORK_UNITS) if several else [e.n_trees for e in run]
    )
    record = {
        "name": req.name,
        "status": "training",
        "created": time.time(),
        "model": req.model,
        "params": {} if req.model == AUTO else candidates[0].get_params(),
        "kernel": dict(LABEL_KERNEL),
        "n_train": n,
        "n_features": int(X.shape[1]),
        "output_dim": n_labels,
        "has_ids": req.ids is not None,
        "sample_weight": req.sample_weight is not None,
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
        req.model, dict(record["params"]), options, X, labels, req.ids, weight,
        estimate, units, parts, first, "work" if several else None, record,
    )  # fmt: skip


class _Heard:
    """okcore's fit callback mapped onto the job's fits: the part names the fit, except that
    the final average's members all report as "final" one after another (a member starts
    when a set-up phase follows trees); they are the candidates of non-zero weight."""

    def __init__(self, plan: MultiLabelPlan, fits: FitsProgress, model: Any) -> None:
        self.index = {part: i for i, part in enumerate(plan.parts)}
        self.fits, self.model = fits, model
        self.member, self.last_phase = 0, ""

    def __call__(self, p: okcore.FitProgress) -> None:
        part = p.part or "final"
        if part == "final" and part not in self.index:
            if self.last_phase == "trees" and p.phase != "trees":
                self.member += 1
            self.last_phase = p.phase
            kept = np.flatnonzero(np.asarray(self.model.weights_) > 0)
            part = f"final, candidate {int(kept[self.member]) + 1}"
        self.fits.fit(self.index[part], p)


def _leaderboard(classifier: okcore.MultiLabelClassifier, candidates: list[Any]) -> list[dict]:
    """One row per candidate: its name, estimator, stacking weight and budget status
    (fitted, capped, or skipped and why: okcore's ``candidates_``)."""
    return [
        {"candidate": candidate_name(c), **row}
        for c, row in zip(candidates, classifier.candidates_, strict=True)
    ]


def thresholds_by_metric(
    classifier: okcore.MultiLabelClassifier, n: int, per_label: Any
) -> dict[str, list[float]] | None:
    """Every measure's thresholds from the fit's out-of-fold scores (okcore's
    ``thresholds_for``), those whose search fits MAX_THRESHOLD_WORK; None without
    out-of-fold scores (a named model with clipped scores and a fixed threshold)."""
    if classifier.oof_scores_ is None:
        return None
    n_labels = int(classifier.n_labels_)
    return {
        m: [float(t) for t in classifier.thresholds_for(m, per_label)]
        for m in okcore.THRESHOLD_METRICS
        if _threshold_work(n, n_labels, m, per_label) <= MAX_THRESHOLD_WORK
    }


def run_multilabel(plan: MultiLabelPlan, root: Path, model_id: str, progress: Reporter) -> str:
    """Fit (inner CV and final fits), store. Returns "done", "cancelled" or "deleted".
    Progress counts the planned units of every fit (each inner fold's, then the final
    ones'), with each fit's set-up phases; a cancel is heard after the current tree."""
    started = time.perf_counter()
    fits = FitsProgress(progress, plan.fits, unit=plan.unit)
    if plan.model == AUTO:
        template: Any = None
        default = okcore.MultiLabelClassifier(random_state=plan.options["random_state"])
        candidates = default.candidate_models(
            int(plan.inputs.shape[0]), plan.sample_weight is not None
        )
    else:
        template = okcore.make_estimator(plan.model, plan.params)
        candidates = [template]
    classifier = okcore.MultiLabelClassifier(template, **plan.options)
    heard = _Heard(plan, fits, classifier)
    try:
        classifier.fit(plan.inputs, plan.labels, plan.sample_weight, callback=heard)
        if fits.reported < plan.total:  # the last candidates got weight 0: not refitted
            fits.fit(len(plan.fits) - 1, okcore.FitProgress(done=1, total=1, elapsed=0.0))
    except Cancelled:
        return "cancelled"
    inner: Any = classifier.estimator_
    info = dict(plan.record["multilabel"])
    info["thresholds"] = [float(t) for t in classifier.thresholds_]
    sigmoid = classifier.sigmoid_
    info["sigmoid"] = None if sigmoid is None else np.asarray(sigmoid, dtype=float).tolist()
    info["thresholds_by_metric"] = thresholds_by_metric(
        classifier, int(plan.inputs.shape[0]), plan.options["per_label"]
    )
    info["weights"] = [float(w) for w in classifier.weights_]
    loss = classifier.oof_log_loss_
    info["oof_log_loss"] = None if loss is None else float(loss)
    info["leaderboard"] = _leaderboard(classifier, candidates)
    info["cpu_seconds"] = float(classifier.cpu_seconds_)
    record = dict(plan.record)
    record.update(
        status="ready",
        fit_time=time.perf_counter() - started,
        n_estimators=None if plan.model == AUTO else int(inner.n_estimators_),
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
