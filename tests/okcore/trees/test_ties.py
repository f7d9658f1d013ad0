"""Equal split gains are broken by the stated rule (okcore.trees.splitter.beats), never by
rounding: the model does not depend on the output factor's column order, signs or rotation.

Two features that put the same training rows on each side of a small node give the same
gain in exact arithmetic; summed in another order (the factor's columns permuted or
rotated, rows sorted by another feature) they round differently, and before the tie rule
the search took whichever rounded up: the same graph given as a Gram matrix and as its
diffusion spec (factors with reversed column order and other signs) gave best-first models
whose predicted kernels differed by 2e-2 and whose W^F differed by 0.15, at the same
training loss.
"""

import numpy as np
import pytest
from okdata import ring_edges
from scipy.stats import ortho_group

from okcore import OKBoostRegressor
from okcore.outputs.graph import diffusion_gram
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


#: Best-first trees (exact search at this size, and the histogram search with refined cuts)
#: and oblivious trees with every default but the sketch: a graph's factor has N columns, and
#: the default search of more than 8 columns sketches them with a Gaussian projection drawn in
#: the factor's coordinates, which another basis of the same kernel sees as another draw.
GROWTH = {
    "best-first exact": {"tree_type": "best-first"},
    "best-first refined histogram": {
        "tree_type": "best-first", "max_bins": 32, "refine_cuts": True, "leaf_order": "gain",
    },
    "oblivious": {"sketch_dim": None},
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
