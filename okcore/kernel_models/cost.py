"""Cost models of the kernel models (the family's part of
:meth:`~okcore.base.OKEstimator.estimate_cost`): plain kernel ridge regression
(:func:`ridge_cost`), and boosted sparse KRR: M stages, each fitting D basis vectors on
a subset of n rows and evaluated on all N rows, with an output factor of r columns and p
inputs:

    work      = 8 N D (the stage's kernel block) + 32 N r (factor, F, residuals, a
                temporary) + 32 n D (the info-gain selection's factors)
                + 8 N r M with reweight + model
    per stage = KRR_FLOP_SECONDS x (N D (p + 20 + 2 r (1 + 2 cg_iter))
                + n D (3 D + r + p) + D^3)
    model     = 8 M D (w + r + 1), w = p (0 for a precomputed input kernel)

The stage size is D (basis vectors per stage), the search "kernel".
"""

from __future__ import annotations

from ..cost import StageCost
from .ard import ARD_MAX_ITER

KRR_FLOP_SECONDS = 1e-9
"""Seconds per floating-point operation of a boosted-KRR stage (kernel values, products,
the basis selection): ~5e-10 measured on kin40k stages (N = 36,000, D = 200, one thread,
bench/krr_kin40k.py), doubled for a loaded machine."""


def krr_stages_cost(
    n_samples: int,
    n_features: int,
    rank: int,
    *,
    n_stages: int,
    subset_size: int,
    n_basis: int,
    cg_iter: int,
    reweight: bool,
    precomputed: bool,
) -> StageCost:
    """The cost of ``n_stages`` stages of ``n_basis`` basis vectors chosen on subsets of
    ``subset_size`` rows (module docstring); ``cg_iter`` 0 without CG refinement."""
    n, p, r, M = n_samples, n_features, rank, n_stages
    subset = min(subset_size, n)
    D = min(n_basis, subset)
    width = 0 if precomputed else p
    model = 8.0 * M * D * (width + r + 1)
    reweight_bytes = 8.0 * n * r * M if reweight else 0.0
    work = 8.0 * n * D + 32.0 * n * r + 32.0 * subset * D + reweight_bytes + model
    flops = n * D * (p + 20 + 2 * r * (1 + 2 * cg_iter)) + subset * D * (3 * D + r + p) + D**3
    return StageCost(
        n_stages=M,
        stage_size=D,
        search="kernel",
        work_bytes=work,
        setup_seconds=0.0,
        stage_seconds=KRR_FLOP_SECONDS * flops,
        model_bytes=model,
    )


#: Floating-point operations of a symmetric eigendecomposition with vectors, per n^3
#: (LAPACK's divide and conquer: about 4/3 n^3 for the tridiagonal reduction and up to
#: 8/3 n^3 for the vectors, rounded up).
EIGH_FLOPS = 4.0


def ridge_cost(
    n_samples: int,
    n_features: int,
    rank: int,
    *,
    n_components: int | None,
    n_folds: int,
    precomputed: bool,
    n_widths: int = 1,
    ard_rows: int = 0,
) -> StageCost:
    """The cost of one kernel ridge fit (:class:`~okcore.kernel_models.ridge.KernelRidgeRegressor`)
    and of its ``n_folds`` CV fits (0 for a fixed alpha) for each of ``n_widths`` RBF widths
    (``gamma="cv"``), as one stage of D basis rows:

        exact     flops = N^2 (p + 3 r) + N^3 / 3 (Cholesky), bytes 24 N^2
        Nystrom   flops = N D (p + 2 D + r) + (EIGH_FLOPS + 2) D^3, bytes 8 (N D + 3 D^2)

    each CV fit the same on (K - 1) / K of the rows with EIGH_FLOPS N^3 (the eigendecomposition
    that serves every penalty) for the Cholesky; model = 8 D (w + r + 1). ``ard_rows`` n_a > 0
    (``gamma="ard"``): plus ARD_MAX_ITER likelihood evaluations on n_a rows,
    (4/3) n_a^3 + n_a^2 (3 p + 2 r) flops each (:mod:`okcore.kernel_models.ard`)."""
    n, p, r = n_samples, n_features, rank
    width = 0 if precomputed else p

    def fit_flops(rows: float, factor: float) -> float:
        if n_components is None or n_components >= rows:
            return rows * rows * (width + 3 * r) + factor * rows**3
        D = float(n_components)
        return rows * D * (width + 2 * D + r) + (EIGH_FLOPS + 2) * D**3

    D = n if n_components is None else min(n_components, n)
    # the final fit solves one penalty (Cholesky, n^3 / 3); a CV fold, every penalty (eigh)
    fold_rows = n * (n_folds - 1) / max(n_folds, 1)
    flops = fit_flops(n, 1.0 / 3.0) + n_widths * n_folds * fit_flops(fold_rows, EIGH_FLOPS)
    if ard_rows:
        a = float(min(ard_rows, n))
        flops += ARD_MAX_ITER * (4.0 / 3.0 * a**3 + a * a * (3 * width + 2 * r))
    exact = D == n
    work = 8.0 * (3.0 * n * n if exact else n * D + 3.0 * D * D)
    model = 8.0 * D * (width + r + 1)
    return StageCost(
        n_stages=1,
        stage_size=D,
        search="kernel",
        work_bytes=work + model,
        setup_seconds=0.0,
        stage_seconds=KRR_FLOP_SECONDS * flops,
        model_bytes=model,
    )
