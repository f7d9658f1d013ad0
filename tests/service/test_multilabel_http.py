"""Multi-label outputs over HTTP: /train with task multilabel (thresholds by inner CV or
fixed, per label, a chosen metric), /predict answering scores in [0, 1], 0/1 label rows and
label sets by name, /evaluate the field's measures, each equal to okcore's on the same model;
a clear 422 for every mismatch."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from svc_data import SMALL, TestClient, label_data, post_json

import okcore
from okcore import metrics

X, LABELS = label_data()
TRAIN, TEST = slice(0, 45), slice(45, 60)
NAMES = ["alpha", "beta", "gamma", "delta"]


def _body(**extra: Any) -> dict[str, Any]:
    body = {"task": "multilabel", "inputs": X[TRAIN].tolist(), "labels": LABELS[TRAIN].tolist(),
            "label_names": NAMES, "model": "okboost", "params": dict(SMALL),
            "wait": True}  # fmt: skip
    body.update(extra)
    return body


def _reference(**options: Any) -> okcore.MultiLabelClassifier:
    """okcore's classifier around the named model, with okcore's defaults (the service's)."""
    est = okcore.make_estimator("okboost", SMALL)
    return okcore.MultiLabelClassifier(est, **options).fit(X[TRAIN], LABELS[TRAIN])


@pytest.fixture
def labels_model(client: TestClient) -> dict[str, Any]:
    r = client.post("/train", json=_body())
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()["model"]
    return out


def test_record_keeps_thresholds(labels_model: dict[str, Any]) -> None:
    assert labels_model["task"] == "multilabel"
    info = labels_model["multilabel"]
    ref = _reference()
    assert info["thresholds"] == pytest.approx(ref.thresholds_.tolist())
    assert info["label_names"] == NAMES and info["n_labels"] == 4
    assert info["threshold"] == "cv" and info["metric"] == "micro_f1"


def test_predict_equals_okcore(client: TestClient, labels_model: dict[str, Any]) -> None:
    ref = _reference()
    r = client.post("/predict", json={"model_id": labels_model["model_id"],
                                      "inputs": X[TEST].tolist(),
                                      "ids": [f"s{i}" for i in range(15)]})  # fmt: skip
    assert r.status_code == 200, r.text
    out = r.json()
    P = np.array(out["probabilities"])
    np.testing.assert_allclose(P, ref.predict_proba(X[TEST]), atol=1e-10)
    assert P.min() >= 0.0 and P.max() <= 1.0
    assert out["labels"] == ref.predict(X[TEST]).tolist()
    assert out["label_sets"] == [[NAMES[j] for j in np.flatnonzero(row)] for row in out["labels"]]
    assert out["ids"][0] == "s0" and out["label_names"] == NAMES


def test_predict_npz(client: TestClient, labels_model: dict[str, Any]) -> None:
    import io

    r = client.post("/predict", json={"model_id": labels_model["model_id"],
                                      "inputs": X[TEST].tolist()},
                    headers={"Accept": "application/x-npz"})  # fmt: skip
    assert r.status_code == 200, r.text
    with np.load(io.BytesIO(r.content), allow_pickle=False) as npz:
        assert npz["labels"].shape == (15, 4) and "label_sets" not in npz.files


def test_evaluate_equals_okcore_metrics(client: TestClient, labels_model: dict[str, Any]) -> None:
    ref = _reference()
    r = client.post("/evaluate", json={"model_id": labels_model["model_id"],
                                       "inputs": X[TEST].tolist(),
                                       "outputs": LABELS[TEST].tolist()})  # fmt: skip
    assert r.status_code == 200, r.text
    out = r.json()
    P, D = ref.predict_proba(X[TEST]), ref.predict(X[TEST])
    for name, (function, ranked, _) in metrics.MULTILABEL_METRICS.items():
        want = function(LABELS[TEST], P if ranked else D)
        assert out[name] == pytest.approx(want), name
    assert out["n_test"] == 15


def test_fixed_per_label_sigmoid_options(client: TestClient) -> None:
    body = _body(threshold=0.4, scores="sigmoid", per_label=True, metric="macro_f1", n_splits=4)
    r = client.post("/train", json=body)
    assert r.status_code == 201, r.text
    info = r.json()["model"]["multilabel"]
    ref = _reference(threshold=0.4, scores="sigmoid", per_label=True, metric="macro_f1",
                     n_splits=4)  # fmt: skip
    assert info["thresholds"] == [0.4] * 4
    assert info["sigmoid"] == pytest.approx(list(ref.sigmoid_))
    r = client.post("/predict", json={"model_id": r.json()["model_id"], "inputs": X[TEST].tolist()})
    np.testing.assert_allclose(r.json()["probabilities"], ref.predict_proba(X[TEST]), atol=1e-10)


def test_labels_table_header_names_the_labels(client: TestClient) -> None:
    table = ",".join(NAMES) + "\n" + "".join(",".join(str(int(v)) for v in row) + "\n"
                                            for row in LABELS[TRAIN])  # fmt: skip
    r = client.post(
        "/train",
        data={
            "json": '{"task": "multilabel", "model": "okboost", "params": {"n_estimators": 5}, '
            '"wait": true}'
        },
        files={"inputs": ("x.npy", _npy(X[TRAIN])), "labels": ("labels.csv", table.encode())},
    )
    assert r.status_code == 201, r.text
    assert r.json()["model"]["multilabel"]["label_names"] == NAMES


def _npy(arr: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b["labels"][0].__setitem__(0, 2), "labels must be 0/1: row 0"),
        (lambda b: b.update(label_names=["a", "b"]), "label_names has 2 names"),
        (lambda b: b.update(label_names=["a", "a", "b", "c"]), "unique"),
        (lambda b: b.update(labels=b["labels"][:-1]), "labels has 44 rows but inputs has 45"),
        (lambda b: b.update(threshold=1.5), 'threshold must be "cv" or a number in (0, 1)'),
        (lambda b: b.update(threshold=True), 'threshold must be "cv" or a number in (0, 1)'),
        (lambda b: b.update(threshold="0.5"), 'threshold must be "cv" or a number in (0, 1)'),
        (lambda b: b.update(threshold=None), 'threshold must be "cv" or a number in (0, 1)'),
        (lambda b: b.update(metric="auc"), "metric"),
        (lambda b: b.update(n_splits=1), "n_splits"),
        (
            lambda b: b.update(inputs=b["inputs"][:1], labels=b["labels"][:1]),
            "n_splits = 3 inner folds need at least 3 training rows, and inputs has 1: send "
            "at least 3 rows",
        ),
        (
            lambda b: b.update(inputs=b["inputs"][:2], labels=b["labels"][:2]),
            "or set n_splits to 2",
        ),
    ],
)
def test_bad_train_requests_are_422(client: TestClient, change: Any, message: str) -> None:
    body = _body(wait=False)
    change(body)
    r = client.post("/train", json=body)
    assert r.status_code == 422, r.text
    assert message in r.json()["error"]["message"]


def test_wrong_requests_to_a_multilabel_model(
    client: TestClient, labels_model: dict[str, Any]
) -> None:
    model_id = labels_model["model_id"]
    r = client.post("/predict", json={"model_id": model_id, "inputs": X[TEST].tolist(), "top_k": 3})
    assert r.status_code == 422 and "do not apply to a multi-label model" in r.text
    r = client.post("/evaluate", json={"model_id": model_id, "inputs": X[TEST].tolist(),
                                       "outputs": LABELS[TEST, :3].tolist()})  # fmt: skip
    assert r.status_code == 422 and "4 labels" in r.json()["error"]["message"]
    r = client.post("/evaluate", json={"model_id": model_id, "inputs": X[TEST].tolist(),
                                       "outputs": (LABELS[TEST] * 0.5).tolist()})  # fmt: skip
    assert r.status_code == 422 and "0/1" in r.json()["error"]["message"]
    r = client.post("/predict", json={"model_id": model_id, "inputs": [[0.0, 1.0]]})
    assert r.status_code == 422 and "4 features" in r.json()["error"]["message"]


def test_a_missing_label_says_a_label_is_0_or_1(client: TestClient) -> None:
    """A missing cell of `labels` was told to be imputed 'with its column's mean'."""
    body = _body(wait=False)
    body["labels"][3][1] = None
    r = post_json(client, "/train", body)
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "labels has missing values (NaN) in rows 3" in message
    assert "a label is 0 or 1" in message and "mean" not in message
    table = "\n".join(",".join("" if (i, j) == (3, 1) else str(int(v)) for j, v in enumerate(row))
                      for i, row in enumerate(LABELS[TRAIN])).encode()  # fmt: skip
    spec = json.dumps({k: v for k, v in body.items() if k != "labels"})
    r = client.post("/train", data={"json": spec}, files={"labels": ("y.csv", table, "text/csv")})
    assert r.status_code == 422, r.text
    assert "a label is 0 or 1" in r.json()["error"]["message"]


def _table(rows: np.ndarray, header: list[str] | None = None) -> bytes:
    lines = [] if header is None else [",".join(header)]
    return ("\n".join(lines + [",".join(str(int(v)) for v in row) for row in rows]) + "\n").encode()


def test_evaluate_matches_a_labelled_truth_table_by_name(
    client: TestClient, labels_model: dict[str, Any]
) -> None:
    """A truth table whose header names the labels in another order was scored column by
    column against the wrong labels (and a header of other names was read as if right): its
    columns are now matched to the model's labels by name; names that are not its labels
    are a 422 naming them and the model's labels."""
    spec = {"data": {"json": json.dumps({"model_id": labels_model["model_id"],
                                         "inputs": X[TEST].tolist()})}}  # fmt: skip

    def evaluate(table: bytes) -> Any:
        return client.post("/evaluate", **spec, files={"outputs": ("truth.csv", table)})

    plain = evaluate(_table(LABELS[TEST]))
    assert plain.status_code == 200, plain.text
    assert evaluate(_table(LABELS[TEST], NAMES)).json() == plain.json()
    assert evaluate(_table(LABELS[TEST][:, ::-1], NAMES[::-1])).json() == plain.json()
    r = client.post("/evaluate", json={"model_id": labels_model["model_id"],
                                       "inputs": X[TEST].tolist(),
                                       "outputs": LABELS[TEST][:, [1, 0, 2, 3]].tolist(),
                                       "output_columns": ["beta", "alpha", "gamma", "delta"]})  # fmt: skip
    assert r.json() == plain.json()
    r = evaluate(_table(LABELS[TEST], ["alpha", "beta", "gamma", "omega"]))
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "output_columns (the header of outputs) has names ['omega']" in message
    assert str(NAMES) in message and "without a header" in message
    r = evaluate(_table(LABELS[TEST], ["alpha", "alpha", "gamma", "delta"]))
    assert r.status_code == 422 and "a label twice" in r.json()["error"]["message"]


def test_label_names_and_a_labels_header_that_disagree_are_422(client: TestClient) -> None:
    """label_names in the json part and a labels table's header naming the columns otherwise:
    the header was ignored without a word; now a 422 says to send one of them."""
    spec = {k: v for k, v in _body(wait=False).items() if k != "labels"}

    def train(names: list[str]) -> Any:
        return client.post("/train", data={"json": json.dumps({**spec, "label_names": names})},
                           files={"labels": ("labels.csv", _table(LABELS[TRAIN], NAMES))})  # fmt: skip

    assert train(NAMES).status_code == 202
    r = train(["a", "b", "c", "d"])
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "label_names ['a', 'b', 'c', 'd'] and the header of part 'labels'" in message
    assert "leave label_names out" in message


def test_a_missing_true_label_at_evaluate_is_not_to_be_imputed(
    client: TestClient, labels_model: dict[str, Any]
) -> None:
    """A missing value in /evaluate's true label rows was told to be imputed 'with its
    column's mean' (a guessed truth, scored as known, and not a label): the 422 now says to
    fill in only known truths, a label being 1 or 0, or to drop the row."""
    truth = LABELS[TEST].tolist()
    truth[2][1] = None
    r = post_json(client, "/evaluate", {"model_id": labels_model["model_id"],
                                        "inputs": X[TEST].tolist(), "outputs": truth})  # fmt: skip
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "outputs has missing values (NaN) in rows 2" in message and "mean" not in message
    assert "1 where the sample has the label, 0 where not" in message
    assert "or drop row 2" in message


def test_labels_tables_of_true_false_are_0_1(
    client: TestClient, labels_model: dict[str, Any]
) -> None:
    """R's write.csv and pandas write logical label columns as TRUE / FALSE (True / False):
    such a table was refused as "line 1 column 1 is 'alpha', not a finite number", its header
    taken for data. They are label rows: the same model and scores as with 0/1."""
    words = np.where(LABELS > 0, "TRUE", "False")

    def table(rows: np.ndarray) -> bytes:
        return (",".join(NAMES) + "\n" + "".join(",".join(r) + "\n" for r in rows)).encode()

    spec = {k: v for k, v in _body().items() if k not in ("labels", "label_names")}
    r = client.post("/train", data={"json": json.dumps(spec)},
                    files={"labels": ("labels.csv", table(words[TRAIN]))})  # fmt: skip
    assert r.status_code == 201, r.text
    info = r.json()["model"]["multilabel"]
    assert (
        info["label_names"] == NAMES
        and info["thresholds"] == labels_model["multilabel"]["thresholds"]
    )
    query = {"model_id": r.json()["model_id"], "inputs": X[TEST].tolist()}
    scores = client.post("/evaluate", data={"json": json.dumps(query)},
                         files={"outputs": ("truth.csv", table(words[TEST]))})  # fmt: skip
    assert scores.status_code == 200, scores.text
    plain = client.post("/evaluate", json={**query, "outputs": LABELS[TEST].tolist()})
    assert scores.json() == plain.json()


def test_label_refusals_say_what_to_send(client: TestClient, labels_model: dict[str, Any]) -> None:
    """'labels must be 0/1: row 1 is [-1.0, ...]' gave no way forward, /evaluate's 'outputs
    must be 0/1 label rows' named no row, and duplicate label_names were not named: each
    422 now names the row or the names and what to send."""
    body = _body(wait=False, labels=(2 * LABELS[TRAIN] - 1).tolist())
    r = client.post("/train", json=body)
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "labels must be 0/1: row 1 is [-1.0" in message
    assert "for -1/1 labels send (labels + 1) / 2" in message
    r = client.post("/train", json=_body(wait=False, label_names=["a", "b", "a", "b"]))
    assert r.status_code == 422
    assert "names ['a', 'b'] more than once: give each label" in r.json()["error"]["message"]
    truth = LABELS[TEST].copy()
    truth[3, 1] = 2
    r = client.post("/evaluate", json={"model_id": labels_model["model_id"],
                                       "inputs": X[TEST].tolist(), "outputs": truth.tolist()})  # fmt: skip
    assert r.status_code == 422
    message = r.json()["error"]["message"]
    assert "outputs must be 0/1: row 3 is" in message and "1 where the sample has it" in message


def test_a_measure_a_clipped_fixed_threshold_model_lacks_says_how_to_train(
    client: TestClient,
) -> None:
    """/predict with metric on a model of a fixed threshold and clipped scores (no
    out-of-fold scores) said 'or train with metric ...', which alone changes nothing for a
    fixed threshold: the 422 now says to train with threshold "cv" (or a sigmoid map)."""
    r = client.post("/train", json=_body(threshold=0.3, scores="clip"))
    assert r.status_code == 201, r.text
    r = client.post("/predict", json={"model_id": r.json()["model_id"],
                                      "inputs": X[TEST].tolist(), "metric": "macro_f1"})  # fmt: skip
    assert r.status_code == 422
    message = r.json()["error"]["message"]
    assert "(its fixed threshold 0.3)" in message
    assert (
        'train with threshold "cv" and metric \'macro_f1\' (or scores "label_sigmoid")' in message
    )


def test_a_stored_classifier_keeps_its_label_names(
    client: TestClient, labels_model: dict[str, Any]
) -> None:
    """The classifier rebuilt from the model store names its labels as okcore's fitted one."""
    store = client.app.state.services.store  # type: ignore[attr-defined]
    loaded = store.load(labels_model["model_id"])
    assert loaded.task_model.label_names_ == NAMES


WEIGHTS = np.random.default_rng(3).integers(0, 4, 45).astype(float) + (np.arange(45) < 3)


def test_weighted_training_is_okcores_weighted_fit(client: TestClient) -> None:
    """`sample_weight` as at the one-graph /train: a JSON list, or a one-column table part,
    reaches MultiLabelClassifier.fit (the same scores as okcore's), the record says so, and
    the model is not the unweighted one."""
    r = client.post("/train", json=_body(sample_weight=WEIGHTS.tolist()))
    assert r.status_code == 201, r.text
    assert r.json()["model"]["sample_weight"] is True
    est = okcore.make_estimator("okboost", SMALL)
    ref = okcore.MultiLabelClassifier(est).fit(X[TRAIN], LABELS[TRAIN], sample_weight=WEIGHTS)
    ask = {"model_id": r.json()["model_id"], "inputs": X[TEST].tolist()}
    got = np.array(client.post("/predict", json=ask).json()["probabilities"])
    np.testing.assert_allclose(got, ref.predict_proba(X[TEST]), atol=1e-10)
    assert r.json()["model"]["multilabel"]["thresholds"] == pytest.approx(ref.thresholds_.tolist())
    assert not np.allclose(got, _reference().predict_proba(X[TEST]), atol=1e-3)

    spec = _body()
    table = ("weight\n" + "\n".join(map(str, WEIGHTS)) + "\n").encode()
    r2 = client.post("/train", data={"json": json.dumps(spec)},
                     files={"sample_weight": ("w.csv", table, "text/csv")})  # fmt: skip
    assert r2.status_code == 201, r2.text
    ask2 = {**ask, "model_id": r2.json()["model_id"]}
    np.testing.assert_allclose(client.post("/predict", json=ask2).json()["probabilities"], got)


def test_unweighted_multilabel_record_says_so(labels_model: dict[str, Any]) -> None:
    assert labels_model["sample_weight"] is False


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ([1.0] * 44, "one weight per training row (45)"),
        ([-1.0] + [1.0] * 44, "sample_weight[0] = -1 is negative"),
        ([0.0] * 45, "sample_weight is all zero"),
        ([0.0] * 44 + [1.0], "inner folds that choose the thresholds: 3-fold CV needs at least 2"),
        (["x"] * 45, "sample_weight"),
        ([[1.0, 2.0]] * 45, "1-D"),
    ],
)
def test_bad_multilabel_weights_are_a_422_on_sample_weight(
    client: TestClient, weights: Any, message: str
) -> None:
    r = client.post("/train", json=_body(sample_weight=weights, wait=False))
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert message in error["message"]
    assert error["details"][0]["loc"] == ["sample_weight"]


def test_few_weighted_rows_are_spread_over_the_inner_folds(client: TestClient) -> None:
    """Three rows of positive weight for three inner folds: each fold fits on some weight.
    The rows are those the unweighted folds put in one test fold, whose fit on the other
    rows (all of weight 0) failed with 'sample_weight is all zero'."""
    one_fold = okcore.model_selection.kfold(45, 3, 0)[0][1][:3]
    w = np.zeros(45)
    w[one_fold] = 1.0
    r = client.post("/train", json=_body(sample_weight=w.tolist()))
    assert r.status_code == 201, r.text
