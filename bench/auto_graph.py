"""The automatic model choice on network completion, against okboost's own models.

Whole Cora and whole CiteSeer (inputs: the binary word vectors, words used by >= 5 papers;
outputs: the diffusion kernel, beta 1, of the citation graph induced on the learning
papers), 5-fold CV over the papers (the first ``--folds`` folds run), as
bench/network_completion.py: each model is fitted on the learning papers only and predicts
the kernel values of every pair with a test paper; AUC over those pairs against the true
citations (``auc``: both sides predicted; ``auc_known``: the learning side observed).

Models, one thread, CPU seconds of the fit and the predictions: ``AutoRegressor()`` (the
no-setting default, its own budget and default score: the edge AUC on inner validation
papers, each inner fit on the graph induced on its own papers), ``OKBoostRegressor()`` (the
documented defaults) and ``KernelRidgeRegressor(gamma="cv")``. No rule of the automatic
choice was chosen on these graphs: they report.

    OMP_NUM_THREADS=1 python -m bench.auto_graph --graphs cora citeseer --folds 2
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import learning_folds, write_result
from bench.network_completion import build_problem

OUT = Path("bench/results/auto_graph.json")


def models() -> dict[str, Any]:
    import okcore

    return {
        "auto (default)": lambda: okcore.AutoRegressor(random_state=0),
        "OKBoostRegressor()": lambda: okcore.OKBoostRegressor(random_state=0),
        "kernel ridge (gamma cv)": lambda: okcore.KernelRidgeRegressor(gamma="cv", random_state=0),
    }


def run_graph(graph: str, n_folds_run: int) -> list[dict[str, Any]]:
    net, info = build_problem(graph, 0, 0, min_df=5)
    rows = []
    folds = list(learning_folds(net.n, 5, 0, small_learning_set=False))[:n_folds_run]
    for k, (learn, test) in enumerate(folds):
        for label, make in models().items():
            est = make()
            start = time.process_time()
            net.fit(est, learn)
            scores = net.auc(est, learn, test)
            cpu = time.process_time() - start
            row = {"graph": graph, "fold": k, "model": label, "cpu_seconds": cpu, **scores}
            if label == "auto (default)":
                row["chosen"] = est.best_name_
                row["leaderboard"] = est.leaderboard_
            rows.append({**row, "load": os.getloadavg()[0], "info": info})
            print(
                f"{graph:9s} fold {k} {label:26s} auc {scores['auc']:.4f} "
                f"auc_known {scores['auc_known']:.4f} cpu {cpu:7.1f}"
                + (f"  chose {est.best_name_}" if label == "auto (default)" else ""),
                flush=True,
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs", nargs="*", default=["cora", "citeseer"])
    parser.add_argument("--folds", type=int, default=2, help="how many of the 5 folds to run")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rows = [r for g in args.graphs for r in run_graph(g, args.folds)]
    summary = {}
    for g in args.graphs:
        for label in models():
            mine = [r for r in rows if r["graph"] == g and r["model"] == label]
            summary[f"{g} / {label}"] = {
                "auc": float(np.mean([r["auc"] for r in mine])),
                "auc_known": float(np.mean([r["auc_known"] for r in mine])),
                "cpu_seconds": float(np.mean([r["cpu_seconds"] for r in mine])),
            }
    write_result(
        args.out,
        {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "summary": summary,
         "rows": rows},
    )  # fmt: skip
    for key, value in summary.items():
        print(key, {k: round(v, 4) for k, v in value.items()})


if __name__ == "__main__":
    main()
