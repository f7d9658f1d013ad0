"""``okboost bipartite ...`` and ``okboost labels ...``: bipartite networks and label sets
from files (the commands of :mod:`service.cli` for the other tasks).

    okboost bipartite train --rows drugs.csv --cols targets.csv --edges interactions.tsv
                            [--row-similarity S.npy | --col-similarity S.csv]
                            [--adjacency A.npy] [--unknown-pairs unknown.tsv]
                            [--cv-folds 3 | --cv-folds 4,3] [--param ...]
    okboost bipartite kernel MODEL_ID [--rows new_drugs.csv] [--cols new_targets.csv]
                             [--row-similarity S.npy] [--col-similarity S.npy]
                             [--top-k 5] [--threshold 0.5] [--no-scores]
    okboost bipartite evaluate MODEL_ID [--rows ...] [--cols ...] --edges test.tsv
                               [--unknown-pairs unknown.tsv]
    okboost labels train X.csv LABELS.csv [--threshold cv|0.4] [--per-label]
                         [--metric macro_f1] [--scores sigmoid] [--max-cpu-seconds 60]
                         [--model okboost --param ...]
    okboost labels predict MODEL_ID X.csv [--metric hamming_loss]
    okboost labels evaluate MODEL_ID X.csv LABELS.csv [--metric hamming_loss]

Files are read as :mod:`service.cli` reads them (:mod:`service.cli_files`): ``.npy`` or tables (CSV / TSV) whose id
column gives ids; an edge table holds [row, column] pairs by id (or row numbers); a labels
table's header names the labels. Answers are printed as JSON (or written with ``-o``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import numpy as np

import okcore
from service.cli_files import (
    ProgressDisplay,
    client_of,
    load_array,
    load_edges,
    parse_params,
    read_inputs,
    read_similarity,
    table_file,
)
from service.http.tables import matrix_of
from service.schemas.multilabel import ThresholdMetric


def _side(
    features: str | None, similarity: str | None, name: str, training: bool
) -> dict[str, Any]:
    """A side's keyword arguments of the client: features (with the ids of their id
    column) or a similarity matrix (at training, square: plain, or labelled and matched by
    id, its rows' ids the side's ids; at prediction, a table file is sent as it is: labelled,
    its header names the training vertices in any order and the service matches them)."""
    if features is not None and similarity is not None:
        raise ValueError(f"give --{name} or --{name[:-1]}-similarity, not both")
    if features is not None:
        inputs, ids = read_inputs(features)
        return {name: inputs, f"{name[:-1]}_ids": ids}
    if similarity is not None and training:
        matrix, ids = read_similarity(similarity)  # plain, or labelled: matched by id
        return {f"{name[:-1]}_similarity": matrix, f"{name[:-1]}_ids": ids}
    if similarity is not None and Path(similarity).suffix == ".npy":
        return {f"{name[:-1]}_similarity": load_array(similarity)}
    if similarity is not None:  # a table, sent as it is: a labelled one is matched by id
        return {f"{name[:-1]}_similarity": similarity}
    return {}


def _sides(args: argparse.Namespace, training: bool = False) -> dict[str, Any]:
    return {
        **_side(args.rows, args.row_similarity, "rows", training),
        **_side(args.cols, args.col_similarity, "cols", training),
    }


def _known_ids(sides: dict[str, Any]) -> list[str] | None:
    ids = [*(sides.get("row_ids") or []), *(sides.get("col_ids") or [])]
    return ids or None


def _similarity_ids(args: argparse.Namespace) -> list[str]:
    """The ids of the new vertices of the similarity tables that go to the service as they
    are (a labelled table's first column; none for a plain one or ``.npy``), so that edges
    by id may name them as they name the vertices of an id column."""
    ids: list[str] = []
    for path in (args.row_similarity, args.col_similarity):
        if path is not None and Path(path).suffix != ".npy":
            ids += matrix_of(table_file(path), with_ids=True)[1] or []
    return ids


def _folds(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    values = [int(v) for v in text.split(",")]
    return {"folds": values[0] if len(values) == 1 else values}


def _wait(client: Any, accepted: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"model_id": accepted["model_id"], "job_id": accepted["job_id"]}
    if not args.no_wait:
        show = None if args.quiet else ProgressDisplay()  # the job says its unit
        job = client.wait(accepted["job_id"], poll=0.25, on_progress=show)
        result["state"] = job["state"]
        result["fit_seconds"] = job["elapsed"]
    return result


def _print(out: Any, path: str | None) -> None:
    text = json.dumps(out)
    if path:
        Path(path).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)


def _adjacency(path: str | None) -> Any:
    """``--adjacency``: a ``.npy`` array, or a table file sent as it is (plain, or labelled
    as the published matrices are: the service matches its ids to the sides')."""
    if path is None or Path(path).suffix == ".npy":
        return None if path is None else load_array(path)
    return path


def cmd_bipartite_train(args: argparse.Namespace) -> int:
    sides = _sides(args, training=True)
    if "rows" not in sides and "row_similarity" not in sides:
        raise ValueError("give the row vertices: --rows FILE or --row-similarity FILE")
    if "cols" not in sides and "col_similarity" not in sides:
        raise ValueError("give the column vertices: --cols FILE or --col-similarity FILE")
    if (args.edges is None) == (args.adjacency is None):
        raise ValueError("give the interactions: --edges FILE or --adjacency FILE (one)")
    with client_of(args) as client:
        accepted = client.train_bipartite(
            edges=None if args.edges is None else load_edges(args.edges, _known_ids(sides)),
            adjacency=_adjacency(args.adjacency),
            unknown_pairs=(
                None
                if args.unknown_pairs is None
                else load_edges(args.unknown_pairs, _known_ids(sides))
            ),
            model=args.model,
            params=parse_params(args.param),
            new_pairs=args.new_pairs,
            cv=_folds(args.cv_folds),
            name=args.name,
            **sides,
        )
        _print(_wait(client, accepted, args), None)
    return 0


def _edges_json(edges: dict[str, Any] | None) -> Any:
    if edges is None:
        return None
    return {
        k: v.tolist()
        if k.endswith("_ids")
        else [[int(a), int(b), float(s)] for a, b, s in v.tolist()]
        for k, v in edges.items()
    }


def cmd_bipartite_kernel(args: argparse.Namespace) -> int:
    with client_of(args) as client:
        out = client.kernel_bipartite(
            args.model_id,
            threshold=args.threshold,
            top_k=args.top_k,
            return_scores=not args.no_scores,
            **_sides(args),
        )
    scores = out["scores"]
    answer = {
        **out,
        "scores": None if scores is None else {k: v.tolist() for k, v in scores.items()},
        "edges": _edges_json(out["edges"]),
    }
    _print(answer, args.output)
    return 0


def cmd_bipartite_evaluate(args: argparse.Namespace) -> int:
    sides = _sides(args)
    known = [*(_known_ids(sides) or []), *_similarity_ids(args)] or None
    truth: dict[str, Any] = {}
    for name in ("new_rows", "new_cols", "new_pairs"):
        path = getattr(args, name)
        if path is not None:
            truth[name] = load_edges(path, None)
    if args.edges is not None:
        if known is None:
            raise ValueError(
                "--edges names vertices by id: give the test vertices with ids (an id column "
                "in --rows / --cols, or a similarity table with the ids in its first column)"
            )
        truth["by_id"] = load_edges(args.edges, known)
    if args.unknown_pairs is not None:
        if known is None:
            raise ValueError(
                "--unknown-pairs names vertices by id: give the test vertices with ids (an id "
                "column in --rows / --cols, or a similarity table with the ids in its first "
                "column)"
            )
        truth["unknown_pairs"] = {"by_id": load_edges(args.unknown_pairs, known)}
    with client_of(args) as client:
        out = client.evaluate_bipartite(args.model_id, **sides, **truth)
    _print(out, args.output)
    return 0


def load_labels(path: str) -> tuple[np.ndarray, list[str] | None]:
    """0/1 label rows from ``.npy`` or a table whose header (when it has one) names them."""
    if Path(path).suffix == ".npy":
        return load_array(path), None
    table = table_file(path)
    matrix, _ = matrix_of(table, with_ids=False)
    return matrix, table.header


def cmd_labels_train(args: argparse.Namespace) -> int:
    inputs, ids = read_inputs(args.inputs)
    labels, names = load_labels(args.labels)
    threshold: str | float = args.threshold if args.threshold == "cv" else float(args.threshold)
    with client_of(args) as client:
        accepted = client.train_multilabel(
            inputs,
            labels,
            label_names=names,
            ids=ids,
            model=args.model,
            params=parse_params(args.param),
            threshold=threshold,
            per_label=args.per_label,
            metric=args.metric,
            scores=args.scores,
            max_cpu_seconds=args.max_cpu_seconds,
            n_splits=args.n_splits,
            name=args.name,
        )
        _print(_wait(client, accepted, args), None)
    return 0


def cmd_labels_predict(args: argparse.Namespace) -> int:
    inputs, ids = read_inputs(args.inputs)
    with client_of(args) as client:
        out = client.predict_labels(args.model_id, inputs, ids=ids, metric=args.metric)
    _print({k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in out.items()}, args.output)
    return 0


def cmd_labels_evaluate(args: argparse.Namespace) -> int:
    inputs, _ = read_inputs(args.inputs)
    labels, names = load_labels(args.labels)
    with client_of(args) as client:
        out = client.evaluate_labels(
            args.model_id, inputs, labels, metric=args.metric, label_names=names
        )
    _print(out, args.output)
    return 0


def _training_options(
    p: argparse.ArgumentParser, models: tuple[str, ...] = (), default: str = "okboost"
) -> None:
    p.add_argument("--model", default=default, choices=models or okcore.estimator_names())
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="estimator parameter, e.g. n_estimators=200 or n_estimators=auto (repeatable)",
    )
    p.add_argument("--name")
    p.add_argument("--no-wait", action="store_true", help="print the job id and return")
    p.add_argument("--quiet", action="store_true", help="no progress display")


def _metric_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--metric",
        choices=list(get_args(ThresholdMetric)),
        help="the label sets of this measure's thresholds (default: the trained measure's)",
    )


def _side_options(p: argparse.ArgumentParser, when: str) -> None:
    p.add_argument("--rows", help=f"row vertices' features {when} (.npy, or a table with ids)")
    p.add_argument("--cols", help=f"column vertices' features {when}")
    p.add_argument(
        "--row-similarity",
        help=f"row vertices' similarity {when} (to the training rows; .npy or a table)",
    )
    p.add_argument("--col-similarity", help=f"column vertices' similarity {when}")


def add_commands(sub: Any, remote: Callable[[argparse.ArgumentParser], None]) -> None:
    """The ``bipartite`` and ``labels`` commands of ``okboost``."""
    bip = sub.add_parser("bipartite", help="bipartite networks: train, kernel, evaluate")
    bsub = bip.add_subparsers(dest="action", required=True)
    train = bsub.add_parser("train", help="train on interactions between two vertex sets")
    remote(train)
    _side_options(train, "at training")
    train.add_argument("--edges", help="[row, column] interactions: pairs of ids or row numbers")
    train.add_argument(
        "--adjacency",
        help="n_rows x n_cols interaction matrix (0/1 or weights; NA / empty cells: unknown): "
        ".npy, or a table, plain or labelled (row ids in its first column, column ids in its "
        "header, matched to the sides' ids)",
    )
    train.add_argument(
        "--unknown-pairs", help="[row, column] pairs whose interaction is unknown (not negative)"
    )
    train.add_argument("--new-pairs", default="two-step", choices=["two-step", "refit"])
    train.add_argument("--cv-folds", help="K x K cross-validation first: K, or K_ROWS,K_COLS")
    # auto (the default): okcore's default bipartite model, which takes no --param
    _training_options(train, ("auto", *okcore.estimator_names()), "auto")
    train.set_defaults(func=cmd_bipartite_train)

    kernel = bsub.add_parser("kernel", help="scores and ranked edges of new vertices")
    remote(kernel)
    kernel.add_argument("model_id")
    _side_options(kernel, "of the new vertices")
    kernel.add_argument("--threshold", type=float)
    kernel.add_argument("--top-k", type=int)
    kernel.add_argument("--no-scores", action="store_true", help="only the edges")
    kernel.add_argument("--output", "-o", help="write the JSON here")
    kernel.set_defaults(func=cmd_bipartite_kernel)

    evaluate = bsub.add_parser("evaluate", help="AUROC and AP per block on test vertices")
    remote(evaluate)
    evaluate.add_argument("model_id")
    _side_options(evaluate, "of the test vertices")
    evaluate.add_argument("--edges", help="true [row id, column id] interactions")
    evaluate.add_argument("--new-rows", help="true [test row, training column] pairs")
    evaluate.add_argument("--new-cols", help="true [training row, test column] pairs")
    evaluate.add_argument("--new-pairs", help="true [test row, test column] pairs")
    evaluate.add_argument(
        "--unknown-pairs", help="[row id, column id] pairs of unknown interaction: not scored"
    )
    evaluate.add_argument("--output", "-o", help="write the JSON here")
    evaluate.set_defaults(func=cmd_bipartite_evaluate)

    labels = sub.add_parser("labels", help="label sets: train, predict, evaluate")
    lsub = labels.add_subparsers(dest="action", required=True)
    ltrain = lsub.add_parser("train", help="train on 0/1 label rows")
    remote(ltrain)
    ltrain.add_argument("inputs", help="N x p inputs (.npy or a table with optional ids)")
    ltrain.add_argument("labels", help="N x L 0/1 label rows (a table's header names them)")
    ltrain.add_argument("--threshold", default="cv", help="'cv' (default) or a number in (0, 1)")
    ltrain.add_argument(
        "--per-label",
        action="store_true",
        default=None,
        help="one threshold per label (default: per label for macro_f1 only)",
    )
    ltrain.add_argument(
        "--metric",
        default="micro_f1",
        choices=list(get_args(ThresholdMetric)),
        help="what the threshold optimises",
    )
    ltrain.add_argument(
        "--scores",
        default="label_sigmoid",
        choices=["label_sigmoid", "sigmoid", "clip"],
        help="the map of the scores to [0, 1] (default: one logistic map per label)",
    )
    ltrain.add_argument(
        "--max-cpu-seconds", type=float, help="a CPU budget for the fit (default: none)"
    )
    ltrain.add_argument("--n-splits", type=int, default=3, help="inner CV folds")
    _training_options(ltrain, ("auto", *okcore.estimator_names()), "auto")
    ltrain.set_defaults(func=cmd_labels_train)

    lpredict = lsub.add_parser("predict", help="label scores and label sets")
    remote(lpredict)
    lpredict.add_argument("model_id")
    lpredict.add_argument("inputs", help="Q x p inputs")
    _metric_option(lpredict)
    lpredict.add_argument("--output", "-o", help="write the JSON here")
    lpredict.set_defaults(func=cmd_labels_predict)

    levaluate = lsub.add_parser("evaluate", help="Hamming loss, F1, ranking measures")
    remote(levaluate)
    levaluate.add_argument("model_id")
    levaluate.add_argument("inputs", help="Q x p test inputs")
    levaluate.add_argument("labels", help="Q x L true 0/1 label rows")
    _metric_option(levaluate)
    levaluate.add_argument("--output", "-o", help="write the JSON here")
    levaluate.set_defaults(func=cmd_labels_evaluate)
