"""Models whose early stopping held training rows out (okcore's ``train_indices_``, the rows
it kept): pre-images, W^F and kernels against the training outputs count the rows the client
gave, not the model's kept rows, and such a model exports and imports."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from svc_data import TestClient, vector_data

import okcore

KERNEL = {"type": "rbf", "sigma": 1.5}
PARAMS = {"n_estimators": 100, "n_iter_no_change": 3, "random_state": 0}


@pytest.fixture
def held_out(client: TestClient) -> tuple[str, okcore.OKBoostRegressor]:
    """A model trained with ids whose early stopping held rows out, and okcore's same fit."""
    X, Y = vector_data(n=40)
    body = {"model": "okboost", "inputs": X.tolist(), "ids": [f"v{i}" for i in range(40)],
            "output_kernel": {**KERNEL, "outputs": Y.tolist()}, "params": PARAMS, "wait": True}  # fmt: skip
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    est = okcore.OKBoostRegressor(**PARAMS).fit(X, Y, kernel=KERNEL)
    assert len(est.train_indices_) < 40  # rows were held out
    return r.json()["model_id"], est


def test_pre_images_and_weights_name_the_rows_given(
    client: TestClient, held_out: tuple[str, Any]
) -> None:
    """Indices into the kept rows were answered as training rows: the wrong vertex, its
    id and its output, and W^F of fewer columns than training rows."""
    model_id, est = held_out
    X, Y = vector_data(n=40)
    kept, Xq = est.train_indices_, X[:5] + 0.05
    query = {"model_id": model_id, "inputs": Xq.tolist(), "top_k": 3, "return_outputs": True}
    out = client.post("/predict", json={**query, "weights": "dense"}).json()
    rows = kept[est.predict_index(Xq, top_k=3)[0]]
    np.testing.assert_array_equal(out["indices"], rows)
    assert out["index_ids"] == [[f"v{i}" for i in row] for row in rows]
    np.testing.assert_array_equal(out["outputs"], Y[rows])
    weights = np.zeros((5, 40))
    weights[:, kept] = est.predict_weights(Xq)
    np.testing.assert_allclose(out["weights"], weights, rtol=1e-12, atol=1e-14)
    sparse = client.post("/predict", json={**query, "weights": "sparse", "weights_top_k": 2})
    for row, col, value in sparse.json()["weights_sparse"]:
        assert value == pytest.approx(weights[int(row), int(col)], abs=1e-12) and value != 0


def test_kernels_against_the_training_outputs_have_a_column_per_row_given(
    client: TestClient,
) -> None:
    X, Y = vector_data(n=40)
    K = Y @ Y.T + 1.0
    body = {"inputs": X.tolist(), "output_kernel": {"type": "precomputed", "gram": K.tolist()},
            "model": "okboost", "params": PARAMS, "wait": True}  # fmt: skip
    model_id = client.post("/train", json=body).json()["model_id"]
    est = okcore.OKBoostRegressor(**PARAMS).fit(X, gram=K)
    kept = est.train_indices_
    assert len(kept) < 40
    query = {"model_id": model_id, "inputs": X[:3].tolist()}
    candidates = {"candidate_gram": K[:4].tolist(), "candidate_diag": np.diag(K)[:4].tolist()}
    r = client.post("/predict", json={**query, **candidates})
    assert r.status_code == 200, r.text
    np.testing.assert_array_equal(
        r.json()["indices"],
        est.predict_index(X[:3], candidate_gram=K[:4, kept], candidate_diag=np.diag(K)[:4])[0],
    )
    truth = {"gram_cross": K[:3].tolist(), "gram_diag": np.diag(K)[:3].tolist()}
    r = client.post("/evaluate", json={**query, **truth})
    assert r.status_code == 200, r.text
    want = okcore.metrics.err_phi(est, X[:3], gram_cross=K[:3, kept], gram_diag=np.diag(K)[:3])
    assert r.json()["err_phi"] == pytest.approx(want, rel=1e-12)


def test_scores_against_observed_training_outputs_are_refused_with_the_fix(
    client: TestClient, held_out: tuple[str, Any]
) -> None:
    """The model keeps no output features for the rows it held out: /kernel against the
    training outputs answered fewer columns than its declared shape, and observed new-known
    edges numbered the kept rows as the rows given (the wrong vertex). The predicted scores,
    which use every training vertex's input, still answer."""
    model_id, _ = held_out
    X, _ = vector_data(n=40)
    query = {"model_id": model_id, "inputs": X[:3].tolist()}
    asks = [
        ("/kernel", {"against": "training"}, "against"),
        ("/kernel", {"top_k": 2, "known_scores": "observed"}, "known_scores"),
        (
            "/evaluate",
            {"edges": {"new_new": [], "new_known": [[0, 1]]}, "known_scores": "observed"},
            "known_scores",
        ),  # fmt: skip
    ]
    for route, extra, field in asks:
        r = client.post(route, json={**query, **extra})
        assert r.status_code == 422, r.text
        message = r.json()["error"]["message"]
        assert message.startswith(f"{field}: this model was fitted on 36 of its 40 training")
        assert "held out for early stopping" in message and "'predicted'" in message
    r = client.post("/kernel", json={**query, "top_k": 2})
    assert r.status_code == 200, r.text
    assert {int(i) for _, i, _ in r.json()["edges"]["new_known"]} <= set(range(40))
