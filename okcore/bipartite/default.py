"""The model :class:`~okcore.bipartite.BipartiteRegressor` chooses when none is named: the
best candidate per block by inner K x K cross-validation on the training network only.

The candidates (:func:`default_candidates`) are one-sided models that lead the published
drug-target tables, each with its own combination for new x new pairs:

- "wknnir": weighted k-nearest neighbours on the recovered interactions (WkNNIR: k = 7,
  eta = 0.8 for both the recovery and the prediction; :mod:`okcore.bipartite.neighbours`);
- "krr_recovered": one exact kernel ridge regression per side (alpha 1) on the recovered
  interactions, Kronecker kernel ridge regression for new x new pairs (a Kronecker /
  two-step hybrid: the one-sided blocks by two-step KRR, the new x new block by Kronecker
  KRR of the same recovered matrix);
- "ok3et_okboost_recovered": OK3-et + OKBoost (extra-trees splits, 300 rounds, learning rate
  0.05, 10 splits per tree) on the recovered interactions, two-step new x new;
- "wknnir_okboost": the average (:class:`~okcore.AveragedRegressor`) of the two models above
  on the recovered interactions, W^F the mean of theirs, two-step new x new;
- "krr": one exact kernel ridge regression per side on the interactions as given (the
  strong baseline of similarity data), two-step.

Selection (:class:`BlockSelection`): every candidate is cross-validated once on the training
rows x training columns (``n_folds`` x ``n_folds`` configurations, degree-stratified, seeded);
each block (new rows, new columns, new x new) takes the candidate with the best mean of AUROC
and average precision on that block (ties: the earlier candidate), and each distinct winner is
refitted once on every training vertex. A new-row query is then answered by the new-row
winner, and so on. Test vertices of an outer evaluation are never seen: the inner folds split
only what :meth:`BlockSelection.fit` receives. The list, k, eta and the rule were chosen on the
GPCR and ion-channel sets of the Yamanishi (2008) gold standard; the nuclear-receptor and
enzyme sets were held out (docs/results/drug-target-methods.md). Comparing profiles through
the other side's similarity (``output_similarity``) was measured there for OK3-et + OKBoost
and left out: it moved the twelve GPCR and ion-channel cells by -0.010 to +0.009, -0.001 on
average.

Cost: (n_folds^2 + 1) fits of each candidate plus one refit per distinct winner; the
neighbour and kernel ridge candidates are O(n^3) linear algebra, the boosted trees dominate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .._validation import check_is_fitted
from ..averaging import AveragedRegressor
from ..boosting import OKBoostRegressor
from ..kernel_models.ridge import KernelRidgeRegressor
from ..meta import clone
from .neighbours import NeighbourRegressor
from .validation import BLOCKS, bipartite_cross_validate

#: Neighbours and decay of the default's recovery and WkNN.
DEFAULT_NEIGHBORS, DEFAULT_ETA = 7, 0.8


def default_candidates(
    inputs: str, random_state: Any = 0, *, bipartite: Callable[..., Any]
) -> dict[str, Any]:
    """The candidates of the default (module docstring), for feature or similarity inputs
    ("similarity": the kernel ridge models take the similarity as a precomputed input kernel
    and the neighbours read it directly; "features": RBF kernel with Sun & Yao's width and
    cosine neighbours), each built by ``bipartite`` (the
    :class:`~okcore.bipartite.BipartiteRegressor` class, passed in so that this module does
    not import the module that uses it)."""
    precomputed = inputs == "similarity"

    def krr() -> KernelRidgeRegressor:
        if precomputed:
            return KernelRidgeRegressor(alpha=1.0, input_kernel="precomputed")
        return KernelRidgeRegressor(alpha=1.0, input_kernel="rbf", gamma="auto")

    recovery: dict[str, Any] = {
        "recovery_neighbors": DEFAULT_NEIGHBORS,
        "recovery_eta": DEFAULT_ETA,
    }
    common: dict[str, Any] = {"inputs": inputs, "random_state": random_state}
    neighbours = NeighbourRegressor(
        DEFAULT_NEIGHBORS, DEFAULT_ETA, "precomputed" if precomputed else "cosine"
    )
    boost = OKBoostRegressor(
        splitter="random", n_estimators=300, learning_rate=0.05, max_splits=10,
        random_state=random_state,
    )  # fmt: skip
    return {
        "wknnir": bipartite(neighbours, **recovery, **common),
        "krr_recovered": bipartite(
            krr(),
            new_pairs="kronecker",
            pair_kernel="precomputed" if precomputed else "linear",
            **recovery,
            **common,
        ),
        "ok3et_okboost_recovered": bipartite(boost, **recovery, **common),
        "wknnir_okboost": bipartite(AveragedRegressor([neighbours, boost]), **recovery, **common),
        "krr": bipartite(krr(), **common),
    }


class BlockSelection:
    """Per block, the best of ``candidates`` by inner cross-validation (module docstring).

    Fitted attributes: ``leaderboard_`` (one dict per candidate: "candidate", the inner
    "<block>_auroc" / "<block>_ap" means, "cpu_s" of its inner cross-validation),
    ``chosen_`` ({block: candidate name}), ``block_models_`` ({block: the winner refitted on
    all training vertices}; one fitted object per distinct winner).
    """

    def __init__(
        self, candidates: dict[str, Any], inputs: str, n_folds: int = 2, random_state: Any = 0
    ) -> None:
        self.candidates = candidates
        self.inputs = inputs
        self.n_folds = n_folds
        self.random_state = random_state

    def fit(self, X_rows: Any, X_cols: Any, Y: np.ndarray) -> BlockSelection:
        self.leaderboard_: list[dict[str, Any]] = []
        for name, candidate in self.candidates.items():
            start = time.process_time()
            result = bipartite_cross_validate(
                candidate, X_rows, X_cols, Y, n_folds=self.n_folds,
                row_inputs=self.inputs, col_inputs=self.inputs, random_state=self.random_state,
            )  # fmt: skip
            entry: dict[str, Any] = {"candidate": name}
            for block in BLOCKS:
                for measure in ("auroc", "ap"):
                    entry[f"{block}_{measure}"] = result.mean(block, measure)
            entry["cpu_s"] = time.process_time() - start
            self.leaderboard_.append(entry)
        self.chosen_ = {block: self._best(block) for block in BLOCKS}
        fitted: dict[str, Any] = {}
        for name in dict.fromkeys(self.chosen_.values()):
            fitted[name] = clone(self.candidates[name]).fit(X_rows, X_cols, Y)
        self.block_models_ = {block: fitted[name] for block, name in self.chosen_.items()}
        return self

    def _best(self, block: str) -> str:
        """The candidate with the best mean of AUROC and AP on ``block`` (NaN counts as the
        worst; ties: the earlier candidate)."""

        def score(entry: dict[str, Any]) -> float:
            value = 0.5 * (entry[f"{block}_auroc"] + entry[f"{block}_ap"])
            return float(value) if np.isfinite(value) else -np.inf

        best = max(range(len(self.leaderboard_)), key=lambda i: (score(self.leaderboard_[i]), -i))
        return str(self.leaderboard_[best]["candidate"])

    def model(self, block: str) -> Any:
        check_is_fitted(self, "block_models_")
        return self.block_models_[block]
