"""Predictions and kernel scores from a loaded model (no HTTP here).

Implements the network-completion read-out of the paper (section 3): the
predicted kernel k^(x, x') = <F(x), F(x')> (eq. 7) between new vertices, and
between new and known vertices either predicted on both sides or observed on
the known side, <F(x), phi(y_i)>; thresholding or top-k gives edges.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from service.errors import InvalidRequest
from service.schemas import KernelRequest, PredictRequest
from service.store import LoadedModel


def _check_features(m: LoadedModel, arr: np.ndarray, name: str) -> None:
    p = m.inputs.shape[1]
    if arr.shape[1] != p:
        raise InvalidRequest(
            f"{name} has {arr.shape[1]} columns but model '{m.model_id}' was trained on "
            f"{p} features"
        )


def predict(m: LoadedModel, req: PredictRequest) -> dict[str, Any]:
    """Pre-image indices and scores, optional outputs and W^F weights."""
    _check_features(m, req.inputs, "inputs")
    est = m.estimator
    n_train = m.inputs.shape[0]
    index_space = "training"
    pool: np.ndarray | None = m.outputs  # what indices refer to, when known
    kwargs: dict[str, Any] = {}
    if req.candidates is not None:
        if m.outputs is None:
            raise InvalidRequest(
                f"model '{m.model_id}' has no output vectors (its kernel is "
                f"{m.record['kernel']['type']}); send candidate_gram and candidate_diag instead "
                "of candidates"
            )
        if req.candidates.shape[1] != m.outputs.shape[1]:
            raise InvalidRequest(
                f"candidates have {req.candidates.shape[1]} columns but the model's outputs "
                f"have {m.outputs.shape[1]}"
            )
        kwargs["candidates"] = req.candidates
        pool, index_space = req.candidates, "candidates"
    elif req.candidate_gram is not None:
        if req.candidate_gram.shape[1] != n_train:
            raise InvalidRequest(
                f"candidate_gram has {req.candidate_gram.shape[1]} columns but the model has "
                f"{n_train} training outputs"
            )
        kwargs["candidate_gram"] = req.candidate_gram
        kwargs["candidate_diag"] = req.candidate_diag
        pool, index_space = None, "candidates"
    n_pool = (
        req.candidate_gram.shape[0]
        if req.candidate_gram is not None
        else (pool.shape[0] if pool is not None else n_train)
    )
    top_k = min(req.top_k, n_pool)
    indices, scores = est.predict_index(req.inputs, top_k=top_k, **kwargs)
    out: dict[str, Any] = {
        "model_id": m.model_id,
        "index_space": index_space,
        "indices": np.asarray(indices).tolist(),
        "scores": np.asarray(scores, dtype=float).tolist(),
        "outputs": None,
        "weights": None,
        "weights_sparse": None,
    }
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
        out["outputs"] = pool[np.asarray(indices)].tolist()
    if req.weights != "none":
        w = np.asarray(est.predict_weights(req.inputs), dtype=float)
        if req.weights == "dense":
            out["weights"] = w.tolist()
        else:
            out["weights_sparse"] = sparse_top_k(w, req.weights_top_k)
    return out


def sparse_top_k(w: np.ndarray, k: int) -> list[list[float]]:
    """[row, column, value] triples of the k largest values of each row, largest first."""
    k = min(k, w.shape[1])
    cols = np.argpartition(-w, k - 1, axis=1)[:, :k]
    triples: list[list[float]] = []
    for row in range(w.shape[0]):
        order = cols[row][np.argsort(-w[row, cols[row]], kind="stable")]
        triples.extend([row, int(c), float(w[row, c])] for c in order)
    return triples


def select_edges(
    scores: np.ndarray, *, threshold: float | None, top_k: int | None, square: bool
) -> list[list[float]]:
    """Edges [a, b, score] from a score matrix, sorted by (a, b).

    ``square``: scores among the same new vertices; the diagonal is ignored, a
    pair is kept when either endpoint selects it, and it is reported once with
    a < b. With ``top_k`` each row keeps its top_k best entries; with
    ``threshold`` only scores >= threshold are kept (both filters apply when
    both are given).
    """
    s = np.array(scores, dtype=float, copy=True)
    if square:
        np.fill_diagonal(s, -np.inf)
    keep = np.isfinite(s)
    if top_k is not None and s.shape[1] > 0:
        k = min(top_k, s.shape[1])
        best = np.argpartition(-s, k - 1, axis=1)[:, :k]
        mask = np.zeros_like(keep)
        np.put_along_axis(mask, best, True, axis=1)
        if square:
            mask |= mask.T
        keep &= mask
    if threshold is not None:
        keep &= s >= threshold
    if square:
        keep &= np.triu(np.ones_like(keep), k=1)
    rows, cols = np.nonzero(keep)
    return [[int(a), int(b), float(s[a, b])] for a, b in zip(rows, cols, strict=True)]


def kernel(m: LoadedModel, req: KernelRequest) -> dict[str, Any]:
    """Predicted kernel (Q x Q / Q x Q2 / Q x N) and optional edges."""
    _check_features(m, req.inputs, "inputs")
    est = m.estimator
    if req.inputs2 is not None:
        _check_features(m, req.inputs2, "inputs2")
    if req.against == "predicted":
        mat = np.asarray(est.predict_kernel(req.inputs, req.inputs2), dtype=float)
    else:
        mat = np.asarray(est.predict_kernel_train(req.inputs), dtype=float)
    out: dict[str, Any] = {
        "model_id": m.model_id,
        "against": req.against,
        "shape": list(mat.shape),
        "kernel": mat.tolist() if req.return_kernel else None,
        "edges": None,
    }
    if req.threshold is not None or req.top_k is not None:
        if req.against == "predicted" and req.inputs2 is None:
            k_new = mat
        else:
            k_new = np.asarray(est.predict_kernel(req.inputs), dtype=float)
        if req.known_scores == "observed":
            k_known = (
                mat
                if req.against == "training"
                else np.asarray(est.predict_kernel_train(req.inputs), dtype=float)
            )
        else:
            k_known = np.asarray(est.predict_kernel(req.inputs, m.inputs), dtype=float)
        out["edges"] = {
            "new_new": select_edges(k_new, threshold=req.threshold, top_k=req.top_k, square=True),
            "new_known": select_edges(
                k_known, threshold=req.threshold, top_k=req.top_k, square=False
            ),
        }
    return out
