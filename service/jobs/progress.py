"""Progress of one training job: phases, trees done, loss curves and an ETA for every phase.

okcore's fit reports each set-up phase when it starts ("output_space": factorising the
output kernel, "binning": histogram bins of the inputs; ``done`` = 0, with its own
estimate ``phase_eta``) and then every tree ("trees"). The ETA adds up what is left:

- in a set-up phase: that phase's estimate (times the measured over the estimated time of
  the same phase the last time it ran, in a job of several fits) minus the time already
  spent in it, but never less than half the time spent (a phase running past two thirds
  of its estimate is taken as two thirds done: okcore's flop model of the factorisation
  ran 2-14x low on a loaded machine, and an ETA stuck at the trees' time would say
  nothing), plus the estimates of
  the phases still to come (service.training.budget's job estimate: the set-up after the factor,
  then M x the time of one tree);
- in the trees phase: the trees left times the time of one tree, taken as the estimated
  time weighted as PRIOR_TREES trees together with the measured ones, each measured tree
  being the median of the last RECENT_TREES intervals between tree reports (a tree slowed
  once, by a compilation or the machine's other load, does not swing the ETA; the set-up
  phases never count as tree time). Intervals are read on the fit's own clock
  (FitProgress.elapsed, from the training process): reports that reach the server in a
  burst, as they do when it is busy, do not look like instant trees. The tree under way
  counts down from the time of one tree since the last report, and once it runs past that,
  counts as two thirds done (as a set-up phase): the ETA never stands still while nothing
  is reported.
- a job whose plan estimates another counted phase (``PhasePlan.counted``: a bipartite
  default's "members", counted in steps) takes it as the trees phase;
- in any other counted phase (a name okcore or a composite fit reports with ``done`` of
  ``total`` in its ``unit``, e.g. one per candidate of a model choice): the same, with no
  estimate: the median of the measured intervals per unit, or before the second report the
  time spent in the phase over the units done; before any unit is done, the job's estimate
  counted down (as before the fit reported) when the job was planned in that unit (the
  automatic choice: its budget's bound), else none.

Composite jobs (cross-validation, bipartite models) report the trees of all their fits as
one count, each fit's set-up phases as they come (service.training.cv, .bipartite).

Loss curves are kept whole in memory; a job record on disk holds at most CURVE_POINTS
points of each, evenly spaced (``curve_step`` trees apart), so it stays a few KB at any M.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field
from typing import Any

SETUP_PHASES = ("output_space", "binning")
"""okcore fit phases before the first tree (FitProgress.phase); then "trees"."""
STARTING = "starting"
"""The phase of a running job before its fit reports: its training process starting (the
first job after start-up waits for okcore's compiled kernels to load, or to compile)."""
SAVING = "saving"
"""The phase of a job whose fit is over while its model is written to the store."""
UNCOUNTED = (None, STARTING, *SETUP_PHASES)
"""Phases whose ETA comes from estimates, not from counted work."""
OVERRUN_SHARE = 0.5
"""Least time left in a set-up phase, as a share of the time already spent in it."""
PRIOR_TREES = 2.0
"""Weight, in trees, of the estimated time per tree against the measured ones."""
RECENT_TREES = 64
"""Intervals between tree reports whose median is the measured time per tree."""
CURVE_POINTS = 200
"""Most points of a loss curve in a job record."""


@dataclass(frozen=True)
class PhasePlan:
    """Estimated seconds of each phase (service.training.budget.JobEstimate)."""

    factor: float
    setup: float  # binning (or the exact search's presort), after the factor
    per_tree: float
    counted: str = "trees"  # the phase whose units per_tree estimates
    unit: str = "tree"  # what the job counts, shown before its fit reports
    save: float = 0.0  # writing the model to the store


def cost_shares(seconds: list[float], units: int) -> list[int]:
    """Each part's progress count: its share of ``units`` by its estimated ``seconds``, at
    least 1 (so that a count and its ETA follow the time when parts differ in cost)."""
    total = max(sum(seconds), 1e-9)
    return [max(1, round(units * s / total)) for s in seconds]


def downsample(curve: list[float], points: int = CURVE_POINTS) -> tuple[list[float], int]:
    """(values after trees step, 2 step, ...; step) with at most ``points`` values; the
    curve itself (step 1) when it is short enough. Values keep 6 significant digits."""
    step = max(1, -(-len(curve) // points))
    return [float(f"{v:.6g}") for v in curve[step - 1 :: step]], step


@dataclass
class Progress:
    """What the fit has reported so far, and the ETA it implies."""

    total: int
    plan: PhasePlan | None = None
    done: int = 0
    phase: str | None = None
    phase_started: float | None = None  # unix time the current phase was first reported
    phase_eta: float | None = None  # okcore's estimate of the current set-up phase (s)
    train_loss: list[float] = field(default_factory=list)
    validation_loss: list[float] | None = None
    unit: str = "tree"  # what done and total count
    # read back from a job record, which knows the rest (phase, unit, curves): a job's count
    # as its record says, not reported here (service.jobs.records.Job.from_record)
    restored: bool = field(default=False, repr=False)
    _last_tree: tuple[float, int] | None = field(default=None, repr=False)  # (time, done)
    _seen: float | None = field(default=None, repr=False)  # unix time of the last count
    _counted: str = field(default="trees", repr=False)  # the phase the intervals are of
    _pace: dict[str, float] = field(default_factory=dict, repr=False)  # measured / estimated
    _intervals: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT_TREES))

    def __post_init__(self) -> None:
        if self.plan is not None:
            self.unit = self.plan.unit

    def start(self, now: float) -> None:
        """The job runs: its training process starts (phase STARTING until the fit reports)."""
        self.phase, self.phase_started = STARTING, now

    def report(self, p: Any, now: float) -> bool:
        """Take one FitProgress (or anything with its fields; ``phase`` defaults to trees,
        ``unit`` to tree). Returns whether a new phase started."""
        phase = getattr(p, "phase", None) or "trees"
        self.total = max(int(p.total), 1)
        self.done = int(p.done)
        self.unit = getattr(p, "unit", None) or "tree"
        new_phase = phase != self.phase
        if new_phase:
            self._calibrate(now)
            self.phase, self.phase_started = phase, now
        if phase not in SETUP_PHASES and phase != self._counted:
            # another counted phase: its units take another time than the last one's
            self._counted, self._last_tree = phase, None
            self._intervals.clear()
        if phase in SETUP_PHASES:
            eta = getattr(p, "phase_eta", None)
            self.phase_eta = None if eta is None else float(eta)
            return new_phase
        self.phase_eta = None
        self._seen = now
        if p.train_loss is not None:
            self.train_loss.append(float(p.train_loss))
        if p.val_loss is not None:
            if self.validation_loss is None:
                self.validation_loss = []
            self.validation_loss.append(float(p.val_loss))
        elapsed = getattr(p, "elapsed", None)
        clock = float(elapsed) if elapsed else now  # the fit's clock when it reports one
        if self._last_tree is not None and self.done > self._last_tree[1]:
            trees = self.done - self._last_tree[1]
            self._intervals.append((clock - self._last_tree[0]) / trees)
        self._last_tree = (clock, self.done)  # done = 0: the trees phase starts now
        return new_phase

    def estimate(self) -> float | None:
        """The planned seconds of the whole job (None without a plan): what a queued job
        will take once it starts."""
        if self.plan is None:
            return None
        plan = self.plan
        return plan.factor + plan.setup + plan.per_tree * self.total + plan.save

    def saving(self, now: float) -> None:
        """The fit is over and the model is being written: the phase SAVING, estimated as
        the plan says (the count stays the last one reported)."""
        self._calibrate(now)
        self.phase, self.phase_started = SAVING, now
        self.phase_eta = None if self.plan is None else self.plan.save

    def complete(self) -> None:
        """The job is done: what it counted is all there was. A fit that ended before its
        planned count (early stopping, a model choice whose budget skipped planned fits)
        ends at the units it did (total = done); one that counted nothing, at its total."""
        if self.done > 0:
            self.total = self.done
        else:
            self.done = self.total

    def _calibrate(self, now: float) -> None:
        """The set-up phase that ends now: how long it took against okcore's estimate, the
        factor the same phase's next estimates are taken at (a job of several fits runs
        it once per fit: the first measured one sets the pace of the others)."""
        if self.phase in SETUP_PHASES and self.phase_eta and self.phase_started is not None:
            self._pace[self.phase] = max(now - self.phase_started, 0.0) / self.phase_eta

    def per_tree(self) -> float | None:
        """Seconds of one tree (of one unit of a counted phase): the estimate and the
        measured median, weighted by trees."""
        measured = statistics.median(self._intervals) if self._intervals else None
        if self.plan is None or self.phase not in (*UNCOUNTED, self.plan.counted):
            return measured
        if measured is None:
            return self.plan.per_tree
        n = len(self._intervals)
        return (PRIOR_TREES * self.plan.per_tree + n * measured) / (PRIOR_TREES + n)

    def eta(self, now: float, started: float | None) -> float | None:
        """Seconds left (see the module docstring); None when nothing is known."""
        if self.phase == SAVING:  # the last phase: its estimate counted down, then grown
            spent = now - (self.phase_started or now)
            return max((self.phase_eta or 0.0) - spent, OVERRUN_SHARE * spent)
        per_tree = self.per_tree()
        left_units = max(self.total - self.done, 0)
        trees_left = None if per_tree is None else per_tree * left_units
        plan = self.plan
        if self.phase not in UNCOUNTED:  # trees, or a counted phase of its own
            in_phase = now - (self.phase_started or now)
            if per_tree is None and self.done > 0 and in_phase > 0:
                per_tree = in_phase / self.done  # one report so far: the phase's mean rate
            if per_tree is None and plan is not None and plan.unit == self.unit:
                # nothing measured yet of the units the job was planned in: its estimate
                return self._planned_left(now, started, plan.per_tree * left_units)
            if per_tree is None or left_units == 0:
                return None if per_tree is None else 0.0
            since = max(now - (self._seen or now), 0.0)
            under_way = max(per_tree - since, OVERRUN_SHARE * since)
            return under_way + per_tree * (left_units - 1)
        if self.phase in (None, STARTING):  # running, nothing reported yet
            if plan is None or trees_left is None:
                return None
            return self._planned_left(now, started, trees_left)
        current = self.phase_eta
        if current is not None:
            current *= self._pace.get(self.phase, 1.0)
        elif plan is not None:
            current = plan.factor if self.phase == "output_space" else plan.setup
        if current is None or trees_left is None:
            return None
        spent = now - (self.phase_started or now)
        left = max(current - spent, OVERRUN_SHARE * spent)
        if self.phase == "output_space" and plan is not None:
            left += plan.setup
        return left + trees_left

    def _planned_left(self, now: float, started: float | None, units_left: float) -> float:
        """The job's estimate of the time left, ``units_left`` seconds of counted units after
        the set-up phases (as a set-up phase, at least half the time spent since the job
        started); only called with a plan."""
        assert self.plan is not None
        spent = 0.0 if started is None else now - started
        setup = self.plan.factor + self.plan.setup
        return max(setup - spent, OVERRUN_SHARE * spent) + units_left

    def curves(self, upto: int) -> dict[str, Any]:
        """The loss curves of the first ``upto`` trees, whole (curve_step 1)."""
        return {
            "train_loss": self.train_loss[:upto],
            "validation_loss": None
            if self.validation_loss is None
            else self.validation_loss[:upto],
            "curve_step": 1,
        }

    def record(self) -> dict[str, Any]:
        """The job record's progress fields: downsampled curves, last losses."""
        train, step = downsample(self.train_loss)
        validation = None if self.validation_loss is None else downsample(self.validation_loss)[0]
        return {
            "total": self.total,
            "done": self.done,
            "phase": self.phase,
            "phase_started": self.phase_started,
            "unit": self.unit,
            "train_loss": train,
            "validation_loss": validation,
            "curve_step": step,
            "last_train_loss": self.train_loss[-1] if self.train_loss else None,
            "last_validation_loss": self.validation_loss[-1] if self.validation_loss else None,
        }
