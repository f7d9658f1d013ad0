"""Requests and responses of bipartite networks (drug-target, protein-ligand, user-item) on
POST /train, /kernel and /evaluate; the work is :mod:`service.training.bipartite` and
:mod:`service.inference.bipartite`.

A bipartite network has row vertices (e.g. drugs) and column vertices (e.g. targets), each
side with its own inputs: feature rows, or a similarity among the side's vertices (the
empirical kernel map: an item's features are its similarities to the training items of that
side). Its interactions are edges between a row vertex and a column vertex, or a (weighted)
row x column matrix. Every pair in these bodies is in (row, column) order.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
import scipy.sparse as sp
from pydantic import BaseModel, ConfigDict, Field, PlainValidator, WithJsonSchema, model_validator

from service.errors import FieldError
from service.http.arrays import as_float_array, as_input_matrix, float64_array
from service.schemas.api import Edges, Ids, Inputs, Matrix, Params, _Model
from service.schemas.examples import documented
from service.schemas.params import ModelName
from service.schemas.seeds import DEFAULT_SEED, Seed
from service.vertex_ids import VertexIds


def _adjacency(value: Any, info: Any) -> Any:
    """An interaction matrix whose NaN entries (JSON null, a table's missing cell, NaN in
    .npy) are unknown pairs: dense float64 without infinite values, or CSR as inputs."""
    if sp.issparse(value) or isinstance(value, dict):
        return as_input_matrix(value, "adjacency")
    arr = float64_array(value, "adjacency", 2, allow_nan=True)  # raises, naming the entry
    if arr.ndim != 2 or arr.size == 0:
        return as_float_array(value, "adjacency", 2)  # raises: shape
    if np.isinf(arr).any():
        i, j = (int(v) for v in np.argwhere(np.isinf(arr))[0])
        raise ValueError(
            f"adjacency[{i}][{j}] is infinite: interactions are 0/1 or weights >= 0, and an "
            "unknown pair is null (NaN, or an empty / NA cell in a table)"
        )
    return arr


Adjacency = Annotated[
    Any,
    PlainValidator(_adjacency),
    WithJsonSchema(
        {
            "anyOf": [
                {
                    "type": "array",
                    "items": {"type": "array", "items": {"type": ["number", "null"]}},
                },
                {"type": "object", "description": "A sparse matrix in CSR layout."},
            ]
        }
    ),
]
"""An interaction matrix: null (NaN) entries are unknown pairs."""

MAX_CPU_SECONDS = 3600.0
"""Largest ``max_cpu_seconds`` of one fit of the bipartite default."""
SIDE_EXAMPLE: dict[str, Any] = {
    "inputs": [[0.1, 1.0], [0.9, 0.2], [0.5, 0.5]],
    "similarity": [[1.0, 0.2, 0.6], [0.2, 1.0, 0.5], [0.6, 0.5, 1.0]],
    "ids": ["d1", "d2", "d3"],
}
"""A side shows both forms; a request gives one of inputs and similarity."""
CV_EXAMPLE: dict[str, Any] = {"folds": [3, 2], "random_state": 0}
BIPARTITE_TRAIN_EXAMPLE: dict[str, Any] = {
    "task": "bipartite",
    "name": "drug-target",
    "model": "okboost",
    "params": {"n_estimators": 50},
    "rows": {"inputs": [[0.1, 1.0], [0.9, 0.2], [0.5, 0.5]], "ids": ["d1", "d2", "d3"]},
    "cols": {"similarity": [[1.0, 0.2], [0.2, 1.0]], "ids": ["t1", "t2"]},
    "edges": [["d1", "t1"], ["d2", "t2"], ["d3", "t1"]],
    "adjacency": [[1, 0], [0, 1], [1, None]],
    "unknown_pairs": [["d3", "t2"]],
    "new_pairs": "two-step",
    "cv": CV_EXAMPLE,
    "wait": True,
}
"""Shows every field: a request gives edges or adjacency (not both), and cv only with
enough vertices for its folds."""
NEW_SIDE_EXAMPLE: dict[str, Any] = {
    "inputs": [[0.2, 0.9]],
    "similarity": [[0.9, 0.1, 0.4]],
    "similarity_ids": ["d1", "d3", "d2"],
    "ids": ["d-new"],
}
KERNEL_EXAMPLE: dict[str, Any] = {
    "model_id": "3f2a9c1e5b7d4e8f9a0b1c2d3e4f5a6b",
    "rows": {"inputs": [[0.2, 0.9]], "ids": ["d-new"]},
    "cols": {"similarity": [[0.9, 0.3]], "ids": ["t-new"]},
    "threshold": 0.2,
    "top_k": 2,
    "return_scores": True,
}
EDGES_EXAMPLE: dict[str, Any] = {
    "new_rows": [[0, 0, 0.82], [0, 1, 0.11]],
    "new_cols": [[0, 0, 0.74], [2, 0, 0.52]],
    "new_pairs": [[0, 0, 0.63]],
    "new_rows_ids": [["d-new", "t1"], ["d-new", "t2"]],
    "new_cols_ids": [["d1", "t-new"], ["d3", "t-new"]],
    "new_pairs_ids": [["d-new", "t-new"]],
}
KERNEL_RESPONSE_EXAMPLE: dict[str, Any] = {
    "model_id": "3f2a9c1e5b7d4e8f9a0b1c2d3e4f5a6b",
    "task": "bipartite",
    "scores": {
        "new_rows": [[0.82, 0.11]],
        "new_cols": [[0.74], [0.08], [0.52]],
        "new_pairs": [[0.63]],
    },  # fmt: skip
    "edges": EDGES_EXAMPLE,
}
TEST_EDGES_EXAMPLE: dict[str, Any] = {
    "new_rows": [[0, 0]],
    "new_cols": [[2, 0]],
    "new_pairs": [[0, 0]],
    "by_id": [["d-new", "t1"], ["d3", "t-new"]],
}
EVALUATE_EXAMPLE: dict[str, Any] = {
    "model_id": "3f2a9c1e5b7d4e8f9a0b1c2d3e4f5a6b",
    "rows": {"inputs": [[0.2, 0.9]], "ids": ["d-new"]},
    "cols": {"similarity": [[0.9, 0.3]], "ids": ["t-new"]},
    "edges": TEST_EDGES_EXAMPLE,
    "unknown_pairs": {"new_rows": [[0, 1]]},
}
BLOCK_EXAMPLE: dict[str, Any] = {
    "auroc": 0.91,
    "ap": 0.78,
    "n_pairs": 1,
    "n_interactions": 1,
    "n_unknown": 1,
}
EVALUATE_RESPONSE_EXAMPLE: dict[str, Any] = {
    "model_id": "3f2a9c1e5b7d4e8f9a0b1c2d3e4f5a6b",
    "n_new_rows": 1,
    "n_new_cols": 1,
    "new_rows": BLOCK_EXAMPLE,
    "new_cols": {"auroc": 1.0, "ap": 1.0, "n_pairs": 3, "n_interactions": 1},
    "new_pairs": {"auroc": None, "ap": None, "n_pairs": 1, "n_interactions": 1},
    "pooled": {"auroc": 0.88, "ap": 0.81, "n_pairs": 6, "n_interactions": 3},
    "n_ignored": 0,
}


class Side(_Model):
    """One vertex set's inputs: ``inputs`` (features) or ``similarity``, and optional ids."""

    model_config = ConfigDict(json_schema_extra=documented(SIDE_EXAMPLE))

    inputs: Inputs | None = Field(
        None, description="n x p feature rows of the vertices (dense or CSR)."
    )
    similarity: Matrix | None = Field(
        None,
        description="Similarity of the vertices: at /train the n x n matrix among the "
        "training vertices of this side; at /kernel and /evaluate the q x n similarity of the "
        "new vertices to the training vertices (same order as at /train). Used through the "
        "empirical kernel map (features = similarities to the training vertices).",
    )
    ids: Ids | None = Field(
        None, description="Optional unique string ids, one per vertex (row of the inputs)."
    )

    @model_validator(mode="after")
    def _one_input(self) -> Side:
        if (self.inputs is None) == (self.similarity is None):
            raise ValueError("give the vertices' inputs or their similarity (exactly one)")
        n = self.size
        if self.ids is not None and self.ids.shape[0] != n:
            raise FieldError(
                f"ids has {self.ids.shape[0]} entries but the side has {n} vertices", "ids"
            )
        return self

    @property
    def size(self) -> int:
        x = self.inputs if self.inputs is not None else self.similarity
        assert x is not None
        return int(x.shape[0])

    @property
    def kind(self) -> Literal["features", "similarity"]:
        return "features" if self.inputs is not None else "similarity"

    @property
    def values(self) -> Any:
        return self.inputs if self.inputs is not None else self.similarity


class BipartiteCVSpec(_Model):
    """K x K cross-validation before the final fit: both vertex sets split into folds
    stratified by degree; the model is fitted on the learned rows x learned columns of each
    configuration and scored on its three blocks (okcore.bipartite.bipartite_cross_validate)."""

    model_config = ConfigDict(json_schema_extra=documented(CV_EXAMPLE))

    folds: int | list[int] = Field(
        3,
        description="K for both sides, or [K_rows, K_cols] (each 2 to 20).",
        examples=[3, [4, 3]],
    )
    random_state: Seed = Field(
        DEFAULT_SEED, description="Seeds both sides' folds (null: the default, 0)."
    )
    row_folds: list[int] | None = Field(
        None,
        description="A given fold assignment of the row vertices (a published protocol's): "
        "the fold id 0..K-1 of every row, in the order of `rows`, every fold non-empty, K "
        "in [2, 20]; `folds` then does not apply to the rows. Default: drawn, stratified by "
        "degree.",
        examples=[[0, 1, 2, 0, 1, 2]],
    )
    col_folds: list[int] | None = Field(
        None,
        description="The same for the column vertices, in the order of `cols`.",
        examples=[[0, 1, 0, 1]],
    )

    @model_validator(mode="after")
    def _folds(self) -> BipartiteCVSpec:
        k = self.folds if isinstance(self.folds, list) else [self.folds, self.folds]
        if len(k) != 2 or not all(2 <= v <= 20 for v in k):
            raise FieldError(
                "cv.folds must be an integer or two integers, each in [2, 20]", "folds"
            )
        return self

    @property
    def pair(self) -> tuple[int, int]:
        k = self.folds if isinstance(self.folds, list) else [self.folds, self.folds]
        return int(k[0]), int(k[1])


class BipartiteTrainRequest(_Model):
    model_config = ConfigDict(json_schema_extra=documented(BIPARTITE_TRAIN_EXAMPLE))

    task: Literal["bipartite"] = Field(description="A bipartite network between two vertex sets.")
    name: str | None = Field(None, max_length=200, description="Free-form label of the model.")
    model: ModelName = Field(
        "auto",
        description='"auto" (the default): okboost chooses: okcore\'s default bipartite '
        "model, a weighted rank average of weighted nearest neighbours with interaction "
        "recovery (WkNNIR), kernel ridge with Kronecker pairs on the recovered interactions, "
        "NRLMF and OK3-et + OKBoost on the recovered interactions (the members and weights "
        "are in the record's `bipartite.default`). Its scores are normalised ranks within "
        "each block of one request (they order those pairs; they are not probabilities), and "
        "it takes no `params` or `new_pairs`. Or an estimator of okcore's registry, fitted "
        "as both one-sided models.",
    )
    params: Params = Field(
        default_factory=dict,
        description="The named model's hyper-parameters, as in the one-graph /train (none "
        'with "auto").',
    )
    rows: Side = Field(description="The row vertices (e.g. drugs) at training.")
    cols: Side = Field(description="The column vertices (e.g. targets) at training.")
    edges: Edges | None = Field(
        None,
        description="Interactions as [row, column] pairs: row indices of `rows` and of "
        "`cols` (integers), or [row id, column id] (strings). Pairs not listed do not interact.",
    )
    adjacency: Adjacency | None = Field(
        None,
        description="Interactions as an n_rows x n_cols matrix (dense or CSR): 0/1, or "
        "non-negative weights; a null entry (NaN, or an empty / NA cell of a table) is an "
        "unknown pair. Instead of `edges`.",
    )
    adjacency_row_ids: Ids | None = Field(
        None,
        description="The row vertices' ids naming the rows of `adjacency`, in any order: "
        "matched to `rows.ids` (every row vertex once), or the row vertices' ids when "
        "`rows` has none. A labelled adjacency table (the rows' ids in its first column, as "
        "in a published `*_admat_dgc.txt`) gives them. Default: the rows are in the order of "
        "`rows`.",
        examples=[["d3", "d1", "d2"]],
    )
    adjacency_col_ids: Ids | None = Field(
        None,
        description="The same for the columns of `adjacency` and `cols.ids`; a labelled "
        "adjacency table gives them by its header.",
        examples=[["t2", "t1"]],
    )
    unknown_pairs: Edges | None = Field(
        None,
        description="Pairs whose interaction is unknown (never tested, withheld), as "
        "[row, column] pairs in the form of `edges` (indices or ids). They are not "
        "negatives: training gives each the value its neighbours' observed pairs give it, "
        "and cross-validation leaves them out of every score. A pair cannot be both an "
        "interaction and unknown.",
    )
    new_pairs: Literal["two-step", "refit"] = Field(
        "two-step",
        description="How a named model's two sides score new rows x new columns "
        "(okcore.bipartite): two-step (default, measured best at equal CPU time) or refit. "
        'Model "auto" fixes each member\'s own.',
    )
    cv: BipartiteCVSpec | None = Field(
        None, description="Optional K x K cross-validation before the final fit."
    )
    max_cpu_seconds: float | None = Field(
        None,
        gt=0,
        le=MAX_CPU_SECONDS,
        description='Model "auto" only: a CPU budget in seconds for each fit of the default '
        "(the final one and every cross-validation configuration's). The members without "
        "boosting always run in full; each one-sided fit of the boosted member (OK3-et + "
        "OKBoost) stops at the first round after its share of what is left is spent. "
        "Null (the default): no budget.",
        examples=[30.0],
    )
    wait: bool = Field(
        False,
        description="Block until training ends (201) instead of answering 202 at once; after "
        "`OKBOOST_WAIT_TIMEOUT` seconds (120 by default) the answer is 202 with "
        '`"timed_out": true` and the job to follow.',
    )

    @model_validator(mode="after")
    def _interactions(self) -> BipartiteTrainRequest:
        if (self.edges is None) == (self.adjacency is None):
            raise ValueError("give the interactions as edges or as adjacency (exactly one)")
        if self.adjacency is not None:
            shape = tuple(int(s) for s in self.adjacency.shape)
            if shape != (self.rows.size, self.cols.size):
                raise FieldError(
                    f"adjacency is {shape[0]} x {shape[1]} but there are {self.rows.size} row "
                    f"and {self.cols.size} column vertices: one row of adjacency per row "
                    "vertex and one column per column vertex",
                    "adjacency",
                )
            self.adjacency = self._adjacency_by_id(self.adjacency)
        elif self.adjacency_row_ids is not None or self.adjacency_col_ids is not None:
            raise ValueError(
                "adjacency_row_ids and adjacency_col_ids name the rows and columns of an "
                "adjacency: send one, or leave them out with edges"
            )
        for side in ("rows", "cols"):
            s = getattr(self, side)
            if s.similarity is not None and s.similarity.shape[0] != s.similarity.shape[1]:
                raise FieldError(
                    f"{side}.similarity is {s.similarity.shape[0]} x {s.similarity.shape[1]}: "
                    "at /train it is the square similarity among the training vertices",
                    side,
                    "similarity",
                )
        return self

    def _adjacency_by_id(self, adjacency: Any) -> Any:
        """``adjacency`` with its rows and columns put in the order of ``rows`` and
        ``cols`` by their ids (``adjacency_row_ids``, ``adjacency_col_ids``); a side
        without ids takes them. Raises ValueError naming the first id that does not
        match."""
        for axis, side_name, field in (
            (0, "rows", "adjacency_row_ids"),
            (1, "cols", "adjacency_col_ids"),
        ):
            labels = getattr(self, field)
            if labels is None:
                continue
            side = getattr(self, side_name)
            if labels.shape[0] != adjacency.shape[axis]:
                raise FieldError(
                    f"{field} has {labels.shape[0]} ids but adjacency "
                    f"{adjacency.shape[axis]} {('rows', 'columns')[axis]}: one id each",
                    field,
                )
            if side.ids is None:
                side.ids = labels
                continue
            order, found = VertexIds(labels).find(side.ids)
            if not found.all():
                missing = side.ids[~found].tolist()
                extra = sorted(set(labels.tolist()) - set(side.ids.tolist()))
                raise FieldError(
                    f"{field} (the adjacency's {('row ids', 'header')[axis]}) does not name "
                    f"{len(missing)} of the {('row', 'column')[axis]} vertices ({side_name}.ids; "
                    f"e.g. {missing[0][:80]!r}) and "
                    f"names {len(extra)} others (e.g. {extra[0][:80]!r}): the adjacency and "
                    f"{side_name} must name the same vertices, in any order",
                    field,
                )
            adjacency = adjacency[order] if axis == 0 else adjacency[:, order]
        return adjacency


class NewSide(Side):
    """New vertices of one side: features, or their similarity to the training vertices."""

    model_config = ConfigDict(json_schema_extra=documented(NEW_SIDE_EXAMPLE))

    similarity_ids: Ids | None = Field(
        None,
        description="The training vertices' ids naming the columns of `similarity`, in any "
        "order: the columns are matched to the model's training vertices by id (every "
        "training vertex once). A labelled similarity table (the training ids in its header, "
        "the new vertices' ids in its first column) gives them. Default: the columns are in "
        "the training order.",
    )

    @model_validator(mode="after")
    def _named_columns(self) -> NewSide:
        if self.similarity_ids is not None:
            if self.similarity is None:
                raise FieldError(
                    "similarity_ids name the columns of a similarity: send one", "similarity_ids"
                )
            if self.similarity_ids.shape[0] != self.similarity.shape[1]:
                raise FieldError(
                    f"similarity_ids has {self.similarity_ids.shape[0]} ids but the similarity "
                    f"{self.similarity.shape[1]} columns: one id per column",
                    "similarity_ids",
                )
        return self


class BipartiteKernelRequest(_Model):
    model_config = ConfigDict(json_schema_extra=documented(KERNEL_EXAMPLE))

    model_id: str = Field(description="Id of a bipartite model (POST /train, task bipartite).")
    rows: NewSide | None = Field(
        None, description="New row vertices: scored against the known columns (and new ones)."
    )
    cols: NewSide | None = Field(
        None, description="New column vertices: scored against the known rows (and new ones)."
    )
    threshold: float | None = Field(None, description="Return edges whose score is >= threshold.")
    top_k: int | None = Field(
        None,
        ge=1,
        le=10000,
        description="Return, per new vertex, its top_k highest-scoring edges, best first.",
    )
    return_scores: bool = Field(True, description="Set false to receive only the edges.")

    @model_validator(mode="after")
    def _something(self) -> BipartiteKernelRequest:
        if self.rows is None and self.cols is None:
            raise ValueError("give new rows, new cols or both")
        return self


class BipartiteTestEdges(BaseModel):
    """The true interactions of the new vertices; pairs not listed do not interact."""

    model_config = ConfigDict(
        extra="forbid",
        arbitrary_types_allowed=True,
        strict=True,
        json_schema_extra=documented(TEST_EDGES_EXAMPLE),
    )

    new_rows: Edges = Field(
        default_factory=lambda: np.zeros((0, 2), dtype=np.int64),
        description="[a, j]: new row a (a row of `rows`) and training column j.",
    )
    new_cols: Edges = Field(
        default_factory=lambda: np.zeros((0, 2), dtype=np.int64),
        description="[i, b]: training row i and new column b (a row of `cols`).",
    )
    new_pairs: Edges = Field(
        default_factory=lambda: np.zeros((0, 2), dtype=np.int64),
        description="[a, b]: new row a and new column b.",
    )
    by_id: Edges = Field(
        default_factory=lambda: np.zeros((0, 2), dtype=np.int64),
        description="[row id, column id] pairs, each id a new vertex's (the request's ids) "
        "or a training vertex's (the model's); pairs of two training vertices are counted "
        "in `n_ignored` and not scored.",
    )


class BipartiteEvaluateRequest(_Model):
    model_config = ConfigDict(json_schema_extra=documented(EVALUATE_EXAMPLE))

    model_id: str = Field(description="Id of a bipartite model.")
    rows: NewSide | None = Field(None, description="Test row vertices.")
    cols: NewSide | None = Field(None, description="Test column vertices.")
    edges: BipartiteTestEdges = Field(description="The test vertices' true interactions.")
    unknown_pairs: BipartiteTestEdges | None = Field(
        None,
        description="Pairs whose interaction is unknown, in the form of `edges`: left out of "
        "every score (never counted as non-interactions), counted in each block's "
        "`n_unknown`. A pair cannot be both a true interaction and unknown.",
    )

    @model_validator(mode="after")
    def _something(self) -> BipartiteEvaluateRequest:
        if self.rows is None and self.cols is None:
            raise ValueError("give test rows, test cols or both")
        return self


class BlockScore(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(BLOCK_EXAMPLE))

    auroc: float | None = Field(description="AUROC; null without an interaction and a non-one.")
    ap: float | None = Field(description="Average precision (area under precision-recall).")
    n_pairs: int = Field(description="Pairs scored.")
    n_interactions: int = Field(description="Interacting pairs among them.")
    n_unknown: int = Field(0, description="Unknown pairs of the block, left out of the scores.")


class BipartiteEvaluateResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(EVALUATE_RESPONSE_EXAMPLE))

    model_id: str
    n_new_rows: int
    n_new_cols: int
    new_rows: BlockScore | None = Field(description="New rows x training columns.")
    new_cols: BlockScore | None = Field(description="Training rows x new columns.")
    new_pairs: BlockScore | None = Field(description="New rows x new columns.")
    pooled: BlockScore = Field(description="Every pair of the blocks above, pooled.")
    n_ignored: int = Field(description="by_id pairs of two training vertices (not scored).")


class BipartiteEdges(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(EDGES_EXAMPLE))

    new_rows: list[list[float]] | None = Field(
        None,
        description="[a, j, score]: new row a, training column j; grouped by a, best first.",
    )
    new_cols: list[list[float]] | None = Field(
        None,
        description="[i, b, score]: training row i, new column b; grouped by b, best first.",
    )
    new_pairs: list[list[float]] | None = Field(
        None, description="[a, b, score]: new row a, new column b; grouped by a, best first."
    )
    new_rows_ids: list[list[str]] | None = Field(None, description="[row id, column id].")
    new_cols_ids: list[list[str]] | None = Field(None, description="[row id, column id].")
    new_pairs_ids: list[list[str]] | None = Field(None, description="[row id, column id].")


class BipartiteKernelResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(KERNEL_RESPONSE_EXAMPLE))

    model_id: str
    task: Literal["bipartite"]
    scores: dict[str, list[list[float]]] | None = Field(
        None,
        description="Score matrices: new_rows (q x n_cols), new_cols (n_rows x q'), "
        "new_pairs (q x q'), those the request's sides give.",
    )
    edges: BipartiteEdges | None = None
