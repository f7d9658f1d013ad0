"""Request and response of POST /evaluate (the work is :mod:`service.inference.evaluation`)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from service.errors import FieldError
from service.schemas import examples as ex
from service.schemas.api import (
    METRIC_AT_PREDICT,
    Edges,
    FeatureInputs,
    Ids,
    InputColumns,
    Matrix,
    ThresholdMetric,
    TrueOutputs,
    Vector,
    documented,
)
from service.schemas.rules import with_rules

EVALUATE_EXAMPLE = ex.EVALUATE


class TestEdges(BaseModel):
    """The true edges of the test vertices (those not listed are taken as non-edges)."""

    __test__ = False  # not a test class for pytest
    model_config = ConfigDict(
        extra="forbid",
        arbitrary_types_allowed=True,
        strict=True,
        json_schema_extra=documented(ex.EVALUATE["edges"]),
    )

    new_new: Edges = Field(
        default_factory=lambda: np.zeros((0, 2), dtype=np.int64),
        description="Edges among the test vertices: [a, b] rows of `inputs`, or [id, id] of "
        "the request's `ids`.",
    )
    new_known: Edges = Field(
        default_factory=lambda: np.zeros((0, 2), dtype=np.int64),
        description="Edges from test vertices to training vertices: [a, i] with a a row of "
        "`inputs` and i a training vertex (a row of the training inputs), or [test id, "
        "training id] (the request's `ids`, the model's ids).",
    )
    by_id: Edges = Field(
        default_factory=lambda: np.zeros((0, 2), dtype=np.int64),
        description="Edges of the test vertices by id, whatever the other end, as one list "
        "(one TSV part `edges.by_id`): [test id, test id] counts in new_new, [test id, "
        "training id] (either order) in new_known. Needs the request's `ids` and a model "
        "with ids.",
    )


class EvaluateRequest(BaseModel):
    """A stored model scored on test inputs with their truth: output vectors, their kernel
    against the training outputs, or the test vertices' edges (any of them)."""

    model_config = ConfigDict(
        extra="forbid",
        arbitrary_types_allowed=True,
        allow_inf_nan=False,
        strict=True,
        json_schema_extra=with_rules(
            documented(EVALUATE_EXAMPLE),
            exclusive=[("outputs", "gram_cross")],
            together=[("gram_cross", "gram_diag")],
            any_of=["outputs", "gram_cross", "edges"],
        ),
    )

    model_id: str = Field(description="Id returned by POST /train.")
    inputs: FeatureInputs = Field(
        description="Q x p test inputs (dense or CSR; NaN: missing values, for tree models)."
    )
    ids: Ids | None = Field(
        None, description="Optional ids of the Q test vertices (unique strings), for `edges`."
    )
    input_columns: InputColumns = None
    outputs: TrueOutputs | None = Field(
        None,
        description="Q x d true outputs (models trained on output vectors): Err^phi and Err^Y.",
        examples=[[[0.1, 1.0], [0.9, -0.2]]],
    )
    output_columns: list[str] | None = Field(
        None,
        description="Names of the columns of `outputs` (a table part's header gives them). "
        "For a multi-label model with label names: its labels, in any order (the columns "
        "are matched to the labels by name; a name that is not one of its labels is a "
        "422). Other models do not read them.",
        examples=[["transport", "metabolism", "signalling"]],
    )
    gram_cross: Matrix | None = Field(
        None,
        description="Q x N kernel between the true test outputs and the training outputs "
        "(models trained without output vectors): Err^phi and Err^Y, with gram_diag.",
        examples=[[[0.3, 0.1, 0.2, 0.0], [0.0, 0.1, 0.3, 0.2]]],
    )
    gram_diag: Vector | None = Field(
        None, description="Q values k(y_q, y_q), with gram_cross.", examples=[[1.0, 1.0]]
    )
    edges: TestEdges | None = Field(
        None, description="True edges of the test vertices: AUCs and precision at k."
    )
    k: int = Field(
        10,
        ge=1,
        description="Precision at k: the training vertices ranked first for each test vertex.",
    )
    known_scores: Literal["predicted", "observed"] = Field(
        "predicted",
        description="How test-training pairs are ranked (AUCs, precision at k): predicted "
        "<F(x), F(x_i)> with the training vertex's input (as the paper and /kernel) or "
        "observed <F(x), phi(y_i)>.",
    )
    metric: ThresholdMetric | None = Field(
        None, description=METRIC_AT_PREDICT, examples=["hamming_loss"]
    )

    @model_validator(mode="after")
    def _truth(self) -> EvaluateRequest:
        if (self.gram_cross is None) != (self.gram_diag is None):
            raise ValueError("gram_cross and gram_diag go together")
        if self.outputs is not None and self.gram_cross is not None:
            raise ValueError("give the true outputs as outputs or as gram_cross, not both")
        if self.outputs is None and self.gram_cross is None and self.edges is None:
            raise ValueError(
                "nothing to evaluate against: give the true outputs (outputs, or gram_cross "
                "and gram_diag) and/or the test vertices' edges"
            )
        q = self.inputs.shape[0]
        for name in ("outputs", "gram_cross", "gram_diag", "ids"):
            value = getattr(self, name)
            if value is not None and value.shape[0] != q:
                raise FieldError(f"{name} has {value.shape[0]} rows but inputs has {q}", name)
        return self


class EvaluateResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(ex.EVALUATE_RESPONSE))

    model_id: str
    n_test: int = Field(description="Q, the test rows scored.")
    err_phi: float | None = Field(
        description="Mean ||phi(y) - F(x)||^2 (paper eq. 7; okcore.metrics.err_phi); null "
        "without true outputs.",
        examples=[0.12],
    )
    err_y: float | None = Field(
        description="Mean kernel loss of the pre-image, k(y, y) - 2 k(y, y^) + k(y^, y^) with "
        "y^ the closest training output (eq. 8; okcore.metrics.err_y); null without true "
        "outputs.",
        examples=[0.21],
    )
    auc: float | None = Field(
        description="Edge AUC over every pair with a test vertex, test-test and test-training "
        "(okcore.metrics.network_auc); null without edges."
    )
    auc_new_new: float | None = Field(
        description="Edge AUC over the test-test pairs; null without edges, or when these "
        "pairs hold no edge or no non-edge.",
        examples=[0.9],
    )
    auc_new_known: float | None = Field(
        description="Edge AUC over the test-training pairs; null as auc_new_new."
    )
    precision_at_k: float | None = Field(
        description="For each test vertex with at least one training neighbour, the share of "
        "its k best-ranked training vertices that are neighbours, averaged over those "
        "vertices; null when none has one."
    )
    k: int = Field(description="The k used: the request's, at most N.")
    n_ranked: int = Field(
        description="Test vertices with at least one training neighbour (precision_at_k's)."
    )
    known_scores: Literal["predicted", "observed"]
