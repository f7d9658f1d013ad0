"""Multi-label yeast (MULAN "yeast", Elisseeff & Weston 2002): okcore's MultiLabelClassifier
over OKBoost and OK3 forests against scikit-learn forests on MULAN's split, with the
published RF-PCT row (Bogatinovski et al. 2022) as the reference.

Data ($OKBOOST_DATA/yeast_multilabel, see its SOURCE.md): 2,417 genes, 103 features, 14
labels; rows 917: are MULAN's training set (1,500 genes), rows :917 its test set. Features
are standardised with the training genes' means and deviations (trees are unaffected; the
RBF kernel wants comparable scales). Every threshold and sigmoid is chosen by inner 3-fold CV
on the 1,500 training rows only.

Methods (``default`` and ``previous_default`` once per ``--seeds`` value, default 0 1 2; the
seed reaches the wrapper's inner folds and its estimators):
- default: MultiLabelClassifier() with no setting (the stack of kernel ridge, OK3-et +
  OKBoost and OK3 extra-trees, per-label sigmoids, half the best micro-F1 as threshold),
  with two more rows from the same fit: ``thresholds_for("hamming_loss")`` and
  ``thresholds_for("macro_f1")`` (DERIVED);
- default_1202: MultiLabelClassifier() of 2026-12-02 (the average of OK3-et + OKBoost and
  OK3 extra-trees, one sigmoid, the window-mean threshold rule);
- previous_default: what MultiLabelClassifier() was before: OKBoostRegressor() defaults,
  clipped scores, the plain arg-max threshold;
- okboost_window: OKBoostRegressor() defaults with today's sigmoid scores and window rule;
- okboost_05: OKBoost, scores clipped, threshold 0.5 (what a user got before: the baseline);
- okboost: OKBoost, scores clipped, one threshold by inner CV maximising micro-F1;
- okboost_sigmoid: the same with the Platt sigmoid map (ranking measures of the raw scores);
- okboost_label: per-label thresholds maximising macro-F1;
- okboost_et: OK3-et + OKBoost, scores clipped, threshold by inner CV (micro-F1);
- krr: one exact kernel ridge regression with an RBF input kernel (Sun & Yao's width
  heuristic, gamma="auto"), alpha = 3 chosen on a 1,000 / 500 split of the training genes
  among 0.3, 1, 3, 10, 30 (ranking loss), threshold by inner CV (micro-F1);
- ok3_rf: random forest of OK3 trees (W^F Y label frequencies), threshold by inner CV;
- sk_rf_05: scikit-learn RandomForestClassifier (multi-output), predict_proba, threshold 0.5;
- sk_rf: scikit-learn RandomForestRegressor (multi-output) in the same MultiLabelClassifier;
- sk_et: scikit-learn ExtraTreesRegressor (multi-output) in the same MultiLabelClassifier;
- avg_et: the average (okcore.AveragedRegressor) of OK3-et + OKBoost and
  extra-trees of OK3 (300 trees, max_features sqrt), the average the study (below) selects
  on out-of-fold micro-F1, threshold by inner CV (micro-F1).

    python -m bench.yeast_multilabel           # MULAN split
    python -m bench.yeast_multilabel --quick   # CI smoke run (small models)
    python -m bench.yeast_multilabel --tune-krr 0.3 1 3 10 30   # the KRR alpha choice
    python -m bench.yeast_multilabel --study   # averages of members, decision rules
    python -m bench.yeast_multilabel --choosing --seeds 0   # the rules on other problems
    python -m bench.yeast_multilabel --balanced --seeds 0 1 2   # metric="balanced" there

The choosing study (``--choosing``) never reads yeast's test genes: the candidates of
MultiLabelClassifier() on four other problems (CHOOSING_PROBLEMS: two scikit-learn
make_multilabel_classification settings, Cora's papers labelled with their neighbours'
classes, yeast's training genes alone), each fitted on the classifier's inner folds and on
all training rows (cached in bench/out/multilabel_choice/), then score maps and threshold
rules chosen on the out-of-fold scores and scored on each problem's test rows, and the
thresholds' spread over bootstrap resamples of the out-of-fold rows.

The study (``--study``, bench/results/yeast_multilabel_study.txt) fits each member model
(STUDY_MEMBERS) once per inner fold of the training genes (the 3 folds of
MultiLabelClassifier, seed 0) and once on all of them, caches the out-of-fold and test scores
(bench/out/yeast_scores/, not committed), then scores every average of members, each with the
clipped and the sigmoid map, under four decision rules chosen on the out-of-fold scores:
one threshold maximising micro-F1, one minimising Hamming loss, the micro-F1 threshold plus
each gene's top label, and the top k labels with k = round(c sum_l p_l) (c chosen on micro-F1).
The row selected is the one with the best out-of-fold micro-F1 (ties: lower out-of-fold
ranking loss); the test genes only report. A threshold sweep on the test genes of the selected
average is printed as a diagnostic of the micro-F1 / Hamming trade-off, never used to choose.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.ensemble import ExtraTreesRegressor, RandomForestClassifier, RandomForestRegressor

from bench.common import Report, base_parser, data_dir, log, output_dirs, write_result
from okcore import (
    AveragedRegressor,
    KRRBoostRegressor,
    OK3ForestRegressor,
    OKBoostRegressor,
    metrics,
)
from okcore.model_selection import kfold
from okcore.multilabel import (
    THRESHOLD_GRID,
    MultiLabelClassifier,
    calibrated_thresholds,
    choose_thresholds,
    fit_sigmoid,
)

N_TEST = 917  # MULAN's yeast-test.arff rows come first in the file
#: Bogatinovski et al. 2022, RF-PCT on yeast (their 1450/967 split).
RF_PCT = {
    "hamming_loss": 0.197,
    "subset_accuracy": 0.181,
    "micro_f1": 0.682,
    "macro_f1": 0.425,
    "ranking_loss": 0.162,
    "one_error": 0.232,
}
MEASURES = list(metrics.MULTILABEL_METRICS)
SHORT = {
    "hamming_loss": "Hamming",
    "subset_accuracy": "subset acc",
    "micro_f1": "micro-F1",
    "macro_f1": "macro-F1",
    "ranking_loss": "rank loss",
    "one_error": "one-error",
    "coverage": "coverage",
    "label_ranking_average_precision": "LRAP",
}
LABELS = {
    "okboost_05": "OKBoost, threshold 0.5",
    "okboost": "OKBoost, threshold by inner CV (micro-F1)",
    "okboost_sigmoid": "OKBoost, sigmoid scores, threshold by inner CV",
    "okboost_label": "OKBoost, per-label thresholds by inner CV (macro-F1)",
    "okboost_et": "OK3-et + OKBoost, threshold by inner CV",
    "krr": "okcore KRR (one exact stage, RBF), threshold by inner CV",
    "ok3_rf": "OK3 random forest, threshold by inner CV",
    "sk_rf_05": "scikit-learn RandomForestClassifier, threshold 0.5",
    "sk_rf": "scikit-learn RandomForestRegressor, threshold by inner CV",
    "sk_et": "scikit-learn ExtraTreesRegressor, threshold by inner CV",
    "avg_et": "average of OK3-et + OKBoost and OK3 extra-trees (300), threshold by inner CV",
    "default": "MultiLabelClassifier() (no setting)",
    "default_micro": "the same fit, thresholds for micro-F1 (thresholds_for)",
    "default_hamming": "the same fit, thresholds for Hamming loss (thresholds_for)",
    "default_macro": "the same fit, per-label thresholds for macro-F1 (thresholds_for)",
    "default_1202": "MultiLabelClassifier() of 2026-12-02: OK3-et + OKBoost and OK3 "
    "extra-trees averaged, one sigmoid, window-mean threshold",
    "previous_default": "previous MultiLabelClassifier(): OKBoost defaults, clip, plain arg max",
    "okboost_window": "OKBoost defaults, sigmoid scores, window-mean threshold",
}
#: Methods run once per ``--seeds`` value (the wrapper's and the estimator's seed), as rows
#: "<method>@<seed>".
SEEDED = ("default", "default_1202", "previous_default", "okboost_window")
#: Rows derived from the ``default`` fit of the same seed: (metric, per_label) of
#: MultiLabelClassifier.thresholds_for, the thresholds MultiLabelClassifier(metric=...) with
#: the same seed would choose (the same inner fits; the weights and maps do not depend on it).
DERIVED = {
    "default_micro": ("micro_f1", False),
    "default_hamming": ("hamming_loss", False),
    "default_macro": ("macro_f1", True),
}
RUNNABLE = [m for m in LABELS if m not in DERIVED]
#: The best published value of each measure on MULAN yeast (lower is better for the losses).
PUBLISHED_BEST = {
    "hamming_loss": (0.193, "TREMLC"),
    "micro_f1": (0.682, "RF-PCT"),
    "macro_f1": (0.483, "CLR"),
    "ranking_loss": (0.161, "RFDTBR"),
}


def load_yeast() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, Y_train, X_test, Y_test) on MULAN's split."""
    import pandas as pd

    frame = pd.read_csv(data_dir() / "yeast_multilabel" / "yeast.csv.gz")
    X = frame[[c for c in frame.columns if c.startswith("Att")]].to_numpy(np.float64)
    Y = frame[[c for c in frame.columns if c.startswith("Class")]].to_numpy(np.int64)
    X = (X - X[N_TEST:].mean(0)) / X[N_TEST:].std(0)  # training genes' statistics
    return X[N_TEST:], Y[N_TEST:], X[:N_TEST], Y[:N_TEST]


class SklearnProba:
    """A fitted scikit-learn multi-output classifier seen as (scores, 0/1 rows at 0.5)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def fit(self, X: np.ndarray, Y: np.ndarray) -> SklearnProba:
        self.model.fit(X, Y)
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return np.column_stack([p[:, 1] for p in self.model.predict_proba(X)])

    def predict(self, X: np.ndarray) -> np.ndarray:
        return (self.predict_proba(X) >= 0.5).astype(int)


def make_method(method: str, quick: bool, seed: int = 0) -> Any:
    rounds, trees = (20, 10) if quick else (300, 300)
    if method == "default":
        return MultiLabelClassifier(random_state=seed)
    if method == "default_1202":
        members = study_members()
        forest = members["ok3_et"].set_params(random_state=seed)
        boost = members["okboost_et"].set_params(random_state=seed)
        return MultiLabelClassifier(
            AveragedRegressor([boost, forest]), scores="sigmoid", per_label=False,
            random_state=seed,
        )  # fmt: skip
    if method == "okboost_window":
        return MultiLabelClassifier(OKBoostRegressor(random_state=seed), random_state=seed)
    if method == "previous_default":
        return MultiLabelClassifier(
            OKBoostRegressor(random_state=seed), scores="clip", threshold_window=0.0,
            random_state=seed,
        )  # fmt: skip
    boost = OKBoostRegressor(
        n_estimators=rounds,
        learning_rate=0.05,
        max_splits=10,
        subsample=0.8,
        leaf_order="variance",  # the order section 8.2 of docs/RESULTS.md was measured with
        random_state=0,
    )
    if method == "okboost_05":
        return MultiLabelClassifier(boost, threshold=0.5)
    if method == "okboost":
        return MultiLabelClassifier(boost)
    if method == "okboost_sigmoid":
        return MultiLabelClassifier(boost, scores="sigmoid")
    if method == "okboost_label":
        return MultiLabelClassifier(boost, per_label=True, metric="macro_f1")
    if method == "okboost_et":
        return MultiLabelClassifier(boost.set_params(splitter="random", max_features="sqrt"))
    if method == "krr":
        krr = KRRBoostRegressor(
            n_estimators=1,
            subset_size=10**9,  # capped at N: one stage on every row, every row a basis vector
            n_basis=10**9,
            basis_selection="random",
            regularization="shrinkage",
            learning_rate=1.0,
            input_kernel="rbf",
            alpha=3.0,
            random_state=0,
        )
        return MultiLabelClassifier(krr)
    if method == "ok3_rf":
        forest = OK3ForestRegressor(n_estimators=trees, max_features="sqrt", random_state=0)
        return MultiLabelClassifier(forest)
    if method == "avg_et":
        members = study_members()
        return MultiLabelClassifier(AveragedRegressor([members["okboost_et"], members["ok3_et"]]))
    if method == "sk_rf_05":
        return SklearnProba(RandomForestClassifier(n_estimators=trees, random_state=0))
    if method == "sk_rf":
        return MultiLabelClassifier(
            RandomForestRegressor(n_estimators=trees, max_features="sqrt", random_state=0)
        )
    if method == "sk_et":
        return MultiLabelClassifier(
            ExtraTreesRegressor(n_estimators=trees, max_features="sqrt", random_state=0)
        )
    raise ValueError(f"unknown method {method!r}")


def study_members() -> dict[str, Any]:
    """The member models of the study (bench's OKBoost settings, 300-tree forests)."""
    boost = {"max_splits": 10, "subsample": 0.8, "random_state": 0}
    return {
        "okboost": OKBoostRegressor(n_estimators=300, learning_rate=0.05, **boost),
        "okboost_et": OKBoostRegressor(
            n_estimators=300, learning_rate=0.05, splitter="random", max_features="sqrt", **boost
        ),
        "okboost_et_long": OKBoostRegressor(
            n_estimators=1000, learning_rate=0.02, splitter="random", max_features="sqrt", **boost
        ),
        "krr": make_method("krr", False).estimator,
        "ok3_rf": OK3ForestRegressor(n_estimators=300, max_features="sqrt", random_state=0),
        "ok3_et": OK3ForestRegressor(
            n_estimators=300,
            splitter="random",
            bootstrap=False,
            max_features="sqrt",
            random_state=0,
        ),  # fmt: skip
    }


def member_scores(name: str, X: np.ndarray, Y: np.ndarray, X_test: np.ndarray) -> dict:
    """{"oof": out-of-fold scores of the training genes (MultiLabelClassifier's 3 inner folds),
    "test": scores of the test genes by the model fitted on all training genes}, cached."""
    from bench.common import REPO_ROOT

    cache = REPO_ROOT / "bench" / "out" / "yeast_scores" / f"{name}.npz"
    if cache.exists():
        return dict(np.load(cache))
    est, labels = study_members()[name], Y.astype(np.float64)
    start = time.process_time()
    oof = np.empty_like(labels)
    for train, test in kfold(len(X), 3, 0):
        model = type(est)(**est.get_params()).fit(X[train], labels[train])
        oof[test] = np.asarray(model.predict(X[test])).reshape(len(test), -1)
    full = type(est)(**est.get_params()).fit(X, labels)
    out = {"oof": oof, "test": np.asarray(full.predict(X_test)).reshape(len(X_test), -1)}
    log(f"{name}: {time.process_time() - start:.0f} CPU s")
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, **out)
    return out


def top_k(P: np.ndarray, k: np.ndarray) -> np.ndarray:
    """0/1 rows with each row's k[i] highest-scored labels."""
    ranks = np.argsort(np.argsort(-P, axis=1), axis=1)
    return ranks < np.clip(k, 0, P.shape[1])[:, None]


def decision_rules(oof: np.ndarray, test: np.ndarray, Y: np.ndarray) -> dict[str, Any]:
    """Each rule's (test decisions, choice, out-of-fold decisions), chosen on (Y, oof)."""
    rules: dict[str, Any] = {}
    for rule, metric in (
        ("threshold (micro-F1)", "micro_f1"),
        ("threshold (Hamming)", "hamming_loss"),
    ):
        t = choose_thresholds(Y.astype(bool), oof, metric=metric)[0]
        rules[rule] = (test >= t, f"t={t:.2f}", oof >= t)

    def with_top(P: np.ndarray, t: float) -> np.ndarray:
        return (P >= t) | top_k(P, np.ones(len(P), int))

    t1 = THRESHOLD_GRID[
        int(np.argmax([metrics.micro_f1(Y, with_top(oof, g)) for g in THRESHOLD_GRID]))
    ]
    rules["threshold + top label"] = (with_top(test, t1), f"t={t1:.2f}", with_top(oof, t1))

    def cardinality(P: np.ndarray, c: float) -> np.ndarray:
        return top_k(P, np.maximum(1, np.round(c * P.sum(1))).astype(int))

    cs = np.round(np.arange(0.7, 1.41, 0.05), 2)
    c = cs[int(np.argmax([metrics.micro_f1(Y, cardinality(oof, c)) for c in cs]))]
    rules["top k, k = round(c sum p)"] = (cardinality(test, c), f"c={c:.2f}", cardinality(oof, c))
    return rules  # fmt: skip


def study(args: Any, X: np.ndarray, Y: np.ndarray, X_test: np.ndarray, Y_test: np.ndarray) -> str:
    """Averages of members x score maps x decision rules (module docstring); the text."""
    names = args.members or list(study_members())
    scores = {n: member_scores(n, X, Y, X_test) for n in names}
    head = ("| members | map | rule | choice | OOF micro-F1 | OOF rank loss | micro-F1 | macro-F1 "
            "| Hamming | rank loss | subset acc | one-error | labels / gene |")  # fmt: skip
    lines = ["## yeast, averages of members and decision rules (choices on out-of-fold scores)\n",
             head, "| --- |" + " --- |" * 12]  # fmt: skip
    best: tuple[float, float, str, np.ndarray, np.ndarray] | None = None
    for r in range(1, len(names) + 1):
        for combo in itertools.combinations(names, r):
            oof = np.clip(np.mean([scores[n]["oof"] for n in combo], 0), 0, 1)
            test = np.clip(np.mean([scores[n]["test"] for n in combo], 0), 0, 1)
            a, b = fit_sigmoid(oof, Y)
            maps = {
                "clip": (oof, test),
                "sigmoid": (1 / (1 + np.exp(-(a * oof + b))), 1 / (1 + np.exp(-(a * test + b)))),
            }
            for map_name, (o, t) in maps.items():
                for rule, (D, choice, oof_D) in decision_rules(o, t, Y).items():
                    row = [metrics.micro_f1(Y, oof_D), metrics.ranking_loss(Y, o),
                           metrics.micro_f1(Y_test, D), metrics.macro_f1(Y_test, D),
                           metrics.hamming_loss(Y_test, D), metrics.ranking_loss(Y_test, t),
                           metrics.subset_accuracy(Y_test, D), metrics.one_error(Y_test, t)]  # fmt: skip
                    lines.append(f"| {' + '.join(combo)} | {map_name} | {rule} | {choice} | "
                                 + " | ".join(f"{v:.4f}" for v in row) + f" | {D.sum(1).mean():.2f} |")  # fmt: skip
                    key = (row[0], -row[1])
                    if map_name == "clip" and (best is None or key > best[:2]):
                        best = (*key, " + ".join(combo), o, t)
    assert best is not None
    _, _, chosen, oof, test = best
    lines += [f"\nSelected by out-of-fold micro-F1 (ties: out-of-fold ranking loss): {chosen}\n",
              f"## diagnostic only: threshold sweep of {chosen} (clip) on the training genes' "
              "out-of-fold scores and on the test genes\n",
              "| threshold | OOF micro-F1 | OOF Hamming | test micro-F1 | test Hamming | test macro-F1 |",
              "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for t in np.round(np.arange(0.28, 0.52, 0.02), 2):
        lines.append(f"| {t:.2f} | {metrics.micro_f1(Y, oof >= t):.4f} | {metrics.hamming_loss(Y, oof >= t):.4f} "
                     f"| {metrics.micro_f1(Y_test, test >= t):.4f} | {metrics.hamming_loss(Y_test, test >= t):.4f} "
                     f"| {metrics.macro_f1(Y_test, test >= t):.4f} |")  # fmt: skip
    return "\n".join(lines)


#: The problems the multi-label rules were chosen on (``--choosing``): never yeast's test rows.
CHOOSING_PROBLEMS = ("synth_a", "synth_b", "cora_nbhd", "yeast_train")
#: scikit-learn make_multilabel_classification settings (2,400 rows: 1,500 train, 900 test).
SYNTHETIC = {
    "synth_a": {"n_features": 60, "n_classes": 14, "n_labels": 4, "length": 50, "random_state": 11},
    "synth_b": {"n_features": 40, "n_classes": 8, "n_labels": 2, "length": 30, "random_state": 12},
}
CHOOSING_MEMBERS = ("krr", "okboost_et", "ok3_et")
#: (name, score map, decision rule) of the choosing study's rows.
CHOOSING_ROWS = [
    (model, cal, rule)
    for model in ("krr", "okboost_et + ok3_et", "stack")
    for cal in ("sigmoid", "label_sigmoid")
    for rule in ("micro", "micro_half", "hamming", "hamming_05", "macro", "macro_half")
]


def _standardise(X_fit: np.ndarray, X_other: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mu, sd = X_fit.mean(0), X_fit.std(0)
    sd[sd == 0] = 1.0
    return (X_fit - mu) / sd, (X_other - mu) / sd


def choosing_problem(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, Y_train, X_test, Y_test) of a choosing problem: two scikit-learn
    make_multilabel_classification settings; Cora's papers (words in at least 10 papers) with
    the classes of the paper and of the papers it cites or is cited by as labels (7 labels),
    1,500 seeded train rows; yeast's training genes only (rows 917:), 1,000 / 500 seeded."""
    if name in SYNTHETIC:
        from sklearn.datasets import make_multilabel_classification

        X, Y = make_multilabel_classification(
            n_samples=2400, allow_unlabeled=False, **SYNTHETIC[name]
        )
        X_fit, X_other = _standardise(X[:1500].astype(float), X[1500:].astype(float))
        return X_fit, Y[:1500], X_other, Y[1500:]
    if name == "cora_nbhd":
        from bench.network_completion import load_citation

        data = load_citation("cora")
        classes = np.unique(data["labels"])
        own = (data["labels"][:, None] == classes[None, :]).astype(int)
        Y = own.copy()
        for i, j in data["edges"]:
            Y[i] |= own[j]
            Y[j] |= own[i]
        X = data["X"].astype(float)
        X = X[:, X.sum(0) >= 10]
        order = np.random.default_rng(7).permutation(len(X))
        X_fit, X_other = _standardise(X[order[:1500]], X[order[1500:]])
        return X_fit, Y[order[:1500]], X_other, Y[order[1500:]]
    if name == "yeast_train":
        X, Y, _, _ = load_yeast()  # the training genes only
        order = np.random.default_rng(7).permutation(len(X))
        return X[order[:1000]], Y[order[:1000]], X[order[1000:]], Y[order[1000:]]
    raise ValueError(f"unknown choosing problem {name!r}")


def choosing_members(seed: int) -> dict[str, Any]:
    """The candidates of the study: MultiLabelClassifier's default candidates (the forest
    with 100 trees)."""
    from okcore import KernelRidgeRegressor

    return {
        "krr": KernelRidgeRegressor(gamma="cv", random_state=seed),
        "okboost_et": OKBoostRegressor(
            splitter="random", max_features="sqrt", n_estimators=300, learning_rate=0.05,
            max_splits=10, subsample=0.8, random_state=seed,
        ),
        "ok3_et": OK3ForestRegressor(
            n_estimators=100, splitter="random", bootstrap=False, max_features="sqrt",
            random_state=seed,
        ),
    }  # fmt: skip


def choosing_scores(name: str, seed: int, member: str) -> dict[str, np.ndarray]:
    """Out-of-fold (3 folds of ``kfold(N, 3, seed)``, MultiLabelClassifier's) and test raw
    scores of one member on one choosing problem, cached in bench/out/multilabel_choice/."""
    from bench.common import REPO_ROOT
    from okcore.meta import clone

    cache = REPO_ROOT / "bench" / "out" / "multilabel_choice" / f"{name}_s{seed}_{member}.npz"
    if cache.exists():
        return dict(np.load(cache))
    X, Y, X_test, Y_test = choosing_problem(name)
    est, labels = choosing_members(seed)[member], Y.astype(np.float64)
    start = time.process_time()
    oof = np.empty_like(labels)
    for train, test in kfold(len(X), 3, seed):
        model = clone(est).fit(X[train], labels[train])
        oof[test] = np.asarray(model.predict(X[test])).reshape(len(test), -1)
    full = np.asarray(clone(est).fit(X, labels).predict(X_test)).reshape(len(X_test), -1)
    out = {"oof": oof, "test": full, "Y": Y, "Yte": Y_test, "cpu": time.process_time() - start}
    log(f"{name} seed {seed} {member}: {out['cpu']:.0f} CPU s")
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, **out)
    return out


def choosing_problem_scores(name: str, seed: int) -> tuple[np.ndarray, np.ndarray, list, list]:
    """(Y, Y_test, out-of-fold raw scores, test raw scores) of every CHOOSING_MEMBERS member
    on one choosing problem (:func:`choosing_scores`)."""
    runs = {m: choosing_scores(name, seed, m) for m in CHOOSING_MEMBERS}
    Y, Y_test = runs["krr"]["Y"].astype(float), runs["krr"]["Yte"]
    raws = [runs[m]["oof"] for m in CHOOSING_MEMBERS]
    tests = [runs[m]["test"] for m in CHOOSING_MEMBERS]
    return Y, Y_test, raws, tests


def half_best_f1(Y: np.ndarray, P: np.ndarray, per_label: bool) -> np.ndarray:
    """Thresholds F*/2: half the best F1 over the grid, of all entries pooled (micro) or of
    each label (macro); the threshold maximising F1 on calibrated probabilities is half the
    best F1 (Lipton, Elkan & Narayanaswamy 2014)."""
    from okcore.multilabel import label_curves

    if per_label:
        return np.round(label_curves(Y, P, "macro_f1").max(axis=1) / 2, 2)
    best = max(metrics.micro_f1(Y, P >= t) for t in THRESHOLD_GRID)
    return np.full(Y.shape[1], np.round(best / 2, 2))


def choosing_rule(rule: str, Y: np.ndarray, P: np.ndarray) -> np.ndarray:
    """The thresholds of one decision rule, chosen on out-of-fold (Y, P)."""
    if rule == "micro":
        return choose_thresholds(Y, P, metric="micro_f1", window=0.05)
    if rule == "hamming":
        return choose_thresholds(Y, P, metric="hamming_loss", window=0.05)
    if rule == "macro":
        return choose_thresholds(Y, P, metric="macro_f1", per_label=True, window=0.05)
    if rule == "hamming_05":
        return np.full(Y.shape[1], 0.5)
    return half_best_f1(Y, P, per_label=rule == "macro_half")


def choosing(seeds: Sequence[int]) -> str:
    """The choosing study's text: every (model, map, rule) of CHOOSING_ROWS on every choosing
    problem, mean over ``seeds`` of the test measures, and the spread of the mean threshold."""
    from okcore.multilabel import map_scores, score_map, stack_weights

    values: dict[tuple, list[dict[str, float]]] = {}
    for name in CHOOSING_PROBLEMS:
        for seed in seeds:
            Y, Y_test, raws, tests = choosing_problem_scores(name, seed)
            models = {
                "krr": (raws[0], tests[0], None),
                "okboost_et + ok3_et": ((raws[1] + raws[2]) / 2, (tests[1] + tests[2]) / 2, None),
            }
            for cal in ("sigmoid", "label_sigmoid"):
                w, _ = stack_weights(raws, Y, cal)
                oof = sum(wi * r for wi, r in zip(w, raws, strict=True))
                test = sum(wi * r for wi, r in zip(w, tests, strict=True))
                models[f"stack {cal}"] = (oof, test, w)
            for model, cal, rule in CHOOSING_ROWS:
                key = f"stack {cal}" if model == "stack" else model
                oof, test, w = models[key]
                maps = score_map(oof, Y, cal)
                P, T = map_scores(maps, oof), map_scores(maps, test)
                t = choosing_rule(rule, Y.astype(bool), P)
                D = T >= t
                row = {
                    "hamming": metrics.hamming_loss(Y_test, D),
                    "micro": metrics.micro_f1(Y_test, D),
                    "macro": metrics.macro_f1(Y_test, D),
                    "rank": metrics.ranking_loss(Y_test, T),
                    "t": float(t.mean()),
                    "w_krr": -1.0 if w is None else float(w[0]),
                }
                values.setdefault((name, model, cal, rule), []).append(row)
    lines = [
        "## Multi-label rules on the choosing problems (test rows; mean over seeds "
        f"{', '.join(map(str, seeds))}; t spread = max - min of the mean threshold over seeds)\n",
        "| problem | model | map | rule | Hamming | micro-F1 | macro-F1 | rank loss | t (mean) "
        "| t spread | KRR weight |",
        "| --- |" + " --- |" * 10,
    ]
    for (name, model, cal, rule), rows in values.items():
        mean = {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}
        spread = max(r["t"] for r in rows) - min(r["t"] for r in rows)
        weight = "—" if mean["w_krr"] < 0 else f"{mean['w_krr']:.2f}"
        lines.append(
            f"| {name} | {model} | {cal} | {rule} | {mean['hamming']:.4f} | {mean['micro']:.4f} "
            f"| {mean['macro']:.4f} | {mean['rank']:.4f} | {mean['t']:.3f} | {spread:.3f} "
            f"| {weight} |"
        )
    return "\n".join(lines + ["", bootstrap_spread(seeds[0])])


#: The rules whose thresholds :func:`bootstrap_spread` resamples: (label, metric, per_label, rule).
SPREAD_RULES = (
    ("micro-F1, plain arg max", "micro_f1", False, "window0"),
    ("micro-F1, window mean (+-0.05)", "micro_f1", False, "window"),
    ("micro-F1, half the best F1", "micro_f1", False, "calibrated"),
    ("macro-F1 per label, window mean (+-0.05)", "macro_f1", True, "window"),
    ("macro-F1 per label, half the best F1", "macro_f1", True, "calibrated"),
)


def bootstrap_spread(seed: int, n_resamples: int = 20) -> str:
    """How much each threshold rule moves with the rows: the stack of the candidates (per-label
    sigmoids) on each choosing problem, its out-of-fold rows resampled with replacement
    ``n_resamples`` times (the map refitted on each resample), the standard deviation of each
    label's threshold over the resamples, averaged over labels."""
    from okcore.multilabel import map_scores, score_map, stack_weights

    head = " | ".join(label for label, *_ in SPREAD_RULES)
    lines = [
        f"## Threshold spread over {n_resamples} bootstrap resamples of the out-of-fold rows "
        f"(seed {seed}; standard deviation, mean over labels)\n",
        f"| problem | {head} |",
        "| --- |" + " --- |" * len(SPREAD_RULES),
    ]
    for name in CHOOSING_PROBLEMS:
        Y, _, raws, _ = choosing_problem_scores(name, seed)
        w, _ = stack_weights(raws, Y, "label_sigmoid")
        oof = sum(wi * r for wi, r in zip(w, raws, strict=True))
        rng = np.random.default_rng(0)
        found: dict[str, list[np.ndarray]] = {label: [] for label, *_ in SPREAD_RULES}
        for _ in range(n_resamples):
            rows = rng.integers(0, len(Y), len(Y))
            Yb, ob = Y[rows], oof[rows]
            P = map_scores(score_map(ob, Yb, "label_sigmoid"), ob)
            for label, metric, per_label, rule in SPREAD_RULES:
                found[label].append(
                    choose_thresholds(
                        Yb.astype(bool), P, metric=metric, per_label=per_label,
                        window=0.0 if rule == "window0" else 0.05,
                        rule="calibrated" if rule == "calibrated" else "window",
                    )
                )  # fmt: skip
        cells = [f"{np.std(found[label], axis=0).mean():.4f}" for label, *_ in SPREAD_RULES]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: The weights (micro-F1, macro-F1, Hamming loss) of metric="balanced" tried by ``--balanced``.
BALANCED_GRID = [(1.0, a, b) for a in (0.5, 1.0, 2.0) for b in (0.5, 1.0, 2.0)]


def balanced_choice(seeds: Sequence[int]) -> str:
    """The choice of metric="balanced" and its weights on the choosing problems (never yeast's
    test genes): the stack of the candidates with per-label sigmoids (the default's model)
    under each measure's own calibrated thresholds (micro-F1: half the best micro-F1; the
    Hamming loss: 0.5; macro-F1: half each label's best F1) and under the balanced rule with
    each weight of BALANCED_GRID, chosen on the out-of-fold scores and scored on each problem's
    test rows. A rule's regret on a measure is how far it is from that measure's own rule (same
    problem and seed, the measure's units); the table gives the mean over ``seeds`` and the
    largest of the three regrets, and the spread (max - min over seeds, largest over labels) of
    the thresholds."""
    from okcore.multilabel import balanced_thresholds, map_scores, score_map, stack_weights

    rules: dict[str, Any] = {
        "micro-F1 (half the best micro-F1)": lambda Y, P: calibrated_thresholds(
            Y, P, "micro_f1", False
        ),
        "Hamming loss (0.5)": lambda Y, P: np.full(Y.shape[1], 0.5),
        "macro-F1 (half each label's best F1)": lambda Y, P: calibrated_thresholds(
            Y, P, "macro_f1", True
        ),
    }

    def balanced(weights: tuple[float, float, float]) -> Any:
        def rule(Y: np.ndarray, P: np.ndarray) -> np.ndarray:
            start = calibrated_thresholds(Y, P, "micro_f1", False)
            return balanced_thresholds(P, start, weights=weights)

        return rule

    for w in BALANCED_GRID:
        rules[f"balanced {w[0]:g} / {w[1]:g} / {w[2]:g}"] = balanced(w)
    own = dict(zip(("micro", "hamming", "macro"), rules, strict=False))
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for name in CHOOSING_PROBLEMS:
        for seed in seeds:
            Y, Y_test, raws, tests = choosing_problem_scores(name, seed)
            w, _ = stack_weights(raws, Y, "label_sigmoid")
            oof = sum(wi * r for wi, r in zip(w, raws, strict=True))
            test = sum(wi * r for wi, r in zip(w, tests, strict=True))
            maps = score_map(oof, Y, "label_sigmoid")
            P, T = map_scores(maps, oof), map_scores(maps, test)
            for rule, thresholds in rules.items():
                t = thresholds(Y.astype(bool), P)
                D = T >= t
                found.setdefault((name, rule), []).append({
                    "micro": metrics.micro_f1(Y_test, D),
                    "hamming": metrics.hamming_loss(Y_test, D),
                    "macro": metrics.macro_f1(Y_test, D),
                    "t": t,
                })  # fmt: skip
    lines = [
        '## metric="balanced" on the choosing problems (stack, per-label sigmoids; test rows; '
        f"mean over seeds {', '.join(map(str, seeds))})\n",
        "| problem | rule | Hamming | micro-F1 | macro-F1 | regret micro-F1 | regret Hamming "
        "| regret macro-F1 | largest regret | t spread |",
        "| --- |" + " --- |" * 9,
    ]
    largest: dict[str, list[float]] = {}
    for name in CHOOSING_PROBLEMS:
        base = {k: [r[k] for r in found[(name, rule)]] for k, rule in own.items()}
        for rule in rules:
            rows = found[(name, rule)]
            regret = [
                float(np.mean([base["micro"][i] - r["micro"] for i, r in enumerate(rows)])),
                float(np.mean([r["hamming"] - base["hamming"][i] for i, r in enumerate(rows)])),
                float(np.mean([base["macro"][i] - r["macro"] for i, r in enumerate(rows)])),
            ]
            largest.setdefault(rule, []).append(max(regret))
            mean = {k: float(np.mean([r[k] for r in rows])) for k in ("hamming", "micro", "macro")}
            spread = float(np.ptp([r["t"] for r in rows], axis=0).max())
            lines.append(
                f"| {name} | {rule} | {mean['hamming']:.4f} | {mean['micro']:.4f} "
                f"| {mean['macro']:.4f} | {regret[0]:+.4f} | {regret[1]:+.4f} | {regret[2]:+.4f} "
                f"| {max(regret):.4f} | {spread:.2f} |"
            )
    lines += [
        "\n## Largest regret, mean over the problems\n",
        "| rule | " + " | ".join(CHOOSING_PROBLEMS) + " | mean |",
        "| --- |" + " --- |" * (len(CHOOSING_PROBLEMS) + 1),
    ]
    for rule, values in largest.items():
        cells = " | ".join(f"{v:.4f}" for v in values)
        lines.append(f"| {rule} | {cells} | {np.mean(values):.4f} |")
    return "\n".join(lines)


def evaluate(Y: np.ndarray, scores: np.ndarray, decisions: np.ndarray) -> dict[str, float]:
    out = {}
    for name, (function, takes_scores, _) in metrics.MULTILABEL_METRICS.items():
        out[name] = function(Y, scores if takes_scores else decisions)
    out["labels_per_gene"] = float(decisions.sum(1).mean())
    return out


def tune_krr(X: np.ndarray, Y: np.ndarray, alphas: Sequence[float], seed: int) -> None:
    """Print the validation measures of the KRR for each alpha on a seeded 1,000 / 500 split
    of the training genes (the test genes are not read)."""
    order = np.random.default_rng(seed).permutation(len(X))
    fit, val = order[:1000], order[1000:]
    for alpha in alphas:
        model = make_method("krr", False).estimator.set_params(alpha=alpha)
        S = model.fit(X[fit], Y[fit].astype(float)).predict(X[val])
        best = max(metrics.micro_f1(Y[val], S >= t) for t in np.arange(0.2, 0.6, 0.02))
        print(f"alpha {alpha:g}: ranking loss {metrics.ranking_loss(Y[val], S):.4f}, "
              f"one-error {metrics.one_error(Y[val], S):.3f}, best micro-F1 {best:.3f}")  # fmt: skip


def run(argv: Sequence[str] | None = None) -> Report | None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+", default=None, choices=RUNNABLE)
    parser.add_argument("--tune-krr", nargs="+", type=float, default=None, metavar="ALPHA")
    parser.add_argument("--study", action="store_true", help="averages and decision rules")
    parser.add_argument("--members", nargs="+", default=None, help="members of the study")
    parser.add_argument(
        "--choosing", action="store_true", help="the rules on the choosing problems (not yeast)"
    )
    parser.add_argument(
        "--balanced", action="store_true", help='metric="balanced" on the choosing problems'
    )
    parser.add_argument(
        "--seeds", nargs="+", type=int, default=[0, 1, 2], help="seeds of the SEEDED methods"
    )
    args = parser.parse_args(argv)
    # a quick run leaves out the seeded methods (full-size models, three seeds)
    methods = args.methods or [m for m in RUNNABLE if not (args.quick and m in SEEDED)]
    X_train, Y_train, X_test, Y_test = load_yeast()
    studies = {  # a flag -> (its printed study, the result's default name)
        "study": (lambda: study(args, X_train, Y_train, X_test, Y_test), "yeast_multilabel_study"),
        "balanced": (lambda: balanced_choice(args.seeds), "multilabel_balanced_choice"),
        "choosing": (lambda: choosing(args.seeds), "multilabel_choosing"),
    }
    for flag, (run_study, default_name) in studies.items():
        if getattr(args, flag):
            text = run_study()
            out_dir, _ = output_dirs(args)
            write_result(out_dir / f"{args.name or default_name}.txt", text + "\n")
            print(text)
            return None
    if args.tune_krr:
        tune_krr(X_train, Y_train, args.tune_krr, args.seed)
        return None
    if args.quick:
        X_train, Y_train = X_train[:300], Y_train[:300]
    report = Report(
        name=args.name or ("yeast_multilabel_quick" if args.quick else "yeast_multilabel"),
        argv=["bench.yeast_multilabel", *(argv if argv is not None else sys.argv[1:])],
        settings={
            "methods": methods,
            "n_train": len(X_train),
            "n_test": len(X_test),
            "quick": args.quick,
        },  # fmt: skip
        labels=dict(LABELS),
    )
    runs = [
        (f"{m}@{seed}", m, seed) if m in SEEDED else (m, m, 0)
        for m in methods
        for seed in (args.seeds if m in SEEDED else [0])
    ]
    derived_rows: list[str] = []
    for method, kind, seed in runs:
        model = make_method(kind, args.quick, seed)
        start = time.process_time()
        model.fit(X_train, Y_train)
        scores, decisions = model.predict_proba(X_test), model.predict(X_test)
        cpu = time.process_time() - start
        row = evaluate(Y_test, scores, decisions)
        if isinstance(model, MultiLabelClassifier):
            report.extra.setdefault("thresholds", {})[method] = model.thresholds_.tolist()
            raw = model.decision_function(X_test)  # the ranking before the [0, 1] map
            row["raw_ranking_loss"] = metrics.ranking_loss(Y_test, raw)
        report.add(method, **row, cpu_s=cpu)
        if kind == "default":
            for derived, (metric, per_label) in DERIVED.items():
                model.thresholds_ = model.thresholds_for(metric, per_label)
                extra = evaluate(Y_test, scores, model.predict(X_test))
                name = f"{derived}@{seed}"
                report.extra["thresholds"][name] = model.thresholds_.tolist()
                report.add(name, **extra, cpu_s=cpu)
                derived_rows.append(name)
        log(f"{method:16s} micro-F1 {row['micro_f1']:.3f} macro-F1 {row['macro_f1']:.3f} "
            f"Hamming {row['hamming_loss']:.3f} rank loss {row['ranking_loss']:.3f} ({cpu:.0f} CPU s)")  # fmt: skip
        # after every method: a stopped run keeps its rows
        save(report, args, [r[0] for r in runs] + derived_rows)
    print(save(report, args, [r[0] for r in runs] + derived_rows))
    return report


def save(report: Report, args: Any, methods: list[str]) -> str:
    """Write the JSON and the text table of the rows so far; return the text."""
    out_dir, _ = output_dirs(args)
    text = render(report, [m for m in methods if m in report.rows]) + "\n" + report.timing() + "\n"
    report.save(out_dir)
    write_result(out_dir / f"{report.name}.txt", text)
    return text


def render(report: Report, methods: list[str]) -> str:
    head = " | ".join(SHORT[m] for m in MEASURES)
    lines = [
        f"## yeast, MULAN split ({report.settings['n_train']} train / "
        f"{report.settings['n_test']} test genes)\n",
        f"| method | {head} | labels / gene | CPU s |",
        "| --- |" + " --- |" * (len(MEASURES) + 2),
    ]
    for method in methods:
        row = report.rows[method]
        vals = " | ".join(f"{row[m][0]:.3f}" for m in MEASURES)
        kind, _, seed = method.partition("@")
        label = LABELS[kind] + (f", seed {seed}" if seed else "")
        lines.append(
            f"| {label} | {vals} | {row['labels_per_gene'][0]:.2f} | {row['cpu_s'][0]:.0f} |"
        )
    ref = " | ".join(f"{RF_PCT[m]:.3f}" if m in RF_PCT else "—" for m in MEASURES)
    lines.append(f"| RF-PCT (published, 1450/967 split) | {ref} | — | — |")
    best = " | ".join(
        f"{PUBLISHED_BEST[m][0]:.3f} ({PUBLISHED_BEST[m][1]})" if m in PUBLISHED_BEST else "—"
        for m in MEASURES
    )
    lines.append(f"| best published per measure | {best} | — | — |")
    return "\n".join(lines)


if __name__ == "__main__":
    run()
