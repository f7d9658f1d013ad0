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
