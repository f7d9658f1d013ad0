"""Boosted KRR in the output feature space on Cora completion, against one KRR (KDE),
OKBoost and OKBoost-et: the protocol of bench/network_completion.py (docs/RESULTS.md
section 3, "Cora (334-vertex sample)") on the same vertices and folds.

334-vertex snowball sample of Cora, inputs = binary word vectors (words used by >= 5
vertices), output kernel = diffusion kernel (beta = 1) of the graph induced on the learning
vertices; 5-fold vertex CV; AUC(TS) over pairs with at least one test vertex (both sides
predicted), AUC with the learning side observed, Err^phi(TS) against the whole-sample
diffusion kernel: all computed by network_completion.NetworkProblem.

Methods, (alpha, input RBF width) by inner 5-fold CV maximising AUC as network_completion.py:
- "kde": one KRR in the output feature space (KRRBoostRegressor with one stage on all
  learning rows: kernel dependency estimation);
- "krr_boost": boosted KRR, M stages of D basis vectors (info-gain) on random halves of the
  learning rows, Sun & Yao's coefficient and 3 CG steps;
- OKBoost and OKBoost-et: read from bench/results/network_cora_334.json (same seed, sample
  and folds), not rerun.
The RBF width grid is gamma = f / theta, theta the mean squared distance between two
learning inputs (Sun & Yao's heuristic, f = 1 is gamma="auto").

    python -m bench.krr_cora            # full protocol
    python -m bench.krr_cora --quick    # CI smoke run
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from bench.common import (
    RESULTS_DIR,
    Report,
    base_parser,
    learning_folds,
    log,
    output_dirs,
    select_by_inner_cv,
)
from bench.network_completion import build_problem, learning_graph_kernel

GRID = tuple((a, f) for a in (0.1, 1.0, 10.0) for f in (0.3, 1.0, 3.0))
LABELS = {
    "kde": "one KRR / KDE (alpha, input width by CV)",
    "krr_boost": "boosted KRR, Sun & Yao step (alpha, input width by CV)",
    "okboost": "OK3 + OKBoost (from network_cora_334.json)",
    "okboost_et": "OK3-et + OKBoost (from network_cora_334.json)",
}


class WidthFromData:
    """An estimator factory whose RBF gamma is f / theta of the rows it is fitted on."""

    def __init__(self, method: str, param: tuple[float, float], cfg: dict[str, Any], seed: int):
        self.method, self.param, self.cfg, self.seed = method, param, cfg, seed

    def fit(self, X: Any, **kwargs: Any) -> Any:
        from okcore import KRRBoostRegressor

        X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
        n = len(X)
        theta = 2.0 * n / max(n - 1, 1) * float(X.var(axis=0).sum())
        alpha, factor = self.param
        common = {"gamma": factor / theta, "alpha": alpha, "random_state": self.seed}
        if self.method == "kde":
            est = KRRBoostRegressor(
                n_estimators=1, subset_size=n, n_basis=n, basis_selection="random",
                regularization="shrinkage", learning_rate=1.0, **common,
            )  # fmt: skip
        else:
            est = KRRBoostRegressor(
                n_estimators=self.cfg["stages"], subset_size=max(n // 2, 2),
                n_basis=self.cfg["basis"], cg_iter=3, **common,
            )  # fmt: skip
        self.est = est.fit(X, **kwargs)
        return self

    def __getattr__(self, name: str) -> Any:  # predictions of the fitted estimator
        return getattr(self.__dict__["est"], name)


def run(argv: Sequence[str] | None = None) -> Report:
    """Every method on one BLAS thread (the machine's 2 cores are shared)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return _run(argv)


def _run(argv: Sequence[str] | None = None) -> Report:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", choices=tuple(LABELS), default=tuple(LABELS))
    parser.add_argument("--stages", type=int, default=50)
    parser.add_argument("--basis", type=int, default=40)
    args = parser.parse_args(argv)
    if args.quick:
        subset, n_folds, inner, grid = 60, 2, 2, GRID[3:5]
        cfg = {"stages": 3, "basis": 5}
    else:
        subset, n_folds, inner, grid = 334, 5, 5, GRID
        cfg = {"stages": args.stages, "basis": args.basis}
    problem, info = build_problem("cora", subset, args.seed, 5)
    report = Report(
        "krr_cora" + ("_quick" if args.quick else "") if not args.name else args.name,
        ["bench.krr_cora", *(argv if argv is not None else sys.argv[1:])],
        {**info, "n_folds": n_folds, "inner_folds": inner, "grid": grid, **cfg, "seed": args.seed},
        labels=dict(LABELS),
    )
    report.extra.update(selected={}, inner_cv={})
    reference = {}
    saved_path = RESULTS_DIR / "network_cora_334.json"
    if not args.quick and saved_path.exists():
        saved = json.loads(saved_path.read_text())
        if saved["settings"]["seed"] == args.seed and saved["settings"]["n_vertices"] == 334:
            reference = saved["results"]
    for fold, (learn, test) in enumerate(
        learning_folds(problem.n, n_folds, args.seed, small_learning_set=False)
    ):
        truth = None
        for method in args.methods:
            if method in ("okboost", "okboost_et"):
                if method in reference:
                    r = reference[method]
                    report.add(
                        method,
                        **{k: r[k]["values"][fold] for k in ("auc", "auc_known", "err_phi")},
                    )
                continue
            if truth is None:
                truth = learning_graph_kernel(problem, learn)
            make = partial(WidthFromData, method, cfg=cfg, seed=args.seed + fold)
            param, curve = select_by_inner_cv(
                make, grid, partial(problem.inner_scores, truth=truth), learn,
                n_splits=inner, seed=args.seed + fold, criterion="auc", maximize=True,
            )  # fmt: skip
            t0, c0 = time.perf_counter(), time.process_time()
            est = problem.fit(make(param), learn)
            elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
            err = float(problem.err_phi(est, learn, test).mean())
            aucs = problem.auc(est, learn, test)
            report.add(method, err_phi=err, fit_time=elapsed, fit_cpu=cpu, **aucs)
            report.extra["selected"].setdefault(method, []).append(param)
            report.extra["inner_cv"].setdefault(method, []).append(curve)
            log(
                f"fold {fold}: {method:10s} param={param} Err^phi={err:.4f} "
                f"AUC={aucs['auc']:.4f} AUC(known)={aucs['auc_known']:.4f} ({elapsed:.1f}s)"
            )
    out_dir, _ = output_dirs(args)
    path = report.save(out_dir)
    print(
        f"## Cora completion, boosted KRR: {info['n_vertices']} vertices, {info['n_edges']} "
        f"edges, {info['n_features']} input features, {n_folds}-fold CV\n"
    )
    print("### AUC(TS), test-learning pairs scored with both sides predicted (paper)\n")
    print(report.table("auc", None))
    print("\n### AUC(TS), learning side observed\n")
    print(report.table("auc_known", None))
    print("\n### Err^phi(TS)\n")
    print(report.table("err_phi", None))
    print(f"\nselected (alpha, width factor): {report.extra['selected']}")
    print(f"\n{report.timing()}; results in {path}")
    return report


if __name__ == "__main__":
    run()
