"""OutputSpace: factors of the Gram matrix, Gram validation, truncation, Nystrom embedding."""

from __future__ import annotations

import re

import numpy as np
import pytest
from okdata import laplacian_dense, rbf_gram, ring_edges
from scipy.linalg import expm

from okcore import (
    DataError,
    DiffusionKernel,
    KernelError,
    LinearKernel,
    OK3Regressor,
    OutputSpace,
    PolynomialKernel,
    PrecomputedKernel,
    RBFKernel,
    check_gram,
)
from okcore.outputs import space as space_module


@pytest.fixture
def outputs() -> np.ndarray:
    return np.random.default_rng(3).normal(size=(15, 3))


def spectrum_gram(eigenvalues, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A symmetric matrix with the given eigenvalues and a random orthonormal basis."""
    n = len(eigenvalues)
    Q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(n, n)))
    K = (Q * np.asarray(eigenvalues, float)) @ Q.T
    return (K + K.T) / 2.0, Q


# ---------------------------------------------------------------------- factors
def test_linear_space_uses_the_outputs_as_factor(outputs):
    space = OutputSpace.from_outputs(outputs)
    np.testing.assert_array_equal(space.phi, outputs)
    assert space.phi is not outputs  # a copy, not a view the caller could change
    assert space.eigenvalues is None and isinstance(space.kernel, LinearKernel)
    np.testing.assert_allclose(space.diag, np.sum(outputs**2, axis=1), rtol=1e-13)
    np.testing.assert_array_equal(space.outputs, outputs)
    assert (space.n_samples, space.rank) == (15, 3)


def test_one_dimensional_outputs_are_one_column(outputs):
    space = OutputSpace.from_outputs(outputs[:, 0])
    assert space.phi.shape == (15, 1) and space.outputs.shape == (15, 1)


@pytest.mark.parametrize(
    "kernel",
    [
        RBFKernel(gamma=0.3),
        {"type": "rbf", "sigma": 2.0},
        PolynomialKernel(degree=2, gamma=0.5, coef0=1.0),
        "polynomial",
    ],
)
def test_from_outputs_factor_reproduces_the_gram(outputs, kernel):
    space = OutputSpace.from_outputs(outputs, kernel)
    K = space.kernel.gram(outputs)
    np.testing.assert_allclose(space.phi @ space.phi.T, K, atol=1e-10 * np.abs(K).max())
    np.testing.assert_allclose(space.diag, space.kernel.diag(outputs), rtol=1e-14)
    lam = space.eigenvalues
    assert lam.shape == (space.rank,) and np.all(lam > 0) and np.all(np.diff(lam) <= 0)
    # columns of phi are orthogonal with squared norms equal to the eigenvalues
    np.testing.assert_allclose(space.phi.T @ space.phi, np.diag(lam), atol=1e-10 * lam[0])
    np.testing.assert_array_equal(space.outputs, outputs)


def test_rbf_factor_against_an_independent_gram(outputs):
    space = OutputSpace.from_outputs(outputs, {"type": "rbf", "gamma": 0.3})
    np.testing.assert_allclose(space.phi @ space.phi.T, rbf_gram(outputs, outputs, 0.3), atol=1e-10)


def test_polynomial_rank_is_the_feature_space_dimension(outputs):
    # (y.y')^2 on R^3 has a 6-dimensional feature space: the factor keeps exactly 6 columns
    space = OutputSpace.from_outputs(outputs, PolynomialKernel(degree=2, coef0=0.0))
    assert space.rank == 6


def test_linear_kernel_with_rank_uses_the_eigen_factor(outputs):
    space = OutputSpace.from_outputs(outputs, "linear", rank=2)
    assert space.rank == 2 and space.eigenvalues is not None
    lam = np.linalg.eigvalsh(outputs @ outputs.T)[::-1][:2]
    np.testing.assert_allclose(space.eigenvalues, lam, rtol=1e-10)


def test_from_gram(outputs):
    K = rbf_gram(outputs, outputs, 0.5)
    space = OutputSpace.from_gram(K)
    assert isinstance(space.kernel, PrecomputedKernel) and space.outputs is None
    np.testing.assert_allclose(space.phi @ space.phi.T, K, atol=1e-10)
    np.testing.assert_array_equal(space.diag, np.diag(K))


def test_from_gram_of_a_low_rank_matrix_drops_the_null_space(outputs):
    K = outputs @ outputs.T  # rank 3
    space = OutputSpace.from_gram(K)
    assert space.rank == 3
    np.testing.assert_allclose(space.phi @ space.phi.T, K, atol=1e-10 * np.abs(K).max())


# ---------------------------------------------------------------------- Gram validation
def test_gram_not_square():
    with pytest.raises(KernelError, match=r"^gram must be square: got 3 x 4$"):
        OutputSpace.from_gram(np.ones((3, 4)))
    with pytest.raises(KernelError, match=r"^gram must be square: got 2 x 2 x 2$"):
        OutputSpace.from_gram(np.ones((2, 2, 2)))
    with pytest.raises(KernelError, match=r"^gram must be square: got a scalar$"):
        OutputSpace.from_gram(1.0)
    with pytest.raises(KernelError, match=r"^gram is empty$"):
        OutputSpace.from_gram(np.ones((0, 0)))
    with pytest.raises(KernelError, match=r"^gram must be a numeric N x N matrix$"):
        OutputSpace.from_gram([["a", "b"], ["c", "d"]])


def test_gram_asymmetric_says_where_and_by_how_much():
    K = np.eye(4) * 2.0
    K[1, 3] = 0.5
    expected = (
        "gram is not symmetric: |K[1,3] - K[3,1]| = 0.5 (2.50e-01 of the largest entry; "
        "tolerance 1e-08)"
    )
    with pytest.raises(KernelError, match=f"^{re.escape(expected)}$"):
        OutputSpace.from_gram(K)


def test_gram_with_rounding_asymmetry_is_accepted_and_symmetrized(outputs):
    K = rbf_gram(outputs, outputs, 0.5)
    noisy = K.copy()
    noisy[0, 1] += 1e-12
    space = OutputSpace.from_gram(noisy)
    np.testing.assert_allclose(space.phi @ space.phi.T, K, atol=1e-10)


@pytest.mark.parametrize("rows", [1, 2, 3, 512])
def test_gram_checked_in_blocks_of_rows_finds_the_same_first_asymmetry(rows, monkeypatch):
    """check_gram compares GRAM_CHECK_ROWS rows with their columns at a time (|K| and
    K - K^T whole were two more N x N arrays): the same first largest asymmetry, in row
    order, and the same symmetrised matrix, whatever the block."""
    monkeypatch.setattr(space_module, "GRAM_CHECK_ROWS", rows)
    K = np.eye(5) * 2.0
    K[3, 1], K[0, 4] = 0.5, -0.5  # equal gaps: the first in row order is named
    with pytest.raises(KernelError, match=re.escape("|K[0,4] - K[4,0]| = 0.5")):
        check_gram(K)
    G = rbf_gram(np.arange(7.0)[:, None], np.arange(7.0)[:, None], 0.3)
    G[2, 5] += 1e-12
    np.testing.assert_array_equal(check_gram(G), (G + G.T) / 2.0)


def test_a_zero_gram_is_refused_saying_so():
    """An all-zero Gram of 7,000 rows failed the job with 'ArpackError: Starting vector is
    zero' (the low-rank factor's Lanczos run)."""
    with pytest.raises(
        KernelError,
        match=r"^gram is zero everywhere \(its largest eigenvalue is 0\): .*k\(y_i, y_j\)",
    ):
        OutputSpace.from_gram(np.zeros((6, 6)))


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_gram_not_finite(value):
    K = np.eye(3)
    K[2, 1] = K[1, 2] = value
    with pytest.raises(
        KernelError, match=re.escape("gram contains NaN or infinity (first at [1, 2])")
    ):
        OutputSpace.from_gram(K)


def test_gram_clearly_not_psd_gives_the_smallest_eigenvalue():
    K, _ = spectrum_gram([4.0, 2.0, 1.0, -1.0])
    expected = (
        "gram is not positive semi-definite: smallest eigenvalue -1 is 2.50e-01 of the largest "
        "(tolerance 1e-08)"
    )
    with pytest.raises(KernelError, match=f"^{re.escape(expected)}"):
        OutputSpace.from_gram(K)
    with pytest.raises(
        KernelError, match="^gram is not positive semi-definite: its largest eigenvalue is -1$"
    ):
        OutputSpace.from_gram(-np.eye(3))
    with pytest.raises(KernelError, match="its largest eigenvalue is 0"):
        OutputSpace.from_gram(np.zeros((3, 3)))


def test_tiny_negative_eigenvalues_are_accepted_and_clipped():
    K, Q = spectrum_gram([5.0, 2.0, 1.0, 0.0, -5e-14])
    space = OutputSpace.from_gram(K)
    assert space.rank == 3 and np.all(space.eigenvalues > 0)
    np.testing.assert_allclose(space.eigenvalues, [5.0, 2.0, 1.0], rtol=1e-12)
    np.testing.assert_allclose(space.phi @ space.phi.T, K, atol=1e-12)


# ---------------------------------------------------------------------- truncation
@pytest.mark.parametrize("rank", [2, 6])  # rank < n/4 uses Lanczos (eigsh), else a full eigh
def test_truncation_by_rank_keeps_the_largest_eigenpairs(rank):
    lam = np.array([9.0, 7.0, 5.0, 3.0, 2.0, 1.5, 1.0, 0.5, 0.25, 0.1, 0.05, 0.01])
    K, Q = spectrum_gram(lam, seed=2)
    space = OutputSpace.from_gram(K, rank=rank)
    assert space.phi.shape == (12, rank)
    np.testing.assert_allclose(space.eigenvalues, lam[:rank], rtol=1e-10)
    best = (Q[:, :rank] * lam[:rank]) @ Q[:, :rank].T  # the best rank-r approximation
    np.testing.assert_allclose(space.phi @ space.phi.T, best, atol=1e-10)
    np.testing.assert_array_equal(space.diag, np.diag(K))  # from K, not from the truncated phi


def test_truncation_by_tolerance():
    lam = np.array([10.0, 1.0, 1e-3, 1e-9, 1e-13, 0.0])
    K, _ = spectrum_gram(lam, seed=4)
    assert OutputSpace.from_gram(K, tol=1e-6).rank == 3
    assert OutputSpace.from_gram(K, tol=1e-11).rank == 4
    assert OutputSpace.from_gram(K, tol=1e-2, rank=1).rank == 1
    np.testing.assert_allclose(OutputSpace.from_gram(K, tol=1e-6).eigenvalues, lam[:3], rtol=1e-9)


# ---------------------------------------------------------------------- Nystrom embedding
@pytest.mark.parametrize("rank", [None, 4])
def test_embedding_training_outputs_gives_their_phi_rows(outputs, rank):
    space = OutputSpace.from_outputs(outputs, RBFKernel(gamma=0.4), rank=rank)
    phi, diag = space.embed(outputs)
    np.testing.assert_allclose(phi, space.phi, atol=1e-10)
    np.testing.assert_array_equal(diag, np.ones(len(outputs)))


@pytest.mark.parametrize(
    "kernel", [RBFKernel(gamma=0.4), PolynomialKernel(degree=3, gamma=0.3, coef0=1.0)]
)
def test_nystrom_inner_products_with_the_span_are_exact(outputs, kernel):
    space = OutputSpace.from_outputs(outputs, kernel)
    new = np.random.default_rng(9).normal(size=(6, 3))
    a = np.random.default_rng(10).normal(size=(4, len(outputs)))  # F_q = sum_i a_qi phi(y_i)
    F = a @ space.phi
    phi_new, diag_new = space.embed(new)
    exact = a @ kernel.gram(outputs, new)  # <F_q, phi(c)> from the kernel alone
    np.testing.assert_allclose(F @ phi_new.T, exact, atol=1e-9 * np.abs(exact).max())
    np.testing.assert_allclose(diag_new, kernel.diag(new), rtol=1e-14)
    # the projection never lengthens a vector: ||P phi(c)||^2 <= k(c, c)
    assert np.all(np.sum(phi_new**2, axis=1) <= diag_new * (1 + 1e-12))


def test_embed_gram_equals_embed(outputs):
    kernel = RBFKernel(gamma=0.4)
    space = OutputSpace.from_outputs(outputs, kernel)
    new = np.random.default_rng(9).normal(size=(6, 3))
    np.testing.assert_allclose(
        space.embed_gram(kernel.gram(new, outputs)), space.embed(new)[0], rtol=1e-14
    )


def test_linear_embedding(outputs):
    space = OutputSpace.from_outputs(outputs)
    new = np.random.default_rng(9).normal(size=(6, 3))
    phi, diag = space.embed(new)
    np.testing.assert_array_equal(phi, new)
    np.testing.assert_allclose(diag, np.sum(new**2, axis=1), rtol=1e-13)
    # from a Gram against the training outputs: coordinates c with Y c = g, i.e. c = y
    np.testing.assert_allclose(space.embed_gram(new @ outputs.T), new, atol=1e-12)


def test_embed_checks_the_candidates(outputs):
    space = OutputSpace.from_outputs(outputs, RBFKernel(gamma=0.4))
    with pytest.raises(DataError, match="^candidates have 2 columns but the outputs have 3$"):
        space.embed(outputs[:, :2])
    with pytest.raises(
        DataError, match=re.escape("candidates must be a 2-d array: got shape (3,)")
    ):
        space.embed(outputs[0])
    with pytest.raises(
        DataError,
        match=re.escape(
            "candidate_gram must have one column per training output (15): got shape (2, 14)"
        ),
    ):
        space.embed_gram(np.ones((2, 14)))
    single = OutputSpace.from_outputs(outputs[:, 0])
    assert single.embed(np.array([0.5, 1.5]))[0].shape == (2, 1)  # 1-d candidates, 1-d outputs
    gram_only = OutputSpace.from_gram(outputs @ outputs.T)
    with pytest.raises(DataError, match="a 'precomputed' output space cannot embed output vectors"):
        gram_only.embed(outputs)


# ---------------------------------------------------------------------- diffusion kernel
@pytest.mark.parametrize("beta", [0.3, 1.0])
def test_diffusion_factor_equals_the_matrix_exponential(beta):
    n = 12
    edges = np.r_[
        ring_edges(n, chords=4, seed=1), [[2, 2], [0, 1], [1, 0]]
    ]  # self-loop, duplicates
    kernel = DiffusionKernel(edges, beta=beta)
    space = OutputSpace.from_graph(kernel, n)
    expected = expm(-beta * laplacian_dense(edges, n))
    np.testing.assert_allclose(space.phi @ space.phi.T, expected, atol=1e-12)
    np.testing.assert_allclose(space.diag, np.diag(expected), atol=1e-12)
    assert space.kernel is kernel and space.outputs is None
    np.testing.assert_allclose(space.eigenvalues[0], 1.0, rtol=1e-12)  # exp(0): constant vector


def test_truncated_diffusion_factor_keeps_the_exact_diagonal():
    n, beta = 12, 0.5
    edges = ring_edges(n, chords=4, seed=1)
    K = expm(-beta * laplacian_dense(edges, n))
    space = OutputSpace.from_graph(DiffusionKernel(edges, beta=beta), n, rank=3)
    assert space.rank == 3
    lam, U = np.linalg.eigh(K)
    np.testing.assert_allclose(
        space.phi @ space.phi.T, (U[:, -3:] * lam[-3:]) @ U[:, -3:].T, atol=1e-12
    )
    np.testing.assert_allclose(space.diag, np.diag(K), atol=1e-12)  # k(v, v), not ||phi_v||^2
    assert np.all(space.diag > np.sum(space.phi**2, axis=1) + 1e-3)


def test_diffusion_on_a_graph_with_isolated_vertices():
    n = 6
    edges = np.array([[0, 1], [1, 2]])  # vertices 3, 4, 5 isolated
    space = OutputSpace.from_graph(DiffusionKernel(edges, beta=1.0), n)
    expected = expm(-laplacian_dense(edges, n))
    np.testing.assert_allclose(space.phi @ space.phi.T, expected, atol=1e-12)
    np.testing.assert_allclose(space.diag[3:], 1.0, rtol=1e-12)


def test_diffusion_edges_out_of_range_name_the_edge():
    kernel = DiffusionKernel([[0, 1], [1, 2], [2, 3], [5, 400], [7, 500]])
    expected = (
        "edges[3] = [5, 400] refers to vertex 400 but there are 10 training vertices (indices 0..9)"
    )
    with pytest.raises(KernelError, match=f"^{re.escape(expected)}$"):
        OutputSpace.from_graph(kernel, 10)
    X = np.random.default_rng(0).random((10, 2))
    with pytest.raises(KernelError, match=f"^{re.escape(expected)}$"):
        OK3Regressor().fit(X, kernel={"type": "diffusion", "edges": kernel.edges.tolist()})


def test_build_dispatch(outputs):
    K = rbf_gram(outputs, outputs, 0.5)
    assert isinstance(OutputSpace.build(15, outputs).kernel, LinearKernel)
    assert isinstance(OutputSpace.build(15, outputs, kernel="polynomial").kernel, PolynomialKernel)
    assert isinstance(OutputSpace.build(15, gram=K).kernel, PrecomputedKernel)
    assert isinstance(OutputSpace.build(15, gram=K, kernel="precomputed").kernel, PrecomputedKernel)
    graph = OutputSpace.build(15, kernel={"type": "diffusion", "edges": ring_edges(15)})
    assert isinstance(graph.kernel, DiffusionKernel) and graph.n_samples == 15
    with pytest.raises(KernelError, match="^the 'diffusion' kernel takes no outputs Y$"):
        OutputSpace.from_outputs(outputs, DiffusionKernel())


# ---------------------------------------------------------------------- subset
@pytest.mark.parametrize("kind", ["linear", "rbf", "gram", "graph"])
def test_subset_is_the_same_space_on_fewer_rows(outputs, kind):
    if kind == "linear":
        space = OutputSpace.from_outputs(outputs)
    elif kind == "rbf":
        space = OutputSpace.from_outputs(outputs, RBFKernel(gamma=0.4))
    elif kind == "gram":
        space = OutputSpace.from_gram(rbf_gram(outputs, outputs, 0.4))
    else:
        space = OutputSpace.from_graph(DiffusionKernel(ring_edges(15)), 15)
    rows = np.array([0, 3, 4, 9, 14])
    sub = space.subset(rows)
    np.testing.assert_array_equal(sub.phi, space.phi[rows])
    np.testing.assert_array_equal(sub.diag, space.diag[rows])
    assert sub.kernel is space.kernel and sub.n_samples == 5 and sub.rank == space.rank
    if space.outputs is None:
        assert sub.outputs is None
    else:
        np.testing.assert_array_equal(sub.outputs, outputs[rows])
    if space.eigenvalues is None:
        assert sub.eigenvalues is None
    else:
        np.testing.assert_array_equal(sub.eigenvalues, space.eigenvalues)
    # the parent is unchanged
    assert space.n_samples == 15


@pytest.mark.parametrize("kernel", [RBFKernel(gamma=0.4), PolynomialKernel(degree=2)])
def test_subset_embedding_is_exact_on_the_subset_span(outputs, kernel):
    """F built from the subset's rows must see exact inner products <F, phi(c)> = a k(Y_s, c)."""
    space = OutputSpace.from_outputs(outputs, kernel)
    rows = np.array([1, 2, 5, 7, 8, 11, 13])
    sub = space.subset(rows)
    new = np.random.default_rng(5).normal(size=(4, 3))
    a = np.random.default_rng(6).normal(size=(3, len(rows)))
    exact = a @ kernel.gram(outputs[rows], new)
    for phi_new in (sub.embed(new)[0], sub.embed_gram(kernel.gram(new, outputs[rows]))):
        np.testing.assert_allclose(
            (a @ sub.phi) @ phi_new.T, exact, atol=1e-9 * np.abs(exact).max()
        )
    # training rows of the subset embed to their own rows
    np.testing.assert_allclose(sub.embed(outputs[rows])[0], sub.phi, atol=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rank": 0}, "rank must be None or an int >= 1: got 0"),
        ({"rank": -2}, "rank must be None or an int >= 1: got -2"),
        ({"rank": 2.5}, "rank must be None or an int >= 1: got 2.5"),
        ({"tol": -1.0}, "tol must be a number in [0, 1): got -1.0"),
        ({"tol": 1.0}, "tol must be a number in [0, 1): got 1.0"),
        ({"tol": float("nan")}, "tol must be a number in [0, 1): got nan"),
    ],
)
def test_truncation_arguments_are_checked(outputs, kwargs, message):
    K = rbf_gram(outputs, outputs, 0.5)
    with pytest.raises(DataError, match=f"^{re.escape(message)}$"):
        OutputSpace.from_gram(K, **kwargs)
    with pytest.raises(DataError, match=f"^{re.escape(message)}$"):
        OutputSpace.from_outputs(outputs, RBFKernel(gamma=0.5), **kwargs)
    with pytest.raises(DataError, match=f"^{re.escape(message)}$"):
        OutputSpace.from_graph(DiffusionKernel(ring_edges(15)), 15, **kwargs)
    assert OutputSpace.from_gram(K, rank=np.int64(3)).rank == 3


def test_truncated_factor_still_rejects_a_clearly_non_psd_gram():
    """rank << N uses the Lanczos solver; the PSD check must not be skipped there."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((40, 40))
    K = A @ A.T
    K -= 5.0 * np.eye(40) * np.abs(np.linalg.eigvalsh(K)).max() / 40  # a clearly negative part
    with pytest.raises(KernelError, match="not positive semi-definite: smallest eigenvalue"):
        OutputSpace.from_gram(K, rank=3)


@pytest.mark.parametrize(
    ("kernel", "scale"),
    [
        (PolynomialKernel(degree=20, gamma=1e300), 1.0),
        (PolynomialKernel(degree=2), 1e200),
        (LinearKernel(), 1e160),
    ],
)
def test_kernel_overflow_on_the_outputs_is_a_kernel_error(outputs, kernel, scale):
    """k(y, y) beyond float64 (once, the Gram's eigendecomposition then failed with a
    bare ValueError, a 500 in the service): named, with what to change."""
    with pytest.raises(KernelError, match=f"the {kernel.name} kernel overflows on Y: k\\(y, y\\)"):
        OutputSpace.from_outputs(outputs * scale, kernel)
    space = OutputSpace.from_outputs(outputs, kernel if kernel.name == "linear" else "linear")
    with pytest.raises(KernelError, match="overflows on candidates"):
        space.embed(outputs * 1e160)


def test_the_low_rank_factor_does_not_depend_on_earlier_lanczos_runs() -> None:
    """Without a start vector ARPACK draws one from a generator that the process's earlier
    calls advance; seeded, a fit's factor is the same in any process (a joblib or Dask
    worker) and on any call."""
    from scipy.sparse.linalg import eigsh

    from okcore.outputs.space import factorize_gram

    A = np.random.default_rng(0).standard_normal((300, 300))
    K = A @ A.T
    first = factorize_gram(K, rank=10)
    eigsh(K, k=3, which="LA")  # advances ARPACK's own generator
    again = factorize_gram(K, rank=10)
    assert np.array_equal(first[0], again[0]) and np.array_equal(first[1], again[1])
