"""Accuracy and cost of the low-rank output spaces (docs/PERFORMANCE.md, "Low-rank output spaces").

    .venv/bin/python -m bench.lowrank_factors            # Cora + SBM + Nystrom + N = 20,000
    .venv/bin/python -m bench.lowrank_factors --quick    # smaller, seconds

For each graph (Cora's citation graph, a stochastic-block-model graph) and beta = 1: the
dense diffusion kernel K = expm(-beta L) (exact eigh, timed), then the Lanczos factor of
rank k: time, trace fraction, relative Frobenius error ||K - Phi Phi^T||_F / ||K||_F and
the mean / max relative error of the estimated diagonal. For the RBF kernel on Cora's word
vectors: the exact factor against Nystrom with m landmarks. Last, N = 20,000: time and the
tracemalloc peak of the default (automatic) low-rank factors, against 8 N^2 bytes for one
N x N matrix. "estimate" is okcore.outputs.space.estimate_factor_seconds for the same call.
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numpy as np
from scipy import linalg

from bench.common import machine_info
from bench.network_completion import load_citation
from okcore import DiffusionKernel, OutputSpace, graph
from okcore.outputs.space import estimate_factor_seconds


def sbm_edges(n: int, blocks: int = 50, degree: int = 12, p_in: float = 0.8, seed: int = 0):
    """Stochastic block model: n * degree / 2 edges, a fraction p_in inside the blocks."""
    rng = np.random.default_rng(seed)
    block = rng.integers(0, blocks, n)
    m = n * degree // 2
    a = rng.integers(0, n, m)
    members = [np.flatnonzero(block == b) for b in range(blocks)]
    inside = np.array([rng.choice(members[block[v]]) for v in a])
    b = np.where(rng.random(m) < p_in, inside, rng.integers(0, n, m))
    return np.c_[a, b]


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def row(*cells) -> None:
    print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)


def diffusion_table(name: str, edges: np.ndarray, n: int, ranks) -> None:
    kernel = DiffusionKernel(edges, beta=1.0)
    lam_l, U = None, None
    (lam_l, U), t_dense = timed(lambda: linalg.eigh(graph.laplacian(edges, n).toarray()))
    K = (U * np.exp(-lam_l)) @ U.T
    norm, truth = np.linalg.norm(K), np.diag(K)
    row(name, n, "exact (dense eigh)", f"{t_dense:.2f}", "1.000", "0", "exact", "")
    for k in ranks:
        if 4 * k >= n:
            continue
        space, t = timed(lambda k=k: _lanczos_space(kernel, n, k))
        err = np.linalg.norm(K - space.phi @ space.phi.T) / norm
        rel = np.abs(space.diag / truth - 1)
        eta = estimate_factor_seconds(n, kernel, k, None, n_edges=len(edges))
        row(
            name,
            n,
            f"Lanczos k = {k}",
            f"{t:.2f}",
            f"{space.trace_fraction:.3f}",
            f"{err:.3f}",
            f"{rel.mean():.3f} / {rel.max():.2f}",
            f"{eta:.2f}",
        )


def _lanczos_space(kernel, n, k):
    import okcore.outputs.space as sp

    saved = sp.AUTO_RANK_MIN_SAMPLES
    sp.AUTO_RANK_MIN_SAMPLES = 0  # the low-rank path at every N
    try:
        return OutputSpace.from_graph(kernel, n, rank=k)
    finally:
        sp.AUTO_RANK_MIN_SAMPLES = saved


def nystrom_table(Y: np.ndarray, landmarks) -> None:
    d2 = np.sum((Y[:500, None, :] - Y[None, :500, :]) ** 2, axis=2)
    gamma = 1.0 / float(np.median(d2[d2 > 0]))
    kernel = {"type": "rbf", "gamma": gamma}
    n = len(Y)
    exact, t = timed(lambda: OutputSpace.from_outputs(Y, kernel, rank=n))
    K = exact.kernel.gram(Y)
    norm = np.linalg.norm(K)
    row("RBF on Cora words", n, "exact (dense eigh)", f"{t:.2f}", "1.000", "0", "exact", "")
    for m in landmarks:
        s, t = timed(lambda m=m: OutputSpace.from_outputs(Y, kernel, n_landmarks=m, random_state=0))
        err = np.linalg.norm(K - s.phi @ s.phi.T) / norm
        eta = estimate_factor_seconds(n, kernel, None, m)
        row(
            "RBF on Cora words",
            n,
            f"Nystrom m = {m} (r = {s.rank})",
            f"{t:.2f}",
            f"{s.trace_fraction:.3f}",
            f"{err:.3f}",
            "exact",
            f"{eta:.2f}",
        )


def memory_table(n: int) -> None:
    edges = sbm_edges(n)
    Y = np.random.default_rng(0).normal(size=(n, 10))
    calls = {
        "diffusion, default (Lanczos k = AUTO_RANK)": lambda: OutputSpace.build(
            n, kernel=DiffusionKernel(edges)
        ),
        "RBF, default (Nystrom m = AUTO_LANDMARKS)": lambda: OutputSpace.build(
            n, Y, kernel={"type": "rbf", "gamma": 0.1}, random_state=0
        ),
    }
    for what, call in calls.items():
        tracemalloc.start()
        space, t = timed(call)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(
            f"N = {n}, {what}: {t:.2f} s, rank {space.rank}, trace fraction "
            f"{space.trace_fraction:.3f}, tracemalloc peak {peak / 1e6:.0f} MB "
            f"(one N x N float64 matrix: {8 * n * n / 1e6:.0f} MB)",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(machine_info(), "load average", os.getloadavg())
    cora = load_citation("cora")
    n_sbm = 1000 if args.quick else 3000
    ranks = (32, 64) if args.quick else (64, 128, 256)
    row(
        "kernel",
        "N",
        "factor",
        "seconds",
        "trace fraction",
        "rel. Frobenius error",
        "diag rel. error mean / max",
        "estimate (s)",
    )
    row(*["---"] * 8)
    if not args.quick:
        diffusion_table("diffusion Cora", cora["edges"], len(cora["X"]), ranks)
    diffusion_table("diffusion SBM", sbm_edges(n_sbm), n_sbm, ranks)
    words = cora["X"][: 1000 if args.quick else None].astype(np.float64)
    nystrom_table(words, (64, 128) if args.quick else (128, 256, 512))
    memory_table(5000 if args.quick else 20_000)
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
