"""What a training job will cost, estimated before it starts, and the limits it must fit.

From N training rows, p features, the factor's width r, M trees and L leaves per tree
(L = max_splits + 1, bounded by N / min_samples_leaf and 2^max_depth), the estimate is:

    memory  = BASE_BYTES + 2 x data + max(factor, search + trees)
    data    = the request's arrays (inputs, Gram, outputs, edges, eval set): the training
              process holds them, and their pickled copy while it starts
    factor  = the output space's peak (okcore.outputs.space.estimate_factor_cost)
    search  = exact split search: 12 p N (inputs as float64 + presorted int32 orders);
              histograms: p N (uint8 bin codes)
    trees   = 4 x 8 N r (factor, F, residuals, a temporary)
              + M x (16 N + 16 L r + 256 L)  (the leaf and fit count of every training row
              in every tree, and each tree's leaf r-vectors and node arrays: all of them
              twice, as per-tree arrays and as the ensemble's concatenation)
    disk    = data + 8 N r + M x (8 N + 8 L r + 128 L)

    seconds  = factor (okcore's flop model) + setup + M x per_tree
    setup    = histograms: 0.1 s + SORT_SECONDS x N p log2 N (binning); exact search with
               the best splitter: SORT_SECONDS x N p log2 N (presorting); else 0
    per_tree = (ROW_SECONDS[search] + COLUMN_SECONDS x w) x n_fit f log2(L + 1)
               + STEP_SECONDS x N r

with f the features tried per node (max_features), w the width the split search reads (r,
or the sketch dimension), n_fit the rows each tree is fitted on. Boosted KRR ("krr-boost")
has its own model, :func:`estimate_krr_job`: stages of D basis vectors instead of trees
of L leaves. r is an upper bound (N for
an exact factor of a kernel on vectors, whose numerical rank may be lower: the estimate is
then high). The constants were fitted to real fits on the project machine (2 cores, with
other work running) by bench/job_cost.py; docs/API.md ("Job limits") has the estimates
beside the measurements.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from okcore.boosting import resolve_search
from okcore.outputs.space import estimate_factor_cost
from service.config import Settings
from service.errors import StorageFull, WorkTooLarge
from service.jobs.progress import PhasePlan

BASE_BYTES = 250e6
"""Resident memory of a training process before it touches the data (Python, numpy,
scipy, numba and okcore's compiled kernels): 237-268 MB measured."""
SORT_SECONDS = 5e-8
BINNING_FIXED_SECONDS = 0.1
ROW_SECONDS = {"exact": 5e-8, "histogram": 5e-9}
COLUMN_SECONDS = 2e-9
STEP_SECONDS = 2e-8
KRR_FLOP_SECONDS = 1e-9
"""Seconds per floating-point operation of a boosted-KRR stage (kernel values, products,
the basis selection): ~5e-10 measured on kin40k stages (N = 36,000, D = 200, one thread,
bench/krr_kin40k.py), doubled for a loaded machine."""


@dataclass(frozen=True)
class JobEstimate:
    """The estimated cost of one training job (see the module docstring)."""

    n_train: int
    n_features: int
    rank: int
    n_trees: int
    leaves: int
    search: str  # "exact" or "histogram"
    memory_bytes: float
    factor_seconds: float
    setup_seconds: float
    tree_seconds: float  # per tree
    disk_bytes: float  # the stored model: data + factor + trees
    cv_fits: int = 0  # cross-validation fits before the final one (see estimate_cv)
    cv_trees: int = 0  # their trees
    cv_seconds: float = 0.0  # their time

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
        return PhasePlan(self.factor_seconds, self.setup_seconds, per_tree)

    def summary(self) -> dict[str, Any]:
        """JSON-able: the inputs of the estimate, memory in bytes and time in seconds."""
        out = asdict(self)
        out["seconds"] = self.seconds
        return out


def _features_tried(max_features: Any, p: int, splitter: str) -> float:
    """Features searched per node (okcore's max_features rule)."""
    if max_features is None:
        return p if splitter == "best" else math.sqrt(p)
    if max_features == "sqrt":
        return math.sqrt(p)
    if max_features == "log2":
        return max(math.log2(p), 1.0)
    if isinstance(max_features, float):
        return max(1.0, max_features * p)
    return float(min(int(max_features), p))


def _leaves(params: dict[str, Any], n: int) -> int:
    splits = params.get("max_splits")
    leaves = n if splits is None else splits + 1
    leaves = min(leaves, max(n // int(params.get("min_samples_leaf") or 1), 1))
    if params.get("max_depth"):
        leaves = min(leaves, 2 ** min(int(params["max_depth"]), 62))
    return max(int(leaves), 1)


def array_bytes(value: Any) -> int:
    """Memory of a request array (dense, CSR, or a list of [i, j] edges)."""
    if value is None:
        return 0
    if sp.issparse(value):
        return int(value.data.nbytes + value.indices.nbytes + value.indptr.nbytes)
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    return 8 * int(np.size(value))  # lists of numbers (edges of the kernel spec)


def estimate_job(
    model: str,
    params: dict[str, Any],
    inputs: Any,
    kernel: dict[str, Any] | None,
    n_outputs: int | None,
    data_bytes: int,
) -> JobEstimate:
    """The cost of fitting ``model`` with ``params`` on ``inputs`` (N x p) and an output
    kernel (``kernel`` spec, None for a precomputed Gram); ``data_bytes`` is the size of every
    array the request sent."""
    n, p = (int(s) for s in inputs.shape)
    n_edges = len(kernel["edges"]) if kernel and kernel.get("type") == "diffusion" else None
    factor = estimate_factor_cost(
        n,
        kernel if kernel is not None else "precomputed",
        params.get("factor_rank"),
        params.get("n_landmarks"),
        n_edges,
        n_outputs,
    )
    r = max(int(factor.rank), 1)
    if model == "krr-boost":
        return estimate_krr_job(params, n, p, r, factor.peak_bytes, factor.seconds, data_bytes)
    n_trees = int(params.get("n_estimators") or 1) if model != "ok3" else 1
    leaves = _leaves(params, n)
    if model == "okboost":
        max_bins, sketch = resolve_search(params["max_bins"], params["sketch_dim"], n, r)
        n_fit = n * float(params.get("subsample") or 1.0)
    else:
        max_bins, sketch = params.get("max_bins"), None
        n_fit = float(n)
    search = "exact" if max_bins is None else "histogram"
    width = min(r, sketch) if sketch else r
    splitter = str(params.get("splitter") or "best")
    tried = _features_tried(params.get("max_features"), p, splitter)
    search_bytes = 12.0 * p * n if search == "exact" else 1.0 * p * n
    stored_tree_bytes = 8.0 * n + 8.0 * leaves * r + 128.0 * leaves
    trees_bytes = 4 * 8.0 * n * r + n_trees * (16.0 * n + 16.0 * leaves * r + 256.0 * leaves)
    memory = BASE_BYTES + 2.0 * data_bytes + max(factor.peak_bytes, search_bytes + trees_bytes)
    sorting = SORT_SECONDS * n * p * math.log2(max(n, 2))
    if search == "histogram":
        setup = BINNING_FIXED_SECONDS + sorting
    else:
        setup = sorting if splitter == "best" else 0.0
    per_tree = (ROW_SECONDS[search] + COLUMN_SECONDS * width) * n_fit * tried * math.log2(
        leaves + 1
    ) + STEP_SECONDS * n * r
    return JobEstimate(
        n_train=n,
        n_features=p,
        rank=r,
        n_trees=n_trees,
        leaves=leaves,
        search=search,
        memory_bytes=memory,
        factor_seconds=factor.seconds,
        setup_seconds=setup,
        tree_seconds=per_tree,
        disk_bytes=data_bytes + 8.0 * n * r + n_trees * stored_tree_bytes,
    )


def estimate_krr_job(
    params: dict[str, Any],
    n: int,
    p: int,
    r: int,
    factor_bytes: float,
    factor_seconds: float,
    data_bytes: int,
) -> JobEstimate:
    """The cost of boosted sparse KRR (okcore.KRRBoostRegressor): M stages, each fitting D
    basis vectors on a subset of n rows and evaluated on all N rows.

        memory = BASE_BYTES + 2 x data + max(factor, 8 N D (the stage's kernel block)
                 + 32 N r (factor, F, residuals, a temporary) + 32 n D (the info-gain
                 selection's factors) + 8 N r M with reweight + 8 M D (p + r) (the stages))
        per stage = KRR_FLOP_SECONDS x (N D (p + 20 + 2 r (1 + 2 cg_iter))
                    + n D (3 D + r + p) + D^3)
        disk   = data + 8 N r + 8 M D (p + r + 1)

    ``leaves`` of the estimate is D (basis vectors per stage), ``search`` is "kernel".
    """
    M = int(params.get("n_estimators") or 1)
    subset = min(int(params.get("subset_size") or n), n)
    D = min(int(params.get("n_basis") or subset), subset)
    cg = int(params.get("cg_iter") or 0) if params.get("regularization") != "shrinkage" else 0
    reweight = 8.0 * n * r * M if params.get("reweight") else 0.0
    width = 0 if params.get("input_kernel") == "precomputed" else p
    stages_bytes = 8.0 * M * D * (width + r + 1)
    work = 8.0 * n * D + 32.0 * n * r + 32.0 * subset * D + reweight + stages_bytes
    flops = n * D * (p + 20 + 2 * r * (1 + 2 * cg)) + subset * D * (3 * D + r + p) + D**3
    return JobEstimate(
        n_train=n,
        n_features=p,
        rank=r,
        n_trees=M,
        leaves=D,
        search="kernel",
        memory_bytes=BASE_BYTES + 2.0 * data_bytes + max(factor_bytes, work),
        factor_seconds=factor_seconds,
        setup_seconds=0.0,
        tree_seconds=KRR_FLOP_SECONDS * flops,
        disk_bytes=data_bytes + 8.0 * n * r + stages_bytes,
    )


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
    smaller_cv = " (or fewer cv.folds, a smaller cv.grid)" if e.cv_fits else ""
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
                f"{e.seconds:.3g} s. Ask for "
                f"fewer trees or rows{smaller_cv}, a low-rank factor (params.factor_rank), "
                "fewer splits, or have the limit raised",
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
