"""okcore's joblib loops on a Dask cluster against threads: what scale-out costs.

On whole Cora (2708 vertices, 1433 word indicators, diffusion kernel of the citation graph):

- a forest of ``--trees`` (100) random-forest OK3 trees: threads (okcore ``n_jobs`` = 2)
  against ``joblib.parallel_config(backend="dask")`` on a LocalCluster of 2 worker processes
  with 1 thread each (the same 2 cores: this measures the overhead, not a speed-up);
- a ``--folds`` (5) fold x 4-value grid search of OKBoost's J (``grid_search``, graph
  outputs: each fold trains on the graph induced on its training vertices) on both backends;
- the per-task overhead (a loop of no-op tasks through the same joblib call path) and the
  bytes the workers received (counted under Dask's TCP reader in each worker), so the time on
  N workers can be predicted: setup + tasks x (task time + overhead) / N, as written below the
  tables. Both backends grow the same models (checked: same trees, same scores).

    python -m bench.dask_scale                       # whole Cora, writes bench/results/
    python -m bench.dask_scale --scheduler tcp://host:8786   # on an existing cluster
    python -m bench.dask_scale --quick               # 300 vertices, seconds (CI smoke run)
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import joblib
import numpy as np
from threadpoolctl import threadpool_limits

from bench.common import Report, base_parser, log, output_dirs
from bench.network_completion import induced_edges, load_citation, snowball
from okcore import OK3ForestRegressor, OKBoostRegressor
from okcore.model_selection import grid_search
from okcore.trees.binning import bin_inputs

FOREST = {"max_features": "sqrt", "max_bins": 32, "factor_rank": 128}
BOOST = {"n_estimators": 40, "learning_rate": 0.2, "max_bins": 32, "factor_rank": 64}
J_VALUES = [2, 5, 10, 20]


def _install_counter(dask_worker: Any) -> None:
    """In a worker: count the bytes Dask's TCP comms read (every message, data and tasks)."""
    import distributed.comm.tcp as tcp

    if getattr(dask_worker, "okboost_received", None) is not None:
        return
    original = tcp.read_bytes_rw
    received = [0]

    async def counted(stream: Any, n: int) -> Any:
        received[0] += n
        return await original(stream, n)

    tcp.read_bytes_rw = counted
    dask_worker.okboost_received = received


def _received(dask_worker: Any) -> int:
    return int(dask_worker.okboost_received[0])


def _noop(i: int) -> int:
    return i


def _timed(
    what: str, fit: Callable[[], Any], cpu: Callable[[], float] = time.process_time
) -> tuple[Any, float, float, float]:
    """(result, wall seconds, CPU seconds by ``cpu``'s clock, load average at the end). CPU
    time is the steadier measure on a machine shared with other jobs."""
    wall0, cpu0 = time.perf_counter(), cpu()
    out = fit()
    wall, used = time.perf_counter() - wall0, cpu() - cpu0
    load = os.getloadavg()[0]
    log(f"{what}: {wall:.2f} s wall, {used:.2f} s CPU (load {load:.1f})")
    return out, wall, used, load


def run(argv: Sequence[str] | None = None) -> Report:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--scheduler", help="an existing Dask scheduler (default: LocalCluster)")
    args = parser.parse_args(argv)
    import cloudpickle
    from distributed import Client, LocalCluster

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers need not import bench

    # Dask's nanny starts workers with one BLAS thread (OMP_NUM_THREADS=1 ...): the threads
    # runs get the same, so both use 2 cores and do the same arithmetic (with 2 BLAS threads
    # the graph factor's Lanczos iterates, and so the CV scores, differ in the last digits)
    def one_blas_thread() -> threadpool_limits:
        return threadpool_limits(1, user_api="blas")

    data = load_citation("cora")
    X, edges = data["X"], data["edges"]
    trees, folds = args.trees, args.folds
    if args.quick:
        keep = np.sort(snowball(edges, len(X), 300, args.seed))
        X, edges = X[keep], induced_edges(edges, keep, len(data["X"]))
        trees, folds = 8, 2
    kernel = {"type": "diffusion", "beta": 1.0, "edges": edges}
    report = Report(
        name=args.name or ("dask_scale_quick" if args.quick else "dask_scale"),
        argv=["bench.dask_scale", *(argv if argv is not None else sys.argv[1:])],
        settings={
            "n": len(X),
            "p": X.shape[1],
            "edges": len(edges),
            "trees": trees,
            "folds": folds,
            "forest": FOREST,
            "boost": BOOST,
            "J": J_VALUES,
        },  # fmt: skip
    )
    cluster = None
    if args.scheduler:
        client = Client(args.scheduler)
    else:
        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        )
        client = Client(cluster)
    try:
        client.run(_install_counter)
        workers = len(client.scheduler_info()["workers"])

        def cluster_cpu() -> float:
            """CPU seconds of this process (client, and scheduler of a LocalCluster) and of
            every worker process."""
            return time.process_time() + sum(client.run(time.process_time).values())

        def on_dask(what: str, fit: Callable[[], Any]) -> tuple[Any, float, float, int]:
            """(result, wall s, CPU s of every process, bytes the workers received)."""
            before = sum(client.run(_received).values())
            workers_cpu = sum(client.run(time.process_time).values())
            with joblib.parallel_config(backend="dask"):
                out, wall, cpu, _ = _timed(f"{what} on dask", fit, cluster_cpu)
            report.extra[f"{what}_workers_cpu_s"] = (
                sum(client.run(time.process_time).values()) - workers_cpu
            )
            return out, wall, cpu, sum(client.run(_received).values()) - before

        # compile okcore's kernels here and import okcore on the workers: not part of the runs
        warm = OK3ForestRegressor(n_estimators=2, random_state=0, **FOREST)
        warm.fit(X[:200], kernel={"type": "linear"}, Y=np.eye(200)[:, :5])
        on_dask("warm-up", lambda: warm.fit(X[:200], np.eye(200)[:, :5]))

        # per-task overhead: no-op tasks through joblib, one per task (batch_size=1, as trees)
        n_noop = 40 if args.quick else 400
        _, wall, cpu, _ = on_dask(
            "noop",
            lambda: joblib.Parallel(batch_size=1)(joblib.delayed(_noop)(i) for i in range(n_noop)),
        )
        report.extra["noop_tasks"] = n_noop
        report.extra["overhead_per_task_s"] = wall / n_noop
        report.extra["overhead_cpu_per_task_s"] = cpu / n_noop

        forest = OK3ForestRegressor(n_estimators=trees, random_state=0, **FOREST)
        with one_blas_thread():
            threads, wall, cpu, load = _timed(
                "forest, 2 threads", lambda: forest.set_params(n_jobs=2).fit(X, kernel=kernel)
            )
        report.add("forest_threads", wall_s=wall, cpu_s=cpu, load=load)
        forest.set_params(n_jobs=None)
        cluster_fit, wall, cpu, shipped = on_dask("forest", lambda: forest.fit(X, kernel=kernel))
        assert np.array_equal(cluster_fit.ensemble_.value, threads.ensemble_.value)
        report.add("forest_dask", wall_s=wall, cpu_s=cpu, bytes_received=shipped)
        report.extra["phi_bytes"] = int(threads.output_space_.phi.nbytes)
        report.extra["bins_bytes"] = sys.getsizeof(bin_inputs(X, FOREST["max_bins"]))

        boost = OKBoostRegressor(random_state=0, **BOOST)
        grid = {"max_splits": J_VALUES}
        search = lambda n_jobs: grid_search(  # noqa: E731
            boost, grid, X, kernel=kernel, scoring="auc", cv=folds, random_state=0,
            refit=False, n_jobs=n_jobs,
        )  # fmt: skip
        with one_blas_thread():
            cv_threads, wall, cpu, load = _timed("grid search, 2 threads", lambda: search(2))
        report.add("cv_threads", wall_s=wall, cpu_s=cpu, load=load)
        cv_dask, wall, cpu, shipped = on_dask("cv", lambda: search(None))
        assert cv_dask.table == cv_threads.table
        report.add("cv_dask", wall_s=wall, cpu_s=cpu, bytes_received=shipped)
        report.extra["cv_tasks"] = folds * len(J_VALUES)
        report.extra["best_J"] = cv_threads.best_params["max_splits"]
        report.extra["workers"] = workers
        report.extra["X_bytes"] = int(X.nbytes)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    print(summary(report))
    out_dir, _ = output_dirs(args)
    log(f"saved {report.save(out_dir)}; {report.timing()}")
    return report


def summary(report: Report) -> str:
    """Markdown: wall and CPU times per backend, bytes received, the overhead, and the time
    on N workers they predict."""
    rows, extra = report.rows, report.extra
    lines = ["| run | threads: wall / CPU (s) | dask: wall / CPU (s) | CPU dask / threads "
             "| bytes received by the workers |",
             "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for name, tasks in (("forest", report.settings["trees"]), ("cv", extra["cv_tasks"])):
        thr, dask = rows[f"{name}_threads"], rows[f"{name}_dask"]
        lines.append(
            f"| {name} ({tasks} tasks) | {thr['wall_s'][0]:.1f} / {thr['cpu_s'][0]:.1f} | "
            f"{dask['wall_s'][0]:.1f} / {dask['cpu_s'][0]:.1f} | "
            f"{dask['cpu_s'][0] / thr['cpu_s'][0]:.2f} | "
            f"{dask['bytes_received'][0] / 1e6:.1f} MB |"
        )
    once = extra["X_bytes"] + extra["bins_bytes"] + extra["phi_bytes"]
    trees = report.settings["trees"]
    per_tree = extra["forest_workers_cpu_s"] / trees
    setup = rows["forest_dask"]["cpu_s"][0] - extra["forest_workers_cpu_s"]
    lines += [
        "",
        f"- per-task overhead ({extra['noop_tasks']} no-op tasks): "
        f"{1e3 * extra['overhead_per_task_s']:.1f} ms wall, "
        f"{1e3 * extra['overhead_cpu_per_task_s']:.1f} ms CPU (all processes) per task",
        f"- forest: {per_tree:.2f} CPU s per tree on a worker; {setup:.1f} CPU s in the "
        "client (output factor, bins, scheduling)",
        f"- X {extra['X_bytes'] / 1e6:.1f} MB + bins {extra['bins_bytes'] / 1e6:.1f} MB + "
        f"output factor {extra['phi_bytes'] / 1e6:.1f} MB = {once / 1e6:.1f} MB, which "
        f"pickled into every tree task would be {trees * once / 1e6:.0f} MB",
        f"- predicted forest wall time on N one-thread workers: {setup:.0f} s + "
        f"ceil({trees} / N) x {per_tree:.2f} s + {trees} x "
        f"{1e3 * extra['overhead_per_task_s']:.0f} ms",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    run()
