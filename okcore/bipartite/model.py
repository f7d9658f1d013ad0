"""Bipartite network prediction from two one-sided output-kernel models (the "local" approach
of Schrynemackers, Wehenkel, Babu & Geurts 2015; two-step learning of Pahikkala et al. 2014
and Stock et al. 2018).

A bipartite network between row vertices (e.g. targets) and column vertices (e.g. drugs) is
an interaction matrix Y (n_rows, n_cols). Each side is a multi-output regression:
- the row model learns x_row -> y_i, the row's interaction profile over the known columns
  (an okcore estimator on (X_rows, Y) with an output kernel on profiles, linear by default);
- the column model learns x_col -> y^j, the column's profile over the known rows, on
  (X_cols, Y^T): exactly the estimator fitted on the transposed problem.
Scores for a pair are the W^F-weighted training profiles (paper eq. 5-6): a new row r against
the known columns scores W_row(r) Y, a new column c against the known rows W_col(c) Y^T.

New row x new column (neither side known) combines both models (``new_pairs``):
- "two-step": S(r, c) = W_row(r) Y W_col(c)^T, the column model's weights over the known
  columns applied to the row model's predicted profile of r (equivalently the row model's
  weights applied to c's predicted profile: the two orders agree). With one kernel ridge
  regression per side this is two-step kernel ridge regression (Pahikkala et al. 2014; Stock
  et al. 2018, who relate it to Kronecker KRR), here with the mean profile as offset; for
  trees the second step keeps the trees grown on the known profiles. No fit at prediction
  time: O(q n_cols (n_rows + q')) given W.
- "refit": two-step with the second model refitted, as Pahikkala et al. and Schrynemackers
  et al. describe it: a fresh column model learns the predicted profiles of the new rows,
  P = W_row(R) Y (q columns of outputs), from the known columns' inputs and predicts them for
  the new columns; symmetrically a fresh row model on the new columns' predicted profiles;
  the two are averaged. Two extra fits per call.
- "pair-trees": a tree ensemble on pair rows [x_r, x_c] -> y_rc fitted at :meth:`fit` on at
  most ``max_pairs`` training pairs (every interaction kept; :mod:`okcore.bipartite.pairs`),
  the "global" approach of Schrynemackers et al. (2015). ``pair_estimator``, default extra-
  trees of OK3 (100 trees, max_features="sqrt", min_samples_leaf=5).
- "kronecker": Kronecker kernel ridge regression (Pahikkala et al. 2014) on the two sides'
  input kernels (``pair_kernel``: "linear" on the inputs, or "precomputed" when each side's
  inputs are its similarity), ridge ``pair_alpha``; closed form by two eigendecompositions.
The last two learn new x new pairs directly and leave the one-sided blocks to the two models.
Measured on the four drug-target sets (docs/RESULTS.md, sections 8.1 and 8.1.1): "refit"
raised the new x new AUROC by 0.006 on average at twice the CPU time and a fit per prediction
call; over good side models (OK3 extra-trees, OK3-et + OKBoost) "two-step" was best or within
0.005 of the best on three sets of four, trees on pairs never were, and Kronecker KRR won only
on the smallest set (26 nuclear receptors). "two-step" is the default.

Inputs of either side are feature rows, or an input similarity used through the empirical
kernel map: an item's features are its similarities to the training items of that side. At
fit the row side is then the (n_rows, n_rows) similarity among training rows, at prediction
the (q, n_rows) similarity of new rows to them (:func:`side_inputs` slices both, and
:func:`okcore.bipartite.bipartite_cross_validate` does so in every fold).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import defaults
from .._validation import (
    Interval,
    Options,
    RandomStateLike,
    check_inputs,
    check_is_fitted,
    check_random_state,
    check_sample_weight,
    validate_params,
    weight_argument,
)
from ..boosting import OKBoostRegressor
from ..budget import budgeted_fit
from ..callbacks import check_callback, part_callback
from ..cost import BipartiteCost, reports_rounds
from ..exceptions import DataError
from ..kernel_models.krr import SYMMETRY_TOLERANCE
from ..kernel_models.ridge import singular_system
from ..meta import MetaEstimator, clone
from ..trees.forest import OK3ForestRegressor
from . import default as default_choice
from .budget import MemberBudget, boosted_members
from .cost import (
    kronecker_bytes,
    kronecker_seconds,
    output_similarity_seconds,
    recovery_seconds,
    within_budget,
)
from .labels import check_vertex_labels
from .neighbours import recover_interactions, side_similarity
from .nrlmf import check_probabilities
from .pairs import (
    PAIR_KERNELS,
    SIDE_INPUTS,
    KroneckerRidge,
    PairTrees,
    dense_inputs,
    predict_block,
)
from .unknown import check_interactions, fill_unknown

NEW_PAIR_METHODS = ("two-step", "refit", "pair-trees", "kronecker")


#: The new x new methods with a model of their own, fitted by ``fit``.
PAIR_MODELS = ("pair-trees", "kronecker")


def psd_sqrt(S: np.ndarray) -> np.ndarray:
    """The symmetric square root of the PSD part of a symmetric S: V diag(sqrt(max(l, 0)))
    V^T. O(n^3)."""
    values, vectors = np.linalg.eigh(S)
    return (vectors * np.sqrt(np.maximum(values, 0.0))) @ vectors.T


def check_symmetric_similarity(X: Any, name: str) -> None:
    """The default's kernel ridge member takes a side's similarity as its kernel, which must
    be symmetric: refuse an asymmetric one (SIMCOMP's drug similarity is) naming ``name``,
    its largest gap and the usual fix. O(n^2)."""
    S = dense_inputs(X, name)
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        return  # side_similarity says what a similarity side must be
    gap = float(np.abs(S - S.T).max(initial=0.0))
    if gap > SYMMETRY_TOLERANCE * max(float(np.abs(S).max(initial=0.0)), np.finfo(float).tiny):
        raise DataError(
            f"{name} is not symmetric (largest |S - S^T| = {gap:.3g}): the default's kernel "
            "ridge member takes each side's similarity as its kernel. Symmetrise it, e.g. "
            f"{name} = ({name} + {name}.T) / 2, or name a model that "
            "reads it through the empirical kernel map, e.g. "
            "BipartiteRegressor(OKBoostRegressor(), inputs='similarity')"
        )


def check_ridge_similarity(X: Any, name: str) -> None:
    """The default's kernel ridge member solves (S + alpha I) a = y on a side's similarity
    S with its fixed penalty alpha: refuse, before any member is fitted, a similarity with
    the eigenvalue -alpha (not positive semi-definite), naming ``name`` and what the user
    of the default can change (the matrix, or a named model). O(n^3)."""
    S = dense_inputs(X, name)
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        return  # side_similarity says what a similarity side must be
    alpha = float(default_choice.kernel_ridge("similarity").alpha)
    if not singular_system(S, alpha):
        return
    raise DataError(
        f"{name} has the eigenvalue {-alpha:g} (it is not positive semi-definite): the "
        f"default's kernel ridge member solves ({name} + {alpha:g} I) a = y with its fixed "
        f"penalty {alpha:g}, which has no solution then. Make {name} positive "
        f"semi-definite, e.g. w, V = numpy.linalg.eigh({name}); "
        f"{name} = (V * numpy.maximum(w, 0)) @ V.T; or name a model: "
        "BipartiteRegressor(KernelRidgeRegressor(alpha=0.5, input_kernel='precomputed'), "
        "inputs='similarity') takes a penalty of your choice, "
        "BipartiteRegressor(OKBoostRegressor(), inputs='similarity') reads the similarity "
        "through the empirical kernel map"
    )


class BipartiteRegressor(MetaEstimator):
    """Interaction scores on a bipartite network from a row model and a column model.

    Parameters
    ----------
    row_estimator : okcore estimator or None
        Learns rows' interaction profiles from row inputs. None with ``col_estimator`` None:
        the default of :mod:`okcore.bipartite.default`, the rank average of weighted nearest
        neighbours with interaction recovery (WkNNIR), kernel ridge with Kronecker pairs on
        the recovered interactions, NRLMF (weight 2) and OK3-et + OKBoost on the recovered
        interactions (new rows: NRLMF 4, the trees 1, the others not asked); its scores order the pairs of one call and it has no W^F (``row_weights`` / ``col_weights`` raise). Each member fixes
        its own ``new_pairs``, ``kernel`` and recovery (the parameters below apply to a model
        you name; ``inputs`` and ``random_state`` apply to both). None with a
        ``col_estimator``: ``OKBoostRegressor()`` for the rows.
    col_estimator : okcore estimator or None
        Learns columns' profiles from column inputs; None = a clone of ``row_estimator``.
    new_pairs : {"two-step", "refit", "pair-trees", "kronecker"}
        How new rows x new columns are scored (module docstring).
    kernel : str
        Output kernel on interaction profiles for both models ("linear": the profiles
        themselves; any name :func:`okcore.make_kernel` knows).
    pair_estimator : okcore estimator or None
        The single-output model on pair rows of ``new_pairs="pair-trees"``; None = extra-trees
        of OK3 (100 trees, max_features="sqrt", min_samples_leaf=5, seeded by random_state).
    max_pairs : int
        Bound on the training pairs of "pair-trees" (interactions kept, the rest sampled).
    pair_kernel : {"linear", "precomputed"}
        Input kernel of each side for "kronecker": X X^T / p on the inputs, or the inputs
        themselves as kernel values (each side's inputs its similarity).
    pair_alpha : float > 0
        Ridge of "kronecker".
    inputs : {"features", "similarity"}
        What X_rows and X_cols are, for the two options below that compare vertices of a
        side: feature rows (compared by cosine similarity, negatives read as 0), or each
        side's similarity (at fit the square similarity among the training vertices, as
        :func:`side_inputs` slices it).
    recovery_neighbors : int >= 0
        k of the interaction recovery before fitting (:mod:`okcore.bipartite.neighbours`):
        the models learn Y_rec = max(Y, (W_r Y + Y W_c^T) / 2) instead of Y, unknown pairs
        scored from the k nearest vertices of each side; 0 = learn Y as given.
    recovery_eta : float in (0, 1]
        Decay by rank of the recovery's neighbour weights.
    output_similarity : bool
        Compare interaction profiles through the other side's similarity: the row model's
        output kernel is k(y_i, y_j) = y_i^T S_c y_j (S_c the similarity among the training
        columns, its negative eigenvalues set to 0), the column model's y^T S_r y'. Two
        profiles that hit similar (not the same) drugs are then close. Implemented by fitting
        each side on Y S^(1/2) (O(n^3) for the square root of each side) under ``kernel``;
        scores stay W Y.
    random_state : None or int
        Seeds the pair sampling and the default pair estimator.
    max_cpu_seconds : float > 0 or None
        The default only (no model named): a CPU budget for its fit (process CPU seconds):
        the members without boosting always run, each one-sided fit of a boosted member
        stops at the first round after its share of what is left is spent
        (:mod:`okcore.bipartite.budget`). None: no budget, every member fitted in full.

    Fitted attributes: ``row_model_``, ``col_model_`` (fitted clones), ``Y_`` (n_rows,
    n_cols: the learnt interactions, unknown pairs filled, recovered when
    ``recovery_neighbors`` > 0), ``n_unknown_`` (the unknown (NaN) pairs of the Y given),
    ``X_rows_``, ``X_cols_`` (the training inputs, referenced, not copied),
    ``n_rows_``, ``n_cols_``; ``pair_model_`` (the fitted pair model of "pair-trees" or
    "kronecker", else None); ``default_model_`` (no model named: the fitted
    :class:`~okcore.bipartite.RankAveragedBipartite` that answers every prediction, whose
    ``members_`` are the fitted members; ``row_model_``, ``col_model_`` and ``pair_model_``
    are then None and ``Y_`` the interactions as given; else None);
    ``resolved_params_`` (the one-sided models' ``resolved_params_`` under "rows" and
    "cols"); ``row_weight_``, ``col_weight_`` (``fit``'s vertex weights as checked, None
    when not given or all 1).
    """

    #: no ``sample_weight`` to route (``row_weight`` / ``col_weight`` weigh the two sides)
    routed_methods = ()
    _parameter_constraints: dict[str, list[Any]] = {
        "new_pairs": [Options(NEW_PAIR_METHODS)],
        "max_pairs": [Interval(int, 1, None, "left")],
        "pair_kernel": [Options(PAIR_KERNELS)],
        "pair_alpha": [Interval(float, 0.0, None, "neither")],
        "inputs": [Options(SIDE_INPUTS)],
        "recovery_neighbors": [Interval(int, 0, None, "left")],
        "recovery_eta": [Interval(float, 0.0, 1.0, "right")],
        "output_similarity": [Options((True, False))],
        "random_state": [RandomStateLike()],
        "max_cpu_seconds": [Interval(float, 0.0, None, "neither"), Options((None,))],
    }

    def __init__(
        self,
        row_estimator: Any = None,
        col_estimator: Any = None,
        *,
        new_pairs: str = "two-step",
        kernel: str = "linear",
        pair_estimator: Any = None,
        max_pairs: int = 20_000,
        pair_kernel: str = "linear",
        pair_alpha: float = 1.0,
        inputs: str = "features",
        recovery_neighbors: int = 0,
        recovery_eta: float = 0.7,
        output_similarity: bool = False,
        random_state: Any = 0,
        max_cpu_seconds: float | None = None,
    ) -> None:
        self.row_estimator = row_estimator
        self.col_estimator = col_estimator
        self.new_pairs = new_pairs
        self.kernel = kernel
        self.pair_estimator = pair_estimator
        self.max_pairs = max_pairs
        self.pair_kernel = pair_kernel
        self.pair_alpha = pair_alpha
        self.inputs = inputs
        self.recovery_neighbors = recovery_neighbors
        self.recovery_eta = recovery_eta
        self.output_similarity = output_similarity
        self.random_state = random_state
        self.max_cpu_seconds = max_cpu_seconds

    def _row_template(self) -> Any:
        return OKBoostRegressor() if self.row_estimator is None else self.row_estimator

    def _col_template(self) -> Any:
        return self._row_template() if self.col_estimator is None else self.col_estimator

    @budgeted_fit
    def fit(
        self,
        X_rows: Any,
        X_cols: Any,
        Y: Any,
        *,
        row_weight: Any = None,
        col_weight: Any = None,
        callback: Any = None,
    ) -> BipartiteRegressor:
        """Fit both one-sided models on the interaction matrix Y (n_rows, n_cols): the row
        model on (X_rows, Y), the column model on (X_cols, Y^T). X_rows has n_rows rows
        (features, or the similarity among the training rows), X_cols n_cols rows.
        ``row_weight`` (n_rows,) and ``col_weight`` (n_cols,): sample weights (>= 0, not
        all 0) passed as ``sample_weight`` to the row model's and the column model's fits
        (and to "refit"'s second-step fits, whose rows are the same vertices); the
        interaction recovery and the unknown-pair filling do not see them. They need a
        named model whose fit takes ``sample_weight`` and ``new_pairs`` "two-step" or
        "refit": the default (no model named) and the pair models refuse them.
        ``callback(FitProgress)`` hears both fits' phases and trees, the row model's then
        the column model's (``part`` "rows" / "columns"); returning True stops the fit
        that reports. The default hears its members instead (phase "members", then each
        member's own reports: :meth:`~okcore.bipartite.RankAveragedBipartite.fit`). NaN entries of Y are unknown pairs, not negatives: they take their
        neighbours' value (:mod:`okcore.bipartite.unknown`; k = ``recovery_neighbors``, or
        the default's 7 when it is 0, decay ``recovery_eta``) and ``n_unknown_`` counts
        them."""
        validate_params(self, self._parameter_constraints)
        check_callback(callback)
        check_vertex_labels(X_rows, X_cols, Y, self.inputs, self.inputs)
        Y = check_interactions(Y)
        # the labels are checked: the sides' models take the values (by position), and
        # predict from arrays (a model fitted on a DataFrame would check its column names)
        X_rows = check_inputs(X_rows, name="X_rows", allow_missing=True)
        X_cols = check_inputs(X_cols, name="X_cols", allow_missing=True)
        n_rows, n_cols = X_rows.shape[0], X_cols.shape[0]
        if n_rows != Y.shape[0] or n_cols != Y.shape[1]:
            raise DataError(
                f"Y is {Y.shape[0]} x {Y.shape[1]} but X_rows has {n_rows} rows and "
                f"X_cols {n_cols}: one input row per row and per column vertex"
            )
        named = self.row_estimator is not None or self.col_estimator is not None
        self.row_weight_, self.col_weight_ = self._check_side_weights(
            named, row_weight, col_weight, Y.shape
        )
        self.n_unknown_ = int(np.isnan(Y).sum())
        S_rows = S_cols = np.empty((0, 0))
        if self.n_unknown_ or (named and (self.recovery_neighbors > 0 or self.output_similarity)):
            S_rows, S_cols = self._similarity(X_rows), self._similarity(X_cols)
        if self.n_unknown_:  # every model, the default's members too, sees them filled
            k = self.recovery_neighbors or defaults.BIPARTITE_NEIGHBORS
            Y = fill_unknown(Y, S_rows, S_cols, k, float(self.recovery_eta))
        if not named:
            return self._fit_default(X_rows, X_cols, Y, callback)
        self._check_no_budget()
        self.default_model_: Any = None
        if self.recovery_neighbors > 0:
            Y = recover_interactions(
                Y, S_rows, S_cols, self.recovery_neighbors, float(self.recovery_eta)
            )
        row_outputs, col_outputs = Y, np.ascontiguousarray(Y.T)
        if self.output_similarity:
            row_outputs = Y @ psd_sqrt(S_cols)
            col_outputs = np.ascontiguousarray(Y.T @ psd_sqrt(S_rows))
        self.row_model_ = clone(self._row_template()).fit(
            X_rows, row_outputs, kernel=self.kernel, **part_callback(callback, "rows"),
            **weight_argument(self.row_weight_),
        )  # fmt: skip
        self.col_model_ = clone(self._col_template()).fit(
            X_cols, col_outputs, kernel=self.kernel, **part_callback(callback, "columns"),
            **weight_argument(self.col_weight_),
        )  # fmt: skip
        self.Y_ = Y
        self.n_rows_, self.n_cols_ = Y.shape
        self.X_rows_, self.X_cols_ = X_rows, X_cols  # "refit" fits its second step on them
        self.pair_model_ = self._fit_pair_model(X_rows, X_cols, Y)
        self.resolved_params_ = {  # what each one-sided fit made of its "auto" values
            "rows": dict(getattr(self.row_model_, "resolved_params_", {})),
            "cols": dict(getattr(self.col_model_, "resolved_params_", {})),
        }
        return self

    def _check_no_budget(self) -> None:
        """A named model takes no ``max_cpu_seconds``: say what to set instead."""
        if self.max_cpu_seconds is not None:
            raise DataError(
                "max_cpu_seconds is the budget of the default (no model named): a named "
                "model's fit takes its own settings (e.g. n_estimators); leave it None"
            )

    def _fit_default(
        self, X_rows: Any, X_cols: Any, Y: np.ndarray, callback: Any = None
    ) -> BipartiteRegressor:
        """No model named: the rank average of :mod:`okcore.bipartite.default`'s members,
        fitted on the whole network (``default_model_``); ``callback`` hears its members
        (:meth:`~okcore.bipartite.RankAveragedBipartite.fit`)."""
        check_probabilities(Y)  # before any member is fitted
        if self.inputs == "similarity":
            for X, name in ((X_rows, "X_rows"), (X_cols, "X_cols")):
                check_symmetric_similarity(X, name)
                check_ridge_similarity(X, name)
        seed = check_random_state(self.random_state).integers(2**31 - 1)
        model = default_choice.default_model(self.inputs, int(seed), bipartite=type(self))
        if self.max_cpu_seconds is not None:
            boosted = boosted_members(list(model.members))
            callback = MemberBudget(float(self.max_cpu_seconds), boosted, callback)
        self.default_model_ = model.fit(X_rows, X_cols, Y, callback=callback)
        self.row_model_ = self.col_model_ = self.pair_model_ = None
        self.Y_ = Y
        self.n_rows_, self.n_cols_ = Y.shape
        self.X_rows_, self.X_cols_ = X_rows, X_cols
        self.resolved_params_ = {"rows": {}, "cols": {}}
        return self

    def estimate_cost(
        self, n_rows: int, n_cols: int, row_features: int, col_features: int
    ) -> BipartiteCost:
        """What :meth:`fit` should cost on an ``n_rows`` x ``n_cols`` network whose sides
        have ``row_features`` and ``col_features`` input columns (a similarity side: its
        vertices), before any work (a :class:`~okcore.cost.BipartiteCost`).

        A named model: the row model's own cost model
        (:meth:`~okcore.base.OKEstimator.estimate_cost` on n_rows rows with the n_cols
        columns as outputs, under ``kernel``; part "rows"), the column model's (n_cols rows,
        n_rows outputs; "columns"), then what this model adds
        (:mod:`okcore.bipartite.cost`): "recovery" O(n_r n_c (n_r + n_c)) with
        ``recovery_neighbors``, "output_similarity" O(n_r^3 + n_c^3) with
        ``output_similarity``, and the pair model: "kronecker" O(n_r^3 + n_c^3), or
        "pair_model", the pair estimator's own cost model on at most ``max_pairs`` pair
        rows of row_features + col_features inputs. Memory is the largest part's (the fits
        run one after another), disk the parts' sum. A one-sided estimator without a cost
        model, or a ``max_cpu_seconds`` (the default's only), is a DataError.

        No model named: the default's members (:mod:`okcore.bipartite.default`), each by
        its own cost model (:meth:`~okcore.bipartite.RankAveragedBipartite.estimate_cost`);
        under ``max_cpu_seconds`` the members with boosting rounds get what the others
        leave of it (:func:`okcore.bipartite.cost.within_budget`), as
        :mod:`okcore.bipartite.budget` stops them.
        """
        validate_params(self, self._parameter_constraints)
        if self.row_estimator is None and self.col_estimator is None:
            model = default_choice.default_model(self.inputs, 0, bipartite=type(self))
            cost = model.estimate_cost(n_rows, n_cols, row_features, col_features)
            if self.max_cpu_seconds is None:
                return cost
            return within_budget(cost, float(self.max_cpu_seconds))
        self._check_no_budget()
        templates = (self._row_template(), self._col_template())
        sides = []
        for template, n, p, d, side in (
            (templates[0], n_rows, row_features, n_cols, "row"),
            (templates[1], n_cols, col_features, n_rows, "column"),
        ):
            if not hasattr(template, "estimate_cost"):
                raise DataError(
                    f"the {side} model {type(template).__name__} has no cost model "
                    "(estimate_cost): a bipartite model's cost is its one-sided fits' and its own"
                )
            sides.append(template.estimate_cost(n, p, kernel=self.kernel, n_outputs=d))
        row, col = sides
        parts = {"rows": row.seconds, "columns": col.seconds}
        memory, disk = max(row.memory_bytes, col.memory_bytes), row.disk_bytes + col.disk_bytes
        if self.recovery_neighbors:
            parts["recovery"] = recovery_seconds(n_rows, n_cols)
        if self.output_similarity:
            parts["output_similarity"] = output_similarity_seconds(n_rows, n_cols)
        if self.new_pairs == "kronecker":
            parts["kronecker"] = kronecker_seconds(n_rows, n_cols)
            disk += kronecker_bytes(n_rows, n_cols, row_features, col_features)
        elif self.new_pairs == "pair-trees":
            pair = self._pair_template(check_random_state(0)).estimate_cost(
                min(int(self.max_pairs), n_rows * n_cols), row_features + col_features,
                n_outputs=1,
            )  # fmt: skip
            parts["pair_model"] = pair.seconds
            memory, disk = max(memory, pair.memory_bytes), disk + pair.disk_bytes
        rounds = [
            fit.n_stages for fit, t in zip(sides, templates, strict=True) if reports_rounds(t)
        ]
        return BipartiteCost(
            n_rows=n_rows,
            n_cols=n_cols,
            parts=parts,
            memory_bytes=memory,
            disk_bytes=disk,
            n_stages=row.n_stages + col.n_stages,
            n_rounds=sum(rounds),
            sides=(row, col),
        )

    def _check_side_weights(
        self, named: bool, row_weight: Any, col_weight: Any, shape: tuple[int, ...]
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """``fit``'s ``row_weight`` and ``col_weight`` checked
        (:func:`~okcore._validation.check_sample_weight`: None for none or all 1), or a
        DataError saying how to fit with them when this model cannot."""
        if row_weight is None and col_weight is None:
            return None, None
        if not named:
            raise DataError(
                "row_weight and col_weight go to a named model's fits: the default (no model "
                "named) is a rank average of score models that do not take weights. Name a "
                "model whose fit takes sample_weight, e.g. "
                "BipartiteRegressor(OKBoostRegressor())"
            )
        if self.new_pairs in PAIR_MODELS:
            raise DataError(
                f"row_weight and col_weight are not taken by new_pairs={self.new_pairs!r} "
                "(its pair model is fitted on unweighted pairs): use new_pairs='two-step' "
                "or 'refit'"
            )
        for template, side in ((self._row_template(), "row"), (self._col_template(), "column")):
            if not getattr(template, "supports_sample_weight", False):
                raise DataError(
                    f"the {side} model {type(template).__name__} does not take sample_weight: "
                    "name a model whose fit does (okcore.sample_weight_estimators())"
                )
        try:
            return check_sample_weight(row_weight, shape[0]), check_sample_weight(
                col_weight, shape[1]
            )
        except DataError as exc:
            raise DataError(f"row_weight / col_weight: {exc}") from None

    def _similarity(self, X: Any) -> np.ndarray:
        """The similarity among one side's training vertices (``inputs``)."""
        return side_similarity(X, self.inputs)

    def _fit_pair_model(self, X_rows: Any, X_cols: Any, Y: np.ndarray) -> Any:
        if self.new_pairs not in PAIR_MODELS:
            return None
        X_rows, X_cols = dense_inputs(X_rows, "X_rows"), dense_inputs(X_cols, "X_cols")
        if self.new_pairs == "kronecker":
            return KroneckerRidge(float(self.pair_alpha), self.pair_kernel).fit(X_rows, X_cols, Y)
        rng = check_random_state(self.random_state)
        return PairTrees(self._pair_template(rng), self.max_pairs, rng).fit(X_rows, X_cols, Y)

    def _pair_template(self, rng: np.random.Generator) -> Any:
        """The unfitted model on pair rows of "pair-trees": a clone of ``pair_estimator``,
        or extra-trees of OK3 seeded from ``rng``."""
        if self.pair_estimator is not None:
            return clone(self.pair_estimator)
        return OK3ForestRegressor(
            n_estimators=100, splitter="random", bootstrap=False, max_features="sqrt",
            min_samples_leaf=5, random_state=int(rng.integers(2**31 - 1)),
        )  # fmt: skip

    def _default(self) -> Any:
        """The fitted default (no model named), or None when a model was named."""
        check_is_fitted(self, "Y_")
        return getattr(self, "default_model_", None)  # absent on a model assembled from parts

    def _check_weights(self) -> None:
        """W^F is asked of the default, which has none: say so and what to do."""
        if self._default() is not None:
            raise DataError(
                "the default model (no model named) is a rank average of score models and "
                "has no W^F: name a model with W^F, e.g. BipartiteRegressor(NeighbourRegressor())"
            )

    def row_weights(self, X_new_rows: Any) -> np.ndarray:
        """W_row: weights of new rows over the training rows, (q, n_rows)."""
        self._check_weights()
        return self.row_model_.predict_weights(X_new_rows)

    def col_weights(self, X_new_cols: Any) -> np.ndarray:
        """W_col: weights of new columns over the training columns, (q', n_cols)."""
        self._check_weights()
        return self.col_model_.predict_weights(X_new_cols)

    def predict_new_rows(self, X_new_rows: Any) -> np.ndarray:
        """Scores of new rows x the known columns, (q, n_cols): W_row Y. O(q n_rows n_cols)
        after the weights."""
        default = self._default()
        if default is not None:
            return np.asarray(default.predict_new_rows(X_new_rows))
        return self.row_weights(X_new_rows) @ self.Y_

    def predict_new_cols(self, X_new_cols: Any) -> np.ndarray:
        """Scores of the known rows x new columns, (n_rows, q'): (W_col Y^T)^T."""
        default = self._default()
        if default is not None:
            return np.asarray(default.predict_new_cols(X_new_cols))
        return self.Y_ @ self.col_weights(X_new_cols).T

    def predict_new_pairs(self, X_new_rows: Any, X_new_cols: Any) -> np.ndarray:
        """Scores of new rows x new columns, (q, q'), by ``new_pairs`` (or the default's
        new x new winner)."""
        default = self._default()
        if default is not None:
            return np.asarray(default.predict_new_pairs(X_new_rows, X_new_cols))
        if self.new_pairs in PAIR_MODELS:
            if getattr(self.pair_model_, "method", None) != self.new_pairs:
                raise DataError(
                    f"new_pairs={self.new_pairs!r} was set after fit: its pair model is fitted "
                    "by fit, so call fit again"
                )
            return self.pair_model_.predict(
                dense_inputs(X_new_rows, "X_rows"), dense_inputs(X_new_cols, "X_cols")
            )
        profiles = self.predict_new_rows(X_new_rows)  # (q, n_cols)
        if self.new_pairs == "two-step":
            return profiles @ self.col_weights(X_new_cols).T
        col_side = clone(self._col_template()).fit(
            self.X_cols_, np.ascontiguousarray(profiles.T), kernel=self.kernel,
            **weight_argument(getattr(self, "col_weight_", None)),
        )  # fmt: skip
        by_cols = col_side.predict_weights(X_new_cols) @ profiles.T  # (q', q)
        col_profiles = self.predict_new_cols(X_new_cols)  # (n_rows, q')
        row_side = clone(self._row_template()).fit(
            self.X_rows_, col_profiles, kernel=self.kernel,
            **weight_argument(getattr(self, "row_weight_", None)),
        )  # fmt: skip
        by_rows = row_side.predict_weights(X_new_rows) @ col_profiles  # (q, q')
        return 0.5 * (by_cols.T + by_rows)

    def predict(self, X_rows: Any = None, X_cols: Any = None) -> np.ndarray:
        """Scores of the block the arguments name: new rows x known columns (X_rows only),
        known rows x new columns (X_cols only) or new rows x new columns (both)."""
        return predict_block(self, X_rows, X_cols)
