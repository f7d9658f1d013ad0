"""Similarities as inputs: the empirical kernel map against kernel PCA components, on the
Yamanishi et al. (2008) drug-target sets, with the drug_target protocol.

Each side's similarity (drug-drug SIMCOMP, symmetrised; target-target Smith-Waterman) is
turned into tree inputs by okcore.SimilarityInputs inside each fold, from the block among
that fold's learned vertices only: "kernel_map" (similarities to the learned vertices as
features) or "kpca" (kernel PCA of that block: every component with a positive eigenvalue,
or the leading 20). The plain kernel ridge model (okcore.KernelRidgeRegressor, the
similarity as its precomputed input kernel, alpha by 5-fold inner CV) is the reference
that needs no map. Same K x K degree-stratified folds as bench.drug_target (K = 4 nr, 3
gpcr, 2 ic; seed 0), two-step new x new; AUROC and average precision per block.

    python -m bench.similarity_inputs                 # nr, gpcr, ic
    python -m bench.similarity_inputs --sets gpcr     # one set
    python -m bench.similarity_inputs --quick         # smoke run (nr, tiny models)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

from bench.common import Report, base_parser, log
from bench.drug_target import SETS, load_set, save
from okcore import KernelRidgeRegressor, OK3ForestRegressor, OKBoostRegressor, SimilarityInputs
from okcore.bipartite import BipartiteRegressor, bipartite_cross_validate

ESTIMATORS = {
    "okboost_et": "OK3-et + OKBoost (M 300, nu 0.05)",
    "ok3_et": "OK3 extra-trees (100)",
}
MAPS = {"kernel_map": "kernel map", "kpca": "kPCA (all components)", "kpca20": "kPCA (20)"}
LABELS = {
    **{f"{e}/{m}": f"{ESTIMATORS[e]}, {MAPS[m]}" for e in ESTIMATORS for m in MAPS},
    "krr": "okcore KernelRidgeRegressor (precomputed, alpha by CV)",
}


def make_method(method: str, quick: bool) -> Any:
    if method == "krr":
        inner: Any = KernelRidgeRegressor(input_kernel="precomputed", random_state=0)
        return BipartiteRegressor(inner)
    estimator, map_name = method.split("/")
    if estimator == "okboost_et":
        est: Any = OKBoostRegressor(
            splitter="random", n_estimators=5 if quick else 300, learning_rate=0.05,
            max_splits=10, random_state=0,
        )  # fmt: skip
    else:
        est = OK3ForestRegressor(
            n_estimators=5 if quick else 100, splitter="random", bootstrap=False, random_state=0
        )
    components = 20 if map_name == "kpca20" else None
    kind = "kpca" if map_name.startswith("kpca") else "kernel_map"
    return BipartiteRegressor(SimilarityInputs(est, map=kind, n_components=components))


def run(argv: Sequence[str] | None = None) -> Report:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=None, choices=["nr", "gpcr", "ic"])
    parser.add_argument("--methods", nargs="+", default=None, choices=list(LABELS))
    args = parser.parse_args(argv)
    sets = args.sets or (["nr"] if args.quick else ["nr", "gpcr", "ic"])
    methods = args.methods or list(LABELS)
    report = Report(
        name=args.name or ("similarity_inputs_quick" if args.quick else "similarity_inputs"),
        argv=["bench.similarity_inputs", *(argv if argv is not None else sys.argv[1:])],
        settings={"sets": sets, "methods": methods, "seed": args.seed, "quick": args.quick},
        labels=dict(LABELS),
    )
    for name in sets:
        Y, S_targets, S_drugs, _, _ = load_set(name)
        log(f"{name}: {Y.shape[0]} targets x {Y.shape[1]} drugs")
        for method in methods:
            cpu = time.process_time()
            result = bipartite_cross_validate(
                make_method(method, args.quick), S_targets, S_drugs, Y, n_folds=SETS[name],
                row_inputs="similarity", col_inputs="similarity", random_state=args.seed,
            )  # fmt: skip
            summary = result.summary()
            report.add(f"{name}/{method}", **summary, cpu_s=time.process_time() - cpu)
            log(
                f"  {method:22s} AUROC {summary['blocks_auroc']:.3f} AP "
                f"{summary['blocks_ap']:.3f} ({time.process_time() - cpu:.0f} CPU s)"
            )
            save(report, args, sets, methods)
    print(save(report, args, sets, methods))
    return report


if __name__ == "__main__":
    run()
