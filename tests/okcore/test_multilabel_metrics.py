"""Multi-label measures and average precision in okcore.metrics equal scikit-learn's where it
has them (ties, empty rows and all-relevant rows included); one-error against its definition."""

from __future__ import annotations

import numpy as np
import pytest

from okcore import metrics
from okcore.exceptions import DataError

skm = pytest.importorskip("sklearn.metrics")


def _labels_and_scores(seed: int, n: int = 60, n_labels: int = 7, tied: bool = False):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, n_labels)) < 0.35).astype(int)
    Y[0] = 0  # no relevant label
    Y[1] = 1  # every label relevant
    S = rng.random((n, n_labels))
    if tied:  # few distinct values: ties within rows
        S = np.round(S * 3) / 3
    return Y, S


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("tied", [False, True])
def test_score_measures_equal_sklearn(seed: int, tied: bool) -> None:
    Y, S = _labels_and_scores(seed, tied=tied)
    assert metrics.ranking_loss(Y, S) == pytest.approx(skm.label_ranking_loss(Y, S), abs=1e-12)
    assert metrics.coverage(Y, S) == pytest.approx(skm.coverage_error(Y, S), abs=1e-12)
    assert metrics.label_ranking_average_precision(Y, S) == pytest.approx(
        skm.label_ranking_average_precision_score(Y, S), abs=1e-12
    )


@pytest.mark.parametrize("seed", range(4))
def test_decision_measures_equal_sklearn(seed: int) -> None:
    Y, S = _labels_and_scores(seed)
    P = (S > 0.5).astype(int)
    P[:, -1] = 0
    Y[:, -1] = 0  # a label neither present nor predicted: F1 counts 0, as scikit-learn
    assert metrics.hamming_loss(Y, P) == pytest.approx(skm.hamming_loss(Y, P))
    assert metrics.subset_accuracy(Y, P) == pytest.approx(skm.accuracy_score(Y, P))
    assert metrics.micro_f1(Y, P) == pytest.approx(
        skm.f1_score(Y, P, average="micro", zero_division=0)
    )
    assert metrics.macro_f1(Y, P) == pytest.approx(
        skm.f1_score(Y, P, average="macro", zero_division=0)
    )


def test_one_error_definition() -> None:
    Y, S = _labels_and_scores(5)
    expected = np.mean([Y[i, np.argmax(S[i])] == 0 for i in range(len(Y))])
    assert metrics.one_error(Y, S) == pytest.approx(expected)
    assert metrics.one_error([[0, 1, 0]], [[0.1, 0.9, 0.2]]) == 0.0
    assert metrics.one_error([[1, 0, 0]], [[0.1, 0.9, 0.2]]) == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_average_precision_equals_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    t = rng.random(200) < 0.2
    s = np.round(rng.random(200), 1 if seed % 2 else 6)  # ties for odd seeds
    assert metrics.average_precision(s, t) == pytest.approx(
        skm.average_precision_score(t, s), abs=1e-12
    )


def test_bad_label_rows_are_refused() -> None:
    with pytest.raises(DataError, match="only 0 and 1"):
        metrics.hamming_loss([[0, 2]], [[0, 1]])
    with pytest.raises(DataError, match="differ in shape"):
        metrics.ranking_loss([[0, 1]], [[0.1, 0.2, 0.3]])
    with pytest.raises(DataError, match="at least one positive"):
        metrics.average_precision([0.1, 0.2], [0, 0])


@pytest.mark.parametrize("block_values", [49, 1, 10**6])
def test_ranking_measures_in_blocks_bounded_by_comparisons(block_values, monkeypatch) -> None:
    """Blocks of 4096 samples made 4 GB of label-pair comparisons at 1,000 labels (32 GB as
    ranking_loss's floats, in the server answering /evaluate): a block now holds at most
    PAIR_BLOCK_VALUES of them (one sample at least), with the same measures."""
    Y, S = _labels_and_scores(0, tied=True)  # 7 labels: 49 comparisons a sample
    monkeypatch.setattr(metrics, "PAIR_BLOCK_VALUES", block_values)
    sizes = [len(t) for _, t, _ in metrics._pair_counts(Y.astype(bool), S)]
    assert max(sizes) == max(1, min(len(Y), block_values // 49)) and sum(sizes) == len(Y)
    assert metrics.ranking_loss(Y, S) == pytest.approx(skm.label_ranking_loss(Y, S), abs=1e-12)
    assert metrics.label_ranking_average_precision(Y, S) == pytest.approx(
        skm.label_ranking_average_precision_score(Y, S), abs=1e-12
    )
