"""Low-rank output spaces without N x N work: Lanczos diffusion factors, their estimated
diagonal, Nystrom factors, the automatic switch above AUTO_RANK_MIN_SAMPLES, persistence."""

from __future__ import annotations

import re
import tracemalloc

import numpy as np
import pytest
from okdata import laplacian_dense, make_regression, ring_edges
from scipy.linalg import expm

from okcore import (
    DataError,
    DiffusionKernel,
    OKBoostRegressor,
    OutputSpace,
    PolynomialKernel,
    RBFKernel,
    graph,
    load,
    save,
)
from okcore.outputs import space
from okcore.outputs.space import estimate_factor_seconds


@pytest.fixture
def low_threshold(monkeypatch):
    """Low-rank paths from 20 outputs on (the real threshold is thousands)."""
    monkeypatch.setattr(space, "AUTO_RANK_MIN_SAMPLES", 20)
    monkeypatch.setattr(space, "AUTO_RANK", 6)
    monkeypatch.setattr(space, "AUTO_LANDMARKS", 12)


def dense_spectrum(edges, n, beta):
    lam, U = np.linalg.eigh(expm(-beta * laplacian_dense(edges, n)))
    return lam[::-1], U[:, ::-1]  # kernel eigenvalues, largest first


# ---------------------------------------------------------------------- diffusion, Lanczos
@pytest.mark.parametrize("rank", [3, 8, 15])
def test_lanczos_diffusion_factor_is_the_best_rank_k_approximation(low_threshold, rank):
    n, beta = 64, 0.7
    edges = ring_edges(n, chords=40, seed=2)
    K = expm(-beta * laplacian_dense(edges, n))
    s = OutputSpace.from_graph(DiffusionKernel(edges, beta=beta), n, rank=rank)
    assert s.rank == rank and not s.diag_exact
    lam, U = dense_spectrum(edges, n, beta)
    np.testing.assert_allclose(s.eigenvalues, lam[:rank], rtol=1e-10)
    E = K - s.phi @ s.phi.T
    # spectral norm = first dropped eigenvalue, trace = sum of the dropped ones
    assert np.linalg.norm(E, 2) <= lam[rank] * (1 + 1e-8)
    np.testing.assert_allclose(np.trace(E), lam[rank:].sum(), rtol=1e-8)
    np.testing.assert_allclose(s.trace_fraction, lam[:rank].sum() / np.trace(K), rtol=0.05)


def test_full_rank_diffusion_equals_the_dense_kernel(low_threshold):
    n = 40
    edges = ring_edges(n, chords=15, seed=4)
    s = OutputSpace.from_graph(DiffusionKernel(edges, beta=1.0), n, rank=n)  # rank >= N: exact
    np.testing.assert_allclose(s.phi @ s.phi.T, graph.diffusion_gram(edges, n, 1.0), atol=1e-10)
    assert s.diag_exact and s.trace_fraction == pytest.approx(1.0)


@pytest.mark.parametrize("rank", [2, 5, 9])
def test_lanczos_on_a_disconnected_graph(low_threshold, rank):
    # a 30-vertex ring, a 6-vertex path, and 4 isolated vertices: 0 has multiplicity 6
    n = 40
    edges = np.r_[ring_edges(30, chords=8, seed=1), [[30 + i, 31 + i] for i in range(5)]]
    lam_l, U = graph.smallest_eigenpairs(graph.laplacian(edges, n), rank)
    exact = np.linalg.eigvalsh(laplacian_dense(edges, n))
    np.testing.assert_allclose(lam_l, exact[:rank], atol=1e-10)
    np.testing.assert_allclose(U.T @ U, np.eye(rank), atol=1e-10)
    L = laplacian_dense(edges, n)
    np.testing.assert_allclose(L @ U, U * lam_l, atol=1e-9)
    s = OutputSpace.from_graph(DiffusionKernel(edges), n, rank=rank)
    lam, _ = dense_spectrum(edges, n, 1.0)
    assert np.linalg.norm(expm(-L) - s.phi @ s.phi.T, 2) <= lam[rank] * (1 + 1e-8)


def test_lanczos_is_deterministic(low_threshold):
    edges = ring_edges(50, chords=30, seed=7)
    a = OutputSpace.from_graph(DiffusionKernel(edges), 50, rank=6)
    b = OutputSpace.from_graph(DiffusionKernel(edges), 50, rank=6)
    np.testing.assert_array_equal(a.phi, b.phi)
    np.testing.assert_array_equal(a.diag, b.diag)


def test_estimated_diagonal_is_within_its_stated_tolerance(low_threshold):
    """32 probes: mean relative error below 15 %, and always inside the exact bounds."""
    n, beta, rank = 200, 1.0, 20
    edges = ring_edges(n, chords=150, seed=3)
    K = expm(-beta * laplacian_dense(edges, n))
    s = OutputSpace.from_graph(DiffusionKernel(edges, beta=beta), n, rank=rank)
    assert not s.diag_exact
    truth = np.diag(K)
    assert np.mean(np.abs(s.diag / truth - 1)) < 0.15
    kept = np.sum(s.phi**2, axis=1)
    lam, _ = dense_spectrum(edges, n, beta)
    assert np.all(s.diag >= kept) and np.all(s.diag <= kept + lam[rank] * (1 - kept) + 1e-12)
    # better than the truncated factor alone
    assert np.mean(np.abs(s.diag - truth)) < 0.5 * np.mean(truth - kept)
    dense = OutputSpace.from_graph(DiffusionKernel(edges, beta=beta), n, rank=n)
    assert dense.diag_exact
    np.testing.assert_allclose(dense.diag, truth, atol=1e-12)


# ---------------------------------------------------------------------- Nystrom
@pytest.mark.parametrize("kernel", [RBFKernel(gamma=0.3), PolynomialKernel(degree=2)])
def test_nystrom_with_every_landmark_is_exact(kernel):
    Y = np.random.default_rng(0).normal(size=(30, 3))
    s = OutputSpace.from_outputs(Y, kernel, n_landmarks=30, random_state=0)
    K = kernel.gram(Y)
    np.testing.assert_allclose(s.phi @ s.phi.T, K, atol=1e-8 * np.abs(K).max())
    assert s.trace_fraction == pytest.approx(1.0) and s.diag_exact
    np.testing.assert_allclose(s.phi.T @ s.phi, np.diag(s.eigenvalues), atol=1e-8 * K.max())


def test_nystrom_embeds_with_the_training_feature_map():
    kernel = RBFKernel(gamma=0.5)
    Y = np.random.default_rng(1).normal(size=(60, 2))
    s = OutputSpace.from_outputs(Y, kernel, n_landmarks=15, random_state=3)
    assert s.feature_map.shape == (15, s.rank) and s.landmarks.shape == (15, 2)
    np.testing.assert_array_equal(s.landmarks, Y[s.landmark_index])
    np.testing.assert_allclose(s.embed(Y)[0], s.phi, atol=1e-12)  # training rows reproduced
    new = np.random.default_rng(2).normal(size=(7, 2))
    phi_new, diag_new = s.embed(new)
    np.testing.assert_allclose(s.embed_gram(kernel.gram(new, Y)), phi_new, atol=1e-12)
    np.testing.assert_allclose(diag_new, 1.0)
    assert 0 < s.trace_fraction < 1
    # K - phi phi^T is PSD for Nystrom: no row longer than k(y, y)
    assert np.all(np.sum(s.phi**2, axis=1) <= s.diag + 1e-12)
    assert np.linalg.eigvalsh(kernel.gram(Y) - s.phi @ s.phi.T).min() > -1e-9
    # a subset keeps the map (its rows are not landmarks rows any more)
    sub = s.subset(np.arange(0, 60, 2))
    assert sub.landmark_index is None
    np.testing.assert_allclose(sub.embed(new)[0], phi_new, atol=1e-12)
    # same seed, same landmarks; another seed, others
    again = OutputSpace.from_outputs(Y, kernel, n_landmarks=15, random_state=3)
    np.testing.assert_array_equal(again.landmark_index, s.landmark_index)


def test_nystrom_rank_keeps_the_largest_directions():
    Y = np.random.default_rng(1).normal(size=(50, 3))
    full = OutputSpace.from_outputs(Y, RBFKernel(gamma=0.2), n_landmarks=25, random_state=0)
    cut = OutputSpace.from_outputs(Y, RBFKernel(gamma=0.2), n_landmarks=25, rank=5, random_state=0)
    assert cut.rank == 5 and cut.feature_map.shape == (25, 5)
    np.testing.assert_allclose(cut.eigenvalues, full.eigenvalues[:5], rtol=1e-10)
    assert cut.trace_fraction < full.trace_fraction <= 1.0


# ---------------------------------------------------------------------- automatic switch
def test_default_switches_to_low_rank_above_the_threshold(low_threshold):
    Y = np.random.default_rng(0).normal(size=(30, 3))
    rbf = OutputSpace.build(30, Y, kernel={"type": "rbf", "gamma": 0.5}, random_state=0)
    assert rbf.feature_map is not None and rbf.feature_map.shape[0] == 12 and rbf.rank <= 6
    linear = OutputSpace.build(30, Y)
    assert linear.eigenvalues is None and linear.feature_map is None  # phi = Y stays
    edges = ring_edges(30, chords=10)
    diff = OutputSpace.build(30, kernel={"type": "diffusion", "edges": edges})
    assert diff.rank == 6 and not diff.diag_exact
    gram = OutputSpace.build(30, gram=graph.diffusion_gram(edges, 30))
    assert gram.rank == 6 and gram.diag_exact and gram.trace_fraction < 1
    # rank >= N keeps the exact factor
    exact = OutputSpace.build(30, Y, kernel={"type": "rbf", "gamma": 0.5}, rank=30)
    assert exact.feature_map is None and exact.trace_fraction == pytest.approx(1.0)
    below = OutputSpace.build(20, Y[:20], kernel={"type": "rbf", "gamma": 0.5})
    assert below.feature_map is None  # N = threshold: exact


def test_linear_kernel_with_rank_needs_no_gram():
    Y = np.random.default_rng(0).normal(size=(40, 5))
    s = OutputSpace.from_outputs(Y, "linear", rank=3)
    lam, U = np.linalg.eigh(Y @ Y.T)
    best = (U[:, -3:] * lam[-3:]) @ U[:, -3:].T
    np.testing.assert_allclose(s.phi @ s.phi.T, best, atol=1e-10)
    np.testing.assert_allclose(s.trace_fraction, lam[-3:].sum() / np.trace(Y @ Y.T))


# ---------------------------------------------------------------------- persistence
@pytest.mark.parametrize("kernel", ["rbf", "diffusion"])
def test_low_rank_models_round_trip(low_threshold, tmp_path, kernel):
    X, Y = make_regression(n=40, p=3, seed=2)
    est = OKBoostRegressor(n_estimators=5, max_splits=3, random_state=0)
    if kernel == "rbf":  # Nystrom by the automatic switch
        est.fit(X, Y, kernel={"type": "rbf", "gamma": 0.5})
        assert est.output_space_.feature_map is not None
    else:
        est.set_params(factor_rank=5).fit(
            X, kernel={"type": "diffusion", "edges": ring_edges(40, chords=12)}
        )
        assert not est.output_space_.diag_exact
    loaded = load(save(est, tmp_path / "m"))
    a, b = est.output_space_, loaded.output_space_
    assert (b.trace_fraction, b.diag_exact) == (a.trace_fraction, a.diag_exact)
    for field in ("phi", "diag", "eigenvalues", "landmarks", "feature_map", "landmark_index"):
        want = getattr(a, field)
        if want is None:
            assert getattr(b, field) is None
        else:
            np.testing.assert_array_equal(getattr(b, field), want)
    Xq = np.random.default_rng(5).random((6, 3))
    np.testing.assert_array_equal(loaded.predict_kernel(Xq), est.predict_kernel(Xq))
    np.testing.assert_array_equal(loaded.predict(Xq), est.predict(Xq))
    if kernel == "rbf":
        cand = np.random.default_rng(6).normal(size=(5, 3))
        for got, want in zip(
            loaded.predict_index(Xq, cand, top_k=2),
            est.predict_index(Xq, cand, top_k=2),
            strict=True,
        ):
            np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------- bad values
@pytest.mark.parametrize("value", [0, -1, 31, 2.5, True])
def test_bad_n_landmarks(value):
    Y = np.random.default_rng(0).normal(size=(30, 2))
    expected = (
        f"n_landmarks must be None or an int in [1, 30] (at most the number of outputs): "
        f"got {value!r}"
    )
    with pytest.raises(DataError, match=f"^{re.escape(expected)}$"):
        OutputSpace.build(30, Y, kernel="polynomial", n_landmarks=value)


def test_n_landmarks_needs_output_vectors():
    edges = ring_edges(10)
    with pytest.raises(DataError, match="^n_landmarks .* not to the diffusion kernel: use rank"):
        OutputSpace.build(10, kernel={"type": "diffusion", "edges": edges}, n_landmarks=3)
    with pytest.raises(DataError, match="not to a precomputed Gram matrix"):
        OutputSpace.build(10, gram=graph.diffusion_gram(edges, 10), n_landmarks=3)


def test_rank_above_n_is_refused():
    Y = np.random.default_rng(0).normal(size=(10, 2))
    expected = "rank must be at most the number of outputs (10): got 11; rank = N keeps the exact"
    with pytest.raises(DataError, match=f"^{re.escape(expected)}"):
        OutputSpace.build(10, Y, kernel="polynomial", rank=11)
    with pytest.raises(DataError, match=re.escape(expected)):
        OutputSpace.build(10, kernel={"type": "diffusion", "edges": ring_edges(10)}, rank=11)
    with pytest.raises(DataError, match=re.escape(expected)):
        OutputSpace.build(10, gram=np.eye(10), rank=11)


# ---------------------------------------------------------------------- cost and memory
def test_cost_estimate():
    rbf = {"type": "rbf", "gamma": 1.0}
    assert estimate_factor_seconds(10_000, "linear", None, None) == 0.0
    dense = estimate_factor_seconds(3000, rbf, None, None)
    assert dense > estimate_factor_seconds(1000, rbf, None, None) > 0
    assert estimate_factor_seconds(100_000, rbf, None, 256) < dense
    diff = DiffusionKernel(ring_edges(50))
    assert 0 < estimate_factor_seconds(50_000, diff, 64, None, n_edges=300_000) < 1e3


def test_nystrom_allocates_nothing_n_by_n():
    """N = 20,000: an N x N float64 array would be 3.2 GB; the peak stays O(N m) (the
    diffusion path is measured at N = 20,000 by bench/lowrank_factors.py: Lanczos and the
    diagonal estimate take seconds there)."""
    n, m = 20_000, 64
    Y = np.random.default_rng(0).normal(size=(n, 2))
    tracemalloc.start()
    try:
        nys = OutputSpace.build(n, Y, kernel={"type": "rbf", "gamma": 1.0}, n_landmarks=m)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert nys.feature_map.shape[0] == m
    assert peak < 8 * n * m * 4  # a few N x m blocks, never N x N
