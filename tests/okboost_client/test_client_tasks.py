"""The Python client on bipartite networks and label sets, binary and JSON, with ids and
DataFrames: the answers equal the service's own over plain JSON."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from svc_data import SMALL, TestClient, bipartite_network, label_data, make_settings

from okboost_client import OKBoostClient, OKBoostError
from service.app import create_app

NET = bipartite_network()
R, TR = slice(0, 30), slice(30, 36)
C, TC = slice(0, 20), slice(20, 24)


@pytest.fixture
def http(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(tmp_path))) as client:
        yield client


@pytest.mark.parametrize("binary", [True, False])
def test_bipartite_by_id(http: TestClient, binary: bool) -> None:
    c = OKBoostClient("http://localhost", transport=http._transport, binary=binary)
    row_ids, col_ids = np.asarray(NET.row_ids), np.asarray(NET.col_ids)
    pairs = np.asarray([[row_ids[i], col_ids[j]] for i, j in NET.edges(range(30), range(20))])
    fit = c.train_bipartite(NET.rows[R], NET.cols[C], pairs, row_ids=row_ids[R],
                            col_ids=col_ids[C], model="okboost", params=SMALL, wait=True)  # fmt: skip
    assert fit["model"]["task"] == "bipartite"
    out = c.kernel_bipartite(fit["model_id"], NET.rows[TR], NET.cols[TC], row_ids=row_ids[TR],
                             col_ids=col_ids[TC], top_k=2)  # fmt: skip
    assert out["scores"]["new_rows"].shape == (6, 20)
    assert out["scores"]["new_pairs"].shape == (6, 4)
    assert out["edges"]["new_rows"].shape == (12, 3)
    assert out["edges"]["new_cols_ids"][0, 0] in set(row_ids[R])
    assert out["edges"]["new_cols_ids"][0, 1] == col_ids[20]
    # the same scores over plain JSON, straight from the service
    plain = http.post("/kernel", json={"model_id": fit["model_id"],
                                       "rows": {"inputs": NET.rows[TR].tolist()}}).json()  # fmt: skip
    np.testing.assert_allclose(out["scores"]["new_rows"], plain["scores"]["new_rows"])
    truth = [[row_ids[30 + a], col_ids[j]] for a, j in NET.edges(range(30, 36), range(20))]
    by_rows = c.evaluate_bipartite(fit["model_id"], NET.rows[TR], row_ids=row_ids[TR],
                                   by_id=np.asarray(truth))  # fmt: skip
    by_index = c.evaluate_bipartite(fit["model_id"], NET.rows[TR],
                                    new_rows=NET.edges(range(30, 36), range(20)))  # fmt: skip
    assert by_rows["new_rows"] == by_index["new_rows"] and by_rows["new_cols"] is None
    assert 0.5 < by_rows["new_rows"]["auroc"] <= 1.0


def test_bipartite_similarity_dataframes_and_errors(http: TestClient) -> None:
    pd = pytest.importorskip("pandas")
    c = OKBoostClient("http://localhost", transport=http._transport)
    rows = pd.DataFrame(NET.rows[R], columns=["a", "b", "c"])
    rows.insert(0, "id", NET.row_ids[:30])
    S = np.exp(-((NET.cols[:, None] - NET.cols[None]) ** 2).sum(-1))
    fit = c.train_bipartite(rows, col_similarity=S[C, C], adjacency=NET.Y[R, C], model="okboost", params=SMALL,
                            cv={"folds": 2}, wait=True)  # fmt: skip
    info = fit["model"]["bipartite"]
    assert info["col_inputs"] == "similarity" and info["has_row_ids"]
    assert len(info["cv"]["configurations"]) == 4
    out = c.kernel_bipartite(fit["model_id"], col_similarity=S[TC, C], threshold=0.5)
    assert set(out["scores"]) == {"new_cols"} and out["edges"]["new_cols"].shape[1] == 3
    with pytest.raises(OKBoostError) as err:
        c.kernel_bipartite(fit["model_id"], col_similarity=S[TC, :5])
    assert err.value.status == 422 and "20 training vertices" in err.value.message


@pytest.mark.parametrize("binary", [True, False])
def test_multilabel(http: TestClient, binary: bool) -> None:
    c = OKBoostClient("http://localhost", transport=http._transport, binary=binary)
    X, Y = label_data()
    names = ["w", "x", "y", "z"]
    fit = c.train_multilabel(X[:45], Y[:45], label_names=names, model="okboost", params=SMALL,
                             per_label=True,
                             metric="macro_f1", wait=True)  # fmt: skip
    assert len(fit["model"]["multilabel"]["thresholds"]) == 4
    out = c.predict_labels(fit["model_id"], X[45:], ids=[f"s{i}" for i in range(15)])
    assert out["probabilities"].shape == (15, 4) and out["labels"].dtype == np.int64
    assert ((out["probabilities"] >= out["thresholds"]) == out["labels"].astype(bool)).all()
    assert out["label_sets"][0] == [names[j] for j in np.flatnonzero(out["labels"][0])]
    scores = c.evaluate_labels(fit["model_id"], X[45:], Y[45:])
    assert 0.0 <= scores["hamming_loss"] <= 1.0 and 0.0 <= scores["micro_f1"] <= 1.0
    # the one-set predict options make no sense here: a 422 naming them
    with pytest.raises(OKBoostError, match="top_k"):
        c.predict(fit["model_id"], X[45:], top_k=3)


def test_multilabel_dataframe_labels_name_them(http: TestClient) -> None:
    pd = pytest.importorskip("pandas")
    c = OKBoostClient("http://localhost", transport=http._transport)
    X, Y = label_data()
    labels = pd.DataFrame(Y[:45].astype(int), columns=["p", "q", "r", "s"])
    fit = c.train_multilabel(
        X[:45], labels, model="okboost", params={"n_estimators": 5}, threshold=0.5, wait=True
    )
    assert fit["model"]["multilabel"]["label_names"] == ["p", "q", "r", "s"]
    assert fit["model"]["multilabel"]["thresholds"] == [0.5] * 4
    # the true labels' columns are matched to the model's labels by name, in any order
    truth = pd.DataFrame(Y[45:].astype(int), columns=["p", "q", "r", "s"])
    in_order = c.evaluate_labels(fit["model_id"], X[45:], truth)
    assert c.evaluate_labels(fit["model_id"], X[45:], truth[["s", "r", "q", "p"]]) == in_order
    assert c.evaluate_labels(fit["model_id"], X[45:], truth.to_numpy()) == in_order
    with pytest.raises(OKBoostError, match=r"names \['t'\], not labels of this model"):
        c.evaluate_labels(fit["model_id"], X[45:], truth.rename(columns={"s": "t"}))


def test_a_labelled_similarity_file_is_matched_by_id(http: TestClient, tmp_path: Path) -> None:
    """col_similarity as the path of a published-style file (ids in its header and first
    column, each shuffled): the same model as the matrix in order with its ids."""
    c = OKBoostClient("http://localhost", transport=http._transport)
    X = NET.cols[:20]
    S = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 4)
    ids = NET.col_ids[:20]
    rng = np.random.default_rng(2)
    rows, cols = rng.permutation(20), rng.permutation(20)
    for name, sep in (("targets.csv", ","), ("targets_simmat_dg.txt", "\t")):
        lines = [sep + sep.join(ids[j] for j in cols)]
        lines += [ids[i] + sep + sep.join(repr(float(S[i, j])) for j in cols) for i in rows]
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    row_ids = np.asarray(NET.row_ids[:30])
    edges = np.asarray([[row_ids[i], ids[j]] for i, j in NET.edges(range(30), range(20))])
    common = {"rows": NET.rows[:30], "row_ids": row_ids, "edges": edges,
              "model": "okboost", "params": SMALL, "wait": True}  # fmt: skip
    by_array = c.train_bipartite(col_similarity=S, col_ids=np.asarray(ids), **common)
    new = {"rows": NET.rows[30:], "top_k": 3}
    want = c.kernel_bipartite(by_array["model_id"], **new)
    # a .csv file, and a tab-separated .txt file as the published drug-target files are
    for name in ("targets.csv", "targets_simmat_dg.txt"):
        by_file = c.train_bipartite(col_similarity=tmp_path / name, **common)
        got = c.kernel_bipartite(by_file["model_id"], **new)
        np.testing.assert_array_equal(got["edges"]["new_rows_ids"], want["edges"]["new_rows_ids"])


@pytest.mark.parametrize("binary", [True, False])
def test_bipartite_unknown_pairs(http: TestClient, binary: bool) -> None:
    """Unknown pairs as a list or as NaN in the adjacency give one model; at /evaluate they
    are left out of the scores."""
    c = OKBoostClient("http://localhost", transport=http._transport, binary=binary)
    Y = NET.Y[R, C].copy()
    unknown = np.argwhere(Y == 0)[::7]
    listed = c.train_bipartite(NET.rows[R], NET.cols[C], adjacency=Y, unknown_pairs=unknown,
                               model="okboost", params=SMALL, wait=True)  # fmt: skip
    Y[unknown[:, 0], unknown[:, 1]] = np.nan
    as_nan = c.train_bipartite(
        NET.rows[R], NET.cols[C], adjacency=Y, model="okboost", params=SMALL, wait=True
    )
    assert listed["model"]["bipartite"]["n_unknown"] == len(unknown)
    assert as_nan["model"]["bipartite"]["n_unknown"] == len(unknown)
    a = c.kernel_bipartite(listed["model_id"], NET.rows[TR])["scores"]["new_rows"]
    b = c.kernel_bipartite(as_nan["model_id"], NET.rows[TR])["scores"]["new_rows"]
    np.testing.assert_allclose(a, b)
    truth = NET.edges(range(30, 36), range(20))
    negatives = np.argwhere(NET.Y[TR, C] == 0)[:3]
    out = c.evaluate_bipartite(listed["model_id"], NET.rows[TR], new_rows=truth,
                               unknown_pairs={"new_rows": negatives})  # fmt: skip
    assert out["new_rows"]["n_unknown"] == 3
    assert out["new_rows"]["n_pairs"] == 6 * 20 - 3


def test_predict_with_similarity_columns_named_by_training_id(http: TestClient) -> None:
    """input_columns: a similarity model's new similarity, columns in any order named by
    the training ids, gives the answers of the columns in the training order."""
    c = OKBoostClient("http://localhost", transport=http._transport)
    X = NET.rows
    S = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 4)
    names = list(NET.row_ids[:30])
    fit = c.train(S[:30, :30], {"type": "linear", "outputs": NET.Y[:30]}, input_kind="similarity",
                  ids=names, model="krr", wait=True)  # fmt: skip
    order = np.random.default_rng(1).permutation(30)
    want = c.predict(fit["model_id"], S[30:, :30], weights="dense")["weights"]
    got = c.predict(fit["model_id"], S[30:, order], weights="dense",
                    input_columns=[names[j] for j in order])["weights"]  # fmt: skip
    np.testing.assert_allclose(got, want, atol=1e-12)
    unnamed = c.predict(fit["model_id"], S[30:, order], weights="dense")["weights"]
    assert not np.allclose(unnamed, want)  # the names are what put the columns in order


def test_labelled_data_frames_as_pandas_reads_the_published_files(http: TestClient) -> None:
    """Targets x drugs, each DataFrame labelled by id and in an order of its own (the drug
    similarity's differs from the matrix's): matched by id, the model is the one trained
    on the arrays put in order by hand, never drugs paired with another's similarities."""
    pd = pytest.importorskip("pandas")
    c = OKBoostClient("http://localhost", transport=http._transport)
    targets, drugs = [f"hsa:{100 + i}" for i in range(30)], [f"D{200 + j:05d}" for j in range(20)]
    S_t = np.exp(-((NET.rows[R, None] - NET.rows[None, R]) ** 2).sum(-1) / 4)
    S_d = np.exp(-((NET.cols[:, None] - NET.cols[None]) ** 2).sum(-1) / 4)
    order = np.random.default_rng(0).permutation(20)
    drug_frame = pd.DataFrame(S_d[C, C][np.ix_(order, order)],
                              index=[drugs[j] for j in order], columns=[drugs[j] for j in order])  # fmt: skip
    fit = c.train_bipartite(
        row_similarity=pd.DataFrame(S_t, index=targets, columns=targets),
        col_similarity=drug_frame, adjacency=pd.DataFrame(NET.Y[R, C], index=targets, columns=drugs),
        model="okboost", params=SMALL, wait=True,
    )  # fmt: skip
    # by hand: the matrix's drugs put in the drug file's order, the order the model learns in
    plain = c.train_bipartite(row_similarity=S_t, col_similarity=drug_frame.to_numpy(),
                              adjacency=NET.Y[R, C][:, order], model="okboost", params=SMALL,
                              wait=True)  # fmt: skip
    new = S_d[TC, C]  # the new drugs' similarity to the 20 training drugs, in id order
    by_frame = c.kernel_bipartite(
        fit["model_id"],
        col_similarity=pd.DataFrame(new, index=["N1", "N2", "N3", "N4"], columns=drugs),
    )["scores"]["new_cols"]
    expected = c.kernel_bipartite(plain["model_id"], col_similarity=new[:, order])
    expected = expected["scores"]["new_cols"]
    np.testing.assert_allclose(by_frame, expected)
    with pytest.raises(ValueError, match="same items once each"):
        c.train_bipartite(row_similarity=pd.DataFrame(S_t, index=targets, columns=targets[::-1][:29] + ["x"]),
                          col_similarity=S_d[C, C], adjacency=NET.Y[R, C])  # fmt: skip


def test_features_labelled_by_their_index_are_paired_by_id(http: TestClient) -> None:
    """A side's features read with ``index_col=0`` (ids in the index, no id column) and a
    labelled adjacency in another row order: the index gives the side's ids, so the
    adjacency's rows reach the right vertices; the same features with pandas' default
    index stay positional."""
    pd = pytest.importorskip("pandas")
    c = OKBoostClient("http://localhost", transport=http._transport)
    targets = [f"hsa:{100 + i}" for i in range(30)]
    order = np.random.default_rng(1).permutation(30)
    adjacency = pd.DataFrame(NET.Y[R, C][order], index=[targets[i] for i in order])
    fit = c.train_bipartite(pd.DataFrame(NET.rows[R], index=targets), NET.cols[C],
                            adjacency=adjacency, model="okboost", params=SMALL, wait=True)  # fmt: skip
    plain = c.train_bipartite(NET.rows[R], NET.cols[C], adjacency=NET.Y[R, C], model="okboost",
                              params=SMALL, wait=True)  # fmt: skip
    new = NET.rows[TR]
    np.testing.assert_allclose(
        c.kernel_bipartite(fit["model_id"], rows=new)["scores"]["new_rows"],
        c.kernel_bipartite(plain["model_id"], rows=new)["scores"]["new_rows"],
    )
    side = c._side(pd.DataFrame(NET.rows[R]), None, None, "rows")
    assert side is not None and "ids" not in side
