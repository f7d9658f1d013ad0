"""What model selection costs and finds on MULAN yeast (multi-label), all in one run: a full
grid against successive halving over n_estimators with the survivors' fits continued (warm
start, what ``grid_search(search="halving")`` does) and with every iteration refitted (what
it did before, and what scikit-learn's HalvingGridSearchCV does), over J and nu, then over J
alone at nu = 0.1 (halving drops slow starters, small nu, at its first iterations); and a
grid over n_estimators with one shared fit per fold against one grid search per
n_estimators value (the refits).

The refitted halving is the continued halving's table replayed: each of its rows (candidate,
iteration) cross-validated from scratch on the same folds, as a refitting search fits them;
its scores are checked equal to the continued ones, so both choose the same candidate.

Data: $OKBOOST_DATA/yeast_multilabel (MULAN's split, rows 917: train, :917 test; see
bench/yeast_multilabel.py). Selection by 3-fold CV on the 1,500 training genes only,
criterion ranking loss (okcore.scoring), then the chosen model refitted on them and scored
on the 917 test genes (ranking loss, micro-F1 at 0.5). ``--problem synthetic``: bench_scale's
signal (N = 4,000, p = r = 50, noise 0.3), criterion Err^phi, the chosen model scored by the
MSE against the noiseless signal on 10,000 fresh queries. CPU seconds of this process (one
thread), with the load average: compare the ratios, not the seconds.

    OKBOOST_DATA=/path/to/data python -m bench.search_cost [--problem synthetic] [--out OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_okcore import make_fixed_signal_data
from bench.common import write_result
from bench.yeast_multilabel import load_yeast
from okcore import OKBoostRegressor, metrics
from okcore.model_selection import cross_validate, grid_search

GRID = {"max_splits": [4, 16, 64], "learning_rate": [0.03, 0.1, 0.3]}
N_ESTIMATORS = 243
SCORES = ["ranking_loss", "f1", "auroc"]
CV = {"kernel": "linear", "scoring": SCORES, "cv": 3, "random_state": 0}


def _test_scores(params: dict[str, Any], X, Y, Xt, Yt) -> dict[str, float]:
    model = OKBoostRegressor(random_state=0, n_estimators=N_ESTIMATORS)
    P = model.set_params(**params).fit(X, Y, kernel="linear").predict(Xt)
    if CV["scoring"] != SCORES:  # the synthetic problem: Yt is the noiseless signal
        return {"test_mse": float(np.mean((P - Yt) ** 2))}
    return {
        "test_ranking_loss": float(metrics.ranking_loss(Yt, P)),
        "test_micro_f1": float(metrics.micro_f1(Yt, P >= 0.5)),
    }


def _run(label: str, grid: dict, X, Y, Xt, Yt, **search: Any) -> dict[str, Any]:
    start = time.process_time()
    n_estimators = search.pop("n_estimators", N_ESTIMATORS)
    result = grid_search(
        OKBoostRegressor(random_state=0, n_estimators=n_estimators), grid, X, Y, refit=False,
        **CV, **search,
    )  # fmt: skip
    row = {"label": label, "cpu": time.process_time() - start, "best": result.best_params}
    row.update(_test_scores(result.best_params, X, Y, Xt, Yt))
    row["table"] = result.table
    return row


def _refitted_halving(label: str, halving: dict[str, Any], X, Y) -> dict[str, Any]:
    """The halving's rows cross-validated from scratch (a refitting search's fits)."""
    start, equal = time.process_time(), True
    for row in halving["table"]:
        model = OKBoostRegressor(random_state=0, n_estimators=N_ESTIMATORS)
        scores = cross_validate(model.set_params(**row["params"]), X, Y, **CV)
        equal &= all(list(scores[name]) == row[name]["folds"] for name in CV["scoring"])
    return {"label": label, "cpu": time.process_time() - start, "best": halving["best"],
            "scores_equal_to_continued": bool(equal)}  # fmt: skip


def _show(row: dict[str, Any], reference: float) -> str:
    test = ""
    if "test_mse" in row:
        test = f"  test MSE {row['test_mse']:.4f}"
    if "test_ranking_loss" in row:
        test = (
            f"  test ranking loss {row['test_ranking_loss']:.4f}  micro-F1 "
            f"{row['test_micro_f1']:.4f}"
        )
    if "scores_equal_to_continued" in row:
        test = f"  same scores as continued: {row['scores_equal_to_continued']}"
    return (
        f"{row['label']:<42} cpu {row['cpu']:7.1f} s ({row['cpu'] / reference:.2f}x grid)  "
        f"best {row['best']}{test}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="write OUT.txt and OUT.json")
    parser.add_argument("--problem", choices=("yeast", "synthetic"), default="yeast")
    args = parser.parse_args()
    if args.problem == "yeast":
        X, Y, Xt, Yt = load_yeast()
        Y, Yt = Y.astype(float), Yt.astype(float)
        what = f"yeast: {len(X)} train, {len(Xt)} test genes; 3-fold CV by ranking loss"
    else:
        X, Y, Xt, Yt = make_fixed_signal_data(4000, 50, 50, 10_000)
        CV["scoring"] = ["err_phi"]
        what = f"synthetic: {len(X)} train rows, {len(Xt)} queries; 3-fold CV by Err^phi"
    lines = [f"{what}, {N_ESTIMATORS} trees; load average before {os.getloadavg()[0]:.1f}"]
    print(lines[0], flush=True)
    rows: list[dict[str, Any]] = []
    shapes = {"max_splits": GRID["max_splits"], "learning_rate": [0.1]}
    for name, grid in (("J x nu (9 candidates)", GRID), ("J only, nu = 0.1 (3)", shapes)):
        full = _run(f"full grid, {name}", grid, X, Y, Xt, Yt)
        warm = _run(f"halving continued, {name}", grid, X, Y, Xt, Yt, search="halving")
        refit = _refitted_halving(f"halving refitted, {name}", warm, X, Y)
        for row in (full, warm, refit):
            rows.append(row)
            lines.append(_show(row, full["cpu"]))
            print(lines[-1], flush=True)
        lines.append(
            f"  continued / refitted halving CPU: {warm['cpu'] / refit['cpu']:.2f}x; same "
            f"choice as the full grid: {warm['best'] == {**full['best'], 'n_estimators': N_ESTIMATORS}}"
        )
        print(lines[-1], flush=True)
    trees = [27, 81, 243]
    shared = _run("grid over M, shared fits", {"n_estimators": trees}, X, Y, Xt, Yt)
    start = time.process_time()
    for m in trees:  # what the same grid cost when each M was a refit
        grid_search(OKBoostRegressor(random_state=0, n_estimators=m), {"max_splits": [10]}, X, Y,
                    refit=False, **CV)  # fmt: skip
    refits = {"label": "grid over M, refits", "cpu": time.process_time() - start, "best": {}}
    for row in (shared, refits):
        rows.append(row)
        lines.append(_show(row, refits["cpu"]).replace("x grid", "x refits"))
        print(lines[-1], flush=True)
    lines.append(f"load average after: {os.getloadavg()[0]:.1f}")
    print(lines[-1])
    if args.out:
        write_result(Path(f"{args.out}.txt"), "\n".join(lines) + "\n")
        write_result(
            Path(f"{args.out}.json"),
            json.loads(json.dumps({"rows": rows, "machine": os.uname().nodename}, default=str)),
        )


if __name__ == "__main__":
    main()
