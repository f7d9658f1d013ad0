"""The client's methods for bipartite networks and label sets (POST /train with a task,
/kernel, /predict and /evaluate of such models), mixed into
:class:`okboost_client.OKBoostClient`.

Sides of a bipartite network travel as ``rows`` / ``cols`` objects (features as ``.npy``
parts, or a similarity; ids as JSON strings); pairs by row number as int64 parts, by id as
JSON lists. Every pair is (row, column).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from okboost_client.encoding import (
    as_inputs,
    axis_labels,
    edge_arrays,
    id_array,
    is_data_frame,
    labelled_similarity,
    pairs,
    table_file,
    table_inputs,
)

KERNEL_BIPARTITE_FIELDS: dict[str, Any] = {"scores": None, "edges": None}


class TaskMethods:
    """Bipartite and multi-label endpoints; needs the client's ``_post``."""

    def _post(self, path: str, body: dict[str, Any], *, binary_answer: bool = False) -> Any:
        raise NotImplementedError  # the client's

    @staticmethod
    def _side(
        inputs: Any, similarity: Any, ids: Any, name: str, *, training: bool = False
    ) -> dict[str, Any] | None:
        """One vertex set of a bipartite request: features (array, sparse matrix or a
        DataFrame whose id column, or else its index if not pandas' default 0..n-1, gives
        the ids) or a similarity matrix (an array, or the
        path of a CSV / TSV file, sent as it is: a labelled one, ids in its header and
        first column in any order, is matched by id by the service and gives the ids; or a
        DataFrame labelled the same way: its index gives the ids, its columns are matched
        by id, to its rows at ``training``, else to the model's training vertices), and
        ids (sent as JSON strings)."""
        if inputs is None and similarity is None:
            if ids is not None:
                raise ValueError(f"{name}: ids without inputs or a similarity")
            return None
        if inputs is not None and similarity is not None:
            raise ValueError(f"{name}: give the inputs or the similarity, not both")
        side: dict[str, Any] = {}
        if inputs is not None:
            labels = axis_labels(inputs, "index")
            inputs, ids = table_inputs(inputs, ids, name)
            if ids is None:  # a features table labelled by id, as index_col=0 reads it
                ids = labels
            side["inputs"] = as_inputs(inputs)
        elif isinstance(similarity, str | os.PathLike):  # a file: sent as it is
            side["similarity"] = table_file(similarity)
        else:  # a labelled DataFrame gives the ids, its columns matched by id
            similarity, ids, columns = labelled_similarity(
                similarity, ids, f"{name} similarity", training=training
            )
            side["similarity"] = np.asarray(similarity, dtype=float)
            if columns is not None:
                side["similarity_ids"] = columns
        if ids is not None:
            side["ids"] = id_array(ids, f"{name} ids").tolist()
        return side

    @staticmethod
    def _adjacency(value: Any) -> Any:
        """The interaction matrix as sent: a file path as it is (a labelled one, ids in its
        first column and header as in the published matrices, is matched to the sides by
        id by the service), else an array or sparse matrix (a labelled DataFrame's ids go
        as ``adjacency_row_ids`` / ``adjacency_col_ids``)."""
        if value is None:
            return None
        if isinstance(value, str | os.PathLike):
            return table_file(value)
        return as_inputs(value)

    @staticmethod
    def _pairs(value: Any, name: str) -> Any:
        """Pairs as a request takes them: row indices as an int64 array (a binary part),
        ids as a JSON list of string pairs."""
        arr = pairs(value)
        if arr.size == 0:
            return np.zeros((0, 2), dtype=np.int64)
        if arr.dtype.kind == "U":
            return id_array(arr, name).reshape(-1, 2).tolist()
        if arr.dtype.kind == "f" and not np.array_equal(arr, np.round(arr)):
            raise TypeError(f"{name} must be pairs of row indices (integers) or of ids (strings)")
        return arr.astype(np.int64).reshape(-1, 2)

    def train_bipartite(
        self,
        rows: Any = None,
        cols: Any = None,
        edges: Any = None,
        *,
        adjacency: Any = None,
        unknown_pairs: Any = None,
        row_similarity: Any = None,
        col_similarity: Any = None,
        row_ids: Any = None,
        col_ids: Any = None,
        model: str = "auto",
        params: dict[str, Any] | None = None,
        new_pairs: str = "two-step",
        cv: dict[str, Any] | None = None,
        name: str | None = None,
        wait: bool = False,
    ) -> dict[str, Any]:
        """POST /train of a bipartite network (``"task": "bipartite"``). Each side is its
        features (``rows`` / ``cols``: array, sparse matrix, or a DataFrame with an id column)
        or its similarity (``row_similarity`` / ``col_similarity``, n x n), with optional ids.
        Interactions: ``edges``, [row, column] pairs (row indices or ids, an array or a
        two-column DataFrame), or ``adjacency`` (n_rows x n_cols, 0/1 or weights, dense or
        sparse; a NaN entry is an unknown pair; a file path, sent as it is, or a DataFrame
        labelled by id, as
        ``pandas.read_csv(path, sep="\\t", index_col=0)`` reads a published matrix, is
        matched to the sides by id). A similarity given as a labelled DataFrame gives its
        side's ids (its index) and its columns are matched to them. ``unknown_pairs``: [row, column] pairs
        (as ``edges``) whose interaction is unknown, not negative: training fills each from
        its neighbours and cross-validation leaves them out of the scores. ``cv``: K x K
        cross-validation first, e.g. ``{"folds": [4, 3]}``. ``model``: "auto" (okcore's
        default, a rank average of bipartite models; no ``params``) or an estimator name."""
        body = {
            "task": "bipartite",
            "name": name,
            "model": model,
            "params": params or {},
            "rows": self._side(rows, row_similarity, row_ids, "rows", training=True),
            "cols": self._side(cols, col_similarity, col_ids, "cols", training=True),
            "edges": None if edges is None else self._pairs(edges, "edges"),
            "adjacency": self._adjacency(adjacency),
            # a labelled DataFrame's rows and columns, matched to the sides by id
            "adjacency_row_ids": axis_labels(adjacency, "index"),
            "adjacency_col_ids": axis_labels(adjacency, "columns"),
            "unknown_pairs": (
                None if unknown_pairs is None else self._pairs(unknown_pairs, "unknown_pairs")
            ),
            "new_pairs": new_pairs,
            "cv": cv,
            "wait": wait,
        }
        result: dict[str, Any] = self._post("/train", body)
        return result

    def kernel_bipartite(
        self,
        model_id: str,
        rows: Any = None,
        cols: Any = None,
        *,
        row_similarity: Any = None,
        col_similarity: Any = None,
        row_ids: Any = None,
        col_ids: Any = None,
        threshold: float | None = None,
        top_k: int | None = None,
        return_scores: bool = True,
    ) -> dict[str, Any]:
        """POST /kernel of a bipartite model: new rows (features or their similarity to the
        training rows) against the known columns, new columns against the known rows, both
        together for new x new. ``scores`` come back as ndarrays per block (``new_rows``
        q x n_cols, ``new_cols`` n_rows x q', ``new_pairs`` q x q'); with ``threshold`` /
        ``top_k`` the ``edges`` of each block are (E, 3) arrays [row, column, score], grouped
        by new vertex, best first, and ``<block>_ids`` (E, 2) [row id, column id]."""
        body = {
            "model_id": model_id,
            "rows": self._side(rows, row_similarity, row_ids, "rows"),
            "cols": self._side(cols, col_similarity, col_ids, "cols"),
            "threshold": threshold,
            "top_k": top_k,
            "return_scores": return_scores,
        }
        out: dict[str, Any] = {
            **KERNEL_BIPARTITE_FIELDS,
            **self._post("/kernel", body, binary_answer=True),
        }
        if out["scores"] is not None:
            out["scores"] = {k: np.asarray(v, dtype=float) for k, v in out["scores"].items()}
        if out["edges"] is not None:
            out["edges"] = edge_arrays(out["edges"])
        return out

    def evaluate_bipartite(
        self,
        model_id: str,
        rows: Any = None,
        cols: Any = None,
        *,
        row_similarity: Any = None,
        col_similarity: Any = None,
        row_ids: Any = None,
        col_ids: Any = None,
        new_rows: Any = None,
        new_cols: Any = None,
        new_pairs: Any = None,
        by_id: Any = None,
        unknown_pairs: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """POST /evaluate of a bipartite model: AUROC and average precision of each block
        (``new_rows``, ``new_cols``, ``new_pairs``) and pooled. The true interactions are
        [row, column] pairs: ``new_rows`` [new row, training column], ``new_cols`` [training
        row, new column], ``new_pairs`` [new row, new column] by row number, or ``by_id``
        [row id, column id] in any block; pairs not listed do not interact.
        ``unknown_pairs``: pairs whose interaction is unknown, a dict with the same keys
        (``{"by_id": [["D1", "T3"]]}``): left out of every score, counted in each block's
        ``n_unknown``."""

        def test_pairs(given: dict[str, Any], where: str) -> dict[str, Any]:
            return {
                key: self._pairs(value, f"{where}{key}")
                for key, value in given.items()
                if value is not None
            }

        edges = test_pairs(
            {"new_rows": new_rows, "new_cols": new_cols, "new_pairs": new_pairs, "by_id": by_id},
            "",
        )
        body = {
            "model_id": model_id,
            "rows": self._side(rows, row_similarity, row_ids, "rows"),
            "cols": self._side(cols, col_similarity, col_ids, "cols"),
            "edges": edges,
            "unknown_pairs": (
                None if unknown_pairs is None else test_pairs(unknown_pairs, "unknown_pairs.")
            ),
        }
        result: dict[str, Any] = self._post("/evaluate", body)
        return result

    # ------------------------------------------------------------ multi-label
    def train_multilabel(
        self,
        inputs: Any,
        labels: Any,
        *,
        label_names: list[str] | None = None,
        ids: Any = None,
        model: str | None = None,
        params: dict[str, Any] | None = None,
        threshold: str | float = "cv",
        per_label: bool | str | None = None,
        metric: str = "micro_f1",
        scores: str | None = None,
        max_cpu_seconds: float | None = None,
        n_splits: int = 3,
        random_state: int = 0,
        name: str | None = None,
        wait: bool = False,
    ) -> dict[str, Any]:
        """POST /train of label sets (``"task": "multilabel"``): ``labels`` are N x L 0/1
        rows (a DataFrame's column names become ``label_names``); the threshold is chosen by
        inner CV (``threshold="cv"``, one for all labels or ``per_label``, maximising
        ``metric``) or fixed (a number in (0, 1)). ``model`` None: the server's default
        ("auto", okcore's stacked MultiLabelClassifier(); ``params`` then empty); ``model``,
        ``per_label`` and ``scores`` left None take the server's defaults;
        ``max_cpu_seconds``: a CPU budget for the fit (None: none)."""
        inputs, ids = table_inputs(inputs, ids)
        if is_data_frame(labels):
            label_names = label_names or [str(c) for c in labels.columns]
            labels = labels.to_numpy(dtype=float)
        body = {
            "task": "multilabel",
            "name": name,
            "model": model,
            "params": params or {},
            "inputs": as_inputs(inputs),
            "ids": None if ids is None else id_array(ids).tolist(),
            "labels": np.asarray(labels, dtype=float),
            "label_names": label_names,
            "threshold": threshold,
            "per_label": per_label,
            "metric": metric,
            "scores": scores,
            "max_cpu_seconds": max_cpu_seconds,
            "n_splits": n_splits,
            "random_state": random_state,
            "wait": wait,
        }
        result: dict[str, Any] = self._post("/train", body)
        return result

    def predict_labels(
        self, model_id: str, inputs: Any, *, ids: Any = None, metric: str | None = None
    ) -> dict[str, Any]:
        """POST /predict of a multi-label model: ``probabilities`` (Q x L scores in [0, 1]),
        ``labels`` (Q x L 0/1 rows), ``thresholds`` as ndarrays, ``label_names`` and each
        row's ``label_sets`` by name (when the labels have names). ``metric``: the label
        sets of another measure's thresholds (chosen at training, no refit)."""
        inputs, ids = table_inputs(inputs, ids)
        body = {
            "model_id": model_id,
            "inputs": as_inputs(inputs),
            "ids": None if ids is None else id_array(ids),
            "metric": metric,
        }
        out: dict[str, Any] = self._post("/predict", body)  # JSON: label sets are ragged
        out["probabilities"] = np.asarray(out["probabilities"], dtype=float)
        out["labels"] = np.asarray(out["labels"], dtype=np.int64)
        out["thresholds"] = np.asarray(out["thresholds"], dtype=float)
        return out

    def evaluate_labels(
        self,
        model_id: str,
        inputs: Any,
        labels: Any,
        *,
        metric: str | None = None,
        label_names: list[str] | None = None,
    ) -> dict[str, Any]:
        """POST /evaluate of a multi-label model against the true 0/1 label rows: Hamming
        loss, subset accuracy, micro- and macro-F1, ranking loss, one-error, coverage and
        label-ranking average precision (the label sets of ``metric``'s thresholds when
        given). ``label_names`` (or a DataFrame's column names, when they are names, not
        the default 0, 1, ...) name the columns of ``labels``: they are matched to the
        model's label names, in any order."""
        inputs, _ = table_inputs(inputs, None)
        columns = label_names
        if is_data_frame(labels):
            if columns is None and all(isinstance(c, str) for c in labels.columns):
                columns = [str(c) for c in labels.columns]
            labels = labels.to_numpy(dtype=float)
        body = {
            "model_id": model_id,
            "inputs": as_inputs(inputs),
            "outputs": np.asarray(labels, dtype=float),
            "output_columns": columns,
            "metric": metric,
        }
        result: dict[str, Any] = self._post("/evaluate", body)
        return result
