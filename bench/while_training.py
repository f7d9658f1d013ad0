"""The service while a training job runs: latencies and the job's ETA, measured on a live
server (the timings the end-to-end tests do not assert).

1. ``/kernel`` (top-3 edges of one vertex) from 16 concurrent clients while a long job
   grows trees: median and p99 latency, and trees grown meanwhile.
2. ``/health/live`` and ``/kernel`` one after the other while a 1200 x 1200 Gram matrix is
   factorised (scipy's eigh holds the GIL for seconds: the job runs in its own process):
   the worst round trip against the job's length.
3. The ETA of a job (diffusion kernel, N vertices, M trees) polled every 0.2 s, against the
   time the job actually had left: its ratio at a few points of every phase.

    .venv/bin/python bench/while_training.py            # N = 1500, M = 200
    .venv/bin/python bench/while_training.py --quick    # small sizes (a smoke run)

Results go to bench/results/while_training.json (--out to change).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.bench_service import ROOT, clustered_graph, start_server, summarize
from bench.common import write_result
from okboost_client import OKBoostClient

PARAMS = {"learning_rate": 0.1, "max_splits": 4, "random_state": 0}


def predictions_during_training(client: OKBoostClient, url: str, n: int) -> dict[str, Any]:
    X, edges = clustered_graph(n, 10)
    spec = {"type": "diffusion", "beta": 1.0, "edges": edges}
    mid = client.train(X, spec, params={**PARAMS, "n_estimators": 5}, wait=True)["model_id"]
    long = client.train(X, spec, params={**PARAMS, "n_estimators": 20_000})
    while client.job(long["job_id"])["progress"]["done"] == 0:
        time.sleep(0.05)
    before = client.job(long["job_id"])["progress"]["done"]
    body = {"model_id": mid, "inputs": X[:1].tolist(), "top_k": 3}
    with httpx.Client(base_url=url, timeout=120, limits=httpx.Limits(max_connections=16)) as http:

        def call(_: int) -> tuple[int, float]:
            t0 = time.perf_counter()
            status = http.post("/kernel", json=body).status_code
            return status, time.perf_counter() - t0

        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(call, range(320)))
    after = client.job(long["job_id"])["progress"]["done"]
    client.cancel(long["job_id"])
    return {
        "requests": len(results),
        "errors": sum(status != 200 for status, _ in results),
        "trees_grown_meanwhile": after - before,
        **summarize([t for _, t in results]),
    }


def liveness_during_factorisation(client: OKBoostClient, url: str, n: int) -> dict[str, Any]:
    X, edges = clustered_graph(300, 10)
    mid = client.train(X, {"type": "diffusion", "edges": edges}, params=PARAMS, wait=True)[
        "model_id"
    ]
    rng = np.random.default_rng(0)
    A = rng.normal(size=(n, n // 2))
    big = client.train(
        rng.normal(size=(n, 5)),
        {"type": "precomputed", "gram": A @ A.T / n},
        params={"n_estimators": 3, "max_splits": 2},
    )
    rounds, state = [], "queued"
    with httpx.Client(base_url=url, timeout=120) as http:
        while state in ("queued", "running"):
            t0 = time.perf_counter()
            job = http.get(f"/jobs/{big['job_id']}").json()
            state = job["state"]
            http.get("/health/live")
            http.post("/kernel", json={"model_id": mid, "inputs": X[:1].tolist()})
            rounds.append((job["phase"], time.perf_counter() - t0))
    factor = [t for phase, t in rounds if phase == "output_space"]
    return {
        "gram_n": n,
        "job_seconds": client.job(big["job_id"])["elapsed"],
        "rounds": len(rounds),
        "rounds_during_output_space": len(factor),
        "worst_round_ms": 1e3 * max(t for _, t in rounds),
        "during_output_space": summarize(factor) if factor else None,
    }


def eta_accuracy(client: OKBoostClient, n: int, trees: int) -> dict[str, Any]:
    X, edges = clustered_graph(n, 10)
    job = client.train(
        X, {"type": "diffusion", "edges": edges}, params={**PARAMS, "n_estimators": trees}
    )
    samples = []
    while True:
        info = client.job(job["job_id"])
        samples.append((time.time(), info["phase"], info["progress"]["done"], info["eta"]))
        if info["state"] not in ("queued", "running"):
            break
        time.sleep(0.2)
    end = info["finished"]
    points = []
    for t, phase, done, eta in samples:
        left = end - t
        # the last moments (and the save after the last tree, which the ETA leaves out) are
        # too short for a ratio to mean anything
        if eta is not None and left > 0.5 and done < trees:
            points.append(
                {"phase": phase, "done": done, "eta": eta, "left": left, "ratio": eta / left}
            )
    worst = (
        max(points, key=lambda p: max(p["ratio"], 1 / max(p["ratio"], 1e-9))) if points else None
    )
    early = [p for p in points if p["phase"] == "trees" and p["done"] <= max(2, trees // 25)]
    return {
        "n": n,
        "trees": trees,
        "job_seconds": info["elapsed"],
        "state": info["state"],
        "points": points,
        "worst": worst,
        "early_trees": early,
    }


def run(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "while_training.json"))
    args = parser.parse_args(argv)
    n, gram_n, trees = (300, 400, 20) if args.quick else (1500, 1200, 200)
    work = Path(tempfile.mkdtemp(prefix="okb-while-training-"))
    proc, url = start_server(work / "models", work / "server.log")
    try:
        with OKBoostClient(url, timeout=300) as client:
            result = {
                "load_average_before": list(os.getloadavg()),
                "predictions_during_training": predictions_during_training(client, url, n),
                "liveness_during_factorisation": liveness_during_factorisation(client, url, gram_n),
                "eta": eta_accuracy(client, n, trees),
                "load_average_after": list(os.getloadavg()),
            }
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(work, ignore_errors=True)
    write_result(Path(args.out), result)
    summary = {k: v for k, v in result.items() if k != "eta"}
    summary["eta"] = {k: v for k, v in result["eta"].items() if k != "points"}
    print(json.dumps(summary, indent=1))
    return result


if __name__ == "__main__":
    run()
