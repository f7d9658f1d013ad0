"""Network completion on citation graphs (paper Table 1, network columns; paper section 3).

The paper's yeast enzyme network is not public; we use Cora or CiteSeer (LINQS originals,
citations symmetrised, vertex inputs = binary word vectors, keeping the words used by at least
``--min-df`` (default 5) vertices of the sample: an unsupervised filter that makes the exact
split search 2-3 times cheaper).

Protocol: a vertex set V (a snowball sample of ``--subset`` vertices, default 334 as in the
paper, or the whole graph with ``--subset 0``); 5-fold CV over V. On each fold the output
kernel of the learning vertices is the diffusion kernel expm(-beta L), beta = 1, of the graph
induced on them (test edges are never seen). For test vertices:
- AUC(TS): the predicted kernel k^(v, v') = <F(x_v), F(x_v')> scores every pair with at least
  one test vertex (test-test and test-learning, both sides predicted as in the paper), against
  the true adjacency (``auc``). ``auc_known`` scores test-learning pairs with
  <F(x_v), phi(y_v')> instead (the learning side observed).
- Err^phi(TS) = mean ||phi(y_v) - F(x_v)||^2 where phi is the feature map of the diffusion
  kernel of the whole graph on V (the paper computes the kernel on the whole graph) and
  F(x_v) = sum_i w_i(x_v) phi(y_i) uses the model's weights over the learning vertices.
J for OKBoost: inner 5-fold CV over the learning vertices, the inner truth being the graph
induced on the learning vertices; J maximises the inner AUC (``--select auc``, default) or
minimises the inner Err^phi (``--select err_phi``); both inner curves are saved. On these
sparse graphs the diffusion kernel's Err^phi hardly moves with J (the mean predictor is
already close to the best), so AUC is the informative criterion.

    python -m bench.network_completion --graph cora              # 334-vertex snowball sample
    python -m bench.network_completion --graph cora --subset 0 --methods ok3_et okboost_et
    python -m bench.network_completion --quick                   # CI smoke run

Whole graphs at the paper's budget: ``--factor-rank R`` truncates every okcore
model's output factor to R eigenpairs (okcore ``factor_rank``; several values compare the
ranks, each as its own row), ``--csr`` passes the word vectors as a scipy CSR matrix,
``--max-folds K`` stops after K outer folds (a rank sweep on one fold), and the per-fold fit
wall / CPU times and load averages are printed against ``--fold-target`` seconds:

    python -m bench.network_completion --graph cora --subset 0 --min-df 1 --csr \
        --methods okboost_et --fixed-j 30 --factor-rank 512 --name network_cora_all_scale
    python -m bench.network_completion --graph cora --subset 0 --min-df 1 --csr --max-folds 1 \
        --methods okboost_et --fixed-j 30 --factor-rank 64 128 256 512 1024 --name ...
"""

from __future__ import annotations

import gzip
import os
import sys
import time
from collections import deque
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from bench.common import (
    OKCORE_METHODS,
    BoostConfig,
    Report,
    base_parser,
    data_dir,
    learning_folds,
    log,
    make_okcore,
    output_dirs,
    select_by_inner_cv,
    weight_errors,
)

BETA = 1.0
# Coarser than Friedman1's grid: a 500-tree fit costs ~1-20 s here (see docs/RESULTS.md).
J_GRID_NETWORK = (1, 3, 10, 30)


def load_citation(name: str) -> dict[str, Any]:
    """Cora or CiteSeer: ``X`` (n, p) uint8 word indicators, ``edges`` (E, 2) undirected
    (i < j, no self-loops, no duplicates), ``labels`` (n,) class names.

    Cites lines naming an unknown paper id (17 in CiteSeer) and self-loops are dropped
    (see $OKBOOST_DATA/<name>/SOURCE.md).
    """
    folder = data_dir() / name
    ids: list[str] = []
    rows: list[np.ndarray] = []
    labels: list[str] = []
    with gzip.open(folder / f"{name}.content.gz", "rt") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            ids.append(parts[0])
            rows.append(np.asarray(parts[1:-1], dtype=np.uint8))
            labels.append(parts[-1])
    index = {pid: i for i, pid in enumerate(ids)}
    pairs = set()
    with open(folder / f"{name}.cites") as f:
        for line in f:
            a, b = line.split()
            if a in index and b in index and index[a] != index[b]:
                i, j = index[a], index[b]
                pairs.add((min(i, j), max(i, j)))
    edges = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    return {"X": np.vstack(rows), "edges": edges, "labels": np.array(labels)}


def snowball(edges: np.ndarray, n: int, size: int, seed: int) -> np.ndarray:
    """``size`` vertices reached by a breadth-first walk (neighbours in random order) from a
    random vertex of the largest connected component; sorted vertex ids.

    A uniform random subset of a few hundred vertices of a sparse citation graph keeps almost
    no edges (Cora: about 80 for 334 vertices), so it would leave nothing to predict.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    A = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    A = (A + A.T).tocsr()
    _, comp = connected_components(A, directed=False)
    big = np.flatnonzero(comp == np.bincount(comp).argmax())
    if size >= len(big):
        return np.sort(big[:size])
    rng = np.random.default_rng(seed)
    start = int(rng.choice(big))
    seen = {start}
    queue = deque([start])
    while queue and len(seen) < size:
        v = queue.popleft()
        nbrs = A.indices[A.indptr[v] : A.indptr[v + 1]].copy()
        rng.shuffle(nbrs)
        for u in nbrs:
            if u not in seen and len(seen) < size:
                seen.add(int(u))
                queue.append(int(u))
    return np.array(sorted(seen), dtype=np.int64)


def induced_edges(edges: np.ndarray, keep: np.ndarray, n: int) -> np.ndarray:
    """Edges with both ends in ``keep``, renumbered 0..len(keep)-1 in the order of ``keep``."""
    pos = np.full(n, -1, dtype=np.int64)
    pos[keep] = np.arange(len(keep))
    e = pos[edges]
    return e[(e >= 0).all(axis=1)]


class NetworkProblem:
    """Vertex inputs X (n, p), graph edges over 0..n-1, the whole-graph diffusion kernel."""

    def __init__(
        self, X: np.ndarray, edges: np.ndarray, beta: float = BETA, csr: bool = False
    ) -> None:
        from okcore import graph

        if csr:  # sparse word indicators, as okcore takes them (fit and predict)
            from scipy.sparse import csr_matrix

            self.X = csr_matrix(np.asarray(X, dtype=np.float64))
        else:
            self.X = np.asarray(X, dtype=np.float64)
        self.edges = edges
        self.n = len(X)
        self.beta = beta
        self.K = graph.diffusion_gram(edges, self.n, beta)
        self.A = graph.adjacency(edges, self.n)

    def fit(self, est: Any, learn: np.ndarray, **fit_params: Any) -> Any:
        """Fit on the learning vertices with the diffusion kernel of their induced graph
        (``fit_params``, e.g. a ``callback``, go to ``est.fit``)."""
        kernel = {
            "type": "diffusion",
            "beta": self.beta,
            "edges": induced_edges(self.edges, learn, self.n).tolist(),
        }
        return est.fit(self.X[learn], kernel=kernel, **fit_params)

    def err_phi(
        self, est: Any, learn: np.ndarray, test: np.ndarray, K: np.ndarray | None = None
    ) -> np.ndarray:
        """Per-vertex ||phi(y_v) - F(x_v)||^2 with phi of kernel ``K`` (default: whole graph)."""
        K = self.K if K is None else K
        W = est.predict_weights(self.X[test])
        return weight_errors(W, K[np.ix_(learn, learn)], K[np.ix_(test, learn)], np.diag(K)[test])[
            "err_phi"
        ]

    def inner_scores(
        self, est: Any, learn: np.ndarray, test: np.ndarray, *, truth: np.ndarray
    ) -> dict[str, float]:
        """Fit on ``learn``, score on ``test`` (inner CV): Err^phi under kernel ``truth``, AUC."""
        self.fit(est, learn)
        return {
            "err_phi": float(self.err_phi(est, learn, test, truth).mean()),
            "auc": self.auc(est, learn, test)["auc"],
        }

    def auc(self, est: Any, learn: np.ndarray, test: np.ndarray) -> dict[str, float]:
        """AUC over pairs with at least one test vertex (both sides predicted / learning side
        observed)."""
        from okcore import metrics

        Xt = self.X[test]
        k_nn = est.predict_kernel(Xt)
        a_nn, a_nk = self.A[np.ix_(test, test)], self.A[np.ix_(test, learn)]
        return {
            "auc": metrics.network_auc(k_nn, est.predict_kernel(Xt, self.X[learn]), a_nn, a_nk),
            "auc_known": metrics.network_auc(k_nn, est.predict_kernel_train(Xt), a_nn, a_nk),
        }


def learning_graph_kernel(problem: NetworkProblem, learn: np.ndarray) -> np.ndarray:
    """(n, n) matrix holding, on the learning block, the diffusion kernel of the graph induced
    on the learning vertices (zeros elsewhere): the truth for the inner CV."""
    from okcore import graph

    K = np.zeros_like(problem.K)
    K[np.ix_(learn, learn)] = graph.diffusion_gram(
        induced_edges(problem.edges, learn, problem.n), len(learn), BETA
    )
    return K


def build_problem(
    graph_name: str, subset: int, seed: int, min_df: int, csr: bool = False
) -> tuple[NetworkProblem, dict[str, Any]]:
    """The vertex set (snowball sample or whole graph), inputs with rare words dropped."""
    data = load_citation(graph_name)
    n_all = len(data["X"])
    keep = snowball(data["edges"], n_all, subset, seed) if subset else np.arange(n_all)
    X = data["X"][keep]
    X = X[:, X.sum(axis=0) >= max(min_df, 1)]
    edges = induced_edges(data["edges"], keep, n_all)
    info = {
        "graph": graph_name,
        "n_vertices": len(keep),
        "n_edges": len(edges),
        "n_features": X.shape[1],
        "density": 2 * len(edges) / (len(keep) * (len(keep) - 1)),
    }
    problem = NetworkProblem(X, edges, csr=csr)
    # Err^phi of predicting phi = 0 (its scale): mean k(v, v) of the whole-graph kernel.
    info["mean_k_vv"] = float(np.diag(problem.K).mean())
    return problem, info


def run(argv: Sequence[str] | None = None) -> Report:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--graph", choices=("cora", "citeseer"), default="cora")
    parser.add_argument(
        "--subset", type=int, default=334, help="snowball sample size (0 = whole graph)"
    )
    parser.add_argument(
        "--min-df",
        type=int,
        default=5,
        help="keep words present in at least this many vertices of the sample",
    )
    parser.add_argument(
        "--select",
        choices=("auc", "err_phi"),
        default="auc",
        help="inner-CV criterion for J (both are recorded)",
    )
    parser.add_argument("--methods", nargs="+", choices=OKCORE_METHODS, default=OKCORE_METHODS)
    parser.add_argument("--n-trees", type=int, default=100)
    parser.add_argument("--n-estimators", type=int, default=500, help="M for OKBoost (paper: 500)")
    parser.add_argument(
        "--learning-rate", type=float, default=0.01, help="nu for OKBoost (paper: 0.01)"
    )
    parser.add_argument(
        "--fixed-j", type=int, default=None, help="use this J instead of the inner CV (cheaper)"
    )
    parser.add_argument(
        "--factor-rank",
        type=int,
        nargs="+",
        default=None,
        help="okcore factor_rank of every model's output factor (several: one row per rank; "
        "0 = no truncation)",
    )
    parser.add_argument("--csr", action="store_true", help="inputs as a scipy CSR matrix")
    parser.add_argument(
        "--max-folds", type=int, default=None, help="stop after this many outer folds"
    )
    parser.add_argument(
        "--fold-target",
        type=float,
        default=60.0,
        help="per-fold fit time target (s) the timing table is checked against",
    )
    args = parser.parse_args(argv)
    if args.quick:
        cfg = BoostConfig(
            n_estimators=10, learning_rate=0.1, j_grid=(2, 5), n_trees=4, inner_folds=2
        )
        subset, n_folds = 60, 2
    else:
        cfg = BoostConfig(
            n_estimators=args.n_estimators,
            learning_rate=args.learning_rate,
            n_trees=args.n_trees,
            j_grid=tuple(args.j_grid or J_GRID_NETWORK),
        )
        subset, n_folds = args.subset, 5
    problem, info = build_problem(args.graph, subset, args.seed, args.min_df, csr=args.csr)
    tag = f"{args.graph}_{subset or 'all'}"
    report = Report(
        (args.name or "network_" + tag) + ("_quick" if args.quick else ""),
        ["bench.network_completion", *(argv if argv is not None else sys.argv[1:])],
        {
            **info,
            "beta": BETA,
            "n_folds": n_folds,
            "min_df": args.min_df,
            "n_estimators": cfg.n_estimators,
            "learning_rate": cfg.learning_rate,
            "j_grid": cfg.j_grid,
            "inner_folds": cfg.inner_folds,
            "n_trees": cfg.n_trees,
            "select": args.select,
            "fixed_J": args.fixed_j,
            "methods": list(args.methods),
            "seed": args.seed,
            "factor_rank": args.factor_rank,
            "csr_inputs": args.csr,
            "max_folds": args.max_folds,
            "blas_threads": {
                k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
            },
        },
    )
    report.extra.update(selected_J={}, inner_cv={}, fold_timing=[], factor={})
    ranks: list[int | None] = list(args.factor_rank) if args.factor_rank else [None]
    runs = [(m, r) for m in args.methods for r in ranks]

    def row_name(method: str, rank: int | None) -> str:
        if rank is None or len(ranks) == 1:
            return method
        key = f"{method}@r{rank}"
        report.labels[key] = (
            f"{report.labels.get(method, method)}, factor_rank {rank or 'None (full)'}"
        )
        return key

    log(f"{tag}: {info}")

    for fold, (learn, test) in enumerate(
        learning_folds(problem.n, n_folds, args.seed, small_learning_set=False)
    ):
        if args.max_folds is not None and fold >= args.max_folds:
            break
        K_learn_graph = None
        for method, rank in runs:
            J = args.fixed_j if method in ("okboost", "okboost_et") else None
            if method in ("okboost", "okboost_et") and J is None:
                if K_learn_graph is None:  # inner truth: the graph induced on the learning set
                    K_learn_graph = learning_graph_kernel(problem, learn)
                J, curve = select_by_inner_cv(
                    partial(_make, method, rank=rank, seed=args.seed + fold, cfg=cfg),
                    cfg.j_grid,
                    partial(problem.inner_scores, truth=K_learn_graph),
                    learn,
                    n_splits=cfg.inner_folds,
                    seed=args.seed + fold,
                    criterion=args.select,
                    maximize=args.select == "auc",
                )
                report.extra["selected_J"].setdefault(method, []).append(J)
                report.extra["inner_cv"].setdefault(method, []).append(curve)
            est = _make(method, J, rank=rank, seed=args.seed + fold, cfg=cfg)
            load_before = [round(x, 2) for x in os.getloadavg()]
            t0, c0 = time.perf_counter(), time.process_time()
            problem.fit(est, learn)
            elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
            load_after = [round(x, 2) for x in os.getloadavg()]
            err = float(problem.err_phi(est, learn, test).mean())
            aucs = problem.auc(est, learn, test)
            name = row_name(method, rank)
            report.add(name, err_phi=err, fit_time=elapsed, fit_cpu=cpu, **aucs)
            space = est.output_space_ if hasattr(est, "output_space_") else None
            if space is not None:
                report.extra["factor"].setdefault(name, []).append(
                    {
                        "rank": int(space.rank),
                        "trace_fraction": getattr(space, "trace_fraction", None),
                        "max_bins": getattr(est, "max_bins_", None),
                        "sketch_dim": getattr(est, "sketch_dim_", None),
                    }
                )
            report.extra["fold_timing"].append(
                {
                    "fold": fold,
                    "method": name,
                    "fit_wall_s": round(elapsed, 2),
                    "fit_cpu_s": round(cpu, 2),
                    "load_before": load_before,
                    "load_after": load_after,
                }
            )
            log(
                f"fold {fold}: {name:12s} J={J} Err^phi={err:.4f} AUC={aucs['auc']:.4f} "
                f"AUC(known)={aucs['auc_known']:.4f} ({elapsed:.1f}s wall, {cpu:.1f}s CPU, "
                f"load {load_before[0]} -> {load_after[0]})"
            )

    out_dir, _ = output_dirs(args)
    path = report.save(out_dir)
    print(
        f"## Network completion, {args.graph}: {info['n_vertices']} vertices, "
        f"{info['n_edges']} edges, {info['n_features']} input features, {n_folds}-fold CV"
        + (f" (first {args.max_folds} fold(s) only)" if args.max_folds else "")
        + "\n"
    )
    print("### AUC(TS), test-learning pairs scored with both sides predicted (paper)\n")
    print(report.table("auc", "network_auc"))
    print("\n### AUC(TS), test-learning pairs scored with the learning side observed\n")
    print(report.table("auc_known", None))
    print("\n### Err^phi(TS), truth = diffusion kernel of the whole graph on the sample\n")
    print(report.table("err_phi", "network_err_phi"))
    print(f"\nselected J: {report.extra['selected_J']}")
    if args.factor_rank or args.csr or args.max_folds:
        print(
            f"\n### Fit time per fold (target < {args.fold_target:.0f} s; wall and CPU of the "
            "fit, output factor included; load average before -> after)\n"
        )
        print(
            "| fold | method | fit wall (s) | fit CPU (s) | load | factor rank | trace fraction |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- |")
        seen: dict[str, int] = {}
        for t in report.extra["fold_timing"]:
            f = report.extra["factor"].get(t["method"], [])
            i = seen.get(t["method"], 0)
            seen[t["method"]] = i + 1
            fr = f[i] if i < len(f) else {}
            tf = fr.get("trace_fraction")
            print(
                f"| {t['fold']} | {report.labels.get(t['method'], t['method'])} | "
                f"{t['fit_wall_s']:.1f} | {t['fit_cpu_s']:.1f} | {t['load_before'][0]} -> "
                f"{t['load_after'][0]} | {fr.get('rank', '—')} | "
                f"{'—' if tf is None else f'{tf:.3f}'} |"
            )
        walls = [t["fit_wall_s"] for t in report.extra["fold_timing"]]
        over = sum(w >= args.fold_target for w in walls)
        print(
            f"\nfolds under {args.fold_target:.0f} s: {len(walls) - over} of {len(walls)} "
            f"(max {max(walls):.1f} s wall)"
        )
    print(f"\n{report.timing()}; results in {path}")
    return report


def _make(
    method: str, max_splits: int | None = None, *, rank: int | None, seed: int, cfg: BoostConfig
) -> Any:
    """make_okcore plus an optional factor_rank (okcore's truncation of the output factor)."""
    est = make_okcore(method, max_splits, seed=seed, cfg=cfg)
    if rank:  # 0 / None: the exact factor
        est.set_params(factor_rank=rank)
    return est


if __name__ == "__main__":
    run()
