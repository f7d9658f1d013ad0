"""What a fit tells its caller and how its stage loops stop: :class:`FitProgress` (what a
fit callback hears), :class:`EarlyStopping` (the validation-loss stopping rule, itself a
round callback, as LightGBM's ``early_stopping``) and :class:`RoundMonitor` (the
per-round dispatch of a boosting stage loop to them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ._validation import Callable_, Options
from .exceptions import DataError

CALLBACK_CONSTRAINT: list[Any] = [Callable_(), Options((None,))]


@dataclass(frozen=True)
class FitProgress:
    """What a fit callback receives: at the start of each set-up phase, then after each tree.

    ``phase`` is "output_space" (factorising the output kernel), "binning" (histogram bins
    of the inputs) or "trees"; set-up phases report ``done=0`` and, when one can be given,
    ``phase_eta``, an estimate in seconds of how long the phase will take (its cost model is
    stated where it is computed). Losses are those of the boosting estimators only.

    The same record serves every fit that reports progress, so a caller (the service's
    jobs) follows them all alike: ``phase`` names what is being done (any name: a fit made
    of several fits reports theirs, or its own, e.g. one per candidate of a model choice),
    ``done`` of ``total`` counts its work in ``unit`` (trees; stages of a kernel model;
    fits), and ``part`` says which of the fits of a composite estimator reports ("rows" /
    "columns": the one-sided fits of a bipartite model; None: the estimator itself).
    ``elapsed`` is seconds since that fit started.
    """

    done: int
    total: int
    elapsed: float
    train_loss: float | None = None
    val_loss: float | None = None
    phase: str = "trees"
    phase_eta: float | None = None
    unit: str = "tree"
    part: str | None = None


#: A round callback: hears each round's :class:`FitProgress`, returns True to stop.
RoundCallback = Callable[[FitProgress], bool | None]


class EarlyStopping:
    """Early stopping on the validation loss, a round callback: stop once the loss has not
    improved by ``tol`` for ``n_iter_no_change`` rounds. ``best_iteration`` is the round
    (0-based) of the lowest loss, ``improved`` whether the last round heard was the best so
    far. Rounds without a validation loss are ignored."""

    def __init__(self, n_iter_no_change: int, tol: float = 0.0) -> None:
        self.n_iter_no_change, self.tol = n_iter_no_change, tol
        self.best_loss, self.best_iteration, self.stale = np.inf, 0, 0
        self.improved = False

    def __call__(self, progress: FitProgress) -> bool:
        self.improved = False
        if progress.val_loss is None:
            return False
        if progress.val_loss < self.best_loss - self.tol:
            self.best_loss, self.best_iteration, self.stale = (
                progress.val_loss,
                progress.done - 1,
                0,
            )
            self.improved = True
        else:
            self.stale += 1
        return self.stale >= self.n_iter_no_change


def early_stopping(n_iter_no_change: int | None, tol: float) -> EarlyStopping | None:
    """The early-stopping callback of a boosting estimator's parameters (None: off)."""
    return None if n_iter_no_change is None else EarlyStopping(n_iter_no_change, tol)


class RoundMonitor:
    """The per-round dispatch of a boosting stage loop (trees or kernel models): each
    round's progress goes to ``early_stopping`` (when on) and to the user's ``callback``,
    either of which stops the loop; ``stopped`` says whether the user's callback did. The
    clock starts when the monitor is made."""

    def __init__(
        self,
        n_estimators: int,
        callback: RoundCallback | None,
        early_stopping: EarlyStopping | None = None,
    ) -> None:
        self.n_estimators, self.callback, self.early_stopping = (
            n_estimators,
            callback,
            early_stopping,
        )
        self.start = time.perf_counter()
        self.stopped = False

    def begin(self) -> None:
        """Tell the callback that the first round starts (a "trees" report of done = 0 on
        the monitor's clock), for a fit whose first round does long work of its own after
        the set-up phases (kernel ridge's width and penalty search): without it, that work
        is heard as part of the last set-up phase. A stop request returned here is
        honoured at the end of the round, as a set-up phase's is."""
        if self.callback is not None:
            elapsed = time.perf_counter() - self.start
            self.callback(FitProgress(done=0, total=self.n_estimators, elapsed=elapsed))

    def end_round(self, m: int, train_loss: float, val_loss: float | None = None) -> bool:
        """Record round m (0-based); True when the loop should stop."""
        progress = FitProgress(
            done=m + 1,
            total=self.n_estimators,
            elapsed=time.perf_counter() - self.start,
            train_loss=train_loss,
            val_loss=val_loss,
        )
        stop = self.early_stopping is not None and self.early_stopping(progress)
        if self.callback is not None and self.callback(progress):
            self.stopped = True
            return True
        return stop

    @property
    def improved(self) -> bool:
        """Whether the last round is the best so far (early stopping only)."""
        return self.early_stopping is not None and self.early_stopping.improved

    def best_round(self, n_rounds: int) -> int:
        """The round to keep: the last one, or with early stopping the best one."""
        return n_rounds - 1 if self.early_stopping is None else self.early_stopping.best_iteration


def report_phase(
    callback: Any, phase: str, total: int, elapsed: float = 0.0, eta: float | None = None
) -> None:
    """Tell a fit callback that a set-up phase starts (done=0). A stop request returned here
    is honoured after the first tree: set-up phases are not interruptible."""
    if callback is not None:
        callback(FitProgress(done=0, total=total, elapsed=elapsed, phase=phase, phase_eta=eta))


def check_callback(callback: Any) -> None:
    """A fit callback is None or callable."""
    if not any(c.accepts(callback) for c in CALLBACK_CONSTRAINT):
        raise DataError(f"callback must be callable: got {callback!r}")


def part_callback(callback: Any, part: str) -> dict[str, Any]:
    """The fit keyword of one inner fit of a composite estimator: ``callback`` hearing its
    progress with ``part`` set (none without a callback: an inner estimator need not take
    one)."""
    if callback is None:
        return {}
    return {"callback": lambda p: callback(replace(p, part=part))}
