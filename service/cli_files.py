"""What the ``okboost`` commands share (:mod:`service.cli`, :mod:`service.cli_tasks`): files
read by the service's own table parser, ``--param`` values, the client of ``--url`` with its
token, and a job's progress on stderr."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from okboost_client import OKBoostClient
from service.http.tables import (
    column_names,
    edges_of,
    ids_of,
    matrix_of,
    parse_table,
    read_table_file,
    similarity_of,
)


def table_file(path: str) -> Any:
    """A CSV / TSV / text file read by the service's own table parser
    (:mod:`service.http.tables`): separator from the suffix, a header row detected."""
    return read_table_file(path, Path(path).read_bytes())


def load_array(path: str) -> np.ndarray:
    """A numeric array from ``.npy`` (no pickle) or a table file (no id column)."""
    if Path(path).suffix == ".npy":
        return np.load(path, allow_pickle=False).astype(float)
    return matrix_of(table_file(path), with_ids=False)[0]


def read_inputs(path: str) -> tuple[np.ndarray, list[str] | None]:
    """Inputs from ``.npy`` or a table file whose column ``id`` (or first non-numeric
    column) gives the vertex ids, as the service reads an ``inputs`` part."""
    inputs, ids, _ = read_named_inputs(path)
    return inputs, ids


def read_named_inputs(path: str) -> tuple[np.ndarray, list[str] | None, list[str] | None]:
    """:func:`read_inputs` and the names of the input columns (a table's header, its id
    column left out; None without one): at prediction they may name the training items of
    a similarity model, which the service matches by id."""
    if Path(path).suffix == ".npy":
        return np.load(path, allow_pickle=False).astype(float), None, None
    table = table_file(path)
    inputs, ids = matrix_of(table, with_ids=True)
    return inputs, ids, column_names(table)


def read_similarity(path: str) -> tuple[np.ndarray, list[str] | None]:
    """A square similarity from ``.npy`` or a table file, plain or labelled (its rows' ids
    in its first column, its columns' ids in its header, in any order: columns matched to
    rows by id, as the service reads a similarity part), with the rows' ids."""
    if Path(path).suffix == ".npy":
        return np.load(path, allow_pickle=False).astype(float), None
    return similarity_of(table_file(path))


def load_ids(path: str) -> list[str]:
    """Vertex ids, one per line (the first column of a table, or its column ``id``)."""
    ids = ids_of(parse_table(Path(path).read_bytes(), path, separator="", kind="ids"))
    if not ids:
        raise ValueError(f"{path} holds no id: one id per line")
    return ids


def load_edges(path: str, ids: list[str] | None = None) -> Any:
    """E x 2 edges: ``.npy`` (integers: rows; strings: ids), or a table file of two vertices
    per line: ids when the rows have ids, else row numbers counted from 0 (a header row is
    detected), as the service reads an edge part."""
    if Path(path).suffix == ".npy":
        arr = np.load(path, allow_pickle=False)
        return arr if arr.dtype.kind == "U" else arr.astype(np.int64)
    table = read_table_file(path, Path(path).read_bytes(), kind="edges")
    edges = edges_of(table, None if ids is None else set(ids))
    header = table.header
    if header is None and len(edges) < table.n_rows:  # a first row naming no known id
        header = table.first_cells
    if header is not None:  # said, not silent: a first edge misread would be lost
        print(
            f"okboost: note: line 1 of {path} ({', '.join(header)}) names no vertex: "
            "read as a header and skipped",
            file=sys.stderr,
        )
    if ids is None:  # row numbers: a cell that is not one names the fix here, with its line
        for k, edge in enumerate(edges):
            bad = next((c for c in edge if isinstance(c, str)), None)
            if bad is not None:
                line = k + 1 + (header is not None)
                raise ValueError(
                    f"{path} line {line}: {bad!r} is not a row number; to name vertices by "
                    "id, give the ids of the rows with --ids FILE (one id per line) or an "
                    "id column in the inputs file"
                )
    return edges


def param_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # a bare string such as splitter=random


def parse_params(items: list[str]) -> dict[str, Any]:
    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--param expects NAME=VALUE, got {item!r}")
        params[key.strip()] = param_value(value.strip())
    return params


HEARTBEAT = 5.0
"""Most seconds between two plain progress lines while a job runs (or waits in the queue)."""


class ProgressDisplay:
    """A job's progress on ``stream`` (stderr): a tqdm bar redrawn in place when the stream is
    a terminal; otherwise plain lines, one per state, phase or tenth of the work, and one at
    least every ``every`` seconds while nothing else changes (a long phase, e.g. the output
    kernel's factorisation, shows its time and ETA as they go), so a log file or a pipe gets
    no carriage-return frames and is never silent for long. A queued job shows its place in
    the queue. The unit is the job's (trees, or fits of a multi-label job; ``unit``: before
    the job says). Losses are shown clipped at 0 (rounding can make a loss of an exactly
    fitted model -1e-17)."""

    def __init__(
        self,
        stream: Any = None,
        unit: str = "tree",
        every: float = HEARTBEAT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream or sys.stderr
        self.unit = unit
        self.every, self.clock = every, clock
        self.terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.bar: tqdm | None = None
        self.last: tuple[Any, ...] | None = None
        self.last_line = -float("inf")

    @staticmethod
    def _details(info: dict[str, Any]) -> str:
        eta, loss = info.get("eta"), info.get("last_train_loss")
        parts = [info["state"]]
        if info["state"] == "queued" and info.get("queue_position") is not None:
            parts.append(f"position {info['queue_position']} in the queue")
        if info.get("phase") and info["state"] == "running":
            phase = str(info["phase"])
            if info.get("phase_elapsed") is not None:
                phase += f" for {float(info['phase_elapsed']):.0f} s"
            parts.append(phase)
        parts.append(f"{info['elapsed']:.1f} s")
        if eta is not None and info["state"] == "running":
            parts.append(f"eta {eta:.1f} s")
        if loss is not None:
            parts.append(f"loss {max(float(loss), 0.0):.4g}")
        return ", ".join(parts)

    def __call__(self, info: dict[str, Any]) -> None:
        done, total = int(info["progress"]["done"]), int(info["progress"]["total"])
        unit = str(info["progress"].get("unit") or self.unit)
        finished = info["state"] not in ("queued", "running")
        if self.terminal:
            if self.bar is None:
                self.bar = tqdm(
                    total=total,
                    unit=unit,
                    file=self.stream,
                    dynamic_ncols=True,
                    bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} " + unit + "s [{postfix}]",
                )
            self.bar.total, self.bar.n = total, done
            self.bar.set_postfix_str(self._details(info), refresh=True)
            if finished:
                self.bar.close()
            return
        key = (info["state"], info.get("phase"), 10 * done // max(total, 1))
        now = self.clock()
        if key != self.last or finished or now - self.last_line >= self.every:
            self.last, self.last_line = key, now
            line = f"{done}/{total} {unit}s, {self._details(info)}"
            print(line, file=self.stream, flush=True)


def token_of(args: argparse.Namespace) -> str | None:
    """The bearer token: --token-file, OKBOOST_TOKEN, OKBOOST_TOKEN_FILE, or --token (which
    other users see in the process list: a warning says so)."""
    if args.token:
        print(
            "okboost: warning: --token is visible to other users in the process list; use "
            "--token-file or OKBOOST_TOKEN instead",
            file=sys.stderr,
        )
        return str(args.token)
    path = args.token_file or os.environ.get("OKBOOST_TOKEN_FILE")
    if path:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        return lines[0].strip() if lines else None
    return os.environ.get("OKBOOST_TOKEN")


def client_of(args: argparse.Namespace) -> OKBoostClient:
    return OKBoostClient(args.url, token=token_of(args))
