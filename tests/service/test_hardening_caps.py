"""Answer caps: every answer and intermediate of /predict and /kernel is bounded by
max_dense_values (Q x top_k, candidates x N, the rows computed at once), refused with a 422
naming the cap and the way around it; top_k has one bound on both routes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from svc_data import TestClient, make_settings, vector_data
from test_errors import assert_error

from service.app import create_app
from service.inference import predict as inference

CAP = 2_000


@pytest.fixture
def capped(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(tmp_path, max_dense_values=CAP))) as c:
        yield c


@pytest.fixture
def rbf_model(capped: TestClient) -> dict[str, Any]:
    X, Y = vector_data(n=120)
    body = {
        "inputs": X.tolist(),
        "output_kernel": {"type": "rbf", "outputs": Y.tolist(), "gamma": 0.5},
        "params": {"n_estimators": 3},
        "wait": True,
    }
    r = capped.post("/train", json=body)
    assert r.status_code == 201, r.text
    return {"model_id": r.json()["model_id"], "p": X.shape[1], "d": Y.shape[1], "n": len(X)}


def _inputs(model: dict[str, Any], rows: int) -> list[list[float]]:
    return np.random.default_rng(0).normal(size=(rows, model["p"])).tolist()


def test_q_times_top_k_over_the_cap_is_a_422(capped: TestClient, rbf_model: dict[str, Any]) -> None:
    top_k = 20
    rows = CAP // top_k + 1
    body = {"model_id": rbf_model["model_id"], "inputs": _inputs(rbf_model, rows), "top_k": top_k}
    r = capped.post("/predict", json=body)
    assert_error(r, 422, "invalid_data", "Q x top_k", "OKBOOST_MAX_DENSE_VALUES", "smaller top_k")


def test_outputs_of_the_pre_images_count_their_values(
    capped: TestClient, rbf_model: dict[str, Any]
) -> None:
    top_k, d = 5, rbf_model["d"]
    rows = CAP // (top_k * d) + 1
    assert rows * top_k <= CAP  # indices alone fit
    body = {"model_id": rbf_model["model_id"], "inputs": _inputs(rbf_model, rows), "top_k": top_k}
    assert capped.post("/predict", json=body).status_code == 200
    r = capped.post("/predict", json={**body, "return_outputs": True})
    assert_error(r, 422, "invalid_data", "return_outputs", "OKBOOST_MAX_DENSE_VALUES")


def test_a_candidate_set_over_the_cap_is_a_422(
    capped: TestClient, rbf_model: dict[str, Any]
) -> None:
    n_cand = CAP // rbf_model["n"] + 1
    candidates = np.zeros((n_cand, rbf_model["d"])).tolist()
    body = {"model_id": rbf_model["model_id"], "inputs": _inputs(rbf_model, 1)}
    r = capped.post("/predict", json={**body, "candidates": candidates})
    assert_error(r, 422, "invalid_data", "(C x N)", "fewer candidates", "OKBOOST_MAX_DENSE_VALUES")
    r = capped.post("/predict", json={**body, "candidates": candidates[: n_cand - 2]})
    assert r.status_code == 200, r.text


def test_pre_images_are_computed_within_the_cap_whatever_q(
    capped: TestClient, rbf_model: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many queries against the training outputs: okcore is called max_dense // N rows at a
    time (its (rows, N) distance matrix stays within the cap), with the same answer."""
    rows = 3 * CAP // rbf_model["n"]
    body = {"model_id": rbf_model["model_id"], "inputs": _inputs(rbf_model, rows), "top_k": 2}
    whole = capped.post("/predict", json=body)
    assert whole.status_code == 200, whole.text
    seen: list[int] = []
    original = inference._pre_images

    def spy(est: Any, inputs: Any, *args: Any) -> Any:
        real = est.predict_index

        def record(x: Any, **kw: Any) -> Any:
            seen.append(x.shape[0])
            return real(x, **kw)

        est.predict_index = record
        try:
            return original(est, inputs, *args)
        finally:
            del est.predict_index

    monkeypatch.setattr(inference, "_pre_images", spy)
    again = capped.post("/predict", json=body)
    assert again.json()["indices"] == whole.json()["indices"]
    assert len(seen) > 1 and max(seen) * rbf_model["n"] <= CAP


def test_kernel_top_k_edges_over_the_cap_is_a_422(
    capped: TestClient, rbf_model: dict[str, Any]
) -> None:
    rows = 40
    body = {"model_id": rbf_model["model_id"], "inputs": _inputs(rbf_model, rows)}
    top_k = CAP // rows + 1
    r = capped.post("/kernel", json={**body, "return_kernel": False, "top_k": top_k})
    assert_error(r, 422, "invalid_data", "Q x top_k", "OKBOOST_MAX_DENSE_VALUES")


@pytest.mark.parametrize(
    ("route", "field", "extra"),
    [
        ("/predict", "top_k", {}),
        ("/kernel", "top_k", {}),
        ("/predict", "weights_top_k", {"weights": "sparse"}),
    ],
)
def test_top_k_has_one_bound_on_both_routes(
    capped: TestClient, rbf_model: dict[str, Any], route: str, field: str, extra: dict[str, Any]
) -> None:
    body = {"model_id": rbf_model["model_id"], "inputs": _inputs(rbf_model, 1), field: 10**6}
    r = capped.post(route, json={**body, **extra})
    assert_error(r, 422, "invalid_data", field, "10000")
