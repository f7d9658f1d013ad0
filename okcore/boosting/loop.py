"""The OKBoost stage loop (paper Algorithm 3 with shrinkage), a plain function tests can call.

:func:`boost` works on the factor Phi of K (math note s. 2): residuals phi_i - F(x_i) are
(N, r) rows, each round fits a base learner (an OK3 tree) to them and adds nu times its leaf
values. O(N r) per round plus the split search: no N x N work. :class:`BoostState` is the
loop after its last round, which a warm start continues (:mod:`okcore.boosting.warm_start`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..base import EvalData
from ..callbacks import EarlyStopping, FitProgress, RoundMonitor
from ..learners import BaseLearner
from ..losses import FeatureLoss
from ..threads import SERIAL
from ..trees.builder import TreeArrays
from ..trees.ensemble import TreeEnsemble, tree_leaves

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
        start: tuple[np.ndarray, np.ndarray | None] | None = None,
    ) -> BoostState:
        """Round 0: F = F_0 everywhere, empty tables. ``start``: a starting model's F_0 on
        the training rows (N, r) and on the validation rows (:mod:`okcore.boosting.start`);
        the trees' own F_0 and its weights are then zero."""
        n = phi.shape[0]
        init: np.ndarray
        init_weight: np.ndarray | None
        if start is not None:
            init, init_weight = np.zeros(phi.shape[1]), np.zeros(n)
            F, F_val = start[0].copy(), None if start[1] is None else start[1].copy()
        else:
            init, init_weight = loss.initial(phi)
            F = np.tile(init, (n, 1))
            F_val = None if eval_data is None else np.tile(init, (eval_data.X.shape[0], 1))
        return cls(
            F=F,
            F_val=F_val,
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
            F_val = np.tile(ensemble.init, (eval_data.X.shape[0], 1))
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
                val_loss.append(loss(eval_data.phi, eval_data.diag, F_val, eval_data.weight))
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
    start: tuple[np.ndarray, np.ndarray | None] | None = None,
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
    continues it. ``start``: F_0 of a starting model on the training and validation rows
    (:meth:`BoostState.start`) instead of the loss's.

    Memory: F and the residuals (N, r), plus the training leaves, M x N of the smallest
    unsigned type (1 byte per row and tree up to 256 leaves); in-bag counts (1 byte) only
    with subsampling, leaf weights (8 bytes) only for the robust losses.
    """
    n, n_fit = X.shape[0], max(1, int(round(subsample * X.shape[0])))
    if state is None:
        state = BoostState.start(
            loss, phi, n_estimators, n_fit < n, eval_data, stopping, rng, start
        )
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
                val_loss.append(loss(eval_data.phi, eval_data.diag, F_val, eval_data.weight))
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
