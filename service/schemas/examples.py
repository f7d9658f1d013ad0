"""Example bodies for the OpenAPI documentation (one place, used by the schemas and routes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MODEL_ID = "3f2a9c1e5b7d4e8f9a0b1c2d3e4f5a6b"
JOB_ID = "8c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f"

MODEL_INFO: dict[str, Any] = {
    "model_id": MODEL_ID,
    "name": "toy-network",
    "status": "ready",
    "job_id": JOB_ID,
    "created": 1763700000.0,
    "client": "127.0.0.1",
    "model": "okboost",
    "params": {"n_estimators": 50, "learning_rate": 0.1, "max_splits": 3, "random_state": 0},
    "kernel": {"type": "diffusion", "beta": 1.0, "n_edges": 3},
    "n_train": 4,
    "n_features": 2,
    "output_dim": None,
    "fit_time": 0.05,
    "n_estimators": 50,
    "train_loss": [0.61, 0.55, 0.5],
    "validation_loss": None,
    "feature_importances": [0.4, 0.6],
    "has_ids": True,
    "sample_weight": False,
    "input_kind": "features",
    "input_map": None,
    "output_space": {"rank": 4, "trace_fraction": 1.0, "diag_exact": True},
    "error": None,
}

MODEL_DELETED: dict[str, Any] = {"model_id": MODEL_ID, "deleted": True}

INVALID_MODEL_INFO: dict[str, Any] = {
    "model_id": MODEL_ID,
    "status": "invalid",
    "created": 1763700000.0,
    "error": "record.json: created: Input should be a valid number",
}

INVALID_JOB_INFO: dict[str, Any] = {
    "job_id": JOB_ID,
    "model_id": MODEL_ID,
    "state": "invalid",
    "created": 1763700000.0,
    "error": "created: Input should be a valid number",
}

JOB_INFO: dict[str, Any] = {
    "job_id": JOB_ID,
    "model_id": MODEL_ID,
    "state": "running",
    "progress": {"done": 20, "total": 50, "fraction": 0.4, "unit": "tree"},
    "created": 1763700000.0,
    "started": 1763700000.1,
    "finished": None,
    "elapsed": 2.0,
    "phase": "trees",
    "phase_elapsed": 2.0,
    "eta": 3.0,
    "queue_position": None,
    "last_train_loss": 0.5,
    "last_validation_loss": None,
    "error": None,
}

TRAIN_ACCEPTED: dict[str, Any] = {
    "model_id": MODEL_ID,
    "job_id": JOB_ID,
    "state": "queued",
    "job_url": f"/jobs/{JOB_ID}",
    "model_url": f"/models/{MODEL_ID}",
    "model": None,
    "timed_out": False,
    "wait_timeout": None,
}

PREDICT_RESPONSE: dict[str, Any] = {
    "model_id": MODEL_ID,
    "index_space": "training",
    "indices": [[0, 1]],
    "scores": [[0.12, 0.3]],
    "outputs": None,
    "weights": None,
    "weights_sparse": [[0, 0, 0.46], [0, 1, 0.41], [0, 3, 0.08]],
    "index_ids": [["p0", "p1"]],
    "weights_sparse_ids": [["q0", "p0"], ["q0", "p1"], ["q0", "p3"]],
}

KERNEL_RESPONSE: dict[str, Any] = {
    "model_id": MODEL_ID,
    "against": "predicted",
    "shape": [2, 2],
    "kernel": [[0.41, 0.12], [0.12, 0.38]],
    "edges": {
        "new_new": [],
        "new_known": [[0, 0, 0.33], [0, 1, 0.35], [1, 2, 0.31], [1, 3, 0.3]],
        "new_new_ids": [],
        "new_known_ids": [["q0", "p0"], ["q0", "p1"], ["q1", "p2"], ["q1", "p3"]],
    },
}

X4 = [[0.0, 1.0], [0.1, 0.9], [1.0, 0.0], [0.9, 0.2]]
Y4 = [[0.1, 1.0], [0.2, 0.8], [0.9, -0.2], [1.0, 0.0]]

TRAIN: dict[str, Any] = {
    "name": "toy-network",
    "model": "okboost",
    "inputs": X4,
    "ids": ["p0", "p1", "p2", "p3"],
    "output_kernel": {
        "type": "diffusion",
        "beta": 1.0,
        "edges": [["p0", "p1"], ["p2", "p3"], ["p1", "p2"]],
    },
    "params": {"n_estimators": 50, "learning_rate": 0.1, "max_splits": 3, "random_state": 0},
    "eval_set": None,
    "sample_weight": None,
    "output_weight": None,
    "wait": True,
}

PREDICT: dict[str, Any] = {
    "model_id": MODEL_ID,
    "inputs": [[0.05, 0.95]],
    "ids": ["q0"],
    "top_k": 2,
    "return_outputs": False,
    "weights": "sparse",
    "weights_top_k": 3,
    "candidates": None,
    "candidate_gram": None,
    "candidate_diag": None,
}

KERNEL: dict[str, Any] = {
    "model_id": MODEL_ID,
    "inputs": [[0.05, 0.95], [0.95, 0.1]],
    "ids": ["q0", "q1"],
    "inputs2": None,
    "against": "predicted",
    "threshold": 0.2,
    "top_k": None,
    "known_scores": "predicted",
    "return_kernel": True,
}

KERNELS: dict[str, dict[str, Any]] = {
    "precomputed": {"type": "precomputed", "gram": [[2.0, 1.0], [1.0, 2.0]]},
    "linear": {"type": "linear", "outputs": Y4},
    "rbf": {"type": "rbf", "outputs": Y4, "sigma": 7.07, "gamma": None},
    "polynomial": {"type": "polynomial", "outputs": Y4, "degree": 2, "gamma": 1.0, "coef0": 1.0},
    "diffusion": {"type": "diffusion", "beta": 1.0, "edges": [[0, 1], [1, 2], [2, 3]]},
}

EVAL_SET: dict[str, Any] = {
    "inputs": [[0.2, 0.8]],
    "outputs": [[0.3, 0.7]],
    "gram_cross": None,
    "gram_diag": None,
}

FIELD_EXAMPLES: dict[str, Any] = {
    # fields whose model example is null: a value to show instead
    "eval_set": EVAL_SET,
    "sample_weight": [1.0, 2.0, 1.0, 0.5],
    "output_weight": [1.0, 0.5],
    "warnings": [
        "only 12 training rows: the model and its scores are anecdotal (at least 20 are advised)"
    ],
    "drop_unknown_edges": True,
    "input_kind": "similarity",
    "input_map": "kernel_map",
    "input_components": 20,
    "by_id": [["new-1", "paper-a"], ["new-2", "new-1"]],
    "candidates": [[0.1, 1.0], [1.0, 0.0]],
    "candidate_gram": [[0.9, 0.2, 0.1, 0.0]],
    "candidate_diag": [1.0],
    "inputs2": [[0.5, 0.5]],
    "top_k": 5,
    "gamma": 0.01,
    "gram_cross": [[0.3, 0.1, 0.2, 0.0]],
    "gram_diag": [1.0],
    "outputs": [[[0.1, 1.0], [0.2, 0.8]]],
    "weights": [[0.46, 0.41, 0.05, 0.08]],
    "finished": 1763700004.2,
    "eta": 3.0,
    "validation_loss": [0.7, 0.66, 0.62],
    "train_loss": [0.61, 0.55, 0.5],
    "last_train_loss": 0.5,
    "last_validation_loss": 0.62,
    "curve_step": 1,
    "next_cursor": f"1763700000.0_{MODEL_ID}",
    "error": "gram is not positive semi-definite: smallest eigenvalue -1 is 1.00e+00 of the "
    "largest (tolerance 1e-08)",
    "output_dim": 2,
    "model": MODEL_INFO,
    "kernel": [[0.41, 0.12], [0.12, 0.38]],
    "edges": KERNEL_RESPONSE["edges"],
}

ERROR: dict[str, Any] = {
    "error": {
        "status": 422,
        "code": "invalid_data",
        "message": "output_kernel.precomputed: gram must be square: got 300 x 299",
        "details": [
            {"loc": ["output_kernel", "precomputed"], "msg": "gram must be square: got 300 x 299"}
        ],
    }
}

VERSION: dict[str, Any] = {
    "service": "0.1.0",
    "okcore": "0.1.0",
    "api": "1",
    "python": "3.11.9",
    "numpy": "2.1.0",
}

CV_SPEC: dict[str, Any] = {
    "folds": 3,
    "grid": {"max_splits": [1, 3], "learning_rate": [0.05, 0.1]},
    "scoring": "auc",
    "random_state": 0,
}

CV_SCORE: dict[str, Any] = {"mean": 0.91, "std": 0.03, "folds": [0.88, 0.95, 0.9]}

CV_RESULT: dict[str, Any] = {
    "folds": 3,
    "random_state": 0,
    "scoring": ["auc"],
    "criterion": "auc",
    "grid": CV_SPEC["grid"],
    "best_params": {"max_splits": 3, "learning_rate": 0.1},
    "table": [
        {"params": {"max_splits": 1, "learning_rate": 0.05}, "auc": CV_SCORE},
        {"params": {"max_splits": 3, "learning_rate": 0.1}, "auc": CV_SCORE},
    ],
}

EVALUATE: dict[str, Any] = {
    "model_id": MODEL_ID,
    "inputs": [[0.05, 0.95], [0.95, 0.1]],
    "ids": ["q0", "q1"],
    "outputs": None,
    "gram_cross": None,
    "gram_diag": None,
    "edges": {"new_new": [], "new_known": [["q0", "p0"], ["q0", "p1"], ["q1", "p2"]]},
    "k": 2,
    "known_scores": "predicted",
}

EVALUATE_RESPONSE: dict[str, Any] = {
    "model_id": MODEL_ID,
    "n_test": 2,
    "err_phi": None,
    "err_y": None,
    "auc": 0.93,
    "auc_new_new": None,
    "auc_new_known": 0.93,
    "precision_at_k": 0.75,
    "k": 2,
    "n_ranked": 2,
    "known_scores": "predicted",
}


def documented(example: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    """``json_schema_extra`` giving the model an example and every field an example: the
    field's value in the model example, or ``FIELD_EXAMPLES`` where that value is null."""

    def extra(schema: dict[str, Any]) -> None:
        schema["examples"] = [example]
        for name, prop in schema.get("properties", {}).items():
            value = example.get(name)
            if value is None:
                value = FIELD_EXAMPLES.get(name)
            if value is not None and "examples" not in prop:
                prop["examples"] = [value]

    return extra
