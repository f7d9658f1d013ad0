"""Shuffled K-fold splits of a fit's rows: what the estimators that validate inside their own
fit (kernel ridge's width search, the multi-label thresholds, the automatic choice) and
:mod:`okcore.model_selection` share. A module of its own so that an estimator can split its
rows without importing model selection, which imports the estimators."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import check_random_state
from .exceptions import DataError


def kfold(n_samples: int, n_splits: int = 5, random_state: Any = None) -> list[tuple]:
    """Shuffled K-fold splits of range(n_samples): a list of (train, test) index arrays.

    Fold sizes differ by at most one; every index is in exactly one test fold.
    """
    if not isinstance(n_splits, int | np.integer) or n_splits < 2:
        raise DataError(f"n_splits must be an integer >= 2: got {n_splits!r}")
    if n_samples < n_splits:
        raise DataError(f"{n_splits}-fold CV needs at least {n_splits} samples: got {n_samples}")
    order = check_random_state(random_state).permutation(n_samples)
    tests = np.array_split(order, n_splits)
    return [
        (np.sort(np.concatenate(tests[:k] + tests[k + 1 :])), np.sort(tests[k]))
        for k in range(n_splits)
    ]
