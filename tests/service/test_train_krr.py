"""/train with "model": "krr-boost" (boosted sparse KRR): trained through the
registry like the tree models, predicting exactly as okcore, with an eval set, a stored
record and the standard 422 for bad parameters."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from svc_data import TestClient, vector_data

import okcore

KERNEL = {"type": "rbf", "sigma": 1.5}
PARAMS = {
    "n_estimators": 5,
    "subset_size": 20,
    "n_basis": 6,
    "gamma": 0.5,
    "alpha": 0.1,
    "random_state": 0,
}


def train(client: TestClient, params: dict[str, Any], **extra: Any) -> Any:
    X, Y = vector_data(n=40)
    body = {
        "model": "krr-boost",
        "inputs": X.tolist(),
        "output_kernel": {**KERNEL, "outputs": Y.tolist()},
        "params": params,
        "wait": True,
        **extra,
    }
    return client.post("/train", json=body)


def test_krr_boost_trains_and_predicts_as_okcore(client: TestClient) -> None:
    r = train(client, PARAMS)
    assert r.status_code == 201, r.text
    record = r.json()["model"]
    assert record["model"] == "krr-boost" and record["params"]["n_basis"] == 6
    assert record["n_estimators"] == 5 and len(record.get("train_loss") or [0] * 5) == 5
    X, Y = vector_data(n=40)
    est = okcore.KRRBoostRegressor(**PARAMS).fit(X, Y, kernel=KERNEL)
    Xq = X[:6] + 0.1
    model_id = r.json()["model_id"]
    out = client.post(
        "/predict", json={"model_id": model_id, "inputs": Xq.tolist(), "weights": "dense"}
    ).json()
    np.testing.assert_allclose(out["weights"], est.predict_weights(Xq), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(out["indices"], est.predict_index(Xq)[0])
    kernel = client.post("/kernel", json={"model_id": model_id, "inputs": Xq.tolist()})
    assert kernel.status_code == 200, kernel.text
    np.testing.assert_allclose(kernel.json()["kernel"], est.predict_kernel(Xq), atol=1e-12)
    assert client.get(f"/models/{model_id}").json()["model"] == "krr-boost"


def test_krr_boost_takes_an_eval_set_and_ard_widths(client: TestClient) -> None:
    X, Y = vector_data(n=40, seed=3)
    params = {**PARAMS, "gamma": [0.5] * X.shape[1], "n_iter_no_change": 2}
    eval_set = {"inputs": X[:10].tolist(), "outputs": Y[:10].tolist()}
    r = train(client, params, eval_set=eval_set)
    assert r.status_code == 201, r.text
    assert r.json()["model"]["params"]["gamma"] == [0.5] * X.shape[1]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"regularization": "l2"},
            "The 'regularization' parameter of KRRBoostRegressor must be one of 'sun-yao', "
            "'shrinkage'. Got 'l2' instead.",
        ),
        ({"max_splits": 3}, "unknown parameter 'max_splits' for model 'krr-boost'"),
    ],
)
def test_bad_krr_parameters_are_422(client: TestClient, params: dict, message: str) -> None:
    r = train(client, {**PARAMS, **params})
    assert r.status_code == 422, r.text
    assert message in r.json()["error"]["message"]


def test_the_job_estimate_counts_stages_of_basis_vectors(tmp_path: Any) -> None:
    """budget.estimate_job has a boosted-KRR model: D basis vectors per stage, the stage's
    N x D kernel block in memory; a job over a limit is refused naming stages, not trees."""
    from svc_data import make_settings

    from service.errors import WorkTooLarge
    from service.training.budget import check_limits, estimate_job

    params = okcore.estimator_parameters("krr-boost")
    params.update(n_estimators=150, n_basis=200, subset_size=2000)
    e = estimate_job("krr-boost", params, np.zeros((36000, 8)), {"type": "linear"}, 1, 0)
    assert e.search == "kernel" and e.leaves == 200 and e.n_trees == 150 and e.rank == 1
    assert e.memory_bytes > 8.0 * 36000 * 200 and e.tree_seconds > 0
    with pytest.raises(WorkTooLarge, match="M = 150 KRR stages of 200 basis vectors"):
        check_limits(e, make_settings(tmp_path, max_job_seconds=1e-3))


def test_widths_that_do_not_match_the_inputs_are_a_clear_4xx(client: TestClient) -> None:
    r = train(client, {**PARAMS, "gamma": [0.5, 0.5]})
    assert 400 <= r.status_code < 500, r.text
    assert "gamma has 2 values but X has 3 features" in r.json()["error"]["message"]


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("model", ["krr", "krr-boost"])
def test_an_auto_width_on_identical_rows_is_a_422_on_params_gamma(
    client: TestClient, model: str, sparse: bool
) -> None:
    """gamma 'auto' on rows that are all the same (dense or CSR inputs): okcore's rule
    (okcore.check_auto_gamma) refuses it before queueing, in the request's words."""
    X, Y = vector_data(n=40)
    same = np.zeros_like(X)
    same[:, 0] = 2.0
    inputs: Any = same.tolist()
    if sparse:
        inputs = {"data": [2.0] * 40, "indices": [0] * 40, "indptr": list(range(41)),
                  "shape": list(same.shape)}  # fmt: skip
    params = {"gamma": "auto"} if model == "krr" else {**PARAMS, "gamma": "auto"}
    body = {"model": model, "inputs": inputs, "params": params,
            "output_kernel": {**KERNEL, "outputs": Y.tolist()}}  # fmt: skip
    r = client.post("/train", json=body)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert "undefined on 40 rows, all with the same inputs: give params.gamma" in error["message"]
    assert error["details"][0]["loc"] == ["params", "gamma"]
