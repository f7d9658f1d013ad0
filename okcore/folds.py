"""Shuffled K-fold splits of a fit's rows: what the estimators that validate inside their own
fit (kernel ridge's width search, the multi-label thresholds, the automatic choice) and
:mod:`okcore.model_selection` share. A module of its own so that an estimator can split its
rows without importing model selection, which imports the estimators."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import check_random_state
from .exceptions import DataError


def positive_rows(n_samples: int, weight: np.ndarray | None) -> int:
    """The rows that can fit or validate: all ``n_samples``, or with sample ``weight`` those
    weighing > 0. O(n)."""
    return n_samples if weight is None else int(np.count_nonzero(weight > 0))


def kfold(
    n_samples: int, n_splits: int = 5, random_state: Any = None, weight: np.ndarray | None = None
) -> list[tuple]:
    """Shuffled K-fold splits of range(n_samples): a list of (train, test) index arrays.

    Fold sizes differ by at most one; every index is in exactly one test fold.

    ``weight`` (n_samples,), the rows' sample weights: when some are zero, the rows of
    positive weight, then those of zero weight, each group in a seeded random order, are
    dealt to the folds in turn, so every training side has positive weight (DataError
    unless at least 2 rows have it) and every test side too when at least ``n_splits``
    rows have it. Weights without zeros split as no weights, bit for bit.
    """
    if not isinstance(n_splits, int | np.integer) or n_splits < 2:
        raise DataError(f"n_splits must be an integer >= 2: got {n_splits!r}")
    if n_samples < n_splits:
        raise DataError(f"{n_splits}-fold CV needs at least {n_splits} samples: got {n_samples}")
    rng = check_random_state(random_state)
    n_positive = positive_rows(n_samples, weight)
    if weight is None or n_positive == n_samples:
        tests = np.array_split(rng.permutation(n_samples), n_splits)
    else:
        if n_positive < 2:
            raise DataError(
                f"{n_splits}-fold CV needs at least 2 rows with positive weight (each fold is "
                f"fitted on the others' rows): got {n_positive}; give more rows a positive "
                "sample_weight"
            )
        positive, zero = np.flatnonzero(weight > 0), np.flatnonzero(weight <= 0)
        order = np.concatenate([rng.permutation(positive), rng.permutation(zero)])
        tests = [order[k::n_splits] for k in range(n_splits)]
    return [
        (np.sort(np.concatenate(tests[:k] + tests[k + 1 :])), np.sort(tests[k]))
        for k in range(n_splits)
    ]
