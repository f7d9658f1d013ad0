"""Refinement of binned cuts: held-out error and CPU time of the fast mode with and without
``refine_cuts``, beside the exact search, on bench_scale's problem.

Problem: ``bench_okcore.make_data`` (p = 50 inputs, r = 50 outputs, a sharp step in input 3),
M = 500 trees of J = 10 splits, nu = 0.1, one thread, random_state = the repeat's number (0, 1, ...: the sketch's draws; modes
are paired by seed). Held-out MSE = mean over ``--queries``
fresh inputs (default 100,000: on 1,000 queries two points inside the bin holding the step
move the fast mode's error by 20%) of ||F(x) - signal(x)||^2 against the noiseless outputs.
CPU = this process's user + system time over the fit (binning included), after a warm-up
fit that compiles the kernels; every row records the load average around its fit.

    python -m bench.refine_cuts                       # N = 4000 and 16000, fast on/off + exact
    python -m bench.refine_cuts --sizes 4000 --repeats 3 --no-exact

Results: bench/results/refine_cuts.{json,txt}.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.bench_okcore import make_data, signal_features  # noqa: E402
from bench.scale_util import Tee, cpu_seconds, load_avg, log, save_run  # noqa: E402

P, R, M, J, NU = 50, 50, 500, 10, 0.1
MODES: dict[str, dict[str, Any]] = {
    "fast": {"max_bins": 255, "sketch_dim": 8, "refine_cuts": False},
    "fast_refined": {"max_bins": 255, "sketch_dim": 8, "refine_cuts": True},
    "hist_refined": {"max_bins": 255, "sketch_dim": None, "refine_cuts": True},
    "hist": {"max_bins": 255, "sketch_dim": None, "refine_cuts": False},
    "exact": {"max_bins": None, "sketch_dim": None},
}


def problem(n: int, n_queries: int, seed: int = 0):
    """make_data's training set of size n and ``n_queries`` fresh queries of the same signal
    (its mixing matrix replayed from the same seed)."""
    X, Y, Xq_small, truth_small = make_data(n, P, R, seed)
    rng = np.random.default_rng(seed)
    rng.random((n + 1000, P))
    A = rng.standard_normal((8, R))
    np.testing.assert_allclose(signal_features(Xq_small) @ A, truth_small, rtol=0, atol=1e-12)
    Xq = np.random.default_rng(seed + 12345).random((n_queries, P))
    return X, Y, Xq, signal_features(Xq) @ A


def fit_and_score(mode: str, X, Y, Xq, truth, seed: int) -> dict[str, Any]:
    from okcore import OKBoostRegressor

    est = OKBoostRegressor(
        n_estimators=M, max_splits=J, learning_rate=NU, n_jobs=1, random_state=seed, **MODES[mode]
    )
    row: dict[str, Any] = {"mode": mode, "load_before": load_avg()}
    wall, cpu = time.perf_counter(), cpu_seconds()
    est.fit(X, Y)
    row["cpu_s"] = round(cpu_seconds() - cpu, 2)
    row["wall_s"] = round(time.perf_counter() - wall, 2)
    row["load_after"] = load_avg()
    F = est.predict_features(Xq)
    row["mse"] = float(np.mean(np.sum((F - truth) ** 2, axis=1)))
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4000, 16000])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=1, help="fits per (mode, N): CPU spread")
    parser.add_argument("--modes", nargs="+", default=["fast", "fast_refined", "exact"])
    parser.add_argument("--no-exact", action="store_true")
    parser.add_argument("--name", default="refine_cuts")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes if not (args.no_exact and m == "exact")]
    started, cpu_started = time.time(), time.process_time()
    out = Tee()
    from okcore import OKBoostRegressor

    Xw, Yw, _, _ = make_data(300, P, R)
    for mode in modes:  # compile every kernel before timing
        OKBoostRegressor(n_estimators=2, max_splits=J, **MODES[mode]).fit(Xw, Yw)
    rows = []
    out(f"M={M} J={J} nu={NU} p={P} r={R}, {args.queries} fresh queries, one thread")
    out(f"{'N':>6} {'mode':<13} seed {'MSE':>8} {'CPU s':>7} {'wall s':>7}  load (1, 5, 15 min)")
    for n in args.sizes:
        X, Y, Xq, truth = problem(n, args.queries)
        for rep in range(args.repeats):
            for mode in modes:
                log(f"N={n} {mode} #{rep + 1}")
                row = {"n": n, "repeat": rep, **fit_and_score(mode, X, Y, Xq, truth, rep)}
                rows.append(row)
                out(
                    f"{n:>6} {mode:<13} {rep:>4} {row['mse']:8.4f} {row['cpu_s']:7.2f} "
                    f"{row['wall_s']:7.2f}  {row['load_before']} -> {row['load_after']}"
                )
    save_run(
        REPO_ROOT / "bench" / "results",
        args.name,
        ["bench.refine_cuts", *(argv if argv is not None else sys.argv[1:])],
        {"rows": rows, "modes": {m: MODES[m] for m in modes}},
        out,
        started,
        cpu_started,
    )


if __name__ == "__main__":
    main()
