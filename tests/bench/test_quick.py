"""Smoke test of the paper-reproduction scripts (bench/): every script's --quick mode runs the
same protocol code (data loading, CV, J selection, metrics, figures) on tiny settings."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

pytest.importorskip("h5py", reason="bench extra not installed (pip install -e '.[bench]')")
pytest.importorskip("matplotlib", reason="bench extra not installed (pip install -e '.[bench]')")

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import (  # noqa: E402
    bench_scale,
    friedman1,
    learning_curves,
    network_completion,
    usps_completion,
)
from bench.common import weight_errors  # noqa: E402

SCRIPTS = {
    "friedman1": (friedman1.run, [], []),
    "usps": (usps_completion.run, [], ["usps_completion.png"]),
    "network": (network_completion.run, ["--graph", "cora"], []),
    "curves_usps": (learning_curves.run, ["--problem", "usps"], ["learning_curves_usps.png"]),
    "curves_cora": (learning_curves.run, ["--problem", "cora"], ["learning_curves_cora.png"]),
}


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_quick_mode(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, extra, figures = SCRIPTS[name]
    report = run(["--quick", "--out", str(tmp_path), "--fig-dir", str(tmp_path), *extra])
    payload = json.loads((tmp_path / f"{report.name}.json").read_text())
    values = [v for m in payload["results"].values() for k in m.values() for v in k["values"]]
    values += [x for c in payload["extra"].get("curves", []) for x in c["train"]]
    assert values and all(math.isfinite(v) for v in values)
    for fig in figures:
        assert (tmp_path / fig).stat().st_size > 1000
    assert "wall time" in capsys.readouterr().out


def test_scale_quick(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """bench_scale --quick: every method in its own process, peers extrapolated at N = 600."""
    payload = bench_scale.run(["--quick", "--out", str(tmp_path), "--peer-trees", "600=10"])
    out = capsys.readouterr().out
    for method, why in payload["settings"]["skipped"].items():  # a peer not installed
        assert method in bench_scale.PEERS and f"# skipped {method}: {why}" in out
    assert set(bench_scale.OKCORE) <= set(payload["settings"]["methods"])
    saved = json.loads((tmp_path / "scale_quick.json").read_text())["results"]
    for n, rows in saved.items():
        assert set(rows) == set(payload["settings"]["methods"])
        for method, row in rows.items():
            assert all(math.isfinite(row[k]) for k in ("wall", "cpu", "peak_rss_mb", "mse"))
            assert row["extrapolated"] == (method in bench_scale.PEERS and n == "600")
    assert not payload["failed"]
    assert "extrapolated from 10" in out and "Growth exponents" in out
    assert (tmp_path / "scale_quick.txt").read_text().count("### N =") == 2


def test_weight_errors_match_definitions() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    Y, Yq = rng.normal(size=(6, 3)), rng.normal(size=(2, 3))
    W = rng.dirichlet(np.ones(6), size=2)
    res = weight_errors(W, Y @ Y.T, Yq @ Y.T, (Yq**2).sum(1))
    F = W @ Y  # linear kernel: F(x) is explicit
    np.testing.assert_allclose(res["err_phi"], ((Yq - F) ** 2).sum(1))
    pre = np.argmin(((F[:, None, :] - Y[None]) ** 2).sum(2), axis=1)
    np.testing.assert_array_equal(res["preimage"], pre)
    np.testing.assert_allclose(res["err_y"], ((Yq - Y[pre]) ** 2).sum(1))
