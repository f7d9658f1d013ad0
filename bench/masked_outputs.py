"""Partly known outputs: 30 % of the training output entries hidden at random on the synthetic
50-output problem (``bench.bench_okcore.make_data``: p = 50 inputs, r = 50 outputs, a
non-linear signal of a few inputs plus noise), side by side in one run, one thread:

- ``okboost_masked``: OKBoostRegressor on Y with NaN for the hidden entries (the loss and the
  leaf values use the known entries only: okcore's masked squared loss);
- ``catboost_multirmse_missing``: CatBoost's ``MultiRMSEWithMissingValues`` on the same Y;
- ``okboost_complete_rows``: OKBoost on the rows with every output known (refusing the
  incomplete rows); with 30 % of 50 entries hidden at random almost no row is complete
  (0.7^50), which is the point: the row count is reported, and the method is scored only
  when at least 20 rows remain;
- ``okboost_mean_imputed``: OKBoost on Y with each hidden entry replaced by its column's mean
  of the known entries (the usual stopgap).

Every model (2000 training rows by default): M = 100 rounds of nu = 0.1, oblivious trees of depth 6 (CatBoost's default depth;
okboost ``max_depth=6``), no early stopping. Score: held-out MSE against the noiseless signal
of 1000 fresh queries (mean over the 50 outputs). CPU seconds (process time) of each fit and
the machine load (1-minute load average) before each fit; each method is first run once on
60 rows, so that no timed fit pays numba's compile-on-first-use.

    python -m bench.masked_outputs            # writes bench/results/masked_outputs.{json,txt}
    python -m bench.masked_outputs --quick    # CI smoke run
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.bench_okcore import make_data
from bench.common import Report, base_parser, log, output_dirs, write_result
from okcore import OKBoostRegressor

HIDDEN = 0.3
METHODS = (
    "okboost_masked",
    "catboost_multirmse_missing",
    "okboost_complete_rows",
    "okboost_mean_imputed",
)
MIN_ROWS = 20


def _okboost(m: int, seed: int) -> OKBoostRegressor:
    return OKBoostRegressor(
        n_estimators=m, learning_rate=0.1, tree_type="oblivious", max_depth=6,
        early_stopping=False, random_state=seed, n_jobs=1,
    )  # fmt: skip


def fit_predict(
    method: str, X: np.ndarray, Y: np.ndarray, Xq: np.ndarray, m: int, seed: int
) -> tuple[np.ndarray | None, int]:
    """Predictions of ``method`` fitted on (X, Y) with NaN for the hidden entries, and the
    number of training rows it used (None predictions when too few rows are left)."""
    known = ~np.isnan(Y)
    if method == "okboost_masked":
        return _okboost(m, seed).fit(X, Y).predict(Xq), len(X)
    if method == "okboost_complete_rows":
        rows = known.all(axis=1)
        if rows.sum() < MIN_ROWS:
            return None, int(rows.sum())
        return _okboost(m, seed).fit(X[rows], Y[rows]).predict(Xq), int(rows.sum())
    if method == "okboost_mean_imputed":
        means = np.nanmean(Y, axis=0)
        filled = np.where(known, Y, means[None, :])
        return _okboost(m, seed).fit(X, filled).predict(Xq), len(X)
    try:
        from catboost import CatBoostRegressor
    except ImportError:  # the bench extra not installed: the method is reported as skipped
        return None, 0
    model = CatBoostRegressor(
        loss_function="MultiRMSEWithMissingValues", iterations=m, learning_rate=0.1, depth=6,
        thread_count=1, random_seed=seed, verbose=False, allow_writing_files=False,
    )  # fmt: skip
    model.fit(X, Y)
    return np.asarray(model.predict(Xq)), len(X)


def run(argv: Sequence[str] | None = None) -> Report:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--n", type=int, default=2000, help="training rows")
    parser.add_argument("--m", type=int, default=100, help="boosting rounds M")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.m = 300, 10
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    X, Y, Xq, truth = make_data(args.n, 50, 50, seed=args.seed)
    rng = np.random.default_rng(args.seed + 1)
    Y_hidden = Y.copy()
    Y_hidden[rng.random(Y.shape) < HIDDEN] = np.nan
    settings = {
        "n_train": args.n, "n_queries": len(Xq), "p": 50, "r": 50, "hidden": HIDDEN,
        "m": args.m, "learning_rate": 0.1, "depth": 6, "threads": 1, "seed": args.seed,
    }  # fmt: skip
    report = Report(
        args.name or ("masked_outputs_quick" if args.quick else "masked_outputs"),
        ["bench.masked_outputs", *(argv or [])],
        settings,
    )
    rows: dict[str, dict[str, Any]] = {}
    for method in METHODS:  # compile-on-first-use outside the timed fits
        fit_predict(method, X[:60], Y_hidden[:60], Xq[:5], 2, args.seed)
    for method in METHODS:
        load = os.getloadavg()[0]
        cpu = time.process_time()
        log(f"{method}: fitting on {args.n} rows, M = {args.m}")
        predicted, n_rows = fit_predict(method, X, Y_hidden, Xq, args.m, args.seed)
        cpu = time.process_time() - cpu
        mse = None if predicted is None else float(np.mean((predicted - truth) ** 2))
        rows[method] = {"mse": mse, "cpu_s": cpu, "load": load, "rows_used": n_rows}
        if mse is not None:
            report.add(method, mse=mse, cpu_s=cpu)
    report.extra.update(rows=rows)
    out = output_dirs(args)[0]
    report.save(out)
    lines = [
        f"# {report.name}: {args.n} rows, 50 inputs, 50 outputs, {HIDDEN:.0%} hidden, "
        f"M = {args.m}, depth 6, one thread",
        f"{'method':<28} {'held-out MSE':>13} {'CPU s':>8} {'load':>6} {'rows used':>10}",
    ]
    for method, r in rows.items():
        mse = "n/a" if r["mse"] is None else f"{r['mse']:.4f}"
        lines.append(
            f"{method:<28} {mse:>13} {r['cpu_s']:>8.2f} {r['load']:>6.2f} {r['rows_used']:>10}"
        )
    lines.append(report.timing())
    print("\n".join(lines))
    write_result(out / f"{report.name}.txt", "\n".join(lines) + "\n")
    return report


if __name__ == "__main__":
    run(sys.argv[1:])
