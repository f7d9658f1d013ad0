"""OKBoostRegressor: gradient boosting of OK3 trees in a kernelized output space (paper
Algorithms 3 and 4), the scikit-learn style estimator around the stage loop
(:func:`okcore.boosting.loop.boost`).

Its "auto" parameters resolve by the rules of :mod:`okcore.defaults` into a
:class:`~okcore.boosting.plan.GrowthPlan` once per fit, shown after the fit as
``resolved_params_``; warm start lives in :mod:`okcore.boosting.warm_start`.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Self

import numpy as np
from scipy import sparse

from .. import defaults
from .._validation import Interval, Options
from ..base import (
    EvalData,
    FitContext,
    FittedModel,
    StagedPredictions,
    embed_eval_set,
    hold_out_rows,
)
from ..callbacks import EarlyStopping, FitProgress, early_stopping
from ..cost import StageCost
from ..exceptions import DataError, InvalidParameterError
from ..fingerprint import data_fingerprint
from ..learners import TreeLearner
from ..losses import (
    LOSSES,
    FeatureLoss,
    MaskedSquaredFeatureLoss,
    SquaredFeatureLoss,
    WeightedSquaredFeatureLoss,
    make_loss,
)
from ..outputs.space import RANK_TOLERANCE
from ..trees.builder import TreeParams
from ..trees.ensemble import TreeEnsemble
from ..trees.estimator import TREE_CONSTRAINTS, TreeEstimator, resolve_max_features
from ..trees.missing import missing_features
from ..trees.oblivious import MAX_OBLIVIOUS_DEPTH
from ..trees.weighted import weighted_max_bins
from .loop import BoostResult, BoostState, boost
from .plan import PAPER_PRESET, GrowthPlan, dearer_stages, level_histogram_bytes, plan_growth
from .start import KERNEL_RIDGE, StartedEnsemble, StartModelSpec, fit_start, start_estimator
from .warm_start import (
    Continuation,
    continued_params,
    fit_more,
    restore_warm_start,
    warm_start_record,
)


class OKBoostRegressor(StagedPredictions, TreeEstimator):
    """Gradient boosting of OK3 trees in a kernelized output space (OKBoost, Algorithm 3).

    Every "auto" value below resolves at fit time by a rule of :mod:`okcore.defaults`; the
    rules, their numbers and the measurements that chose them are listed in
    docs/defaults.md, and the fitted ``resolved_params_`` holds the values a fit used.
    "One output" there means an output factor of rank 1 (r = 1 column), not a 1-D ``y``.

    Parameters
    ----------
    loss : {"squared", "absolute", "huber"}, default="squared"
        The loss in the output feature space (:mod:`okcore.losses`): "squared" (the paper)
        ||phi(y) - F(x)||^2; "absolute" ||phi(y) - F(x)|| (Friedman's LAD_TreeBoost
        kernelized: trees on unit residual directions, geometric-median leaves); "huber"
        (Friedman's M_TreeBoost kernelized, squared below the ``alpha``-quantile of the
        residual norms, absolute above). The robust losses resist wrong training outputs;
        their leaves cost O(T n r) for T Weiszfeld iterations instead of O(n r).
    alpha : float in (0, 1), default=0.9
        The quantile of the residual norms where the Huber loss turns from squared to
        absolute, re-set every stage. Used by ``loss="huber"`` only.
    n_estimators : int or "auto", default="auto"
        M, the number of boosting rounds (with early stopping the most rounds); "auto" takes
        it from the number of training rows given to ``fit`` (docs/defaults.md,
        :meth:`resolve_n_estimators`).
    learning_rate : float in (0, 1], default=0.1
        nu, the shrinkage of every tree (F_0, the mean or for the robust losses the
        geometric median, is not shrunk; docs/defaults.md).
    max_splits : int or None, default=None
        J, splits per best-first tree (J + 1 leaves); None is 10 and lets
        ``tree_type="auto"`` grow oblivious trees, an int asks for best-first trees of that
        size (docs/defaults.md).
    splitter, max_features, leaf_order, min_samples_leaf, max_depth :
        Growth of each OK3 tree, see :class:`~okcore.trees.tree.OK3Regressor`;
        ``splitter="random"`` gives the paper's OK3-et + OKBoost. Defaults "best", 1.0 (all
        p inputs are candidates at every node, also for ``splitter="random"``), "gain"
        (split the leaf whose best split lowers the loss most), 1 and None (an oblivious
        tree's depth from the output factor's columns and the rows, docs/defaults.md).
    l2_regularization : float >= 0 or "auto", default="auto"
        lambda, the L2 penalty on the leaf values (XGBoost's ``reg_lambda``, LightGBM's
        ``lambda_l2``, CatBoost's ``l2_leaf_reg``); "auto" is 10 or 30 for oblivious trees
        with the squared loss (r > 1 or r = 1 factor columns) and 0 otherwise
        (docs/defaults.md). Each leaf value is the ridge solution argmin_v sum_i ||r_i -
        v||^2 + lambda ||v||^2 = (sum of the leaf's residual rows) / (n + lambda), and
        splits are scored by the reduction of that penalised objective (||T_L||^2 / (n_L +
        lambda) + ||T_R||^2 / (n_R + lambda) - ||T||^2 / (n + lambda)), so a split whose
        reduction is not positive is not made. F(x) stays a combination of the phi(y_i):
        each tree's weights over its leaf's residual rows become 1 / (n + lambda), while
        the rows of W^F still sum to 1. 0 is the paper's leaf mean. Squared loss only: the
        robust losses' leaves are not the minimisers of a penalised sum of squares, and a
        penalty with them is refused.
    subsample : float in (0, 1], default=1.0
        Fraction of rows each tree is fitted on (stochastic gradient boosting).
    colsample_bytree : float in (0, 1], default=1.0
        Fraction of the input features each tree may split on, drawn anew for every tree
        (XGBoost's and LightGBM's ``colsample_bytree``): round(fraction x p) features, at
        least 1. ``max_features`` then picks each node's (oblivious trees: each level's)
        candidates among them. 1.0: all features, and no random draw.
    tree_type : {"auto", "best-first", "oblivious"}, default="auto"
        "auto" grows oblivious trees wherever they apply and no best-first tree size is
        asked for, else best-first trees (docs/defaults.md; :meth:`resolve_tree_type`).
        "best-first": OK3 trees of ``max_splits`` splits grown in ``leaf_order``.
        "oblivious": symmetric trees (CatBoost's): one (feature, threshold) per level shared
        by every node of the level, chosen to maximise the summed reduction of N*var (the
        penalised objective with ``l2_regularization``) over the level's nodes, of depth
        ``max_depth`` (at most 16), so up to 2^depth leaves; ``max_splits`` and
        ``leaf_order`` do not apply, ``max_features`` draws each level's candidate
        features, and a node whose children would hold fewer than ``min_samples_leaf`` rows
        passes to the next level uncut (:mod:`okcore.trees.oblivious`). They use the
        histogram search only (with at most ``max_bins`` distinct values per feature its
        cuts are the exact ones), on dense inputs, with ``splitter="best"``.
    early_stopping : "auto", True or False, default="auto"
        Stop when the validation loss did not improve by ``tol`` for ``n_iter_no_change``
        rounds, and keep the trees up to the best round (scikit-learn's
        HistGradientBoosting rule); "auto" is on only when ``n_iter_no_change`` is given
        (docs/defaults.md). The validation set is ``eval_set`` if given, else a random
        ``validation_fraction`` of the training rows, which are then not fitted. False:
        never (``n_iter_no_change`` must then be None).
    n_iter_no_change : int or None, default=None
        The patience of early stopping; None is 10 rounds when early stopping is on. An
        int turns early stopping on under ``early_stopping="auto"``.
    validation_fraction : float in (0, 1), default=0.1
        Rows held out for early stopping without an ``eval_set``.
    tol : float >= 0, default=1e-7
        The least improvement of the validation loss that early stopping counts.
    sketch_dim : int, "auto" or None, default="auto"
        Search each tree's splits on a k-dimensional Gaussian random projection of the
        residuals (SketchBoost) instead of all r factor columns: the search costs k/r of the
        exact one; leaf values stay exact, only splits with close scores may change. None
        searches exactly; "auto" is 8 with the fast search when r > 8 (docs/defaults.md).
    max_bins : int in [2, 255], "auto" or None, default="auto"
        Histogram split search: inputs binned once per fit into at most ``max_bins``
        quantile bins, per-node histograms of the (sketched) residuals, the larger child's
        by subtraction; exactly the exact search's trees when no feature has more distinct
        values than ``max_bins``. None: exact presorted search; "auto" is 255 from
        N x r >= 2e5 and for oblivious trees, else None (docs/defaults.md).
        ``max_bins=None, sketch_dim=None`` is the paper's algorithm at any size.
    refine_cuts : "auto", True or False, default="auto"
        With the histogram search and ``splitter="best"``: move each chosen bin edge (an
        oblivious tree's: each level's) to the best exact cut inside the two bins around it,
        so a sharp step in the outputs is not missed by up to a bin; keeps the raw inputs,
        8 bytes per value, during the fit. "auto" refines, except the cuts of oblivious
        trees on one output column (docs/defaults.md).
    factor_rank, factor_tol : int or None, float
        Truncation of the output factor Phi: at most ``factor_rank`` eigenpairs of K, and only
        eigenvalues above ``factor_tol`` times the largest (default: exact up to 1e-12).
    n_landmarks : int or None, default=None
        Nystrom factor of an RBF / polynomial output kernel on that many landmark outputs
        (random training outputs, seeded by ``random_state``): O(N m) memory, no N x N.
    n_jobs : int or None, default=None
        Threads for the binning, the split search (the exact search's features; the
        histogram search's builds, scans, row statistics and sketch), the boosting step and
        W^F (None = 1, -1 = all cores). The model does not depend on it.
    random_state : None, int or Generator, default=None
    init : None, "kernel_ridge", dict or KernelRidgeRegressor, default=None
        The starting model F_0. None: the loss's (the training mean; the geometric median
        for the robust losses). Otherwise kernel ridge
        (:class:`~okcore.kernel_models.ridge.KernelRidgeRegressor`) fitted first on the
        rows the trees are fitted to, in the same output space, so the trees fit what
        kernel ridge leaves: "kernel_ridge" is ``KernelRidgeRegressor(gamma="cv")``, a
        dict its parameters, or an unfitted instance. F(x) = F_krr(x) + nu sum_m h_m(x)
        stays in span{phi(y_i)}: W^F (rows need not sum to 1), kernels and pre-images
        work (:mod:`okcore.boosting.start`). Not with ``warm_start=True``, nor with
        missing inputs (NaN), which kernel ridge refuses (``accepts_missing`` is then False).
    warm_start : bool, default=False
        scikit-learn's warm start (as GradientBoostingRegressor's): ``fit`` on a fitted
        estimator with the same data (checked by a fingerprint) and a larger
        ``n_estimators`` adds the missing rounds, bit for bit a fit with the larger
        ``n_estimators``, also on a model loaded from disk; any other changed parameter
        but ``n_jobs`` is refused (:mod:`okcore.boosting.warm_start` says what is kept and
        what is refused). False: every ``fit`` starts over.

    Fitted attributes: ``output_space_``, ``ensemble_``, ``train_loss_`` (M,) and
    ``validation_loss_`` (M,) or None, both of ``loss`` after each round (Huber: at that
    round's delta), ``n_estimators_`` (trees kept), ``n_estimators_planned_`` (the rounds
    the fit was to run: ``n_estimators``, "auto" resolved),
    ``train_indices_`` (rows of the given data used as training outputs),
    ``stopped_by_callback_``, ``fit_time_``, ``feature_importances_``, ``max_bins_``,
    ``sketch_dim_`` (the search used, "auto" resolved), ``tree_type_`` (the trees grown,
    "auto" resolved) and ``resolved_params_`` (a dict of every value the fit resolved:
    tree_type, max_splits, max_depth, l2_regularization, max_bins, sketch_dim,
    refine_cuts, n_estimators, early_stopping, n_iter_no_change, max_features; with
    ``init``, the starting kernel ridge's penalty ``init_alpha`` and, when one width,
    ``init_gamma``).

    ``staged_predict``, ``staged_predict_kernel``, ``staged_predict_features``
    (:class:`~okcore.base.StagedPredictions`): predictions after each round m = 1..M,
    exactly those of a refit with ``n_estimators=m`` (the stage loop never looks ahead);
    with early stopping, over the trees kept.
    """

    supports_sample_weight = True
    supports_masked_outputs = True

    supports_eval_set = True
    _continuation: Continuation  # what a warm start continues (okcore.boosting.warm_start)
    _parameter_constraints = {
        **TREE_CONSTRAINTS,
        "loss": [Options(tuple(LOSSES))],
        "alpha": [Interval(float, 0.0, 1.0, "neither")],
        "n_estimators": [Interval(int, 1, None, "left"), Options(("auto",))],
        "learning_rate": [Interval(float, 0.0, 1.0, "right")],
        "max_splits": [Interval(int, 1, None, "left"), Options((None,))],
        "subsample": [Interval(float, 0.0, 1.0, "right")],
        "colsample_bytree": [Interval(float, 0.0, 1.0, "right")],
        "tree_type": [Options(defaults.TREE_TYPES)],
        "early_stopping": [Options(("auto", True, False))],
        "n_iter_no_change": [Interval(int, 1, None, "left"), Options((None,))],
        "validation_fraction": [Interval(float, 0.0, 1.0, "neither")],
        "tol": [Interval(float, 0.0, None, "left")],
        "l2_regularization": [Interval(float, 0.0, None, "left"), Options(("auto",))],
        "sketch_dim": [Interval(int, 1, None, "left"), Options(("auto", None))],
        "max_bins": [Interval(int, 2, 255, "both"), Options(("auto", None))],
        "refine_cuts": [Options(("auto", True, False))],
        "warm_start": [Options((True, False))],
        "init": [Options((None, KERNEL_RIDGE)), StartModelSpec()],
    }

    def __init__(
        self,
        *,
        loss: str = "squared",
        alpha: float = 0.9,
        n_estimators: int | str = "auto",
        learning_rate: float = defaults.DEFAULT_LEARNING_RATE,
        max_splits: int | None = None,
        splitter: str = "best",
        max_features: Any = defaults.DEFAULT_MAX_FEATURES,
        leaf_order: str = defaults.DEFAULT_LEAF_ORDER,
        min_samples_leaf: int = 1,
        max_depth: int | None = None,
        l2_regularization: float | str = "auto",
        subsample: float = 1.0,
        colsample_bytree: float = 1.0,
        tree_type: str = "auto",
        early_stopping: bool | str = "auto",
        n_iter_no_change: int | None = None,
        validation_fraction: float = 0.1,
        tol: float = 1e-7,
        sketch_dim: int | str | None = "auto",
        max_bins: int | str | None = "auto",
        refine_cuts: bool | str = "auto",
        factor_rank: int | None = None,
        factor_tol: float = RANK_TOLERANCE,
        n_landmarks: int | None = None,
        n_jobs: int | None = None,
        random_state: Any = None,
        warm_start: bool = False,
        init: Any = None,
    ) -> None:
        self.loss = loss
        self.alpha = alpha
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_splits = max_splits
        self.splitter = splitter
        self.max_features = max_features
        self.leaf_order = leaf_order
        self.min_samples_leaf = min_samples_leaf
        self.max_depth = max_depth
        self.l2_regularization = l2_regularization
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.tree_type = tree_type
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.validation_fraction = validation_fraction
        self.tol = tol
        self.sketch_dim = sketch_dim
        self.max_bins = max_bins
        self.refine_cuts = refine_cuts
        self.factor_rank = factor_rank
        self.factor_tol = factor_tol
        self.n_landmarks = n_landmarks
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.warm_start = warm_start
        self.init = init

    @property
    def accepts_missing(self) -> bool:  # type: ignore[override]  # per instance: init
        """Whether inputs may hold missing values (NaN): the trees learn where they go, but
        a starting kernel ridge (``init``) does not take them, so with ``init`` they are
        refused at fit and prediction with the fix (impute them)."""
        return self.init is None

    @classmethod
    def paper(cls, **overrides: Any) -> Self:
        """The paper's exact algorithm (:data:`PAPER_PRESET`): squared loss, exact presorted
        split search on all r factor columns (no histograms, no sketch), the exact output
        factor, leaves split in order of highest N*var, no penalty, no subsampling, no early
        stopping, M = 500 and nu = 0.01 (Table 1), J = 10; with ``splitter="random"``
        sqrt(p) candidate features per node (``max_features=None``). ``overrides`` (any parameter, e.g.
        ``max_splits``, ``random_state``, ``splitter="random"`` for OK3-et + OKBoost) replace
        the preset's values; an unknown name raises
        :class:`~okcore.exceptions.UnknownParameterError`. Its trees, W^F, kernel predictions
        and pre-images are those of Algorithms 3-4 up to floating point (tested against a
        brute-force N x N implementation)."""
        cls.check_parameter_names(overrides)
        return cls(**{**PAPER_PRESET, **overrides})

    def validate_params(self) -> None:
        """The parameter constraints, then the combinations refused: an L2 penalty with a
        robust loss (see ``l2_regularization``), a patience with early stopping off, and
        what oblivious trees cannot do."""
        super().validate_params()
        if self._early_stopping_off() and self.n_iter_no_change is not None:
            raise InvalidParameterError(
                f"The 'n_iter_no_change' parameter of {type(self).__name__} is the patience "
                f"of early stopping, which early_stopping=False turns off. Got "
                f"n_iter_no_change={self.n_iter_no_change!r}; set early_stopping=True (or "
                "'auto') to stop early, or n_iter_no_change=None."
            )
        penalty = self.l2_regularization
        if not isinstance(penalty, str) and penalty > 0.0 and self.loss != "squared":
            raise InvalidParameterError(
                f"The 'l2_regularization' parameter of {type(self).__name__} applies to "
                f"loss='squared' only: the leaves of loss={self.loss!r} are geometric "
                "medians or Huber steps, not penalised means. Got l2_regularization="
                f"{self.l2_regularization!r} with loss={self.loss!r}; set "
                "l2_regularization=0, or regularise with learning_rate, min_samples_leaf "
                "or max_splits."
            )
        if self.tree_type == "oblivious":
            self._validate_oblivious()
        if self.init is not None and self.warm_start:
            raise InvalidParameterError(
                f"warm_start=True of {type(self).__name__} continues the trees of a fit "
                f"started from the training mean; init={self.init!r} starts from kernel "
                "ridge. Set warm_start=False (refit with the n_estimators wanted), or init=None."
            )

    def _validate_oblivious(self) -> None:
        """What oblivious trees refuse (see ``tree_type``)."""
        name = type(self).__name__
        if self.splitter != "best":
            raise InvalidParameterError(
                f"tree_type='oblivious' of {name} chooses each level's cut by the best summed "
                f"gain: it needs splitter='best'. Got splitter={self.splitter!r}."
            )
        if self.max_bins is None:
            raise InvalidParameterError(
                f"tree_type='oblivious' of {name} uses the histogram split search only: set "
                "max_bins='auto' or an int in [2, 255] (with at most max_bins distinct values "
                "per feature the cuts are the exact search's). Got max_bins=None."
            )
        if self.max_depth is not None and self.max_depth > MAX_OBLIVIOUS_DEPTH:
            raise InvalidParameterError(
                f"The 'max_depth' parameter of {name} with tree_type='oblivious' must be an "
                f"int in [1, {MAX_OBLIVIOUS_DEPTH}] or None (the default depth): a tree has "
                f"up to 2^max_depth leaves. Got {self.max_depth!r} instead."
            )

    def resolve_tree_type(self, X: Any = None) -> str:
        """The tree type a fit on inputs ``X`` grows (:func:`okcore.defaults.resolve_tree_type`;
        ``X=None``, inputs not known yet: as for dense X)."""
        return defaults.resolve_tree_type(
            self.tree_type,
            max_splits=self.max_splits,
            splitter=self.splitter,
            max_bins=self.max_bins,
            max_depth=self.max_depth,
            sparse_inputs=sparse.issparse(X),
        )

    def growth_plan(self, n_samples: int, rank: int, tree_type: str | None = None) -> GrowthPlan:
        """How a fit on ``n_samples`` training rows and a factor of ``rank`` columns grows its
        trees (:class:`GrowthPlan`), by the rules of :mod:`okcore.defaults`: ``tree_type``
        (None: :meth:`resolve_tree_type` of dense inputs), ``max_splits`` None as
        DEFAULT_MAX_SPLITS, an oblivious tree's ``max_depth`` None as
        :func:`~okcore.defaults.default_oblivious_depth`, ``l2_regularization`` by
        :func:`~okcore.defaults.resolve_l2_regularization`, the split search by
        :func:`~okcore.defaults.resolve_search` (oblivious trees search the fast way at
        every size) and ``refine_cuts`` by :func:`~okcore.defaults.resolve_refine_cuts`.
        A fit resolves it once; the cost model asks for it before one. O(1)."""
        kind = self.resolve_tree_type() if tree_type is None else tree_type
        return plan_growth(
            kind,
            n_samples,
            rank,
            max_splits=self.max_splits,
            max_depth=self.max_depth,
            l2_regularization=self.l2_regularization,
            loss=self.loss,
            max_bins=self.max_bins,
            sketch_dim=self.sketch_dim,
            refine_cuts=self.refine_cuts if self._refines_cuts() else False,
            min_samples_leaf=self.min_samples_leaf,
        )

    def _planned_tree_params(
        self, plan: GrowthPlan, n_features: int, missing: np.ndarray | None = None
    ) -> TreeParams:
        """The growth parameters of each tree of ``plan`` on ``n_features`` inputs, the
        features ``missing`` holding missing values."""
        fraction = float(self.colsample_bytree)
        tree_features = None if fraction >= 1.0 else max(1, int(round(fraction * n_features)))
        return replace(
            self._tree_params(n_features, missing),
            max_splits=plan.max_splits,
            max_depth=plan.max_depth,
            refine_cuts=plan.refine_cuts,
            l2_regularization=plan.l2_regularization,
            tree_type=plan.tree_type,
            tree_features=tree_features,
        )

    def resolve_n_estimators(self, n_samples: int) -> int:
        """The boosting rounds M of a fit on ``n_samples`` training rows (the rows given to
        ``fit``, before any early-stopping hold-out): ``n_estimators``, or for "auto"
        :func:`~okcore.defaults.default_n_estimators` of ``n_samples``. O(1)."""
        if isinstance(self.n_estimators, str):  # "auto", the one string allowed
            return defaults.default_n_estimators(n_samples)
        return int(self.n_estimators)

    def _n_stages(self, n_samples: int) -> int:
        return self.resolve_n_estimators(n_samples)

    def early_stopping_patience(self) -> int | None:
        """The patience a fit stops with, or None when it does not stop early
        (:func:`~okcore.defaults.early_stopping_patience`)."""
        return defaults.early_stopping_patience(self.early_stopping, self.n_iter_no_change)

    def _early_stopping_off(self) -> bool:
        """early_stopping=False (numpy's False too)."""
        return not isinstance(self.early_stopping, str) and not self.early_stopping

    def _rows_per_tree(self, n_samples: int) -> float:
        return n_samples * float(self.subsample)

    def _leaf_row_bytes(self, leaves: int) -> float:
        """The round table's bytes per training row and round: its leaf in the smallest
        unsigned type, plus a uint8 fit count when rows are subsampled."""
        leaf = 1.0 if leaves <= 1 << 8 else 2.0 if leaves <= 1 << 16 else 4.0
        return leaf + (1.0 if self.subsample < 1.0 else 0.0)

    def _estimate_stages(self, n_samples: int, n_features: int, rank: int) -> StageCost:
        """The trees' cost of the fit's :meth:`growth_plan`. ``tree_type="auto"`` before a
        fit (the inputs not known): the plan of dense inputs, at the larger seconds and bytes
        of it and of the best-first plan sparse inputs get. With ``init``: the starting
        kernel ridge fit's cost before the first tree, its memory, its model beside the trees."""
        plan = self.growth_plan(n_samples, rank)
        cost = self._planned_cost(plan, n_samples, n_features, rank)
        if self.tree_type == "auto" and plan.tree_type != "best-first":  # what sparse X grows
            sparse_inputs = self.growth_plan(n_samples, rank, "best-first")
            cost = dearer_stages(
                cost, self._planned_cost(sparse_inputs, n_samples, n_features, rank)
            )
        if self.init is not None:
            ridge = start_estimator(self.init)._estimate_stages(n_samples, n_features, rank)
            cost = replace(
                cost,
                setup_seconds=cost.setup_seconds
                + ridge.setup_seconds
                + ridge.n_stages * ridge.stage_seconds,
                work_bytes=max(cost.work_bytes, ridge.work_bytes),
                model_bytes=cost.model_bytes + ridge.model_bytes + 8.0 * n_samples * rank,
            )
        return cost

    def _planned_cost(
        self, plan: GrowthPlan, n_samples: int, n_features: int, rank: int
    ) -> StageCost:
        """The trees' cost, with an oblivious tree's level histograms
        (:func:`~okcore.boosting.plan.level_histogram_bytes`)."""
        search = (plan.max_bins, plan.sketch_dim)
        cost = self._stages_cost(
            n_samples, n_features, rank, search, plan.max_leaves, refined=plan.refine_cuts
        )
        extra = level_histogram_bytes(plan, cost.stage_size, n_features, rank)
        return replace(cost, work_bytes=cost.work_bytes + extra)

    def fit(
        self,
        X: Any,
        Y: Any = None,
        *,
        gram: Any = None,
        kernel: Any = None,
        eval_set: tuple | None = None,
        callback: Callable[[FitProgress], bool | None] | None = None,
        sample_weight: Any = None,
        output_weight: Any = None,
    ) -> Self:
        """:meth:`OKEstimator.fit <okcore.base.OKEstimator.fit>`; with ``warm_start`` on a
        fitted estimator, the rounds from ``n_estimators_`` run to ``n_estimators`` are
        added to the fitted model (see ``warm_start``): O((M - M_before) (N r + one tree))
        plus the inputs' binning, no output factor.

        ``sample_weight`` (N,): the weighted loss, each tree a weighted tree
        (:mod:`okcore.trees.weighted`, histogram search on dense inputs). Squared: F_0 the
        weighted mean, leaf values sum w r / (sum w + lambda). Absolute and Huber
        (scikit-learn's ``GradientBoostingRegressor`` with ``sample_weight``): F_0 and the
        leaf medians weighted geometric medians, Huber's delta the weighted alpha-quantile
        of the residual norms and its leaf step a weighted mean (:mod:`okcore.losses`). The
        training and held-out early-stopping losses are weighted means (an ``eval_set``'s is
        not).
        ``min_samples_leaf`` counts rows of positive weight. Not with ``warm_start``.

        Partly known outputs: Y (linear kernel) may hold NaN for unknown entries, and
        ``output_weight`` (d,) weighs each output column; the loss and the leaf values then
        use the known entries only, each weighted (its row's sample weight times its
        column's weight): F_0 per column the weighted mean of its known entries, the trees'
        leaf value per column sum_known w r / (sum_known w + lambda) and their gain
        sum_c G_c^2 / (H_c + lambda) (:class:`~okcore.losses.MaskedSquaredFeatureLoss`, a
        path apart from the default one, with per-column weight sums: O(n f (2 r + 2)) per
        searched node). W^F and pre-images among the training outputs are then refused."""
        data = (X, Y, gram, kernel, eval_set)
        if (sample_weight is not None or output_weight is not None) and self.warm_start:
            raise InvalidParameterError(
                f"sample_weight and output_weight in {type(self).__name__} do not go with "
                "warm_start=True (a continued fit would need the weights again): set "
                "warm_start=False."
            )
        if self.warm_start and "ensemble_" in self.__dict__:
            weighted = {"sample_weight", "masked_outputs"} & set(self.resolved_params_)
            if weighted:
                raise InvalidParameterError(
                    f"warm_start=True cannot add trees to this {type(self).__name__}: it was "
                    f"fitted with {' and '.join(sorted(weighted))} (weighted trees), which a "
                    "continued fit does not take. Fit it anew with warm_start=False."
                )
            fit_more(self, X, data[1:], data_fingerprint(*data), callback)
            return self
        self.__dict__.pop("_continuation", None)
        fit = functools.partial(
            super().fit, X, Y, gram=gram, kernel=kernel, eval_set=eval_set, callback=callback,
            sample_weight=sample_weight, output_weight=output_weight,
        )  # fmt: skip
        if self._n_threads() < 2:
            fit()
            fingerprint = data_fingerprint(*data)
        else:  # hashed beside the fit's serial start (BLAKE2b releases the GIL), not before it
            with ThreadPoolExecutor(1) as aside:
                hashing = aside.submit(data_fingerprint, *data)
                fit()
                fingerprint = hashing.result()
        self._continuation.fingerprint = fingerprint
        return self

    def _fit_model(self, context: FitContext) -> FittedModel:
        """Algorithm 3 (:func:`boost`): the eval set is embedded in the training space first;
        early stopping without one holds out ``validation_fraction`` of the rows; the
        :meth:`growth_plan` is resolved once, on the rows the trees are fitted to."""
        X, space, rng = context.X, context.space, context.rng
        masked = context.entry_weight is not None
        weight = context.entry_weight if masked else context.sample_weight
        if masked and self.warm_start:
            raise InvalidParameterError(
                f"unknown (NaN) outputs in {type(self).__name__} do not go with "
                "warm_start=True: set warm_start=False."
            )
        eval_data = (
            self._eval_data(context.eval_set, space) if context.eval_set is not None else None
        )
        rows = np.arange(X.shape[0])
        n_rounds = self.resolve_n_estimators(X.shape[0])  # on the rows given, as the cost model
        tree_type = self.resolve_tree_type(X)
        patience = self.early_stopping_patience()
        if eval_data is None and patience is not None:
            X, space, rows, eval_data = self._hold_out(X, space, rng, weight)
            weight = None if weight is None else weight[rows]
        if tree_type == "oblivious" and sparse.issparse(X):
            raise InvalidParameterError(
                f"tree_type='oblivious' of {type(self).__name__} needs dense inputs: pass "
                "X.toarray(), or use tree_type='best-first' for sparse X."
            )
        plan = self.growth_plan(X.shape[0], space.rank, tree_type)
        if weight is not None:
            plan = self._weighted_plan(plan, X, weight)
        start, start_values = None, None
        start_resolved: dict[str, Any] = {}
        if self.init is not None:
            if masked:
                raise InvalidParameterError(
                    f"init (a starting model) of {type(self).__name__} does not go with "
                    "unknown (NaN) outputs or output_weight: leave init=None."
                )
            start, start_resolved = fit_start(self.init, X, space, rng, context.start, weight)
            start_val = None if eval_data is None else start.decision(eval_data.X)
            start_values = (start.decision(X), start_val)
        result = self._boost(
            plan, n_rounds, X, space, context.callback, context.elapsed(),
            rng=rng, eval_data=eval_data, stopping=early_stopping(patience, self.tol),
            sample_weight=weight, start=start_values,
        )  # fmt: skip
        assert result.state is not None
        # the next round's draws, apart from a Generator given as random_state (which the
        # caller may go on using)
        result.state.rng = copy.deepcopy(result.state.rng)
        self._continuation = Continuation(
            result.state, eval_data, rows, continued_params(self), fingerprint="", plan=plan
        )
        started = None if start is None or start_values is None else (start, start_values[0])
        fitted = self._fitted(plan, n_rounds, result, space, rows, started)
        fitted.resolved_params.update(start_resolved)
        if masked:  # predictions needing the whole training outputs refuse (W^F)
            fitted.resolved_params["masked_outputs"] = True
        elif weight is not None:  # a warm start refuses to continue it (fit)
            fitted.resolved_params["sample_weight"] = True
        return fitted

    def _boost(
        self,
        plan: GrowthPlan,
        n_rounds: int,
        X: Any,
        space: Any,
        callback: Any,
        elapsed: float,
        *,
        rng: np.random.Generator,
        eval_data: EvalData | None,
        stopping: EarlyStopping | None = None,
        state: BoostState | None = None,
        sample_weight: np.ndarray | None = None,
        start: tuple[np.ndarray, np.ndarray | None] | None = None,
    ) -> BoostResult:
        """The inputs the split search of ``plan`` reads, its tree learner, and
        :func:`boost` up to ``n_rounds`` rounds (from ``state`` when given; from a starting
        model's F_0 ``start`` on the training and validation rows); with ``sample_weight``,
        weighted trees and the weighted squared loss."""
        missing = missing_features(X)
        params = self._planned_tree_params(plan, X.shape[1], missing)
        XT, binned = self._search_inputs(
            X, plan.max_bins, callback, n_rounds, elapsed, refine_cuts=plan.refine_cuts,
            missing=missing,
        )  # fmt: skip
        learner = TreeLearner(
            X, params, XT=XT, binned=binned,
            sketch_dim=plan.sketch_dim, n_threads=self._n_threads(), weight=sample_weight,
        )  # fmt: skip
        loss: FeatureLoss
        if sample_weight is None:
            loss = make_loss(self.loss, self.alpha)
        elif sample_weight.ndim == 2:  # entry weights: masked outputs, output weights
            loss = MaskedSquaredFeatureLoss(sample_weight)
        elif self.loss == "squared":
            loss = WeightedSquaredFeatureLoss(sample_weight, plan.l2_regularization)
        else:  # the robust losses: weighted medians, quantile and means
            loss = make_loss(self.loss, self.alpha, sample_weight)
        return boost(
            X,
            space.phi,
            space.diag,
            loss=loss,
            learner=learner,
            n_estimators=n_rounds,
            learning_rate=self.learning_rate,
            subsample=self.subsample,
            rng=rng,
            eval_data=eval_data,
            stopping=stopping,
            callback=callback,
            state=state,
            start=start,
        )

    def _fitted(
        self,
        plan: GrowthPlan,
        n_rounds: int,
        result: BoostResult,
        space: Any,
        rows: np.ndarray,
        started: tuple[Any, np.ndarray] | None = None,
    ) -> FittedModel:
        """The fitted model of a loop's result: its trees up to the best round, grown by
        ``plan`` in a loop of up to ``n_rounds`` rounds, after ``started`` (the starting
        kernel ridge model and its F_0 on the training rows) when given."""
        keep = result.best_iteration + 1
        self.tree_type_ = plan.tree_type
        self.n_estimators_planned_ = n_rounds
        ensemble = TreeEnsemble.from_trees(
            result.trees,
            result.train_leaf,
            result.train_count,
            combine="boosting",
            learning_rate=self.learning_rate,
            init=result.init,
            train_weight=result.train_weight,
            init_weight=result.init_weight,
            l2_regularization=plan.l2_regularization,
        )
        if keep < ensemble.n_trees:
            ensemble = ensemble.truncate(keep)
        fitted: Any = (
            ensemble if started is None else StartedEnsemble(started[0], ensemble, started[1])
        )
        return FittedModel(
            fitted,
            space,
            rows,
            n_estimators=keep,
            stopped_by_callback=result.stopped_by_callback,
            train_loss=result.train_loss,
            validation_loss=result.val_loss,
            max_bins=plan.max_bins,
            sketch_dim=plan.sketch_dim,
            resolved_params=self._resolved_params(plan, n_rounds),
        )

    def _weighted_plan(self, plan: GrowthPlan, X: Any, weight: np.ndarray) -> GrowthPlan:
        """The plan of a weighted fit (``weight`` (N,) sample weights or (N, d) entry
        weights): its bins by :func:`~okcore.trees.weighted.weighted_max_bins`, cuts at bin
        edges (weighted trees do not refine them); refused, with the fix, where the weighted
        trees and loss do not apply. Weighted trees search histograms only, so
        ``max_bins="auto"`` resolved to the exact search bins at AUTO_MAX_BINS (the exact
        search's cuts when no feature has more distinct values); an explicit None keeps
        :func:`weighted_max_bins`' refusal of inputs it cannot search exactly."""
        name = type(self).__name__
        if self.loss != "squared" and weight.ndim == 2:
            raise InvalidParameterError(
                f"unknown (NaN) outputs and output_weight in {name} need loss='squared' (the "
                f"robust losses take sample_weight only). Got loss={self.loss!r}."
            )
        requested = plan.max_bins
        if requested is None and self.max_bins == "auto":
            requested = defaults.AUTO_MAX_BINS
        weighted_by = (
            "sample_weight" if weight.ndim == 1 else "unknown (NaN) outputs or output_weight"
        )
        max_bins = weighted_max_bins(name, requested, X, weighted_by)
        return replace(plan, max_bins=max_bins, refine_cuts=False)

    def _resolved_params(self, plan: GrowthPlan, n_rounds: int) -> dict[str, Any]:
        """Every value a fit of ``plan`` and ``n_rounds`` rounds resolved ("auto" and None
        parameters), as JSON values: the plan's (but the cost model's ``max_leaves``), the
        rounds, early stopping and its patience, and the candidate features per node (an
        oblivious tree: per level) on the fit's inputs."""
        resolved = plan.resolved()
        patience = self.early_stopping_patience()
        resolved.update(
            n_estimators=int(n_rounds),
            early_stopping=patience is not None,
            n_iter_no_change=patience,
            max_features=resolve_max_features(
                self.max_features, int(self.n_features_in_), self.splitter
            ),
        )
        return resolved

    def warm_start_record(self) -> dict[str, Any] | None:
        """What a saved model keeps so that a warm start continues it after loading
        (:func:`okcore.boosting.warm_start.warm_start_record`), as JSON values; None when
        there is nothing to continue (a fit from a starting model: ``init``)."""
        return None if self.init is not None else warm_start_record(self)

    def restore_warm_start(self, record: Any) -> None:
        """Adopt the :meth:`warm_start_record` of a model loaded from disk
        (:func:`okcore.boosting.warm_start.restore_warm_start`); raises ValueError when the
        record is malformed."""
        restore_warm_start(self, record)

    def _tree_ensemble(self) -> TreeEnsemble:
        """The fitted trees (after the starting model of ``init``, when there is one)."""
        e = self.ensemble_
        tree_part = e.trees if isinstance(e, StartedEnsemble) else e
        assert isinstance(tree_part, TreeEnsemble)
        return tree_part

    def _eval_data(self, eval_set: tuple, space: Any) -> EvalData:
        return embed_eval_set(
            eval_set, space, self.n_features_in_, type(self).__name__, allow_missing=True
        )

    def _hold_out(
        self, X: np.ndarray, space: Any, rng: np.random.Generator, weight: Any = None
    ) -> tuple[np.ndarray, Any, np.ndarray, EvalData]:
        """Early stopping's hold-out: (X, space, rows) of the training part and the held-out
        rows; with sample weights (N,) or entry weights (N, d: unknown outputs, output
        weights), each part needs a positive weight sum."""
        train, val = hold_out_rows(X.shape[0], self.validation_fraction, rng)
        if weight is not None and not (weight[train].sum() > 0 and weight[val].sum() > 0):
            what = (
                "positive sample_weight"
                if weight.ndim == 1
                else "known output entry of positive weight (sample_weight, output_weight)"
            )
            raise DataError(
                f"the early-stopping hold-out leaves no {what} on its training or its "
                "validation rows: give more rows of positive weight and known outputs, an "
                "eval_set, or early_stopping=False"
            )
        held_out = EvalData(
            X[val], space.phi[val], space.diag[val], None if weight is None else weight[val]
        )
        return X[train], space.subset(train), train, held_out

    def staged_loss(
        self, X: Any, Y: Any = None, *, gram_cross: Any = None, gram_diag: Any = None
    ) -> np.ndarray:
        """Err^phi = mean ||phi(y) - F_m(x)||^2 after each round m = 1..M, shape (M,). O(M Q r)."""
        X = self._fitted_inputs(X)
        phi, diag = self._target_features(Y, gram_cross, gram_diag, n_rows=X.shape[0])
        e = self._tree_ensemble()
        F = np.tile(e.init, (X.shape[0], 1))
        if isinstance(self.ensemble_, StartedEnsemble):  # kernel ridge's F_0, then the trees
            F += self.ensemble_.start.decision(X)
        leaves = e.apply(X)
        loss = SquaredFeatureLoss()
        out = np.empty(e.n_trees)
        for m in range(e.n_trees):
            F += e.learning_rate * e.value[e.leaf_offset[m] + leaves[m]]
            out[m] = loss(phi, diag, F)
        return out
