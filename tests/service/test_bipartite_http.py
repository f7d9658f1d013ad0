"""Bipartite networks over HTTP: /train with task bipartite (edges by row or by id, a
dense or sparse adjacency, a side given as a similarity, K x K CV), /kernel answering the
three blocks with ranked edges by id, /evaluate scoring them per block, each answer equal to
okcore's on the same model, and a clear 422 for every mismatch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, Bipartite, TestClient, bipartite_network

import okcore
from okcore.bipartite import BipartiteRegressor, block_scores

NET = bipartite_network()
TRAIN_R, TEST_R = np.arange(0, 30), np.arange(30, 36)
TRAIN_C, TEST_C = np.arange(0, 20), np.arange(20, 24)


def _body(net: Bipartite = NET, ids: bool = True, **extra: Any) -> dict[str, Any]:
    rows: dict[str, Any] = {"inputs": net.rows[TRAIN_R].tolist()}
    cols: dict[str, Any] = {"inputs": net.cols[TRAIN_C].tolist()}
    edges: list[list[Any]] = net.edges(TRAIN_R, TRAIN_C)
    if ids:
        rows["ids"] = [net.row_ids[i] for i in TRAIN_R]
        cols["ids"] = [net.col_ids[j] for j in TRAIN_C]
        edges = [[rows["ids"][i], cols["ids"][j]] for i, j in edges]
    body = {"task": "bipartite", "model": "okboost", "rows": rows, "cols": cols, "edges": edges,
            "params": dict(SMALL), "wait": True}  # fmt: skip
    body.update(extra)
    return body


def _train(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()
    return out


def _reference(similarity: bool = False) -> BipartiteRegressor:
    est = okcore.make_estimator("okboost", SMALL)
    Xc = NET.cols[TRAIN_C]
    if similarity:
        Xc = _similarity(NET.cols)[np.ix_(TRAIN_C, TRAIN_C)]
    Y = NET.Y[np.ix_(TRAIN_R, TRAIN_C)]
    return BipartiteRegressor(est).fit(NET.rows[TRAIN_R], Xc, Y)


def _similarity(X: np.ndarray) -> np.ndarray:
    d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.exp(-d / 4.0)


@pytest.fixture
def bipartite_model(client: TestClient) -> str:
    model_id: str = _train(client, _body())["model_id"]
    return model_id


def test_record_says_bipartite(client: TestClient, bipartite_model: str) -> None:
    record = client.get(f"/models/{bipartite_model}").json()
    assert record["task"] == "bipartite"
    info = record["bipartite"]
    assert (info["n_rows"], info["n_cols"]) == (30, 20)
    assert info["row_inputs"] == info["col_inputs"] == "features"
    assert info["n_interactions"] == int(NET.Y[np.ix_(TRAIN_R, TRAIN_C)].sum())
    assert info["has_row_ids"] and info["has_col_ids"] and not info["weighted"]


def test_a_small_column_side_is_said_in_the_warnings(client: TestClient) -> None:
    """One target: every new target would get its profile whatever its inputs; the record
    says so rather than answer as if the column model had learnt something."""
    assert not any("column vert" in w and "only" in w for w in
                   client.get(f"/models/{_train(client, _body())['model_id']}").json()["warnings"])  # fmt: skip
    body = _body(ids=False, edges=None, adjacency=NET.Y[np.ix_(TRAIN_R, [0])].tolist())
    body["cols"] = {"similarity": [[1.0]]}
    del body["edges"]
    warnings = _train(client, body)["model"]["warnings"]
    assert "only 1 column vertex: the column model, which scores new columns, learns from them alone and its scores are anecdotal (at least 20 are advised)" in warnings  # fmt: skip


def test_kernel_blocks_equal_okcore(client: TestClient, bipartite_model: str) -> None:
    ref = _reference()
    Xr, Xc = NET.rows[TEST_R], NET.cols[TEST_C]
    r = client.post("/kernel", json={"model_id": bipartite_model,
                                     "rows": {"inputs": Xr.tolist()},
                                     "cols": {"inputs": Xc.tolist()}})  # fmt: skip
    assert r.status_code == 200, r.text
    scores = r.json()["scores"]
    np.testing.assert_allclose(scores["new_rows"], ref.predict_new_rows(Xr), atol=1e-10)
    np.testing.assert_allclose(scores["new_cols"], ref.predict_new_cols(Xc), atol=1e-10)
    np.testing.assert_allclose(scores["new_pairs"], ref.predict_new_pairs(Xr, Xc), atol=1e-10)
    assert r.json()["edges"] is None


def test_kernel_edges_ranked_by_id(client: TestClient, bipartite_model: str) -> None:
    ref = _reference()
    Xr, Xc = NET.rows[TEST_R], NET.cols[TEST_C]
    new_rows = [f"new-d{i}" for i in range(len(TEST_R))]
    new_cols = [f"new-t{j}" for j in range(len(TEST_C))]
    r = client.post("/kernel", json={"model_id": bipartite_model, "top_k": 3,
                                     "return_scores": False,
                                     "rows": {"inputs": Xr.tolist(), "ids": new_rows},
                                     "cols": {"inputs": Xc.tolist(), "ids": new_cols}})  # fmt: skip
    assert r.status_code == 200, r.text
    edges = r.json()["edges"]
    assert r.json()["scores"] is None
    S = ref.predict_new_rows(Xr)
    known_cols = [NET.col_ids[j] for j in TRAIN_C]
    for a in range(len(TEST_R)):
        mine = [e for e in edges["new_rows"] if e[0] == a]
        assert [e[2] for e in mine] == sorted(np.sort(S[a])[::-1][:3].tolist(), reverse=True)
        assert [int(e[1]) for e in mine] == list(np.argsort(-S[a], kind="stable")[:3])
    named = edges["new_rows_ids"]
    assert named[0] == [new_rows[0], known_cols[int(edges["new_rows"][0][1])]]
    # known rows x new columns: (row, column) order, grouped by the new column
    C = ref.predict_new_cols(Xc)
    first = [e for e in edges["new_cols"] if e[1] == 0]
    assert [int(e[0]) for e in first] == list(np.argsort(-C[:, 0], kind="stable")[:3])
    assert edges["new_cols_ids"][0][1] == new_cols[0]
    assert edges["new_cols_ids"][0][0] == NET.row_ids[int(edges["new_cols"][0][0])]
    assert (
        len(edges["new_pairs"]) == len(TEST_R) * 3 and edges["new_pairs_ids"][0][0] == new_rows[0]
    )


def test_kernel_threshold(client: TestClient, bipartite_model: str) -> None:
    Xr = NET.rows[TEST_R]
    r = client.post("/kernel", json={"model_id": bipartite_model, "threshold": 0.3,
                                     "rows": {"inputs": Xr.tolist()}})  # fmt: skip
    S = _reference().predict_new_rows(Xr)
    edges = r.json()["edges"]
    assert len(edges["new_rows"]) == int((S >= 0.3).sum())
    assert all(e[2] >= 0.3 for e in edges["new_rows"])
    assert edges["new_cols"] is None and edges["new_pairs"] is None


def test_evaluate_per_block_and_pooled(client: TestClient, bipartite_model: str) -> None:
    ref = _reference()
    Xr, Xc = NET.rows[TEST_R], NET.cols[TEST_C]
    truth = {
        "new_rows": NET.Y[np.ix_(TEST_R, TRAIN_C)],
        "new_cols": NET.Y[np.ix_(TRAIN_R, TEST_C)],
        "new_pairs": NET.Y[np.ix_(TEST_R, TEST_C)],
    }
    scores = {
        "new_rows": ref.predict_new_rows(Xr),
        "new_cols": ref.predict_new_cols(Xc),
        "new_pairs": ref.predict_new_pairs(Xr, Xc),
    }
    edges = {block: np.argwhere(t != 0).tolist() for block, t in truth.items()}
    r = client.post("/evaluate", json={"model_id": bipartite_model, "edges": edges,
                                       "rows": {"inputs": Xr.tolist()},
                                       "cols": {"inputs": Xc.tolist()}})  # fmt: skip
    assert r.status_code == 200, r.text
    out = r.json()
    for block in truth:
        want = block_scores(truth[block], scores[block])
        assert out[block]["auroc"] == pytest.approx(want["auroc"])
        assert out[block]["ap"] == pytest.approx(want["ap"])
        assert out[block]["n_interactions"] == int(truth[block].sum())
    pooled = block_scores(
        np.concatenate([t.ravel() for t in truth.values()]),
        np.concatenate([s.ravel() for s in scores.values()]),
    )
    assert out["pooled"]["auroc"] == pytest.approx(pooled["auroc"])
    # the same truth by id: pairs of (row id, column id), training pairs ignored
    new_r = [f"x{i}" for i in range(len(TEST_R))]
    new_c = [f"y{j}" for j in range(len(TEST_C))]
    by_id = [[new_r[a], NET.col_ids[TRAIN_C[j]]] for a, j in edges["new_rows"]]
    by_id += [[NET.row_ids[TRAIN_R[i]], new_c[b]] for i, b in edges["new_cols"]]
    by_id += [[new_r[a], new_c[b]] for a, b in edges["new_pairs"]]
    by_id += [[NET.row_ids[0], NET.col_ids[0]]]
    r = client.post("/evaluate", json={"model_id": bipartite_model, "edges": {"by_id": by_id},
                                       "rows": {"inputs": Xr.tolist(), "ids": new_r},
                                       "cols": {"inputs": Xc.tolist(), "ids": new_c}})  # fmt: skip
    assert r.status_code == 200, r.text
    assert r.json()["n_ignored"] == 1
    for block in truth:
        assert r.json()[block] == out[block]


def test_similarity_side_and_adjacency(client: TestClient) -> None:
    S = _similarity(NET.cols)
    body = _body(ids=False)
    body["cols"] = {"similarity": S[np.ix_(TRAIN_C, TRAIN_C)].tolist()}
    del body["edges"]
    body["adjacency"] = NET.Y[np.ix_(TRAIN_R, TRAIN_C)].tolist()
    model_id = _train(client, body)["model_id"]
    assert client.get(f"/models/{model_id}").json()["bipartite"]["col_inputs"] == "similarity"
    new = S[np.ix_(TEST_C, TRAIN_C)]
    r = client.post("/kernel", json={"model_id": model_id, "cols": {"similarity": new.tolist()}})
    assert r.status_code == 200, r.text
    ref = _reference(similarity=True)
    np.testing.assert_allclose(
        r.json()["scores"]["new_cols"], ref.predict_new_cols(new), atol=1e-10
    )
    # features where the model wants a similarity: a 422 that says so
    r = client.post("/kernel", json={"model_id": model_id,
                                     "cols": {"inputs": NET.cols[TEST_C].tolist()}})  # fmt: skip
    assert r.status_code == 422 and "cols.similarity" in r.json()["error"]["message"]
    r = client.post("/kernel", json={"model_id": model_id, "cols": {"similarity": [[0.5] * 7]}})
    assert r.status_code == 422 and "20 training vertices" in r.json()["error"]["message"]


def test_sparse_weighted_adjacency(client: TestClient) -> None:
    Y = NET.Y[np.ix_(TRAIN_R, TRAIN_C)] * 2.5
    rows, cols = np.nonzero(Y)
    indptr = np.searchsorted(rows, np.arange(Y.shape[0] + 1)).tolist()
    body = _body(ids=False)
    del body["edges"]
    body["adjacency"] = {"data": Y[rows, cols].tolist(), "indices": cols.tolist(),
                         "indptr": indptr, "shape": list(Y.shape)}  # fmt: skip
    record = _train(client, body)["model"]
    assert record["bipartite"]["weighted"] and record["bipartite"]["n_interactions"] == len(rows)


def test_cv_blocks_in_record(client: TestClient) -> None:
    record = _train(client, _body(cv={"folds": [3, 2], "random_state": 0}))["model"]
    cv = record["bipartite"]["cv"]
    assert cv["folds"] == [3, 2] and len(cv["configurations"]) == 6
    ref = okcore.bipartite.bipartite_cross_validate(
        BipartiteRegressor(okcore.make_estimator("okboost", SMALL)),
        NET.rows[TRAIN_R], NET.cols[TRAIN_C], NET.Y[np.ix_(TRAIN_R, TRAIN_C)],
        n_folds=(3, 2), random_state=0,
    )  # fmt: skip
    assert cv["mean"]["new_rows_auroc"] == pytest.approx(ref.summary()["new_rows_auroc"])
    assert cv["mean"]["pooled_ap"] == pytest.approx(ref.summary()["pooled_ap"])


def test_multipart_tables_by_id(client: TestClient) -> None:
    """curl's way: the sides as CSV with an id column, the edges as a TSV of id pairs."""

    def csv(X: np.ndarray, ids: list[str]) -> bytes:
        head = "id," + ",".join(f"f{k}" for k in range(X.shape[1]))
        lines = [head] + [
            f"{i}," + ",".join(f"{v:.6f}" for v in x) for i, x in zip(ids, X, strict=True)
        ]
        return ("\n".join(lines) + "\n").encode()

    row_ids = [NET.row_ids[i] for i in TRAIN_R]
    col_ids = [NET.col_ids[j] for j in TRAIN_C]
    tsv = "drug\ttarget\n" + "".join(
        f"{row_ids[i]}\t{col_ids[j]}\n" for i, j in NET.edges(TRAIN_R, TRAIN_C)
    )
    r = client.post(
        "/train",
        data={"json": '{"task": "bipartite", "model": "okboost", "params": {"n_estimators": 15, "max_splits": 3, '
                      '"learning_rate": 0.2, "random_state": 0}, "wait": true}'},
        files={"rows.inputs": ("drugs.csv", csv(NET.rows[TRAIN_R], row_ids)),
               "cols.inputs": ("targets.csv", csv(NET.cols[TRAIN_C], col_ids)),
               "edges": ("interactions.tsv", tsv.encode())},
    )  # fmt: skip
    assert r.status_code == 201, r.text
    model = r.json()["model"]
    assert model["bipartite"]["n_interactions"] == len(NET.edges(TRAIN_R, TRAIN_C))
    r = client.post(
        "/kernel",
        data={"json": f'{{"model_id": "{model["model_id"]}", "top_k": 2, "return_scores": false}}'},
        files={"rows.inputs": ("new.csv", csv(NET.rows[TEST_R], ["n0", "n1", "n2", "n3", "n4", "n5"]))},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    assert r.json()["edges"]["new_rows_ids"][0][0] == "n0"
    assert r.json()["edges"]["new_rows_ids"][0][1] in col_ids


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b.update(edges=[["d0", "nope"]]), "'nope' is not one of the 20 ids"),
        (lambda b: b.update(edges=[[0, 25]]), "names col 25 but there are 20 cols"),
        (lambda b: b["rows"].pop("ids"), "edges name rows vertices by id but rows.ids"),
        (lambda b: b.update(adjacency=[[1.0] * 20] * 29), "exactly one"),
        (lambda b: (b.pop("edges"), b.update(adjacency=[[1.0] * 20] * 29)), "adjacency is 29 x 20"),
        (lambda b: b["cols"].update(ids=["t"] * 20), "repeats"),
        (lambda b: b["rows"].update(similarity=[[1.0]]), "inputs or their similarity"),
        (lambda b: b.update(edges=[]), "no interaction"),
        (lambda b: b.update(cv={"folds": 30}), "each in [2, 20]"),
        (lambda b: b.update(task="tripartite"), "task 'tripartite' is not one of"),
        (lambda b: b["params"].update(n_estimators=0), "n_estimators"),
    ],
)
def test_bad_train_requests_are_422(client: TestClient, change: Any, message: str) -> None:
    body = _body()
    body["wait"] = False
    change(body)
    r = client.post("/train", json=body)
    assert r.status_code == 422, r.text
    assert message in r.json()["error"]["message"]


def test_interaction_matrix_bounded(tmp_path: Any) -> None:
    from svc_data import make_settings

    from service.app import create_app

    with TestClient(create_app(make_settings(tmp_path, max_dense_values=100))) as c:
        r = c.post("/train", json=_body())
    assert r.status_code == 422 and "OKBOOST_MAX_DENSE_VALUES" in r.json()["error"]["message"]


def test_wrong_request_kind_for_the_model(
    client: TestClient, bipartite_model: str, trained: dict[str, Any]
) -> None:
    r = client.post("/kernel", json={"model_id": bipartite_model, "inputs": [[0.0, 0.0, 0.0]]})
    assert r.status_code == 422 and "bipartite model" in r.json()["error"]["message"]
    r = client.post("/predict", json={"model_id": bipartite_model, "inputs": [[0.0, 0.0, 0.0]]})
    assert r.status_code == 422 and "rows" in r.json()["error"]["message"]
    r = client.post("/kernel", json={"model_id": trained["model_id"], "rows": {"inputs": [[0.0]]}})
    assert r.status_code == 422 and "not a bipartite model" in r.json()["error"]["message"]
    r = client.post("/evaluate", json={"model_id": bipartite_model, "edges": {"new_pairs": [[0, 0]]},
                                       "rows": {"inputs": NET.rows[TEST_R].tolist()}})  # fmt: skip
    assert r.status_code == 422 and "needs test rows and cols" in r.json()["error"]["message"]
    r = client.post("/kernel", json={"model_id": bipartite_model, "rows": {"inputs": [[0.0, 1.0]]}})
    assert r.status_code == 422 and "3 features" in r.json()["error"]["message"]


def test_sparse_side_inputs(client: TestClient) -> None:
    """CSR features on both sides are stored as they are and give the dense model's answers."""

    def csr(X: np.ndarray) -> dict[str, Any]:
        rows, cols = np.nonzero(X)
        indptr = np.searchsorted(rows, np.arange(X.shape[0] + 1)).tolist()
        return {"data": X[rows, cols].tolist(), "indices": cols.tolist(), "indptr": indptr,
                "shape": list(X.shape)}  # fmt: skip

    body = _body(ids=False)
    body["rows"]["inputs"] = csr(NET.rows[TRAIN_R])
    body["cols"]["inputs"] = csr(NET.cols[TRAIN_C])
    model_id = _train(client, body)["model_id"]
    query = {"model_id": model_id, "rows": {"inputs": NET.rows[TEST_R].tolist()},
             "cols": {"inputs": NET.cols[TEST_C].tolist()}}  # fmt: skip
    r = client.post("/kernel", json=query)
    assert r.status_code == 200, r.text
    ref = _reference()
    np.testing.assert_allclose(
        r.json()["scores"]["new_pairs"],
        ref.predict_new_pairs(NET.rows[TEST_R], NET.cols[TEST_C]),
        atol=1e-10,
    )


def test_structured_task_is_the_one_set_request(client: TestClient) -> None:
    body = {"task": "structured", "inputs": [[0.0], [1.0], [2.0]],
            "output_kernel": {"type": "linear", "outputs": [[0.0], [1.0], [2.0]]},
            "params": {"n_estimators": 3}, "wait": True}  # fmt: skip
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["model"]["task"] == "structured"


def test_a_labelled_target_similarity_in_any_order_gives_the_same_model(
    client: TestClient,
) -> None:
    """cols.similarity as a labelled CSV (ids in its header and first column, each
    shuffled): its ids become the columns' ids and the model equals the one trained on the
    similarity in order."""
    import json

    S = _similarity(NET.cols)[np.ix_(TRAIN_C, TRAIN_C)]
    col_ids = [NET.col_ids[j] for j in TRAIN_C]
    rng = np.random.default_rng(3)
    rows, cols = rng.permutation(len(col_ids)), rng.permutation(len(col_ids))
    lines = ["," + ",".join(col_ids[j] for j in cols)]
    lines += [col_ids[i] + "," + ",".join(repr(float(S[i, j])) for j in cols) for i in rows]
    body = _body()
    del body["cols"]
    r = client.post(
        "/train",
        data={"json": json.dumps(body)},
        files={"cols.similarity": ("targets.csv", ("\n".join(lines) + "\n").encode(), "text/csv")},
    )
    assert r.status_code == 201, r.text
    twin = _train(client, _body(cols={"similarity": S.tolist(), "ids": col_ids}))
    ask = {"rows": {"inputs": NET.rows[TEST_R].tolist()}, "top_k": 3}
    got, want = (
        client.post("/kernel", json={"model_id": m["model_id"], **ask}).json()
        for m in (r.json(), twin)
    )
    assert got["edges"]["new_rows_ids"] == want["edges"]["new_rows_ids"]


def test_predict_of_a_bipartite_model_points_to_the_routes_that_take_rows(
    client: TestClient, bipartite_model: str
) -> None:
    """/predict takes no `rows` / `cols`: its 422 sends them to /kernel and /evaluate, and
    the route it names takes them."""
    r = client.post("/predict", json={"model_id": bipartite_model, "inputs": [[0.0, 0.0, 0.0]]})
    message = r.json()["error"]["message"]
    assert r.status_code == 422, r.text
    assert "to /predict" not in message and "POST /kernel" in message, message
    assert "POST /evaluate" in message, message
    query = {"model_id": bipartite_model, "rows": {"inputs": NET.rows[TEST_R].tolist()}}
    assert client.post("/kernel", json=query).status_code == 200
