"""Losses for the OKBoost stage loop, in the output feature space (factor form).

A loss is a small object with the few methods :func:`okcore.boosting.boost` calls: the
initial model F_0, the rows each stage is fitted to, the leaf values from the residual rows
and the leaf of each row (Friedman 2001, Algorithm 1 line 5; no tree types: any base
learner that partitions the rows), one fused update step, and the loss value. Every leaf value is a
weighted combination of the leaf's residual rows, so F(x) stays in span{phi(y_i)} and W^F,
kernel predictions and pre-images work for every loss; a loss whose weights are not the
uniform leaf mean returns them per training row (``train_weight``) for the W^F recursion.

- ``"squared"``: ||phi(y) - F||^2, the paper's loss (leaf value = mean residual row).
- ``"absolute"``: ||phi(y) - F||, Friedman's LAD_TreeBoost kernelized: trees fitted to
  the unit residual directions, leaf value = geometric median of the leaf's residual rows.
- ``"huber"``: Friedman's M_TreeBoost kernelized: delta = alpha-quantile of the residual
  norms at each stage, trees fitted to the residuals clipped to norm delta, leaf value =
  the leaf's geometric median plus the mean of its clipped deviations from it.

With sample weights w_i (``make_loss(..., weight=w)``) the robust losses are weighted as
scikit-learn's ``GradientBoostingRegressor(...).fit(X, y, sample_weight=w)``: the trees are
weighted trees on the same targets, each leaf's median (and F_0) the weighted geometric median
argmin_m sum_i w_i ||r_i - m|| (one column: the weighted inverted-CDF median), Huber's delta
the weighted inverted-CDF alpha-quantile of the residual norms and its leaf's clipped mean a
weighted mean, the loss value a weighted mean. Integer weights fit as repeated rows, weight 0
as a dropped row.

The robust losses compute residual norms in the factor coordinates: with an exact factor
(the default) that is the feature-space norm; with a truncated one (``factor_rank``,
``n_landmarks``) it is the norm of the outputs projected on the factor's span.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np
from numba import njit

from .exceptions import DataError
from .threads import SERIAL, ChunkRunner

#: Weiszfeld stops when an iterate moves less than this times the mean distance of the rows
#: to it (relative: the result does not depend on the scale of the outputs) ...
WEISZFELD_TOL = 1e-10
#: ... or after this many iterations (O(n r) each; typical leaves need 10-100).
WEISZFELD_MAX_ITER = 1000
#: Rows closer than this times the largest distance to an iterate coincide with it.
COINCIDE = 1e-12
#: A converged iterate snaps to its nearest row x_k when x_k is optimal with this margin:
#: ||sum_{x_i != x_k} (x_i - x_k) / ||x_i - x_k|| || <= (1 - margin) (rows at x_k). The
#: margin keeps Weiszfeld's point when the minimisers form a segment (collinear rows, where
#: the condition holds with equality at the ends) instead of letting rounding pick an end.
SNAP_MARGIN = 1e-6


def weight_total(weight: np.ndarray) -> float:
    """The sum of the rows' sample ``weight``, which weighted means and scores divide by;
    a DataError when it is zero (rows of zero weight only: nothing to average). O(n)."""
    total = float(np.sum(weight))
    if not total > 0.0:
        raise DataError(
            f"the weights of these {len(weight)} rows sum to zero: a weighted loss or score "
            "needs at least one row with a positive sample_weight among them"
        )
    return total


def weighted_mean(values: np.ndarray, weight: np.ndarray | None) -> float:
    """The mean of per-row ``values``, weighted by the rows' sample ``weight`` when given
    (:func:`weight_total` refuses weights summing to zero). O(n)."""
    if weight is None:
        return float(np.mean(values))
    weight_total(weight)
    return float(np.average(values, weights=weight))


def leaf_row_weights(leaf: np.ndarray, weight: np.ndarray, n_leaves: int, l2: float) -> np.ndarray:
    """Each row's coefficient in its leaf's value G / (W + lambda) (row weights only):
    w_i / (W_leaf(i) + lambda), 0 for rows of weight 0, shape (N,); ``weight`` already
    counts a row's fits (bootstrap, subsample). What W^F, kernel predictions and pre-images
    read for a weighted tree (:attr:`~okcore.trees.ensemble.TreeEnsemble.train_weight`).
    O(N)."""
    W = np.bincount(leaf, weights=weight, minlength=n_leaves)
    denominator = W[leaf] + l2
    return np.divide(weight, denominator, out=np.zeros_like(weight), where=denominator > 0)


class FeatureLoss(Protocol):
    """What the stage loop calls; see :class:`SquaredFeatureLoss` for the contract."""

    def initial(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]: ...

    def stage_target(self, residual: np.ndarray) -> np.ndarray: ...

    def leaf_values(
        self, residual: np.ndarray, leaf: np.ndarray, in_bag: np.ndarray, n_leaves: int
    ) -> tuple[np.ndarray | None, np.ndarray | None]: ...

    def step(
        self,
        phi: np.ndarray,
        diag: np.ndarray,
        F: np.ndarray,
        value: np.ndarray,
        leaf: np.ndarray,
        learning_rate: float,
        residual: np.ndarray,
        runner: ChunkRunner = SERIAL,
    ) -> float: ...

    def __call__(
        self, phi: np.ndarray, diag: np.ndarray, F: np.ndarray, weight: np.ndarray | None = None
    ) -> float: ...


class SquaredFeatureLoss:
    """l(y, F) = ||phi(y) - F||^2 (paper section 2.3): the negative gradient is the residual
    and the leaf means the tree builder computes are the leaf values (no extra work)."""

    name = "squared"

    def initial(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """F_0 = the mean of the training features (Algorithm 3, line 1), shape (r,), and its
        weights over the phi_i: None, meaning uniform (1/N)."""
        return phi.mean(axis=0), None

    def stage_target(self, residual: np.ndarray) -> np.ndarray:
        """The rows the next stage is fitted to: the residuals phi_i - F(x_i) themselves."""
        return residual

    def leaf_values(
        self, residual: np.ndarray, leaf: np.ndarray, in_bag: np.ndarray, n_leaves: int
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The values (n_leaves, r) of the leaves, from the ``residual`` rows (N, r), the
        ``leaf`` of each row (N,) and the rows fitted (``in_bag``, (N,) bool), and the
        weight of each row's residual in its leaf's value, (N,) (0 out of bag). (None,
        None) here: the values are the uniform leaf means the base learner already
        computed (W^F then derives the weights from the leaf sizes)."""
        return None, None

    def __call__(
        self, phi: np.ndarray, diag: np.ndarray, F: np.ndarray, weight: np.ndarray | None = None
    ) -> float:
        """Mean of k(y, y) - 2 <F, phi(y)> + ||F||^2 over the rows (weighted by the rows'
        sample ``weight`` when given). O(n r)."""
        row_loss = diag - 2.0 * np.einsum("ij,ij->i", F, phi) + np.einsum("ij,ij->i", F, F)
        return weighted_mean(row_loss, weight)

    def step(
        self,
        phi: np.ndarray,
        diag: np.ndarray,
        F: np.ndarray,
        value: np.ndarray,
        leaf: np.ndarray,
        learning_rate: float,
        residual: np.ndarray,
        runner: ChunkRunner = SERIAL,
    ) -> float:
        """One boosting round in one pass: F += nu * value[leaf] in place, the next residuals
        phi - F written into ``residual``, and the new loss returned. O(N r), reading phi and
        F once (the separate numpy steps took ~5 passes over N x r arrays). The rows are
        shared between the ``runner``'s threads; each row's loss is kept and the rows'
        losses summed in row order, so the loss does not depend on the number of threads."""
        row_loss = self._step_rows(phi, diag, F, value, leaf, learning_rate, residual, runner)
        return float(_sum_in_order(row_loss) / len(row_loss))

    @staticmethod
    def _step_rows(
        phi: np.ndarray,
        diag: np.ndarray,
        F: np.ndarray,
        value: np.ndarray,
        leaf: np.ndarray,
        learning_rate: float,
        residual: np.ndarray,
        runner: ChunkRunner,
    ) -> np.ndarray:
        """:meth:`step`'s update, returning each row's new loss (N,)."""
        n, r = phi.shape
        row_loss = np.empty(n)

        def run(lo: int, hi: int) -> None:
            _squared_step(phi, diag, F, value, leaf, learning_rate, residual, lo, hi, row_loss)

        runner(n * r, n, run)
        return row_loss


class WeightedSquaredFeatureLoss(SquaredFeatureLoss):
    """The squared loss with sample weights w_i: sum_i w_i ||phi(y_i) - F(x_i)||^2 / sum w
    (scikit-learn's weighted mean). F_0 is the weighted mean of the phi_i; the stages are
    weighted trees (:mod:`okcore.trees.weighted`), whose leaf values G / (W + lambda) are
    the loss's own, each row's coefficient w_i / (W_leaf + lambda) kept for W^F
    (``lambda`` = ``l2``, the trees' L2 penalty)."""

    def __init__(self, weight: np.ndarray, l2: float) -> None:
        self.weight, self.l2 = weight, float(l2)

    def initial(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """F_0 = sum_i w_i phi_i / sum w, with its weights w / sum w over the phi_i."""
        share = self.weight / self.weight.sum()
        return share @ phi, share

    def leaf_values(
        self, residual: np.ndarray, leaf: np.ndarray, in_bag: np.ndarray, n_leaves: int
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The tree's values stand; each row's coefficient w_i / (W_leaf + lambda) (0 out
        of bag)."""
        return None, leaf_row_weights(leaf, self.weight * in_bag, n_leaves, self.l2)

    def step(
        self,
        phi: np.ndarray,
        diag: np.ndarray,
        F: np.ndarray,
        value: np.ndarray,
        leaf: np.ndarray,
        learning_rate: float,
        residual: np.ndarray,
        runner: ChunkRunner = SERIAL,
    ) -> float:
        """:meth:`SquaredFeatureLoss.step` with the weighted mean of the rows' losses."""
        row_loss = self._step_rows(phi, diag, F, value, leaf, learning_rate, residual, runner)
        return float(row_loss @ self.weight / self.weight.sum())


class MaskedSquaredFeatureLoss:
    """The squared loss over the known output entries, each weighted: with h_ic >= 0 the
    weight of entry c of row i (0 where unknown; its row's sample weight times its column's
    output weight where known), l = r sum_ic h_ic (phi_ic - F_ic)^2 / sum_ic h_ic over the
    r factor columns (phi = Y: the linear kernel), the mean squared error of the known
    entries times r, so that with every entry known and weight 1 it is the mean of
    ||phi - F||^2. F_0 is each column's weighted mean over its known entries (0 for a column
    with none); the stages are weighted trees on the entry weights
    (:mod:`okcore.trees.weighted`: leaf value per column G_c / (H_c + lambda)). Leaf values
    weigh each column on its own, so no W^F over the training outputs exists (None). O(N r)
    per step."""

    name = "squared"

    def __init__(self, weight: np.ndarray) -> None:
        self.weight = weight

    def initial(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        G, H = (self.weight * phi).sum(axis=0), self.weight.sum(axis=0)
        return np.divide(G, H, out=np.zeros_like(G), where=H > 0), None

    def stage_target(self, residual: np.ndarray) -> np.ndarray:
        return residual

    def leaf_values(
        self, residual: np.ndarray, leaf: np.ndarray, in_bag: np.ndarray, n_leaves: int
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        return None, None

    def step(
        self,
        phi: np.ndarray,
        diag: np.ndarray,
        F: np.ndarray,
        value: np.ndarray,
        leaf: np.ndarray,
        learning_rate: float,
        residual: np.ndarray,
        runner: ChunkRunner = SERIAL,
    ) -> float:
        """F += nu * value[leaf] in place, residual = phi - F, and the new loss."""
        F += learning_rate * value[leaf]
        np.subtract(phi, F, out=residual)
        return self(phi, diag, F, self.weight)

    def __call__(
        self, phi: np.ndarray, diag: np.ndarray, F: np.ndarray, weight: np.ndarray | None = None
    ) -> float:
        """The loss (class docstring) with entry weights ``weight`` (N, r) (row weights
        (N,) apply to every entry of their row; None: every entry, weight 1)."""
        squares = (phi - F) ** 2
        if weight is None:
            return float(squares.sum(axis=1).mean())
        h = weight if weight.ndim == 2 else np.broadcast_to(weight[:, None], squares.shape)
        return float(phi.shape[1] * (h * squares).sum() / h.sum())


class _NormLoss:
    """A loss of the residual norm ||phi_i - F_i||, its leaves in span of the leaf's rows;
    ``weight`` (N,): the rows' sample weights (None: unweighted)."""

    name: str

    def __init__(self, weight: np.ndarray | None = None) -> None:
        self.weight = weight

    def initial(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """F_0 = the geometric median of the phi_i (argmin_F sum w_i ||phi_i - F||), shape
        (r,), with its weights over the phi_i, shape (N,). In one dimension where the
        weights split in two equal halves (N even, unweighted): the midpoint of the two
        middle values (``np.median``, scikit-learn's initial median; with integer weights
        the median of the repeated rows)."""
        weights = geometric_median_weights(phi, lower=False, weight=self.weight)
        return weights @ phi, weights

    def leaf_values(
        self, residual: np.ndarray, leaf: np.ndarray, in_bag: np.ndarray, n_leaves: int
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Leaf values from the residual rows of each leaf's in-bag rows, (N,) weights."""
        weights = np.zeros(len(residual))
        value = np.empty((n_leaves, residual.shape[1]))
        rows = np.flatnonzero(in_bag)
        rows = rows[np.argsort(leaf[rows], kind="stable")]
        bounds = np.searchsorted(leaf[rows], np.arange(n_leaves + 1))
        for L in range(n_leaves):
            members = rows[bounds[L] : bounds[L + 1]]
            R = residual[members]
            w = self._leaf_weights(R, None if self.weight is None else self.weight[members])
            weights[members] = w
            value[L] = w @ R
        return value, weights

    def _leaf_weights(self, R: np.ndarray, w: np.ndarray | None) -> np.ndarray:
        raise NotImplementedError

    def step(
        self,
        phi: np.ndarray,
        diag: np.ndarray,
        F: np.ndarray,
        value: np.ndarray,
        leaf: np.ndarray,
        learning_rate: float,
        residual: np.ndarray,
        runner: ChunkRunner = SERIAL,
    ) -> float:
        """F += nu * value[leaf] in place, residual = phi - F, and the new loss (weighted
        mean with sample weights). O(N r), on the calling thread (``runner`` unused)."""
        F += learning_rate * value[leaf]
        np.subtract(phi, F, out=residual)
        rho = self._rho(row_norms(residual))
        return weighted_mean(rho, self.weight)

    def __call__(
        self, phi: np.ndarray, diag: np.ndarray, F: np.ndarray, weight: np.ndarray | None = None
    ) -> float:
        """Mean loss of the rows' residual norms ||phi - F|| (factor coordinates), weighted
        by ``weight`` when given. O(n r)."""
        return weighted_mean(self._rho(row_norms(phi - F)), weight)

    def _rho(self, norms: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class AbsoluteFeatureLoss(_NormLoss):
    """l(y, F) = ||phi(y) - F|| (not squared): LAD_TreeBoost (Friedman 2001, Algorithm 3)
    in the feature space. With one factor column (a linear kernel on a scalar output) the
    unit directions are the signs and the geometric medians the medians: Friedman's
    algorithm and scikit-learn's ``loss="absolute_error"``.

    Training loss is non-increasing for nu in (0, 1] without subsampling: Weiszfeld starts
    at the zero step and each iteration lowers the leaf's loss, so the leaf value m has
    f_L(m) <= f_L(0) with f_L(v) = sum_{i in L} ||r_i - v||, and f_L is convex, so
    f_L(nu m) <= (1 - nu) f_L(0) + nu f_L(m) <= f_L(0).
    """

    name = "absolute"

    def stage_target(self, residual: np.ndarray) -> np.ndarray:
        """Unit residual directions (phi_i - F_i) / ||phi_i - F_i||, 0 for a zero residual
        (the sign in one dimension), shape (N, r)."""
        norms = row_norms(residual)[:, None]
        # divided, not multiplied by 1 / norm: exactly +-1 in one dimension, as the sign
        return np.divide(residual, norms, out=np.zeros_like(residual), where=norms > 0)

    def _leaf_weights(self, R: np.ndarray, w: np.ndarray | None) -> np.ndarray:
        return geometric_median_weights(R, weight=w)

    def _rho(self, norms: np.ndarray) -> np.ndarray:
        return norms


class HuberFeatureLoss(_NormLoss):
    """Huber loss of the residual norm: rho(t) = t^2 / 2 for t <= delta, delta (t - delta/2)
    above, with delta the ``alpha``-quantile of the residual norms, re-set at each stage
    (M_TreeBoost, Friedman 2001, Algorithm 4, in the feature space; scikit-learn's
    ``loss="huber"`` with one factor column).

    The quantile is the inverted CDF: the smallest norm with at least alpha N norms <= it
    (numpy's ``method="inverted_cdf"``, scikit-learn's ``_weighted_percentile`` with unit
    weights; with sample weights, the weighted inverted CDF with the same arithmetic).
    ``delta_`` holds the current stage's delta; the loss value uses it. The
    training loss is not guaranteed to decrease: delta moves every stage and the leaf step
    is Friedman's one-step estimate, not the leaf's minimiser.
    """

    name = "huber"

    def __init__(self, alpha: float = 0.9, weight: np.ndarray | None = None) -> None:
        super().__init__(weight)
        self.alpha = alpha
        self.delta_ = np.inf

    def stage_target(self, residual: np.ndarray) -> np.ndarray:
        """Set delta from the residual norms; return the clipped residuals: r_i if
        ||r_i|| <= delta, else delta r_i / ||r_i|| (the negative gradient), shape (N, r)."""
        norms = row_norms(residual)
        if self.weight is None:
            self.delta_ = inverted_cdf_quantile(norms, self.alpha)
        else:
            self.delta_ = float(norms[weighted_quantile_row(norms, self.weight, self.alpha)])
        target = residual.copy()
        clipped = norms > self.delta_
        # direction times delta: exactly +-delta in one dimension, as delta sign(r)
        target[clipped] = residual[clipped] / norms[clipped, None] * self.delta_
        return target

    def _clip_scale(self, norms: np.ndarray) -> np.ndarray:
        """min(1, delta / ||v||): the factor that clips a vector v to norm delta."""
        scale = np.ones_like(norms)
        np.divide(self.delta_, norms, out=scale, where=norms > self.delta_)
        return scale

    def _leaf_weights(self, R: np.ndarray, w: np.ndarray | None) -> np.ndarray:
        """Median m = c R (geometric), then m + mean_i clip(r_i - m): with s_i the clip
        factor of r_i - m, the value is sum_j (c_j (1 - mean s) + s_j / n) r_j; with
        sample weights w the mean is weighted: sum_j (c_j (1 - sum w s / W) + w_j s_j / W) r_j."""
        c = geometric_median_weights(R, weight=w)
        s = self._clip_scale(row_norms(R - c @ R))
        if w is None:
            return c * (1.0 - s.mean()) + s / len(R)
        ws = w * s / w.sum()
        return c * (1.0 - ws.sum()) + ws

    def _rho(self, norms: np.ndarray) -> np.ndarray:
        d = self.delta_
        return np.where(norms <= d, 0.5 * norms**2, d * (norms - 0.5 * d))


#: The ``loss`` parameter's values, each with the factory of its unweighted loss object
#: given ``alpha``.
LOSSES: dict[str, Callable[[float], FeatureLoss]] = {
    "squared": lambda alpha: SquaredFeatureLoss(),
    "absolute": lambda alpha: AbsoluteFeatureLoss(),
    "huber": HuberFeatureLoss,
}


def make_loss(name: str, alpha: float, weight: np.ndarray | None = None) -> FeatureLoss:
    """The loss object for the ``loss`` / ``alpha`` parameters of OKBoostRegressor, with
    the rows' sample ``weight`` (N,) when given (the robust losses; the weighted squared
    loss is :class:`WeightedSquaredFeatureLoss`, which also needs the trees' L2 penalty)."""
    if weight is None:
        return LOSSES[name](alpha)
    if name == "absolute":
        return AbsoluteFeatureLoss(weight)
    if name == "huber":
        return HuberFeatureLoss(alpha, weight)
    raise ValueError(f"make_loss takes sample weights for the robust losses only, not {name!r}")


def row_norms(A: np.ndarray) -> np.ndarray:
    """Euclidean norm of each row, shape (n,)."""
    return np.sqrt(np.einsum("ij,ij->i", A, A))


def inverted_cdf_quantile(values: np.ndarray, alpha: float) -> float:
    """The smallest value v with #{values <= v} >= alpha n. O(n).

    The rank is computed with scikit-learn's arithmetic ((100 alpha) / 100 n), so the two
    agree where alpha n is an integer up to rounding."""
    n = len(values)
    rank = min(max(int(np.ceil(100.0 * alpha / 100.0 * n)) - 1, 0), n - 1)
    return float(np.partition(values, rank)[rank])


def weighted_quantile_row(values: np.ndarray, weight: np.ndarray, alpha: float) -> int:
    """The row of the weighted inverted-CDF alpha-quantile of ``values``: in increasing
    order, the first row whose cumulative weight reaches (100 alpha) / 100 W (W the total
    weight; scikit-learn's ``_weighted_percentile`` arithmetic), so a row of weight 0 is
    never taken. O(n log n)."""
    order = np.argsort(values, kind="stable")
    cdf = np.cumsum(weight[order])
    target = 100.0 * alpha / 100.0 * cdf[-1]
    if target == 0.0:  # skip leading rows of weight 0
        target = np.nextafter(target, 1.0)
    return int(order[min(int(np.searchsorted(cdf, target)), len(order) - 1)])


def weighted_median_weights(x: np.ndarray, weight: np.ndarray, lower: bool) -> np.ndarray:
    """Weights c (n,) with c @ x a weighted median of the values ``x`` (n,): the weighted
    inverted CDF at 1/2 (``lower``, scikit-learn's leaf medians), else where the cumulative
    weight reaches exactly W / 2 the midpoint of that value and the next of positive weight
    (the median of repeated rows for integer weights; ``np.median`` for unit weights).
    O(n log n)."""
    c = np.zeros(len(x))
    k = weighted_quantile_row(x, weight, 0.5)
    c[k] = 1.0
    if lower:
        return c
    order = np.argsort(x, kind="stable")
    cdf = np.cumsum(weight[order])
    at = int(np.flatnonzero(order == k)[0])
    if cdf[at] == 0.5 * cdf[-1]:
        after = at + 1 + int(np.argmax(weight[order[at + 1 :]] > 0))
        if after < len(x) and weight[order[after]] > 0:
            c[k], c[order[after]] = 0.5, 0.5
    return c


def geometric_median_weights(
    X: np.ndarray, lower: bool = True, weight: np.ndarray | None = None
) -> np.ndarray:
    """Weights c (n,) with c @ X the geometric median argmin_m sum_i ||x_i - m|| of the rows.

    One column: the median, taken exactly. For an even count any point between the two
    middle values is a minimiser: ``lower`` takes the lower one (the inverted CDF, as
    scikit-learn's leaf medians), else their midpoint (``np.median``, as its initial
    estimate); either way the weights are exact (one-hot or two halves). Otherwise Weiszfeld
    iterations in factor form with Vardi & Zhang's (2000) rule where an iterate coincides
    with rows (which keeps it if optimal and otherwise steps off it), started at 0 (for a
    leaf: the zero step, so every iterate has a lower loss than no step), stopped by
    WEISZFELD_TOL / WEISZFELD_MAX_ITER; a converged iterate then snaps to its nearest row
    if that row is optimal (SNAP_MARGIN), so a median at a data point is exact. The weights
    sum to 1 (0 for rows all at the origin). O(T n r) for T iterations.

    ``weight`` (n,): sample weights, argmin_m sum_i w_i ||x_i - m|| (one column:
    :func:`weighted_median_weights`; Weiszfeld's map, the Vardi-Zhang rule and the snap
    with each row counted w_i times, rows of weight 0 left out).
    """
    n = X.shape[0]
    if weight is not None and X.shape[1] == 1:
        return weighted_median_weights(X[:, 0], weight, lower)
    if X.shape[1] == 1:
        weights = np.zeros(n)
        order = np.argsort(X[:, 0], kind="stable")
        if lower or n % 2:
            weights[order[(n - 1) // 2]] = 1.0
        else:
            weights[order[n // 2 - 1 : n // 2 + 1]] = 0.5
        return weights
    return _weiszfeld(
        np.ascontiguousarray(X, dtype=np.float64),
        np.ones(n) if weight is None else np.ascontiguousarray(weight, dtype=np.float64),
        WEISZFELD_TOL,
        WEISZFELD_MAX_ITER,
        COINCIDE,
        SNAP_MARGIN,
    )


@njit(cache=True, nogil=True)
def _weiszfeld(
    X: np.ndarray, w: np.ndarray, tol: float, max_iter: int, coincide: float, snap_margin: float
) -> np.ndarray:  # pragma: no cover - jit
    """Weiszfeld with each row x_i counted w_i times (w = 1: the unweighted iterations)."""
    n, r = X.shape
    c = np.zeros(n)
    y = np.zeros(r)
    d = np.empty(n)
    new_c = np.empty(n)
    new_y = np.empty(r)
    for _ in range(max_iter):
        scale = _distances(X, y, d)
        if scale == 0.0:  # every row at the iterate: it is the median
            return c
        # Weiszfeld's map over the rows not at y: T = sum_i w_i x_i / d_i / sum_i w_i / d_i
        eta, inv_sum = 0.0, 0.0
        for i in range(n):
            if d[i] <= coincide * scale:
                eta += w[i]
                new_c[i] = 0.0
            else:
                new_c[i] = w[i] / d[i]
                inv_sum += new_c[i]
        if inv_sum == 0.0:  # every row of positive weight at the iterate: it is the median
            for i in range(n):
                c[i] = w[i] / eta if d[i] <= coincide * scale else 0.0
            return c
        new_c /= inv_sum
        _combine(X, new_c, new_y)
        if eta > 0.0:  # Vardi-Zhang: ||R~(y)|| = inv_sum ||T - y|| against the rows at y
            pull = inv_sum * np.sqrt(np.sum((new_y - y) ** 2))
            if pull <= eta:  # y is optimal: the mean of the rows it coincides with
                for i in range(n):
                    c[i] = w[i] / eta if d[i] <= coincide * scale else 0.0
                return c
            lam = eta / pull
            new_c = (1.0 - lam) * new_c + lam * c
            new_y = (1.0 - lam) * new_y + lam * y
        moved = np.sqrt(np.sum((new_y - y) ** 2))
        c[:] = new_c
        y[:] = new_y
        if moved <= tol * np.mean(d):
            break
    # snap to the nearest row x_k of positive weight when x_k is optimal:
    # ||sum_{i not at k} w_i u_ik|| <= eta_k, the weight at x_k
    _distances(X, y, d)
    for i in range(n):
        if w[i] == 0.0:
            d[i] = np.inf
    k = np.argmin(d)
    scale = _distances(X, X[k], d)
    eta = 0.0
    pull = np.zeros(r)
    for i in range(n):
        if d[i] <= coincide * scale:
            eta += w[i]
        else:
            pull += w[i] * (X[i] - X[k]) / d[i]
    if np.sqrt(np.sum(pull**2)) <= (1.0 - snap_margin) * eta:
        for i in range(n):
            c[i] = w[i] / eta if d[i] <= coincide * scale else 0.0
    return c


@njit(cache=True, nogil=True)
def _distances(X: np.ndarray, y: np.ndarray, out: np.ndarray) -> float:  # pragma: no cover - jit
    """out[i] = ||x_i - y||; returns the largest."""
    largest = 0.0
    for i in range(X.shape[0]):
        s = 0.0
        for j in range(X.shape[1]):
            t = X[i, j] - y[j]
            s += t * t
        out[i] = np.sqrt(s)
        largest = max(largest, out[i])
    return largest


@njit(cache=True, nogil=True)
def _combine(X: np.ndarray, c: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - jit
    """out = c @ X."""
    out[:] = 0.0
    for i in range(X.shape[0]):
        if c[i] != 0.0:
            for j in range(X.shape[1]):
                out[j] += c[i] * X[i, j]


@njit(cache=True, nogil=True)  # no fastmath: F must round as F + nu * v does in numpy
def _squared_step(
    phi: np.ndarray,
    diag: np.ndarray,
    F: np.ndarray,
    value: np.ndarray,
    leaf: np.ndarray,
    nu: float,
    residual: np.ndarray,
    lo: int,
    hi: int,
    row_loss: np.ndarray,
) -> None:  # pragma: no cover - jit
    """The squared loss's step on the rows lo..hi-1: F += nu value[leaf], residual = phi - F
    and row_loss[i] = k(y_i, y_i) - 2 <F_i, phi_i> + ||F_i||^2. O((hi - lo) r)."""
    r = phi.shape[1]
    for i in range(lo, hi):
        row = leaf[i]
        acc = diag[i]
        for c in range(r):
            f = F[i, c] + nu * value[row, c]
            F[i, c] = f
            d = phi[i, c] - f
            residual[i, c] = d
            acc += f * f - 2.0 * f * phi[i, c]
        row_loss[i] = acc


@njit(cache=True, nogil=True)  # no fastmath: the sum in row order, not reassociated
def _sum_in_order(values: np.ndarray) -> float:  # pragma: no cover - jit
    """values[0] + values[1] + ... left to right. O(n)."""
    total = 0.0
    for i in range(values.shape[0]):
        total += values[i]
    return total
