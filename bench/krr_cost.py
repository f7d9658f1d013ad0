"""Calibrate kernel ridge's cost rates (okcore.kernel_models.cost) against real fits.

Fits ``KernelRidgeRegressor`` on synthetic data of several shapes (width by CV, per-input
widths by the marginal likelihood, exact and Nystrom), one thread, after a warm-up fit, and
measures each fit's CPU seconds (process time). The cost model counts three kinds of work
per fit (``KernelRidgeRegressor.estimate_work``: kernel operations, factorisation flops,
likelihood flops); their seconds per unit are fitted by non-negative least squares on the
relative error (each fit weighted by 1 / its CPU), and the report gives every fit's
measured CPU beside the cost model's estimate with the rates in force and with the fitted
ones:

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m bench.krr_cost [--quick]

The rates in okcore are the fitted ones doubled (a loaded machine), as for boosted KRR.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.optimize import nnls

from bench.common import base_parser, output_dirs, write_result

#: (label, rows, inputs, outputs, gamma, n_components)
CASES: tuple[tuple[str, int, int, int, str, int | None], ...] = (
    ("cv-600-8-1", 600, 8, 1, "cv", None),
    ("cv-600-100-14", 600, 100, 14, "cv", None),
    ("cv-1200-8-14", 1200, 8, 14, "cv", None),
    ("cv-1200-32-1", 1200, 32, 1, "cv", None),
    ("cv-2400-21-7", 2400, 21, 7, "cv", None),
    ("cv-nystrom-6000-16-4", 6000, 16, 4, "cv", 1000),
    ("ard-400-8-1", 400, 8, 1, "ard", None),
    ("ard-400-32-32", 400, 32, 32, "ard", None),
    ("ard-1200-21-7", 1200, 21, 7, "ard", None),
    ("ard-2400-21-7", 2400, 21, 7, "ard", None),
    ("ard-1200-100-14", 1200, 100, 14, "ard", None),
)
QUICK = ("cv-600-8-1", "ard-400-8-1")


def _fit_cpu(n: int, p: int, r: int, gamma: str, components: int | None, seed: int) -> float:
    from okcore import KernelRidgeRegressor

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    Y = np.sin(X[:, : min(p, 3)].sum(axis=1, keepdims=True)) + 0.1 * rng.normal(size=(n, r))
    model = KernelRidgeRegressor(gamma=gamma, n_components=components, random_state=seed)
    start = time.process_time()
    model.fit(X, Y)
    return time.process_time() - start


def _work(n: int, p: int, r: int, gamma: str, components: int | None) -> tuple[float, ...]:
    from okcore import KernelRidgeRegressor

    return KernelRidgeRegressor(gamma=gamma, n_components=components).estimate_work(n, p, r)


def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = base_parser(__doc__.splitlines()[0])
    args = parser.parse_args(argv)
    from okcore.kernel_models import cost

    cases = [c for c in CASES if not args.quick or c[0] in QUICK]
    _fit_cpu(200, 4, 1, "ard", None, args.seed)  # warm-up: imports, BLAS, first calls
    rows, work, cpu = [], [], []
    for label, n, p, r, gamma, components in cases:
        seconds = _fit_cpu(n, p, r, gamma, components, args.seed)
        units = _work(n, p, r, gamma, components)
        rows.append({"case": label, "cpu_seconds": round(seconds, 3), "work": units})
        work.append(units)
        cpu.append(seconds)
        print(f"{label:24s} {seconds:8.2f} s", flush=True)
    A, b = np.array(work), np.array(cpu)
    fitted, _ = nnls(A / b[:, None], np.ones(len(b)))
    in_force = np.array(
        [cost.RIDGE_KERNEL_SECONDS, cost.RIDGE_FACTOR_SECONDS, cost.ARD_FLOP_SECONDS]
    )
    lines = [
        "| case | CPU s | estimate, rates in force | ratio | estimate, fitted rates | ratio |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row, units, seconds in zip(rows, A, b, strict=True):
        now, fit = float(units @ in_force), float(units @ fitted)
        row.update(estimate=now, estimate_fitted=fit)
        lines.append(
            f"| {row['case']} | {seconds:.2f} | {now:.2f} | {now / seconds:.2f} | "
            f"{fit:.2f} | {fit / seconds:.2f} |"
        )
    names = ("kernel", "factor", "ard")
    lines.append("")
    lines.append(
        "fitted seconds per unit: "
        + ", ".join(f"{k} {v:.3g}" for k, v in zip(names, fitted, strict=True))
        + "; in force: "
        + ", ".join(f"{k} {v:.3g}" for k, v in zip(names, in_force, strict=True))
        + f"; load average {os.getloadavg()[0]:.1f}"
    )
    report = "\n".join(lines) + "\n"
    print(report)
    out = {"cases": rows, "fitted": dict(zip(names, fitted.tolist(), strict=True))}
    out_dir, _ = output_dirs(args)
    name = args.name or "krr_cost"
    write_result(out_dir / f"{name}.json", out)
    write_result(out_dir / f"{name}.txt", report)
    return out


if __name__ == "__main__":
    run()
