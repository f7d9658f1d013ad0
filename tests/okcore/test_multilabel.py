"""MultiLabelClassifier: scores in [0, 1], 0/1 predictions, thresholds chosen on the training
rows only (a recording estimator sees every row the inner fits use), scikit-learn clone."""

from __future__ import annotations

import numpy as np
import pytest

from okcore import OK3ForestRegressor, OKBoostRegressor, metrics
from okcore.exceptions import InvalidParameterError
from okcore.meta import clone
from okcore.multilabel import (
    BALANCED_WEIGHTS,
    THRESHOLD_GRID,
    MultiLabelClassifier,
    balanced_score,
    balanced_thresholds,
    calibrated_thresholds,
    choose_thresholds,
    expected_counts,
    fit_sigmoid,
    label_curves,
    simplex_grid,
    stack_weights,
    window_means,
)

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


def test_default_candidates_are_seeded() -> None:
    from okcore import KernelRidgeRegressor

    model = MultiLabelClassifier(random_state=4)
    assert model.scores == "label_sigmoid" and model.threshold_window == 0.05
    assert model.per_label == "auto" and model.metric == "micro_f1"
    krr, boost, forest = model.candidate_models(1500)
    assert isinstance(krr, KernelRidgeRegressor) and krr.gamma == "cv" and krr.random_state == 4
    assert krr.n_components is None  # exact up to 2,000 rows, Nystrom above
    assert model.candidate_models(2001)[0].n_components == 1000
    assert boost.splitter == "random" and boost.n_estimators == 300 and boost.random_state == 4
    assert forest.random_state == 4 and not forest.bootstrap


def test_stack_weights_is_the_grid_minimum() -> None:
    rng = np.random.default_rng(5)
    Y = (rng.random((300, 3)) < 0.4).astype(float)
    good = np.clip(Y + rng.normal(scale=0.35, size=Y.shape), 0, 1)
    other = np.clip(Y + rng.normal(scale=0.35, size=Y.shape), 0, 1)  # independent errors
    noise = rng.random(Y.shape)
    raws = [good, noise, other]
    w, loss = stack_weights(raws, Y, "label_sigmoid")
    grid = simplex_grid(3)
    assert len(grid) == 15 and np.allclose(grid.sum(1), 1) and list(grid[0]) == [1, 0, 0]
    by_hand = []
    for g in grid:  # brute force: every grid point's log-loss after its own per-label maps
        raw = sum(gi * r for gi, r in zip(g, raws, strict=True))
        ab = [fit_sigmoid(raw[:, j], Y[:, j]) for j in range(3)]
        P = np.column_stack([1 / (1 + np.exp(-(a * raw[:, j] + b))) for j, (a, b) in enumerate(ab)])
        by_hand.append(-np.mean(Y * np.log(P) + (1 - Y) * np.log(1 - P)))
    assert loss == pytest.approx(min(by_hand), rel=1e-9)
    assert w[1] == 0 and w[0] > 0 and w[2] > 0  # two independent views beat either; noise out


def test_label_curves_and_separable_per_label_thresholds() -> None:
    rng = np.random.default_rng(6)
    Y = rng.random((120, 4)) < np.array([0.05, 0.3, 0.5, 0.8])
    S = np.clip(Y * 0.3 + rng.random(Y.shape) * 0.7, 0, 1)
    grid = np.round(np.linspace(0.01, 0.99, 99), 2)
    curves = label_curves(Y, S, "macro_f1")
    for j in range(4):  # F1 of each label by hand at a few thresholds
        for i in (0, 30, 60, 98):
            assert curves[j, i] == pytest.approx(metrics.macro_f1(Y[:, [j]], S[:, [j]] >= grid[i]))
    ham = label_curves(Y, S, "hamming_loss")
    assert ham[2, 40] == pytest.approx(-metrics.hamming_loss(Y[:, [2]], S[:, [2]] >= grid[40]))
    # the separable search is exact: no coordinate-ascent result has a higher macro-F1
    t = choose_thresholds(Y, S, metric="macro_f1", per_label=True)
    for j in range(4):
        assert curves[j][int(np.argmin(np.abs(grid - t[j])))] == curves[j].max()
    assert metrics.macro_f1(Y, S >= t) >= metrics.macro_f1(
        Y, S >= choose_thresholds(Y, S, metric="micro_f1")
    )


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


class RecordingForest(OK3ForestRegressor):
    """OK3 forest recording the row ids of its fits and predictions, as RecordingBoost."""

    def fit(self, X, Y=None, **kwargs):  # type: ignore[override]
        SEEN.append(("fit", frozenset(np.asarray(X)[:, 0].astype(int).tolist())))
        return super().fit(X, Y, **kwargs)

    def predict(self, X):  # type: ignore[override]
        SEEN.append(("predict", frozenset(np.asarray(X)[:, 0].astype(int).tolist())))
        return super().predict(X)


def test_candidates_are_chosen_on_training_rows_only() -> None:
    X, Y = _data(240)
    X = np.c_[np.arange(len(X)), X]
    train = np.arange(0, 240, 2)
    SEEN.clear()
    candidates = [RecordingBoost(n_estimators=10), RecordingForest(n_estimators=5, random_state=0)]
    model = MultiLabelClassifier(candidates, n_splits=3).fit(X[train], Y[train])
    allowed = frozenset(train.tolist())
    assert all(rows <= allowed for _, rows in SEEN)
    inner = SEEN[:12]  # 3 folds x 2 candidates x (fit, predict)
    for k in range(0, 12, 2):
        (f, fitted), (p, scored) = inner[k], inner[k + 1]
        assert f == "fit" and p == "predict" and fitted.isdisjoint(scored)
        assert fitted | scored == allowed
    final_fits = [rows for kind, rows in SEEN[12:] if kind == "fit"]
    assert final_fits and all(rows == allowed for rows in final_fits)
    assert len(final_fits) == int(np.sum(model.weights_ > 0))
    SEEN.clear()
    model.predict(X[1:3])
    assert SEEN and all(rows == frozenset({1, 2}) for _, rows in SEEN)


def _small_candidates(seed: int = 0) -> list:
    return [
        OKBoostRegressor(n_estimators=15, random_state=seed),
        OK3ForestRegressor(n_estimators=8, splitter="random", bootstrap=False, random_state=seed),
    ]


def test_stacked_fit_is_the_weighted_average_and_deterministic() -> None:
    from okcore import AveragedRegressor

    X, Y = _data(200)
    fits = [MultiLabelClassifier(_small_candidates(), random_state=3).fit(X, Y) for _ in range(2)]
    a, b = fits
    np.testing.assert_array_equal(a.weights_, b.weights_)
    np.testing.assert_array_equal(a.thresholds_, b.thresholds_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert a.weights_.sum() == pytest.approx(1) and np.all(
        np.isin(a.weights_, [0, 0.25, 0.5, 0.75, 1])
    )
    assert np.asarray(a.sigmoid_).shape == (4, 2) and a.oof_log_loss_ is not None
    kept = [m for m, w in zip(_small_candidates(), a.weights_, strict=True) if w > 0]
    if len(kept) > 1:
        assert isinstance(a.estimator_, AveragedRegressor)
        expected = AveragedRegressor(kept, weights=list(a.weights_[a.weights_ > 0])).fit(X, Y)
    else:
        expected = clone(kept[0]).fit(X, Y)
    np.testing.assert_allclose(a.decision_function(X[:9]), expected.predict(X[:9]), atol=1e-12)


def test_thresholds_for_equals_a_fit_for_that_measure() -> None:
    X, Y = _data(200)
    base = MultiLabelClassifier(_small_candidates(), random_state=1).fit(X, Y)
    for metric in ("hamming_loss", "macro_f1", "micro_f1", "balanced"):
        other = MultiLabelClassifier(_small_candidates(), metric=metric, random_state=1).fit(X, Y)
        np.testing.assert_array_equal(base.thresholds_for(metric), other.thresholds_)
    np.testing.assert_array_equal(base.thresholds_for("micro_f1"), base.thresholds_)
    per_label = base.thresholds_for("macro_f1")
    assert len(np.unique(per_label)) > 1  # "auto": per label for macro-F1
    assert len(np.unique(base.thresholds_for("hamming_loss"))) == 1
    assert len(np.unique(base.thresholds_for("micro_f1"))) == 1
    with pytest.raises(Exception, match="metric must be one of"):
        base.thresholds_for("auc")


def test_threshold_is_stable_across_seeds() -> None:
    """The seed moves the inner folds and the candidates' draws. On this problem of 600 rows
    (small, seed-sensitive candidates) the calibrated rule with metric "balanced" gives
    per-label thresholds within 0.01 for seeds 0, 1 and 2; half the best micro-F1 (the
    default) gives the same threshold at each seed, the per-label macro-F1 thresholds
    are within 0.02; the window rule's micro-F1 threshold moves by 0.04."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(600, 6))
    logits = X @ rng.normal(size=(6, 5)) + rng.normal(scale=1.0, size=(600, 5))
    Y = (logits > 0.5).astype(int)

    def fits(rule: str, metric: str = "balanced") -> list[MultiLabelClassifier]:
        return [
            MultiLabelClassifier(
                _small_candidates(s), threshold_rule=rule, metric=metric, random_state=s
            ).fit(X, Y)
            for s in (0, 1, 2)
        ]

    calibrated = fits("auto")
    balanced = np.array([m.thresholds_ for m in calibrated])
    assert np.ptp(balanced, axis=0).max() <= 0.01 + 1e-9
    assert len({m.thresholds_for("micro_f1")[0] for m in calibrated}) == 1
    macro = np.array([m.thresholds_for("macro_f1") for m in calibrated])
    assert np.ptp(macro, axis=0).max() <= 0.02
    assert np.all(np.array([m.thresholds_for("hamming_loss") for m in calibrated]) == 0.5)
    window = [m.thresholds_[0] for m in fits("window", "micro_f1")]
    assert max(window) - min(window) == pytest.approx(0.04)


def test_calibrated_thresholds_by_hand() -> None:
    rng = np.random.default_rng(8)
    Y = rng.random((400, 3)) < np.array([0.2, 0.5, 0.7])
    P = np.clip(np.where(Y, 0.6, 0.3) + rng.normal(scale=0.2, size=Y.shape), 0, 1)
    grid = np.round(np.linspace(0.01, 0.99, 99), 2)
    best = max(metrics.micro_f1(Y, P >= t) for t in grid)
    np.testing.assert_array_equal(
        calibrated_thresholds(Y, P, "micro_f1", False), round(best / 2, 2)
    )
    per = calibrated_thresholds(Y, P, "macro_f1", True)
    for j in range(3):
        assert per[j] == round(
            max(metrics.macro_f1(Y[:, [j]], P[:, [j]] >= t) for t in grid) / 2, 2
        )
    assert np.all(calibrated_thresholds(Y, P, "hamming_loss", False) == 0.5)
    assert calibrated_thresholds(Y, P, "subset_accuracy", False) is None
    # no closed form: the window rule decides
    np.testing.assert_array_equal(
        choose_thresholds(Y, P, metric="subset_accuracy", rule="calibrated"),
        choose_thresholds(Y, P, metric="subset_accuracy"),
    )


def test_save_load_keeps_the_predictions(tmp_path) -> None:
    """The fitted model's parts (the estimator saved by okcore.save, the thresholds and the
    score maps as plain numbers) rebuild the same classifier, as the service stores it."""
    import json

    import okcore

    X, Y = _data(200)
    model = MultiLabelClassifier(_small_candidates(), random_state=2).fit(X, Y)
    okcore.save(model.estimator_, tmp_path / "est")
    (tmp_path / "ml.json").write_text(
        json.dumps(
            {
                "thresholds": model.thresholds_.tolist(),
                "sigmoid": np.asarray(model.sigmoid_).tolist(),
            }
        )
    )
    info = json.loads((tmp_path / "ml.json").read_text())
    again = MultiLabelClassifier(random_state=2)
    again.estimator_ = okcore.load(tmp_path / "est")
    again.thresholds_ = np.asarray(info["thresholds"])
    again.sigmoid_ = np.asarray(info["sigmoid"])
    again.n_labels_ = Y.shape[1]
    np.testing.assert_allclose(again.predict_proba(X), model.predict_proba(X), atol=1e-12)
    np.testing.assert_array_equal(again.predict(X), model.predict(X))


def test_no_setting_default_is_deterministic_and_saves(tmp_path) -> None:
    """MultiLabelClassifier() end to end on a small problem: the same seed gives the same
    weights, thresholds and scores; the fitted stack (kernel ridge and trees averaged) goes
    through okcore.save / load with the same scores."""
    import okcore

    X, Y = _data(150)
    a, b = (MultiLabelClassifier(random_state=5).fit(X, Y) for _ in range(2))
    np.testing.assert_array_equal(a.weights_, b.weights_)
    np.testing.assert_array_equal(a.thresholds_, b.thresholds_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert len(a.weights_) == 3 and a.weights_.sum() == pytest.approx(1)
    okcore.save(a.estimator_, tmp_path / "est")
    loaded = okcore.load(tmp_path / "est")
    np.testing.assert_allclose(np.asarray(loaded.predict(X)), a.decision_function(X), atol=1e-10)


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


def _expected_measure(P: np.ndarray, t: np.ndarray, weights=(1.0, 1.0, 1.0)) -> float:
    """w_mi micro-F1 + w_ma macro-F1 - w_h Hamming loss with every count replaced by its
    expectation under the probabilities P (written out entry by entry, independently of
    okcore's counting)."""
    D = P >= t
    tp = np.where(D, P, 0.0).sum(axis=0)
    decided = D.sum(axis=0)
    positives = P.sum(axis=0)
    micro = 2 * tp.sum() / (decided.sum() + positives.sum())
    macro = np.mean(2 * tp / (decided + positives))
    errors = np.where(D, 1.0 - P, P).sum()  # expected false positives + false negatives
    return weights[0] * micro + weights[1] * macro - weights[2] * errors / P.size


def test_expected_counts_by_enumeration() -> None:
    rng = np.random.default_rng(2)
    P = rng.random((25, 3))
    tp, decided = expected_counts(P)
    for g, t in enumerate(THRESHOLD_GRID):
        np.testing.assert_allclose(tp[:, g], np.where(P >= t, P, 0).sum(axis=0), atol=1e-12)
        np.testing.assert_array_equal(decided[:, g], (P >= t).sum(axis=0))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("weights", [BALANCED_WEIGHTS, (1.0, 1.0, 1.0), (1.0, 0.5, 0.5)])
def test_balanced_thresholds_reach_the_brute_force_optimum(seed: int, weights) -> None:
    """On small problems (2 labels, one rare) the plug-in measure of the thresholds found
    equals the best over every pair of grid thresholds (99 x 99, enumerated)."""
    rng = np.random.default_rng(seed)
    P = np.column_stack([rng.beta(2, 2, 40), rng.beta(0.5, 6, 40)])
    found = balanced_thresholds(P, np.full(2, 0.3), weights=weights)
    grid = THRESHOLD_GRID
    best = max(_expected_measure(P, np.array([a, b]), weights) for a in grid for b in grid)
    assert _expected_measure(P, found, weights) == pytest.approx(best, abs=1e-12)
    assert set(np.round(found, 2)) <= set(grid)


def test_balanced_thresholds_known_cases() -> None:
    """Weights (1, 0, 0): micro-F1 alone, thresholds half the best expected micro-F1 (within
    a grid step: each within the decisions' interval); (0, 0, 1): the Hamming loss alone, 0.5; (0, 1, 0): each label at half its
    best expected F1. Permuting rows changes nothing; permuting labels permutes thresholds.
    With equal weights rare labels sit lower than frequent ones."""
    rng = np.random.default_rng(5)
    P = np.column_stack([rng.beta(a, b, 300) for a, b in ((4, 2), (2, 2), (1, 4), (0.5, 8))])
    grid = THRESHOLD_GRID
    start = np.full(4, 0.3)
    micro = balanced_thresholds(P, start, weights=(1.0, 0.0, 0.0))
    best_micro = max(_expected_measure(P, np.full(4, t), (1, 0, 0)) for t in grid)
    assert np.abs(micro - best_micro / 2).max() <= 0.01 + 1e-9  # one grid step
    assert np.all(balanced_thresholds(P, start, weights=(0.0, 0.0, 1.0)) == 0.5)
    macro = balanced_thresholds(P, start, weights=(0.0, 1.0, 0.0))
    for j in range(4):
        f1 = max(_expected_measure(P[:, [j]], np.array([t]), (0, 1, 0)) for t in grid)
        assert abs(macro[j] - f1 / 2) <= 0.01 + 1e-9
    found = balanced_thresholds(P, start, weights=(1.0, 1.0, 1.0))
    np.testing.assert_array_equal(
        balanced_thresholds(P[::-1], start, weights=(1.0, 1.0, 1.0)), found
    )
    np.testing.assert_array_equal(
        balanced_thresholds(P[:, ::-1], start, weights=(1.0, 1.0, 1.0)), found[::-1]
    )
    assert found[3] < found[2] < found[0] and found[3] < found[1]
    # between the measures' own thresholds, label by label
    assert np.all(found >= np.minimum(micro, macro) - 0.01)
    assert np.all(found <= np.maximum(np.maximum(micro, macro), 0.5) + 0.01)


def test_balanced_metric_is_per_label_and_decides_the_sum() -> None:
    """metric="balanced" (per label by "auto") equals thresholds_for("balanced") on the same
    fit and calibrated_thresholds on its out-of-fold scores; the window rule and one
    threshold for all fall back to the search of balanced_score."""
    X, Y = _data(200)
    base = MultiLabelClassifier(_small_candidates(), random_state=1).fit(X, Y)
    other = MultiLabelClassifier(_small_candidates(), metric="balanced", random_state=1).fit(X, Y)
    np.testing.assert_array_equal(base.thresholds_for("balanced"), other.thresholds_)
    np.testing.assert_array_equal(
        other.thresholds_,
        calibrated_thresholds(other.oof_labels_, other.oof_scores_, "balanced", True),
    )
    D = other.oof_scores_ >= 0.4
    assert balanced_score(Y, D) == pytest.approx(
        metrics.micro_f1(Y, D) + metrics.macro_f1(Y, D) - 2 * metrics.hamming_loss(Y, D)
    )
    one = base.thresholds_for("balanced", per_label=False)
    values = [balanced_score(Y, other.oof_scores_ >= t) for t in THRESHOLD_GRID]
    assert len(set(one)) == 1 and one[0] in THRESHOLD_GRID and np.isfinite(values).all()


def test_inner_parameters_need_an_estimator_and_wrong_widths_name_the_classifier() -> None:
    from okcore.exceptions import DataError

    with pytest.raises(ValueError, match="set estimator first"):
        MultiLabelClassifier().set_params(estimator__n_estimators=5)
    model = MultiLabelClassifier().set_params(
        estimator=OKBoostRegressor(n_estimators=10), estimator__n_estimators=5
    )
    assert model.estimator.n_estimators == 5
    X, Y = _data()
    model.fit(X, Y)
    assert model.n_features_in_ == X.shape[1]
    with pytest.raises(DataError, match="but MultiLabelClassifier is expecting"):
        model.predict(X[:2, :-1])


def test_scikit_learn_scorers_by_name_score_it() -> None:
    """cross_val_score(..., scoring="f1_micro") answered nan for every fold (the scorers ask
    a classifier for ``classes_``): each label's classes are [0, 1], as for scikit-learn's
    own multi-label classifiers, and the scores are those of the model's predictions."""
    model_selection = pytest.importorskip("sklearn.model_selection")
    sk_metrics = pytest.importorskip("sklearn.metrics")
    X, Y = _data(n=60)
    model = MultiLabelClassifier(OK3ForestRegressor(n_estimators=10, random_state=0))
    assert not hasattr(model, "classes_")
    folds = model_selection.KFold(3)
    for scoring in ("f1_micro", "roc_auc", "average_precision"):
        scores = model_selection.cross_val_score(
            model, X, Y, cv=folds, scoring=scoring, error_score="raise"
        )
        assert np.isfinite(scores).all()
    train, test = next(iter(folds.split(X)))
    fitted = clone(model).fit(X[train], Y[train])
    assert [c.tolist() for c in fitted.classes_] == [[0, 1]] * 4
    by_name = model_selection.cross_val_score(model, X, Y, cv=folds, scoring="f1_micro")
    expected = sk_metrics.f1_score(Y[test], fitted.predict(X[test]), average="micro")
    assert by_name[0] == pytest.approx(expected)


def test_a_label_on_no_training_row_is_not_predicted_for_every_row() -> None:
    """A label on no training row has best F1 0, and 'half the best F1' made its macro-F1
    threshold 0: the label was predicted for every row (metric="macro_f1", or micro-F1 with
    no label on any row). Its threshold is now 0.5, what the window rule's tie-break and the
    Hamming loss give, and a tiny best F1 keeps the grid's lowest threshold, not 0."""
    X, Y = _data(n=90)
    Y[:, 1] = 0
    model = MultiLabelClassifier(OK3ForestRegressor(n_estimators=10, random_state=0),
                                 metric="macro_f1").fit(X, Y)  # fmt: skip
    assert model.thresholds_[1] == 0.5 and model.thresholds_for("balanced")[1] > 0
    assert not model.predict(X)[:, 1].any()
    none = np.zeros((50, 3), dtype=bool)
    P = np.random.default_rng(0).random((50, 3))
    assert np.all(calibrated_thresholds(none, P, "micro_f1", False) == 0.5)
    assert np.all(calibrated_thresholds(none, P, "macro_f1", True) == 0.5)
    rare = none.copy()
    rare[0, 0] = True
    P[0, 0], P[1:, 0] = 0.02, 1.0  # its one row ranked last: best F1 2/51, half of it 0.02
    assert calibrated_thresholds(rare, P, "macro_f1", True)[0] == pytest.approx(0.02)


def test_label_rows_that_are_not_0_1_are_named() -> None:
    """NaN, text and a 1-D label vector were all told 'Y must be a 2-D array of 0/1 label
    rows', text "0"/"1" rows included: the refusal now names the shape, the text or the
    first entry that is not 0 or 1; booleans and a pandas DataFrame of 0/1 are label rows."""
    from okcore.exceptions import DataError

    pd = pytest.importorskip("pandas")
    X, Y = _data(n=60)
    model = MultiLabelClassifier(OK3ForestRegressor(n_estimators=5, random_state=0))
    with pytest.raises(DataError, match=r"got shape \(60,\) \(one label: pass Y.reshape"):
        clone(model).fit(X, Y[:, 0])
    with pytest.raises(DataError, match="text entries such as '1'.*Y.astype"):
        clone(model).fit(X, Y.astype(str))
    missing = Y.astype(float)
    missing[4, 2] = np.nan
    with pytest.raises(DataError, match=r"Y\[4, 2\] is nan \(1 entries are not 0 or 1\)"):
        clone(model).fit(X, missing)
    expected = clone(model).fit(X, Y).predict_proba(X)
    for same in (Y.astype(bool), pd.DataFrame(Y, columns=list("abcd")), Y.astype(object)):
        np.testing.assert_array_equal(clone(model).fit(X, same).predict_proba(X), expected)


def test_thresholds_for_refuses_a_per_label_it_does_not_know() -> None:
    from okcore.exceptions import DataError

    model = MultiLabelClassifier(OK3ForestRegressor(n_estimators=5, random_state=0))
    model.fit(*_data(n=60))
    with pytest.raises(DataError, match='per_label must be True, False or "auto"'):
        model.thresholds_for("micro_f1", "yes")
    assert model.thresholds_for("macro_f1", np.True_).shape == (4,)


def test_the_default_takes_sample_weight_on_features_of_many_values() -> None:
    """MultiLabelClassifier().fit(X, Y, sample_weight=w) was refused on any feature of more
    than 255 distinct values (its forest searched exactly, and asked for a max_bins the user
    could not set without naming the whole stack): weighted, the default's forest searches
    histograms of 255 bins; unweighted (or unit weights) it still searches exactly."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(260, 3))
    Y = (X @ rng.normal(size=(3, 2)) > 0.3).astype(int)
    model = MultiLabelClassifier(random_state=1)
    assert model.candidate_models(260)[2].max_bins is None
    assert model.candidate_models(260, weighted=True)[2].max_bins == 255
    fitted = clone(model).fit(X, Y, sample_weight=rng.uniform(0.5, 2.0, 260))
    assert [c["status"] for c in fitted.candidates_] == ["fitted"] * 3
    assert fitted.predict(X).shape == Y.shape


def test_thresholds_for_without_out_of_fold_scores_says_why() -> None:
    """A fixed threshold with a sigmoid map keeps out-of-fold scores (thresholds_for works),
    so 'fit with threshold="cv" first' named the wrong cause for the clipped fit that has
    none: the refusal now names the fit that keeps none and both ways out."""
    from okcore.exceptions import DataError

    X, Y = _data(n=60)
    forest = OK3ForestRegressor(n_estimators=5, random_state=0)
    kept = MultiLabelClassifier(forest, threshold=0.3).fit(X, Y)
    assert kept.thresholds_for("hamming_loss").tolist() == [0.5] * 4
    clipped = MultiLabelClassifier(forest, threshold=0.3, scores="clip").fit(X, Y)
    with pytest.raises(DataError, match="scores='clip' and one estimator.*'label_sigmoid'"):
        clipped.thresholds_for("micro_f1")


@pytest.mark.parametrize(
    ("keyword", "advice"),
    [
        ("eval_set", r"takes no eval_set.*OKBoostRegressor\(n_iter_no_change=10\)"),
        ("output_weight", r"takes no output_weight.*drop its column from Y.*sample_weight"),
    ],
)
def test_okboost_fit_keywords_are_refused_with_what_to_do(keyword, advice) -> None:
    """eval_set and output_weight (OKBoostRegressor's fit keywords) were Python's bare
    "unexpected keyword argument": the classifier takes them only to say why it cannot use
    them and what to do instead, before any fit."""
    from okcore.exceptions import DataError

    X, Y = _data(n=60)
    value = (X[:10], Y[:10]) if keyword == "eval_set" else np.ones(Y.shape[1])
    model = MultiLabelClassifier(OK3ForestRegressor(n_estimators=5, random_state=0))
    with pytest.raises(DataError, match=advice):
        model.fit(X, Y, **{keyword: value})
    assert not hasattr(model, "estimator_")


def test_the_eval_set_advice_stops_a_named_booster_early() -> None:
    """What the eval_set refusal advises fits: a booster named with n_iter_no_change stops
    early on rows it holds out of each fit."""
    X, Y = _data(n=90)
    booster = OKBoostRegressor(n_iter_no_change=2, n_estimators=200, random_state=0)
    model = MultiLabelClassifier(booster, n_splits=2).fit(X, Y)
    assert model.estimator_.n_estimators_ < 200
    assert model.predict(X).shape == Y.shape


def test_label_names_come_from_a_data_frame_and_survive_the_saved_parts(tmp_path) -> None:
    """A classifier fitted on a pandas DataFrame kept no label names, so its 0/1 columns could
    not be mapped back to the labels: ``label_names_`` holds the DataFrame's column names
    (as strings), None for an array or pandas' default 0..L-1 columns; kept beside the
    saved regressor, they rebuild a classifier that predicts and names labels as the fitted
    one."""
    import json

    import okcore

    pd = pytest.importorskip("pandas")
    X, Y = _data(n=80)
    forest = OK3ForestRegressor(n_estimators=5, random_state=0)
    names = ["metabolism", "transport", "signalling", "growth"]
    model = MultiLabelClassifier(forest).fit(X, pd.DataFrame(Y, columns=names))
    assert model.label_names_ == names
    assert MultiLabelClassifier(forest).fit(X, Y).label_names_ is None
    assert MultiLabelClassifier(forest).fit(X, pd.DataFrame(Y)).label_names_ is None
    numbered = pd.DataFrame(Y, columns=[10, 20, 30, 40])
    assert MultiLabelClassifier(forest).fit(X, numbered).label_names_ == ["10", "20", "30", "40"]

    with pytest.raises(okcore.PersistenceError, match="thresholds_, model.sigmoid_.*label_names_"):
        okcore.save(model, tmp_path / "whole")  # the classifier is kept as its parts
    okcore.save(model.estimator_, tmp_path / "est")
    (tmp_path / "ml.json").write_text(
        json.dumps({"thresholds": model.thresholds_.tolist(), "label_names": model.label_names_})
    )
    info = json.loads((tmp_path / "ml.json").read_text())
    again = MultiLabelClassifier(forest)
    again.estimator_ = okcore.load(tmp_path / "est")
    again.thresholds_, again.sigmoid_ = np.asarray(info["thresholds"]), model.sigmoid_
    again.n_labels_, again.label_names_ = len(info["label_names"]), info["label_names"]
    assert again.label_names_ == names
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    predicted = pd.DataFrame(again.predict(X[:3]), columns=again.label_names_)
    assert list(predicted.columns) == names
