"""Graph helpers: Laplacian, diffusion kernel, adjacency and edges from score matrices."""

from __future__ import annotations

import numpy as np
import pytest
from okdata import laplacian_dense, ring_edges
from scipy import sparse
from scipy.linalg import expm

from okcore import DataError, graph


def test_laplacian_by_hand_with_duplicates_and_self_loops():
    edges = [[0, 1], [1, 0], [0, 1], [2, 2], [1, 2]]
    L = graph.laplacian(edges, 4)
    assert sparse.issparse(L) and L.format == "csr" and L.shape == (4, 4)
    expected = np.array(
        [
            [1, -1, 0, 0],
            [-1, 2, -1, 0],
            [0, -1, 1, 0],
            [0, 0, 0, 0],
        ],
        dtype=float,
    )
    np.testing.assert_array_equal(L.toarray(), expected)


def test_laplacian_matches_a_loop_construction():
    edges = ring_edges(9, chords=6, seed=3)
    L = graph.laplacian(edges, 9).toarray()
    np.testing.assert_array_equal(L, laplacian_dense(edges, 9))
    np.testing.assert_allclose(L.sum(axis=1), 0.0)  # rows of a Laplacian sum to zero


def test_laplacian_of_no_edges_and_only_self_loops():
    np.testing.assert_array_equal(graph.laplacian(np.zeros((0, 2)), 3).toarray(), np.zeros((3, 3)))
    np.testing.assert_array_equal(graph.laplacian([[1, 1]], 3).toarray(), np.zeros((3, 3)))


@pytest.mark.parametrize("edges", [[[0, 4]], [[-1, 2]], [[0, 1], [3, 7]]])
def test_laplacian_rejects_vertices_out_of_range(edges):
    with pytest.raises(DataError, match=r"^edges refer to vertices outside 0\.\.3$"):
        graph.laplacian(edges, 4)


@pytest.mark.parametrize("beta", [0.1, 1.0, 2.5])
def test_diffusion_gram_is_the_matrix_exponential(beta):
    edges = ring_edges(10, chords=5, seed=0)
    K = graph.diffusion_gram(edges, 10, beta)
    np.testing.assert_allclose(K, expm(-beta * laplacian_dense(edges, 10)), atol=1e-12)
    np.testing.assert_allclose(K, K.T, atol=0)  # symmetric by construction
    assert np.all(np.linalg.eigvalsh(K) > 0)
    # heat is conserved: K 1 = 1 because L 1 = 0
    np.testing.assert_allclose(K.sum(axis=1), 1.0, atol=1e-12)


def test_diffusion_gram_default_beta():
    edges = [[0, 1], [1, 2]]
    np.testing.assert_allclose(
        graph.diffusion_gram(edges, 3), expm(-laplacian_dense(np.array(edges), 3))
    )


def test_adjacency():
    A = graph.adjacency([[0, 1], [1, 0], [2, 2], [3, 1], [0, 1]], 5)
    expected = np.zeros((5, 5), dtype=np.int8)
    expected[0, 1] = expected[1, 0] = expected[1, 3] = expected[3, 1] = 1
    assert A.dtype == np.int8
    np.testing.assert_array_equal(A, expected)


# ---------------------------------------------------------------------- edges from scores
S_RECT = np.array(
    [
        [0.9, 0.1, 0.5],
        [0.2, 0.8, 0.3],
    ]
)
S_SQUARE = np.array(
    [
        [9.0, 1.0, 5.0, 2.0],
        [1.0, 9.0, 3.0, 4.0],
        [5.0, 3.0, 9.0, 0.0],
        [2.0, 4.0, 0.0, 9.0],
    ]
)


def test_edges_by_threshold():
    assert graph.edges_from_scores(S_RECT, threshold=0.3) == [
        (0, 0, 0.9),
        (1, 1, 0.8),
        (0, 2, 0.5),
        (1, 2, 0.3),  # the threshold is inclusive
    ]
    assert graph.edges_from_scores(S_RECT, threshold=1.0) == []


def test_edges_by_top_k():
    assert graph.edges_from_scores(S_RECT, top_k=1) == [(0, 0, 0.9), (1, 1, 0.8)]
    assert graph.edges_from_scores(S_RECT, top_k=2) == [
        (0, 0, 0.9),
        (1, 1, 0.8),
        (0, 2, 0.5),
        (1, 2, 0.3),
    ]
    everything = graph.edges_from_scores(S_RECT, top_k=10)  # more than there are columns
    assert len(everything) == 6 and everything[-1] == (0, 1, 0.1)


def test_edges_by_threshold_and_top_k():
    # an edge must pass both: row 1's second best (0.3) is under the threshold
    assert graph.edges_from_scores(S_RECT, threshold=0.4, top_k=2) == [
        (0, 0, 0.9),
        (1, 1, 0.8),
        (0, 2, 0.5),
    ]


def test_symmetric_edges_are_upper_pairs_without_self_pairs():
    assert graph.edges_from_scores(S_SQUARE, threshold=3.0, symmetric=True) == [
        (0, 2, 5.0),
        (1, 3, 4.0),
        (1, 2, 3.0),
    ]
    # the diagonal (9) never counts as a neighbour, and an edge is kept once (a < b)
    assert graph.edges_from_scores(S_SQUARE, top_k=1, symmetric=True) == [(0, 2, 5.0), (1, 3, 4.0)]
    assert graph.edges_from_scores(S_SQUARE, top_k=2, symmetric=True) == [
        (0, 2, 5.0),
        (1, 3, 4.0),
        (1, 2, 3.0),
        (0, 3, 2.0),  # row 0's second best; kept because top-k may come from either side
    ]
    assert graph.edges_from_scores(S_SQUARE, threshold=3.5, top_k=2, symmetric=True) == [
        (0, 2, 5.0),
        (1, 3, 4.0),
    ]
    everything = graph.edges_from_scores(S_SQUARE, threshold=-1.0, symmetric=True)
    assert sorted((a, b) for a, b, _ in everything) == [
        (0, 1),
        (0, 2),
        (0, 3),
        (1, 2),
        (1, 3),
        (2, 3),
    ]


def test_without_symmetric_the_diagonal_is_an_ordinary_pair():
    assert graph.edges_from_scores(S_SQUARE, threshold=8.0) == [
        (0, 0, 9.0),
        (1, 1, 9.0),
        (2, 2, 9.0),
        (3, 3, 9.0),
    ]


def test_ties_keep_row_major_order():
    S = np.ones((2, 2))
    assert graph.edges_from_scores(S, threshold=1.0) == [
        (0, 0, 1.0),
        (0, 1, 1.0),
        (1, 0, 1.0),
        (1, 1, 1.0),
    ]


def test_edge_tuples_are_python_scalars():
    a, b, s = graph.edges_from_scores(S_RECT, top_k=1)[0]
    assert type(a) is int and type(b) is int and type(s) is float


def test_edges_from_scores_errors():
    with pytest.raises(DataError, match=r"^scores must be a 2-d matrix: got shape \(3,\)$"):
        graph.edges_from_scores(np.ones(3), threshold=0.5)
    with pytest.raises(DataError, match="^give a threshold or top_k to turn scores into edges$"):
        graph.edges_from_scores(S_RECT)
    with pytest.raises(DataError, match=r"^symmetric scores must be square: got shape \(2, 3\)$"):
        graph.edges_from_scores(S_RECT, threshold=0.0, symmetric=True)


@pytest.mark.parametrize("top_k", [0, -1, 1.5, True])
def test_edges_from_scores_rejects_a_bad_top_k(top_k):
    with pytest.raises(DataError, match=f"^top_k must be an int >= 1: got {top_k!r}$"):
        graph.edges_from_scores(S_RECT, top_k=top_k)
