"""Kernel ridge's RBF width: the inner 5-fold CV error of okcore's KernelRidgeRegressor for
multiples of ``gamma="auto"``'s width, on the 1,000 seeded training rows on which
bench.frontier's ``krr`` chooses its width and penalty (lambda by the same CV at each
width). Shows where the CV error is least, and so whether ``GAMMA_SCALES`` (the multiples
``gamma="cv"`` tries, okcore.kernel_models.ridge) holds it.

    python -m bench.krr_widths                                  # yeast, USPS, kin40k, Cora
    python -m bench.krr_widths --problems yeast --scales 1 2 4 8
    python -m bench.krr_widths --quick --problems synthetic --out bench/out/quick

Results: bench/results/krr_widths.{json,txt}.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.frontier import krr_search_rows, make_problem  # noqa: E402
from bench.scale_util import Tee, load_avg, save_run  # noqa: E402

SCALES = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


def cv_errors(problem_name: str, scales: Sequence[float], quick: bool = False) -> dict[str, Any]:
    """The least mean held-out error over okcore's penalty grid, per width multiple."""
    from threadpoolctl import threadpool_limits

    from okcore import KernelRidgeRegressor
    from okcore.kernel_models.krr import make_input_kernel

    args = argparse.Namespace(
        problem=problem_name, quick=quick, n=None, queries=1000, fold=0, factor_rank=256
    )
    problem = make_problem(args)
    rows = krr_search_rows(problem)
    X, Y = problem.X[rows], problem.Y[rows]
    auto = float(make_input_kernel("rbf", "auto", X).gamma[0])
    with threadpool_limits(1):
        errors = []
        for scale in scales:
            est = KernelRidgeRegressor(gamma=auto * scale, cv=5, random_state=0).fit(X, Y)
            errors.append(float(np.min(est.cv_errors_)))
    return {"auto_gamma": auto, "scales": list(scales), "cv_errors": errors}


def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--problems", nargs="+", default=["yeast", "usps", "kin40k", "cora"],
        choices=("yeast", "usps", "kin40k", "census", "cora", "synthetic"),
    )  # fmt: skip
    parser.add_argument("--scales", type=float, nargs="+", default=list(SCALES))
    parser.add_argument("--quick", action="store_true", help="tiny problems: a smoke run")
    parser.add_argument("--name", default="krr_widths")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    printed = Tee()
    started, cpu_started = time.time(), time.process_time()
    printed(f"# load average {load_avg()}; 5-fold CV error, least over the penalty grid")
    printed("| problem | " + " | ".join(f"x{s:g}" for s in args.scales) + " | least at |")
    printed("|---|" + "---|" * (len(args.scales) + 1))
    results = {}
    for name in args.problems:
        res = results[name] = cv_errors(name, args.scales, args.quick)
        best = args.scales[int(np.argmin(res["cv_errors"]))]
        cells = " | ".join(f"{e:.4g}" for e in res["cv_errors"])
        printed(f"| {name} | {cells} | x{best:g} |")
    save_run(
        args.out, args.name, ["bench.krr_widths", *(argv or sys.argv[1:])],
        {"results": results}, printed, started, cpu_started,
    )  # fmt: skip
    return results


if __name__ == "__main__":
    run()
