"""What a training job will cost, estimated before it starts, and the limits it must fit.

From N training rows, p features, the factor's width r, M trees and L leaves per tree
(L = max_splits + 1, bounded by N / min_samples_leaf and 2^max_depth), the estimate is:

    memory  = BASE_BYTES + 2 x data + max(factor, search + trees)
    data    = the request's arrays (inputs, Gram, outputs, edges, eval set): the training
              process holds them, and their pickled copy while it starts
    factor  = the output space's peak (okcore.space.estimate_factor_cost)
    search  = exact split search: 12 p N (inputs as float64 + presorted int32 orders);
              histograms: p N (uint8 bin codes)
    trees   = 4 x 8 N r (factor, F, residuals, a temporary) + M x (16 N + 8 L r + 128 L)
              (the leaf and fit count of every training row in every tree, as lists and then
              as arrays, the leaves' r-vectors, the node arrays)

    seconds = factor (okcore's flop model) + setup + M x per_tree
    setup   = SORT_SECONDS x N p log2 N  (binning, or presorting for the exact search)
    per_tree = SEARCH_SECONDS[search] x n_fit f w log2(L + 1) + STEP_SECONDS x N r

with f the features tried per node (max_features), w the width the split search reads (r,
or the sketch dimension), n_fit the rows each tree is fitted on. The constants were fitted
to real fits on the project machine (2-core EPYC) with bench/job_cost.py; docs/API.md
("Job limits") has the table of estimates against measurements.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from okcore.boosting import resolve_search
from okcore.space import estimate_factor_cost
from service.config import Settings
from service.errors import StorageFull, WorkTooLarge
from service.progress import PhasePlan

BASE_BYTES = 160e6
"""Resident memory of a training process before it touches the data (Python, numpy,
scipy, numba and okcore's compiled kernels), measured."""
SORT_SECONDS = 3e-8
SEARCH_SECONDS = {"exact": 1.5e-9, "histogram": 2.5e-9}
STEP_SECONDS = 2e-9


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

    @property
    def seconds(self) -> float:
        return self.factor_seconds + self.setup_seconds + self.n_trees * self.tree_seconds

    def phases(self) -> PhasePlan:
        """The estimated seconds of each phase, for the job's ETA."""
        return PhasePlan(self.factor_seconds, self.setup_seconds, self.tree_seconds)

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
    per_tree_bytes = 8.0 * n + 8.0 * leaves * r + 128.0 * leaves  # as stored
    trees_bytes = 4 * 8.0 * n * r + n_trees * (per_tree_bytes + 8.0 * n)
    memory = BASE_BYTES + 2.0 * data_bytes + max(factor.peak_bytes, search_bytes + trees_bytes)
    sorting = search == "histogram" or splitter == "best"
    setup = SORT_SECONDS * n * p * math.log2(max(n, 2)) if sorting else 0.0
    per_tree = (
        SEARCH_SECONDS[search] * n_fit * tried * width * math.log2(leaves + 1)
        + STEP_SECONDS * n * r
    )
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
        disk_bytes=data_bytes + 8.0 * n * r + n_trees * per_tree_bytes,
    )


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
    for key, value, limit, needs, allowed, setting in checks:
        if value > limit:
            raise WorkTooLarge(
                f"this training job needs {needs}, over the limit of {allowed} "
                f"(OKBOOST_{setting}). Estimate: N = {e.n_train}, p = {e.n_features}, "
                f"r = {e.rank}, M = {e.n_trees} trees of {e.leaves} leaves, {e.search} split "
                f"search: {_gb(e.memory_bytes)} of memory, {e.seconds:.3g} s. Ask for fewer "
                "trees or rows, a low-rank factor (params.factor_rank), fewer splits, or have "
                "the limit raised",
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
