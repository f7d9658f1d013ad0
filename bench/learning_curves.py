"""Figure 1 of the paper: Err^phi on the learning and test sets as a function of the number of
boosting iterations M, for a grid of learning rates nu (J fixed) and of tree sizes J (nu fixed),
with OK3 + OKBoost (exact split search).

- ``--problem usps``: fold 0 of the image protocol (200 learning / 800 test images).
  Err^phi(LS) = the model's ``train_loss_``, Err^phi(TS) = ``staged_loss`` after every
  iteration; Err^Y(TS) at a few values of M (a refit with that many trees and the same seed:
  with the exact splitter the first m trees of a model are those of the m-tree model).
- ``--problem cora``: fold 0 of the network protocol (334-vertex snowball sample of Cora).
  Err^phi(LS) = ``train_loss_`` (learning-graph kernel), Err^phi(TS) (whole-graph kernel, as in
  bench/network_completion.py) and AUC(TS) at a few values of M (refits, as above).

    python -m bench.learning_curves --problem usps
    python -m bench.learning_curves --problem cora
    python -m bench.learning_curves --problem usps --quick
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import Report, base_parser, learning_folds, log, output_dirs

NU_GRID = (0.01, 0.05, 0.2, 1.0)
J_FIXED = 10
J_GRID = (1, 3, 10, 30)
NU_FIXED = 0.05
CHECKPOINTS = (10, 25, 50, 100, 200, 300, 400, 500)


class UspsCurves:
    """Image completion, fold 0: staged Err^phi(TS), Err^Y(TS) at checkpoints."""

    second_metric = "err_y"
    staged_test = True

    def __init__(self, seed: int, quick: bool) -> None:
        from bench.usps_completion import load_usps

        n = 100 if quick else 1000
        data = load_usps(n, seed)
        learn, test = next(learning_folds(n, 5, seed, small_learning_set=True))
        self.Xl, self.Yl = data["X"][learn], data["Y"][learn]
        self.Xt, self.Yt = data["X"][test], data["Y"][test]
        self.title = f"USPS completion, fold 0 ({len(learn)} learning / {len(test)} test images)"

    def fit(self, est: Any) -> Any:
        from bench.usps_completion import fit_okcore

        return fit_okcore(est, self.Xl, self.Yl)

    def staged_test_err_phi(self, est: Any) -> np.ndarray:
        return np.asarray(est.staged_loss(self.Xt, self.Yt))

    def checkpoint(self, est: Any) -> dict[str, float]:
        from bench.usps_completion import errors

        res = errors(est.predict_weights(self.Xt), self.Yl, self.Yt)
        return {"err_phi": float(res["err_phi"].mean()), "err_y": float(res["err_y"].mean())}


class NetworkCurves:
    """Network completion on a Cora snowball sample, fold 0: Err^phi(TS) and AUC at checkpoints."""

    second_metric = "auc"
    staged_test = False

    def __init__(self, seed: int, quick: bool) -> None:
        from bench.network_completion import build_problem

        self.problem, info = build_problem("cora", 60 if quick else 334, seed, 5)
        self.learn, self.test = next(
            learning_folds(self.problem.n, 5, seed, small_learning_set=False)
        )
        self.title = (
            f"Cora network completion, fold 0 ({len(self.learn)} learning / "
            f"{len(self.test)} test vertices)"
        )

    def fit(self, est: Any) -> Any:
        return self.problem.fit(est, self.learn)

    def checkpoint(self, est: Any) -> dict[str, float]:
        err = float(self.problem.err_phi(est, self.learn, self.test).mean())
        return {"err_phi": err, **self.problem.auc(est, self.learn, self.test)}


def curve(
    task: Any, nu: float, J: int, M: int, checkpoints: Sequence[int], seed: int
) -> dict[str, Any]:
    """One OKBoost run of M iterations, plus refits at the checkpoints."""
    from okcore import OKBoostRegressor

    def make(m: int) -> Any:
        return OKBoostRegressor(
            n_estimators=m,
            learning_rate=nu,
            max_splits=J,
            splitter="best",
            leaf_order="variance",  # the paper's figure
            random_state=seed,
        )

    t0 = time.perf_counter()
    est = task.fit(make(M))
    out: dict[str, Any] = {"nu": nu, "J": J, "train": np.asarray(est.train_loss_).tolist()}
    if task.staged_test:
        out["test"] = task.staged_test_err_phi(est).tolist()
    points = {}
    for m in checkpoints:
        points[m] = task.checkpoint(est if m == M else task.fit(make(m)))
    out["checkpoints"] = {str(m): v for m, v in points.items()}
    out["time_s"] = time.perf_counter() - t0
    log(f"nu={nu} J={J}: {out['checkpoints'][str(M)]} ({out['time_s']:.1f}s)")
    return out


def plot(task: Any, curves: list[dict[str, Any]], path: Path) -> Path:
    """2 x 2 panels: rows = (nu grid at J fixed, J grid at nu fixed); columns = Err^phi on LS
    (solid) and TS (dashed), and the second metric (Err^Y or AUC) on TS."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    second = {"err_y": "Err^Y(TS)", "auc": "AUC(TS)"}[task.second_metric]
    fig, axes = plt.subplots(2, 2, figsize=(9, 6.4))
    groups = [
        ([c for c in curves if c["J"] == J_FIXED and c["nu"] in NU_GRID], "nu", f"J = {J_FIXED}"),
        ([c for c in curves if c["nu"] == NU_FIXED and c["J"] in J_GRID], "J", f"nu = {NU_FIXED}"),
    ]
    for row, (group, key, fixed) in enumerate(groups):
        for i, c in enumerate(group):
            color = f"C{i}"
            label = f"{key} = {c[key]}"
            M = np.arange(1, len(c["train"]) + 1)
            ax = axes[row, 0]
            ax.plot(M, c["train"], color=color, lw=1.2, label=label + " (LS)")
            ms = np.array([int(m) for m in c["checkpoints"]])
            if "test" in c:
                ax.plot(M, c["test"], color=color, lw=1.2, ls="--", label=label + " (TS)")
            else:
                ax.plot(
                    ms,
                    [v["err_phi"] for v in c["checkpoints"].values()],
                    color=color,
                    ls="--",
                    marker="o",
                    ms=3,
                    label=label + " (TS)",
                )
            axes[row, 1].plot(
                ms,
                [v[task.second_metric] for v in c["checkpoints"].values()],
                color=color,
                marker="o",
                ms=3,
                label=label,
            )
        axes[row, 0].set_ylabel("Err^phi")
        axes[row, 0].set_title(f"Err^phi, LS (solid) and TS (dashed); {fixed}", fontsize=9)
        axes[row, 1].set_ylabel(second)
        axes[row, 1].set_title(f"{second}; {fixed}", fontsize=9)
        for ax in axes[row]:
            ax.set_xlabel("M (boosting iterations)")
            ax.grid(alpha=0.3)
        axes[row, 0].legend(fontsize=6, ncol=2)
        axes[row, 1].legend(fontsize=7)
    fig.suptitle(task.title + ", OK3 + OKBoost", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def run(argv: Sequence[str] | None = None) -> Report:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--problem", choices=("usps", "cora"), default="usps")
    args = parser.parse_args(argv)
    task = (UspsCurves if args.problem == "usps" else NetworkCurves)(args.seed, args.quick)
    M, checkpoints = (20, (5, 20)) if args.quick else (500, CHECKPOINTS)
    grid = sorted({(nu, J_FIXED) for nu in NU_GRID} | {(NU_FIXED, J) for J in J_GRID})
    report = Report(
        f"learning_curves_{args.problem}" + ("_quick" if args.quick else ""),
        ["bench.learning_curves", *(argv if argv is not None else sys.argv[1:])],
        {"M": M, "checkpoints": checkpoints, "grid": grid, "seed": args.seed},
    )
    curves = [curve(task, nu, J, M, checkpoints, args.seed) for nu, J in grid]
    report.extra["curves"] = curves
    out_dir, fig_dir = output_dirs(args)
    fig = plot(task, curves, fig_dir / f"learning_curves_{args.problem}.png")
    path = report.save(out_dir)
    print(f"## Learning curves ({args.problem}), values at the checkpoints\n")
    print("| nu | J | M | Err^phi(LS) | Err^phi(TS) | " + task.second_metric + "(TS) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for c in curves:
        for m, v in c["checkpoints"].items():
            print(
                f"| {c['nu']} | {c['J']} | {m} | {c['train'][int(m) - 1]:.4f} | "
                f"{v['err_phi']:.4f} | {v[task.second_metric]:.4f} |"
            )
    if task.staged_test:
        print("\nminimum of the staged Err^phi(TS) over M:\n")
        for c in curves:
            test = np.asarray(c["test"])
            print(
                f"- nu = {c['nu']}, J = {c['J']}: {test.min():.4f} at M = {test.argmin() + 1} "
                f"(M = {len(test)}: {test[-1]:.4f})"
            )
    print(f"\n{report.timing()}; results in {path}; figure {fig}")
    return report


if __name__ == "__main__":
    run()
