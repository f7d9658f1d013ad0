"""Image completion on USPS (paper Table 1, image columns): predict the bottom half of a digit
from its top half.

Protocol: 1000 images drawn (seeded) from the USPS training file, pixels rescaled to [-1, 1];
inputs = top 128 pixels, outputs = bottom 128 pixels with a Gaussian output kernel,
sigma = 7.0711 (gamma = 0.01). 5-fold CV where each fold in turn is the learning set (200
images) and the other four the test set (800). Err^phi(TS) = mean ||phi(y) - F(x)||^2,
Err^Y(TS) = mean 2 - 2 k(y, y_hat) with y_hat the pre-image among the 200 learning outputs.

Methods: the five OK3/OKBoost rows (nu = 0.01, M = 500, J by inner 5-fold CV on Err^phi), and
two non-tree baselines in the same output feature space, decoded with the same pre-image rule:
k-NN (F(x) = mean of phi(y) over the k nearest inputs) and kernel ridge regression = kernel
dependency estimation (F(x) = sum_i w_i(x) phi(y_i), w(x) = k_x^T (K_x + alpha I)^-1, Gaussian
input kernel); k, alpha and the input gamma by the same inner CV.

    python -m bench.usps_completion            # full protocol, writes docs/figures/usps_completion.png
    python -m bench.usps_completion --quick    # CI smoke run
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.kernel_ridge import KernelRidge
from sklearn.neighbors import KNeighborsRegressor

from bench.common import (
    OKCORE_METHODS,
    BoostConfig,
    Report,
    base_parser,
    data_dir,
    learning_folds,
    log,
    make_okcore,
    output_dirs,
    select_by_inner_cv,
    weight_errors,
)

SIGMA = 7.0711
GAMMA = 1.0 / (2.0 * SIGMA**2)
OUTPUT_KERNEL = {"type": "rbf", "sigma": SIGMA}
J_GRID_USPS = (1, 3, 5, 10, 20, 40)
KNN_GRID = (1, 2, 3, 5, 7, 10, 15, 20, 30)
KRR_GRID = tuple((a, g) for a in (1e-3, 1e-2, 1e-1, 1.0) for g in (1e-3, 3e-3, 1e-2, 3e-2))
BASELINE_LABELS = {
    "knn": "k-NN in output feature space (k by CV)",
    "kde": "kernel ridge / KDE (alpha, input gamma by CV)",
}


def load_usps(n_images: int, seed: int) -> dict[str, np.ndarray]:
    """``n_images`` seeded images of the USPS training file on the [-1, 1] scale.

    Returns ``X`` (n, 128) top rows, ``Y`` (n, 128) bottom rows, ``labels`` (n,).
    The h5 file stores (v + 1) / 2 of the ESL value v (see $OKBOOST_DATA/usps/SOURCE.md).
    """
    import h5py

    with h5py.File(data_dir() / "usps" / "usps.h5", "r") as f:
        data = np.asarray(f["train/data"], dtype=np.float64)
        target = np.asarray(f["train/target"], dtype=np.int64)
    rows = np.sort(np.random.default_rng(seed).choice(len(data), n_images, replace=False))
    img = 2.0 * data[rows] - 1.0
    return {"X": img[:, :128], "Y": img[:, 128:], "labels": target[rows]}


def rbf(A: np.ndarray, B: np.ndarray, gamma: float = GAMMA) -> np.ndarray:
    """Gaussian kernel matrix exp(-gamma ||a - b||^2), shape (len(A), len(B))."""
    d = (A**2).sum(1)[:, None] + (B**2).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-gamma * np.maximum(d, 0.0))


def fit_okcore(est: Any, X: np.ndarray, Y: np.ndarray, **fit_params: Any) -> Any:
    """Fit with the protocol's Gaussian output kernel (``fit_params``, e.g. a ``callback``,
    go to ``est.fit``)."""
    return est.fit(X, Y, kernel=OUTPUT_KERNEL, **fit_params)


def baseline_weights(method: str, param: Any, X: np.ndarray, Xq: np.ndarray) -> np.ndarray:
    """Prediction weights (Q, N) over the learning outputs for k-NN or kernel ridge.

    Both are fitted by scikit-learn on the identity matrix as targets, so that the prediction
    is the row of weights w(x) with F(x) = sum_i w_i(x) phi(y_i).
    """
    eye = np.eye(len(X))
    if method == "knn":
        est = KNeighborsRegressor(n_neighbors=min(param, len(X)))
    elif method == "kde":
        alpha, gamma = param
        est = KernelRidge(alpha=alpha, kernel="rbf", gamma=gamma)
    else:
        raise ValueError(method)
    return np.asarray(est.fit(X, eye).predict(Xq))


def errors(W: np.ndarray, Y_learn: np.ndarray, Y_test: np.ndarray) -> dict[str, np.ndarray]:
    """Err^phi, Err^Y and pre-images of weight predictions (Gaussian kernel: k(y, y) = 1)."""
    return weight_errors(W, rbf(Y_learn, Y_learn), rbf(Y_test, Y_learn), np.ones(len(Y_test)))


def _inner_okcore(est: Any, a: np.ndarray, b: np.ndarray, *, X: np.ndarray, Y: np.ndarray) -> float:
    from okcore import metrics

    return metrics.err_phi(fit_okcore(est, X[a], Y[a]), X[b], Y[b])


def _pair(method: str, param: Any) -> tuple[str, Any]:
    return method, param


def _inner_baseline(
    m: tuple[str, Any], a: np.ndarray, b: np.ndarray, *, X: np.ndarray, Y: np.ndarray
) -> float:
    W = baseline_weights(m[0], m[1], X[a], X[b])
    return float(errors(W, Y[a], Y[b])["err_phi"].mean())


def run(argv: Sequence[str] | None = None) -> Report:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=(*OKCORE_METHODS, *BASELINE_LABELS),
        default=(*OKCORE_METHODS, *BASELINE_LABELS),
    )
    args = parser.parse_args(argv)
    if args.quick:
        cfg = BoostConfig(
            n_estimators=10, learning_rate=0.1, j_grid=(2, 5), n_trees=4, inner_folds=2
        )
        n_images, n_folds = 100, 2
        knn_grid, krr_grid = (1, 5), KRR_GRID[:2]
    else:
        cfg = BoostConfig(j_grid=tuple(args.j_grid or J_GRID_USPS))
        n_images, n_folds = 1000, 5
        knn_grid, krr_grid = KNN_GRID, KRR_GRID
    data = load_usps(n_images, args.seed)
    X, Y = data["X"], data["Y"]
    report = Report(
        "usps_completion" + ("_quick" if args.quick else ""),
        ["bench.usps_completion", *(argv if argv is not None else sys.argv[1:])],
        {
            "n_images": n_images,
            "n_folds": n_folds,
            "sigma": SIGMA,
            "n_estimators": cfg.n_estimators,
            "learning_rate": cfg.learning_rate,
            "j_grid": cfg.j_grid,
            "inner_folds": cfg.inner_folds,
            "n_trees": cfg.n_trees,
            "knn_grid": knn_grid,
            "krr_grid": krr_grid,
            "methods": list(args.methods),
            "seed": args.seed,
        },
    )
    report.labels.update(BASELINE_LABELS)
    report.extra.update(selected={}, inner_cv={}, okcore_metric_check=[])
    shown: dict[str, np.ndarray] = {}

    for fold, (learn, test) in enumerate(
        learning_folds(n_images, n_folds, args.seed, small_learning_set=True)
    ):
        Xl, Yl, Xt, Yt = X[learn], Y[learn], X[test], Y[test]
        for method in args.methods:
            param: Any = None
            if method in ("okboost", "okboost_et"):
                param, curve = select_by_inner_cv(
                    partial(make_okcore, method, seed=args.seed + fold, cfg=cfg),
                    cfg.j_grid,
                    partial(_inner_okcore, X=Xl, Y=Yl),
                    np.arange(len(learn)),
                    n_splits=cfg.inner_folds,
                    seed=args.seed + fold,
                )
            elif method in BASELINE_LABELS:
                param, curve = select_by_inner_cv(
                    partial(_pair, method),
                    knn_grid if method == "knn" else krr_grid,
                    partial(_inner_baseline, X=Xl, Y=Yl),
                    np.arange(len(learn)),
                    n_splits=cfg.inner_folds,
                    seed=args.seed + fold,
                )
            t0 = time.perf_counter()
            if method in BASELINE_LABELS:
                W = baseline_weights(method, param, Xl, Xt)
            else:
                est = fit_okcore(make_okcore(method, param, seed=args.seed + fold, cfg=cfg), Xl, Yl)
                W = est.predict_weights(Xt)
            elapsed = time.perf_counter() - t0
            res = errors(W, Yl, Yt)
            if method in OKCORE_METHODS and fold == 0:
                from okcore import metrics

                report.extra["okcore_metric_check"].append(
                    {
                        "method": method,
                        "err_phi_okcore": metrics.err_phi(est, Xt, Yt),
                        "err_y_okcore": metrics.err_y(est, Xt, Yt),
                        "err_phi_weights": float(res["err_phi"].mean()),
                        "err_y_weights": float(res["err_y"].mean()),
                    }
                )
            if param is not None:
                report.extra["selected"].setdefault(method, []).append(param)
                report.extra["inner_cv"].setdefault(method, []).append(curve)
            report.add(
                method, err_phi=res["err_phi"].mean(), err_y=res["err_y"].mean(), fit_time=elapsed
            )
            log(
                f"fold {fold}: {method:12s} param={param} Err^phi={res['err_phi'].mean():.4f} "
                f"Err^Y={res['err_y'].mean():.4f} ({elapsed:.1f}s)"
            )
            if fold == 0:
                shown[method] = learn[res["preimage"]]
        if fold == 0:
            shown["test"] = test

    out_dir, fig_dir = output_dirs(args)
    fig = plot_completions(data, shown, fig_dir / "usps_completion.png")
    path = report.save(out_dir)
    print(
        f"## USPS image completion: {n_images} images, {n_folds}-fold CV, learning folds of "
        f"{n_images // n_folds}\n"
    )
    print("### Err^phi(TS)\n")
    print(report.table("err_phi", "image_err_phi"))
    print("\n### Err^Y(TS)\n")
    print(report.table("err_y", "image_err_y"))
    print(f"\nselected parameters: {report.extra['selected']}")
    print(f"okcore metrics vs weights (fold 0): {report.extra['okcore_metric_check']}")
    print(f"\n{report.timing()}; results in {path}; figure {fig}")
    return report


def plot_completions(
    data: dict[str, np.ndarray], shown: dict[str, np.ndarray], path: Path, n_digits: int = 12
) -> Path:
    """Grid of test digits: the true image, then top half + predicted bottom half per method.

    ``shown[method]`` holds, for every test image of fold 0, the row (in ``data``) of the
    learning output chosen as pre-image; one digit of each class first, then the next ones.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    test = shown["test"]
    labels = data["labels"][test]
    order = [int(np.flatnonzero(labels == c)[0]) for c in np.unique(labels)][:n_digits]
    order += [i for i in range(len(test)) if i not in order][: n_digits - len(order)]
    rows = [("true", None)] + [
        (m, shown[m]) for m in ("ok3", "ok3_et", "okboost_et", "knn", "kde") if m in shown
    ]
    names = {
        "true": "true",
        "ok3": "OK3",
        "ok3_et": "OK3+ET",
        "okboost_et": "OK3-et+\nOKBoost",
        "knn": "k-NN",
        "kde": "KDE",
    }
    fig, axes = plt.subplots(len(rows), len(order), figsize=(len(order) * 0.75, len(rows) * 0.85))
    for r, (name, pre) in enumerate(rows):
        for c, i in enumerate(order):
            top = data["X"][test[i]]
            bottom = data["Y"][test[i]] if pre is None else data["Y"][pre[i]]
            ax = axes[r, c]
            ax.imshow(np.r_[top, bottom].reshape(16, 16), cmap="gray_r", vmin=-1, vmax=1)
            ax.axhline(7.5, color="tab:red", lw=0.6)
            ax.set_xticks([])
            ax.set_yticks([])
            if c == 0:
                ax.set_ylabel(names[name], rotation=0, ha="right", va="center", fontsize=7)
    fig.suptitle("USPS test digits (fold 0): top half given, bottom half = pre-image", fontsize=8)
    fig.tight_layout(pad=0.2)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


if __name__ == "__main__":
    run()
