"""Labelled inputs of a bipartite network: the vertex labels of pandas DataFrames.

okcore reads every input by position: row i of ``X_rows`` is row i of ``Y``, row j of
``X_cols`` its column j, and a similarity's column k its row k. Published drug-target files
are labelled (ids in their first row and column) and list each side in an order of their
own, so DataFrames read from them with ``pandas.read_csv(..., index_col=0)`` may carry the
same vertices in different orders. Read by position, they would pair each vertex with
another's inputs without a word; :func:`check_vertex_labels` refuses that, naming the
argument and the reindexing that fixes it. Inputs without labels (arrays, lists, a
DataFrame with pandas' default 0..n-1 index) are read by position as always.
"""

from __future__ import annotations

from typing import Any

from .._validation import axis_labels
from ..exceptions import DataError


def _differ(found: list[Any], wanted: list[Any], what: str, fix: str) -> None:
    """A DataError when two label lists differ: the first mismatch, and the fix."""
    if found == wanted:
        return
    same = sorted(map(str, found)) == sorted(map(str, wanted))
    k = next((i for i, (a, b) in enumerate(zip(found, wanted, strict=False)) if a != b), None)
    where = (
        f"position {k} holds {found[k]!r} where {wanted[k]!r} is expected"
        if k is not None
        else f"{len(found)} labels against {len(wanted)}"
    )
    raise DataError(
        f"{what} ({where}): okcore reads inputs by position, so "
        + (
            f"the same vertices in another order would be paired with the wrong interactions; {fix}"
            if same
            else f"they must name the same vertices in the same order; {fix}"
        )
    )


def check_vertex_labels(X_rows: Any, X_cols: Any, Y: Any, row_inputs: str, col_inputs: str) -> None:
    """Refuse labelled inputs whose vertices are not in the order of ``Y`` (a DataFrame
    whose index names the row vertices and whose columns name the column vertices): the
    index of ``X_rows`` must be ``Y.index``, that of ``X_cols`` ``Y.columns``, and a
    similarity's columns (``row_inputs`` / ``col_inputs`` "similarity") its own index.
    Only labels that are given are compared (module docstring); O(n_rows + n_cols)."""
    sides = (
        ("X_rows", X_rows, row_inputs, axis_labels(Y, "index"), "Y.index"),
        ("X_cols", X_cols, col_inputs, axis_labels(Y, "columns"), "Y.columns"),
    )
    for name, X, kind, wanted, source in sides:
        index = axis_labels(X, "index")
        if index is not None and wanted is not None:
            fix = (
                f"reorder it with {name}.loc[{source}, {source}]"
                if kind == "similarity"
                else f"reorder it with {name}.loc[{source}]"
            )
            _differ(index, wanted, f"{name}.index does not list the vertices of {source}", fix)
        columns = axis_labels(X, "columns")
        if kind == "similarity" and index is not None and columns is not None:
            _differ(
                columns,
                index,
                f"the columns of the similarity {name} are not its rows' vertices in their order",
                f"reorder them with {name}.loc[:, {name}.index]",
            )


def check_fold_labels(row_folds: Any, col_folds: Any, Y: Any) -> None:
    """Refuse a given fold assignment labelled by vertex (a pandas Series, as read from a
    published protocol's fold file) whose index is not ``Y.index`` (``row_folds``) or
    ``Y.columns`` (``col_folds``) in the same order: folds are read by position."""
    for name, folds, wanted, source in (
        ("row_folds", row_folds, axis_labels(Y, "index"), "Y.index"),
        ("col_folds", col_folds, axis_labels(Y, "columns"), "Y.columns"),
    ):
        index = axis_labels(folds, "index")
        if index is not None and wanted is not None:
            _differ(
                index,
                wanted,
                f"{name}.index does not list the vertices of {source}",
                f"reorder it with {name}.loc[{source}]",
            )
