"""The bipartite task's default (POST /train with ``"task": "bipartite"`` and model "auto",
or no model): okcore's ``BipartiteRegressor()`` with no model named, the weighted rank
average of the members of ``okcore.bipartite.default`` (no HTTP here).

- What it fits: ``okcore.bipartite.default.default_members`` (names, models) and their
  weights, whatever okcore's default holds. Both sides given as similarities: the members
  take them as similarities; otherwise each side's rows are its features (a similarity
  side's rows through the empirical kernel map, as the named models take them).
- What it costs (:func:`member_costs`): okcore's own estimate of the default's fit
  (``BipartiteRegressor(inputs=...).estimate_cost``, an ``okcore.BipartiteCost`` per
  member: each member's one-sided fits by their estimators' cost models, plus its
  recovery, Kronecker ridge or NRLMF sweeps; the boosted trees dominate). The job
  estimate (:func:`default_estimate`) sums the members' seconds and disk and takes the
  largest member's memory.
- A CPU budget (``max_cpu_seconds``, per fit of the default): okcore stops the boosted
  member's fits once their share is spent (``okcore.bipartite.budget``) and its estimate
  gives the members with boosting rounds what the others leave of the budget (the others
  run in full); the record says how many rounds each side grew.
- How its job reports (:class:`DefaultProgress`): phase "members", counted in steps; each
  fit of the default (every cross-validation configuration's, then the final one) is
  STEPS_PER_FIT steps shared among the members in proportion to their estimated seconds.
  A member's steps are done when it ends; a member with trees advances with every tree of
  its row model, then of its column model. The ETA is the steps left times the estimated
  (then measured) time of one step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import okcore
from service.jobs.progress import cost_shares
from service.jobs.task import Cancelled, Reporter
from service.training.budget import BASE_BYTES, JobEstimate

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
    """A member's estimated fit on the whole network (okcore's ``BipartiteCost`` of it)."""

    name: str
    seconds: float
    trees: int  # boosting rounds of its one-sided fits (a budget cuts them), 0 without
    memory_bytes: float
    disk_bytes: float


def member_costs(
    inputs: str,
    shape: tuple[int, int],
    widths: tuple[int, int],
    max_cpu_seconds: float | None = None,
) -> list[MemberCost]:
    """The estimated cost of each member of the default on an n_rows x n_cols network
    whose sides have ``widths`` input columns, by okcore's cost model of the default
    (module docstring); under ``max_cpu_seconds`` the members with boosting rounds share
    what the others leave of it."""
    model = okcore.bipartite.BipartiteRegressor(inputs=inputs, max_cpu_seconds=max_cpu_seconds)
    cost = model.estimate_cost(*shape, *widths)
    return [
        MemberCost(name, m.seconds, m.n_rounds, m.memory_bytes, m.disk_bytes)
        for name, m in zip(default_members(inputs), cost.members, strict=True)
    ]


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
        levers="fewer row or column vertices, one named model (model) and its params",
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
