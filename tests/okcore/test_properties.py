"""Invariants that hold for every input: W^F rows sum to 1 and reproduce F, the training loss
never increases, predictions do not depend on the order of the training set, and a saved
model predicts exactly like the original."""

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import okcore
from okcore import OK3ForestRegressor, OK3Regressor, OKBoostRegressor

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KERNELS = [{"type": "linear"}, {"type": "rbf", "sigma": 1.0}, {"type": "polynomial", "degree": 2}]


def problem(seed, n, p=4, d=2):
    rng = np.random.default_rng(seed)
    X = rng.random((n, p))
    Y = np.c_[np.sin(3 * X[:, 0]), X[:, 1] * X[:, 2]][:, :d] + 0.3 * rng.standard_normal((n, d))
    return X, Y, rng.random((11, p))


estimators = st.sampled_from(["boost", "boost-sub", "boost-et", "tree", "bagging", "extra"])


def make(kind, seed):
    return {
        "boost": OKBoostRegressor(n_estimators=12, learning_rate=0.5, max_splits=4),
        "boost-sub": OKBoostRegressor(
            n_estimators=12, max_splits=4, subsample=0.6, random_state=seed
        ),
        "boost-et": OKBoostRegressor(
            n_estimators=12, max_splits=4, splitter="random", random_state=seed
        ),
        "tree": OK3Regressor(max_splits=6, leaf_order="gain"),
        "bagging": OK3ForestRegressor(n_estimators=5, random_state=seed),
        "extra": OK3ForestRegressor(
            n_estimators=5, splitter="random", bootstrap=False, random_state=seed
        ),
    }[kind]


@SETTINGS
@given(
    kind=estimators,
    seed=st.integers(0, 10_000),
    n=st.integers(8, 60),
    kernel=st.sampled_from(KERNELS),
)
def test_weights_sum_to_one_and_reproduce_F(kind, seed, n, kernel):
    X, Y, Xq = problem(seed, n)
    est = make(kind, seed).fit(X, Y, kernel=kernel)
    W = est.predict_weights(Xq)
    assert W.shape == (len(Xq), n)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-10)
    phi = est.output_space_.phi
    np.testing.assert_allclose(W @ phi, est.predict_features(Xq), atol=1e-9)
    K = phi @ phi.T
    np.testing.assert_allclose(est.predict_kernel(Xq), W @ K @ W.T, atol=1e-8)


@SETTINGS
@given(
    seed=st.integers(0, 10_000),
    nu=st.floats(0.01, 1.0),
    J=st.integers(1, 8),
    splitter=st.sampled_from(["best", "random"]),
    order=st.sampled_from(["variance", "gain"]),
)
def test_training_loss_is_non_increasing(seed, nu, J, splitter, order):
    X, Y, _ = problem(seed, 50)
    est = OKBoostRegressor(
        n_estimators=25,
        learning_rate=nu,
        max_splits=J,
        splitter=splitter,
        leaf_order=order,
        random_state=seed,
    ).fit(X, Y, kernel={"type": "rbf", "sigma": 0.8})
    loss = np.r_[
        np.mean(np.var(est.output_space_.phi, axis=0)) * est.output_space_.rank, est.train_loss_
    ]
    assert np.all(np.diff(loss) <= 1e-12 * loss[0])


def first_tied_tree(a, b):
    """The first tree where fits ``a`` and ``b`` chose different cuts, or None: it must hold
    a tie -- a node of the same rows split by both with another (feature, cut) of the same
    score up to rounding (the same rows separated, the children in either order)."""
    ea, eb = a.ensemble_, b.ensemble_
    for m in range(len(ea.node_offset) - 1):
        na = slice(ea.node_offset[m], ea.node_offset[m + 1])
        nb = slice(eb.node_offset[m], eb.node_offset[m + 1])
        fa, fb, ta, tb = ea.feature[na], eb.feature[nb], ea.threshold[na], eb.threshold[nb]
        if np.array_equal(fa, fb) and np.allclose(ta, tb, rtol=0, atol=1e-12):
            continue
        n = min(len(fa), len(fb))
        both = (fa[:n] >= 0) & (fb[:n] >= 0)
        other_cut = (fa[:n] != fb[:n]) | ~np.isclose(ta[:n], tb[:n], rtol=0, atol=1e-12)
        same_rows = ea.n_samples[na][:n] == eb.n_samples[nb][:n]
        same_score = np.isclose(ea.gain[na][:n], eb.gain[nb][:n], rtol=1e-9, atol=0)
        assert (both & other_cut & same_rows & same_score).any(), f"tree {m}: no tie"
        return m
    return None


@SETTINGS
@given(seed=st.integers(0, 10_000), splitter=st.sampled_from(["best", "random"]))
@example(seed=2884, splitter="random")  # ties with the children swapped (1.5 % of seeds)
@example(seed=2843, splitter="random")
@example(seed=2965, splitter="random")
def test_predictions_invariant_to_training_order(seed, splitter):
    """Same partitions of the training set and same predictions there, whatever the order.
    At new inputs too, unless a split was tied: two (feature, cut) pairs that separate the
    same training rows have equal scores, and rounding may pick either. With the random
    splitter such a tie may also put the children in the other order, after which the
    random draws serve other nodes: the trees are compared up to the tied one (seed 2884)."""
    X, Y, Xq = problem(seed, 40)
    perm = np.random.default_rng(seed + 1).permutation(len(X))
    params = dict(n_estimators=10, max_splits=5, splitter=splitter, random_state=7)
    a = OKBoostRegressor(**params).fit(X, Y, kernel={"type": "rbf", "gamma": 1.0})
    b = OKBoostRegressor(**params).fit(X[perm], Y[perm], kernel={"type": "rbf", "gamma": 1.0})
    tied = first_tied_tree(a, b) if splitter == "random" else None
    n_same = a.ensemble_.train_leaf.shape[0] if tied is None else tied
    leaves_a, leaves_b = a.ensemble_.train_leaf[:n_same, perm], b.ensemble_.train_leaf[:n_same]
    for leaf_a, leaf_b in zip(leaves_a, leaves_b, strict=True):
        pairs = set(
            zip(leaf_a.tolist(), leaf_b.tolist(), strict=True)
        )  # same partition, any labels
        assert len(pairs) == len(set(leaf_a.tolist())) == len(set(leaf_b.tolist()))
    if tied is not None:
        return
    np.testing.assert_allclose(a.predict_kernel(X), b.predict_kernel(X), atol=1e-9)
    np.testing.assert_allclose(a.predict_weights(X)[:, perm], b.predict_weights(X), atol=1e-9)
    if np.array_equal(a.ensemble_.feature, b.ensemble_.feature) and np.allclose(
        a.ensemble_.threshold, b.ensemble_.threshold, rtol=0, atol=1e-12
    ):
        np.testing.assert_allclose(a.predict_kernel(Xq), b.predict_kernel(Xq), atol=1e-9)
        np.testing.assert_allclose(a.predict_weights(Xq)[:, perm], b.predict_weights(Xq), atol=1e-9)
        np.testing.assert_allclose(a.predict(Xq), b.predict(Xq), atol=1e-12)


@settings(max_examples=8, deadline=None)
@given(kind=estimators, seed=st.integers(0, 10_000), kernel=st.sampled_from(KERNELS))
def test_save_load_round_trip_gives_identical_predictions(tmp_path_factory, kind, seed, kernel):
    X, Y, Xq = problem(seed, 30)
    est = make(kind, seed).fit(X, Y, kernel=kernel)
    path = okcore.save(est, tmp_path_factory.mktemp("model") / "m")
    again = okcore.load(path)
    assert type(again) is type(est) and again.get_params() == {
        k: (v if not hasattr(v, "integers") else None) for k, v in est.get_params().items()
    }
    np.testing.assert_array_equal(again.predict_weights(Xq), est.predict_weights(Xq))
    np.testing.assert_array_equal(again.predict_kernel(Xq), est.predict_kernel(Xq))
    np.testing.assert_array_equal(
        again.predict_index(Xq, top_k=2)[0], est.predict_index(Xq, top_k=2)[0]
    )
    np.testing.assert_array_equal(again.predict(Xq), est.predict(Xq))
    np.testing.assert_array_equal(again.feature_importances_, est.feature_importances_)
