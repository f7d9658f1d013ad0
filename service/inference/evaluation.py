"""Scores of a stored model on test inputs with their truth (POST /evaluate; no HTTP here).

The measures are okcore.metrics' (paper section 3): Err^phi and Err^Y from the true outputs
(vectors, or their kernel against the training outputs with its diagonal), and from the
test vertices' edges the edge AUC over every pair with a test vertex (``network_auc``), its
test-test and test-training parts, and precision at k. Test-training pairs are ranked as
/kernel scores them: predicted <F(x), F(x_i)> (the paper) or observed <F(x), phi(y_i)>.

Work is bounded before it starts: the AUCs score every test-test and test-training pair
from dense blocks (Q x Q and Q x N), refused (422) past the service's dense limit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from okcore import metrics
from service.errors import InvalidRequest
from service.inference.predict import (
    by_training_id,
    check_dense,
    check_features,
    check_model_outputs,
    kept_columns,
    observed_factor,
    partly_known_outputs,
    sparse_top_k,
)
from service.schemas.evaluate import EvaluateRequest, TestEdges
from service.store.model_store import LoadedModel
from service.vertex_ids import VertexIds


def _rows(
    edges: np.ndarray, column: int, names: VertexIds | None, size: int, what: str, where: str
) -> np.ndarray:
    """Column ``column`` of ``edges`` as rows in [0, size): ids resolved through ``names``."""
    values = edges[:, column]
    if edges.dtype == object:
        if names is None:
            raise InvalidRequest(
                f"{where} names {what} by id but {'the request' if column == 0 else 'the model'}"
                f" has no ids: give {what} as row indices"
                + (" or send `ids`" if column == 0 else "")
            )
        return names.rows_of(values, where)
    too_big = np.flatnonzero(values >= size)
    if too_big.size:
        k = int(too_big[0])
        raise InvalidRequest(
            f"{where}[{k}] = {edges[k].tolist()} refers to {what} {int(values[k])} but there "
            f"are {size} {what.replace('vertex', 'vertices')} (counted from 0)"
        )
    return values.astype(np.int64)


def adjacency(
    edges: TestEdges, n_test: int, n_train: int, test_ids: VertexIds | None, train_ids: Any
) -> tuple[np.ndarray, np.ndarray]:
    """The 0/1 adjacency of the test vertices among themselves (Q, Q, symmetric) and to the
    training vertices (Q, N), from edges given by row or by id."""
    nn, nk = edges.new_new, edges.new_known
    try:
        a = _rows(nn, 0, test_ids, n_test, "test vertex", "edges.new_new")
        b = _rows(nn, 1, test_ids, n_test, "test vertex", "edges.new_new")
        u = _rows(nk, 0, test_ids, n_test, "test vertex", "edges.new_known")
        i = _rows(nk, 1, train_ids, n_train, "training vertex", "edges.new_known")
    except ValueError as exc:  # an unknown id
        raise InvalidRequest(str(exc)) from None
    if edges.by_id.size:
        more_nn, more_nk = _split_by_id(edges.by_id, test_ids, train_ids)
        a, b = np.r_[a, more_nn[:, 0]], np.r_[b, more_nn[:, 1]]
        u, i = np.r_[u, more_nk[:, 0]], np.r_[i, more_nk[:, 1]]
    loops = np.flatnonzero(a == b)
    if loops.size:
        k = int(loops[0])
        raise InvalidRequest(f"edges.new_new[{k}] joins test vertex {int(a[k])} to itself")
    new_new = np.zeros((n_test, n_test), dtype=bool)
    new_new[a, b] = new_new[b, a] = True
    new_known = np.zeros((n_test, n_train), dtype=bool)
    new_known[u, i] = True
    return new_new, new_known


def _split_by_id(
    edges: np.ndarray, test_ids: VertexIds | None, train_ids: VertexIds | None
) -> tuple[np.ndarray, np.ndarray]:
    """Edges by id with a test vertex at either end as (test-test rows, [test row, training
    row] pairs); an id of both sets counts as the test vertex's."""
    if edges.dtype != object or test_ids is None or train_ids is None:
        raise InvalidRequest(
            "edges.by_id names vertices by id: send the test vertices' ids (`ids`, or an id "
            "column in inputs) to a model trained with ids"
        )
    test_rows, is_test = test_ids.find(edges)
    train_rows, is_train = train_ids.find(edges)
    both = is_test.all(axis=1)
    forward = is_test[:, 0] & ~is_test[:, 1] & is_train[:, 1]
    backward = is_test[:, 1] & ~is_test[:, 0] & is_train[:, 0]
    bad = np.flatnonzero(~(both | forward | backward))
    if bad.size:
        k = int(bad[0])
        raise InvalidRequest(
            f"edges.by_id[{k}] = {edges[k].tolist()} does not join a test vertex to a test or "
            f"training vertex ({bad.size} such edges in all): each edge needs a test id "
            "(`ids`) at one end and a test or training id at the other"
        )
    new_known = np.r_[
        np.column_stack([test_rows[forward, 0], train_rows[forward, 1]]),
        np.column_stack([test_rows[backward, 1], train_rows[backward, 0]]),
    ]
    return test_rows[both].reshape(-1, 2), new_known.reshape(-1, 2)


def _auc_or_none(scores: np.ndarray, truth: np.ndarray) -> float | None:
    """The edge AUC, or None when the pairs hold no edge or no non-edge."""
    if truth.size == 0 or truth.all() or not truth.any():
        return None
    return metrics.edge_auc(scores, truth)


def precision_at_k(scores: np.ndarray, truth: np.ndarray, k: int) -> tuple[float | None, int]:
    """(Mean over the rows with a true entry of the share of their k best-scored columns that
    are true, number of such rows); (None, 0) when no row has one."""
    ranked = np.flatnonzero(truth.any(axis=1))
    if ranked.size == 0:
        return None, 0
    best = sparse_top_k(scores[ranked], k)
    hits = truth[ranked[best.a], best.b].reshape(ranked.size, -1)
    return float(hits.mean(axis=1).mean()), int(ranked.size)


def _refuse_masked(m: LoadedModel) -> None:
    """A 422 for test outputs sent to a model fitted on partly known outputs (or with
    output_weight): Err^phi and Err^Y decode among the training outputs, which it does not
    hold whole; /evaluate takes no candidates, so name the routes that answer."""
    if partly_known_outputs(m):
        raise InvalidRequest(
            f"model '{m.model_id}' was trained on partly known outputs (or with "
            "output_weight), so /evaluate cannot score it against test outputs: its Err^phi "
            "and Err^Y decode among the training outputs, which it does not hold whole. Send "
            "the test inputs to POST /predict with your test outputs as `candidates` (it "
            "decodes among them) or to POST /kernel for its predicted kernel, and score "
            "those; /evaluate still takes `edges` alone for the AUCs"
        )


def evaluate(m: LoadedModel, req: EvaluateRequest, *, max_dense: int) -> dict[str, Any]:
    """Err^phi, Err^Y, the AUCs and precision at k of model ``m`` on the request's test set:
    each score whose truth the request gives, null for the others."""
    req.inputs = by_training_id(m, req.inputs, req.input_columns)
    check_features(m, req.inputs, "inputs")
    est, X = m.estimator, req.inputs
    n_test, n_train = int(X.shape[0]), int(m.inputs.shape[0])
    k = min(req.k, n_train)
    out: dict[str, Any] = {
        "model_id": m.model_id,
        "n_test": n_test,
        "err_phi": None,
        "err_y": None,
        "auc": None,
        "auc_new_new": None,
        "auc_new_known": None,
        "precision_at_k": None,
        "k": k,
        "n_ranked": 0,
        "known_scores": req.known_scores,
    }
    truth: dict[str, Any] | None = None
    check_model_outputs(
        m, n_train, ("outputs", req.outputs), ("gram_cross", req.gram_cross), "gram_diag"
    )
    if req.outputs is not None:
        truth = {"Y": req.outputs}
    elif req.gram_cross is not None:
        truth = {"gram_cross": kept_columns(m, req.gram_cross), "gram_diag": req.gram_diag}
    if truth is not None:
        _refuse_masked(m)
        out["err_phi"] = metrics.err_phi(est, X, **truth)
        out["err_y"] = metrics.err_y(est, X, **truth)
    if req.edges is not None:
        check_dense(
            n_test,
            n_train + n_test,
            max_dense,
            "the scores of every test-training and test-test pair (for the AUCs)",
            "send fewer test vertices per request",
        )
        test_ids = None if req.ids is None else VertexIds(req.ids)
        a_nn, a_nk = adjacency(req.edges, n_test, n_train, test_ids, m.ids)
        F = np.asarray(est.predict_features(X), dtype=float)
        known = (
            m.train_features()
            if req.known_scores == "predicted"
            else observed_factor(m, "known_scores", "ask known_scores 'predicted'")
        )
        k_nn, k_nk = F @ F.T, F @ known.T
        out["auc"] = metrics.network_auc(k_nn, k_nk, a_nn, a_nk)
        upper = np.triu_indices(n_test, k=1)
        out["auc_new_new"] = _auc_or_none(k_nn[upper], a_nn[upper])
        out["auc_new_known"] = _auc_or_none(k_nk, a_nk)
        out["precision_at_k"], out["n_ranked"] = precision_at_k(k_nk, a_nk, k)
    return out
