"""POST /evaluate: the scores equal okcore.metrics on the same model, by row and by id, JSON
and multipart; every bad request is one 422 (or 404 / 409) saying what is wrong."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, TestClient, make_settings, vector_data

import okcore
from okcore import metrics
from okcore.outputs.graph import diffusion_gram
from service.app import create_app

# the README's network-completion walk-through: two communities of 4 vertices, a bridge 3-7
X_TRAIN = [[0.0, 1.0], [0.1, 0.9], [0.2, 1.0], [0.0, 0.8], [1.0, 0.0], [0.9, 0.1], [1.0, 0.2],
           [0.8, 0.0]]  # fmt: skip
EDGES = [[0, 1], [0, 2], [1, 2], [1, 3], [2, 3], [4, 5], [4, 6], [5, 6], [5, 7], [6, 7], [3, 7]]
PARAMS = {"n_estimators": 50, "learning_rate": 0.1, "max_splits": 2, "random_state": 0}
IDS = [f"v{i}" for i in range(8)]
# three new vertices: two near community A (linked together), one near B
X_TEST = [[0.05, 0.95], [0.1, 0.85], [0.95, 0.05]]
NEW_NEW = [[0, 1]]
NEW_KNOWN = [[0, 0], [0, 1], [0, 2], [1, 1], [1, 3], [2, 4], [2, 5], [2, 6]]
TEST_IDS = ["n0", "n1", "n2"]


def _walkthrough(client: TestClient, ids: bool = False) -> str:
    body: dict[str, Any] = {
        "inputs": X_TRAIN,
        "output_kernel": {"type": "diffusion", "beta": 1.0, "edges": EDGES},
        "params": PARAMS,
        "wait": True,
    }
    if ids:
        body["ids"] = IDS
        body["output_kernel"]["edges"] = [[IDS[a], IDS[b]] for a, b in EDGES]
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    model_id: str = r.json()["model_id"]
    return model_id


def _truth_kernel() -> np.ndarray:
    """The diffusion kernel of the whole graph, new vertices (rows 8..10) included."""
    full = EDGES + [[8 + a, 8 + b] for a, b in NEW_NEW] + [[8 + a, i] for a, i in NEW_KNOWN]
    return diffusion_gram(np.array(full), 11, 1.0)


def _adjacency() -> tuple[np.ndarray, np.ndarray]:
    a_nn, a_nk = np.zeros((3, 3), dtype=bool), np.zeros((3, 8), dtype=bool)
    for a, b in NEW_NEW:
        a_nn[a, b] = a_nn[b, a] = True
    for a, i in NEW_KNOWN:
        a_nk[a, i] = True
    return a_nn, a_nk


def _precision_at_k(scores: np.ndarray, truth: np.ndarray, k: int) -> float:
    shares = [truth[q, np.argsort(-scores[q], kind="stable")[:k]].mean()
              for q in range(len(scores)) if truth[q].any()]  # fmt: skip
    return float(np.mean(shares))


def test_evaluate_on_the_walkthrough_model_equals_okcore_metrics(client: TestClient) -> None:
    model_id = _walkthrough(client)
    K = _truth_kernel()
    gram_cross, gram_diag = K[8:, :8], np.diag(K)[8:]
    r = client.post(
        "/evaluate",
        json={
            "model_id": model_id,
            "inputs": X_TEST,
            "gram_cross": gram_cross.tolist(),
            "gram_diag": gram_diag.tolist(),
            "edges": {"new_new": NEW_NEW, "new_known": NEW_KNOWN},
            "k": 3,
        },
    )
    assert r.status_code == 200, r.text
    got = r.json()
    # the same model fitted by okcore directly (same data, same seed)
    est = okcore.OKBoostRegressor(**PARAMS).fit(
        np.array(X_TRAIN), kernel=okcore.DiffusionKernel(np.array(EDGES), 1.0)
    )
    Xt = np.array(X_TEST)
    a_nn, a_nk = _adjacency()
    k_nn, k_nk = est.predict_kernel(Xt), est.predict_kernel(Xt, np.array(X_TRAIN))
    upper = np.triu_indices(3, k=1)
    expected = {
        "err_phi": metrics.err_phi(est, Xt, gram_cross=gram_cross, gram_diag=gram_diag),
        "err_y": metrics.err_y(est, Xt, gram_cross=gram_cross, gram_diag=gram_diag),
        "auc": metrics.network_auc(k_nn, k_nk, a_nn, a_nk),
        "auc_new_new": metrics.edge_auc(k_nn[upper], a_nn[upper]),
        "auc_new_known": metrics.edge_auc(k_nk, a_nk),
        "precision_at_k": _precision_at_k(k_nk, a_nk, 3),
    }
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, rel=1e-12, abs=1e-15), name
    assert got["n_test"] == 3 and got["k"] == 3 and got["n_ranked"] == 3
    assert 0.5 < got["auc"] <= 1.0  # the walk-through's communities are predictable

    # observed test-training scores: <F(x), phi(y_i)>, okcore's auc_known
    r = client.post(
        "/evaluate",
        json={
            "model_id": model_id,
            "inputs": X_TEST,
            "edges": {"new_new": NEW_NEW, "new_known": NEW_KNOWN},
            "known_scores": "observed",
        },
    )
    observed = r.json()
    k_known = est.predict_kernel_train(Xt)
    assert observed["auc"] == pytest.approx(metrics.network_auc(k_nn, k_known, a_nn, a_nk))
    assert observed["err_phi"] is None and observed["err_y"] is None
    assert observed["k"] == 8  # k = 10 by default, at most N


def test_edges_by_id_give_the_same_scores_as_by_row(client: TestClient) -> None:
    by_row = client.post(
        "/evaluate",
        json={
            "model_id": _walkthrough(client),
            "inputs": X_TEST,
            "edges": {"new_new": NEW_NEW, "new_known": NEW_KNOWN},
        },
    ).json()
    model_id = _walkthrough(client, ids=True)
    body = {
        "model_id": model_id,
        "inputs": X_TEST,
        "ids": TEST_IDS,
        "edges": {
            "new_new": [[TEST_IDS[a], TEST_IDS[b]] for a, b in NEW_NEW],
            "new_known": [[TEST_IDS[a], IDS[i]] for a, i in NEW_KNOWN],
        },
    }
    r = client.post("/evaluate", json=body)
    assert r.status_code == 200, r.text
    by_id = r.json()
    for name in ("auc", "auc_new_new", "auc_new_known", "precision_at_k"):
        assert by_id[name] == pytest.approx(by_row[name], rel=1e-12), name


def test_evaluate_vector_model_json_and_multipart(client: TestClient) -> None:
    X, Y = vector_data(n=40)
    kernel = {"type": "rbf", "sigma": 1.0}
    r = client.post(
        "/train",
        json={
            "inputs": X[:30].tolist(),
            "output_kernel": {**kernel, "outputs": Y[:30].tolist()},
            "params": SMALL,
            "wait": True,
        },
    )
    model_id = r.json()["model_id"]
    est = okcore.OKBoostRegressor(**SMALL).fit(X[:30], Y[:30], kernel=kernel)
    got = client.post(
        "/evaluate",
        json={"model_id": model_id, "inputs": X[30:].tolist(), "outputs": Y[30:].tolist()},
    ).json()
    assert got["err_phi"] == pytest.approx(metrics.err_phi(est, X[30:], Y[30:]), rel=1e-12)
    assert got["err_y"] == pytest.approx(metrics.err_y(est, X[30:], Y[30:]), rel=1e-12)
    assert got["auc"] is None and got["precision_at_k"] is None

    def npy(a: np.ndarray) -> bytes:
        buf = io.BytesIO()
        np.save(buf, a)
        return buf.getvalue()

    r = client.post(
        "/evaluate",
        data={"json": json.dumps({"model_id": model_id})},
        files={"inputs": ("x.npy", npy(X[30:])), "outputs": ("y.npy", npy(Y[30:]))},
    )
    assert r.status_code == 200, r.text
    assert r.json()["err_phi"] == got["err_phi"] and r.json()["err_y"] == got["err_y"]


@pytest.mark.parametrize(
    ("change", "status", "fragments"),
    [
        ({"edges": None}, 422, ("nothing to evaluate against",)),
        ({"outputs": [[1.0, 0.0]] * 3}, 422, ("without output vectors", "gram_cross")),
        ({"gram_cross": [[0.1] * 7] * 3, "gram_diag": [1.0] * 3}, 422, ("7 columns", "8")),
        ({"gram_cross": [[0.1] * 8] * 3}, 422, ("gram_cross and gram_diag go together",)),
        ({"inputs": [[0.0, 1.0, 2.0]]}, 422, ("3 columns", "2 features")),
        ({"ids": ["a", "b"]}, 422, ("ids has 2 rows but inputs has 3",)),
        ({"edges": {"new_known": [[0, 8]]}}, 422, ("new_known[0] = [0, 8]", "training vertex 8")),
        ({"edges": {"new_new": [[0, 3]]}}, 422, ("new_new[0] = [0, 3]", "test vertex 3")),
        ({"edges": {"new_new": [[1, 1]]}}, 422, ("test vertex 1 to itself",)),
        ({"edges": {"new_new": [["n0", "n1"]]}}, 422, ("by id", "send `ids`")),
        (
            {"ids": TEST_IDS, "edges": {"new_known": [["n0", "v0"]]}},
            422,
            ("by id", "the model has no ids"),
        ),
        ({"edges": {"new_known": [[0, 0]]}, "k": 0}, 422, ("k",)),
        ({"k": "3"}, 422, ("k", "integer")),
        ({"model_id": "0" * 32}, 404, ("unknown model",)),
    ],
)
def test_bad_evaluate_requests(
    client: TestClient, change: dict[str, Any], status: int, fragments: tuple[str, ...]
) -> None:
    body = {
        "model_id": _walkthrough(client),
        "inputs": X_TEST,
        "edges": {"new_known": NEW_KNOWN},
        **change,
    }
    r = client.post("/evaluate", json={k: v for k, v in body.items() if v is not None})
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert set(error) == {"status", "code", "message", "details"}
    for fragment in fragments:
        assert fragment in error["message"], (fragment, error["message"])


def test_an_auc_without_an_edge_is_refused(client: TestClient) -> None:
    r = client.post(
        "/evaluate",
        json={"model_id": _walkthrough(client), "inputs": X_TEST, "edges": {}},
    )
    assert r.status_code == 422 and "at least one edge" in r.json()["error"]["message"]


def test_evaluate_refuses_more_pairs_than_the_dense_limit(tmp_path: Path) -> None:
    with TestClient(create_app(make_settings(tmp_path, max_dense_values=20))) as client:
        r = client.post(
            "/evaluate",
            json={
                "model_id": _walkthrough(client),
                "inputs": X_TEST,
                "edges": {"new_known": NEW_KNOWN},
            },
        )
    assert r.status_code == 422
    message = r.json()["error"]["message"]
    assert "3 x 11 = 33 values" in message and "OKBOOST_MAX_DENSE_VALUES" in message


def test_predict_of_a_model_trained_on_partly_known_outputs_names_the_request_fields(
    client: TestClient,
) -> None:
    """/predict without candidates, or with W^F weights, cannot answer such a model: the 422
    says so in the request's fields, not in okcore's method names, and candidates answer."""
    X, Y = vector_data(n=30)
    r = client.post("/train", json={
        "inputs": X.tolist(), "output_kernel": {"type": "linear", "outputs": Y.tolist()},
        "output_weight": [1.0] * Y.shape[1], "model": "okboost",
        "params": {"n_estimators": 3}, "wait": True,
    })  # fmt: skip
    assert r.status_code == 201, r.text
    query = {"model_id": r.json()["model_id"], "inputs": X[:4].tolist()}
    for extra, fragments in (
        ({}, ("partly known outputs", "`candidates`", "POST /kernel")),
        ({"candidates": Y[:5].tolist(), "weights": "sparse"}, ("weights = 'sparse'", "'none'")),
    ):
        r = client.post("/predict", json={**query, **extra})
        assert r.status_code == 422, r.text
        message = r.json()["error"]["message"]
        assert "predict_index" not in message and "predict_weights" not in message, message
        for fragment in fragments:
            assert fragment in message, message
    answer = client.post("/predict", json={**query, "candidates": Y[:5].tolist()})
    assert answer.status_code == 200, answer.text
    assert answer.json()["index_space"] == "candidates"


def test_evaluate_of_a_model_trained_on_partly_known_outputs_says_what_to_do(
    client: TestClient,
) -> None:
    """/evaluate has no candidates field: its 422 names what the user can send instead, and
    /predict with the test outputs as candidates answers."""
    X, Y = vector_data(n=30)
    outputs: list = Y.tolist()
    outputs[3][0] = None
    r = client.post("/train", json={
        "inputs": X.tolist(), "output_kernel": {"type": "linear", "outputs": outputs},
        "model": "okboost", "params": {"n_estimators": 3}, "wait": True,
    })  # fmt: skip
    assert r.status_code == 201, r.text
    model_id = r.json()["model_id"]
    body = {"model_id": model_id, "inputs": X[:4].tolist(), "outputs": Y[:4].tolist()}
    r = client.post("/evaluate", json=body)
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "pass candidates" not in message, message
    for fragment in ("partly known outputs", "POST /predict", "`candidates`", "POST /kernel"):
        assert fragment in message, message
    query = {"model_id": model_id, "inputs": X[:4].tolist(), "candidates": Y[:4].tolist()}
    assert client.post("/predict", json=query).status_code == 200
    edges = {"model_id": model_id, "inputs": X[:4].tolist(),
             "edges": {"new_known": [[0, 1], [1, 2]], "new_new": [[0, 1]]}}  # fmt: skip
    r = client.post("/evaluate", json=edges)
    assert r.status_code == 200 and r.json()["auc"] is not None, r.text


@pytest.mark.parametrize("index", [2**53, 2**63, 2**64, 10**30, 1e20])
def test_an_edge_index_beyond_every_table_is_a_422(client: TestClient, index: Any) -> None:
    """Indices of 2**63 and more wrapped around to negative int64 values: a 500."""
    model_id = _walkthrough(client)
    body = {"model_id": model_id, "inputs": X_TEST,
            "edges": {"new_new": [], "new_known": [[0, 1], [1, index]]}}  # fmt: skip
    r = client.post("/evaluate", json=body)
    assert r.status_code == 422, r.text
    assert "new_known[1] = " in r.json()["error"]["message"], r.text


def test_an_edge_to_a_vertex_past_the_last_names_how_many_there_are(client: TestClient) -> None:
    model_id = _walkthrough(client)
    body = {"model_id": model_id, "inputs": X_TEST,
            "edges": {"new_new": [], "new_known": [[0, 1], [len(X_TEST), 2]]}}  # fmt: skip
    r = client.post("/evaluate", json=body)
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert f"but there are {len(X_TEST)} test vertices (counted from 0)" in message, message
