"""okcore: gradient boosting and output kernel trees in kernelized output spaces.

Geurts, Wehenkel & d'Alché-Buc, "Gradient boosting for kernelized output spaces", ICML 2007.
numpy / scipy / numba only; never imports the web stack.
"""

from . import bipartite, metrics, model_selection
from .base import FITTED_ATTRIBUTES, FitProgress, FittedEnsemble, OKEstimator
from .boosting import OKBoostRegressor
from .estimators import (
    ESTIMATORS,
    estimator_parameter_schema,
    estimator_parameters,
    make_estimator,
)
from .exceptions import (
    DataError,
    InvalidParameterError,
    KernelError,
    NotFittedError,
    OKCoreError,
    PersistenceError,
)
from .io import load, save
from .kernel_models.kernel_ensemble import KernelEnsemble
from .kernel_models.krr_boosting import KRRBoostRegressor
from .multilabel import MultiLabelClassifier
from .outputs import graph
from .outputs.kernels import (
    DiffusionKernel,
    Kernel,
    LinearKernel,
    PolynomialKernel,
    PrecomputedKernel,
    RBFKernel,
    make_kernel,
)
from .outputs.space import OutputSpace
from .trees.forest import OK3ForestRegressor
from .trees.tree import OK3Regressor

__version__ = "0.1.0"

__all__ = [
    "ESTIMATORS",
    "DataError",
    "DiffusionKernel",
    "FITTED_ATTRIBUTES",
    "FitProgress",
    "FittedEnsemble",
    "InvalidParameterError",
    "KRRBoostRegressor",
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
    "__version__",
    "bipartite",
    "graph",
    "estimator_parameter_schema",
    "estimator_parameters",
    "load",
    "make_estimator",
    "make_kernel",
    "metrics",
    "model_selection",
    "save",
]
