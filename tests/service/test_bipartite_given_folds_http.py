"""The service's bipartite cv on a given row / column fold assignment (cv.row_folds,
cv.col_folds): the same scores as okcore on those folds, and a clear 422 for bad ones."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, TestClient, bipartite_network

import okcore
from okcore.bipartite import BipartiteRegressor

NET = bipartite_network()
ROWS, COLS = np.arange(0, 30), np.arange(0, 20)
ROW_FOLDS = (np.arange(30) % 3).tolist()
COL_FOLDS = (np.arange(20) >= 10).astype(int).tolist()


def _body(cv: dict[str, Any]) -> dict[str, Any]:
    return {
        "task": "bipartite",
        "model": "okboost",
        "rows": {"inputs": NET.rows[ROWS].tolist()},
        "cols": {"inputs": NET.cols[COLS].tolist()},
        "edges": NET.edges(ROWS, COLS),
        "params": dict(SMALL),
        "cv": cv,
        "wait": True,
    }


def test_given_folds_give_okcore_s_scores(client: TestClient) -> None:
    r = client.post("/train", json=_body({"row_folds": ROW_FOLDS, "col_folds": COL_FOLDS}))
    assert r.status_code == 201, r.text
    cv = r.json()["model"]["bipartite"]["cv"]
    assert cv["folds"] == [3, 2] and cv["given_folds"] == {"rows": True, "cols": True}
    assert len(cv["configurations"]) == 6
    ref = okcore.bipartite.bipartite_cross_validate(
        BipartiteRegressor(okcore.make_estimator("okboost", SMALL)),
        NET.rows[ROWS], NET.cols[COLS], NET.Y[np.ix_(ROWS, COLS)],
        row_folds=ROW_FOLDS, col_folds=COL_FOLDS,
    )  # fmt: skip
    assert cv["mean"]["new_rows_auroc"] == pytest.approx(ref.summary()["new_rows_auroc"])
    assert cv["mean"]["pooled_ap"] == pytest.approx(ref.summary()["pooled_ap"])


@pytest.mark.parametrize(
    ("cv", "message"),
    [
        ({"row_folds": ROW_FOLDS[:-1]}, "one fold id per row"),
        ({"col_folds": [0] * 20}, "K >= 2"),
        ({"col_folds": [0] * 10 + [2] * 10}, "every fold"),
        ({"row_folds": list(range(30))}, "at most 20"),
        (
            {"row_folds": [f + 1 for f in ROW_FOLDS]},
            "numbered from 1, as in many published protocols: subtract 1",
        ),
    ],
)
def test_bad_given_folds_are_422(client: TestClient, cv: dict, message: str) -> None:
    r = client.post("/train", json=_body(cv))
    assert r.status_code == 422, r.text
    assert message in r.text
