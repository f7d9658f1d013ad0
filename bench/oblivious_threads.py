"""Threads of oblivious trees: wall, CPU and critical path of one OKBoost fit with 1 and 2
threads, and a check that both give the same model.

Problem: ``bench_okcore.make_data`` (p = 50, r = 50), ``tree_type="oblivious"``, depth 4,
l2 3, nu = 0.1, the fast search (255 bins, sketch k = 8): frontier.py's
``okcore_oblivious_l2_3`` at 16 leaves. Each fit runs in a fresh process (``--child``) after a
small warm-up fit that loads the compiled kernels: wall = perf_counter around ``fit``, CPU =
user + system of the process over the fit (all threads). Fits alternate 1 and 2 threads,
``--repeats`` times per N, with the load average before and after each.

On a machine loaded beyond its cores the wall time says little, so the children also time
every parallel region (measurement-only wrappers of the oblivious level search's and the
builder's chunk runners): "critical path" = the fit's CPU minus the CPU of the chunks plus,
per parallel region, its slowest chunk's CPU, i.e. the wall time the fit would take if each
of its threads had a core. CPU 1 thread / critical path 2 threads is the speed-up the
threads can give, load or not.

The builder hands its thread pool to best-first trees only; until it hands it to oblivious
trees too (``executor=executor`` in ``build_tree``'s oblivious branch), the child passes a
pool of ``n_jobs`` threads to them itself.

    python -m bench.oblivious_threads                      # N = 4000 and 64000, 3 repeats
    python -m bench.oblivious_threads --sizes 4000 --repeats 5 --trees 100

Results: bench/results/oblivious_threads.{json,txt}.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.bench_okcore import make_data  # noqa: E402
from bench.scale_util import Tee, cpu_seconds, load_avg, log, peak_rss_mb, save_run  # noqa: E402

P, R, DEPTH, L2, NU = 50, 50, 4, 3.0, 0.1


def _timed(runner: Any, ledger: dict[str, float]) -> Any:
    """A chunk runner (executor, n_threads, work, total, run, grain) that records its chunks'
    thread CPU: the total in ledger["chunks_cpu"], the slowest per region in
    ledger["slowest_chunks_cpu"]."""

    def timed_runner(executor, n_threads, work, total, run, grain=1):
        chunks: list[float] = []

        def timed_run(lo: int, hi: int) -> None:
            t0 = time.thread_time()
            run(lo, hi)
            chunks.append(time.thread_time() - t0)

        runner(executor, n_threads, work, total, timed_run, grain)
        ledger["chunks_cpu"] += sum(chunks)
        ledger["slowest_chunks_cpu"] += max(chunks)

    return timed_runner


def _instrument(ledger: dict[str, float], n_jobs: int) -> None:
    from okcore.trees import builder, oblivious

    oblivious._in_threads = _timed(oblivious._in_threads, ledger)
    builder._in_chunks = _timed(builder._in_chunks, ledger)
    if n_jobs > 1 and "executor=executor" not in inspect.getsource(builder.build_tree):
        pool = ThreadPoolExecutor(n_jobs)
        grow = builder.build_oblivious_tree

        def with_pool(*args: Any, **kwargs: Any) -> Any:
            return grow(*args, executor=pool, **kwargs)

        builder.build_oblivious_tree = with_pool


def child(n: int, n_jobs: int, n_trees: int) -> dict[str, Any]:
    """One timed fit in this process; the model's fingerprint says whether threads changed it."""
    from okcore import OKBoostRegressor

    ledger = {"chunks_cpu": 0.0, "slowest_chunks_cpu": 0.0}
    _instrument(ledger, n_jobs)
    X, Y, _, _ = make_data(n, P, R)
    settings = dict(
        tree_type="oblivious", max_depth=DEPTH, l2_regularization=L2, learning_rate=NU,
        max_bins=255, sketch_dim=8, early_stopping=False, n_jobs=n_jobs, random_state=0,
    )  # fmt: skip
    OKBoostRegressor(n_estimators=2, **settings).fit(X[:3000], Y[:3000])
    est = OKBoostRegressor(n_estimators=n_trees, **settings)
    load_before = load_avg()
    ledger.update(chunks_cpu=0.0, slowest_chunks_cpu=0.0)
    wall, cpu = time.perf_counter(), cpu_seconds()
    est.fit(X, Y)
    row = {"wall_s": time.perf_counter() - wall, "cpu_s": cpu_seconds() - cpu}
    row["critical_path_s"] = row["cpu_s"] - ledger["chunks_cpu"] + ledger["slowest_chunks_cpu"]
    row["parallel_fraction"] = ledger["chunks_cpu"] / row["cpu_s"]
    e = est.ensemble_
    digest = hashlib.sha256()
    for field in ("feature", "threshold", "value", "impurity", "train_leaf"):
        digest.update(np.ascontiguousarray(getattr(e, field)).tobytes())
    return {
        **row,
        "peak_rss_mb": peak_rss_mb(),
        "model_sha256": digest.hexdigest()[:16],
        "load_before": load_before,
        "load_after": load_avg(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4000, 64000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trees", type=int, default=300)
    parser.add_argument("--name", default="oblivious_threads")
    parser.add_argument("--child", type=int, nargs=2, metavar=("N", "N_JOBS"))
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.trees)))
        return
    started, cpu_started = time.time(), time.process_time()
    out = Tee()
    out(f"M={args.trees} depth={DEPTH} l2={L2} nu={NU} p={P} r={R}, oblivious (255 bins, sketch 8)")
    out(
        f"{'N':>6} {'rep':>3} {'thr':>3} {'wall s':>7} {'CPU s':>7} {'crit s':>7} {'par %':>5} "
        f"{'RSS MB':>7}  model    load"
    )
    rows = []
    for n in args.sizes:
        for rep in range(args.repeats):
            pair = {}
            for n_jobs in (1, 2):
                log(f"N={n} repeat {rep + 1} threads {n_jobs}")
                env = {**os.environ, "NUMBA_NUM_THREADS": str(n_jobs), "OMP_NUM_THREADS": "1"}
                cmd = [sys.executable, "-m", "bench.oblivious_threads", "--trees", str(args.trees)]
                done = subprocess.run(
                    [*cmd, "--child", str(n), str(n_jobs)],
                    env=env, cwd=REPO_ROOT, capture_output=True, text=True, check=True,
                )  # fmt: skip
                row = {"n": n, "repeat": rep, "n_jobs": n_jobs, **json.loads(done.stdout)}
                rows.append(row)
                pair[n_jobs] = row
                out(
                    f"{n:>6} {rep:>3} {n_jobs:>3} {row['wall_s']:7.2f} {row['cpu_s']:7.2f} "
                    f"{row['critical_path_s']:7.2f} {100 * row['parallel_fraction']:5.1f} "
                    f"{row['peak_rss_mb']:7.0f}  {row['model_sha256'][:8]} "
                    f"{row['load_before']} -> {row['load_after']}"
                )
            out(
                f"{'':>6} wall speed-up {pair[1]['wall_s'] / pair[2]['wall_s']:.2f}x, "
                f"critical-path speed-up {pair[1]['cpu_s'] / pair[2]['critical_path_s']:.2f}x, "
                f"CPU ratio {pair[2]['cpu_s'] / pair[1]['cpu_s']:.2f}, same model: "
                f"{pair[1]['model_sha256'] == pair[2]['model_sha256']}"
            )
    save_run(
        REPO_ROOT / "bench" / "results",
        args.name,
        ["bench.oblivious_threads", *(argv if argv is not None else sys.argv[1:])],
        {"rows": rows},
        out,
        started,
        cpu_started,
    )


if __name__ == "__main__":
    main()
