"""The model :class:`~okcore.bipartite.BipartiteRegressor` fits when none is named: a
weighted rank average (:mod:`okcore.bipartite.ensemble`) of four models that lead the
published drug-target tables, each with its own combination for new x new pairs:

- "wknnir" (weight 1): weighted k-nearest neighbours on the recovered interactions (WkNNIR:
  k = 7, eta = 0.8 for both the recovery and the prediction;
  :mod:`okcore.bipartite.neighbours`);
- "krr_recovered" (weight 1): one exact kernel ridge regression per side (alpha 1) on the
  recovered interactions, Kronecker kernel ridge regression for new x new pairs (a Kronecker
  / two-step hybrid);
- "nrlmf" (weight 2): neighbourhood-regularised logistic matrix factorisation
  (:mod:`okcore.bipartite.nrlmf`; 50 factors, c = 5, ridge 0.1, neighbourhood weights 1,
  5 neighbours, a new vertex's latent vector from its 5 nearest with decay 0.5);
- "ok3et_okboost_recovered" (weight 1): OK3-et + OKBoost (extra-trees splits, 300 rounds,
  learning rate 0.05, 10 splits per tree) on the recovered interactions, two-step new x new.

Each member scores the block asked for and the scores are rank-averaged: a score orders the
pairs of one call (module :mod:`okcore.bipartite.ensemble`), it is not a probability. New
rows x known columns (on the drug-target sets: new targets) are scored by NRLMF (weight 4)
and OK3-et + OKBoost (weight 1) only (:data:`okcore.defaults.BIPARTITE_BLOCK_WEIGHTS`).

How it was chosen: the members, their settings, the weights and rank (not score) averaging
were chosen on the GPCR and ion-channel sets of the Yamanishi (2008) gold standard (inductive
K x K cross-validation); the nuclear-receptor and enzyme sets were held out
(docs/results/drug-target-methods.md). There the first three members averaged were at or
above the previous default (the best of five candidates per block by inner 2 x 2
cross-validation) in 11 of 12 cells, and at or above a per-block choice by inner 2 x 2
cross-validation among NRLMF, WkNNIR, the recovered kernel ridge and their average in 10 of
12; adding OK3-et + OKBoost raised 8 of the 12 cells (ion-channel new drugs AUROC 0.742 ->
0.755) and lowered 3, by at most 0.005. The new-row weights were chosen on the same two sets
(a grid of 0 to 4 per member and block): they raised GPCR new-target AUROC from 0.873 to
0.891 and ion-channel from 0.930 to 0.934, and lowered GPCR new-target AP from 0.517 to 0.507
(ion channels 0.765 -> 0.763). Measured there and not adopted: further similarity views per
side (cosine or correlation of similarity profiles, their average with the similarity,
kNN-sparsified similarities) for every member, alone or as extra members; output kernels
through the other side's similarity and a Gaussian (interaction-profile) output kernel for
the boosted trees; NRLMF averaged over seeds. On the held-out sets the new-row weights
raised new-target AUROC (nuclear receptors 0.730 -> 0.777, enzymes 0.944 -> 0.949) and
lowered new-target AP (0.432 -> 0.424, 0.783 -> 0.782). NRLMF's decay for new vertices (0.5)
was chosen on the same two sets (a grid of neighbours, decay, ridge and neighbourhood
weight): it raised GPCR new-target AP from 0.509 to 0.545; on the held-out sets it raised
the new-target cells (nuclear receptors AUROC 0.777 -> 0.799, AP 0.424 -> 0.439) and lowered
nuclear-receptor new-drug AUROC from 0.854 to 0.851.

Cost: four fits, no inner cross-validation: two O(n^3) linear-algebra models per side, 100
NRLMF sweeps of O(n_rows n_cols r), and the boosted trees, which dominate (about 10x the CPU
of the other three members together).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import defaults
from ..boosting import OKBoostRegressor
from ..kernel_models.ridge import KernelRidgeRegressor
from .ensemble import RankAveragedBipartite
from .neighbours import NeighbourRegressor
from .nrlmf import NRLMF


def kernel_ridge(inputs: str) -> KernelRidgeRegressor:
    """One exact kernel ridge regression (alpha 1) on a side's similarity (a precomputed
    input kernel) or on its features (RBF kernel with Sun & Yao's width)."""
    if inputs == "similarity":
        return KernelRidgeRegressor(alpha=1.0, input_kernel="precomputed")
    return KernelRidgeRegressor(alpha=1.0, input_kernel="rbf", gamma="auto")


def default_members(
    inputs: str, random_state: Any = 0, *, bipartite: Callable[..., Any]
) -> dict[str, Any]:
    """The members of the default (module docstring) for feature or similarity inputs, all
    but NRLMF built by ``bipartite`` (the :class:`~okcore.bipartite.BipartiteRegressor`
    class, passed in so that this module does not import the module that uses it)."""
    precomputed = inputs == "similarity"
    recovery: dict[str, Any] = {
        "recovery_neighbors": defaults.BIPARTITE_NEIGHBORS,
        "recovery_eta": defaults.BIPARTITE_ETA,
    }
    common: dict[str, Any] = {"inputs": inputs, "random_state": random_state}
    neighbours = NeighbourRegressor(
        defaults.BIPARTITE_NEIGHBORS,
        defaults.BIPARTITE_ETA,
        "precomputed" if precomputed else "cosine",
    )
    return {
        "wknnir": bipartite(neighbours, **recovery, **common),
        "krr_recovered": bipartite(
            kernel_ridge(inputs),
            new_pairs="kronecker",
            pair_kernel="precomputed" if precomputed else "linear",
            **recovery,
            **common,
        ),
        "nrlmf": NRLMF(**defaults.BIPARTITE_NRLMF, inputs=inputs, random_state=random_state),
        "ok3et_okboost_recovered": bipartite(
            OKBoostRegressor(
                splitter="random",
                n_estimators=300,
                learning_rate=0.05,
                max_splits=10,
                random_state=random_state,
            ),
            **recovery,
            **common,
        ),  # fmt: skip
    }


def default_model(
    inputs: str, random_state: Any = 0, *, bipartite: Callable[..., Any]
) -> RankAveragedBipartite:
    """The model :class:`~okcore.bipartite.BipartiteRegressor` fits when none is named: the
    rank average of :func:`default_members` with :data:`okcore.defaults.BIPARTITE_WEIGHTS`, and
    :data:`okcore.defaults.BIPARTITE_BLOCK_WEIGHTS` for new rows."""
    members = default_members(inputs, random_state, bipartite=bipartite)
    return RankAveragedBipartite(
        list(members.values()),
        list(defaults.BIPARTITE_WEIGHTS),
        {block: list(w) for block, w in defaults.BIPARTITE_BLOCK_WEIGHTS.items()},
    )
