"""A client in another language: the curl walk-through (docs/walkthrough.md) against a live server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from e2e_server import Server

SCRIPT = Path(__file__).with_name("walkthrough.sh")


def test_curl_walkthrough_with_token(server_factory: type[Server], tmp_path: Path) -> None:
    server = server_factory(tmp_path / "models", OKBOOST_TOKEN="walk-secret").start()
    env = {**os.environ, "OKBOOST_TOKEN": "walk-secret"}
    run = subprocess.run(
        ["bash", str(SCRIPT), server.url], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    edges = json.loads(lines[lines.index(next(x for x in lines if x.startswith("== 3."))) + 1])
    new_known = edges["edges"]["new_known"]
    assert len(new_known) == 4
    # the new vertex near community A links to A = {0..3}, the one near B to B = {4..7}
    assert {int(i) for a, i, _ in new_known if a == 0} <= {0, 1, 2, 3}
    assert {int(i) for a, i, _ in new_known if a == 1} <= {4, 5, 6, 7}
    scores = json.loads(lines[lines.index(next(x for x in lines if x.startswith("== 6."))) + 1])
    assert scores["auc"] >= 0.9 and scores["precision_at_k"] >= 2 / 3 and scores["k"] == 3
    assert lines[-1].startswith("MODEL_ID=")

    # without the token the same script stops at the first call
    env.pop("OKBOOST_TOKEN")
    run = subprocess.run(
        ["bash", str(SCRIPT), server.url], env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode != 0 and '"code":"unauthorized"' in run.stdout
