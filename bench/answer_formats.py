"""Size and time of the service's answer formats: JSON against .npz / .npy
for the big answers, e.g. all pairs of 200 new vertices against N = 2000 training vertices.

On the load test's workload (bench/load_service.py: an SBM graph with community-correlated
features, ids, edges by id), against a fresh ``okboost serve``:

- POST /kernel, ``against: "training"``: the Q x N kernel <F(x), phi(y_i)>;
- POST /kernel, ``against: "predicted"``: the Q x Q kernel and the top_k = 10 edges of every
  new vertex (new-new and new-known, with their ids);
- POST /predict, ``weights: "dense"``: the Q x N W^F weights and the pre-images.

Each answer is asked ``--repeats`` times per format (after one warm-up) by a client that
turns it into numpy arrays (``r.json()`` + ``np.asarray``, or ``np.load``): the median wall
time from sending the request to holding the arrays, and the answer's bytes.

    .venv/bin/python -m bench.answer_formats               # Q = 200, N = 2000
    .venv/bin/python -m bench.answer_formats --quick
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.common import REPO_ROOT, RESULTS_DIR
from bench.load_service import make_workload, train_model, uptime
from bench.scale_util import Tee, log, save_run

ACCEPT = {"json": "application/json", "npz": "application/x-npz", "npy": "application/x-npy"}


def _arrays(fmt: str, r: httpx.Response) -> dict[str, np.ndarray]:
    """What a numpy client does with the answer: every array field as an ndarray."""
    if fmt == "npy":
        return {"kernel": np.load(io.BytesIO(r.content), allow_pickle=False)}
    if fmt == "npz":
        with np.load(io.BytesIO(r.content), allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    out: dict[str, np.ndarray] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}{k}.", v)
        elif isinstance(value, list):
            out[prefix.rstrip(".")] = np.asarray(value)

    walk("", r.json())
    return out


def measure(
    http: httpx.Client, path: str, body: dict[str, Any], fmt: str, repeats: int
) -> dict[str, Any]:
    """Median and best wall time from request to arrays, and the answer's bytes."""
    times, size = [], 0
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        r = http.post(path, json=body, headers={"accept": ACCEPT[fmt]})
        r.raise_for_status()
        _arrays(fmt, r)
        if i:  # the first call warms up
            times.append(time.perf_counter() - t0)
        size = len(r.content)
    return {"bytes": size, "median_s": float(np.median(times)), "min_s": float(np.min(times))}


def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="N = 300, Q = 30, 2 repeats")
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--holdout", type=int, default=200, help="Q, the new vertices")
    p.add_argument("--blocks", type=int, default=20)
    p.add_argument("--m", type=int, default=200)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--server-root",
        type=Path,
        default=None,
        help="start the service of this source tree (e.g. a `git archive` snapshot of a commit)",
    )
    p.add_argument("--name", default=None)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    argv_list = ["bench.answer_formats", *(argv if argv is not None else sys.argv[1:])]
    if args.quick:
        args.n, args.holdout, args.blocks, args.m, args.repeats = 300, 30, 6, 10, 2
    name = (args.name or "answer_formats") + ("_quick" if args.quick else "")
    out_dir = args.out or (REPO_ROOT / "bench" / "out" / "quick" if args.quick else RESULTS_DIR)
    started, cpu_started = time.time(), time.process_time()
    say = Tee()
    w = make_workload(args.n, args.holdout, args.blocks, args.seed)
    from bench.bench_service import start_server

    tmp = Path(tempfile.mkdtemp(prefix="okboost-formats-"))
    proc, url = start_server(tmp / "models", tmp / "server.log", args.server_root or REPO_ROOT)
    rec: dict[str, Any] = {
        "settings": {
            k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k != "out"
        }
    }
    try:
        params = {"n_estimators": args.m, "learning_rate": 0.1, "max_splits": 10}
        model_id = train_model(url, w, params)["model_id"]
        q, n = len(w.ids_new), args.n
        base = {"model_id": model_id, "inputs": w.X_new.tolist(), "ids": w.ids_new}
        cases = {
            f"/kernel against training ({q} x {n} kernel)": (
                "/kernel",
                {**base, "against": "training"},
                ("json", "npz", "npy"),
            ),
            f"/kernel predicted ({q} x {q} kernel + top_k = 10 edges with ids)": (
                "/kernel",
                {**base, "top_k": 10},
                ("json", "npz"),
            ),
            f"/predict weights dense ({q} x {n} W^F + top_k = 5 pre-images)": (
                "/predict",
                {**base, "weights": "dense", "top_k": 5},
                ("json", "npz"),
            ),
        }
        rec["uptime_before"] = uptime()
        results: dict[str, dict[str, Any]] = {}
        with httpx.Client(base_url=url, timeout=600) as http:
            for label, (path, body, formats) in cases.items():
                results[label] = {
                    fmt: measure(http, path, body, fmt, args.repeats) for fmt in formats
                }
                log(f"{label}: {results[label]}")
        rec["uptime_after"] = uptime()
        rec["results"] = results
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)

    say(
        f"## Answer formats: Q = {args.holdout} new vertices, N = {args.n} training vertices "
        f"(median of {args.repeats} calls, request sent to numpy arrays in the client)\n"
    )
    say("| answer | format | bytes | time | bytes vs JSON | time vs JSON |")
    say("| --- | --- | --- | --- | --- | --- |")
    for label, by_fmt in rec["results"].items():
        js = by_fmt["json"]
        for fmt, r in by_fmt.items():
            say(
                f"| {label} | {fmt} | {r['bytes'] / 1e6:.2f} MB | {r['median_s'] * 1e3:.0f} ms | "
                f"{r['bytes'] / js['bytes']:.2f} | {r['median_s'] / js['median_s']:.2f} |"
            )
    say(f"\nuptime before: {rec['uptime_before']}")
    say(f"uptime after:  {rec['uptime_after']}")
    save_run(out_dir, name, argv_list, rec, say, started, cpu_started)
    return rec


if __name__ == "__main__":
    run()
