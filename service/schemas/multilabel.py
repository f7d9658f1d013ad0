"""Requests and responses of multi-label tasks on POST /train, /predict and /evaluate; the
work is :mod:`service.training.multilabel` and :mod:`service.inference.multilabel`.

A multi-label task learns label sets: each sample carries any subset of L labels, given as a
0/1 row. okcore's MultiLabelClassifier fits the model on the label rows (linear output
kernel), maps its scores to [0, 1] and chooses the decision threshold by inner
cross-validation on the training rows. With no ``model`` named ("auto") it is okcore's
default, ``MultiLabelClassifier()``: kernel ridge, OK3-et + OKBoost and OK3 extra-trees
stacked with weights of least out-of-fold log-loss. Every field left out takes the value
okcore's MultiLabelClassifier takes by default.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from service.errors import FieldError
from service.schemas.api import (
    Ids,
    Inputs,
    Labels,
    Params,
    ThresholdMetric,
    Weights,
    _Model,
    check_sample_weight,
)
from service.schemas.examples import documented
from service.schemas.params import ModelName
from service.schemas.seeds import DEFAULT_SEED, Seed

MULTILABEL_TRAIN_EXAMPLE: dict[str, Any] = {
    "task": "multilabel",
    "inputs": [[0.1, 1.0], [0.9, 0.2], [0.5, 0.5], [0.2, 0.8]],
    "labels": [[1, 0, 1], [0, 1, 0], [1, 1, 0], [1, 0, 1]],
    "label_names": ["metabolism", "transport", "signalling"],
    "name": "yeast genes",
    "ids": ["g1", "g2", "g3", "g4"],
    "threshold": "cv",
    "metric": "micro_f1",
    "n_splits": 3,
    "random_state": 0,
    "wait": True,
}
PREDICT_RESPONSE_EXAMPLE: dict[str, Any] = {
    "model_id": "3f2a9c1e5b7d4e8f9a0b1c2d3e4f5a6b",
    "task": "multilabel",
    "probabilities": [[0.91, 0.12, 0.55]],
    "labels": [[1, 0, 1]],
    "label_names": ["metabolism", "transport", "signalling"],
    "label_sets": [["metabolism", "signalling"]],
    "thresholds": [0.35, 0.35, 0.35],
    "metric": "micro_f1",
    "ids": ["g9"],
}
EVALUATE_RESPONSE_EXAMPLE: dict[str, Any] = {
    "model_id": "3f2a9c1e5b7d4e8f9a0b1c2d3e4f5a6b",
    "task": "multilabel",
    "n_test": 967,
    "hamming_loss": 0.195,
    "subset_accuracy": 0.19,
    "micro_f1": 0.68,
    "macro_f1": 0.43,
    "ranking_loss": 0.165,
    "one_error": 0.23,
    "coverage": 6.3,
    "label_ranking_average_precision": 0.76,
}


MIN_SPLITS = 2
"""Fewest folds of the inner cross-validation (``n_splits``)."""


class MultiLabelTrainRequest(_Model):
    model_config = ConfigDict(json_schema_extra=documented(MULTILABEL_TRAIN_EXAMPLE))

    task: Literal["multilabel"] = Field(description="Label sets as outputs.")
    name: str | None = Field(None, max_length=200, description="Free-form label of the model.")
    model: ModelName = Field(
        "auto",
        description='"auto" (left out): okboost chooses, okcore\'s default '
        "MultiLabelClassifier(): kernel ridge (width and penalty by inner CV), OK3-et + "
        "OKBoost and OK3 extra-trees, averaged with the weights (steps of 0.25) of least "
        "out-of-fold log-loss; the record's `multilabel.leaderboard` shows them. Or one "
        "estimator of okcore's registry by name, with its `params`.",
        examples=["auto", "okboost"],
    )
    params: Params = Field(
        default_factory=dict,
        description="The named model's hyper-parameters (none with auto: name a model to "
        "pass params).",
        examples=[{}, {"n_estimators": 100}],
    )
    inputs: Inputs = Field(description="N x p input features (dense or CSR).")
    ids: Ids | None = Field(None, description="Optional sample ids, one per row.")
    labels: Labels = Field(description="N x L 0/1 label rows (1: the sample has the label).")
    label_names: list[str] | None = Field(
        None,
        description="Optional names of the L labels (unique): /predict then also answers "
        "each row's label set by name.",
    )
    threshold: Literal["cv"] | float = Field(
        "cv",
        description='"cv": chosen by inner cross-validation on the training rows to '
        "maximise `metric`; a number in (0, 1): that threshold.",
    )
    per_label: bool | Literal["auto"] = Field(
        "auto",
        description='One threshold per label instead of one for all; "auto" (default): per '
        "label for macro_f1, one for all otherwise.",
        examples=["auto", True],
    )
    metric: ThresholdMetric = Field(
        "micro_f1", description="What the threshold optimises (losses are minimised)."
    )
    scores: Literal["label_sigmoid", "sigmoid", "clip"] = Field(
        "label_sigmoid",
        description="The map of the model's scores to [0, 1]: label_sigmoid (default, with "
        "any model), one logistic map per label fitted on out-of-fold scores (calibrated "
        "probabilities); sigmoid, one such map for all labels; clip, clipping.",
        examples=["label_sigmoid"],
    )
    threshold_rule: Literal["auto", "calibrated", "window"] = Field(
        "auto",
        description='How the thresholds follow from the out-of-fold scores: "calibrated", '
        "those decision theory gives for calibrated probabilities (0.5 for the Hamming "
        'loss, half the best F1 for F1 measures); "window", the best mean of the measure '
        'over a window of thresholds; "auto" (default): calibrated with label_sigmoid '
        "scores, else window.",
        examples=["auto"],
    )
    max_cpu_seconds: float | None = Field(
        None,
        gt=0,
        le=86400,
        description="A CPU budget (seconds of process time) for the whole fit: boosted "
        "candidates stop at the first round after their share is spent, a candidate whose "
        "predicted cost does not fit what is left is skipped (weight 0; the record's "
        "`multilabel.leaderboard` says why); the fit stays within 1.25 x the budget + 2 s. "
        "Null (default, as okcore's): no budget, every candidate fitted in full, so that a "
        "fit reproduces exactly under its seed (the job limits still bound its estimate).",
        examples=[60.0],
    )
    sample_weight: Weights | None = Field(
        None,
        description="Optional weight of each training row (N numbers >= 0, not all 0; a "
        "JSON list, or a one-column CSV/TSV or .npy part named sample_weight), as at the "
        "one-graph /train (okcore's MultiLabelClassifier.fit sample_weight): every fit of "
        "the model (each inner fold's and the final one) takes its rows' weights; the "
        "thresholds, the score map and the stacking weights are chosen on the out-of-fold "
        "scores unweighted.",
    )
    n_splits: int = Field(
        3, ge=MIN_SPLITS, le=20, description="Folds of the inner cross-validation."
    )
    random_state: Seed = Field(
        DEFAULT_SEED, description="Seeds the inner folds (null: the default, 0)."
    )
    wait: bool = Field(
        False,
        description="Block until training ends (201) instead of answering 202 at once; after "
        "`OKBOOST_WAIT_TIMEOUT` seconds (120 by default) the answer is 202 with "
        '`"timed_out": true` and the job to follow.',
    )

    @field_validator("threshold", mode="before")
    @classmethod
    def _threshold(cls, value: Any) -> Any:
        """One message for every bad threshold (pydantic's for the union named its parts)."""
        if value == "cv" or (
            isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1
        ):
            return value
        raise ValueError(f'threshold must be "cv" or a number in (0, 1): got {value!r}'[:200])

    @model_validator(mode="after")
    def _consistent(self) -> MultiLabelTrainRequest:
        n = int(self.inputs.shape[0])
        labels = self.labels
        if labels.shape[0] != n:
            raise FieldError(f"labels has {labels.shape[0]} rows but inputs has {n}", "labels")
        problem = not_label_rows("labels", labels)
        if problem:
            raise FieldError(problem, "labels")
        if self.ids is not None and self.ids.shape[0] != n:
            raise FieldError(f"ids has {self.ids.shape[0]} entries but inputs has {n} rows", "ids")
        names = self.label_names
        if names is not None:
            if len(names) != labels.shape[1]:
                raise FieldError(
                    f"label_names has {len(names)} names but labels has {labels.shape[1]} columns",
                    "label_names",
                )
            twice = sorted({name for name in names if names.count(name) > 1})
            if twice or not all(0 < len(s) <= 256 for s in names):
                what = f"names {twice[:5]} more than once" if twice else "an empty or long name"
                raise FieldError(
                    f"label_names must be unique strings of 1 to 256 characters, and it has "
                    f"{what}: give each label column its own name",
                    "label_names",
                )
        if self.model == "auto" and self.params:
            raise FieldError(
                "params apply to a named model, and model is auto (okboost chooses): name a "
                f"model (e.g. okboost) to pass params, or leave params out (got "
                f"{sorted(self.params)[:5]})",
                "params",
            )
        if self.sample_weight is not None:
            check_sample_weight(self.sample_weight, n, self.model)
        if isinstance(self.threshold, float) and not 0.0 < self.threshold < 1.0:
            raise FieldError(
                f"threshold must be 'cv' or a number in (0, 1): got {self.threshold}", "threshold"
            )
        return self


def not_label_rows(field: str, labels: np.ndarray) -> str | None:
    """Why ``labels`` (the request's ``field``) are not 0/1 label rows, naming the first row
    that is not and the fix (for -1/1 labels, the conversion); None when they are."""
    bad = np.flatnonzero(~np.isin(labels, (0.0, 1.0)).all(axis=1))
    if not bad.size:
        return None
    k = int(bad[0])
    fix = "a label is 1 where the sample has it, 0 where not"
    if np.isin(labels, (-1.0, 1.0)).all():
        fix += f": for -1/1 labels send ({field} + 1) / 2"
    return (
        f"{field} must be 0/1: row {k} is {labels[k][:10].tolist()} ({bad.size} such rows in "
        f"all); {fix}"
    )


class MultiLabelPredictResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(PREDICT_RESPONSE_EXAMPLE))

    model_id: str
    task: Literal["multilabel"]
    probabilities: list[list[float]] = Field(description="Q x L label scores in [0, 1].")
    labels: list[list[int]] = Field(description="Q x L 0/1 label rows (score >= threshold).")
    label_names: list[str] | None = Field(None, description="The L label names, when given.")
    label_sets: list[list[str]] | None = Field(
        None, description="Each row's predicted labels by name, when the labels have names."
    )
    thresholds: list[float] = Field(description="The L thresholds used.")
    metric: ThresholdMetric = Field(
        description="The measure the thresholds are for: the request's `metric`, else the "
        "trained one.",
        examples=["micro_f1"],
    )
    ids: list[str] | None = Field(None, description="The request's ids, when given.")


class MultiLabelEvaluateResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(EVALUATE_RESPONSE_EXAMPLE))

    model_id: str
    task: Literal["multilabel"]
    n_test: int
    hamming_loss: float
    subset_accuracy: float
    micro_f1: float
    macro_f1: float
    ranking_loss: float
    one_error: float
    coverage: float
    label_ranking_average_precision: float
