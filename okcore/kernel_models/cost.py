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
#: Seconds per unit of each kind of plain kernel ridge work (:func:`ridge_work`): kernel
#: values (distances, exponentials, products with the outputs), LAPACK factorisations
#: (Cholesky, symmetric eigendecomposition) and the per-input widths' likelihood
#: evaluations (``gamma="ard"``). Fitted by bench/krr_cost.py to eleven fits (N = 400 to
#: 6,000, p = 8 to 100, r = 1 to 32, one thread, 2026-12-03; bench/results/krr_cost.txt:
#: 5.7e-10, 6.2e-11, 1.0e-10, every fit within 0.7-1.1x) and about doubled for a loaded
#: machine, as KRR_FLOP_SECONDS is: they estimate those fits at 1.3-2.0x their CPU, where
#: the single boosted-KRR rate they replace estimated them at 9-16x.
RIDGE_KERNEL_SECONDS = 1.1e-9
RIDGE_FACTOR_SECONDS = 1.1e-10
ARD_FLOP_SECONDS = 1.6e-10


def ridge_work(
    n_samples: int,
    n_features: int,
    rank: int,
    *,
    n_components: int | None,
    n_folds: int,
    precomputed: bool,
    n_widths: int = 1,
    ard_rows: int = 0,
) -> tuple[float, float, float]:
    """(kernel operations, factorisation flops, likelihood flops) of one kernel ridge fit
    (:class:`~okcore.kernel_models.ridge.KernelRidgeRegressor`) and of its ``n_folds`` CV fits
    (0 for a fixed alpha) for each of ``n_widths`` RBF widths (``gamma="cv"``):

        exact     kernel N^2 (p + 3 r), factorisation N^3 / 3 (Cholesky)
        Nystrom   kernel N D (p + r), factorisation 2 N D^2 + (EIGH_FLOPS + 2) D^3

    each CV fit the same on (K - 1) / K of the rows with EIGH_FLOPS N^3 (the
    eigendecomposition that serves every penalty) for the Cholesky. ``ard_rows`` n_a > 0
    (``gamma="ard"``): ARD_MAX_ITER likelihood evaluations on n_a rows, (4/3) n_a^3 + n_a^2
    (3 p + 2 r) flops each (:mod:`okcore.kernel_models.ard`). O(1)."""
    n, p, r = n_samples, n_features, rank
    width = 0 if precomputed else p

    def fit_work(rows: float, factor: float) -> tuple[float, float]:
        if n_components is None or n_components >= rows:
            return rows * rows * (width + 3 * r), factor * rows**3
        D = float(n_components)
        return rows * D * (width + r), 2 * rows * D * D + (EIGH_FLOPS + 2) * D**3

    # the final fit solves one penalty (Cholesky, n^3 / 3); a CV fold, every penalty (eigh)
    fold_rows = n * (n_folds - 1) / max(n_folds, 1)
    final_kernel, final_factor = fit_work(n, 1.0 / 3.0)
    fold_kernel, fold_factor = fit_work(fold_rows, EIGH_FLOPS)
    kernel = final_kernel + n_widths * n_folds * fold_kernel
    factor = final_factor + n_widths * n_folds * fold_factor
    ard = 0.0
    if ard_rows:
        a = float(min(ard_rows, n))
        ard = ARD_MAX_ITER * (4.0 / 3.0 * a**3 + a * a * (3 * width + 2 * r))
    return kernel, factor, ard


#: Rows of the whitened Nystrom basis B = k(rows, basis) W that a kernel ridge fit forms at
#: a time (:func:`~okcore.kernel_models.ridge.nystrom_path`): a whole B was a second N x D
#: array.
NYSTROM_BLOCK_ROWS = 4096


def ridge_held_bytes(n_rows: int, n_basis: int) -> float:
    """Bytes of kernel values a kernel ridge fit on ``n_rows`` rows with ``n_basis`` basis
    rows holds at its peak: exact (every row a basis row), about 3 N^2 floats (the kernel,
    its symmetrised copy, its eigenvectors); Nystrom, k(rows, basis) (N x D), a block of
    NYSTROM_BLOCK_ROWS rows of B, and 6 D x D (k(basis, basis) symmetrised, its
    eigendecomposition and workspace, the whitening, B^T B and its eigenvectors): measured
    within 5 % of a fit's peak resident memory beyond the process's at N = 20,000 and
    40,000, D = 2000. A CV fold holds its own (on fewer rows) and frees it before the next.
    O(1)."""
    n, D = float(n_rows), float(n_basis)
    if n_basis >= n_rows:
        return 8.0 * 3.0 * n * n
    return 8.0 * (n * D + min(n, NYSTROM_BLOCK_ROWS) * D + 6.0 * D * D)


def ridge_cost(
    n_samples: int,
    n_features: int,
    rank: int,
    work: tuple[float, float, float],
    *,
    n_components: int | None,
    precomputed: bool,
) -> StageCost:
    """The cost of one kernel ridge fit and its CV fits, whose ``work`` :func:`ridge_work`
    counted, as one stage of D basis rows: seconds RIDGE_KERNEL_SECONDS per kernel
    operation, RIDGE_FACTOR_SECONDS per factorisation flop and ARD_FLOP_SECONDS per
    likelihood flop; bytes :func:`ridge_held_bytes`; model = 8 D (w + r + 1)."""
    n, p, r = n_samples, n_features, rank
    width = 0 if precomputed else p
    kernel, factor, ard = work
    D = n if n_components is None else min(n_components, n)
    held = ridge_held_bytes(n, D)
    model = 8.0 * D * (width + r + 1)
    return StageCost(
        n_stages=1,
        stage_size=D,
        search="kernel",
        work_bytes=held + model,
        setup_seconds=0.0,
        stage_seconds=(
            RIDGE_KERNEL_SECONDS * kernel + RIDGE_FACTOR_SECONDS * factor + ARD_FLOP_SECONDS * ard
        ),
        model_bytes=model,
    )
