"""The default tree type on the problems ``bench.frontier`` does not run: one output of a real
data set, small N, and similarity features.

Every problem is fitted with ``OKBoostRegressor`` at its defaults (M = 300, nu = 0.1) except
the tree: best-first (``tree_type="best-first"``, J = 10, the former default) against
oblivious trees of depth 4 / 5 / 6 with lambda = 0 / 3 (``tree_type="oblivious"``), and on
the many-output problems depth 4 with an 8-column sketch of the residuals at every size,
one thread, process CPU seconds of fit + predict.

Problems (``--problems``):

    census      house-16H (``$OKBOOST_DATA/census_house``; 16 inputs, 22,784 rows, one
                output, the median price standardised): 90 / 10 split, seed 0,
                inputs standardised on the training rows; NMSE = test MSE / test variance
    friedman1   bench.friedman1's protocol at the defaults: 10 learning samples of 300
                (noise sd 1), the fixed test set of 1,000; test MSE, mean over the samples
    nr, gpcr    bench.drug_target's folds (similarity inputs, two-step new x new): mean AUROC
                and AP over the three blocks

    python -m bench.tree_type_default --problems census friedman1 nr gpcr
    python -m bench.tree_type_default --quick --problems friedman1   # 5 trees: a smoke run

Results: bench/results/<name>.{json,txt} (default name tree_type_default).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench.common import base_parser, log, machine_info, output_dirs, write_result

#: name -> OKBoostRegressor parameters (beyond n_jobs=1, random_state=0)
CONFIGS: dict[str, dict[str, Any]] = {
    "best-first": {"tree_type": "best-first"},
    **{
        f"oblivious d{depth} l2 {l2}": {
            "tree_type": "oblivious",
            "max_depth": depth,
            "l2_regularization": float(l2),
        }
        for l2 in (0, 3)
        for depth in (4, 5, 6)
    },
    # the 8-column sketch of the residuals at every size (many outputs only)
    **{
        f"oblivious d4 l2 {l2} sketch 8": {
            "tree_type": "oblivious",
            "max_depth": 4,
            "l2_regularization": float(l2),
            "sketch_dim": 8,
        }
        for l2 in (0, 3, 10)
    },
}
#: problems of one output, where a sketch of the residuals does not apply
ONE_OUTPUT = ("census", "friedman1")


def _cpu() -> float:
    return time.process_time()


def census(params: dict[str, Any]) -> dict[str, float]:
    from bench.krr_kin40k import load_census
    from okcore import OKBoostRegressor

    X, y = load_census()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    test, train = order[:2278], order[2278:]
    mean, sd = X[train].mean(0), X[train].std(0) + 1e-12
    X = (X - mean) / sd
    y = (y - y[train].mean()) / y[train].std()
    start = _cpu()
    est = OKBoostRegressor(n_jobs=1, random_state=0, **params).fit(X[train], y[train, None])
    pred = est.predict(X[test]).reshape(-1)
    cpu = _cpu() - start
    nmse = float(np.mean((pred - y[test]) ** 2) / np.var(y[test]))
    return {"nmse": nmse, "cpu_s": cpu, "trees_kept": int(est.n_estimators_)}


def friedman1(params: dict[str, Any]) -> dict[str, float]:
    from sklearn.datasets import make_friedman1

    from okcore import OKBoostRegressor

    X_test, y_test = make_friedman1(1000, noise=1.0, random_state=0)
    errors, cpu = [], 0.0
    for s in range(10):
        X, y = make_friedman1(300, noise=1.0, random_state=1 + s)
        start = _cpu()
        est = OKBoostRegressor(n_jobs=1, random_state=s, **params).fit(X, y[:, None])
        pred = est.predict(X_test).reshape(-1)
        cpu += _cpu() - start
        errors.append(float(np.mean((pred - y_test) ** 2)))
    return {"mse": float(np.mean(errors)), "mse_sd": float(np.std(errors)), "cpu_s": cpu}


def drug_target(name: str) -> Callable[[dict[str, Any]], dict[str, float]]:
    def measure(params: dict[str, Any]) -> dict[str, float]:
        from bench.drug_target import SETS, load_set
        from okcore import OKBoostRegressor
        from okcore.bipartite import BipartiteRegressor, bipartite_cross_validate

        Y, S_targets, S_drugs, _, _ = load_set(name)
        model = BipartiteRegressor(OKBoostRegressor(n_jobs=1, random_state=0, **params))
        start = _cpu()
        result = bipartite_cross_validate(
            model, S_targets, S_drugs, Y, n_folds=SETS[name], row_inputs="similarity",
            col_inputs="similarity", random_state=0,
        )  # fmt: skip
        summary = result.summary()
        return {
            "auroc": float(summary["blocks_auroc"]),
            "ap": float(summary["blocks_ap"]),
            "cpu_s": _cpu() - start,
        }

    return measure


PROBLEMS: dict[str, Callable[[dict[str, Any]], dict[str, float]]] = {
    "census": census,
    "friedman1": friedman1,
    "nr": drug_target("nr"),
    "gpcr": drug_target("gpcr"),
}


def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", choices=list(PROBLEMS), default=list(PROBLEMS))
    parser.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    args = parser.parse_args(argv)
    name = args.name or ("tree_type_default_quick" if args.quick else "tree_type_default")
    payload: dict[str, Any] = {
        "argv": ["bench.tree_type_default", *(argv if argv is not None else sys.argv[1:])],
        "machine": machine_info(),
        "results": {},
    }
    out, _ = output_dirs(args)
    lines = []
    for problem in args.problems:
        for config in args.configs:
            if problem in ONE_OUTPUT and "sketch_dim" in CONFIGS[config]:
                continue
            load = os.getloadavg()[0]
            params = {**CONFIGS[config], **({"n_estimators": 5} if args.quick else {})}
            outcome = PROBLEMS[problem](params)
            outcome["load_before"] = load
            payload["results"][f"{problem}/{config}"] = outcome
            shown = ", ".join(f"{k} {v:.4g}" for k, v in outcome.items())
            lines.append(f"{problem:10s} {config:22s} {shown}")
            log(lines[-1])
            write_result(out / f"{name}.json", payload)
            write_result(
                out / f"{name}.txt", " ".join(payload["argv"]) + "\n" + "\n".join(lines) + "\n"
            )
    return payload


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    run()
