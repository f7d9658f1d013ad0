"""Output kernels: formulas, parameters, specs (make_kernel / to_dict) and their errors."""

from __future__ import annotations

import inspect
import json
import re

import numpy as np
import pytest
from okdata import rbf_gram

from okcore import (
    DataError,
    DiffusionKernel,
    KernelError,
    LinearKernel,
    PolynomialKernel,
    PrecomputedKernel,
    RBFKernel,
    kernel_parameter_schema,
    make_kernel,
)
from okcore.outputs.kernels import Kernel


@pytest.fixture
def outputs():
    rng = np.random.default_rng(1)
    return rng.normal(size=(7, 3)), rng.normal(size=(5, 3))


def test_linear(outputs):
    A, B = outputs
    k = LinearKernel()
    expected = np.array([[sum(a * b for a, b in zip(y, z, strict=True)) for z in B] for y in A])
    np.testing.assert_allclose(k.gram(A, B), expected, rtol=1e-13)
    np.testing.assert_allclose(k.gram(A), A @ A.T, rtol=1e-13)
    np.testing.assert_allclose(k.diag(A), np.diag(A @ A.T), rtol=1e-13)
    assert k.name == "linear" and k.to_dict() == {"type": "linear"}


def test_rbf_sigma_and_gamma_are_the_same_kernel(outputs):
    A, B = outputs
    sigma = 1.7
    by_sigma, by_gamma = RBFKernel(sigma=sigma), RBFKernel(gamma=1.0 / (2.0 * sigma**2))
    assert by_sigma.gamma == pytest.approx(by_gamma.gamma, rel=1e-15)
    np.testing.assert_allclose(by_sigma.gram(A, B), by_gamma.gram(A, B), rtol=1e-14)
    np.testing.assert_allclose(by_sigma.gram(A, B), rbf_gram(A, B, by_gamma.gamma), rtol=1e-12)
    np.testing.assert_allclose(by_sigma.gram(A), rbf_gram(A, A, by_gamma.gamma), rtol=1e-12)
    np.testing.assert_array_equal(by_sigma.diag(A), np.ones(len(A)))
    # the paper's image kernel: sigma = 7.0711 is gamma = 0.01
    assert RBFKernel(sigma=7.0711).gamma == pytest.approx(0.01, rel=1e-4)
    assert by_sigma.to_dict() == {"type": "rbf", "gamma": by_sigma.gamma}
    assert make_kernel({"type": "rbf", "sigma": sigma}).gamma == by_sigma.gamma


def test_polynomial(outputs):
    A, B = outputs
    k = PolynomialKernel(degree=3, gamma=0.5, coef0=2.0)
    expected = np.array([[(0.5 * float(y @ z) + 2.0) ** 3 for z in B] for y in A])
    np.testing.assert_allclose(k.gram(A, B), expected, rtol=1e-12)
    np.testing.assert_allclose(k.diag(A), np.diag(k.gram(A)), rtol=1e-12)
    assert k.to_dict() == {"type": "polynomial", "degree": 3, "gamma": 0.5, "coef0": 2.0}
    default = PolynomialKernel()
    assert (default.degree, default.gamma, default.coef0) == (2, 1.0, 1.0)
    np.testing.assert_allclose(default.gram(A, B), (A @ B.T + 1.0) ** 2, rtol=1e-13)


def test_numpy_scalars_are_accepted_as_kernel_parameters(outputs):
    A, _ = outputs
    np.testing.assert_allclose(
        RBFKernel(sigma=np.float32(2.0)).gram(A), RBFKernel(sigma=2.0).gram(A), rtol=1e-14
    )
    assert RBFKernel(gamma=np.int64(2)).gamma == 2.0
    k = PolynomialKernel(degree=np.int64(3), gamma=np.float64(0.5), coef0=np.int32(1))
    np.testing.assert_allclose(k.gram(A), PolynomialKernel(3, 0.5, 1.0).gram(A), rtol=1e-14)
    assert json.loads(json.dumps(k.to_dict())) == PolynomialKernel(3, 0.5, 1.0).to_dict()
    assert DiffusionKernel([[0, 1]], beta=np.float32(0.5)).beta == 0.5


@pytest.mark.parametrize(
    ("spec", "cls"),
    [
        ("linear", LinearKernel),
        ("polynomial", PolynomialKernel),
        ("precomputed", PrecomputedKernel),
        ("diffusion", DiffusionKernel),
        ({"type": "linear"}, LinearKernel),
        ({"type": "rbf", "gamma": 0.25}, RBFKernel),
        ({"type": "gaussian", "sigma": 2.0}, RBFKernel),
        ({"type": "polynomial", "degree": 4, "coef0": 0}, PolynomialKernel),
        ({"type": "diffusion", "beta": 2.0, "edges": [[0, 1], [1, 2]]}, DiffusionKernel),
        ({"type": "precomputed"}, PrecomputedKernel),
    ],
)
def test_make_kernel_from_name_and_dict(spec, cls):
    kernel = make_kernel(spec)
    assert type(kernel) is cls
    assert isinstance(kernel, Kernel)
    # to_dict is JSON-able and rebuilds an equal kernel
    rebuilt = make_kernel(json.loads(json.dumps(kernel.to_dict())))
    assert type(rebuilt) is cls and rebuilt.to_dict() == kernel.to_dict()
    if isinstance(spec, dict):
        assert spec == dict(spec)  # make_kernel does not mutate the caller's dict


def test_make_kernel_dict_values():
    k = make_kernel({"type": "polynomial", "degree": 4, "coef0": 0})
    assert (k.degree, k.gamma, k.coef0) == (4, 1.0, 0.0)
    d = make_kernel({"type": "diffusion", "beta": 2.0, "edges": [[0, 1], [1, 2]]})
    assert d.beta == 2.0 and d.edges.dtype == np.int64
    np.testing.assert_array_equal(d.edges, [[0, 1], [1, 2]])
    assert d.to_dict() == {"type": "diffusion", "beta": 2.0, "edges": [[0, 1], [1, 2]]}


def test_make_kernel_returns_an_instance_unchanged():
    k = RBFKernel(gamma=3.0)
    assert make_kernel(k) is k


def test_rbf_has_no_default_bandwidth():
    with pytest.raises(KernelError, match="^rbf kernel needs exactly one of 'sigma' or 'gamma'$"):
        make_kernel("rbf")


@pytest.mark.parametrize("spec", ["cosine", {"type": "laplacian"}, {"type": None}])
def test_unknown_kernel_type(spec):
    kind = spec if isinstance(spec, str) else spec["type"]
    expected = (
        f"unknown kernel type {kind!r}; expected one of "
        "['diffusion', 'linear', 'polynomial', 'precomputed', 'rbf']"
    )
    with pytest.raises(KernelError, match=f"^{re.escape(expected)}$"):
        make_kernel(spec)


@pytest.mark.parametrize("spec", [None, 3, ["rbf"], {"gamma": 1.0}])
def test_kernel_spec_must_be_a_name_a_kernel_or_a_typed_dict(spec):
    with pytest.raises(
        KernelError, match="kernel must be a name, a Kernel or a dict with a 'type'"
    ):
        make_kernel(spec)


BAD_PARAMS = [
    (
        {"type": "rbf", "sigma": 1.0, "gamma": 1.0},
        "rbf kernel needs exactly one of 'sigma' or 'gamma'",
    ),
    (
        {"type": "rbf", "sigma": 0.0},
        "rbf kernel 'sigma'/'gamma' must be a positive number: got 0.0",
    ),
    (
        {"type": "rbf", "gamma": -1.0},
        "rbf kernel 'sigma'/'gamma' must be a positive number: got -1.0",
    ),
    (
        {"type": "rbf", "gamma": float("nan")},
        "rbf kernel 'sigma'/'gamma' must be a positive number: got nan",
    ),
    (
        {"type": "rbf", "sigma": float("inf")},
        "rbf kernel 'sigma'/'gamma' must be a positive number: got inf",
    ),
    (
        {"type": "rbf", "sigma": "1"},
        "rbf kernel 'sigma'/'gamma' must be a positive number: got '1'",
    ),
    ({"type": "rbf", "gamma": 1.0, "width": 2}, "invalid parameters for the 'rbf' kernel"),
    ({"type": "linear", "gamma": 1.0}, "invalid parameters for the 'linear' kernel"),
    (
        {"type": "polynomial", "degree": 0},
        "polynomial kernel 'degree' must be an int in [1, 20]: got 0",
    ),
    (
        {"type": "polynomial", "degree": 2.0},
        "polynomial kernel 'degree' must be an int in [1, 20]: got 2.0",
    ),
    (
        {"type": "polynomial", "degree": True},
        "polynomial kernel 'degree' must be an int in [1, 20]: got True",
    ),
    (
        {"type": "polynomial", "gamma": 0},
        "polynomial kernel 'gamma' must be a positive number: got 0",
    ),
    (
        {"type": "polynomial", "coef0": -1.0},
        "polynomial kernel 'coef0' must be a number in [0, 1e+300]: got -1.0",
    ),
    (
        {"type": "polynomial", "coef0": float("nan")},
        "polynomial kernel 'coef0' must be a number in [0, 1e+300]: got nan",
    ),
    (
        {"type": "polynomial", "degree": 21},
        "polynomial kernel 'degree' must be an int in [1, 20]: got 21",
    ),
    (
        {"type": "polynomial", "gamma": 1e301},
        "polynomial kernel 'gamma' must be in [1e-300, 1e+300]: got 1e+301",
    ),
    # widths whose gamma = 1 / (2 sigma^2) is not a normal float64 (once a 500)
    *(
        (
            {"type": "rbf", "sigma": sigma},
            f"rbf kernel 'sigma' must be in [1e-150, 1e+150] (gamma = 1 / (2 sigma^2) must stay "
            f"a normal floating-point number): got {sigma!r}",
        )
        for sigma in (1e-300, 5e-324, 1e300)
    ),
    (
        {"type": "rbf", "gamma": 1e-310},
        "rbf kernel 'gamma' must be in [1e-300, 1e+300] (gamma = 1 / (2 sigma^2) must stay a "
        "normal floating-point number): got 1e-310",
    ),
    (
        {"type": "diffusion", "beta": 1e300},
        "diffusion kernel 'beta' must be at most 1e+06 (beyond, expm(-beta L) vanishes to "
        "machine precision): got 1e+300",
    ),
    ({"type": "diffusion", "beta": 0}, "diffusion kernel 'beta' must be a positive number: got 0"),
    (
        {"type": "diffusion", "beta": -2.0},
        "diffusion kernel 'beta' must be a positive number: got -2.0",
    ),
    (
        {"type": "diffusion", "edges": [[0, 1.5]]},
        "diffusion kernel 'edges' must hold non-negative integer vertex indices",
    ),
    (
        {"type": "diffusion", "edges": [[0, -1]]},
        "diffusion kernel 'edges' must hold non-negative integer vertex indices",
    ),
    (
        {"type": "diffusion", "edges": [[0, float("nan")]]},
        "diffusion kernel 'edges' must hold non-negative integer vertex indices",
    ),
    (
        {"type": "diffusion", "edges": [[0, 1, 2]]},
        "diffusion kernel 'edges' must be a list of [i, j] vertex pairs",
    ),
    (
        {"type": "diffusion", "edges": [["a", "b"]]},
        "diffusion kernel 'edges' must be a list of [i, j] vertex pairs",
    ),
    (
        {"type": "diffusion", "edges": 5},
        "diffusion kernel 'edges' must be a list of [i, j] vertex pairs",
    ),
]


@pytest.mark.parametrize(("spec", "message"), BAD_PARAMS)
def test_bad_kernel_parameters(spec, message):
    with pytest.raises(KernelError, match=f"^{re.escape(message)}"):
        make_kernel(spec)


def test_kernel_error_is_a_data_error():
    assert issubclass(KernelError, DataError) and issubclass(KernelError, ValueError)


def test_graph_and_precomputed_kernels_have_no_formula(outputs):
    A, _ = outputs
    for kernel in (DiffusionKernel([[0, 1]]), PrecomputedKernel()):
        assert kernel.needs_outputs is False
        with pytest.raises(KernelError, match=f"{kernel.name}|precomputed"):
            kernel.gram(A)
        with pytest.raises(KernelError):
            kernel.diag(A)
    assert LinearKernel.needs_outputs and RBFKernel.needs_outputs and PolynomialKernel.needs_outputs


def test_diffusion_edges_empty_and_check_vertices():
    empty = DiffusionKernel()
    assert empty.edges.shape == (0, 2) and empty.beta == 1.0
    empty.check_vertices(1)
    k = DiffusionKernel([[0, 1], [1, 2], [2, 3], [5, 400]])
    k.check_vertices(401)
    expected = (
        "edges[3] = [5, 400] refers to vertex 400 but there are 10 training vertices (indices 0..9)"
    )
    with pytest.raises(KernelError, match=f"^{re.escape(expected)}$"):
        k.check_vertices(10)
    with pytest.raises(KernelError, match=re.escape("edges[2] = [2, 3] refers to vertex 3")):
        k.check_vertices(3)


def test_repr_and_describe():
    assert repr(RBFKernel(gamma=0.5)) == "RBFKernel(gamma=0.5)"
    assert repr(LinearKernel()) == "LinearKernel()"
    assert repr(PolynomialKernel(3)) == "PolynomialKernel(degree=3, gamma=1.0, coef0=1.0)"
    d = DiffusionKernel([[0, 1], [1, 2], [2, 0]], beta=0.5)
    # no edge list in the summary: a graph can have millions of edges
    assert d.describe() == {"type": "diffusion", "beta": 0.5, "n_edges": 3}
    assert repr(d) == "DiffusionKernel(beta=0.5, n_edges=3)"


KERNEL_CLASSES = {"rbf": RBFKernel, "polynomial": PolynomialKernel, "diffusion": DiffusionKernel}


@pytest.mark.parametrize("kind", sorted(KERNEL_CLASSES))
def test_the_declared_parameters_are_the_ones_the_kernels_check(kind: str) -> None:
    """Every parameter of the constructor is declared with its default; a value just
    outside its declared range is refused, its bounds are accepted."""
    cls = KERNEL_CLASSES[kind]
    schemas = kernel_parameter_schema(kind)
    signature = inspect.signature(cls.__init__).parameters
    for name, schema in schemas.items():
        assert signature[name].default == schema["default"], (kind, name)
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema["maximum"]
        below = low - 1 if schema.get("exclusiveMinimum") is not None else low * 0.5 - 1e-300
        if schema["type"] == "integer":
            below = low - 1
        above = high + 1 if schema["type"] == "integer" else high * 2.0
        for value in (below, above):
            with pytest.raises(KernelError, match=repr(name)):
                cls(**{name: value})
        for value in (low if "minimum" in schema else high, high):
            kernel = cls(**{name: value})  # the bounds themselves are accepted
            assert isinstance(kernel, cls)
    assert set(schemas) == {p for p in signature if p not in ("self", "edges")}
