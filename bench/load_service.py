"""Load test of the okboost service: C concurrent clients for T seconds mixing
POST /kernel (top_k edges of one new vertex) and POST /predict, against an N-vertex model.

The model (unless ``--url`` and ``--model-id`` target an existing one): a synthetic
stochastic-block-model graph (bench/sbm_service.py's generator) of ``--n`` training
vertices in ``--blocks`` blocks with community-correlated features, trained through the
service the way a network scientist would send it: float32 inputs as a ``.npy`` part,
the vertex ids as a text part (one per line) and the edges BY ID as a tab-separated text
part. ``--holdout`` more vertices of the same graph are the new vertices the clients ask
about, each request naming its vertex by id.

During the load every client loops until the deadline: with probability ``--kernel-share``
a /kernel request (one new vertex, ``top_k`` = 10 new-known edges, ``return_kernel``
false), else a /predict request (one new vertex, ``top_k`` = 5 pre-images). An answer
counts as an error unless it is a 200 with the expected content (10 edges named by id,
5 pre-image ids). A monitoring task scrapes GET /metrics every 5 s, as Prometheus would.

Reported: per route the calls, errors, throughput, p50 / p99 / max latency; the server's
resident memory (process_resident_memory_bytes from /metrics) before and after; the
server's own request counters against the clients' counts; the machine's load (``uptime``)
before and after. ``--quick`` runs the same code in seconds (tests/bench/test_quick.py).

    .venv/bin/python -m bench.load_service                  # N = 2000, 16 clients, 300 s
    .venv/bin/python -m bench.load_service --quick          # N = 300, 4 clients, 3 s
    .venv/bin/python -m bench.load_service --url http://127.0.0.1:8000 --model-id ID
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.common import REPO_ROOT, RESULTS_DIR
from bench.scale_util import Tee, load_avg, log, save_run

ROUTES = ("/kernel", "/predict")
SCRAPE_EVERY_S = 5.0


@dataclass
class Workload:
    """The graph: features and ids of the training and the new vertices, edges by id."""

    X_train: np.ndarray  # (n, p) float32
    ids_train: list[str]
    edges_by_id: list[tuple[str, str]]
    X_new: np.ndarray  # (holdout, p) float32
    ids_new: list[str]


def make_workload(n: int, holdout: int, blocks: int, seed: int) -> Workload:
    """An SBM graph over n + holdout vertices (mean degree 10, 80 % within blocks) with
    noisy block-indicator features; the first n vertices (after a seeded shuffle) train."""
    from bench.sbm_service import features, sbm

    block, E = sbm(n + holdout, blocks, 10.0, 0.8, seed)
    X = features(block, blocks, 5, 2.0, seed)
    ids = np.array([f"v{i:06d}" for i in range(n + holdout)], dtype=object)
    order = np.random.default_rng(seed + 3).permutation(n + holdout)
    train, new = order[:n], order[n:]
    in_train = np.zeros(n + holdout, dtype=bool)
    in_train[train] = True
    E = E[in_train[E[:, 0]] & in_train[E[:, 1]]]
    return Workload(
        X[train],
        ids[train].tolist(),
        [(ids[a], ids[b]) for a, b in E.tolist()],
        X[new],
        ids[new].tolist(),
    )


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def train_model(
    url: str, w: Workload, params: dict[str, Any], token: str | None = None
) -> dict[str, Any]:
    """POST /train (multipart: .npy inputs, ids and edges by id as text parts), poll the
    job until it ends; returns {model_id, job, seconds}."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    files = {
        "inputs": ("X.npy", _npy(w.X_train), "application/octet-stream"),
        "ids": ("ids.txt", "\n".join(w.ids_train).encode(), "text/plain"),
        "output_kernel.edges": (
            "edges.tsv",
            "".join(f"{a}\t{b}\n" for a, b in w.edges_by_id).encode(),
            "text/tab-separated-values",
        ),
    }
    spec = {
        "name": "load-test",
        "output_kernel": {"type": "diffusion", "beta": 1.0},
        "params": params,
    }
    t0 = time.perf_counter()
    with httpx.Client(base_url=url, headers=headers, timeout=600) as http:
        r = http.post("/train", data={"json": json.dumps(spec)}, files=files)
        r.raise_for_status()
        accepted = r.json()
        while True:
            job = http.get(f"/jobs/{accepted['job_id']}").raise_for_status().json()
            if job["state"] not in ("queued", "running"):
                break
            time.sleep(0.5)
    if job["state"] != "done":
        raise RuntimeError(f"training job {job['state']}: {job.get('error')}")
    return {"model_id": accepted["model_id"], "job": job, "seconds": time.perf_counter() - t0}


def scrape(
    http: httpx.Client, url: str = ""
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """GET /metrics as {(sample name, sorted labels): value}."""
    from prometheus_client.parser import text_string_to_metric_families

    text = http.get(f"{url}/metrics").raise_for_status().text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def server_rss_mb(samples: dict[Any, float]) -> float:
    return samples[("process_resident_memory_bytes", ())] / 2**20


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"load average: {load_avg()}"


def _check(route: str, answer: dict[str, Any], top_k: int) -> bool:
    """The answer is complete: top_k edges named by id, or top_k pre-image ids."""
    if route == "/kernel":
        edges = answer["edges"]
        return len(edges["new_known"]) == top_k and len(edges["new_known_ids"]) == top_k
    return len(answer["index_ids"][0]) == top_k


async def _load(
    url: str,
    headers: dict[str, str],
    model_id: str,
    w: Workload,
    *,
    clients: int,
    duration: float,
    kernel_share: float,
    seed: int,
) -> dict[str, Any]:
    """Run the clients and the metrics scraper until the deadline."""
    times: dict[str, list[float]] = {r: [] for r in ROUTES}
    errors: dict[str, int] = dict.fromkeys(ROUTES, 0)
    error_samples: list[str] = []
    scrapes = {"calls": 0, "errors": 0}
    deadline = time.perf_counter() + duration
    top_k = {"/kernel": min(10, len(w.ids_train)), "/predict": min(5, len(w.ids_train))}

    def body(route: str, v: int) -> dict[str, Any]:
        common = {
            "model_id": model_id,
            "inputs": w.X_new[v : v + 1].tolist(),
            "ids": [w.ids_new[v]],
        }
        if route == "/kernel":
            return {**common, "top_k": top_k[route], "return_kernel": False}
        return {**common, "top_k": top_k[route]}

    async def client(http: httpx.AsyncClient, k: int) -> None:
        rng = np.random.default_rng(seed + 100 + k)
        while time.perf_counter() < deadline:
            route = "/kernel" if rng.random() < kernel_share else "/predict"
            req = body(route, int(rng.integers(len(w.ids_new))))
            t0 = time.perf_counter()
            try:
                r = await http.post(route, json=req)
                ok = r.status_code == 200 and _check(route, r.json(), top_k[route])
                why = f"{route} {r.status_code}: {r.text[:200]}"
            except (httpx.HTTPError, ValueError, KeyError) as exc:
                ok, why = False, f"{route} {type(exc).__name__}: {exc}"
            times[route].append(time.perf_counter() - t0)
            if not ok:
                errors[route] += 1
                if len(error_samples) < 5:
                    error_samples.append(why)

    async def scraper(http: httpx.AsyncClient) -> None:
        while time.perf_counter() < deadline:
            await asyncio.sleep(min(SCRAPE_EVERY_S, max(deadline - time.perf_counter(), 0)))
            try:
                r = await http.get("/metrics")
                scrapes["errors"] += r.status_code != 200
            except httpx.HTTPError:
                scrapes["errors"] += 1
            scrapes["calls"] += 1

    limits = httpx.Limits(max_connections=clients + 1, max_keepalive_connections=clients + 1)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120, limits=limits) as http:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(http, k) for k in range(clients)), scraper(http))
        wall = time.perf_counter() - t0
    from bench.bench_service import summarize

    per_route = {
        route: {
            "calls": len(times[route]),
            "errors": errors[route],
            "throughput_rps": len(times[route]) / wall,
            **(summarize(times[route]) if times[route] else {}),
        }
        for route in ROUTES
    }
    return {
        "wall_s": wall,
        "routes": per_route,
        "metrics_scrapes": scrapes,
        "error_samples": error_samples,
    }


def _server_counts(
    before: dict[Any, float], after: dict[Any, float]
) -> dict[str, dict[str, float]]:
    """Requests the server counted per route and status during the load (after - before)."""
    out: dict[str, dict[str, float]] = {}
    for (name, labels), value in after.items():
        if name != "okboost_http_requests_total":
            continue
        lab = dict(labels)
        if lab["route"] in ROUTES and lab["method"] == "POST":
            delta = value - before.get((name, labels), 0.0)
            if delta:
                out.setdefault(lab["route"], {})[lab["status"]] = delta
    return out


def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="N = 300, 4 clients, 3 s")
    p.add_argument("--n", type=int, default=2000, help="training vertices")
    p.add_argument("--holdout", type=int, default=200, help="new vertices the clients ask about")
    p.add_argument("--blocks", type=int, default=20)
    p.add_argument("--m", type=int, default=200, help="M, boosting rounds")
    p.add_argument("--max-splits", type=int, default=10)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--duration", type=float, default=300.0, help="seconds of load")
    p.add_argument("--kernel-share", type=float, default=0.5, help="share of /kernel requests")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--url", default=None, help="target a running service instead of starting one")
    p.add_argument("--model-id", default=None, help="with --url: a model trained on this workload")
    p.add_argument("--token", default=None)
    p.add_argument(
        "--server-root",
        type=Path,
        default=None,
        help="start the service of this source tree (e.g. a `git archive` snapshot of a commit)",
    )
    p.add_argument("--name", default=None)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    argv_list = ["bench.load_service", *(argv if argv is not None else sys.argv[1:])]
    if args.quick:
        args.n, args.holdout, args.blocks, args.m, args.clients, args.duration = (
            300,
            30,
            6,
            10,
            4,
            3.0,
        )
    name = (args.name or "load_service") + ("_quick" if args.quick else "")
    out_dir = args.out or (REPO_ROOT / "bench" / "out" / "quick" if args.quick else RESULTS_DIR)
    started, cpu_started = time.time(), time.process_time()
    say = Tee()
    w = make_workload(args.n, args.holdout, args.blocks, args.seed)
    headers = {"authorization": f"Bearer {args.token}"} if args.token else {}
    rec: dict[str, Any] = {
        "settings": {
            k: str(v) if isinstance(v, Path) else v
            for k, v in vars(args).items()
            if k not in ("out", "token")
        }
    }

    tmp: Path | None = None
    proc = None
    url = args.url
    if url is None:
        from bench.bench_service import start_server

        tmp = Path(tempfile.mkdtemp(prefix="okboost-load-"))
        proc, url = start_server(tmp / "models", tmp / "server.log", args.server_root or REPO_ROOT)
    try:
        model_id = args.model_id
        if model_id is None:
            params = {
                "n_estimators": args.m,
                "learning_rate": 0.1,
                "max_splits": args.max_splits,
                "random_state": args.seed,
            }
            trained = train_model(url, w, params, args.token)
            model_id = trained["model_id"]
            rec["training"] = {
                "seconds": round(trained["seconds"], 1),
                "params": params,
                "n_edges": len(w.edges_by_id),
            }
            log(f"trained {model_id} in {trained['seconds']:.1f} s")
        with httpx.Client(base_url=url, headers=headers, timeout=120) as http:
            for v in range(min(10, len(w.ids_new))):  # warm-up: the model into the cache, F(x_i)
                for route in ROUTES:
                    one = {"model_id": model_id, "inputs": w.X_new[v : v + 1].tolist(), "top_k": 5}
                    http.post(route, json=one).raise_for_status()
            before = scrape(http)
            rec["uptime_before"] = uptime()
            log(f"load: {args.clients} clients for {args.duration:.0f} s ({rec['uptime_before']})")
            result = asyncio.run(
                _load(
                    url,
                    headers,
                    model_id,
                    w,
                    clients=args.clients,
                    duration=args.duration,
                    kernel_share=args.kernel_share,
                    seed=args.seed,
                )
            )
            rec["uptime_after"] = uptime()
            after = scrape(http)
        rec.update(
            model_id=model_id,
            url=url,
            load=result,
            server_rss_mb_before=round(server_rss_mb(before), 1),
            server_rss_mb_after=round(server_rss_mb(after), 1),
            server_counts=_server_counts(before, after),
        )
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)

    # ------------------------------------------------------------------ report
    load = rec["load"]
    say(
        f"## Load test: {args.clients} clients for {load['wall_s']:.0f} s, N = {args.n} "
        f"training vertices ({len(w.edges_by_id)} edges, p = {w.X_train.shape[1]} float32 "
        f"features), {args.holdout} new vertices asked about by id\n"
    )
    if "training" in rec:
        tr = rec["training"]
        say(
            f"Model: OKBoost M = {args.m}, J = {args.max_splits}, diffusion kernel (beta = 1), "
            f"sent as .npy inputs + ids and edges-by-id text parts; POST /train to job done "
            f"{tr['seconds']:.1f} s.\n"
        )
    say(
        f"Mix: {args.kernel_share:.0%} POST /kernel (top_k = 10 new-known edges of one new "
        f"vertex, return_kernel false), the rest POST /predict (top_k = 5 pre-images); "
        f"GET /metrics every {SCRAPE_EVERY_S:.0f} s.\n"
    )
    say("| route | calls | errors | throughput | p50 | p99 | max |")
    say("| --- | --- | --- | --- | --- | --- | --- |")
    for route, r in load["routes"].items():
        say(
            f"| POST {route} | {r['calls']} | {r['errors']} | {r['throughput_rps']:.1f} req/s | "
            f"{r.get('median_ms', float('nan')):.1f} ms | {r.get('p99_ms', float('nan')):.1f} ms | "
            f"{r.get('max_ms', float('nan')):.1f} ms |"
        )
    sc = load["metrics_scrapes"]
    say(f"| GET /metrics (scraper) | {sc['calls']} | {sc['errors']} | | | | |")
    total_errors = sum(r["errors"] for r in load["routes"].values()) + sc["errors"]
    say(f"\nErrors in total: {total_errors}")
    for sample in load["error_samples"]:
        say(f"- {sample}")
    say(
        f"Server RSS (process_resident_memory_bytes): {rec['server_rss_mb_before']:.1f} MiB before, "
        f"{rec['server_rss_mb_after']:.1f} MiB after"
    )
    say(
        f"Server's own counts (okboost_http_requests_total, by route and status): {rec['server_counts']}"
    )
    say(f"uptime before: {rec['uptime_before']}")
    say(f"uptime after:  {rec['uptime_after']}")
    rec["errors_total"] = total_errors
    save_run(out_dir, name, argv_list, rec, say, started, cpu_started)
    return rec


if __name__ == "__main__":
    run()
