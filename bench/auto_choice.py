"""The automatic model choice against okboost's own models and the peers, side by side.

Per regression problem, on the same train / test split in one run, one thread each: the
held-out error and CPU seconds (process time of the fit and the test prediction) of

- ``AutoRegressor()`` (the no-setting default: its own budget, default scoring),
- ``OKBoostRegressor()`` (the documented defaults),
- ``KernelRidgeRegressor(gamma="cv")`` and ``KernelRidgeRegressor(gamma="ard")`` (one width
  per input),
- LightGBM, one model per output (its defaults), scikit-learn's HistGradientBoosting, one
  per output (its defaults), CatBoost MultiRMSE (depth 6, CAT_ITERATIONS rounds) and
  XGBoost (one multi-output model, its defaults; only when it is cheap: at most
  XGB_MAX_OUTPUTS outputs).

The problems are split in two halves, named in HALVES: the rules of the automatic choice
(candidates, budget default, halving) may be chosen on "choosing" only; "reporting" is
where they are judged. Outputs are standardised on the training rows (every model fits the
same numbers); the error is the held-out MSE averaged over outputs, in those units.

Run: ``OMP_NUM_THREADS=1 python -m bench.auto_choice --problems kin40k friedman1 --out
bench/results/auto_choice`` (one JSON per problem), then ``python -m bench.auto_choice
--report bench/results/auto_choice`` for the table. Needs $OKBOOST_DATA for the real sets.

``--peers-from FOLDER`` fits only the default, ``OKBoostRegressor()`` (their trees follow
okcore's tie rules, which may have changed) and kernel ridge with per-input widths (newer
than some earlier runs), and takes every other model's row
from an earlier run's JSON of the same problem (the peers' held-out errors do not depend on
okcore: the same data, seeds and one thread; kernel ridge's do not depend on the trees;
their CPU seconds are that run's): for a shared machine where the peers cannot be run
again in time. Each row says which run it comes from (``run``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import write_result

#: The two halves of the problems (see the module docstring).
HALVES = {
    "choosing": ("synthetic", "kin40k", "usps", "friedman1"),
    "reporting": ("census", "yeast", "digits", "robot", "sarcos"),
}
CAT_ITERATIONS = 500
XGB_MAX_OUTPUTS = 10
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}

Problem = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]


def _split(X: np.ndarray, Y: np.ndarray, n_train: int, n_test: int, seed: int = 0) -> tuple:
    order = np.random.default_rng(seed).permutation(len(X))
    tr, te = order[:n_train], order[n_train : n_train + n_test]
    return X[tr], Y[tr], X[te], Y[te]


def _standardised(X: np.ndarray, Y: np.ndarray, Xq: np.ndarray, Yq: np.ndarray) -> tuple:
    mx, sx = X.mean(0), X.std(0) + 1e-12
    my, sy = Y.mean(0), Y.std(0) + 1e-12
    return (X - mx) / sx, (Y - my) / sy, (Xq - mx) / sx, (Yq - my) / sy


def synthetic() -> Problem:
    from bench.bench_okcore import make_fixed_signal_data

    X, Y, Xq, truth = make_fixed_signal_data(2000, 50, 50, 1000)
    return X, Y, Xq, truth, "bench_scale's signal, N = 2,000, p = r = 50, noiseless test signal"


def _one_output(name: str) -> Problem:
    from bench.krr_kin40k import DATA

    load, _ = DATA[name]
    X, y = load()
    parts = _split(X, y[:, None], 2000, 2000)
    return (*parts, f"{name}: 2,000 training / 2,000 test rows of a seeded shuffle (subsample)")


def kin40k() -> Problem:
    return _one_output("kin40k")


def census() -> Problem:
    return _one_output("census")


def usps() -> Problem:
    from bench.usps_completion import load_usps

    data = load_usps(1000, 0)
    X, Y = data["X"], data["Y"]
    return (X[:500], Y[:500], X[500:], Y[500:], "USPS completion, 1,000 seeded images: top "
            "128 pixels -> bottom 128, 500 training / 500 test, pixels regressed")  # fmt: skip


def friedman1() -> Problem:
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(2000, 10, noise=1.0, random_state=0)
    Xq, yq = make_friedman1(1000, 10, noise=0.0, random_state=1)
    return X, y[:, None], Xq, yq[:, None], "Friedman1, 2,000 noisy rows, 1,000 noiseless tests"


def yeast() -> Problem:
    from bench.common import data_dir

    with gzip.open(data_dir() / "yeast_multilabel" / "yeast.csv.gz", "rt") as fh:
        header = fh.readline().strip().split(",")
        table = np.loadtxt(fh, delimiter=",")
    labels = [i for i, h in enumerate(header) if h.startswith("Class")]
    inputs = [i for i, h in enumerate(header) if h.startswith("Att")]
    X, Y = table[:, inputs], table[:, labels]
    return (X[917:], Y[917:], X[:917], Y[:917], "MULAN yeast (train 917:, test :917), the 14 "
            "labels regressed as a 0/1 vector")  # fmt: skip


def digits() -> Problem:
    from sklearn.datasets import load_digits

    images = load_digits().data  # (1797, 64), 8x8
    X, Y = images[:, :32], images[:, 32:]
    X_tr, Y_tr, X_te, Y_te = _split(X, Y, 1200, 597)
    varies = Y_tr.std(0) > 0  # pixels blank in every training image are left out
    return (X_tr, Y_tr[:, varies], X_te, Y_te[:, varies], "scikit-learn's 8x8 digits: top "
            f"half -> bottom half ({int(varies.sum())} non-blank pixels), 1,200 / 597")  # fmt: skip


def robot(n: int = 4500, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A SARCOS-like smooth 7-output regression: a 7-joint arm's torques
    tau = M(q) qdd + C(q, qd) + g(q) from its 7 positions q, velocities qd and accelerations
    qdd (21 inputs), with M a smooth position-dependent inertia, C products of velocities
    and g gravity terms, plus 2 % noise."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(-np.pi / 2, np.pi / 2, (n, 7))
    qd, qdd = rng.normal(size=(n, 7)), rng.normal(size=(n, 7))
    coef = np.random.default_rng(1).normal(size=(7, 7))
    B = coef @ coef.T / 7 + np.eye(7)
    tau = np.zeros((n, 7))
    cum = np.cumsum(q, axis=1)
    for j in range(7):
        for k in range(7):
            M = B[j, k] * (1.0 + 0.5 * np.cos(q[:, j] - q[:, k]))
            tau[:, j] += (
                M * qdd[:, k] + 0.3 * B[j, k] * np.sin(q[:, j] + q[:, k]) * qd[:, j] * qd[:, k]
            )
        tau[:, j] += 3.0 * np.sin(cum[:, j])
    tau += 0.02 * tau.std(0) * rng.normal(size=tau.shape)
    return np.c_[q, qd, qdd], tau


def robot_problem() -> Problem:
    X, Y = robot()
    return (X[:3500], Y[:3500], X[3500:], Y[3500:], "generated SARCOS-like arm: 21 smooth "
            "inputs -> 7 torques, 3,500 training / 1,000 test rows")  # fmt: skip


def sarcos() -> Problem:
    from scipy.io import loadmat

    from bench.common import data_dir

    table = loadmat(data_dir() / "sarcos" / "sarcos_inv_test.mat")["sarcos_inv_test"]
    parts = _split(table[:, :21], table[:, 21:28], 2000, 1449)
    return (*parts, "SARCOS inverse dynamics, the GPML test file only (4,449 rows): 2,000 "
            "training / 1,449 test of a seeded shuffle, all 7 torques")  # fmt: skip


PROBLEMS: dict[str, Callable[[], Problem]] = {
    "synthetic": synthetic,
    "kin40k": kin40k,
    "usps": usps,
    "friedman1": friedman1,
    "census": census,
    "yeast": yeast,
    "digits": digits,
    "robot": robot_problem,
    "sarcos": sarcos,
}


def _per_output(make: Callable[[], Any]) -> Callable[[np.ndarray, np.ndarray], Any]:
    def fit(X: np.ndarray, Y: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        models = [make().fit(X, Y[:, j]) for j in range(Y.shape[1])]
        return lambda Xq: np.column_stack([m.predict(Xq) for m in models])

    return fit


def _whole(make: Callable[[], Any]) -> Callable[[np.ndarray, np.ndarray], Any]:
    def fit(X: np.ndarray, Y: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        model = make().fit(X, Y if Y.shape[1] > 1 else Y[:, 0])
        predict = lambda Xq: np.asarray(model.predict(Xq)).reshape(len(Xq), -1)  # noqa: E731
        predict.model = model  # type: ignore[attr-defined]
        return predict

    return fit


def models(n_outputs: int) -> dict[str, Callable[[np.ndarray, np.ndarray], Any]]:
    import lightgbm
    from catboost import CatBoostRegressor
    from sklearn.ensemble import HistGradientBoostingRegressor

    import okcore

    out = {
        "auto (default)": _whole(lambda: okcore.AutoRegressor(random_state=0)),
        "OKBoostRegressor()": _whole(lambda: okcore.OKBoostRegressor(random_state=0)),
        "kernel ridge (gamma cv)": _whole(
            lambda: okcore.KernelRidgeRegressor(gamma="cv", random_state=0)
        ),
        "kernel ridge (gamma ard)": _whole(
            lambda: okcore.KernelRidgeRegressor(gamma="ard", random_state=0)
        ),
        "LightGBM per output": _per_output(
            lambda: lightgbm.LGBMRegressor(n_jobs=1, verbose=-1, random_state=0)
        ),
        "HGB per output": _per_output(lambda: HistGradientBoostingRegressor(random_state=0)),
        "CatBoost MultiRMSE": _whole(
            lambda: CatBoostRegressor(
                loss_function="MultiRMSE" if n_outputs > 1 else "RMSE",
                iterations=CAT_ITERATIONS,
                thread_count=1,
                verbose=False,
                random_seed=0,
                allow_writing_files=False,
            )
        ),
    }
    if n_outputs <= XGB_MAX_OUTPUTS:
        import xgboost

        out["XGBoost"] = _whole(lambda: xgboost.XGBRegressor(n_jobs=1, random_state=0))
    return out


def run_problem(name: str, peers_from: Path | None = None) -> dict[str, Any]:
    X, Y, Xq, Yq, description = PROBLEMS[name]()
    X, Y, Xq, Yq = _standardised(X, np.asarray(Y, float), Xq, np.asarray(Yq, float))
    rows, auto = [], {}
    fits = models(Y.shape[1])
    earlier: list[dict[str, Any]] = []
    if peers_from is not None:
        before = json.loads((peers_from / f"{name}.json").read_text())
        when = f"{before['date']} ({peers_from.as_posix()}, load {before['load'][0]:.1f})"
        again = ("auto (default)", "OKBoostRegressor()", "kernel ridge (gamma ard)")
        earlier = [{**r, "run": when} for r in before["rows"] if r["model"] not in again]
        fits = {label: fits[label] for label in again if label in fits}
    for label, fit in fits.items():
        start = time.process_time()
        predict = fit(X, Y)
        pred = predict(Xq)
        cpu = time.process_time() - start
        if label == "auto (default)":
            auto = auto_details(predict.model)
        mse = float(np.mean((pred - Yq) ** 2))
        rows.append({"model": label, "mse": mse, "cpu_seconds": cpu, "run": "this run"})
        print(f"{name:10s} {label:26s} mse {mse:.5f}  cpu {cpu:7.1f}", flush=True)
    rows += earlier
    return {
        "problem": name,
        "half": next(h for h, names in HALVES.items() if name in names),
        "description": description,
        "n_train": len(X),
        "n_test": len(Xq),
        "n_inputs": X.shape[1],
        "n_outputs": Y.shape[1],
        "rows": rows,
        "auto": auto,
        "load": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def auto_details(model: Any) -> dict[str, Any]:
    """The default's choice, budget, CPU and leaderboard."""
    return {
        "chosen": model.best_name_,
        "budget": model.max_cpu_seconds_,
        "cpu_seconds": model.cpu_seconds_,
        "leaderboard": model.leaderboard_,
    }


def verdict(result: dict[str, Any]) -> dict[str, Any]:
    """The targets: the default within 2 % of the best MSE in the run, within its budget,
    and at most 3x LightGBM's CPU where LightGBM is within 10 % of the best."""
    by = {r["model"]: r for r in result["rows"]}
    best = min(r["mse"] for r in result["rows"])
    auto, lgb = by["auto (default)"], by["LightGBM per output"]
    lgb_close = lgb["mse"] <= 1.10 * best
    return {
        "ratio_to_best": auto["mse"] / best,
        "within_2pct": auto["mse"] <= 1.02 * best,
        "within_budget": auto["cpu_seconds"] <= result["auto"]["budget"] * 1.25 + 2.0,
        "cpu_vs_lightgbm": auto["cpu_seconds"] / lgb["cpu_seconds"],
        "lightgbm_close": lgb_close,
        "cpu_ok": (not lgb_close) or auto["cpu_seconds"] <= 3.0 * lgb["cpu_seconds"],
    }


def report(folder: Path) -> str:
    results = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    lines = []
    for half in HALVES:
        lines += [f"### {half} half", ""]
        for res in (r for r in results if r["half"] == half):
            v = verdict(res)
            lines += [
                f"**{res['problem']}** ({res['description']}; load {res['load'][0]:.1f}); "
                f"chosen: `{res['auto']['chosen']}`, budget {res['auto']['budget']:.0f} s",
                "",
                "| model | held-out MSE | CPU s |",
                "| --- | ---: | ---: |",
            ]
            lines += [
                f"| {r['model']} | {r['mse']:.4f} | {r['cpu_seconds']:.1f} |" for r in res["rows"]
            ]
            lines += [
                "",
                f"default / best = {v['ratio_to_best']:.3f} (within 2 %: {v['within_2pct']}); "
                f"CPU / LightGBM's = {v['cpu_vs_lightgbm']:.1f} (LightGBM within 10 % of the "
                f"best: {v['lightgbm_close']}; 3x rule met: {v['cpu_ok']})",
                "",
            ]
    return "\n".join(lines)


def summary_table(folder: Path, half: str = "reporting") -> str:
    """One line per problem of ``half``: the default, OKBoostRegressor(), kernel ridge (one
    width by CV; a width per input, when the run has it) and the best peer (held-out MSE in CPU seconds), the chosen model and the targets met."""
    lines = [
        "| problem | `AutoRegressor()` (chosen) | `OKBoostRegressor()` | kernel ridge, width by CV "
        "| kernel ridge, a width per input | best peer | targets |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    okboost_models = {
        "auto (default)",
        "OKBoostRegressor()",
        "kernel ridge (gamma cv)",
        "kernel ridge (gamma ard)",
    }
    for path in sorted(folder.glob("*.json")):
        res = json.loads(path.read_text())
        if res["half"] != half:
            continue
        by = {r["model"]: r for r in res["rows"]}
        peer = min(
            (r for r in res["rows"] if r["model"] not in okboost_models), key=lambda r: r["mse"]
        )
        v = verdict(res)

        def cell(r: dict[str, Any]) -> str:
            return f"{r['mse']:.4f} in {r['cpu_seconds']:.1f} s"

        met = [
            "within 2 %"
            if v["within_2pct"]
            else f"{100 * (v['ratio_to_best'] - 1):.1f} % above the best",
            "within budget" if v["within_budget"] else "over budget",
            "CPU rule met"
            if v["cpu_ok"]
            else f"{v['cpu_vs_lightgbm']:.1f}x LightGBM's CPU (LightGBM within 10 %)",
        ]
        lines.append(
            f"| {res['problem']} | {cell(by['auto (default)'])} (`{res['auto']['chosen']}`) "
            f"| {cell(by['OKBoostRegressor()'])} | {cell(by['kernel ridge (gamma cv)'])} "
            f"| {cell(by['kernel ridge (gamma ard)']) if 'kernel ridge (gamma ard)' in by else '-'} "
            f"| {peer['model']} {cell(peer)} | {'; '.join(met)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", nargs="*", default=list(PROBLEMS))
    parser.add_argument("--out", type=Path, default=Path("bench/results/auto_choice"))
    parser.add_argument("--report", type=Path, default=None)
    parser.add_argument("--summary", type=Path, default=None)
    parser.add_argument(
        "--peers-from",
        type=Path,
        default=None,
        help="fit only the default and OKBoostRegressor(); the other rows from this "
        "earlier run's JSON",
    )
    args = parser.parse_args()
    if args.report is not None:
        print(report(args.report))
        return
    if args.summary is not None:
        for half in HALVES:
            print(f"{half} half\n\n{summary_table(args.summary, half)}\n")
        return
    for key, value in ONE_THREAD.items():
        if os.environ.get(key) != value:
            raise SystemExit(f"run with {key}={value} (one thread)")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.problems:
        result = run_problem(name, args.peers_from)
        result["verdict"] = verdict(result)
        write_result(args.out / f"{name}.json", result)


if __name__ == "__main__":
    main()
