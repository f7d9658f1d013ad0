"""Output kernels k(y, y') = <phi(y), phi(y')> (paper section 2.1; math note section 3).

A kernel is a small object with ``gram(Y, Y2)``, ``diag(Y)`` and ``to_dict()``. The diffusion
kernel lives on the vertices of a graph given by its edges; its "outputs" are the training
vertices themselves, so it is factorised directly in :mod:`okcore.outputs.space`.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
from scipy.spatial.distance import cdist

from ..exceptions import KernelError

#: Accepted rbf widths: every gamma = 1 / (2 sigma^2) they give is a normal float64 (sigma =
#: 1e-300 would make gamma infinite, sigma = 1e300 make it 0). The outputs can be rescaled
#: instead of going beyond.
SIGMA_RANGE = (1e-150, 1e150)
GAMMA_RANGE = (1e-300, 1e300)
#: Accepted diffusion times: beyond BETA_MAX, exp(-beta lambda) of the Laplacian's zero
#: eigenvalues (computed to ~1e-15) is no longer 1 and the kernel vanishes numerically.
BETA_MAX = 1e6
#: Accepted polynomial kernel parameters (k = (gamma y.y' + coef0)^degree).
POLYNOMIAL_MAX_DEGREE = 20
POLYNOMIAL_GAMMA_RANGE = (1e-300, 1e300)
POLYNOMIAL_MAX_COEF0 = 1e300

#: Each output kernel's parameters, declared once: JSON type, range and default (the same
#: as the constructor's), and what the parameter means. The kernels check the ranges above;
#: :func:`kernel_parameter_schema` hands this table out as JSON Schema (the service's
#: request schema is built from it, so the two cannot differ).
KERNEL_PARAMETERS: dict[str, dict[str, dict[str, Any]]] = {
    "linear": {},
    "rbf": {
        "sigma": {
            "type": "number",
            "minimum": SIGMA_RANGE[0],
            "maximum": SIGMA_RANGE[1],
            "default": None,
            "description": "Bandwidth: k = exp(-||y - y'||^2 / (2 sigma^2)); give sigma or gamma.",
        },
        "gamma": {
            "type": "number",
            "minimum": GAMMA_RANGE[0],
            "maximum": GAMMA_RANGE[1],
            "default": None,
            "description": "Alternative to sigma: k = exp(-gamma ||y - y'||^2).",
        },
    },
    "polynomial": {
        "degree": {
            "type": "integer",
            "minimum": 1,
            "maximum": POLYNOMIAL_MAX_DEGREE,
            "default": 2,
            "description": "k = (gamma y.y' + coef0)^degree.",
        },
        "gamma": {
            "type": "number",
            "minimum": POLYNOMIAL_GAMMA_RANGE[0],
            "maximum": POLYNOMIAL_GAMMA_RANGE[1],
            "default": 1.0,
            "description": "Scale of y.y'.",
        },
        "coef0": {
            "type": "number",
            "minimum": 0.0,
            "maximum": POLYNOMIAL_MAX_COEF0,
            "default": 1.0,
            "description": "Constant added to gamma y.y'.",
        },
    },
    "diffusion": {
        "beta": {
            "type": "number",
            "exclusiveMinimum": 0.0,
            "maximum": BETA_MAX,
            "default": 1.0,
            "description": "Diffusion time: K = expm(-beta L), L = D - A.",
        },
    },
    "precomputed": {},
}


def kernel_parameter_schema(kind: str) -> dict[str, dict[str, Any]]:
    """JSON Schema of each numeric parameter of the output kernel ``kind`` ("rbf",
    "polynomial", ...): ``type``, the range the kernel accepts (``minimum`` /
    ``exclusiveMinimum``, ``maximum``), ``default`` and ``description``. Data parameters
    (the diffusion kernel's ``edges``) are not listed."""
    if kind not in KERNEL_PARAMETERS:
        raise KernelError(
            f"unknown kernel type {kind!r}; expected one of {sorted(KERNEL_PARAMETERS)}"
        )
    return {name: dict(schema) for name, schema in KERNEL_PARAMETERS[kind].items()}


class Kernel(ABC):
    """Base class: a positive semi-definite kernel on output vectors."""

    name: str = ""
    needs_outputs = True

    @abstractmethod
    def gram(self, Y: np.ndarray, Y2: np.ndarray | None = None) -> np.ndarray:
        """Kernel matrix, ndarray of shape (len(Y), len(Y2)). O(n n2 d)."""

    @abstractmethod
    def diag(self, Y: np.ndarray) -> np.ndarray:
        """k(y_i, y_i) for each row, ndarray of shape (len(Y),)."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """JSON-able spec; ``make_kernel(k.to_dict())`` rebuilds the kernel."""

    def describe(self) -> dict[str, Any]:
        """Short JSON-able summary (no large arrays)."""
        return self.to_dict()

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.describe().items() if k != "type")
        return f"{type(self).__name__}({params})"


class LinearKernel(Kernel):
    """k(y, y') = y . y'. OKBoost with it is least-squares gradient boosting (MART)."""

    name = "linear"

    def gram(self, Y: np.ndarray, Y2: np.ndarray | None = None) -> np.ndarray:
        return Y @ (Y if Y2 is None else Y2).T

    def diag(self, Y: np.ndarray) -> np.ndarray:
        return np.einsum("ij,ij->i", Y, Y)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "linear"}


class RBFKernel(Kernel):
    """Gaussian kernel k(y, y') = exp(-gamma ||y - y'||^2), gamma = 1 / (2 sigma^2)."""

    name = "rbf"
    gamma: float

    def __init__(self, sigma: float | None = None, gamma: float | None = None) -> None:
        if (sigma is None) == (gamma is None):
            raise KernelError("rbf kernel needs exactly one of 'sigma' or 'gamma'")
        value = sigma if sigma is not None else gamma
        if not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
            raise KernelError(
                f"rbf kernel 'sigma'/'gamma' must be a positive number: got {value!r}"
            )
        name, (low, high) = ("sigma", SIGMA_RANGE) if sigma is not None else ("gamma", GAMMA_RANGE)
        if not low <= float(value) <= high:
            raise KernelError(
                f"rbf kernel {name!r} must be in [{low:g}, {high:g}] (gamma = 1 / (2 sigma^2) "
                f"must stay a normal floating-point number): got {value!r}"
            )
        self.gamma = float(gamma) if gamma is not None else 0.5 / float(sigma) / float(sigma)

    def gram(self, Y: np.ndarray, Y2: np.ndarray | None = None) -> np.ndarray:
        d2 = cdist(Y, Y if Y2 is None else Y2, "sqeuclidean")
        return np.exp(-self.gamma * d2)

    def diag(self, Y: np.ndarray) -> np.ndarray:
        return np.ones(len(Y))

    def to_dict(self) -> dict[str, Any]:
        return {"type": "rbf", "gamma": self.gamma}


class PolynomialKernel(Kernel):
    """k(y, y') = (gamma y . y' + coef0) ^ degree."""

    name = "polynomial"
    degree: int
    gamma: float
    coef0: float

    def __init__(self, degree: int = 2, gamma: float = 1.0, coef0: float = 1.0) -> None:
        if (
            isinstance(degree, bool)
            or not isinstance(degree, numbers.Integral)
            or not 1 <= degree <= POLYNOMIAL_MAX_DEGREE
        ):
            raise KernelError(
                f"polynomial kernel 'degree' must be an int in [1, {POLYNOMIAL_MAX_DEGREE}]: "
                f"got {degree!r}"
            )
        low, high = POLYNOMIAL_GAMMA_RANGE
        if not isinstance(gamma, numbers.Real) or not np.isfinite(gamma) or gamma <= 0:
            raise KernelError(f"polynomial kernel 'gamma' must be a positive number: got {gamma!r}")
        if not low <= float(gamma) <= high:
            raise KernelError(
                f"polynomial kernel 'gamma' must be in [{low:g}, {high:g}]: got {gamma!r}"
            )
        if (
            not isinstance(coef0, numbers.Real)
            or not np.isfinite(coef0)
            or not 0 <= float(coef0) <= POLYNOMIAL_MAX_COEF0
        ):
            raise KernelError(
                f"polynomial kernel 'coef0' must be a number in [0, {POLYNOMIAL_MAX_COEF0:g}]: "
                f"got {coef0!r}"
            )
        self.degree, self.gamma, self.coef0 = int(degree), float(gamma), float(coef0)

    def gram(self, Y: np.ndarray, Y2: np.ndarray | None = None) -> np.ndarray:
        return (self.gamma * (Y @ (Y if Y2 is None else Y2).T) + self.coef0) ** self.degree

    def diag(self, Y: np.ndarray) -> np.ndarray:
        return (self.gamma * np.einsum("ij,ij->i", Y, Y) + self.coef0) ** self.degree

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "polynomial",
            "degree": self.degree,
            "gamma": self.gamma,
            "coef0": self.coef0,
        }


class DiffusionKernel(Kernel):
    """Diffusion kernel K = expm(-beta L) on a graph over the training vertices (Kondor & Lafferty).

    ``edges`` is an (E, 2) array of vertex indices (undirected, duplicates and self-loops ignored).
    Outputs are the vertices themselves, so ``gram``/``diag`` take no output vectors.
    """

    name = "diffusion"
    needs_outputs = False
    edges: np.ndarray
    beta: float

    def __init__(self, edges: Any = (), beta: float = 1.0) -> None:
        if not isinstance(beta, numbers.Real) or not np.isfinite(beta) or beta <= 0:
            raise KernelError(f"diffusion kernel 'beta' must be a positive number: got {beta!r}")
        if beta > BETA_MAX:
            raise KernelError(
                f"diffusion kernel 'beta' must be at most {BETA_MAX:g} (beyond, expm(-beta L) "
                f"vanishes to machine precision): got {beta!r}"
            )
        try:
            arr = (
                np.asarray(edges, dtype=np.float64).reshape(-1, 2)
                if len(edges)
                else np.zeros((0, 2))
            )
        except (TypeError, ValueError):
            raise KernelError(
                "diffusion kernel 'edges' must be a list of [i, j] vertex pairs"
            ) from None
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)) or np.any(arr < 0):
            raise KernelError(
                "diffusion kernel 'edges' must hold non-negative integer vertex indices"
            )
        self.edges = arr.astype(np.int64)
        self.beta = float(beta)

    def check_vertices(self, n_vertices: int) -> None:
        """Raise :class:`KernelError` naming the first edge that refers to a vertex >= n_vertices."""
        bad = np.flatnonzero(np.any(self.edges >= n_vertices, axis=1))
        if bad.size:
            i = int(bad[0])
            a, b = (int(v) for v in self.edges[i])
            raise KernelError(
                f"edges[{i}] = [{a}, {b}] refers to vertex {max(a, b)} but there are "
                f"{n_vertices} training vertices (indices 0..{n_vertices - 1})"
            )

    def gram(self, Y: np.ndarray | None = None, Y2: np.ndarray | None = None) -> np.ndarray:
        raise KernelError(
            "the diffusion kernel is defined on the training graph only; use OutputSpace"
        )

    def diag(self, Y: np.ndarray) -> np.ndarray:
        raise KernelError(
            "the diffusion kernel is defined on the training graph only; use OutputSpace"
        )

    def to_dict(self) -> dict[str, Any]:
        return {"type": "diffusion", "beta": self.beta, "edges": self.edges.tolist()}

    def describe(self) -> dict[str, Any]:
        return {"type": "diffusion", "beta": self.beta, "n_edges": int(len(self.edges))}


class PrecomputedKernel(Kernel):
    """Marker for a user-supplied Gram matrix (``fit(X, gram=K)``)."""

    name = "precomputed"
    needs_outputs = False

    def gram(self, Y: np.ndarray, Y2: np.ndarray | None = None) -> np.ndarray:
        raise KernelError(
            "a precomputed kernel has no formula: pass Gram matrices (candidate_gram=...)"
        )

    def diag(self, Y: np.ndarray) -> np.ndarray:
        raise KernelError(
            "a precomputed kernel has no formula: pass Gram matrices (candidate_diag=...)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {"type": "precomputed"}


_KERNELS: dict[str, type[Kernel]] = {
    "linear": LinearKernel,
    "rbf": RBFKernel,
    "gaussian": RBFKernel,
    "polynomial": PolynomialKernel,
    "diffusion": DiffusionKernel,
    "precomputed": PrecomputedKernel,
}


def make_kernel(spec: Kernel | str | dict[str, Any]) -> Kernel:
    """Build a kernel from an instance, a name ("linear", "rbf", ...) or a dict spec with "type"."""
    if isinstance(spec, Kernel):
        return spec
    if isinstance(spec, str):
        spec = {"type": spec}
    if not isinstance(spec, dict) or "type" not in spec:
        raise KernelError(f"kernel must be a name, a Kernel or a dict with a 'type': got {spec!r}")
    params = dict(spec)
    kind = params.pop("type")
    if kind not in _KERNELS:
        raise KernelError(
            f"unknown kernel type {kind!r}; expected one of {sorted(set(_KERNELS) - {'gaussian'})}"
        )
    try:
        return _KERNELS[kind](**params)
    except TypeError as exc:
        raise KernelError(f"invalid parameters for the {kind!r} kernel: {exc}") from None
