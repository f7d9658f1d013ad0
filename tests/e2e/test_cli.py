"""``okboost train / predict / kernel`` from .csv and .npy files against a live server."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from e2e_server import Server
from svc_data import clustered_graph

from service.cli import build_parser, load_array, main


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
    assert "20/20 trees" in err and "done" in err  # the progress bar

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
