"""scikit-learn's own estimator checks (``check_estimator``) over the estimator registry:
every estimator users can name passes all of them, so scikit-learn's tools (pipelines,
searches, ``clone``, the error messages they match) work with okcore's estimators."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
from sklearn.utils.estimator_checks import check_estimator

import okcore

#: Small models: the checks fit each estimator about a hundred times on up to 200 rows.
#: An estimator not listed here is checked with its defaults.
SMALL = {
    "okboost": {"n_estimators": 10},
    "ok3-forest": {"n_estimators": 5},
    "krr-boost": {"n_estimators": 5, "n_basis": 20},
}

#: Checks that match okcore's error types and messages against scikit-learn's.
MATCHED_MESSAGES = {
    "check_estimators_unfitted",
    "check_n_features_in_after_fitting",
    "check_complex_data",
    "check_dtype_object",
    "check_estimators_empty_data_messages",
    "check_fit2d_predict1d",
    "check_fit2d_1sample",
}


#: Checks that call ``fit(X, y=...)``: okcore's estimators name their outputs ``Y`` (vectors,
#: Gram matrices, graphs), so the keyword ``y`` is not theirs. The same equivalence (integer
#: weights are repeated rows) is tested in tests/okcore/test_sample_weight.py.
FIT_WITH_Y_KEYWORD = {
    "check_sample_weight_equivalence_on_dense_data": "fit names its outputs Y, not y",
    "check_sample_weight_equivalence_on_sparse_data": "fit names its outputs Y, not y",
}


@pytest.mark.parametrize("name", okcore.estimator_names())
def test_passes_scikit_learns_estimator_checks(name):
    estimator = okcore.make_estimator(name, SMALL.get(name, {}))
    with warnings.catch_warnings():
        # okcore's estimators follow the protocol without deriving from BaseEstimator,
        # which check_estimator notes with a UserWarning
        warnings.simplefilter("ignore", UserWarning)
        results = check_estimator(
            estimator,
            on_fail=None,
            expected_failed_checks=FIT_WITH_Y_KEYWORD,
        )
    failed = {
        r["check_name"]: f"{type(r['exception']).__name__}: {r['exception']}"
        for r in results
        if r["status"] == "failed"
    }
    assert not failed
    passed = {r["check_name"] for r in results if r["status"] == "passed"}
    assert MATCHED_MESSAGES <= passed  # they ran: not skipped by a tag or a version


def test_okcore_runs_without_scikit_learn():
    """scikit-learn is optional: without it NotFittedError keeps scikit-learn's bases."""
    script = """
import sys
sys.modules["sklearn"] = None  # import sklearn now raises ImportError
import numpy as np
import okcore
assert issubclass(okcore.NotFittedError, ValueError)
assert issubclass(okcore.NotFittedError, AttributeError)
X = np.arange(12.0).reshape(6, 2)
est = okcore.OK3Regressor()
try:
    est.predict(X)
    raise SystemExit("predict before fit did not raise")
except ValueError as exc:
    assert isinstance(exc, okcore.NotFittedError)
assert est.fit(X, X[:, 0]).predict(X).shape == (6,)
assert "sklearn" not in {name.split(".")[0] for name in sys.modules if sys.modules[name]}
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)


def _meta_estimators() -> dict[str, tuple]:
    """The estimators built on others, small, with outputs they take (a regressor's vectors,
    a classifier's 0/1 label rows)."""
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.random((60, 3))
    Y = np.c_[X[:, 0] + 0.1 * rng.standard_normal(60), np.sin(3 * X[:, 1])]
    labels = (Y > 0.5).astype(int)
    small = okcore.OKBoostRegressor(n_estimators=10, random_state=0)
    return {
        "auto": (okcore.AutoRegressor(max_cpu_seconds=1, random_state=0), X, Y),
        "average": (okcore.AveragedRegressor([small, okcore.KernelRidgeRegressor()]), X, Y),
        "multilabel": (okcore.MultiLabelClassifier(small, n_splits=2), X, labels),
    }


@pytest.mark.parametrize("name", ["auto", "average", "multilabel"])
def test_estimators_built_on_others_work_in_scikit_learns_tools(name):
    from sklearn.base import is_classifier, is_regressor
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.utils import get_tags

    estimator, X, Y = _meta_estimators()[name]
    assert is_classifier(estimator) == (name == "multilabel")
    assert is_regressor(estimator) == (name != "multilabel")
    scores = cross_val_score(estimator, X, Y, cv=3)
    assert scores.shape == (3,)
    pipeline = make_pipeline(StandardScaler(), estimator).fit(X, Y)
    assert pipeline.predict(X[:2]).shape == (2, 2)
    tags = get_tags(estimator)
    assert tags.target_tags.multi_output
    if name == "multilabel":
        assert tags.classifier_tags.multi_label and not tags.target_tags.single_output
        assert tags.input_tags.allow_nan  # around trees it takes missing inputs
        assert not get_tags(okcore.MultiLabelClassifier()).input_tags.allow_nan  # kernel ridge
    else:
        assert tags.target_tags.single_output
    if name == "auto":
        assert tags.input_tags.allow_nan  # its trees take missing inputs
