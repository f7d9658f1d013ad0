"""okcore: gradient boosting and output kernel trees in kernelized output spaces.

Geurts, Wehenkel & d'Alché-Buc, "Gradient boosting for kernelized output spaces", ICML 2007.
numpy / scipy / numba only; never imports the web stack.
"""

from . import auto, bipartite, defaults, metrics, model_selection, scoring
from ._validation import check_sample_weight
from .auto import AutoRegressor
from .averaging import AveragedRegressor
from .base import FITTED_ATTRIBUTES, FittedEnsemble, OKEstimator
from .boosting import GrowthPlan, OKBoostRegressor
from .callbacks import EarlyStopping, FitProgress
from .cost import BipartiteCost, FitCost
from .estimators import (
    ESTIMATORS,
    check_parameter_names,
    estimator_class,
    estimator_names,
    estimator_parameter_schema,
    estimator_parameters,
    estimator_summaries,
    eval_set_estimators,
    make_estimator,
    sample_weight_estimators,
)
from .exceptions import (
    DataError,
    DataTypeError,
    InvalidParameterError,
    KernelError,
    NotFittedError,
    OKCoreError,
    PersistenceError,
    UnknownParameterError,
)
from .io import load, save
from .kernel_models.kernel_ensemble import KernelEnsemble
from .kernel_models.krr import check_auto_gamma
from .kernel_models.krr_boosting import KRRBoostRegressor
from .kernel_models.ridge import KernelRidgeRegressor
from .multilabel import (
    THRESHOLD_GRID,
    THRESHOLD_METRICS,
    MultiLabelClassifier,
    thresholds_per_label,
)
from .outputs import graph
from .outputs.kernels import (
    DiffusionKernel,
    Kernel,
    LinearKernel,
    PolynomialKernel,
    PrecomputedKernel,
    RBFKernel,
    kernel_parameter_schema,
    make_kernel,
)
from .outputs.space import OutputSpace, check_gram
from .similarity import SimilarityInputs, pairwise_inputs
from .trees.estimator import TreeEstimator
from .trees.forest import OK3ForestRegressor
from .trees.tree import OK3Regressor

__version__ = "0.1.0"

__all__ = [
    "AutoRegressor",
    "AveragedRegressor",
    "BipartiteCost",
    "ESTIMATORS",
    "DataError",
    "DataTypeError",
    "DiffusionKernel",
    "EarlyStopping",
    "FITTED_ATTRIBUTES",
    "FitCost",
    "FitProgress",
    "FittedEnsemble",
    "GrowthPlan",
    "InvalidParameterError",
    "KRRBoostRegressor",
    "KernelRidgeRegressor",
    "KernelEnsemble",
    "Kernel",
    "KernelError",
    "LinearKernel",
    "MultiLabelClassifier",
    "NotFittedError",
    "OK3ForestRegressor",
    "OK3Regressor",
    "OKBoostRegressor",
    "OKCoreError",
    "OKEstimator",
    "OutputSpace",
    "PersistenceError",
    "PolynomialKernel",
    "PrecomputedKernel",
    "RBFKernel",
    "SimilarityInputs",
    "THRESHOLD_GRID",
    "THRESHOLD_METRICS",
    "TreeEstimator",
    "UnknownParameterError",
    "__version__",
    "auto",
    "bipartite",
    "check_auto_gamma",
    "check_gram",
    "graph",
    "defaults",
    "check_parameter_names",
    "estimator_class",
    "estimator_names",
    "estimator_parameter_schema",
    "estimator_parameters",
    "estimator_summaries",
    "load",
    "eval_set_estimators",
    "make_estimator",
    "sample_weight_estimators",
    "check_sample_weight",
    "kernel_parameter_schema",
    "make_kernel",
    "metrics",
    "model_selection",
    "pairwise_inputs",
    "save",
    "scoring",
    "thresholds_per_label",
]
