"""The default rules of OKBoost, in one place: each "auto" value (and each plain default chosen
by a measurement) as data -- its numbers, the measurement that chose them, where that
measurement is written up and when -- and the functions that resolve it at fit time.

``docs/defaults.md`` and the README's defaults table are generated from :data:`RULES`
(``python scripts/gen_defaults_page.py``; a test fails when they are out of date), so the
numbers written in the docs are the numbers the code uses.

"One output" in these rules means an output factor Phi of rank 1 (r = 1 column, see
:class:`~okcore.outputs.space.OutputSpace`), not a 1-D ``y``: a 1-D ``y`` with the linear
kernel has r = 1, but with a Gaussian kernel its factor has many columns (r > 1), and a
2-D ``Y`` whose columns are all equal has r = 1. Every rule below is O(1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .trees.oblivious import MAX_OBLIVIOUS_DEPTH

# ---------------------------------------------------------------- the numbers
#: Rounds of ``n_estimators="auto"`` (rule "n_estimators").
AUTO_N_ESTIMATORS_MIN_ROWS = 10_000
AUTO_N_ESTIMATORS_SMALL = 300
AUTO_N_ESTIMATORS_LARGE = 500
#: nu (rule "learning_rate").
DEFAULT_LEARNING_RATE = 0.1
#: J of a best-first tree when ``max_splits`` is None (rule "max_splits").
DEFAULT_MAX_SPLITS = 10
#: Depth of an oblivious tree when ``max_depth`` is None (rule "max_depth").
OBLIVIOUS_DEPTH_MANY_OUTPUTS = 4
OBLIVIOUS_DEPTH_ONE_OUTPUT = 6
OBLIVIOUS_DEPTH_ONE_OUTPUT_MAX = 10
ONE_OUTPUT_ROWS_PER_LEAF = 8
#: lambda of ``l2_regularization="auto"`` for oblivious trees (rule "l2_regularization").
OBLIVIOUS_L2_ONE_OUTPUT = 30.0
OBLIVIOUS_L2_MANY_OUTPUTS = 10.0
#: The fast split search of ``max_bins="auto"``, ``sketch_dim="auto"`` (rule "max_bins").
AUTO_FAST_MIN_WORK = 200_000
AUTO_MAX_BINS = 255
AUTO_SKETCH_DIM = 8
#: The patience of ``early_stopping=True`` when ``n_iter_no_change`` is None (rule
#: "early_stopping").
DEFAULT_N_ITER_NO_CHANGE = 10
#: Candidate features per node, also with ``splitter="random"`` (rule "max_features").
DEFAULT_MAX_FEATURES = 1.0
#: The order best-first leaves are split in (rule "leaf_order").
DEFAULT_LEAF_ORDER = "gain"
#: ``tree_type`` values: "auto" resolves to one of the other two (:func:`resolve_tree_type`).
TREE_TYPES = ("auto", "best-first", "oblivious")

# ------------------------------------------- what a task fits when no model is named
#: The automatic choice (:class:`~okcore.AutoRegressor`, task "regression with no model"):
#: its CPU budget, seconds, up to AUTO_BUDGET_ROWS rows (above: proportional to the rows).
AUTO_BUDGET_SECONDS = 60.0
AUTO_BUDGET_ROWS = 5_000
#: Fraction of the budget kept for the final refit on all rows.
AUTO_REFIT_RESERVE = 0.25
#: Successive halving: the factor between rungs, the smallest subsample, the most rungs.
AUTO_HALVING_FACTOR = 3
AUTO_MIN_ROWS = 400
AUTO_MAX_RUNGS = 3
#: Folds of the last rung's second validation (when the budget left affords it).
AUTO_REFINE_FOLDS = 5
#: Its portfolio, in order (:func:`okcore.auto.regression_candidates` builds each), and the
#: fraction of the training rows its inner validation holds out.
AUTO_CANDIDATES = (
    "okboost",
    "oblivious-d4",
    "oblivious-d6",
    "best-first-31",
    "ok3-et-boost",
    "kernel-ridge",
    "kernel-ridge-ard",
    "krr-boost",
)
AUTO_HOLDOUT = 0.2
#: The multi-label default (:class:`~okcore.MultiLabelClassifier` with no estimator): its
#: score map, the measure its label set maximises, thresholds by inner CV on that many folds,
#: and the step of the stacking weights.
MULTILABEL_SCORES = "label_sigmoid"
MULTILABEL_METRIC = "micro_f1"
MULTILABEL_THRESHOLD = "cv"
MULTILABEL_FOLDS = 3
MULTILABEL_STACK_STEP = 0.25
#: The bipartite default (:class:`~okcore.bipartite.BipartiteRegressor` with no model):
#: neighbours and decay of its interaction recovery and of WkNNIR.
BIPARTITE_NEIGHBORS, BIPARTITE_ETA = 7, 0.8
#: NRLMF's settings in it (the published ones, but for the ridge and neighbourhood weights
#: and the rank decay of a new vertex's neighbours).
BIPARTITE_NRLMF: Mapping[str, Any] = {
    "n_factors": 50, "positive_weight": 5.0, "lambda_rows": 0.1, "lambda_cols": 0.1,
    "alpha": 1.0, "beta": 1.0, "n_neighbors": 5, "eta": 0.5, "learning_rate": 0.5,
    "max_iter": 100,
}  # fmt: skip
#: Rank-average weights of its members (WkNNIR, recovered kernel ridge + Kronecker, NRLMF,
#: OK3-et + OKBoost), and for new rows x known columns instead (the first two do not score
#: that block).
BIPARTITE_WEIGHTS = (1.0, 1.0, 2.0, 1.0)
BIPARTITE_BLOCK_WEIGHTS: Mapping[str, tuple[float, ...]] = {"new_rows": (0.0, 0.0, 4.0, 1.0)}


# ---------------------------------------------------------------- the rules
def default_n_estimators(n_samples: int) -> int:
    """M of ``n_estimators="auto"`` for a fit on ``n_samples`` training rows (the rows given
    to ``fit``, before any early-stopping hold-out): AUTO_N_ESTIMATORS_SMALL below
    AUTO_N_ESTIMATORS_MIN_ROWS, else AUTO_N_ESTIMATORS_LARGE."""
    if n_samples < AUTO_N_ESTIMATORS_MIN_ROWS:
        return AUTO_N_ESTIMATORS_SMALL
    return AUTO_N_ESTIMATORS_LARGE


def resolve_tree_type(
    tree_type: str,
    *,
    max_splits: int | None,
    splitter: str,
    max_bins: Any,
    max_depth: int | None,
    sparse_inputs: bool = False,
) -> str:
    """The trees a fit grows: ``tree_type``, or for "auto" "oblivious" where no best-first
    tree size is given and oblivious trees apply (``max_splits=None``, ``splitter="best"``,
    ``max_bins`` not None, ``max_depth`` None or at most MAX_OBLIVIOUS_DEPTH, dense inputs),
    else "best-first"."""
    if tree_type != "auto":
        return str(tree_type)
    applies = (
        max_splits is None
        and splitter == "best"
        and max_bins is not None
        and (max_depth is None or max_depth <= MAX_OBLIVIOUS_DEPTH)
        and not sparse_inputs
    )
    return "oblivious" if applies else "best-first"


def default_oblivious_depth(rank: int | None, n_samples: int | None = None) -> int:
    """An oblivious tree's depth when ``max_depth`` is None: OBLIVIOUS_DEPTH_MANY_OUTPUTS for
    a factor of r > 1 columns; for r = 1 (or r not known yet: the larger tree)
    floor(log2(n_samples / ONE_OUTPUT_ROWS_PER_LEAF)) between OBLIVIOUS_DEPTH_ONE_OUTPUT and
    OBLIVIOUS_DEPTH_ONE_OUTPUT_MAX, the upper bound when n_samples is not known."""
    if rank is not None and rank > 1:
        return OBLIVIOUS_DEPTH_MANY_OUTPUTS
    if n_samples is None:
        return OBLIVIOUS_DEPTH_ONE_OUTPUT_MAX
    depth = int(n_samples // ONE_OUTPUT_ROWS_PER_LEAF).bit_length() - 1  # floor(log2)
    return min(max(depth, OBLIVIOUS_DEPTH_ONE_OUTPUT), OBLIVIOUS_DEPTH_ONE_OUTPUT_MAX)


def default_oblivious_l2(rank: int | None) -> float:
    """lambda of an oblivious tree with the squared loss under ``l2_regularization="auto"``:
    OBLIVIOUS_L2_ONE_OUTPUT for r = 1 (or r not known yet), OBLIVIOUS_L2_MANY_OUTPUTS for
    r > 1."""
    return OBLIVIOUS_L2_MANY_OUTPUTS if rank is not None and rank > 1 else OBLIVIOUS_L2_ONE_OUTPUT


def resolve_l2_regularization(
    l2_regularization: float | str, tree_type: str, loss: str, rank: int | None
) -> float:
    """lambda: ``l2_regularization``, or for "auto" :func:`default_oblivious_l2` for
    oblivious trees with the squared loss and 0 (the paper's leaf mean) otherwise."""
    if not isinstance(l2_regularization, str):
        return float(l2_regularization)
    if tree_type == "oblivious" and loss == "squared":
        return default_oblivious_l2(rank)
    return 0.0


def resolve_search(
    max_bins: int | str | None,
    sketch_dim: int | str | None,
    n_samples: int,
    rank: int,
    always_fast: bool = False,
) -> tuple[int | None, int | None]:
    """(max_bins, sketch_dim) to use: "auto" becomes (AUTO_MAX_BINS, AUTO_SKETCH_DIM) when
    n_samples x rank >= AUTO_FAST_MIN_WORK or ``always_fast`` (oblivious trees), else None
    (exact); a sketch only when it is narrower than the factor."""
    fast = always_fast or n_samples * rank >= AUTO_FAST_MIN_WORK
    if max_bins == "auto":
        max_bins = AUTO_MAX_BINS if fast else None
    if sketch_dim == "auto":
        sketch_dim = AUTO_SKETCH_DIM if fast and rank > AUTO_SKETCH_DIM else None
    return max_bins, sketch_dim  # type: ignore[return-value]


def resolve_refine_cuts(refine_cuts: bool | str, oblivious: bool, rank: int) -> bool:
    """Whether a histogram search refines its cuts: ``refine_cuts``, or for "auto" yes but
    for oblivious trees on one output column (r = 1)."""
    if isinstance(refine_cuts, str):  # "auto", the one string allowed
        return not (oblivious and rank == 1)
    return bool(refine_cuts)


def early_stopping_patience(early_stopping: bool | str, n_iter_no_change: int | None) -> int | None:
    """The patience a fit stops with, None when it does not stop early: never with
    ``early_stopping=False``; ``n_iter_no_change`` when given; else DEFAULT_N_ITER_NO_CHANGE
    for True and None (off) for "auto"."""
    if not isinstance(early_stopping, str) and not early_stopping:  # numpy's False too
        return None
    if n_iter_no_change is not None:
        return n_iter_no_change
    return None if isinstance(early_stopping, str) else DEFAULT_N_ITER_NO_CHANGE


# ---------------------------------------------------------------- the rules as data
@dataclass(frozen=True)
class Rule:
    """One default: the setting it is for, its value in the signature and in the paper
    preset, how it resolves (``rule``, whose ``{name}`` fields are filled from ``numbers``,
    the constants the resolving function reads), the measurement that chose the numbers,
    where it is written up (a section of docs/RESULTS.md) and when the numbers were chosen,
    and when to change the setting: ``when`` in one line, ``change_when`` with its numbers."""

    setting: str
    when: str
    default: str
    paper: str
    rule: str
    measured: str
    section: str
    date: str
    change_when: str
    numbers: Mapping[str, Any] = field(default_factory=dict)

    def rule_text(self) -> str:
        """``rule`` with its numbers filled in."""
        return self.rule.format(**self.numbers)


def _numbers() -> dict[str, dict[str, Any]]:
    """The constants each rule reads, by setting (read when the rules are rendered, so the
    page always shows the values in force)."""
    return {
        "n_estimators": {
            "small": AUTO_N_ESTIMATORS_SMALL,
            "large": AUTO_N_ESTIMATORS_LARGE,
            "rows": AUTO_N_ESTIMATORS_MIN_ROWS,
        },
        "learning_rate": {"nu": DEFAULT_LEARNING_RATE},
        "tree_type": {"deepest": MAX_OBLIVIOUS_DEPTH},
        "max_depth": {
            "many": OBLIVIOUS_DEPTH_MANY_OUTPUTS,
            "low": OBLIVIOUS_DEPTH_ONE_OUTPUT,
            "high": OBLIVIOUS_DEPTH_ONE_OUTPUT_MAX,
            "per_leaf": ONE_OUTPUT_ROWS_PER_LEAF,
        },
        "max_splits": {"J": DEFAULT_MAX_SPLITS},
        "l2_regularization": {
            "many": OBLIVIOUS_L2_MANY_OUTPUTS,
            "one": OBLIVIOUS_L2_ONE_OUTPUT,
        },
        "max_bins, sketch_dim": {
            "work": AUTO_FAST_MIN_WORK,
            "bins": AUTO_MAX_BINS,
            "k": AUTO_SKETCH_DIM,
        },
        "refine_cuts": {},
        "early_stopping": {"patience": DEFAULT_N_ITER_NO_CHANGE},
        "max_features": {"fraction": DEFAULT_MAX_FEATURES},
        "leaf_order": {"order": DEFAULT_LEAF_ORDER},
    }


_RULES = (
    Rule(
        setting="n_estimators",
        when="many rows and CPU to spare: 1000",
        default='"auto"',
        paper="500",
        rule="M = {small} below {rows:,} training rows, {large} from {rows:,} (the rows given "
        "to `fit`, before any early-stopping hold-out); the fitted `n_estimators_planned_` "
        "says which",
        measured="synthetic problem, 500 rounds against 300: 1.4-3.0 % lower MSE below "
        "10,000 rows (N = 4,000-8,000), 7.6-15 % from 16,000 rows, for 1.5-1.7 times the CPU; "
        "yeast (1,500 rows) worse with 500 (Hamming loss 0.1910 against 0.1889)",
        section="9.14",
        date="2026-11-25",
        change_when="many rows and CPU to spare: `n_estimators=1000` (synthetic N = 64,000: "
        "0.0849 against 0.0878 MSE, section 9.15)",
    ),
    Rule(
        setting="learning_rate",
        when="the error matters more than the time: 0.05 with `n_estimators=1000`",
        default="{nu}",
        paper="0.01",
        rule="nu = {nu}, the shrinkage of every tree",
        measured="best-first trees, M = 300: nu = 0.05 underfits the synthetic problem (0.748 "
        "(one seed) against 0.676 (the mean of three) at nu = 0.1, MSE), nu = 0.2 overfits "
        "from M = 100 (0.989)",
        section="9.5",
        date="2026-11-24",
        change_when="the error matters more than the time: `learning_rate=0.05, "
        "n_estimators=1000` (synthetic 0.547 against 0.676 MSE, about 3x the CPU)",
    ),
    Rule(
        setting="tree_type",
        when='`"best-first"` for leaf-wise growth or the paper\'s trees',
        default='"auto"',
        paper='"best-first"',
        rule='oblivious (symmetric) trees when `max_splits` is None, `splitter="best"`, '
        "`max_bins` is not None, `max_depth` is None or at most {deepest} and X is dense; "
        "else best-first trees; the fitted `tree_type_` says which",
        measured="oblivious depth 4 against best-first J = 10, M = 300: synthetic N = 4,000 "
        "0.330 against 0.676 MSE (three seeds), yeast 0.1912 against 0.1987 Hamming loss, "
        "census-house (one output) 0.334 against 0.374 NMSE",
        section="9.7",
        date="2026-11-25",
        change_when='`"best-first"` (or an int `max_splits`) for leaf-wise growth or the '
        "trees of the paper's protocols",
    ),
    Rule(
        setting="max_depth",
        when="small one-output data: 4",
        default="None",
        paper="None",
        rule="an oblivious tree's depth: {many} when the output factor has r > 1 columns; "
        "for one output column (r = 1) floor(log2(N / {per_leaf})) for N training rows, "
        "between {low} and {high} ({low} below 1,024 rows, {high} from 8,192); best-first "
        "trees: no depth limit",
        measured="many outputs, M = 300, three seeds: synthetic N = 4,000 depth 4 / 5 / 6 "
        "0.350 / 0.393 / 0.494 MSE at lambda 0, depth 4 / 5 0.330 / 0.371 at lambda 3 "
        "(section 9.7); one output, M = 300: kin40k (36,000 rows) depth "
        "6 / 8 / 10 0.147 / 0.079 / 0.046 NMSE, at 4,000 rows census-house best at depth 8 "
        "(0.375)",
        section="9.7, 9.11",
        date="2026-11-25",
        change_when="small one-output data: 4 (Friedman1, N = 300: 2.49 against 2.82 MSE)",
    ),
    Rule(
        setting="max_splits",
        when="best-first trees on one smooth output: 63 or more",
        default="None",
        paper="10",
        rule="best-first trees of J = {J} splits ({J} + 1 leaves); an int asks for "
        "best-first trees of that size",
        measured="best-first, M = 300: 8 and 16 leaves tie on the synthetic problem (0.682 / "
        "0.703 MSE) and on yeast, 32 leaves is worse (0.859)",
        section="9.4",
        date="2026-11-24",
        change_when="best-first trees on one smooth output: 63 or more (kin40k 0.111 NMSE "
        "with 64 leaves)",
    ),
    Rule(
        setting="l2_regularization",
        when="small, noisy multi-label data: 10-100; one smooth output, many rows: 3",
        default='"auto"',
        paper="0",
        rule="lambda of oblivious trees with the squared loss: {many:g} when the output "
        "factor has r > 1 columns, {one:g} for one output column (r = 1, deeper trees); "
        "0 (the paper's leaf mean) otherwise",
        measured="many outputs, lambda 10 against 3 (three seeds, M = 300): USPS 39.14 "
        "against 39.47 squared error, whole Cora AUC 0.8496 against 0.8444, synthetic "
        "N = 4,000 0.327 against 0.330 MSE, yeast level (section 9.12); one output, depth "
        "10: census-house 0.307 against 0.320 NMSE at lambda 30 against 3, kin40k 0.054 "
        "against 0.046 (section 9.11)",
        section="9.11, 9.12",
        date="2026-11-25",
        change_when="small, noisy multi-label data: 10-100; one smooth output with many "
        "rows: 3 (kin40k 0.046 against 0.054 NMSE)",
    ),
    Rule(
        setting="max_bins, sketch_dim",
        when="`None` for the exact search; a few thousand rows: `max_bins=64`",
        default='"auto"',
        paper="None (exact search)",
        rule="histograms of {bins} bins and a sketch of the residuals on {k} columns when N x r "
        ">= {work:,} (the sketch only when r > {k}), else the exact search; oblivious trees "
        "search histograms at every size, sketched when r > {k}; weighted fits (`sample_weight`, "
        "unknown outputs) search histograms of {bins} bins at every size; the fitted "
        "`max_bins_`, `sketch_dim_` say which",
        measured="synthetic N = 4,000, r = 50 (N x r = 200,000, the threshold's size), "
        "best-first, M = 300: 0.703 MSE in 4.5 s against the exact search's 0.887 in 16.3 s "
        "(3.6x less CPU); every paper protocol lies below the threshold; oblivious trees on "
        "the drug-target sets (95-223 columns): histograms and the sketch at every size, 5x "
        "less CPU for a higher AUROC (section 9.7)",
        section="9.4, 9.7",
        date="2026-11-24",
        change_when="`max_bins=None, sketch_dim=None` for the exact search at any size; on a "
        "few thousand rows `max_bins=64` fits 1.4-2.9x faster for about 1 % more error "
        "(section 9.17)",
    ),
    Rule(
        setting="refine_cuts",
        when="`False` to hold no raw inputs; `True` for a sharp step in one output",
        default='"auto"',
        paper="False (no bins)",
        rule="each chosen bin edge (an oblivious tree's: each level's) moves to the best "
        "exact cut inside the two bins around it, except in oblivious trees on one output "
        "column (r = 1)",
        measured="synthetic problem, binned / refined: N = 4,000 0.336 / 0.317 MSE, N = 8,000 "
        "0.253 / 0.208, N = 64,000 0.142 / 0.088 (0.143 and 0.106 level at 16,000 and "
        "32,000); one output (M = 500): kin40k 0.0416 / 0.0428 NMSE, census-house 0.2969 / "
        "0.2990, for 15-19 % (kin40k) and 8-15 % (census-house) more fit CPU",
        section="9.15",
        date="2026-11-25",
        change_when="`False` to keep no raw inputs during the fit (8 bytes per value); "
        "`True` to refine one-output oblivious trees too (a sharp step in one output)",
    ),
    Rule(
        setting="early_stopping",
        when="`True` when M may be far too large, or small noisy data",
        default='"auto"',
        paper="False",
        rule="on only when `n_iter_no_change` is given (10 % of the rows held out unless "
        "`eval_set` is given); `True` stops with a patience of {patience} rounds",
        measured="default trees, synthetic N = 16,000, three seeds, M = 300: 0.2145 MSE with "
        "it (299-300 of 300 trees kept: the held-out rows are the whole cost) against "
        "0.1590 without, at the same CPU",
        section="9.7",
        date="2026-11-25",
        change_when="`True` when M may be far too large or the data are small and noisy "
        "(best-first trees on yeast: 0.1970 against 0.1987 Hamming loss in 43 % of the CPU, "
        "section 9.5)",
    ),
    Rule(
        setting="max_features",
        when='signal spread over many inputs: `"sqrt"`',
        default="{fraction}",
        paper='None (sqrt(p) with `splitter="random"`)',
        rule='all p inputs are candidates at every node, also with `splitter="random"` '
        "(OK3-et + OKBoost)",
        measured="OK3-et + OKBoost, M = 300: synthetic (10 of 50 inputs informative) 1.042 "
        "MSE with all p against 3.683 with sqrt(p)",
        section="9.5",
        date="2026-11-24",
        change_when='signal spread over many inputs: `"sqrt"` (yeast 0.1964 in 0.5 s '
        "against 0.1978 in 2.2 s)",
    ),
    Rule(
        setting="leaf_order",
        when='OK3-et + OKBoost on similarity features: `"variance"`',
        default='"{order}"',
        paper='"variance"',
        rule="best-first trees split the leaf whose best split lowers the loss most",
        measured="synthetic N = 4,000, M = 300: 0.703 against 0.830 MSE for the paper's "
        "variance order; kin40k (16 leaves, M = 100) 0.430 against 0.547 NMSE",
        section="9.4",
        date="2026-11-24",
        change_when='OK3-et + OKBoost on similarity features: `"variance"` (drug-target GPCR '
        "AUROC 0.830 against 0.817)",
    ),
)


def rules() -> tuple[Rule, ...]:
    """The default rules, each with the numbers in force (the module's constants)."""
    numbers = _numbers()
    out = []
    for rule in _RULES:
        filled = dict(numbers[rule.setting])
        out.append(
            Rule(
                setting=rule.setting,
                when=rule.when,
                default=rule.default.format(**filled),
                paper=rule.paper,
                rule=rule.rule,
                measured=rule.measured,
                section=rule.section,
                date=rule.date,
                change_when=rule.change_when,
                numbers=filled,
            )
        )
    return tuple(out)


#: The settings with a rule, in the order the docs list them.
RULE_SETTINGS = tuple(rule.setting for rule in _RULES)


# ------------------------------------------- what a task fits when no model is named
@dataclass(frozen=True)
class TaskDefault:
    """What one task fits when the user names no model: the model (``fits``, in okcore and
    in the service), its rule with the numbers in force, the problems the rule was chosen on
    and those it is reported on (never the same), the decision record (a page of
    docs/results/) and its date, and how to get something else."""

    task: str
    fits: str
    rule: str
    chosen_on: str
    reported_on: str
    record: str
    date: str
    instead: str


def task_defaults() -> tuple[TaskDefault, ...]:
    """The task-level defaults, with the numbers in force (this module's constants, read
    when called)."""
    block = ", ".join(f"{w:g}" for w in BIPARTITE_BLOCK_WEIGHTS["new_rows"])
    return (
        TaskDefault(
            task="regression (output vectors with a kernel, or a Gram matrix)",
            fits='`AutoRegressor()`; the service\'s `POST /train` with no `model` ("auto")',
            rule=f"chooses among {len(AUTO_CANDIDATES)} candidates ("
            + ", ".join(f"`{name}`" for name in AUTO_CANDIDATES)
            + ") and the averages of the best two and three, by successive halving (factor "
            f"{AUTO_HALVING_FACTOR}, smallest rung {AUTO_MIN_ROWS} rows, at most "
            f"{AUTO_MAX_RUNGS} rungs) on a holdout of {AUTO_HOLDOUT:.0%} of the "
            f"training rows, the last rung validated again by {AUTO_REFINE_FOLDS} folds when "
            f"the budget left affords it; CPU budget {AUTO_BUDGET_SECONDS:g} s up to "
            f"{AUTO_BUDGET_ROWS:,} rows, proportionally more above, {AUTO_REFIT_RESERVE:.0%} "
            "of it kept for the final refit on all rows",
            chosen_on="Friedman #1, kin40k, the synthetic 50-output problem, USPS completion",
            reported_on="census-house, 8x8 digits completion, robot dynamics, a SARCOS-like "
            "problem, yeast (as regression): within 2 % of the best held-out error of any peer "
            "or okboost model in the same run, within the budget",
            record="results/auto-choice.md",
            date="2026-12-03",
            instead='`OKBoostRegressor()` (`"model": "okboost"`) for the documented booster '
            "(the rules above); a graph over the rows keeps `okboost` as the service's "
            "default (the automatic choice lost on Cora)",
        ),
        TaskDefault(
            task="multi-label (0/1 label rows)",
            fits='`MultiLabelClassifier()`; the service\'s `"task": "multilabel"` with no model',
            rule="the stack of kernel ridge (width and penalty by CV), OK3-et + OKBoost and "
            f"OK3 extra-trees, weighted by out-of-fold log-loss (steps of {MULTILABEL_STACK_STEP:g}); "
            f'scores `"{MULTILABEL_SCORES}"` (one logistic map per label on out-of-fold '
            f'scores); the label set by the `"{MULTILABEL_METRIC}"` thresholds '
            f'(`threshold="{MULTILABEL_THRESHOLD}"`, {MULTILABEL_FOLDS}-fold out-of-fold '
            "scores, the threshold calibrated probabilities call for)",
            chosen_on="two scikit-learn multi-label problems, Cora's papers with their "
            "neighbourhood's classes as labels, yeast's training genes alone",
            reported_on="MULAN yeast (test genes), three seeds, against the published bests",
            record="results/yeast-multilabel.md",
            date="2026-12-03",
            instead="`metric=` another measure at fit, or at `/predict` and `/evaluate` on the "
            "same model; `estimator=` one model",
        ),
        TaskDefault(
            task="bipartite networks (drug-target and the like)",
            fits='`BipartiteRegressor()`; the service\'s `"task": "bipartite"` with no model',
            rule="the rank average of WkNNIR (k = "
            f"{BIPARTITE_NEIGHBORS}, eta = {BIPARTITE_ETA:g}), kernel ridge on the recovered "
            "interactions with Kronecker kernel ridge for new pairs, NRLMF ("
            f"{BIPARTITE_NRLMF['n_factors']} factors, a new vertex from its "
            f"{BIPARTITE_NRLMF['n_neighbors']} nearest with decay {BIPARTITE_NRLMF['eta']:g}) "
            "and OK3-et + OKBoost on the recovered "
            "interactions, weighted "
            + ", ".join(f"{w:g}" for w in BIPARTITE_WEIGHTS)
            + f"; new rows x known columns weighted {block}",
            chosen_on="the GPCR and ion-channel sets of the Yamanishi gold standard",
            reported_on="the nuclear-receptor and enzyme sets, against the published methods "
            "on the same protocol",
            record="results/drug-target-methods.md",
            date="2026-12-03",
            instead="a one-sided estimator (`BipartiteRegressor(OKBoostRegressor(...))`, "
            '`"model"` in the service); `max_cpu_seconds` bounds the boosted member',
        ),
    )
