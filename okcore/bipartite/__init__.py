"""Bipartite networks (drug-target, protein-ligand, user-item): two one-sided output-kernel
models, their combination for pairs of new vertices, weighted nearest neighbours and the
recovery of unlabelled interactions, neighbourhood-regularised logistic matrix factorisation
(NRLMF), rank averaging of bipartite models (the default), and K x K cross-validation with
AUROC and average precision per block; unknown pairs (NaN in the interaction matrix) are
kept apart from non-interactions in training and in scores. Every model estimates its fit
before it starts (``estimate_cost``, an :class:`~okcore.cost.BipartiteCost`;
:mod:`okcore.bipartite.cost`)."""

from .ensemble import RankAveragedBipartite
from .model import NEW_PAIR_METHODS, BipartiteRegressor
from .neighbours import NeighbourRegressor, neighbour_weights, recover_interactions
from .nrlmf import NRLMF
from .pairs import PAIR_KERNELS, side_inputs
from .search import SEARCH_SCORES, BipartiteGridSearch
from .unknown import check_interactions, fill_unknown
from .validation import (
    BLOCKS,
    BipartiteCVResult,
    bipartite_cross_validate,
    block_scores,
    check_folds,
    degree_stratified_folds,
)

__all__ = [
    "BLOCKS",
    "NEW_PAIR_METHODS",
    "PAIR_KERNELS",
    "SEARCH_SCORES",
    "BipartiteCVResult",
    "BipartiteGridSearch",
    "BipartiteRegressor",
    "NRLMF",
    "NeighbourRegressor",
    "RankAveragedBipartite",
    "bipartite_cross_validate",
    "block_scores",
    "check_folds",
    "check_interactions",
    "degree_stratified_folds",
    "fill_unknown",
    "neighbour_weights",
    "recover_interactions",
    "side_inputs",
]
