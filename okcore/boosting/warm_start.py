"""Warm start (scikit-learn's ``warm_start``): adding rounds to a fitted OKBoost loop, bit for
bit the longer fit, also after the model was saved and loaded.

A fit keeps a :class:`Continuation` (the loop's :class:`~okcore.boosting.loop.BoostState`,
the validation data, the training rows, its parameters, its data's fingerprint and its
:class:`~okcore.boosting.plan.GrowthPlan`); a saved model keeps its JSON :meth:`record
<Continuation.record>`, and its first warm start after loading replays its trees
(:meth:`BoostState.replay <okcore.boosting.loop.BoostState.replay>`) into the loop's state.
What continuing keeps and refuses: an equal ``n_estimators`` adds nothing, a smaller one is
refused, and so is a change of any parameter but WARM_START_FREE
(:class:`~okcore.exceptions.InvalidParameterError`), since the added trees would not be
those of any single fit; other data is a :class:`~okcore.exceptions.DataError`. A fit that
early stopping ended adds nothing (a longer fit stops at the same round). Every fit keeps
F on the training rows (N x r float64, as much as the output factor) and on the
validation rows, plus the trees that early stopping did not keep. A saved model records
the data's fingerprint, the random generator's state after its kept round and its growth
plan (a few hundred bytes of JSON; a plan this okcore resolves otherwise is refused); the
first warm start after loading rebuilds the loop from the saved trees -- F by adding each
tree's leaf values in order, the losses and early-stopping counters by re-scoring them
(they must equal the recorded ones, else a DataError) -- in O(M (N + Q) r), growing no
tree; rounds that early stopping dropped after the best one are grown again, and with
early stopping on held-out rows (no ``eval_set``) the output factor of all the given
outputs is rebuilt once. Models saved before the record existed, and fits from a random
Generator other than PCG64, load and predict but refuse a warm start.

The functions here take the :class:`~okcore.boosting.estimator.OKBoostRegressor` whose
methods call them.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from .._validation import check_inputs
from ..base import EvalData
from ..callbacks import RoundMonitor, check_callback, early_stopping
from ..exceptions import DataError, InvalidParameterError
from ..fingerprint import is_fingerprint
from ..losses import make_loss
from ..trees.ensemble import TreeEnsemble
from .loop import SAVED_GENERATORS, BoostState, generator_at
from .plan import GrowthPlan

#: The :class:`~okcore.boosting.estimator.OKBoostRegressor` these functions continue (typed
#: loosely: the estimator imports this module, and okcore has no import cycles).
OKBoostRegressor = Any

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


def continued_params(est: OKBoostRegressor) -> dict[str, Any]:
    """The parameters a warm start must find unchanged: all but WARM_START_FREE."""
    return {k: v for k, v in est.get_params().items() if k not in WARM_START_FREE}


def warm_start_record(est: OKBoostRegressor) -> dict[str, Any] | None:
    """What a saved model keeps so that a warm start continues it after loading (see
    ``warm_start``), as JSON values: the fingerprint of the fit's data and the random
    generator's state after the kept round (None if not saveable). None when the
    estimator has nothing to continue (not fitted, or loaded from a model saved
    without it)."""
    more = est.__dict__.get("_continuation")
    return None if more is None else more.record()


def restore_warm_start(est: OKBoostRegressor, record: Any) -> None:
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
    est._continuation = Continuation(
        None,
        None,
        est.train_indices_,
        continued_params(est),
        record["fingerprint"],
        GrowthPlan(**plan),
        draws=record["generator"],
    )


def fit_more(
    est: OKBoostRegressor, X: Any, data: tuple, fingerprint: str, callback: Any
) -> OKBoostRegressor:
    """Warm start: continue the fitted loop up to ``n_estimators`` on the same data
    (``data``: Y, gram, kernel and eval_set as given to fit); a loaded model's loop is
    first rebuilt from its trees (:func:`_replayed`)."""
    est.validate_params()
    check_callback(callback)
    name = type(est).__name__
    more = est.__dict__.get("_continuation")
    if more is None:
        raise DataError(
            f"warm_start=True cannot add trees to this {name}: it was loaded from a model "
            "saved without what continuing needs (the fingerprint of its training data "
            "and its random generator's state), by an okcore older than warm start after "
            "loading. Fit it anew with warm_start=False and the n_estimators wanted; "
            "saved again, it can then be continued after loading."
        )
    changed = sorted(k for k, v in more.params.items() if not _same_value(getattr(est, k), v))
    if changed:
        was = ", ".join(f"{k}={more.params[k]!r} -> {getattr(est, k)!r}" for k in changed)
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
    X = check_inputs(X, est.n_features_in_, owner=name, allow_missing=True)
    n_rounds = est.resolve_n_estimators(X.shape[0])  # the rows given, as fit
    rounds = len(_recorded_loss(est)) if more.state is None else more.state.n_rounds
    if n_rounds < rounds:
        auto = f" ({n_rounds} on {X.shape[0]} rows)" if n_rounds != est.n_estimators else ""
        raise InvalidParameterError(
            f"The 'n_estimators' parameter of {name} with warm_start=True must be at "
            f"least the {rounds} rounds already fitted. Got n_estimators="
            f"{est.n_estimators!r}{auto}; fit anew with warm_start=False for fewer trees."
        )
    if more.state is None and more.draws is None:
        raise DataError(
            f"warm_start=True cannot add trees to this loaded {name}: it was fitted with "
            f"a random Generator whose state a saved model cannot hold (bit generators "
            f"other than {', '.join(SAVED_GENERATORS)}). Fit it anew with "
            "warm_start=False, or with an int random_state to continue it after loading."
        )
    stopped = _stopped_early(est) if more.state is None else more.state.stopped_early
    if stopped or n_rounds == rounds:
        est.n_estimators_planned_ = n_rounds
        return est  # the fitted model is already the longer fit's
    if more.state is None:
        more = _replayed(est, more, n_rounds, X, data)
    state = more.state
    assert state is not None
    if len(more.rows) < X.shape[0]:  # early stopping held rows out
        X = X[more.rows]
    space = est.output_space_
    del est.ensemble_  # as any refit: a failure leaves an unfitted estimator
    del est._continuation
    result = est._boost(
        more.plan, n_rounds, X, space, callback, 0.0, rng=state.rng,
        eval_data=more.eval_data, state=state,
    )  # fmt: skip
    est._continuation = more
    est._set_fitted(est._fitted(more.plan, n_rounds, result, space, more.rows), start)
    return est


def _stopped_early(est: OKBoostRegressor) -> bool:
    """Whether early stopping ended the fitted loop, from its recorded validation
    losses (a loaded model): a longer loop would have stopped there too."""
    stopping = early_stopping(est.early_stopping_patience(), est.tol)
    if stopping is None or est.validation_loss_ is None:
        return False
    monitor = RoundMonitor(len(est.validation_loss_), None, stopping)
    for m, val_loss in enumerate(est.validation_loss_):
        monitor.end_round(m, float(_recorded_loss(est)[m]), float(val_loss))
    return stopping.stale >= stopping.n_iter_no_change


def _recorded_loss(est: OKBoostRegressor) -> np.ndarray:
    """The fitted ``train_loss_`` (every round run; a boosting fit always has it)."""
    assert est.train_loss_ is not None
    return est.train_loss_


def _replayed(
    est: OKBoostRegressor, more: Continuation, n_rounds: int, X: Any, data: tuple
) -> Continuation:
    """A loaded model's continuation: the validation data rebuilt (``eval_set``, or the
    rows early stopping held out, embedded in the output factor of all the given
    outputs, rebuilt as the fit built it: the one cost of the factor again), then the
    loop's state from its trees (:meth:`BoostState.replay`), which must re-score the
    losses the model recorded bit for bit (else a DataError: the continuation would not
    be the longer fit)."""
    Y, gram, kernel, eval_set = data
    space, rows, name = est.output_space_, more.rows, type(est).__name__
    if est.growth_plan(len(rows), space.rank, est.tree_type_) != more.plan:
        raise DataError(
            f"warm_start=True cannot continue this loaded {name}: this okcore resolves its "
            "parameters to other tree sizes or split search than the okcore that saved it "
            f"({more.plan}), so the added trees would not be those of one fit. Fit it anew "
            "with warm_start=False."
        )
    eval_data = None
    if eval_set is not None:
        eval_data = est._eval_data(eval_set, space)
    elif len(rows) < X.shape[0]:
        full = est._output_space(X.shape[0], Y, gram, kernel)
        held_out = np.setdiff1d(np.arange(X.shape[0]), rows)
        eval_data = EvalData(X[held_out], full.phi[held_out], full.diag[held_out])
    ensemble = est.ensemble_
    assert isinstance(ensemble, TreeEnsemble) and more.draws is not None
    state = BoostState.replay(
        ensemble, make_loss(est.loss, est.alpha), space.phi, space.diag,
        learning_rate=est.learning_rate, n_estimators=n_rounds, eval_data=eval_data,
        stopping=early_stopping(est.early_stopping_patience(), est.tol),
        rng=generator_at(more.draws),
    )  # fmt: skip
    kept = ensemble.n_trees
    same = np.array_equal(state.train_loss, _recorded_loss(est)[:kept])
    if eval_data is not None and est.validation_loss_ is not None:
        same = same and np.array_equal(state.val_loss, est.validation_loss_[:kept])
    if not same:
        raise DataError(
            f"warm_start=True cannot continue this loaded {name} exactly: its trees, "
            "replayed on the data given, do not reproduce the losses it recorded (it was "
            "saved by another okcore or numeric library, or its output factor cannot be "
            "rebuilt as it was). Fit it anew with warm_start=False."
        )
    return replace(more, state=state, eval_data=eval_data)
