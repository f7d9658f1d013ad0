"""Benchmark of okcore's OKBoost against the do-it-yourself scikit-learn loop.

Synthetic data: N rows, p = 50 inputs, r = 50 outputs with a linear output kernel (so the
factor Phi is the outputs, rank r). OKBoost with M = 500 trees of J = 10 splits, exact
splitter, nu = 0.1; side by side, the same boosting written as a Python loop of 500
scikit-learn DecisionTreeRegressor(max_leaf_nodes=11) fits on the residuals. For 1000
queries: W^F (predict_weights), kernel predictions (predict_kernel, Q x Q) and pre-images
(predict_index over the N training outputs). Each configuration runs in a fresh process so
its peak resident memory (ru_maxrss) is its own.

    .venv/bin/python bench/bench_okcore.py                 # full: N = 1000, 4000, 16000, r sweep

Three OKBoost runs per N: exact splitter on 1 and 2 threads, and the sketched search
(sketch_dim, 2 threads), with their accuracy on held-out queries next to the loop's.
    .venv/bin/python bench/bench_okcore.py --quick         # seconds: small N and M
    .venv/bin/python bench/bench_okcore.py --sizes 4000 --no-sklearn
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np


def signal_features(X: np.ndarray) -> np.ndarray:
    """The 8 non-linear features of the first 10 inputs that the outputs mix, shape (n, 8)."""
    return np.c_[
        np.sin(4 * X[:, 0]),
        X[:, 1] * X[:, 2],
        (X[:, 3] > 0.5),
        np.cos(3 * X[:, 4]),
        X[:, 5] ** 2,
        np.abs(X[:, 6] - X[:, 7]),
        X[:, 8],
        X[:, 9] * X[:, 0],
    ]


def make_data(n: int, p: int, r: int, seed: int = 0):
    """Outputs that depend non-linearly on a few inputs, plus noise: trees have work to do.

    Returns (X, Y) for training, the 1000 query inputs and their noiseless outputs. The mixing
    matrix is drawn after the inputs, so the signal differs between sizes n (see
    :func:`make_fixed_signal_data` for one signal at every n).
    """
    rng = np.random.default_rng(seed)
    X = rng.random((n + 1000, p))
    A = rng.standard_normal((8, r))
    signal = signal_features(X) @ A
    Y = signal + 0.3 * rng.standard_normal((n + 1000, r))
    return X[:n], Y[:n], X[n:], signal[n:]


def make_fixed_signal_data(n: int, p: int, r: int, n_queries: int, seed: int = 0):
    """The problem of :func:`make_data` with one signal and one query set at every size n.

    The mixing matrix, the training rows and the queries come from three independent streams
    of ``seed``: training sets of different n share the signal, and are all scored on the same
    ``n_queries`` fresh queries (enough of them that a sharp step in the signal, which a few
    queries may miss or hit, does not decide a comparison). Returns (X, Y, Xq, signal(Xq)).
    """
    mix, train, query = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    A = mix.standard_normal((8, r))
    X = train.random((n, p))
    Y = signal_features(X) @ A + 0.3 * train.standard_normal((n, r))
    Xq = query.random((n_queries, p))
    return X, Y, Xq, signal_features(Xq) @ A


def run_okboost(n: int, p: int, r: int, m: int, j: int, n_jobs: int, sketch: int | None) -> dict:
    from okcore import OKBoostRegressor

    X, Y, Xq, truth = make_data(n, p, r)
    # max_bins=None: this benchmark measures the exact presorted search; the
    # histogram modes are measured by bench/bench_scale.py
    warm = OKBoostRegressor(n_estimators=2, max_splits=j, sketch_dim=sketch, max_bins=None)
    warm.fit(X[:200], Y[:200])
    warm.predict_weights(Xq[:5])  # compile everything before timing
    warm.predict_index(Xq[:5])
    est = OKBoostRegressor(
        n_estimators=m,
        learning_rate=0.1,
        max_splits=j,
        n_jobs=n_jobs,
        sketch_dim=sketch,
        max_bins=None,
    )
    t = time.perf_counter()
    est.fit(X, Y)
    fit = time.perf_counter() - t
    timings = {}
    for name, call in (
        ("weights", lambda: est.predict_weights(Xq)),
        ("kernel", lambda: est.predict_kernel(Xq)),
        ("preimage", lambda: est.predict_index(Xq)),
    ):
        t = time.perf_counter()
        call()
        timings[name] = time.perf_counter() - t
    test_error = float(np.mean(np.sum((est.predict(Xq) - truth) ** 2, axis=1)))
    return {
        "fit": fit,
        **timings,
        "train_loss": float(est.train_loss_[-1]),
        "test_error": test_error,
    }


def run_sklearn_loop(n: int, p: int, r: int, m: int, j: int) -> dict:
    from sklearn.tree import DecisionTreeRegressor

    X, Y, Xq, truth = make_data(n, p, r)
    t = time.perf_counter()
    F = np.tile(Y.mean(axis=0), (n, 1))
    Fq = np.tile(Y.mean(axis=0), (len(Xq), 1))
    for _ in range(m):
        tree = DecisionTreeRegressor(max_leaf_nodes=j + 1).fit(X, Y - F)
        F += 0.1 * tree.predict(X)
        Fq += 0.1 * tree.predict(Xq)  # (timed too: negligible next to the fits)
    return {
        "fit": time.perf_counter() - t,
        "train_loss": float(np.mean(np.sum((Y - F) ** 2, axis=1))),
        "test_error": float(np.mean(np.sum((Fq - truth) ** 2, axis=1))),
    }


def child(args: argparse.Namespace) -> None:
    if args.what == "okboost":
        out = run_okboost(args.n, args.p, args.r, args.m, args.j, args.n_jobs, args.sketch)
    else:
        out = run_sklearn_loop(args.n, args.p, args.r, args.m, args.j)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def measure(
    what: str, n: int, p: int, r: int, m: int, j: int, n_jobs: int = 1, sketch: int | None = None
) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        what,
        "--n",
        str(n),
        "--p",
        str(p),
        "--r",
        str(r),
        "--m",
        str(m),
        "--j",
        str(j),
        "--n-jobs",
        str(n_jobs),
    ]
    if sketch is not None:
        cmd += ["--sketch", str(sketch)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--no-sklearn", action="store_true")
    parser.add_argument("--child", choices=["okboost", "sklearn"], dest="what")
    parser.add_argument("--n", type=int)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--r", type=int, default=50)
    parser.add_argument("--m", type=int, default=500)
    parser.add_argument("--j", type=int, default=10)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--sketch", type=int, default=None, help="sketch_dim of the sketched run")
    parser.add_argument("--sketch-dim", type=int, default=8, help="sketch_dim in the comparison")
    args = parser.parse_args()
    if args.what:
        child(args)
        return
    sizes = args.sizes or ([500, 1000] if args.quick else [1000, 4000, 16000])
    m = 50 if args.quick else args.m
    print(
        f"# machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"python {platform.python_version()}, numpy {np.__version__}"
    )
    print(
        f"# p = {args.p}, r = {args.r}, M = {m}, J = {args.j}, exact splitter, nu = 0.1, 1000 queries"
    )
    print(
        "| N | OKBoost exact, 1 thread | exact, 2 threads | sketch, 2 threads | sklearn loop "
        "| speed-up exact 1 / 2 threads / sketch | W^F 1000 q (1 / 2 threads) | kernel 1000 q "
        "| pre-image 1000 q | peak RSS OKBoost / sklearn |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    errors = []
    for n in sizes:
        one = measure("okboost", n, args.p, args.r, m, args.j, 1)
        two = measure("okboost", n, args.p, args.r, m, args.j, 2)
        sk2 = measure("okboost", n, args.p, args.r, m, args.j, 2, args.sketch_dim)
        sk = None if args.no_sklearn else measure("sklearn", n, args.p, args.r, m, args.j)
        base = sk["fit"] if sk else float("nan")
        print(
            f"| {n} | {one['fit']:.2f} s | {two['fit']:.2f} s | {sk2['fit']:.2f} s "
            f"| {base:.2f} s | {base / one['fit']:.1f}x / {base / two['fit']:.1f}x / "
            f"{base / sk2['fit']:.1f}x | {one['weights']:.2f} s / {two['weights']:.2f} s "
            f"| {one['kernel'] * 1e3:.0f} ms | {one['preimage'] * 1e3:.0f} ms "
            f"| {one['peak_rss_mb']:.0f} MB / {sk['peak_rss_mb'] if sk else float('nan'):.0f} MB |",
            flush=True,
        )
        errors.append((n, one, sk2, sk))
    print(
        f"\n# accuracy on the 1000 queries (mean squared error to the noiseless outputs; "
        f"train loss = mean ||y - F(x)||^2 on the learning set); sketch_dim = {args.sketch_dim}"
    )
    print("| N | exact: test / train | sketch: test / train | sklearn loop: test / train |")
    print("|---|---|---|---|")
    for n, one, sk2, sk in errors:
        skt = f"{sk['test_error']:.3f} / {sk['train_loss']:.3f}" if sk else "-"
        print(
            f"| {n} | {one['test_error']:.3f} / {one['train_loss']:.3f} "
            f"| {sk2['test_error']:.3f} / {sk2['train_loss']:.3f} | {skt} |"
        )
    if not args.quick:
        print("\n# fit time against the output rank r (N = 4000, 1 thread)")
        print("| r | OKBoost fit |")
        print("|---|---|")
        for r in (10, 50, 200):
            print(
                f"| {r} | {measure('okboost', 4000, args.p, r, m, args.j, 1)['fit']:.2f} s |",
                flush=True,
            )


if __name__ == "__main__":
    main()
