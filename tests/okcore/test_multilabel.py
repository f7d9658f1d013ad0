"""MultiLabelClassifier: scores in [0, 1], 0/1 predictions, thresholds chosen on the training
rows only (a recording estimator sees every row the inner fits use), scikit-learn clone."""

from __future__ import annotations

import numpy as np
import pytest

from okcore import OK3ForestRegressor, OKBoostRegressor, metrics
from okcore.exceptions import InvalidParameterError
from okcore.meta import clone
from okcore.multilabel import MultiLabelClassifier, choose_thresholds, fit_sigmoid, window_means

SEEN: list[tuple[str, frozenset[int]]] = []


class RecordingBoost(OKBoostRegressor):
    """OKBoost that records the row ids (column 0 of X) of every fit and prediction."""

    def fit(self, X, Y=None, **kwargs):  # type: ignore[override]
        SEEN.append(("fit", frozenset(np.asarray(X)[:, 0].astype(int).tolist())))
        return super().fit(X, Y, **kwargs)

    def predict(self, X):  # type: ignore[override]
        SEEN.append(("predict", frozenset(np.asarray(X)[:, 0].astype(int).tolist())))
        return super().predict(X)


def _data(n: int = 150, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    logits = X @ rng.normal(size=(5, 4)) + rng.normal(scale=0.5, size=(n, 4))
    return X, (logits > 0.3).astype(int)


def test_threshold_is_chosen_on_training_rows_only() -> None:
    X, Y = _data()
    X = np.c_[np.arange(len(X)), X]  # column 0: the row id, seen by the recorder
    train = np.arange(0, 150, 3)
    SEEN.clear()
    model = MultiLabelClassifier(RecordingBoost(n_estimators=5), n_splits=3).fit(X[train], Y[train])
    fits = [rows for kind, rows in SEEN if kind == "fit"]
    assert len(fits) == 4  # 3 inner fits + the final one
    allowed = frozenset(train.tolist())
    assert all(rows <= allowed for _, rows in SEEN)
    for i in range(3):  # each inner fit is scored on the rows it did not see
        kind, scored = SEEN[2 * i + 1]
        assert kind == "predict" and scored.isdisjoint(fits[i]) and scored | fits[i] == allowed
    assert fits[-1] == allowed
    SEEN.clear()
    model.predict(X[1:3])
    assert SEEN == [("predict", frozenset({1, 2}))]


@pytest.mark.parametrize("scores", ["clip", "sigmoid"])
def test_scores_and_label_rows(scores: str) -> None:
    X, Y = _data()
    model = MultiLabelClassifier(OKBoostRegressor(n_estimators=30), scores=scores).fit(X, Y)
    P = model.predict_proba(X)
    assert P.shape == Y.shape and P.min() >= 0 and P.max() <= 1
    pred = model.predict(X)
    assert set(np.unique(pred)) <= {0, 1} and pred.shape == Y.shape
    assert model.thresholds_.shape == (4,)
    np.testing.assert_array_equal(pred, (P >= model.thresholds_).astype(int))
    assert metrics.micro_f1(Y, pred) > 0.7
    if scores == "sigmoid":  # strictly increasing: the raw scores' ranking is kept
        raw = model.decision_function(X)
        assert metrics.ranking_loss(Y, P) == pytest.approx(metrics.ranking_loss(Y, raw))


def test_forest_scores_are_label_frequencies() -> None:
    X, Y = _data()
    model = MultiLabelClassifier(
        OK3ForestRegressor(n_estimators=10, random_state=0), scores="clip", threshold=0.5
    )
    model.fit(X, Y)
    np.testing.assert_allclose(model.predict_proba(X), model.decision_function(X))
    W = model.estimator_.predict_weights(X[:5])
    np.testing.assert_allclose(W @ Y, model.decision_function(X[:5]), atol=1e-12)
    assert model.oof_scores_ is None and np.all(model.thresholds_ == 0.5)


def test_choose_thresholds_global_and_per_label() -> None:
    rng = np.random.default_rng(1)
    Y = rng.random((200, 3)) < 0.3
    # label 0 separates at 0.2, label 1 at 0.7: per-label thresholds find both
    S = np.where(Y, 0.25, 0.15) * np.array([1.0, 0, 0]) + np.where(Y, 0.75, 0.65) * np.array(
        [0, 1.0, 0]
    )
    S[:, 2] = np.where(Y[:, 2], 0.5, 0.4)
    t = choose_thresholds(Y, S, metric="macro_f1", per_label=True)
    assert metrics.macro_f1(Y, S >= t) == 1.0
    assert 0.15 < t[0] <= 0.25 and 0.65 < t[1] <= 0.75
    g = choose_thresholds(Y, S, metric="micro_f1")
    assert np.all(g == g[0])


def test_window_rule_takes_the_centre_of_a_flat_top() -> None:
    grid = np.round(np.linspace(0.01, 0.99, 99), 2)
    values = np.zeros(99)
    values[[29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39]] = 1.0  # flat top on 0.30..0.40
    values[20] = 1.0001  # a lone spike: the plain arg max
    means = window_means(values, grid, 0.05)
    # by hand: at 0.35 all 11 neighbours are on the top; at 0.21 only the spike and 0.25..0.26
    assert means[34] == pytest.approx(1.0)
    assert means[20] == pytest.approx(1.0001 / 11)
    assert grid[int(np.argmax(means))] == 0.35 and grid[int(np.argmax(values))] == 0.21
    np.testing.assert_array_equal(window_means(values, grid, 0.0), values)
    # through choose_thresholds: decisions whose micro-F1 is flat over 0.30..0.40
    rng = np.random.default_rng(3)
    Y = rng.random((400, 2)) < 0.5
    S = np.where(Y, rng.uniform(0.40, 0.9, Y.shape), rng.uniform(0.0, 0.30, Y.shape))
    t = choose_thresholds(Y, S, metric="micro_f1", window=0.05)
    assert np.all(t == 0.35)


def test_default_estimator_is_the_seeded_average() -> None:
    from okcore import AveragedRegressor

    model = MultiLabelClassifier(random_state=4)
    assert model.scores == "sigmoid" and model.threshold_window == 0.05
    fresh = model._fresh_estimator()
    assert isinstance(fresh, AveragedRegressor)
    boost, forest = fresh.estimators
    assert boost.splitter == "random" and boost.n_estimators == 300 and boost.random_state == 4
    assert forest.n_estimators == 300 and forest.random_state == 4 and not forest.bootstrap


def test_threshold_is_deterministic_under_a_seed() -> None:
    X, Y = _data()
    fits = [
        MultiLabelClassifier(OKBoostRegressor(n_estimators=10, random_state=1), random_state=2)
        .fit(X, Y)
        .thresholds_
        for _ in range(2)
    ]
    np.testing.assert_array_equal(fits[0], fits[1])


def test_sigmoid_fit_recovers_a_logistic_map() -> None:
    rng = np.random.default_rng(2)
    s = rng.normal(size=20000)
    t = rng.random(20000) < 1 / (1 + np.exp(-(3 * s - 1)))
    a, b = fit_sigmoid(s, t)
    assert a == pytest.approx(3, rel=0.1) and b == pytest.approx(-1, abs=0.1)


def test_params_and_clone() -> None:
    model = MultiLabelClassifier(OKBoostRegressor(n_estimators=7), metric="macro_f1")
    params = model.get_params()
    assert params["estimator__n_estimators"] == 7 and params["metric"] == "macro_f1"
    model.set_params(estimator__n_estimators=9, per_label=True)
    copy = clone(model)
    assert copy.estimator is not model.estimator and copy.estimator.n_estimators == 9
    assert copy.per_label is True
    sk_base = pytest.importorskip("sklearn.base")
    assert sk_base.clone(model).get_params()["estimator__n_estimators"] == 9
    with pytest.raises(InvalidParameterError, match="'metric' parameter"):
        MultiLabelClassifier(metric="auc").fit(*_data())


def test_wraps_a_scikit_learn_regressor() -> None:
    """Any regressor with fit / predict and get_params works (the benchmarks' peers)."""
    ensemble = pytest.importorskip("sklearn.ensemble")
    X, Y = _data()
    forest = ensemble.ExtraTreesRegressor(n_estimators=10, random_state=0)
    model = MultiLabelClassifier(forest).fit(X, Y)
    assert model.estimator_ is not forest and model.predict(X).shape == Y.shape
    assert 0 <= model.predict_proba(X).min() and model.predict_proba(X).max() <= 1


def test_label_rows_must_be_binary() -> None:
    from okcore.exceptions import DataError

    X, Y = _data()
    with pytest.raises(DataError, match="0/1 label rows"):
        MultiLabelClassifier(threshold=0.5).fit(X, Y * 2)
    with pytest.raises(DataError, match="rows but Y has"):
        MultiLabelClassifier(threshold=0.5).fit(X[:-1], Y)


def test_averaged_regressor_is_the_weighted_mean_of_its_members() -> None:
    from okcore import AveragedRegressor
    from okcore.exceptions import DataError

    X, Y = _data()
    boost = OKBoostRegressor(n_estimators=10, random_state=0)
    forest = OK3ForestRegressor(n_estimators=5, random_state=0)
    mean = AveragedRegressor([boost, forest], weights=[1, 3]).fit(X, Y)
    alone = [clone(boost).fit(X, Y), clone(forest).fit(X, Y)]
    expected = 0.25 * alone[0].predict(X[:7]) + 0.75 * alone[1].predict(X[:7])
    np.testing.assert_allclose(mean.predict(X[:7]), expected, atol=1e-12)
    np.testing.assert_allclose(mean.predict_weights(X[:7]) @ Y, expected, atol=1e-10)
    assert boost.__dict__.get("ensemble_") is None  # members are cloned, never fitted in place
    model = MultiLabelClassifier(AveragedRegressor([boost, forest]), threshold=0.5).fit(X, Y)
    P = model.predict_proba(X)
    assert P.min() >= 0 and P.max() <= 1 and model.predict(X).shape == Y.shape
    with pytest.raises(DataError, match="non-empty list"):
        AveragedRegressor([]).fit(X, Y)
    with pytest.raises(DataError, match="weights must be 2 non-negative"):
        AveragedRegressor([boost, forest], weights=[1, -1]).fit(X, Y)


def test_every_inner_fit_reports_its_progress() -> None:
    """The callback hears each inner fold's fit and then the final one, each its own trees;
    the model is the one fitted without a callback."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 3))
    Y = (X[:, :2] + 0.3 * rng.normal(size=(40, 2)) > 0).astype(int)
    est = OKBoostRegressor(n_estimators=6, max_splits=2, random_state=0)
    heard: list[tuple[str | None, str, int]] = []
    clf = MultiLabelClassifier(est, n_splits=3).fit(
        X, Y, callback=lambda p: heard.append((p.part, p.phase, p.done))
    )
    trees = [(part, done) for part, phase, done in heard if phase == "trees"]
    parts = ["fold 1", "fold 2", "fold 3", "final"]
    assert trees == [(part, k) for part in parts for k in range(1, 7)]
    plain = MultiLabelClassifier(est, n_splits=3).fit(X, Y)
    np.testing.assert_array_equal(clf.thresholds_, plain.thresholds_)
    np.testing.assert_allclose(clf.predict_proba(X), plain.predict_proba(X))
    # a fixed threshold without the sigmoid: the final fit only
    heard.clear()
    MultiLabelClassifier(est, threshold=0.5, scores="clip").fit(
        X, Y, callback=lambda p: heard.append((p.part, p.phase, p.done))
    )
    assert {part for part, _, _ in heard} == {"final"}
    with pytest.raises(Exception, match="callback must be callable"):
        MultiLabelClassifier(est).fit(X, Y, callback=3)
