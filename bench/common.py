"""Shared protocol code for the paper's experiments: data paths, the five OK3/OKBoost methods,
J selection by inner cross-validation, feature-space metrics from prediction weights, reporting.

Nothing here knows about a particular data set's numbers: every figure that reaches
docs/RESULTS.md is computed by a script and printed (and saved as JSON in ``bench/results/``).
Every results file a script writes goes through :func:`write_result`, which stamps it with
:func:`provenance` (commit, uncommitted changes, date, machine, load).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.model_selection import KFold

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO_ROOT / "bench" / "results"
FIGURES_DIR = REPO_ROOT / "docs" / "figures"

# The paper's Table 1 (nu = 0.01, M = 500), restated in docs/math.md section 5.
PAPER = {
    "friedman1": {
        "ok3": 11.203,
        "ok3_bagging": 5.089,
        "ok3_et": 5.990,
        "okboost": 3.589,
        "okboost_et": 3.349,
    },
    "image_err_phi": {
        "ok3": 1.0434,
        "ok3_bagging": 0.5442,
        "ok3_et": 0.5170,
        "okboost": 0.5241,
        "okboost_et": 0.5093,
    },
    "image_err_y": {
        "ok3": 1.0399,
        "ok3_bagging": 0.8643,
        "ok3_et": 0.8169,
        "okboost": 0.8318,
        "okboost_et": 0.8071,
    },
    "network_err_phi": {
        "ok3": 1.6928,
        "ok3_bagging": 0.8824,
        "ok3_et": 0.7955,
        "okboost": 0.8730,
        "okboost_et": 0.8169,
    },
    "network_auc": {
        "ok3": 0.6001,
        "ok3_bagging": 0.7100,
        "ok3_et": 0.7846,
        "okboost": 0.7033,
        "okboost_et": 0.7811,
    },
}
# Only Friedman1 has a published standard deviation in the notes (OK3-et + OKBoost).
PAPER_SD = {("friedman1", "okboost_et"): 0.355}

METHOD_LABELS = {
    "ok3": "OK3 single tree",
    "ok3_bagging": "OK3 + bagging (100)",
    "ok3_et": "OK3 + extra-trees (100)",
    "okboost": "OK3 + OKBoost",
    "okboost_et": "OK3-et + OKBoost",
}
OKCORE_METHODS = tuple(METHOD_LABELS)
# Variants outside Table 1: extra-trees splits drawing all p features (K = p, the usual
# extra-trees default for regression) instead of okcore's sqrt(p).
VARIANT_LABELS = {
    "ok3_et_all": "OK3 + extra-trees (100), K = p",
    "okboost_et_all": "OK3-et + OKBoost, K = p",
}
BOOSTED = ("okboost", "okboost_et", "okboost_et_all")

# J grids for OKBoost (the paper searches [1, 40]; a grid keeps each script within 30 minutes on
# 2 shared cores). Friedman1 trees are cheap: 10 values; the image and network problems use
# coarser grids over the same range (a fit there costs 10-100 times more).
J_GRID = (1, 2, 3, 5, 7, 10, 15, 20, 30, 40)


def data_dir() -> Path:
    """Folder of the shared data sets: $OKBOOST_DATA, else ``../shared/data`` next to the repo."""
    env = os.environ.get("OKBOOST_DATA")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "data"
    if not path.is_dir():
        raise FileNotFoundError(
            f"data folder {path} not found: set OKBOOST_DATA to the shared data folder"
        )
    return path


# --------------------------------------------------------------------------------------------
# The five methods of Table 1, built from okcore
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BoostConfig:
    """Budgets of the paper's Table 1 (M, nu), the J grid and forest sizes."""

    n_estimators: int = 500
    learning_rate: float = 0.01
    j_grid: tuple[int, ...] = J_GRID
    n_trees: int = 100
    inner_folds: int = 5


def make_okcore(method: str, max_splits: int | None = None, *, seed: int, cfg: BoostConfig) -> Any:
    """A fresh, unfitted okcore estimator for one of the five methods of Table 1.

    Single tree: fully grown (no size selection), our reading of the paper (its Err on
    Friedman1, 11.2, is what a fully grown regression tree gets). Forests: fully grown trees,
    bagging = bootstrap + exact split search; extra-trees = no bootstrap, random cut-points with
    sqrt(p) candidates (``..._all``: all p). OKBoost: ``max_splits`` = J, leaves split
    best-first by variance (the paper's order), no early stopping. The parameters whose
    estimator defaults changed since these protocols were measured are pinned here.
    """
    from okcore import OK3ForestRegressor, OK3Regressor, OKBoostRegressor

    if method == "ok3":
        return OK3Regressor(random_state=seed)
    if method == "ok3_bagging":
        return OK3ForestRegressor(
            n_estimators=cfg.n_trees, bootstrap=True, splitter="best", random_state=seed
        )
    candidates = {"max_features": 1.0 if method.endswith("_all") else None}
    if method in ("ok3_et", "ok3_et_all"):
        return OK3ForestRegressor(
            n_estimators=cfg.n_trees,
            bootstrap=False,
            splitter="random",
            random_state=seed,
            **candidates,
        )
    if method in BOOSTED:
        return OKBoostRegressor(
            n_estimators=cfg.n_estimators,
            learning_rate=cfg.learning_rate,
            max_splits=max_splits,
            splitter="best" if method == "okboost" else "random",
            leaf_order="variance",
            early_stopping=False,
            random_state=seed,
            **candidates,
        )
    raise ValueError(f"unknown method {method!r}")


# --------------------------------------------------------------------------------------------
# Protocol
# --------------------------------------------------------------------------------------------
FitScore = Callable[[Any, np.ndarray, np.ndarray], Any]


def select_by_inner_cv(
    make: Callable[[Any], Any],
    grid: Sequence[Any],
    fit_score: FitScore,
    idx: np.ndarray,
    *,
    n_splits: int = 5,
    seed: int = 0,
    criterion: str | None = None,
    maximize: bool = False,
) -> tuple[Any, dict[str, Any]]:
    """Pick the grid value with the best mean inner-CV score on the rows ``idx``.

    ``make(value)`` builds an unfitted estimator, ``fit_score(est, train_rows, test_rows)`` fits
    it and returns a loss, or a dict of scores of which ``criterion`` decides (``maximize`` for
    scores such as AUC). Ties go to the earlier grid value.
    Returns (best value, {str(value): mean score}) or, with dict scores,
    (best value, {score name: {str(value): mean score}}).
    """
    folds = list(KFold(n_splits, shuffle=True, random_state=seed).split(idx))
    curves: dict[str, dict[str, float]] = {}
    for value in grid:
        scores = [fit_score(make(value), idx[a], idx[b]) for a, b in folds]
        for key in scores[0] if isinstance(scores[0], dict) else [None]:
            vals = [sc[key] if key is not None else sc for sc in scores]
            curves.setdefault(str(key), {})[str(value)] = float(np.mean(vals))
    curve = curves[str(criterion)]
    sign = -1.0 if maximize else 1.0
    best = min(grid, key=lambda v: sign * curve[str(v)])
    return best, (curves if criterion is not None else curve)


def learning_folds(n: int, n_folds: int, seed: int, *, small_learning_set: bool):
    """Outer CV splits as (learning rows, test rows).

    ``small_learning_set=True`` is the paper's image protocol: each fold in turn is the
    learning set (200 of 1000) and the other folds the test set (800); otherwise usual k-fold.
    """
    for a, b in KFold(n_folds, shuffle=True, random_state=seed).split(np.arange(n)):
        yield (b, a) if small_learning_set else (a, b)


def weight_errors(
    W: np.ndarray, K_train: np.ndarray, K_cross: np.ndarray, k_diag: np.ndarray
) -> dict[str, np.ndarray]:
    """Feature-space errors of predictions F(x_q) = sum_i W[q, i] phi(y_i).

    Parameters
    ----------
    W : ndarray of shape (Q, N), prediction weights over the N training outputs.
    K_train : ndarray of shape (N, N), k(y_i, y_j) among training outputs.
    K_cross : ndarray of shape (Q, N), k(y_q, y_i) between true test outputs and training outputs.
    k_diag : ndarray of shape (Q,), k(y_q, y_q).

    Returns per-query arrays: ``err_phi`` = ||phi(y_q) - F(x_q)||^2, ``preimage`` = the index
    argmin_j K_jj - 2 (W K)_qj (the paper's eq. 8 over training outputs) and ``err_y`` =
    ||phi(y_q) - phi(y_preimage)||^2.
    """
    WK = W @ K_train
    err_phi = k_diag - 2.0 * np.einsum("qi,qi->q", W, K_cross) + np.einsum("qi,qi->q", WK, W)
    pre = np.argmin(np.diag(K_train)[None, :] - 2.0 * WK, axis=1)
    rows = np.arange(len(pre))
    err_y = k_diag + np.diag(K_train)[pre] - 2.0 * K_cross[rows, pre]
    return {"err_phi": err_phi, "err_y": err_y, "preimage": pre}


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1; 0 for a single value)."""
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


# --------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------
@dataclass
class Report:
    """Per-method, per-fold results of one script run; printed as markdown and saved as JSON."""

    name: str
    argv: list[str]
    settings: dict[str, Any]
    rows: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=lambda: {**METHOD_LABELS, **VARIANT_LABELS})
    started: float = field(default_factory=time.time)
    cpu_started: float = field(default_factory=time.process_time)

    def add(self, method: str, **metrics: float) -> None:
        for key, value in metrics.items():
            self.rows.setdefault(method, {}).setdefault(key, []).append(float(value))

    def table(self, metric: str, paper_key: str | None, *, digits: int = 4) -> str:
        """Markdown table: method, paper, ours (mean +- sd over folds), ours - paper.

        The paper's network figures are those of its yeast enzyme network, not of the graph
        measured here: their column says so.
        """
        head = "paper, yeast enzymes" if (paper_key or "").startswith("network") else "paper"
        lines = [
            f"| method | {head} | ours (mean ± sd) | ours − paper | fit time / fold (s) |",
            "| --- | --- | --- | --- | --- |",
        ]
        for method, metrics in self.rows.items():
            if metric not in metrics:
                continue
            m, s = mean_sd(metrics[metric])
            paper = PAPER.get(paper_key or "", {}).get(method)
            psd = PAPER_SD.get((paper_key or "", method))
            ptxt = (
                "—" if paper is None else f"{paper:.{digits}f}" + (f" ± {psd:.3f}" if psd else "")
            )
            diff = "—" if paper is None else f"{m - paper:+.{digits}f}"
            t = metrics.get("fit_time")
            ttxt = "—" if t is None else f"{np.mean(t):.2f}"
            label = self.labels.get(method, method)
            lines.append(
                f"| {label} | {ptxt} | {m:.{digits}f} ± {s:.{digits}f} | {diff} | {ttxt} |"
            )
        return "\n".join(lines)

    def timing(self) -> str:
        """Wall and CPU time since the start (the machine is shared: CPU time is the steadier)."""
        return (
            f"wall time {time.time() - self.started:.0f} s, "
            f"CPU time {time.process_time() - self.cpu_started:.0f} s"
        )

    def save(self, out_dir: Path) -> Path:
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{self.name}.json"
        payload = {
            "name": self.name,
            "command": "python -m " + " ".join(self.argv),
            "settings": self.settings,
            "machine": machine_info(),
            "wall_time_s": round(time.time() - self.started, 1),
            "cpu_time_s": round(time.process_time() - self.cpu_started, 1),
            "results": {
                m: {
                    k: {"values": v, "mean": mean_sd(v)[0], "sd": mean_sd(v)[1]}
                    for k, v in metrics.items()
                }
                for m, metrics in self.rows.items()
            },
            "extra": self.extra,
        }
        return write_result(path, payload)


def _json_default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o))


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (platform.processor() elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict[str, Any]:
    """CPU model, core count and library versions, for the results page."""
    info: dict[str, Any] = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    for mod in ("scipy", "sklearn", "numba", "okcore"):
        try:
            info[mod] = getattr(__import__(mod), "__version__", "?")
        except ImportError:
            info[mod] = None
    return info


# The code whose uncommitted changes make a result "dirty" (results and scratch output excluded).
PROVENANCE_PATHS = ("okcore", "service", "bench", ":(exclude)bench/results", ":(exclude)bench/out")


def _git(root: Path, *args: str) -> str | None:
    """Output of ``git -C root args`` (stripped), or None without git or outside a checkout."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def provenance(root: Path = REPO_ROOT) -> dict[str, Any]:
    """Where and when a result was measured: the stamp :func:`write_result` puts on every file.

    ``commit`` is ``git rev-parse HEAD`` (None outside a git checkout), ``dirty`` whether
    okcore/, service/ or bench/ (results excluded) had uncommitted changes (None without git),
    ``date`` the UTC time, ``machine`` the CPU model and core count, ``load_average`` the 1, 5
    and 15 minute load averages when the file was written.
    """
    commit = _git(root, "rev-parse", "HEAD")
    status = (
        _git(root, "status", "--porcelain", "--", *PROVENANCE_PATHS) if commit is not None else None
    )
    return {
        "commit": commit,
        "dirty": None if status is None else bool(status),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count()},
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def provenance_line(stamp: dict[str, Any]) -> str:
    """The stamp as the one comment line that heads a printed (text) results file."""
    commit = stamp["commit"] or "unknown"
    dirty = {True: " + uncommitted changes", False: "", None: " (dirty unknown)"}[stamp["dirty"]]
    load = ", ".join(f"{x:.2f}" for x in stamp["load_average"])
    machine = stamp["machine"]
    return (
        f"# commit {commit}{dirty}; {stamp['date']}; {machine['cpu']}, "
        f"{machine['cores']} cores; load average {load}"
    )


def write_result(path: Path, content: dict[str, Any] | str) -> Path:
    """Write one results file stamped with :func:`provenance`; the only way scripts write them.

    A dict is written as JSON with the stamp under ``"provenance"``; text (a printed report)
    gets the stamp as its first line (:func:`provenance_line`). Parent folders are created.
    """
    stamp = provenance()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, dict):
        record = {"provenance": stamp, **{k: v for k, v in content.items() if k != "provenance"}}
        path.write_text(json.dumps(record, indent=1, default=_json_default) + "\n")
    else:
        path.write_text(provenance_line(stamp) + "\n" + content)
    return path


def base_parser(description: str) -> argparse.ArgumentParser:
    """Options shared by every script."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "--quick",
        action="store_true",
        help="tiny settings (CI): same code paths, meaningless numbers",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--j-grid",
        type=int,
        nargs="+",
        default=None,
        help="J values for OKBoost's inner CV (default: the script's grid)",
    )
    p.add_argument(
        "--name", default=None, help="stem of the results file (default: the problem's name)"
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where to write the JSON results (default bench/results; bench/out/quick with --quick)",
    )
    p.add_argument(
        "--fig-dir",
        type=Path,
        default=None,
        help="where to write figures (default docs/figures; bench/out/quick with --quick)",
    )
    return p


def output_dirs(args: argparse.Namespace) -> tuple[Path, Path]:
    """(results dir, figures dir); quick runs never overwrite the committed results."""
    quick_dir = REPO_ROOT / "bench" / "out" / "quick"
    out = args.out or (quick_dir if args.quick else RESULTS_DIR)
    figs = args.fig_dir or (quick_dir if args.quick else FIGURES_DIR)
    return out, figs


def log(msg: str) -> None:
    """Progress line on stderr with a wall-clock stamp (results go to stdout)."""
    print(time.strftime("%H:%M:%S"), msg, file=sys.stderr, flush=True)
