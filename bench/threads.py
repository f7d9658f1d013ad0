"""Threads of the fast mode: wall, CPU and peak RSS of one OKBoost fit with 1 and 2 threads
on bench_scale's problem, and a check that both give the same model.

Problem: ``bench_okcore.make_data`` (p = 50, r = 50), M = 500 trees of J = 10 splits,
nu = 0.1, the default fast search (255 bins, sketch k = 8, refined cuts). Each fit runs in a
fresh process (``--child``) after a small warm-up fit that loads the compiled kernels: wall =
perf_counter around ``fit``, CPU = user + system of the process over the fit (all threads),
RSS = the child's peak. Fits alternate 1 and 2 threads, ``--repeats`` times per N, and
each row records the load average before and after: the machine is shared, so a speed-up
is only meaningful beside the load it was measured at.

On a machine loaded beyond its cores the wall time says little, so the children also time
every parallel region of the growth (measurement-only wrapper of the builder's chunk
runner): "critical path" = the fit's CPU time minus the CPU of the chunks plus, per parallel
region, its slowest chunk's CPU, i.e. the wall time the fit would take if each of its
threads had a core. CPU 1 thread / critical path 2 threads is the speed-up those threads
can give, load or not (cache sharing under load still inflates both). Each pair also lists
its chunked regions (the level search, the children's statistics, the boosting step, ...):
wall time on 1 and 2 threads and the CPU two threads spend against one, then the wall time
outside every region (what stays serial).

``--side-by-side`` adds, to every pair, two one-thread fits of the same problem run at the
same time in two processes: what this machine's two cores give to two independent copies of
the work. With one thread alone taking T1 and each side-by-side copy T1' (wall), two cores
completed twice the work 2 T1 / T1' times faster than one core did it once: the speed-up
two threads of the fit, doing the same work on the same shared caches and memory, could
reach at that moment (its "ceiling"). The copies run after the pair, not with it: on a
machine whose speed moves between fits, the ratio is only a bound when T1 and T1' were
measured at the same speed (docs/PERFORMANCE.md, "Two copies side by side").

    python -m bench.threads                         # N = 4000 and 64000, 3 repeats
    python -m bench.threads --sizes 4000 --repeats 5 --trees 100
    python -m bench.threads --tree-type oblivious --max-depth 4 --name threads_oblivious

Results: bench/results/threads.{json,txt}.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.bench_okcore import make_data  # noqa: E402
from bench.scale_util import Tee, cpu_seconds, load_avg, log, peak_rss_mb, save_run  # noqa: E402

P, R, J, NU = 50, 50, 10, 0.1


def region_name(run: Any) -> str:
    """A parallel region's name: its chunk function's qualified name without the
    ``<locals>`` of the functions that define it (``build_oblivious_tree.searcher.search``)."""
    return str(getattr(run, "__qualname__", run)).replace(".<locals>", "")


def _time_parallel_regions(ledger: dict[str, float], regions: dict[str, dict[str, float]]) -> None:
    """Wrap the fit's chunk runners (okcore.threads) so each chunk's thread CPU is recorded:
    ledger gets the chunks' total CPU and the sum over regions of the slowest thread's CPU
    (for overlapped regions, each thread's CPU over its share); ``regions`` gets, per
    chunked region (:func:`region_name`), its chunks' CPU, its slowest chunks' CPU and its
    wall time."""
    from okcore import threads

    runner = threads.in_chunks

    def timed_runner(executor, n_threads, work, total, run, grain=1):
        chunks: list[float] = []

        def timed_run(lo: int, hi: int) -> None:
            t0 = time.thread_time()
            run(lo, hi)
            chunks.append(time.thread_time() - t0)

        wall = time.perf_counter()
        runner(executor, n_threads, work, total, timed_run, grain)
        wall = time.perf_counter() - wall
        ledger["chunks_cpu"] += sum(chunks)
        ledger["slowest_chunks_cpu"] += max(chunks)
        region = regions.setdefault(
            region_name(run), {"cpu_s": 0.0, "slowest_s": 0.0, "wall_s": 0.0}
        )
        region["cpu_s"] += sum(chunks)
        region["slowest_s"] += max(chunks)
        region["wall_s"] += wall

    threads.in_chunks = timed_runner
    overlapped = threads.overlapped

    def timed_overlapped(executor, n_threads, work, first, total, run, n_blocks):
        per_thread: dict[int, float] = {}

        def charge(t0: float) -> None:
            me = threading.get_ident()
            per_thread[me] = per_thread.get(me, 0.0) + time.thread_time() - t0

        def timed_first():
            t0 = time.thread_time()
            try:
                return first()
            finally:
                charge(t0)

        def timed_run(lo: int, hi: int) -> None:
            t0 = time.thread_time()
            run(lo, hi)
            charge(t0)

        result = overlapped(executor, n_threads, work, timed_first, total, timed_run, n_blocks)
        ledger["chunks_cpu"] += sum(per_thread.values())
        ledger["slowest_chunks_cpu"] += max(per_thread.values())
        return result

    threads.overlapped = timed_overlapped


def child(n: int, n_jobs: int, n_trees: int, tree: dict[str, Any]) -> dict[str, Any]:
    """One timed fit in this process; the model's fingerprint says whether threads changed it.
    ``tree``: extra tree parameters (tree_type, max_depth)."""
    from okcore import OKBoostRegressor

    ledger = {"chunks_cpu": 0.0, "slowest_chunks_cpu": 0.0}
    regions: dict[str, dict[str, float]] = {}
    _time_parallel_regions(ledger, regions)

    X, Y, _, _ = make_data(n, P, R)
    OKBoostRegressor(n_estimators=2, max_splits=J, max_bins=255, n_jobs=n_jobs, **tree).fit(
        X[:3000], Y[:3000]
    )
    est = OKBoostRegressor(
        n_estimators=n_trees, max_splits=J, learning_rate=NU, max_bins=255, sketch_dim=8,
        n_jobs=n_jobs, random_state=0, **tree,
    )  # fmt: skip
    load_before = load_avg()
    ledger.update(chunks_cpu=0.0, slowest_chunks_cpu=0.0)
    regions.clear()
    wall, cpu = time.perf_counter(), cpu_seconds()
    est.fit(X, Y)
    row = {"wall_s": time.perf_counter() - wall, "cpu_s": cpu_seconds() - cpu}
    row["critical_path_s"] = row["cpu_s"] - ledger["chunks_cpu"] + ledger["slowest_chunks_cpu"]
    row["parallel_fraction"] = ledger["chunks_cpu"] / row["cpu_s"]
    row["regions"] = regions
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


def run_children(n: int, n_jobs: int, args: argparse.Namespace, copies: int) -> list[dict]:
    """``copies`` child fits (``--child n n_jobs``) started together, each in its own
    process; their JSON rows once all have ended."""
    env = {**os.environ, "NUMBA_NUM_THREADS": str(n_jobs), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "bench.threads", "--trees", str(args.trees)]
    cmd += ["--tree-type", args.tree_type]
    cmd += [] if args.max_depth is None else ["--max-depth", str(args.max_depth)]
    procs = [
        subprocess.Popen(
            [*cmd, "--child", str(n), str(n_jobs)],
            env=env,
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(copies)
    ]
    rows = []
    for proc in procs:
        stdout, stderr = proc.communicate()
        if proc.returncode != 0:
            raise subprocess.CalledProcessError(proc.returncode, proc.args, stdout, stderr)
        rows.append(json.loads(stdout))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4000, 64000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--name", default="threads")
    parser.add_argument("--tree-type", default="best-first", choices=["best-first", "oblivious"])
    parser.add_argument("--max-depth", type=int, default=None)
    parser.add_argument(
        "--side-by-side",
        action="store_true",
        help="also two one-thread fits at once per pair: a ceiling for two threads (docstring)",
    )
    parser.add_argument("--child", type=int, nargs=2, metavar=("N", "N_JOBS"))
    args = parser.parse_args(argv)
    tree = {"tree_type": args.tree_type, "max_depth": args.max_depth}
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.trees, tree)))
        return
    started, cpu_started = time.time(), time.process_time()
    out = Tee()
    out(
        f"M={args.trees} J={J} nu={NU} p={P} r={R}, fast mode (255 bins, sketch 8), "
        f"tree_type={args.tree_type} max_depth={args.max_depth}"
    )
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
                (child_row,) = run_children(n, n_jobs, args, copies=1)
                row = {"n": n, "repeat": rep, "n_jobs": n_jobs, **child_row}
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
            for name, one in sorted(pair[1]["regions"].items(), key=lambda kv: -kv[1]["cpu_s"]):
                two = pair[2]["regions"].get(name)
                if two is not None and two["wall_s"] > 0:
                    out(
                        f"{'':>6}   {name}: 1 thread {one['wall_s']:.2f} s, 2 threads "
                        f"{two['wall_s']:.2f} s wall ({one['wall_s'] / two['wall_s']:.2f}x), "
                        f"CPU {two['cpu_s'] / max(one['cpu_s'], 1e-12):.2f}x"
                    )
            outside = [
                p["wall_s"] - sum(r["wall_s"] for r in p["regions"].values()) for p in pair.values()
            ]
            out(f"{'':>6}   outside the regions: {outside[0]:.2f} s, {outside[1]:.2f} s wall")
            if args.side_by_side:
                log(f"N={n} repeat {rep + 1} two one-thread fits side by side")
                copies = run_children(n, 1, args, copies=2)
                for copy, child_row in enumerate(copies):
                    rows.append(
                        {"n": n, "repeat": rep, "n_jobs": 1, "side_by_side": copy, **child_row}
                    )
                walls = [c["wall_s"] for c in copies]
                slowest = max(walls)
                out(
                    f"{'':>6}   two one-thread fits side by side: "
                    f"{', '.join(f'{w:.2f}' for w in walls)} s wall (alone "
                    f"{pair[1]['wall_s']:.2f} s): ceiling {2 * pair[1]['wall_s'] / slowest:.2f}x, "
                    f"against the 2-thread fit's {pair[1]['wall_s'] / pair[2]['wall_s']:.2f}x"
                )
    save_run(
        REPO_ROOT / "bench" / "results",
        args.name,
        ["bench.threads", *(argv if argv is not None else sys.argv[1:])],
        {"rows": rows},
        out,
        started,
        cpu_started,
    )


if __name__ == "__main__":
    main()
