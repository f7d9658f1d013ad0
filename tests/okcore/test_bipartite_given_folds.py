"""Bipartite K x K cross-validation on a given row / column fold assignment (a published
protocol's folds): the configurations follow the given folds exactly, and bad fold arrays are
refused with a message saying what is wrong."""

from __future__ import annotations

import numpy as np
import pytest

from okcore import OK3ForestRegressor
from okcore.bipartite import BipartiteRegressor, bipartite_cross_validate
from okcore.bipartite.validation import check_folds
from okcore.exceptions import DataError


def _network(n_rows: int = 18, n_cols: int = 15, seed: int = 0):
    rng = np.random.default_rng(seed)
    U, V = rng.normal(size=(n_rows, 3)), rng.normal(size=(n_cols, 3))
    Y = (U @ V.T + 0.3 * rng.normal(size=(n_rows, n_cols)) > 1.0).astype(float)
    return U, V, Y


class RecordingForest(OK3ForestRegressor):
    """Records the first input of every row it is fitted on (the row's id)."""

    fitted: list[set] = []

    def fit(self, X, Y=None, **kwargs):  # type: ignore[override]
        RecordingForest.fitted.append(set(np.asarray(X)[:, 0].astype(int)))
        return super().fit(X, Y, **kwargs)


def test_given_folds_decide_every_configuration() -> None:
    _, _, Y = _network()
    X_rows = np.c_[np.arange(18), np.random.default_rng(1).normal(size=(18, 2))]
    X_cols = np.c_[100 + np.arange(15), np.random.default_rng(2).normal(size=(15, 2))]
    row_folds = np.arange(18) % 3  # rows 0, 3, 6, ... in fold 0
    col_folds = (np.arange(15) >= 7).astype(int)  # columns 0..6 in fold 0
    model = BipartiteRegressor(RecordingForest(n_estimators=5, random_state=0))
    RecordingForest.fitted.clear()
    result = bipartite_cross_validate(
        model, X_rows, X_cols, Y, n_folds=4, row_folds=row_folds, col_folds=col_folds
    )
    np.testing.assert_array_equal(result.row_folds, row_folds)
    np.testing.assert_array_equal(result.col_folds, col_folds)
    assert [(f["row_fold"], f["col_fold"]) for f in result.folds] == [
        (a, b) for a in range(3) for b in range(2)
    ]
    # the row model of configuration (a, b) is fitted on the rows outside fold a only
    row_fits = [ids for ids in RecordingForest.fitted if max(ids) < 100]
    col_fits = [ids for ids in RecordingForest.fitted if min(ids) >= 100]
    for k, record in enumerate(result.folds):
        a, b = record["row_fold"], record["col_fold"]
        assert row_fits[k] == set(np.flatnonzero(row_folds != a))
        assert col_fits[k] == {100 + j for j in np.flatnonzero(col_folds != b)}
    # the same folds given again: the same scores (the draw is not used)
    again = bipartite_cross_validate(
        model, X_rows, X_cols, Y, random_state=5, row_folds=row_folds, col_folds=col_folds
    )
    assert again.summary() == pytest.approx(result.summary(), nan_ok=True)


def test_one_side_given_the_other_drawn() -> None:
    X_rows, X_cols, Y = _network()
    model = BipartiteRegressor(OK3ForestRegressor(n_estimators=5, random_state=0))
    result = bipartite_cross_validate(
        model, X_rows, X_cols, Y, n_folds=(4, 2), row_folds=np.arange(18) % 2
    )
    assert len(result.folds) == 2 * 2 and set(result.col_folds) == {0, 1}


@pytest.mark.parametrize(
    ("folds", "match"),
    [
        (np.zeros(17, dtype=int), "one fold id per row"),
        (np.zeros((18, 1), dtype=int), "one fold id per row"),
        (np.zeros(18, dtype=int), "K >= 2"),
        (np.r_[np.zeros(9, dtype=int), np.full(9, 2)], "every fold"),
        (np.r_[np.zeros(9, dtype=int), -np.ones(9, dtype=int)], "0..K-1"),
        (np.linspace(0, 1, 18), "integer fold ids"),
        (np.array(["a", "b"] * 9), "integer fold ids"),
        (
            np.arange(18) % 3 + 1,
            r"got ids \[1, 2, 3\] \(numbered from 1, .*: subtract 1 from each\)",
        ),
        (np.arange(18) % 2 + 2, r"got ids \[2, 3\]$"),  # not a numbering from 1: no hint
    ],
)
def test_bad_fold_arrays_are_refused(folds, match) -> None:
    with pytest.raises(DataError, match=match):
        check_folds(folds, 18, "row")
    X_rows, X_cols, Y = _network()
    model = BipartiteRegressor(OK3ForestRegressor(n_estimators=2, random_state=0))
    with pytest.raises(DataError, match=match):
        bipartite_cross_validate(model, X_rows, X_cols, Y, row_folds=folds)


def test_configurations_outside_the_given_folds_are_refused() -> None:
    X_rows, X_cols, Y = _network()
    model = BipartiteRegressor(OK3ForestRegressor(n_estimators=2, random_state=0))
    with pytest.raises(DataError, match="configurations"):
        bipartite_cross_validate(
            model, X_rows, X_cols, Y, row_folds=np.arange(18) % 2, configurations=[(2, 0)]
        )
    # integral floats are fold ids too
    assert check_folds(np.arange(18) % 2 * 1.0, 18, "row").dtype == np.int64
