"""The Python client here, and the JavaScript and R clients (clients/js, clients/r) through
their own test suites, against a live server: train (with cross-validation too), poll the job, ask /kernel for edges, score
held-out vertices with /evaluate. Their evaluate and CV results are compared with what okcore
computes on the same data (client_expectations.py, passed as the file OKBOOST_EXPECTED).
Skipped with the reason when node or Rscript (with httr2, jsonlite, testthat) is missing;
failing instead under CI=true."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from client_expectations import expectations, write_expectations
from e2e_server import ROOT, Server
from external_tools import in_ci, require_tool

from okboost_client import OKBoostClient

CLIENTS = ROOT / "clients"
R_PACKAGES = ("httr2", "jsonlite", "testthat", "curl")
R_INSTALL = "apt-get install r-base-core r-cran-httr2 r-cran-jsonlite r-cran-testthat"


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_python_client_evaluate_and_cv_against_a_live_server(
    server_factory: type[Server], tmp_path: Path
) -> None:
    expected = expectations()
    d = expected["data"]
    server = server_factory(tmp_path / "models").start()
    spec = {"type": "diffusion", "beta": d["beta"], "edges": d["edges"]}
    names = np.asarray([f"v{i}" for i in range(len(d["inputs"]))])
    test_names = np.asarray([f"new-{i}" for i in range(len(d["test_inputs"]))])
    new_known = np.asarray(d["new_known"])
    with OKBoostClient(server.url) as client:
        fit = client.train(d["inputs"], spec, ids=names, params=d["params"])
        client.wait(fit["job_id"], poll=0.05)
        scores = client.evaluate(
            fit["model_id"],
            d["test_inputs"],
            gram_cross=d["gram_cross"],
            gram_diag=d["gram_diag"],
            new_new=d["new_new"],
            new_known=new_known,
            k=d["k"],
        )
        by_id = client.evaluate(
            fit["model_id"],
            d["test_inputs"],
            ids=test_names,
            new_new=test_names[np.asarray(d["new_new"])],
            new_known=np.column_stack([test_names[new_known[:, 0]], names[new_known[:, 1]]]),
            k=d["k"],
        )
        cv = expected["cv"]
        tuned = client.train(d["inputs"], spec, params=d["params"], cv=cv["spec"], wait=True)
        record = client.model(tuned["model_id"])
    for name, value in expected["evaluate"].items():
        assert scores[name] == pytest.approx(value, rel=1e-10), name
        if name.startswith(("auc", "precision")):
            assert by_id[name] == pytest.approx(value, rel=1e-10), name
    assert record["cv"]["table"] == cv["table"] and record["cv"]["best_params"] == cv["best_params"]


@pytest.mark.clients
def test_javascript_client_against_a_live_server(
    server_factory: type[Server], tmp_path: Path
) -> None:
    node = require_tool("node", "nodejs", install="apt-get install nodejs")
    major = int(run([node, "--version"], CLIENTS).stdout.strip().lstrip("v").split(".")[0])
    if major < 18:
        reason = f"node {major} is too old for the client (needs >= 18: global fetch)"
        pytest.fail(reason) if in_ci() else pytest.skip(reason)
    tests = sorted(str(p) for p in (CLIENTS / "js" / "test").glob("*.test.js"))
    server = server_factory(tmp_path / "models").start()
    expected = write_expectations(tmp_path / "expected.json")
    out = run(
        [node, "--test", *tests],
        CLIENTS / "js",
        OKBOOST_URL=server.url,
        OKBOOST_EXPECTED=str(expected),
    )
    report = out.stdout + out.stderr
    assert out.returncode == 0, report
    passed = int(re.search(r"^# pass (\d+)$", out.stdout, re.M).group(1))  # type: ignore[union-attr]
    assert passed >= 8 and re.search(r"^# skipped 0$", out.stdout, re.M), report


@pytest.mark.clients
def test_r_client_against_a_live_server(server_factory: type[Server], tmp_path: Path) -> None:
    rscript = require_tool("Rscript", install=R_INSTALL)
    r = require_tool("R", install=R_INSTALL)
    check = "for (p in commandArgs(TRUE)) if (!requireNamespace(p, quietly = TRUE)) cat(p, '')"
    missing = run([rscript, "-e", check, *R_PACKAGES], CLIENTS).stdout.split()
    if missing:
        reason = f"R packages {', '.join(missing)} are not installed ({R_INSTALL})"
        pytest.fail(reason) if in_ci() else pytest.skip(reason)
    package = shutil.copytree(CLIENTS / "r", tmp_path / "r")  # testthat writes beside its tests
    library = tmp_path / "Rlib"
    library.mkdir()
    installed = run([r, "CMD", "INSTALL", "--no-test-load", f"--library={library}", "r"], tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    server = server_factory(tmp_path / "models").start()
    out = run(
        [rscript, "testthat.R"],
        package / "tests",
        R_LIBS=str(library),
        OKBOOST_URL=server.url,
        OKBOOST_EXPECTED=str(write_expectations(tmp_path / "expected.json")),
    )
    report = out.stdout + out.stderr
    assert out.returncode == 0, report
    summary = re.search(r"\[ FAIL (\d+) \| WARN (\d+) \| SKIP (\d+) \| PASS (\d+) \]", report)
    assert summary is not None, report
    fail, warn, skip, passed = map(int, summary.groups())
    assert (fail, warn, skip) == (0, 0, 0) and passed >= 20, report
