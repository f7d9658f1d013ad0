"""Pre-image decoding (paper eq. 8): squared feature-space distances and the top-k candidates."""

from __future__ import annotations

import numpy as np
import pytest

from okcore.outputs import preimage


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    F = rng.normal(size=(10, 3))
    cand = rng.normal(size=(8, 3))  # linear factor: phi(c) = c, k(c, c) = ||c||^2
    return F, cand, np.sum(cand**2, axis=1)


def test_squared_distances(problem):
    F, cand, diag = problem
    expected = np.array([[np.sum((c - f) ** 2) for c in cand] for f in F])
    np.testing.assert_allclose(preimage.squared_distances(F, cand, diag), expected, atol=1e-12)


@pytest.mark.parametrize("top_k", [1, 3, 7, 8, 20])
def test_decode_returns_the_closest_candidates_ascending(problem, top_k):
    F, cand, diag = problem
    D = preimage.squared_distances(F, cand, diag)
    indices, scores = preimage.decode(F, cand, diag, top_k)
    k = min(top_k, len(cand))
    assert indices.shape == scores.shape == (len(F), k)
    assert indices.dtype == np.int64 and scores.dtype == np.float64
    np.testing.assert_array_equal(indices, np.argsort(D, axis=1, kind="stable")[:, :k])
    np.testing.assert_array_equal(scores, np.take_along_axis(D, indices, 1))


def test_ties_keep_the_lower_index(problem):
    F, cand, diag = problem
    twice = np.r_[cand, cand]
    indices, _ = preimage.decode(F, twice, np.r_[diag, diag], 4)  # the argpartition path
    np.testing.assert_array_equal(indices[:, 1], indices[:, 0] + len(cand))
    np.testing.assert_array_equal(indices[:, 3], indices[:, 2] + len(cand))
    everything, _ = preimage.decode(F, twice, np.r_[diag, diag], 16)  # the full sort path
    np.testing.assert_array_equal(everything[:, :4], indices)


def test_chunked_queries_give_the_same_answer(problem, monkeypatch):
    F, cand, diag = problem
    whole = preimage.decode(F, cand, diag, 3)
    monkeypatch.setattr(preimage, "QUERY_CHUNK", 3)  # 10 queries in chunks of 3, 3, 3, 1
    chunked = preimage.decode(F, cand, diag, 3)
    np.testing.assert_array_equal(chunked[0], whole[0])
    # a BLAS product of another shape may round differently in the last bit
    np.testing.assert_allclose(chunked[1], whole[1], rtol=1e-14, atol=0)


def test_chunks_are_bounded_by_distances_whatever_the_candidates(problem, monkeypatch):
    """2048 queries per chunk against 100,000 training outputs held 4.9 GB of distances and
    temporaries in okcore's default predict: a chunk now holds at most CHUNK_VALUES of them."""
    assert preimage.chunk_rows(100_000) * 100_000 <= preimage.CHUNK_VALUES
    assert preimage.chunk_rows(10**9) == 1 and preimage.chunk_rows(8) == preimage.QUERY_CHUNK
    F, cand, diag = problem
    whole = preimage.decode(F, cand, diag, 3)
    monkeypatch.setattr(preimage, "CHUNK_VALUES", 20)  # 8 candidates: 2 queries a chunk
    assert preimage.chunk_rows(len(cand)) == 2
    chunked = preimage.decode(F, cand, diag, 3)
    np.testing.assert_array_equal(chunked[0], whole[0])
    np.testing.assert_allclose(chunked[1], whole[1], rtol=1e-14, atol=0)
