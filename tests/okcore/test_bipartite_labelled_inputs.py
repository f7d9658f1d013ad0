"""Inputs as a pharmacologist reads them from the published drug-target files: labelled
DataFrames (ids in the first row and column), each file listing its vertices in an order of
its own, an asymmetric SIMCOMP-like similarity, plain lists. okcore reads inputs by position,
so labelled sides out of the interaction matrix's order are refused naming the reindexing
(never paired with the wrong vertices), and the default says how to symmetrise a similarity
or make it one its kernel ridge member can solve."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from okcore import OK3ForestRegressor
from okcore.bipartite import NRLMF, BipartiteRegressor, bipartite_cross_validate
from okcore.exceptions import DataError

pd = pytest.importorskip("pandas")


def _labelled(seed: int = 0, n_rows: int = 10, n_cols: int = 12) -> tuple[Any, Any, Any]:
    """(S_rows, S_cols, Y) as DataFrames labelled by id, in the same order."""
    rng = np.random.default_rng(seed)
    sims = []
    for n in (n_rows, n_cols):
        A = rng.random((n, 3))
        S = A @ A.T
        d = np.sqrt(np.diag(S))
        sims.append(S / np.outer(d, d))
    Y = (rng.random((n_rows, n_cols)) < 0.35).astype(np.float64)
    Y[0, 0] = 1.0
    targets = [f"hsa:{100 + i}" for i in range(n_rows)]
    drugs = [f"D{200 + j:05d}" for j in range(n_cols)]
    return (
        pd.DataFrame(sims[0], index=targets, columns=targets),
        pd.DataFrame(sims[1], index=drugs, columns=drugs),
        pd.DataFrame(Y, index=targets, columns=drugs),
    )


def _forest() -> BipartiteRegressor:
    return BipartiteRegressor(
        OK3ForestRegressor(n_estimators=5, random_state=0), inputs="similarity"
    )


def test_labelled_sides_in_the_matrix_order_are_the_arrays_model() -> None:
    S_t, S_d, Y = _labelled()
    got = _forest().fit(S_t, S_d, Y).predict_new_cols(S_d.to_numpy()[:3])
    expected = _forest().fit(S_t.to_numpy(), S_d.to_numpy(), Y.to_numpy())
    np.testing.assert_array_equal(got, expected.predict_new_cols(S_d.to_numpy()[:3]))


@pytest.mark.parametrize(
    "shuffle, message",
    [
        (
            lambda S, p: S.iloc[p, p],
            r"X_cols.index .* reorder it with X_cols.loc\[Y.columns, Y.columns\]",
        ),
        (
            lambda S, p: S.iloc[:, p],
            r"columns of the similarity X_cols .* X_cols.loc\[:, X_cols.index\]",
        ),
        (lambda S, p: S.rename(index=lambda v: v + "x"), r"same vertices in the same order"),
    ],
)
def test_a_side_in_another_order_is_refused_not_misread(shuffle, message) -> None:
    S_t, S_d, Y = _labelled()
    shuffled = shuffle(S_d, np.random.default_rng(1).permutation(S_d.shape[0]))
    for fit in (
        lambda: _forest().fit(S_t, shuffled, Y),
        lambda: NRLMF(n_factors=3, max_iter=2, inputs="similarity").fit(S_t, shuffled, Y),
        lambda: bipartite_cross_validate(
            _forest(),
            S_t,
            shuffled,
            Y,
            n_folds=2,
            row_inputs="similarity",
            col_inputs="similarity",
        ),  # fmt: skip
    ):
        with pytest.raises(DataError, match=message):
            fit()
    if set(shuffled.index) == set(Y.columns):  # the fix the message gives
        _forest().fit(S_t, shuffled.loc[Y.columns, Y.columns], Y)


def test_rows_out_of_order_and_feature_rows_are_checked_by_index() -> None:
    S_t, S_d, Y = _labelled()
    with pytest.raises(DataError, match=r"X_rows.index .* X_rows.loc\[Y.index, Y.index\]"):
        _forest().fit(S_t.iloc[::-1, ::-1], S_d, Y)
    features = pd.DataFrame(np.random.default_rng(2).random((12, 2)), index=S_d.index[::-1])
    with pytest.raises(DataError, match=r"X_cols.index .* X_cols.loc\[Y.columns\]"):
        BipartiteRegressor(OK3ForestRegressor(n_estimators=5)).fit(S_t, features, Y)


def test_unlabelled_inputs_are_read_by_position() -> None:
    S_t, S_d, Y = _labelled()
    arrays = S_t.to_numpy(), S_d.to_numpy(), Y.to_numpy()
    expected = _forest().fit(*arrays).predict_new_rows(arrays[0][:2])
    for given in (
        (S_t.to_numpy().tolist(), S_d.to_numpy().tolist(), Y.to_numpy().tolist()),
        (pd.DataFrame(arrays[0]), pd.DataFrame(arrays[1]), Y),  # default 0..n-1 index
        (S_t, S_d, Y.to_numpy()),  # labels on one side only: nothing to compare
    ):
        np.testing.assert_array_equal(
            _forest().fit(*given).predict_new_rows(arrays[0][:2]), expected
        )


def test_the_default_names_an_asymmetric_similarity_and_the_fix() -> None:
    S_t, S_d, Y = _labelled()
    asymmetric = S_d.to_numpy().copy()
    asymmetric[0, 1] += 0.25
    with pytest.raises(
        DataError,
        match=r"X_cols is not symmetric \(largest \|S - S\^T\| = 0.25\).*\(X_cols \+ X_cols.T\) / 2",
    ):
        BipartiteRegressor(inputs="similarity").fit(S_t.to_numpy(), asymmetric, Y.to_numpy())
    # a named model reads it through the empirical kernel map, asymmetric or not
    _forest().fit(S_t.to_numpy(), asymmetric, Y.to_numpy())


def test_the_default_names_a_similarity_its_kernel_ridge_cannot_solve_and_the_fixes() -> None:
    """A similarity with the eigenvalue -1 (here a reflection: two drugs swapped) made the
    default, which takes no alpha, say "choose another alpha" (its kernel ridge member's
    fixed penalty is 1): the refusal now names the side, and what its user can change,
    the matrix or a named model, before any member is fitted; both fixes fit."""
    from okcore import KernelRidgeRegressor

    S_t, _, Y = _labelled()
    swapped = np.eye(12)[[1, 0, *range(2, 12)]]  # symmetric, eigenvalues 1 and -1
    assert np.linalg.eigvalsh(swapped)[0] == pytest.approx(-1.0)
    with pytest.raises(DataError) as refused:
        BipartiteRegressor(inputs="similarity").fit(S_t.to_numpy(), swapped, Y.to_numpy())
    message = str(refused.value)
    assert "X_cols has the eigenvalue -1 (it is not positive semi-definite)" in message
    assert "fixed penalty 1" in message and "another alpha" not in message
    assert "X_cols = (V * numpy.maximum(w, 0)) @ V.T" in message
    assert "KernelRidgeRegressor(alpha=0.5, input_kernel='precomputed')" in message
    w, V = np.linalg.eigh(swapped)
    clipped = (V * np.maximum(w, 0)) @ V.T
    BipartiteRegressor(inputs="similarity").fit(S_t.to_numpy(), clipped, Y.to_numpy())
    named = KernelRidgeRegressor(alpha=0.5, input_kernel="precomputed")
    BipartiteRegressor(named, inputs="similarity").fit(S_t.to_numpy(), swapped, Y.to_numpy())


def test_one_new_vertex_as_a_vector_says_to_make_it_a_row() -> None:
    S_t, S_d, Y = _labelled()
    model = BipartiteRegressor(inputs="similarity").fit(S_t.to_numpy(), S_d.to_numpy(), Y)
    one = S_t.to_numpy()[0]
    with pytest.raises(
        DataError, match=r"got shape \(10,\): one new item is a row, X.reshape\(1, -1\)"
    ):
        model.predict_new_rows(one)
    with pytest.raises(
        DataError, match=r"X must have 10 columns \(a similarity to each training item"
    ):
        model.predict_new_rows(S_d.to_numpy()[:2])  # the drugs' similarity given for targets
    assert model.predict_new_rows(one.reshape(1, -1)).shape == (1, 12)


def test_a_fold_file_labelled_by_vertex_is_checked_against_the_matrix() -> None:
    S_t, S_d, Y = _labelled()
    folds = pd.Series(np.arange(12) % 2, index=Y.columns)
    kwargs = {"n_folds": 2, "row_inputs": "similarity", "col_inputs": "similarity"}
    expected = bipartite_cross_validate(
        _forest(), S_t, S_d, Y, col_folds=folds.to_numpy(), **kwargs
    )
    got = bipartite_cross_validate(_forest(), S_t, S_d, Y, col_folds=folds, **kwargs)
    assert got.summary() == pytest.approx(expected.summary(), nan_ok=True)
    with pytest.raises(DataError, match=r"col_folds.index .* col_folds.loc\[Y.columns\]"):
        bipartite_cross_validate(_forest(), S_t, S_d, Y, col_folds=folds.iloc[::-1], **kwargs)
