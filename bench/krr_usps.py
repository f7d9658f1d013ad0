"""Boosted KRR in the output feature space ("boosted KDE") on USPS completion, against one
kernel ridge / KDE, OKBoost and OKBoost-et: the protocol of bench/usps_completion.py
(docs/RESULTS.md section 2) on the same images and folds.

1000 seeded USPS images, inputs = top 128 pixels, outputs = bottom 128 pixels with the
Gaussian output kernel sigma = 7.0711; 5 folds, each in turn the learning set (200 images)
and the other four the test set (800). Err^phi(TS) and Err^Y(TS) (pre-images among the 200
learning outputs), from prediction weights exactly as usps_completion.py computes them.

Methods, hyper-parameters by the same inner 5-fold CV on Err^phi as usps_completion.py:

- "kde": kernel ridge / KDE (scikit-learn KernelRidge, RBF input kernel), (alpha, input
  gamma) from usps_completion.KRR_GRID: rerun here, so paired with the boosted rows;
- "krr_boost": okcore KRRBoostRegressor, M stages of D basis vectors (info-gain) on random
  subsets of half the learning rows, Sun & Yao's coefficient with mu = ``--mu-ratio`` x alpha
  and 3 CG steps; (alpha, input gamma) from the same grid;
  (``--reweight``: every coefficient re-solved after each stage, their appendix);
- "krr_boost_shrink": the same stages joined with plain shrinkage nu = 0.1;
- OKBoost and OKBoost-et: read from bench/results/usps_completion.json (same seed, same
  images and folds; J by inner CV, nu = 0.01, M = 500), not rerun.

    python -m bench.krr_usps            # full protocol
    python -m bench.krr_usps --quick    # CI smoke run

``--gamma-grid`` replaces the grid's input gammas for every method (KDE included, so the
rows stay paired), e.g. when a method's selection sits at the grid's edge.
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
from bench.usps_completion import (
    KRR_GRID,
    OUTPUT_KERNEL,
    baseline_weights,
    errors,
    load_usps,
)

LABELS = {
    "kde": "kernel ridge / KDE (alpha, input gamma by CV)",
    "krr_boost": "boosted KRR, Sun & Yao step (alpha, input gamma by CV)",
    "krr_boost_shrink": "boosted KRR, shrinkage 0.1 (alpha, input gamma by CV)",
    "okboost": "OK3 + OKBoost (from usps_completion.json)",
    "okboost_et": "OK3-et + OKBoost (from usps_completion.json)",
}
BOOSTED = ("krr_boost", "krr_boost_shrink")


def make_boost(method: str, param: tuple[float, float], *, cfg: dict[str, Any], seed: int) -> Any:
    from okcore import KRRBoostRegressor

    alpha, gamma = param
    shrink = method == "krr_boost_shrink"
    return KRRBoostRegressor(
        n_estimators=cfg["stages"],
        subset_size=cfg["subset"],
        n_basis=cfg["basis"],
        gamma=gamma,
        alpha=alpha,
        mu=cfg["mu_ratio"] * alpha,
        regularization="shrinkage" if shrink else "sun-yao",
        learning_rate=0.1,
        cg_iter=3,
        reweight=cfg["reweight"],
        random_state=seed,
    )


def _inner_boost(
    est: Any, a: np.ndarray, b: np.ndarray, *, X: np.ndarray, Y: np.ndarray, criterion: str
) -> float:
    W = est.fit(X[a], Y[a], kernel=OUTPUT_KERNEL).predict_weights(X[b])
    return float(errors(W, Y[a], Y[b])[criterion].mean())


def _inner_kde(
    param: Any, a: np.ndarray, b: np.ndarray, *, X: np.ndarray, Y: np.ndarray, criterion: str
) -> float:
    W = baseline_weights("kde", param, X[a], X[b])
    return float(errors(W, Y[a], Y[b])[criterion].mean())


def run(argv: Sequence[str] | None = None) -> Report:
    """Every method on one BLAS thread (the machine's 2 cores are shared)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return _run(argv)


def _run(argv: Sequence[str] | None = None) -> Report:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", choices=tuple(LABELS), default=tuple(LABELS))
    parser.add_argument("--stages", type=int, default=100)
    parser.add_argument("--basis", type=int, default=50)
    parser.add_argument("--mu-ratio", type=float, default=1.0)
    parser.add_argument("--folds", type=int, default=5, help="outer folds run (of 5)")
    parser.add_argument(
        "--criterion",
        choices=("err_phi", "err_y"),
        default="err_phi",
        help="what the inner CV minimises, for every method (default: Err^phi, the paper's)",
    )
    parser.add_argument(
        "--reweight", action="store_true", help="re-solve every coefficient after each stage"
    )
    parser.add_argument(
        "--gamma-grid",
        type=float,
        nargs="+",
        default=None,
        help="input gammas of the (alpha, gamma) grid, for every method (default: those of "
        "usps_completion.KRR_GRID)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        n_images, n_folds, inner, grid = 100, 2, 2, KRR_GRID[5:7]
        cfg = {"stages": 4, "subset": 10, "basis": 5, "mu_ratio": args.mu_ratio}
    else:
        n_images, n_folds, inner, grid = 1000, 5, 5, KRR_GRID
        cfg = {"stages": args.stages, "subset": 100, "basis": args.basis}
        cfg["mu_ratio"] = args.mu_ratio
    cfg["reweight"] = args.reweight
    if args.gamma_grid:
        alphas = sorted({a for a, _ in grid})
        grid = tuple((a, g) for a in alphas for g in args.gamma_grid)
    data = load_usps(n_images, args.seed)
    X, Y = data["X"], data["Y"]
    report = Report(
        "krr_usps" + ("_quick" if args.quick else "") if not args.name else args.name,
        ["bench.krr_usps", *(argv if argv is not None else sys.argv[1:])],
        {
            "n_images": n_images,
            "n_folds": n_folds,
            "inner_folds": inner,
            "grid": grid,
            "criterion": args.criterion,
            **cfg,
            "methods": list(args.methods),
            "seed": args.seed,
        },
        labels=dict(LABELS),
    )
    if args.reweight:
        report.labels["krr_boost"] = "boosted KRR, Sun & Yao step, every c re-weighted (by CV)"
    report.extra.update(selected={}, inner_cv={})
    reference = {}
    if not args.quick and (RESULTS_DIR / "usps_completion.json").exists():
        saved = json.loads((RESULTS_DIR / "usps_completion.json").read_text())
        if saved["settings"]["seed"] == args.seed and saved["settings"]["n_images"] == n_images:
            reference = saved["results"]
    folds = list(learning_folds(n_images, n_folds, args.seed, small_learning_set=True))
    for fold, (learn, test) in enumerate(folds[: args.folds]):
        Xl, Yl, Xt, Yt = X[learn], Y[learn], X[test], Y[test]
        for method in args.methods:
            if method in ("okboost", "okboost_et"):
                if method in reference:
                    r = reference[method]
                    report.add(
                        method,
                        err_phi=r["err_phi"]["values"][fold],
                        err_y=r["err_y"]["values"][fold],
                        fit_time=r["fit_time"]["values"][fold],
                    )
                continue
            rows = np.arange(len(learn))
            if method == "kde":
                param, curve = select_by_inner_cv(
                    lambda p: p, grid, partial(_inner_kde, X=Xl, Y=Yl, criterion=args.criterion), rows,
                    n_splits=inner, seed=args.seed + fold,
                )  # fmt: skip
            else:
                param, curve = select_by_inner_cv(
                    partial(make_boost, method, cfg=cfg, seed=args.seed + fold), grid,
                    partial(_inner_boost, X=Xl, Y=Yl, criterion=args.criterion), rows, n_splits=inner,
                    seed=args.seed + fold,
                )  # fmt: skip
            cpu, t0 = time.process_time(), time.perf_counter()
            if method == "kde":
                W = baseline_weights("kde", param, Xl, Xt)
            else:
                est = make_boost(method, param, cfg=cfg, seed=args.seed + fold)
                W = est.fit(Xl, Yl, kernel=OUTPUT_KERNEL).predict_weights(Xt)
            elapsed, cpu_s = time.perf_counter() - t0, time.process_time() - cpu
            res = errors(W, Yl, Yt)
            report.extra["selected"].setdefault(method, []).append(param)
            report.extra["inner_cv"].setdefault(method, []).append(curve)
            report.add(
                method,
                err_phi=res["err_phi"].mean(),
                err_y=res["err_y"].mean(),
                fit_time=elapsed,
                cpu_time=cpu_s,
            )
            log(
                f"fold {fold}: {method:16s} param={param} Err^phi={res['err_phi'].mean():.4f} "
                f"Err^Y={res['err_y'].mean():.4f} ({elapsed:.1f}s)"
            )
    out_dir, _ = output_dirs(args)
    path = report.save(out_dir)
    run_folds = min(args.folds, n_folds)
    print(
        f"## USPS completion, boosted KRR: {n_images} images, {run_folds} of {n_folds} folds, "
        f"learning folds of {n_images // n_folds}\n"
    )
    print("### Err^phi(TS)\n")
    print(report.table("err_phi", "image_err_phi"))
    print("\n### Err^Y(TS)\n")
    print(report.table("err_y", "image_err_y"))
    print(f"\nselected (alpha, input gamma): {report.extra['selected']}")
    print(f"\n{report.timing()}; results in {path}")
    return report


if __name__ == "__main__":
    run()
