"""/train with the robust losses: `loss` and `alpha` in params reach okcore, are kept in the
model record, and bad values get the standard 422 (okcore's parameter message)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, TestClient, vector_data

import okcore

KERNEL = {"type": "rbf", "sigma": 1.5}


def train(client: TestClient, params: dict[str, Any]) -> Any:
    X, Y = vector_data(n=40)
    Y[::5] += 3.0  # a few wrong outputs
    body = {
        "inputs": X.tolist(),
        "output_kernel": {**KERNEL, "outputs": Y.tolist()},
        "params": params,
        "wait": True,
    }
    return client.post("/train", json=body)


@pytest.mark.parametrize("loss", ["absolute", "huber"])
def test_train_with_a_robust_loss_predicts_as_okcore(client: TestClient, loss: str) -> None:
    params = {**SMALL, "loss": loss, "alpha": 0.8}
    r = train(client, params)
    assert r.status_code == 201, r.text
    record = r.json()["model"]
    assert record["params"]["loss"] == loss and record["params"]["alpha"] == 0.8
    X, Y = vector_data(n=40)
    Y[::5] += 3.0
    est = okcore.OKBoostRegressor(**params).fit(X, Y, kernel=KERNEL)
    Xq = X[:6] + 0.1
    body = {"model_id": r.json()["model_id"], "inputs": Xq.tolist(), "weights": "dense"}
    out = client.post("/predict", json=body).json()
    np.testing.assert_allclose(out["weights"], est.predict_weights(Xq), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(out["indices"], est.predict_index(Xq)[0])
    kernel = client.post("/kernel", json={"model_id": body["model_id"], "inputs": Xq.tolist()})
    np.testing.assert_allclose(kernel.json()["kernel"], est.predict_kernel(Xq), atol=1e-12)


def test_the_default_loss_is_squared(client: TestClient) -> None:
    r = train(client, dict(SMALL))
    assert r.status_code == 201, r.text
    assert r.json()["model"]["params"]["loss"] == "squared"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"loss": "lad"},
            "The 'loss' parameter of OKBoostRegressor must be one of 'squared', 'absolute', "
            "'huber'. Got 'lad' instead.",
        ),
        (
            {"loss": "huber", "alpha": 1.5},
            "The 'alpha' parameter of OKBoostRegressor must be a float in (0.0, 1.0). "
            "Got 1.5 instead.",
        ),
    ],
)
def test_bad_loss_parameters_are_422(client: TestClient, params: dict, message: str) -> None:
    r = train(client, {**SMALL, **params})
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_parameter" and message in error["message"]
