"""Messages a new user sees for common mistakes (row and column, the reason, the fix), and
no lock kept per unknown model id."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from svc_data import TestClient, clustered_graph, diffusion_request
from test_errors import assert_error

from service.store.model_store import ModelStore


def _predict(client: TestClient, model_id: str, inputs: Any) -> Any:
    return client.post("/predict", json={"model_id": model_id, "inputs": inputs})


def test_a_ragged_row_is_named(client: TestClient, trained: dict[str, Any]) -> None:
    inputs = [[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0]]
    r = _predict(client, trained["model_id"], inputs)
    assert_error(r, 422, "invalid_data", "inputs[2] has 3 values but inputs[0] has 4")
    assert "sequence" not in r.json()["error"]["message"]


@pytest.mark.parametrize("missing", ["NA", "", "nan?"])
def test_na_text_as_a_value_names_row_column_and_fix(
    client: TestClient, trained: dict[str, Any], missing: str
) -> None:
    inputs = [[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, missing, 3.0]]
    r = _predict(client, trained["model_id"], inputs)
    assert_error(r, 422, "invalid_data", "inputs[1][2] (row 1, column 2)", "not a number")
    message = r.json()["error"]["message"]
    # the fix fits the field: /predict inputs take missing values, sent as null
    assert "send numbers as JSON numbers; a missing value is null" in message
    assert "impute" not in message and "equal length" not in message


def test_na_in_training_outputs_is_named_too(client: TestClient) -> None:
    body = {
        "inputs": [[0.0], [1.0], [2.0]],
        "output_kernel": {"type": "linear", "outputs": [[1.0], ["NA"], [2.0]]},
        "params": {"n_estimators": 2},
    }
    r = client.post("/train", json=body)
    assert_error(r, 422, "invalid_data", "[1][0] (row 1, column 0)", "NA")


def test_a_job_id_sent_as_a_model_id_says_where_to_look(client: TestClient) -> None:
    r = client.post("/train", json=diffusion_request(clustered_graph(), wait=False))
    assert r.status_code == 202, r.text
    job_id = r.json()["job_id"]
    assert job_id != r.json()["model_id"]
    for answer in (
        client.get(f"/models/{job_id}"),
        _predict(client, job_id, [[0.0, 0.0, 0.0, 0.0]]),
        client.delete(f"/models/{job_id}"),
    ):
        assert_error(answer, 404, "not_found", "is the id of a training job", f"/jobs/{job_id}")
    unknown = "f" * 32
    assert_error(client.get(f"/models/{unknown}"), 404, "not_found", f"unknown model '{unknown}'")


def test_no_lock_is_kept_per_unknown_model_id(client: TestClient) -> None:
    store: ModelStore = client.app.state.services.store  # type: ignore[attr-defined]
    for i in range(50):
        r = _predict(client, f"{i:032x}", [[0.0, 0.0, 0.0, 0.0]])
        assert r.status_code == 404
    assert store._load_locks == {}


def test_a_model_id_sent_as_a_job_id_says_where_to_look(
    client: TestClient, trained: dict[str, Any]
) -> None:
    model_id = trained["model_id"]
    for answer in (client.get(f"/jobs/{model_id}"), client.delete(f"/jobs/{model_id}")):
        assert_error(answer, 404, "not_found", "is the id of a model", f"/models/{model_id}")
    unknown = "f" * 32
    assert_error(client.get(f"/jobs/{unknown}"), 404, "not_found", f"unknown job '{unknown}'")


def test_a_null_value_is_a_missing_value_for_a_tree_model(
    client: TestClient, trained: dict[str, Any]
) -> None:
    """JSON null is a missing value: a tree model sends it the way its splits learnt (a model
    that does not take missing values answers 422 naming the rows and the fix:
    tests/service/test_tables.py)."""
    inputs = [[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, None, 3.0]]
    r = _predict(client, trained["model_id"], inputs)
    assert r.status_code == 200, r.text
    assert np.isfinite(np.asarray(r.json()["scores"], dtype=float)).all()
