"""What continuing a saved OKBoost model costs (warm start after ``load``), against a direct
fit of the larger ``n_estimators`` and the in-memory warm start, all in one process.

For each setting: a direct fit of M trees (the reference); a fit of M0 trees continued in
memory to M (``warm_start=True``); the same M0 fit saved, loaded and continued to M (the
loop rebuilt from the saved trees: F replayed, the losses re-scored, then M - M0 trees
grown). CPU seconds of this process (one thread) with the load average: compare the
ratios, not the seconds. Every continued model is checked equal, bit for bit, to the
direct fit (ensemble arrays and W^F of 50 queries). Also the bytes the warm-start record
adds to the saved manifest.

Problem: bench_scale's signal (p = r = 50, noise 0.3), linear output kernel.

    python -m bench.warm_start_load [--n 4000 16000] [--m0 150] [--m 300] [--out NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_okcore import make_fixed_signal_data
from bench.common import write_result
from okcore import OKBoostRegressor, load, save
from okcore.trees.ensemble import NODE_FIELDS

SETTINGS: dict[str, dict[str, Any]] = {
    "default (oblivious, sketch)": {},
    "best-first J=10, subsample 0.8": {"max_splits": 10, "subsample": 0.8},
    "early stopping on held-out rows": {"early_stopping": True, "n_iter_no_change": 400},
}
RESULTS = Path(__file__).parent / "results"


def _same(a: OKBoostRegressor, b: OKBoostRegressor, Xq: np.ndarray) -> bool:
    ea, eb = a.ensemble_, b.ensemble_
    names = (*NODE_FIELDS, "value", "train_leaf", "init")
    return all(np.array_equal(getattr(ea, f), getattr(eb, f)) for f in names) and np.array_equal(
        a.predict_weights(Xq), b.predict_weights(Xq)
    )


def _cpu(work: Any) -> tuple[float, Any]:
    start = time.process_time()
    out = work()
    return time.process_time() - start, out


def measure(n: int, m0: int, m: int, params: dict[str, Any], folder: Path) -> dict[str, Any]:
    X, Y, Xq, _ = make_fixed_signal_data(n, 50, 50, 50)
    base = {"random_state": 0, "n_jobs": 1, **params}
    direct_s, direct = _cpu(lambda: OKBoostRegressor(n_estimators=m, **base).fit(X, Y))
    first_s, first = _cpu(lambda: OKBoostRegressor(n_estimators=m0, **base).fit(X, Y))
    path = save(first, folder / f"model{n}")
    manifest = json.loads((path / "manifest.json").read_text())
    record_bytes = len(json.dumps(manifest["warm_start"], indent=1))
    load_s, loaded = _cpu(lambda: load(path))
    more = {"n_estimators": m, "warm_start": True}
    memory_s, _ = _cpu(lambda: first.set_params(**more).fit(X, Y))
    loaded_s, _ = _cpu(lambda: loaded.set_params(**more).fit(X, Y))
    return {
        "n": n,
        "direct_fit_s": direct_s,
        "first_fit_s": first_s,
        "continue_in_memory_s": memory_s,
        "load_s": load_s,
        "continue_after_load_s": loaded_s,
        "record_bytes": record_bytes,
        "manifest_bytes": len((path / "manifest.json").read_bytes()),
        "equal_in_memory": _same(first, direct, Xq),
        "equal_after_load": _same(loaded, direct, Xq),
        "trees": int(direct.ensemble_.n_trees),
    }


def table(rows: list[dict[str, Any]], m0: int, m: int) -> str:
    lines = [
        f"| setting | N | direct fit M={m} | continue M0={m0} -> {m} in memory | load | "
        "continue after load | (load + continue) / direct | bit for bit | record bytes |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        after = r["load_s"] + r["continue_after_load_s"]
        lines.append(
            f"| {r['setting']} | {r['n']:,} | {r['direct_fit_s']:.2f} s | "
            f"{r['continue_in_memory_s']:.2f} s | {r['load_s']:.2f} s | "
            f"{r['continue_after_load_s']:.2f} s | {after / r['direct_fit_s']:.2f} | "
            f"{r['equal_in_memory'] and r['equal_after_load']} | {r['record_bytes']} |"
        )
    return "\n".join(lines)


def run(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[4000, 16000])
    parser.add_argument("--m0", type=int, default=150)
    parser.add_argument("--m", type=int, default=300)
    parser.add_argument("--out", default="warm_start_load")
    args = parser.parse_args(argv)
    OKBoostRegressor(n_estimators=2).fit(*make_fixed_signal_data(300, 50, 50, 5)[:2])  # compile
    rows = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.n:
            for name, params in SETTINGS.items():
                row = {"setting": name, **measure(n, args.m0, args.m, params, Path(tmp))}
                rows.append(row)
                print(json.dumps(row), flush=True)
    result = {
        "argv": ["bench.warm_start_load", *(argv if argv is not None else sys.argv[1:])],
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "rows": rows,
        "table": table(rows, args.m0, args.m),
    }
    write_result(RESULTS / f"{args.out}.json", result)
    load_text = f"load average {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after"
    write_result(RESULTS / f"{args.out}.txt", f"{result['table']}\n\n{load_text}\n")
    print(result["table"])
    print(load_text)
    return result


if __name__ == "__main__":
    run()
