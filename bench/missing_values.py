"""Missing input values: okboost's native handling against mean imputation and the peers'.

A share (5 %, 20 %, 50 %) of the input values of both the training and the test rows is
hidden at random (each value independently, seeded), on two real one-output problems of the
suite: census-house (DELVE's house-16H, ``$OKBOOST_DATA/census_house``: 16 inputs) and kin40k
(``$OKBOOST_DATA/kin40k``: 8 inputs), each a seeded subsample. Side by side in one run, one
thread each:

- ``okboost``: ``OKBoostRegressor()`` on the inputs with their missing values (its trees learn
  where they go: okcore.trees.missing);
- ``okboost_mean``: the same on the inputs with each missing value replaced by its column's
  mean over the training rows (what one had to do before);
- ``lightgbm``, ``xgboost``, ``catboost``: each with its native handling of NaN (LightGBM's and
  XGBoost's learned default direction, CatBoost's ``nan_mode="Min"``), 300 rounds at a
  learning rate of 0.1 (okboost's default M and nu on these sizes), the libraries' default
  tree sizes.

Error: held-out NMSE (MSE over the test targets' variance). Time: the CPU seconds of fit +
predict (process time), with the machine's load average beside the run.

    python -m bench.missing_values            # census-house and kin40k, 5,000 / 5,000 rows
    python -m bench.missing_values --quick    # CI smoke run (Friedman1, tiny)
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.datasets import make_friedman1

from bench.common import Report, base_parser, log, output_dirs, write_result
from bench.krr_kin40k import load_census, load_kin40k
from okcore import OKBoostRegressor

LABELS = {
    "okboost": "okboost, native missing values",
    "okboost_mean": "okboost, mean imputation",
    "lightgbm": "LightGBM (native)",
    "xgboost": "XGBoost (native)",
    "catboost": "CatBoost (native, nan_mode=Min)",
}
RATES = (0.0, 0.05, 0.2, 0.5)
#: Rounds and learning rate of the peers: okboost's resolved defaults on these sizes.
PEER_ROUNDS, PEER_RATE = 300, 0.1


def load(problem: str, n_train: int, n_test: int, seed: int) -> tuple[np.ndarray, ...]:
    """(X_train, y_train, X_test, y_test) of a seeded subsample; y standardised on the
    training rows."""
    rng = np.random.default_rng(seed)
    if problem == "friedman1":
        X, y = make_friedman1(n_train + n_test, noise=1.0, random_state=seed)
    else:
        X, y = load_census() if problem == "census" else load_kin40k()
    rows = rng.permutation(len(y))[: n_train + n_test]
    X, y = X[rows], y[rows]
    y = (y - y[:n_train].mean()) / y[:n_train].std()
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def hide(X: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    """X with each value replaced by NaN with probability ``rate``."""
    out = X.astype(np.float64, copy=True)
    out[rng.random(X.shape) < rate] = np.nan
    return out


def mean_imputed(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Missing values replaced by their column's mean over the training rows (0 for a column
    with none observed)."""
    observed = ~np.isnan(X_train)
    means = np.where(observed, X_train, 0.0).sum(axis=0) / np.maximum(observed.sum(axis=0), 1)
    return (
        np.where(np.isnan(X_train), means, X_train),
        np.where(np.isnan(X_test), means, X_test),
    )


def make(method: str, quick: bool, seed: int) -> Any:
    rounds = 20 if quick else PEER_ROUNDS
    if method in ("okboost", "okboost_mean"):
        return OKBoostRegressor(n_estimators=rounds if quick else "auto", random_state=seed)
    if method == "lightgbm":
        import lightgbm

        return lightgbm.LGBMRegressor(
            n_estimators=rounds, learning_rate=PEER_RATE, n_jobs=1, random_state=seed, verbose=-1
        )
    if method == "xgboost":
        import xgboost

        return xgboost.XGBRegressor(
            n_estimators=rounds, learning_rate=PEER_RATE, tree_method="hist", n_jobs=1,
            random_state=seed,
        )  # fmt: skip
    if method == "catboost":
        import catboost

        return catboost.CatBoostRegressor(
            iterations=rounds, learning_rate=PEER_RATE, thread_count=1, random_seed=seed,
            verbose=False, nan_mode="Min", allow_writing_files=False,
        )  # fmt: skip
    raise ValueError(method)


def available(methods: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The methods whose library is installed, and why the others are skipped."""
    kept, skipped = [], {}
    for m in methods:
        try:
            if m in ("lightgbm", "xgboost", "catboost"):
                __import__(m)
            kept.append(m)
        except ImportError as exc:
            skipped[m] = str(exc)
    return kept, skipped


def warm_up(methods: Sequence[str], seed: int) -> None:
    """One tiny untimed fit of each method, with and without missing values: okcore's
    compiled kernels are compiled (or read from their cache) here, not in the first timed
    fit."""
    X, y, _, _ = load("friedman1", 200, 10, seed)
    for X_fit in (X, hide(X, 0.2, np.random.default_rng(seed))):
        for method in methods:
            make(method, True, seed).fit(X_fit, y)


def measure(fit_predict: Callable[[], np.ndarray], y_test: np.ndarray) -> tuple[float, float]:
    """(NMSE, CPU seconds) of one fit + predict."""
    start = time.process_time()
    prediction = np.asarray(fit_predict(), dtype=np.float64).ravel()
    cpu = time.process_time() - start
    return float(np.mean((prediction - y_test) ** 2) / np.var(y_test)), cpu


def run(argv: Sequence[str] | None = None) -> Report:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--problems", nargs="+", default=None, choices=["census", "kin40k", "friedman1"]
    )
    parser.add_argument("--methods", nargs="+", default=list(LABELS), choices=list(LABELS))
    parser.add_argument("--rates", nargs="+", type=float, default=list(RATES))
    parser.add_argument("--n-train", type=int, default=5000)
    parser.add_argument("--n-test", type=int, default=5000)
    args = parser.parse_args(argv)
    problems = args.problems or (["friedman1"] if args.quick else ["census", "kin40k"])
    n_train, n_test = (300, 300) if args.quick else (args.n_train, args.n_test)
    methods, skipped = available(args.methods)
    report = Report(
        name=args.name or ("missing_values_quick" if args.quick else "missing_values"),
        argv=["bench.missing_values", *(argv if argv is not None else sys.argv[1:])],
        settings={
            "problems": problems,
            "methods": methods,
            "skipped": skipped,
            "rates": args.rates,
            "n_train": n_train,
            "n_test": n_test,
            "seed": args.seed,
            "quick": args.quick,
            "peer_rounds": 20 if args.quick else PEER_ROUNDS,
            "peer_learning_rate": PEER_RATE,
            "load_before": os.getloadavg()[0],
        },  # fmt: skip
        labels={
            f"{p}/{r}/{m}": f"{p}, {r:.0%} missing, {LABELS[m]}"
            for p in problems
            for r in args.rates
            for m in methods
        },  # fmt: skip
    )
    warm_up(methods, args.seed)
    for problem in problems:
        X_train, y_train, X_test, y_test = load(problem, n_train, n_test, args.seed)
        for rate in args.rates:
            rng = np.random.default_rng([args.seed, int(rate * 1000)])
            hidden_train, hidden_test = hide(X_train, rate, rng), hide(X_test, rate, rng)
            imputed = mean_imputed(hidden_train, hidden_test)
            for method in methods:
                model = make(method, args.quick, args.seed)
                train, test = imputed if method == "okboost_mean" else (hidden_train, hidden_test)

                def fit_predict(
                    model: Any = model, train: Any = train, test: Any = test, y: Any = y_train
                ) -> Any:
                    return model.fit(train, y).predict(test)

                nmse, cpu = measure(fit_predict, y_test)
                report.add(f"{problem}/{rate}/{method}", nmse=nmse, cpu_s=cpu)
                log(f"{problem} {rate:.0%} {method:13s} NMSE {nmse:.4f} ({cpu:.1f} CPU s)")
    report.settings["load_after"] = os.getloadavg()[0]
    text = render(report, problems, args.rates, methods) + "\n" + report.timing() + "\n"
    out_dir, _ = output_dirs(args)
    report.save(out_dir)
    write_result(out_dir / f"{report.name}.txt", text)
    print(text)
    return report


def render(report: Report, problems: list[str], rates: list[float], methods: list[str]) -> str:
    """One table per problem: held-out NMSE (CPU s) by method and share missing."""
    s = report.settings
    lines = [
        f"Missing values: {s['n_train']} / {s['n_test']} rows (train / test), seed {s['seed']}, "
        f"one thread; load average {s['load_before']:.1f} before, {s['load_after']:.1f} after."
    ]
    for problem in problems:
        lines += [
            "",
            f"## {problem}: held-out NMSE (CPU s of fit + predict)",
            "",
            "| method | " + " | ".join(f"{r:.0%} missing" for r in rates) + " |",
            "| --- |" + " --- |" * len(rates),
        ]
        for method in methods:
            cells = []
            for rate in rates:
                row = report.rows[f"{problem}/{rate}/{method}"]
                cells.append(f"{row['nmse'][0]:.4f} ({row['cpu_s'][0]:.1f} s)")
            lines.append(f"| {LABELS[method]} | " + " | ".join(cells) + " |")
    for method, why in s["skipped"].items():
        lines.append(f"# skipped {method}: {why}")
    return "\n".join(lines)


if __name__ == "__main__":
    run()
