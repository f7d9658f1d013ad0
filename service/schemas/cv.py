"""The cross-validation of POST /train: its request part (``cv``) and what the model record
keeps of it (GET /models/{id} ``cv``). The work itself is :mod:`service.training.cv`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from service.schemas import examples as ex
from service.schemas.seeds import DEFAULT_SEED, FoldSeed

Score = Literal[
    "err_phi",
    "err_y",
    "r2",
    "auc",
    "auc_known",
    "auroc",
    "average_precision",
    "f1",
    "hamming_loss",
    "subset_accuracy",
    "micro_f1",
    "macro_f1",
    "ranking_loss",
    "one_error",
    "coverage",
    "label_ranking_average_precision",
]
"""okcore.scoring's named scores (its SCORERS)."""
MAX_FOLDS = 100
"""More folds than this is leave-almost-one-out: refused, the job would be one fit per row."""


class CVSpec(BaseModel):
    """K-fold cross-validation before the final fit, over a grid of parameters or of the
    params as given (okcore.model_selection.grid_search / cross_validate)."""

    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        strict=True,
        json_schema_extra={"examples": [ex.CV_SPEC]},
    )

    folds: int = Field(
        5,
        ge=2,
        le=MAX_FOLDS,
        description="K: the N rows shuffled into K folds whose sizes differ by at most one "
        "(at most N). Every candidate is fitted K times, on the rows outside each fold.",
        examples=[5],
    )
    grid: dict[str, Annotated[list[Any], Field(min_length=1)]] | None = Field(
        None,
        min_length=1,
        description="Candidate values of some of the model's params (names and values as in "
        "`params`: OKBoostParams, OK3Params or OK3ForestParams); every combination is "
        "cross-validated on the same folds, the others keep their `params` value. The best "
        "is fitted on all rows. Without a grid the `params` as given are cross-validated.",
        examples=[ex.CV_SPEC["grid"]],
    )
    scoring: Score | list[Score] | None = Field(
        None,
        description="The score(s) to compute; the first picks the best candidate (losses "
        "lowest: err_phi, err_y, hamming_loss, ranking_loss, one_error, coverage; the others "
        "highest). Output vectors: err_phi, err_y, r2; 0/1 output vectors (labels, links) "
        "also auroc, average_precision (predicted values ranked against the 0/1 entries, "
        "pooled), f1 (micro-F1 of predictions >= 0.5), hamming_loss, subset_accuracy, "
        "micro_f1, macro_f1 (predictions >= 0.5), ranking_loss, one_error, coverage, "
        "label_ranking_average_precision (predicted values); a precomputed Gram: err_phi, "
        "err_y; a graph (diffusion kernel): auc = auroc (new-known pairs scored <F(x), "
        "F(x_i)>), auc_known (scored <F(x), phi(y_i)>), average_precision (the pairs of "
        "auc). Default: err_phi, err_y, r2 for vectors, err_phi, err_y for a Gram, auc, "
        "auc_known for a graph.",
        examples=["auc"],
    )
    random_state: FoldSeed = Field(
        DEFAULT_SEED,
        description="Seed of the fold shuffle, 0 <= seed < 2**32 (null: the default, 0; the "
        "estimator's own seed is params.random_state).",
        examples=[0],
    )
    search: Literal["grid", "halving"] = Field(
        "grid",
        description="With a grid: 'grid' cross-validates every combination (combinations "
        "differing only in n_estimators share one fit per fold, scored at each n_estimators "
        "from its first trees); 'halving' races them by successive halving over the number "
        "of trees (scikit-learn's HalvingGridSearchCV with the resource n_estimators, which "
        "must not be in the grid): every combination with few trees, the best 1/factor again "
        "with factor times more, ..., the last iteration with up to params.n_estimators "
        "(its default 'auto' resolved on the folds' training rows).",
        examples=["halving"],
    )
    factor: int = Field(
        3,
        ge=2,
        le=10,
        description="Halving: the fraction 1/factor of the candidates kept, and the growth of "
        "their trees, at each iteration.",
        examples=[3],
    )


class CVScore(BaseModel):
    """One score of one candidate over the folds."""

    model_config = ConfigDict(json_schema_extra={"examples": [ex.CV_SCORE]})

    mean: float = Field(description="Mean over the folds.", examples=[ex.CV_SCORE["mean"]])
    std: float = Field(
        description="Standard deviation over the folds (numpy's, ddof 0).",
        examples=[ex.CV_SCORE["std"]],
    )
    folds: list[float] = Field(
        description="The score of each fold, in fold order.", examples=[ex.CV_SCORE["folds"]]
    )


class CVCandidate(BaseModel):
    """A row of the CV table: the candidate's grid values and, by score name, its scores
    (as okcore.model_selection.grid_search's table rows)."""

    model_config = ConfigDict(
        extra="allow", json_schema_extra={"examples": [ex.CV_RESULT["table"][0]]}
    )
    __pydantic_extra__: dict[str, CVScore] = Field(init=False)

    params: dict[str, Any] = Field(
        description="The grid values of this candidate ({} without a grid; with halving, "
        "also the n_estimators it was cross-validated with).",
        examples=[ex.CV_RESULT["table"][0]["params"]],
    )
    iteration: int | None = Field(
        None,
        description="Halving: the iteration of this row (0 first); absent otherwise.",
        examples=[0],
    )


class CVResult(BaseModel):
    """What the cross-validation found, kept in the model record."""

    model_config = ConfigDict(json_schema_extra={"examples": [ex.CV_RESULT]})

    folds: int = Field(description="K.", examples=[3])
    random_state: int = Field(description="Seed of the fold shuffle.", examples=[0])
    scoring: list[Score] = Field(description="The scores computed.", examples=[["auc"]])
    criterion: Score = Field(description="The score that picked the best.", examples=["auc"])
    grid: dict[str, list[Any]] | None = Field(
        description="The grid searched (null: the params as given were cross-validated).",
        examples=[ex.CV_SPEC["grid"]],
    )
    search: Literal["grid", "halving"] = Field(
        "grid", description="How the candidates were searched (cv.search).", examples=["grid"]
    )
    n_candidates: list[int] | None = Field(
        None, description="Halving: the candidates of each iteration.", examples=[[9, 3, 1]]
    )
    n_resources: list[int] | None = Field(
        None, description="Halving: the trees of each iteration.", examples=[[11, 33, 99]]
    )
    best_params: dict[str, Any] = Field(
        description="The chosen grid values, which the final model was fitted with (its "
        "`params` hold them).",
        examples=[ex.CV_RESULT["best_params"]],
    )
    table: list[CVCandidate] = Field(
        description="Every candidate in grid order (the keys in the order given, the last "
        "one varying fastest); with halving, those of each iteration in turn, best first "
        "from the second iteration on.",
        examples=[ex.CV_RESULT["table"]],
    )
