"""Training on a bipartite network (POST /train with ``"task": "bipartite"``; no HTTP here).

The model is okcore's :class:`~okcore.bipartite.BipartiteRegressor`. With model "auto" (the
default) it is okcore's default, the rank average of its members
(:mod:`service.training.bipartite_default`: their cost, the job's progress per member, the
record's ``bipartite.default``). With a named model, a row model learns the rows' interaction
profiles over the known columns from the row inputs, a column model the
columns' profiles over the known rows from the column inputs (the estimator fitted on the
transposed problem). With ``cv`` the job first runs okcore's K x K cross-validation
(:func:`okcore.bipartite.bipartite_cross_validate`: both sides split into folds stratified
by degree, a similarity side sliced to its learned vertices in every configuration) and
keeps its scores per block in the record.

Bounds before queueing: the dense interaction matrix (n_rows x n_cols) within the service's
dense limit, each side's fit within the job limits (rows, features, trees, memory, seconds
of both fits and of the CV's), the edges' vertices known. A queued job holds the
interactions as a sparse matrix (its edges), never the dense one it builds when it runs.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

import okcore
from service.errors import InvalidRequest
from service.jobs.progress import PhasePlan
from service.jobs.task import Cancelled, FitsProgress, Reporter
from service.schemas.bipartite import BipartiteTrainRequest
from service.store.composite import write_bipartite_extra, write_default_extra
from service.store.model_store import write_model
from service.training.auto import check_input_width
from service.training.bipartite_default import (
    DefaultProgress,
    default_estimate,
    default_inputs,
    default_summary,
    member_costs,
    member_steps,
)
from service.training.budget import JobEstimate, array_bytes, estimate_job
from service.training.fit import (
    checked_estimator,
    output_space_summary,
    resolved_params,
    symmetric_similarity,
)
from service.vertex_ids import VertexIds

PROFILE_KERNEL = {"type": "linear"}
"""Both one-sided models' output kernel: on the interaction profiles themselves."""


@dataclass
class DefaultPlan:
    """What the default (model "auto") fits with: its ``inputs`` and each member's progress
    steps in one fit."""

    inputs: str
    steps: list[int]
    max_cpu_seconds: float | None  # a CPU budget per fit of the default


@dataclass
class BipartitePlan:
    """Everything a worker needs to fit and store one bipartite model (picklable)."""

    model: str
    params: dict[str, Any]
    new_pairs: str
    X_rows: Any
    X_cols: Any
    row_inputs: str  # "features" or "similarity"
    col_inputs: str
    Y: sp.csr_matrix  # (n_rows, n_cols) interactions, sparse until the job runs
    unknown: sp.csr_matrix | None  # 0/1 (n_rows, n_cols): the unknown pairs (NaN in the job)
    row_ids: np.ndarray | None
    col_ids: np.ndarray | None
    cv: tuple[int, int] | None
    cv_seed: int
    row_folds: np.ndarray | None  # given fold assignments (cv.row_folds / cv.col_folds)
    col_folds: np.ndarray | None
    estimate: JobEstimate
    side_trees: tuple[int, int]  # trees of the row model and of the column model
    first: JobEstimate  # the first one-sided fit the job runs (its set-up phases)
    record: dict[str, Any] = field(default_factory=dict)
    default: DefaultPlan | None = None  # model "auto": okcore's default

    @property
    def n_fits(self) -> int:
        """Fits of the whole model: one per CV configuration, then the final one."""
        return 1 + (0 if self.cv is None else self.cv[0] * self.cv[1])

    @property
    def fits(self) -> list[int]:
        """The trees of every one-sided fit, in the order run: rows, columns for each CV
        configuration, then for the final fit."""
        configurations = 0 if self.cv is None else self.cv[0] * self.cv[1]
        return list(self.side_trees) * (configurations + 1)

    @property
    def total(self) -> int:
        """The job's progress counts the trees of every one-sided fit (the default: the
        steps of its members' fits)."""
        if self.default is not None:
            return self.n_fits * sum(self.default.steps)
        return sum(self.fits)

    def phases(self) -> PhasePlan:
        """The first fit's set-up phases, then the time of one tree: the rest of the job's
        time over all its trees (the later fits' set-up phases included). The default: the
        job's time over its steps (phase "members")."""
        if self.default is not None:
            return PhasePlan(
                0.0, 0.0, self.estimate.seconds / self.total, counted="members", unit="step"
            )
        first = self.first.factor_seconds + self.first.setup_seconds
        per_tree = max(self.estimate.seconds - first, 0.0) / max(self.total, 1)
        return PhasePlan(self.first.factor_seconds, self.first.setup_seconds, per_tree)


def _ends(
    values: np.ndarray, names: np.ndarray | None, size: int, side: str, column: int
) -> np.ndarray:
    """One end of the edges as vertex rows of ``side``: ids through ``names``, or indices."""
    where = f"edges[:, {column}]"
    if values.dtype == object:
        if names is None:
            raise InvalidRequest(
                f"edges name {side} vertices by id but {side}.ids is not given: add {side}.ids "
                "or give the edges as row indices",
                loc=["edges"],
            )
        try:
            return VertexIds(names).rows_of(values, where)
        except ValueError as exc:
            raise InvalidRequest(f"{exc} (the ids of {side})", loc=["edges"]) from None
    bad = np.flatnonzero(values >= size)
    if bad.size:
        k = int(bad[0])
        raise InvalidRequest(
            f"edges[{k}] names {side[:-1]} {int(values[k])} but there are {size} {side} "
            f"vertices ({bad.size} such edges in all)",
            loc=["edges"],
        )
    return values.astype(np.int64)


def _pair_matrix(
    edges: np.ndarray, req: BipartiteTrainRequest, where: str = "edges"
) -> sp.csr_matrix:
    """0/1 sparse n_rows x n_cols matrix of [row, column] pairs (indices or ids); a pair
    sent twice is one."""
    n_rows, n_cols = req.rows.size, req.cols.size
    r = c = np.zeros(0, dtype=np.int64)
    try:
        if edges.size:
            r = _ends(edges[:, 0], req.rows.ids, n_rows, "rows", 0)
            c = _ends(edges[:, 1], req.cols.ids, n_cols, "cols", 1)
    except InvalidRequest as exc:
        if where == "edges":
            raise
        raise InvalidRequest(str(exc).replace("edges", where, 1), loc=[where]) from None
    Y = sp.csr_matrix((np.ones(r.size), (r, c)), shape=(n_rows, n_cols))
    Y.data[:] = 1.0
    return Y


def interactions(
    req: BipartiteTrainRequest, max_dense: int
) -> tuple[sp.csr_matrix, sp.csr_matrix | None]:
    """The n_rows x n_cols interaction matrix of the request (edges -> 0/1, or the
    adjacency as sent, its NaN entries set apart) as a sparse matrix, and the 0/1 sparse
    matrix of its unknown pairs (``unknown_pairs`` and the adjacency's NaN entries; None
    when there are none). Refused when the dense form, which the job builds, would pass
    ``max_dense`` values, or when a pair is both an interaction and unknown."""
    n_rows, n_cols = req.rows.size, req.cols.size
    if n_rows * n_cols > max_dense:
        raise InvalidRequest(
            f"the interaction matrix would hold {n_rows} x {n_cols} = {n_rows * n_cols} values, "
            f"over the limit of {max_dense} (OKBOOST_MAX_DENSE_VALUES): train on fewer vertices"
        )
    unknown = sp.csr_matrix((n_rows, n_cols))
    if req.adjacency is not None:
        Y = sp.csr_matrix(req.adjacency, dtype=np.float64)
        missing = np.isnan(Y.data)
        if missing.any():  # NaN entries are unknown pairs
            unknown = Y.copy()
            unknown.data = missing.astype(np.float64)
            unknown.eliminate_zeros()
            Y.data[missing] = 0.0
        Y.eliminate_zeros()
        if (Y.data < 0).any():
            raise InvalidRequest(
                "adjacency has negative values: interactions are 0/1 or weights >= 0",
                loc=["adjacency"],
            )
    else:
        assert req.edges is not None
        Y = _pair_matrix(req.edges, req)
    if req.unknown_pairs is not None:
        unknown = unknown + _pair_matrix(req.unknown_pairs, req, "unknown_pairs")
        unknown.data[:] = 1.0
    if not unknown.nnz:
        return Y, None
    both = Y.multiply(unknown).tocoo()
    if both.nnz:
        i, j = int(both.row[0]), int(both.col[0])
        raise InvalidRequest(
            f"{both.nnz} pairs are both interactions and unknown, e.g. row {i} and column "
            f"{j}: an unknown pair has no interaction; remove it from the interactions or "
            "from unknown_pairs",
            details=[{"loc": ["unknown_pairs"], "msg": "pair both interacting and unknown"}],
        )
    if unknown.nnz == n_rows * n_cols:
        raise InvalidRequest("every pair is unknown: there is nothing to learn")
    return Y, unknown.tocsr()


def interaction_warnings(Y: sp.csr_matrix) -> list[str]:
    """What is degenerate about the interactions (sparse, zeros eliminated): a side with
    fewer vertices than okcore advises for a training set (its one-sided model learns from
    them alone: with one, every new vertex of that side gets its profile), and vertices
    without any interaction (their profiles are all zero: a model learns nothing about
    them from their own row). The row side's count is said as for any model (the record's
    ``n_train``)."""
    out = []
    n_cols, least = Y.shape[1], okcore.model_selection.MIN_TRAIN_SAMPLES
    if n_cols < least:
        out.append(
            f"only {n_cols} column {'vertex' if n_cols == 1 else 'vertices'}: the column "
            "model, which scores new columns, learns from them alone and its scores are "
            f"anecdotal (at least {least} are advised)"
        )
    for axis, side in ((1, "row"), (0, "column")):
        empty = int((Y.getnnz(axis=axis) == 0).sum())
        if empty:
            verb = "vertex has" if empty == 1 else "vertices have"
            out.append(f"{empty} {side} {verb} no interaction")
    return out


def _sequential(sides: list[JobEstimate]) -> JobEstimate:
    """One estimate for fits run one after another: limits per fit (rows, features, trees:
    the largest), memory of the largest, seconds and disk added up."""
    n_trees = max(e.n_trees for e in sides)
    stage_seconds = sum(e.n_trees * e.tree_seconds for e in sides)
    return JobEstimate(
        n_train=max(e.n_train for e in sides),
        n_features=max(e.n_features for e in sides),
        rank=max(e.rank for e in sides),
        n_trees=n_trees,
        leaves=max(e.leaves for e in sides),
        search=sides[0].search if len({e.search for e in sides}) == 1 else "exact",
        memory_bytes=max(e.memory_bytes for e in sides),
        factor_seconds=sum(e.factor_seconds for e in sides),
        setup_seconds=sum(e.setup_seconds for e in sides),
        tree_seconds=stage_seconds / max(n_trees, 1),
        disk_bytes=sum(e.disk_bytes for e in sides),
        levers=sides[0].levers,
    )


def plan_bipartite(req: BipartiteTrainRequest, max_dense: int) -> BipartitePlan:
    """Check what can be checked before queueing (parameters, ids, shapes, sizes, folds)
    and cost the job."""
    auto = req.model == "auto"
    if auto:
        _check_default_request(req)
        params: dict[str, Any] = {}
    else:
        if req.max_cpu_seconds is not None:
            raise InvalidRequest(
                "max_cpu_seconds is the budget of model 'auto' (the default): a named model "
                "takes its own params (e.g. n_estimators); leave max_cpu_seconds out",
                details=[{"loc": ["max_cpu_seconds"], "msg": "a budget needs model auto"}],
            )
        params = checked_estimator(req.model, req.params).get_params()
    Y, unknown = interactions(req, max_dense)
    if not Y.nnz:
        raise InvalidRequest("the network has no interaction: there is nothing to learn")
    if auto and Y.data.max() > 1.0:
        raise InvalidRequest(
            f"adjacency holds weights above 1 (up to {Y.data.max():.4g}): the default (model "
            "'auto') learns 0/1 interactions, and its NRLMF member, which models them as "
            "probabilities, diverges on weights. Send 0/1 (an empty cell or null for an "
            'unknown pair), or name a model that learns weights (e.g. "model": "okboost")',
            details=[{"loc": ["adjacency"], "msg": "weights above 1 need a named model"}],
        )
    X_rows, X_cols = req.rows.values, req.cols.values
    symmetrised: list[str] = []
    if req.rows.kind == "similarity":
        X_rows, symmetrised = symmetric_similarity(X_rows, "rows.similarity")
    if req.cols.kind == "similarity":
        X_cols, more = symmetric_similarity(X_cols, "cols.similarity")
        symmetrised += more
    if auto:
        for side, values in (("rows", X_rows), ("cols", X_cols)):
            check_input_width(
                f"the default (model 'auto')'s kernel ridge member, fitted on the {side},",
                values,
                f"send at least 2 {side} with different inputs, or name a model (e.g. "
                '"model": "okboost"): the default takes no params to give its width',
                [side],
            )
    n_rows, n_cols = Y.shape
    data_bytes = sum(array_bytes(a) for a in (X_rows, X_cols)) + 8 * n_rows * n_cols
    default = None
    if auto:
        inputs = default_inputs(req.rows.kind, req.cols.kind)
        widths = (int(X_rows.shape[1]), int(X_cols.shape[1]))
        costs = member_costs(inputs, (n_rows, n_cols), widths, req.max_cpu_seconds)
        estimate = default_estimate(costs, (n_rows, n_cols), widths, data_bytes)
        default = DefaultPlan(inputs, member_steps(costs), req.max_cpu_seconds)
        row_fit = col_fit = estimate
    else:
        row_fit = estimate_job(req.model, params, X_rows, PROFILE_KERNEL, n_cols, data_bytes)
        col_fit = estimate_job(req.model, params, X_cols, PROFILE_KERNEL, n_rows, data_bytes)
        estimate = _sequential([row_fit, col_fit])
    cv = None
    row_folds = col_folds = None
    if req.cv is not None:
        row_folds = _given_folds(req.cv.row_folds, n_rows, "row")
        col_folds = _given_folds(req.cv.col_folds, n_cols, "column")
        k_rows, k_cols = req.cv.pair
        cv = (
            k_rows if row_folds is None else int(row_folds.max()) + 1,
            k_cols if col_folds is None else int(col_folds.max()) + 1,
        )
        for k, n, side in ((cv[0], n_rows, "row"), (cv[1], n_cols, "column")):
            if k > n:
                raise InvalidRequest(
                    f"cv.folds asks for {k} {side} folds but there are {n} {side} vertices"
                )
        configurations = cv[0] * cv[1]
        share = (1 - 1 / cv[0]) * (1 - 1 / cv[1])  # of the interaction matrix each fit sees
        estimate = replace(
            estimate,
            cv_fits=2 * configurations,
            cv_trees=2 * configurations * estimate.n_trees,
            cv_seconds=configurations * estimate.seconds * share,
            levers=f"{estimate.levers}, fewer cv.folds",
        )
    warnings = (
        symmetrised + okcore.model_selection.training_warnings(n_rows) + interaction_warnings(Y)
    )
    record = {
        "name": req.name,
        "status": "training",
        "created": time.time(),
        "model": req.model,
        "params": params,
        "kernel": {"type": "linear", "outputs": "interaction profiles"},
        "n_train": int(n_rows),
        "n_features": int(X_rows.shape[1]),
        "output_dim": int(n_cols),
        "has_ids": req.rows.ids is not None,
        "warnings": warnings,
        "task": "bipartite",
        "bipartite": {
            "n_rows": int(n_rows),
            "n_cols": int(n_cols),
            "row_inputs": req.rows.kind,
            "col_inputs": req.cols.kind,
            "n_row_features": int(X_rows.shape[1]),
            "n_col_features": int(X_cols.shape[1]),
            "n_interactions": int(Y.nnz),
            "n_unknown": 0 if unknown is None else int(unknown.nnz),
            "weighted": bool(not np.isin(Y.data, (0.0, 1.0)).all()),
            "new_pairs": None if auto else req.new_pairs,
            "has_row_ids": req.rows.ids is not None,
            "has_col_ids": req.cols.ids is not None,
            "cv": None,
        },
    }
    return BipartitePlan(
        model=req.model,
        params=params,
        new_pairs=req.new_pairs,
        X_rows=X_rows,
        X_cols=X_cols,
        row_inputs=req.rows.kind,
        col_inputs=req.cols.kind,
        Y=Y,
        unknown=unknown,
        row_ids=req.rows.ids,
        col_ids=req.cols.ids,
        cv=cv,
        cv_seed=0 if req.cv is None else req.cv.random_state,
        row_folds=row_folds,
        col_folds=col_folds,
        estimate=estimate,
        side_trees=(row_fit.n_trees, col_fit.n_trees),
        first=row_fit,
        record=record,
        default=default,
    )


def _check_default_request(req: BipartiteTrainRequest) -> None:
    """The default (model "auto") takes no params, fixes each member's new x new method
    and compares vertices by their dense inputs: a 422 saying what to send instead."""
    if req.params:
        raise InvalidRequest(
            "params set a named model's hyper-parameters, and model 'auto' (the default, a "
            "rank average of okcore's bipartite members) takes none: leave params out, or "
            'name the model they are for (e.g. "model": "okboost")',
            details=[{"loc": ["params"], "msg": "params need a named model"}],
        )
    if req.new_pairs != "two-step":
        raise InvalidRequest(
            "new_pairs chooses how a named model scores new x new pairs; each member of the "
            "default (model 'auto') fixes its own: leave new_pairs out, or name a model",
            details=[{"loc": ["new_pairs"], "msg": "new_pairs needs a named model"}],
        )
    for side in ("rows", "cols"):
        if sp.issparse(getattr(req, side).values):
            raise InvalidRequest(
                f"{side} are sparse: the default (model 'auto') compares vertices by their "
                'dense inputs; send them dense, or name a model (e.g. "model": "okboost")',
                details=[{"loc": [side], "msg": "sparse inputs need a named model"}],
            )


MAX_GIVEN_FOLDS = 20


def _given_folds(folds: list[int] | None, n: int, side: str) -> np.ndarray | None:
    """A given fold assignment checked by okcore (one id 0..K-1 per vertex, every fold
    non-empty), K at most MAX_GIVEN_FOLDS; a 422 saying what is wrong."""
    if folds is None:
        return None
    key = "row_folds" if side == "row" else "col_folds"
    try:
        checked = okcore.bipartite.check_folds(np.asarray(folds), n, side)
    except okcore.DataError as exc:
        raise InvalidRequest(
            f"cv.{key}: {exc}", details=[{"loc": ["cv", key], "msg": str(exc)}]
        ) from None
    if checked.max() + 1 > MAX_GIVEN_FOLDS:
        raise InvalidRequest(
            f"cv.{key} numbers {checked.max() + 1} folds: at most {MAX_GIVEN_FOLDS}",
            details=[{"loc": ["cv", key], "msg": "too many folds"}],
        )
    return checked


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def cv_record(
    result: okcore.bipartite.BipartiteCVResult, folds: tuple[int, int], seed: int
) -> dict[str, Any]:
    """The record's ``bipartite.cv``: the means over configurations (null where a block never
    had both an interaction and a non-interaction) and every configuration's scores."""
    blocks = (*okcore.bipartite.BLOCKS, "pooled")
    configurations = [
        {
            "row_fold": int(f["row_fold"]),
            "col_fold": int(f["col_fold"]),
            **{b: {m: _finite(f[b][m]) for m in ("auroc", "ap")} for b in blocks},
        }
        for f in result.folds
    ]
    return {
        "folds": list(folds),
        "random_state": seed,
        "mean": {k: _finite(v) for k, v in result.summary().items()},
        "configurations": configurations,
    }


def run_bipartite(plan: BipartitePlan, root: Path, model_id: str, progress: Reporter) -> str:
    """Cross-validate (when asked), fit, store. Returns "done", "cancelled" or "deleted".
    Progress counts the trees of every one-sided fit, with each fit's set-up phases (the
    default: its members' steps); a cancel is heard after the current tree (the default:
    after the current tree of a member with trees, else when the member ends)."""
    record = dict(plan.record)
    info = dict(record["bipartite"])
    Y = plan.Y.toarray()  # dense only now that the job runs
    if plan.unknown is not None:
        Y[plan.unknown.nonzero()] = np.nan  # okcore's unknown pairs
    heard: Any
    if plan.default is None:
        fits = FitsProgress(progress, plan.fits)
        template = okcore.make_estimator(plan.model, plan.params)
        model = okcore.bipartite.BipartiteRegressor(template, new_pairs=plan.new_pairs)
        sides = {"rows": 0, "columns": 1}

        def heard(configuration: int, p: okcore.FitProgress) -> None:
            fits.fit(2 * configuration + sides[p.part or "rows"], p)

    else:
        model = okcore.bipartite.BipartiteRegressor(
            inputs=plan.default.inputs, max_cpu_seconds=plan.default.max_cpu_seconds
        )
        heard = DefaultProgress(progress, plan.default.steps, plan.n_fits).fit
    try:
        if plan.cv is not None:
            result = okcore.bipartite.bipartite_cross_validate(
                model, plan.X_rows, plan.X_cols, Y, n_folds=plan.cv,
                row_inputs=plan.row_inputs, col_inputs=plan.col_inputs,
                random_state=plan.cv_seed, fit_callback=heard,
                row_folds=plan.row_folds, col_folds=plan.col_folds,
            )  # fmt: skip
            info["cv"] = cv_record(result, plan.cv, plan.cv_seed)
            info["cv"]["given_folds"] = {
                "rows": plan.row_folds is not None,
                "cols": plan.col_folds is not None,
            }
        final = plan.n_fits - 1
        started = time.perf_counter()
        model.fit(plan.X_rows, plan.X_cols, Y, callback=lambda p: heard(final, p))
        fit_time = time.perf_counter() - started
    except Cancelled:
        return "cancelled"
    if plan.default is None:
        record.update(
            status="ready",
            fit_time=float(model.row_model_.fit_time_ + model.col_model_.fit_time_),
            n_estimators=int(model.row_model_.n_estimators_),
            output_space=output_space_summary(model.row_model_.output_space_),
            resolved_params=resolved_params(model.row_model_),
            bipartite=info,
            error=None,
        )
        stored: Any = model.row_model_
        extra = functools.partial(write_bipartite_extra, model=model, col_ids=plan.col_ids)
    else:
        info["default"] = default_summary(model, plan.default.inputs)
        record.update(
            status="ready", fit_time=fit_time, resolved_params={}, bipartite=info, error=None
        )
        stored = model  # saved whole: the rank average and its members
        extra = functools.partial(write_default_extra, col_ids=plan.col_ids)
    progress.saving()
    written = write_model(  # the learnt interactions: unknown pairs filled
        root, model_id, stored, plan.X_rows, model.Y_, record, plan.row_ids, extra=extra
    )
    return "done" if written else "deleted"
