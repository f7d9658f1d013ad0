"""Accuracy per CPU second: held-out error against CPU time, okcore and its peers in one run.

Every method is fitted over a small grid of its own main settings -- boosting rounds M x
learning rate x tree size (leaves) -- and every grid point is reported with its held-out
error and its CPU seconds (process CPU time, user + system, of the fit and of predicting the
held-out rows -- the synthetic problem's first 1,000 queries of its 100,000 --, all threads
counted), then each method's Pareto frontier (the points no cheaper
point beats) and the best error each method reaches within a few CPU budgets.

One thread everywhere: OMP / OpenBLAS / MKL / numba threads = 1 (and threadpoolctl), okcore
``n_jobs=1``, LightGBM ``num_threads=1``, XGBoost ``n_jobs=1``, CatBoost ``thread_count=1``.
The machine is shared: CPU seconds are the measure, the load average is recorded around every
fit.

Methods (``CONFIGS``: name -> family + fixed estimator parameters; adding an okcore
configuration is one line there):

    okcore_*        OKBoostRegressor(n_estimators=M, learning_rate=nu, max_splits=leaves - 1,
                    **params); oblivious trees (``tree_type="oblivious"``) take
                    max_depth=log2(leaves) instead, as CatBoost's
    okcore_direct_* the same, fitted on the problem's targets with the linear output kernel,
                    predicting F(x) as the peers do (where the problem's okcore protocol differs:
                    USPS's pre-images, Cora's diffusion kernel)
    catboost_*      CatBoostRegressor(loss_function="MultiRMSE"): symmetric trees of depth
                    log2(leaves), or grow_policy="Lossguide" with max_leaves=leaves
    lightgbm        one LightGBM model per output (num_leaves=leaves)
    xgboost         XGBRegressor(multi_strategy="multi_output_tree", grow_policy="lossguide",
                    max_leaves=leaves)
    hgb             one scikit-learn HistGradientBoostingRegressor per output
                    (max_leaf_nodes=leaves, early_stopping=False)
    sklearn_loop    M DecisionTreeRegressor(max_leaf_nodes=leaves) fits on the residuals
    average         okcore.AveragedRegressor (equal weights) of OKBoostRegressor() and
                    KernelRidgeRegressor(gamma="cv"), exact, its inner CV on all the training
                    rows: a few thousand rows at most (fit_average)
    krr             plain kernel ridge: okcore's KernelRidgeRegressor (RBF) on all training
                    rows, Nystroem with M = D basis rows, its width and lambda by its own
                    5-fold CV (gamma="cv", alpha="cv") on 1,000 rows (fit_krr); krr_auto
                    with gamma="auto" (lambda by the CV); krr_gp with a Gaussian process's
                    widths (ARD) and noise ratio, the kernel-model protocol of bench.krr_kin40k

Peers keep their own regularization defaults (LightGBM min_data_in_leaf=20, XGBoost
reg_lambda=1, CatBoost l2_leaf_reg=3, HGB min_samples_leaf=20): what a user gets. A peer is
fitted once per (learning rate, leaves) with the largest M of the grid; the points of smaller M
are its first M rounds: fit CPU up to that round (per-round CPU stamps from the library's
callback, set-up included) plus the CPU of predicting with the first M trees
(``ntree_end`` / ``iteration_range`` / ``num_iteration``; HGB is grown with ``warm_start``
checkpoint to checkpoint, re-binning each time, which counts a little against it). okcore
likewise: one fit with the largest M, its CPU stamped after each tree by a fit ``callback``,
the smaller M predicted by its first M trees (``okcore.model_selection.first_stages``, the
model a refit with M would give: OKBoost's stages never look ahead); a fit that stops early
(``early_stopping`` on: by default above 10,000 rows) depends on M and is one fit per point,
as is the estimator's default M. ``--okcore-refits`` fits every okcore point on its own (the
protocol of the first runs, the same errors; okcore's CPU then counts each fit from scratch).
To re-measure okcore's CPU alone, re-run a table's command with ``--configs`` cut to its
okcore configurations and ``--name`` changed; ``--report`` merges the files.

Problems (``--problem``):

    synthetic   bench_scale's problem (p = 50, r = 50 linear outputs, noise 0.3), one signal at
                every N (``--n``), held-out MSE ||F(x) - signal(x)||^2 on ``--queries``
                (default 100,000) fresh queries
    yeast       MULAN yeast multi-label (14 labels, 103 inputs): trained on rows 917:, tested on
                rows :917 (MULAN's split); Hamming loss and micro-F1 of the raw scores
                thresholded at 0.5, ranking loss of the raw scores
    kin40k      one output, 8 inputs; krr_kin40k's split (36,000 / 4,000, seed 0,
                standardised); NMSE = test MSE / test variance
    census      one output, 16 inputs: census-house (our copy is house-16H, 22,784 rows),
                krr_kin40k's split of it (20,506 / 2,278, seed 0, standardised); NMSE
    usps        USPS completion as bench.usps_completion (paper Table 1): 1000 seeded images,
                top 128 pixels -> bottom 128 on [-1, 1], learning fold ``--fold`` of 5 (200
                learning / 800 test images). okcore fits the protocol's Gaussian output kernel
                (sigma 7.0711) and predicts its pre-image, the closest learning image's bottom
                half; the peers regress the 128 pixels and predict them directly (a mean of
                images, not an image). Both are scored on the pixels: sq_err = mean
                ||y - y^||^2, and the paper's Err^Y = mean 2 - 2 k(y, y^)
    cora        whole Cora as bench.network_completion (--subset 0, words used by >= 5
                vertices, dense): fold ``--fold`` of its 5-fold CV; the targets are the
                diffusion kernel's factor (beta 1, graph induced on the learning vertices)
                truncated to ``--factor-rank`` columns (default 256) -- okcore fits the kernel
                with ``factor_rank``, the peers regress okcore's factor Phi (MultiRMSE / one
                model per column) --; every method predicts F(x) for the test and the learning
                vertices (the CPU counted predicts both); AUC of <F(x_v), F(x_v')> over every
                pair with a test vertex against the true edges (the protocol's), auc_known with
                the learning side observed, <F(x_v), phi(y_v')>

    python -m bench.frontier --problem synthetic --n 4000
    python -m bench.frontier --problem synthetic --n 16000 --rates 0.1 --leaves 16
    python -m bench.frontier --problem yeast --configs okcore_fast_gain catboost_sym
    python -m bench.frontier --problem kin40k --set xgboost:rounds=300 --set hgb:rates=0.1
    python -m bench.frontier --problem usps --rates 0.1 --leaves 16
    python -m bench.frontier --problem cora --factor-rank 256 --rates 0.1 --leaves 16
    python -m bench.frontier --problem yeast --jobs 3       # cells in 3 one-thread processes
    python -m bench.frontier --report A.json B.json --name merged   # tables of saved runs
    python -m bench.frontier --quick                       # every method, tiny sizes, seconds

Results: bench/results/frontier_<problem>.{json,txt} (synthetic: frontier_synthetic_n<N>; usps:
frontier_usps_fold<k>; cora: frontier_cora_r<rank>_fold<k>).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # also runnable as ``python bench/frontier.py``
    sys.path.insert(0, str(REPO_ROOT))

from bench.bench_okcore import make_fixed_signal_data  # noqa: E402
from bench.bench_scale import THREAD_VARS, Clock, machine  # noqa: E402

# one thread for whatever reads these when it loads (numba, the peers' OpenMP): set before
# okcore or any peer is imported; BLAS, loaded with numpy, is limited by threadpoolctl
os.environ.update({var: "1" for var in THREAD_VARS})

from bench.common import data_dir, write_result  # noqa: E402
from bench.scale_util import Tee, cpu_seconds, load_avg, save_run  # noqa: E402


# --------------------------------------------------------------------------------------------
# Methods: the table of configurations
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    """One method: its family (how it is fitted), fixed parameters and grid overrides."""

    family: str
    params: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, tuple] = field(default_factory=dict)
    label: str = ""


FAST = {"max_bins": 255, "sketch_dim": 8}  # histograms + an 8-column sketch of the residuals
HIST = {"max_bins": 255, "sketch_dim": None}
EXACT = {"max_bins": None, "sketch_dim": None}
GAIN = {"leaf_order": "gain"}
EARLY_STOP = {"n_iter_no_change": 20, "validation_fraction": 0.1}
RANDOM = {"splitter": "random"}
OBLIVIOUS = {**FAST, "tree_type": "oblivious"}  # symmetric trees, depth log2(leaves)
OBLIVIOUS_GRID = {"rates": (0.1,), "leaves": (16, 64), "rounds": (100, 300, 1000)}
# the estimator's own defaults, untouched: one point
DEFAULTS_ONLY = {"rounds": (None,), "rates": (None,), "leaves": (None,)}

CONFIGS: dict[str, Config] = {
    "okcore_default": Config("okcore", {}, DEFAULTS_ONLY, "okcore defaults"),
    # the defaults with each level's cut refined inside its bins (the default) or not, by
    # seed (the sketch's draws; okcore's fits take random_state 0 unless given)
    **{
        f"okcore_default{'_binned' if binned else ''}{f'_seed{seed}' if seed else ''}": Config(
            "okcore",
            {"random_state": seed, **({"refine_cuts": False} if binned else {})},
            DEFAULTS_ONLY,
            f"okcore defaults{', binned cuts' if binned else ''}, seed {seed}",
        )
        for binned in (False, True)
        for seed in (0, 1, 2)
        if binned or seed
    },
    "okcore_default_refined": Config(
        "okcore", {"refine_cuts": True}, DEFAULTS_ONLY, "okcore defaults, cuts always refined"
    ),
    # the defaults with fewer histogram bins (a few thousand rows: most cells of a level's
    # histogram are empty), by seed
    **{
        f"okcore_default_{bins}_bins{f'_seed{seed}' if seed else ''}": Config(
            "okcore",
            {"max_bins": bins, "random_state": seed},
            DEFAULTS_ONLY,
            f"okcore defaults with {bins} bins, seed {seed}",
        )
        for bins in (64, 128)
        for seed in (0, 1, 2)
    },
    "okcore_fast": Config("okcore", FAST, label="okcore fast (hist + sketch), variance order"),
    "okcore_exact": Config("okcore", EXACT, label="okcore exact = paper (variance order)"),
    "okcore_fast_gain": Config("okcore", {**FAST, **GAIN}, label="okcore fast, gain order"),
    "okcore_hist_gain": Config("okcore", {**HIST, **GAIN}, label="okcore hist (no sketch), gain"),
    "okcore_exact_gain": Config("okcore", {**EXACT, **GAIN}, label="okcore exact, gain order"),
    "okcore_fast_gain_sub": Config(
        "okcore", {**FAST, **GAIN, "subsample": 0.5}, label="okcore fast, gain, subsample 0.5"
    ),
    "okcore_fast_gain_es": Config(
        "okcore",
        {**FAST, **GAIN, **EARLY_STOP},
        {"rounds": (3000,)},
        "okcore fast, gain, early stopping (20 rounds, 10% held out)",
    ),
    "okcore_gain": Config("okcore", GAIN, label="okcore, gain order, search 'auto'"),
    "okcore_gain_l2_1": Config(
        "okcore", {**GAIN, "l2_regularization": 1.0}, label="okcore, gain order, l2 1"
    ),
    "okcore_gain_l2_10": Config(
        "okcore", {**GAIN, "l2_regularization": 10.0}, label="okcore, gain order, l2 10"
    ),
    "okcore_gain_l2_100": Config(
        "okcore", {**GAIN, "l2_regularization": 100.0}, label="okcore, gain order, l2 100"
    ),
    # the same with other seeds (the sketch's and hold-out's draws): the run-to-run spread
    **{
        f"okcore_gain{'_l2_' if l2 else ''}{l2}_seed{seed}": Config(
            "okcore",
            {**GAIN, "l2_regularization": float(l2 or 0), "random_state": seed},
            label=f"okcore, gain order, l2 {l2 or 0}, seed {seed}",
        )
        for l2 in ("", 10)
        for seed in (1, 2)
    },
    "okcore_gain_no_es": Config(
        "okcore", {**GAIN, "early_stopping": False}, label="okcore, gain order, no early stopping"
    ),
    "okcore_gain_es50": Config(
        "okcore",
        {**GAIN, "early_stopping": True, "n_iter_no_change": 50, "validation_fraction": 0.1},
        label="okcore, gain order, early stopping (50 rounds, 10% held out)",
    ),
    "okcore_gain_es10": Config(
        "okcore",
        {**GAIN, "n_iter_no_change": 10, "validation_fraction": 0.1},
        label="okcore, gain order, early stopping (10 rounds, 10% held out)",
    ),
    "okcore_et_sqrt": Config(
        "okcore", {**GAIN, **RANDOM, "max_features": "sqrt"}, label="OK3-et + OKBoost, sqrt(p)"
    ),
    "okcore_et_all": Config(
        "okcore", {**GAIN, **RANDOM, "max_features": 1.0}, label="OK3-et + OKBoost, all p"
    ),
    "okcore_oblivious": Config(
        "okcore",
        {**OBLIVIOUS, "l2_regularization": 0.0},
        OBLIVIOUS_GRID,
        "okcore oblivious (hist + sketch), l2 0",
    ),
    "okcore_oblivious_l2_3": Config(
        "okcore",
        {**OBLIVIOUS, "l2_regularization": 3.0},
        OBLIVIOUS_GRID,
        "okcore oblivious (hist + sketch), l2 3",
    ),
    "okcore_oblivious_hist_l2_3": Config(
        "okcore",
        {**OBLIVIOUS, **HIST, "l2_regularization": 3.0},
        OBLIVIOUS_GRID,
        "okcore oblivious (hist, no sketch), l2 3",
    ),
    # the default tree type's candidates: the estimator's own search ("auto"), oblivious depth
    # log2(leaves), lambda 0 / 3, by seed (the sketch's and the hold-out's draws); "_no_es"
    # without the default's early stopping; "okcore_best_first" the best-first default
    **{
        f"okcore_obl_l2_{l2}{'' if es else '_no_es'}_seed{seed}": Config(
            "okcore",
            {
                "tree_type": "oblivious",
                "l2_regularization": float(l2),
                "random_state": seed,
                **({} if es else {"early_stopping": False}),
            },
            {"rates": (0.1,), "leaves": (16, 32, 64), "rounds": (300,)},
            f"okcore oblivious, search 'auto', l2 {l2}{'' if es else ', no early stopping'}, "
            f"seed {seed}",
        )
        for l2 in (0, 3)
        for es in (True, False)
        for seed in (0, 1, 2)
    },
    **{
        f"okcore_best_first_seed{seed}": Config(
            "okcore",
            {"tree_type": "best-first", "random_state": seed},
            DEFAULTS_ONLY,
            f"okcore best-first (the former default), seed {seed}",
        )
        for seed in (0, 1, 2)
    },
    "catboost_sym": Config("catboost", {}, label="CatBoost MultiRMSE, symmetric (l2 3)"),
    "catboost_sym_l2_0": Config(
        "catboost", {"l2_leaf_reg": 0.0}, label="CatBoost MultiRMSE, symmetric, l2 0"
    ),
    "catboost_lossguide": Config(
        "catboost", {"grow_policy": "Lossguide"}, label="CatBoost MultiRMSE, Lossguide (l2 3)"
    ),
    "catboost_lossguide_l2_0": Config(
        "catboost",
        {"grow_policy": "Lossguide", "l2_leaf_reg": 0.0},
        label="CatBoost MultiRMSE, Lossguide, l2 0",
    ),
    "lightgbm": Config("lightgbm", label="LightGBM, one model per output"),
    "xgboost": Config("xgboost", label="XGBoost multi_output_tree"),
    "hgb": Config("hgb", label="scikit-learn HGB, one model per output"),
    "sklearn_loop": Config("sklearn_loop", label="scikit-learn tree loop"),
    "okcore_default_krr_average": Config(
        "average", {}, DEFAULTS_ONLY, "okcore defaults averaged with kernel ridge (gamma 'cv')"
    ),
    **{
        name: Config(
            "krr",
            {"hyperparameters": how},
            {"rounds": (500, 1000, 2000), "rates": (None,), "leaves": (None,)},
            f"kernel ridge (Nystroem, M = D basis rows), RBF width and lambda by {label}",
        )
        for name, how, label in (
            ("krr", "cv", "5-fold CV on 1,000 rows"),
            ("krr_auto", "auto", "'auto' (lambda by 5-fold CV on 1,000 rows)"),
            ("krr_gp", "gp", "a GP on 1,000 rows (ARD up to 20 inputs)"),
        )
    },
}
# the paper's algorithm (OKBoostRegressor.paper(): exact search on every factor column, leaves
# split by highest N*var, no penalty, no early stopping, no cut refinement) with the grid's M,
# nu and leaves in place of Table 1's M = 500, nu = 0.01, J = 10
PAPER = {
    **EXACT,
    "leaf_order": "variance",
    "tree_type": "best-first",
    "max_features": None,
    "early_stopping": False,
    "refine_cuts": False,
}
CONFIGS.update(
    okcore_paper=Config("okcore", PAPER, label="okcore paper preset (grid's M, nu, leaves)"),
    # okcore regressing the problem's targets as plain vectors, as the peers do (USPS: the
    # pixels, not pre-images; Cora: the given factor, not the kernel): the same outputs
    okcore_direct_default=Config(
        "okcore_direct", {}, DEFAULTS_ONLY, "okcore defaults, targets regressed directly"
    ),
    okcore_direct_64_bins=Config(
        "okcore_direct",
        {"max_bins": 64},
        DEFAULTS_ONLY,
        "okcore defaults with 64 bins, targets regressed directly",
    ),
    okcore_direct_oblivious_l2_3=Config(
        "okcore_direct",
        {**OBLIVIOUS, "l2_regularization": 3.0},
        OBLIVIOUS_GRID,
        "okcore oblivious (hist + sketch), l2 3, targets regressed directly",
    ),
)
# candidate defaults for many outputs (r > 1), one setting changed from the estimator's
# defaults each (oblivious trees of depth 4, nu 0.1; lambda 3 when they were measured, 10 since:
# "l2_3" is the former default), rounds 100 / 300 / 1000 from one fit; "okcore_direct_multi_*"
# the same regressing the problem's targets directly
MULTI_CANDIDATES: dict[str, dict[str, Any]] = {
    "base": {},
    "l2_1": {"l2_regularization": 1.0},
    "l2_3": {"l2_regularization": 3.0},  # the former many-output default (lambda 3)
    "l2_10": {"l2_regularization": 10.0},
    "l2_30": {"l2_regularization": 30.0},
    "mf_0.5": {"max_features": 0.5},
    "mf_0.3": {"max_features": 0.3},
    "mf_0.1": {"max_features": 0.1},
    "mf_sqrt": {"max_features": "sqrt"},
    "col_0.5": {"colsample_bytree": 0.5},
    "col_0.3": {"colsample_bytree": 0.3},
    "sub_0.8": {"subsample": 0.8},
    "sub_0.5": {"subsample": 0.5},
    "msl_5": {"min_samples_leaf": 5},
    "msl_20": {"min_samples_leaf": 20},
    "depth_3": {"max_depth": 3},
    "depth_5": {"max_depth": 5},
    "depth_6": {"max_depth": 6},
    "sketch_4": {"sketch_dim": 4},
    "sketch_16": {"sketch_dim": 16},
    "sketch_32": {"sketch_dim": 32},
    "bins_32": {"max_bins": 32},
    "bins_64": {"max_bins": 64},
    "lr_0.05": {"learning_rate": 0.05},
    "lr_0.2": {"learning_rate": 0.2},
    # combinations of the single changes that measured well
    "mf_0.3_msl_5": {"max_features": 0.3, "min_samples_leaf": 5},
    "mf_0.3_l2_10": {"max_features": 0.3, "l2_regularization": 10.0},
    "mf_0.3_depth_5": {"max_features": 0.3, "max_depth": 5},
    "col_0.3_msl_5": {"colsample_bytree": 0.3, "min_samples_leaf": 5},
    "msl_5_l2_10": {"min_samples_leaf": 5, "l2_regularization": 10.0},
    "bins_64_msl_5": {"max_bins": 64, "min_samples_leaf": 5},
    "mf_0.3_bins_64_msl_5": {"max_features": 0.3, "max_bins": 64, "min_samples_leaf": 5},
}
MULTI_GRID = {"rates": (0.1,), "leaves": (None,), "rounds": (100, 300, 1000)}
for _tag, _params in MULTI_CANDIDATES.items():
    _rate = {"rates": (_params["learning_rate"],)} if "learning_rate" in _params else {}
    _fixed = {key: value for key, value in _params.items() if key != "learning_rate"}
    for _family in ("okcore", "okcore_direct"):
        CONFIGS[f"{_family}_multi_{_tag}"] = Config(
            _family,
            _fixed,
            {**MULTI_GRID, **_rate},
            f"{_family.replace('_', ' ')} defaults, {_tag.replace('_', ' ')}",
        )
# the module each family needs beyond numpy (peers are in the `bench` extra)
REQUIRES = {
    "okcore": "okcore",
    "okcore_direct": "okcore",
    "catboost": "catboost",
    "lightgbm": "lightgbm",
    "xgboost": "xgboost",
    "hgb": "sklearn",
    "sklearn_loop": "sklearn",
    "krr": "sklearn",
    "average": "okcore",
}
DEFAULT_GRID: dict[str, tuple] = {
    "rounds": (100, 300, 1000),
    "rates": (0.05, 0.1, 0.2),
    "leaves": (8, 16, 32),
}
QUICK_GRID: dict[str, tuple] = {"rounds": (5, 10), "rates": (0.1,), "leaves": (4,)}
BUDGETS = (0.3, 1, 3, 10, 30, 100, 300, 1000)
# the synthetic problem's error is measured on 100,000 queries so that a sharp step in the signal
# does not decide a comparison, but a user predicts about as many rows as were trained on: the
# CPU counted is that of predicting the first 1,000 queries (bench_scale's query count); the
# rest are predicted in a second call, whose CPU is recorded apart ("predict_cpu_rest")
TIMED_QUERIES = 1000


# --------------------------------------------------------------------------------------------
# Problems
# --------------------------------------------------------------------------------------------
Metrics = Callable[[np.ndarray, np.ndarray], dict[str, float]]


@dataclass
class Problem:
    """Training rows, held-out rows and how predictions are scored (``primary`` first)."""

    name: str
    X: np.ndarray
    Y: np.ndarray  # (N, r), also for one output
    Xq: np.ndarray
    truth: np.ndarray  # (Q, r)
    metrics: Metrics
    primary: str
    maximize: frozenset[str] = frozenset()
    description: str = ""
    timed_queries: int | None = None  # rows whose prediction CPU counts (None: all)
    # how okcore fits and predicts when its outputs are not plain vectors (USPS: a Gaussian
    # output kernel and pre-images; Cora: a diffusion kernel and its factor's coordinates):
    # okcore_fit(est, X, Y, callback) and the name of the estimator's prediction method
    okcore_fit: Callable[[Any, np.ndarray, np.ndarray, Any], Any] | None = None
    okcore_predict: str = "predict"
    okcore_params: dict[str, Any] = field(default_factory=dict)


def mse_metrics(pred: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """Held-out MSE, mean over queries of ||F(x) - signal(x)||^2 (bench_scale's measure)."""
    return {"mse": float(np.mean(np.sum((pred - truth) ** 2, axis=1)))}


def nmse_metrics(pred: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """Test MSE over the test variance (one output)."""
    return {"nmse": float(np.mean((pred - truth) ** 2) / np.var(truth))}


def multilabel_metrics(scores: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """Hamming loss and micro-F1 of ``scores >= 0.5``, ranking loss of the raw scores."""
    from sklearn.metrics import f1_score, label_ranking_loss

    labels = scores >= 0.5
    return {
        "hamming_loss": float(np.mean(labels != truth.astype(bool))),
        "micro_f1": float(f1_score(truth, labels, average="micro", zero_division=0)),
        "ranking_loss": float(label_ranking_loss(truth, scores)),
    }


def synthetic_problem(n: int, n_queries: int, p: int = 50, r: int = 50) -> Problem:
    X, Y, Xq, truth = make_fixed_signal_data(n, p, r, n_queries)
    return Problem(
        f"synthetic_n{n}",
        X,
        Y,
        Xq,
        truth,
        mse_metrics,
        "mse",
        description=f"bench_scale's signal, N = {n}, p = {p}, r = {r}, noise 0.3; held-out "
        f"MSE against the noiseless signal on {n_queries} fresh queries; the CPU counted "
        f"predicts the first {min(n_queries, TIMED_QUERIES)} of them",
        timed_queries=TIMED_QUERIES,
    )


def yeast_problem(quick: bool = False) -> Problem:
    path = data_dir() / "yeast_multilabel" / "yeast.csv.gz"
    with gzip.open(path, "rt") as fh:
        header = fh.readline().strip().split(",")
        table = np.loadtxt(fh, delimiter=",")
    labels = [i for i, name in enumerate(header) if name.startswith("Class")]
    inputs = [i for i, name in enumerate(header) if name.startswith("Att")]
    X, Y = table[:, inputs], table[:, labels]
    train, test = slice(917, None if not quick else 1217), slice(None, 917)  # MULAN's split
    return Problem(
        "yeast",
        X[train],
        Y[train],
        X[test],
        Y[test],
        multilabel_metrics,
        "hamming_loss",
        frozenset({"micro_f1"}),
        f"MULAN yeast, {len(Y[train])} training rows (917:), 917 test rows (:917), "
        f"{X.shape[1]} inputs, {Y.shape[1]} labels; scores thresholded at 0.5",
    )


def one_output_problem(name: str, quick: bool = False) -> Problem:
    """kin40k or census-house (house-16H) on krr_kin40k's split of it (seed 0, inputs and
    target standardised on the training rows), NMSE."""
    from bench.krr_kin40k import DATA, TITLES, make_split

    load, n_test = DATA[name]
    X_all, y_all = load()
    split = make_split(X_all, y_all, n_test, seed=0, gp_rows=0)
    n_train = 1000 if quick else len(split.y_train)
    return Problem(
        name,
        split.X_train[:n_train],
        split.y_train[:n_train, None],
        split.X_test,
        split.y_test[:, None],
        nmse_metrics,
        "nmse",
        description=f"{TITLES[name]}, {n_train} training / {n_test} test rows (krr_kin40k's "
        "split, seed 0, standardised), NMSE",
    )


def usps_metrics(pred: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """Pixel squared error mean ||y - y^||^2 over the 128 bottom pixels, and the paper's Err^Y,
    mean 2 - 2 k(y, y^) in the Gaussian output kernel (k(y, y) = 1)."""
    from bench.usps_completion import GAMMA

    sq = np.sum((pred - truth) ** 2, axis=1)
    return {"sq_err": float(np.mean(sq)), "err_y": float(np.mean(2.0 - 2.0 * np.exp(-GAMMA * sq)))}


def usps_problem(fold: int, quick: bool = False, seed: int = 0) -> Problem:
    """USPS completion as bench.usps_completion (paper Table 1): 1000 seeded images on the
    [-1, 1] scale, top 128 pixels -> bottom 128; fold ``fold`` of its 5 learning folds (200
    learning images, the other 800 held out). okcore fits the Gaussian output kernel of the
    protocol and predicts pre-images (the closest learning image's bottom half); the peers
    regress the 128 pixels and predict them directly."""
    from bench.common import learning_folds
    from bench.usps_completion import SIGMA, fit_okcore, load_usps

    n_images, n_folds = (100, 2) if quick else (1000, 5)
    data = load_usps(n_images, seed)
    learn, test = list(learning_folds(n_images, n_folds, seed, small_learning_set=True))[fold]
    return Problem(
        f"usps_fold{fold}",
        data["X"][learn],
        data["Y"][learn],
        data["X"][test],
        data["Y"][test],
        usps_metrics,
        "sq_err",
        description=f"USPS completion, {n_images} images (seed {seed}), learning fold {fold} "
        f"of {n_folds}: {len(learn)} learning / {len(test)} test images, top 128 pixels -> "
        f"bottom 128 on [-1, 1]; okcore: Gaussian output kernel (sigma {SIGMA}) and its "
        "pre-image among the learning images; peers: the 128 pixels regressed directly; "
        "sq_err = mean ||y - y^||^2, err_y = mean 2 - 2 k(y, y^)",
        okcore_fit=lambda est, X, Y, callback: fit_okcore(est, X, Y, callback=callback),
    )


def cora_problem(rank: int, fold: int, quick: bool = False, seed: int = 0) -> Problem:
    """Whole Cora as bench.network_completion (``--subset 0``): fold ``fold`` of its 5-fold
    CV over the vertices, output kernel = the diffusion kernel (beta 1) of the graph induced on
    the learning vertices, truncated to ``rank`` eigenpairs (okcore ``factor_rank``). Every
    method regresses the same ``rank``-column factor Phi (okcore from the kernel itself; the
    peers get the Phi of okcore's output space as their targets) and predicts F(x) for the
    test and the learning vertices; AUC scores <F(x_v), F(x_v')> over every pair with a test
    vertex against the true edges (both sides predicted, as the protocol), ``auc_known``
    scores test-learning pairs with <F(x_v), phi(y_v')> (the learning side observed)."""
    from bench.common import learning_folds
    from bench.network_completion import build_problem
    from okcore import OKBoostRegressor, metrics

    net, info = build_problem("cora", 60 if quick else 0, seed, min_df=5)
    rank = min(rank, 16) if quick else rank
    learn, test = list(learning_folds(net.n, 2 if quick else 5, seed, small_learning_set=False))[
        fold
    ]
    # the factor okcore's configurations fit (their random_state: the columns of a tied
    # eigenvalue, one per connected component of the learning graph, are not unique)
    c0 = cpu_seconds()
    one_tree = net.fit(
        OKBoostRegressor(n_estimators=1, factor_rank=rank, n_jobs=1, random_state=0), learn
    )
    factor, factor_cpu = one_tree.output_space_, cpu_seconds() - c0
    phi = np.asarray(factor.phi)
    a_nn, a_nk = net.A[np.ix_(test, test)], net.A[np.ix_(test, learn)]
    n_test = len(test)

    def auc_metrics(pred: np.ndarray, truth: np.ndarray) -> dict[str, float]:
        F_test, F_learn = pred[:n_test], pred[n_test:]
        k_nn = F_test @ F_test.T
        return {
            "auc": metrics.network_auc(k_nn, F_test @ F_learn.T, a_nn, a_nk),
            "auc_known": metrics.network_auc(k_nn, F_test @ phi.T, a_nn, a_nk),
        }

    X = np.asarray(net.X)
    return Problem(
        f"cora_r{rank}_fold{fold}",
        X[learn],
        phi,
        np.vstack([X[test], X[learn]]),
        np.zeros((n_test + len(learn), phi.shape[1])),  # unused: AUC scores the true edges
        auc_metrics,
        "auc",
        frozenset({"auc", "auc_known"}),
        f"whole Cora ({info['n_vertices']} vertices, {info['n_edges']} edges, "
        f"{info['n_features']} words used by >= 5 vertices), fold {fold} of 5: {len(learn)} "
        f"learning / {n_test} test vertices; targets: the diffusion kernel's factor of the "
        f"graph induced on the learning vertices, {phi.shape[1]} columns (trace fraction "
        f"{getattr(factor, 'trace_fraction', None)}); AUC of the predicted kernel values over "
        "every pair with a test vertex, F predicted for the test and the learning vertices "
        "(the CPU counted predicts both); okcore's fits include computing the factor "
        f"(a one-tree fit: {factor_cpu:.1f} CPU s), the peers are given it",
        okcore_fit=lambda est, X, Y, callback: net.fit(est, learn, callback=callback),
        okcore_predict="predict_features",
        okcore_params={"factor_rank": rank},
    )


# --------------------------------------------------------------------------------------------
# Fitting: one (config, learning rate, leaves) cell -> its points, one per M
# --------------------------------------------------------------------------------------------
@dataclass
class Cell:
    """A fit setting: rounds to report (ascending), learning rate and leaves per tree."""

    rounds: tuple[int | None, ...]
    rate: float | None
    leaves: int | None
    one_fit: bool = True  # okcore: smaller M from the first trees of one fit (see fit_okcore)


def _timed(call: Callable[[], Any]) -> tuple[Any, float]:
    c0 = cpu_seconds()
    out = call()
    return out, cpu_seconds() - c0


def predict_held_out(
    problem: Problem, predict: Callable[[np.ndarray], Any]
) -> tuple[np.ndarray, float, float]:
    """Predictions (Q, r) of every held-out row, the CPU of predicting the first
    ``problem.timed_queries`` rows (the one counted) and that of the rest (recorded apart)."""
    head = len(problem.Xq) if problem.timed_queries is None else problem.timed_queries
    parts, cpus = [], []
    for rows in (problem.Xq[:head], problem.Xq[head:]):
        if len(rows):
            pred, cpu = _timed(lambda rows=rows: predict(rows))
            parts.append(np.asarray(pred).reshape(len(rows), -1))
            cpus.append(cpu)
        else:
            cpus.append(0.0)
    return np.vstack(parts), cpus[0], cpus[1]


def _points_from_prefixes(
    problem: Problem,
    cell: Cell,
    fit_cpu_at: Callable[[int], float],
    predict: Callable[[np.ndarray, int], np.ndarray],
) -> list[dict[str, Any]]:
    """Points of a model fitted once with max(rounds): fit CPU up to round M plus the CPU of
    predicting the held-out rows with its first M rounds."""
    points = []
    for m in cell.rounds:
        assert m is not None
        pred, predict_cpu, rest_cpu = predict_held_out(problem, lambda X, m=m: predict(X, m))
        points.append(
            {
                "rounds": m,
                "fit_cpu": fit_cpu_at(m),
                "predict_cpu": predict_cpu,
                "predict_cpu_rest": rest_cpu,
                **problem.metrics(pred, problem.truth),
            }
        )
    return points


def fit_okcore(problem: Problem, cell: Cell, params: dict[str, Any]) -> list[dict[str, Any]]:
    """okcore's points: one fit with the largest M, its smaller M read from the first M
    trees (:func:`okcore.model_selection.first_stages`, exactly a refit's model: OKBoost's
    stages never look ahead) with the fit's CPU stamped after each tree by a fit callback, as
    the peers' are; one fit per point when the fit stops early (its trees depend on M's
    hold-out and patience), for the estimator's own default M, or with ``cell.one_fit``
    off (``--okcore-refits``: the first runs' protocol)."""
    from okcore import OKBoostRegressor
    from okcore.model_selection import first_stages

    oblivious = params.get("tree_type") == "oblivious"
    fit_with = problem.okcore_fit or (lambda est, X, Y, callback: est.fit(X, Y, callback=callback))

    def make(m: int | None) -> Any:
        grid = {"n_estimators": m, "learning_rate": cell.rate}
        if cell.leaves is not None and oblivious:
            grid["max_depth"] = max(1, round(math.log2(cell.leaves)))
        elif cell.leaves is not None:
            grid["max_splits"] = cell.leaves - 1
        given = {key: value for key, value in grid.items() if value is not None}
        settings = {"n_jobs": 1, "random_state": 0, **problem.okcore_params, **params, **given}
        return OKBoostRegressor(**settings)

    def point(est: Any, fitted: Any, fit_cpu: float) -> dict[str, Any]:
        predict = getattr(est, problem.okcore_predict)
        pred, predict_cpu, rest_cpu = predict_held_out(problem, predict)
        used = est.get_params()
        return {
            "rounds": int(est.n_estimators_planned_),  # n_estimators, "auto" resolved
            "trees_kept": int(est.n_estimators_),
            "learning_rate": used["learning_rate"],
            "leaves_grown": int(np.diff(est.ensemble_.leaf_offset).max()),  # the largest tree's
            "tree_type": fitted.tree_type_,
            "search": {"max_bins": fitted.max_bins_, "sketch_dim": fitted.sketch_dim_},
            "one_fit": est is not fitted,
            "fit_cpu": fit_cpu,
            "predict_cpu": predict_cpu,
            "predict_cpu_rest": rest_cpu,
            **problem.metrics(pred, problem.truth),
        }

    # compile this configuration's kernels before timing (numba caches, but loading costs)
    warm = slice(None, 200) if problem.okcore_fit is None else slice(None)
    fit_with(make(2).set_params(n_estimators=2), problem.X[warm], problem.Y[warm], None)
    rounds = [m for m in cell.rounds if m is not None]
    top = make(max(rounds)) if rounds and len(rounds) == len(cell.rounds) else None
    if cell.one_fit and top is not None and top.early_stopping_patience() is None:
        stamps: list[float] = []

        def stamp(progress: Any) -> None:
            if progress.phase == "trees" and progress.done > 0:
                stamps.append(cpu_seconds() - c0)

        c0 = cpu_seconds()
        fit_with(top, problem.X, problem.Y, stamp)
        fit_cpu = cpu_seconds() - c0
        stamps[-1] = fit_cpu  # the last tree's stamp, plus the fit's wrapping up
        return [point(first_stages(top, m), top, stamps[m - 1]) for m in rounds]
    points = []
    for m in cell.rounds:
        est = make(m)
        _, fit_cpu = _timed(lambda est=est: fit_with(est, problem.X, problem.Y, None))
        points.append(point(est, est, fit_cpu))
    return points


def fit_okcore_direct(problem: Problem, cell: Cell, params: dict[str, Any]) -> list[dict[str, Any]]:
    """okcore fitted on the problem's targets Y with the linear output kernel and predicting
    F(x) itself, as the peers do, where the problem's own okcore protocol differs (USPS:
    pre-images of a Gaussian kernel; Cora: the diffusion kernel, its factor computed in the
    fit)."""
    plain = replace(problem, okcore_fit=None, okcore_predict="predict", okcore_params={})
    return fit_okcore(plain, cell, params)


def fit_catboost(problem: Problem, cell: Cell, params: dict[str, Any]) -> list[dict[str, Any]]:
    from catboost import CatBoostRegressor

    assert cell.rate is not None and cell.leaves is not None
    top = max(m for m in cell.rounds if m is not None)
    shape: dict[str, Any] = (
        {"max_leaves": cell.leaves}
        if params.get("grow_policy") == "Lossguide"
        else {"depth": max(1, round(math.log2(cell.leaves)))}
    )
    # CatBoost refuses a constant target column ("All train targets are equal"; USPS has a
    # corner pixel that is -1 in some learning folds): those columns are predicted by their
    # constant, as a user would
    varying = np.ptp(problem.Y, axis=0) > 0
    Y, constant = problem.Y[:, varying], problem.Y[0]
    one = Y.shape[1] == 1
    est = CatBoostRegressor(
        iterations=top,
        learning_rate=cell.rate,
        loss_function="RMSE" if one else "MultiRMSE",
        thread_count=1,
        random_seed=0,
        verbose=False,
        allow_writing_files=False,
        **shape,
        **params,
    )
    clock = Clock()

    class Stamp:
        def after_iteration(self, info: Any) -> bool:
            clock.tick()
            return True

    clock.start()
    est.fit(problem.X, Y[:, 0] if one else Y, callbacks=[Stamp()])
    rounds = clock.rounds

    def predict(X: np.ndarray, m: int) -> np.ndarray:
        if varying.all():
            return est.predict(X, ntree_end=m)
        out = np.tile(constant, (len(X), 1))
        out[:, varying] = est.predict(X, ntree_end=m).reshape(len(X), -1)
        return out

    return _points_from_prefixes(problem, cell, lambda m: rounds[m - 1][1], predict)


def fit_xgboost(problem: Problem, cell: Cell, params: dict[str, Any]) -> list[dict[str, Any]]:
    import xgboost as xgb

    assert cell.rate is not None and cell.leaves is not None
    top = max(m for m in cell.rounds if m is not None)
    clock = Clock()

    class Stamp(xgb.callback.TrainingCallback):
        def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
            clock.tick()
            return False

    est = xgb.XGBRegressor(
        n_estimators=top,
        learning_rate=cell.rate,
        tree_method="hist",
        multi_strategy="multi_output_tree",
        grow_policy="lossguide",
        max_leaves=cell.leaves,
        max_depth=0,
        n_jobs=1,
        random_state=0,
        callbacks=[Stamp()],
        **params,
    )
    clock.start()
    est.fit(problem.X, problem.Y)
    rounds = clock.rounds

    def predict(X: np.ndarray, m: int) -> np.ndarray:
        return est.predict(X, iteration_range=(0, m))

    return _points_from_prefixes(problem, cell, lambda m: rounds[m - 1][1], predict)


def fit_lightgbm(problem: Problem, cell: Cell, params: dict[str, Any]) -> list[dict[str, Any]]:
    import lightgbm as lgb

    assert cell.rate is not None and cell.leaves is not None
    top = max(m for m in cell.rounds if m is not None)
    settings = {
        "objective": "regression",
        "num_leaves": cell.leaves,
        "learning_rate": cell.rate,
        "num_threads": 1,
        "verbose": -1,
        "deterministic": True,
        "seed": 0,
        **params,
    }
    clock = Clock()
    per_round = np.zeros(top)  # CPU of round m summed over the r models
    boosters = []
    clock.start()
    data = lgb.Dataset(problem.X, label=problem.Y[:, 0], params=settings, free_raw_data=False)
    data.construct()  # inputs binned once for all r models
    setup = clock.stamp()[1]
    for col in range(problem.Y.shape[1]):
        data.set_label(problem.Y[:, col])
        stamps: list[float] = []
        start = clock.stamp()[1]
        boosters.append(
            lgb.train(
                settings,
                data,
                num_boost_round=top,
                callbacks=[lambda env, s=stamps: s.append(clock.stamp()[1])],
            )
        )
        per_round += np.diff(np.r_[start, stamps])
    cumulative = setup + np.cumsum(per_round)

    def predict(X: np.ndarray, m: int) -> np.ndarray:
        return np.column_stack([b.predict(X, num_iteration=m) for b in boosters])

    return _points_from_prefixes(problem, cell, lambda m: float(cumulative[m - 1]), predict)


def fit_hgb(problem: Problem, cell: Cell, params: dict[str, Any]) -> list[dict[str, Any]]:
    from sklearn.ensemble import HistGradientBoostingRegressor

    assert cell.rate is not None and cell.leaves is not None
    rounds = [m for m in cell.rounds if m is not None]
    fit_cpu = np.zeros(len(rounds))
    predict_cpu = np.zeros(len(rounds))
    rest_cpu = np.zeros(len(rounds))
    preds = [np.empty(problem.truth.shape) for _ in rounds]
    for col in range(problem.Y.shape[1]):
        est = HistGradientBoostingRegressor(
            learning_rate=cell.rate,
            max_leaf_nodes=cell.leaves,
            early_stopping=False,
            warm_start=True,
            random_state=0,
            **params,
        )
        for k, m in enumerate(rounds):  # grown checkpoint to checkpoint
            est.set_params(max_iter=m)
            _, cpu = _timed(lambda est=est, col=col: est.fit(problem.X, problem.Y[:, col]))
            fit_cpu[k:] += cpu  # the fit up to M includes every earlier stretch
            pred, cpu, rest = predict_held_out(problem, est.predict)
            preds[k][:, col] = pred[:, 0]
            predict_cpu[k] += cpu  # the model of M trees predicts: the cost a user pays
            rest_cpu[k] += rest
    points = []
    for k, m in enumerate(rounds):
        points.append(
            {
                "rounds": m,
                "fit_cpu": float(fit_cpu[k]),
                "predict_cpu": float(predict_cpu[k]),
                "predict_cpu_rest": float(rest_cpu[k]),
                **problem.metrics(preds[k], problem.truth),
            }
        )
    return points


def fit_sklearn_loop(problem: Problem, cell: Cell, params: dict[str, Any]) -> list[dict[str, Any]]:
    from sklearn.tree import DecisionTreeRegressor

    assert cell.rate is not None and cell.leaves is not None
    rounds = sorted(m for m in cell.rounds if m is not None)
    X, Y, Xq = problem.X, problem.Y, problem.Xq
    fit_cpu = predict_cpu = rest_cpu = 0.0
    points = []
    c0 = cpu_seconds()
    F = np.tile(Y.mean(axis=0), (len(X), 1))
    fit_cpu += cpu_seconds() - c0
    Fq = np.tile(Y.mean(axis=0), (len(Xq), 1))
    for m in range(1, rounds[-1] + 1):
        c0 = cpu_seconds()
        tree = DecisionTreeRegressor(max_leaf_nodes=cell.leaves, random_state=0, **params)
        tree.fit(X, Y - F)
        F += cell.rate * tree.predict(X).reshape(F.shape)
        fit_cpu += cpu_seconds() - c0
        pred, cpu, rest = predict_held_out(problem, tree.predict)
        Fq += cell.rate * pred
        predict_cpu += cpu
        rest_cpu += rest
        if m in rounds:
            points.append(
                {
                    "rounds": m,
                    "fit_cpu": fit_cpu,
                    "predict_cpu": predict_cpu,
                    "predict_cpu_rest": rest_cpu,
                    **problem.metrics(Fq, problem.truth),
                }
            )
    return points


#: Training rows (a seeded draw) on which kernel ridge's width and penalty are chosen: by a
#: Gaussian-process marginal-likelihood fit (krr_gp, bench.krr_kin40k's protocol), or by
#: KernelRidgeRegressor's own 5-fold cross-validation (gamma="cv", alpha="cv"), exact on
#: these rows (krr).
KRR_SEARCH_ROWS = 1000
#: Inputs up to which the GP fits one width per input (ARD); beyond, one width: the GP's
#: gradient holds rows^2 floats per width (Cora's 1,343 inputs: 10 GB).
KRR_ARD_MAX_INPUTS = 20


def krr_search_rows(problem: Problem) -> np.ndarray:
    """The KRR_SEARCH_ROWS seeded training rows on which kernel ridge's width and penalty
    are chosen (all of them when there are fewer)."""
    n = len(problem.X)
    return np.random.default_rng(0).choice(n, min(KRR_SEARCH_ROWS, n), replace=False)


def fit_krr(problem: Problem, cell: Cell, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Plain kernel ridge's points, one per M: okcore's KernelRidgeRegressor (RBF, an
    intercept) on all the training rows, Nystroem with D = M basis rows (exact when M >= N),
    its width and penalty chosen on KRR_SEARCH_ROWS seeded training rows
    (``params["hyperparameters"]``: "cv", KernelRidgeRegressor's own CV, ``gamma="cv"``
    and ``alpha="cv"``, as a scikit-learn user tunes KernelRidge; "auto", the width of
    ``gamma="auto"`` on those rows and lambda by the same CV; "gp", a Gaussian
    process's ARD widths and noise ratio, :func:`bench.krr_kin40k.gp_hyperparameters`, one
    width beyond KRR_ARD_MAX_INPUTS inputs). The problem's targets are regressed directly,
    as the other peers do. The search's CPU, paid once, is counted in every point's fit CPU
    (a user pays it) and recorded apart (``hyper_cpu``); an M whose D was fitted repeats
    that point."""
    from okcore import KernelRidgeRegressor

    n = len(problem.X)
    rows = krr_search_rows(problem)
    X_s, Y_s = problem.X[rows], problem.Y[rows]
    if params["hyperparameters"] == "gp":
        from bench.krr_kin40k import gp_hyperparameters

        ard = problem.X.shape[1] <= KRR_ARD_MAX_INPUTS
        y = Y_s[:, 0] if Y_s.shape[1] == 1 else Y_s
        hyper, hyper_cpu = _timed(lambda: gp_hyperparameters(X_s, y, seed=0, ard=ard))
        gamma: Any = hyper["gamma"] if ard else hyper["gamma"][0]
        alpha = hyper["alpha"]
    else:
        search = KernelRidgeRegressor(gamma=params["hyperparameters"], cv=5, random_state=0)
        _, hyper_cpu = _timed(lambda: search.fit(X_s, Y_s))
        gamma, alpha = search.ensemble_.gamma.tolist(), search.alpha_
    fitted: dict[int, dict[str, Any]] = {}  # D (M capped at the training rows) -> its point
    points = []
    for m in cell.rounds:
        assert m is not None
        d = min(m, n)
        if d in fitted:
            points.append({**fitted[d], "rounds": m})
            continue
        est = KernelRidgeRegressor(
            gamma=gamma, alpha=alpha, n_components=None if d == n else d, random_state=0
        )
        _, fit_cpu = _timed(lambda est=est: est.fit(problem.X, problem.Y))
        pred, predict_cpu, rest_cpu = predict_held_out(problem, est.predict)
        fitted[d] = {
            "rounds": m,
            "basis_vectors": d,
            "fit_cpu": hyper_cpu + fit_cpu,
            "hyper_cpu": hyper_cpu,
            "gamma": gamma,
            "alpha": alpha,
            "predict_cpu": predict_cpu,
            "predict_cpu_rest": rest_cpu,
            **problem.metrics(pred, problem.truth),
        }
        points.append(fitted[d])
    return points


def fit_average(problem: Problem, cell: Cell, params: dict[str, Any]) -> list[dict[str, Any]]:
    """One point: okcore's default and plain kernel ridge averaged with equal weights
    (``okcore.AveragedRegressor([OKBoostRegressor(), KernelRidgeRegressor(gamma="cv")])``,
    both one thread, seed 0), the problem's targets regressed directly as the peers do. The
    kernel ridge is exact and chooses its width and penalty by 5-fold CV on all the training
    rows (O(N^3) per fold and width: a few thousand rows)."""
    from okcore import AveragedRegressor, KernelRidgeRegressor, OKBoostRegressor

    OKBoostRegressor(n_estimators=2, n_jobs=1).fit(problem.X[:200], problem.Y[:200])  # compile
    average = AveragedRegressor(
        [
            OKBoostRegressor(n_jobs=1, random_state=0, **params),
            KernelRidgeRegressor(gamma="cv", random_state=0),
        ]
    )
    _, fit_cpu = _timed(lambda: average.fit(problem.X, problem.Y))
    pred, predict_cpu, rest_cpu = predict_held_out(problem, average.predict)
    return [
        {
            "rounds": int(average.estimators_[0].n_estimators_planned_),
            "fit_cpu": fit_cpu,
            "predict_cpu": predict_cpu,
            "predict_cpu_rest": rest_cpu,
            **problem.metrics(pred, problem.truth),
        }
    ]


FITTERS: dict[str, Callable[[Problem, Cell, dict[str, Any]], list[dict[str, Any]]]] = {
    "okcore": fit_okcore,
    "okcore_direct": fit_okcore_direct,
    "catboost": fit_catboost,
    "xgboost": fit_xgboost,
    "lightgbm": fit_lightgbm,
    "hgb": fit_hgb,
    "sklearn_loop": fit_sklearn_loop,
    "krr": fit_krr,
    "average": fit_average,
}


# --------------------------------------------------------------------------------------------
# The run: grid cells per configuration, frontiers, tables
# --------------------------------------------------------------------------------------------
def config_grid(
    name: str, base: dict[str, tuple], overrides: dict[str, dict[str, tuple]], quick: bool
) -> dict[str, tuple]:
    """The run's grid, then the configuration's own keys, then ``--set`` for that name."""
    grid = {**base, **CONFIGS[name].grid, **overrides.get(name, {})}
    if quick:  # a configuration's own long grid (early stopping, oblivious depths) shrinks too
        grid["rounds"] = tuple(
            m if m is None else min(m, max(QUICK_GRID["rounds"])) for m in grid["rounds"]
        )
        grid["rates"], grid["leaves"] = grid["rates"][:1], grid["leaves"][:1]  # one cell
    return grid


def cells(grid: dict[str, tuple], one_fit: bool = True) -> list[Cell]:
    rounds = tuple(sorted(grid["rounds"], key=lambda m: -1 if m is None else m))
    return [
        Cell(rounds, rate, leaves, one_fit) for rate in grid["rates"] for leaves in grid["leaves"]
    ]


def pareto(points: Sequence[dict[str, Any]], metric: str, maximize: bool) -> list[dict[str, Any]]:
    """The points that no cheaper (or equally cheap) point matches: ascending CPU, each
    better than every point before it."""
    sign = -1.0 if maximize else 1.0
    out: list[dict[str, Any]] = []
    for point in sorted(points, key=lambda q: (q["cpu"], sign * q[metric])):
        if not out or sign * point[metric] < sign * out[-1][metric]:
            out.append(point)
    return out


def best_within(
    points: Sequence[dict[str, Any]], metric: str, maximize: bool, budget: float
) -> dict[str, Any] | None:
    inside = [q for q in points if q["cpu"] <= budget]
    if not inside:
        return None
    return (max if maximize else min)(inside, key=lambda q: q[metric])


def setting(point: dict[str, Any]) -> str:
    """M / nu / leaves of a point (the estimator's defaults shown as such; kernel ridge's
    D basis vectors)."""
    if "basis_vectors" in point:
        return f"D={point['basis_vectors']}"
    parts = [
        f"M={point['rounds']}"
        + (
            f" (kept {point['trees_kept']})"
            if point.get("trees_kept") not in (None, point["rounds"])
            else ""
        ),
        f"nu={point['learning_rate']}",
        f"leaves={point['leaves']}",
    ]
    return ", ".join(parts)


def points_table(results: dict[str, list[dict[str, Any]]], metrics: Sequence[str]) -> str:
    lines = [
        "| method | M | nu | leaves | fit CPU s | predict CPU s | CPU s | "
        + " | ".join(metrics)
        + " | load before -> after |",
        "|---|---|---|---|---|---|---|" + "---|" * len(metrics) + "---|",
    ]
    for name, points in results.items():
        for q in points:
            kept = (
                f" (kept {q['trees_kept']})"
                if q.get("trees_kept") not in (None, q["rounds"])
                else ""
            )
            values = " | ".join(f"{q[k]:.4f}" for k in metrics)
            load = f"{q['load_before'][0]:.2f} -> {q['load_after'][0]:.2f}"
            lines.append(
                f"| {name} | {q['rounds']}{kept} | {q['learning_rate']} | {q['leaves']} "
                f"| {q['fit_cpu']:.2f} | {q['predict_cpu']:.2f} | {q['cpu']:.2f} | {values} | {load} |"
            )
    return "\n".join(lines)


def frontier_text(results: dict[str, list[dict[str, Any]]], metric: str, maximize: bool) -> str:
    lines = [f"### Pareto frontiers, {metric} ({'higher' if maximize else 'lower'} is better)", ""]
    for name, points in results.items():
        front = pareto(points, metric, maximize)
        steps = "; ".join(f"{q['cpu']:.2f} s: {q[metric]:.4f} ({setting(q)})" for q in front)
        lines.append(f"- {name}: {steps}")
    return "\n".join(lines)


def budget_table(
    results: dict[str, list[dict[str, Any]]], metric: str, maximize: bool, budgets: Sequence[float]
) -> str:
    """Best ``metric`` of each method within each CPU budget (— when no point fits)."""
    lines = [
        f"### Best {metric} within a CPU budget (s; fit + predict, one thread)",
        "",
        "| method | " + " | ".join(f"<= {b:g} s" for b in budgets) + " | best overall (CPU s) |",
        "|---|" + "---|" * (len(budgets) + 1),
    ]
    for name, points in results.items():
        if not points:
            continue
        cols = []
        for b in budgets:
            q = best_within(points, metric, maximize, b)
            cols.append("—" if q is None else f"{q[metric]:.4f}")
        top = best_within(points, metric, maximize, math.inf)
        assert top is not None
        lines.append(
            f"| {name} | "
            + " | ".join(cols)
            + f" | {top[metric]:.4f} ({top['cpu']:.1f} s; {setting(top)}) |"
        )
    return "\n".join(lines)


def render(payload: dict[str, Any]) -> str:
    """The budget tables (primary metric first), the frontiers and every point of a run's
    results (also of a saved JSON: ``--report``)."""
    results, primary, maximize = payload["results"], payload["primary"], set(payload["maximize"])
    metrics = [primary, *(m for m in payload["metrics"] if m != primary)]
    parts = [budget_table(results, m, m in maximize, BUDGETS) for m in metrics]
    parts.append(frontier_text(results, primary, primary in maximize))
    parts.append("### Every point\n\n" + points_table(results, payload["metrics"]))
    return "\n\n".join(parts)


def lscpu() -> dict[str, str]:
    """CPU model, CPU count, cores per socket and sockets, as lscpu reports them."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    keys = {"Model name", "CPU(s)", "Core(s) per socket", "Socket(s)", "Thread(s) per core"}
    return {
        k.strip(): v.strip()
        for k, _, v in (line.partition(":") for line in text.splitlines())
        if k.strip() in keys
    }


def parse_set(specs: Sequence[str] | None) -> dict[str, dict[str, tuple]]:
    """``["xgboost:rounds=300", "hgb:rates=0.1,0.2"]`` -> {"xgboost": {"rounds": (300,)}, ...}."""
    out: dict[str, dict[str, tuple]] = {}
    for spec in specs or ():
        name, _, rest = spec.partition(":")
        key, _, values = rest.partition("=")
        if name not in CONFIGS or key not in DEFAULT_GRID or not values:
            raise SystemExit(
                f"--set {spec!r}: expected CONFIG:rounds|rates|leaves=V1,V2 with a name of {sorted(CONFIGS)}"
            )
        cast = float if key == "rates" else int
        out.setdefault(name, {})[key] = tuple(cast(v) for v in values.split(","))
    return out


def make_problem(args: argparse.Namespace) -> Problem:
    if args.problem == "synthetic":
        if args.quick:
            return synthetic_problem(args.n or 300, 2000, p=10, r=5)
        return synthetic_problem(args.n or 4000, args.queries)
    if args.problem == "yeast":
        return yeast_problem(args.quick)
    if args.problem == "usps":
        return usps_problem(args.fold, args.quick)
    if args.problem == "cora":
        return cora_problem(args.factor_rank, args.fold, args.quick)
    return one_output_problem(args.problem, args.quick)


def measure_cell(problem: Problem, config_name: str, cell: Cell) -> dict[str, Any]:
    """Fit one cell of one configuration on one thread: its points, with the load average
    before and after, or the error that stopped it (the other cells still run)."""
    from threadpoolctl import threadpool_limits

    config = CONFIGS[config_name]
    before, when = load_avg(), time.strftime("%H:%M:%S")
    try:
        with threadpool_limits(1):
            points = FITTERS[config.family](problem, cell, config.params)
    except Exception as err:  # noqa: BLE001 - reported in the results
        return {"error": repr(err)[-2000:]}
    after = load_avg()
    for q in points:
        q.setdefault("learning_rate", cell.rate)
        q.setdefault("leaves", cell.leaves)
        q.update(
            cpu=q["fit_cpu"] + q["predict_cpu"],
            load_before=before,
            load_after=after,
            started=when,
            process=os.getpid(),
        )
    return {"points": points}


_WORKER_PROBLEM: list[Problem] = []


def _init_worker(args: argparse.Namespace) -> None:
    _WORKER_PROBLEM.append(make_problem(args))


def _worker_cell(config_name: str, cell: Cell) -> dict[str, Any]:
    return measure_cell(_WORKER_PROBLEM[0], config_name, cell)


def run(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--problem",
        choices=("synthetic", "yeast", "kin40k", "census", "usps", "cora"),
        default="synthetic",
    )
    parser.add_argument("--n", type=int, default=None, help="synthetic: training rows (4000)")
    parser.add_argument("--queries", type=int, default=100_000, help="synthetic: held-out queries")
    parser.add_argument("--fold", type=int, default=0, help="usps, cora: the protocol's fold")
    parser.add_argument(
        "--factor-rank", type=int, default=256, help="cora: columns of the output factor"
    )
    parser.add_argument(
        "--okcore-refits",
        action="store_true",
        help="okcore: one fit per point, as the first runs (default: smaller M from one fit)",
    )
    parser.add_argument(
        "--configs",
        nargs="+",
        choices=tuple(CONFIGS),
        default=list(CONFIGS),
        help="configurations to run, started in this order (put the longest first with --jobs)",
    )
    parser.add_argument("--rounds", type=int, nargs="+", default=None, help="boosting rounds M")
    parser.add_argument("--rates", type=float, nargs="+", default=None, help="learning rates")
    parser.add_argument("--leaves", type=int, nargs="+", default=None, help="leaves per tree")
    parser.add_argument(
        "--set",
        nargs="+",
        default=None,
        metavar="CONFIG:KEY=V1,V2",
        help="one configuration's grid (KEY: rounds, rates or leaves), e.g. xgboost:rounds=300",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="cells fitted at the same time, each in its own one-thread process (the CPU "
        "seconds of each are its own; the machine's load rises)",
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes and grid: a smoke run")
    parser.add_argument(
        "--report",
        type=Path,
        nargs="+",
        default=None,
        help="print the tables of saved results JSONs (of an interrupted run, or of runs of the "
        "same problem at the same time, as one table) and write them to the first one's .txt, "
        "or to <--name>.txt beside it",
    )
    parser.add_argument("--name", default=None, help="stem of the results files")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results folder (default bench/results; bench/out/quick with --quick)",
    )
    args = parser.parse_args(argv)
    if args.report is not None:
        return report(args.report, args.name)
    argv_list = list(argv if argv is not None else sys.argv[1:])
    base = dict(QUICK_GRID if args.quick else DEFAULT_GRID)
    for key in ("rounds", "rates", "leaves"):
        if getattr(args, key) is not None:
            base[key] = tuple(getattr(args, key))
    overrides = parse_set(args.set)
    problem = make_problem(args)
    name = args.name or f"frontier_{problem.name}" + ("_quick" if args.quick else "")
    out_dir = args.out or (REPO_ROOT / "bench" / ("out/quick" if args.quick else "results"))
    metrics = list(problem.metrics(problem.truth, problem.truth))
    info = {**machine(), "lscpu": lscpu(), "catboost": _version("catboost")}
    printed = Tee()
    started, cpu_started = time.time(), time.process_time()
    printed(f"# python -m bench.frontier {' '.join(argv_list)}")
    printed(
        f"# started {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; {info['lscpu'].get('Model name', info['cpu'])}, "
        f"{info['lscpu'].get('CPU(s)', info['nproc'])} CPUs; load average {load_avg()}; nice {os.nice(0)}; "
        f"okcore at {info['git']}; numpy {info['numpy']}, sklearn {info['sklearn']}, "
        f"lightgbm {info['lightgbm']}, xgboost {info['xgboost']}, catboost {info['catboost']}"
    )
    printed(f"# problem: {problem.description}")
    printed(
        f"# one thread everywhere; CPU s = process CPU of fit + predict of "
        f"{min(len(problem.Xq), problem.timed_queries or len(problem.Xq))} held-out rows "
        f"(error on all {len(problem.Xq)}); run grid {base}"
    )
    results: dict[str, list[dict[str, Any]]] = {}
    skipped: dict[str, str] = {}
    failed: dict[str, str] = {}
    grids: dict[str, dict[str, tuple]] = {}
    payload: dict[str, Any] = {
        "problem": problem.name,
        "description": problem.description,
        "metrics": metrics,
        "primary": problem.primary,
        "maximize": sorted(problem.maximize),
        "configs": {},
        "machine": info,
        "load_average_start": load_avg(),
        "grids": grids,
        "skipped": skipped,
        "failed": failed,
        "results": results,
    }

    def save() -> None:
        save_run(
            out_dir, name, ["bench.frontier", *argv_list], payload, printed, started, cpu_started
        )

    tasks: list[tuple[str, Cell]] = []
    for config_name in args.configs:
        config = CONFIGS[config_name]
        payload["configs"][config_name] = {
            "family": config.family,
            "params": config.params,
            "label": config.label,
        }
        if importlib.util.find_spec(REQUIRES[config.family]) is None:
            skipped[config_name] = (
                f"{REQUIRES[config.family]} not installed (pip install -e '.[bench]')"
            )
            printed(f"# skipped {config_name}: {skipped[config_name]}")
            continue
        grids[config_name] = grid = config_grid(config_name, base, overrides, args.quick)
        tasks += [(config_name, cell) for cell in cells(grid, not args.okcore_refits)]
    done: dict[int, dict[str, Any]] = {}

    def record(index: int, outcome: dict[str, Any]) -> None:
        config_name, cell = tasks[index]
        if "error" in outcome:
            failed[f"{config_name} nu={cell.rate} leaves={cell.leaves}"] = outcome["error"]
            printed(
                f"# FAILED {config_name} nu={cell.rate} leaves={cell.leaves}: {outcome['error']}"[
                    :300
                ]
            )
        done[index] = outcome
        for q in outcome.get("points", []):
            print(
                f"{time.strftime('%H:%M:%S')} {config_name} {setting(q)}: CPU {q['cpu']:.2f} s "
                f"(fit {q['fit_cpu']:.2f}), {problem.primary} {q[problem.primary]:.4f}, "
                f"load {q['load_after'][0]:.2f}",
                file=sys.stderr,
                flush=True,
            )
        results.clear()  # in the order of the table of configurations, whatever ended first
        order = list(CONFIGS)
        for i in sorted(done, key=lambda i: (order.index(tasks[i][0]), i)):
            results.setdefault(tasks[i][0], []).extend(done[i].get("points", []))
        save()

    if args.jobs == 1:
        for index, (config_name, cell) in enumerate(tasks):
            record(index, measure_cell(problem, config_name, cell))
    else:  # cells in worker processes, each building the problem once
        from concurrent.futures import ProcessPoolExecutor, as_completed
        from multiprocessing import get_context

        with ProcessPoolExecutor(
            args.jobs, mp_context=get_context("spawn"), initializer=_init_worker, initargs=(args,)
        ) as pool:
            futures = {
                pool.submit(_worker_cell, config_name, cell): index
                for index, (config_name, cell) in enumerate(tasks)
            }
            for future in as_completed(futures):
                record(futures[future], future.result())
    printed()
    printed(render(payload))
    printed()
    printed(
        f"load average at the end {load_avg()}; wall time {time.time() - started:.0f} s, "
        f"CPU time {time.process_time() - cpu_started:.0f} s; results in {out_dir / name}.json"
    )
    save()
    return payload


def report(paths: Sequence[Path], name: str | None = None) -> dict[str, Any]:
    """Tables of saved runs of one problem, merged (their configurations must differ); cells
    that had not ended when a run stopped are named as missing."""
    runs = [json.loads(path.read_text()) for path in paths]
    payload = {**runs[0], "results": {}, "grids": {}}
    head = [f"# tables re-made from {', '.join(path.name for path in paths)}"]
    for path, run_ in zip(paths, runs, strict=True):
        if run_["problem"] != payload["problem"] or set(run_["results"]) & set(payload["results"]):
            raise SystemExit(f"{path}: another problem, or configurations already reported")
        payload["results"].update(run_["results"])
        payload["grids"].update(run_["grids"])
        head += [
            f"# {path.name}: {run_['command']}",
            f"#   commit {run_.get('provenance', {}).get('commit', 'not recorded')}; "
            f"machine {run_['machine'].get('lscpu')}; load average at the start "
            f"{run_['load_average_start']}, at the last save {run_['load_average_end']}; wall "
            f"time {run_['wall_time_s']} s",
        ]
    head.append(f"# problem: {payload['description']}")
    for config, grid in payload["grids"].items():
        have = [(q["learning_rate"], q["leaves"]) for q in payload["results"].get(config, [])]
        missing = [  # None in a grid: the estimator's default, whatever it is
            (rate, leaves)
            for rate in grid["rates"]
            for leaves in grid["leaves"]
            if not any(rate in (None, a) and leaves in (None, b) for a, b in have)
        ]
        if missing:
            head.append(
                f"# not measured (the run was stopped first): {config} nu, leaves = {missing}"
            )
    order = list(CONFIGS)
    payload["results"] = dict(sorted(payload["results"].items(), key=lambda kv: order.index(kv[0])))
    text = "\n".join(head) + "\n\n" + render(payload) + "\n"
    print(text, end="")
    out = paths[0].with_name(f"{name}.txt") if name else paths[0].with_suffix(".txt")
    write_result(out, text)
    return payload


def _version(module: str) -> str | None:
    try:
        return str(getattr(__import__(module), "__version__", "?"))
    except ImportError:
        return None


if __name__ == "__main__":
    run()
