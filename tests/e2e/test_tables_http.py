"""Tables over real HTTP: a features CSV with an id column and an edge TSV with a header,
sent as curl sends files (with and without a content type) and read by the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import numpy as np
import pytest
from e2e_server import Server
from svc_data import clustered_graph

from service.cli import main

PARAMS = {"n_estimators": 20, "learning_rate": 0.2, "max_splits": 3, "random_state": 0}


def _name(v: int) -> str:
    return f"YBR{v:03d}C"


def _write_tables(tmp_path: Path) -> dict[str, Path]:
    g = clustered_graph(n=50, n_test=6, seed=2)
    train, test = set(g.train.tolist()), set(g.test.tolist())

    def features(rows: np.ndarray) -> str:
        head = "id," + ",".join(f"f{j}" for j in range(g.features.shape[1]))
        body = [_name(v) + "," + ",".join(str(float(x)) for x in g.features[v]) for v in rows]
        return "\n".join([head, *body]) + "\n"

    def tsv(pairs: list[tuple[int, int]]) -> str:
        return "source\ttarget\n" + "".join(f"{_name(a)}\t{_name(b)}\n" for a, b in pairs)

    pairs = g.edges.tolist()
    paths = {
        "train.csv": features(g.train),
        "test.csv": features(g.test),
        "edges.tsv": tsv([(a, b) for a, b in pairs if a in train and b in train]),
        "test_edges.tsv": tsv(
            [(a, b) if a in test else (b, a) for a, b in pairs if (a in test) != (b in test)]
        ),
    }
    for file, text in paths.items():
        (tmp_path / file).write_text(text)
    return {file: tmp_path / file for file in paths}


def test_tables_train_rank_and_evaluate_over_http(server: Server, tmp_path: Path) -> None:
    files = _write_tables(tmp_path)
    spec = {"output_kernel": {"type": "diffusion", "beta": 1.0}, "params": PARAMS, "wait": True}
    with httpx.Client(base_url=server.url, timeout=60) as http:
        r = http.post(
            "/train",
            data={"json": json.dumps(spec)},
            files={  # no content types: sniffed as tables, as curl -F name=@file sends them
                "inputs": ("train.csv", files["train.csv"].read_bytes()),
                "output_kernel.edges": ("edges.tsv", files["edges.tsv"].read_bytes()),
            },
        )
        assert r.status_code == 201, r.text
        model = r.json()["model"]
        assert model["has_ids"] and model["kernel"]["n_edges"] > 0
        mid = r.json()["model_id"]
        test_csv = ("test.csv", files["test.csv"].read_bytes(), "text/csv")
        ask = {"model_id": mid, "top_k": 10, "return_kernel": False}
        k = http.post("/kernel", data={"json": json.dumps(ask)}, files={"inputs": test_csv})
        assert k.status_code == 200, k.text
        edges = k.json()["edges"]
        assert len(edges["new_known"]) == 60
        for a in range(6):
            mine = [e for e in edges["new_known"] if e[0] == a]
            scores = [e[2] for e in mine]
            assert scores == sorted(scores, reverse=True)
        assert (
            edges["new_known_ids"][0][0]
            == files["test.csv"].read_text().split("\n")[1].split(",")[0]
        )
        ev = http.post(
            "/evaluate",
            data={"json": json.dumps({"model_id": mid, "k": 5})},
            files={
                "inputs": test_csv,
                "edges.new_known": (
                    "test_edges.tsv",
                    files["test_edges.tsv"].read_bytes(),
                    "text/tab-separated-values",
                ),
            },
        )
        assert ev.status_code == 200, ev.text
        assert ev.json()["auc_new_known"] is not None and ev.json()["n_ranked"] > 0


def test_cli_reads_the_same_tables(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = _write_tables(tmp_path)
    url = ["--url", server.url]
    args = ["train", *url, str(files["train.csv"]), "--edges", str(files["edges.tsv"]), "--quiet"]
    assert main([*args, "--param", "n_estimators=10"]) == 0
    model_id = json.loads(capsys.readouterr().out)["model_id"]
    assert main(["kernel", *url, model_id, str(files["test.csv"]), "--top-k", "3"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert {a for a, _ in answer["edges"]["new_known_ids"]} == {
        line.split(",")[0] for line in files["test.csv"].read_text().splitlines()[1:]
    }
    (tmp_path / "bad.csv").write_text("id,x\nv1,1\nv2,oops\nv3,2\n")
    assert main(["kernel", *url, model_id, str(tmp_path / "bad.csv")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 3 column 2 ('x') is 'oops'" in err
