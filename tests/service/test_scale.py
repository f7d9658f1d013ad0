"""Predictions at scale: cached training features, blocked edges and weights, dense bounds.

The blocked computations are compared with the straightforward ones (the whole Q x N
score matrix from okcore's predict_kernel / predict_weights), with blocks forced small.
"""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, Graph, clustered_graph, model_record

import okcore
import service.inference.predict as inference
from service.errors import InvalidRequest
from service.inference.predict import select_edges
from service.schemas.api import KernelRequest, PredictRequest
from service.store.ids import new_id
from service.store.model_store import LoadedModel, ModelStore


@pytest.fixture(scope="module")
def big_graph() -> Graph:
    return clustered_graph(n=90, p=4, n_test=17, seed=3)


@pytest.fixture(scope="module")
def model(big_graph: Graph) -> LoadedModel:
    # training vertices sharing a leaf in every tree tie exactly in <F(x), F(x_i)>; with the
    # paper's leaf order no tie straddles a top-k cut of these queries, where the blocked and
    # the straightforward computations could keep different members of the tie
    est = okcore.OKBoostRegressor(**SMALL, leaf_order="variance")
    X = big_graph.features[big_graph.train]
    est.fit(X, kernel={"type": "diffusion", "beta": 1.0, "edges": big_graph.train_edges().tolist()})
    return LoadedModel(new_id(), est, X, None, {"kernel": {"type": "diffusion"}})


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 3 query rows (N = 73 columns), so every request spans several blocks."""
    monkeypatch.setattr(inference, "BLOCK_VALUES", 3 * 73)


def _straightforward_edges(
    m: LoadedModel, X_new: np.ndarray, threshold: float | None, top_k: int | None, observed: bool
) -> dict[str, Any]:
    """The computation before the cache: whole matrices from okcore, then select_edges."""
    est = m.estimator
    k_new = est.predict_kernel(X_new)
    k_known = est.predict_kernel_train(X_new) if observed else est.predict_kernel(X_new, m.inputs)
    return {
        "new_new": select_edges(k_new, threshold=threshold, top_k=top_k, square=True),
        "new_known": select_edges(k_known, threshold=threshold, top_k=top_k, square=False),
    }


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("observed", [False, True])
@pytest.mark.parametrize(
    ("threshold", "top_k"), [(None, 1), (None, 4), (0.015, None), (0.015, 3), (None, 500)]
)
def test_blocked_edges_match_the_straightforward_computation(
    model: LoadedModel,
    big_graph: Graph,
    threshold: float | None,
    top_k: int | None,
    observed: bool,
) -> None:
    assert inference.block_rows(model.inputs.shape[0]) == 3
    X_new = big_graph.features[big_graph.test]
    req = KernelRequest(
        model_id=model.model_id,
        inputs=X_new,
        threshold=threshold,
        top_k=top_k,
        known_scores="observed" if observed else "predicted",
        return_kernel=False,
    )
    got = inference.kernel(model, req)
    want = _straightforward_edges(model, X_new, threshold, top_k, observed)
    assert got["kernel"] is None and got["shape"] == [len(X_new), len(X_new)]
    for key in ("new_new", "new_known"):
        g, w = np.asarray(got["edges"][key]), np.asarray(want[key])
        assert g.shape == w.shape and len(w) > 0, key
        # both are ranked best first per vertex; the two computations round differently,
        # so near-ties may swap: compare them in (a, b) order
        g, w = (e[np.lexsort((e[:, 1], e[:, 0]))] for e in (g, w))
        np.testing.assert_array_equal(g[:, :2], w[:, :2])
        np.testing.assert_allclose(g[:, 2], w[:, 2], rtol=1e-12, atol=1e-15)


def test_kernel_matrices_unchanged(model: LoadedModel, big_graph: Graph) -> None:
    est, X_new = model.estimator, big_graph.features[big_graph.test]
    out = inference.kernel(model, KernelRequest(model_id=model.model_id, inputs=X_new))
    np.testing.assert_array_equal(out["kernel"], est.predict_kernel(X_new))
    req = KernelRequest(model_id=model.model_id, inputs=X_new, against="training", top_k=2)
    out = inference.kernel(model, req)
    assert out["shape"] == [len(X_new), model.inputs.shape[0]]
    np.testing.assert_array_equal(out["kernel"], est.predict_kernel_train(X_new))


@pytest.mark.usefixtures("small_blocks")
def test_blocked_sparse_weights_match_the_dense_ones(model: LoadedModel, big_graph: Graph) -> None:
    X_new = big_graph.features[big_graph.test]
    req = PredictRequest(model_id=model.model_id, inputs=X_new, weights="sparse", weights_top_k=5)
    got = np.asarray(inference.predict(model, req)["weights_sparse"])
    want = np.asarray(inference.sparse_top_k(model.estimator.predict_weights(X_new), 5))
    np.testing.assert_array_equal(got[:, :2], want[:, :2])
    np.testing.assert_allclose(got[:, 2], want[:, 2], rtol=1e-12, atol=1e-15)


def test_dense_answers_over_the_bound_are_refused(model: LoadedModel, big_graph: Graph) -> None:
    X_new = big_graph.features[big_graph.test]  # Q = 17, N = 73: 1241 values
    req = PredictRequest(model_id=model.model_id, inputs=X_new, weights="dense")
    with pytest.raises(InvalidRequest, match="weights = 'sparse'.*weights_top_k") as exc:
        inference.predict(model, req, max_dense=1000)
    assert "17 x 73" in exc.value.message and "OKBOOST_MAX_DENSE_VALUES" in exc.value.message
    assert inference.predict(model, req, max_dense=1241)["weights"] is not None
    sparse = req.model_copy(update={"weights": "sparse", "weights_top_k": 10**9})
    with pytest.raises(InvalidRequest, match="smaller weights_top_k"):  # 17 x min(10^9, 73)
        inference.predict(model, sparse, max_dense=1000)
    req_k = KernelRequest(model_id=model.model_id, inputs=X_new, against="training")
    with pytest.raises(InvalidRequest, match="return_kernel false"):
        inference.kernel(model, req_k, max_dense=1000)
    req_t = KernelRequest(model_id=model.model_id, inputs=X_new, threshold=-1e9)
    with pytest.raises(InvalidRequest, match="raise the threshold or ask for top_k"):
        inference.kernel(model, req_t.model_copy(update={"return_kernel": False}), max_dense=1000)


def test_training_features_are_computed_once_and_dropped_with_the_model(
    tmp_path: Any, big_graph: Graph, model: LoadedModel
) -> None:
    calls = []

    class Counting:
        """The estimator, counting predict_features calls on the training inputs."""

        def __init__(self, est: Any) -> None:
            self.est = est

        def __getattr__(self, name: str) -> Any:
            return getattr(self.est, name)

        def predict_features(self, X: Any) -> np.ndarray:
            if X is model.inputs:
                calls.append(1)
            return np.asarray(self.est.predict_features(X))

    m = LoadedModel(model.model_id, Counting(model.estimator), model.inputs, None, model.record)
    X_new = big_graph.features[big_graph.test][:1]
    req = KernelRequest(model_id=m.model_id, inputs=X_new, top_k=3, return_kernel=False)
    results: list[Any] = []
    threads = [
        threading.Thread(target=lambda: results.append(inference.kernel(m, req))) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(results) == 8
    assert all(r["edges"] == results[0]["edges"] for r in results)
    assert not m.train_features().flags.writeable

    # the cache lives on the LoadedModel: evicted from the store's LRU, it is gone
    store = ModelStore(tmp_path, cache_size=1)
    ids = []
    for _ in range(2):
        mid = new_id()
        record = model_record(mid, kernel={})
        store.create_record(record)
        store.save_model(mid, model.estimator, model.inputs, None, {**record, "status": "ready"})
        ids.append(mid)
    first = store.load(ids[0])
    first.train_features()
    ref = weakref.ref(first._derived["train_features"])
    del first
    store.load(ids[1])
    gc.collect()
    assert store.cached_ids() == [ids[1]] and ref() is None
