"""What the automatic choice (model "auto") and the kernel models' data-driven RBF width
need of a /train request, checked before the job is queued (no HTTP here): a 422 naming the
field to change, not a job that fails.

- The automatic choice compares models on held-out rows (``params.cv``: a holdout fraction,
  K folds or given folds, split or checked by okcore's :func:`okcore.auto.inner_folds` with
  the request's sample weights, which says when the rows cannot fill them). Its ``params.scoring`` must be a score okcore computes for the outputs' form (the same
  check as ``cv.scoring``: :func:`service.training.cv.checked_scores`).
- A kernel model with an RBF input kernel and ``gamma`` "auto" takes its width from the
  spread of the training inputs (okcore's Sun & Yao width: one over the mean squared
  distance between two rows), undefined on one row or identical rows
  (:func:`okcore.check_auto_gamma`, the rule okcore's kernel models fit by): the user must
  give ``params.gamma``.

Its job counts candidate fits (okcore's ``okcore.auto.SELECTION_UNIT``): okcore's
AutoRegressor reports (phase "selection") before each candidate fit, ``done`` / ``total``
the fits done and planned; before its first report the job counts the candidates it may try
(:func:`planned_candidates`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import okcore
from service.errors import InvalidRequest
from service.training.cv import checked_scores


def check_auto(
    est: Any,
    inputs: Any,
    form: str,
    outputs: np.ndarray | None,
    sample_weight: np.ndarray | None = None,
) -> None:
    """A 422 now for what the automatic choice ``est`` (okcore's AutoRegressor, its params
    validated) cannot do on ``inputs`` with outputs of ``form`` (``outputs``: the output
    vectors, None for a Gram matrix) and ``sample_weight``: inner folds the rows (or the
    rows of positive weight) cannot fill, given folds that are not folds of these rows, a
    score that does not apply to the outputs."""
    n = int(inputs.shape[0])
    params = est.get_params()
    cv = params["cv"]
    try:
        okcore.auto.inner_folds(n, cv, np.random.default_rng(0), sample_weight)
    except okcore.DataError as exc:
        hint = (
            f"; with {n} training rows ask for at most {n} folds, or a holdout fraction such as 0.2"
            if isinstance(cv, int)
            else ""
        )
        given = "the folds given" if isinstance(cv, list | tuple) else repr(cv)
        raise InvalidRequest(
            f"params.cv = {given} (the automatic choice's inner validation): {exc}{hint}; "
            'or name a model with `model` (e.g. "model": "okboost")',
            details=[{"loc": ["params", "cv"], "msg": str(exc)}],
        ) from None
    if isinstance(params["scoring"], str):
        checked_scores(params["scoring"], form, outputs, "params.scoring")


def width_from_inputs(params: dict[str, Any]) -> bool:
    """Whether a model with ``params`` takes its RBF input kernel's width from the training
    inputs (gamma "auto")."""
    return params.get("input_kernel") == "rbf" and params.get("gamma") == "auto"


def check_input_width(what: str, inputs: Any, fix: str, loc: list[str]) -> None:
    """A 422 now when an RBF input kernel of ``what`` (in the user's words) that takes its
    width from ``inputs`` cannot: one row, or identical rows. ``fix``: what the user can
    send instead; ``loc``: the field it names."""
    try:
        okcore.check_auto_gamma(inputs)  # okcore's rule, dense or sparse
    except okcore.DataError:
        n = int(inputs.shape[0])
        rows = "1 row" if n == 1 else f"{n} rows, all with the same inputs"
        raise InvalidRequest(
            f"{what} sets its RBF width from the spread of the training inputs (gamma "
            f"'auto'), which is undefined on {rows}: {fix}",
            details=[{"loc": loc, "msg": "an RBF width needs rows that differ"}],
        ) from None


def planned_candidates(est: Any, n: int) -> int:
    """The candidates the automatic choice ``est`` may try on ``n`` rows (okcore's portfolio
    for n rows, those of ``candidates`` if given): the job's count before okcore reports its
    planned fits."""
    names = {c.name for c in okcore.auto.regression_candidates(n)}
    asked = est.get_params()["candidates"]
    return len(names if asked is None else names & set(asked))
