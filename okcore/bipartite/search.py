"""Hyperparameters of a bipartite model chosen by inner K x K cross-validation on the training
rows and columns only.

:class:`BipartiteGridSearch` is itself a bipartite model (fit(X_rows, X_cols, Y) and the three
predict_new_* methods), so :func:`okcore.bipartite.bipartite_cross_validate` can run it as the
outer loop: every outer configuration's grid search sees the learned rows x learned columns
(and, for similarity inputs, the similarity among them) and nothing else. Inside, the learned
vertices of each side are split again into degree-stratified folds and each candidate is scored
by :func:`okcore.bipartite.bipartite_cross_validate` on those; the best is refitted on all the
training rows and columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._validation import Options, RandomStateLike, check_is_fitted, validate_params
from ..meta import MetaEstimator, clone
from ..model_selection import parameter_grid
from .pairs import SIDE_INPUTS
from .validation import BLOCKS, bipartite_cross_validate

#: What the inner search maximises: a block's (or the mean over blocks, or pooled) measure.
SEARCH_SCORES = tuple(
    f"{block}_{measure}" for block in (*BLOCKS, "blocks", "pooled") for measure in ("auroc", "ap")
)


class BipartiteGridSearch(MetaEstimator):
    """The best of a grid of bipartite models by inner K x K cross-validation.

    Parameters
    ----------
    estimator : bipartite model
        A :class:`~okcore.bipartite.BipartiteRegressor` (or any model with its fit and
        predict_new_* methods and nested ``set_params``).
    param_grid : mapping of parameter name to candidate values
        Nested names as in scikit-learn (``row_estimator__learning_rate``); the grid is the
        product of the lists.
    n_folds : int or (int, int)
        Inner folds of rows and columns (2: four inner configurations per candidate).
    scoring : str
        One of :data:`SEARCH_SCORES`; default the AUROC averaged over the three blocks.
    row_inputs, col_inputs : {"features", "similarity"}
        How the inputs given to :meth:`fit` are sliced in the inner folds: "similarity" when
        they are the (n, n) similarity among the training vertices of that side.
    configurations : list of (row fold, column fold) or None
        A subset of the inner configurations (default all), to bound the cost.
    random_state : None or int
        Seeds the inner folds.

    Fitted attributes: ``best_params_``, ``best_score_``, ``cv_results_`` (list of
    {"params", "score"}), ``best_estimator_`` (refitted on every training row and column).
    Cost: (grid size x inner configurations + 1) fits of the estimator.
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "scoring": [Options(SEARCH_SCORES)],
        "row_inputs": [Options(SIDE_INPUTS)],
        "col_inputs": [Options(SIDE_INPUTS)],
        "random_state": [RandomStateLike()],
    }

    def __init__(
        self,
        estimator: Any,
        param_grid: Mapping[str, Sequence[Any]],
        *,
        n_folds: int | tuple[int, int] = 2,
        scoring: str = "blocks_auroc",
        row_inputs: str = "features",
        col_inputs: str = "features",
        configurations: list[tuple[int, int]] | None = None,
        random_state: Any = 0,
    ) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.n_folds = n_folds
        self.scoring = scoring
        self.row_inputs = row_inputs
        self.col_inputs = col_inputs
        self.configurations = configurations
        self.random_state = random_state

    def fit(self, X_rows: Any, X_cols: Any, Y: Any) -> BipartiteGridSearch:
        """Score every candidate by inner CV on (X_rows, X_cols, Y), refit the best on all."""
        validate_params(self, self._parameter_constraints)
        candidates = parameter_grid(self.param_grid)
        self.cv_results_: list[dict[str, Any]] = []
        for params in candidates:
            result = bipartite_cross_validate(
                clone(self.estimator).set_params(**params), X_rows, X_cols, Y,
                n_folds=self.n_folds, row_inputs=self.row_inputs, col_inputs=self.col_inputs,
                random_state=self.random_state, configurations=self.configurations,
            )  # fmt: skip
            score = result.summary()[self.scoring]
            self.cv_results_.append({"params": params, "score": float(score)})
        scores = np.array([r["score"] for r in self.cv_results_])
        best = int(np.nanargmax(scores)) if np.isfinite(scores).any() else 0
        self.best_params_ = self.cv_results_[best]["params"]
        self.best_score_ = self.cv_results_[best]["score"]
        self.best_estimator_ = clone(self.estimator).set_params(**self.best_params_)
        self.best_estimator_.fit(X_rows, X_cols, Y)
        return self

    def predict_new_rows(self, X_new_rows: Any) -> np.ndarray:
        check_is_fitted(self, "best_estimator_")
        return np.asarray(self.best_estimator_.predict_new_rows(X_new_rows))

    def predict_new_cols(self, X_new_cols: Any) -> np.ndarray:
        check_is_fitted(self, "best_estimator_")
        return np.asarray(self.best_estimator_.predict_new_cols(X_new_cols))

    def predict_new_pairs(self, X_new_rows: Any, X_new_cols: Any) -> np.ndarray:
        check_is_fitted(self, "best_estimator_")
        return np.asarray(self.best_estimator_.predict_new_pairs(X_new_rows, X_new_cols))
