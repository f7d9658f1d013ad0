"""The interaction matrix as it is published (targets x drugs, the targets' ids in its first
column and the drugs' in its first row, e.g. `nr_admat_dgc.txt`), sent as the `adjacency`
part beside labelled similarities that list the vertices in other orders: matched by id,
the same model as the interactions sent as edges by id; a label that names another vertex
is a 422 naming it, never a matrix read in the wrong order."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest
from svc_data import TestClient, bipartite_network

import okcore
from okcore.bipartite import BipartiteRegressor

NET = bipartite_network(n_rows=14, n_cols=12, seed=3)
ROWS, COLS = [f"hsa:{100 + i}" for i in range(14)], [f"D{200 + j:05d}" for j in range(12)]
PARAMS = {"n_estimators": 8, "max_splits": 3, "random_state": 0}


def _similarity(X: np.ndarray) -> np.ndarray:
    return np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / 4.0)


def _labelled(M: np.ndarray, row_ids: list[str], col_ids: list[str], cell: str = "{:.6f}") -> bytes:
    lines = ["\t" + "\t".join(col_ids)]
    lines += [
        r + "\t" + "\t".join(cell.format(v) for v in row) for r, row in zip(row_ids, M, strict=True)
    ]
    return ("\n".join(lines) + "\n").encode()


S_ROWS, S_COLS = _similarity(NET.rows), _similarity(NET.cols)
R_ORDER = np.random.default_rng(0).permutation(14)  # the target file's own order
C_ORDER = np.random.default_rng(1).permutation(12)  # the drug file's own order
SIMILARITIES = {
    "rows.similarity": ("dg.txt", _labelled(S_ROWS[np.ix_(R_ORDER, R_ORDER)], [ROWS[i] for i in R_ORDER], [ROWS[i] for i in R_ORDER])),
    "cols.similarity": ("dc.txt", _labelled(S_COLS[np.ix_(C_ORDER, C_ORDER)], [COLS[j] for j in C_ORDER], [COLS[j] for j in C_ORDER])),
}  # fmt: skip


def _train(client: TestClient, **files: Any) -> Any:
    body = {"task": "bipartite", "model": "okboost", "params": PARAMS, "wait": True}
    return client.post("/train", data={"json": json.dumps(body)}, files={**SIMILARITIES, **files})


def _admat(
    Y: np.ndarray = NET.Y, rows: list[str] = ROWS, cols: list[str] = COLS
) -> tuple[str, bytes]:
    return ("admat_dgc.txt", _labelled(Y, rows, cols, "{:g}"))


def _new_col_scores(client: TestClient, model_id: str) -> np.ndarray:
    new = _labelled(S_COLS[:3], ["N1", "N2", "N3"], COLS)
    r = client.post("/kernel", data={"json": json.dumps({"model_id": model_id})},
                    files={"cols.similarity": ("new.txt", new)})  # fmt: skip
    assert r.status_code == 200, r.text
    return np.asarray(r.json()["scores"]["new_cols"])


def test_a_published_matrix_is_matched_to_the_sides_by_id(client: TestClient) -> None:
    r = _train(client, adjacency=_admat())
    assert r.status_code == 201, r.text
    assert r.json()["model"]["bipartite"]["n_interactions"] == int(NET.Y.sum())
    by_matrix = _new_col_scores(client, r.json()["model_id"])
    edges = "".join(f"{ROWS[i]}\t{COLS[j]}\n" for i, j in NET.edges())
    r = _train(client, edges=("e.tsv", edges.encode()))
    assert r.status_code == 201, r.text
    np.testing.assert_allclose(by_matrix, _new_col_scores(client, r.json()["model_id"]))
    # okcore on the sides in the similarities' order, the matrix put in that order by hand
    est = BipartiteRegressor(okcore.make_estimator("okboost", PARAMS), inputs="similarity")
    est.fit(S_ROWS[np.ix_(R_ORDER, R_ORDER)], S_COLS[np.ix_(C_ORDER, C_ORDER)],
            NET.Y[np.ix_(R_ORDER, C_ORDER)])  # fmt: skip
    expected = est.predict_new_cols(S_COLS[:3][:, C_ORDER])
    np.testing.assert_allclose(by_matrix, expected, atol=1e-12)


def test_a_matrix_with_an_unknown_cell_and_labels_as_the_only_ids(client: TestClient) -> None:
    Y = NET.Y.copy()
    Y[2, 3] = np.nan  # an empty cell of the published matrix: an unknown pair
    text = _admat(Y)[1].decode().replace("\tnan", "\t")
    body = {"task": "bipartite", "model": "okboost", "params": PARAMS, "wait": True,
            "rows": {"inputs": NET.rows.tolist()}, "cols": {"inputs": NET.cols.tolist()}}  # fmt: skip
    r = client.post("/train", data={"json": json.dumps(body)},
                    files={"adjacency": ("a.txt", text.encode())})  # fmt: skip
    assert r.status_code == 201, r.text
    info = r.json()["model"]["bipartite"]
    assert info["n_unknown"] == 1 and info["has_row_ids"] and info["has_col_ids"]


@pytest.mark.parametrize(
    ("adjacency", "message"),
    [
        (_admat(rows=["hsa:999"] + ROWS[1:]), r"adjacency_row_ids \(the adjacency's row ids\) does not name 1 of the row vertices \(rows.ids; e.g. 'hsa:100'\) and names 1 others \(e.g. 'hsa:999'\)"),
        (_admat(NET.Y[:, :-1], cols=COLS[:-1]), r"adjacency is 14 x 11 but there are 14 row and 12 column vertices"),
        (("a.txt", b"\n".join(_admat()[1].split(b"\n")[1:])), r"part 'adjacency' has row ids \(column 1\) but no header row: a labelled adjacency"),
        (_admat(cols=COLS[:-1] + [COLS[0]]), r"part 'adjacency' names 'D00200' twice in its header"),
    ],
)  # fmt: skip
def test_a_matrix_that_does_not_match_the_sides_is_422(
    client: TestClient, adjacency: Any, message: str
) -> None:
    r = _train(client, adjacency=adjacency)
    assert r.status_code == 422, r.text
    assert re.search(message, r.json()["error"]["message"]), r.json()["error"]["message"]


def test_matrix_labels_without_a_matrix_are_422(client: TestClient) -> None:
    body = {"task": "bipartite", "model": "okboost", "rows": {"inputs": [[0.0], [1.0]]},
            "cols": {"inputs": [[0.0], [1.0]]}, "edges": [[0, 0]], "adjacency_row_ids": ["a", "b"]}  # fmt: skip
    r = client.post("/train", json=body)
    assert r.status_code == 422
    assert "leave them out with edges" in r.json()["error"]["message"]
