"""The records the service keeps on disk, typed: a model's ``record.json`` and a training
job's ``jobs/<id>.json``.

Each is validated when written (a record the service cannot read back is never written),
when read (GET /models, GET /jobs, a load) and when a model archive is imported. A stored
record that fails validation (edited by hand, written by a buggy tool, imported before
imports were checked) is quarantined by the store: never loaded, listed with the status
``invalid`` and the reason (service.store.model_store). Unknown fields are refused, so a
record holds nothing the API does not describe.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from service.schemas import examples as ex
from service.schemas.cv import CVResult
from service.schemas.params import ModelName

ModelStatus = Literal["training", "ready", "failed", "cancelled"]
JobState = Literal["queued", "running", "done", "failed", "cancelled"]
Phase = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,39}$")]
"""What a fit reports it is doing (okcore.FitProgress.phase): "output_space", "binning" and
"trees" from every fit, other names from fits made of several (any lower-case name)."""


class _Record(BaseModel):
    # strict: a string is not a number, a number not a string; NaN losses are kept (a
    # diverging fit has them), so allow_inf_nan stays on
    model_config = ConfigDict(extra="forbid", strict=True)


class OutputSpaceInfo(_Record):
    model_config = ConfigDict(json_schema_extra=ex.documented(ex.MODEL_INFO["output_space"]))

    rank: int = Field(description="Columns r of the training factor phi (N x r), K ~ phi phi^T.")
    trace_fraction: float = Field(
        description="Sum of the kept eigenvalues over trace(K): the share of the kernel's "
        "trace the factor keeps (1.0 for an exact factor and for phi = Y)."
    )
    diag_exact: bool = Field(
        description="False when k(y_i, y_i) are estimates (the low-rank diffusion kernel), "
        "true when computed exactly."
    )


class ModelRecord(_Record):
    """A model's ``record.json``: made "training" when its job is queued, then "ready",
    "failed" or "cancelled" (service.training)."""

    model_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    name: str | None = None
    status: ModelStatus
    job_id: str | None = None
    created: float = Field(description="Unix time.")
    client: str | None = Field(
        None,
        description="The client that trained or imported it (the per-client quotas count its "
        "models): `token:` and a hash of its client token, or its address; null for models "
        "trained or imported before the quotas.",
    )
    model: ModelName
    params: dict[str, Any]
    kernel: dict[str, Any] = Field(description="Output kernel spec (without its data arrays).")
    n_train: int = Field(ge=1)
    n_features: int = Field(ge=1)
    output_dim: int | None = Field(None, description="d when outputs are vectors, else null.")
    fit_time: float | None = None
    n_estimators: int | None = None
    train_loss: list[float] | None = Field(
        None, description="With ?curves=true: the training loss after each tree."
    )
    validation_loss: list[float] | None = Field(
        None, description="With ?curves=true: the validation loss after each tree (eval_set)."
    )
    feature_importances: list[float] | None = Field(
        None, description="With ?importances=true: one value per input feature, summing to 1."
    )
    has_ids: bool = Field(
        False, description="True when the training vertices have ids (POST /train `ids`)."
    )
    sample_weight: bool = Field(
        False, description="True when the rows were weighted (POST /train `sample_weight`)."
    )
    input_kind: Literal["features", "similarity"] = Field(
        "features",
        description="What `inputs` were (POST /train `input_kind`): features, or the N x N "
        "similarity among the training items (predictions then take the Q x N similarity "
        "of new items to them).",
    )
    input_map: Literal["kernel_map", "kpca", "input_kernel"] | None = Field(
        None,
        description="How a similarity became model inputs: the empirical kernel map, kernel "
        "PCA, or the input kernel of a kernel model (krr, krr-boost); null for features.",
    )
    output_space: OutputSpaceInfo | None = Field(
        None,
        description="The output kernel's factor form (max_bins / sketch_dim are in params); "
        "null for models stored before this field existed and until training ends.",
    )
    resolved_params: dict[str, bool | int | float | str | None] | None = Field(
        None,
        description='Every value the fit resolved from `params` ("auto" and null '
        "settings: tree_type, max_splits, max_depth, l2_regularization, n_estimators, "
        "max_bins, sketch_dim, refine_cuts, early_stopping, n_iter_no_change, max_features; "
        "empty for a model that resolves nothing); the rules are on the Defaults page. "
        "For a bipartite model, the row model's. Null until training ends and for models "
        "stored before this field existed.",
        examples=[
            {
                "tree_type": "oblivious",
                "max_splits": 10,
                "max_depth": 4,
                "l2_regularization": 10.0,
                "max_bins": 255,
                "sketch_dim": 8,
                "refine_cuts": True,
                "n_estimators": 300,
                "early_stopping": False,
                "n_iter_no_change": None,
                "max_features": 50,
            }  # fmt: skip
        ],
    )
    cv: CVResult | None = Field(
        None,
        description="The cross-validation of POST /train `cv`: its table and the chosen "
        "params; null without one and until training ends.",
        examples=[ex.CV_RESULT],
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="What is degenerate about the training data, one sentence each: too few "
        "rows, CV test folds too small for their scores, and for a graph no edges, "
        "self-loops, duplicate or dropped edges, isolated training vertices. The model is "
        "trained anyway; empty when nothing is.",
    )
    task: Literal["structured", "bipartite", "multilabel"] = Field(
        "structured",
        description="What the model learned: structured (outputs of one set of samples or "
        "graph vertices, through an output kernel), bipartite (interactions between two "
        "vertex sets) or multilabel (label sets).",
        examples=["bipartite"],
    )
    bipartite: dict[str, Any] | None = Field(
        None,
        description="For a bipartite model: both sides' sizes, input kinds and ids, the "
        "interactions, new_pairs, and the K x K cross-validation when asked "
        "(service.training.bipartite).",
        examples=[
            {
                "n_rows": 54,
                "n_cols": 26,
                "row_inputs": "similarity",
                "col_inputs": "similarity",
                "n_row_features": 54,
                "n_col_features": 26,
                "n_interactions": 90,
                "weighted": False,
                "new_pairs": "two-step",
                "has_row_ids": True,
                "has_col_ids": True,
                "cv": None,
            }  # fmt: skip
        ],
    )
    multilabel: dict[str, Any] | None = Field(
        None,
        description="For a multi-label model: the labels (count, names), the thresholds and "
        "how they were chosen, the score map (service.training.multilabel).",
        examples=[
            {
                "n_labels": 3,
                "label_names": ["metabolism", "transport", "signalling"],
                "scores": "clip",
                "threshold": "cv",
                "per_label": False,
                "metric": "micro_f1",
                "n_splits": 3,
                "random_state": 0,
                "thresholds": [0.35, 0.35, 0.35],
                "sigmoid": None,
            }  # fmt: skip
        ],
    )
    auto: dict[str, Any] | None = Field(
        None,
        description="For model 'auto': the model it chose (`chosen`, the members of an "
        "average with their settled params), the inner score's name, the CPU seconds spent "
        "and the budget, and the leaderboard: one row per candidate and average, best "
        "first, with its inner validation score, the rows of its last fit, the CPU seconds "
        "of its fits, its settled params (boosting rounds kept, kernel ridge's width and "
        "penalty), its status (chosen, scored, dropped at rung k, skipped: budget, "
        "failed) and `folds`, the validation folds its score is the mean of (1: the "
        "holdout; 5: the last rung validated again by 5 folds with the budget the "
        "holdout left); null for other models.",
        examples=[
            {
                "chosen": "kernel-ridge",
                "members": [
                    {"candidate": "kernel-ridge", "params": {"gamma": [0.05, 0.05], "alpha": 0.01}}
                ],
                "score": "err_phi",
                "greater_is_better": False,
                "cpu_seconds": 12.0,
                "refit_cpu_seconds": 0.6,
                "max_cpu_seconds": 60.0,
                "leaderboard": [
                    {
                        "name": "kernel-ridge",
                        "score": 0.083,
                        "rows": 1600,
                        "rung": 2,
                        "cpu_seconds": 6.7,
                        "params": {"gamma": [0.05, 0.05], "alpha": 0.01},
                        "status": "chosen",
                        "capped": False,
                        "folds": 5,
                        "members": [],
                    }
                ],
            }  # fmt: skip
        ],
    )
    error: str | None = None


class JobRecord(_Record):
    """A training job's ``jobs/<id>.json`` (service.jobs.records.Job.snapshot)."""

    job_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    model_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    state: JobState
    created: float
    started: float | None = None
    finished: float | None = None
    error: str | None = None
    updated: float | None = None
    eta: float | None = None
    runner: dict[str, Any] | None = None
    attempt: int = Field(0, ge=0)
    total: int = Field(1, ge=1)
    done: int = Field(0, ge=0)
    phase: Phase | None = None
    phase_started: float | None = None
    unit: str = Field("tree", max_length=40)
    train_loss: list[float] | None = None
    validation_loss: list[float] | None = None
    curve_step: int = Field(1, ge=1)
    last_train_loss: float | None = None
    last_validation_loss: float | None = None
    warnings: list[str] = Field(default_factory=list, description="As the model record's.")


def validation_reason(exc: ValidationError) -> str:
    """What is wrong with a record, field by field: ``created: Input should be a valid
    number; train_loss: Input should be a valid list``."""
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ())) or "record"
        problems.append(f"{where}: {err.get('msg', 'invalid value')}")
    return "; ".join(problems[:5]) + (
        f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    )
