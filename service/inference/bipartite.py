"""Interaction scores, ranked edges and per-block scores of a bipartite model (POST /kernel
and /evaluate with ``rows`` / ``cols``; no HTTP here).

The three blocks of okcore.bipartite: new rows x the known columns (W_row Y), the known rows
x new columns (Y W_col^T) and new rows x new columns (``new_pairs``: two-step by default).
Edges are chosen from each block as /kernel chooses new-known edges (threshold and / or
top_k per new vertex, best first within a vertex); every pair is answered in (row, column)
order, by row numbers and, when either side has ids, by id. Each block's dense scores are
bounded by the service's dense limit before they are computed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import okcore
from service.errors import InvalidRequest
from service.http.encoding import Triples
from service.inference.predict import check_dense, select_edges
from service.schemas.bipartite import (
    BipartiteEvaluateRequest,
    BipartiteKernelRequest,
    BipartiteTestEdges,
    NewSide,
)
from service.store.model_store import LoadedModel
from service.vertex_ids import VertexIds

SIDES = {"rows": ("row", "n_rows", "n_row_features"), "cols": ("col", "n_cols", "n_col_features")}


def check_bipartite(m: LoadedModel, route: str) -> dict[str, Any]:
    """The model's ``bipartite`` record; a 422 for any other model."""
    if m.record.get("task") != "bipartite":
        raise InvalidRequest(
            f"model '{m.model_id}' is not a bipartite model (its task is "
            f"{m.record.get('task', 'structured')}): send `inputs` to {route}, not rows / cols"
        )
    info: dict[str, Any] = m.record["bipartite"]
    return info


def side_inputs(m: LoadedModel, side: NewSide, name: str) -> Any:
    """The model's inputs of new vertices of side ``name`` ("rows" / "cols"): feature rows,
    or their similarity to the training vertices of that side (the empirical kernel map)."""
    info = m.record["bipartite"]
    prefix, n_name, p_name = SIDES[name]
    kind = info[f"{prefix}_inputs"]
    if kind == "features":
        if side.inputs is None:
            raise InvalidRequest(
                f"{name}: the model's {name} were trained on features: send {name}.inputs"
            )
        want, X = info[p_name], side.inputs
        what = f"{want} features"
    else:
        if side.similarity is None:
            raise InvalidRequest(
                f"{name}: the model's {name} were trained on a similarity: send "
                f"{name}.similarity, the new vertices' similarity to the {info[n_name]} "
                "training vertices (in their training order)"
            )
        want, X = info[n_name], side.similarity
        what = f"{want} training vertices (one similarity per training vertex)"
        if side.similarity_ids is not None:
            X = _by_training_id(m, side, name, want)
    if X.shape[1] != want:
        raise InvalidRequest(f"{name} has {X.shape[1]} columns but the model expects {what}")
    return X


def _by_training_id(m: LoadedModel, side: NewSide, name: str, n: int) -> np.ndarray:
    """The similarity's columns put in the training order by their ids (``similarity_ids``,
    or a labelled table's header): every training vertex named once."""
    known = m.ids if name == "rows" else m.col_ids
    where = f"{name}.similarity_ids"
    if known is None:
        raise InvalidRequest(
            f"{where}: the model's {name} were trained without ids, so the columns of "
            f"{name}.similarity cannot be matched by id: send them in the training order "
            "without a header"
        )
    assert side.similarity is not None and side.similarity_ids is not None
    if side.similarity_ids.shape[0] != n:
        raise InvalidRequest(
            f"{where} names {side.similarity_ids.shape[0]} training vertices but the model has "
            f"{n}: one column per training vertex"
        )
    try:
        columns = known.rows_of(side.similarity_ids, where, f" (the training ids of {name})")
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
    X = np.empty_like(side.similarity)
    X[:, columns] = side.similarity  # ids are unique: a permutation of the training order
    return X


def _namer(ids: VertexIds | np.ndarray | None) -> Any:
    values = ids.values if isinstance(ids, VertexIds) else ids
    if values is None:
        return lambda rows: np.asarray(rows).astype(str).astype(object)
    return lambda rows: values[rows]


def _named(rows: np.ndarray, cols: np.ndarray, row_names: Any, col_names: Any) -> np.ndarray:
    out = np.empty((rows.shape[0], 2), dtype=object)
    out[:, 0], out[:, 1] = row_names(rows), col_names(cols)
    return out


def block_matrices(
    m: LoadedModel, rows: NewSide | None, cols: NewSide | None, max_dense: int
) -> dict[str, np.ndarray]:
    """The score matrices of the blocks the new sides give (new_rows (q, n_cols),
    new_cols (n_rows, q'), new_pairs (q, q')), each bounded before it is computed."""
    info = m.record["bipartite"]
    bip = m.task_model
    Xr = None if rows is None else side_inputs(m, rows, "rows")
    Xc = None if cols is None else side_inputs(m, cols, "cols")
    shapes = {}
    if Xr is not None:
        shapes["new_rows"] = (Xr.shape[0], info["n_cols"])
    if Xc is not None:
        shapes["new_cols"] = (info["n_rows"], Xc.shape[0])
    if Xr is not None and Xc is not None:
        shapes["new_pairs"] = (Xr.shape[0], Xc.shape[0])
    for block, (a, b) in shapes.items():
        check_dense(a, b, max_dense, f"the {block} scores", "send fewer new vertices per request")
    out: dict[str, np.ndarray] = {}
    if Xr is not None:
        out["new_rows"] = np.asarray(bip.predict_new_rows(Xr), dtype=float)
    if Xc is not None:
        out["new_cols"] = np.asarray(bip.predict_new_cols(Xc), dtype=float)
    if Xr is not None and Xc is not None:
        out["new_pairs"] = np.asarray(bip.predict_new_pairs(Xr, Xc), dtype=float)
    return out


def kernel(m: LoadedModel, req: BipartiteKernelRequest, *, max_dense: int) -> dict[str, Any]:
    """Scores of the requested blocks and, with ``threshold`` / ``top_k``, their edges per
    new vertex, best first (and by id when either side has ids)."""
    check_bipartite(m, "/kernel")
    scores = block_matrices(m, req.rows, req.cols, max_dense)
    out: dict[str, Any] = {
        "model_id": m.model_id,
        "task": "bipartite",
        "scores": scores if req.return_scores else None,
        "edges": None,
    }
    if req.threshold is None and req.top_k is None:
        return out
    new_row_ids = None if req.rows is None else req.rows.ids
    new_col_ids = None if req.cols is None else req.cols.ids
    names = {
        "new_rows": (_namer(new_row_ids), _namer(m.col_ids)),
        "new_cols": (_namer(m.ids), _namer(new_col_ids)),
        "new_pairs": (_namer(new_row_ids), _namer(new_col_ids)),
    }
    with_ids = any(x is not None for x in (new_row_ids, new_col_ids, m.ids, m.col_ids))
    edges: dict[str, Any] = dict.fromkeys(("new_rows", "new_cols", "new_pairs"))
    for block, S in scores.items():
        by_new = S.T if block == "new_cols" else S  # one row per new vertex
        t = select_edges(by_new, threshold=req.threshold, top_k=req.top_k, square=False)
        if block == "new_cols":  # (new column, known row) -> (row, column) order
            t = Triples(t.b, t.a, t.value)
        edges[block] = t
        if with_ids:
            edges[f"{block}_ids"] = _named(t.a, t.b, *names[block])
    out["edges"] = edges
    return out


def _ends(
    edges: np.ndarray, q: int, n: int, where: str, what: tuple[str, str]
) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of an index edge list, checked against its block's sizes (q, n)."""
    for column, size, name in ((0, q, what[0]), (1, n, what[1])):
        if edges.dtype == object:
            raise InvalidRequest(f"{where} takes row indices; send pairs of ids in edges.by_id")
        bad = np.flatnonzero(edges[:, column] >= size)
        if bad.size:
            k = int(bad[0])
            raise InvalidRequest(
                f"{where}[{k}] = {edges[k].tolist()} names {name} {int(edges[k, column])} but "
                f"there are {size}"
            )
    return edges[:, 0].astype(np.int64), edges[:, 1].astype(np.int64)


def _by_id(
    m: LoadedModel, req: BipartiteEvaluateRequest, pairs: np.ndarray, where: str
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], int]:
    """by_id pairs (``where``: "edges" or "unknown_pairs") split into the blocks (rows of
    each end), and the pairs of two training vertices (ignored)."""
    if pairs.dtype != object:
        raise InvalidRequest(f"{where}.by_id takes pairs of ids (strings)")
    ends = []
    for column, side, known in ((0, req.rows, m.ids), (1, req.cols, m.col_ids)):
        values = pairs[:, column]
        new_rows, is_new = (
            VertexIds(side.ids).find(values)
            if side is not None and side.ids is not None
            else (np.zeros(len(values), np.int64), np.zeros(len(values), bool))
        )
        old_rows, is_old = (
            known.find(values)
            if known is not None
            else (np.zeros(len(values), np.int64), np.zeros(len(values), bool))
        )
        unknown = np.flatnonzero(~(is_new | is_old))
        if unknown.size:
            k = int(unknown[0])
            name = "row" if column == 0 else "column"
            raise InvalidRequest(
                f"{where}.by_id[{k}][{column}] = {values[k]!r} is neither a new {name} id (the "
                f"request's {'rows' if column == 0 else 'cols'}.ids) nor a training {name} id "
                f"({unknown.size} such ids in all): send the new {name}s with their ids "
                f"({'rows' if column == 0 else 'cols'}.ids) to score their pairs"
            )
        ends.append((np.where(is_new, new_rows, old_rows), is_new))
    (r, r_new), (c, c_new) = ends
    blocks = {
        "new_rows": (r[r_new & ~c_new], c[r_new & ~c_new]),
        "new_cols": (r[~r_new & c_new], c[~r_new & c_new]),
        "new_pairs": (r[r_new & c_new], c[r_new & c_new]),
    }
    return blocks, int((~r_new & ~c_new).sum())


def _score(truth: np.ndarray, scores: np.ndarray) -> dict[str, Any]:
    """A block's measures; NaN in ``truth`` is an unknown pair, left out by okcore."""
    s = okcore.bipartite.block_scores(truth, scores)
    unknown = int(np.isnan(truth).sum())
    return {
        "auroc": float(s["auroc"]) if np.isfinite(s["auroc"]) else None,
        "ap": float(s["ap"]) if np.isfinite(s["ap"]) else None,
        "n_pairs": int(truth.size) - unknown,
        "n_interactions": int((np.nan_to_num(truth) != 0).sum()),
        "n_unknown": unknown,
    }


BLOCK_ENDS = {
    "new_rows": ("new row", "training column"),
    "new_cols": ("training row", "new column"),
    "new_pairs": ("new row", "new column"),
}
BLOCK_NEEDS = {"new_rows": "rows", "new_cols": "cols", "new_pairs": "rows and cols"}


def _block_pairs(
    m: LoadedModel,
    req: BipartiteEvaluateRequest,
    edges: BipartiteTestEdges,
    where: str,
    sizes: dict[str, tuple[int, int]],
    given: set[str],
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], int]:
    """The pairs of ``edges`` (by row number and by id) as (rows, columns) per block, each
    checked against its block's sizes; a block the request's sides do not give (not in
    ``given``) must have none. Also the by_id pairs of two training vertices (ignored)."""
    nothing = np.zeros(0, np.int64)
    more, ignored = {block: (nothing, nothing) for block in sizes}, 0
    if edges.by_id.size:
        more, ignored = _by_id(m, req, edges.by_id, where)
    out = {}
    for block in sizes:
        pairs = getattr(edges, block)
        extra = more[block]
        if block not in given:
            if len(pairs) or extra[0].size:
                raise InvalidRequest(
                    f"{len(pairs) + extra[0].size} pairs of {where} fall in the {block} "
                    f"block, which needs test {BLOCK_NEEDS[block]} in the request"
                )
            continue
        a, b = _ends(pairs, *sizes[block], f"{where}.{block}", BLOCK_ENDS[block])
        out[block] = (np.r_[a, extra[0]], np.r_[b, extra[1]])
    return out, ignored


def evaluate(m: LoadedModel, req: BipartiteEvaluateRequest, *, max_dense: int) -> dict[str, Any]:
    """AUROC and average precision of each block the test sides give, and pooled."""
    check_bipartite(m, "/evaluate")
    info = m.record["bipartite"]
    scores = block_matrices(m, req.rows, req.cols, max_dense)
    q = 0 if req.rows is None else req.rows.size
    qc = 0 if req.cols is None else req.cols.size
    sizes = {
        "new_rows": (q, info["n_cols"]),
        "new_cols": (info["n_rows"], qc),
        "new_pairs": (q, qc),
    }
    given = set(scores)
    positive, ignored = _block_pairs(m, req, req.edges, "edges", sizes, given)
    truth = {block: np.zeros(sizes[block]) for block in scores}
    for block, (a, b) in positive.items():
        truth[block][a, b] = 1.0
    if req.unknown_pairs is not None:
        unknown, _ = _block_pairs(m, req, req.unknown_pairs, "unknown_pairs", sizes, given)
        for block, (a, b) in unknown.items():
            both = np.flatnonzero(truth[block][a, b] != 0)
            if both.size:
                k = int(both[0])
                raise InvalidRequest(
                    f"{both.size} pairs of the {block} block are both true interactions and "
                    f"unknown, e.g. ({int(a[k])}, {int(b[k])}): an unknown pair has no known "
                    "interaction; remove it from edges or from unknown_pairs",
                    details=[
                        {"loc": ["unknown_pairs"], "msg": "pair both interacting and unknown"}
                    ],
                )
            truth[block][a, b] = np.nan
    out: dict[str, Any] = {
        "model_id": m.model_id,
        "n_new_rows": q,
        "n_new_cols": qc,
        "n_ignored": ignored,
    }
    for block in sizes:
        out[block] = _score(truth[block], scores[block]) if block in scores else None
    out["pooled"] = _score(
        np.concatenate([truth[b].ravel() for b in scores]),
        np.concatenate([scores[b].ravel() for b in scores]),
    )
    return out


def refuse_bipartite(m: LoadedModel, route: str) -> None:
    """A 422 for a one-set request (``inputs``) to a bipartite model."""
    if m.record.get("task") != "bipartite":
        return
    if route == "/predict":  # it takes no rows / cols: name the routes that do
        raise InvalidRequest(
            f"model '{m.model_id}' is a bipartite model, which /predict does not answer: "
            "send new `rows` and / or `cols` (with their inputs or similarity) to POST /kernel "
            "for their scores and edges, or with their interactions to POST /evaluate"
        )
    raise InvalidRequest(
        f"model '{m.model_id}' is a bipartite model: send new `rows` and / or `cols` "
        f"(with their inputs or similarity) to {route}, not `inputs`"
    )
