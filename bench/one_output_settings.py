"""Oblivious-tree settings for one output column: depth x learning rate x lambda, held-out
NMSE after M = 100 / 200 / 300 / 500 / 1000 rounds of one fit (``staged_predict``: the
model a refit with that M gives), on the one-output problems of ``bench.frontier``.

The errors decide the one-output defaults (docs/RESULTS.md section 9.11); the CPU seconds
printed (one thread, fit of the largest M) are those of a shared machine, not a timing run:
compare CPU only in ``bench.frontier``'s locked runs.

Problems (``--problems``): kin40k (36,000 / 4,000 rows), census (house-16H, 20,506 /
2,278), each on bench.frontier's split; ``--rows N`` fits on the first N training rows only
(the same test rows).

    python -m bench.one_output_settings --problems kin40k census --configs d6 d8_lr0.3 d10
    python -m bench.one_output_settings --problems kin40k --rows 4000 --configs d6 d8
    python -m bench.one_output_settings --quick      # 10 trees on 1,000 rows: a smoke run

Configuration names: d<depth>[_lr<nu>][_l2<lambda>][_M<rounds>] (defaults nu 0.1, lambda 3,
M 1000), e.g. d8_lr0.3_l230 is depth 8, nu 0.3, lambda 30.

Results: bench/results/<name>.{json,txt} (default name one_output_settings).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.bench_scale import THREAD_VARS  # noqa: E402

os.environ.update({var: "1" for var in THREAD_VARS})

from bench.frontier import one_output_problem  # noqa: E402
from bench.scale_util import Tee, load_avg, save_run  # noqa: E402

CHECKPOINTS = (100, 200, 300, 500, 1000)


def parse_config(name: str) -> tuple[dict[str, Any], int]:
    """OKBoostRegressor parameters and M of a configuration name (module docstring)."""
    params: dict[str, Any] = {"learning_rate": 0.1, "l2_regularization": 3.0}
    rounds = 1000
    for part in name.split("_"):
        if part.startswith("d"):
            params["max_depth"] = int(part[1:])
        elif part.startswith("lr"):
            params["learning_rate"] = float(part[2:])
        elif part.startswith("l2"):
            params["l2_regularization"] = float(part[2:])
        elif part.startswith("M"):
            rounds = int(part[1:])
        else:
            raise ValueError(f"unknown part {part!r} of configuration {name!r}")
    return params, rounds


def run_config(problem: Any, name: str, quick: bool) -> dict[str, Any]:
    from okcore import OKBoostRegressor

    params, rounds = parse_config(name)
    rounds = 10 if quick else rounds
    est = OKBoostRegressor(n_estimators=rounds, n_jobs=1, random_state=0, **params)
    before = load_avg()
    cpu = time.process_time()
    est.fit(problem.X, problem.Y)
    cpu = time.process_time() - cpu
    truth = problem.truth[:, 0]
    errors = {}
    for m, pred in enumerate(est.staged_predict(problem.Xq), 1):
        if m in CHECKPOINTS or m == rounds:
            errors[m] = float(np.mean((np.ravel(pred) - truth) ** 2) / np.var(truth))
    return {
        "config": name,
        "params": params,
        "rounds": rounds,
        "fit_cpu_s": cpu,
        "nmse": errors,
        "load": [before, load_avg()],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", nargs="+", default=["kin40k", "census"])
    parser.add_argument("--configs", nargs="+", default=["d6", "d8", "d10"])
    parser.add_argument("--rows", type=int, default=None, help="fit on the first N rows")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--name", default="one_output_settings")
    args = parser.parse_args(argv)
    started, cpu_started = time.time(), time.process_time()
    printed = Tee()
    printed(f"# python -m bench.one_output_settings {' '.join(sys.argv[1:])}")
    printed(f"# started {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; load {load_avg()}")
    printed("# held-out NMSE after M rounds (staged predictions of one fit); fit CPU s of the")
    printed("# largest M, one thread, shared machine (not a timing run)")
    results = []
    for name in args.problems:
        problem = one_output_problem(name, args.quick)
        if args.rows is not None:
            problem = replace(problem, X=problem.X[: args.rows], Y=problem.Y[: args.rows])
        printed(f"\n## {problem.description}; fitted on {len(problem.X)} rows\n")
        printed(
            "| config | " + " | ".join(f"M = {m}" for m in CHECKPOINTS) + " | fit CPU s | load |"
        )
        printed("|---" * (len(CHECKPOINTS) + 3) + "|")
        for config in args.configs:
            row = run_config(problem, config, args.quick)
            row["problem"], row["rows"] = name, len(problem.X)
            results.append(row)
            cells = [f"{row['nmse'][m]:.4f}" if m in row["nmse"] else "—" for m in CHECKPOINTS]
            load = f"{row['load'][0][0]:.1f} -> {row['load'][1][0]:.1f}"
            printed(f"| {config} | " + " | ".join(cells) + f" | {row['fit_cpu_s']:.1f} | {load} |")
    out = REPO_ROOT / "bench" / "results"
    if not args.quick:
        save_run(
            out, args.name, ["bench.one_output_settings", *sys.argv[1:]],
            {"results": results}, printed, started, cpu_started,
        )  # fmt: skip


if __name__ == "__main__":
    main()
