"""Choosing the kernel ridge penalty by CV: okcore.KernelRidgeRegressor(alpha="cv") (one
eigendecomposition per fold serves every penalty) against scikit-learn's GridSearchCV over
KernelRidge (one solve per penalty and fold), on the same folds and the same grid.

Data: Friedman #1 (10 inputs, 2 noisy outputs: y and y^2 / 10), N rows, RBF input kernel
with a fixed width; both sides without intercept (fit_intercept=False is KernelRidge) and
scored by the squared error, so both must choose the same alpha. CPU seconds of one process
(``time.process_time``), run side by side.

    python -m bench.krr_alpha_cv            # N = 500 and 1000
    python -m bench.krr_alpha_cv --quick    # N = 200
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV

from bench.common import Report, base_parser, log, output_dirs, write_result
from okcore import KernelRidgeRegressor
from okcore.kernel_models.ridge import ALPHA_GRID
from okcore.model_selection import kfold

GAMMA = 0.05
FOLDS = 5


def run(argv: Sequence[str] | None = None) -> Report:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    args = parser.parse_args(argv)
    sizes = args.sizes or ([200] if args.quick else [500, 1000])
    report = Report(
        name=args.name or ("krr_alpha_cv_quick" if args.quick else "krr_alpha_cv"),
        argv=["bench.krr_alpha_cv", *(argv if argv is not None else sys.argv[1:])],
        settings={"sizes": sizes, "grid": list(ALPHA_GRID), "folds": FOLDS, "gamma": GAMMA},
        labels={},
    )
    lines = [
        "| N | okcore alpha | scikit-learn alpha | okcore CPU s | scikit-learn CPU s | ratio |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for n in sizes:
        X, y = make_friedman1(n_samples=n, noise=0.5, random_state=args.seed)
        Y = np.c_[y, y**2 / 10.0]
        folds = kfold(n, FOLDS, args.seed)
        cpu = time.process_time()
        ours = KernelRidgeRegressor(
            alpha="cv", cv=FOLDS, gamma=GAMMA, fit_intercept=False, random_state=args.seed
        ).fit(X, Y)
        ours_s = time.process_time() - cpu
        cpu = time.process_time()
        search = GridSearchCV(
            KernelRidge(kernel="rbf", gamma=GAMMA),
            {"alpha": list(ALPHA_GRID)},
            cv=folds,
            scoring="neg_mean_squared_error",
        ).fit(X, Y)
        theirs_s = time.process_time() - cpu
        theirs = float(search.best_params_["alpha"])
        report.add(str(n), okcore_cpu_s=ours_s, sklearn_cpu_s=theirs_s, ratio=theirs_s / ours_s)
        report.extra[str(n)] = {"okcore_alpha": ours.alpha_, "sklearn_alpha": theirs}
        lines.append(
            f"| {n} | {ours.alpha_:.3g} | {theirs:.3g} | {ours_s:.1f} | {theirs_s:.1f} | "
            f"{theirs_s / ours_s:.1f}x |"
        )
        log(lines[-1])
    out_dir, _ = output_dirs(args)
    text = "\n".join(lines) + "\n" + report.timing() + "\n"
    report.save(out_dir)
    write_result(out_dir / f"{report.name}.txt", text)
    print(text)
    return report


if __name__ == "__main__":
    run()
