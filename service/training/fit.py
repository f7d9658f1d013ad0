"""From a validated TrainRequest to an okcore fit and a stored model (no HTTP here)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

import okcore
from service.errors import InvalidParameter, InvalidRequest
from service.http.arrays import missing_problem
from service.jobs.progress import PhasePlan
from service.jobs.task import Reporter
from service.schemas.api import TrainRequest, default_model_note
from service.store.model_store import write_model
from service.training.auto import (
    check_auto,
    check_input_width,
    planned_candidates,
    width_from_inputs,
)
from service.training.budget import JobEstimate, array_bytes, estimate_job
from service.training.cv import (
    CVPlan,
    CVProgress,
    estimator_params,
    plan_cv,
    run_cv,
    similarity_map,
)


@dataclass
class TrainPlan:
    """Everything a worker needs to fit and store one model."""

    model: str
    estimator: Any
    inputs: Any  # (N, p) ndarray or scipy.sparse CSR matrix
    outputs: np.ndarray | None
    fit_kwargs: dict[str, Any]
    kernel: dict[str, Any]  # summary for the record (no data arrays)
    total: int
    estimate: JobEstimate  # its cost (service.budget), checked against the limits
    record: dict[str, Any] = field(default_factory=dict)
    ids: np.ndarray | None = None  # names of the training vertices, when given
    cv: CVPlan | None = None  # cross-validation before the fit (service.cv), when asked

    def phases(self) -> PhasePlan:
        """The estimated seconds of each phase, for the job's ETA (the automatic choice
        counts candidate fits)."""
        phases = self.estimate.phases()
        return replace(phases, unit=okcore.auto.SELECTION_UNIT) if self.model == "auto" else phases


def checked_estimator(
    model: str, params: dict[str, Any], note: str | None = None
) -> okcore.OKEstimator:
    """The estimator through okcore's public registry, every parameter checked now (422
    before queueing, not a failed job later). ``note``: why a request naming no model got
    ``model`` (:func:`~service.schemas.api.default_model_note`), said with an unknown name
    and what to send instead."""
    try:
        okcore.check_parameter_names(model, params)
    except okcore.UnknownParameterError as err:
        unknown = err.unknown
        names = ", ".join(repr(u) for u in unknown)
        said = f"unknown parameter{'s' if len(unknown) > 1 else ''} {names} for model '{model}'"
        valid = ", ".join(err.valid)
        message = (
            f"{said}; valid parameters: {valid}"
            if note is None
            else f"{said}: {note}. Name the model you mean with `model`, or fix or drop "
            f"{names} and use {model}'s parameters: {valid}"
        )
        raise InvalidRequest(
            message,
            details=[{"loc": ["params", u], "msg": "unknown parameter"} for u in unknown],
        ) from None
    if params.get("warm_start"):
        raise InvalidRequest(
            "params.warm_start continues an estimator fitted in the same process; every "
            "/train job fits a new model, so there is nothing to continue: leave warm_start "
            "out, and train with the larger n_estimators (a cv with search 'halving' "
            "continues its candidates' fits by itself)",
            details=[{"loc": ["params", "warm_start"], "msg": "not available over HTTP"}],
        )
    try:
        return okcore.make_estimator(model, params)
    except okcore.InvalidParameterError as exc:  # a bad value: okcore's words, on params
        raise InvalidParameter(str(exc), loc=["params"]) from None


def _similarity_estimator(
    req: TrainRequest, est: okcore.OKEstimator
) -> tuple[okcore.OKEstimator, str]:
    """The estimator for ``input_kind`` "similarity" and how it reads the similarity: a
    kernel model takes it as its input kernel ("precomputed", unless the params chose
    another input kernel), any other model through okcore.SimilarityInputs with the
    ``input_map``. 422 now for a map a kernel model would not use, or an asymmetric
    similarity given as an input kernel."""
    params = est.get_params()
    kernel_model = "input_kernel" in params
    if kernel_model and req.params.get("input_kernel", "precomputed") == "precomputed":
        if req.input_map is not None:
            raise InvalidRequest(
                f"model '{req.model}' uses the similarity as its input kernel: leave out "
                "input_map (it applies to tree models), or set params.input_kernel to 'rbf' "
                "or 'linear' to read the similarity through the map",
                details=[{"loc": ["input_map"], "msg": "not used by kernel models"}],
            )
        try:
            okcore.check_gram(req.inputs)  # square, finite, symmetric: O(N^2)
        except okcore.KernelError as exc:
            raise InvalidRequest(
                f"inputs as an input kernel: {exc} (symmetrise it, e.g. (S + S^T) / 2)"
            ) from None
        est.set_params(input_kernel="precomputed")
        return est, "input_kernel"
    input_map = req.input_map or "kernel_map"
    wrapped = okcore.SimilarityInputs(est, map=input_map, n_components=req.input_components)
    return wrapped, input_map


def data_warnings(req: TrainRequest) -> list[str]:
    """What is degenerate about the training data (okcore says what, this lists it): too
    few rows, CV folds too small for their scores, and for a graph no edges, self-loops,
    duplicate or dropped edges, isolated vertices."""
    n = int(req.inputs.shape[0])
    out = okcore.model_selection.training_warnings(n, None if req.cv is None else req.cv.folds)
    return out + req.output_kernel.data_warnings(n)


def symmetric_similarity(S: np.ndarray, what: str) -> tuple[np.ndarray, list[str]]:
    """A training similarity made symmetric, with the warning the model's record keeps when
    it was not: published drug similarities (SIMCOMP's) are asymmetric, and their protocol
    uses (S + S^T) / 2. O(N^2)."""
    gap = float(np.abs(S - S.T).max()) if S.size else 0.0
    if gap <= 1e-12 * max(1.0, float(np.abs(S).max())):
        return S, []
    warning = (
        f"{what} was not symmetric (largest |S - S^T| = {gap:.3g}): it was symmetrised as "
        "(S + S^T) / 2 before training; send a symmetric similarity to train on your own"
    )
    return 0.5 * (S + S.T), [warning]


def _refuse_missing(req: TrainRequest, est: okcore.OKEstimator) -> None:
    """A 422 now for missing input values (NaN) that the model or a similarity cannot take
    (:func:`~service.http.arrays.missing_problem`); trees take them."""
    sent = [("inputs", req.inputs)]
    if req.eval_set is not None:
        sent.append(("eval_set.inputs", req.eval_set.inputs))
    accepts = bool(getattr(est, "accepts_missing", False))
    for name, arr in sent:
        problem = missing_problem(arr, name, req.model, accepts, req.input_kind == "similarity")
        if problem is not None:
            raise InvalidRequest(problem, details=[{"loc": [name], "msg": "missing values"}])


def plan_training(req: TrainRequest) -> TrainPlan:
    """Check what can be checked before queueing (names, kernel spec) and build the plan."""
    est = checked_estimator(req.model, req.params, default_model_note(req))
    _refuse_missing(req, est)
    input_map, symmetrised = None, list[str]()
    if req.input_kind == "similarity":
        req.inputs, symmetrised = symmetric_similarity(req.inputs, "the similarity (inputs)")
        est, input_map = _similarity_estimator(req, est)
    spec = req.output_kernel
    outputs, fit_kwargs, summary = spec.outputs_array(), spec.fit_kwargs(), spec.summary()
    if "gram" in fit_kwargs:
        # square, finite, symmetric: O(N^2), so 422 now; PSD needs the O(N^3)
        # factorisation that fit does anyway, so a non-PSD matrix fails the job instead.
        okcore.check_gram(fit_kwargs["gram"])
    if "kernel" in fit_kwargs:
        okcore.make_kernel(fit_kwargs["kernel"])  # KernelError -> 422 now, not in the job
    if req.model == "auto":
        check_auto(est, req.inputs, spec.FORM, outputs, req.sample_weight)
    if req.input_kind == "features" and width_from_inputs(estimator_params(est)):
        check_input_width(
            f"model '{req.model}'",
            req.inputs,
            "give params.gamma (a number > 0), or send more training rows with different inputs",
            ["params", "gamma"],
        )
    if outputs is not None and "kernel" in fit_kwargs:
        fit_kwargs["Y"] = outputs
    if req.sample_weight is not None:
        fit_kwargs["sample_weight"] = req.sample_weight
    if req.output_weight is not None:
        fit_kwargs["output_weight"] = req.output_weight
    if req.eval_set is not None:
        ev = req.eval_set
        if ev.outputs is not None:
            fit_kwargs["eval_set"] = (ev.inputs, ev.outputs)
        elif ev.gram_cross is not None and ev.gram_diag is not None:
            fit_kwargs["eval_set"] = (ev.inputs, ev.gram_cross, ev.gram_diag)
        else:
            raise InvalidRequest("eval_set needs outputs, or gram_cross and gram_diag")
    record = {
        "name": req.name,
        "status": "training",
        "created": time.time(),
        "model": req.model,
        "params": estimator_params(est),
        "input_kind": req.input_kind,
        "input_map": input_map,
        "kernel": summary,
        "n_train": int(req.inputs.shape[0]),
        "n_features": int(req.inputs.shape[1]),
        "output_dim": None if outputs is None else int(outputs.shape[1]),
        "has_ids": req.ids is not None,
        "sample_weight": req.sample_weight is not None,
        "warnings": symmetrised + data_warnings(req),
    }
    sent = [req.inputs, *spec.arrays(), *fit_kwargs.get("eval_set", ())]
    n_outputs = None if outputs is None else int(outputs.shape[1])
    data_bytes = sum(array_bytes(a) for a in sent)
    estimate = estimate_job(
        req.model, estimator_params(est), req.inputs, fit_kwargs.get("kernel"), n_outputs,
        data_bytes, similarity_map(est),
    )  # fmt: skip
    total = estimate.n_trees  # the estimator's stages on these rows ("auto" resolved)
    if req.model == "auto":
        total = planned_candidates(est, int(req.inputs.shape[0]))
    cv = None
    if req.cv is not None:
        cv = plan_cv(req, est, fit_kwargs, n_outputs, data_bytes)
        estimate, total = cv.estimate, cv.total
    return TrainPlan(
        req.model,
        est,
        req.inputs,
        outputs,
        fit_kwargs,
        summary,
        total,
        estimate,
        record,
        req.ids,
        cv,
    )


def float_list(value: Any) -> list[float] | None:
    if value is None:
        return None
    return [float(v) for v in np.asarray(value, dtype=float).ravel()]


def output_space_summary(space: okcore.OutputSpace) -> dict[str, Any]:
    """The model record's ``output_space``: the factor's rank (its columns r), the share of
    trace(K) it keeps, and whether k(y_i, y_i) are exact (False for the low-rank diffusion
    kernel's estimated diagonal)."""
    return {
        "rank": int(space.rank),
        "trace_fraction": float(space.trace_fraction),
        "diag_exact": bool(space.diag_exact),
    }


def auto_summary(est: okcore.AutoRegressor) -> dict[str, Any]:
    """The model record's ``auto``: the choice, its members, the budget and the
    leaderboard (okcore.AutoRegressor's fitted attributes)."""
    return {
        "chosen": est.best_name_,
        "members": [{"candidate": name, "params": params} for name, params in est.members_],
        "score": est.score_name_,
        "greater_is_better": bool(est.greater_is_better_),
        "cpu_seconds": float(est.cpu_seconds_),
        "refit_cpu_seconds": float(est.refit_cpu_seconds_),
        "max_cpu_seconds": float(est.max_cpu_seconds_),
        "leaderboard": est.leaderboard_,
    }


def resolved_params(est: Any) -> dict[str, Any]:
    """The model record's ``resolved_params``: the fitted ``resolved_params_`` (every value
    the fit resolved), empty for an estimator that resolves nothing."""
    return dict(getattr(est, "resolved_params_", None) or {})


def run_training(plan: TrainPlan, root: Path, model_id: str, progress: Reporter) -> str:
    """Fit, then store the model atomically under ``root``. Returns "done", "cancelled" or
    "deleted" (the model was deleted before its save committed: nothing is written).

    Runs in a training process (see :mod:`service.jobs`): it gets the store's
    directory, not the store object, and the model's record in ``plan.record``.
    """
    est = plan.estimator
    kwargs = dict(plan.fit_kwargs)
    y = kwargs.pop("Y", None)
    record = dict(plan.record)
    if plan.cv is not None:
        progress = CVProgress(progress, plan.cv)
        cv = run_cv(plan.cv, est, plan.inputs, y, kwargs, progress)
        if cv is None:
            return "cancelled"
        record.update(params=estimator_params(est), cv=cv)
    est.fit(plan.inputs, y, callback=progress, **kwargs)
    if est.stopped_by_callback_:
        return "cancelled"
    if hasattr(est, "leaderboard_"):  # model "auto": what it chose and why
        record["auto"] = auto_summary(est)
    record.update(
        status="ready",
        fit_time=float(est.fit_time_),
        n_estimators=int(est.n_estimators_),
        train_loss=float_list(est.train_loss_),
        validation_loss=float_list(est.validation_loss_),
        # kernel models (krr-boost) have none: the attribute raises AttributeError
        feature_importances=float_list(getattr(est, "feature_importances_", None)),
        output_space=output_space_summary(est.output_space_),
        resolved_params=resolved_params(est),
        error=None,
    )
    progress.saving()
    if not write_model(root, model_id, est, plan.inputs, plan.outputs, record, plan.ids):
        return "deleted"
    return "done"
