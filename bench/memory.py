"""Peak memory of a fit: okcore (fast and exact) against LightGBM and XGBoost on the same
data, each in its own process, side by side in one run.

Problem: bench_scale's (``bench_okcore.make_data``: p = 50 inputs, r = 50 outputs, linear
output kernel), N = 64,000 by default, M = 500 trees of J = 10 splits (11 leaves),
nu = 0.1, one thread everywhere. Methods:

    okcore_default  OKBoostRegressor(n_estimators=M) with every other setting its default
                    (its tree type, tree size and learning rate: what a user's fit costs)
    okcore_fast   best-first trees, OKBoostRegressor(max_bins=255, sketch_dim=8)  (histograms,
                  sketch, refined cuts)
    okcore_exact  best-first trees, OKBoostRegressor(max_bins=None, sketch_dim=None)  (the exact
                  presorted search)
    lightgbm      r LightGBM models, one per output column (num_leaves=J+1, max_bin=255), the
                  inputs binned once (one Dataset, its label replaced per column), as in
                  bench_scale
    xgboost       XGBRegressor(multi_strategy="multi_output_tree", tree_method="hist",
                  max_leaves=J+1, max_depth=0, grow_policy="lossguide"), if installed

Each child loads its library, makes the data and (okcore) runs a 2-tree warm-up fit that
loads the compiled kernels; then it resets the kernel's peak-RSS mark (``echo 5 >
/proc/self/clear_refs``) and fits. "before" is the child's resident set just before the fit
(interpreter, libraries, the data: X and Y are 26 MB each at N = 64,000); "peak" is the
highest resident set during the fit (VmHWM after the reset); "fit" = peak - before, the
memory the fit itself needs. Only the fit is measured: no predictions.

    python -m bench.memory                               # N = 64,000, all methods
    python -m bench.memory --n 4000 --methods okcore_fast lightgbm
    python -m bench.memory --trees-for lightgbm=100 xgboost=100   # fewer rounds for some

``--trees-for METHOD=K`` fits K rounds instead of M (the row says so): on a loaded machine
the peers' M = 500 take tens of minutes. Their memory does not grow with the rounds beyond
their small trees (the scores and the binned data are allocated before the first round);
okcore's grows by N bytes per round (the training leaves) plus its small trees.

Results: bench/results/memory.{json,txt}.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.bench_okcore import make_data  # noqa: E402  (numpy only)
from bench.scale_util import Tee, cpu_seconds, load_avg, log, save_run  # noqa: E402

P, R, J, NU = 50, 50, 10, 0.1
BEST_FIRST = {"tree_type": "best-first", "max_splits": J, "learning_rate": NU}
OKCORE_MODES = {
    "okcore_default": {},  # OKBoostRegressor() as a user gets it: its own tree type, size, nu
    "okcore_fast": {**BEST_FIRST, "max_bins": 255, "sketch_dim": 8},
    "okcore_exact": {**BEST_FIRST, "max_bins": None, "sketch_dim": None},
}
METHODS = (*OKCORE_MODES, "lightgbm", "xgboost")
REQUIRES = {"lightgbm": "lightgbm", "xgboost": "xgboost"}
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def _status_mb(field: str) -> float:
    """A field of /proc/self/status (VmRSS, VmHWM) in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> bool:
    """Reset VmHWM to the current resident set (Linux >= 4.0); False if not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


def _okcore_fit(mode: dict[str, Any], m: int) -> Any:
    from okcore import OKBoostRegressor

    def fit(X: Any, Y: Any) -> None:
        OKBoostRegressor(n_estimators=m, random_state=0, n_jobs=1, **mode).fit(X, Y)

    X, Y, _, _ = make_data(300, P, R)
    OKBoostRegressor(n_estimators=2, **mode).fit(X, Y)  # loads the kernels
    return fit


def _lightgbm_fit(m: int) -> Any:
    import lightgbm as lgb

    params = {
        "objective": "regression", "num_leaves": J + 1, "learning_rate": NU,
        "min_data_in_leaf": 1, "min_sum_hessian_in_leaf": 0.0, "max_bin": 255,
        "num_threads": 1, "verbose": -1, "deterministic": True, "seed": 0,
    }  # fmt: skip

    def fit(X: Any, Y: Any) -> None:
        data = lgb.Dataset(X, label=Y[:, 0], params=params, free_raw_data=False).construct()
        boosters = []
        for col in range(Y.shape[1]):
            data.set_label(Y[:, col])
            boosters.append(lgb.train(params, data, num_boost_round=m))

    return fit


def _xgboost_fit(m: int) -> Any:
    import xgboost as xgb

    def fit(X: Any, Y: Any) -> None:
        xgb.XGBRegressor(
            n_estimators=m, learning_rate=NU, tree_method="hist",
            multi_strategy="multi_output_tree", grow_policy="lossguide", max_leaves=J + 1,
            max_depth=0, max_bin=255, n_jobs=1,
        ).fit(X, Y)  # fmt: skip

    return fit


def child(method: str, n: int, m: int) -> dict[str, Any]:
    """One fit in this process: resident set before it, its peak, wall and CPU."""
    if method in OKCORE_MODES:
        fit = _okcore_fit(OKCORE_MODES[method], m)
    else:
        fit = {"lightgbm": _lightgbm_fit, "xgboost": _xgboost_fit}[method](m)
    X, Y, _, _ = make_data(n, P, R)
    before = _status_mb("VmRSS")
    reset = _reset_peak()
    wall, cpu = time.perf_counter(), cpu_seconds()
    fit(X, Y)
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    peak = _status_mb("VmHWM")
    return {
        "before_mb": round(before, 1),
        "peak_mb": round(peak, 1),
        "fit_mb": round(peak - before, 1),
        "peak_reset": reset,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64_000)
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--trees-for", nargs="*", default=[], metavar="METHOD=K")
    parser.add_argument("--name", default="memory")
    parser.add_argument("--child", choices=METHODS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.n, args.trees)))
        return
    started, cpu_started = time.time(), time.process_time()
    out = Tee()
    out(f"N={args.n} p={P} r={R} M={args.trees} J={J} nu={NU}, one thread, one process each")
    trees_for = {k: int(v) for k, _, v in (spec.partition("=") for spec in args.trees_for)}
    out(
        f"{'method':<14} {'M':>4} {'before MB':>9} {'peak MB':>8} {'fit MB':>7} {'wall s':>7} "
        f"{'CPU s':>7}  load"
    )
    rows = []
    for method in args.methods:
        module = REQUIRES.get(method)
        if module is not None and importlib.util.find_spec(module) is None:
            out(f"{method:<14} not installed")
            continue
        log(f"{method} N={args.n}")
        env = {**os.environ, **{v: "1" for v in THREAD_VARS}}
        trees = trees_for.get(method, args.trees)
        cmd = [sys.executable, "-m", "bench.memory", "--n", str(args.n), "--trees", str(trees)]
        load_before = load_avg()
        done = subprocess.run(
            [*cmd, "--child", method], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
            check=True,
        )  # fmt: skip
        row = {"method": method, "trees": trees, **json.loads(done.stdout.strip().splitlines()[-1])}
        row.update(load_before=load_before, load_after=load_avg())
        rows.append(row)
        out(
            f"{method:<14} {trees:>4} {row['before_mb']:9.0f} {row['peak_mb']:8.0f} {row['fit_mb']:7.0f} "
            f"{row['wall_s']:7.1f} {row['cpu_s']:7.1f}  {row['load_before']} -> {row['load_after']}"
        )
    peer = next((r for r in rows if r["method"] == "lightgbm"), None)
    if peer is not None:
        for row in rows:
            out(
                f"{row['method']:<14} peak / LightGBM's {row['peak_mb'] / peer['peak_mb']:.2f}x, "
                f"fit / LightGBM's {row['fit_mb'] / max(peer['fit_mb'], 1.0):.2f}x"
            )
    save_run(
        REPO_ROOT / "bench" / "results",
        args.name,
        ["bench.memory", *(argv if argv is not None else sys.argv[1:])],
        {"n": args.n, "trees": args.trees, "rows": rows},
        out,
        started,
        cpu_started,
    )


if __name__ == "__main__":
    main()
