"""What okcore computes on the walk-through data, for the JavaScript and R clients' tests
(which cannot call okcore): the scores of POST /evaluate and the CV table of POST /train
with ``cv``, with the data they were computed on, written to one JSON file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

import okcore
from okcore import metrics, model_selection
from okcore.outputs.graph import diffusion_gram

# the README's network-completion walk-through: two communities of 4 vertices, a bridge 3-7
X = [[0.0, 1.0], [0.1, 0.9], [0.2, 1.0], [0.0, 0.8], [1.0, 0.0], [0.9, 0.1], [1.0, 0.2],
     [0.8, 0.0]]  # fmt: skip
EDGES = [[0, 1], [0, 2], [1, 2], [1, 3], [2, 3], [4, 5], [4, 6], [5, 6], [5, 7], [6, 7], [3, 7]]
PARAMS = {"n_estimators": 50, "learning_rate": 0.1, "max_splits": 2, "random_state": 0}
BETA = 1.0
# three held-out vertices: two near community A (linked together), one near B
X_TEST = [[0.05, 0.95], [0.1, 0.85], [0.95, 0.05]]
NEW_NEW = [[0, 1]]
NEW_KNOWN = [[0, 0], [0, 1], [0, 2], [1, 1], [1, 3], [2, 4], [2, 5], [2, 6]]
K = 3
CV = {"folds": 2, "grid": {"max_splits": [1, 2]}, "scoring": "auc", "random_state": 0}


def _precision_at_k(scores: np.ndarray, truth: np.ndarray, k: int) -> float:
    shares = [truth[q, np.argsort(-scores[q], kind="stable")[:k]].mean()
              for q in range(len(scores)) if truth[q].any()]  # fmt: skip
    return float(np.mean(shares))


def expectations() -> dict[str, Any]:
    """The data, okcore's evaluate scores (truth kernel: the diffusion kernel of the whole
    graph, held-out vertices included) and okcore's grid-search table."""
    x, xt, edges = np.array(X), np.array(X_TEST), np.array(EDGES)
    est = okcore.OKBoostRegressor(**PARAMS).fit(x, kernel=okcore.DiffusionKernel(edges, BETA))
    n, q = len(X), len(X_TEST)
    whole = EDGES + [[n + a, n + b] for a, b in NEW_NEW] + [[n + a, i] for a, i in NEW_KNOWN]
    truth = diffusion_gram(np.array(whole), n + q, BETA)
    gram_cross, gram_diag = truth[n:, :n], np.diag(truth)[n:]
    a_nn, a_nk = np.zeros((q, q), dtype=bool), np.zeros((q, n), dtype=bool)
    for a, b in NEW_NEW:
        a_nn[a, b] = a_nn[b, a] = True
    for a, i in NEW_KNOWN:
        a_nk[a, i] = True
    k_nn, k_nk = est.predict_kernel(xt), est.predict_kernel(xt, x)
    upper = np.triu_indices(q, k=1)
    scores = {
        "err_phi": metrics.err_phi(est, xt, gram_cross=gram_cross, gram_diag=gram_diag),
        "err_y": metrics.err_y(est, xt, gram_cross=gram_cross, gram_diag=gram_diag),
        "auc": metrics.network_auc(k_nn, k_nk, a_nn, a_nk),
        "auc_new_new": metrics.edge_auc(k_nn[upper], a_nn[upper]),
        "auc_new_known": metrics.edge_auc(k_nk, a_nk),
        "precision_at_k": _precision_at_k(k_nk, a_nk, K),
    }
    observed_auc = metrics.network_auc(k_nn, est.predict_kernel_train(xt), a_nn, a_nk)
    found = model_selection.grid_search(
        okcore.OKBoostRegressor(**PARAMS), CV["grid"], x,
        kernel=okcore.DiffusionKernel(edges, BETA), scoring=CV["scoring"], cv=CV["folds"],
        random_state=CV["random_state"], refit=False,
    )  # fmt: skip
    return {
        "data": {
            "inputs": X,
            "edges": EDGES,
            "beta": BETA,
            "params": PARAMS,
            "test_inputs": X_TEST,
            "new_new": NEW_NEW,
            "new_known": NEW_KNOWN,
            "gram_cross": gram_cross.tolist(),
            "gram_diag": gram_diag.tolist(),
            "k": K,
        },
        "evaluate": {key: float(value) for key, value in scores.items()},
        "evaluate_observed_auc": float(observed_auc),
        "cv": {"spec": CV, "table": found.table, "best_params": found.best_params},
    }


def write_expectations(path: Path) -> Path:
    path.write_text(json.dumps(expectations()), encoding="utf-8")
    return path
