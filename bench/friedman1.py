"""Friedman1 (paper Table 1, first column): 10 learning samples of 300, a fixed test set of 1000,
noise sd 1, linear output kernel (so Err^phi is the test mean squared error).

Methods: the five OK3/OKBoost rows (nu = 0.01, M = 500, J by inner 5-fold CV on the J grid) and
scikit-learn with the same budgets: a fully grown DecisionTreeRegressor, bagging of 100 trees,
ExtraTreesRegressor (100 trees, sqrt(p) and p candidate features), GradientBoostingRegressor
(M = 500, nu = 0.01, max_leaf_nodes = J + 1 with J chosen by the same inner CV).

    python -m bench.friedman1            # full protocol
    python -m bench.friedman1 --quick    # CI smoke run
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.ensemble import (
    BaggingRegressor,
    ExtraTreesRegressor,
    GradientBoostingRegressor,
)
from sklearn.tree import DecisionTreeRegressor

from bench.common import (
    BOOSTED,
    J_GRID,
    OKCORE_METHODS,
    VARIANT_LABELS,
    BoostConfig,
    Report,
    base_parser,
    log,
    make_okcore,
    output_dirs,
    select_by_inner_cv,
)

SKLEARN_LABELS = {
    "sk_tree": "sklearn DecisionTreeRegressor (fully grown)",
    "sk_bagging": "sklearn BaggingRegressor (100 trees)",
    "sk_et_sqrt": "sklearn ExtraTreesRegressor (100, max_features=sqrt)",
    "sk_et_all": "sklearn ExtraTreesRegressor (100, max_features=1.0)",
    "sk_gbr": "sklearn GradientBoostingRegressor (M=500, nu=0.01, J of OK3 + OKBoost)",
    "sk_gbr_cv": "sklearn GradientBoostingRegressor (M=500, nu=0.01, J by its own CV)",
}
# sk_gbr_cv costs ~50 GradientBoostingRegressor fits per learning sample (~15 min in all on this
# machine), so it is not in the default run; sk_gbr reuses the J chosen for OK3 + OKBoost, which
# with a linear output kernel is the same algorithm (least-squares boosting, MART).
DEFAULT_METHODS = (*OKCORE_METHODS, "sk_tree", "sk_bagging", "sk_et_sqrt", "sk_et_all", "sk_gbr")


def make_sklearn(method: str, max_splits: int | None = None, *, seed: int, cfg: BoostConfig) -> Any:
    """scikit-learn estimators with the budgets of Table 1 (100 trees; M, nu, J as OKBoost)."""
    if method == "sk_tree":
        return DecisionTreeRegressor(random_state=seed)
    if method == "sk_bagging":
        return BaggingRegressor(
            DecisionTreeRegressor(), n_estimators=cfg.n_trees, random_state=seed
        )
    if method == "sk_et_sqrt":
        return ExtraTreesRegressor(cfg.n_trees, max_features="sqrt", random_state=seed)
    if method == "sk_et_all":
        return ExtraTreesRegressor(cfg.n_trees, max_features=1.0, random_state=seed)
    if method in ("sk_gbr", "sk_gbr_cv"):
        return GradientBoostingRegressor(
            n_estimators=cfg.n_estimators,
            learning_rate=cfg.learning_rate,
            max_leaf_nodes=None if max_splits is None else max_splits + 1,
            max_depth=None,
            random_state=seed,
        )
    raise ValueError(method)


def _fit(est: Any, X: np.ndarray, y: np.ndarray) -> Any:
    # okcore takes outputs of shape (N, d) (linear kernel); scikit-learn a vector.
    if type(est).__module__.startswith("okcore"):
        return est.fit(X, y[:, None])
    return est.fit(X, y)


def _mse(est: Any, X: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((np.asarray(est.predict(X)).reshape(len(y)) - y) ** 2))


def _inner_mse(est: Any, a: np.ndarray, b: np.ndarray, *, X: np.ndarray, y: np.ndarray) -> float:
    return _mse(_fit(est, X[a], y[a]), X[b], y[b])


def run(argv: Sequence[str] | None = None) -> Report:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=(*OKCORE_METHODS, *VARIANT_LABELS, *SKLEARN_LABELS),
        default=DEFAULT_METHODS,
    )
    args = parser.parse_args(argv)
    if args.quick:
        cfg = BoostConfig(
            n_estimators=20, learning_rate=0.1, j_grid=(1, 3), n_trees=5, inner_folds=2
        )
        n_samples, n_learn, n_test = 2, 60, 100
    else:
        cfg = BoostConfig(j_grid=tuple(args.j_grid or J_GRID))
        n_samples, n_learn, n_test = 10, 300, 1000
    okcore_methods = (*OKCORE_METHODS, *VARIANT_LABELS)
    methods = [m for m in (*okcore_methods, *SKLEARN_LABELS) if m in args.methods]
    if "sk_gbr" in methods and "okboost" not in methods:
        parser.error("sk_gbr takes the J selected for okboost: run okboost too")
    boosted = {*BOOSTED, "sk_gbr_cv"} & set(methods)
    report = Report(
        (args.name or "friedman1") + ("_quick" if args.quick else ""),
        ["bench.friedman1", *(argv if argv is not None else sys.argv[1:])],
        {
            "n_samples": n_samples,
            "n_learn": n_learn,
            "n_test": n_test,
            "noise_sd": 1.0,
            "n_estimators": cfg.n_estimators,
            "learning_rate": cfg.learning_rate,
            "j_grid": cfg.j_grid,
            "inner_folds": cfg.inner_folds,
            "n_trees": cfg.n_trees,
            "methods": methods,
            "seed": args.seed,
        },
    )
    report.labels.update(SKLEARN_LABELS)
    report.extra["selected_J"] = {m: [] for m in boosted}
    report.extra["inner_cv"] = {m: [] for m in boosted}

    X_test, y_test = make_friedman1(n_test, noise=1.0, random_state=args.seed)
    for s in range(n_samples):
        X, y = make_friedman1(n_learn, noise=1.0, random_state=args.seed + 1 + s)
        for method in methods:
            maker = make_okcore if method in okcore_methods else make_sklearn
            J = report.extra["selected_J"]["okboost"][-1] if method == "sk_gbr" else None
            if method in boosted:
                J, curve = select_by_inner_cv(
                    partial(maker, method, seed=args.seed + s, cfg=cfg),
                    cfg.j_grid,
                    partial(_inner_mse, X=X, y=y),
                    np.arange(n_learn),
                    n_splits=cfg.inner_folds,
                    seed=args.seed + s,
                )
                report.extra["selected_J"][method].append(J)
                report.extra["inner_cv"][method].append(curve)
            est = maker(method, J, seed=args.seed + s, cfg=cfg)
            t0 = time.perf_counter()
            _fit(est, X, y)
            fit_time = time.perf_counter() - t0
            err = _mse(est, X_test, y_test)
            report.add(method, err=err, fit_time=fit_time)
            log(f"sample {s}: {method:12s} J={J} Err={err:.3f} fit {fit_time:.1f}s")

    out_dir, _ = output_dirs(args)
    path = report.save(out_dir)
    print(
        f"## Friedman1: Err(TS) over {n_samples} learning samples of {n_learn}, "
        f"test set of {n_test}\n"
    )
    print(report.table("err", "friedman1", digits=3))
    for m in sorted(boosted):
        print(f"\nselected J ({m}): {report.extra['selected_J'][m]}")
    print(f"\n{report.timing()}; results in {path}")
    return report


if __name__ == "__main__":
    run()
