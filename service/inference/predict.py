"""Predictions and kernel scores from a loaded model (no HTTP here).

Implements the network-completion read-out of the paper (section 3): the
predicted kernel k^(x, x') = <F(x), F(x')> (eq. 7) between new vertices, and
between new and known vertices either predicted on both sides or observed on
the known side, <F(x), phi(y_i)>; thresholding or top-k gives edges.

What depends only on the model is computed once per loaded model (see
:class:`service.store.model_store.LoadedModel`): F(x_i) of the N training vertices in factor
form, and the training factor phi(y_i). Scores against the N training vertices are
then F(x) @ F(x_i).T (or phi), computed a block of query rows at a time, so asking
for the edges of one new vertex costs O(N r) and no Q x N matrix is ever held whole
unless the client asks for it (``return_kernel`` against the training vertices,
``weights = "dense"``), which is bounded by ``max_dense_values``.

Answers are dicts of ndarrays and :class:`service.http.encoding.Triples` (edges, sparse
weights), encoded as JSON, ``.npy`` or ``.npz`` by :mod:`service.http.encoding`. When the model
has vertex ids or the request names its new vertices (``ids``), edges and pre-images are
also answered by id (``*_ids`` fields, aligned with the row-index fields).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import okcore
from service.errors import InvalidRequest
from service.http.arrays import missing_problem
from service.http.encoding import Triples
from service.schemas.api import KernelRequest, PredictRequest
from service.store.model_store import LoadedModel

BLOCK_ROWS = 256
"""Query rows scored at once against the training vertices."""
BLOCK_VALUES = 1 << 22
"""...and at most this many scores per block (32 MiB of float64), whatever N is."""
DEFAULT_MAX_DENSE = 20_000_000
"""Settings.max_dense_values when a caller gives none."""


def block_rows(n_cols: int) -> int:
    """Rows per block so that a (rows, n_cols) block of scores stays within BLOCK_VALUES."""
    return max(1, min(BLOCK_ROWS, BLOCK_VALUES // max(n_cols, 1)))


def check_features(m: LoadedModel, arr: Any, name: str) -> None:
    p = m.inputs.shape[1]
    if arr.shape[1] != p and m.record.get("input_kind") == "similarity":
        raise InvalidRequest(
            f"{name} has {arr.shape[1]} columns but model '{m.model_id}' was trained on a "
            f"similarity among {p} training items: send the Q x {p} similarity of the new "
            "items to the training items, columns in the training order"
        )
    if arr.shape[1] != p:
        raise InvalidRequest(
            f"{name} has {arr.shape[1]} columns but model '{m.model_id}' was trained on "
            f"{p} features"
        )
    # a multi-label or bipartite model's own rules refuse them
    accepts = m.task_model is None and bool(getattr(m.estimator, "accepts_missing", False))
    similarity = m.record.get("input_kind") == "similarity"
    problem = missing_problem(
        arr, name, str(m.record.get("model", m.model_id)), accepts, similarity
    )
    if problem is not None:
        raise InvalidRequest(problem, details=[{"loc": [name], "msg": "missing values"}])


def by_training_id(m: LoadedModel, arr: Any, names: list[str] | None) -> Any:
    """The inputs of a similarity model with their columns put in the training order when
    their names (``input_columns``, a labelled table's header) are the training items' ids;
    as sent when the model reads features, has no ids, or none of the names is an id.
    A 422 when some names are ids and others not, or an item is missing or named twice."""
    if names is None or m.record.get("input_kind") != "similarity" or m.ids is None:
        return arr
    if len(names) != arr.shape[1]:
        raise InvalidRequest(
            f"input_columns has {len(names)} names but inputs {arr.shape[1]} columns: one "
            "name per column"
        )
    rows, found = m.ids.find(np.asarray(names, dtype=object))
    if not found.any():
        return arr  # not ids: the columns are in the training order
    n = m.inputs.shape[0]
    if not found.all() or len(names) != n or np.unique(rows).size != n:
        other = [v for v, f in zip(names, found.tolist(), strict=True) if not f]
        said = f", and {len(other)} other names (e.g. {other[0][:80]!r})" if other else ""
        raise InvalidRequest(
            f"the columns of inputs name {int(found.sum())} training items (ids){said}: a "
            f"labelled similarity names each of the {n} training items once, in any order"
        )
    order = np.empty(n, dtype=np.int64)
    order[rows] = np.arange(n)
    return arr[:, order]


Namer = Callable[[np.ndarray], np.ndarray]


def _namer(ids: np.ndarray | None) -> Namer:
    """Names of rows: their ids, or (no ids) their row numbers as decimal strings."""
    if ids is None:
        return lambda rows: np.asarray(rows).astype(str).astype(object)
    return lambda rows: ids[rows]


def _namers(m: LoadedModel, new_ids: np.ndarray | None) -> tuple[Namer, Namer] | None:
    """(names of new vertices, names of training vertices) when ids are in play (the model
    has ids or the request gave some), else None."""
    if m.ids is None and new_ids is None:
        return None
    return _namer(new_ids), _namer(None if m.ids is None else m.ids.values)


def _pair_names(t: Triples, name_a: Namer, name_b: Namer) -> np.ndarray:
    """(E, 2) object array of [name of a, name of b] for each triple."""
    out = np.empty((len(t), 2), dtype=object)
    out[:, 0] = name_a(t.a)
    out[:, 1] = name_b(t.b)
    return out


def _check_ids(ids: np.ndarray | None, n_rows: int) -> None:
    if ids is not None and ids.shape[0] != n_rows:
        raise InvalidRequest(f"ids has {ids.shape[0]} entries but inputs has {n_rows} rows")


def check_model_outputs(
    m: LoadedModel,
    n_train: int,
    vectors: tuple[str, np.ndarray | None],
    gram: tuple[str, np.ndarray | None],
    diag_name: str,
) -> None:
    """Outputs a request sends, as (name, array) pairs: as vectors they need a model trained on
    output vectors, with as many columns; as their kernel against the model's N training
    outputs (with its diagonal ``diag_name``), N columns. A 422 saying which form to send
    otherwise."""
    (vectors_name, Y), (gram_name, G) = vectors, gram
    if Y is not None:
        if m.outputs is None:
            raise InvalidRequest(
                f"model '{m.model_id}' was trained without output vectors (its kernel is "
                f"{m.record['kernel']['type']}): send {gram_name} and {diag_name} (the kernel "
                f"against the training outputs) instead of {vectors_name}"
            )
        if Y.shape[1] != m.outputs.shape[1]:
            raise InvalidRequest(
                f"{vectors_name} have {Y.shape[1]} columns but the model's outputs have "
                f"{m.outputs.shape[1]}"
            )
    elif G is not None and G.shape[1] != n_train:
        raise InvalidRequest(
            f"{gram_name} has {G.shape[1]} columns but the model has {n_train} training outputs"
        )


def kept_columns(m: LoadedModel, gram: np.ndarray) -> np.ndarray:
    """A Q x N kernel against the training outputs, as okcore takes it: the columns of the
    rows the model kept (all, unless early stopping held rows out)."""
    kept = m.kept_rows()
    return gram if kept is None else gram[:, kept]


def observed_factor(m: LoadedModel, field: str, instead: str) -> np.ndarray:
    """phi(y_i) of every training vertex, (N, r), for scores against the observed training
    outputs; a 422 naming ``field`` and what to send ``instead`` when the model keeps no
    output features for some rows (held out by early stopping, or of sample_weight 0, which
    krr-boost drops) or when its training outputs have unknown entries (a masked fit's
    factor holds 0 there, which is no observed output)."""
    kept = m.kept_rows()
    n = m.inputs.shape[0]
    if kept is not None:
        causes = []
        if m.record.get("sample_weight"):
            causes.append("rows of sample_weight 0, which it drops")
        if (m.record.get("params") or {}).get("n_iter_no_change") is not None:
            causes.append("rows held out for early stopping (n_iter_no_change without an eval_set)")
        raise InvalidRequest(
            f"{field}: this model was fitted on {len(kept)} of its {n} training rows (the "
            f"others are {' or '.join(causes) or 'rows it held out'}) and keeps no output "
            "features for the others, so scores against every training vertex's observed "
            f"outputs cannot be computed; {instead}, or train so that every row is fitted "
            "(an eval_set for early stopping, a positive sample_weight for every row)",
            details=[{"loc": [field], "msg": "the model did not fit every training row"}],
        )
    if m.outputs is not None and np.isnan(m.outputs).any():
        raise InvalidRequest(
            f"{field}: model '{m.model_id}' was trained on partly known outputs (its training "
            "outputs have unknown entries), so scores against the observed training outputs "
            f"cannot be computed (an unknown entry is no number); {instead}",
            details=[{"loc": [field], "msg": "the training outputs have unknown entries"}],
        )
    return m.train_factor()


def partly_known_outputs(m: LoadedModel) -> bool:
    """Whether model ``m`` was fitted on partly known outputs (null / NaN entries of
    ``output_kernel.outputs``) or with ``output_weight``: it does not hold its training
    outputs whole, so nothing that decodes among them or weighs them (W^F) answers."""
    return bool((m.record.get("resolved_params") or {}).get("masked_outputs"))


def _refuse_partly_known(m: LoadedModel, req: PredictRequest) -> None:
    """A 422 in the request's words for what /predict cannot answer on such a model (the
    estimator's own message names its Python methods)."""
    if not partly_known_outputs(m):
        return
    trained = (
        f"model '{m.model_id}' was trained on partly known outputs (null / NaN entries of "
        "output_kernel.outputs, or output_weight), so it does not hold its training outputs whole"
    )
    if req.weights != "none":
        raise InvalidRequest(
            f"weights = '{req.weights}' asks for W^F, the weights of the training outputs in "
            f"each prediction, but {trained}: no such weights give its predictions. Ask for "
            "weights = 'none' (the default)",
            details=[{"loc": ["weights"], "msg": "partly known training outputs"}],
        )
    if req.candidates is None and req.candidate_gram is None:
        raise InvalidRequest(
            f"/predict chooses pre-images among the training outputs, but {trained}. Send the "
            "output vectors to choose among as `candidates` (C x d, e.g. the training outputs "
            "you know whole, or a set of your own), or ask POST /kernel for the predicted kernel",
            details=[{"loc": ["candidates"], "msg": "required for this model"}],
        )


def check_dense(rows: int, cols: int, limit: int, what: str, instead: str) -> None:
    """422 before computing a dense (rows, cols) answer larger than ``limit`` values."""
    if rows * cols > limit:
        raise InvalidRequest(
            f"{what} would hold {rows} x {cols} = {rows * cols} values, over the limit of "
            f"{limit} (OKBOOST_MAX_DENSE_VALUES): {instead}"
        )


def predict(
    m: LoadedModel, req: PredictRequest, *, max_dense: int = DEFAULT_MAX_DENSE
) -> dict[str, Any]:
    """Pre-image indices and scores, optional outputs and W^F weights (and their ids)."""
    req.inputs = by_training_id(m, req.inputs, req.input_columns)
    check_features(m, req.inputs, "inputs")
    _check_ids(req.ids, req.inputs.shape[0])
    _refuse_partly_known(m, req)
    est = m.estimator
    n_train = m.inputs.shape[0]
    n_query = req.inputs.shape[0]
    if req.weights == "dense":
        check_dense(
            n_query,
            n_train,
            max_dense,
            "weights = 'dense' (Q x N W^F)",
            "ask for weights = 'sparse' with weights_top_k, the largest weights of each row",
        )
    elif req.weights == "sparse":
        check_dense(
            n_query,
            min(req.weights_top_k, n_train),
            max_dense,
            "weights = 'sparse' (Q x weights_top_k triples)",
            "ask for a smaller weights_top_k or send fewer rows per request",
        )
    index_space = "training"
    pool: np.ndarray | None = m.outputs  # what indices refer to, when known
    kwargs: dict[str, Any] = {}
    check_model_outputs(
        m, n_train, ("candidates", req.candidates), ("candidate_gram", req.candidate_gram),
        "candidate_diag",
    )  # fmt: skip
    if req.candidates is not None:
        kwargs["candidates"] = req.candidates
        pool, index_space = req.candidates, "candidates"
    elif req.candidate_gram is not None:
        kwargs["candidate_gram"] = kept_columns(m, req.candidate_gram)
        kwargs["candidate_diag"] = req.candidate_diag
        pool, index_space = None, "candidates"
    n_pool = (
        req.candidate_gram.shape[0]
        if req.candidate_gram is not None
        else (pool.shape[0] if pool is not None else n_train)
    )
    top_k = min(req.top_k, n_pool)
    check_answer_sizes(req, n_query, n_train, top_k, pool, max_dense)
    indices, scores = _pre_images(est, req.inputs, top_k, n_pool, max_dense, kwargs)
    kept = m.kept_rows()
    if kept is not None and index_space == "training":
        indices = kept[indices]  # the model's training outputs as the rows it was given
    out: dict[str, Any] = {
        "model_id": m.model_id,
        "index_space": index_space,
        "indices": indices,
        "scores": np.asarray(scores, dtype=float),
        "outputs": None,
        "weights": None,
        "weights_sparse": None,
    }
    if m.ids is not None and index_space == "training":
        out["index_ids"] = m.ids.names(indices)
    if req.return_outputs:
        if pool is None:
            raise InvalidRequest(
                "return_outputs needs outputs to return: this model was trained on a "
                f"{m.record['kernel']['type']} kernel without output vectors"
                + (
                    " and candidates were given as a Gram matrix"
                    if index_space == "candidates"
                    else ""
                )
            )
        out["outputs"] = pool[indices]
    if req.weights == "dense":
        w = np.asarray(est.predict_weights(req.inputs), dtype=float)
        if kept is not None:  # rows held out by early stopping weigh 0
            out["weights"] = np.zeros((n_query, n_train))
            out["weights"][:, kept] = w
        else:
            out["weights"] = w
    elif req.weights == "sparse":
        # a block of query rows at a time: the dense Q x N W^F is never held whole
        blocks: list[Triples] = []
        step = block_rows(n_train)
        for start in range(0, n_query, step):
            w = np.asarray(est.predict_weights(req.inputs[start : start + step]), dtype=float)
            block = sparse_top_k(w, req.weights_top_k, row_offset=start)
            if kept is not None:
                block = Triples(block.a, kept[block.b], block.value)
            blocks.append(block)
        out["weights_sparse"] = Triples.concat(blocks)
        namers = _namers(m, req.ids)
        if namers is not None:
            out["weights_sparse_ids"] = _pair_names(out["weights_sparse"], *namers)
    return out


def check_answer_sizes(
    req: PredictRequest,
    n_query: int,
    n_train: int,
    top_k: int,
    pool: np.ndarray | None,
    max_dense: int,
) -> None:
    """422 before any work for an answer or intermediate over ``max_dense`` values: the
    Q x top_k pre-images, their Q x top_k x d outputs, and the C x N kernel between the
    candidates sent and the training outputs (what embedding them computes)."""
    check_dense(
        n_query,
        top_k,
        max_dense,
        "the pre-images (Q x top_k indices and scores)",
        "ask for a smaller top_k or send fewer rows per request",
    )
    if req.return_outputs and pool is not None:
        check_dense(
            n_query * top_k,
            int(np.prod(pool.shape[1:])),
            max_dense,
            "return_outputs (Q x top_k pre-images of d values)",
            "set return_outputs false (indices name the outputs you hold) or ask for a "
            "smaller top_k",
        )
    if req.candidates is not None:
        check_dense(
            req.candidates.shape[0],
            n_train,
            max_dense,
            "the candidates' kernel against the training outputs (C x N)",
            "send fewer candidates per request: split the set, ask each part for top_k, "
            "and keep the smallest scores",
        )


def _pre_images(
    est: Any, inputs: Any, top_k: int, n_pool: int, max_dense: int, kwargs: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray]:
    """okcore's pre-images (eq. 8), ``max_dense // n_pool`` query rows at a time: the
    (rows, C) distances it computes stay within ``max_dense`` values whatever Q is. O(Q C r)."""
    n_query = inputs.shape[0]
    step = max(1, max_dense // max(n_pool, 1))
    parts = [
        est.predict_index(inputs[start : start + step], top_k=top_k, **kwargs)
        for start in range(0, n_query, step)
    ]
    indices = np.concatenate([np.asarray(i, dtype=np.int64) for i, _ in parts])
    scores = np.concatenate([np.asarray(s, dtype=float) for _, s in parts])
    return indices, scores


def sparse_top_k(w: np.ndarray, k: int, row_offset: int = 0) -> Triples:
    """[row, column, value] triples of the k largest values of each row, largest first."""
    k = min(k, w.shape[1])
    cols = np.argpartition(-w, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(w, cols, axis=1)
    order = np.argsort(-vals, axis=1, kind="stable")
    cols = np.take_along_axis(cols, order, axis=1)
    rows = np.repeat(np.arange(w.shape[0], dtype=np.int64) + row_offset, k)
    return Triples(rows, cols.ravel().astype(np.int64), np.take_along_axis(vals, order, 1).ravel())


def select_edges(
    scores: np.ndarray, *, threshold: float | None, top_k: int | None, square: bool
) -> Triples:
    """Edges [a, b, score] from a score matrix, by row a and best first within a row:
    okcore's :func:`okcore.graph.ranked_edges` (``square``: scores among the same new
    vertices, ``symmetric=True``)."""
    a, b, value = okcore.graph.ranked_edges(
        scores, threshold=threshold, top_k=top_k, symmetric=square
    )
    return Triples(a, b, value)


def edges_against(
    F: np.ndarray,
    G: np.ndarray,
    *,
    threshold: float | None,
    top_k: int | None,
    max_edges: int = DEFAULT_MAX_DENSE,
) -> Triples:
    """Edges between the rows of F (new vertices) and of G (known ones) scored by F @ G.T.

    The same answer as ``select_edges(F @ G.T, square=False)``, computed ``block_rows``
    query rows at a time: O(Q N r) time, O(block N) memory. More than ``max_edges`` edges
    (a low threshold without top_k) is a 422.
    """
    blocks: list[Triples] = []
    held = 0
    step = block_rows(G.shape[0])
    Gt = G.T
    for start in range(0, F.shape[0], step):
        block = F[start : start + step] @ Gt
        rows, cols, vals = okcore.graph.ranked_edges(block, threshold=threshold, top_k=top_k)
        held += len(rows)
        if held > max_edges:  # checked before the answer grows further
            raise InvalidRequest(
                f"threshold {threshold} selects more than {max_edges} new-known edges "
                "(OKBOOST_MAX_DENSE_VALUES): raise the threshold or ask for top_k edges "
                "per new vertex"
            )
        blocks.append(Triples(rows + start, cols, vals))
    return Triples.concat(blocks)


def kernel(
    m: LoadedModel, req: KernelRequest, *, max_dense: int = DEFAULT_MAX_DENSE
) -> dict[str, Any]:
    """Predicted kernel (Q x Q / Q x Q2 / Q x N) and optional edges (and their ids)."""
    req.inputs = by_training_id(m, req.inputs, req.input_columns)
    check_features(m, req.inputs, "inputs")
    _check_ids(req.ids, req.inputs.shape[0])
    est = m.estimator
    if req.inputs2 is not None:
        check_features(m, req.inputs2, "inputs2")
    n_query = req.inputs.shape[0]
    if req.against == "predicted":
        shape = [n_query, n_query if req.inputs2 is None else req.inputs2.shape[0]]
    else:
        shape = [n_query, m.inputs.shape[0]]
    want_edges = req.threshold is not None or req.top_k is not None
    if req.return_kernel:
        check_dense(
            shape[0],
            shape[1],
            max_dense,
            f"the {'Q x N' if req.against == 'training' else 'Q x Q'} kernel",
            "set return_kernel false and ask for edges with top_k or threshold, or send "
            "fewer rows per request",
        )
    if want_edges:
        check_dense(
            n_query,
            n_query,
            max_dense,
            "new-new edges (scores of all Q x Q pairs of new vertices)",
            "send fewer new vertices per request",
        )
    if req.top_k is not None:
        check_dense(
            n_query,
            min(req.top_k, m.inputs.shape[0]),
            max_dense,
            "top_k new-known edges (Q x top_k)",
            "ask for a smaller top_k or send fewer new vertices per request",
        )
    F = np.asarray(est.predict_features(req.inputs), dtype=float)
    mat: np.ndarray | None = None
    if req.return_kernel:
        if req.against == "training":
            mat = F @ observed_factor(m, "against", "ask against 'predicted'").T
        elif req.inputs2 is None:
            mat = F @ F.T
        else:
            mat = F @ np.asarray(est.predict_features(req.inputs2), dtype=float).T
    out: dict[str, Any] = {
        "model_id": m.model_id,
        "against": req.against,
        "shape": shape,
        "kernel": mat,
        "edges": None,
    }
    if want_edges:
        k_new = mat if req.against == "predicted" and req.inputs2 is None else None
        if k_new is None:
            k_new = F @ F.T
        known = (
            observed_factor(m, "known_scores", "ask known_scores 'predicted'")
            if req.known_scores == "observed"
            else m.train_features()
        )
        edges: dict[str, Any] = {
            "new_new": select_edges(k_new, threshold=req.threshold, top_k=req.top_k, square=True),
            "new_known": edges_against(
                F, known, threshold=req.threshold, top_k=req.top_k, max_edges=max_dense
            ),
        }
        namers = _namers(m, req.ids)
        if namers is not None:
            name_new, name_known = namers
            edges["new_new_ids"] = _pair_names(edges["new_new"], name_new, name_new)
            edges["new_known_ids"] = _pair_names(edges["new_known"], name_new, name_known)
        out["edges"] = edges
    return out
