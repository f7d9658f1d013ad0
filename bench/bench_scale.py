"""Scale benchmark: okcore's three split searches against scikit-learn, XGBoost and
LightGBM on the synthetic problem of bench_okcore.py, N = 1000 ... 64000.

Problem (``bench_okcore.make_data``): p = 50 inputs, r = 50 outputs (linear output kernel),
M = 500 trees of J = 10 splits, nu = 0.1; held-out MSE = mean over 1000 queries of
||F(x) - signal(x)||^2 against the noiseless outputs. Methods:

    okcore_exact     OKBoostRegressor(max_bins=None)                (exact presorted search)
    okcore_hist      OKBoostRegressor(max_bins=255)                 (histograms)
    okcore_sketch    OKBoostRegressor(max_bins=255, sketch_dim=8)   (histograms + sketch)
    sklearn_loop     M DecisionTreeRegressor(max_leaf_nodes=J+1) fits on the residuals
    xgboost          XGBRegressor(multi_strategy="multi_output_tree", tree_method="hist",
                     grow_policy="lossguide", max_leaves=J+1, max_depth=0, learning_rate=nu)
    lightgbm         r LightGBM models, one per output column (num_leaves=J+1, learning_rate=nu,
                     min_data_in_leaf=1, min_sum_hessian_in_leaf=0, max_bin=255), the inputs
                     binned once (one Dataset, its label replaced per column)

Every (method, N) runs in a fresh process: wall = perf_counter around the fit (from the
numpy arrays to a fitted model, binning included; predictions not included), CPU = user +
sys of that process over the fit (getrusage, all threads), peak RSS = the child's ru_maxrss.
okcore compiles its kernels first (a tiny fit in the same mode). Threads: okcore n_jobs =
--n-jobs, peers nthread / num_threads = the same, OMP/OpenBLAS/MKL/numba threads of every
child = the same (the scikit-learn tree is single-threaded whatever the setting).

Fewer rounds: ``--peer-trees N=K`` (peers; ``xgboost:N=K`` for one peer) and ``--exact-trees N=K`` (okcore exact) fit K
rounds instead of M at that N and extrapolate time linearly: fit(M) = fit(K) + (M - K) x the
per-round time of rounds K/2+1..K (the first half includes the set-up, binning, presort);
both halves are printed so the constant per-round cost can be checked. Such rows say
"extrapolated from K" and their MSE is the one at K rounds, marked "@K".

    python -m bench.bench_scale                           # N = 1000, 4000, 16000, 64000
    python -m bench.bench_scale --sizes 1000 4000 --methods okcore_hist lightgbm
    python -m bench.bench_scale --peer-trees 16000=250 64000=50 --exact-trees 64000=100
    python -m bench.bench_scale --methods okcore_exact okcore_hist okcore_sketch \
        --merge bench/results/scale_peers.json            # re-measure okcore only
    python -m bench.bench_scale --quick                   # smoke run, seconds

Results: bench/results/scale.{json,txt} (okcore rows, with the peer rows of scale_peers.json
merged in), scale_n4000.{json,txt} (all six methods at N = 4000 in one sitting).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # also runnable as ``python bench/bench_scale.py``
    sys.path.insert(0, str(REPO_ROOT))

from bench.bench_okcore import make_data  # noqa: E402  (numpy only: keeps the children lean)
from bench.common import cpu_model, write_result  # noqa: E402

OKCORE = ("okcore_exact", "okcore_hist", "okcore_sketch")
PEERS = ("sklearn_loop", "xgboost", "lightgbm")
METHODS = (*OKCORE, *PEERS)
LABELS = {
    "okcore_exact": "okcore exact",
    "okcore_hist": "okcore hist (255 bins)",
    "okcore_sketch": "okcore hist + sketch (k=8)",
    "sklearn_loop": "scikit-learn loop",
    "xgboost": "XGBoost multi_output_tree",
    "lightgbm": "LightGBM, r models",
}
# the module each method needs beyond numpy (peers are in the `bench` extra)
REQUIRES = {
    "okcore_exact": "okcore",
    "okcore_hist": "okcore",
    "okcore_sketch": "okcore",
    "sklearn_loop": "sklearn",
    "xgboost": "xgboost",
    "lightgbm": "lightgbm",
}
OKCORE_MODES = {
    "okcore_exact": {"max_bins": None, "sketch_dim": None},
    "okcore_hist": {"max_bins": 255, "sketch_dim": None},
    "okcore_sketch": {"max_bins": 255, "sketch_dim": 8},
}
N_QUERIES = 1000
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


# --------------------------------------------------------------------------------------------
# Child side: one fit, timed from inside
# --------------------------------------------------------------------------------------------
def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


class Clock:
    """Wall and CPU stamps after each boosting round, relative to the start of the fit."""

    def __init__(self) -> None:
        self.wall0, self.cpu0 = time.perf_counter(), _cpu()
        self.rounds: list[tuple[float, float]] = []
        self.phases: dict[str, float] = {}

    def start(self) -> None:
        self.wall0, self.cpu0 = time.perf_counter(), _cpu()
        self.rounds.clear()

    def stamp(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall0, _cpu() - self.cpu0

    def tick(self) -> None:
        self.rounds.append(self.stamp())


def _halves(rounds: Sequence[tuple[float, float]], k: int) -> dict[str, float]:
    """Wall / CPU of rounds 1..k/2 (set-up included) and k/2+1..k from per-round stamps."""
    h = k // 2
    if len(rounds) != k or h < 1:
        return {}
    (w_h, c_h), (w_k, c_k) = rounds[h - 1], rounds[k - 1]
    return {
        "first_wall": w_h,
        "first_cpu": c_h,
        "second_wall": w_k - w_h,
        "second_cpu": c_k - c_h,
        "half": h,
    }


def _mse(pred: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean(np.sum((np.asarray(pred) - truth) ** 2, axis=1)))


def fit_okcore(method: str, X, Y, Xq, truth, k: int, j: int, nu: float, n_jobs: int) -> dict:
    import hashlib

    import okcore
    from okcore import OKBoostRegressor

    # which okcore source this row measured (others edit the working tree while benchmarks run)
    source = hashlib.sha1()
    for file in sorted(Path(okcore.__file__).parent.glob("*.py")):
        source.update(file.read_bytes())
    mode = OKCORE_MODES[method]  # every setting explicit: the defaults are "auto"
    # compile every kernel of this mode (numba caches to disk, but loading costs too)
    warm = OKBoostRegressor(n_estimators=2, max_splits=j, n_jobs=n_jobs, **mode)
    warm.fit(X[:200], Y[:200]).predict(Xq[:5])
    est = OKBoostRegressor(
        n_estimators=k, learning_rate=nu, max_splits=j, n_jobs=n_jobs, random_state=0, **mode
    )
    clock = Clock()

    def callback(progress: Any) -> None:
        phase = getattr(progress, "phase", "trees")
        if phase != "trees" or progress.done == 0:  # start of a set-up phase
            clock.phases.setdefault(phase, clock.stamp()[0])
        else:
            clock.tick()

    clock.start()
    est.fit(X, Y, callback=callback)
    wall, cpu = clock.stamp()
    # the search actually used (fitted attributes where okcore reports them)
    used = {key: getattr(est, key + "_", value) for key, value in mode.items()}
    if used != mode:
        raise RuntimeError(f"{method}: okcore used {used}, not the requested {mode}")
    out = {
        "fit_wall": wall,
        "fit_cpu": cpu,
        **_halves(clock.rounds, k),
        "mse": _mse(est.predict(Xq), truth),
        "train_loss": float(est.train_loss_[-1]),
        "okcore_source_sha1": source.hexdigest()[:12],
        "okcore_search": used,
    }
    # set-up phases as seen from outside: phase start times and the end of the first tree
    if clock.rounds:
        out["phases"] = {**clock.phases, "first_tree_done": clock.rounds[0][0]}
    return out


def fit_sklearn_loop(X, Y, Xq, truth, k: int, j: int, nu: float, n_jobs: int) -> dict:
    from sklearn.tree import DecisionTreeRegressor

    clock = Clock()
    query_wall = query_cpu = 0.0  # applying each tree to the queries: not part of the fit
    clock.start()
    F = np.tile(Y.mean(axis=0), (len(X), 1))
    Fq = np.tile(Y.mean(axis=0), (len(Xq), 1))
    for _ in range(k):
        tree = DecisionTreeRegressor(max_leaf_nodes=j + 1).fit(X, Y - F)
        F += nu * tree.predict(X)
        w, c = time.perf_counter(), _cpu()
        Fq += nu * tree.predict(Xq)
        query_wall += time.perf_counter() - w
        query_cpu += _cpu() - c
        wall, cpu = clock.stamp()
        clock.rounds.append((wall - query_wall, cpu - query_cpu))
    wall, cpu = clock.stamp()
    return {
        "fit_wall": wall - query_wall,
        "fit_cpu": cpu - query_cpu,
        **_halves(clock.rounds, k),
        "mse": _mse(Fq, truth),
        "train_loss": float(np.mean(np.sum((Y - F) ** 2, axis=1))),
    }


def fit_xgboost(X, Y, Xq, truth, k: int, j: int, nu: float, n_jobs: int) -> dict:
    import xgboost as xgb

    clock = Clock()

    class Stamp(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log) -> bool:
            clock.tick()
            return False

    est = xgb.XGBRegressor(
        n_estimators=k,
        learning_rate=nu,
        tree_method="hist",
        multi_strategy="multi_output_tree",
        grow_policy="lossguide",
        max_leaves=j + 1,
        max_depth=0,
        max_bin=255,
        n_jobs=n_jobs,
        callbacks=[Stamp()],
    )
    clock.start()
    est.fit(X, Y)
    wall, cpu = clock.stamp()
    return {
        "fit_wall": wall,
        "fit_cpu": cpu,
        **_halves(clock.rounds, k),
        "mse": _mse(est.predict(Xq), truth),
        "train_loss": float(np.mean(np.sum((Y - est.predict(X)) ** 2, axis=1))),
    }


def fit_lightgbm(X, Y, Xq, truth, k: int, j: int, nu: float, n_jobs: int) -> dict:
    import lightgbm as lgb

    params = {
        "objective": "regression",
        "num_leaves": j + 1,
        "learning_rate": nu,
        "min_data_in_leaf": 1,
        "min_sum_hessian_in_leaf": 0.0,
        "max_bin": 255,
        "num_threads": n_jobs,
        "verbose": -1,
        "deterministic": True,
        "seed": 0,
    }
    clock = Clock()
    rounds = np.zeros((k, 2))
    boosters = []
    clock.start()
    data = lgb.Dataset(X, label=Y[:, 0], params=params, free_raw_data=False).construct()
    for col in range(Y.shape[1]):
        data.set_label(Y[:, col])
        stamps: list[tuple[float, float]] = []
        model_start = clock.stamp()
        boosters.append(
            lgb.train(
                params,
                data,
                num_boost_round=k,
                callbacks=[lambda env, s=stamps: s.append(clock.stamp())],
            )
        )
        # per-round stamps summed over the r models (each relative to its own start)
        rounds += np.array(stamps) - np.array(model_start)
    wall, cpu = clock.stamp()
    # the dataset construction belongs to the first half, like the other methods' set-up
    setup = (wall - rounds[-1][0], cpu - rounds[-1][1])
    stamps_total = [(w + setup[0], c + setup[1]) for w, c in rounds]
    pred = np.column_stack([b.predict(Xq) for b in boosters])
    train = np.column_stack([b.predict(X) for b in boosters])
    return {
        "fit_wall": wall,
        "fit_cpu": cpu,
        **_halves(stamps_total, k),
        "mse": _mse(pred, truth),
        "train_loss": float(np.mean(np.sum((Y - train) ** 2, axis=1))),
    }


def child(args: argparse.Namespace) -> None:
    X, Y, Xq, truth = make_data(args.n, args.p, args.r)
    common = (X, Y, Xq, truth, args.rounds, args.j, args.nu, args.n_jobs)
    if args.child in OKCORE:
        out = fit_okcore(args.child, *common)
    else:
        out = {"sklearn_loop": fit_sklearn_loop, "xgboost": fit_xgboost, "lightgbm": fit_lightgbm}[
            args.child
        ](*common)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    out.update(peak_rss_mb=ru.ru_maxrss / 1024, process_cpu=ru.ru_utime + ru.ru_stime)
    print(json.dumps(out))


# --------------------------------------------------------------------------------------------
# Parent side: one child per (method, N), tables, growth exponents, JSON
# --------------------------------------------------------------------------------------------
def measure(method: str, n: int, rounds: int, args: argparse.Namespace) -> dict:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        method,
        "--n",
        str(n),
        "--rounds",
        str(rounds),
        "--p",
        str(args.p),
        "--r",
        str(args.r),
        "--j",
        str(args.j),
        "--nu",
        str(args.nu),
        "--n-jobs",
        str(args.n_jobs),
    ]
    env = {**os.environ, **{v: str(args.n_jobs) for v in THREAD_VARS}}
    load_before = os.getloadavg()
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    load_after = os.getloadavg()
    if proc.returncode != 0:
        raise RuntimeError(f"{method} at N = {n} failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out.update(
        method=method,
        n=n,
        rounds=rounds,
        started=time.strftime("%H:%M:%S", time.localtime(started)),
        load_before=load_before,
        load_after=load_after,
    )
    # time for M rounds: measured, or fit(K) + (M - K) x per-round time of the second half
    if rounds == args.m:
        out.update(wall=out["fit_wall"], cpu=out["fit_cpu"], extrapolated=False)
    else:
        per_wall = out["second_wall"] / (rounds - out["half"])
        per_cpu = out["second_cpu"] / (rounds - out["half"])
        out.update(
            wall=out["fit_wall"] + (args.m - rounds) * per_wall,
            cpu=out["fit_cpu"] + (args.m - rounds) * per_cpu,
            extrapolated=True,
        )
    return out


def parse_rounds(specs: Sequence[str] | None, m: int) -> dict[tuple[str | None, int | None], int]:
    """``["16000=250", "xgboost:64000=50", "100"]`` -> {(method or None, N or None): K}."""
    out: dict[tuple[str | None, int | None], int] = {}
    for spec in specs or ():
        method, _, rest = spec.rpartition(":")
        n, _, k = rest.rpartition("=")
        out[(method or None, int(n) if n else None)] = min(int(k), m)
    return out


def rounds_for(spec: dict[tuple[str | None, int | None], int], method: str, n: int, m: int) -> int:
    for key in ((method, n), (None, n), (method, None), (None, None)):
        if key in spec:
            return spec[key]
    return m


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    try:  # the okcore measured: commit, and whether its working tree had changes
        git = ["git", "-C", str(REPO_ROOT)]
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "okcore"], capture_output=True, text=True, check=True
        ).stdout.strip()
        info["git"] = head + (" + uncommitted okcore changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        info["git"] = None
    for mod in ("scipy", "numba", "okcore", "sklearn", "xgboost", "lightgbm"):
        try:
            info[mod] = getattr(__import__(mod), "__version__", "?")
        except ImportError:
            info[mod] = None
    return info


def _fmt_load(load: Sequence[float]) -> str:
    return "/".join(f"{x:.2f}" for x in load)


def _ratio(a: float | None, b: float | None) -> str:
    return "—" if not a or not b else f"{a / b:.1f}x"


def table(n: int, rows: dict[str, dict], m: int) -> str:
    loop, lgbm = rows.get("sklearn_loop"), rows.get("lightgbm")
    exact = rows.get("okcore_exact")
    lines = [
        f"### N = {n} (M = {m}; speed-up = peer time / this row's time; "
        "load average 1/5/15 min before -> after the row)",
        "",
        "| method | wall s | CPU s | peak RSS MB | held-out MSE | vs loop (wall / CPU) "
        "| vs LightGBM (wall / CPU) | MSE vs exact | halves wall s (1st / 2nd) | load before -> after "
        "| CPU s of each run (least kept) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for method, row in rows.items():
        mark = f" (extrapolated from {row['rounds']})" if row["extrapolated"] else ""
        mark += f" [earlier run, {row['started']}]" if row.get("earlier_run") else ""
        mse = f"{row['mse']:.4f}" + (f" @{row['rounds']}" if row["extrapolated"] else "")
        rel = "—"
        if exact and method != "okcore_exact":
            rel = f"{100 * (row['mse'] / exact['mse'] - 1):+.1f}%"
            if row["extrapolated"] or exact["extrapolated"]:
                rel += " (rounds differ)" if row["rounds"] != exact["rounds"] else ""
        vs_loop = (
            "—"
            if loop is None or method == "sklearn_loop"
            else (f"{_ratio(loop['wall'], row['wall'])} / {_ratio(loop['cpu'], row['cpu'])}")
        )
        vs_lgbm = (
            "—"
            if lgbm is None or method == "lightgbm"
            else (f"{_ratio(lgbm['wall'], row['wall'])} / {_ratio(lgbm['cpu'], row['cpu'])}")
        )
        halves = (
            f"{row['first_wall']:.2f} / {row['second_wall']:.2f} (K = {row['rounds']})"
            if "first_wall" in row
            else "—"
        )
        lines.append(
            f"| {LABELS[method]}{mark} | {row['wall']:.2f} | {row['cpu']:.2f} "
            f"| {row['peak_rss_mb']:.0f} | {mse} | {vs_loop} | {vs_lgbm} | {rel} | {halves} "
            f"| {_fmt_load(row['load_before'])} -> {_fmt_load(row['load_after'])} "
            f"| {', '.join(f'{c:.2f}' for c in row.get('cpu_runs', [row['cpu']]))} |"
        )
    return "\n".join(lines)


def growth(results: dict[int, dict[str, dict]], methods: Sequence[str]) -> str:
    """Log-log slope of fit time between consecutive N, per method (wall, CPU in brackets)."""
    sizes = sorted(results)
    lines = [
        "### Growth exponents: log(t2 / t1) / log(N2 / N1) of the fit time (wall [CPU]);"
        " * = a time extrapolated from fewer rounds",
        "",
    ]
    for method in methods:
        parts = []
        for a, b in zip(sizes, sizes[1:], strict=False):
            ra, rb = results[a].get(method), results[b].get(method)
            if ra is None or rb is None:
                continue
            star = "*" if ra["extrapolated"] or rb["extrapolated"] else ""
            sw = math.log(rb["wall"] / ra["wall"]) / math.log(b / a)
            sc = math.log(rb["cpu"] / ra["cpu"]) / math.log(b / a)
            parts.append(f"{a}->{b}: {sw:.2f} [{sc:.2f}]{star}")
        if parts:
            lines.append(f"- {LABELS[method]}: " + ", ".join(parts))
    return "\n".join(lines)


def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: N = 300, 600, M = 20 (meaningless numbers)"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--m", type=int, default=500, help="boosting rounds M")
    parser.add_argument("--j", type=int, default=10, help="splits per tree J")
    parser.add_argument("--nu", type=float, default=0.1, help="learning rate")
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--r", type=int, default=50)
    parser.add_argument(
        "--n-jobs",
        type=int,
        default=1,
        help="okcore n_jobs = the peers' thread count = OMP/BLAS threads",
    )
    parser.add_argument(
        "--peer-trees",
        nargs="+",
        default=None,
        metavar="[METHOD:]N=K",
        help="peers (or that peer) fit K rounds at that N (bare K: every N), "
        "time extrapolated to M",
    )
    parser.add_argument(
        "--exact-trees",
        nargs="+",
        default=None,
        metavar="N=K",
        help="okcore exact fits K rounds at that N, time extrapolated",
    )
    parser.add_argument(
        "--merge",
        type=Path,
        default=None,
        help="results JSON of an earlier run: its rows of methods not run now join the tables "
        "(marked, with their own time and load)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run the method list this many times in turn (A B C, A B C, ...) and keep each "
        "method's run of least CPU time: on a shared machine the load drifts between rows",
    )
    parser.add_argument("--name", default="scale", help="stem of the results files")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results folder (default bench/results; bench/out/quick with --quick)",
    )
    parser.add_argument("--child", choices=METHODS, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args)
        return {}
    if args.quick:
        args.m = 20
    sizes = args.sizes or ([300, 600] if args.quick else [1000, 4000, 16000, 64000])
    peer_k, exact_k = parse_rounds(args.peer_trees, args.m), parse_rounds(args.exact_trees, args.m)
    out_dir = args.out or (REPO_ROOT / "bench" / ("out/quick" if args.quick else "results"))
    name = args.name + ("_quick" if args.quick else "")

    methods, skipped = [], {}
    for method in args.methods:
        if importlib.util.find_spec(REQUIRES[method]) is None:
            skipped[method] = f"{REQUIRES[method]} not installed (pip install -e '.[bench]')"
        else:
            methods.append(method)
    info = machine()
    started, cpu_started = time.time(), time.process_time()
    lines: list[str] = []

    def emit(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    emit(f"# bench_scale {' '.join(argv if argv is not None else sys.argv[1:])}")
    emit(
        f"# started {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; machine: {info['platform']}, "
        f"{info['cpu']}, nproc {info['nproc']}; python {info['python']}, numpy {info['numpy']}, "
        f"numba {info['numba']}, sklearn {info['sklearn']}, xgboost {info['xgboost']}, "
        f"lightgbm {info['lightgbm']}; okcore at {info['git']}"
    )
    emit(
        f"# p = {args.p}, r = {args.r}, M = {args.m}, J = {args.j}, nu = {args.nu}, "
        f"{N_QUERIES} queries; threads: okcore n_jobs = peers' threads = {args.n_jobs}; "
        f"nice {os.nice(0)}; load average at start {_fmt_load(os.getloadavg())}"
    )
    for method, why in skipped.items():
        emit(f"# skipped {method}: {why}")

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"

    def save(results: dict, failed: dict, wall: float) -> Path:
        payload.update(
            wall_time_s=round(wall, 1),
            failed=failed,
            results={str(n): rows for n, rows in results.items()},
        )
        write_result(path, payload)
        return path

    payload: dict[str, Any] = {
        "name": name,
        "command": "python -m bench.bench_scale "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "settings": {
            "sizes": sizes,
            "methods": methods,
            "skipped": skipped,
            "M": args.m,
            "J": args.j,
            "nu": args.nu,
            "p": args.p,
            "r": args.r,
            "n_queries": N_QUERIES,
            "n_jobs": args.n_jobs,
            "peer_trees": args.peer_trees,
            "exact_trees": args.exact_trees,
        },
        "machine": info,
    }
    results: dict[int, dict[str, dict]] = {}
    failed: dict[str, str] = {}
    earlier: dict[str, dict] = {}
    if args.merge is not None:
        previous = json.loads(args.merge.read_text())
        earlier = previous["results"]
        payload["merged_from"] = {
            key: previous.get(key) for key in ("name", "command", "settings", "machine")
        }
        emit(
            f"# rows marked [earlier run] are from {args.merge.name} ({previous['command']}; "
            f"okcore at {previous['machine'].get('git')}): same problem and settings, not rerun"
        )
    for n, repeat in ((n, rep) for n in sizes for rep in range(args.repeat)):
        results.setdefault(n, {})
        for method in METHODS:
            if method not in methods:
                row = earlier.get(str(n), {}).get(method)
                if row is not None:
                    results[n][method] = {**row, "earlier_run": True}
                continue
            spec = peer_k if method in PEERS else exact_k if method == "okcore_exact" else {}
            k = rounds_for(spec, method, n, args.m)
            try:
                row = measure(method, n, k, args)
            except RuntimeError as err:  # a failed row is reported, the others still run
                failed[f"{method}@{n}"] = str(err)[-2000:]
                emit(f"# FAILED {method} at N = {n}: {str(err).strip().splitlines()[-1]}")
                continue
            kept = results[n].get(method)
            runs = [*(kept or {}).get("cpu_runs", []), round(row["cpu"], 2)]
            if kept is None or row["cpu"] < kept["cpu"]:
                kept = row
            results[n][method] = {**kept, "cpu_runs": runs}
            print(
                f"{time.strftime('%H:%M:%S')} N={n} {method} K={k}: wall {row['fit_wall']:.2f} s "
                f"(for M: {row['wall']:.2f} s), CPU {row['cpu']:.2f} s, "
                f"MSE {row['mse']:.4f}, RSS {row['peak_rss_mb']:.0f} MB, load "
                f"{_fmt_load(row['load_before'])} -> {_fmt_load(row['load_after'])}",
                file=sys.stderr,
                flush=True,
            )
        if repeat + 1 < args.repeat:
            continue
        emit()
        emit(table(n, results[n], args.m))
        save(results, failed, time.time() - started)  # partial results survive an interruption
    emit()
    emit(growth(results, [m for m in METHODS if any(m in rows for rows in results.values())]))
    wall, cpu = time.time() - started, time.process_time() - cpu_started
    path = save(results, failed, wall)
    emit(
        f"\nwall time {wall:.0f} s (children's CPU in the rows; this process {cpu:.0f} s); "
        f"results in {path}"
    )
    write_result(out_dir / f"{name}.txt", "\n".join(lines) + "\n")
    return payload


if __name__ == "__main__":
    run()
