"""The limits a training job must fit, checked before it starts, on okcore's estimate of
what the fit will cost.

The fit's own cost (the output factor, the stages, the saved model) is the estimator's:
``okcore.OKEstimator.estimate_cost`` gives an ``okcore.FitCost`` from its family's cost
model (OK3 trees, boosted KRR), so a new estimator is costed by its own model, never as
another. This module adds what the service holds around the fit:

    memory  = BASE_BYTES + 2 x data + fit memory
    disk    = data + fit disk

with data the request's arrays (inputs, Gram, outputs, edges, eval set): the training
process holds them, and their pickled copy while it starts. BASE_BYTES and the fit's
constants were fitted to real fits on the project machine (2 cores, with other work
running) by bench/job_cost.py; docs/API.md ("Job limits") has the estimates beside the
measurements.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

import okcore
from service.config import Settings
from service.errors import StorageFull, WorkTooLarge
from service.jobs.progress import PhasePlan

TREE_LEVERS = "fewer trees or rows, a low-rank factor (params.factor_rank), fewer splits"
"""What a request can lower to make a fit of trees cheaper (the job limits' 422)."""
CV_LEVERS = "fewer cv.folds, a smaller cv.grid"
"""What a request that cross-validates can lower besides."""

BASE_BYTES = 250e6
"""Resident memory of a training process before it touches the data (Python, numpy,
scipy, numba and okcore's compiled kernels): 237-268 MB measured."""
SAVE_BYTES_PER_SECOND = 100e6
"""Rate at which a trained model's estimated disk size is taken to be written (the
"saving" phase's ETA): 250 MB/s measured on a local disk, a network store is slower."""


@dataclass(frozen=True)
class JobEstimate:
    """The estimated cost of one training job (see the module docstring)."""

    n_train: int
    n_features: int
    rank: int
    n_trees: int  # stages: trees, or boosted-KRR stages
    leaves: int  # per tree, or basis vectors per KRR stage
    search: str  # "exact", "histogram" or "kernel"
    memory_bytes: float
    factor_seconds: float
    setup_seconds: float
    tree_seconds: float  # per stage
    disk_bytes: float  # the stored model: data + factor + trees
    cv_fits: int = 0  # cross-validation fits before the final one (see estimate_cv)
    cv_trees: int = 0  # their trees
    cv_seconds: float = 0.0  # their time
    levers: str = TREE_LEVERS  # what the request can lower (see levers())

    @property
    def seconds(self) -> float:
        final = self.factor_seconds + self.setup_seconds + self.n_trees * self.tree_seconds
        return final + self.cv_seconds

    def phases(self) -> PhasePlan:
        """The estimated seconds of each phase, for the job's ETA. With cross-validation the
        job reports the trees of every fit as one count (service.cv), so a tree's time is
        the time after the first set-up over all those trees."""
        per_tree = self.tree_seconds
        if self.cv_trees:
            rest = self.seconds - self.factor_seconds - self.setup_seconds
            per_tree = rest / (self.n_trees + self.cv_trees)
        save = self.disk_bytes / SAVE_BYTES_PER_SECOND
        return PhasePlan(self.factor_seconds, self.setup_seconds, per_tree, save=save)

    def summary(self) -> dict[str, Any]:
        """JSON-able: the inputs of the estimate, memory in bytes and time in seconds."""
        out = asdict(self)
        del out["levers"]
        out["seconds"] = self.seconds
        return out


def array_bytes(value: Any) -> int:
    """Memory of a request array (dense, CSR, or a list of [i, j] edges)."""
    if value is None:
        return 0
    if sp.issparse(value):
        return int(value.data.nbytes + value.indices.nbytes + value.indptr.nbytes)
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    try:
        return 8 * int(np.size(value))  # lists of numbers (edges of the kernel spec)
    except ValueError:  # ragged lists (folds of unequal sides in params.cv): count them
        return sum(array_bytes(v) if isinstance(v, list | tuple) else 8 for v in value)


def held_bytes(plan: Any) -> int:
    """Memory a queued job's plan holds in arrays (its fields, and the values of dicts and
    dataclasses among them): what the queue's bound counts."""
    if sp.issparse(plan) or isinstance(plan, np.ndarray):
        return array_bytes(plan)
    if dataclasses.is_dataclass(plan) and not isinstance(plan, type):
        return sum(held_bytes(getattr(plan, f.name)) for f in dataclasses.fields(plan))
    if isinstance(plan, dict):
        return sum(held_bytes(v) for v in plan.values())
    if isinstance(plan, list | tuple) and plan and isinstance(plan[0], list | tuple):
        return array_bytes(plan)  # edges as [a, b] pairs
    return 0


def estimate_job(
    model: str,
    params: dict[str, Any],
    inputs: Any,
    kernel: dict[str, Any] | None,
    n_outputs: int | None,
    data_bytes: int,
    input_map: tuple[str, int | None] | None = None,
) -> JobEstimate:
    """The cost of fitting ``model`` with ``params`` on ``inputs`` (N x p) and an output
    kernel (``kernel`` spec, None for a precomputed Gram); ``data_bytes`` is the size of every
    array the request sent. The fit's part is the estimator's own cost model; with
    ``input_map`` (map, components), that of okcore.SimilarityInputs around it (the inputs
    are then a similarity: the kernel map's N features, or kernel PCA's eigendecomposition)."""
    return estimate_fit(
        okcore.make_estimator(model, params), inputs, kernel, n_outputs, data_bytes, input_map
    )


def estimate_fit(
    estimator: Any,
    inputs: Any,
    kernel: dict[str, Any] | None,
    n_outputs: int | None,
    data_bytes: int,
    input_map: tuple[str, int | None] | None = None,
) -> JobEstimate:
    """:func:`estimate_job` of an unfitted okcore ``estimator`` (a model the service builds
    itself, e.g. a candidate of the multi-label default)."""
    n, p = (int(s) for s in inputs.shape)
    asks = levers(estimator)
    if input_map is not None:
        estimator = okcore.SimilarityInputs(estimator, map=input_map[0], n_components=input_map[1])
    # trees search a feature holding missing values twice (missing rows right, then left)
    searched = p + _features_with_missing(inputs) if input_map is None else p
    fit = estimator.estimate_cost(
        n, searched, kernel="precomputed" if kernel is None else kernel, n_outputs=n_outputs
    )
    return JobEstimate(
        n_train=n,
        n_features=p,
        rank=fit.rank,
        n_trees=fit.n_stages,
        leaves=fit.stage_size,
        search=fit.search,
        memory_bytes=BASE_BYTES + 2.0 * data_bytes + fit.memory_bytes,
        factor_seconds=fit.factor_seconds,
        setup_seconds=fit.setup_seconds,
        tree_seconds=fit.stage_seconds,
        disk_bytes=data_bytes + fit.disk_bytes,
        levers=asks,
    )


def levers(estimator: Any) -> str:
    """What a request can lower to make a fit of ``estimator`` cheaper, in its params'
    names (:data:`TREE_LEVERS` for trees): exact kernel ridge
    holds N x N floats and takes N^3 / 3 flops whatever else is asked, a Nystrom basis of
    D rows holds N x D; boosted KRR costs its stages times their basis; the automatic
    choice, its CPU budget."""
    params = estimator.get_params(deep=False)
    if "n_components" in params and "n_estimators" not in params:  # kernel ridge
        return (
            "fewer rows, a Nystrom basis of D landmark rows (params.n_components, e.g. 2000: "
            "N x D floats and N D^2 flops instead of the exact solve's N x N and N^3), a "
            "low-rank factor (params.factor_rank)"
        )
    if "n_basis" in params:  # boosted KRR
        return (
            "fewer rows, stages (params.n_estimators) or basis vectors per stage "
            "(params.n_basis), a low-rank factor (params.factor_rank)"
        )
    if "max_cpu_seconds" in params:  # the automatic choice
        return "fewer rows, a smaller CPU budget (params.max_cpu_seconds)"
    return TREE_LEVERS


def _features_with_missing(inputs: Any) -> int:
    """How many input columns hold a missing value (NaN; a stored NaN of a CSR matrix)."""
    if sp.issparse(inputs):
        return int(np.unique(inputs.indices[np.isnan(inputs.data)]).size)
    arr = np.asarray(inputs)
    return int(np.isnan(arr).any(axis=0).sum()) if arr.dtype.kind == "f" else 0


def estimate_cv(
    finals: list[JobEstimate], folds: list[JobEstimate], fold_bytes: float
) -> JobEstimate:
    """The cost of a job that cross-validates before its final fit (POST /train ``cv``).

    ``finals``: the estimates of fitting each candidate on all rows (the final fit is one
    of them, which one is known only after the CV: every term is the largest over them);
    ``folds``: the estimates of every CV fit (one per candidate and fold, on its training
    rows), run one after another, whose seconds add up; ``fold_bytes``: what a fit holds
    beside the request's data while it is cross-validated (its rows' copy, its Gram block,
    the scores of its test rows), added to the memory."""
    return JobEstimate(
        n_train=finals[0].n_train,
        n_features=finals[0].n_features,
        rank=max(e.rank for e in finals),
        n_trees=max(e.n_trees for e in finals),
        leaves=max(e.leaves for e in finals),
        search=_common_search({e.search for e in finals}),
        memory_bytes=max(e.memory_bytes for e in finals) + fold_bytes,
        factor_seconds=max(e.factor_seconds for e in finals),
        setup_seconds=max(e.setup_seconds for e in finals),
        tree_seconds=max(e.tree_seconds for e in finals),
        disk_bytes=max(e.disk_bytes for e in finals),
        cv_fits=len(folds),
        cv_trees=sum(e.n_trees for e in folds),
        cv_seconds=sum(e.seconds for e in folds),
        levers=f"{finals[0].levers}, {CV_LEVERS}",
    )


def _common_search(searches: set[str]) -> str:
    """The search named for several fits: theirs when they share one, else the slower
    ("exact" if any)."""
    if len(searches) == 1:
        return next(iter(searches))
    return "exact" if "exact" in searches else "histogram"


def _gb(value: float) -> str:
    return f"{value / 1e9:.3g} GB"


def check_limits(estimate: JobEstimate, settings: Settings) -> None:
    """WorkTooLarge (422) naming the estimate and the limit when a job would exceed one of
    the settings' limits (rows, features, trees, memory budget, seconds)."""
    e = estimate
    budget = settings.job_memory_budget()
    checks = [
        (
            "n_train",
            e.n_train,
            settings.max_train_rows,
            f"{e.n_train} training rows",
            f"{settings.max_train_rows} rows",
            "MAX_TRAIN_ROWS",
        ),
        (
            "n_features",
            e.n_features,
            settings.max_features,
            f"{e.n_features} features",
            f"{settings.max_features} features",
            "MAX_FEATURES",
        ),
        (
            "n_trees",
            e.n_trees,
            settings.max_estimators,
            f"n_estimators = {e.n_trees} trees",
            f"{settings.max_estimators} trees",
            "MAX_ESTIMATORS",
        ),
        (
            "memory_bytes",
            e.memory_bytes,
            budget,
            f"an estimated {_gb(e.memory_bytes)} of memory",
            f"{_gb(budget)} ({budget} bytes of memory) per job",
            "MAX_JOB_MEMORY",
        ),
        (
            "seconds",
            e.seconds,
            settings.max_job_seconds,
            f"an estimated {e.seconds:.3g} s",
            f"{settings.max_job_seconds:g} s",
            "MAX_JOB_SECONDS",
        ),
    ]
    cv = (
        f", after {e.cv_fits} cross-validation fits of {e.cv_trees} trees in all"
        if e.cv_fits
        else ""
    )
    shape = (
        f"M = {e.n_trees} KRR stages of {e.leaves} basis vectors"
        if e.search == "kernel"
        else f"M = {e.n_trees} trees of {e.leaves} leaves, {e.search} split search"
    )
    for key, value, limit, needs, allowed, setting in checks:
        if value > limit:
            raise WorkTooLarge(
                f"this training job needs {needs}, over the limit of {allowed} "
                f"(OKBOOST_{setting}). Estimate: N = {e.n_train}, p = {e.n_features}, "
                f"r = {e.rank}, {shape}{cv}: {_gb(e.memory_bytes)} of memory, "
                f"{e.seconds:.3g} s. Ask for {e.levers}, or have the limit raised",
                details=[
                    {"loc": ["estimate", name], "msg": repr(val)}
                    for name, val in e.summary().items()
                    if isinstance(val, int | float)
                ]
                + [{"loc": ["limit", key], "msg": repr(limit)}],
            )


def check_disk(estimate: JobEstimate, free_bytes: int) -> None:
    """StorageFull (507) when the model store's disk has less room than the model needs."""
    if estimate.disk_bytes > free_bytes:
        raise StorageFull(
            f"the model store has {_gb(free_bytes)} free but this model needs an estimated "
            f"{_gb(estimate.disk_bytes)} of disk: free disk space (or delete models), or "
            "train a smaller model"
        )
