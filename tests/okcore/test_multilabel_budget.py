"""MultiLabelClassifier(max_cpu_seconds=...): the fit's own CPU accounting stays within the
automatic choice's bound, boosted candidates are capped, a candidate predicted over what is
left is skipped with weight 0 and its reason, a model is always returned, and no budget (or
a budget nothing reaches) gives the unbudgeted model exactly. No timing assertions beyond
the fit's own accounting against a generous bound."""

from __future__ import annotations

import numpy as np
import pytest

import okcore
from okcore.auto import BUDGET_SLACK_SECONDS, BUDGET_TOLERANCE


def _data(n: int = 300, p: int = 10, n_labels: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, p))
    Y = (X @ rng.normal(size=(p, n_labels)) + rng.normal(size=(n, n_labels)) > 0.5).astype(int)
    return X, Y


X, Y = _data()


def _within(model: okcore.MultiLabelClassifier, budget: float) -> None:
    assert model.cpu_seconds_ <= (1 + BUDGET_TOLERANCE) * budget + BUDGET_SLACK_SECONDS


@pytest.mark.parametrize("budget", [0.3, 2.0])
def test_the_default_stays_within_its_budget(budget: float) -> None:
    model = okcore.MultiLabelClassifier(max_cpu_seconds=budget).fit(X, Y)
    _within(model, budget)
    rows = model.candidates_
    assert [r["estimator"] for r in rows] == [
        "KernelRidgeRegressor", "OKBoostRegressor", "OK3ForestRegressor"
    ]  # fmt: skip
    assert sum(r["weight"] for r in rows) == pytest.approx(1.0)
    for r in rows:
        assert r["status"] in ("fitted", "capped") or r["status"].startswith("skipped")
        if r["status"].startswith("skipped"):
            assert r["weight"] == 0.0
    P = model.predict_proba(X[:20])
    assert P.shape == (20, 5) and np.all((P >= 0) & (P <= 1))


def test_a_candidate_predicted_over_the_budget_is_skipped() -> None:
    """Kernel ridge's cost model predicts more than the whole budget before any fit: it is
    skipped at once (deterministic: the prediction does not depend on the machine; here
    about 0.39 s for its three fold fits and its final fit, against a budget of 0.1 s)."""
    model = okcore.MultiLabelClassifier(max_cpu_seconds=0.1).fit(X, Y)
    krr = model.candidates_[0]
    assert (
        krr["status"].startswith("skipped before its fold 1 fit") and "need about" in krr["status"]
    )
    assert krr["weight"] == 0.0 and model.weights_[0] == 0.0
    _within(model, 0.1)


def test_a_boosted_candidate_is_capped() -> None:
    est = okcore.OKBoostRegressor(n_estimators=20000, max_splits=3, random_state=0)
    model = okcore.MultiLabelClassifier(est, max_cpu_seconds=1.0).fit(X, Y)
    assert model.candidates_[0]["status"] == "capped"
    assert model.estimator_.n_estimators_ < 20000
    _within(model, 1.0)


def test_the_last_candidate_is_never_skipped() -> None:
    """A model is always returned: one candidate that cannot be stopped is fitted even when
    the budget cannot hold it."""
    est = okcore.KernelRidgeRegressor()
    model = okcore.MultiLabelClassifier(est, max_cpu_seconds=1e-6).fit(X[:100], Y[:100])
    assert model.candidates_[0]["status"] == "fitted" and model.weights_.tolist() == [1.0]


@pytest.mark.slow
def test_a_budget_nothing_reaches_is_no_budget() -> None:
    Xs, Ys = X[:120], Y[:120]
    free = okcore.MultiLabelClassifier().fit(Xs, Ys)
    assert [r["status"] for r in free.candidates_] == ["fitted"] * 3
    assert free.cpu_seconds_ > 0
    generous = okcore.MultiLabelClassifier(max_cpu_seconds=1e6).fit(Xs, Ys)
    assert [r["status"] for r in generous.candidates_] == ["fitted"] * 3
    np.testing.assert_array_equal(generous.predict_proba(Xs), free.predict_proba(Xs))
    np.testing.assert_array_equal(generous.thresholds_, free.thresholds_)


@pytest.mark.parametrize("bad", [0, -1.0, "60"])
def test_a_bad_budget_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="max_cpu_seconds"):
        okcore.MultiLabelClassifier(max_cpu_seconds=bad).fit(X, Y)
