"""OKBoost: gradient boosting in the output feature space (paper Algorithms 3 and 4).

The stage loop :func:`boost` is a plain function on the factor Phi of K (math note s. 2):
residuals phi_i - F(x_i) are (N, r) rows, each round fits an OK3 tree to them and adds
nu times its leaf means. O(N r) per round plus the split search: no N x N work.
:class:`OKBoostRegressor` is the scikit-learn style estimator around it.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Self

import numpy as np
from scipy import sparse

from ._validation import Interval, Options, check_inputs
from .base import (
    EvalData,
    FitContext,
    FittedModel,
    StagedPredictions,
    embed_eval_set,
    hold_out_rows,
)
from .callbacks import EarlyStopping, FitProgress, RoundMonitor, check_callback, early_stopping
from .cost import StageCost
from .exceptions import DataError, InvalidParameterError
from .fingerprint import data_fingerprint, is_fingerprint
from .learners import BaseLearner, TreeLearner
from .losses import LOSSES, FeatureLoss, SquaredFeatureLoss, make_loss
from .outputs.space import RANK_TOLERANCE
from .threads import SERIAL
from .trees.builder import TreeArrays, TreeParams
from .trees.ensemble import TreeEnsemble, tree_leaves
from .trees.estimator import TREE_CONSTRAINTS, TreeEstimator, max_leaves
from .trees.oblivious import HISTOGRAM_BYTES, MAX_OBLIVIOUS_DEPTH

#: Default ("auto") split search: the paper's exact search below this much work per tree
#: (training rows x factor columns), histograms + a sketch above it. Measured (docs/
#: PERFORMANCE.md, "Scale"): at N x r = 2e5 (N = 4000, r = 50) the fast mode fitted 9.7x
#: faster than exact with an 18% lower held-out error; every paper protocol is below 1e5.
AUTO_FAST_MIN_WORK = 200_000
AUTO_MAX_BINS = 255
AUTO_SKETCH_DIM = 8

#: The patience of ``early_stopping=True`` when ``n_iter_no_change`` is None.
DEFAULT_N_ITER_NO_CHANGE = 10

#: ``tree_type`` values: "auto" resolves to one of the other two at fit time
#: (:meth:`OKBoostRegressor.resolve_tree_type`).
TREE_TYPES = ("auto", "best-first", "oblivious")
#: J of a best-first tree when ``max_splits`` is None (11 leaves: docs/RESULTS.md section 9.4).
DEFAULT_MAX_SPLITS = 10
#: Depth of an oblivious tree when ``max_depth`` is None, by the columns r of the output
#: factor (docs/RESULTS.md section 9.7): depth 4 had the lowest held-out error at M = 300 on
#: every many-output problem measured.
OBLIVIOUS_DEPTH_MANY_OUTPUTS = 4
#: One output column: the depth of a full tree with about ONE_OUTPUT_ROWS_PER_LEAF training
#: rows per leaf, log2(N / 8) rounded down, between these bounds (docs/RESULTS.md section
#: 9.11: at M = 300 kin40k's held-out NMSE fell 3x from depth 6 to 10 at N = 36,000 and
#: census-house's 5 % at N = 20,506; on 4,000 rows census-house was best at depth 8, kin40k
#: at 10; below 1,024 rows the former depth 6).
OBLIVIOUS_DEPTH_ONE_OUTPUT = 6
OBLIVIOUS_DEPTH_ONE_OUTPUT_MAX = 10
ONE_OUTPUT_ROWS_PER_LEAF = 8
#: ``l2_regularization="auto"``: lambda of oblivious trees with the squared loss (a shared
#: cut leaves small leaves, which the penalty shrinks), 0 (the paper's leaf mean) otherwise.
#: One output column, whose default trees are deeper: 30 (docs/RESULTS.md section 9.11:
#: depth 10, M = 300: census-house 0.307 NMSE at lambda 30 against 0.320 at 3, below every
#: peer's best; kin40k 0.054 against 0.046, still below the best peer's). Many outputs
#: (r > 1): 10 (section 9.12: level with 3 on the synthetic problem (three seeds at
#: N = 4,000) and MULAN yeast, lower held-out error on USPS and whole Cora (three seeds
#: each), at the same CPU).
OBLIVIOUS_L2_ONE_OUTPUT = 30.0
OBLIVIOUS_L2_MANY_OUTPUTS = 10.0
#: ``n_estimators="auto"``: M by the number of training rows given to ``fit`` (before any
#: early-stopping hold-out): AUTO_N_ESTIMATORS_SMALL below AUTO_N_ESTIMATORS_MIN_ROWS rows,
#: AUTO_N_ESTIMATORS_LARGE from there (scikit-learn's HistGradientBoosting turns
#: early_stopping="auto" on at the same 10,000 rows). docs/RESULTS.md section 9.14.
AUTO_N_ESTIMATORS_MIN_ROWS = 10_000
AUTO_N_ESTIMATORS_SMALL = 300
AUTO_N_ESTIMATORS_LARGE = 500


def default_oblivious_depth(rank: int | None, n_samples: int | None = None) -> int:
    """OBLIVIOUS_DEPTH_MANY_OUTPUTS for r > 1; for r = 1 (or r not known yet: the larger
    tree) floor(log2(n_samples / ONE_OUTPUT_ROWS_PER_LEAF)) between
    OBLIVIOUS_DEPTH_ONE_OUTPUT and OBLIVIOUS_DEPTH_ONE_OUTPUT_MAX, the upper bound when
    n_samples is not known."""
    if rank is not None and rank > 1:
        return OBLIVIOUS_DEPTH_MANY_OUTPUTS
    if n_samples is None:
        return OBLIVIOUS_DEPTH_ONE_OUTPUT_MAX
    depth = int(n_samples // ONE_OUTPUT_ROWS_PER_LEAF).bit_length() - 1  # floor(log2)
    return min(max(depth, OBLIVIOUS_DEPTH_ONE_OUTPUT), OBLIVIOUS_DEPTH_ONE_OUTPUT_MAX)


def default_n_estimators(n_samples: int) -> int:
    """M of ``n_estimators="auto"`` for a fit on ``n_samples`` training rows:
    AUTO_N_ESTIMATORS_SMALL below AUTO_N_ESTIMATORS_MIN_ROWS, else AUTO_N_ESTIMATORS_LARGE."""
    if n_samples < AUTO_N_ESTIMATORS_MIN_ROWS:
        return AUTO_N_ESTIMATORS_SMALL
    return AUTO_N_ESTIMATORS_LARGE


def resolve_refine_cuts(refine_cuts: bool | str, oblivious: bool, rank: int) -> bool:
    """Whether a histogram search refines its cuts: ``refine_cuts``, or for "auto" yes but
    for oblivious trees on one output column (r = 1), whose deep trees' refined cuts fit the
    noise more than they gain (docs/RESULTS.md section 9.15)."""
    if isinstance(refine_cuts, str):  # "auto", the one string allowed
        return not (oblivious and rank == 1)
    return bool(refine_cuts)


def default_oblivious_l2(rank: int | None) -> float:
    """OBLIVIOUS_L2_ONE_OUTPUT for r = 1 (or r not known yet), OBLIVIOUS_L2_MANY_OUTPUTS for
    r > 1."""
    return OBLIVIOUS_L2_MANY_OUTPUTS if rank is not None and rank > 1 else OBLIVIOUS_L2_ONE_OUTPUT


def resolve_search(
    max_bins: int | str | None,
    sketch_dim: int | str | None,
    n_samples: int,
    rank: int,
    always_fast: bool = False,
) -> tuple[int | None, int | None]:
    """(max_bins, sketch_dim) to use: "auto" becomes (AUTO_MAX_BINS, AUTO_SKETCH_DIM) when
    n_samples x rank >= AUTO_FAST_MIN_WORK or ``always_fast``, else None (exact); a sketch
    only when it is narrower than the factor."""
    fast = always_fast or n_samples * rank >= AUTO_FAST_MIN_WORK
    if max_bins == "auto":
        max_bins = AUTO_MAX_BINS if fast else None
    if sketch_dim == "auto":
        sketch_dim = AUTO_SKETCH_DIM if fast and rank > AUTO_SKETCH_DIM else None
    return max_bins, sketch_dim  # type: ignore[return-value]


@dataclass(frozen=True)
class GrowthPlan:
    """How one OKBoost fit grows its trees, resolved once from the parameters, the inputs
    and the output factor (:meth:`OKBoostRegressor.growth_plan`), and read by the fit, each
    tree's growth parameters and the cost model; a warm start continues with its fit's plan.

    tree_type : "best-first" or "oblivious" ("auto" resolved).
    max_splits : J of a best-first tree (None resolved to DEFAULT_MAX_SPLITS).
    max_depth : the depth limit; an oblivious tree's None resolved to
        :func:`default_oblivious_depth` of the factor's rank.
    l2_regularization : lambda ("auto" resolved).
    max_bins, sketch_dim : the split search (:func:`resolve_search`; None: exact, all r columns).
    refine_cuts : whether the histogram search refines its cuts.
    max_leaves : the leaves a tree can have on the fit's rows (the cost model's bound).
    """

    tree_type: str
    max_splits: int
    max_depth: int | None
    l2_regularization: float
    max_bins: int | None
    sketch_dim: int | None
    refine_cuts: bool
    max_leaves: int


#: The paper's algorithm (Geurts, Wehenkel & d'Alche-Buc 2007: Algorithm 3 with OK3 trees grown
#: best-first by highest N*var, section 2.4.2), with Table 1's M = 500 and nu = 0.01, as
#: :meth:`OKBoostRegressor.paper` builds it: every parameter that changes the fitted model is
#: pinned here, so changing the estimator's defaults never changes the preset. J is chosen by
#: cross-validation in [1, 40] in the paper: 10 here, to override.
PAPER_PRESET: dict[str, Any] = {
    "loss": "squared",
    "n_estimators": 500,
    "learning_rate": 0.01,
    "max_splits": 10,
    "splitter": "best",
    "max_features": None,
    "leaf_order": "variance",
    "min_samples_leaf": 1,
    "max_depth": None,
    "l2_regularization": 0.0,
    "subsample": 1.0,
    "colsample_bytree": 1.0,
    "tree_type": "best-first",
    "early_stopping": False,
    "n_iter_no_change": None,
    "sketch_dim": None,
    "max_bins": None,
    "refine_cuts": False,
    "factor_rank": None,
    "factor_tol": RANK_TOLERANCE,
    "n_landmarks": None,
}


#: Bit generators whose state a saved model records (plain integers, JSON): numpy's default
#: (int seeds and None) and its DXSM variant.
SAVED_GENERATORS = ("PCG64", "PCG64DXSM")


def generator_state(rng: np.random.Generator) -> dict[str, Any] | None:
    """The state of ``rng``'s bit generator as JSON values (numpy's ``bit_generator.state``:
    two 128-bit integers and a buffered 32-bit draw), None for bit generators other than
    SAVED_GENERATORS. O(1)."""
    state = dict(rng.bit_generator.state)
    return state if state["bit_generator"] in SAVED_GENERATORS else None


def generator_at(state: Any) -> np.random.Generator:
    """A generator at a :func:`generator_state`, checked field by field (it comes from a
    file); raises ValueError naming what is wrong."""
    below = {"state": 1 << 128, "inc": 1 << 128}
    if (
        not isinstance(state, dict)
        or set(state) != {"bit_generator", "state", "has_uint32", "uinteger"}
        or state["bit_generator"] not in SAVED_GENERATORS
        or not isinstance(state["state"], dict)
        or set(state["state"]) != set(below)
        or not all(_int_below(state["state"][k], bound) for k, bound in below.items())
        or not _int_below(state["has_uint32"], 2)
        or not _int_below(state["uinteger"], 1 << 32)
    ):
        raise ValueError(f"the random generator's state is not one of {SAVED_GENERATORS}'s")
    bit_generator = getattr(np.random, state["bit_generator"])()
    bit_generator.state = state
    return np.random.Generator(bit_generator)


def _int_below(value: Any, bound: int) -> bool:
    return type(value) is int and 0 <= value < bound


@dataclass
class BoostResult:
    """The trees with, per tree, each training row's leaf, fitting count (None: every row
    once) and (losses whose leaf values are not leaf means) weight in its leaf's value;
    F_0 and its weights."""

    trees: list[TreeArrays]
    train_leaf: np.ndarray
    train_count: np.ndarray | None
    train_weight: np.ndarray | None
    init: np.ndarray
    init_weight: np.ndarray | None
    train_loss: np.ndarray
    val_loss: np.ndarray | None
    best_iteration: int
    stopped_by_callback: bool = False
    state: BoostState | None = None


def dearer_stages(primary: StageCost, other: StageCost) -> StageCost:
    """``primary``'s stages with the larger seconds and bytes of the two: the cost of a
    stage loop that may turn out to be ``other`` (known at fit time only)."""
    return replace(
        primary,
        setup_seconds=max(primary.setup_seconds, other.setup_seconds),
        stage_seconds=max(primary.stage_seconds, other.stage_seconds),
        work_bytes=max(primary.work_bytes, other.work_bytes),
        model_bytes=max(primary.model_bytes, other.model_bytes),
    )


#: A per-round table reserves at most this many bytes up front (all M rounds when they fit),
#: then grows by doubling: early stopping with a huge M never reserves M x N at once.
ROUND_TABLE_RESERVE_BYTES = 1 << 30


class RoundTable:
    """One row of N values per boosting round (a tree's training leaves, in-bag counts or
    leaf weights) written in place into one (rounds, N) array, instead of a list of rows
    stacked at the end (which held every row twice).

    The array has the smallest dtype that holds what was written: leaf numbers start as
    uint8 (256 leaves) and widen (one copy) only for a tree with more leaves. Rows are
    reserved for all ``n_rounds`` rounds when they take at most ROUND_TABLE_RESERVE_BYTES
    (pages are only resident once written), else added by doubling.
    """

    def __init__(self, n_rounds: int, n: int, dtype: type) -> None:
        self.n_rounds = n_rounds
        row_bytes = max(1, n * np.dtype(dtype).itemsize)
        reserve = min(n_rounds, max(1, ROUND_TABLE_RESERVE_BYTES // row_bytes))
        self.array: np.ndarray = np.empty((reserve, n), dtype=dtype)

    @classmethod
    def holding(cls, rows: np.ndarray, n_rounds: int) -> RoundTable:
        """A table whose first rounds are ``rows`` (copied, their dtype kept), for rounds
        up to ``n_rounds``, added by doubling (a loop rebuilt from a saved model)."""
        table = cls.__new__(cls)
        table.n_rounds, table.array = n_rounds, np.array(rows)
        return table

    def put(self, m: int, row: np.ndarray, largest: int | None = None) -> None:
        """Write round ``m``'s row; ``largest`` (integer tables) bounds its values."""
        if largest is not None and largest > np.iinfo(self.array.dtype).max:
            self.array = self.array.astype(
                np.promote_types(self.array.dtype, np.min_scalar_type(largest))
            )
        if m == len(self.array):
            grown = np.empty((min(2 * m, self.n_rounds), self.array.shape[1]), self.array.dtype)
            grown[:m] = self.array
            self.array = grown
        self.array[m] = row

    def rows(self, n_rows: int) -> np.ndarray:
        """The first ``n_rows`` rounds' rows (a view)."""
        return self.array[:n_rows]

    def extend(self, n_rounds: int) -> None:
        """Allow rows up to round ``n_rounds`` (a continued loop); they are added by doubling."""
        self.n_rounds = max(self.n_rounds, n_rounds)


@dataclass
class BoostState:
    """The stage loop after its last round: all that continuing it needs (warm start), so
    that a continued loop grows exactly the trees of one loop with the larger M.

    F (N, r) on the training rows (the residuals are phi - F, recomputed bit for bit), F on
    the validation rows, the trees with their round tables, the losses so far, the
    early-stopping counters and the random generator at the next round's draws (sketch,
    subsample, feature draws). Memory beyond the model: F, N x r float64, and the validation
    rows' F; the round tables are the model's own arrays (views), not copies.

    ``resume_draws``: the generator's state (:func:`generator_state`) after the round the
    model keeps (the last one, or early stopping's best), where a model saved with the kept
    trees resumes (:meth:`replay`); None when the generator's state cannot be saved.
    """

    F: np.ndarray
    F_val: np.ndarray | None
    init: np.ndarray
    init_weight: np.ndarray | None
    trees: list[TreeArrays]
    leaves: RoundTable
    counts: RoundTable | None
    weights: RoundTable | None
    train_loss: list[float]
    val_loss: list[float]
    stopping: EarlyStopping | None
    rng: np.random.Generator
    resume_draws: dict[str, Any] | None = None

    @classmethod
    def start(
        cls,
        loss: FeatureLoss,
        phi: np.ndarray,
        n_estimators: int,
        subsampled: bool,
        eval_data: EvalData | None,
        stopping: EarlyStopping | None,
        rng: np.random.Generator,
    ) -> BoostState:
        """Round 0: F = F_0 everywhere, empty tables."""
        n = phi.shape[0]
        init, init_weight = loss.initial(phi)
        return cls(
            F=np.tile(init, (n, 1)),
            F_val=None if eval_data is None else np.tile(init, (len(eval_data.X), 1)),
            init=init,
            init_weight=init_weight,
            trees=[],
            leaves=RoundTable(n_estimators, n, np.uint8),
            counts=RoundTable(n_estimators, n, np.uint8) if subsampled else None,
            weights=None,  # created by the first stage that has weights
            train_loss=[],
            val_loss=[],
            stopping=stopping,
            rng=rng,
        )

    @classmethod
    def replay(
        cls,
        ensemble: TreeEnsemble,
        loss: FeatureLoss,
        phi: np.ndarray,
        diag: np.ndarray,
        *,
        learning_rate: float,
        n_estimators: int,
        eval_data: EvalData | None,
        stopping: EarlyStopping | None,
        rng: np.random.Generator,
    ) -> BoostState:
        """The state after the rounds of ``ensemble`` (a model loaded from disk), rebuilt
        from its trees instead of growing them: F = F_0 plus each tree's values at its
        training leaves, in round order, by the loss's own step (so bit for bit the loop's
        F), F on the validation rows likewise, the losses re-scored as the loop scored them
        and the early-stopping counters fed with them; ``rng`` is the generator at the next
        round's draws. The caller compares the re-scored losses with the model's recorded
        ones. O(M (N + Q) r) for M trees, N training and Q validation rows; no tree grown."""
        n, trees = phi.shape[0], ensemble.trees()
        F = np.tile(ensemble.init, (n, 1))
        residual = phi - F
        F_val, val_leaves = None, None
        if eval_data is not None:
            F_val = np.tile(ensemble.init, (len(eval_data.X), 1))
            val_leaves = ensemble.apply(eval_data.X)
        monitor = RoundMonitor(n_estimators, None, stopping)
        train_loss: list[float] = []
        val_loss: list[float] = []
        for m, tree in enumerate(trees):
            loss.stage_target(residual)  # the round's loss state (Huber's delta)
            leaf = ensemble.train_leaf[m].astype(np.int32)  # the loop's leaf dtype
            train_loss.append(loss.step(phi, diag, F, tree.value, leaf, learning_rate, residual))
            if F_val is not None and val_leaves is not None and eval_data is not None:
                F_val += learning_rate * tree.value[val_leaves[m]]
                val_loss.append(loss(eval_data.phi, eval_data.diag, F_val))
            monitor.end_round(m, train_loss[-1], val_loss[-1] if val_loss else None)
        counts, weights = ensemble.train_count, ensemble.train_weight
        return cls(
            F=F,
            F_val=F_val,
            init=ensemble.init,
            init_weight=ensemble.init_weight,
            trees=trees,
            leaves=RoundTable.holding(ensemble.train_leaf, n_estimators),
            counts=None if counts is None else RoundTable.holding(counts, n_estimators),
            weights=None if weights is None else RoundTable.holding(weights, n_estimators),
            train_loss=train_loss,
            val_loss=val_loss,
            stopping=stopping,
            rng=rng,
            resume_draws=generator_state(rng),
        )

    @property
    def n_rounds(self) -> int:
        """Rounds run so far."""
        return len(self.trees)

    @property
    def stopped_early(self) -> bool:
        """Whether early stopping ended the loop: a longer loop would have stopped there too."""
        s = self.stopping
        return s is not None and s.stale >= s.n_iter_no_change


def boost(
    X: Any,
    phi: np.ndarray,
    diag: np.ndarray,
    *,
    loss: FeatureLoss,
    learner: BaseLearner,
    n_estimators: int,
    learning_rate: float,
    subsample: float,
    rng: np.random.Generator,
    eval_data: EvalData | None = None,
    stopping: EarlyStopping | None = None,
    callback: Callable[[FitProgress], bool | None] | None = None,
    state: BoostState | None = None,
) -> BoostResult:
    """Algorithm 3 with shrinkage on the factor: F_0, then F_m = F_{m-1} + nu h_m.

    ``loss`` (:mod:`okcore.losses`) gives F_0, the rows each tree is fitted to (the
    residuals for the square loss, Friedman's negative gradient otherwise) and the leaf
    values, always combinations of the leaf's residual rows (Friedman 2001, Algorithm 1).
    Subsampling fits each tree on a random fraction of the rows; all residuals are updated.
    ``stopping`` (:class:`~okcore.callbacks.EarlyStopping`, a round callback) stops the loop
    on the validation loss and ``best_iteration`` is then its round of the lowest loss;
    ``callback`` returning True stops the loop. Each stage comes from ``learner``
    (:mod:`okcore.learners`: OK3 trees, or any :class:`~okcore.learners.BaseLearner`), which
    the loop closes at the end. O(M (N r + one stage)).

    ``state`` (warm start): the :class:`BoostState` of an earlier call's result (on the same
    X, phi, ``eval_data``, loss, learner and rates), continued from its last round up to
    ``n_estimators``; its generator and early-stopping counters replace ``rng`` and
    ``stopping``, and it is updated in place. The trees, tables and losses are those of one
    call with the larger ``n_estimators``, bit for bit; a state whose loop stopped early
    grows nothing (the longer loop stops at the same round). The result's ``state``
    continues it.

    Memory: F and the residuals (N, r), plus the training leaves, M x N of the smallest
    unsigned type (1 byte per row and tree up to 256 leaves); in-bag counts (1 byte) only
    with subsampling, leaf weights (8 bytes) only for the robust losses.
    """
    n, n_fit = X.shape[0], max(1, int(round(subsample * X.shape[0])))
    if state is None:
        state = BoostState.start(loss, phi, n_estimators, n_fit < n, eval_data, stopping, rng)
    else:
        for table in (state.leaves, state.counts, state.weights):
            if table is not None:
                table.extend(n_estimators)
    rng, stopping, F, F_val = state.rng, state.stopping, state.F, state.F_val
    trees, train_loss, val_loss = state.trees, state.train_loss, state.val_loss
    monitor = RoundMonitor(n_estimators, callback, stopping)
    in_bag = np.ones(n, dtype=bool)
    residual = phi - F
    first = n_estimators if state.stopped_early else state.n_rounds
    runner = getattr(learner, "runner", SERIAL)  # the learner's threads, if it has any
    try:
        for m in range(first, n_estimators):
            target = loss.stage_target(residual)
            rows = None
            if n_fit < n:
                rows = np.sort(rng.choice(n, n_fit, replace=False))
                in_bag[:] = False
                in_bag[rows] = True
            tree, leaf = learner.fit_stage(target, rng, rows)
            value, weight = loss.leaf_values(residual, leaf, in_bag, tree.n_leaves)
            if value is not None:
                tree = replace(tree, value=value)
            trees.append(tree)
            state.leaves.put(m, leaf, largest=tree.n_leaves - 1)
            if state.counts is not None:
                state.counts.put(m, in_bag)
            if weight is not None:
                if state.weights is None:
                    state.weights = RoundTable(n_estimators, n, np.float64)
                state.weights.put(m, weight)
            # F += nu h_m, the next residuals and the training loss in one pass
            train_loss.append(
                loss.step(phi, diag, F, tree.value, leaf, learning_rate, residual, runner)
            )
            if eval_data is not None:
                assert F_val is not None
                F_val += learning_rate * tree.value[tree_leaves(tree, eval_data.X)]
                val_loss.append(loss(eval_data.phi, eval_data.diag, F_val))
            stop = monitor.end_round(m, train_loss[-1], val_loss[-1] if val_loss else None)
            if stopping is None or stopping.improved:  # a round a saved model keeps
                state.resume_draws = generator_state(rng)
            if stop:
                break
    finally:
        learner.close()
    n_trees = len(trees)
    return BoostResult(
        trees=list(trees),
        train_leaf=state.leaves.rows(n_trees),
        train_count=None if state.counts is None else state.counts.rows(n_trees),
        train_weight=None if state.weights is None else state.weights.rows(n_trees),
        init=state.init,
        init_weight=state.init_weight,
        train_loss=np.array(train_loss),
        val_loss=np.array(val_loss) if eval_data else None,
        best_iteration=monitor.best_round(n_trees),
        stopped_by_callback=monitor.stopped,
        state=state,
    )


#: The parameters a warm start may change: they do not change the trees.
WARM_START_FREE = frozenset({"n_estimators", "n_jobs", "warm_start"})


@dataclass
class Continuation:
    """What a fitted :class:`OKBoostRegressor` keeps to add trees (``warm_start``): the
    loop's :class:`BoostState`, the validation data, the training rows, the parameters it
    was fitted with (but WARM_START_FREE) and the data's fingerprint.

    A model loaded from disk has no state (None) but the generator's state after its kept
    round, ``draws`` (None: not saveable): its next warm start rebuilds the state from the
    trees (:meth:`BoostState.replay`). ``plan``: the fit's :class:`GrowthPlan`, which the
    added trees follow (a loaded model's is the one it was saved with)."""

    state: BoostState | None
    eval_data: EvalData | None
    rows: np.ndarray
    params: dict[str, Any]
    fingerprint: str
    plan: GrowthPlan
    draws: dict[str, Any] | None = None

    def record(self) -> dict[str, Any]:
        """What a saved model keeps to be continued after loading, as JSON values."""
        draws = self.draws if self.state is None else self.state.resume_draws
        return {"fingerprint": self.fingerprint, "generator": draws, "plan": asdict(self.plan)}


def _same_value(a: Any, b: Any) -> bool:
    """Whether a parameter kept its value: the same object, or equal values of one type."""
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


class OKBoostRegressor(StagedPredictions, TreeEstimator):
    """Gradient boosting of OK3 trees in a kernelized output space (OKBoost, Algorithm 3).

    Parameters
    ----------
    loss : {"squared", "absolute", "huber"}
        The loss in the output feature space (:mod:`okcore.losses`): "squared" (default,
        the paper) ||phi(y) - F(x)||^2; "absolute" ||phi(y) - F(x)|| (Friedman's
        LAD_TreeBoost kernelized: trees on unit residual directions, geometric-median
        leaves); "huber" (Friedman's M_TreeBoost kernelized, squared below the
        ``alpha``-quantile of the residual norms, absolute above). The robust losses
        resist wrong training outputs; their leaves cost O(T n r) for T Weiszfeld
        iterations instead of O(n r).
    alpha : float in (0, 1)
        The quantile of the residual norms where the Huber loss turns from squared to
        absolute, re-set every stage (default 0.9). Used by ``loss="huber"`` only.
    n_estimators : int or "auto"
        M, the number of boosting rounds; with early stopping the most rounds. "auto"
        (default): by the number N of training rows given to ``fit`` (before any
        early-stopping hold-out), AUTO_N_ESTIMATORS_SMALL (300) below
        AUTO_N_ESTIMATORS_MIN_ROWS (10,000) rows and AUTO_N_ESTIMATORS_LARGE (500) from
        there (:func:`default_n_estimators`; docs/RESULTS.md section 9.14: on many rows the
        extra rounds lowered the held-out error by 7-15 % for 1.6 times the CPU, still far
        below the peers' CPU; on fewer rows by 1-3 %, while the small real problems would
        lose their margin on the peers' CPU); the fitted ``n_estimators_planned_`` says
        which (:meth:`resolve_n_estimators`).
    learning_rate : float
        nu in (0, 1], the shrinkage of every tree (F_0, the mean or for the robust losses
        the geometric median, is not shrunk). Default 0.1.
    max_splits : int or None
        J, splits per best-first tree (J + 1 leaves). None (default): 10, and
        ``tree_type="auto"`` may grow oblivious trees; an int asks for best-first trees of
        that size (see ``tree_type``).
    splitter, max_features, leaf_order, min_samples_leaf, max_depth :
        Growth of each OK3 tree, see :class:`~okcore.trees.tree.OK3Regressor`;
        ``splitter="random"`` gives the paper's OK3-et + OKBoost. ``leaf_order`` defaults to
        "gain" (split the leaf whose best split reduces the loss most, as LightGBM's
        leaf-wise growth); the paper's "variance" (the leaf of highest N*var) was worse in
        held-out error and CPU on every problem measured (docs/RESULTS.md section 9.4).
        ``max_features`` defaults to 1.0, all p inputs are candidates at every node, also
        for ``splitter="random"`` (scikit-learn's and Geurts' extra-trees regression
        default); ``"sqrt"`` is the cheap option when the signal is spread over many inputs.
    l2_regularization : float >= 0 or "auto"
        lambda, the L2 penalty on the leaf values (XGBoost's ``reg_lambda``, LightGBM's
        ``lambda_l2``, CatBoost's ``l2_leaf_reg``): each leaf value is the ridge solution
        argmin_v sum_i ||r_i - v||^2 + lambda ||v||^2 = (sum of the leaf's residual rows) /
        (n + lambda), and splits are scored by the reduction of that penalised objective
        (||T_L||^2 / (n_L + lambda) + ||T_R||^2 / (n_R + lambda) - ||T||^2 / (n + lambda)),
        so a split whose reduction is not positive is not made. Small leaves are shrunk
        most. F(x) stays a combination of the phi(y_i): each tree's weights over its
        leaf's residual rows become 1 / (n + lambda) (summing to n / (n + lambda) < 1, the
        ridge shrinkage of the step), while the rows of W^F still sum to 1 (F_0 is the
        mean and every residual phi_i - F(x_i) has weights summing to 0). 0 is the paper's
        leaf mean. Squared loss only: the robust losses' leaves (geometric medians, Huber
        steps) are not the minimisers of a penalised sum of squares, and a penalty with
        them is refused. "auto" (default): for oblivious trees with the squared loss
        OBLIVIOUS_L2_MANY_OUTPUTS (10) when the output factor has r > 1 columns,
        OBLIVIOUS_L2_ONE_OUTPUT (30) for one; else 0 (docs/RESULTS.md sections 9.7, 9.11,
        9.12).
    subsample : float in (0, 1]
        Fraction of rows each tree is fitted on (stochastic gradient boosting).
    colsample_bytree : float in (0, 1]
        Fraction of the input features each tree may split on, drawn anew for every tree
        (XGBoost's and LightGBM's ``colsample_bytree``): round(fraction x p) features, at
        least 1. ``max_features`` then picks each node's (oblivious trees: each level's)
        candidates among them. 1.0 (default): all features, and no random draw.
    tree_type : {"auto", "best-first", "oblivious"}
        "auto" (default): oblivious trees wherever they apply and no best-first tree size
        is asked for -- ``max_splits=None``, ``splitter="best"``, ``max_bins`` not None,
        ``max_depth`` None or at most 16, dense X --, else best-first trees; the fitted
        ``tree_type_`` says which (:meth:`resolve_tree_type`). Oblivious
        trees gave the lowest held-out error per CPU second on every many-output problem
        measured, and on one-output problems when deep (docs/RESULTS.md sections 9.7 and
        9.11).
        "best-first": OK3 trees of ``max_splits`` splits grown in ``leaf_order``.
        "oblivious": symmetric trees (CatBoost's): one (feature, threshold) per level shared
        by every node of the level, chosen to maximise the summed reduction of N*var (the
        penalised objective with ``l2_regularization``) over the level's nodes, of depth
        ``max_depth`` (None: 4 when the output factor has r > 1 columns; for one,
        floor(log2(N / 8)) for the N training rows, between 6 and 10 -- 10 from 8,192 rows
        --; at most 16), so up to 2^depth leaves; ``max_splits`` and
        ``leaf_order`` do not apply, ``max_features`` draws each level's candidate
        features, and a node whose children would hold fewer than ``min_samples_leaf`` rows
        passes to the next level uncut (:mod:`okcore.trees.oblivious`). They use the
        histogram search only (``max_bins`` "auto" is 255 and ``sketch_dim`` "auto" is 8
        when r > 8, at every size; with at most ``max_bins`` distinct values per feature
        its cuts are the exact ones; ``refine_cuts`` moves each level's cut to the best
        exact one inside the two bins around it), on dense inputs, with
        ``splitter="best"``. With unit sample
        weights a minimum leaf weight is ``min_samples_leaf``.
    early_stopping : "auto", True or False
        Stop when the validation loss did not improve by ``tol`` for ``n_iter_no_change``
        rounds, and keep the trees up to the best round (scikit-learn's
        HistGradientBoosting rule). The validation set is ``eval_set`` if given, else a
        random ``validation_fraction`` of the training rows, which are then not fitted.
        "auto" (default): on when ``n_iter_no_change`` is given (scikit-learn's
        GradientBoostingRegressor rule), else off: with the default trees and M = 300 a
        10 % validation split cost 35 % held-out MSE at N = 16,000 (three seeds; the loop
        kept 299-300 of 300 trees, so the lost rows were the whole cost) and stopped far
        too early at N = 4,000 (docs/RESULTS.md section 9.7). True: on, with a patience
        of DEFAULT_N_ITER_NO_CHANGE (10) rounds unless ``n_iter_no_change`` says
        otherwise; False: never (``n_iter_no_change`` must then be None).
    n_iter_no_change : int or None
        The patience of early stopping; None: DEFAULT_N_ITER_NO_CHANGE (10) rounds when
        early stopping is on. An int turns early stopping on under ``early_stopping="auto"``.
    validation_fraction : float in (0, 1)
        Rows held out for early stopping without an ``eval_set`` (default 0.1).
    tol : float >= 0
    sketch_dim : int, "auto" or None
        Search each tree's splits on a k-dimensional Gaussian random projection of the
        residuals (SketchBoost) instead of all r factor columns: the search costs k/r of the
        exact one; leaf values stay exact, only splits with close scores may change. None
        searches exactly. Its accuracy cost is measured in docs/PERFORMANCE.md. With an
        orthogonal projection and k >= r the gains, and so the trees, are exact. "auto"
        (default): 8 when the fast search is on (see ``max_bins``) and r > 8, else None.
    max_bins : int in [2, 255], "auto" or None
        Histogram split search: inputs binned once per fit into at most ``max_bins``
        quantile bins, per-node histograms of the (sketched) residuals, the larger child's
        by subtraction. Exactly the exact search's trees when no feature has more distinct
        values than ``max_bins``. None: exact presorted search. "auto" (default): 255 when
        N x r >= AUTO_FAST_MIN_WORK (2e5), else None. ``max_bins=None, sketch_dim=None`` is
        the paper's algorithm at any size.
    refine_cuts : "auto", True or False
        With the histogram search and ``splitter="best"``: move each chosen bin edge (an
        oblivious tree's: each level's) to the best exact cut inside the two bins around it
        (see :class:`~okcore.trees.tree.OK3Regressor`), so a sharp step in the outputs is
        not missed by up to a bin; keeps the raw inputs, 8 bytes per value, during the fit.
        "auto" (default): refined, except the cuts of oblivious trees on one output column
        (:func:`resolve_refine_cuts`; docs/RESULTS.md section 9.15: refined cuts lowered
        the synthetic problem's held-out MSE 6-38 % at N = 4,000-64,000, and cost kin40k's
        deep one-output trees 2-5 % NMSE and 16 % more CPU).
    factor_rank, factor_tol : int or None, float
        Truncation of the output factor Phi: at most ``factor_rank`` eigenpairs of K, and only
        eigenvalues above ``factor_tol`` times the largest (default: exact up to 1e-12).
    n_landmarks : int or None
        Nystrom factor of an RBF / polynomial output kernel on that many landmark outputs
        (random training outputs, seeded by ``random_state``): O(N m) memory, no N x N.
    n_jobs : int or None
        Threads for the binning, the split search (the exact search's features; the
        histogram search's builds, scans, row statistics and sketch), the boosting step and
        W^F (None = 1, -1 = all cores). The model does not depend on it.
    random_state : None, int or Generator
    warm_start : bool
        scikit-learn's warm start (as GradientBoostingRegressor's): when the estimator is
        fitted, ``fit`` on the same data (X, outputs, kernel and ``eval_set``, checked by a
        fingerprint: :class:`~okcore.exceptions.DataError` otherwise) with a larger
        ``n_estimators`` adds the missing rounds to the fitted trees instead of starting
        over, with no new output factor: the model equals, bit for bit, a fit with the larger
        ``n_estimators`` (same trees, random draws, training leaves, W^F, early-stopping
        split and rounds). An equal ``n_estimators`` adds nothing, a smaller one is refused,
        and so is a change of any parameter but ``n_estimators``, ``n_jobs`` and
        ``warm_start`` (:class:`~okcore.exceptions.InvalidParameterError`), since the added
        trees would not be those of any single fit. A fit that early stopping ended adds
        nothing (a longer fit stops at the same round). Every fit keeps what continuing
        needs in memory: F on the training rows (N x r float64, as much as the output
        factor) and on the validation rows, plus the trees that early stopping did not keep.
        A model loaded from disk continues too (``load(path).set_params(n_estimators=more,
        warm_start=True).fit(X, Y)``, the same data), bit for bit the direct fit: the saved
        model records the data's fingerprint, the random generator's state after its kept
        round and its :meth:`growth_plan` (a few hundred bytes of JSON; a plan this okcore
        resolves otherwise is refused), and the first warm start rebuilds the loop
        from the saved trees -- F on the training rows by adding each tree's leaf values in
        order, the losses and early-stopping counters by re-scoring them (they must equal
        the recorded ones, else a :class:`~okcore.exceptions.DataError`) -- in O(M (N + Q)
        r), growing no tree; rounds that early stopping dropped after the best one are grown
        again, and with early stopping on held-out rows (no ``eval_set``) the output factor
        of all the given outputs is rebuilt once (the held-out rows' outputs are not saved).
        Models saved before the record existed, and fits from a random Generator other than
        PCG64, load and predict but refuse a warm start (refit with warm_start=False).
        Default False: every ``fit`` starts over.

    Fitted attributes: ``output_space_``, ``ensemble_``, ``train_loss_`` (M,) and
    ``validation_loss_`` (M,) or None, both of ``loss`` after each round (Huber: at that
    round's delta), ``n_estimators_`` (trees kept), ``n_estimators_planned_`` (the rounds
    the fit was to run: ``n_estimators``, "auto" resolved),
    ``train_indices_`` (rows of the given data used as training outputs),
    ``stopped_by_callback_``, ``fit_time_``, ``feature_importances_``, ``max_bins_``,
    ``sketch_dim_`` (the search used, "auto" resolved) and ``tree_type_`` (the trees grown,
    "auto" resolved).

    ``staged_predict``, ``staged_predict_kernel``, ``staged_predict_features``
    (:class:`~okcore.base.StagedPredictions`): predictions after each round m = 1..M,
    exactly those of a refit with ``n_estimators=m`` (the stage loop never looks ahead);
    with early stopping, over the trees kept.
    """

    supports_eval_set = True
    _parameter_constraints = {
        **TREE_CONSTRAINTS,
        "loss": [Options(tuple(LOSSES))],
        "alpha": [Interval(float, 0.0, 1.0, "neither")],
        "n_estimators": [Interval(int, 1, None, "left"), Options(("auto",))],
        "learning_rate": [Interval(float, 0.0, 1.0, "right")],
        "max_splits": [Interval(int, 1, None, "left"), Options((None,))],
        "subsample": [Interval(float, 0.0, 1.0, "right")],
        "colsample_bytree": [Interval(float, 0.0, 1.0, "right")],
        "tree_type": [Options(TREE_TYPES)],
        "early_stopping": [Options(("auto", True, False))],
        "n_iter_no_change": [Interval(int, 1, None, "left"), Options((None,))],
        "validation_fraction": [Interval(float, 0.0, 1.0, "neither")],
        "tol": [Interval(float, 0.0, None, "left")],
        "l2_regularization": [Interval(float, 0.0, None, "left"), Options(("auto",))],
        "sketch_dim": [Interval(int, 1, None, "left"), Options(("auto", None))],
        "max_bins": [Interval(int, 2, 255, "both"), Options(("auto", None))],
        "refine_cuts": [Options(("auto", True, False))],
        "warm_start": [Options((True, False))],
    }

    def __init__(
        self,
        *,
        loss: str = "squared",
        alpha: float = 0.9,
        n_estimators: int | str = "auto",
        learning_rate: float = 0.1,
        max_splits: int | None = None,
        splitter: str = "best",
        max_features: Any = 1.0,
        leaf_order: str = "gain",
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
        """The tree type a fit on inputs ``X`` grows: ``tree_type``, or for "auto"
        "oblivious" where no best-first tree size is given and oblivious trees apply
        (``max_splits=None``, ``splitter="best"``, ``max_bins`` not None, ``max_depth``
        None or at most MAX_OBLIVIOUS_DEPTH, X not a sparse matrix) and "best-first"
        otherwise. ``X=None`` (inputs not known yet): as for dense X."""
        if self.tree_type != "auto":
            return str(self.tree_type)
        applies = (
            self.max_splits is None
            and self.splitter == "best"
            and self.max_bins is not None
            and (self.max_depth is None or self.max_depth <= MAX_OBLIVIOUS_DEPTH)
            and not sparse.issparse(X)
        )
        return "oblivious" if applies else "best-first"

    def growth_plan(self, n_samples: int, rank: int, tree_type: str | None = None) -> GrowthPlan:
        """How a fit on ``n_samples`` training rows and a factor of ``rank`` columns grows its
        trees (:class:`GrowthPlan`): ``tree_type`` (None: :meth:`resolve_tree_type` of dense
        inputs), ``max_splits`` None as DEFAULT_MAX_SPLITS, an oblivious tree's ``max_depth``
        None as :func:`default_oblivious_depth` of ``rank`` and ``n_samples``, ``l2_regularization`` "auto",
        and the split search by :func:`resolve_search` -- oblivious trees search the fast
        way at every size: histograms, and "auto" sketches when r > AUTO_SKETCH_DIM (below
        the fast threshold too: on the drug-target sets (95-223 output columns) 5x less CPU
        for a higher AUROC, docs/RESULTS.md section 9.7). A fit resolves it once; the cost
        model asks for it before one. O(1)."""
        kind = self.resolve_tree_type() if tree_type is None else tree_type
        oblivious = kind == "oblivious"
        max_splits = self.max_splits or DEFAULT_MAX_SPLITS
        max_depth = self.max_depth
        if oblivious and max_depth is None:
            max_depth = default_oblivious_depth(rank, n_samples)
        penalty = self.l2_regularization
        if isinstance(penalty, str):  # "auto"
            squared = self.loss == "squared"
            penalty = default_oblivious_l2(rank) if oblivious and squared else 0.0
        max_bins, sketch_dim = resolve_search(
            self.max_bins, self.sketch_dim, n_samples, rank, oblivious
        )
        level_splits = 2 ** int(max_depth or 0) - 1  # an oblivious tree's leaves, less one
        return GrowthPlan(  # plain ints: the plan is saved as JSON
            tree_type=kind,
            max_splits=int(max_splits),
            max_depth=None if max_depth is None else int(max_depth),
            l2_regularization=float(penalty),
            max_bins=None if max_bins is None else int(max_bins),
            sketch_dim=None if sketch_dim is None else int(sketch_dim),
            refine_cuts=self._refines_cuts()
            and resolve_refine_cuts(self.refine_cuts, oblivious, rank),
            max_leaves=max_leaves(
                n_samples,
                level_splits if oblivious else max_splits,
                self.min_samples_leaf,
                max_depth,
            ),
        )

    def _planned_tree_params(self, plan: GrowthPlan, n_features: int) -> TreeParams:
        """The growth parameters of each tree of ``plan`` on ``n_features`` inputs."""
        fraction = float(self.colsample_bytree)
        tree_features = None if fraction >= 1.0 else max(1, int(round(fraction * n_features)))
        return replace(
            self._tree_params(n_features),
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
        :func:`default_n_estimators` of ``n_samples``. O(1)."""
        if isinstance(self.n_estimators, str):  # "auto", the one string allowed
            return default_n_estimators(n_samples)
        return int(self.n_estimators)

    def _n_stages(self, n_samples: int) -> int:
        return self.resolve_n_estimators(n_samples)

    def early_stopping_patience(self) -> int | None:
        """The patience a fit stops with, or None when it does not stop early
        (``early_stopping`` and ``n_iter_no_change`` resolved)."""
        if self._early_stopping_off():
            return None
        if self.n_iter_no_change is not None:
            return self.n_iter_no_change
        auto = isinstance(self.early_stopping, str)  # "auto", the one string allowed
        return None if auto else DEFAULT_N_ITER_NO_CHANGE

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
        of it and of the best-first plan sparse inputs get."""
        plan = self.growth_plan(n_samples, rank)
        cost = self._planned_cost(plan, n_samples, n_features, rank)
        if self.tree_type == "auto" and plan.tree_type != "best-first":  # what sparse X grows
            sparse_inputs = self.growth_plan(n_samples, rank, "best-first")
            cost = dearer_stages(
                cost, self._planned_cost(sparse_inputs, n_samples, n_features, rank)
            )
        return cost

    def _planned_cost(
        self, plan: GrowthPlan, n_samples: int, n_features: int, rank: int
    ) -> StageCost:
        """The trees' cost; oblivious trees also hold a level histogram (B bins x the
        level's nodes x the search width, at most HISTOGRAM_BYTES), and with a search width
        above 1 a second one for the histogram subtraction (the parents' and the built
        children's, :mod:`okcore.trees.oblivious`)."""
        search = (plan.max_bins, plan.sketch_dim)
        cost = self._stages_cost(
            n_samples, n_features, rank, search, plan.max_leaves, refined=plan.refine_cuts
        )
        if plan.tree_type != "oblivious":
            return cost
        width = min(rank, plan.sketch_dim) if plan.sketch_dim else rank
        nodes = max(cost.stage_size // 2, 1)
        bins = plan.max_bins or AUTO_MAX_BINS
        level = min(8.0 * n_features * bins * nodes * width, HISTOGRAM_BYTES)
        histograms = 2 if width > 1 else 1
        return replace(cost, work_bytes=cost.work_bytes + histograms * level)

    def fit(
        self,
        X: Any,
        Y: Any = None,
        *,
        gram: Any = None,
        kernel: Any = None,
        eval_set: tuple | None = None,
        callback: Callable[[FitProgress], bool | None] | None = None,
    ) -> Self:
        """:meth:`OKEstimator.fit <okcore.base.OKEstimator.fit>`; with ``warm_start`` on a
        fitted estimator, the rounds from ``n_estimators_`` run to ``n_estimators`` are
        added to the fitted model (see ``warm_start``): O((M - M_before) (N r + one tree))
        plus the inputs' binning, no output factor."""
        data = (X, Y, gram, kernel, eval_set)
        if self.warm_start and "ensemble_" in self.__dict__:
            return self._fit_more(X, data[1:], data_fingerprint(*data), callback)
        self.__dict__.pop("_continuation", None)
        if self._n_threads() < 2:
            super().fit(X, Y, gram=gram, kernel=kernel, eval_set=eval_set, callback=callback)
            fingerprint = data_fingerprint(*data)
        else:  # hashed beside the fit's serial start (BLAKE2b releases the GIL), not before it
            with ThreadPoolExecutor(1) as aside:
                hashing = aside.submit(data_fingerprint, *data)
                super().fit(X, Y, gram=gram, kernel=kernel, eval_set=eval_set, callback=callback)
                fingerprint = hashing.result()
        self._continuation.fingerprint = fingerprint
        return self

    def _fit_model(self, context: FitContext) -> FittedModel:
        """Algorithm 3 (:func:`boost`): the eval set is embedded in the training space first;
        early stopping without one holds out ``validation_fraction`` of the rows; the
        :meth:`growth_plan` is resolved once, on the rows the trees are fitted to."""
        X, space, rng = context.X, context.space, context.rng
        eval_data = (
            self._eval_data(context.eval_set, space) if context.eval_set is not None else None
        )
        rows = np.arange(X.shape[0])
        n_rounds = self.resolve_n_estimators(X.shape[0])  # on the rows given, as the cost model
        tree_type = self.resolve_tree_type(X)
        patience = self.early_stopping_patience()
        if eval_data is None and patience is not None:
            X, space, rows, eval_data = self._hold_out(X, space, rng)
        if tree_type == "oblivious" and sparse.issparse(X):
            raise InvalidParameterError(
                f"tree_type='oblivious' of {type(self).__name__} needs dense inputs: pass "
                "X.toarray(), or use tree_type='best-first' for sparse X."
            )
        plan = self.growth_plan(X.shape[0], space.rank, tree_type)
        result = self._boost(
            plan, n_rounds, X, space, context.callback, context.elapsed(),
            rng=rng, eval_data=eval_data, stopping=early_stopping(patience, self.tol),
        )  # fmt: skip
        assert result.state is not None
        # the next round's draws, apart from a Generator given as random_state (which the
        # caller may go on using)
        result.state.rng = copy.deepcopy(result.state.rng)
        self._continuation = Continuation(
            result.state, eval_data, rows, self._continued_params(), fingerprint="", plan=plan
        )
        return self._fitted(plan, n_rounds, result, space, rows)

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
    ) -> BoostResult:
        """The inputs the split search of ``plan`` reads, its tree learner, and
        :func:`boost` up to ``n_rounds`` rounds (from ``state`` when given)."""
        XT, binned = self._search_inputs(
            X, plan.max_bins, callback, n_rounds, elapsed, refine_cuts=plan.refine_cuts
        )
        learner = TreeLearner(
            X, self._planned_tree_params(plan, X.shape[1]), XT=XT, binned=binned,
            sketch_dim=plan.sketch_dim, n_threads=self._n_threads(),
        )  # fmt: skip
        return boost(
            X,
            space.phi,
            space.diag,
            loss=make_loss(self.loss, self.alpha),
            learner=learner,
            n_estimators=n_rounds,
            learning_rate=self.learning_rate,
            subsample=self.subsample,
            rng=rng,
            eval_data=eval_data,
            stopping=stopping,
            callback=callback,
            state=state,
        )

    def _fitted(
        self, plan: GrowthPlan, n_rounds: int, result: BoostResult, space: Any, rows: np.ndarray
    ) -> FittedModel:
        """The fitted model of a loop's result: its trees up to the best round, grown by
        ``plan`` in a loop of up to ``n_rounds`` rounds."""
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
        return FittedModel(
            ensemble.truncate(keep) if keep < ensemble.n_trees else ensemble,
            space,
            rows,
            n_estimators=keep,
            stopped_by_callback=result.stopped_by_callback,
            train_loss=result.train_loss,
            validation_loss=result.val_loss,
            max_bins=plan.max_bins,
            sketch_dim=plan.sketch_dim,
        )

    def _continued_params(self) -> dict[str, Any]:
        """The parameters a warm start must find unchanged: all but WARM_START_FREE."""
        return {k: v for k, v in self.get_params().items() if k not in WARM_START_FREE}

    def warm_start_record(self) -> dict[str, Any] | None:
        """What a saved model keeps so that a warm start continues it after loading (see
        ``warm_start``), as JSON values: the fingerprint of the fit's data and the random
        generator's state after the kept round (None if not saveable). None when the
        estimator has nothing to continue (not fitted, or loaded from a model saved
        without it)."""
        more = self.__dict__.get("_continuation")
        return None if more is None else more.record()

    def restore_warm_start(self, record: Any) -> None:
        """Adopt the :meth:`warm_start_record` of a model loaded from disk (its fitted
        attributes and parameters set): its next warm start replays its trees. Raises
        ValueError when the record is malformed (it comes from a file)."""
        plan = record.get("plan") if isinstance(record, dict) else None
        if (
            not isinstance(record, dict)
            or set(record) != {"fingerprint", "generator", "plan"}
            or not is_fingerprint(record["fingerprint"])
            or not isinstance(plan, dict)
            or set(plan) != {f.name for f in fields(GrowthPlan)}
            or not all(v is None or isinstance(v, bool | int | float | str) for v in plan.values())
        ):
            raise ValueError(
                "the warm-start record is not a data fingerprint, a generator and a growth plan"
            )
        if record["generator"] is not None:
            generator_at(record["generator"])  # checked now: a bad file fails at load
        self._continuation = Continuation(
            None,
            None,
            self.train_indices_,
            self._continued_params(),
            record["fingerprint"],
            GrowthPlan(**plan),
            draws=record["generator"],
        )

    def _fit_more(self, X: Any, data: tuple, fingerprint: str, callback: Any) -> Self:
        """Warm start: continue the fitted loop up to ``n_estimators`` on the same data
        (``data``: Y, gram, kernel and eval_set as given to fit); a loaded model's loop is
        first rebuilt from its trees (:meth:`_replayed`)."""
        self.validate_params()
        check_callback(callback)
        name = type(self).__name__
        more = self.__dict__.get("_continuation")
        if more is None:
            raise DataError(
                f"warm_start=True cannot add trees to this {name}: it was loaded from a model "
                "saved without what continuing needs (the fingerprint of its training data "
                "and its random generator's state), by an okcore older than warm start after "
                "loading. Fit it anew with warm_start=False and the n_estimators wanted; "
                "saved again, it can then be continued after loading."
            )
        changed = sorted(k for k, v in more.params.items() if not _same_value(getattr(self, k), v))
        if changed:
            was = ", ".join(f"{k}={more.params[k]!r} -> {getattr(self, k)!r}" for k in changed)
            raise InvalidParameterError(
                f"warm_start=True adds trees to the fitted {name} with its parameters; only "
                f"{', '.join(sorted(WARM_START_FREE))} may change. Changed: {was}. Set them "
                "back, or fit anew with warm_start=False."
            )
        if fingerprint != more.fingerprint:
            raise DataError(
                f"warm_start=True continues the fitted {name} on the data it was fitted on: "
                "X, the outputs (Y, gram or kernel) or eval_set differ. Pass the same data, "
                "or fit anew with warm_start=False."
            )
        start = time.perf_counter()
        X = check_inputs(X, self.n_features_in_, owner=name)
        n_rounds = self.resolve_n_estimators(X.shape[0])  # the rows given, as fit
        rounds = len(self._recorded_loss()) if more.state is None else more.state.n_rounds
        if n_rounds < rounds:
            auto = f" ({n_rounds} on {X.shape[0]} rows)" if n_rounds != self.n_estimators else ""
            raise InvalidParameterError(
                f"The 'n_estimators' parameter of {name} with warm_start=True must be at "
                f"least the {rounds} rounds already fitted. Got n_estimators="
                f"{self.n_estimators!r}{auto}; fit anew with warm_start=False for fewer trees."
            )
        if more.state is None and more.draws is None:
            raise DataError(
                f"warm_start=True cannot add trees to this loaded {name}: it was fitted with "
                f"a random Generator whose state a saved model cannot hold (bit generators "
                f"other than {', '.join(SAVED_GENERATORS)}). Fit it anew with "
                "warm_start=False, or with an int random_state to continue it after loading."
            )
        stopped = self._stopped_early() if more.state is None else more.state.stopped_early
        if stopped or n_rounds == rounds:
            self.n_estimators_planned_ = n_rounds
            return self  # the fitted model is already the longer fit's
        if more.state is None:
            more = self._replayed(more, n_rounds, X, data)
        state = more.state
        assert state is not None
        if len(more.rows) < X.shape[0]:  # early stopping held rows out
            X = X[more.rows]
        space = self.output_space_
        del self.ensemble_  # as any refit: a failure leaves an unfitted estimator
        del self._continuation
        result = self._boost(
            more.plan, n_rounds, X, space, callback, 0.0, rng=state.rng,
            eval_data=more.eval_data, state=state,
        )  # fmt: skip
        self._continuation = more
        self._set_fitted(self._fitted(more.plan, n_rounds, result, space, more.rows), start)
        return self

    def _stopped_early(self) -> bool:
        """Whether early stopping ended the fitted loop, from its recorded validation
        losses (a loaded model): a longer loop would have stopped there too."""
        stopping = early_stopping(self.early_stopping_patience(), self.tol)
        if stopping is None or self.validation_loss_ is None:
            return False
        monitor = RoundMonitor(len(self.validation_loss_), None, stopping)
        for m, val_loss in enumerate(self.validation_loss_):
            monitor.end_round(m, float(self._recorded_loss()[m]), float(val_loss))
        return stopping.stale >= stopping.n_iter_no_change

    def _recorded_loss(self) -> np.ndarray:
        """The fitted ``train_loss_`` (every round run; a boosting fit always has it)."""
        assert self.train_loss_ is not None
        return self.train_loss_

    def _replayed(self, more: Continuation, n_rounds: int, X: Any, data: tuple) -> Continuation:
        """A loaded model's continuation: the validation data rebuilt (``eval_set``, or the
        rows early stopping held out, embedded in the output factor of all the given
        outputs, rebuilt as the fit built it: the one cost of the factor again), then the
        loop's state from its trees (:meth:`BoostState.replay`), which must re-score the
        losses the model recorded bit for bit (else a DataError: the continuation would not
        be the longer fit)."""
        Y, gram, kernel, eval_set = data
        space, rows, name = self.output_space_, more.rows, type(self).__name__
        if self.growth_plan(len(rows), space.rank, self.tree_type_) != more.plan:
            raise DataError(
                f"warm_start=True cannot continue this loaded {name}: this okcore resolves its "
                "parameters to other tree sizes or split search than the okcore that saved it "
                f"({more.plan}), so the added trees would not be those of one fit. Fit it anew "
                "with warm_start=False."
            )
        eval_data = None
        if eval_set is not None:
            eval_data = self._eval_data(eval_set, space)
        elif len(rows) < X.shape[0]:
            full = self._output_space(X.shape[0], Y, gram, kernel)
            held_out = np.setdiff1d(np.arange(X.shape[0]), rows)
            eval_data = EvalData(X[held_out], full.phi[held_out], full.diag[held_out])
        ensemble = self.ensemble_
        assert isinstance(ensemble, TreeEnsemble) and more.draws is not None
        state = BoostState.replay(
            ensemble, make_loss(self.loss, self.alpha), space.phi, space.diag,
            learning_rate=self.learning_rate, n_estimators=n_rounds, eval_data=eval_data,
            stopping=early_stopping(self.early_stopping_patience(), self.tol),
            rng=generator_at(more.draws),
        )  # fmt: skip
        kept = ensemble.n_trees
        same = np.array_equal(state.train_loss, self._recorded_loss()[:kept])
        if eval_data is not None and self.validation_loss_ is not None:
            same = same and np.array_equal(state.val_loss, self.validation_loss_[:kept])
        if not same:
            raise DataError(
                f"warm_start=True cannot continue this loaded {name} exactly: its trees, "
                "replayed on the data given, do not reproduce the losses it recorded (it was "
                "saved by another okcore or numeric library, or its output factor cannot be "
                "rebuilt as it was). Fit it anew with warm_start=False."
            )
        return replace(more, state=state, eval_data=eval_data)

    def _eval_data(self, eval_set: tuple, space: Any) -> EvalData:
        return embed_eval_set(eval_set, space, self.n_features_in_, type(self).__name__)

    def _hold_out(
        self, X: np.ndarray, space: Any, rng: np.random.Generator
    ) -> tuple[np.ndarray, Any, np.ndarray, EvalData]:
        train, val = hold_out_rows(X.shape[0], self.validation_fraction, rng)
        held_out = EvalData(X[val], space.phi[val], space.diag[val])
        return X[train], space.subset(train), train, held_out

    def staged_loss(
        self, X: Any, Y: Any = None, *, gram_cross: Any = None, gram_diag: Any = None
    ) -> np.ndarray:
        """Err^phi = mean ||phi(y) - F_m(x)||^2 after each round m = 1..M, shape (M,). O(M Q r)."""
        X = self._fitted_inputs(X)
        phi, diag = self._target_features(Y, gram_cross, gram_diag, n_rows=X.shape[0])
        e = self.ensemble_
        assert isinstance(e, TreeEnsemble)
        leaves = e.apply(X)
        F = np.tile(e.init, (X.shape[0], 1))
        loss = SquaredFeatureLoss()
        out = np.empty(e.n_trees)
        for m in range(e.n_trees):
            F += e.learning_rate * e.value[e.leaf_offset[m] + leaves[m]]
            out[m] = loss(phi, diag, F)
        return out
