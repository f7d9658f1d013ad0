"""Example bodies for the OpenAPI documentation (one place, reused by the routes)."""

from __future__ import annotations

from typing import Any

MODEL_ID = "3f2a9c1e5b7d4e8f9a0b1c2d3e4f5a6b"
JOB_ID = "8c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f"

MODEL_INFO: dict[str, Any] = {
    "model_id": MODEL_ID,
    "name": "toy-network",
    "status": "ready",
    "job_id": JOB_ID,
    "created": 1763700000.0,
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
    "error": None,
}

JOB_INFO: dict[str, Any] = {
    "job_id": JOB_ID,
    "model_id": MODEL_ID,
    "state": "running",
    "progress": {"done": 20, "total": 50, "fraction": 0.4},
    "created": 1763700000.0,
    "started": 1763700000.1,
    "finished": None,
    "elapsed": 2.0,
    "eta": 3.0,
    "train_loss": [0.61, 0.55, 0.5],
    "validation_loss": None,
    "error": None,
}

TRAIN_ACCEPTED: dict[str, Any] = {
    "model_id": MODEL_ID,
    "job_id": JOB_ID,
    "state": "queued",
    "job_url": f"/jobs/{JOB_ID}",
    "model_url": f"/models/{MODEL_ID}",
    "model": None,
}

PREDICT_RESPONSE: dict[str, Any] = {
    "model_id": MODEL_ID,
    "index_space": "training",
    "indices": [[0, 1]],
    "scores": [[0.12, 0.3]],
    "outputs": None,
    "weights": None,
    "weights_sparse": [[0, 0, 0.46], [0, 1, 0.41], [0, 3, 0.08]],
}

KERNEL_RESPONSE: dict[str, Any] = {
    "model_id": MODEL_ID,
    "against": "predicted",
    "shape": [2, 2],
    "kernel": [[0.41, 0.12], [0.12, 0.38]],
    "edges": {
        "new_new": [],
        "new_known": [[0, 0, 0.33], [0, 1, 0.35], [1, 2, 0.31], [1, 3, 0.3]],
    },
}
