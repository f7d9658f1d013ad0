"""Cross-validation in a training job (POST /train ``cv``): checked and costed before the job
is queued, run in the job before the final fit (no HTTP here).

The folds, fits and scores are okcore's: ``okcore.model_selection.grid_search`` over the
grid (``cross_validate`` of the params as given without one), on the outputs in the form
the request gave them (vectors with their kernel, a Gram matrix, or the graph of a
diffusion kernel, whose folds train on the graph induced on their training vertices). The
best candidate's grid values are then set on the estimator, which the job fits on all rows
as usual (with its eval_set, if any). The job's progress counts the trees of every CV fit
and then those of the final fit, and a cancel stops the CV at the next report.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

import okcore
from okcore import model_selection, scoring
from service.errors import InvalidRequest
from service.jobs.task import Reporter
from service.schemas.api import TrainRequest
from service.schemas.cv import CVSpec
from service.training.budget import JobEstimate, array_bytes, estimate_cv, estimate_job

MAX_CV_FITS = 1000
"""Most CV fits (candidates x folds) one job may run."""
OUTPUT_FORMS = {
    "output vectors": "vectors",
    "a precomputed Gram matrix": "gram",
    "a graph (diffusion kernel)": "graph",
}
"""okcore's name (okcore.scoring.FORMS) of each form of the outputs."""


class CVCancelled(Exception):
    """The job was asked to stop during the cross-validation."""


@dataclass(frozen=True)
class CVPlan:
    """What the job needs to cross-validate (picklable: it travels to the training process)."""

    folds: int
    random_state: int
    scoring: tuple[str, ...]
    grid: dict[str, list[Any]] | None
    search: str  # "grid" or "halving" (okcore.model_selection.grid_search)
    factor: int
    task_trees: tuple[int, ...]  # trees of each (candidate, fold) fit, in okcore's task order
    estimate: JobEstimate  # the whole job's cost: the CV fits and the final fit

    @property
    def cv_trees(self) -> int:
        return sum(self.task_trees)

    @property
    def total(self) -> int:
        """Trees the job reports: every CV fit's, then the final fit's (at most)."""
        return self.cv_trees + self.estimate.n_trees


def estimator_params(est: Any) -> dict[str, Any]:
    """The parameters of the registry estimator (inside okcore.SimilarityInputs, the
    wrapped one's): the model record's ``params`` and what the cost model reads."""
    inner = est.estimator if isinstance(est, okcore.SimilarityInputs) else est
    return dict(inner.get_params())


def param_prefix(est: Any) -> str:
    """What the registry estimator's parameter names take inside ``est``: "estimator__"
    inside okcore.SimilarityInputs (a cv grid names the model's own parameters), else ""."""
    return "estimator__" if isinstance(est, okcore.SimilarityInputs) else ""


def similarity_map(est: Any) -> tuple[str, int | None] | None:
    """(map, components) of an okcore.SimilarityInputs, for the cost model; else None."""
    if isinstance(est, okcore.SimilarityInputs):
        return est.map, est.n_components
    return None


def checked_scores(
    asked: str | Sequence[str] | None, form: str, Y: Any, field: str = "cv.scoring"
) -> tuple[str, ...]:
    """The scores asked for in request ``field`` (default: okcore's for the form), each one
    okcore computes for the outputs' form (the 0/1 ones only for 0/1 output vectors): a
    422 naming the field and the scores that apply otherwise."""
    okform = OUTPUT_FORMS[form]
    if asked is None:
        return scoring.DEFAULT_SCORES[okform]
    allowed = scoring.available_scores(okform, Y)
    names = (asked,) if isinstance(asked, str) else tuple(asked)
    bad = [name for name in names if name not in allowed]
    if bad or not names:
        needs_labels = okform == "vectors" and any(scoring.SCORERS[b].labels for b in bad)
        why = " whose outputs are not all 0 or 1" if needs_labels else ""
        raise InvalidRequest(
            f"{field} {', '.join(repr(b) for b in bad) or '[]'} does not apply to a model "
            f"trained on {form}{why}: use {', '.join(allowed)}",
            details=[{"loc": field.split("."), "msg": f"one or more of {list(allowed)}"}],
        )
    return names


def _candidates(req: TrainRequest, grid: dict[str, list[Any]] | None) -> list[dict[str, Any]]:
    """Every combination of the grid (okcore's order), each value checked by okcore now."""
    if grid is None:
        return [{}]
    try:
        okcore.check_parameter_names(req.model, grid)
    except okcore.UnknownParameterError as err:
        unknown = err.unknown
        raise InvalidRequest(
            f"cv.grid names {', '.join(repr(u) for u in unknown)}, not a parameter of model "
            f"'{req.model}'; valid parameters: {', '.join(err.valid)}",
            details=[{"loc": ["cv", "grid", u], "msg": "unknown parameter"} for u in unknown],
        ) from None
    n_candidates = math.prod(len(values) for values in grid.values())
    if n_candidates > MAX_CV_FITS:
        raise InvalidRequest(
            f"cv.grid has {n_candidates} combinations, more than the {MAX_CV_FITS} CV fits a "
            "job may run: search fewer values"
        )
    for name, values in grid.items():
        for i, value in enumerate(values):
            try:
                okcore.make_estimator(req.model, {**req.params, name: value})
            except okcore.InvalidParameterError as exc:
                raise okcore.InvalidParameterError(f"cv.grid.{name}[{i}]: {exc}") from None
    return model_selection.parameter_grid(grid)


def _check_folds(req: TrainRequest, spec: CVSpec, params: list[dict[str, Any]]) -> None:
    n = int(req.inputs.shape[0])
    if spec.folds > n:
        raise InvalidRequest(
            f"cv.folds = {spec.folds} but there are only {n} training rows: each fold needs "
            "at least one row (ask for fewer folds)",
            details=[{"loc": ["cv", "folds"], "msg": f"at most {n}"}],
        )
    smallest_train = n - math.ceil(n / spec.folds)
    for p in params:
        landmarks = p.get("n_landmarks")
        if landmarks is not None and landmarks > smallest_train:
            raise InvalidRequest(
                f"n_landmarks = {landmarks} is more than the {smallest_train} training rows of "
                f"a {spec.folds}-fold CV split of {n} rows: ask for fewer landmarks"
            )
    folds = _folds(n, spec, req.sample_weight)
    edges = req.output_kernel.graph_edges()
    if edges is not None:
        _check_graph_folds(edges, n, spec, folds)
    if req.sample_weight is not None:
        _check_weighted_folds(req.sample_weight, n, spec, folds)


def _folds(n: int, spec: CVSpec, weight: np.ndarray | None) -> list[tuple]:
    """The folds the job's cross-validation will use (okcore's ``kfold``: with weights
    holding zeros, the rows of positive weight spread over the folds); a 422 when the
    weighted rows cannot fill them."""
    try:
        return model_selection.kfold(n, spec.folds, spec.random_state, weight)
    except okcore.DataError as exc:
        raise InvalidRequest(
            f"cv.folds = {spec.folds}: {exc}",
            details=[{"loc": ["cv", "folds"], "msg": str(exc)}],
        ) from None


def _check_weighted_folds(weight: np.ndarray, n: int, spec: CVSpec, folds: list[tuple]) -> None:
    """Each fold's test rows carry some weight: a fold is scored on its test rows' weights
    (weighted means). Its training rows always do: okcore's ``kfold`` deals the rows of
    positive weight out first, and refuses fewer than 2 of them (:func:`_folds`)."""
    for k, (_, test) in enumerate(folds):
        if not weight[test].sum() > 0:
            raise InvalidRequest(
                f"fold {k} of the {spec.folds}-fold CV (random_state {spec.random_state}) has "
                f"{len(test)} test rows whose sample_weight are all 0, so its weighted scores "
                f"are undefined (only {int(np.count_nonzero(weight))} of the {n} rows have a "
                "weight > 0): ask for fewer folds, or give more rows a weight",
                details=[{"loc": ["cv", "folds"], "msg": f"fold {k}: no weight in its test rows"}],
            )


def _check_graph_folds(edges: np.ndarray, n: int, spec: CVSpec, folds: list[tuple]) -> None:
    """Each fold's AUC needs an edge and a non-edge among the pairs with a test vertex."""
    for k, (_, test) in enumerate(folds):
        in_test = np.zeros(n, dtype=bool)
        in_test[test] = True
        touching = int(in_test[edges].any(axis=1).sum()) if edges.size else 0
        pairs = len(test) * (len(test) - 1) // 2 + len(test) * (n - len(test))
        if touching == 0 or touching == pairs:
            what = "no edge" if touching == 0 else "no non-edge"
            raise InvalidRequest(
                f"fold {k} of the {spec.folds}-fold CV (random_state {spec.random_state}) has "
                f"{what} among the pairs of its {len(test)} test vertices, so its AUC is "
                "undefined: ask for fewer folds or another cv.random_state",
                details=[{"loc": ["cv", "folds"], "msg": f"fold {k}: {what}"}],
            )


def _fold_bytes(req: TrainRequest, fit_kwargs: dict[str, Any], folds: int, form: str) -> float:
    """What a CV fit holds beside the request's data: its copy of the training rows (inputs,
    outputs or Gram block) and a few dense (test rows x N) arrays to score its test rows
    (distances or kernels; for a graph also the adjacency blocks and the AUC's ranks)."""
    n = int(req.inputs.shape[0])
    n_train, n_test = n - n // folds, math.ceil(n / folds)
    share = n_train / n
    copies = share * (array_bytes(req.inputs) + array_bytes(fit_kwargs.get("Y")))
    if "gram" in fit_kwargs:
        copies += 8.0 * n_train * n_train
    dense_arrays = 6 if form.startswith("a graph") else 3
    return copies + dense_arrays * 8.0 * n_test * n


@dataclass(frozen=True)
class SearchStep:
    """Fits of a search per fold, in okcore's task order: how many, the params one of them
    may be fitted with, and for halving by warm start (``warm``) the trees its model held
    before (``before``): a continued fit grows the rest, with no output factor, and every
    racing candidate's fold models are held until it drops out."""

    count: int
    options: list[dict[str, Any]]
    warm: bool = False
    before: int = 0

    def fitted(self, params: dict[str, Any]) -> dict[str, Any]:
        """What one fit of the step grows: ``params`` with the trees it adds."""
        if not self.before:
            return params
        resource = model_selection.RESOURCE
        return {**params, resource: int(params[resource]) - self.before}


def _held_bytes(fold: JobEstimate) -> float:
    """What a fold model that halving continues holds between its iterations: the model
    (its output factor and trees, as stored) and F on its training rows (N x r float64)."""
    return fold.disk_bytes + 8.0 * fold.n_train * fold.rank


def _search_fits(
    spec: CVSpec,
    estimator: okcore.OKEstimator,
    candidates: list[dict[str, Any]],
    fold_rows: int,
) -> list[SearchStep]:
    """okcore's fits per fold: a grid's :func:`okcore.model_selection.search_fits` (one
    each), or for each halving iteration its number of candidates and the params of every
    candidate with that iteration's trees (which ones go on is known only then; the most
    trees are the estimator's on ``fold_rows``, the largest fold's training rows, as okcore
    resolves ``n_estimators="auto"`` there); when okcore continues the survivors' fits
    (:func:`okcore.model_selection.continues_fits`), the trees each iteration adds."""
    if spec.search == "grid" or spec.grid is None:
        if spec.grid is None:
            return [SearchStep(1, [{}])]
        return [
            SearchStep(1, [f.params]) for f in model_selection.search_fits(estimator, candidates)
        ]
    resource = model_selection.RESOURCE
    most = model_selection.planned_resource(estimator, fold_rows)
    if most is None or resource in spec.grid:
        why = (
            f"is the number of trees the candidates race with: leave {resource} out of "
            "cv.grid and set the largest in params"
            if most is not None
            else f"races candidates over {resource}, which this model does not have"
        )
        raise InvalidRequest(
            f"cv.search 'halving' {why}",
            details=[{"loc": ["cv", "search"], "msg": f"needs {resource} outside the grid"}],
        )
    schedule = model_selection.halving_schedule(len(candidates), most, spec.factor)
    warm = model_selection.continues_fits(estimator)
    steps, before = [], 0
    for alive, trees in schedule:
        options = [{**c, resource: trees} for c in candidates]
        steps.append(SearchStep(alive, options, warm, before if warm else 0))
        before = trees
    return steps


def plan_cv(
    req: TrainRequest,
    estimator: okcore.OKEstimator,
    fit_kwargs: dict[str, Any],
    n_outputs: int | None,
    data_bytes: int,
) -> CVPlan:
    """Check ``req.cv`` against the request (422 before queueing: unknown or bad grid values,
    a score that does not apply to the outputs' form, more folds than rows, a graph fold
    whose AUC is undefined, halving without n_estimators) and cost the whole job
    (service.budget.estimate_cv; halving: each iteration at its most expensive candidates)."""
    spec = req.cv
    assert spec is not None
    form = req.output_kernel.FORM
    scores = checked_scores(spec.scoring, form, fit_kwargs.get("Y"))
    candidates = _candidates(req, spec.grid)
    prefix = param_prefix(estimator)
    n, p = (int(s) for s in req.inputs.shape)
    test_sizes = [len(part) for part in np.array_split(np.arange(n), spec.folds)]
    fits = [
        replace(
            step,
            options=[{k.removeprefix(prefix): v for k, v in p.items()} for p in step.options],
        )
        for step in _search_fits(
            spec,
            estimator,
            [{prefix + k: v for k, v in c.items()} for c in candidates],
            n - min(test_sizes),
        )
    ]
    n_fits = sum(step.count for step in fits)
    if n_fits * spec.folds > MAX_CV_FITS:
        what = (
            f"{n_fits} candidates"
            if n_fits == len(candidates)
            else f"{n_fits} fits of {len(candidates)} candidates"
        )
        raise InvalidRequest(
            f"cv asks for {what} x {spec.folds} folds = {n_fits * spec.folds} fits, more than "
            f"the {MAX_CV_FITS} a job may run: search fewer values or use fewer folds"
        )
    base = estimator_params(estimator)
    _check_folds(req, spec, [{**base, **candidate} for candidate in candidates])
    kernel = fit_kwargs.get("kernel")

    def fold_estimates(params: dict[str, Any]) -> list[JobEstimate]:
        by_size: dict[int, JobEstimate] = {}
        for size in sorted(set(test_sizes)):
            rows = np.broadcast_to(np.uint8(0), (n - size, p))  # a shape, no memory
            by_size[size] = estimate_job(
                req.model, params, rows, kernel, n_outputs, 0, similarity_map(estimator)
            )
        return [by_size[size] for size in test_sizes]

    fold_fits: list[JobEstimate] = []
    held = 0.0  # halving by warm start: the racing candidates' fold models, held in turn
    for step in fits:
        costs = [fold_estimates({**base, **step.fitted(params)}) for params in step.options]
        if step.before:  # trees added to a fitted model: no output factor
            costs = [[replace(e, factor_seconds=0.0) for e in folds] for folds in costs]
        costs.sort(key=lambda folds: -sum(e.seconds for e in folds))
        for folds in costs[: step.count]:
            fold_fits.extend(folds)
        if step.warm:
            models = [fold_estimates({**base, **params}) for params in step.options]
            sizes = sorted((sum(_held_bytes(e) for e in m) for m in models), reverse=True)
            held = max(held, sum(sizes[: step.count]))
    last = fits[-1].options if spec.search == "halving" and spec.grid is not None else candidates
    finals = [
        estimate_job(
            req.model,
            {**base, **params},
            req.inputs,
            kernel,
            n_outputs,
            data_bytes,
            similarity_map(estimator),
        )  # fmt: skip
        for params in last
    ]
    return CVPlan(
        folds=spec.folds,
        random_state=spec.random_state,
        scoring=scores,
        grid=spec.grid,
        search=spec.search if spec.grid is not None else "grid",
        factor=spec.factor,
        task_trees=tuple(e.n_trees for e in fold_fits),
        estimate=estimate_cv(
            finals, fold_fits, _fold_bytes(req, fit_kwargs, spec.folds, form) + held
        ),
    )


@dataclass
class CVProgress:
    """The job's reporter for a job that cross-validates: the trees of every CV fit, then
    those of the final fit, as one count (the final fit is this object's ``__call__``), and
    the time since the job's first fit started as ``elapsed`` (each fit's own clock restarts
    at 0; the job's ETA reads tree intervals on this clock)."""

    reporter: Reporter
    plan: CVPlan
    started: float = field(default_factory=time.perf_counter)

    def _report(self, progress: Any, done: int, total: int) -> bool:
        elapsed = time.perf_counter() - self.started
        return self.reporter(replace(progress, done=done, total=total, elapsed=elapsed))

    def fold(self, task: int, progress: okcore.FitProgress) -> None:
        """okcore's search callback: a CV fit's report, shifted past the tasks before it."""
        done = sum(self.plan.task_trees[:task]) + progress.done
        if self._report(progress, done, self.plan.total):
            raise CVCancelled

    def __call__(self, progress: Any, /) -> bool:
        cv_trees = self.plan.cv_trees
        return self._report(progress, cv_trees + progress.done, cv_trees + progress.total)

    def saving(self) -> None:
        self.reporter.saving()


def _summary(values: np.ndarray) -> dict[str, Any]:
    """A score over the folds as in okcore's grid_search table."""
    return {"mean": float(values.mean()), "std": float(values.std()), "folds": values.tolist()}


def run_cv(
    plan: CVPlan,
    estimator: okcore.OKEstimator,
    X: Any,
    Y: Any,
    fit_kwargs: dict[str, Any],
    progress: CVProgress,
) -> dict[str, Any] | None:
    """Cross-validate, set the best candidate's values on ``estimator`` and return the model
    record's ``cv``; None when the job was cancelled meanwhile."""
    gram, kernel = fit_kwargs.get("gram"), fit_kwargs.get("kernel")
    weight = fit_kwargs.get("sample_weight")
    folds, seed = plan.folds, plan.random_state
    prefix = param_prefix(estimator)
    try:
        if plan.grid is None:
            scores = model_selection.cross_validate(
                estimator, X, Y, gram=gram, kernel=kernel, scoring=plan.scoring, cv=folds,
                random_state=seed, callback=progress.fold, sample_weight=weight,
            )  # fmt: skip
            table = [{"params": {}, **{name: _summary(v) for name, v in scores.items()}}]
            best: dict[str, Any] = {}
        else:
            grid = {prefix + name: values for name, values in plan.grid.items()}
            result = model_selection.grid_search(
                estimator, grid, X, Y, gram=gram, kernel=kernel, scoring=plan.scoring,
                cv=folds, random_state=seed, refit=False, callback=progress.fold,
                search=plan.search, factor=plan.factor, sample_weight=weight,
            )  # fmt: skip
            table, best = result.table, result.best_params
    except CVCancelled:
        return None
    estimator.set_params(**best)
    best = {k.removeprefix(prefix): v for k, v in best.items()}
    table = [{**row, "params": {k.removeprefix(prefix): v for k, v in row["params"].items()}}
             for row in table]  # fmt: skip
    record = {
        "folds": plan.folds,
        "random_state": plan.random_state,
        "scoring": list(plan.scoring),
        "criterion": plan.scoring[0],
        "grid": plan.grid,
        "search": plan.search,
        "best_params": best,
        "table": table,
    }
    if plan.search == "halving":
        record.update(n_candidates=result.n_candidates, n_resources=result.n_resources)
    return record
