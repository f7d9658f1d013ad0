"""OKBoostRegressor(warm_start=True): a continued fit equals the direct fit with the larger
n_estimators bit for bit (trees, training leaves, counts, W^F, losses, early stopping), also
after saving and loading, and what cannot be continued is refused with a clear error."""

from __future__ import annotations

import json

import numpy as np
import pytest
from okdata import make_regression, rbf_gram
from scipy import sparse

from okcore import (
    DataError,
    FitProgress,
    InvalidParameterError,
    OKBoostRegressor,
    PersistenceError,
    load,
    save,
)
from okcore.trees.ensemble import NODE_FIELDS

SEED = 4
STEPS = (3, 7, 8, 20)  # several continuations, one of a single round


@pytest.fixture(scope="module")
def data():
    X, Y = make_regression(n=120, p=5, d=3, seed=20, noise=0.3)
    Xv, Yv = make_regression(n=30, p=5, d=3, seed=21, noise=0.3)
    return X, Y, Xv, Yv


def assert_same_model(a: OKBoostRegressor, b: OKBoostRegressor, Xq: np.ndarray) -> None:
    """Every fitted array and prediction equal, bit for bit."""
    ea, eb = a.ensemble_, b.ensemble_
    for name in (*NODE_FIELDS, "value", "node_offset", "leaf_offset", "init", "train_leaf"):
        assert np.array_equal(getattr(ea, name), getattr(eb, name)), name
        assert getattr(ea, name).dtype == getattr(eb, name).dtype, name
    for name in ("train_count", "train_weight", "init_weight"):
        x, y = getattr(ea, name), getattr(eb, name)
        assert (x is None and y is None) or np.array_equal(x, y), name
    assert a.n_estimators_ == b.n_estimators_
    assert np.array_equal(a.train_indices_, b.train_indices_)
    assert np.array_equal(a.train_loss_, b.train_loss_)
    if b.validation_loss_ is None:
        assert a.validation_loss_ is None
    else:
        assert np.array_equal(a.validation_loss_, b.validation_loss_)
    assert np.array_equal(a.predict_weights(Xq), b.predict_weights(Xq))
    assert np.array_equal(a.predict_features(Xq), b.predict_features(Xq))


SETTINGS = {
    "default": {},
    "subsample": {"subsample": 0.6},
    "sketch and histograms": {"sketch_dim": 2, "max_bins": 16},
    "sketch, subsample and feature draws": {
        "sketch_dim": 2,
        "max_bins": 16,
        "subsample": 0.7,
        "colsample_bytree": 0.6,
        "max_features": 0.5,
    },
    "extra-trees": {"splitter": "random"},
    "huber": {"loss": "huber", "subsample": 0.8},
    "absolute": {"loss": "absolute"},
    "l2 and oblivious": {"tree_type": "oblivious", "max_depth": 3, "l2_regularization": 2.0},
    "early stopping on held-out rows": {"early_stopping": True, "n_iter_no_change": 30},
}


@pytest.mark.parametrize("setting", SETTINGS)
def test_continued_fits_equal_direct_fits(data, setting):
    X, Y, Xv, _ = data
    params = {"max_splits": 4, "learning_rate": 0.3, "random_state": SEED, **SETTINGS[setting]}
    warm = OKBoostRegressor(n_estimators=STEPS[0], warm_start=True, **params).fit(X, Y)
    for m in STEPS[1:]:
        warm.set_params(n_estimators=m).fit(X, Y)
        direct = OKBoostRegressor(n_estimators=m, **params).fit(X, Y)
        assert_same_model(warm, direct, Xv)


def test_continued_fit_with_an_eval_set_and_a_gram(data):
    X, Y, Xv, Yv = data
    K, Kv = rbf_gram(Y, Y, 0.5), rbf_gram(Yv, Y, 0.5)
    eval_set = (Xv, Kv, np.ones(len(Xv)))
    params = {"max_splits": 3, "learning_rate": 0.5, "n_iter_no_change": 50, "random_state": 1}
    warm = OKBoostRegressor(n_estimators=4, warm_start=True, **params)
    warm.fit(X, gram=K, eval_set=eval_set)
    warm.set_params(n_estimators=15).fit(X, gram=K.copy(), eval_set=eval_set)
    direct = OKBoostRegressor(n_estimators=15, **params).fit(X, gram=K, eval_set=eval_set)
    assert_same_model(warm, direct, Xv)


def test_sparse_inputs_continue(data):
    X, Y, Xv, _ = data
    Xs = sparse.csr_matrix(np.where(X > 0.5, X, 0.0))
    warm = OKBoostRegressor(n_estimators=3, warm_start=True, random_state=2).fit(Xs, Y)
    warm.set_params(n_estimators=9).fit(Xs, Y)
    assert_same_model(warm, OKBoostRegressor(n_estimators=9, random_state=2).fit(Xs, Y), Xv)


@pytest.fixture(scope="module")
def overfitting():
    """Much noise and a fast rate: the validation loss stops improving within a few rounds."""
    return make_regression(n=80, p=4, d=2, seed=22, noise=2.0)


def test_a_fit_that_early_stopping_ended_adds_nothing(overfitting):
    """As a direct fit with the larger M stops at the same round, the continued one grows
    nothing; the kept trees are the best round's."""
    X, Y = overfitting
    params = {"learning_rate": 0.9, "max_splits": 8, "n_iter_no_change": 2, "random_state": 0}
    warm = OKBoostRegressor(n_estimators=60, warm_start=True, **params).fit(X, Y)
    rounds = len(warm.train_loss_)
    assert rounds < 60  # it stopped
    trees = []
    warm.set_params(n_estimators=200).fit(X, Y, callback=trees.append)
    assert trees == []  # no tree grown
    assert len(warm.train_loss_) == rounds
    assert_same_model(warm, OKBoostRegressor(n_estimators=200, **params).fit(X, Y), X[:10])


def test_continuing_past_the_best_round_keeps_the_trees_after_it(overfitting):
    """A fit that ran out of rounds before its patience keeps only the best round's trees,
    but continues from its last round, as the longer direct fit does."""
    X, Y = overfitting
    params = {"learning_rate": 0.9, "max_splits": 8, "n_iter_no_change": 2, "random_state": 0}
    stop = len(OKBoostRegressor(n_estimators=60, **params).fit(X, Y).train_loss_)
    warm = OKBoostRegressor(n_estimators=stop - 1, warm_start=True, **params).fit(X, Y)
    assert warm.n_estimators_ < stop - 1  # trees after the best round dropped from the model
    warm.set_params(n_estimators=60).fit(X, Y)
    assert_same_model(warm, OKBoostRegressor(n_estimators=60, **params).fit(X, Y), X[:10])


def test_progress_counts_the_added_rounds(data):
    X, Y, _, _ = data
    warm = OKBoostRegressor(n_estimators=3, warm_start=True, random_state=0).fit(X, Y)
    heard: list[FitProgress] = []
    warm.set_params(n_estimators=6).fit(X, Y, callback=heard.append)
    trees = [(p.done, p.total) for p in heard if p.phase == "trees"]
    assert trees == [(4, 6), (5, 6), (6, 6)]


def test_equal_n_estimators_adds_nothing_and_n_jobs_may_change(data):
    X, Y, Xv, _ = data
    warm = OKBoostRegressor(n_estimators=5, warm_start=True, random_state=0).fit(X, Y)
    before = warm.ensemble_
    warm.set_params(n_jobs=2).fit(X, Y)
    assert warm.ensemble_.n_trees == 5
    assert np.array_equal(warm.ensemble_.value, before.value)
    warm.set_params(n_estimators=8).fit(X, Y)
    assert_same_model(warm, OKBoostRegressor(n_estimators=8, random_state=0).fit(X, Y), Xv)


def test_without_warm_start_every_fit_starts_over(data):
    X, Y, Xv, _ = data
    est = OKBoostRegressor(n_estimators=5, random_state=0).fit(X, Y)
    est.set_params(n_estimators=3).fit(X, Y)
    assert est.n_estimators_ == 3
    assert_same_model(est, OKBoostRegressor(n_estimators=3, random_state=0).fit(X, Y), Xv)


def test_a_smaller_n_estimators_is_refused(data):
    X, Y, _, _ = data
    warm = OKBoostRegressor(n_estimators=6, warm_start=True, random_state=0).fit(X, Y)
    with pytest.raises(InvalidParameterError, match="at least the 6 rounds already fitted"):
        warm.set_params(n_estimators=4).fit(X, Y)
    assert warm.ensemble_.n_trees == 6  # the fitted model is kept


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        ({"learning_rate": 0.2}, "learning_rate=0.1 -> 0.2"),
        ({"max_splits": 3}, "max_splits=None -> 3"),
        ({"random_state": 1}, "random_state=0 -> 1"),
        ({"subsample": 0.5}, "subsample=1.0 -> 0.5"),
    ],
)
def test_changed_parameters_are_refused(data, change, shown):
    X, Y, _, _ = data
    warm = OKBoostRegressor(n_estimators=3, warm_start=True, random_state=0).fit(X, Y)
    with pytest.raises(InvalidParameterError, match=f"Changed: {shown}"):
        warm.set_params(n_estimators=6, **change).fit(X, Y)
    assert warm.ensemble_.n_trees == 3


def test_other_data_is_refused(data):
    X, Y, Xv, Yv = data
    warm = OKBoostRegressor(n_estimators=3, warm_start=True, random_state=0).fit(X, Y)
    warm.set_params(n_estimators=6)
    Y2 = Y.copy()
    Y2[5, 1] += 1e-9
    X2 = X.copy()
    X2[0, 0] = np.nextafter(X2[0, 0], 1.0)
    for args, kwargs in [
        ((X2, Y), {}),
        ((X, Y2), {}),
        ((X[:-1], Y[:-1]), {}),
        ((X, Y), {"kernel": "rbf"}),
        ((X, Y), {"eval_set": (Xv, Yv)}),
        ((X,), {"gram": Y @ Y.T}),
    ]:
        with pytest.raises(DataError, match="on the data it was fitted on"):
            warm.fit(*args, **kwargs)
    assert warm.ensemble_.n_trees == 3
    warm.fit(X.copy(), Y.copy())  # equal data in other arrays
    assert warm.ensemble_.n_trees == 6


def reloaded(est: OKBoostRegressor, path) -> OKBoostRegressor:
    """``est`` saved to ``path`` and loaded back."""
    return load(save(est, path))


@pytest.mark.parametrize("setting", SETTINGS)
def test_loaded_models_continue_as_direct_fits(data, setting, tmp_path):
    """A model loaded from disk continues bit for bit: its loop is rebuilt from its trees
    and the data given to fit (F replayed, the generator's saved state), saved and loaded
    again between continuations."""
    X, Y, Xv, _ = data
    params = {"max_splits": 4, "learning_rate": 0.3, "random_state": SEED, **SETTINGS[setting]}
    est = OKBoostRegressor(n_estimators=STEPS[0], **params).fit(X, Y)
    for i, m in enumerate(STEPS[1:]):
        est = reloaded(est, tmp_path / f"model{i}")
        est.set_params(n_estimators=m, warm_start=True).fit(X, Y)
        assert_same_model(est, OKBoostRegressor(n_estimators=m, **params).fit(X, Y), Xv)


def test_a_loaded_model_with_an_eval_set_and_a_gram_continues(data, tmp_path):
    X, Y, Xv, Yv = data
    K, Kv = rbf_gram(Y, Y, 0.5), rbf_gram(Yv, Y, 0.5)
    eval_set = (Xv, Kv, np.ones(len(Xv)))
    params = {"max_splits": 3, "learning_rate": 0.5, "n_iter_no_change": 50, "random_state": 1}
    fitted = OKBoostRegressor(n_estimators=4, **params).fit(X, gram=K, eval_set=eval_set)
    loaded = reloaded(fitted, tmp_path / "model")
    loaded.set_params(n_estimators=15, warm_start=True).fit(X, gram=K, eval_set=eval_set)
    direct = OKBoostRegressor(n_estimators=15, **params).fit(X, gram=K, eval_set=eval_set)
    assert_same_model(loaded, direct, Xv)


@pytest.mark.parametrize("factor", [{}, {"n_landmarks": 40}, {"factor_rank": 5}])
def test_held_out_rows_of_a_loaded_model_are_embedded_in_the_rebuilt_factor(data, factor, tmp_path):
    """Early stopping on held-out rows with an RBF output kernel: the held-out rows' outputs
    are not saved, so their factor coordinates come from the output factor rebuilt from all
    the given outputs (exact, Nystrom with seeded landmarks, truncated), as the fit built it."""
    X, Y, Xv, _ = data
    kernel = {"type": "rbf", "gamma": 0.5}
    params = {"early_stopping": True, "n_iter_no_change": 50, "random_state": 4, **factor}
    fitted = OKBoostRegressor(n_estimators=4, max_splits=4, **params).fit(X, Y, kernel=kernel)
    loaded = reloaded(fitted, tmp_path / "m")
    loaded.set_params(n_estimators=10, warm_start=True).fit(X, Y, kernel=kernel)
    direct = OKBoostRegressor(n_estimators=10, max_splits=4, **params).fit(X, Y, kernel=kernel)
    assert_same_model(loaded, direct, Xv)


def test_a_loaded_model_on_sparse_inputs_continues(data, tmp_path):
    X, Y, Xv, _ = data
    Xs = sparse.csr_matrix(np.where(X > 0.5, X, 0.0))
    loaded = reloaded(OKBoostRegressor(n_estimators=3, random_state=2).fit(Xs, Y), tmp_path / "m")
    loaded.set_params(n_estimators=9, warm_start=True).fit(Xs, Y)
    assert_same_model(loaded, OKBoostRegressor(n_estimators=9, random_state=2).fit(Xs, Y), Xv)


def test_a_loaded_model_that_early_stopping_ended_adds_nothing(overfitting, tmp_path):
    X, Y = overfitting
    params = {"learning_rate": 0.9, "max_splits": 8, "n_iter_no_change": 2, "random_state": 0}
    loaded = reloaded(OKBoostRegressor(n_estimators=60, **params).fit(X, Y), tmp_path / "m")
    trees: list[FitProgress] = []
    loaded.set_params(n_estimators=200, warm_start=True).fit(X, Y, callback=trees.append)
    assert trees == []
    assert_same_model(loaded, OKBoostRegressor(n_estimators=200, **params).fit(X, Y), X[:10])


def test_a_loaded_model_regrows_the_rounds_after_its_best_one(overfitting, tmp_path):
    """Saved models keep the trees up to the best round only: a continuation grows the
    dropped rounds again (the same trees: the generator is saved at the best round) and
    goes on, as the longer direct fit."""
    X, Y = overfitting
    params = {"learning_rate": 0.9, "max_splits": 8, "n_iter_no_change": 2, "random_state": 0}
    stop = len(OKBoostRegressor(n_estimators=60, **params).fit(X, Y).train_loss_)
    fitted = OKBoostRegressor(n_estimators=stop - 1, **params).fit(X, Y)
    assert fitted.n_estimators_ < stop - 1  # trees dropped
    loaded = reloaded(fitted, tmp_path / "m")
    loaded.set_params(n_estimators=60, warm_start=True).fit(X, Y)
    assert_same_model(loaded, OKBoostRegressor(n_estimators=60, **params).fit(X, Y), X[:10])


def test_a_loaded_model_continues_the_draws_of_its_generator(data, tmp_path):
    """random_state a Generator (saved as None): the loaded model continues its saved
    state, as the fitted estimator would have."""
    X, Y, Xv, _ = data
    params = {"subsample": 0.6, "sketch_dim": 2, "max_bins": 16}
    generator = np.random.default_rng(5)
    fitted = OKBoostRegressor(n_estimators=4, random_state=generator, **params).fit(X, Y)
    loaded = reloaded(reloaded(fitted, tmp_path / "m"), tmp_path / "again")  # record kept
    assert loaded.random_state is None
    loaded.set_params(n_estimators=9, warm_start=True).fit(X, Y)
    direct = OKBoostRegressor(n_estimators=9, random_state=np.random.default_rng(5), **params)
    assert_same_model(loaded, direct.fit(X, Y), Xv)


def test_a_loaded_model_refuses_other_data_and_parameters(data, tmp_path):
    X, Y, _, _ = data
    loaded = reloaded(OKBoostRegressor(n_estimators=3, random_state=0).fit(X, Y), tmp_path / "m")
    loaded.set_params(n_estimators=6, warm_start=True)
    with pytest.raises(DataError, match="on the data it was fitted on"):
        loaded.fit(X, Y + 1e-9)
    with pytest.raises(InvalidParameterError, match="Changed: learning_rate=0.1 -> 0.2"):
        loaded.set_params(learning_rate=0.2).fit(X, Y)
    assert loaded.ensemble_.n_trees == 3
    loaded.set_params(learning_rate=0.1).fit(X, Y)
    assert loaded.ensemble_.n_trees == 6


def test_a_replay_that_does_not_reproduce_the_recorded_losses_is_refused(data, tmp_path):
    """The rebuilt loop must re-score the losses the model recorded bit for bit (here one
    differs in its last bit, as if another numeric library had saved it)."""
    X, Y, _, _ = data
    loaded = reloaded(OKBoostRegressor(n_estimators=3, random_state=0).fit(X, Y), tmp_path / "m")
    loaded.train_loss_ = loaded.train_loss_.copy()
    loaded.train_loss_[1] = np.nextafter(loaded.train_loss_[1], np.inf)
    with pytest.raises(DataError, match="do not reproduce the losses it recorded"):
        loaded.set_params(n_estimators=6, warm_start=True).fit(X, Y)


def drop_record(path) -> None:
    """The archive as okcore wrote it before the warm-start record existed."""
    manifest = json.loads((path / "manifest.json").read_text())
    del manifest["warm_start"]
    (path / "manifest.json").write_text(json.dumps(manifest))


def test_an_archive_without_the_record_loads_and_refuses_warm_start(data, tmp_path):
    """Older archives still load and predict; continuing one says what to do."""
    X, Y, Xv, _ = data
    fitted = OKBoostRegressor(n_estimators=3, random_state=0).fit(X, Y)
    path = save(fitted, tmp_path / "model")
    drop_record(path)
    loaded = load(path)
    assert np.array_equal(loaded.predict(Xv), fitted.predict(Xv))
    loaded.set_params(n_estimators=6, warm_start=True)
    with pytest.raises(DataError, match="saved without what continuing needs.*warm_start=False"):
        loaded.fit(X, Y)
    assert loaded.ensemble_.n_trees == 3
    loaded.set_params(warm_start=False).fit(X, Y)
    assert_same_model(loaded, OKBoostRegressor(n_estimators=6, random_state=0).fit(X, Y), Xv)


def test_a_generator_whose_state_cannot_be_saved_is_refused_after_loading(data, tmp_path):
    X, Y, _, _ = data
    generator = np.random.Generator(np.random.MT19937(3))
    fitted = OKBoostRegressor(n_estimators=3, random_state=generator, subsample=0.5).fit(X, Y)
    loaded = reloaded(fitted, tmp_path / "m")
    with pytest.raises(DataError, match="Generator whose state a saved model cannot hold"):
        loaded.set_params(n_estimators=6, warm_start=True).fit(X, Y)


def test_a_loaded_model_grown_with_another_plan_is_refused(data, tmp_path):
    """A model saved by an okcore that resolved its defaults to other tree sizes (here: the
    depth of its oblivious trees) is not continued with this okcore's sizes."""
    X, Y, _, _ = data
    path = save(OKBoostRegressor(n_estimators=3, random_state=0).fit(X, Y), tmp_path / "m")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["warm_start"]["plan"]["tree_type"] == "oblivious"
    manifest["warm_start"]["plan"]["max_depth"] += 1
    (path / "manifest.json").write_text(json.dumps(manifest))
    loaded = load(path)
    with pytest.raises(DataError, match="resolves its parameters to other tree sizes"):
        loaded.set_params(n_estimators=6, warm_start=True).fit(X, Y)


@pytest.mark.parametrize(
    "record",
    [
        "x",
        {"fingerprint": "0" * 31, "generator": None},
        {"fingerprint": "0" * 32},
        {"fingerprint": "0" * 32, "generator": {"bit_generator": "MT19937"}},
        {
            "fingerprint": "0" * 32,
            "generator": {
                "bit_generator": "PCG64",
                "state": {"state": 1 << 128, "inc": 1},
                "has_uint32": 0,
                "uinteger": 0,
            },
        },
    ],
)
def test_a_malformed_record_fails_to_load(data, tmp_path, record):
    X, Y, _, _ = data
    path = save(OKBoostRegressor(n_estimators=2, random_state=0).fit(X, Y), tmp_path / "m")
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["warm_start"] = record
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(PersistenceError, match="inconsistent"):
        load(path)


def test_warm_start_is_validated(data):
    X, Y, _, _ = data
    with pytest.raises(InvalidParameterError, match="'warm_start'"):
        OKBoostRegressor(warm_start="yes").fit(X, Y)


def test_a_generator_random_state_continues_its_own_draws(data):
    """The continued loop draws what the longer loop would have drawn next, whatever the
    caller does with the Generator given as random_state meanwhile."""
    X, Y, Xv, _ = data
    params = {"subsample": 0.6, "sketch_dim": 2, "max_bins": 16}
    generator = np.random.default_rng(5)
    warm = OKBoostRegressor(n_estimators=4, warm_start=True, random_state=generator, **params)
    warm.fit(X, Y)
    generator.random(10)  # the caller draws from it
    warm.set_params(n_estimators=9).fit(X, Y)
    direct = OKBoostRegressor(n_estimators=9, random_state=np.random.default_rng(5), **params)
    assert_same_model(warm, direct.fit(X, Y), Xv)
