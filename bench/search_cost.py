"""What model selection costs and finds on MULAN yeast (multi-label), all in one run: a full
grid against successive halving over n_estimators (over J and nu, then over J alone at
nu = 0.1: halving drops slow starters, small nu, at its first iterations), and a grid over n_estimators with one
shared fit per fold against one grid search per n_estimators value (the refits).

Data: ../shared/data/yeast_multilabel (MULAN's split, rows 917: train, :917 test; see
bench/yeast_multilabel.py). Selection by 3-fold CV on the 1,500 training genes only,
criterion ranking loss (okcore.scoring), then the chosen model refitted on them and scored
on the 917 test genes (ranking loss, micro-F1 at 0.5). CPU seconds of this process (one
thread), with the load average: compare the ratios, not the seconds.

    OKBOOST_DATA=../shared/data python -m bench.search_cost
"""

from __future__ import annotations

import os
import time

from bench.yeast_multilabel import load_yeast
from okcore import OKBoostRegressor, metrics
from okcore.model_selection import grid_search

GRID = {"max_splits": [4, 16, 64], "learning_rate": [0.03, 0.1, 0.3]}
N_ESTIMATORS = 243
SCORES = ["ranking_loss", "f1", "auroc"]


def _run(label: str, search: dict, X, Y, Xt, Yt) -> None:
    start = time.process_time()
    result = grid_search(
        OKBoostRegressor(random_state=0, n_estimators=search.pop("n_estimators", N_ESTIMATORS)),
        search.pop("grid"), X, Y, kernel="linear", scoring=SCORES, cv=3, random_state=0,
        refit=False, **search,
    )  # fmt: skip
    cpu = time.process_time() - start
    model = OKBoostRegressor(random_state=0, n_estimators=N_ESTIMATORS)
    model.set_params(**result.best_params).fit(X, Y, kernel="linear")
    P = model.predict(Xt)
    print(
        f"{label:<28} cpu {cpu:7.1f} s  best {result.best_params}  test ranking loss "
        f"{metrics.ranking_loss(Yt, P):.4f}  micro-F1 {metrics.micro_f1(Yt, P >= 0.5):.4f}"
    )


def main() -> None:
    X, Y, Xt, Yt = load_yeast()
    Y, Yt = Y.astype(float), Yt.astype(float)
    print(f"yeast: {len(X)} train, {len(Xt)} test genes; load average {os.getloadavg()[0]:.1f}")
    _run("full grid (9 x 243 trees)", {"grid": GRID}, X, Y, Xt, Yt)
    _run("halving (factor 3)", {"grid": GRID, "search": "halving"}, X, Y, Xt, Yt)
    shapes = {"max_splits": GRID["max_splits"], "learning_rate": [0.1]}
    _run("full grid, J only (3 x 243)", {"grid": dict(shapes)}, X, Y, Xt, Yt)
    _run("halving, J only", {"grid": dict(shapes), "search": "halving"}, X, Y, Xt, Yt)
    trees = [27, 81, 243]
    _run("grid over M, shared fits", {"grid": {"n_estimators": trees}}, X, Y, Xt, Yt)
    start = time.process_time()
    for m in trees:  # what the same grid cost when each M was a refit
        grid_search(OKBoostRegressor(random_state=0, n_estimators=m), {"max_splits": [10]}, X, Y,
                    kernel="linear", scoring=SCORES, cv=3, random_state=0, refit=False)  # fmt: skip
    print(f"{'grid over M, refits':<28} cpu {time.process_time() - start:7.1f} s")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
