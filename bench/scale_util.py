"""Small helpers shared by the "real data at real size" scripts (usps_full,
sbm_service, network_completion's whole-graph flags): load average, CPU time of this process
and of its children, peak RSS, and the JSON + printed-output files in bench/results/.

Every number these scripts print comes with the machine's load average (``os.getloadavg``)
sampled before and after the measured step: the machine is shared, so wall times are only
comparable at similar load.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.common import machine_info, write_result


def load_avg() -> list[float]:
    """1, 5 and 15 minute load averages, rounded."""
    return [round(x, 2) for x in os.getloadavg()]


def cpu_seconds(children: bool = False) -> float:
    """User + system CPU of this process (all threads), or of its reaped children."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def peak_rss_mb() -> float:
    """Peak resident set size of this process, MiB (Linux ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


@contextmanager
def timed(record: dict[str, Any], key: str) -> Iterator[None]:
    """Store {key}_wall_s, {key}_cpu_s (this process, all threads) and the load average
    before / after the block in ``record``."""
    record[f"{key}_load_before"] = load_avg()
    t0, c0 = time.perf_counter(), cpu_seconds()
    try:
        yield
    finally:
        record[f"{key}_wall_s"] = round(time.perf_counter() - t0, 2)
        record[f"{key}_cpu_s"] = round(cpu_seconds() - c0, 2)
        record[f"{key}_load_after"] = load_avg()


class Tee:
    """Collects the printed report (stdout) so it can be saved beside the JSON."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, *parts: Any) -> None:
        text = " ".join(str(p) for p in parts)
        print(text, flush=True)
        self.lines.append(text)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def save_run(
    out_dir: Path,
    name: str,
    argv: list[str],
    payload: dict[str, Any],
    printed: Tee,
    started: float,
    cpu_started: float,
) -> tuple[Path, Path]:
    """Write ``<name>.json`` (command, machine, wall/CPU time, load, payload) and
    ``<name>.txt`` (the printed report), both stamped by :func:`bench.common.write_result`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "name": name,
        "command": "python -m " + " ".join(argv),
        "machine": machine_info(),
        "load_average_end": load_avg(),
        "wall_time_s": round(time.time() - started, 1),
        "cpu_time_s": round(time.process_time() - cpu_started, 1),
        **payload,
    }
    jpath = write_result(out_dir / f"{name}.json", record)
    tpath = write_result(out_dir / f"{name}.txt", printed.text())
    return jpath, tpath


def log(msg: str) -> None:
    """Progress on stderr with a wall-clock stamp and the 1-minute load."""
    print(
        f"{time.strftime('%H:%M:%S')} [load {os.getloadavg()[0]:.2f}] {msg}",
        file=sys.stderr,
        flush=True,
    )
