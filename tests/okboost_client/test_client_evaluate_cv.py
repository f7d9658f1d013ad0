"""The Python client's evaluate() and train(cv=...): the scores and the CV table are
okcore's on the same data, by row and by id, with binary parts and with JSON."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, Graph, TestClient, clustered_graph, make_settings, vector_data

import okcore
from okboost_client import OKBoostClient, OKBoostError
from okcore import metrics, model_selection
from okcore.outputs.graph import diffusion_gram
from service.app import create_app

BETA = 1.0


@pytest.fixture(scope="module")
def graph() -> Graph:
    return clustered_graph()


@pytest.fixture
def http(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(tmp_path))) as client:
        yield client


def held_out_edges(g: Graph) -> tuple[np.ndarray, np.ndarray]:
    """The held-out vertices' true edges: among them (rows of the test inputs), and to the
    training vertices ([test row, training row])."""
    test_pos = {int(v): i for i, v in enumerate(g.test)}
    train_pos = {int(v): i for i, v in enumerate(g.train)}
    new_new, new_known = [], []
    for a, b in g.edges.tolist():
        if a in test_pos and b in test_pos:
            new_new.append((test_pos[a], test_pos[b]))
        for x, y in ((a, b), (b, a)):
            if x in test_pos and y in train_pos:
                new_known.append((test_pos[x], train_pos[y]))
    return np.asarray(new_new, dtype=np.int64).reshape(-1, 2), np.asarray(new_known)


def expected_scores(g: Graph, k: int) -> dict[str, float]:
    """okcore's own measures of the same fit: the truth kernel is the diffusion kernel of the
    whole graph, held-out vertices included."""
    X, Xt = g.features[g.train], g.features[g.test]
    est = okcore.OKBoostRegressor(**SMALL).fit(
        X, kernel=okcore.DiffusionKernel(g.train_edges(), BETA)
    )
    K = diffusion_gram(g.edges, len(g.features), BETA)
    gram_cross, gram_diag = K[np.ix_(g.test, g.train)], np.diag(K)[g.test]
    new_new, new_known = held_out_edges(g)
    q, n = len(g.test), len(g.train)
    a_nn, a_nk = np.zeros((q, q), dtype=bool), np.zeros((q, n), dtype=bool)
    a_nn[new_new[:, 0], new_new[:, 1]] = a_nn[new_new[:, 1], new_new[:, 0]] = True
    a_nk[new_known[:, 0], new_known[:, 1]] = True
    k_nn, k_nk = est.predict_kernel(Xt), est.predict_kernel(Xt, X)
    upper = np.triu_indices(q, k=1)
    shares = [a_nk[r, np.argsort(-k_nk[r], kind="stable")[:k]].mean()
              for r in range(q) if a_nk[r].any()]  # fmt: skip
    return {
        "err_phi": metrics.err_phi(est, Xt, gram_cross=gram_cross, gram_diag=gram_diag),
        "err_y": metrics.err_y(est, Xt, gram_cross=gram_cross, gram_diag=gram_diag),
        "auc": metrics.network_auc(k_nn, k_nk, a_nn, a_nk),
        "auc_new_new": metrics.edge_auc(k_nn[upper], a_nn[upper]),
        "auc_new_known": metrics.edge_auc(k_nk, a_nk),
        "precision_at_k": float(np.mean(shares)),
    }


@pytest.mark.parametrize("binary", [True, False])
def test_evaluate_equals_okcore_metrics_by_row_and_by_id(
    http: TestClient, graph: Graph, binary: bool
) -> None:
    c = OKBoostClient("http://localhost", transport=http._transport, binary=binary)
    X, Xt = graph.features[graph.train], graph.features[graph.test]
    ids = np.asarray([f"v{int(v)}" for v in graph.train])
    test_ids = np.asarray([f"v{int(v)}" for v in graph.test])
    spec = {"type": "diffusion", "beta": BETA, "edges": ids[graph.train_edges()]}
    mid = c.train(X, spec, ids=ids, params=SMALL, wait=True)["model_id"]
    K = diffusion_gram(graph.edges, len(graph.features), BETA)
    new_new, new_known = held_out_edges(graph)
    got = c.evaluate(
        mid,
        Xt,
        gram_cross=K[np.ix_(graph.test, graph.train)],
        gram_diag=np.diag(K)[graph.test],
        new_new=new_new,
        new_known=new_known,
        k=3,
    )
    for name, value in expected_scores(graph, k=3).items():
        assert got[name] == pytest.approx(value, rel=1e-10, abs=1e-14), name
    assert got["n_test"] == len(graph.test) and got["k"] == 3 and got["model_id"] == mid
    assert got["known_scores"] == "predicted"

    # the same edges named by id: the request's ids for the test vertices, the model's for
    # the training ones
    by_id = c.evaluate(
        mid,
        Xt,
        ids=test_ids,
        new_new=test_ids[new_new],
        new_known=np.column_stack([test_ids[new_known[:, 0]], ids[new_known[:, 1]]]),
        k=3,
    )
    for name in ("auc", "auc_new_new", "auc_new_known", "precision_at_k", "n_ranked"):
        assert by_id[name] == pytest.approx(got[name], rel=1e-12), name
    assert by_id["err_phi"] is None and by_id["err_y"] is None  # no truth outputs given


def test_evaluate_a_vector_model_with_its_outputs(http: TestClient) -> None:
    c = OKBoostClient("http://localhost", transport=http._transport)
    X, Y = vector_data(n=40)
    kernel = {"type": "rbf", "sigma": 1.0}
    mid = c.train(X[:30], {**kernel, "outputs": Y[:30]}, params=SMALL, wait=True)["model_id"]
    got = c.evaluate(mid, X[30:].astype(np.float32), outputs=Y[30:])
    est = okcore.OKBoostRegressor(**SMALL).fit(X[:30], Y[:30], kernel=kernel)
    Xt = X[30:].astype(np.float32).astype(float)  # the float32 inputs as the service reads them
    assert got["err_phi"] == pytest.approx(metrics.err_phi(est, Xt, Y[30:]), rel=1e-10)
    assert got["err_y"] == pytest.approx(metrics.err_y(est, Xt, Y[30:]), rel=1e-10)
    assert got["auc"] is None and got["precision_at_k"] is None and got["n_test"] == 10


def test_evaluate_errors(http: TestClient, graph: Graph) -> None:
    c = OKBoostClient("http://localhost", transport=http._transport)
    spec = {"type": "diffusion", "beta": BETA, "edges": graph.train_edges()}
    mid = c.train(graph.features[graph.train], spec, params=SMALL, wait=True)["model_id"]
    Xt = graph.features[graph.test]
    with pytest.raises(OKBoostError) as nothing:
        c.evaluate(mid, Xt)
    assert nothing.value.status == 422 and "nothing to evaluate against" in nothing.value.message
    with pytest.raises(OKBoostError) as unnamed:
        c.evaluate(mid, Xt, new_known=[["a", "b"]])
    assert unnamed.value.status == 422 and "ids" in unnamed.value.message
    with pytest.raises(TypeError, match="row indices"):
        c.evaluate(mid, Xt, new_known=[[0, 1.5]])
    with pytest.raises(TypeError, match="must be strings"):
        c.evaluate(mid, Xt, ids=list(range(len(Xt))), new_known=[[0, 1]])
    with pytest.raises(OKBoostError) as unknown:
        c.evaluate("0" * 32, Xt, new_known=[[0, 1]])
    assert unknown.value.status == 404


@pytest.mark.parametrize("binary", [True, False])
def test_train_with_cv_keeps_okcore_grid_search_table(
    http: TestClient, graph: Graph, binary: bool
) -> None:
    c = OKBoostClient("http://localhost", transport=http._transport, binary=binary)
    X = graph.features[graph.train]
    grid: dict[str, list[Any]] = {"max_splits": [1, 3], "learning_rate": [0.1, 0.3]}
    cv = {"folds": 3, "grid": grid, "scoring": ["auc", "auc_known"], "random_state": 4}
    spec = {"type": "diffusion", "beta": BETA, "edges": graph.train_edges()}
    answer = c.train(X, spec, params=SMALL, cv=cv, wait=True)
    expected = model_selection.grid_search(
        okcore.OKBoostRegressor(**SMALL), grid, X,
        kernel=okcore.DiffusionKernel(graph.train_edges(), BETA),
        scoring=["auc", "auc_known"], cv=3, random_state=4, refit=False,
    )  # fmt: skip
    record = c.model(answer["model_id"])
    assert record["cv"]["table"] == expected.table
    assert record["cv"]["best_params"] == expected.best_params
    assert record["cv"]["criterion"] == "auc" and record["cv"]["folds"] == 3
    assert {k: record["params"][k] for k in grid} == expected.best_params
    with pytest.raises(OKBoostError) as bad:
        c.train(X, spec, params=SMALL, cv={"folds": 1})
    assert bad.value.status == 422 and "cv.folds" in bad.value.message


def test_data_frames_with_an_id_column(http: TestClient, graph: Graph) -> None:
    """A features table and edge tables by id, as pandas reads them from CSV / TSV files: the
    same scores as arrays with ids=."""
    pd = pytest.importorskip("pandas", reason="pandas is not installed (an optional input)")
    c = OKBoostClient("http://localhost", transport=http._transport)
    ids = np.asarray([f"ORF{int(v)}" for v in graph.train])
    test_ids = np.asarray([f"ORF{int(v)}" for v in graph.test])
    features = pd.DataFrame(graph.features[graph.train], columns=["a", "b", "c", "d"])
    features.insert(2, "orf", ids)  # not called id, not first: the first non-numeric column
    edges = pd.DataFrame(ids[graph.train_edges()], columns=["source", "target"])
    spec = {"type": "diffusion", "beta": BETA, "edges": edges}
    mid = c.train(features, spec, params=SMALL, wait=True)["model_id"]
    assert c.model(mid)["has_ids"]
    new_new, new_known = held_out_edges(graph)
    test_table = pd.DataFrame(graph.features[graph.test], columns=["a", "b", "c", "d"])
    test_table["id"] = test_ids
    truth = pd.DataFrame({"test": test_ids[new_known[:, 0]], "known": ids[new_known[:, 1]]})
    got = c.evaluate(mid, test_table, new_new=test_ids[new_new], new_known=truth, k=3)
    for name in ("auc", "auc_new_new", "auc_new_known", "precision_at_k"):
        assert got[name] == pytest.approx(expected_scores(graph, k=3)[name], rel=1e-10), name
    out = c.kernel(mid, test_table, top_k=2)
    assert set(out["edges"]["new_known_ids"][:, 0]) <= set(test_ids)

    with pytest.raises(ValueError, match="not both"):
        c.kernel(mid, test_table, ids=test_ids)
    test_table["note"] = "x"
    with pytest.raises(TypeError, match="column 'note' is not numeric"):
        c.kernel(mid, test_table)


def test_train_names_krr_and_a_similarity_input(http: TestClient) -> None:
    """model="krr" and input_kind="similarity" reach the service; predictions from the Q x N
    similarity equal okcore's."""
    from sklearn.metrics.pairwise import rbf_kernel

    c = OKBoostClient("http://localhost", transport=http._transport)
    X, Y = vector_data(n=36)
    S = rbf_kernel(X, X, gamma=0.5)
    kernel = {"type": "linear", "outputs": Y[:30]}
    out = c.train(
        S[:30, :30], kernel, model="krr", params={"random_state": 0}, input_kind="similarity",
        wait=True,
    )  # fmt: skip
    assert out["model"]["input_map"] == "input_kernel" and out["model"]["model"] == "krr"
    est = okcore.KernelRidgeRegressor(input_kernel="precomputed", random_state=0)
    est.fit(S[:30, :30], Y[:30])
    got = c.predict(out["model_id"], S[30:, :30], weights="dense")
    np.testing.assert_allclose(got["weights"], est.predict_weights(S[30:, :30]), atol=1e-10)
    tree = c.train(
        S[:30, :30], kernel, model="ok3", input_kind="similarity", input_map="kpca",
        input_components=5, wait=True,
    )  # fmt: skip
    assert tree["model"]["input_map"] == "kpca"


@pytest.mark.parametrize("binary", [False, True])
def test_train_sends_sample_weights_as_okcore_takes_them(http: TestClient, binary: bool) -> None:
    c = OKBoostClient("http://localhost", transport=http._transport, binary=binary)
    X, Y = vector_data(n=30)
    w = np.arange(30) % 3 + 0.5
    out = c.train(
        X, {"type": "linear", "outputs": Y}, model="krr", params={"alpha": 0.5},
        sample_weight=w, wait=True,
    )  # fmt: skip
    assert out["model"]["sample_weight"] is True
    est = okcore.KernelRidgeRegressor(alpha=0.5).fit(X, Y, sample_weight=w)
    got = c.kernel(out["model_id"], X[:4])["kernel"]
    np.testing.assert_allclose(got, est.predict_kernel(X[:4]), rtol=1e-9)
    with pytest.raises(OKBoostError, match="negative"):
        c.train(X, {"type": "linear", "outputs": Y}, sample_weight=-w, wait=True)
