"""Latency and throughput of the okboost service over real HTTP.

Trains an OKBoost model (N training vertices, M trees) through the service, on a
diffusion kernel over a random clustered graph (the network-completion use case),
then measures:

- one-vertex POST /predict and POST /kernel (by default the top_k = 10 edges of the new
  vertex, `return_kernel` false): median and p99 over sequential calls;
- throughput of POST /kernel and /predict with C concurrent clients (asyncio + httpx),
  with the error count;
- the machine's load average before and after.

Usage (starts its own `okboost serve` on a free localhost port):

    .venv/bin/python bench/bench_service.py                      # N=2000, M=500, 1000 calls, 16 clients
    .venv/bin/python bench/bench_service.py --n 300 --m 50 --calls 200   # quick look
    .venv/bin/python bench/bench_service.py --model-dir DIR --model-id ID  # reuse a trained model
    .venv/bin/python bench/bench_service.py --synthetic 100000,200   # service side at large N
    # the same measurements against the service code of another source tree (before/after):
    git worktree add /tmp/okb-old <commit>
    .venv/bin/python bench/bench_service.py --model-dir DIR --model-id ID --server-root /tmp/okb-old

Results are printed and written as JSON to bench/out/bench_service.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import write_result  # noqa: E402
from okboost_client import OKBoostClient  # noqa: E402


def clustered_graph(n: int, p: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n vertices in 10 clusters, features near the cluster centre, ~8 edges per vertex."""
    rng = np.random.default_rng(seed)
    k = 10
    cluster = rng.integers(0, k, size=n)
    centres = rng.normal(scale=2.0, size=(k, p))
    X = centres[cluster] + rng.normal(scale=1.0, size=(n, p))
    edges = set()
    for v in range(n):
        same = np.flatnonzero(cluster == cluster[v])
        for u in rng.choice(same, size=3):
            if u != v:
                edges.add((min(v, u), max(v, u)))
        u = int(rng.integers(0, n))
        if u != v and rng.random() < 0.2:
            edges.add((min(v, u), max(v, u)))
    return X, np.asarray(sorted(edges), dtype=np.int64)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    model_dir: Path, log: Path, server_root: Path = ROOT
) -> tuple[subprocess.Popen[bytes], str]:
    """`okboost serve` of the source tree ``server_root`` (this one by default)."""
    port = free_port()
    env = {**os.environ, "OKBOOST_LOG_LEVEL": "warning", "PYTHONPATH": str(server_root)}
    log.parent.mkdir(parents=True, exist_ok=True)
    out = log.open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "service.cli",
            "serve",
            "--port",
            str(port),
            "--model-dir",
            str(model_dir),
        ],
        cwd=server_root,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/health/live", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start")


def summarize(seconds: list[float]) -> dict[str, float]:
    ms = np.sort(np.asarray(seconds) * 1e3)
    return {
        "median_ms": float(np.median(ms)),
        "p99_ms": float(ms[min(len(ms) - 1, int(np.ceil(0.99 * len(ms))) - 1)]),
        "mean_ms": float(ms.mean()),
        "max_ms": float(ms.max()),
    }


def sequential(http: httpx.Client, path: str, bodies: list[dict[str, Any]]) -> dict[str, Any]:
    for body in bodies[:20]:  # warm-up: model load into the cache, connection, JIT
        http.post(path, json=body).raise_for_status()
    times, errors = [], 0
    for body in bodies:
        t0 = time.perf_counter()
        r = http.post(path, json=body)
        times.append(time.perf_counter() - t0)
        errors += r.status_code != 200
    return {"calls": len(bodies), "errors": errors, **summarize(times)}


async def concurrent(
    url: str, path: str, bodies: list[dict[str, Any]], clients: int
) -> dict[str, Any]:
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    times: list[float] = []
    errors = 0

    async def worker(http: httpx.AsyncClient) -> None:
        nonlocal errors
        while True:
            try:
                body = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            t0 = time.perf_counter()
            try:
                r = await http.post(path, json=body)
                errors += r.status_code != 200
            except httpx.HTTPError:
                errors += 1
            times.append(time.perf_counter() - t0)

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(http) for _ in range(clients)))
        wall = time.perf_counter() - t0
    return {
        "clients": clients,
        "calls": len(bodies),
        "errors": errors,
        "throughput_rps": len(bodies) / wall,
        "wall_s": wall,
        **summarize(times),
    }


def synthetic_scale(n: int, r: int, p: int = 20, queries: tuple[int, ...] = (1, 1000)) -> None:
    """Service-side cost of /kernel top_k = 10 edges at large N, in-process, without HTTP
    and without training: a stand-in estimator whose F(x) is a fixed linear map to r
    columns (the service only sees F and phi). Prints time per request and peak memory."""
    import tracemalloc

    from service.inference import predict as inference
    from service.schemas.api import KernelRequest
    from service.store.model_store import LoadedModel

    rng = np.random.default_rng(0)

    class StandIn:
        def __init__(self) -> None:
            self.W = rng.normal(size=(p, r)) / p
            self.output_space_ = type("Space", (), {"phi": rng.normal(size=(n, r))})()

        def predict_features(self, X: Any) -> np.ndarray:
            return np.asarray(X @ self.W)

    X = rng.normal(size=(n, p))
    m = LoadedModel("0" * 32, StandIn(), X, None, {})
    t0 = time.perf_counter()
    m.train_features()
    print(f"N={n} r={r}: F(x_i) cached in {time.perf_counter() - t0:.2f} s", flush=True)
    for q in queries:
        req = KernelRequest.model_validate(
            {"model_id": m.model_id, "inputs": X[:q] + 0.1, "top_k": 10, "return_kernel": False}
        )
        inference.kernel(m, req)
        calls = 20 if q == 1 else 2
        tracemalloc.start()
        t0 = time.perf_counter()
        for _ in range(calls):
            inference.kernel(m, req)
        per_call = (time.perf_counter() - t0) / calls
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(
            f"  Q={q}: {per_call * 1e3:.1f} ms per request, peak {peak / 2**20:.0f} MiB held "
            f"(blocks of {inference.block_rows(n)} rows)",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="training vertices N")
    ap.add_argument("--m", type=int, default=500, help="trees M")
    ap.add_argument("--p", type=int, default=10, help="input features")
    ap.add_argument("--max-splits", type=int, default=10)
    ap.add_argument("--calls", type=int, default=1000, help="sequential calls per endpoint")
    ap.add_argument("--clients", type=int, default=16, help="concurrent clients")
    ap.add_argument("--model-dir", type=Path, help="store to use (default: a temporary one)")
    ap.add_argument("--model-id", help="measure this model of --model-dir instead of training one")
    ap.add_argument(
        "--kernel-top-k",
        type=int,
        default=10,
        help="/kernel asks the top_k edges of the new vertex, return_kernel false "
        "(0: the 1 x 1 predicted kernel only)",
    )
    ap.add_argument(
        "--server-root",
        type=Path,
        default=ROOT,
        help="source tree whose service to run (e.g. a git worktree of an older commit)",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "bench_service.json")
    ap.add_argument(
        "--synthetic",
        metavar="N,R",
        help="only measure the service side of /kernel at N training vertices and factor "
        "rank R in-process with a stand-in estimator (e.g. 100000,200), then exit",
    )
    args = ap.parse_args()
    if args.synthetic:
        n, r = (int(v) for v in args.synthetic.split(","))
        synthetic_scale(n, r)
        return

    X, edges = clustered_graph(args.n + 1000, args.p)
    X_train = X[: args.n]
    train_edges = edges[(edges < args.n).all(axis=1)]
    X_new = X[args.n :]
    model_dir = args.model_dir or Path(tempfile.mkdtemp(prefix="okboost-bench-")) / "models"
    load_before = os.getloadavg()
    proc, url = start_server(
        model_dir, args.out.with_suffix(".server.log"), args.server_root.resolve()
    )
    try:
        with OKBoostClient(url, timeout=3600) as client:
            t0 = time.perf_counter()
            if args.model_id:  # reuse a model trained by an earlier run
                info = client.model(args.model_id)
                mid, train_s, job = args.model_id, None, {"state": info["status"]}
                args.n, args.m = info["n_train"], info["n_estimators"]
            else:
                accepted = client.train(
                    X_train,
                    {"type": "diffusion", "beta": 1.0, "edges": train_edges},
                    params={
                        "n_estimators": args.m,
                        "learning_rate": 0.1,
                        "max_splits": args.max_splits,
                        "random_state": 0,
                    },
                    name="bench",
                )
                job = client.wait(accepted["job_id"], poll=0.5)
                train_s = time.perf_counter() - t0
                mid = accepted["model_id"]
                info = client.model(mid)
        print(
            f"model N={args.n} M={args.m}: "
            + ("reused" if train_s is None else f"trained through the service in {train_s:.1f} s")
            + " "
            f"(fit {info['fit_time']:.1f} s, {len(train_edges)} edges)",
            flush=True,
        )
        rows = [X_new[i % len(X_new) : i % len(X_new) + 1].tolist() for i in range(args.calls)]
        predict_bodies = [{"model_id": mid, "inputs": r, "top_k": 5} for r in rows]
        kernel_extra: dict[str, Any] = (
            {"top_k": args.kernel_top_k, "return_kernel": False} if args.kernel_top_k else {}
        )
        kernel_bodies = [{"model_id": mid, "inputs": r, **kernel_extra} for r in rows]
        results: dict[str, Any] = {
            "machine": {
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "platform": platform.platform(),
                "load_average_before": list(load_before),
            },
            "server_root": str(args.server_root.resolve()),
            "kernel_request": kernel_extra or "predicted 1 x 1 kernel",
            "model": {
                "n_train": args.n,
                "n_estimators": args.m,
                "p": args.p,
                "max_splits": args.max_splits,
                "kernel": "diffusion beta=1",
                "n_edges": int(len(train_edges)),
                "train_seconds": train_s,
                "fit_seconds": info["fit_time"],
                "job_state": job["state"],
            },
        }
        with httpx.Client(base_url=url, timeout=60) as http:
            results["predict_sequential"] = sequential(http, "/predict", predict_bodies)
            print("predict  sequential", results["predict_sequential"], flush=True)
            results["kernel_sequential"] = sequential(http, "/kernel", kernel_bodies)
            print("kernel   sequential", results["kernel_sequential"], flush=True)
        results["kernel_concurrent"] = asyncio.run(
            concurrent(url, "/kernel", kernel_bodies, args.clients)
        )
        print("kernel   concurrent", results["kernel_concurrent"], flush=True)
        results["predict_concurrent"] = asyncio.run(
            concurrent(url, "/predict", predict_bodies, args.clients)
        )
        print("predict  concurrent", results["predict_concurrent"], flush=True)
        results["machine"]["load_average_after"] = list(os.getloadavg())
        print("load average before", load_before, "after", os.getloadavg(), flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    write_result(args.out, results)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
