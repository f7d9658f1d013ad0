"""/train with "model": "krr" (plain kernel ridge), and every model on a precomputed input
similarity (``input_kind: "similarity"``): predictions equal okcore's, the record says how
the similarity was read, CV slices it per fold, and wrong shapes are clear 422s."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel
from svc_data import TestClient, vector_data

import okcore
from okcore.model_selection import cross_validate

KERNEL = {"type": "rbf", "sigma": 1.5}


def similarity(n: int = 40, q: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray, Any]:
    """(training similarity N x N, new items' similarity Q x N, training outputs)."""
    X, Y = vector_data(n=n + q, seed=seed)
    S = rbf_kernel(X, X, gamma=0.5)
    return S[:n, :n], S[n:, :n], Y[:n]


def train(client: TestClient, model: str, inputs: np.ndarray, Y: np.ndarray, **extra: Any) -> Any:
    body = {
        "model": model,
        "inputs": inputs.tolist(),
        "output_kernel": {**KERNEL, "outputs": Y.tolist()},
        "wait": True,
        **extra,
    }
    return client.post("/train", json=body)


def predict(client: TestClient, model_id: str, inputs: np.ndarray) -> Any:
    return client.post(
        "/predict", json={"model_id": model_id, "inputs": inputs.tolist(), "weights": "dense"}
    )


@pytest.mark.parametrize("gamma", [0.5, "cv"])
def test_krr_trains_on_features_with_alpha_by_cv(client: TestClient, gamma: Any) -> None:
    """The penalty, and with gamma "cv" the RBF width, chosen by CV as okcore chooses them."""
    X, Y = vector_data(n=40)
    params = {"alpha": [0.01, 0.1, 1.0], "gamma": gamma, "random_state": 0}
    r = train(client, "krr", X, Y, params=params)
    assert r.status_code == 201, r.text
    record = r.json()["model"]
    assert record["model"] == "krr" and record["input_kind"] == "features"
    est = okcore.KernelRidgeRegressor(**params).fit(X, Y, kernel=KERNEL)
    out = predict(client, r.json()["model_id"], X[:5] + 0.1).json()
    np.testing.assert_allclose(out["weights"], est.predict_weights(X[:5] + 0.1), atol=1e-10)
    np.testing.assert_array_equal(out["indices"], est.predict_index(X[:5] + 0.1)[0])


@pytest.mark.parametrize(
    ("model", "extra", "reference"),
    [
        (
            "ok3",
            {"params": {"max_splits": 5}},
            lambda: okcore.SimilarityInputs(okcore.OK3Regressor(max_splits=5)),
        ),
        (
            "okboost",
            {"params": {"n_estimators": 5, "random_state": 0}, "input_map": "kpca",
             "input_components": 6},
            lambda: okcore.SimilarityInputs(
                okcore.OKBoostRegressor(n_estimators=5, random_state=0), map="kpca",
                n_components=6,
            ),
        ),
        (
            "krr",
            {"params": {"alpha": 0.1}},
            lambda: okcore.KernelRidgeRegressor(alpha=0.1, input_kernel="precomputed"),
        ),
    ],
    ids=["kernel_map", "kpca", "krr"],
)  # fmt: skip
def test_a_similarity_trains_and_predicts_as_okcore(
    client: TestClient, model: str, extra: dict, reference: Any
) -> None:
    S, S_new, Y = similarity()
    r = train(client, model, S, Y, input_kind="similarity", **extra)
    assert r.status_code == 201, r.text
    record = r.json()["model"]
    expected_map = {"ok3": "kernel_map", "okboost": "kpca", "krr": "input_kernel"}[model]
    assert record["input_kind"] == "similarity" and record["input_map"] == expected_map
    est = reference().fit(S, Y, kernel=KERNEL)
    out = predict(client, r.json()["model_id"], S_new)
    assert out.status_code == 200, out.text
    np.testing.assert_allclose(out.json()["weights"], est.predict_weights(S_new), atol=1e-10)
    kernel = client.post(
        "/kernel", json={"model_id": r.json()["model_id"], "inputs": S_new.tolist()}
    )
    assert kernel.status_code == 200, kernel.text
    np.testing.assert_allclose(kernel.json()["kernel"], est.predict_kernel(S_new), atol=1e-10)


def test_cv_on_a_similarity_slices_it_per_fold(client: TestClient) -> None:
    """The job's CV table equals okcore's cross_validate of SimilarityInputs (which gives each
    fold S[train, train]); the grid's names stay the model's own."""
    S, _, Y = similarity()
    cv = {"folds": 3, "random_state": 0, "grid": {"max_splits": [2, 6]}}
    r = train(client, "ok3", S, Y, input_kind="similarity", cv=cv)
    assert r.status_code == 201, r.text
    table = r.json()["model"]["cv"]["table"]
    assert [row["params"] for row in table] == [{"max_splits": 2}, {"max_splits": 6}]
    for row, splits in zip(table, (2, 6), strict=True):
        model = okcore.SimilarityInputs(okcore.OK3Regressor(max_splits=splits))
        scores = cross_validate(model, S, Y, kernel=KERNEL, cv=3, random_state=0)
        np.testing.assert_allclose(row["err_phi"]["folds"], scores["err_phi"], rtol=1e-10)
    assert r.json()["model"]["params"]["max_splits"] in (2, 6)


def test_wrong_shapes_are_clear_422s(client: TestClient) -> None:
    S, S_new, Y = similarity()
    r = train(client, "ok3", S[:, :30], Y, input_kind="similarity")
    assert r.status_code == 422
    assert "square N x N similarity among the N training items: got 40 x 30" in r.text
    r = train(client, "ok3", S, Y, input_map="kpca")
    assert r.status_code == 422 and "apply to input_kind 'similarity'" in r.text
    r = train(client, "krr", S, Y, input_kind="similarity", input_map="kpca")
    assert r.status_code == 422 and "leave out input_map" in r.text
    model_id = train(client, "ok3", S, Y, input_kind="similarity").json()["model_id"]
    r = predict(client, model_id, S_new[:, :20])
    assert r.status_code == 422
    assert "the Q x 40 similarity of the new items to the training items" in r.text


def test_the_job_estimate_counts_the_kernel_pca() -> None:
    """A kpca map's N x N eigendecomposition is in the job's estimate (refused by the limits
    before it starts, like any other work); the kernel map costs the estimator on N inputs."""
    from service.training.budget import estimate_job

    params = okcore.estimator_parameters("ok3")
    S = np.zeros((3000, 3000))
    plain = estimate_job("ok3", params, S, {"type": "linear"}, 2, 0, ("kernel_map", None))
    kpca = estimate_job("ok3", params, S, {"type": "linear"}, 2, 0, ("kpca", None))
    assert plain.n_features == 3000
    assert kpca.setup_seconds == pytest.approx(plain.setup_seconds + 4.0 * 3000**3 * 1e-9)
    assert kpca.memory_bytes > plain.memory_bytes


def test_a_kpca_model_exports_and_imports(client: TestClient, tmp_path: Any) -> None:
    """The archive check reads N similarity columns from the model (not the kpca width)."""
    from svc_data import make_settings

    from service.app import create_app

    S, S_new, Y = similarity()
    extra = {"input_map": "kpca", "input_components": 4, "params": {"max_splits": 3}}
    model_id = train(client, "ok3", S, Y, input_kind="similarity", **extra).json()["model_id"]
    archive = client.get(f"/models/{model_id}/export")
    assert archive.status_code == 200, archive.text
    with TestClient(create_app(make_settings(tmp_path / "other"))) as other:
        r = other.post(
            "/models/import", content=archive.content,
            headers={"content-type": "application/gzip"},
        )  # fmt: skip
        assert r.status_code == 201, r.text
        body = {"model_id": model_id, "inputs": S_new.tolist()}
        assert other.post("/predict", json=body).json() == client.post("/predict", json=body).json()


def test_an_asymmetric_similarity_is_symmetrised_with_a_warning(client: TestClient) -> None:
    """SIMCOMP's drug similarity is asymmetric and its protocol uses (S + S^T) / 2: the
    service does the same and says so in the record."""
    S, S_new, Y = similarity()
    asymmetric = S + np.triu(np.full_like(S, 0.3), 1)
    for model in ("krr", "ok3"):
        r = train(client, model, asymmetric, Y, input_kind="similarity")
        assert r.status_code == 201, r.text
        (warning,) = [w for w in r.json()["model"]["warnings"] if "symmetric" in w]
        assert "largest |S - S^T| = 0.3" in warning and "(S + S^T) / 2" in warning
        twin = train(client, model, 0.5 * (asymmetric + asymmetric.T), Y, input_kind="similarity")
        a, b = (predict(client, m.json()["model_id"], S_new).json()["weights"] for m in (r, twin))
        np.testing.assert_allclose(a, b, atol=1e-12)


def _labelled(S: np.ndarray, names: list[str], rows: np.ndarray, cols: np.ndarray) -> bytes:
    """S as a labelled CSV: its rows in the order ``rows``, its columns in ``cols``."""
    lines = ["," + ",".join(names[j] for j in cols)]
    lines += [names[i] + "," + ",".join(repr(float(S[i, j])) for j in cols) for i in rows]
    return ("\n".join(lines) + "\n").encode()


def test_a_labelled_similarity_with_shuffled_ids_gives_the_same_model(
    client: TestClient,
) -> None:
    """Ids in the header and the first column, each in its own order: the columns are
    matched to the rows by id, the rows' ids become the model's ids."""
    import json

    S, S_new, Y = similarity()
    n = S.shape[0]
    names = [f"D{k:05d}" for k in range(n)]
    rng = np.random.default_rng(1)
    rows, cols = rng.permutation(n), rng.permutation(n)
    spec = {"output_kernel": {**KERNEL, "outputs": Y[rows].tolist()},
            "input_kind": "similarity", "model": "ok3", "wait": True}  # fmt: skip
    files = {"inputs": ("simcomp.csv", _labelled(S, names, rows, cols), "text/csv")}
    r = client.post("/train", data={"json": json.dumps(spec)}, files=files)
    assert r.status_code == 201, r.text
    assert r.json()["model"]["has_ids"]
    twin = train(client, "ok3", S[np.ix_(rows, rows)], Y[rows], input_kind="similarity")
    got, want = (
        predict(client, m.json()["model_id"], S_new[:, rows]).json()["weights"] for m in (r, twin)
    )
    np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b",a,b\na,1,0.5\na,0.5,1\n", "names 'a' twice among its rows"),
        (b",a,a\na,1,0.5\nb,0.5,1\n", "names 'a' twice among its columns"),
        (b",a,c\na,1,0.5\nb,0.5,1\n", "1 row ids are not in its header (e.g. 'b')"),
        (b",a,b,c\na,1,0.5,0\nb,0.5,1,0\n", "of 2 rows and 3 columns: it must be square"),
        (b",a,b\na,1,NA\nb,0.5,1\n", "missing values"),
        (b"a,1,0.5\nb,0.5,1\n", "no header row"),
    ],
)
def test_bad_labelled_similarities_are_clear_422s(
    client: TestClient, text: bytes, message: str
) -> None:
    import json

    spec = {"output_kernel": {**KERNEL, "outputs": [[0.0], [1.0]]}, "input_kind": "similarity"}
    files = {"inputs": ("s.csv", text, "text/csv")}
    r = client.post("/train", data={"json": json.dumps(spec)}, files=files)
    assert r.status_code == 422, r.text
    assert message in r.json()["error"]["message"]


def test_a_labelled_similarity_at_prediction_is_matched_by_id(client: TestClient) -> None:
    """A model trained on a similarity with ids: new items' similarity whose header names
    the training items in any order gives the answers of the matrix in the training order,
    at /predict, /kernel and /evaluate; a header of other names keeps the columns as sent;
    a header naming some training items and not others is a 422."""
    import json

    S, S_new, Y = similarity()
    n, q = S.shape[0], S_new.shape[0]
    names = [f"D{k:05d}" for k in range(n)]
    r = train(client, "krr", S, Y, input_kind="similarity", ids=names)
    assert r.status_code == 201, r.text
    model_id = r.json()["model_id"]
    want = predict(client, model_id, S_new).json()["weights"]
    new_names = [f"N{a}" for a in range(q)]
    order = np.random.default_rng(5).permutation(n)

    def table(header: list[str], M: np.ndarray) -> bytes:
        lines = ["," + ",".join(header)]
        lines += [new_names[a] + "," + ",".join(repr(float(v)) for v in M[a]) for a in range(q)]
        return ("\n".join(lines) + "\n").encode()

    def post(route: str, body: dict[str, Any], part: bytes) -> Any:
        files = {"inputs": ("new.csv", part, "text/csv")}
        return client.post(route, data={"json": json.dumps(body)}, files=files)

    shuffled = table([names[j] for j in order], S_new[:, order])
    r = post("/predict", {"model_id": model_id, "weights": "dense"}, shuffled)
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(r.json()["weights"], want, atol=1e-12)
    # the same by JSON
    body = {"model_id": model_id, "inputs": S_new[:, order].tolist(), "weights": "dense",
            "input_columns": [names[j] for j in order]}  # fmt: skip
    np.testing.assert_allclose(client.post("/predict", json=body).json()["weights"], want)
    kernel = client.post("/kernel", json={"model_id": model_id, "inputs": S_new.tolist()}).json()
    r = post("/kernel", {"model_id": model_id}, shuffled)
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(r.json()["kernel"], kernel["kernel"], atol=1e-12)
    Y_new = vector_data(n=n + q, seed=0)[1][n:]
    evaluated = client.post(
        "/evaluate",
        json={"model_id": model_id, "inputs": S_new.tolist(), "outputs": Y_new.tolist()},
    ).json()
    r = post("/evaluate", {"model_id": model_id, "outputs": Y_new.tolist()}, shuffled)
    assert r.status_code == 200, r.text
    assert r.json()["err_phi"] == pytest.approx(evaluated["err_phi"])
    # a header of other names: the columns as sent (the training order)
    r = post("/predict", {"model_id": model_id, "weights": "dense"},
             table([f"s{j}" for j in range(n)], S_new))  # fmt: skip
    np.testing.assert_allclose(r.json()["weights"], want, atol=1e-12)
    # some training ids and other names, or a training item left out: 422
    mixed = [names[j] for j in order]
    mixed[4] = "other"
    r = post("/predict", {"model_id": model_id}, table(mixed, S_new))
    assert r.status_code == 422 and "name 39 training items" in r.json()["error"]["message"]
    body = {"model_id": model_id, "inputs": S_new.tolist(), "input_columns": names[:5]}
    r = client.post("/predict", json=body)
    assert r.status_code == 422 and "one name per column" in r.json()["error"]["message"]
