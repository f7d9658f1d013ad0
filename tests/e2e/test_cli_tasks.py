"""``okboost bipartite ...`` and ``okboost labels ...`` from CSV / TSV / .npy files against a
live server: tables with id columns, edges by id, a labels header naming the labels."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import numpy as np
import pytest
from e2e_server import Server
from svc_data import bipartite_network, label_data

from service.cli import main

NET = bipartite_network()


def _table(path: Path, X: np.ndarray, ids: list[str]) -> None:
    lines = ["id," + ",".join(f"f{k}" for k in range(X.shape[1]))]
    lines += [f"{i}," + ",".join(f"{v:.6f}" for v in x) for i, x in zip(ids, X, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_bipartite_from_files(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--url", server.url]
    _table(tmp_path / "drugs.csv", NET.rows[:30], NET.row_ids[:30])
    _table(tmp_path / "targets.csv", NET.cols[:20], NET.col_ids[:20])
    _table(tmp_path / "new_drugs.csv", NET.rows[30:], NET.row_ids[30:])
    pairs = NET.edges(range(30), range(20))
    (tmp_path / "interactions.tsv").write_text(
        "drug\ttarget\n" + "".join(f"d{i}\tt{j}\n" for i, j in pairs), encoding="utf-8"
    )
    test = NET.edges(range(30, 36), range(20))
    (tmp_path / "test.tsv").write_text(
        "".join(f"d{30 + a}\tt{j}\n" for a, j in test), encoding="utf-8"
    )
    code = main(["bipartite", "train", *url, "--rows", str(tmp_path / "drugs.csv"),
                 "--cols", str(tmp_path / "targets.csv"), "--edges",
                 str(tmp_path / "interactions.tsv"), "--model", "okboost", "--param", "n_estimators=15",
                 "--cv-folds", "2", "--quiet"])  # fmt: skip
    assert code == 0
    trained = json.loads(capsys.readouterr().out)
    assert trained["state"] == "done"
    model_id = trained["model_id"]
    code = main(["bipartite", "kernel", *url, model_id, "--rows", str(tmp_path / "new_drugs.csv"),
                 "--top-k", "3", "--no-scores"])  # fmt: skip
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scores"] is None
    assert len(out["edges"]["new_rows"]) == 18 and out["edges"]["new_rows"][0][0] == 0
    assert out["edges"]["new_rows_ids"][0][0] == "d30"
    code = main(["bipartite", "evaluate", *url, model_id, "--rows",
                 str(tmp_path / "new_drugs.csv"), "--edges", str(tmp_path / "test.tsv")])  # fmt: skip
    assert code == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["new_rows"]["n_interactions"] == len(test)
    assert scores["new_cols"] is None and scores["pooled"]["auroc"] > 0.5
    # a mistake is one line, exit code 1
    code = main(["bipartite", "kernel", *url, model_id, "--cols", str(tmp_path / "drugs.csv")])
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith("okboost: error: 422") and "2 features" in err and err.count("\n") == 1


def test_labels_from_files(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--url", server.url]
    X, Y = label_data()
    np.save(tmp_path / "X.npy", X[:45])
    np.save(tmp_path / "Xtest.npy", X[45:])
    header = "alpha,beta,gamma,delta"
    np.savetxt(tmp_path / "labels.csv", Y[:45], delimiter=",", fmt="%d", header=header,
               comments="")  # fmt: skip
    np.savetxt(tmp_path / "test_labels.csv", Y[45:], delimiter=",", fmt="%d")
    code = main(["labels", "train", *url, str(tmp_path / "X.npy"), str(tmp_path / "labels.csv"),
                 "--per-label", "--metric", "macro_f1", "--model", "okboost",
                 "--param", "n_estimators=10", "--quiet"])  # fmt: skip
    assert code == 0
    model_id = json.loads(capsys.readouterr().out)["model_id"]
    assert main(["labels", "predict", *url, model_id, str(tmp_path / "Xtest.npy")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["label_names"] == header.split(",") and len(out["labels"]) == 15
    assert all(0.0 <= p <= 1.0 for row in out["probabilities"] for p in row)
    code = main(["labels", "evaluate", *url, model_id, str(tmp_path / "Xtest.npy"),
                 str(tmp_path / "test_labels.csv")])  # fmt: skip
    assert code == 0
    scores = json.loads(capsys.readouterr().out)
    assert set(scores) >= {"hamming_loss", "micro_f1", "macro_f1", "one_error", "coverage"}
    # a header naming the labels in another order: its columns are matched by name
    np.savetxt(tmp_path / "named_test_labels.csv", Y[45:, ::-1], delimiter=",", fmt="%d",
               header=",".join(header.split(",")[::-1]), comments="")  # fmt: skip
    code = main(["labels", "evaluate", *url, model_id, str(tmp_path / "Xtest.npy"),
                 str(tmp_path / "named_test_labels.csv")])  # fmt: skip
    assert code == 0 and json.loads(capsys.readouterr().out) == scores


def test_bipartite_with_a_labelled_target_similarity(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--col-similarity given as published: ids in its header and first column, each in
    its own order; its rows' ids name the targets of the edges."""
    url = ["--url", server.url]
    _table(tmp_path / "drugs.csv", NET.rows[:30], NET.row_ids[:30])
    X = NET.cols[:20]
    S = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 4)
    ids = NET.col_ids[:20]
    rng = np.random.default_rng(0)
    rows, cols = rng.permutation(20), rng.permutation(20)
    lines = ["," + ",".join(ids[j] for j in cols)]
    lines += [ids[i] + "," + ",".join(f"{S[i, j]:.6f}" for j in cols) for i in rows]
    (tmp_path / "targets.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    pairs = NET.edges(range(30), range(20))
    (tmp_path / "interactions.tsv").write_text(
        "".join(f"{NET.row_ids[i]}\t{ids[j]}\n" for i, j in pairs), encoding="utf-8"
    )
    code = main(["bipartite", "train", *url, "--rows", str(tmp_path / "drugs.csv"),
                 "--col-similarity", str(tmp_path / "targets.csv"), "--edges",
                 str(tmp_path / "interactions.tsv"), "--model", "okboost", "--param", "n_estimators=5", "--quiet"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    trained = json.loads(capsys.readouterr().out)
    assert trained["state"] == "done"
    import httpx

    info = httpx.get(f"{server.url}/models/{trained['model_id']}").json()["bipartite"]
    assert info["n_interactions"] == len(pairs) and info["has_col_ids"]


def test_bipartite_with_the_published_interaction_matrix(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--adjacency given as published (targets x drugs, ids in its first column and
    header) beside a labelled drug similarity in another order: matched by id, with an
    empty cell read as an unknown pair."""
    url = ["--url", server.url]
    X = NET.cols[:20]
    S = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 4)
    ids = NET.col_ids[:20]
    order = np.random.default_rng(1).permutation(20)
    lines = ["\t" + "\t".join(ids[j] for j in order)]
    lines += [ids[i] + "\t" + "\t".join(f"{S[i, j]:.6f}" for j in order) for i in order]
    (tmp_path / "dc.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _table(tmp_path / "targets.csv", NET.rows[:30], NET.row_ids[:30])
    Y = NET.Y[:30, :20]
    cells = [["" if (i, j) == (0, 1) else f"{Y[i, j]:g}" for j in range(20)] for i in range(30)]
    lines = ["\t" + "\t".join(ids)]
    lines += [NET.row_ids[i] + "\t" + "\t".join(row) for i, row in enumerate(cells)]
    (tmp_path / "admat_dgc.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = main(["bipartite", "train", *url, "--rows", str(tmp_path / "targets.csv"),
                 "--col-similarity", str(tmp_path / "dc.txt"), "--adjacency",
                 str(tmp_path / "admat_dgc.txt"), "--model", "okboost", "--param", "n_estimators=5", "--quiet"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    trained = json.loads(capsys.readouterr().out)
    info = httpx.get(f"{server.url}/models/{trained['model_id']}").json()["bipartite"]
    expected = int(np.delete(Y.ravel(), 1).sum())
    assert info["n_interactions"] == expected and info["n_unknown"] == 1


def test_bipartite_unknown_pairs_from_files(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An adjacency table with NA cells, or a TSV of unknown id pairs, at training; unknown
    test pairs left out of the scores."""
    url = ["--url", server.url]
    _table(tmp_path / "drugs.csv", NET.rows[:30], NET.row_ids[:30])
    _table(tmp_path / "targets.csv", NET.cols[:20], NET.col_ids[:20])
    _table(tmp_path / "new_drugs.csv", NET.rows[30:], NET.row_ids[30:])
    Y = NET.Y[:30, :20]
    unknown = np.argwhere(Y == 0)[::11]
    cells = Y.astype(int).astype(str)
    cells[unknown[:, 0], unknown[:, 1]] = "NA"
    (tmp_path / "adjacency.csv").write_text(
        "\n".join(",".join(row) for row in cells) + "\n", encoding="utf-8"
    )
    (tmp_path / "unknown.tsv").write_text(
        "".join(f"d{i}\tt{j}\n" for i, j in unknown), encoding="utf-8"
    )
    pairs = NET.edges(range(30), range(20))
    (tmp_path / "interactions.tsv").write_text(
        "".join(f"d{i}\tt{j}\n" for i, j in pairs), encoding="utf-8"
    )
    common = ["--rows", str(tmp_path / "drugs.csv"), "--cols", str(tmp_path / "targets.csv"),
              "--model", "okboost", "--param", "n_estimators=15", "--param", "random_state=0", "--quiet"]  # fmt: skip
    ids = []
    for given in (["--adjacency", str(tmp_path / "adjacency.csv")],
                  ["--edges", str(tmp_path / "interactions.tsv"), "--unknown-pairs",
                   str(tmp_path / "unknown.tsv")]):  # fmt: skip
        assert main(["bipartite", "train", *url, *common, *given]) == 0
        trained = json.loads(capsys.readouterr().out)
        assert trained["state"] == "done"
        record = httpx.get(f"{server.url}/models/{trained['model_id']}").json()
        assert record["bipartite"]["n_unknown"] == len(unknown)
        ids.append(trained["model_id"])
    scores = []
    for model_id in ids:
        assert main(["bipartite", "kernel", *url, model_id, "--rows",
                     str(tmp_path / "new_drugs.csv")]) == 0  # fmt: skip
        scores.append(json.loads(capsys.readouterr().out)["scores"]["new_rows"])
    np.testing.assert_allclose(scores[0], scores[1])
    (tmp_path / "test_unknown.tsv").write_text("d30\tt0\nd31\tt1\n", encoding="utf-8")
    (tmp_path / "test.tsv").write_text(
        "".join(f"d{30 + a}\tt{j}\n" for a, j in NET.edges(range(30, 36), range(20))
                if (a, j) not in ((0, 0), (1, 1))),
        encoding="utf-8",
    )  # fmt: skip
    assert main(["bipartite", "evaluate", *url, ids[0], "--rows", str(tmp_path / "new_drugs.csv"),
                 "--edges", str(tmp_path / "test.tsv"), "--unknown-pairs",
                 str(tmp_path / "test_unknown.tsv")]) == 0  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert out["new_rows"]["n_unknown"] == 2 and out["new_rows"]["n_pairs"] == 6 * 20 - 2


def test_bipartite_labelled_similarity_at_prediction(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--col-similarity at prediction: a labelled table whose header names the training
    targets in another order gives the scores of the plain matrix in the training order."""
    url = ["--url", server.url]
    X = NET.cols
    S = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 4)
    ids = NET.col_ids

    def labelled(path: Path, rows: list[int], cols: list[int]) -> None:
        lines = ["\t" + "\t".join(ids[j] for j in cols)]
        lines += [ids[i] + "\t" + "\t".join(repr(float(S[i, j])) for j in cols) for i in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    _table(tmp_path / "drugs.csv", NET.rows[:30], NET.row_ids[:30])
    labelled(tmp_path / "targets.txt", list(range(20)), list(range(20)))
    order = [int(j) for j in np.random.default_rng(0).permutation(20)]
    labelled(tmp_path / "new_targets.txt", list(range(20, 24)), order)
    np.save(tmp_path / "new_targets.npy", S[20:24, :20])
    (tmp_path / "interactions.tsv").write_text(
        "".join(f"d{i}\tt{j}\n" for i, j in NET.edges(range(30), range(20))), encoding="utf-8"
    )
    assert main(["bipartite", "train", *url, "--rows", str(tmp_path / "drugs.csv"),
                 "--col-similarity", str(tmp_path / "targets.txt"), "--edges",
                 str(tmp_path / "interactions.tsv"), "--model", "okboost", "--param", "n_estimators=15",
                 "--quiet"]) == 0  # fmt: skip
    model_id = json.loads(capsys.readouterr().out)["model_id"]
    scores = []
    for name in ("new_targets.txt", "new_targets.npy"):
        assert main(["bipartite", "kernel", *url, model_id, "--col-similarity",
                     str(tmp_path / name)]) == 0  # fmt: skip
        scores.append(json.loads(capsys.readouterr().out)["scores"]["new_cols"])
    np.testing.assert_allclose(scores[0], scores[1], atol=1e-12)
    # evaluate: the labelled table's first column names the new targets, so the true pairs
    # and the unknown ones may name them by id, as with an id column
    test = [(i, 20 + b) for i, b in NET.edges(range(30), range(20, 24))]
    (tmp_path / "test.tsv").write_text(
        "".join(f"d{i}\tt{j}\n" for i, j in test[1:]), encoding="utf-8"
    )
    (tmp_path / "test_unknown.tsv").write_text("d{}\tt{}\n".format(*test[0]), encoding="utf-8")
    assert main(["bipartite", "evaluate", *url, model_id, "--col-similarity",
                 str(tmp_path / "new_targets.txt"), "--edges", str(tmp_path / "test.tsv"),
                 "--unknown-pairs", str(tmp_path / "test_unknown.tsv")]) == 0, capsys.readouterr().err  # fmt: skip
    out = json.loads(capsys.readouterr().out)["new_cols"]
    assert out["n_interactions"] == len(test) - 1 and out["n_unknown"] == 1
    assert out["n_pairs"] == 30 * 4 - 1


def test_predict_with_a_labelled_similarity_file(
    server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """okboost predict on a similarity model trained with ids: a labelled table whose header
    names the training items in another order answers as the matrix in the training order."""
    url = ["--url", server.url]
    X = NET.rows
    S = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 4)
    ids = NET.row_ids

    def labelled(path: Path, rows: range, cols: list[int]) -> None:
        lines = ["," + ",".join(ids[j] for j in cols)]
        lines += [ids[i] + "," + ",".join(repr(float(S[i, j])) for j in cols) for i in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    labelled(tmp_path / "train.csv", range(30), list(range(30)))
    np.save(tmp_path / "Y.npy", NET.Y[:30])
    order = [int(j) for j in np.random.default_rng(0).permutation(30)]
    labelled(tmp_path / "new.csv", range(30, 36), order)
    np.save(tmp_path / "new.npy", S[30:, :30])
    assert main(["train", *url, str(tmp_path / "train.csv"), "--outputs", str(tmp_path / "Y.npy"),
                 "--input-kind", "similarity", "--model", "krr", "--quiet"]) == 0  # fmt: skip
    model_id = json.loads(capsys.readouterr().out)["model_id"]
    weights = []
    for name in ("new.csv", "new.npy"):
        assert main(["predict", *url, model_id, str(tmp_path / name), "--weights", "dense"]) == 0
        weights.append(json.loads(capsys.readouterr().out)["weights"])
    np.testing.assert_allclose(weights[0], weights[1], atol=1e-12)
