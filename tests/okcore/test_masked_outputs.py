"""Partly known vector outputs (NaN entries) and output column weights in OKBoost: the
masked squared loss on the weighted trees' per-entry path (okcore.trees.weighted).

Inputs take few distinct values (multiples of 1/8) so that every fit bins them alike."""

import itertools

import numpy as np
import pytest

from okcore import OKBoostRegressor
from okcore.exceptions import DataError, InvalidParameterError
from okcore.trees.binning import bin_inputs
from okcore.trees.builder import TreeParams
from okcore.trees.weighted import build_weighted_tree

KW = dict(n_estimators=12, learning_rate=0.3, tree_type="best-first", max_splits=5,
          max_bins=255, early_stopping=False, l2_regularization=0.5)  # fmt: skip


def data(seed, n=150, p=3, d=2):
    rng = np.random.default_rng(seed)
    X = np.round(rng.random((n, p)) * 8) / 8
    Y = np.c_[np.sin(3 * X[:, 0]) + X[:, 1], X[:, 2] - X[:, 0]][:, :d]
    return X, Y + 0.1 * rng.standard_normal((n, d)), rng


def test_one_masked_column_is_the_fit_on_its_known_rows():
    X, Y, rng = data(0, d=1)
    hidden = rng.random(len(X)) < 0.3
    Ym = Y.copy()
    Ym[hidden] = np.nan
    masked = OKBoostRegressor(**KW).fit(X, Ym)
    weighted = OKBoostRegressor(**KW).fit(X, Y, sample_weight=(~hidden).astype(float))
    np.testing.assert_allclose(masked.predict(X), weighted.predict(X), rtol=1e-9, atol=1e-12)
    dropped = OKBoostRegressor(**KW).fit(X[~hidden], Y[~hidden])
    np.testing.assert_allclose(masked.predict(X), dropped.predict(X), rtol=1e-9, atol=1e-12)


def brute_force_stump(X, Y, H, l2):
    """The stump minimising sum_ic h_ic (y_ic - v_c(leaf))^2 + lambda sum ||v||^2, its leaf
    values per column sum h y / (sum h + lambda), over every (feature, midpoint)."""

    def leaf(rows):
        G, Hs = (H[rows] * Y[rows]).sum(0), H[rows].sum(0)
        v = np.where(Hs + l2 > 0, G / np.where(Hs + l2 > 0, Hs + l2, 1), 0.0)
        return v, float((H[rows] * (Y[rows] - v) ** 2).sum() + l2 * v @ v)

    best = None
    for f in range(X.shape[1]):
        values = np.unique(X[H.max(1) > 0, f])
        for a, b in itertools.pairwise(values):
            go = X[:, f] <= (a + b) / 2
            (vl, ol), (vr, o_r) = leaf(go & (H.max(1) > 0)), leaf(~go & (H.max(1) > 0))
            if best is None or ol + o_r < best[0] - 1e-12:
                best = (ol + o_r, f, (a + b) / 2, np.vstack([vl, vr]))
    return best


@pytest.mark.parametrize("l2", [0.0, 1.0])
def test_two_masked_columns_stump_is_the_brute_force_per_column_reference(l2):
    X, Y, rng = data(1, n=60)
    H = (rng.random(Y.shape) > 0.3) * np.array([1.0, 2.5])  # masks and output weights
    params = TreeParams(splitter="best", max_splits=1, max_features=3, leaf_order="variance",
                        min_samples_leaf=1, max_depth=None, l2_regularization=l2)  # fmt: skip
    tree = build_weighted_tree(bin_inputs(X, 255), Y * (H > 0), H, params, rng)
    _, f, threshold, values = brute_force_stump(X, Y, H, l2)
    assert tree["feature"][0] == f and tree["threshold"][0] == threshold
    np.testing.assert_allclose(tree["value"], values, rtol=1e-12)


def test_output_weights_leave_a_column_of_weight_zero_out():
    X, Y, _ = data(2)
    both = OKBoostRegressor(**KW).fit(X, Y, output_weight=[1.0, 0.0])
    first = OKBoostRegressor(**KW).fit(X, Y[:, :1])
    np.testing.assert_allclose(both.predict(X)[:, 0], first.predict(X)[:, 0], rtol=1e-9)
    np.testing.assert_array_equal(both.predict(X)[:, 1], 0.0)


def test_masked_fits_learn_from_the_other_column_and_refuse_whole_output_answers():
    X, Y, rng = data(3)
    Ym = Y.copy()
    Ym[rng.random(Y.shape) < 0.3] = np.nan
    est = OKBoostRegressor(**KW).fit(X, Ym)
    assert est.resolved_params_["masked_outputs"] is True
    assert np.isfinite(est.predict(X)).all() and est.train_loss_[-1] < est.train_loss_[0]
    for call in (lambda: est.predict_weights(X), lambda: est.predict_index(X)):
        with pytest.raises(DataError, match="partly known outputs"):
            call()
    est.predict_index(X, candidates=Y[:5])  # candidates given: fine


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(kernel={"type": "rbf", "sigma": 1.0}), "no feature vector"),
        (dict(kernel="linear", output_weight=[1.0]), "one per output column"),
        (dict(kernel="linear", output_weight=[-1.0, 1.0]), "one per output column"),
    ],
)
def test_masked_outputs_where_they_do_not_apply_are_clear_errors(kwargs, message):
    X, Y, _ = data(4)
    Y[0, 0] = np.nan
    with pytest.raises(DataError, match=message):
        OKBoostRegressor(**KW).fit(X, Y, **kwargs)
    with pytest.raises(DataError, match="not supported by OK3Regressor: fit OKBoostRegressor"):
        from okcore import OK3Regressor

        OK3Regressor(max_bins=255).fit(X, np.nan_to_num(Y), output_weight=[1.0, 1.0])


def test_a_saved_masked_model_still_refuses_whole_output_answers(tmp_path):
    import okcore

    X, Y, rng = data(5)
    Y[rng.random(Y.shape) < 0.2] = np.nan
    est = OKBoostRegressor(**KW).fit(X, Y)
    okcore.save(est, tmp_path / "m")
    loaded = okcore.load(tmp_path / "m")
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    with pytest.raises(DataError, match="partly known outputs"):
        loaded.predict_weights(X)


def test_cross_validation_refuses_unknown_output_entries():
    from okcore.model_selection import cross_validate

    X, Y, _ = data(6)
    Y[0, 0] = np.nan
    with pytest.raises(DataError, match="score whole outputs"):
        cross_validate(OKBoostRegressor(**KW), X, Y, cv=3)


def test_sparse_inputs_are_refused_naming_the_unknown_outputs_not_sample_weight():
    """Unknown outputs and output_weight take the weighted trees' path, which bins dense
    inputs: the refusal of sparse X named sample_weight, which the user had not given."""
    from scipy import sparse

    X, Y, _ = data(7)
    Ym = Y.copy()
    Ym[0, 0] = np.nan
    for fit in (dict(Y=Ym), dict(Y=Y, output_weight=[1.0, 2.0])):
        with pytest.raises(InvalidParameterError, match="unknown .NaN. outputs or output_weight"):
            OKBoostRegressor(**KW).fit(sparse.csr_matrix(X), **fit)
    with pytest.raises(InvalidParameterError, match="^sample_weight in OKBoostRegressor needs"):
        OKBoostRegressor(**KW).fit(sparse.csr_matrix(X), Y, sample_weight=np.full(len(X), 2.0))
    X, Y, _ = data(8, n=300)
    Y[0, 0] = np.nan
    wide = X + np.random.default_rng(0).random(X.shape)  # > 255 distinct values, exact search
    with pytest.raises(InvalidParameterError, match="unknown .NaN. outputs or output_weight"):
        OKBoostRegressor(**{**KW, "max_bins": None}).fit(wide, Y)


def test_an_early_stopping_hold_out_without_known_outputs_says_so():
    """Unknown outputs are entry weights of 0: a hold-out whose rows have no known entry was
    refused as leaving 'no positive sample_weight', a weight the user had not given."""
    X, Y, _ = data(9, n=40)
    Y[:36] = np.nan  # 4 rows known: a 4-row hold-out or training part may have none
    for seed in range(20):
        est = OKBoostRegressor(**{**KW, "early_stopping": True, "n_iter_no_change": 2})
        try:
            est.set_params(random_state=seed).fit(X, Y)
        except DataError as exc:
            assert "no known output entry of positive weight" in str(exc)
            assert "sample_weight on" not in str(exc)
            break
    else:
        pytest.fail("no seed held out the 4 known rows alone")


def test_an_average_of_masked_fits_refuses_whole_output_answers_as_its_members_do():
    """An average's own kernel against the training outputs and its pre-images among them
    read the members' factor, which holds 0 where an entry is unknown: they answered
    silently while each member refused."""
    from okcore import AveragedRegressor

    X, Y, rng = data(10, n=60)
    Y[rng.random(Y.shape) < 0.2] = np.nan
    members = [OKBoostRegressor(**{**KW, "random_state": s}) for s in (0, 1)]
    avg = AveragedRegressor(members).fit(X, Y)
    for call in (
        lambda: avg.predict_kernel_train(X[:3]),
        lambda: avg.predict_index(X[:3]),
        lambda: avg.predict_weights(X[:3]),
    ):
        with pytest.raises(DataError, match="partly known outputs"):
            call()
    F = np.mean([m.predict_features(X[:3]) for m in avg.estimators_], axis=0)
    np.testing.assert_allclose(avg.predict(X[:3]), F, rtol=1e-12)
    np.testing.assert_allclose(avg.predict_kernel(X[:3]), F @ F.T, rtol=1e-12)
    _, Yc, _ = data(11, n=5)
    assert avg.predict_index(X[:3], candidates=Yc)[0].shape == (3, 1)
