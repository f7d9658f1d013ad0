"""/train with `sample_weight`: a JSON list or a one-column table part reaches okcore's fit
(and the CV folds), the record says so, and bad weights are the standard 422."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, TestClient, vector_data

import okcore

PARAMS = {**SMALL, "tree_type": "best-first", "max_bins": 255}


def body(weights: Any, model: str = "okboost", **extra: Any) -> dict[str, Any]:
    X, Y = vector_data(n=40)
    return {
        "model": model,
        "inputs": X.tolist(),
        "output_kernel": {"type": "linear", "outputs": Y.tolist()},
        "params": PARAMS if model == "okboost" else {},
        "sample_weight": weights,
        "wait": True,
        **extra,
    }


def weights() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 4, 40).astype(float) + (np.arange(40) < 2)


def test_weights_in_json_and_as_a_table_part_train_okcores_weighted_model(
    client: TestClient,
) -> None:
    w = weights()
    r = client.post("/train", json=body(w.tolist()))
    assert r.status_code == 201, r.text
    assert r.json()["model"]["sample_weight"] is True
    X, Y = vector_data(n=40)
    est = okcore.OKBoostRegressor(**PARAMS).fit(X, Y, sample_weight=w)
    ask = {"model_id": r.json()["model_id"], "inputs": X[:5].tolist()}
    got = client.post("/kernel", json=ask).json()["kernel"]
    np.testing.assert_allclose(got, est.predict_kernel(X[:5]), rtol=1e-9)
    spec = body(None)
    del spec["sample_weight"]
    table = ("w.csv", ("weight\n" + "\n".join(map(str, w)) + "\n").encode(), "text/csv")
    r2 = client.post("/train", data={"json": json.dumps(spec)}, files={"sample_weight": table})
    assert r2.status_code == 201, r2.text
    ask2 = {**ask, "model_id": r2.json()["model_id"]}
    np.testing.assert_allclose(client.post("/kernel", json=ask2).json()["kernel"], got)


def test_cross_validation_takes_the_weights(client: TestClient) -> None:
    r = client.post("/train", json=body(weights().tolist(), cv={"folds": 3, "scoring": "err_phi"}))
    assert r.status_code == 201, r.text
    assert r.json()["model"]["cv"]["table"][0]["err_phi"]["mean"] > 0


def test_a_cv_fold_whose_rows_carry_no_weight_is_a_422_before_queueing(
    client: TestClient,
) -> None:
    """Weights mostly 0: some fold's test rows weigh nothing, so its weighted scores are
    undefined (the job failed 'R^2 is undefined: the given outputs are all the same')."""
    w = [0.0] * 37 + [1.0] * 3
    r = client.post("/train", json=body(w, cv={"folds": 5}, wait=False))
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    for fragment in ("fold", "test rows", "sample_weight", "weight", "fewer folds"):
        assert fragment in message, message
    assert "R^2" not in message, message


def test_cv_folds_spread_the_rows_of_positive_weight(client: TestClient) -> None:
    """As many weighted rows as folds is enough: the folds deal them out (okcore's kfold),
    so every fold fits and scores some weight."""
    w = [0.0] * 37 + [1.0] * 3
    r = client.post("/train", json=body(w, cv={"folds": 3, "scoring": "err_phi"}))
    assert r.status_code == 201, r.text
    assert r.json()["model"]["cv"]["table"][0]["err_phi"]["mean"] > 0


@pytest.mark.parametrize(
    ("w", "message"),
    [
        ([1.0] * 39, "one weight per training row (40)"),
        ([-1.0] + [1.0] * 39, "negative"),
        ([0.0] * 40, "all zero"),
        (["x"] * 40, "sample_weight"),
        ([[1.0, 2.0]] * 40, "1-D"),
    ],
)
def test_bad_weights_are_422(client: TestClient, w: Any, message: str) -> None:
    r = client.post("/train", json=body(w))
    assert r.status_code == 422, r.text
    assert message in r.json()["error"]["message"]


def test_nan_weights_are_422(client: TestClient) -> None:
    spec = body(None)
    text = json.dumps(spec).replace(
        '"sample_weight": null', '"sample_weight": [NaN' + ", 1" * 39 + "]"
    )
    r = client.post("/train", content=text, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text


def test_krr_boost_takes_the_weights(client: TestClient) -> None:
    w = weights()
    spec = body(w.tolist(), model="krr-boost")
    spec["params"] = {"n_estimators": 3, "n_basis": 10, "random_state": 0}
    r = client.post("/train", json=spec)
    assert r.status_code == 201, r.text
    assert r.json()["model"]["sample_weight"] is True
    X, Y = vector_data(n=40)
    est = okcore.KRRBoostRegressor(**spec["params"]).fit(X, Y, sample_weight=w)
    ask = {"model_id": r.json()["model_id"], "inputs": X[:5].tolist()}
    got = client.post("/kernel", json=ask).json()["kernel"]
    np.testing.assert_allclose(got, est.predict_kernel(X[:5]), rtol=1e-9)


def masked_body(model: str = "okboost", **extra: Any) -> dict[str, Any]:
    X, Y = vector_data(n=40)
    outputs: list[list[float | None]] = Y.tolist()
    for i in range(0, 40, 3):
        outputs[i][0] = None
    return {
        "model": model,
        "inputs": X.tolist(),
        "output_kernel": {"type": "linear", "outputs": outputs},
        "params": PARAMS if model == "okboost" else {},
        "wait": True,
        **extra,
    }


def test_unknown_output_entries_train_okcores_masked_model(client: TestClient) -> None:
    r = client.post("/train", json=masked_body())
    assert r.status_code == 201, r.text
    assert r.json()["model"]["resolved_params"]["masked_outputs"] is True
    X, Y = vector_data(n=40)
    Y[::3, 0] = np.nan
    est = okcore.OKBoostRegressor(**PARAMS).fit(X, Y)
    ask = {"model_id": r.json()["model_id"], "inputs": X[:5].tolist()}
    got = client.post("/kernel", json=ask).json()["kernel"]
    np.testing.assert_allclose(got, est.predict_kernel(X[:5]), rtol=1e-9)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"model": "krr"}, "needs every entry"),
        ({"cv": {"folds": 3}}, "cross-validation scores whole outputs"),
    ],
)
def test_unknown_output_entries_elsewhere_are_422(
    client: TestClient, extra: dict[str, Any], message: str
) -> None:
    spec = masked_body(**{k: v for k, v in extra.items() if k == "model"})
    spec.update({k: v for k, v in extra.items() if k != "model"})
    r = client.post("/train", json=spec)
    assert r.status_code == 422, r.text
    assert message in r.json()["error"]["message"]


def test_output_weights_train_okcores_model_and_bad_ones_are_422(client: TestClient) -> None:
    spec = masked_body(output_weight=[2.0, 0.5])
    r = client.post("/train", json=spec)
    assert r.status_code == 201, r.text
    X, Y = vector_data(n=40)
    Y[::3, 0] = np.nan
    est = okcore.OKBoostRegressor(**PARAMS).fit(X, Y, output_weight=[2.0, 0.5])
    ask = {"model_id": r.json()["model_id"], "inputs": X[:5].tolist()}
    got = client.post("/kernel", json=ask).json()["kernel"]
    np.testing.assert_allclose(got, est.predict_kernel(X[:5]), rtol=1e-9)
    for extra, message in (
        ({"output_weight": [1.0]}, "one per output column"),
        ({"output_weight": [1.0, -1.0]}, "one per output column"),
        ({"output_weight": [1.0, 1.0], "model": "krr"}, "output_weight is taken by models"),
    ):
        bad = {**masked_body(), **extra}
        bad["params"] = PARAMS if bad["model"] == "okboost" else {}
        if bad["model"] == "krr":  # every entry known: only the column weight is refused
            bad["output_kernel"] = body(None)["output_kernel"]
        r = client.post("/train", json=bad)
        assert r.status_code == 422, r.text
        assert message in r.json()["error"]["message"]


def test_scores_against_partly_known_training_outputs_are_422_with_the_fix(
    client: TestClient,
) -> None:
    """A masked fit's factor holds 0 where an output entry is unknown: /kernel against the
    training outputs and observed new-known scores answered them as observed zeros. With
    every entry known (output_weight alone) they are the observed outputs and answer."""
    X, Y = vector_data(n=40)
    masked = client.post("/train", json=masked_body()).json()["model_id"]
    query = {"model_id": masked, "inputs": X[:3].tolist()}
    edges = {"new_new": [], "new_known": [[0, 1]]}
    for route, extra, field in (
        ("/kernel", {"against": "training"}, "against"),
        ("/kernel", {"top_k": 2, "known_scores": "observed"}, "known_scores"),
        ("/evaluate", {"edges": edges, "known_scores": "observed"}, "known_scores"),
    ):
        r = client.post(route, json={**query, **extra})
        assert r.status_code == 422, r.text
        message = r.json()["error"]["message"]
        assert message.startswith(f"{field}: model '{masked}' was trained on partly known")
        assert "'predicted'" in message
    assert client.post("/kernel", json={**query, "top_k": 2}).status_code == 200
    assert client.post("/evaluate", json={**query, "edges": edges}).status_code == 200
    spec = {**body(None), "output_weight": [2.0, 0.5]}
    weighted = client.post("/train", json=spec).json()["model_id"]
    r = client.post("/kernel", json={**query, "model_id": weighted, "against": "training"})
    assert r.status_code == 200, r.text
    est = okcore.OKBoostRegressor(**PARAMS).fit(X, Y, output_weight=[2.0, 0.5])
    np.testing.assert_allclose(r.json()["kernel"], est.predict_features(X[:3]) @ Y.T, rtol=1e-9)


def test_krr_boost_rows_of_weight_zero_are_named_when_scores_need_them(
    client: TestClient,
) -> None:
    """krr-boost drops the rows of weight 0 (it keeps no output features for them): the 422
    of /kernel against the training outputs blamed early stopping, which the request (with
    an eval_set) did not use, and told it to send the eval_set it had sent."""
    X, Y = vector_data(n=40)
    w = weights()
    spec = body(
        w.tolist(),
        model="krr-boost",
        eval_set={"inputs": X[:5].tolist(), "outputs": Y[:5].tolist()},
    )
    spec["params"] = {"n_estimators": 3, "n_basis": 10, "random_state": 0}
    model_id = client.post("/train", json=spec).json()["model_id"]
    query = {"model_id": model_id, "inputs": X[:3].tolist()}
    r = client.post("/kernel", json={**query, "against": "training"})
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    kept = int((w > 0).sum())
    assert message.startswith(f"against: this model was fitted on {kept} of its 40 training rows")
    assert "sample_weight 0" in message and "n_iter_no_change" not in message
    est = okcore.KRRBoostRegressor(**spec["params"]).fit(
        X, Y, sample_weight=w, eval_set=(X[:5], Y[:5])
    )
    dense = np.zeros((3, 40))
    dense[:, w > 0] = est.predict_weights(X[:3])
    got = client.post("/predict", json={**query, "weights": "dense"}).json()["weights"]
    np.testing.assert_allclose(got, dense, rtol=1e-9, atol=1e-12)
