"""Known equivalences with a linear output kernel (phi = y):

- an OK3 tree grown by largest improvement is scikit-learn's best-first multi-output
  regression tree (DecisionTreeRegressor(max_leaf_nodes=J+1));
- OKBoost with stumps is least-squares gradient boosting (GradientBoostingRegressor);
- OKBoost with J-split trees is least-squares boosting of multi-output trees.
"""

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")
from sklearn.ensemble import GradientBoostingRegressor  # noqa: E402
from sklearn.tree import DecisionTreeRegressor  # noqa: E402

from okcore import OK3Regressor, OKBoostRegressor  # noqa: E402
from okcore.trees.splitter import FEATURE_THRESHOLD, TIE_RELATIVE  # noqa: E402


def data(seed, n=300, p=6, d=3):
    rng = np.random.default_rng(seed)
    # scikit-learn splits on float32 copies of X: use values exact in float32
    X = rng.random((n, p)).astype(np.float32).astype(np.float64)
    Y = np.c_[
        np.sin(3 * X[:, 0]) + X[:, 1] ** 2,
        X[:, 2] * X[:, 3] - X[:, 0],
        np.cos(2 * X[:, 4]) + X[:, 5],
    ][:, :d] + 0.1 * rng.standard_normal((n, d))
    Xq = rng.random((50, p)).astype(np.float32).astype(np.float64)
    return X, Y, Xq


def split_pairs(features, thresholds):
    internal = features >= 0
    return sorted(
        zip(features[internal].tolist(), np.round(thresholds[internal], 12).tolist(), strict=True)
    )


@pytest.mark.parametrize("J", [1, 3, 7, 15])
@pytest.mark.parametrize("seed", [0, 1])
def test_gain_ordered_ok3_is_sklearn_best_first_tree(J, seed):
    X, Y, Xq = data(seed)
    ours = OK3Regressor(max_splits=J, leaf_order="gain").fit(X, Y)
    theirs = DecisionTreeRegressor(max_leaf_nodes=J + 1, random_state=0).fit(X, Y)
    np.testing.assert_allclose(ours.predict(Xq), theirs.predict(Xq), atol=1e-10)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), atol=1e-10)
    t = theirs.tree_
    sk_features = np.where(t.children_left >= 0, t.feature, -1)
    assert split_pairs(ours.ensemble_.feature, ours.ensemble_.threshold) == split_pairs(
        sk_features, t.threshold
    )


@pytest.mark.parametrize("learning_rate", [1.0, 0.1])
def test_okboost_stumps_are_least_squares_gradient_boosting(learning_rate):
    X, Y, Xq = data(2, d=1)
    y = Y[:, 0]
    ours = OKBoostRegressor(n_estimators=60, learning_rate=learning_rate, max_splits=1).fit(X, y)
    theirs = GradientBoostingRegressor(
        n_estimators=60, learning_rate=learning_rate, max_depth=1, random_state=0
    ).fit(X, y)
    assert ours.predict(Xq).shape == (50,)
    np.testing.assert_allclose(ours.predict(Xq), theirs.predict(Xq), atol=1e-8)
    np.testing.assert_allclose(ours.train_loss_, theirs.train_score_, rtol=1e-8)


@pytest.mark.parametrize("J", [3, 10])
def test_okboost_is_least_squares_boosting_of_multi_output_trees(J):
    X, Y, Xq = data(3)
    nu, M = 0.2, 25
    ours = OKBoostRegressor(n_estimators=M, learning_rate=nu, max_splits=J, leaf_order="gain").fit(
        X, Y
    )
    F, Fq = np.tile(Y.mean(0), (len(X), 1)), np.tile(Y.mean(0), (len(Xq), 1))
    for _ in range(M):  # the do-it-yourself loop: trees on the residuals
        tree = DecisionTreeRegressor(max_leaf_nodes=J + 1, random_state=0).fit(X, Y - F)
        F += nu * tree.predict(X)
        Fq += nu * tree.predict(Xq)
    np.testing.assert_allclose(ours.predict(Xq), Fq, atol=1e-8)
    np.testing.assert_allclose(ours.predict(X), F, atol=1e-8)


# ---------------------------------------------------------------- robust losses (Friedman 2001)
# With a linear kernel on a scalar output the factor is y itself (one column): unit residual
# directions are signs, geometric medians are medians, and loss="absolute" / "huber" are
# scikit-learn's GradientBoostingRegressor(loss="absolute_error" / "huber") with
# max_leaf_nodes=J+1 (its trees are squared-error trees on the negative gradient; its
# `criterion` parameter is deprecated with no effect in 1.9, so it is left at its default).
# Conventions matched, and the two documented differences:
# - medians: F_0 is np.median (midpoint for even N), leaf medians the lower middle value
#   (inverted CDF); delta is the inverted-CDF alpha-quantile of |residual|.
# - at a zero residual okcore's direction is 0 (the minimum-norm subgradient: a feature
#   space has no preferred direction), scikit-learn's negative gradient +1. F_0 is a data
#   point for odd N, so the absolute-loss tests use even N (the midpoint F_0 leaves no zero
#   residual); the Huber gradient is 0 there in both, so it is tested with odd N too.
# - ties between split gains, common with +-1 targets, are broken differently: see
#   test_absolute_stumps_differ_from_sklearn_only_at_exact_gain_ties.
SKLEARN_LOSS = {"absolute": "absolute_error", "huber": "huber"}


def scalar_data(seed, n):
    """Heavy-tailed noise (Student t, 2 d.o.f.) on a smooth function; X float32-exact."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 6)).astype(np.float32).astype(np.float64)
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.3 * rng.standard_t(2, n)
    Xq = rng.random((50, 6)).astype(np.float32).astype(np.float64)
    return X, y, Xq


def both_models(loss, X, y, J, nu, M):
    ours = OKBoostRegressor(
        loss=loss, n_estimators=M, learning_rate=nu, max_splits=J, leaf_order="gain"
    ).fit(X, y)
    theirs = GradientBoostingRegressor(
        loss=SKLEARN_LOSS[loss],
        max_leaf_nodes=J + 1,
        max_depth=None,
        learning_rate=nu,
        n_estimators=M,
        subsample=1.0,
        random_state=0,
    ).fit(X, y)
    return ours, theirs


@pytest.mark.parametrize(
    ("loss", "n", "J", "nu", "M"),
    [
        ("absolute", 300, 1, 0.2, 40),
        ("absolute", 300, 3, 0.1, 20),
        ("huber", 300, 1, 0.5, 40),
        ("huber", 301, 1, 0.5, 40),
        ("huber", 300, 3, 0.1, 40),
        ("huber", 301, 3, 0.1, 20),
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_robust_losses_are_friedmans_on_a_scalar_output(loss, n, J, nu, M, seed):
    X, y, Xq = scalar_data(seed, n)
    ours, theirs = both_models(loss, X, y, J, nu, M)
    np.testing.assert_allclose(ours.predict(Xq), theirs.predict(Xq), rtol=0, atol=1e-8)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-8)
    # the same training loss after every round (Huber: at that round's delta)
    np.testing.assert_allclose(ours.train_loss_, theirs.train_score_, rtol=1e-8)


def exact_gain(target, left):
    """S_L^2 / n_L + S_R^2 / n_R for integer targets, in rational arithmetic."""
    from fractions import Fraction

    return sum(Fraction(int(target[side].sum()) ** 2, int(side.sum())) for side in (left, ~left))


def test_absolute_stumps_differ_from_sklearn_only_at_exact_gain_ties():
    """With +-1 targets two cuts often have exactly the same gain (e.g. one outlier cut off at
    either end); scikit-learn keeps the first in its scan (its features in a random order,
    its gains rounded), okcore the lower feature index, then the lower cut. Up to the first
    tie the models agree to 1e-8 at every round; at the tie both stumps have the same exact
    (rational) gain on the same targets."""
    nu, M, ties = 0.5, 40, 0
    for seed in range(8):
        X, y, _ = scalar_data(seed, 300)
        ours, theirs = both_models("absolute", X, y, 1, nu, M)
        e = ours.ensemble_
        F = np.full(len(y), e.init[0])
        sk_F = [theirs.init_.predict(X)] + list(theirs.staged_predict(X))
        for m in range(M):
            np.testing.assert_allclose(F, sk_F[m], rtol=0, atol=1e-8)
            target = np.sign(y - F).astype(int)
            assert np.all(target != 0)  # no zero residual: the two conventions agree
            node, sk_tree = e.node_offset[m], theirs.estimators_[m, 0].tree_
            f, thr = e.feature[node], e.threshold[node]
            sk_f, sk_thr = sk_tree.feature[0], sk_tree.threshold[0]
            if f != sk_f or not np.isclose(thr, sk_thr, rtol=0, atol=1e-12):
                assert exact_gain(target, X[:, f] <= thr) == exact_gain(
                    target, X[:, sk_f] <= sk_thr
                )
                ties += 1
                break
            F = F + nu * e.value[e.leaf_offset[m] + e.train_leaf[m], 0]
    assert ties > 0  # the data do hit ties: the explanation above is exercised


# ------------------------------------------------------------- Huber trees up to an exact tie
# scikit-learn's best-first tree scans the features in a random order per node and keeps the
# first strictly larger float gain, so of two cuts with the same exact gain it keeps the one
# its permutation or its rounding ranks first; okcore keeps the lower feature index, then the
# lower cut (okcore.trees.splitter.beats). Heavy-tailed noise makes such ties common: Huber
# clips the large residuals to +-delta, and cutting off one clipped residual at the end of
# one feature or of another gains exactly the same. So the claim is: the two models are equal
# to 1e-8 at every round up to the first tree that differs, and that tree differs only at an
# exact tie, each library's tree being a greedy best-first tree of the same targets (okcore's
# with its stated tie rule), checked in rational arithmetic.
HUBER_ALPHA = 0.9


def huber_target(y, F):
    """The negative gradient: the residual clipped at delta, the inverted-CDF alpha-quantile
    of |residual| (both libraries' convention, see above)."""
    r = y - F
    delta = np.sort(np.abs(r))[int(np.ceil(HUBER_ALPHA * len(r))) - 1]
    return np.where(np.abs(r) <= delta, r, delta * np.sign(r))


def exact_cuts(X, target, rows):
    """Every cut of the node ``rows`` in the search's order (feature, then left to right):
    (gain, feature, left rows), gain = S_L^2 / n_L + S_R^2 / n_R - S^2 / n exactly."""
    from fractions import Fraction

    t = {i: Fraction(float(target[i])) for i in rows}
    total = sum(t.values())
    cuts = []
    for f in range(X.shape[1]):
        order = rows[np.argsort(X[rows, f], kind="stable")]
        left_sum = Fraction(0)
        for k in range(len(rows) - 1):
            left_sum += t[order[k]]
            if X[order[k + 1], f] <= X[order[k], f] + FEATURE_THRESHOLD:
                continue
            n_left, n_right = k + 1, len(rows) - k - 1
            gain = left_sum**2 / n_left + (total - left_sum) ** 2 / n_right - total**2 / len(rows)
            cuts.append((gain, f, frozenset(order[: k + 1].tolist())))
    return cuts


def tree_splits(feature, threshold, left, right, X):
    """{rows of a split node: its (feature, threshold)} of a tree given as node arrays."""
    splits, stack = {}, [(0, np.arange(len(X)))]
    while stack:
        node, rows = stack.pop()
        if left[node] < 0:
            continue
        goes_left = X[rows, feature[node]] <= threshold[node]
        splits[frozenset(rows.tolist())] = (int(feature[node]), float(threshold[node]))
        stack += [(left[node], rows[goes_left]), (right[node], rows[~goes_left])]
    return splits


def is_greedy_tree(X, target, splits, J, tie_rule):
    """Whether ``splits`` is the best-first tree of at most J splits on ``target``: each
    split is taken at a leaf of the largest exact gain with a cut of that gain, both up to
    the tie margin TIE_RELATIVE; with ``tie_rule``, okcore's: the leaf created first and the
    first cut in (feature, left to right) order of the tied ones."""
    from fractions import Fraction

    margin = 1 - Fraction(TIE_RELATIVE)
    leaves = [np.arange(len(X))]  # in creation order
    best = {}
    for _ in range(J):
        for rows in leaves:
            key = frozenset(rows.tolist())
            if key not in best and len(rows) >= 2:
                cuts = exact_cuts(X, target, rows)
                top = max((c[0] for c in cuts), default=Fraction(0))
                best[key] = (top, [c for c in cuts if c[0] >= top * margin])
        gains = [best.get(frozenset(rows.tolist()), (Fraction(0), []))[0] for rows in leaves]
        top = max(gains)
        if top <= 0:
            break
        tied = [i for i, g in enumerate(gains) if g >= top * margin]
        taken = [i for i in tied if frozenset(leaves[i].tolist()) in splits]
        if not taken or (tie_rule and taken[0] != tied[0]):
            return False
        rows = leaves.pop(taken[0])
        f, thr = splits.pop(frozenset(rows.tolist()))
        goes_left = X[rows, f] <= thr
        cut = (f, frozenset(rows[goes_left].tolist()))
        tied_cuts = [(c[1], c[2]) for c in best[frozenset(rows.tolist())][1]]
        if cut not in tied_cuts or (tie_rule and cut != tied_cuts[0]):
            return False
        leaves += [rows[goes_left], rows[~goes_left]]
    return not splits  # every split of the tree was taken


@pytest.mark.parametrize("J", range(1, 9))
@pytest.mark.parametrize("seed", [3, 5])
def test_huber_equals_sklearn_up_to_an_exact_tie(J, seed):
    nu, M = 0.5, 40
    X, y, Xq = scalar_data(seed, 300)
    ours, theirs = both_models("huber", X, y, J, nu, M)
    e = ours.ensemble_
    our_F = [np.full(len(y), e.init[0]), *ours.staged_predict(X)]
    sk_F = [theirs.init_.predict(X), *theirs.staged_predict(X)]
    for m in range(M):
        np.testing.assert_allclose(our_F[m], sk_F[m], rtol=0, atol=1e-8)
        lo, hi = e.node_offset[m], e.node_offset[m + 1]
        our_splits = tree_splits(e.feature[lo:hi], e.threshold[lo:hi], e.left[lo:hi],
                                 e.right[lo:hi], X)  # fmt: skip
        t = theirs.estimators_[m, 0].tree_
        sk_splits = tree_splits(t.feature, t.threshold, t.children_left, t.children_right, X)
        if {rows: split[0] for rows, split in our_splits.items()} != {
            rows: split[0] for rows, split in sk_splits.items()
        }:  # other partitions of the rows, or one cut on another feature
            assert is_greedy_tree(X, huber_target(y, our_F[m]), our_splits, J, tie_rule=True)
            assert is_greedy_tree(X, huber_target(y, sk_F[m]), sk_splits, J, tie_rule=False)
            return  # the models part at an exact tie: nothing more to compare
    np.testing.assert_allclose(ours.predict(Xq), theirs.predict(Xq), rtol=0, atol=1e-8)
    np.testing.assert_allclose(ours.train_loss_, theirs.train_score_, rtol=1e-8)
