"""Cost model of boosted sparse KRR (the kernel-model family's part of
:meth:`~okcore.base.OKEstimator.estimate_cost`): M stages, each fitting D basis vectors on
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
