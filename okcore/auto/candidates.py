"""The regression portfolio the automatic choice picks from (:func:`regression_candidates`).

Every candidate is an okcore estimator whose prediction is a combination of the training
outputs' features, F(x) = W^F(x) Phi, so W^F, predicted kernels and pre-images work for
each of them and for their averages:

- ``okboost``: ``OKBoostRegressor()`` as documented (its own defaults), the reference;
- ``oblivious-d4`` / ``oblivious-d6``: oblivious trees of depth 4 and 6, up to
  LONG_ROUNDS rounds, stopped early on the inner validation rows (patience PATIENCE);
- ``best-first-31``: best-first trees of 31 splits, up to LONG_ROUNDS rounds, stopped early;
- ``ok3-et-boost``: OK3 extra-trees boosted (``splitter="random"``, 10 splits), stopped early;
- ``kernel-ridge``: ``KernelRidgeRegressor(gamma="cv")`` (width and penalty by 3-fold CV;
  Nystrom with NYSTROM_COMPONENTS landmarks above EXACT_KRR_ROWS rows), refitted on all rows
  with the width and penalty it chose;
- ``kernel-ridge-ard``: ``KernelRidgeRegressor(gamma="ard")``, one RBF width per input by
  the Gaussian-process marginal likelihood (:mod:`okcore.kernel_models.ard`), the penalty by
  3-fold CV, refitted with the widths and penalty it chose;
- ``krr-boost``: ``kernel-ridge`` as the boosting's starting model F_0 (``init``,
  :mod:`okcore.boosting.start`), then oblivious trees of depth 4 fitting what it leaves,
  stopped early; refitted with the width, penalty and rounds it chose.

The rules (which candidates, the budget default, the halving factor) were chosen on the
choosing half of the regression problems of ``bench/auto_choice.py`` and are reported on
the other half (docs/results/auto-choice.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..boosting import OKBoostRegressor
from ..boosting.start import NOT_FOR_START
from ..kernel_models.ridge import KernelRidgeRegressor
from .engine import Candidate

#: Most rounds of the boosting candidates that stop early, and their patience.
LONG_ROUNDS = 2000
PATIENCE = 20
#: Exact kernel ridge up to this many rows (O(N^3)); Nystrom above.
EXACT_KRR_ROWS = 3000
NYSTROM_COMPONENTS = 1500
KRR_FOLDS = 3


def _boost(seed: int, **params: Any) -> OKBoostRegressor:
    return OKBoostRegressor(
        n_estimators=LONG_ROUNDS,
        early_stopping=True,
        n_iter_no_change=PATIENCE,
        random_state=seed,
        **params,
    )


def _widths(gamma: Any) -> float | list[float]:
    """RBF widths as a parameter: one number when every input has the same."""
    widths = [float(g) for g in np.ravel(gamma)]
    return widths[0] if len(set(widths)) == 1 else widths


def _krr_settled(models: Sequence[Any]) -> dict[str, Any]:
    """The widths and penalty the inner fits chose (the first fold's: each searched)."""
    model = models[0]
    return {"gamma": _widths(model.ensemble_.gamma), "alpha": model.alpha_}


def _start_settled(models: Sequence[Any]) -> dict[str, Any]:
    """The starting kernel ridge's width and penalty the inner fits chose (the first
    fold's), as the ``init`` of the refit."""
    model = models[0]
    start = dict(model.init.get_params())
    start.update(
        gamma=_widths(model.ensemble_.start.gamma),
        alpha=float(model.resolved_params_["init_alpha"]),
    )
    return {"init": {k: v for k, v in start.items() if k not in NOT_FOR_START}}


def regression_candidates(n_samples: int) -> list[Candidate]:
    """The candidates for a problem of ``n_samples`` training rows (module docstring); the
    first, ``OKBoostRegressor()``, is the fallback when the budget affords nothing else."""
    exact = n_samples <= EXACT_KRR_ROWS
    components = None if exact else NYSTROM_COMPONENTS

    def kernel_ridge(seed: int, gamma: str = "cv") -> KernelRidgeRegressor:
        return KernelRidgeRegressor(
            gamma=gamma, cv=KRR_FOLDS, n_components=components, random_state=seed
        )

    return [
        Candidate("okboost", lambda seed: OKBoostRegressor(random_state=seed)),
        Candidate(
            "oblivious-d4",
            lambda seed: _boost(seed, tree_type="oblivious", max_depth=4),
            early_stopping=True,
        ),
        Candidate(
            "oblivious-d6",
            lambda seed: _boost(seed, tree_type="oblivious", max_depth=6),
            early_stopping=True,
        ),
        Candidate(
            "best-first-31",
            lambda seed: _boost(seed, tree_type="best-first", max_splits=31),
            early_stopping=True,
        ),
        Candidate(
            "ok3-et-boost",
            lambda seed: _boost(seed, tree_type="best-first", splitter="random", max_splits=10),
            early_stopping=True,
        ),
        Candidate(
            "kernel-ridge",
            kernel_ridge,
            settle=_krr_settled,
            # the refit solves once what the CV solved for KRR_FOLDS folds x 5 widths
            refit_fraction=0.1,
        ),
        Candidate(
            "kernel-ridge-ard",
            lambda seed: kernel_ridge(seed, "ard"),
            settle=_krr_settled,
            # the refit solves once with the widths and the penalty chosen
            refit_fraction=0.1,
        ),
        Candidate(
            "krr-boost",
            lambda seed: _boost(seed, tree_type="oblivious", max_depth=4, init=kernel_ridge(seed)),
            early_stopping=True,
            settle=_start_settled,
            # the refit solves kernel ridge once, then grows the trees
            refit_fraction=0.5,
            interruptible=False,
        ),
    ]
