"""Happy paths of every endpoint, answers checked against okcore called directly."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, Graph, TestClient, diffusion_request, make_settings, vector_data

import okcore
from service.app import create_app
from service.schemas.api import JobInfo, KernelResponse, ModelInfo, PredictResponse, TrainAccepted


def _direct(g: Graph) -> Any:
    est = okcore.OKBoostRegressor(**SMALL)
    est.fit(
        g.features[g.train],
        kernel={"type": "diffusion", "beta": 1.0, "edges": g.train_edges().tolist()},
    )
    return est


def test_train_wait_returns_201_and_a_ready_model(
    client: TestClient, trained: dict[str, Any], graph: Graph
) -> None:
    TrainAccepted.model_validate(trained)
    info = ModelInfo.model_validate(trained["model"])
    assert info.status == "ready" and trained["state"] == "done"
    assert info.n_train == len(graph.train) and info.n_features == graph.features.shape[1]
    assert info.kernel == {"type": "diffusion", "beta": 1.0, "n_edges": len(graph.train_edges())}
    # curves (M values) and importances (p values) only when asked for; the last loss always
    assert info.train_loss is None and info.feature_importances is None
    full = ModelInfo.model_validate(
        client.get(f"/models/{info.model_id}?curves=true&importances=true").json()
    )
    assert full.train_loss is not None and len(full.train_loss) == SMALL["n_estimators"]
    assert info.last_train_loss == full.train_loss[-1]
    assert full.feature_importances is not None
    assert abs(sum(full.feature_importances) - 1) < 1e-9


def test_train_async_then_poll_job(client: TestClient, graph: Graph) -> None:
    r = client.post("/train", json=diffusion_request(graph, wait=False))
    assert r.status_code == 202, r.text
    job_id = r.json()["job_id"]
    for _ in range(200):
        job = client.get(f"/jobs/{job_id}").json()
        if job["state"] not in ("queued", "running"):
            break
        time.sleep(0.05)
    assert "train_loss" not in job  # the curve only on request
    info = JobInfo.model_validate(client.get(f"/jobs/{job_id}?curves=true").json())
    assert info.state == "done" and info.error is None
    assert info.progress.done == info.progress.total == SMALL["n_estimators"]
    assert info.train_loss is not None and info.curve_step == 1
    assert len(info.train_loss) == SMALL["n_estimators"] and info.eta == 0.0
    assert info.last_train_loss == info.train_loss[-1] == job["last_train_loss"]
    assert all(
        b <= a + 1e-12 for a, b in zip(info.train_loss[:-1], info.train_loss[1:], strict=True)
    )
    assert any(j["job_id"] == job_id for j in client.get("/jobs").json()["jobs"])


def test_predict_matches_okcore(client: TestClient, trained: dict[str, Any], graph: Graph) -> None:
    X_new = graph.features[graph.test]
    r = client.post(
        "/predict",
        json={
            "model_id": trained["model_id"],
            "inputs": X_new.tolist(),
            "top_k": 3,
            "weights": "dense",
        },
    )
    assert r.status_code == 200, r.text
    out = PredictResponse.model_validate(r.json())
    est = _direct(graph)
    idx, scores = est.predict_index(X_new, top_k=3)
    assert out.index_space == "training"
    np.testing.assert_array_equal(out.indices, idx)
    np.testing.assert_allclose(out.scores, scores, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(out.weights, est.predict_weights(X_new), rtol=1e-9, atol=1e-12)


def test_predict_sparse_weights_are_the_largest(
    client: TestClient, trained: dict[str, Any], graph: Graph
) -> None:
    X_new = graph.features[graph.test]
    body = {"model_id": trained["model_id"], "inputs": X_new.tolist()}
    dense = np.asarray(client.post("/predict", json={**body, "weights": "dense"}).json()["weights"])
    sparse = client.post("/predict", json={**body, "weights": "sparse", "weights_top_k": 4}).json()
    triples = np.asarray(sparse["weights_sparse"])
    assert triples.shape == (4 * len(X_new), 3)
    for row in range(len(X_new)):
        mine = triples[triples[:, 0] == row]
        np.testing.assert_allclose(mine[:, 2], np.sort(dense[row])[::-1][:4])
        np.testing.assert_allclose(dense[row, mine[:, 1].astype(int)], mine[:, 2])


def test_kernel_predicted_training_and_edges(
    client: TestClient, trained: dict[str, Any], graph: Graph
) -> None:
    X_new = graph.features[graph.test]
    X_train = graph.features[graph.train]
    est = _direct(graph)
    mid = trained["model_id"]
    r = client.post("/kernel", json={"model_id": mid, "inputs": X_new.tolist()})
    out = KernelResponse.model_validate(r.json())
    assert out.shape == [len(X_new), len(X_new)] and out.edges is None
    np.testing.assert_allclose(out.kernel, est.predict_kernel(X_new), rtol=1e-9, atol=1e-12)

    r = client.post(
        "/kernel", json={"model_id": mid, "inputs": X_new[:2].tolist(), "inputs2": X_new.tolist()}
    )
    np.testing.assert_allclose(
        r.json()["kernel"], est.predict_kernel(X_new[:2], X_new), rtol=1e-9, atol=1e-12
    )

    r = client.post(
        "/kernel", json={"model_id": mid, "inputs": X_new.tolist(), "against": "training"}
    )
    assert r.json()["shape"] == [len(X_new), len(graph.train)]
    np.testing.assert_allclose(
        r.json()["kernel"], est.predict_kernel_train(X_new), rtol=1e-9, atol=1e-12
    )

    k_nn = est.predict_kernel(X_new)
    k_nk = est.predict_kernel(X_new, X_train)
    thr = float(np.median(k_nk))
    r = client.post(
        "/kernel",
        json={"model_id": mid, "inputs": X_new.tolist(), "threshold": thr, "return_kernel": False},
    )
    edges = r.json()["edges"]
    assert r.json()["kernel"] is None
    want_nn = {
        (a, b) for a in range(len(X_new)) for b in range(a + 1, len(X_new)) if k_nn[a, b] >= thr
    }
    want_nk = {(a, i) for a in range(len(X_new)) for i in range(len(X_train)) if k_nk[a, i] >= thr}
    assert {(int(a), int(b)) for a, b, _ in edges["new_new"]} == want_nn
    assert {(int(a), int(i)) for a, i, _ in edges["new_known"]} == want_nk
    for a, i, s in edges["new_known"]:
        assert s == pytest.approx(k_nk[int(a), int(i)])


def test_kernel_top_k_edges(client: TestClient, trained: dict[str, Any], graph: Graph) -> None:
    X_new = graph.features[graph.test]
    est = _direct(graph)
    r = client.post(
        "/kernel",
        json={
            "model_id": trained["model_id"],
            "inputs": X_new.tolist(),
            "top_k": 2,
            "known_scores": "observed",
        },
    )
    edges = r.json()["edges"]
    k_obs = est.predict_kernel_train(X_new)
    nk = np.asarray(edges["new_known"])
    assert nk.shape == (2 * len(X_new), 3)
    for a in range(len(X_new)):
        chosen = sorted(nk[nk[:, 0] == a][:, 1].astype(int))
        assert chosen == sorted(np.argsort(-k_obs[a])[:2].tolist())
    nn = np.asarray(edges["new_new"])
    assert (nn[:, 0] < nn[:, 1]).all()
    assert len(nn) >= len(X_new)  # every new vertex picks 2 partners; pairs can coincide


@pytest.mark.parametrize(
    "kernel",
    [
        {"type": "linear"},
        {"type": "rbf", "sigma": 1.5},
        {"type": "rbf", "gamma": 0.5},
        {"type": "polynomial", "degree": 2, "gamma": 0.5, "coef0": 1.0},
    ],
)
def test_vector_kernels_return_outputs(client: TestClient, kernel: dict[str, Any]) -> None:
    X, Y = vector_data()
    spec = {**kernel, "outputs": Y.tolist()}
    r = client.post(
        "/train", json={"inputs": X.tolist(), "output_kernel": spec, "params": SMALL, "wait": True}
    )
    assert r.status_code == 201, r.text
    assert r.json()["model"]["output_dim"] == 2
    mid = r.json()["model_id"]
    r = client.post(
        "/predict",
        json={"model_id": mid, "inputs": X[:3].tolist(), "top_k": 2, "return_outputs": True},
    )
    out = r.json()
    np.testing.assert_allclose(out["outputs"], Y[np.asarray(out["indices"])])
    cands = Y[:5] + 0.01
    r = client.post(
        "/predict",
        json={
            "model_id": mid,
            "inputs": X[:3].tolist(),
            "candidates": cands.tolist(),
            "return_outputs": True,
        },
    )
    out = r.json()
    assert out["index_space"] == "candidates"
    np.testing.assert_allclose(out["outputs"], cands[np.asarray(out["indices"])])


def test_precomputed_gram_and_candidate_gram(client: TestClient) -> None:
    X, Y = vector_data()
    K = Y @ Y.T + 1.0
    r = client.post(
        "/train",
        json={
            "inputs": X.tolist(),
            "wait": True,
            "params": SMALL,
            "output_kernel": {"type": "precomputed", "gram": K.tolist()},
        },
    )
    assert r.status_code == 201, r.text
    mid = r.json()["model_id"]
    r = client.post(
        "/predict",
        json={
            "model_id": mid,
            "inputs": X[:2].tolist(),
            "candidate_gram": K[:4].tolist(),
            "candidate_diag": np.diag(K)[:4].tolist(),
        },
    )
    assert r.status_code == 200, r.text
    assert r.json()["index_space"] == "candidates"
    assert all(0 <= i < 4 for row in r.json()["indices"] for i in row)


@pytest.mark.parametrize("model", ["ok3", "ok3-forest"])
def test_other_models(client: TestClient, graph: Graph, model: str) -> None:
    params = {"random_state": 0, "max_splits": 4}
    if model == "ok3-forest":
        params["n_estimators"] = 5
    r = client.post("/train", json=diffusion_request(graph, model=model, params=params))
    assert r.status_code == 201, r.text
    assert r.json()["model"]["model"] == model
    r = client.post(
        "/kernel",
        json={"model_id": r.json()["model_id"], "inputs": graph.features[graph.test].tolist()},
    )
    assert r.status_code == 200


def test_eval_set_gives_validation_curve(client: TestClient) -> None:
    X, Y = vector_data(n=40)
    r = client.post(
        "/train",
        json={
            "inputs": X[:30].tolist(),
            "output_kernel": {"type": "linear", "outputs": Y[:30].tolist()},
            "params": SMALL,
            "wait": True,
            "eval_set": {"inputs": X[30:].tolist(), "outputs": Y[30:].tolist()},
        },
    )
    assert r.status_code == 201, r.text
    assert r.json()["model"]["last_validation_loss"] is not None
    model = client.get(f"/models/{r.json()['model_id']}?curves=true").json()
    assert len(model["validation_loss"]) == SMALL["n_estimators"]
    assert model["validation_loss"][-1] == r.json()["model"]["last_validation_loss"]


def test_models_list_get_delete(client: TestClient, trained: dict[str, Any]) -> None:
    mid = trained["model_id"]
    listed = client.get("/models").json()["models"]
    assert [m["model_id"] for m in listed] == [mid]
    assert client.get(f"/models/{mid}").json()["name"] == "toy"
    r = client.delete(f"/models/{mid}")
    assert r.status_code == 200 and r.json() == {"model_id": mid, "deleted": True}
    assert client.get(f"/models/{mid}").status_code == 404
    assert (
        client.post("/predict", json={"model_id": mid, "inputs": [[0, 0, 0, 0]]}).status_code == 404
    )


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def test_multipart_npy_and_raw_float64(client: TestClient, graph: Graph) -> None:
    X = graph.features[graph.train]
    edges = graph.train_edges()
    json_part = json.dumps(
        {"output_kernel": {"type": "diffusion", "beta": 1.0}, "params": SMALL, "wait": True}
    )
    r = client.post(
        "/train",
        data={"json": json_part, "inputs.shape": f"{X.shape[0]},{X.shape[1]}"},
        files={
            "inputs": ("X.f64", X.astype("<f8").tobytes(), "application/octet-stream"),
            "output_kernel.edges": ("E.npy", _npy(edges), "application/octet-stream"),
        },
    )
    assert r.status_code == 201, r.text
    mid = r.json()["model_id"]
    X_new = graph.features[graph.test]
    r = client.post(
        "/kernel",
        data={"json": json.dumps({"model_id": mid})},
        files={"inputs": ("Xn.npy", _npy(X_new), "application/octet-stream")},
    )
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(
        r.json()["kernel"], _direct(graph).predict_kernel(X_new), rtol=1e-9, atol=1e-12
    )


def test_health_and_version(client: TestClient) -> None:
    assert client.get("/health/live").json() == {"status": "live"}
    assert client.get("/health/ready").json() == {"status": "ready"}
    v = client.get("/version").json()
    assert v["okcore"] == okcore.__version__ and v["api"] == "1"


def test_wait_gives_up_after_the_timeout_with_202(tmp_path: Path, graph: Graph) -> None:
    with TestClient(create_app(make_settings(tmp_path, wait_timeout=0.2))) as c:
        body = diffusion_request(graph, params={**SMALL, "n_estimators": 20_000})
        r = c.post("/train", json=body)
        answer = r.json()
        assert r.status_code == 202 and answer["state"] in ("queued", "running")
        # it says it gave up, after how long, and which job to follow
        assert answer["timed_out"] is True and answer["wait_timeout"] == 0.2
        assert answer["model"] is None
        assert answer["job_url"] == f"/jobs/{answer['job_id']}"
        assert c.get(answer["job_url"]).json()["state"] in ("queued", "running")
        assert c.delete(answer["job_url"]).status_code == 200
        # without "wait" nothing timed out
        body.pop("wait", None)
        r = c.post("/train", json=body)
        assert r.json()["timed_out"] is False and r.json()["wait_timeout"] is None
        assert c.delete(r.json()["job_url"]).status_code == 200


def test_large_json_body_is_decoded_off_the_event_loop(
    client: TestClient, trained: dict[str, Any], graph: Graph
) -> None:
    from service.http.bodies import INLINE_BYTES

    X_new = np.repeat(graph.features[graph.test], 400, axis=0)  # 2400 rows, > INLINE_BYTES
    body = json.dumps(
        {
            "model_id": trained["model_id"],
            "inputs": X_new.tolist(),
            "against": "training",
            "return_kernel": False,
            "top_k": 1,
        }
    )
    assert len(body) > INLINE_BYTES
    r = client.post("/kernel", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    assert r.json()["shape"] == [len(X_new), len(graph.train)]
    assert len(r.json()["edges"]["new_known"]) == len(X_new)


def test_delete_a_model_while_it_trains(client: TestClient, graph: Graph, settings: Any) -> None:
    body = diffusion_request(graph, wait=False, params={**SMALL, "n_estimators": 20_000})
    started = client.post("/train", json=body).json()
    for _ in range(400):
        if client.get(f"/jobs/{started['job_id']}").json()["progress"]["done"] > 0:
            break
        time.sleep(0.025)
    assert client.delete(f"/models/{started['model_id']}").status_code == 200
    for _ in range(400):
        job = client.get(f"/jobs/{started['job_id']}").json()
        if job["state"] not in ("queued", "running"):
            break
        time.sleep(0.025)
    assert job["state"] == "cancelled"
    assert client.get(f"/models/{started['model_id']}").status_code == 404
    assert not (settings.model_dir / started["model_id"]).exists()


def test_model_record_describes_the_output_space(
    client: TestClient, trained: dict[str, Any], graph: Graph
) -> None:
    info = client.get(f"/models/{trained['model_id']}").json()
    ModelInfo.model_validate(info)
    space = _direct(graph).output_space_
    assert info["output_space"] == {
        "rank": space.rank,
        "trace_fraction": space.trace_fraction,
        "diag_exact": space.diag_exact,
    }
    assert 0.0 < info["output_space"]["trace_fraction"] <= 1.0


def test_model_record_shows_the_values_the_fit_resolved(
    client: TestClient, trained: dict[str, Any], graph: Graph
) -> None:
    """GET /models/{id} shows what "auto" became (tree type, depth, lambda, rounds, search),
    those of the same fit in okcore."""
    info = client.get(f"/models/{trained['model_id']}").json()
    direct = _direct(graph)
    assert info["resolved_params"] == direct.resolved_params_
    assert "auto" not in info["resolved_params"].values()
    assert {"tree_type", "max_depth", "l2_regularization", "n_estimators"} <= set(
        info["resolved_params"]
    )


def test_models_and_jobs_are_listed_a_page_at_a_time(client: TestClient, graph: Graph) -> None:
    body = diffusion_request(graph, params={**SMALL, "n_estimators": 2})
    made = [client.post("/train", json=body).json() for _ in range(5)]
    for path, key, id_key in (("/models", "models", "model_id"), ("/jobs", "jobs", "job_id")):
        seen, cursor, pages = [], None, 0
        while True:
            params: dict[str, Any] = {"limit": 2}
            if cursor is not None:
                params["cursor"] = cursor
            page = client.get(path, params=params).json()
            assert len(page[key]) <= 2
            seen += [item[id_key] for item in page[key]]
            pages += 1
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == [m[id_key] for m in made] and pages == 3  # oldest first, 2 + 2 + 1
        listed = client.get(path).json()[key]  # the default page holds them all
        assert [item[id_key] for item in listed] == seen
        assert all("train_loss" not in item for item in listed)
    assert all(
        len(m["train_loss"]) == 2 and len(m["feature_importances"]) == graph.features.shape[1]
        for m in client.get("/models?curves=true&importances=true").json()["models"]
    )
    r = client.get("/models", params={"cursor": "yesterday"})
    assert r.status_code == 422 and r.json()["error"]["message"].startswith("query.cursor")
    assert client.get("/jobs", params={"limit": 0}).status_code == 422
    assert client.get("/jobs", params={"limit": 1001}).status_code == 422


def test_models_and_jobs_are_listed_by_status_a_page_at_a_time(
    client: TestClient, graph: Graph
) -> None:
    """`?status=ready` was ignored: the whole list came back, as if every model were ready."""
    body = diffusion_request(graph, params={**SMALL, "n_estimators": 2})
    made = [client.post("/train", json=body).json() for _ in range(5)]
    kept = [made[0], made[2], made[4]]
    for gone in (made[1], made[3]):
        client.delete(f"/models/{gone['model_id']}")
    for path, key, id_key, field, value, expected in (
        ("/models", "models", "model_id", "status", "ready", kept),
        ("/jobs", "jobs", "job_id", "state", "done", made),  # a deleted model's job stays
    ):
        seen, cursor = [], None
        while True:
            params: dict[str, Any] = {"limit": 2, field: value}
            if cursor is not None:
                params["cursor"] = cursor
            page = client.get(path, params=params).json()
            assert page[key] and all(item[field] == value for item in page[key])
            seen += [item[id_key] for item in page[key]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == [m[id_key] for m in expected]
    assert client.get("/jobs", params={"state": "cancelled"}).json()["jobs"] == []
    r = client.get("/models", params={"status": "done"})
    assert r.status_code == 422 and r.json()["error"]["message"].startswith("query.status")
    assert client.get("/jobs", params={"state": "ready"}).status_code == 422
