"""Calibrate and check the training-job cost model (service/training/budget.py on okcore's estimate_cost) against real fits.

Each case fits an okcore estimator in a fresh process (after a tiny warm-up fit, so numba's
compilation is not counted, as in the service's warm training processes) and measures
the peak resident memory (ru_maxrss), the process's memory before the data exists, and the
time of each phase (from the fit callback). It prints the estimate beside the measurement:

    .venv/bin/python bench/job_cost.py            # all cases (a few minutes)
    .venv/bin/python bench/job_cost.py --quick    # two small cases (the smoke test)

Results go to bench/results/job_cost.json (--out to change). The comparable quantities:
``base`` (BASE_BYTES against the process before any data), ``work`` (the estimate's
max(factor, search + trees) against peak minus the memory with the data loaded) and the
seconds of the factor, setup and per-tree phases.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import write_result

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

CASES: dict[str, dict[str, Any]] = {
    "diffusion-1500-hist": dict(model="okboost", kernel="diffusion", n=1500, p=10, M=40),
    "diffusion-1500-exact": dict(
        model="okboost", kernel="diffusion", n=1500, p=10, M=15, max_bins=None, sketch_dim=None
    ),
    "diffusion-8000-lowrank": dict(model="okboost", kernel="diffusion", n=8000, p=10, M=40),
    "linear-20000": dict(model="okboost", kernel="linear", n=20000, p=20, d=5, M=40),
    "rbf-2500": dict(model="okboost", kernel="rbf", n=2500, p=10, d=3, M=20),
    "precomputed-2500": dict(model="okboost", kernel="precomputed", n=2500, p=10, M=20),
    "ok3-linear-5000": dict(model="ok3", kernel="linear", n=5000, p=10, d=3),
    "forest-rbf-1200": dict(model="ok3-forest", kernel="rbf", n=1200, p=10, d=3, M=10),
    "diffusion-400-3000-trees": dict(model="okboost", kernel="diffusion", n=400, p=10, M=3000),
}
QUICK = ("diffusion-400-3000-trees", "linear-20000")


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _data(case: dict[str, Any]) -> tuple[Any, dict[str, Any], Any]:
    """(inputs, fit kwargs, outputs or None) of a synthetic problem of the case's size."""
    import numpy as np

    rng = np.random.default_rng(0)
    n, p = case["n"], case["p"]
    X = rng.normal(size=(n, p))
    kind = case["kernel"]
    if kind == "diffusion":
        ring = np.c_[np.arange(n), (np.arange(n) + 1) % n]
        extra = rng.integers(0, n, size=(2 * n, 2))
        edges = np.vstack([ring, extra[extra[:, 0] != extra[:, 1]]])
        return X, {"kernel": {"type": "diffusion", "beta": 1.0, "edges": edges.tolist()}}, None
    Y = np.c_[np.sin(X[:, : case.get("d", 3)]), X[:, :1] * X[:, 1:2]][:, : case.get("d", 3)]
    if kind == "precomputed":
        A = rng.normal(size=(n, n // 2))
        return X, {"gram": A @ A.T / n}, None
    spec = {"type": "rbf", "gamma": 0.5} if kind == "rbf" else {"type": "linear"}
    return X, {"kernel": spec, "Y": Y}, Y


def _params(case: dict[str, Any]) -> dict[str, Any]:
    import okcore

    cls = {
        "okboost": okcore.OKBoostRegressor,
        "ok3": okcore.OK3Regressor,
        "ok3-forest": okcore.OK3ForestRegressor,
    }[case["model"]]
    params = cls().get_params()
    if "M" in case:
        params["n_estimators"] = case["M"]
    for key in ("max_bins", "sketch_dim"):
        if key in case:
            params[key] = case[key]
    params["random_state"] = 0
    return params


def child(case: dict[str, Any]) -> dict[str, Any]:
    """Run one case in this (fresh) process and measure it."""
    import numpy as np

    import okcore

    params = _params(case)
    cls = okcore.ESTIMATORS[case["model"]]
    warm = dict(case, n=60, M=2) if "M" in case else dict(case, n=60)
    Xw, kw, _ = _data(warm)
    cls(**{**params, "n_estimators": 2} if "n_estimators" in params else params).fit(Xw, **kw)
    del Xw, kw
    base = _rss()
    X, kwargs, outputs = _data(case)
    loaded = _rss()
    marks: list[tuple[str, int, float]] = []

    def callback(progress: okcore.FitProgress) -> None:
        marks.append((progress.phase, progress.done, time.perf_counter()))

    start = time.perf_counter()
    y = kwargs.pop("Y", None)
    cls(**params).fit(X, y, callback=callback, **kwargs)
    end = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    first_tree = next(i for i, m in enumerate(marks) if m[0] == "trees")
    factor_end = next((m[2] for m in marks if m[0] == "binning"), marks[first_tree][2])
    trees = [m for m in marks if m[0] == "trees"]
    if trees[-1][1] > trees[0][1]:  # the first tree lasted as long as the others on average
        setup_end = trees[0][2] - (trees[-1][2] - trees[0][2]) / (trees[-1][1] - trees[0][1])
    else:  # one tree: no interval to tell set-up from tree time
        setup_end = factor_end
    per_tree = (end - setup_end) / trees[-1][1]
    data_bytes = int(X.nbytes + sum(np.asarray(v).nbytes for v in kwargs.values() if v is not None))
    if outputs is not None:
        data_bytes += int(outputs.nbytes)
    return {
        "base_bytes": base,
        "loaded_bytes": loaded,
        "peak_bytes": peak,
        "data_bytes": data_bytes,
        "factor_seconds": factor_end - start,
        "setup_seconds": max(setup_end - factor_end, 0.0),
        "tree_seconds": per_tree,
        "fit_seconds": end - start,
    }


def estimate(case: dict[str, Any], data_bytes: int) -> dict[str, Any]:
    import numpy as np

    from service.training.budget import estimate_job

    n, p = case["n"], case["p"]
    kind = case["kernel"]
    kernel: dict[str, Any] | None
    if kind == "diffusion":
        kernel = {"type": "diffusion", "beta": 1.0, "edges": [[0, 1]] * (3 * n)}
    elif kind == "precomputed":
        kernel = None
    else:
        kernel = {"type": "rbf", "gamma": 0.5} if kind == "rbf" else {"type": "linear"}
    d = case.get("d") if kind in ("rbf", "linear") else None
    return estimate_job(
        case["model"], _params(case), np.empty((n, p)), kernel, d, data_bytes
    ).summary()


def run(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two small cases")
    parser.add_argument("--case", action="append", help="run only these cases")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "job_cost.json"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return {}
    from service.training import budget

    names = args.case or (list(QUICK) if args.quick else list(CASES))
    rows = []
    print(
        f"{'case':28} {'base MB':>8} {'work MB':>16} {'factor s':>14} {'setup s':>14} "
        f"{'tree ms':>14} {'fit s':>14}   (estimate / measured)"
    )
    for name in names:
        case = CASES[name]
        out = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps(case)],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        measured = json.loads(out.stdout.strip().splitlines()[-1])
        est = estimate(case, measured["data_bytes"])
        work_measured = measured["peak_bytes"] - measured["loaded_bytes"]
        work_est = est["memory_bytes"] - budget.BASE_BYTES - 2 * measured["data_bytes"]
        rows.append({"case": name, **case, "measured": measured, "estimate": est})
        print(
            f"{name:28} {budget.BASE_BYTES / 1e6:4.0f}/{measured['base_bytes'] / 1e6:<4.0f}"
            f"{work_est / 1e6:8.0f}/{work_measured / 1e6:<8.0f}"
            f"{est['factor_seconds']:7.2f}/{measured['factor_seconds']:<7.2f}"
            f"{est['setup_seconds']:7.3f}/{measured['setup_seconds']:<7.3f}"
            f"{1e3 * est['tree_seconds']:7.1f}/{1e3 * measured['tree_seconds']:<7.1f}"
            f"{est['seconds']:7.2f}/{measured['fit_seconds']:<7.2f}"
        )
    result = {
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "load_average": list(__import__("os").getloadavg()),
        "cases": rows,
    }
    write_result(Path(args.out), result)
    return result


if __name__ == "__main__":
    run()
