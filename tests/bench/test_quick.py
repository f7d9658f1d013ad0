"""Smoke test of the paper-reproduction scripts (bench/): every script's --quick mode runs the
same protocol code (data loading, CV, J selection, metrics, figures) on tiny settings."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("h5py", reason="bench extra not installed (pip install -e '.[bench]')")
pytest.importorskip("matplotlib", reason="bench extra not installed (pip install -e '.[bench]')")

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import (  # noqa: E402
    bench_scale,
    drug_target,
    friedman1,
    krr_alpha_cv,
    krr_cora,
    krr_kin40k,
    krr_usps,
    learning_curves,
    masked_outputs,
    missing_values,
    network_completion,
    robust_losses,
    similarity_inputs,
    usps_completion,
    yeast_multilabel,
)
from bench.common import weight_errors  # noqa: E402
from okcore import OKBoostRegressor  # noqa: E402

SCRIPTS = {
    "friedman1": (friedman1.run, [], []),
    "usps": (usps_completion.run, [], ["usps_completion.png"]),
    "network": (network_completion.run, ["--graph", "cora"], []),
    "curves_usps": (learning_curves.run, ["--problem", "usps"], ["learning_curves_usps.png"]),
    "curves_cora": (learning_curves.run, ["--problem", "cora"], ["learning_curves_cora.png"]),
    "robust_losses": (robust_losses.run, [], []),
    "masked_outputs": (masked_outputs.run, [], []),
    "krr_kin40k": (krr_kin40k.run, [], []),
    "krr_census": (krr_kin40k.run, ["--data", "census"], []),
    "krr_sarcos": (krr_kin40k.run, ["--data", "sarcos"], []),
    "krr_widths": (krr_kin40k.run, ["--width-scales", "1", "2", "--jobs", "2"], []),
    "krr_usps": (krr_usps.run, [], []),
    "krr_cora": (krr_cora.run, [], []),
    "krr_alpha_cv": (krr_alpha_cv.run, [], []),
    "drug_target": (drug_target.run, [], []),
    "similarity_inputs": (similarity_inputs.run, [], []),
    "yeast_multilabel": (yeast_multilabel.run, [], []),
    "missing_values": (missing_values.run, [], []),
}


def _have_data(folder: str = "cora") -> bool:
    try:
        from bench.common import data_dir

        return (data_dir() / folder).is_dir()
    except FileNotFoundError:
        return False


# these read ../shared/data
NEEDS_DATA = {
    "usps",
    "network",
    "curves_usps",
    "curves_cora",
    "robust_losses",
    "krr_kin40k",
    "krr_census",
    "krr_sarcos",
    "krr_widths",
    "krr_usps",
    "krr_cora",
    "drug_target",
    "similarity_inputs",
    "yeast_multilabel",
}
# the data folder a script reads, where it is not cora
DATA_FOLDER = {
    "drug_target": "yamanishi2008_dti",
    "similarity_inputs": "yamanishi2008_dti",
    "yeast_multilabel": "yeast_multilabel",
}


@pytest.mark.bench
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name,
            marks=pytest.mark.skipif(
                name in NEEDS_DATA and not _have_data(DATA_FOLDER.get(name, "cora")),
                reason="shared data folder not found (set OKBOOST_DATA)",
            ),
        )
        for name in SCRIPTS
    ],
)
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


@pytest.mark.bench
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


@pytest.mark.bench
@pytest.mark.skipif(not _have_data(), reason="shared data folder not found (set OKBOOST_DATA)")
def test_dask_scale_quick(
    dask_client: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """dask_scale --quick on the tests' cluster: both backends, same models, bytes counted."""
    from bench import dask_scale

    report = dask_scale.run(
        ["--quick", "--out", str(tmp_path), "--scheduler", dask_client.scheduler.address]
    )
    for name in ("forest", "cv"):
        assert report.rows[f"{name}_threads"]["wall_s"][0] > 0
        assert report.rows[f"{name}_dask"]["bytes_received"][0] > 0
    assert report.extra["overhead_per_task_s"] > 0
    assert "per-task overhead" in capsys.readouterr().out


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


@pytest.mark.bench
def test_usps_full_quick(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """usps_full --quick: synthetic 16 x 16 stand-ins, low-rank factor, OKBoost + KDE rows."""
    from bench import usps_full

    flags = "--tune-j 2 5 --tune-nu 0.1 0.2 --n-landmarks 1000"
    rec = usps_full.run(["--quick", "--out", str(tmp_path), *flags.split()])
    ok = rec["okboost"]
    assert all(math.isfinite(ok[k]) for k in ("err_phi", "err_y", "fit_wall_s", "fit_cpu_s"))
    assert 0 < ok["space"]["trace_fraction"] <= 1 and ok["space"]["rank"] <= 50
    assert rec["tune_j"]["chosen"] in (2, 5) and rec["tune_j"]["chosen_nu"] in (0.1, 0.2)
    assert len(rec["tune_j"]["curve"]) == 4 and math.isfinite(rec["kde"]["err_y"])
    assert ok["space"]["nystrom_landmarks"] == 100
    saved = json.loads((tmp_path / "usps_full_quick.json").read_text())
    assert saved["okboost"]["err_phi"] == ok["err_phi"] and saved["load_average_end"]
    out = capsys.readouterr().out
    stamp, printed = (tmp_path / "usps_full_quick.txt").read_text().split("\n", 1)
    assert "fit target < 120 s" in out and printed == out and stamp.startswith("# commit ")


@pytest.mark.bench
@pytest.mark.server
def test_sbm_service_quick(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """sbm_service --quick: a real `okboost serve`, binary upload, phases, peak RSS, /kernel."""
    from bench import sbm_service

    rec = sbm_service.run(["--quick", "--out", str(tmp_path)])
    tr, k = rec["training"], rec["kernel"]
    assert tr["server_peak_rss_mb"] > 0  # a tiny job may end between two polls: no child peak
    assert tr["training_process"] is None or tr["training_process"]["VmHWM"] > 0
    # the trees phase is seen while polling, or, for a job whose trees took less than one
    # poll, counted in the finished job's progress (its last phase is saving the model)
    last = tr["phases"][-1]
    assert last["state"] == "done"
    assert "trees" in [ph["phase"] for ph in tr["phases"]] or (
        last["phase"] == "saving" and last["unit"] == "tree" and last["done"] > 0
    )
    assert k["errors"] == 0 and k["calls"] == 20 and math.isfinite(k["median_ms"])
    assert 0 <= k["precision_at_k"] <= k["block_precision_at_k"] <= 1
    assert "p50 < 10 ms" in capsys.readouterr().out
    assert (tmp_path / "sbm_service_quick.json").exists()


@pytest.mark.bench
@pytest.mark.skipif(not _have_data(), reason="shared data folder not found (set OKBOOST_DATA)")
def test_network_scale_flags_quick(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """network_completion's whole-graph flags: CSR inputs, a factor_rank sweep, one fold."""
    flags = "--graph cora --csr --max-folds 1 --methods okboost_et --fixed-j 3 --factor-rank 8 0"
    report = network_completion.run(["--quick", "--out", str(tmp_path), *flags.split()])
    assert set(report.rows) == {"okboost_et@r8", "okboost_et@r0"}
    assert all(len(m["auc"]) == 1 and math.isfinite(m["auc"][0]) for m in report.rows.values())
    ranks = [f[0]["rank"] for f in report.extra["factor"].values()]
    assert ranks[0] == 8 and ranks[1] > 8
    out = capsys.readouterr().out
    assert "Fit time per fold (target < 60 s" in out and "factor_rank None (full)" in out


@pytest.mark.bench
@pytest.mark.server
def test_load_service_quick(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """load_service --quick: a real `okboost serve`, a model trained with ids and edges by id,
    concurrent /kernel and /predict clients and a /metrics scraper for a few seconds."""
    from bench import load_service

    rec = load_service.run(["--quick", "--out", str(tmp_path)])
    routes = rec["load"]["routes"]
    assert rec["errors_total"] == 0 and not rec["load"]["error_samples"]
    for route in ("/kernel", "/predict"):
        assert routes[route]["calls"] > 0 and math.isfinite(routes[route]["p99_ms"])
        # the server counted exactly the clients' requests, all answered 200
        assert rec["server_counts"][route] == {"200": routes[route]["calls"]}
    assert rec["server_rss_mb_before"] > 0 and rec["server_rss_mb_after"] > 0
    assert "load average" in rec["uptime_before"] and "load average" in rec["uptime_after"]
    assert "Errors in total: 0" in capsys.readouterr().out
    assert (tmp_path / "load_service_quick.json").exists()


@pytest.mark.bench
@pytest.mark.server
def test_answer_formats_quick(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """answer_formats --quick: JSON, .npz and .npy answers of the same requests, sized."""
    from bench import answer_formats

    rec = answer_formats.run(["--quick", "--out", str(tmp_path)])
    for by_fmt in rec["results"].values():
        assert set(by_fmt) >= {"json", "npz"}
        assert all(r["bytes"] > 0 and math.isfinite(r["median_s"]) for r in by_fmt.values())
    # a matrix of float64: 8 bytes a value in .npy / .npz, about 19 characters in JSON
    kernel = next(v for k, v in rec["results"].items() if "against training" in k)
    assert kernel["npy"]["bytes"] < kernel["npz"]["bytes"] < kernel["json"]["bytes"] / 2
    assert "bytes vs JSON" in capsys.readouterr().out


@pytest.mark.bench
@pytest.mark.parametrize("problem", ["synthetic", "yeast", "kin40k", "usps", "cora"])
def test_frontier_quick(problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """frontier --quick: every configuration on a tiny grid, points, frontiers and budgets."""
    pytest.importorskip("catboost", reason="catboost not installed (pip install -e '.[bench]')")
    if problem != "synthetic" and not _have_data():
        pytest.skip("shared data folder not found (set OKBOOST_DATA)")
    from bench import frontier

    payload = frontier.run(["--quick", "--problem", problem, "--out", str(tmp_path)])
    assert not payload["failed"] and not payload["skipped"]
    saved = json.loads((tmp_path / f"frontier_{payload['problem']}_quick.json").read_text())
    assert set(saved["results"]) == set(frontier.CONFIGS) and saved["machine"]["lscpu"]
    quick = argparse.Namespace(problem=problem, quick=True, n=None, fold=0, factor_rank=256)
    n_train = len(frontier.make_problem(quick).X)  # the rows the default's M is resolved on
    default_rounds = OKBoostRegressor().resolve_n_estimators(n_train)  # "auto" resolved
    for name, points in saved["results"].items():
        grid = saved["grids"][name]["rounds"]  # okcore's default M, or the grid's
        assert [q["rounds"] for q in points] == ([default_rounds] if grid == [None] else grid), name
        for q in points:
            assert q["cpu"] == pytest.approx(q["fit_cpu"] + q["predict_cpu"])
            assert all(math.isfinite(q[m]) for m in saved["metrics"])
    # the scikit-learn loop grows the exact search's trees in gain order: okcore's (where
    # okcore regresses the outputs themselves, not pre-images or a graph kernel's factor)
    exact_gain, loop = saved["results"]["okcore_exact_gain"], saved["results"]["sklearn_loop"]
    primary = saved["primary"]
    if problem not in ("usps", "cora"):
        assert [q[primary] for q in exact_gain] == pytest.approx([q[primary] for q in loop])
    out = capsys.readouterr().out
    assert f"### Best {primary} within a CPU budget" in out and "### Pareto frontiers" in out
    # --report re-makes the tables from the JSON alone (an interrupted run's)
    path = tmp_path / f"frontier_{payload['problem']}_quick.json"
    frontier.run(["--report", str(path)])
    again = capsys.readouterr().out
    assert "not measured" not in again
    assert out.split("### Best", 1)[1].split("### Every point")[0] in again


@pytest.mark.bench
def test_frontier_okcore_one_fit_equals_refits(tmp_path: Path) -> None:
    """okcore's smaller M read from one fit's first trees give the errors of one fit per M."""
    from bench import frontier

    configs = ["--configs", "okcore_fast", "okcore_paper", "okcore_oblivious_l2_3"]
    one = frontier.run(["--quick", *configs, "--out", str(tmp_path), "--name", "one"])
    refits = frontier.run(
        ["--quick", *configs, "--okcore-refits", "--out", str(tmp_path), "--name", "refits"]
    )
    for name, points in one["results"].items():
        assert all(q["one_fit"] for q in points) and not any(
            q["one_fit"] for q in refits["results"][name]
        )
        again = refits["results"][name]
        assert [q["rounds"] for q in points] == [q["rounds"] for q in again], name
        assert [q["mse"] for q in points] == pytest.approx([q["mse"] for q in again], rel=1e-12)


@pytest.mark.bench
def test_krr_widths_quick(tmp_path: Path) -> None:
    """bench.krr_widths: one CV error per width multiple, saved, the least one named."""
    pytest.importorskip("sklearn")
    from bench import krr_widths

    out = krr_widths.run(
        ["--quick", "--problems", "synthetic", "--scales", "1", "2", "--out", str(tmp_path)]
    )
    errors = out["synthetic"]["cv_errors"]
    assert len(errors) == 2 and all(math.isfinite(e) and e > 0 for e in errors)
    saved = json.loads((tmp_path / "krr_widths.json").read_text())
    assert saved["results"]["synthetic"]["scales"] == [1.0, 2.0]
    assert "| synthetic |" in (tmp_path / "krr_widths.txt").read_text()


@pytest.mark.bench
def test_krr_cost_quick(tmp_path: Path) -> None:
    """bench.krr_cost: every case measured, its work terms and both estimates saved, the
    three rates fitted non-negative."""
    from bench import krr_cost

    out = krr_cost.run(["--quick", "--out", str(tmp_path)])
    assert [c["case"] for c in out["cases"]] == list(krr_cost.QUICK)
    for case in out["cases"]:
        assert case["cpu_seconds"] > 0 and len(case["work"]) == 3
        assert math.isfinite(case["estimate"]) and math.isfinite(case["estimate_fitted"])
    assert set(out["fitted"]) == {"kernel", "factor", "ard"}
    assert all(v >= 0 for v in out["fitted"].values())
    assert "| ard-400-8-1 |" in (tmp_path / "krr_cost.txt").read_text()


def test_frontier_pareto() -> None:
    """A frontier keeps the points no cheaper point matches, in ascending CPU."""
    from bench.frontier import best_within, pareto

    pts = [{"cpu": c, "e": e} for c, e in [(3, 0.5), (1, 0.9), (2, 0.95), (4, 0.5), (5, 0.2)]]
    assert [(q["cpu"], q["e"]) for q in pareto(pts, "e", False)] == [(1, 0.9), (3, 0.5), (5, 0.2)]
    assert [q["cpu"] for q in pareto(pts, "e", True)] == [1, 2]
    assert best_within(pts, "e", False, 3.5) == {"cpu": 3, "e": 0.5}
    assert best_within(pts, "e", False, 0.5) is None


def test_memory_child_quick() -> None:
    """bench.memory's child on a tiny fit: the resident set before the fit, its peak (the
    kernel's mark reset just before), and the fit's share."""
    from bench import memory

    for method in ("okcore_default", "okcore_fast"):
        row = memory.child(method, 400, 3)
        assert row["peak_mb"] >= row["before_mb"] > 0
        assert row["fit_mb"] == pytest.approx(row["peak_mb"] - row["before_mb"], abs=0.2)
        assert row["cpu_s"] > 0


def test_memory_default_is_the_estimators_default() -> None:
    """bench.memory's okcore_default fits OKBoostRegressor() as a user gets it (no setting
    but M, the seed and one thread); its fast and exact rows grow best-first trees of J
    splits whatever the default tree type."""
    from bench import memory
    from okcore import OKBoostRegressor

    assert memory.OKCORE_MODES["okcore_default"] == {}
    for mode in ("okcore_fast", "okcore_exact"):
        estimator = OKBoostRegressor(**memory.OKCORE_MODES[mode])
        assert estimator.resolve_tree_type() == "best-first"
        assert estimator.max_splits == memory.J
