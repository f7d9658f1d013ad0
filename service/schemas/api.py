"""Request and response models of the HTTP API (pydantic v2).

Array fields accept nested JSON lists or, in multipart requests, binary parts
(see :mod:`service.arrays`); they are validated into finite float64 ndarrays
here so that okcore only ever sees clean arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    PrivateAttr,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)

import okcore
from service.errors import FieldError
from service.http.arrays import (
    MISSING_VALUE_MODELS,
    as_edge_array,
    as_float_array,
    as_input_matrix,
)
from service.schemas import examples as ex
from service.schemas.cv import CVSpec
from service.schemas.examples import documented
from service.schemas.params import (
    EVAL_SET_MODELS,
    MASKED_OUTPUT_MODELS,
    SAMPLE_WEIGHT_MODELS,
    ModelName,
    Params,
    params_by_model,
)
from service.schemas.records import JobState, ModelRecord, Phase
from service.schemas.rules import with_rules
from service.vertex_ids import VertexIds, as_id_array, as_id_edges, is_id_edges

_NUM = {"type": "number"}
_MATRIX_SCHEMA = {"type": "array", "items": {"type": "array", "items": _NUM}}


def _matrix(v: Any, info: ValidationInfo) -> np.ndarray:
    return as_float_array(v, info.field_name or "array", 2)


def _inputs(v: Any, info: ValidationInfo) -> Any:
    return as_input_matrix(v, info.field_name or "inputs")


def _feature_inputs(v: Any, info: ValidationInfo) -> Any:
    return as_input_matrix(v, info.field_name or "inputs", allow_nan=True)


def _outputs(v: Any, info: ValidationInfo) -> np.ndarray:
    return as_float_array(v, info.field_name or "array", 2, allow_1d_column=True)


def _labels(v: Any, info: ValidationInfo) -> np.ndarray:
    fill = "a label is 0 or 1: fill each in (1 where the sample has the label, 0 where not)"
    return as_float_array(v, info.field_name or "labels", 2, allow_1d_column=True, fill=fill)


def _true_outputs(v: Any, info: ValidationInfo) -> np.ndarray:
    fill = (
        "a true output is not imputed (a guessed truth would be scored as known): fill each "
        "in only where it is known (for a multi-label model: 1 where the sample has the "
        "label, 0 where not)"
    )
    return as_float_array(v, info.field_name or "outputs", 2, allow_1d_column=True, fill=fill)


def _maskable_outputs(v: Any, info: ValidationInfo) -> np.ndarray:
    return as_float_array(v, info.field_name or "array", 2, allow_1d_column=True, allow_nan=True)


def _vector(v: Any, info: ValidationInfo) -> np.ndarray:
    return as_float_array(v, info.field_name or "array", 1)


def _weights(v: Any, info: ValidationInfo) -> np.ndarray:
    """One finite weight per row: a list, or a one-column table or array part."""
    if isinstance(v, np.ndarray) and v.ndim == 2 and v.shape[1] == 1:
        v = v[:, 0]
    return as_float_array(v, info.field_name or "sample_weight", 1)


def _edges(v: Any, info: ValidationInfo) -> np.ndarray:
    if is_id_edges(v):  # resolved to rows by TrainRequest, which knows the ids
        return as_id_edges(v, info.field_name or "edges")
    return as_edge_array(v, info.field_name or "edges")


def _ids(v: Any, info: ValidationInfo) -> np.ndarray:
    return as_id_array(v, info.field_name or "ids")


Matrix = Annotated[np.ndarray, PlainValidator(_matrix), WithJsonSchema(_MATRIX_SCHEMA)]
"""2-D array of finite numbers (rows x columns)."""
_CSR_SCHEMA = {
    "type": "object",
    "description": "A sparse matrix in CSR layout: the column indices of row i are "
    "indices[indptr[i]:indptr[i+1]], their values data[indptr[i]:indptr[i+1]].",
    "properties": {
        "data": {"type": "array", "items": _NUM},
        "indices": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "indptr": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "shape": {
            "type": "array",
            "items": {"type": "integer", "minimum": 1},
            "minItems": 2,
            "maxItems": 2,
        },
    },
    "required": ["data", "indices", "indptr", "shape"],
    "additionalProperties": False,
}
Inputs = Annotated[
    Any, PlainValidator(_inputs), WithJsonSchema({"anyOf": [_MATRIX_SCHEMA, _CSR_SCHEMA]})
]
"""Input features: a dense 2-D array (float32 / uint8 parts kept in their dtype) or a sparse
CSR matrix ({data, indices, indptr, shape}, CSR parts, or a scipy .npz part)."""
FeatureInputs = Annotated[
    Any, PlainValidator(_feature_inputs), WithJsonSchema({"anyOf": [_MATRIX_SCHEMA, _CSR_SCHEMA]})
]
""":data:`Inputs` that may hold missing values (NaN: a table's ``NA``, ``nan`` or empty
cells, JSON null), for the models that take them (``accepts_missing``): a 422 otherwise."""
InputColumns = Annotated[
    list[str] | None,
    Field(
        description="Names of the columns of `inputs` (a table part's header gives them). "
        "For a model trained on a similarity with ids (input_kind similarity): when every "
        "name is a training item's id, the columns are matched to the training items by id, "
        "in any order (every training item once); when none is, the columns are taken in "
        "the training order. Feature models do not read them.",
        examples=[["D00049", "D00086", "D00123"]],
    ),
]
"""The optional ``input_columns`` field of /predict, /kernel and /evaluate."""
Outputs = Annotated[
    np.ndarray,
    PlainValidator(_outputs),
    WithJsonSchema({"anyOf": [_MATRIX_SCHEMA, {"type": "array", "items": _NUM}]}),
]
"""Output vectors, N x d (a flat list is read as d = 1)."""
Labels = Annotated[
    np.ndarray,
    PlainValidator(_labels),
    WithJsonSchema({"anyOf": [_MATRIX_SCHEMA, {"type": "array", "items": _NUM}]}),
]
""":data:`Outputs` that are 0/1 label rows, N x L (a missing label is told as such)."""
TrueOutputs = Annotated[
    np.ndarray,
    PlainValidator(_true_outputs),
    WithJsonSchema({"anyOf": [_MATRIX_SCHEMA, {"type": "array", "items": _NUM}]}),
]
""":data:`Outputs` that are the truth of test rows (/evaluate): a missing one is not to be
imputed (a multi-label model's are 0/1 label rows)."""
MaskableOutputs = Annotated[
    np.ndarray,
    PlainValidator(_maskable_outputs),
    WithJsonSchema(
        {
            "anyOf": [
                {
                    "type": "array",
                    "items": {"type": "array", "items": {"type": ["number", "null"]}},
                },
                {"type": "array", "items": {"type": ["number", "null"]}},
            ]
        }
    ),
]
"""Output vectors, N x d, whose unknown entries are null (NaN in a binary part)."""
Vector = Annotated[
    np.ndarray, PlainValidator(_vector), WithJsonSchema({"type": "array", "items": _NUM})
]
Weights = Annotated[
    np.ndarray,
    PlainValidator(_weights),
    WithJsonSchema({"type": "array", "items": {"type": "number", "minimum": 0}}),
]
"""One weight >= 0 per training row (a list, or a one-column table / .npy part)."""
_ID_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 256}
Edges = Annotated[
    np.ndarray,
    PlainValidator(_edges),
    WithJsonSchema(
        {
            "type": "array",
            "items": {
                "type": "array",
                "items": {"anyOf": [{"type": "integer", "minimum": 0}, _ID_SCHEMA]},
                "minItems": 2,
                "maxItems": 2,
            },
        }
    ),
]
"""Undirected edges as [i, j] pairs of 0-based row indices, or [a, b] pairs of vertex ids."""
Ids = Annotated[
    np.ndarray,
    PlainValidator(_ids),
    WithJsonSchema({"type": "array", "items": _ID_SCHEMA}),
]
"""Vertex ids: unique strings (1-256 characters, no control characters), one per row."""


class _Model(BaseModel):
    # allow_inf_nan: a NaN threshold or width would compare False with everything
    model_config = ConfigDict(
        extra="forbid", arbitrary_types_allowed=True, allow_inf_nan=False, strict=True
    )


# ---------------------------------------------------------------- output kernels
def kernel_schema(kind: str, name: str) -> WithJsonSchema:
    """The JSON Schema of output kernel ``kind``'s parameter ``name`` as okcore declares it
    (okcore.kernel_parameter_schema: type and range). Validation stays okcore's
    (okcore.make_kernel when the job is planned: a 422 ``invalid_kernel`` with okcore's
    message), after the sign checked here: the schema documents, okcore decides."""
    schema = okcore.kernel_parameter_schema(kind)[name]
    keys = ("type", "minimum", "exclusiveMinimum", "maximum")
    return WithJsonSchema({k: schema[k] for k in keys if k in schema})


def kernel_field(kind: str, name: str) -> Any:
    """The field of output kernel ``kind``'s parameter ``name``: okcore's default and words."""
    schema = okcore.kernel_parameter_schema(kind)[name]
    return Field(schema["default"], description=schema["description"])


class _KernelSpec(_Model):
    """What the service does with an output kernel's description, one method each, so that a
    new output kernel is one class (and one entry of OUTPUT_KERNEL_SPECS): the okcore fit's
    arguments, the model record's summary, the arrays it holds and the multipart parts they
    may come as, its rows checked against the inputs', its data warnings. A subclass declares
    its fields (their order is the JSON Schema's) and overrides what differs."""

    #: The array fields a multipart body may send as parts (``output_kernel.<field>``).
    FILES: ClassVar[tuple[str, ...]] = ()
    #: The form of the outputs, as cross-validation names it (service.training.cv).
    FORM: ClassVar[str] = "output vectors"

    def outputs_array(self) -> np.ndarray | None:
        """The N x d output vectors, None when the kernel takes no vectors."""
        return None

    def fit_kwargs(self) -> dict[str, Any]:
        """okcore's ``fit`` keywords for the outputs (``gram=`` or ``kernel=``)."""
        raise NotImplementedError

    def summary(self) -> dict[str, Any]:
        """The model record's ``kernel``: the spec without its data arrays."""
        return dict(self.fit_kwargs()["kernel"])

    def arrays(self) -> list[np.ndarray]:
        """The data arrays the spec holds (the request's bytes)."""
        return [getattr(self, name) for name in self.FILES]

    def graph_edges(self) -> np.ndarray | None:
        """The training graph's edges (rows), None for a kernel on output values."""
        return None

    def check_rows(self, n: int) -> None:
        """Raise FieldError when the spec does not describe the ``n`` training rows."""
        outputs = self.outputs_array()
        if outputs is not None and outputs.shape[0] != n:
            raise FieldError(
                f"output_kernel.outputs has {outputs.shape[0]} rows but inputs has {n}",
                "output_kernel",
                "outputs",
            )

    def bind_ids(self, ids: np.ndarray | None, n: int) -> None:
        """Resolve what names training vertices by id (``ids`` checked against the ``n``
        rows); raise ValueError for what names none."""

    def data_warnings(self, n: int) -> list[str]:
        """What is degenerate about the outputs, one sentence each."""
        return []


class PrecomputedKernelSpec(_KernelSpec):
    model_config = ConfigDict(json_schema_extra=documented(ex.KERNELS["precomputed"]))
    FILES = ("gram",)
    FORM = "a precomputed Gram matrix"

    type: Literal["precomputed"]
    gram: Matrix = Field(description="N x N positive semi-definite Gram matrix of the outputs.")

    @model_validator(mode="after")
    def _square(self) -> PrecomputedKernelSpec:
        n, m = self.gram.shape
        if n != m:
            raise FieldError(f"gram must be square: got {n} x {m}", "gram")
        return self

    def fit_kwargs(self) -> dict[str, Any]:
        return {"gram": self.gram}

    def summary(self) -> dict[str, Any]:
        return {"type": "precomputed"}

    def check_rows(self, n: int) -> None:
        if self.gram.shape[0] != n:
            g = self.gram.shape
            raise FieldError(
                f"output_kernel.gram is {g[0]} x {g[1]} but inputs has {n} rows",
                "output_kernel",
                "gram",
            )


class LinearKernelSpec(_KernelSpec):
    model_config = ConfigDict(json_schema_extra=documented(ex.KERNELS["linear"]))
    FILES = ("outputs",)

    type: Literal["linear"]
    outputs: MaskableOutputs = Field(
        description="N x d output vectors; k(y, y') = y . y'. An unknown entry may be null "
        "(NaN in a binary part or a table's NA cell) for the models that fit partly known "
        "outputs (" + ", ".join(MASKED_OUTPUT_MODELS) + "): the loss and the leaf values "
        "then use the known entries only; other models, and `cv`, refuse them."
    )

    def outputs_array(self) -> np.ndarray:
        return self.outputs

    def fit_kwargs(self) -> dict[str, Any]:
        return {"kernel": {"type": "linear"}}


class RBFKernelSpec(_KernelSpec):
    model_config = ConfigDict(
        json_schema_extra=with_rules(documented(ex.KERNELS["rbf"]), exclusive=[("sigma", "gamma")])
    )

    type: Literal["rbf"]
    outputs: Outputs = Field(description="N x d output vectors.")
    sigma: Annotated[float, Field(gt=0), kernel_schema("rbf", "sigma")] | None = kernel_field(
        "rbf", "sigma"
    )
    gamma: Annotated[float, Field(gt=0), kernel_schema("rbf", "gamma")] | None = kernel_field(
        "rbf", "gamma"
    )

    @model_validator(mode="after")
    def _one_width(self) -> RBFKernelSpec:
        if self.sigma is not None and self.gamma is not None:
            raise ValueError("give either sigma or gamma for the rbf kernel, not both")
        return self

    FILES = ("outputs",)

    def outputs_array(self) -> np.ndarray:
        return self.outputs

    def fit_kwargs(self) -> dict[str, Any]:
        kernel: dict[str, Any] = {"type": "rbf"}
        if self.sigma is not None:
            kernel["sigma"] = self.sigma
        if self.gamma is not None:
            kernel["gamma"] = self.gamma
        return {"kernel": kernel}


class PolynomialKernelSpec(_KernelSpec):
    model_config = ConfigDict(json_schema_extra=documented(ex.KERNELS["polynomial"]))

    type: Literal["polynomial"]
    outputs: Outputs = Field(description="N x d output vectors.")
    degree: Annotated[int, Field(ge=1), kernel_schema("polynomial", "degree")] = kernel_field(
        "polynomial", "degree"
    )
    gamma: Annotated[float, Field(gt=0), kernel_schema("polynomial", "gamma")] = kernel_field(
        "polynomial", "gamma"
    )
    coef0: Annotated[float, Field(ge=0), kernel_schema("polynomial", "coef0")] = kernel_field(
        "polynomial", "coef0"
    )

    FILES = ("outputs",)

    def outputs_array(self) -> np.ndarray:
        return self.outputs

    def fit_kwargs(self) -> dict[str, Any]:
        kernel = {"type": "polynomial", "degree": self.degree, "gamma": self.gamma}
        return {"kernel": {**kernel, "coef0": self.coef0}}


class DiffusionKernelSpec(_KernelSpec):
    model_config = ConfigDict(json_schema_extra=documented(ex.KERNELS["diffusion"]))

    type: Literal["diffusion"]
    beta: Annotated[float, Field(gt=0), kernel_schema("diffusion", "beta")] = kernel_field(
        "diffusion", "beta"
    )
    edges: Edges = Field(
        description="Undirected edges of the graph over the N training vertices: [i, j] "
        "pairs of 0-based row indices of `inputs` (integers), or [a, b] pairs of vertex "
        "ids (strings, the request's `ids`)."
    )
    drop_unknown_edges: bool = Field(
        False,
        description="Drop the edges naming a vertex that is not a training vertex (an "
        "unknown id, or a row index >= N) and report how many in the model record "
        "(`kernel.dropped_edges`); false: such edges are a 422 giving their count and the "
        "first five.",
    )
    _dropped_edges: int = PrivateAttr(0)
    """Edges dropped by drop_unknown_edges (set by TrainRequest's validation)."""

    FILES = ("edges",)
    FORM = "a graph (diffusion kernel)"

    def fit_kwargs(self) -> dict[str, Any]:
        # the (E, 2) int64 array as it is: a list of E Python pairs would take ~10x the memory
        return {"kernel": {"type": "diffusion", "beta": self.beta, "edges": self.edges}}

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "diffusion",
            "beta": self.beta,
            "n_edges": int(self.edges.shape[0]),
        }
        if self.drop_unknown_edges:
            out.update(drop_unknown_edges=True, dropped_edges=self._dropped_edges)
        return out

    def graph_edges(self) -> np.ndarray:
        return self.edges

    def check_rows(self, n: int) -> None:
        """Checked when the ids are bound (:meth:`bind_ids`)."""

    def bind_ids(self, ids: np.ndarray | None, n: int) -> None:
        """The edges as rows of the n training vertices (ids resolved, unknown ones dropped
        or refused)."""
        self.edges, self._dropped_edges = _known_edges(self, ids, n)

    def data_warnings(self, n: int) -> list[str]:
        out = []
        if self._dropped_edges:
            out.append(
                f"{self._dropped_edges} edges naming vertices outside the training set were "
                "dropped (output_kernel.drop_unknown_edges)"
            )
        return out + okcore.graph.graph_warnings(self.edges, n)


#: Every output kernel the service takes, the one table: a new kernel is a _KernelSpec
#: subclass listed here.
OUTPUT_KERNEL_SPECS: tuple[type[_KernelSpec], ...] = (
    PrecomputedKernelSpec,
    LinearKernelSpec,
    RBFKernelSpec,
    PolynomialKernelSpec,
    DiffusionKernelSpec,
)
#: The multipart parts an output kernel's arrays may come as, in the table's order.
OUTPUT_KERNEL_PARTS = tuple(
    dict.fromkeys(f"output_kernel.{name}" for spec in OUTPUT_KERNEL_SPECS for name in spec.FILES)
)
if TYPE_CHECKING:  # a static type for mypy; pydantic reads the union of the table below
    OutputKernel = _KernelSpec
else:
    OutputKernel = Annotated[Union[OUTPUT_KERNEL_SPECS], Field(discriminator="type")]  # noqa: UP007


class EvalSet(_Model):
    """Validation data for the validation-loss curve (OKBoost only)."""

    model_config = ConfigDict(json_schema_extra=documented(ex.EVAL_SET))

    inputs: FeatureInputs = Field(
        description="V x p validation inputs (dense or CSR; NaN: missing values, for tree models)."
    )
    outputs: Outputs | None = Field(None, description="V x d outputs (kernels on vectors).")
    gram_cross: Matrix | None = Field(
        None, description="V x N kernel between validation and training outputs (precomputed)."
    )
    gram_diag: Vector | None = Field(None, description="V kernel values k(y_v, y_v) (precomputed).")


TRAIN_EXAMPLE = ex.TRAIN
#: The model of a /train request that names none: the automatic choice, and where it does
#: not apply (_auto_refusal) the documented OKBoost defaults.
DEFAULT_MODEL = "auto"
FALLBACK_MODEL = "okboost"


class TrainRequest(_Model):
    model_config = ConfigDict(
        json_schema_extra=params_by_model(
            documented(TRAIN_EXAMPLE), default_models=(DEFAULT_MODEL, FALLBACK_MODEL)
        )
    )

    name: str | None = Field(None, max_length=200, description="Free-form label of the model.")
    model: ModelName = Field(
        DEFAULT_MODEL,
        description="The estimator, by its name in okcore's registry. Left out: auto, the "
        f"automatic choice; {FALLBACK_MODEL} where auto does not apply (cv, eval_set, "
        "input_kind 'similarity', a graph's diffusion kernel, missing input values, unknown "
        "output entries, output_weight) or when `params` name "
        f"parameters auto does not take (e.g. n_estimators: {FALLBACK_MODEL}'s). Names: "
        + "; ".join(
            f"{name}: {summary}"
            for name, summary in okcore.estimator_summaries(include_auto=True).items()
        )
        + ". auto chooses among the others by inner validation within params.max_cpu_seconds "
        "of CPU (default 60 s up to 5,000 rows, proportionally more above; bounded by the "
        "server's max_job_seconds); its leaderboard is in the model record (`auto`).",
    )
    inputs: FeatureInputs = Field(
        description="N x p input features of the training vertices/samples: a matrix, or a "
        "sparse CSR object {data, indices, indptr, shape}. Missing values (NaN; in a table "
        "NA, nan or an empty cell) are taken by okboost, ok3 and ok3-forest (their trees learn "
        "where missing values go); the other models answer 422."
    )
    ids: Ids | None = Field(
        None,
        description="Optional vertex ids: one unique string per row of `inputs`. Edges may "
        "then name vertices by id, and /kernel and /predict answer with ids too.",
    )
    input_kind: Literal["features", "similarity"] = Field(
        "features",
        description="features (default): `inputs` are N x p feature rows. similarity: "
        "`inputs` is the N x N similarity among the N training items (row i, column j: "
        "s(item i, item j)), and /predict, /kernel and /evaluate then take the Q x N "
        "similarity of the new items to the training items, columns in the training order. "
        "Tree models (okboost, ok3, ok3-forest) read it through `input_map`; kernel models "
        "(krr, krr-boost) use it as their input kernel (input_kernel = 'precomputed', which "
        "needs a symmetric matrix). Cross-validation (`cv`) gives each fold the similarities "
        "among its training items only.",
    )
    input_map: Literal["kernel_map", "kpca"] | None = Field(
        None,
        description="With input_kind = similarity, for tree models: kernel_map (default), an "
        "item's similarities to the N training items as its features; kpca, its kernel PCA "
        "components (`input_components` of them, default all with a positive eigenvalue).",
    )
    input_components: int | None = Field(
        None, ge=1, description="Kernel PCA components kept (input_map = kpca)."
    )
    output_kernel: OutputKernel = Field(description="Exactly one description of the outputs.")
    params: Params = Field(
        default_factory=dict,
        description="Estimator hyper-parameters named as in okcore (n_estimators, "
        "learning_rate, max_splits, splitter, max_features, random_state, ...): those of "
        "the `model`, listed with their types, ranges and defaults in OKBoostParams, "
        "OK3Params, OK3ForestParams, KRRBoostParams, KernelRidgeParams and AutoParams. "
        "okboost also "
        "takes loss ('squared' (default), "
        "'absolute' or 'huber': robust to wrong training outputs) and alpha (the Huber "
        "quantile in (0, 1), default 0.9). An unknown name or a bad value is a 422.",
        examples=[
            {"n_estimators": 100, "learning_rate": 0.1, "max_splits": 10},
            {"n_estimators": 100, "learning_rate": 0.1, "loss": "huber", "alpha": 0.9},
        ],
    )
    eval_set: EvalSet | None = Field(
        None, description="Optional validation data (okboost and krr-boost only)."
    )
    output_weight: Weights | None = Field(
        None,
        description="Optional weight of each output column (d numbers >= 0, not all 0) for "
        "the linear output kernel: the loss weighs column c's squared errors by it. Models "
        + ", ".join(MASKED_OUTPUT_MODELS)
        + " (the same path as unknown output entries).",
    )
    sample_weight: Weights | None = Field(
        None,
        description="Optional weight of each training row (N numbers >= 0, not all 0; a "
        "JSON list, or a one-column CSV/TSV or .npy part named sample_weight): the loss is "
        "the weighted sum (scikit-learn's sample_weight; an integer weight counts a row that "
        "many times, 0 drops it). Models "
        + ", ".join(okcore.sample_weight_estimators(include_auto=True))
        + ". With `cv`, each fold fits on its rows' weights and is scored on its test "
        "rows' (err_phi, err_y and r2 weighted; other scores are refused).",
    )
    cv: CVSpec | None = Field(
        None,
        description="Optional K-fold cross-validation before the final fit: of a `grid` of "
        "params (the best is fitted) or of the params as given. The job's progress counts "
        "every CV fit; the model record keeps the table (`cv`).",
        examples=[ex.CV_SPEC],
    )
    wait: bool = Field(
        False,
        description="Block until training ends (201) instead of answering 202 at once; after "
        "`OKBOOST_WAIT_TIMEOUT` seconds (120 by default) the answer is 202 with "
        '`"timed_out": true` and the job to follow.',
    )

    @model_validator(mode="after")
    def _consistent(self) -> TrainRequest:
        n = self.inputs.shape[0]
        spec = self.output_kernel
        spec.check_rows(n)
        if self.ids is not None and self.ids.shape[0] != n:
            raise FieldError(f"ids has {self.ids.shape[0]} entries but inputs has {n} rows", "ids")
        spec.bind_ids(self.ids, n)
        if self.input_kind == "similarity":
            if self.inputs.shape[1] != n:
                raise FieldError(
                    f"input_kind is 'similarity', so inputs must be the square N x N "
                    f"similarity among the N training items: got {n} x {self.inputs.shape[1]}",
                    "inputs",
                )
            if self.eval_set is not None and self.eval_set.inputs.shape[1] != n:
                raise FieldError(
                    f"eval_set.inputs must be the similarity of the validation items to the "
                    f"{n} training items ({n} columns): got {self.eval_set.inputs.shape[1]}",
                    "eval_set",
                    "inputs",
                )
        elif self.input_map is not None or self.input_components is not None:
            raise FieldError(
                "input_map and input_components apply to input_kind 'similarity'",
                "input_map" if self.input_map is not None else "input_components",
            )
        if self.input_components is not None and self.input_map != "kpca":
            raise FieldError("input_components applies to input_map 'kpca'", "input_components")
        if "model" not in self.model_fields_set:
            object.__setattr__(self, "model", _default_model(self))
        if self.model == "auto":
            refusal = _auto_refusal(self)
            if refusal is not None:
                raise FieldError(refusal.message, "model")
        if self.eval_set is not None:
            if self.model not in EVAL_SET_MODELS:
                raise FieldError(
                    f"eval_set is only used by models {', '.join(map(repr, EVAL_SET_MODELS))}",
                    "eval_set",
                )
            _check_eval_set(self.eval_set, self.inputs, spec)
        if isinstance(spec, LinearKernelSpec) and np.isnan(spec.outputs).any():
            _check_unknown_outputs(self, spec.outputs)
        if self.output_weight is not None:
            _check_output_weight(self, spec)
        if self.sample_weight is not None:
            check_sample_weight(self.sample_weight, n, self.model)
        return self


def check_sample_weight(weights: np.ndarray, n: int, model: str) -> None:
    """A request's ``sample_weight``: for a ``model`` whose fit takes weights, okcore's
    rules (one weight >= 0 per training row of the ``n``, not all 0). What breaks one is a
    FieldError on ``sample_weight`` (okcore's message for the rules)."""
    if model not in SAMPLE_WEIGHT_MODELS:
        raise FieldError(
            f"sample_weight is taken by models "
            f"{', '.join(map(repr, SAMPLE_WEIGHT_MODELS))}, not {model!r}",
            "sample_weight",
        )
    try:
        okcore.check_sample_weight(weights, n)
    except okcore.DataError as exc:
        raise FieldError(str(exc), "sample_weight") from None


def _check_eval_set(ev: EvalSet, inputs: Any, spec: _KernelSpec) -> None:
    """The validation rows match the training data: as many input columns, outputs (one row
    per validation row, as many columns as the training outputs) or the V x N kernel against
    the training outputs with its V diagonal values."""
    n, p = (int(s) for s in inputs.shape)
    v, q = (int(s) for s in ev.inputs.shape)
    if q != p:
        raise FieldError(
            f"eval_set.inputs has {q} columns but inputs has {p}: send the validation rows "
            "with the training inputs' columns, in the same order",
            "eval_set",
            "inputs",
        )
    outputs = spec.outputs_array()
    if ev.outputs is not None:
        if outputs is None:
            raise FieldError(
                f"eval_set.outputs are output vectors, but output_kernel type "
                f"{spec.summary()['type']!r} takes none: send eval_set.gram_cross (V x N kernel between the validation and the "
                "training outputs) and eval_set.gram_diag instead",
                "eval_set",
                "outputs",
            )
        if ev.outputs.shape[0] != v:
            raise FieldError(
                f"eval_set.outputs has {ev.outputs.shape[0]} rows but eval_set.inputs has {v}: "
                "send one output row per validation row",
                "eval_set",
                "outputs",
            )
        if ev.outputs.shape[1] != outputs.shape[1]:
            raise FieldError(
                f"eval_set.outputs has {ev.outputs.shape[1]} columns but "
                f"output_kernel.outputs has {outputs.shape[1]}: send the validation outputs "
                "with the training outputs' columns",
                "eval_set",
                "outputs",
            )
    if ev.gram_cross is not None and ev.gram_cross.shape != (v, n):
        g = ev.gram_cross.shape
        raise FieldError(
            f"eval_set.gram_cross is {g[0]} x {g[1]} but must be {v} x {n}: one row per "
            "validation row (eval_set.inputs), one column per training row",
            "eval_set",
            "gram_cross",
        )
    if ev.gram_diag is not None and ev.gram_diag.shape[0] != v:
        raise FieldError(
            f"eval_set.gram_diag has {ev.gram_diag.shape[0]} values but eval_set.inputs has "
            f"{v} rows: send k(y_v, y_v) of each validation row",
            "eval_set",
            "gram_diag",
        )


def _check_output_weight(req: TrainRequest, spec: Any) -> None:
    """A weight per output column: the linear kernel's columns, a model that takes them."""
    if not isinstance(spec, LinearKernelSpec):
        raise FieldError(
            "output_weight weighs the columns of output vectors: it needs output_kernel "
            "type 'linear' (under another kernel an output column is not a factor column)",
            "output_weight",
        )
    if req.model not in MASKED_OUTPUT_MODELS:
        raise FieldError(
            f"output_weight is taken by models {', '.join(map(repr, MASKED_OUTPUT_MODELS))}, "
            f"not {req.model!r}",
            "output_weight",
        )
    if req.cv is not None:
        raise FieldError(
            "output_weight does not go with cv (its scores weigh every column alike)",
            "output_weight",
        )
    d = spec.outputs.shape[1]
    w = req.output_weight
    if w is None or len(w) != d or (w < 0).any() or not w.sum() > 0:
        raise FieldError(
            f"output_weight must be {d} numbers >= 0 (one per output column), not all 0",
            "output_weight",
        )


def _check_unknown_outputs(req: TrainRequest, outputs: np.ndarray) -> None:
    """Unknown (null / NaN) output entries: only models that fit partly known outputs take
    them, and not with cross-validation (its scores compare whole outputs)."""
    if np.isnan(outputs).all():
        raise FieldError(
            "every entry of output_kernel.outputs is unknown (null / NaN): there is nothing "
            "to fit; send the outputs of the training rows, with at least one known entry",
            "output_kernel",
            "outputs",
        )
    where = [int(i) for i in np.argwhere(np.isnan(outputs))[0]]
    if req.model not in MASKED_OUTPUT_MODELS:
        raise FieldError(
            f"output_kernel.outputs has unknown (null / NaN) entries (the first at {where}): "
            f"model {req.model!r} needs every entry; train model "
            f"{' or '.join(map(repr, MASKED_OUTPUT_MODELS))} (it fits the known entries "
            "only), or fill them in",
            "output_kernel",
            "outputs",
        )
    if req.cv is not None:
        raise FieldError(
            f"output_kernel.outputs has unknown (null / NaN) entries (the first at {where}): "
            "cross-validation scores whole outputs, so leave out cv or fill them in",
            "output_kernel",
            "outputs",
        )


def _auto_params() -> set[str]:
    """The parameters the automatic choice takes (okcore's AutoRegressor)."""
    return set(okcore.estimator_class(DEFAULT_MODEL)().get_params())


def _default_model(req: TrainRequest) -> str:
    """The model of a request that names none: the automatic choice, unless it does not
    apply (:func:`_auto_refusal`, or an ``eval_set`` to follow) or ``params`` name
    parameters it does not take (OKBoost's, such as n_estimators, given as before the
    default changed): then the documented OKBoost defaults."""
    if req.eval_set is not None or _auto_refusal(req) is not None:
        return FALLBACK_MODEL
    return DEFAULT_MODEL if set(req.params) <= _auto_params() else FALLBACK_MODEL


def default_model_note(req: TrainRequest) -> str | None:
    """Why a request that names no model got the fallback model (okboost), in the user's
    words, for the messages about its ``params``; None when it named one or got auto."""
    if "model" in req.model_fields_set or req.model != FALLBACK_MODEL:
        return None
    refusal = _auto_refusal(req)
    feature = "eval_set" if req.eval_set is not None else None
    if refusal is not None:
        feature = refusal.feature
    if feature is not None:
        return (
            f"no model was named, and the automatic choice does not apply to this request "
            f"(it has {feature}), so the model is {FALLBACK_MODEL}, the default where the "
            "automatic choice does not apply"
        )
    auto = _auto_params()
    others = sorted(set(req.params) - auto)
    return (
        f"no model was named and params name {', '.join(map(repr, others))}, which the "
        f"automatic choice (model '{DEFAULT_MODEL}', parameters {', '.join(sorted(auto))}) "
        f"does not take, so params were read as {FALLBACK_MODEL}'s"
    )


@dataclass(frozen=True)
class AutoRefusal:
    """Why the automatic choice does not apply to a request: the request's ``feature`` (in
    its words) and the ``message`` a request naming model 'auto' gets."""

    feature: str
    message: str


def _auto_refusal(req: TrainRequest) -> AutoRefusal | None:
    """What the automatic choice does not take (None: it applies): it validates on inner
    folds of its own and chooses among models of feature inputs and output vectors or a
    Gram matrix."""
    if req.cv is not None:
        return AutoRefusal(
            "cv: the automatic choice validates on inner folds of its own",
            "model 'auto' chooses its model by inner validation already: leave out cv (set "
            "params.cv to its inner folds), or name a model to cross-validate",
        )
    if req.input_kind == "similarity":
        return AutoRefusal(
            "input_kind 'similarity': the automatic choice takes feature inputs",
            "model 'auto' takes feature inputs: name a model (okboost, krr, ...) for "
            "input_kind 'similarity'",
        )
    if isinstance(req.output_kernel, DiffusionKernelSpec):
        return AutoRefusal(
            "a graph's diffusion kernel (output_kernel type 'diffusion'): the automatic "
            "choice takes output vectors or a precomputed Gram matrix",
            "model 'auto' takes output vectors or a precomputed Gram matrix: name a model "
            "for a graph's diffusion kernel",
        )
    if not getattr(okcore.estimator_class("auto"), "accepts_missing", False) and _holds_missing(
        req.inputs
    ):
        return AutoRefusal(
            "missing input values (NaN) in inputs",
            "model 'auto' does not take missing input values (NaN): name a tree model "
            f"({MISSING_VALUE_MODELS}: they learn where missing values go), or impute them",
        )
    spec = req.output_kernel
    if isinstance(spec, LinearKernelSpec) and np.isnan(spec.outputs).any():
        return AutoRefusal(
            "unknown (null / NaN) output entries",
            "model 'auto' needs every output entry: name okboost (it fits the known entries "
            "only), or fill the unknown (null / NaN) entries in",
        )
    if req.output_weight is not None:
        return AutoRefusal(
            "output_weight", "model 'auto' does not take output_weight: name okboost"
        )
    return None


def _holds_missing(inputs: Any) -> bool:
    """Whether dense or CSR ``inputs`` hold a missing value (NaN). O(n p) (O(nnz))."""
    values = inputs.data if hasattr(inputs, "tocoo") else np.asarray(inputs)
    return values.dtype.kind == "f" and bool(np.isnan(values).any())


_DROP_HINT = "; set output_kernel.drop_unknown_edges = true to drop the edges naming them"


def _known_edges(
    spec: DiffusionKernelSpec, ids: np.ndarray | None, n: int
) -> tuple[np.ndarray, int]:
    """The diffusion kernel's edges as rows of the N training vertices, and how many were
    dropped for naming an unknown vertex (``drop_unknown_edges``; else a ValueError giving
    their count and the first five)."""
    edges = spec.edges
    if edges.dtype == object:
        if ids is None:
            raise FieldError(
                "output_kernel.edges name vertices by id but the request has no ids: "
                "add ids (one string per row of inputs) or give edges as row indices",
                "output_kernel",
                "edges",
            )
        names = VertexIds(ids)
        rows, found = names.find(edges)
        if not spec.drop_unknown_edges:
            try:
                names.rows_of(edges, "output_kernel.edges", _DROP_HINT)  # the 422's message
            except ValueError as exc:
                raise FieldError(str(exc), "output_kernel", "edges") from None
    else:
        rows, found = edges, edges < n
        if not spec.drop_unknown_edges and not found.all():
            bad = np.flatnonzero(~found.all(axis=1))
            listed = ", ".join(f"[{k}] = {edges[k].tolist()}" for k in bad[:5])
            first = edges[int(bad[0])]
            raise FieldError(
                f"edges[{int(bad[0])}] = {first.tolist()} refers to vertex {int(first.max())} "
                f"but there are {n} training vertices ({bad.size} such edges in all; the "
                f"first {min(5, bad.size)}: {listed})" + _DROP_HINT,
                "output_kernel",
                "edges",
            )
    keep = found.all(axis=1)
    return np.ascontiguousarray(rows[keep], dtype=np.int64), int(keep.size - keep.sum())


# ---------------------------------------------------------------- predict / kernel
PREDICT_EXAMPLE = ex.PREDICT


ThresholdMetric = Literal["micro_f1", "macro_f1", "hamming_loss", "subset_accuracy", "balanced"]
"""The measures okcore.MultiLabelClassifier can choose its threshold for (its ``metric``;
a test checks them against okcore's list)."""
METRIC_AT_PREDICT = (
    "Multi-label models only: the measure whose thresholds decide the label sets (each "
    "chosen at training from the same out-of-fold scores, okcore's thresholds_for, no "
    "refit); left out: the measure the model was trained for."
)


class PredictRequest(_Model):
    model_config = ConfigDict(
        json_schema_extra=with_rules(
            documented(PREDICT_EXAMPLE),
            exclusive=[("candidates", "candidate_gram")],
            together=[("candidate_gram", "candidate_diag")],
        )
    )

    model_id: str = Field(description="Id returned by POST /train.")
    inputs: FeatureInputs = Field(
        description="Q x p inputs to predict for (dense or CSR; NaN: missing values, for "
        "tree models)."
    )
    ids: Ids | None = Field(
        None,
        description="Optional ids of the Q new vertices (unique strings), used in "
        "`weights_sparse_ids`.",
    )
    input_columns: InputColumns = None
    top_k: int = Field(1, ge=1, le=10000, description="Pre-images to return per row (best first).")
    return_outputs: bool = Field(
        False,
        description="Also return the pre-image outputs (training outputs or candidates at "
        "`indices`); needs a kernel on output vectors or `candidates`.",
    )
    weights: Literal["none", "dense", "sparse"] = Field(
        "none",
        description="W^F weights over the N training outputs: dense Q x N, or the "
        "`weights_top_k` largest per row as [row, training_index, weight] triples.",
    )
    weights_top_k: int = Field(
        10,
        ge=1,
        le=10000,  # as top_k
        description="Triples per row for weights = sparse (at most 10,000, as top_k; more "
        "than N returns all N).",
    )
    candidates: Outputs | None = Field(
        None, description="C x d candidate outputs to decode against instead of training outputs."
    )
    candidate_gram: Matrix | None = Field(
        None, description="C x N kernel between candidates and training outputs (Gram-only models)."
    )
    candidate_diag: Vector | None = Field(None, description="C values k(c, c) with candidate_gram.")
    metric: ThresholdMetric | None = Field(
        None, description=METRIC_AT_PREDICT, examples=["hamming_loss"]
    )

    @model_validator(mode="after")
    def _candidates(self) -> PredictRequest:
        if self.candidates is not None and self.candidate_gram is not None:
            raise ValueError("give either candidates or candidate_gram, not both")
        if (self.candidate_gram is None) != (self.candidate_diag is None):
            raise ValueError("candidate_gram and candidate_diag go together")
        if self.candidate_gram is not None and self.candidate_diag is not None:
            if self.candidate_diag.shape[0] != self.candidate_gram.shape[0]:
                raise FieldError(
                    f"candidate_diag has {self.candidate_diag.shape[0]} values but "
                    f"candidate_gram has {self.candidate_gram.shape[0]} rows",
                    "candidate_diag",
                )
        return self


KERNEL_EXAMPLE = ex.KERNEL


class KernelRequest(_Model):
    model_config = ConfigDict(json_schema_extra=documented(KERNEL_EXAMPLE))

    model_id: str = Field(description="Id returned by POST /train.")
    inputs: FeatureInputs = Field(
        description="Q x p inputs of the new vertices (dense or CSR; NaN: missing values, "
        "for tree models)."
    )
    ids: Ids | None = Field(
        None,
        description="Optional ids of the Q new vertices (unique strings): edges are then "
        "also answered by id (`edges.new_new_ids`, `edges.new_known_ids`).",
    )
    input_columns: InputColumns = None
    inputs2: FeatureInputs | None = Field(
        None, description="Optional Q2 x p second input set (against = predicted only)."
    )
    against: Literal["predicted", "training"] = Field(
        "predicted",
        description="predicted: <F(x), F(x')> (paper eq. 7), Q x Q (or Q x Q2); "
        "training: <F(x), phi(y_i)>, Q x N.",
    )
    threshold: float | None = Field(None, description="Return edges whose score is >= threshold.")
    top_k: int | None = Field(
        None,
        ge=1,
        le=10000,  # as /predict's top_k
        description="Return, per new vertex, the top_k highest-scoring edges, best first (at "
        "most 10,000, as /predict's top_k; more than there are vertices returns them all).",
    )
    known_scores: Literal["predicted", "observed"] = Field(
        "predicted",
        description="How new-known edges are scored: predicted <F(x_v), F(x_u)> with the "
        "known vertex's input (as the paper) or observed <F(x_v), phi(y_u)>.",
    )
    return_kernel: bool = Field(True, description="Set false to receive only the edges.")

    @model_validator(mode="after")
    def _second_set(self) -> KernelRequest:
        if self.inputs2 is not None and self.against == "training":
            raise FieldError("inputs2 is only used with against = 'predicted'", "inputs2")
        return self


# ---------------------------------------------------------------- responses
class ErrorDetail(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(ex.ERROR["error"]["details"][0]))

    loc: list[str | int] = Field(default_factory=list)
    msg: str


class ErrorInfo(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(ex.ERROR["error"]))

    status: int
    code: str
    message: str
    details: list[ErrorDetail] = Field(default_factory=list)


class ErrorResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(ex.ERROR))

    error: ErrorInfo


class Progress(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(ex.JOB_INFO["progress"]))

    done: int = Field(
        description="Work done so far, in `unit`: trees (of every fit of a job that "
        "cross-validates or fits a bipartite model's two sides, or a multi-label model's "
        "inner and final fits), work (thousandths of the estimated CPU of the multi-label "
        "default's fits, which differ in cost), candidates (the automatic choice's candidate "
        "fits), or the unit of the phase reported."
    )
    total: int = Field(
        description="Work to do, in `unit` (trees: M, or M of every fit; candidates: the "
        "fits the automatic choice plans). A done job has done == total: the work it did "
        "(a fit stopped early, or a choice whose budget skipped planned fits, did less than "
        "planned)."
    )
    fraction: float
    unit: str = Field("tree", description="What done and total count.", examples=["tree"])


class JobInfo(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(ex.JOB_INFO))

    job_id: str
    model_id: str
    state: JobState
    progress: Progress
    created: float = Field(description="Unix time.")
    started: float | None = None
    finished: float | None = None
    elapsed: float = Field(description="Seconds since the job started (0 while queued).")
    phase: Phase | None = Field(
        None,
        description="What the fit is doing: output_space (factorising the output kernel), "
        "binning (histogram bins of the inputs), trees (growing the trees), or another name "
        "a fit made of several reports; then saving (writing the model to the store); null "
        "before the fit reports.",
    )
    phase_elapsed: float | None = Field(
        None,
        description="Seconds spent in the current phase so far (null when not running).",
        examples=[1.5],
    )
    eta: float | None = Field(
        None,
        description="Estimated seconds remaining, every phase included: the current set-up "
        "phase's estimate minus the time spent in it (at least half the time spent), the "
        "phases to come as estimated before "
        "the job started, and the trees left times the time of one tree (the estimate, "
        "weighted as 2 trees, with the median of the measured ones). While queued: when a "
        "worker frees up for it, plus its own estimate. 0 when done; null when nothing is "
        "known.",
    )
    queue_position: int | None = Field(
        None,
        description="While queued: 1 when the job starts next, 2 when one job is ahead of it, "
        "... (a short job counts only the short jobs ahead of it: they share a worker slot "
        "kept for short jobs, OKBOOST_SHORT_JOB_SECONDS); null otherwise, and for a job "
        "queued on a Dask cluster or by another replica.",
        examples=[None],
    )
    last_train_loss: float | None = Field(None, description="Training loss after the last tree.")
    last_validation_loss: float | None = None
    train_loss: list[float] | None = Field(
        None,
        description="With ?curves=true: the training loss after trees curve_step, "
        "2 curve_step, ... (every tree while the job's server runs; a job read back from its "
        "record keeps at most 200 evenly spaced points).",
    )
    validation_loss: list[float] | None = Field(None, description="As train_loss (eval_set).")
    curve_step: int | None = Field(None, description="Trees between two curve points.")
    error: str | None = Field(None, description="Why the job failed or was cancelled.")
    warnings: list[str] = Field(
        default_factory=list,
        description="What is degenerate about the training data (the model record's "
        "`warnings`): the job runs anyway.",
    )


class InvalidJobInfo(BaseModel):
    """A job whose record fails validation: quarantined (never run or resumed), listed with
    the reason until DELETE /jobs/{id} removes its record."""

    model_config = ConfigDict(json_schema_extra=documented(ex.INVALID_JOB_INFO))

    job_id: str
    model_id: str | None = Field(
        description="The model the record names, when it names a well-formed id."
    )
    state: Literal["invalid"]
    created: float = Field(description="Unix time the record file was last written.")
    error: str = Field(description="What is wrong with the record, field by field.")


class JobList(BaseModel):
    model_config = ConfigDict(
        json_schema_extra=documented({"jobs": [ex.JOB_INFO], "next_cursor": None})
    )

    jobs: list[JobInfo | InvalidJobInfo]
    next_cursor: str | None = Field(
        description="Pass as ?cursor= for the next page; null on the last page."
    )


class ModelInfo(ModelRecord):
    """A model as GET /models/{id} answers it: its record, with the last losses always and
    the whole curves and the feature importances only when asked for."""

    model_config = ConfigDict(json_schema_extra=documented(ex.MODEL_INFO))

    last_train_loss: float | None = Field(None, description="Training loss of the model.")
    last_validation_loss: float | None = None


class InvalidModelInfo(BaseModel):
    """A model whose record fails validation: quarantined (never loaded), listed with the
    reason until it is deleted."""

    model_config = ConfigDict(json_schema_extra=documented(ex.INVALID_MODEL_INFO))

    model_id: str
    status: Literal["invalid"]
    created: float = Field(
        description="Unix time: the record's own when it is readable, else when the record "
        "file was last written."
    )
    error: str = Field(description="What is wrong with the record, field by field.")


class ModelDeleted(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(ex.MODEL_DELETED))

    model_id: str
    deleted: bool = Field(description="True: the model, its files and its record are gone.")


class ModelList(BaseModel):
    model_config = ConfigDict(
        json_schema_extra=documented({"models": [ex.MODEL_INFO], "next_cursor": None})
    )

    models: list[ModelInfo | InvalidModelInfo]
    next_cursor: str | None = Field(
        description="Pass as ?cursor= for the next page; null on the last page."
    )


class TrainAccepted(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(ex.TRAIN_ACCEPTED))

    model_id: str
    job_id: str
    state: JobState
    job_url: str
    model_url: str
    model: ModelInfo | None = Field(None, description="Present when the model is ready (201).")
    timed_out: bool = Field(
        False,
        description='True when `"wait": true` gave up waiting after `wait_timeout` seconds '
        "(202): the job goes on; follow it at `job_url`.",
        examples=[False],
    )
    wait_timeout: float | None = Field(
        None,
        description='With `"wait": true`: the longest the request waited, in seconds '
        "(`OKBOOST_WAIT_TIMEOUT`); null without `wait`.",
        examples=[120.0],
    )


class PredictResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(ex.PREDICT_RESPONSE))

    model_id: str
    index_space: Literal["training", "candidates"] = Field(
        description="What `indices` refer to: rows of the training set or of `candidates`."
    )
    indices: list[list[int]] = Field(description="Q x top_k pre-image indices, best first.")
    scores: list[list[float]] = Field(
        description="Q x top_k squared feature-space distances ||phi(y) - F(x)||^2 (ascending)."
    )
    outputs: list[list[list[float]]] | None = Field(
        None, description="Q x top_k x d pre-image outputs (when requested and known)."
    )
    weights: list[list[float]] | None = Field(None, description="Q x N dense W^F.")
    weights_sparse: list[list[float]] | None = Field(
        None, description="[row, training_index, weight] triples, largest weights per row."
    )
    index_ids: list[list[str]] | None = Field(
        None,
        description="Q x top_k ids of the pre-images: present when the model has ids and "
        "`index_space` is training.",
    )
    weights_sparse_ids: list[list[str]] | None = Field(
        None,
        description="[new vertex, training vertex] ids of each `weights_sparse` triple, same "
        "order; present when the model or the request has ids (a vertex without an id is "
        "named by its row number as a string).",
    )


class EdgeLists(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(ex.KERNEL_RESPONSE["edges"]))

    new_new: list[list[float]] = Field(
        description="[a, b, score] with a < b: rows a and b of `inputs` (new vertices); "
        "grouped by a in row order, best (highest score) first within a group."
    )
    new_known: list[list[float]] = Field(
        description="[a, i, score]: row a of `inputs` and training vertex i (row i of the "
        "training inputs); grouped by a in row order, best (highest score) first within a "
        "group, ties by increasing i."
    )
    new_new_ids: list[list[str]] | None = Field(
        None,
        description="[id of a, id of b] of each `new_new` edge, same order; present when the "
        "model or the request has ids (a new vertex without an id is named by its row "
        "number as a string).",
    )
    new_known_ids: list[list[str]] | None = Field(
        None,
        description="[id of a, id of i] of each `new_known` edge, same order; present when the "
        "model or the request has ids (a vertex without an id is named by its row number "
        "as a string).",
    )


class KernelResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(ex.KERNEL_RESPONSE))

    model_id: str
    against: Literal["predicted", "training"]
    shape: list[int]
    kernel: list[list[float]] | None = None
    edges: EdgeLists | None = None


class HealthResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented({"status": "ready"}))

    status: str


class VersionResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra=documented(ex.VERSION))

    service: str
    okcore: str
    api: str
    python: str
    numpy: str
