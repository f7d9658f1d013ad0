"""Unknown pairs of a bipartite network over HTTP: ``unknown_pairs`` (indices, ids, a table
part) and null / NA entries of an adjacency at /train give okcore's model on the matrix with
NaN there; ``unknown_pairs`` at /evaluate are left out of every block's scores (never
negatives); a 422 for each way the new fields can be wrong."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, TestClient, bipartite_network

import okcore
from okcore.bipartite import BipartiteRegressor, block_scores

NET = bipartite_network()
TRAIN_R, TEST_R = np.arange(0, 30), np.arange(30, 36)
TRAIN_C, TEST_C = np.arange(0, 20), np.arange(20, 24)
Y_TRAIN = NET.Y[np.ix_(TRAIN_R, TRAIN_C)]
#: Non-interacting training pairs marked unknown.
UNKNOWN = np.argwhere(Y_TRAIN == 0)[::9]
ROW_IDS = [NET.row_ids[i] for i in TRAIN_R]
COL_IDS = [NET.col_ids[j] for j in TRAIN_C]


def _body(**extra: Any) -> dict[str, Any]:
    body = {
        "task": "bipartite",
        "model": "okboost",
        "rows": {"inputs": NET.rows[TRAIN_R].tolist(), "ids": ROW_IDS},
        "cols": {"inputs": NET.cols[TRAIN_C].tolist(), "ids": COL_IDS},
        "edges": np.argwhere(Y_TRAIN != 0).tolist(),
        "params": dict(SMALL),
        "wait": True,
    }
    body.update(extra)
    return body


def _reference() -> BipartiteRegressor:
    Y = Y_TRAIN.copy()
    Y[UNKNOWN[:, 0], UNKNOWN[:, 1]] = np.nan
    est = okcore.make_estimator("okboost", SMALL)
    return BipartiteRegressor(est).fit(NET.rows[TRAIN_R], NET.cols[TRAIN_C], Y)


def _kernel(client: TestClient, model_id: str) -> np.ndarray:
    r = client.post(
        "/kernel", json={"model_id": model_id, "rows": {"inputs": NET.rows[TEST_R].tolist()}}
    )
    assert r.status_code == 200, r.text
    return np.asarray(r.json()["scores"]["new_rows"])


def _train(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    model: dict[str, Any] = r.json()["model"]
    return model


def test_unknown_pairs_by_index_by_id_and_as_null_give_okcore_model(client: TestClient) -> None:
    want = _reference().predict_new_rows(NET.rows[TEST_R])
    by_index = _train(client, _body(unknown_pairs=UNKNOWN.tolist()))
    assert by_index["bipartite"]["n_unknown"] == len(UNKNOWN)
    assert by_index["bipartite"]["n_interactions"] == int(Y_TRAIN.sum())
    np.testing.assert_allclose(_kernel(client, by_index["model_id"]), want, atol=1e-10)
    by_id = [[ROW_IDS[i], COL_IDS[j]] for i, j in UNKNOWN]
    model = _train(client, _body(unknown_pairs=by_id))
    np.testing.assert_allclose(_kernel(client, model["model_id"]), want, atol=1e-10)
    adjacency: list[list[Any]] = Y_TRAIN.tolist()
    for i, j in UNKNOWN:
        adjacency[i][j] = None
    body = _body(adjacency=adjacency)
    del body["edges"]
    model = _train(client, body)
    assert model["bipartite"]["n_unknown"] == len(UNKNOWN)
    np.testing.assert_allclose(_kernel(client, model["model_id"]), want, atol=1e-10)
    # the same pairs read as non-interactions give another model
    plain = _train(client, _body())
    assert plain["bipartite"]["n_unknown"] == 0
    assert not np.allclose(_kernel(client, plain["model_id"]), want)


def test_unknown_pairs_as_table_parts(client: TestClient) -> None:
    """curl's way: an adjacency CSV with NA cells, or a TSV of unknown id pairs."""
    want = _reference().predict_new_rows(NET.rows[TEST_R])
    cells = Y_TRAIN.astype(int).astype(str)
    cells[UNKNOWN[:, 0], UNKNOWN[:, 1]] = "NA"
    adjacency = "\n".join(",".join(row) for row in cells) + "\n"
    head = (
        '{"task": "bipartite", "model": "okboost", "params": {"n_estimators": 15, "max_splits": 3, '
    )
    head += '"learning_rate": 0.2, "random_state": 0}, "wait": true, '
    sides = f'"rows": {{"inputs": {NET.rows[TRAIN_R].tolist()}}}, '
    sides += f'"cols": {{"inputs": {NET.cols[TRAIN_C].tolist()}}}}}'
    r = client.post(
        "/train",
        data={"json": head + sides},
        files={"adjacency": ("interactions.csv", adjacency.encode(), "text/csv")},
    )
    assert r.status_code == 201, r.text
    model_id = r.json()["model_id"]
    assert r.json()["model"]["bipartite"]["n_unknown"] == len(UNKNOWN)
    np.testing.assert_allclose(_kernel(client, model_id), want, atol=1e-10)
    tsv = "drug\ttarget\n" + "".join(f"{ROW_IDS[i]}\t{COL_IDS[j]}\n" for i, j in UNKNOWN)
    body = _body()
    del body["wait"]
    r = client.post(
        "/train",
        data={"json": json.dumps({**body, "wait": True})},
        files={"unknown_pairs": ("unknown.tsv", tsv.encode(), "text/tab-separated-values")},
    )
    assert r.status_code == 201, r.text
    assert r.json()["model"]["bipartite"]["n_unknown"] == len(UNKNOWN)
    np.testing.assert_allclose(_kernel(client, r.json()["model_id"]), want, atol=1e-10)


def test_cv_leaves_unknown_pairs_out(client: TestClient) -> None:
    model = _train(client, _body(unknown_pairs=UNKNOWN.tolist(), cv={"folds": 2}))
    Y = Y_TRAIN.copy()
    Y[UNKNOWN[:, 0], UNKNOWN[:, 1]] = np.nan
    ref = okcore.bipartite.bipartite_cross_validate(
        BipartiteRegressor(okcore.make_estimator("okboost", SMALL)),
        NET.rows[TRAIN_R], NET.cols[TRAIN_C], Y, n_folds=2, random_state=0,
    )  # fmt: skip
    mean = model["bipartite"]["cv"]["mean"]
    for key in ("new_rows_auroc", "new_cols_ap", "pooled_auroc"):
        assert mean[key] == pytest.approx(ref.summary()[key])


@pytest.fixture
def model_id(client: TestClient) -> str:
    return str(_train(client, _body())["model_id"])


def test_evaluate_never_counts_an_unknown_pair_as_negative(
    client: TestClient, model_id: str
) -> None:
    Xr = NET.rows[TEST_R]
    r = client.post("/kernel", json={"model_id": model_id, "rows": {"inputs": Xr.tolist()}})
    S = np.asarray(r.json()["scores"]["new_rows"])
    truth = NET.Y[np.ix_(TEST_R, TRAIN_C)]
    negatives = np.argwhere(truth == 0)
    # the non-interacting pairs scored highest, marked unknown: as negatives they would
    # lower AUROC; left out, the scores are those of the other pairs
    top = negatives[np.argsort(-S[negatives[:, 0], negatives[:, 1]])[:10]]
    edges = {"new_rows": np.argwhere(truth != 0).tolist()}
    body = {"model_id": model_id, "rows": {"inputs": Xr.tolist()}, "edges": edges}
    plain = client.post("/evaluate", json=body).json()["new_rows"]
    r = client.post("/evaluate", json={**body, "unknown_pairs": {"new_rows": top.tolist()}})
    assert r.status_code == 200, r.text
    out = r.json()["new_rows"]
    keep = np.ones(truth.shape, bool)
    keep[top[:, 0], top[:, 1]] = False
    want = block_scores(truth[keep], S[keep])
    assert out["auroc"] == pytest.approx(want["auroc"]) and out["ap"] == pytest.approx(want["ap"])
    assert out["auroc"] > plain["auroc"] and out["ap"] > plain["ap"]
    assert (out["n_unknown"], out["n_pairs"]) == (10, truth.size - 10)
    assert plain["n_unknown"] == 0 and plain["n_pairs"] == truth.size
    assert r.json()["pooled"]["n_unknown"] == 10
    # by id: the same answer
    new_ids = [f"x{a}" for a in range(len(TEST_R))]
    by_id = [[new_ids[a], COL_IDS[j]] for a, j in top]
    r = client.post(
        "/evaluate",
        json={**body, "rows": {"inputs": Xr.tolist(), "ids": new_ids},
              "unknown_pairs": {"by_id": by_id}},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    assert r.json()["new_rows"] == out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b.update(unknown_pairs=[[0, 25]]), "names col 25 but there are 20"),
        (lambda b: b.update(unknown_pairs=[["d0", "nope"]]), "'nope' is not one of the 20 ids"),
        (lambda b: b.update(unknown_pairs=[[0]]), "unknown_pairs"),
        (lambda b: b.update(unknown_pairs=[[-1, 0]]), "unknown_pairs"),
        (lambda b: b.update(unknown_pairs=b["edges"][:1]), "both interactions and unknown"),
        (
            lambda b: (b.pop("edges"), b.update(adjacency=[[None] * 20] * 30)),
            "every pair is unknown",
        ),
    ],
)
def test_bad_unknown_pairs_at_train_are_422(client: TestClient, change: Any, message: str) -> None:
    body = _body(wait=False)
    change(body)
    r = client.post("/train", json=body)
    assert r.status_code == 422, r.text
    assert message in r.json()["error"]["message"]


def test_an_infinite_adjacency_entry_is_422(client: TestClient) -> None:
    body = _body(wait=False, adjacency=Y_TRAIN.tolist())
    del body["edges"]
    body["adjacency"][2][3] = float("inf")
    r = client.post(
        "/train",
        content=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 422
    assert "adjacency" in r.json()["error"]["message"]


def test_every_pair_unknown_is_422(client: TestClient) -> None:
    body = _body(wait=False, edges=[], unknown_pairs=np.argwhere(Y_TRAIN == Y_TRAIN).tolist())
    r = client.post("/train", json=body)
    assert r.status_code == 422
    assert "every pair is unknown" in r.json()["error"]["message"]


def test_bad_unknown_pairs_at_evaluate_are_422(client: TestClient, model_id: str) -> None:
    Xr = NET.rows[TEST_R]
    body = {"model_id": model_id, "rows": {"inputs": Xr.tolist()},
            "edges": {"new_rows": [[0, 1]]}}  # fmt: skip
    cases = [
        ({"new_rows": [[0, 1]]}, "both true interactions and unknown"),
        ({"new_rows": [[9, 1]]}, "unknown_pairs.new_rows[0]"),
        ({"new_pairs": [[0, 0]]}, "needs test rows and cols"),
        ({"by_id": [["zz", "t1"]]}, "unknown_pairs.by_id[0][0]"),
        ({"new_rows": [[0, 1, 2]]}, "unknown_pairs"),
        ({"other": [[0, 1]]}, "other"),
    ]
    for unknown, message in cases:
        r = client.post("/evaluate", json={**body, "unknown_pairs": unknown})
        assert r.status_code == 422, (unknown, r.text)
        assert message in r.json()["error"]["message"], (unknown, r.json())
