"""bench.threads' child fit reports its parallel regions (what the benchmark's per-region
lines are made of)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.threads import run_children  # noqa: E402

pytestmark = pytest.mark.bench  # each test runs the benchmark's child fits in subprocesses


def test_a_child_fit_reports_its_parallel_regions() -> None:
    """Two threads on a small oblivious fit: the level search, the children's statistics and
    the boosting step are listed, each within the fit's wall time, and the chunks' CPU is the
    regions' CPU summed."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.threads", "--trees", "3", "--tree-type", "oblivious",
         "--max-depth", "3", "--child", "3000", "2"],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
        check=True, timeout=600,
    )  # fmt: skip
    row = json.loads(done.stdout)
    regions = row["regions"]
    assert {
        "build_oblivious_tree.searcher.search",
        "build_oblivious_tree.statistics.run",
        "SquaredFeatureLoss._step_rows.run",  # the boosting step (its row loop)
    } <= set(regions)
    for region in regions.values():
        assert 0.0 <= region["slowest_s"] <= region["cpu_s"]
        assert 0.0 <= region["wall_s"] <= row["wall_s"]
    assert sum(r["wall_s"] for r in regions.values()) <= row["wall_s"]
    assert 0.0 < row["parallel_fraction"] <= 1.0


def test_side_by_side_copies_each_report_their_fit() -> None:
    """--side-by-side's two one-thread copies (started together): each gives a full child
    row, of the same model."""
    args = argparse.Namespace(trees=3, tree_type="oblivious", max_depth=3)
    copies = run_children(3000, 1, args, copies=2)
    assert len(copies) == 2
    assert copies[0]["model_sha256"] == copies[1]["model_sha256"]
    for row in copies:
        assert row["wall_s"] > 0.0 and row["cpu_s"] > 0.0
