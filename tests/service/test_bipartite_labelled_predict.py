"""A labelled similarity of new vertices at prediction (/kernel, /evaluate): the training
ids in its header in any order, matched to the model's by id, give the scores of the matrix
in the training order; ``similarity_ids`` does the same in JSON; a 422 for each way the
ids can be wrong."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, TestClient, bipartite_network

NET = bipartite_network()
TRAIN_R, TEST_R = np.arange(0, 30), np.arange(30, 36)
TRAIN_C, TEST_C = np.arange(0, 20), np.arange(20, 24)
COL_IDS = [NET.col_ids[j] for j in TRAIN_C]
NEW_COL_IDS = [f"new-t{b}" for b in range(len(TEST_C))]


def _similarity(X: np.ndarray) -> np.ndarray:
    d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.exp(-d / 4.0)


S = _similarity(NET.cols)
S_NEW = S[np.ix_(TEST_C, TRAIN_C)]


def _labelled(M: np.ndarray, row_ids: list[str], col_ids: list[str], order: np.ndarray) -> bytes:
    lines = ["\t" + "\t".join(col_ids[j] for j in order)]
    lines += [
        r + "\t" + "\t".join(repr(float(v)) for v in M[a, order]) for a, r in enumerate(row_ids)
    ]
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def model_id(client: TestClient) -> str:
    body = {
        "task": "bipartite",
        "model": "okboost",
        "rows": {"inputs": NET.rows[TRAIN_R].tolist()},
        "cols": {"similarity": S[np.ix_(TRAIN_C, TRAIN_C)].tolist(), "ids": COL_IDS},
        "edges": np.argwhere(NET.Y[np.ix_(TRAIN_R, TRAIN_C)] != 0).tolist(),
        "params": dict(SMALL),
        "wait": True,
    }
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["model_id"])


def _kernel(client: TestClient, body: dict[str, Any], files: dict[str, Any]) -> Any:
    r = client.post("/kernel", data={"json": json.dumps(body)}, files=files)
    assert r.status_code == 200, r.text
    return r.json()


def test_shuffled_training_ids_give_the_same_scores(client: TestClient, model_id: str) -> None:
    want = client.post(
        "/kernel",
        json={"model_id": model_id, "cols": {"similarity": S_NEW.tolist(), "ids": NEW_COL_IDS},
              "rows": {"inputs": NET.rows[TEST_R].tolist()}, "top_k": 3},
    ).json()  # fmt: skip
    body = {"model_id": model_id, "rows": {"inputs": NET.rows[TEST_R].tolist()}, "top_k": 3}
    for seed in range(3):
        order = np.random.default_rng(seed).permutation(len(TRAIN_C))
        table = _labelled(S_NEW, NEW_COL_IDS, COL_IDS, order)
        got = _kernel(client, body, {"cols.similarity": ("new_targets.txt", table)})
        for block in ("new_cols", "new_pairs"):
            np.testing.assert_allclose(got["scores"][block], want["scores"][block], atol=1e-12)
        assert got["edges"]["new_cols_ids"] == want["edges"]["new_cols_ids"]  # ids from the table
        # the same in JSON: similarity_ids names the columns
        side = {"similarity": S_NEW[:, order].tolist(), "ids": NEW_COL_IDS,
                "similarity_ids": [COL_IDS[j] for j in order]}  # fmt: skip
        r = client.post("/kernel", json={**body, "cols": side})
        assert r.status_code == 200, r.text
        np.testing.assert_allclose(r.json()["scores"]["new_cols"], want["scores"]["new_cols"])
    # /evaluate matches them the same way
    truth = {"new_cols": np.argwhere(NET.Y[np.ix_(TRAIN_R, TEST_C)] != 0).tolist()}
    plain = client.post(
        "/evaluate",
        json={"model_id": model_id, "cols": {"similarity": S_NEW.tolist()}, "edges": truth},
    ).json()
    r = client.post(
        "/evaluate",
        data={"json": json.dumps({"model_id": model_id, "edges": truth})},
        files={"cols.similarity": ("s.txt", _labelled(S_NEW, NEW_COL_IDS, COL_IDS, order))},
    )
    assert r.status_code == 200, r.text
    assert r.json()["new_cols"] == plain["new_cols"]


def test_bad_labelled_similarities_at_prediction_are_422(client: TestClient, model_id: str) -> None:
    order = np.arange(len(TRAIN_C))
    wrong = list(COL_IDS)
    wrong[3] = "nope"
    cases = [
        (_labelled(S_NEW, NEW_COL_IDS, wrong, order), "'nope' is not one of the 20 ids"),
        (_labelled(S_NEW[:, :15], NEW_COL_IDS, COL_IDS, order[:15]), "names 15 training"),
        (_labelled(S_NEW, NEW_COL_IDS, COL_IDS[:19] + [COL_IDS[0]], order), "twice in its header"),
    ]
    for table, message in cases:
        r = client.post(
            "/kernel",
            data={"json": json.dumps({"model_id": model_id})},
            files={"cols.similarity": ("s.txt", table)},
        )
        assert r.status_code == 422, r.text
        assert message in r.json()["error"]["message"], r.json()
    side = {"similarity": S_NEW.tolist(), "similarity_ids": COL_IDS[:5]}
    r = client.post("/kernel", json={"model_id": model_id, "cols": side})
    assert r.status_code == 422 and "one id per column" in r.json()["error"]["message"]
    side = {"inputs": NET.cols[TEST_C].tolist(), "similarity_ids": COL_IDS[:2]}
    r = client.post("/kernel", json={"model_id": model_id, "cols": side})
    assert r.status_code == 422 and "similarity_ids name the columns" in r.text


def test_a_model_without_ids_cannot_match_by_id(client: TestClient) -> None:
    body = {
        "task": "bipartite",
        "model": "okboost",
        "rows": {"inputs": NET.rows[TRAIN_R].tolist()},
        "cols": {"similarity": S[np.ix_(TRAIN_C, TRAIN_C)].tolist()},
        "edges": np.argwhere(NET.Y[np.ix_(TRAIN_R, TRAIN_C)] != 0).tolist(),
        "params": dict(SMALL),
        "wait": True,
    }
    model_id = client.post("/train", json=body).json()["model_id"]
    side = {"similarity": S_NEW.tolist(), "similarity_ids": COL_IDS}
    r = client.post("/kernel", json={"model_id": model_id, "cols": side})
    assert r.status_code == 422 and "trained without ids" in r.json()["error"]["message"]
