"""Kernel ridge as the boosting's starting model F_0 (OKBoostRegressor's ``init``).

Instead of the training mean, the loop starts from a kernel ridge fit on the same rows and
the same output space, F_0(x) = F_krr(x), and every tree fits what kernel ridge leaves,
phi_i - F_{m-1}(x_i). Kernel ridge's prediction lies in span{phi(y_i)}, with the
minimum-norm weights w_krr(x) = F_krr(x) Phi^+ (Phi^+ = (Phi^T Phi)^+ Phi^T, as
:meth:`okcore.kernel_models.kernel_ensemble.KernelEnsemble.weights`), so the boosted model
stays there and W^F, predicted kernels and pre-images keep working:

    F(x) = F_krr(x) + nu sum_m h_m(x),
    W^F(x) = R(x) + (F_krr(x) - R(x) F_krr(X_train)) Phi^+,

R(x) the trees' backward recursion (math note s. 2) stopped before its last factor: with
F_0 given by weights w_0(x), that factor is A_0 = I - W_0(X_train), and
R A_0 + w_0(x) = R - (R F_krr(X_train)) Phi^+ + F_krr(x) Phi^+ needs F_krr on the
training rows (N, r), never an N x N matrix. The trees' ensemble is stored with F_0 = 0
and zero F_0 weights, so its own W^F is exactly R(x) (:meth:`TreeEnsemble.weights
<okcore.trees.ensemble.TreeEnsemble.weights>` adds (1 - sum R) w_0 = 0). Rows of this
W^F need not sum to 1 (kernel ridge's do not).

``init`` is None (the loss's own F_0), ``"kernel_ridge"`` (``KernelRidgeRegressor
(gamma="cv")``, width and penalty by CV on the fitted rows), a dict of
:class:`~okcore.kernel_models.ridge.KernelRidgeRegressor` parameters (what a saved model
records) or an unfitted ``KernelRidgeRegressor``. Its random state is its own when it has
one, else drawn from the boosting's generator. Cost: one kernel ridge fit (O(N^3) exact,
O(N D^2) Nystrom) before the loop, O(Q T p) more per prediction and O(Q N r) more per W^F.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._validation import check_random_state
from ..base import FitContext
from ..kernel_models.kernel_ensemble import KernelEnsemble
from ..kernel_models.ridge import KernelRidgeRegressor
from ..outputs.space import OutputSpace
from ..trees.ensemble import TreeEnsemble

#: The named starting model: kernel ridge with its width and penalty by CV.
KERNEL_RIDGE = "kernel_ridge"
#: Kernel ridge parameters a starting model does not take: the output space and input
#: kind are the boosting's (trees split on X's columns, so X is never a similarity).
NOT_FOR_START = ("factor_rank", "factor_tol", "n_landmarks")


class StartModelSpec:
    """Constraint of ``init``: a dict of kernel ridge parameters, or an unfitted
    :class:`~okcore.kernel_models.ridge.KernelRidgeRegressor` (None and "kernel_ridge" are
    an Options constraint beside it)."""

    def accepts(self, value: Any) -> bool:
        if isinstance(value, KernelRidgeRegressor):
            return "ensemble_" not in value.__dict__
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            return False
        names = set(KernelRidgeRegressor._get_param_names()) - set(NOT_FOR_START)
        return set(value) <= names and value.get("input_kernel", "rbf") != "precomputed"

    def describe(self) -> str:
        return (
            "an unfitted KernelRidgeRegressor or a dict of its parameters (not factor_rank, "
            "factor_tol, n_landmarks; input_kernel 'rbf' or 'linear')"
        )

    def json_schema(self) -> None:
        return None  # the service names the starting model: None or "kernel_ridge"


def start_params(init: Any) -> dict[str, Any] | None:
    """The kernel ridge parameters of ``init`` as JSON values (None: no starting model):
    what a saved model records and an automatic choice settles."""
    if init is None:
        return None
    if isinstance(init, str):
        return {"gamma": "cv"}
    raw = init.get_params() if isinstance(init, KernelRidgeRegressor) else dict(init)
    out: dict[str, Any] = {}
    for name, value in raw.items():
        if name in NOT_FOR_START or isinstance(value, np.random.Generator):
            continue
        if isinstance(value, np.ndarray | list | tuple):
            value = [float(v) for v in np.ravel(np.asarray(value, dtype=np.float64))]
        elif isinstance(value, np.generic):
            value = value.item()
        out[name] = value
    return out


def start_estimator(init: Any) -> KernelRidgeRegressor:
    """The unfitted kernel ridge ``init`` names (checked: its own constraints)."""
    params = start_params(init)
    assert params is not None
    if isinstance(init, KernelRidgeRegressor):  # a Generator random_state is kept as given
        params["random_state"] = init.random_state
    model = KernelRidgeRegressor(**params)
    model.validate_params()
    return model


def fit_start(
    init: Any,
    X: np.ndarray,
    space: OutputSpace,
    rng: np.random.Generator,
    start: float,
    sample_weight: np.ndarray | None = None,
) -> tuple[KernelEnsemble, dict[str, Any]]:
    """Kernel ridge fitted on the rows X in the boosting's output ``space`` (the same
    factor Phi, so its F(x) is in the trees' coordinates) with the boosting's
    ``sample_weight`` (N,), seeded by its own random state or, when it has none, by a draw
    of ``rng``; with what it resolved, named ``init_alpha`` (the penalty) and ``init_gamma``
    (one RBF width, when every input has the same)."""
    model = start_estimator(init)
    seed = model.random_state
    own = (
        check_random_state(seed) if seed is not None else np.random.default_rng(rng.integers(2**63))
    )
    fitted = model._fit_model(FitContext(X, space, own, None, None, start, sample_weight))
    assert isinstance(fitted.ensemble, KernelEnsemble)
    return fitted.ensemble, {f"init_{k}": v for k, v in fitted.resolved_params.items()}


@dataclass(frozen=True)
class StartedEnsemble:
    """A boosted ensemble started from kernel ridge (module docstring): ``start`` the
    kernel ridge model, ``trees`` the boosted trees (F_0 = 0, zero F_0 weights) and
    ``train_start`` F_krr on the N training rows, (N, r)."""

    start: KernelEnsemble
    trees: TreeEnsemble
    train_start: np.ndarray

    @property
    def n_trees(self) -> int:
        return self.trees.n_trees

    def truncate(self, n_trees: int) -> StartedEnsemble:
        """The starting model and the first ``n_trees`` trees (0: kernel ridge alone)."""
        return replace(self, trees=self.trees.truncate(n_trees))

    def decision(self, X: Any) -> np.ndarray:
        """F(x) = F_krr(x) + nu sum_m h_m(x), (Q, r). O(Q (T p + M r))."""
        return self.start.decision(X) + self.trees.decision(X)

    def staged_decision(self, X: Any) -> Any:
        """F after each tree m = 1..M, each (Q, r)."""
        F0 = self.start.decision(X)
        for F in self.trees.staged_decision(X):
            yield F0 + F

    def weights(self, X: Any, n_threads: int = 1) -> np.ndarray:
        """W^F (Q, N) with F(x) = W^F(x) Phi (module docstring). O(M Q N + Q N r)."""
        F0 = self.start.decision(X)
        if self.trees.n_trees == 0:
            return self.start.weights_of(F0)
        R = self.trees.weights(X, n_threads=n_threads)
        return R + self.start.weights_of(F0 - R @ self.train_start)
