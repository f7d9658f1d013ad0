"""Parameter validation, NotFittedError, data checks and the scikit-learn estimator protocol."""

from __future__ import annotations

import re

import numpy as np
import pytest
import sklearn.exceptions
from okdata import make_regression, ring_edges
from scipy import sparse
from sklearn.base import clone

from okcore import (
    DataError,
    DataTypeError,
    InvalidParameterError,
    KernelError,
    NotFittedError,
    OK3ForestRegressor,
    OK3Regressor,
    OKBoostRegressor,
    metrics,
)

ESTIMATORS = (OKBoostRegressor, OK3Regressor, OK3ForestRegressor)
SMALL = {
    OKBoostRegressor: {"n_estimators": 3, "max_splits": 3},
    OK3Regressor: {"max_splits": 5},
    OK3ForestRegressor: {"n_estimators": 3, "max_splits": 5},
}

# What each constraint says, exactly as the message must print it.
INT_GE_1 = "an int in [1, inf)"
INT_GE_1_OR_NONE = "an int in [1, inf) or None"
INT_GE_1_OR_AUTO = "an int in [1, inf) or 'auto'"
SPLITTER = "one of 'best', 'random'"
MAX_FEATURES = "one of None, 'sqrt', 'log2' or an int in [1, inf) or a float in (0.0, 1.0]"
LEAF_ORDER = "one of 'variance', 'gain'"
N_JOBS = "one of None, -1 or an int in [1, inf)"
RANDOM_STATE = "None, an int in [0, 2**32) or a numpy random Generator"
FRACTION = "a float in (0.0, 1.0]"

TREE_CASES = [
    ("splitter", "bestest", SPLITTER),
    ("splitter", None, SPLITTER),
    ("max_features", 0, MAX_FEATURES),
    ("max_features", 1.5, MAX_FEATURES),
    ("max_features", 0.0, MAX_FEATURES),
    ("max_features", "auto", MAX_FEATURES),
    ("leaf_order", "depth", LEAF_ORDER),
    ("min_samples_leaf", 0, INT_GE_1),
    ("min_samples_leaf", 1.0, INT_GE_1),
    ("min_samples_leaf", True, INT_GE_1),
    ("max_depth", 0, INT_GE_1_OR_NONE),
    ("max_depth", 2.5, INT_GE_1_OR_NONE),
    ("factor_rank", 0, INT_GE_1_OR_NONE),
    ("factor_rank", 2.5, INT_GE_1_OR_NONE),
    ("factor_tol", -1e-3, "a float in [0.0, 1.0)"),
    ("factor_tol", 1.0, "a float in [0.0, 1.0)"),
    ("n_jobs", 0, N_JOBS),
    ("n_jobs", -2, N_JOBS),
    ("n_landmarks", 0, INT_GE_1_OR_NONE),
    ("n_landmarks", 2.5, INT_GE_1_OR_NONE),
    ("random_state", -1, RANDOM_STATE),
    ("random_state", 2**32, RANDOM_STATE),
    ("random_state", "seed", RANDOM_STATE),
    ("random_state", 1.5, RANDOM_STATE),
]
INIT_MODELS = (
    "one of None, 'kernel_ridge' or an unfitted KernelRidgeRegressor or a dict of its "
    "parameters (not factor_rank, factor_tol, n_landmarks; input_kernel 'rbf' or 'linear')"
)
MAX_BINS_CASES = [  # the trees' and forests' (OKBoost's also take "auto")
    ("max_bins", 1, "an int in [2, 255] or None"),
    ("max_bins", 256, "an int in [2, 255] or None"),
    ("max_bins", 16.0, "an int in [2, 255] or None"),
    ("max_bins", "auto", "an int in [2, 255] or None"),
    ("refine_cuts", 1, "one of True, False"),
    ("refine_cuts", None, "one of True, False"),
    ("refine_cuts", "auto", "one of True, False"),
]
CASES = {
    OKBoostRegressor: TREE_CASES
    + [
        ("max_splits", 0, INT_GE_1_OR_NONE),
        ("max_splits", "10", INT_GE_1_OR_NONE),
        ("max_splits", 2.0, INT_GE_1_OR_NONE),
        ("n_estimators", 0, INT_GE_1_OR_AUTO),
        ("n_estimators", 10.0, INT_GE_1_OR_AUTO),
        ("n_estimators", "10", INT_GE_1_OR_AUTO),
        ("n_estimators", "Auto", INT_GE_1_OR_AUTO),
        ("learning_rate", 0.0, FRACTION),
        ("learning_rate", 1.5, FRACTION),
        ("learning_rate", float("nan"), FRACTION),
        ("learning_rate", "0.1", FRACTION),
        ("subsample", 0.0, FRACTION),
        ("subsample", 1.01, FRACTION),
        ("colsample_bytree", 0.0, FRACTION),
        ("colsample_bytree", 1.01, FRACTION),
        ("tree_type", "symmetric", "one of 'auto', 'best-first', 'oblivious'"),
        ("tree_type", None, "one of 'auto', 'best-first', 'oblivious'"),
        ("n_iter_no_change", 0, INT_GE_1_OR_NONE),
        ("early_stopping", "on", "one of 'auto', True, False"),
        ("early_stopping", 1, "one of 'auto', True, False"),
        ("early_stopping", None, "one of 'auto', True, False"),
        ("validation_fraction", 0.0, "a float in (0.0, 1.0)"),
        ("validation_fraction", 1.0, "a float in (0.0, 1.0)"),
        ("tol", -1e-3, "a float in [0.0, inf)"),
        ("tol", float("inf"), "a float in [0.0, inf)"),
        ("l2_regularization", -1.0, "a float in [0.0, inf) or 'auto'"),
        ("l2_regularization", float("nan"), "a float in [0.0, inf) or 'auto'"),
        ("l2_regularization", float("inf"), "a float in [0.0, inf) or 'auto'"),
        ("l2_regularization", "1", "a float in [0.0, inf) or 'auto'"),
        ("sketch_dim", 0, "an int in [1, inf) or one of 'auto', None"),
        ("sketch_dim", 2.5, "an int in [1, inf) or one of 'auto', None"),
        ("sketch_dim", "fast", "an int in [1, inf) or one of 'auto', None"),
        ("max_bins", 1, "an int in [2, 255] or one of 'auto', None"),
        ("max_bins", 256, "an int in [2, 255] or one of 'auto', None"),
        ("max_bins", "exact", "an int in [2, 255] or one of 'auto', None"),
        ("refine_cuts", 1, "one of 'auto', True, False"),
        ("refine_cuts", None, "one of 'auto', True, False"),
        ("refine_cuts", "Auto", "one of 'auto', True, False"),
        ("loss", "lad", "one of 'squared', 'absolute', 'huber'"),
        ("loss", None, "one of 'squared', 'absolute', 'huber'"),
        ("alpha", 0, "a float in (0.0, 1.0)"),
        ("alpha", 1.0, "a float in (0.0, 1.0)"),
        ("alpha", float("nan"), "a float in (0.0, 1.0)"),
        ("alpha", "0.9", "a float in (0.0, 1.0)"),
        ("warm_start", 1, "one of True, False"),
        ("warm_start", "yes", "one of True, False"),
        ("init", "krr", INIT_MODELS),
        ("init", 3, INIT_MODELS),
    ],
    OK3Regressor: TREE_CASES
    + MAX_BINS_CASES
    + [
        ("max_splits", 0, INT_GE_1_OR_NONE),
        ("max_splits", -3, INT_GE_1_OR_NONE),
    ],
    OK3ForestRegressor: TREE_CASES
    + MAX_BINS_CASES
    + [
        ("max_splits", 0, INT_GE_1_OR_NONE),
        ("n_estimators", 0, INT_GE_1),
        ("n_estimators", None, INT_GE_1),
        ("bootstrap", 1, "one of True, False"),
        ("bootstrap", "yes", "one of True, False"),
        ("bootstrap", None, "one of True, False"),
        ("n_jobs", np.bool_(True), N_JOBS),
    ],
}
PARAM_CASES = [
    pytest.param(cls, name, value, described, id=f"{cls.__name__}-{name}-{value!r}")
    for cls, cases in CASES.items()
    for name, value, described in cases
]


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_every_parameter_has_a_bad_value_case(cls):
    covered = {name for name, _, _ in CASES[cls]}
    assert covered == set(cls().get_params())


@pytest.mark.parametrize(("cls", "name", "value", "described"), PARAM_CASES)
def test_bad_parameter_is_rejected_in_fit_with_one_message_format(cls, name, value, described):
    X, Y = make_regression(n=12)
    est = cls(**{name: value})  # __init__ only stores
    assert getattr(est, name) is value
    expected = (
        f"The {name!r} parameter of {cls.__name__} must be {described}. Got {value!r} instead."
    )
    with pytest.raises(InvalidParameterError, match=f"^{re.escape(expected)}$"):
        est.fit(X, Y)
    assert not hasattr(est, "output_space_")


def test_invalid_parameter_error_is_a_value_error():
    with pytest.raises(ValueError, match="'max_splits' parameter of OKBoostRegressor"):
        OKBoostRegressor(max_splits=0).fit(*make_regression(n=10))


@pytest.mark.parametrize(
    ("cls", "params"),
    [
        (OKBoostRegressor, {"learning_rate": 1, "subsample": 1, "max_features": 1.0, "n_jobs": -1}),
        (OKBoostRegressor, {"n_iter_no_change": 2, "tol": 0, "random_state": np.int64(3)}),
        (OK3Regressor, {"max_features": "log2", "max_depth": 2, "n_jobs": 2}),
        (OK3Regressor, {"random_state": np.random.default_rng(0), "splitter": "random"}),
        (OK3Regressor, {"random_state": np.random.RandomState(0), "max_features": "sqrt"}),
        (OK3ForestRegressor, {"bootstrap": False, "max_features": 2, "random_state": 2**32 - 1}),
        (
            OK3ForestRegressor,
            {"bootstrap": np.True_, "n_jobs": np.int64(-1), "splitter": np.str_("best")},
        ),
        (
            OK3Regressor,
            {"max_splits": np.int32(3), "max_depth": np.int64(2), "max_features": np.float32(0.5)},
        ),
    ],
)
def test_boundary_values_are_accepted(cls, params):
    X, Y = make_regression(n=30)
    est = cls(**{**SMALL[cls], **params}).fit(X, Y)
    assert est.predict(X).shape == Y.shape


# ---------------------------------------------------------------------- not fitted
PREDICTIONS = {
    "predict": lambda est, X: est.predict(X),
    "predict_weights": lambda est, X: est.predict_weights(X),
    "predict_kernel": lambda est, X: est.predict_kernel(X),
    "predict_kernel_X2": lambda est, X: est.predict_kernel(X, X),
    "predict_kernel_train": lambda est, X: est.predict_kernel_train(X),
    "predict_index": lambda est, X: est.predict_index(X),
    "predict_index_top_k": lambda est, X: est.predict_index(X, top_k=3),
    "feature_importances_": lambda est, X: est.feature_importances_,
    "err_phi": lambda est, X: metrics.err_phi(est, X, np.zeros((len(X), 3))),
    "err_y": lambda est, X: metrics.err_y(est, X, np.zeros((len(X), 3))),
}


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("method", sorted(PREDICTIONS))
def test_not_fitted_error_before_fit(cls, method):
    X = np.zeros((2, 4))
    message = f"This {cls.__name__} instance is not fitted yet"
    with pytest.raises(NotFittedError, match=message):
        PREDICTIONS[method](cls(), X)


def test_staged_loss_not_fitted():
    with pytest.raises(NotFittedError, match="OKBoostRegressor instance is not fitted yet"):
        OKBoostRegressor().staged_loss(np.zeros((2, 4)), np.zeros((2, 3)))


def test_not_fitted_error_is_an_attribute_error():
    assert issubclass(NotFittedError, AttributeError)
    assert not hasattr(OK3Regressor(), "feature_importances_")


def test_failed_fit_leaves_an_unfitted_estimator():
    """A fit that fails on its eval set must not leave a half-fitted estimator behind."""
    X, Y = make_regression(n=20)
    est = OKBoostRegressor(n_estimators=2)
    with pytest.raises(DataError):
        est.fit(X, Y, eval_set=(X[:5], Y[:4]))
    with pytest.raises(NotFittedError):
        est.predict(X)


# ---------------------------------------------------------------------- bad data
def _bad(value, index):
    def put(array):
        array = np.array(array, dtype=float)
        array[index] = value
        return array

    return put


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_inputs_and_outputs(cls, value):
    X, Y = make_regression(n=15)
    est = cls(**SMALL[cls])
    if np.isinf(value):
        with pytest.raises(
            DataError, match=re.escape("X contains infinity (first at index (3, 1))")
        ):
            est.fit(_bad(value, (3, 1))(X), Y)
    elif not est.accepts_missing:  # trees take NaN inputs: tests/okcore/trees/test_missing.py
        with pytest.raises(
            DataError, match=re.escape(f"X holds missing values (NaN): {cls.__name__} does not")
        ):
            est.fit(_bad(value, (3, 1))(X), Y)
    if not (np.isnan(value) and cls.supports_masked_outputs):  # NaN: an unknown entry there
        with pytest.raises(
            DataError, match=re.escape("Y contains NaN or infinity (first at index (4, 2))")
        ):
            est.fit(X, _bad(value, (4, 2))(Y))
    K = Y @ Y.T
    with pytest.raises(
        KernelError, match=re.escape("gram contains NaN or infinity (first at [2, 5])")
    ):
        est.fit(X, gram=_bad(value, (2, 5))(K))


def test_non_finite_prediction_inputs(data):
    X, Y = data
    est = OK3Regressor(max_splits=3).fit(X, Y)
    with pytest.raises(DataError, match=re.escape("X contains infinity (first at index (1, 0))")):
        est.predict(_bad(np.inf, (1, 0))(X[:3]))
    est.predict(_bad(np.nan, (1, 0))(X[:3]))  # a missing value: trees send it their way


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_wrong_dimensions(cls):
    X, Y = make_regression(n=15)
    est = cls(**SMALL[cls])
    with pytest.raises(DataError, match=re.escape("X must be a 2-d array: got shape (15,)")):
        est.fit(X[:, 0], Y)
    with pytest.raises(DataError, match=re.escape("X must be a 2-d array: got shape (15, 4, 1)")):
        est.fit(X[:, :, None], Y)
    with pytest.raises(DataError, match=re.escape("Y must be a 2-d array: got shape (15, 3, 1)")):
        est.fit(X, Y[:, :, None])
    with pytest.raises(KernelError, match=re.escape("gram must be square: got 15")):
        est.fit(X, gram=np.ones(15))
    with pytest.raises(DataError, match="X must be a numeric array"):
        est.fit([["a", "b"]] * 15, Y)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_one_sample_to_predict_is_refused_with_how_to_reshape(cls, data):
    X, Y = data
    est = cls(**SMALL[cls]).fit(X, Y)
    expected = (
        "X must be a 2-d array: got shape (4,). Reshape your data: X.reshape(-1, 1) if it "
        "has a single feature, X.reshape(1, -1) if it is a single sample"
    )
    with pytest.raises(DataError, match=f"^{re.escape(expected)}$"):
        est.predict(X[0])


@pytest.mark.filterwarnings("error::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("cls", ESTIMATORS)
def test_complex_data_is_refused_not_cast(cls, data):
    """A cast to float64 would drop the imaginary parts silently (numpy warns when one is
    made: a warning is an error here)."""
    X, Y = data
    est = cls(**SMALL[cls])
    message = "^Complex data not supported: {} holds complex numbers; pass real values"
    with pytest.raises(DataError, match=message.format("X")):
        est.fit(X + 1j, Y)
    with pytest.raises(DataError, match=message.format("X")):
        est.fit(sparse.csr_matrix(X + 1j), Y)
    with pytest.raises(DataError, match=message.format("Y")):
        est.fit(X, Y + 1j)
    with pytest.raises(KernelError, match=message.format("gram")):
        est.fit(X, gram=(Y @ Y.T).astype(complex))
    est.fit(X, Y)
    with pytest.raises(DataError, match=message.format("X")):
        est.predict(X + 1j)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_elements_that_are_no_numbers_raise_a_type_error(cls, data):
    """As numpy's own conversion does (TypeError), and a DataError for okcore's callers."""
    X, Y = data
    X = X.astype(object)
    X[0, 0] = {"a": 1}
    with pytest.raises(DataTypeError, match="^X must be a numeric array: float.. argument must"):
        cls(**SMALL[cls]).fit(X, Y)
    X[0, 0] = 0.5  # an object array of numbers is numbers
    assert cls(**SMALL[cls]).fit(X, Y).predict(X).shape == Y.shape


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_row_count_mismatch(cls):
    X, Y = make_regression(n=15)
    est = cls(**SMALL[cls])
    with pytest.raises(
        DataError, match="^X has 15 rows but Y describes 14 outputs; they must match$"
    ):
        est.fit(X, Y[:14])
    with pytest.raises(
        DataError, match="^X has 15 rows but Y describes 16 outputs; they must match$"
    ):
        est.fit(X, np.r_[Y, Y[:1]])
    K = Y @ Y.T
    with pytest.raises(
        DataError, match="^X has 14 rows but gram describes 15 outputs; they must match$"
    ):
        est.fit(X[:14], gram=K)
    with pytest.raises(DataError, match="^X has 14 rows but Y describes 15 outputs"):
        est.fit(X[:14], Y, kernel={"type": "rbf", "gamma": 1.0})


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_empty_inputs(cls):
    est = cls(**SMALL[cls])
    # okcore's words, with scikit-learn's pattern ("0 feature(s) (shape=(n, 0)) while ...")
    rows = (
        "X must have at least 1 row(s): got 0 sample(s) (shape=(0, 3)) "
        "while a minimum of 1 is required."
    )
    with pytest.raises(DataError, match=f"^{re.escape(rows)}$"):
        est.fit(np.zeros((0, 3)), np.zeros((0, 2)))
    for name, shapes in (("X", ((5, 0), (5, 2))), ("Y", ((5, 2), (5, 0)))):
        columns = (
            f"{name} must have at least one column: got 0 feature(s) (shape=(5, 0)) "
            "while a minimum of 1 is required."
        )
        with pytest.raises(DataError, match=f"^{re.escape(columns)}$"):
            est.fit(np.zeros(shapes[0]), np.zeros(shapes[1]))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_predict_with_wrong_number_of_features(cls, data):
    X, Y = data
    est = cls(**SMALL[cls]).fit(X, Y)
    expected = (
        f"^X has 3 features, but {cls.__name__} is expecting 4 features as input: "
        "it was fitted with 4 input columns$"
    )
    with pytest.raises(DataError, match=expected):
        est.score(X[:, :3], y=Y)
    for method in ("predict", "predict_weights", "predict_kernel", "predict_kernel_train"):
        with pytest.raises(DataError, match=expected):
            getattr(est, method)(X[:, :3])
    with pytest.raises(DataError, match=expected):
        est.predict_index(X[:, :3])
    with pytest.raises(DataError, match=expected):
        est.predict_kernel(X, X[:, :3])
    with pytest.raises(DataError, match=expected):
        metrics.err_phi(est, X[:, :3], Y)
    with pytest.raises(DataError, match=expected):
        metrics.err_y(est, X[:, :3], Y)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_outputs_given_twice_or_not_at_all(cls, data):
    X, Y = data
    est = cls(**SMALL[cls])
    with pytest.raises(
        DataError, match="pass either gram=... or outputs Y with a kernel, not both"
    ):
        est.fit(X, Y, gram=Y @ Y.T)
    with pytest.raises(
        DataError, match="pass either gram=... or outputs Y with a kernel, not both"
    ):
        est.fit(X, gram=Y @ Y.T, kernel={"type": "rbf", "gamma": 1.0})
    est.fit(X, gram=Y @ Y.T, kernel="precomputed")  # the gram's own kernel is fine
    with pytest.raises(DataError, match="^no outputs given: pass Y"):
        est.fit(X)
    with pytest.raises(DataError, match="the diffusion kernel takes no outputs Y"):
        est.fit(X, Y, kernel={"type": "diffusion", "edges": ring_edges(len(X))})
    with pytest.raises(KernelError, match="the 'precomputed' kernel takes no outputs Y"):
        est.fit(X, Y, kernel="precomputed")
    with pytest.raises(KernelError, match="unknown kernel type 'cosine'"):
        est.fit(X, Y, kernel="cosine")


@pytest.mark.parametrize("cls", [OKBoostRegressor, OK3ForestRegressor])
@pytest.mark.parametrize("callback", [1, "print", [print]])
def test_callback_must_be_callable(cls, callback, data):
    est = cls(**SMALL[cls])
    with pytest.raises(DataError, match=re.escape(f"callback must be callable: got {callback!r}")):
        est.fit(*data, callback=callback)
    assert not hasattr(est, "output_space_")


EVAL_SET_SHAPE = re.escape("eval_set must be (X_val, Y_val) or (X_val, K_val_train, k_val_diag)")
EVAL_SET_ERRORS = [
    ("not a tuple", lambda X, Y: X, EVAL_SET_SHAPE),
    ("one item", lambda X, Y: (X,), EVAL_SET_SHAPE),
    ("four items", lambda X, Y: (X, Y, Y, Y), EVAL_SET_SHAPE),
    (
        "features",
        lambda X, Y: (X[:, :2], Y),
        "^eval_set X has 2 features, but OKBoostRegressor is expecting 4 features as input: "
        "it was fitted with 4 input columns$",
    ),
    ("rows", lambda X, Y: (X[:5], Y[:6]), "^X has 5 rows but the true outputs describe 6$"),
    (
        "output width",
        lambda X, Y: (X, Y[:, :2]),
        "^eval_set Y has 2 columns but the outputs have 3$",
    ),
    ("nan", lambda X, Y: (X, _bad(np.nan, (0, 0))(Y)), "^eval_set Y contains NaN or infinity"),
    (
        "gram width",
        lambda X, Y: (X, np.ones((len(X), 3)), np.ones(len(X))),
        "^eval_set K_val_train must have one column per training output",
    ),
    (
        "diag length",
        lambda X, Y: (X, Y @ Y.T, np.ones(3)),
        "^gram_diag has 3 values but gram_cross has 20 rows$",
    ),
    ("diag missing", lambda X, Y: (X, Y @ Y.T, None), "^gram_diag is required$"),
]


@pytest.mark.parametrize(
    ("make", "message"), [pytest.param(m, msg, id=i) for i, m, msg in EVAL_SET_ERRORS]
)
def test_malformed_eval_set(make, message):
    X, Y = make_regression(n=20)
    est = OKBoostRegressor(n_estimators=2)
    with pytest.raises(DataError, match=message):
        est.fit(X, Y, eval_set=make(X, Y))


def test_true_outputs_of_a_score_are_named_as_given_not_as_candidates():
    """The truth of a score or a loss went through the candidates' checks and their name:
    NaN in Y (or an eval_set's Y, above) was 'candidates contains NaN'."""
    X, Y = make_regression(n=20)
    est = OKBoostRegressor(n_estimators=2).fit(X, Y)
    with pytest.raises(DataError, match="^Y contains NaN or infinity"):
        est.score(X, _bad(np.nan, (0, 0))(Y))
    with pytest.raises(DataError, match="^Y has 2 columns but the outputs have 3$"):
        est.staged_loss(X, Y[:, :2])
    with pytest.raises(DataError, match="^gram_cross must have one column per training output"):
        est.staged_loss(X, gram_cross=np.ones((20, 3)), gram_diag=np.ones(20))


@pytest.mark.parametrize("top_k", [0, -1, 1.5, True, "2", None])
def test_invalid_top_k(top_k, data):
    X, Y = data
    est = OK3Regressor(max_splits=3).fit(X, Y)
    with pytest.raises(DataError, match=re.escape(f"top_k must be an int >= 1: got {top_k!r}")):
        est.predict_index(X[:2], top_k=top_k)


def test_top_k_accepts_numpy_integers(data):
    X, Y = data
    est = OK3Regressor(max_splits=3).fit(X, Y)
    indices, scores = est.predict_index(X[:2], top_k=np.int64(2))
    assert indices.shape == scores.shape == (2, 2)


def test_candidate_arguments_are_checked(data):
    X, Y = data
    est = OK3Regressor(max_splits=3).fit(X, Y, kernel={"type": "rbf", "gamma": 0.5})
    K = est.output_space_.kernel.gram(Y[:4], Y)
    with pytest.raises(DataError, match="pass candidates or candidate_gram, not both"):
        est.predict_index(X[:2], Y[:4], candidate_gram=K, candidate_diag=np.ones(4))
    with pytest.raises(DataError, match="^candidate_diag is required$"):
        est.predict_index(X[:2], candidate_gram=K)
    with pytest.raises(
        DataError, match="^candidate_diag has 3 values but candidate_gram has 4 rows$"
    ):
        est.predict_index(X[:2], candidate_gram=K, candidate_diag=np.ones(3))
    with pytest.raises(
        DataError,
        match=re.escape(
            "candidate_gram must have one column per training output (40): got shape (4, 39)"
        ),
    ):
        est.predict_index(X[:2], candidate_gram=K[:, :39], candidate_diag=np.ones(4))
    with pytest.raises(DataError, match="^candidates have 2 columns but the outputs have 3$"):
        est.predict_index(X[:2], Y[:4, :2])
    # k(c, c) is a squared norm (a negative one was once decoded into negative distances)
    with pytest.raises(
        DataError,
        match=re.escape("candidate_diag[2] = -1 is negative: k(c, c) is a squared norm"),
    ):
        est.predict_index(X[:2], candidate_gram=K, candidate_diag=np.array([1, 1, -1.0, 1]))
    rounding = np.array([1.0, 1.0, -1e-17, 1.0])  # a zero norm computed with rounding error
    assert est.predict_index(X[:2], candidate_gram=K, candidate_diag=rounding)[0].shape == (2, 1)


def test_gram_only_space_cannot_embed_output_vectors(data):
    X, Y = data
    est = OK3Regressor(max_splits=3).fit(X, gram=Y @ Y.T)
    with pytest.raises(DataError, match="a 'precomputed' output space cannot embed output vectors"):
        est.predict_index(X[:2], Y[:3])
    with pytest.raises(DataError, match="a 'precomputed' output space cannot embed output vectors"):
        metrics.err_phi(est, X, Y)


# ---------------------------------------------------------------------- estimator protocol
@pytest.mark.parametrize("cls", ESTIMATORS)
def test_get_params_lists_every_keyword_with_its_default(cls):
    import inspect

    signature = inspect.signature(cls.__init__).parameters
    params = cls().get_params()
    assert set(params) == set(signature) - {"self"}
    assert all(signature[name].kind is inspect.Parameter.KEYWORD_ONLY for name in params)
    assert params == {name: signature[name].default for name in params}
    assert cls().get_params(deep=False) == params


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_set_params(cls):
    est = cls()
    assert est.set_params(max_depth=3, random_state=7) is est
    assert est.get_params()["max_depth"] == 3 and est.random_state == 7
    with pytest.raises(ValueError, match=f"Invalid parameter 'depth' for estimator {cls.__name__}"):
        est.set_params(depth=3)
    assert not hasattr(est, "depth")


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_clone_gives_an_unfitted_estimator_with_equal_params(cls, data):
    est = cls(**SMALL[cls], min_samples_leaf=2, random_state=3).fit(*data)
    copy = clone(est)
    assert type(copy) is cls and copy is not est
    assert copy.get_params() == est.get_params()
    assert not hasattr(copy, "output_space_") and not hasattr(copy, "ensemble_")
    with pytest.raises(NotFittedError):
        copy.predict(data[0])
    np.testing.assert_array_equal(copy.fit(*data).predict(data[0]), est.predict(data[0]))


def test_repr_shows_changed_parameters_only():
    assert repr(OKBoostRegressor()) == "OKBoostRegressor()"
    assert repr(OK3Regressor()) == "OK3Regressor()"
    assert repr(OK3ForestRegressor()) == "OK3ForestRegressor()"
    assert (
        repr(OKBoostRegressor(n_estimators=5, learning_rate=0.05, splitter="random"))
        == "OKBoostRegressor(learning_rate=0.05, n_estimators=5, splitter='random')"
    )
    assert repr(OK3Regressor(max_splits=4)) == "OK3Regressor(max_splits=4)"
    assert repr(OK3ForestRegressor(bootstrap=False)) == "OK3ForestRegressor(bootstrap=False)"
    # equal values of another type are still a change worth showing
    assert repr(OK3Regressor(max_features=None)) == "OK3Regressor(max_features=None)"


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_refit_forgets_the_previous_fit(cls):
    X, Y = make_regression(n=30)
    X2, Y2 = make_regression(n=25, seed=3)
    est = cls(**SMALL[cls], random_state=0).fit(X, Y)
    est.predict_weights(X[:2])  # fills the W^F cache of the first fit
    est.fit(X2, Y2, kernel={"type": "rbf", "gamma": 0.5})
    fresh = cls(**SMALL[cls], random_state=0).fit(X2, Y2, kernel={"type": "rbf", "gamma": 0.5})
    for method in ("predict_weights", "predict_kernel", "predict_kernel_train", "predict"):
        np.testing.assert_array_equal(getattr(est, method)(X[:4]), getattr(fresh, method)(X[:4]))
    assert est.n_train_ == 25 and est.predict_weights(X[:4]).shape == (4, 25)


def test_failed_refit_leaves_an_unfitted_estimator():
    """Not the old trees with the new data's shapes (predict would read past the inputs)."""
    X, Y = make_regression(n=30)
    X2, Y2 = make_regression(n=20, p=3, seed=3)
    est = OKBoostRegressor(n_estimators=3, max_splits=3).fit(X, Y)
    with pytest.raises(DataError, match="X has 3 rows but the true outputs describe 2"):
        est.fit(X2, Y2, eval_set=(X2[:3], Y2[:2]))
    for data in (X, X2):
        with pytest.raises(NotFittedError):
            est.predict(data)


def test_exception_hierarchy():
    from okcore import OKCoreError, PersistenceError

    for error in (InvalidParameterError, DataError, KernelError, NotFittedError, PersistenceError):
        assert issubclass(error, OKCoreError) and issubclass(error, Exception)
    assert issubclass(InvalidParameterError, ValueError) and issubclass(DataError, ValueError)
    assert issubclass(KernelError, DataError)
    assert not issubclass(PersistenceError, ValueError)
    # scikit-learn's NotFittedError bases, and scikit-learn's class itself when installed
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)
    assert issubclass(NotFittedError, sklearn.exceptions.NotFittedError)
    assert issubclass(DataTypeError, DataError) and issubclass(DataTypeError, TypeError)
