"""Full USPS image completion ("real data at real size"): the standard split of
usps.h5, 7,291 training / 2,007 test images, top half (128 px) -> bottom half (128 px).

Protocol as in bench/usps_completion.py (docs/RESULTS.md section 2) but at full size and on
the fixed train/test split: pixels on the [-1, 1] scale (2x - 1), Gaussian output kernel with
the paper's sigma = 7.0711 (gamma = 0.01), OK3-et + OKBoost (splitter="random"), M = 500,
nu = 0.01, J = 40 (the inner CV's choice on every fold of the 1000-image protocol) unless
``--tune-j`` (and ``--tune-nu``) pick J (and nu) on a validation split of the training file
(20 %, seeded) by Err^phi, each candidate fitted on the other 80 % with the same factor
settings; the final model is then refitted on all 7,291 images.

The output space gets a low-rank factor: ``--factor-rank r`` (okcore's Nystrom factor above
4000 outputs, r landmarks), or ``--n-landmarks m`` (okcore's ``n_landmarks``: m landmark
outputs drawn by the estimator's random_state, the best ``--factor-rank`` directions kept),
never the 7,291 x 7,291 Gram matrix in the fit. We print the trace fraction kept
(``output_space_.trace_fraction``), the fit's wall and CPU time (target < 2 min) and the
load average, then on the 2,007 test images Err^phi = mean ||phi(y) - F(x)||^2 and
Err^Y = mean 2 - 2 k(y, y^), y^ the pre-image among the 7,291 training outputs
(okcore.metrics.err_phi / err_y; both exact, in the full kernel: F lies in the factor's span).

Reference (``--kde``, default on): kernel ridge regression = kernel dependency estimation with
a Gaussian input kernel, (alpha, input gamma) = (1.0, 0.01), the inner CV's choice on 4 of 5
folds of the 1000-image protocol: weights W = k_x(X_test, X) (K_x + alpha I)^-1 by one
Cholesky factorisation, then the same two errors in the exact output kernel.

    python -m bench.usps_full                        # the full run, writes bench/results/usps_full.*
    python -m bench.usps_full --tune-j 20 40 80      # J on a validation split first
    python -m bench.usps_full --n-landmarks 1000 --factor-rank 1000 --tune-j 40 100 250 \
        --tune-nu 0.01 0.05                          # the committed run
    python -m bench.usps_full --quick                # seconds, synthetic 16 x 16 stand-ins
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import linalg

from bench.common import REPO_ROOT, RESULTS_DIR, data_dir, write_result
from bench.scale_util import Tee, load_avg, log, save_run, timed
from bench.usps_completion import SIGMA, rbf

OUTPUT_KERNEL = {"type": "rbf", "sigma": SIGMA}
KDE_ALPHA, KDE_GAMMA = 1.0, 0.01
FIT_TARGET_S = 120.0


def load_split() -> dict[str, np.ndarray]:
    """The standard USPS split on the [-1, 1] scale: X = top 8 rows, Y = bottom 8 rows."""
    import h5py

    with h5py.File(data_dir() / "usps" / "usps.h5", "r") as f:
        tr = 2.0 * np.asarray(f["train/data"], dtype=np.float64) - 1.0
        te = 2.0 * np.asarray(f["test/data"], dtype=np.float64) - 1.0
        ytr = np.asarray(f["train/target"])
        yte = np.asarray(f["test/target"])
    return {
        "X": tr[:, :128],
        "Y": tr[:, 128:],
        "Xt": te[:, :128],
        "Yt": te[:, 128:],
        "labels": ytr,
        "labels_t": yte,
    }


def synthetic_split(n_train: int, n_test: int, seed: int) -> dict[str, np.ndarray]:
    """Stand-in for --quick: noisy copies of 10 random smooth 16 x 16 'digits' in [-1, 1]."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(10, 4, 4)).repeat(4, axis=1).repeat(4, axis=2).reshape(10, 256)
    lab = rng.integers(0, 10, n_train + n_test)
    img = np.tanh(base[lab] + 0.5 * rng.normal(size=(len(lab), 256)))
    a, b = img[:n_train], img[n_train:]
    return {
        "X": a[:, :128],
        "Y": a[:, 128:],
        "Xt": b[:, :128],
        "Yt": b[:, 128:],
        "labels": lab[:n_train],
        "labels_t": lab[n_train:],
    }


def make_boost(args: Any, J: int, seed: int, nu: float | None = None) -> Any:
    from okcore import OKBoostRegressor

    params: dict[str, Any] = dict(
        n_estimators=args.n_estimators,
        learning_rate=args.learning_rate if nu is None else nu,
        max_splits=J,
        splitter="random",
        max_features=None,  # sqrt(p) candidates and the paper's leaf order, as measured
        leaf_order="variance",
        early_stopping=False,
        factor_rank=args.factor_rank,
        random_state=seed,
    )
    if args.n_landmarks is not None:
        if "n_landmarks" not in inspect.signature(OKBoostRegressor).parameters:
            raise SystemExit(
                "--n-landmarks: this okcore's OKBoostRegressor has no n_landmarks parameter "
                "(use --factor-rank: above 4000 outputs it is a Nystrom factor on that many "
                "landmarks)"
            )
        params["n_landmarks"] = args.n_landmarks
    return OKBoostRegressor(**params)


def space_info(est: Any) -> dict[str, Any]:
    space = est.output_space_
    info: dict[str, Any] = {"rank": int(space.rank)}
    tf = getattr(space, "trace_fraction", None)
    if tf is None and space.eigenvalues is not None:
        tf = float(space.eigenvalues.sum() / space.diag.sum())
    info["trace_fraction"] = None if tf is None else float(tf)
    landmarks = getattr(space, "landmark_index", None)
    info["nystrom_landmarks"] = None if landmarks is None else int(len(landmarks))
    info["diag_exact"] = getattr(space, "diag_exact", None)
    info["max_bins"] = getattr(est, "max_bins_", None)
    info["sketch_dim"] = getattr(est, "sketch_dim_", None)
    return info


def kde_errors(d: dict[str, np.ndarray], alpha: float, gamma: float) -> dict[str, float]:
    """Kernel ridge / KDE weights by Cholesky, errors in the exact output kernel."""
    X, Y, Xt, Yt = d["X"], d["Y"], d["Xt"], d["Yt"]
    Kx = rbf(X, X, gamma)
    Kx[np.diag_indices_from(Kx)] += alpha
    c = linalg.cho_factor(Kx, lower=True, overwrite_a=True, check_finite=False)
    W = linalg.cho_solve(c, rbf(X, Xt, gamma), check_finite=False).T  # (Q, N)
    del Kx, c
    Ky = rbf(Y, Y)  # exact output Gram matrix, k(y, y) = 1
    WK = W @ Ky
    del Ky
    Kc = rbf(Yt, Y)
    err_phi = 1.0 - 2.0 * np.einsum("qi,qi->q", W, Kc) + np.einsum("qi,qi->q", WK, W)
    pre = np.argmin(1.0 - 2.0 * WK, axis=1)
    err_y = 2.0 - 2.0 * Kc[np.arange(len(pre)), pre]
    return {"err_phi": float(err_phi.mean()), "err_y": float(err_y.mean())}


def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="synthetic stand-in, seconds")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-estimators", type=int, default=500)
    p.add_argument("--learning-rate", type=float, default=0.01)
    p.add_argument("--max-splits", type=int, default=40, help="J (default 40, see docstring)")
    p.add_argument(
        "--tune-j",
        type=int,
        nargs="+",
        default=None,
        help="choose J among these on a 20%% validation split of the training file",
    )
    p.add_argument(
        "--tune-nu",
        type=float,
        nargs="+",
        default=None,
        help="with --tune-j: also choose nu among these (grid J x nu)",
    )
    p.add_argument("--factor-rank", type=int, default=500)
    p.add_argument(
        "--n-landmarks",
        type=int,
        default=None,
        help="Nystrom landmarks (needs okcore's n_landmarks parameter)",
    )
    p.add_argument("--no-kde", dest="kde", action="store_false")
    p.add_argument("--name", default=None)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    argv_list = ["bench.usps_full", *(argv if argv is not None else sys.argv[1:])]
    started, cpu_started = time.time(), time.process_time()
    if args.quick:
        d = synthetic_split(400, 100, args.seed)
        args.n_estimators, args.learning_rate = min(args.n_estimators, 20), 0.1
        args.factor_rank = min(args.factor_rank, 50)
        if args.n_landmarks is not None:
            args.n_landmarks = min(args.n_landmarks, 100)
        args.max_splits = min(args.max_splits, 5)
        if args.tune_j:
            args.tune_j = [min(j, 5) for j in args.tune_j][:2]
        if args.tune_nu:
            args.tune_nu = args.tune_nu[:2]
    else:
        d = load_split()
    name = (args.name or "usps_full") + ("_quick" if args.quick else "")
    out_dir = args.out or (REPO_ROOT / "bench" / "out" / "quick" if args.quick else RESULTS_DIR)
    say = Tee()
    N, Q = len(d["X"]), len(d["Xt"])
    rec: dict[str, Any] = {
        "settings": {
            "n_train": N,
            "n_test": Q,
            "sigma": SIGMA,
            "method": "OK3-et + OKBoost",
            "n_estimators": args.n_estimators,
            "learning_rate": args.learning_rate,
            "factor_rank": args.factor_rank,
            "n_landmarks": args.n_landmarks,
            "seed": args.seed,
            "quick": args.quick,
            "kde": [KDE_ALPHA, KDE_GAMMA] if args.kde else None,
        },
        "load_average_start": load_avg(),
    }
    log(f"USPS full: N={N} train, Q={Q} test, load {load_avg()}")

    J, nu = args.max_splits, args.learning_rate
    if args.tune_j:  # validation split of the training file, same factor settings
        rng = np.random.default_rng(args.seed)
        perm = rng.permutation(N)
        n_val = N // 5
        va, tr = np.sort(perm[:n_val]), np.sort(perm[n_val:])
        from okcore import metrics

        curve: dict[str, Any] = {}
        for nu_c in args.tune_nu or [args.learning_rate]:
            for j in args.tune_j:
                t: dict[str, Any] = {}
                with timed(t, "fit"):
                    est = make_boost(args, j, args.seed, nu_c).fit(
                        d["X"][tr], d["Y"][tr], kernel=OUTPUT_KERNEL
                    )
                key = f"J={j},nu={nu_c}"
                curve[key] = {
                    "J": j,
                    "nu": nu_c,
                    "err_phi": metrics.err_phi(est, d["X"][va], d["Y"][va]),
                    **t,
                }
                log(
                    f"tune {key}: validation Err^phi {curve[key]['err_phi']:.4f} "
                    f"(fit {t['fit_wall_s']} s wall, {t['fit_cpu_s']} s CPU)"
                )
        best = min(curve.values(), key=lambda c: c["err_phi"])
        J, nu = best["J"], best["nu"]
        rec["tune_j"] = {"validation_rows": n_val, "curve": curve, "chosen": J, "chosen_nu": nu}
    rec["settings"]["max_splits"] = J
    rec["settings"]["learning_rate"] = nu

    from okcore import metrics

    t: dict[str, Any] = {}
    est = make_boost(args, J, args.seed, nu)
    with timed(t, "fit"):
        est.fit(d["X"], d["Y"], kernel=OUTPUT_KERNEL)
    info = space_info(est)
    log(f"fit {t['fit_wall_s']} s wall, {t['fit_cpu_s']} s CPU; space {info}")
    with timed(t, "predict"):
        e_phi = metrics.err_phi(est, d["Xt"], d["Yt"])
        e_y = metrics.err_y(est, d["Xt"], d["Yt"])
    rec["okboost"] = {"err_phi": e_phi, "err_y": e_y, "space": info, **t}
    log(f"OKBoost Err^phi {e_phi:.4f} Err^Y {e_y:.4f}")
    if args.kde:
        k: dict[str, Any] = {}
        with timed(k, "kde"):
            rec["kde"] = kde_errors(d, KDE_ALPHA, KDE_GAMMA)
        rec["kde"].update(k)
        log(f"KDE {rec['kde']}")

    ok = rec["okboost"]
    say(f"## Full USPS completion: {N} training / {Q} test images, top 128 px -> bottom 128 px\n")
    say(
        f"Output kernel: Gaussian, sigma = {SIGMA}; OK3-et + OKBoost, M = {args.n_estimators}, "
        f"nu = {nu}, J = {J}"
        + (
            f" (chosen on a 20 % validation split among J {args.tune_j}, "
            f"nu {args.tune_nu or [args.learning_rate]})"
            if args.tune_j
            else ""
        )
        + "."
    )
    how = (
        f"Nystrom, {info['nystrom_landmarks']} landmarks"
        if info["nystrom_landmarks"]
        else "eigen-factor"
    )
    tf = info["trace_fraction"]
    say(
        f"Output factor: rank {info['rank']} ({how}), trace fraction kept "
        f"{'n/a' if tf is None else f'{tf:.4f}'}; split search max_bins = {info['max_bins']}, "
        f"sketch_dim = {info['sketch_dim']}.\n"
    )
    say("| method | Err^phi(TS) | Err^Y(TS) | fit wall (s) | fit CPU (s) | load before / after |")
    say("| --- | --- | --- | --- | --- | --- |")
    say(
        f"| OK3-et + OKBoost | {ok['err_phi']:.4f} | {ok['err_y']:.4f} | {ok['fit_wall_s']:.1f} | "
        f"{ok['fit_cpu_s']:.1f} | {ok['fit_load_before'][0]} / {ok['fit_load_after'][0]} |"
    )
    if args.kde:
        kd = rec["kde"]
        say(
            f"| kernel ridge / KDE (alpha {KDE_ALPHA}, gamma {KDE_GAMMA}) | {kd['err_phi']:.4f} | "
            f"{kd['err_y']:.4f} | {kd['kde_wall_s']:.1f} | {kd['kde_cpu_s']:.1f} | "
            f"{kd['kde_load_before'][0]} / {kd['kde_load_after'][0]} |"
        )
    met = ok["fit_wall_s"] < FIT_TARGET_S
    say(
        f"\nfit target < {FIT_TARGET_S:.0f} s: {'met' if met else 'MISSED'} "
        f"({ok['fit_wall_s']:.1f} s wall, {ok['fit_cpu_s']:.1f} s CPU); test metrics "
        f"{ok['predict_wall_s']:.1f} s"
    )
    if args.tune_j:
        say(
            "validation Err^phi (fit wall / CPU s on 80 % of the training file): "
            + ", ".join(
                f"{k} {v['err_phi']:.4f} ({v['fit_wall_s']:.0f} / {v['fit_cpu_s']:.0f})"
                for k, v in rec["tune_j"]["curve"].items()
            )
        )
    say(
        f"\nwall time {time.time() - started:.0f} s, CPU time {time.process_time() - cpu_started:.0f} s, "
        f"load average at the end {load_avg()}"
    )
    jpath, _ = save_run(out_dir, name, argv_list, rec, say, started, cpu_started)
    say(f"results in {jpath}")
    write_result(out_dir / f"{name}.txt", say.text())
    return rec


if __name__ == "__main__":
    run()
