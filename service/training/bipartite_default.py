"""The bipartite task's default (POST /train with ``"task": "bipartite"`` and model "auto",
or no model): okcore's ``BipartiteRegressor()`` with no model named, the weighted rank
average of the members of ``okcore.bipartite.default`` (no HTTP here).

- What it fits: ``okcore.bipartite.default.default_members`` (names, models) and their
  weights, whatever okcore's default holds. Both sides given as similarities: the members
  take them as similarities; otherwise each side's rows are its features (a similarity
  side's rows through the empirical kernel map, as the named models take them).
- What it costs (:func:`member_costs`): each member's one-sided okcore estimators by their
  own cost model (``estimate_cost``; the boosted trees dominate), the others by a stated
  flop count over MEMBER_FLOP_RATE: weighted neighbours O(n^2 p) per side, the interaction
  recovery 2 (n_r^2 n_c + n_r n_c^2), Kronecker ridge 10 (n_r^3 + n_c^3), NRLMF
  max_iter (10 r + 60) n_r n_c.
- A CPU budget (``max_cpu_seconds``, per fit of the default): okcore stops the boosted
  member's fits once their share is spent (``okcore.bipartite.budget``); the estimate then
  gives the members with trees what the others leave of the budget, and the record says
  how many rounds each side grew.
- How its job reports (:class:`DefaultProgress`): phase "members", counted in steps; each
  fit of the default (every cross-validation configuration's, then the final one) is
  STEPS_PER_FIT steps shared among the members in proportion to their estimated seconds.
  A member's steps are done when it ends; a member with trees advances with every tree of
  its row model, then of its column model. The ETA is the steps left times the estimated
  (then measured) time of one step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import okcore
from service.jobs.progress import cost_shares
from service.jobs.task import Cancelled, Reporter
from service.training.budget import BASE_BYTES, JobEstimate

PROFILE_KERNEL = {"type": "linear"}
MEMBER_FLOP_RATE = 2e9
"""Flops per second of the members' dense linear algebra (numpy products and
eigendecompositions of a few hundred vertices, one thread, a loaded machine)."""
STEPS_PER_FIT = 1000
"""Progress steps of one fit of the default, shared among its members by estimated time."""
SCORES = (
    "rank average: each member's scores of a block are replaced by their normalised ranks "
    "among the pairs of that block in the same request, then averaged with the weights; a "
    "score orders the pairs of one request, it is not a probability"
)


def default_inputs(row_kind: str, col_kind: str) -> str:
    """The default's ``inputs``: "similarity" when both sides are similarities."""
    return "similarity" if row_kind == col_kind == "similarity" else "features"


def default_members(inputs: str) -> dict[str, Any]:
    """okcore's default members by name (unfitted), in the order of their weights."""
    return dict(
        okcore.bipartite.default.default_members(
            inputs, 0, bipartite=okcore.bipartite.BipartiteRegressor
        )
    )


def describe(member: Any) -> str:
    """A member as its record names it: the class, its one-sided model and its options."""
    if isinstance(member, okcore.bipartite.BipartiteRegressor):
        side = type(member.row_estimator).__name__
        options = [f"new_pairs={member.new_pairs!r}"]
        if member.recovery_neighbors:
            options.append(f"recovery_neighbors={member.recovery_neighbors}")
        return f"BipartiteRegressor({side}, {', '.join(options)})"
    return type(member).__name__


@dataclass(frozen=True)
class MemberCost:
    """A member's estimated fit on the whole network."""

    name: str
    seconds: float
    trees: int  # trees (stages) of its one-sided fits, 0 for a member without
    memory_bytes: float
    disk_bytes: float


def _side_cost(estimator: Any, n: int, p: int, n_outputs: int) -> tuple[float, int, float, float]:
    """(seconds, stages, memory, disk) of one one-sided fit."""
    if hasattr(estimator, "estimate_cost"):
        fit = estimator.estimate_cost(n, p, kernel=PROFILE_KERNEL, n_outputs=n_outputs)
        return fit.seconds, fit.n_stages, fit.memory_bytes, fit.disk_bytes
    return n * n * (p + 20) / MEMBER_FLOP_RATE, 0, 8.0 * n * n, 8.0 * n * (p + n_outputs)


def member_costs(
    inputs: str,
    shape: tuple[int, int],
    widths: tuple[int, int],
    max_cpu_seconds: float | None = None,
) -> list[MemberCost]:
    """The estimated cost of each member of the default on an n_rows x n_cols network
    whose sides have ``widths`` input columns (module docstring); under ``max_cpu_seconds``
    the members with trees share what the others leave of it."""
    costs = _member_costs(inputs, shape, widths)
    if max_cpu_seconds is None:
        return costs
    boosted = sum(c.seconds for c in costs if c.trees)
    left = max(float(max_cpu_seconds) - sum(c.seconds for c in costs if not c.trees), 0.0)
    scale = min(1.0, left / boosted) if boosted > 0 else 1.0
    return [replace(c, seconds=c.seconds * scale) if c.trees else c for c in costs]


def _member_costs(inputs: str, shape: tuple[int, int], widths: tuple[int, int]) -> list[MemberCost]:
    (n_r, n_c), (p_r, p_c) = shape, widths
    out = []
    for name, member in default_members(inputs).items():
        seconds = memory = disk = 0.0
        trees = 0
        if isinstance(member, okcore.bipartite.BipartiteRegressor):
            row = member.row_estimator
            col = row if member.col_estimator is None else member.col_estimator
            for est, n, p, d in ((row, n_r, p_r, n_c), (col, n_c, p_c, n_r)):
                s, m, mem, dk = _side_cost(est, n, p, d)
                seconds, trees = seconds + s, trees + m
                memory, disk = max(memory, mem), disk + dk
            if member.recovery_neighbors:
                seconds += 2.0 * (n_r * n_r * n_c + n_r * n_c * n_c) / MEMBER_FLOP_RATE
            if member.new_pairs == "kronecker":
                seconds += 10.0 * (n_r**3 + n_c**3) / MEMBER_FLOP_RATE
                disk += 8.0 * (n_r * n_c + n_r * p_r + n_c * p_c)
        elif isinstance(member, okcore.bipartite.NRLMF):
            r = int(member.n_factors)
            seconds = member.max_iter * (10.0 * r + 60.0) * n_r * n_c / MEMBER_FLOP_RATE
            memory, disk = 48.0 * n_r * n_c, 8.0 * (n_r + n_c) * (r + max(p_r, p_c))
        else:  # a member okcore adds later: costed as a dense pass over the network
            seconds = 100.0 * n_r * n_c * (p_r + p_c) / MEMBER_FLOP_RATE
        out.append(MemberCost(name, seconds, trees, memory, disk))
    return out


def default_estimate(
    costs: list[MemberCost], shape: tuple[int, int], widths: tuple[int, int], data_bytes: int
) -> JobEstimate:
    """The job estimate of one fit of the default (service.training.budget's limits apply
    to it: rows and features of the larger side, trees of the largest one-sided fit)."""
    seconds = sum(c.seconds for c in costs)
    trees = max((c.trees for c in costs), default=0)
    return JobEstimate(
        n_train=max(shape),
        n_features=max(widths),
        rank=min(shape),
        n_trees=max(trees // 2, 1),
        leaves=1,
        search="histogram",
        memory_bytes=BASE_BYTES + 2.0 * data_bytes + max(c.memory_bytes for c in costs),
        factor_seconds=0.0,
        setup_seconds=seconds,
        tree_seconds=0.0,
        disk_bytes=data_bytes + sum(c.disk_bytes for c in costs),
    )


def member_steps(costs: list[MemberCost]) -> list[int]:
    """Each member's progress steps in one fit: STEPS_PER_FIT shared by estimated time, at
    least one each."""
    return cost_shares([c.seconds for c in costs], STEPS_PER_FIT)


@dataclass
class DefaultProgress:
    """The job's reporter over the default's fits (module docstring): ``fit(i, progress)``
    takes the i-th fit's FitProgress (okcore's RankAveragedBipartite reports); raises
    :class:`Cancelled` when asked to stop."""

    reporter: Reporter
    steps: list[int]
    n_fits: int
    started: float = 0.0

    def __post_init__(self) -> None:
        self.started = time.perf_counter()

    @property
    def total(self) -> int:
        return self.n_fits * sum(self.steps)

    def fit(self, i: int, p: Any) -> None:
        if p.phase == "members":
            member, share = p.done, 0.0
        elif p.phase == "trees" and p.part and p.part.startswith("member-"):
            head, _, side = p.part.partition("/")
            member = int(head.removeprefix("member-"))
            share = 0.5 * min(p.done, p.total) / max(p.total, 1)
            share += 0.5 if side == "columns" else 0.0
        else:  # the set-up phases of a member's fits: its steps count its time
            return
        done = i * sum(self.steps) + sum(self.steps[:member])
        if member < len(self.steps):
            done += int(self.steps[member] * share)
        report = okcore.FitProgress(
            done=done,
            total=self.total,
            elapsed=time.perf_counter() - self.started,
            phase="members",
            unit="step",
            part=p.part,
        )
        if self.reporter(report):
            raise Cancelled


def _rounds(member: Any) -> list[int] | None:
    """The boosting rounds grown by a member's row and column models (None without)."""
    sides: list[Any] = [getattr(member, f"{side}_model_", None) for side in ("row", "col")]
    if not all(hasattr(s, "staged_predict") for s in sides):  # boosting only
        return None
    return [int(s.n_estimators_) for s in sides]


def default_summary(model: Any, inputs: str) -> dict[str, Any]:
    """The record's ``bipartite.default``: the members (name, model, weight, the weights of
    the blocks scored with their own; the rounds grown by each side of a boosted member) of the fitted default, its CPU budget and how
    its scores read."""
    names = list(default_members(inputs))
    fitted = model.default_model_
    weights = fitted.weights_for()
    blocks = {b: fitted.weights_for(b) for b in sorted(fitted.block_weights or {})}
    if len(names) != len(fitted.members_):  # okcore's default changed under the names
        names = [f"member-{i}" for i in range(len(fitted.members_))]
    members = []
    for i, (name, member, fit) in enumerate(
        zip(names, fitted.members, fitted.members_, strict=True)
    ):
        entry: dict[str, Any] = {"name": name, "model": describe(member), "weight": weights[i]}
        if blocks:  # blocks scored with their own weights (the default: new rows)
            entry["block_weights"] = {b: w[i] for b, w in blocks.items()}
        rounds = _rounds(fit)
        if rounds is not None:
            entry["rounds"] = rounds
        members.append(entry)
    return {
        "inputs": inputs,
        "members": members,
        "max_cpu_seconds": model.max_cpu_seconds,
        "scores": SCORES,
    }
