"""``okboost train / predict / kernel`` from .csv and .npy files against a live server."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from e2e_server import Server
from svc_data import clustered_graph

from service.cli import ProgressDisplay, build_parser, json_ready, load_array, main


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
    (tmp_path / "a.txt").write_text("1 2\n3 4\n")
    np.testing.assert_array_equal(load_array(str(tmp_path / "a.txt")), [[1, 2], [3, 4]])


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
