"""``okboost train / predict / kernel / evaluate`` from .csv, .tsv and .npy files (ids files
too) against a live server; errors are one line."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from client_expectations import expectations
from e2e_server import ROOT, Server
from svc_data import clustered_graph

from okboost_client import OKBoostClient
from service.cli import ProgressDisplay, build_parser, json_ready, load_array, main
from service.cli_files import HEARTBEAT


def test_train_predict_kernel_from_files(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    g = clustered_graph()
    np.savetxt(
        tmp_path / "X.csv", g.features[g.train], delimiter=",", header="f0,f1,f2,f3", comments=""
    )
    np.savetxt(tmp_path / "edges.csv", g.train_edges(), delimiter=",", fmt="%d")
    np.save(tmp_path / "Xnew.npy", g.features[g.test])
    url = ["--url", server.url]

    assert (
        main(
            [
                "train",
                *url,
                str(tmp_path / "X.csv"),
                "--edges",
                str(tmp_path / "edges.csv"),
                "--param",
                "n_estimators=20",
                "--param",
                "max_splits=3",
                "--param",
                "splitter=random",
                "--param",
                "random_state=1",
            ]
        )
        == 0
    )
    out, err = capsys.readouterr()
    trained = json.loads(out)
    assert trained["state"] == "done"
    assert "20/20 trees, done" in err and "\r" not in err  # plain progress lines: not a tty

    assert (
        main(["predict", *url, trained["model_id"], str(tmp_path / "Xnew.npy"), "--top-k", "2"])
        == 0
    )
    pred = json.loads(capsys.readouterr().out)
    assert np.asarray(pred["indices"]).shape == (len(g.test), 2)

    assert (
        main(
            [
                "kernel",
                *url,
                trained["model_id"],
                str(tmp_path / "Xnew.npy"),
                "--threshold",
                "0.01",
                "-o",
                str(tmp_path / "k.json"),
            ]
        )
        == 0
    )
    kern = json.loads((tmp_path / "k.json").read_text())
    assert kern["shape"] == [len(g.test), len(g.test)] and kern["edges"] is not None

    # errors are one line on stderr and a non-zero exit code
    assert main(["predict", *url, "f" * 32, str(tmp_path / "Xnew.npy")]) == 1
    assert "404 not_found: unknown model" in capsys.readouterr().err


def test_parser_and_files(tmp_path: Path) -> None:
    args = build_parser().parse_args(["serve", "--port", "9001", "--model-dir", "/tmp/m"])
    assert (args.port, args.model_dir, args.host) == (9001, "/tmp/m", None)
    args = build_parser().parse_args(
        ["train", "S.npy", "--outputs", "Y.npy", "--model", "krr", "--input-kind", "similarity"]
    )
    assert (args.model, args.input_kind, args.input_map) == ("krr", "similarity", None)
    (tmp_path / "a.txt").write_text("1 2\n3 4\n")
    np.testing.assert_array_equal(load_array(str(tmp_path / "a.txt")), [[1, 2], [3, 4]])


def test_a_reader_that_stops_reading_is_not_an_error() -> None:
    """``okboost kernel ... | head``: the command's output cut short by its reader ends
    quietly, without an error line on stderr."""
    code = (
        "import sys, service.cli as cli\n"
        "def flood(args):\n"
        "    for _ in range(100000):\n"
        "        print('x' * 80)\n"
        "    return 0\n"
        "cli.cmd_predict = flood\n"
        "sys.exit(cli.main(['predict', 'f' * 32, 'X.npy']))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10) == b"x" * 10
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert err == ""


def test_help_names_the_defaults_and_their_variables() -> None:
    """--help says where --url, --model-dir and --max-workers come from when not given, as
    the CLI and Configuration pages do."""
    sub = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    ).choices
    for command in ("train", "predict", "kernel", "evaluate"):
        text = " ".join(sub[command].format_help().split())
        assert "OKBOOST_URL, else http://127.0.0.1:8000" in text, command
    for command in ("bipartite", "labels"):
        nested = next(
            a for a in sub[command]._actions if isinstance(a, argparse._SubParsersAction)
        ).choices
        assert all("OKBOOST_URL" in p.format_help() for p in nested.values()), command
    serve = " ".join(sub["serve"].format_help().split())
    assert "OKBOOST_MODEL_DIR" in serve and "OKBOOST_MAX_WORKERS" in serve


def _job(state: str, done: int, loss: float | None, phase: str = "trees") -> dict[str, Any]:
    return {
        "state": state,
        "phase": phase,
        "progress": {"done": done, "total": 40, "fraction": done / 40},
        "elapsed": 1.5,
        "eta": 3.0,
        "last_train_loss": loss,
    }


def test_progress_is_plain_lines_when_piped_and_losses_are_clipped_at_zero() -> None:
    stream = io.StringIO()  # not a terminal
    show = ProgressDisplay(stream)
    show(_job("running", 0, None, phase="output_space"))
    for done in range(1, 41):
        show(_job("running", done, 0.5 / done if done < 40 else -1e-17))
    show(_job("done", 40, -1e-17))
    text = stream.getvalue()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert 10 <= len(lines) <= 13  # one per phase, state and tenth of the trees
    assert lines[0].startswith("0/40 trees, running, output_space")
    assert lines[-1] == "40/40 trees, done, 1.5 s, loss 0"
    assert "-1e-17" not in text


def test_a_long_phase_prints_a_line_every_few_seconds_when_piped() -> None:
    """The output space of a large graph takes minutes with no tree done: the log still gets
    a line every HEARTBEAT seconds, with the phase's time and the ETA; a queued job its place."""
    stream, now = io.StringIO(), [0.0]
    show = ProgressDisplay(stream, clock=lambda: now[0])
    show(dict(_job("queued", 0, None), queue_position=2))
    for second in range(1, 61):  # polled 4 times a second for a minute, in one phase
        for _ in range(4):
            now[0] = second - 1 + _ / 4
            show(dict(_job("running", 0, None, phase="output_space"), phase_elapsed=now[0]))
    lines = stream.getvalue().splitlines()
    assert lines[0] == "0/40 trees, queued, position 2 in the queue, 1.5 s"
    running = lines[1:]
    assert 60 / HEARTBEAT <= len(running) <= 60 / HEARTBEAT + 1
    assert running[0].startswith("0/40 trees, running, output_space for 0 s, 1.5 s, eta 3.0 s")
    assert running[-1].startswith("0/40 trees, running, output_space for 55 s")


def test_progress_is_a_bar_redrawn_in_place_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    show = ProgressDisplay(stream)
    for done in (0, 10, 40):
        show(_job("running" if done < 40 else "done", done, 0.25))
    text = stream.getvalue()
    assert "\r" in text and "40/40 trees" in text and "loss 0.25" in text


def test_edge_and_weight_indices_are_printed_as_integers() -> None:
    out = {
        "edges": {"new_new": np.array([[0.0, 1.0, 0.25]]), "new_known": np.zeros((0, 3))},
        "weights_sparse": np.array([[2.0, 7.0, 0.5]]),
        "indices": np.array([[3, 1]]),
    }
    text = json.dumps(json_ready(out))
    assert '"new_new": [[0, 1, 0.25]]' in text and '"weights_sparse": [[2, 7, 0.5]]' in text
    assert '"indices": [[3, 1]]' in text


def test_ids_cv_and_evaluate_from_files_equal_okcore(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The walk-through with ids: a features CSV, an ids file, an edge TSV with a header,
    trained with CV; held-out scores by id as okcore computes them."""
    expected = expectations()
    d = expected["data"]
    names = [f"YAL{i:03d}C" for i in range(len(d["inputs"]))]
    test_names = [f"new-{i}" for i in range(len(d["test_inputs"]))]
    np.savetxt(tmp_path / "X.csv", d["inputs"], delimiter=",", header="f1,f2", comments="")
    np.savetxt(tmp_path / "Xt.csv", d["test_inputs"], delimiter=",")
    (tmp_path / "ids.txt").write_text("".join(f"{n}\n" for n in names))
    (tmp_path / "test_ids.txt").write_text("".join(f"{n}\n" for n in test_names))
    (tmp_path / "E.tsv").write_text(
        "source\ttarget\n" + "".join(f"{names[a]}\t{names[b]}\n" for a, b in d["edges"])
    )
    (tmp_path / "new_known.tsv").write_text(
        "".join(f"{test_names[a]}\t{names[i]}\n" for a, i in d["new_known"])
    )
    (tmp_path / "new_new.csv").write_text(
        "".join(f"{test_names[a]},{test_names[b]}\n" for a, b in d["new_new"])
    )
    url = ["--url", server.url]
    params = [f"--param={k}={v}" for k, v in d["params"].items()]
    cv = expected["cv"]["spec"]
    grid = [f"--cv-grid={k}={','.join(map(str, v))}" for k, v in cv["grid"].items()]
    train = ["train", *url, str(tmp_path / "X.csv"), "--ids", str(tmp_path / "ids.txt")]
    train += ["--edges", str(tmp_path / "E.tsv"), *params, "--quiet"]
    assert main([*train, "--cv-folds", str(cv["folds"]), *grid, "--cv-scoring", "auc"]) == 0
    out, err = capsys.readouterr()
    model_id = json.loads(out)["model_id"]
    assert "line 1 of" in err and "read as a header" in err  # said, not silent
    with OKBoostClient(server.url) as client:
        record = client.model(model_id)
    assert record["has_ids"] and record["cv"]["table"] == expected["cv"]["table"]

    assert main([*train]) == 0  # the same data without CV: the model okcore fitted
    model_id = json.loads(capsys.readouterr().out)["model_id"]
    evaluate = ["evaluate", *url, model_id, str(tmp_path / "Xt.csv")]
    evaluate += ["--ids", str(tmp_path / "test_ids.txt"), "--k", str(d["k"])]
    evaluate += ["--new-known", str(tmp_path / "new_known.tsv")]
    evaluate += ["--new-new", str(tmp_path / "new_new.csv"), "-o", str(tmp_path / "s.json")]
    assert main(evaluate) == 0
    scores = json.loads((tmp_path / "s.json").read_text())
    for name in ("auc", "auc_new_new", "auc_new_known", "precision_at_k"):
        assert scores[name] == pytest.approx(expected["evaluate"][name], rel=1e-10), name
    assert scores["err_phi"] is None

    gram = ["--gram-cross", str(tmp_path / "G.npy"), "--gram-diag", str(tmp_path / "D.npy")]
    np.save(tmp_path / "G.npy", np.asarray(d["gram_cross"]))
    np.save(tmp_path / "D.npy", np.asarray(d["gram_diag"]))
    assert main(["evaluate", *url, model_id, str(tmp_path / "Xt.csv"), *gram]) == 0
    scores = json.loads(capsys.readouterr().out)
    for name in ("err_phi", "err_y"):
        assert scores[name] == pytest.approx(expected["evaluate"][name], rel=1e-10), name

    kernel = ["kernel", *url, model_id, str(tmp_path / "Xt.csv"), "--top-k", "2"]
    assert main([*kernel, "--ids", str(tmp_path / "test_ids.txt")]) == 0
    named = json.loads(capsys.readouterr().out)["edges"]["new_known_ids"]
    assert {a for a, _ in named} == set(test_names) and {b for _, b in named} <= set(names)


def test_errors_are_one_line_without_a_traceback(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    np.savetxt(tmp_path / "X.csv", np.eye(3), delimiter=",")
    (tmp_path / "E.tsv").write_text("a\tb\nb\tc\n")
    (tmp_path / "Xid.csv").write_text("id,f1\na,0.5\nb,0.7\n")
    (tmp_path / "ids.txt").write_text("a\nb\nc\n")
    (tmp_path / "E3.tsv").write_text("a\tb\tc\n")
    url = ["--url", server.url]
    cases = [
        (["train", *url, str(tmp_path / "X.csv"), "--edges", str(tmp_path / "E.tsv")],
         "E.tsv line 1: 'a' is not a row number; to name vertices by id"),
        # the id column of Xid.csv names a and b: edge b-c names an unknown vertex
        (["train", *url, str(tmp_path / "Xid.csv"), "--edges", str(tmp_path / "E.tsv")],
         "'c' is not one of the 2 ids"),
        (["train", *url, str(tmp_path / "X.csv"), "--ids", str(tmp_path / "ids.txt"),
          "--edges", str(tmp_path / "E3.tsv")], "E3.tsv' line 1 column 3 is 'c', not a finite number (edge weights)"),
        (["train", *url, str(tmp_path / "X.csv"), "--ids", str(tmp_path / "ids.txt"),
          "--edges", str(tmp_path / "E.tsv"), "--param", "n_estimators=0"],
         "422 invalid_parameter"),
        (["evaluate", "--url", "http://127.0.0.1:9", "f" * 32, str(tmp_path / "X.csv"),
          "--new-known", str(tmp_path / "E.tsv"), "--ids", str(tmp_path / "ids.txt")],
         "cannot reach the service at http://127.0.0.1:9"),
        (["evaluate", *url, "f" * 32, str(tmp_path / "X.csv"), "--outputs",
          str(tmp_path / "X.csv")], "404 not_found"),
    ]  # fmt: skip
    for argv, message in cases:
        assert main(argv) == 1, argv
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if not line.startswith("okboost: note")]
        assert len(lines) == 1 and lines[0].startswith("okboost: error: "), err
        assert message in lines[0] and "Traceback" not in err
