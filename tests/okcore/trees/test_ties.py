"""Equal split gains are broken by the stated rule (okcore.trees.splitter.beats), never by
rounding: the model does not depend on the output factor's column order, signs or rotation.

Two features that put the same training rows on each side of a small node give the same
gain in exact arithmetic; summed in another order (the factor's columns permuted or
rotated, rows sorted by another feature) they round differently, and before the tie rule
the search took whichever rounded up: the same graph given as a Gram matrix and as its
diffusion spec (factors with reversed column order and other signs) gave best-first models
whose predicted kernels differed by 2e-2 and whose W^F differed by 0.15, at the same
training loss. The sketched search of wide factors (the default beyond 8 columns) draws its
projection in the rows' space (okcore.trees.builder.sketch_projection), so another basis of
the same kernel is not another draw either.
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from okdata import ring_edges
from scipy.stats import ortho_group

from okcore import OKBoostRegressor
from okcore.outputs.graph import diffusion_gram
from okcore.threads import SERIAL, ChunkRunner
from okcore.trees.builder import SKETCH_RANGE_FACTOR, sketch_projection
from okcore.trees.splitter import TIE_ABSOLUTE, TIE_RELATIVE, beats

MODEL_TOLERANCE = 1e-10


def test_beats_is_a_relative_margin():
    assert beats(1.0 + 2e-9, 1.0)
    assert not beats(1.0 + 5e-10, 1.0)  # a tie: the first candidate stays
    assert not beats(1.0, 1.0 + 5e-10)
    assert not beats(1.0, 1.0)
    assert beats(2e-20 * (1 + 2e-9), 2e-20)  # scale free: tiny gains compare alike
    assert not beats(2e-20 * (1 + 5e-10), 2e-20)
    assert not beats(0.0, 0.0) and not beats(TIE_ABSOLUTE / 2, 0.0)
    assert beats(0.5, -0.5) and not beats(-0.5, 0.5)  # penalised gains may be negative
    assert TIE_RELATIVE == 1e-9


def assert_same_model(a, b, Xq):
    np.testing.assert_allclose(
        a.predict_weights(Xq), b.predict_weights(Xq), rtol=0, atol=MODEL_TOLERANCE
    )
    np.testing.assert_allclose(
        a.predict_kernel(Xq), b.predict_kernel(Xq), rtol=0, atol=MODEL_TOLERANCE
    )


def graph_problem(seed, n=60, p=5):
    rng = np.random.default_rng(seed)
    edges = ring_edges(n, chords=n // 4, seed=seed)
    X = rng.random((n, p))
    return X, edges, np.r_[X, rng.random((20, p))]


#: Best-first trees (exact search at this size, the histogram search with refined cuts, and
#: it sketched) and oblivious trees: every default (a graph's factor has N columns, so the
#: default search sketches them on 8 columns) and unsketched.
GROWTH = {
    "best-first exact": {"tree_type": "best-first"},
    "best-first refined histogram": {
        "tree_type": "best-first", "max_bins": 32, "refine_cuts": True, "leaf_order": "gain",
    },
    "best-first sketched histogram": {"tree_type": "best-first", "max_bins": 32, "sketch_dim": 8},
    "default": {},
    "oblivious unsketched": {"sketch_dim": None},
}  # fmt: skip


@pytest.mark.parametrize("growth", list(GROWTH))
@pytest.mark.parametrize("seed", [0, 1])
def test_a_graph_as_gram_or_diffusion_spec_gives_one_model(growth, seed):
    """The Gram matrix expm(-beta L) and the diffusion spec are factored from different
    matrices (K's eigenvectors in increasing order of K's eigenvalues, L's in increasing
    order of L's: reversed columns, other signs)."""
    X, edges, Xq = graph_problem(seed)
    spec = {"type": "diffusion", "beta": 0.7, "edges": edges}
    params = {"n_estimators": 50, "random_state": 0, **GROWTH[growth]}
    from_gram = OKBoostRegressor(**params).fit(X, gram=diffusion_gram(edges, len(X), 0.7))
    from_spec = OKBoostRegressor(**params).fit(X, kernel=spec)
    assert not np.allclose(from_gram.output_space_.phi, from_spec.output_space_.phi)
    if not params.keys() - {"n_estimators", "random_state"}:
        assert (from_gram.sketch_dim_, from_gram.output_space_.phi.shape[1]) == (8, len(X))
    assert_same_model(from_gram, from_spec, Xq)


def outputs_problem(seed, n=80, p=4, d=6):
    """Few distinct input values: cuts on different features often split a node alike."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.random((n, p)), 1)
    Y = np.c_[np.sin(3 * X[:, :2]), X[:, 2:] ** 2, X[:, :2].prod(1), np.cos(2 * X[:, 3])]
    Y = Y[:, :d] @ rng.standard_normal((d, d)) + 0.1 * rng.standard_normal((n, d))
    return X, Y, np.r_[X[:10], np.round(rng.random((10, p)), 2)]


ROTATION_GROWTH = {
    **GROWTH,
    "oblivious": {},  # d = 6 columns: the default search, no sketch
    "best-first random": {"tree_type": "best-first", "splitter": "random", "max_features": 3},
    "oblivious lambda": {"l2_regularization": 3.0, "refine_cuts": True},
}


@pytest.mark.parametrize("growth", list(ROTATION_GROWTH))
@pytest.mark.parametrize("seed", [0, 1])
def test_a_rotated_or_sign_flipped_factor_gives_one_model(growth, seed):
    """With the linear kernel the factor is Y itself: Y Q for an orthogonal Q (a random
    rotation, or column sign flips with the columns reversed) is the same kernel."""
    X, Y, Xq = outputs_problem(seed)
    d = Y.shape[1]
    rotation = ortho_group.rvs(d, random_state=seed)
    flips = np.diag(np.where(np.arange(d) % 2 == 0, -1.0, 1.0))[::-1]
    params = {"n_estimators": 40, "random_state": 0, **ROTATION_GROWTH[growth]}
    model = OKBoostRegressor(**params).fit(X, Y)
    for Q in (rotation, flips):
        assert_same_model(model, OKBoostRegressor(**params).fit(X, Y @ Q), Xq)


def wide_outputs_problem(seed, n=70, p=4, d=14):
    """outputs_problem with more columns than the default sketch (8) keeps."""
    X, Y, Xq = outputs_problem(seed, n, p)
    rng = np.random.default_rng(seed + 10)
    return (
        X,
        np.c_[Y, Y[:, :4] ** 2, np.sin(3 * Y[:, 2:6])] + 0.05 * rng.standard_normal((n, d)),
        Xq,
    )


#: Sketched searches: the default (oblivious trees, the sketch on 8 of the 14 columns), with
#: subsampled rows (the histograms read the drawn rows of the whole residual), and best-first
#: trees on the exact search (subsampled: the drawn rows' residual) and on histograms.
SKETCHED_GROWTH = {
    "default": {},
    "default subsampled": {"subsample": 0.7},
    "best-first exact sketched subsampled": {
        "tree_type": "best-first", "max_bins": None, "sketch_dim": 5, "subsample": 0.8,
    },
    "best-first histogram sketched": {"tree_type": "best-first", "max_bins": 16, "sketch_dim": 3},
}  # fmt: skip


@pytest.mark.parametrize("growth", list(SKETCHED_GROWTH))
@pytest.mark.parametrize("seed", [0, 1])
def test_a_sketched_search_does_not_depend_on_the_factor_basis(growth, seed):
    """The sketch's projection is drawn in the rows' space (from R^T G, G Gaussian over the
    fitted rows; 14 columns: the whole row space at the default k = 8, a range finder's 10 or
    6 leading directions at k = 5 or 3), so a rotation or sign flips of a factor wider than the sketch draw the same
    sketched residual; a projection drawn in the factor's coordinates gave W^F differing by
    0.05 on a graph."""
    X, Y, Xq = wide_outputs_problem(seed)
    d = Y.shape[1]
    rotation = ortho_group.rvs(d, random_state=seed)
    flips = np.diag(np.where(np.arange(d) % 3 == 0, -1.0, 1.0))[::-1]
    params = {"n_estimators": 40, "random_state": 0, **SKETCHED_GROWTH[growth]}
    model = OKBoostRegressor(**params).fit(X, Y)
    assert model.sketch_dim_ is not None and model.sketch_dim_ < d
    for Q in (rotation, flips):
        assert_same_model(model, OKBoostRegressor(**params).fit(X, Y @ Q), Xq)


def in_span(A, B):
    """Whether the columns of A lie in the span of the columns of B."""
    U, sv, _ = np.linalg.svd(B, full_matrices=False)
    basis = U[:, sv > 1e-9 * sv[0]]
    return np.allclose(basis @ (basis.T @ A), A, atol=1e-10)


def test_the_sketch_combines_the_residual_s_leading_directions():
    """sketch_projection: k Gaussian combinations of an orthonormal basis of R^T G (G over
    the fitted rows only, SKETCH_RANGE_FACTOR k columns), the same on any number of threads;
    a residual with fewer independent directions than that is sketched in its row space
    only (no arbitrary direction from rounding), and an all-zero one gives zeros."""
    rng = np.random.default_rng(0)
    R = rng.standard_normal((200, 30)) * np.geomspace(1, 1e-3, 30)
    rows = np.sort(rng.choice(200, 150, replace=False))
    k = 5
    Omega = sketch_projection(R, rows, k, np.random.default_rng(1), SERIAL)
    G = np.random.default_rng(1).standard_normal((150, SKETCH_RANGE_FACTOR * k))
    assert Omega.shape == (30, k) and in_span(Omega, R[rows].T @ G)
    other = R.copy()
    other[np.setdiff1d(np.arange(200), rows)] = 7.0  # the other rows are not read
    np.testing.assert_array_equal(
        sketch_projection(other, rows, k, np.random.default_rng(1), SERIAL), Omega
    )
    wide = rng.standard_normal((3000, 40))  # enough work (rows x r x L) for two threads
    with ThreadPoolExecutor(2) as pool:
        threaded = sketch_projection(wide, None, k, np.random.default_rng(1), ChunkRunner(pool, 2))
    np.testing.assert_array_equal(
        threaded, sketch_projection(wide, None, k, np.random.default_rng(1), SERIAL)
    )
    low_rank = R[:, :3] @ rng.standard_normal((3, 30))
    Omega = sketch_projection(low_rank, None, k, np.random.default_rng(2), SERIAL)
    assert np.linalg.matrix_rank(Omega, tol=1e-9) == 3 and in_span(Omega, low_rank.T)
    assert not sketch_projection(np.zeros((20, 12)), None, k, rng, SERIAL).any()
