"""``okboost`` command line: serve, train from files, predict.

    okboost serve [--host H] [--port P] [--model-dir DIR] [--token-file F] [--max-workers N]
                  [--dask-scheduler tcp://HOST:8786]
    okboost train X.npy --edges E.csv [--beta 1] [--param n_estimators=200 ...]
    okboost train X.csv --ids ids.txt --edges E.tsv    (edges as pairs of ids)
    okboost train features.csv --edges edges.tsv [--drop-unknown-edges]   (an id column)
    okboost train X.csv --gram K.npy | --outputs Y.csv [--kernel rbf --sigma 7]
    okboost train ... --cv-folds 5 [--cv-grid max_splits=2,8 ...] [--cv-scoring auc]
    okboost predict MODEL_ID Xnew.npy [--ids new.txt] [--top-k 3] [--weights dense]
    okboost kernel MODEL_ID Xnew.npy [--ids new.txt] [--against training] [--top-k 5]
    okboost evaluate MODEL_ID Xtest.npy [--ids test.txt] [--new-known E.tsv]
                     [--new-new E.tsv] [--outputs Y.npy | --gram-cross G.npy --gram-diag D.npy]
    okboost bipartite train|kernel|evaluate ...    (two vertex sets: service.cli_tasks)
    okboost labels train|predict|evaluate ...      (label sets: service.cli_tasks)

train/predict/kernel/evaluate talk to a running service (--url, default
http://127.0.0.1:8000; token from --token-file, OKBOOST_TOKEN or OKBOOST_TOKEN_FILE) and
print JSON; train shows the job's progress on stderr. Table files (.csv, .tsv, .txt) are
read by the service's own parser: a header row detected, an id column of the inputs giving
vertex ids (edges then name vertices by id). Errors are one line on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import numpy as np

import okcore
from okboost_client import OKBoostError
from service.cli_files import (
    ProgressDisplay,
    client_of,
    load_array,
    load_edges,
    load_ids,
    param_value,
    parse_params,
    read_inputs,
    read_named_inputs,
    read_similarity,
)
from service.cli_tasks import add_commands
from service.errors import ServiceError


def _ids(args: argparse.Namespace, column: list[str] | None) -> list[str] | None:
    """The rows' ids: from --ids, or from the id column of the inputs file (not both)."""
    if args.ids is not None and column is not None:
        raise ValueError(
            f"ids are given twice: by the id column of {args.inputs} and by --ids; give one"
        )
    return load_ids(args.ids) if args.ids is not None else column


def _output_kernel(args: argparse.Namespace, ids: list[str] | None) -> dict[str, Any]:
    given = [x for x in (args.gram, args.outputs, args.edges) if x]
    if len(given) != 1:
        raise SystemExit("okboost: error: give exactly one of --gram, --outputs, --edges")
    if args.gram:
        return {"type": "precomputed", "gram": load_array(args.gram)}
    if args.edges:
        return {
            "type": "diffusion",
            "beta": args.beta,
            "edges": load_edges(args.edges, ids),
            "drop_unknown_edges": args.drop_unknown_edges,
        }
    spec: dict[str, Any] = {"type": args.kernel, "outputs": load_array(args.outputs)}
    for name in ("sigma", "gamma", "degree", "coef0"):
        value = getattr(args, name)
        if value is not None:
            spec[name] = value
    return spec


def _cv(args: argparse.Namespace) -> dict[str, Any] | None:
    """The CV spec of --cv-folds, --cv-grid NAME=V1,V2 ..., --cv-scoring, --cv-seed."""
    if args.cv_folds is None:
        if args.cv_grid or args.cv_scoring:
            raise SystemExit("okboost: error: --cv-grid and --cv-scoring need --cv-folds")
        return None
    grid = {}
    for item in args.cv_grid:
        key, sep, values = item.partition("=")
        if not sep or not values:
            raise SystemExit(f"okboost: error: --cv-grid expects NAME=V1,V2,..., got {item!r}")
        grid[key.strip()] = [param_value(v.strip()) for v in values.split(",")]
    spec: dict[str, Any] = {"folds": args.cv_folds, "random_state": args.cv_seed}
    if grid:
        spec["grid"] = grid
    if args.cv_scoring:
        spec["scoring"] = args.cv_scoring
    return spec


def cmd_train(args: argparse.Namespace) -> int:
    read = read_similarity if args.input_kind == "similarity" else read_inputs
    inputs, column = read(args.inputs)
    ids = _ids(args, column)
    with client_of(args) as client:
        accepted = client.train(
            inputs,
            _output_kernel(args, ids),
            model=args.model,
            params=parse_params(args.param),
            name=args.name,
            ids=ids,
            cv=_cv(args),
            input_kind=args.input_kind,
            input_map=args.input_map,
            input_components=args.input_components,
        )
        result: dict[str, Any] = {"model_id": accepted["model_id"], "job_id": accepted["job_id"]}
        if not args.no_wait:
            show = None if args.quiet else ProgressDisplay()
            job = client.wait(accepted["job_id"], poll=0.25, on_progress=show)
            result["state"] = job["state"]
            result["fit_seconds"] = job["elapsed"]
    print(json.dumps(result))
    return 0


TRIPLES = ("new_new", "new_known", "weights_sparse")
"""Answer arrays of [index, index, value] rows (the client returns them as float arrays)."""


def json_ready(value: Any, key: str | None = None) -> Any:
    """An answer as JSON values: ndarrays as lists, the indices of edge and weight triples
    as integers (0, not 0.0)."""
    if isinstance(value, dict):
        return {k: json_ready(v, k) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        if key in TRIPLES and value.ndim == 2 and value.shape[1] == 3:
            return [[int(a), int(b), float(v)] for a, b, v in value.tolist()]
        return value.tolist()
    return value


def _dump(out: dict[str, Any], path: str | None) -> None:
    if path and path.endswith(".npy"):
        key = "kernel" if "kernel" in out else "indices"
        np.save(path, np.asarray(out[key]), allow_pickle=False)
        return
    text = json.dumps(json_ready(out))
    if path:
        Path(path).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)


def cmd_predict(args: argparse.Namespace) -> int:
    inputs, column, names = read_named_inputs(args.inputs)
    ids = _ids(args, column)
    with client_of(args) as client:
        out = client.predict(
            args.model_id,
            inputs,
            top_k=args.top_k,
            return_outputs=args.return_outputs,
            weights=args.weights,
            ids=ids,
            input_columns=names,
        )
    _dump(out, args.output)
    return 0


def cmd_kernel(args: argparse.Namespace) -> int:
    inputs, column, names = read_named_inputs(args.inputs)
    ids = _ids(args, column)
    with client_of(args) as client:
        out = client.kernel(
            args.model_id,
            inputs,
            against=args.against,
            threshold=args.threshold,
            top_k=args.top_k,
            known_scores=args.known_scores,
            ids=ids,
            input_columns=names,
        )
    _dump(out, args.output)
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    if (args.gram_cross is None) != (args.gram_diag is None):
        raise SystemExit("okboost: error: --gram-cross and --gram-diag go together")
    inputs, column, names = read_named_inputs(args.inputs)
    ids = _ids(args, column)

    def optional(path: str | None) -> np.ndarray | None:
        return None if path is None else load_array(path)

    with client_of(args) as client:
        out = client.evaluate(
            args.model_id,
            inputs,
            outputs=optional(args.outputs),
            gram_cross=optional(args.gram_cross),
            gram_diag=None if args.gram_diag is None else load_array(args.gram_diag).ravel(),
            new_new=None if args.new_new is None else load_edges(args.new_new, ids),
            new_known=None if args.new_known is None else load_edges(args.new_known, ids),
            ids=ids,
            input_columns=names,
            k=args.k,
            known_scores=args.known_scores,
        )
    text = json.dumps(out)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from service.app import create_app
    from service.config import Settings
    from service.serving import serve

    if args.token:
        print(
            "okboost: warning: --token is visible to other users in the process list; use "
            "--token-file or OKBOOST_TOKEN instead",
            file=sys.stderr,
        )
    overrides = {
        k: v
        for k, v in {
            "host": args.host,
            "port": args.port,
            "model_dir": args.model_dir,
            "token": args.token,
            "token_file": args.token_file,
            "max_workers": args.max_workers,
            "dask_scheduler": args.dask_scheduler,
        }.items()
        if v is not None
    }
    settings = Settings.model_validate(overrides)
    problem = settings.exposure_problem()
    if problem is not None:
        print(f"okboost: error: {problem}", file=sys.stderr)
        return 2
    serve(create_app(settings), settings)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="okboost", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the REST service (uvicorn)")
    serve.add_argument("--host", help="interface to bind (default 127.0.0.1, OKBOOST_HOST)")
    serve.add_argument("--port", type=int, help="port (default 8000, OKBOOST_PORT)")
    serve.add_argument(
        "--model-dir", help="model store directory (default ./models, OKBOOST_MODEL_DIR)"
    )
    serve.add_argument(
        "--token-file", help="require the bearer token in this file (OKBOOST_TOKEN_FILE)"
    )
    serve.add_argument(
        "--token",
        help="require this bearer token (visible in the process list: prefer "
        "--token-file or OKBOOST_TOKEN)",
    )
    serve.add_argument(
        "--max-workers", type=int, help="training jobs run at once (default 1, OKBOOST_MAX_WORKERS)"
    )
    serve.add_argument(
        "--dask-scheduler",
        help="run training jobs on this Dask scheduler, e.g. tcp://scheduler:8786 "
        "(OKBOOST_DASK_SCHEDULER; needs the [dask] extra; see docs/DEPLOY.md)",
    )
    serve.set_defaults(func=cmd_serve)

    def remote(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--url",
            default=os.environ.get("OKBOOST_URL", "http://127.0.0.1:8000"),
            help="the service's address (default: OKBOOST_URL, else http://127.0.0.1:8000)",
        )
        p.add_argument(
            "--token-file", help="file holding the bearer token (default: OKBOOST_TOKEN_FILE)"
        )
        p.add_argument(
            "--token", help="bearer token (default: OKBOOST_TOKEN; visible in the process list)"
        )

    train = sub.add_parser("train", help="train a model from .npy/.csv files")
    remote(train)
    train.add_argument("inputs", help="N x p inputs (.npy or .csv)")
    train.add_argument("--gram", help="N x N precomputed Gram matrix")
    train.add_argument("--outputs", help="N x d outputs (with --kernel)")
    train.add_argument(
        "--edges",
        help="E x 2 edge list of a graph over the N rows: row numbers from 0 (.npy, .csv, "
        ".tsv), or pairs of ids with --ids",
    )
    train.add_argument("--ids", help="ids of the N rows, one per line (edges may then name them)")
    train.add_argument("--kernel", default="linear", choices=["linear", "rbf", "polynomial"])
    train.add_argument("--sigma", type=float)
    train.add_argument("--gamma", type=float)
    train.add_argument("--degree", type=int)
    train.add_argument("--coef0", type=float)
    train.add_argument("--beta", type=float, default=1.0, help="diffusion time (with --edges)")
    train.add_argument(
        "--drop-unknown-edges",
        action="store_true",
        help="drop edges naming vertices that are not rows (the model record counts them)",
    )
    train.add_argument(
        "--model",
        default=None,
        choices=okcore.estimator_names(include_auto=True),
        help="default: the server's (auto, the automatic choice, where it applies)",
    )
    train.add_argument(
        "--input-kind",
        default="features",
        choices=["features", "similarity"],
        help="similarity: INPUTS is the N x N similarity among the training rows (predict "
        "then takes the Q x N similarity of new rows to them)",
    )
    train.add_argument(
        "--input-map",
        choices=["kernel_map", "kpca"],
        help="how tree models read a similarity (default kernel_map)",
    )
    train.add_argument("--input-components", type=int, help="kernel PCA components (kpca)")
    train.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="estimator parameter, e.g. n_estimators=200 or n_estimators=auto (repeatable)",
    )
    train.add_argument("--name")
    train.add_argument(
        "--cv-folds", type=int, help="cross-validate over this many folds before the final fit"
    )
    train.add_argument(
        "--cv-grid",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="candidate values of a parameter, e.g. max_splits=2,8 (repeatable)",
    )
    train.add_argument(
        "--cv-scoring", help="score picking the best: err_phi, err_y, r2, auc, auc_known"
    )
    train.add_argument("--cv-seed", type=int, default=0, help="seed of the fold shuffle")
    train.add_argument("--no-wait", action="store_true", help="print the job id and return")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.set_defaults(func=cmd_train)

    predict = sub.add_parser("predict", help="pre-images (top-k) for new inputs")
    remote(predict)
    predict.add_argument("model_id")
    predict.add_argument("inputs", help="Q x p inputs (.npy or .csv)")
    predict.add_argument("--ids", help="ids of the Q new rows, one per line")
    predict.add_argument("--top-k", type=int, default=1)
    predict.add_argument("--return-outputs", action="store_true")
    predict.add_argument("--weights", default="none", choices=["none", "dense", "sparse"])
    predict.add_argument("--output", "-o", help="write JSON (or indices as .npy) here")
    predict.set_defaults(func=cmd_predict)

    kernel = sub.add_parser("kernel", help="predicted kernel and edges for new inputs")
    remote(kernel)
    kernel.add_argument("model_id")
    kernel.add_argument("inputs", help="Q x p inputs (.npy or .csv)")
    kernel.add_argument("--ids", help="ids of the Q new rows, one per line")
    kernel.add_argument("--against", default="predicted", choices=["predicted", "training"])
    kernel.add_argument("--threshold", type=float)
    kernel.add_argument("--top-k", type=int)
    kernel.add_argument("--known-scores", default="predicted", choices=["predicted", "observed"])
    kernel.add_argument("--output", "-o", help="write JSON (or the kernel as .npy) here")
    kernel.set_defaults(func=cmd_kernel)

    evaluate = sub.add_parser(
        "evaluate", help="scores on held-out inputs with their truth (AUC, precision@k, Err)"
    )
    remote(evaluate)
    evaluate.add_argument("model_id")
    evaluate.add_argument("inputs", help="Q x p test inputs (.npy or .csv)")
    evaluate.add_argument("--ids", help="ids of the Q test rows, one per line")
    evaluate.add_argument(
        "--new-known",
        help="true edges [test row, training row] (row numbers from 0), or [test id, "
        "training id] with --ids",
    )
    evaluate.add_argument("--new-new", help="true edges among the test rows (or ids)")
    evaluate.add_argument("--outputs", help="Q x d true outputs (models trained on outputs)")
    evaluate.add_argument("--gram-cross", help="Q x N kernel of the true outputs vs training")
    evaluate.add_argument("--gram-diag", help="Q values k(y, y) of the true outputs")
    evaluate.add_argument("--k", type=int, default=10, help="precision at k (default 10)")
    evaluate.add_argument("--known-scores", default="predicted", choices=["predicted", "observed"])
    evaluate.add_argument("--output", "-o", help="write the JSON here")
    evaluate.set_defaults(func=cmd_evaluate)

    add_commands(sub, remote)
    return parser


def _quiet_stdout() -> None:
    """Point stdout's file descriptor at the null device: its reader has gone, and Python's
    flush at exit would otherwise report the closed pipe once more."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # a stdout without a file descriptor (captured)
        pass


def main(argv: list[str] | None = None) -> int:
    """Run one command; any error is one line on stderr (no traceback) and exit code 1. A
    reader that stops reading (``okboost kernel ... | head``) is not an error of the
    command: it ends quietly."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except BrokenPipeError:
        _quiet_stdout()
        return 1
    except httpx.TransportError as exc:
        url = getattr(args, "url", "")
        print(f"okboost: error: cannot reach the service at {url}: {exc}", file=sys.stderr)
        return 1
    except (OKBoostError, ServiceError, OSError, ValueError, TypeError) as exc:
        print(f"okboost: error: {exc}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
