"""OKBoost and OK3 against a brute-force implementation of the paper's Algorithms 3-4.

The brute force below works only with N x N kernel matrices, exactly as written in the paper
(Geurts, Wehenkel & d'Alché-Buc, ICML 2007): N*var from sums of K blocks (eq. 11), residual
kernels K^m = (I - nu W^{m-1})^T K^{m-1} (I - nu W^{m-1}), weights w^F(x) = sum_m p^m(x) O^m
with O^m = O^{m-1} - nu W^{m-1} O^{m-1}, kernel predictions w^F K w^F'^T (eq. 7) and
pre-images argmin_j K_jj - 2 (w^F K)_j (eq. 8). It is slow and obvious on purpose.
"""

import numpy as np
import pytest
from okdata import beats_reference

from okcore import OK3Regressor, OKBoostRegressor
from okcore.outputs.kernels import RBFKernel

FEATURE_THRESHOLD = 1e-7  # two values closer than this are not split apart
CONSTANT = 1e-12  # a node with N*var below this fraction of the root's is a leaf


def nvar(K, S):
    """N*var{phi | S} = sum_i k_ii - (1/|S|) sum_ij k_ij (paper eq. 11)."""
    return np.trace(K[np.ix_(S, S)]) - K[np.ix_(S, S)].sum() / len(S)


def best_split(X, K, S, min_leaf=1):
    """Every feature, every midpoint: the split of largest N*var reduction (first on ties,
    within okcore's tie margin).

    The gain depends only on the partition of S, so a cut on another feature that puts the
    same rows on the two sides is an exact tie that rounding may decide either way: the
    sixth item lists them as (feature, threshold, mirrored), mirrored when its left side is
    the best cut's right side."""
    best, cuts = None, []
    for f in range(X.shape[1]):
        values = np.unique(X[S, f])
        for a, b in zip(values[:-1], values[1:], strict=True):
            if b <= a + FEATURE_THRESHOLD:
                continue
            thr = a / 2 + b / 2
            left, right = S[X[S, f] <= thr], S[X[S, f] > thr]
            if len(left) < min_leaf or len(right) < min_leaf:
                continue
            cuts.append((f, thr, left))
            gain = nvar(K, S) - nvar(K, left) - nvar(K, right)
            if best is None or beats_reference(gain, best[0]):
                best = (gain, f, thr, left, right)
    if best is None or best[0] <= 0:
        return None
    same = [
        (f, thr, set(left.tolist()) == set(best[4].tolist()))
        for f, thr, left in cuts
        if f != best[1] and set(left.tolist()) in (set(best[3].tolist()), set(best[4].tolist()))
    ]
    return (*best, same)


def grow_tree(X, K, J, leaf_order, min_leaf=1):
    """Best-first OK3 tree with at most J splits; nodes in creation order (left, then right)."""
    nodes = [{"S": np.arange(len(X)), "feature": -1, "threshold": 0.0, "children": None}]
    root = nvar(K, nodes[0]["S"])
    leaves, n_splits = [0], 0
    while n_splits < J:
        candidates = []
        for node in leaves:
            S = nodes[node]["S"]
            if len(S) < 2 * min_leaf or nvar(K, S) <= CONSTANT * root:
                continue
            if leaf_order == "variance":
                candidates.append((nvar(K, S), node))
            else:
                split = best_split(X, K, S, min_leaf)
                if split is not None:
                    candidates.append((split[0], node))
        chosen = None
        for key, node in candidates:  # largest key, earliest node on ties (okcore's margin)
            if chosen is None or beats_reference(key, chosen[0]):
                chosen = (key, node)
        if chosen is None:
            break
        node = chosen[1]
        split = best_split(X, K, nodes[node]["S"], min_leaf)
        if split is None:  # the leaf of highest variance cannot be split: the next one
            leaves.remove(node)
            continue
        _, f, thr, left, right, same = split
        nodes[node].update(
            feature=f, threshold=thr, children=(len(nodes), len(nodes) + 1), same_partition=same
        )
        nodes += [
            {"S": left, "feature": -1, "threshold": 0.0, "children": None},
            {"S": right, "feature": -1, "threshold": 0.0, "children": None},
        ]
        leaves.remove(node)
        leaves += [len(nodes) - 2, len(nodes) - 1]
        n_splits += 1
    return nodes


def leaf_of(nodes, x):
    node = 0
    while nodes[node]["children"] is not None:
        left, right = nodes[node]["children"]
        node = left if x[nodes[node]["feature"]] <= nodes[node]["threshold"] else right
    return node


def tree_weights(nodes, Xq, n_train):
    """p(x): row q holds w_i(x_q) = 1/|L| for the training points i of x_q's leaf L."""
    P = np.zeros((len(Xq), n_train))
    for q, x in enumerate(Xq):
        S = nodes[leaf_of(nodes, x)]["S"]
        P[q, S] = 1.0 / len(S)
    return P


def okboost_bruteforce(X, K, M, nu, J, leaf_order):
    """Algorithm 3 with N x N matrices; returns the trees and a function x -> w^F(x)."""
    N = len(X)
    eye = np.eye(N)
    W0 = np.full((N, N), 1.0 / N)  # F_0 = mean, applied with nu = 1
    Km = (eye - W0).T @ K @ (eye - W0)
    Om = eye - W0  # O^1 = O^0 - W^0 O^0
    trees, operators = [], []
    for _ in range(M):
        nodes = grow_tree(X, Km, J, leaf_order)
        Wm = tree_weights(nodes, X, N).T  # W^m[l, i] = w_l(x_i)
        trees.append(nodes)
        operators.append(Om)
        Km = (eye - nu * Wm).T @ Km @ (eye - nu * Wm)
        Om = Om - nu * Wm @ Om

    def weights(Xq):
        w = np.full((len(Xq), N), 1.0 / N)
        for nodes, operator in zip(trees, operators, strict=True):
            w += nu * tree_weights(nodes, Xq, N) @ operator
        return w

    return trees, weights


def problem(seed, n=36, p=3):
    rng = np.random.default_rng(seed)
    X = rng.random((n, p))
    Y = np.c_[np.sin(4 * X[:, 0]) + X[:, 1], X[:, 2] ** 2 - X[:, 0]] + 0.2 * rng.standard_normal(
        (n, 2)
    )
    Xq = rng.random((9, p))
    return X, Y, Xq


def assert_preimages(index, scores):
    """index[:, :k] are the k best by eq. 8: the same scores as the brute-force sort (ties
    between equally distant outputs may pick either)."""
    k = index.shape[1]
    np.testing.assert_allclose(
        np.take_along_axis(scores, index, 1), np.sort(scores, axis=1)[:, :k], atol=1e-9
    )
    assert all(len(set(row)) == k for row in index.tolist())


def assert_same_tree(ours, arrays_feature, arrays_threshold):
    """Same splits node by node. Where okcore cut on another feature that puts exactly the
    same training rows on each side (an exact tie, see best_split), the brute-force tree
    takes okcore's cut, so that the weights compared afterwards route queries alike."""
    for node, feature, threshold in zip(ours, arrays_feature, arrays_threshold, strict=False):
        if node["feature"] == feature or node["feature"] < 0:
            continue
        for f, thr, mirrored in node.get("same_partition", []):
            if f == feature and abs(thr - threshold) <= 1e-12:
                node.update(feature=f, threshold=thr)
                if mirrored:
                    a, b = node["children"]
                    ours[a], ours[b] = ours[b], ours[a]
                break
    features = [node["feature"] for node in ours]
    thresholds = [node["threshold"] for node in ours]
    assert list(arrays_feature) == features
    np.testing.assert_allclose(arrays_threshold, thresholds, rtol=0, atol=1e-12)


@pytest.mark.parametrize("leaf_order", ["variance", "gain"])
@pytest.mark.parametrize("learning_rate", [1.0, 0.3])
@pytest.mark.parametrize("seed", [0, 1])
def test_okboost_equals_bruteforce_with_rbf_kernel(leaf_order, learning_rate, seed):
    X, Y, Xq = problem(seed)
    K = RBFKernel(sigma=1.0).gram(Y)
    M, J = 6, 4
    trees, weights = okboost_bruteforce(X, K, M, learning_rate, J, leaf_order)
    est = OKBoostRegressor.paper(
        n_estimators=M, learning_rate=learning_rate, max_splits=J, leaf_order=leaf_order
    ).fit(X, Y, kernel={"type": "rbf", "sigma": 1.0})

    e = est.ensemble_
    for m, nodes in enumerate(trees):  # same trees
        lo, hi = e.node_offset[m], e.node_offset[m + 1]
        assert_same_tree(nodes, e.feature[lo:hi], e.threshold[lo:hi])

    for Q in (Xq, X[:7]):
        wF = weights(Q)
        np.testing.assert_allclose(est.predict_weights(Q), wF, atol=1e-8)
        np.testing.assert_allclose(est.predict_kernel(Q), wF @ K @ wF.T, atol=1e-8)
        np.testing.assert_allclose(
            est.predict_kernel(Q, X[:5]), wF @ K @ weights(X[:5]).T, atol=1e-8
        )
        np.testing.assert_allclose(est.predict_kernel_train(Q), wF @ K, atol=1e-8)
        scores = np.diag(K)[None, :] - 2 * wF @ K
        index, dist = est.predict_index(Q, top_k=3)
        assert_preimages(index, scores)
        # the reported score is the squared distance ||phi(y_j) - F(x)||^2
        norm = np.einsum("ij,jk,ik->i", wF, K, wF)[:, None]
        np.testing.assert_allclose(dist, np.take_along_axis(scores, index, 1) + norm, atol=1e-8)
        np.testing.assert_array_equal(est.predict(Q), Y[index[:, 0]])


@pytest.mark.parametrize("leaf_order", ["variance", "gain"])
def test_single_ok3_tree_equals_bruteforce(leaf_order):
    X, Y, Xq = problem(3, n=30)
    K = RBFKernel(gamma=0.7).gram(Y)
    nodes = grow_tree(X, K, 7, leaf_order)
    est = OK3Regressor(max_splits=7, leaf_order=leaf_order).fit(X, gram=K)
    assert_same_tree(nodes, est.ensemble_.feature, est.ensemble_.threshold)
    P = tree_weights(nodes, Xq, len(X))
    np.testing.assert_allclose(est.predict_weights(Xq), P, atol=1e-10)
    np.testing.assert_allclose(est.predict_kernel(Xq), P @ K @ P.T, atol=1e-8)
    # gram input without outputs: predict gives training indices of the pre-images
    assert_preimages(est.predict(Xq)[:, None], np.diag(K) - 2 * P @ K)


def test_variance_and_gain_orders_differ_as_the_note_says():
    """The two leaf orders are different algorithms (math note s. 1): not silently the same."""
    differ = 0
    for seed in range(6):
        X, Y, _ = problem(seed, n=40)
        K = RBFKernel(sigma=1.0).gram(Y)
        a = [n["feature"] for n in grow_tree(X, K, 6, "variance")]
        b = [n["feature"] for n in grow_tree(X, K, 6, "gain")]
        ours_a = OK3Regressor(max_splits=6, leaf_order="variance").fit(X, gram=K).ensemble_.feature
        ours_b = OK3Regressor(max_splits=6, leaf_order="gain").fit(X, gram=K).ensemble_.feature
        assert list(ours_a) == a and list(ours_b) == b
        differ += (a != b) or not np.array_equal(
            [n["threshold"] for n in grow_tree(X, K, 6, "variance")],
            [n["threshold"] for n in grow_tree(X, K, 6, "gain")],
        )
    assert differ > 0


@pytest.mark.parametrize("min_leaf", [1, 3])
@pytest.mark.parametrize("leaf_order", ["variance", "gain"])
def test_tied_and_sparse_binary_features_equal_bruteforce(min_leaf, leaf_order):
    """Discrete features with many ties, and sparse binary ones (scanned from the right)."""
    rng = np.random.default_rng(11)
    n = 60
    X = np.c_[
        rng.integers(0, 3, n),  # three levels
        rng.random(n) < 0.1,  # sparse binary: few ones
        rng.random(n) < 0.9,  # dense binary: few zeros
        rng.integers(0, 2, n) * 2.5,
        rng.random(n),
    ].astype(float)
    Y = np.c_[X[:, 0] + X[:, 1] - X[:, 2], X[:, 3] * X[:, 4]] + 0.1 * rng.standard_normal((n, 2))
    K = RBFKernel(sigma=1.0).gram(Y)
    nodes = grow_tree(X, K, 12, leaf_order, min_leaf)
    est = OK3Regressor(max_splits=12, leaf_order=leaf_order, min_samples_leaf=min_leaf).fit(
        X, gram=K
    )
    assert_same_tree(nodes, est.ensemble_.feature, est.ensemble_.threshold)
    Xq = np.c_[
        rng.integers(0, 3, 9),
        rng.random(9) < 0.5,
        rng.random(9) < 0.5,
        rng.integers(0, 2, 9) * 2.5,
        rng.random(9),
    ]
    np.testing.assert_allclose(est.predict_weights(Xq), tree_weights(nodes, Xq, n), atol=1e-10)


# ---------------------------------------------------------------- robust losses, kernel form
# Friedman's absolute (LAD) and Huber (M) boosting written with N x N kernel matrices only.
# A residual is a weight row over the phi(y_j): r_i = sum_j C[i, j] phi(y_j), so residual
# inner products are C K C^T. Leaf values are weighted combinations of the leaf's residuals
# (geometric medians by Weiszfeld in kernel form), W^m[i, l] = weight of r_l in the value of
# i's leaf, C <- C - nu W^m C, and w^F(x) = w_0 + nu sum_m p^m(x) C^m with p^m(x)[l] the
# weight of r_l in the value of x's leaf. The stopping rules are okcore's documented ones.
WEISZFELD_TOL, WEISZFELD_MAX_ITER, COINCIDE, SNAP_MARGIN = 1e-10, 1000, 1e-12, 1e-6


def kernel_distances(G, c):
    """||x_i - sum_j c_j x_j|| for rows with Gram G."""
    return np.sqrt(np.maximum(np.diag(G) - 2 * G @ c + c @ G @ c, 0.0))


def geometric_median_kernel(G):
    """Weights c with sum_i c_i x_i = argmin_m sum_i ||x_i - m||, rows given by their Gram G.

    Weiszfeld from 0; an iterate at rows (distance <= COINCIDE * largest) stays if
    optimal (Vardi-Zhang: pull of the other rows <= number of rows there), else takes the
    Vardi-Zhang step; stop when a step moves < WEISZFELD_TOL * mean distance; then snap to
    the nearest row if it is optimal with SNAP_MARGIN."""
    n = len(G)
    c = np.zeros(n)
    for _ in range(WEISZFELD_MAX_ITER):
        d = kernel_distances(G, c)
        if d.max() == 0:
            return c
        at = d <= COINCIDE * d.max()
        a = np.where(at, 0.0, 1.0 / np.where(at, 1.0, d))
        t = a / a.sum()
        if at.any():
            pull = a.sum() * np.sqrt(max((t - c) @ G @ (t - c), 0.0))
            if pull <= at.sum():
                return at / at.sum()
            lam = at.sum() / pull
            t = (1 - lam) * t + lam * c
        moved = np.sqrt(max((t - c) @ G @ (t - c), 0.0))
        c = t
        if moved <= WEISZFELD_TOL * d.mean():
            break
    k = np.argmin(kernel_distances(G, c))
    d = kernel_distances(G, np.eye(n)[k])
    at = d <= COINCIDE * d.max()
    u = np.where(at, 0.0, 1.0 / np.where(at, 1.0, d))  # unit vectors towards the others
    coef = u - np.eye(n)[k] * u.sum()  # sum_i u_i (x_i - x_k) as weights over the rows
    if np.sqrt(max(coef @ G @ coef, 0.0)) <= (1 - SNAP_MARGIN) * at.sum():
        c = at / at.sum()
    return c


def leaf_weights_kernel(G, loss, delta):
    c = geometric_median_kernel(G)
    if loss == "absolute":
        return c
    # Huber: m + mean_i clip(r_i - m), clip to norm delta, m = sum c_j r_j
    n = len(G)
    dev = np.eye(n) - c[None, :]  # r_i - m as weights over the leaf rows
    norms = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", dev, G, dev), 0.0))
    s = np.where(norms > delta, delta / np.where(norms > 0, norms, 1.0), 1.0)
    return c * (1 - s.mean()) + s / n


def robust_okboost_bruteforce(X, K, M, nu, J, leaf_order, loss, alpha=0.9):
    """Returns the trees, a function x -> w^F(x) and the training loss after each round."""
    N = len(X)
    w0 = geometric_median_kernel(K)  # F_0: geometric median of the phi(y_i)
    C = np.eye(N) - w0[None, :]
    trees, stages, train_loss = [], [], []
    for _ in range(M):
        KR = C @ K @ C.T
        norms = np.sqrt(np.maximum(np.diag(KR), 0.0))
        if loss == "absolute":  # unit residual directions, 0 for a zero residual
            scale, delta = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0), None
        else:  # residuals clipped to the alpha-quantile (inverted CDF) of their norms
            delta = np.sort(norms)[int(np.ceil(alpha * N)) - 1]
            scale = np.where(norms > delta, delta / np.where(norms > 0, norms, 1.0), 1.0)
        nodes = grow_tree(X, scale[:, None] * KR * scale[None, :], J, leaf_order)
        coef = np.zeros(N)
        Wm = np.zeros((N, N))
        for node in nodes:
            if node["children"] is None:
                S = node["S"]
                coef[S] = leaf_weights_kernel(KR[np.ix_(S, S)], loss, delta)
                Wm[np.ix_(S, S)] = coef[S][None, :]
        trees.append(nodes)
        stages.append((nodes, coef, C))
        C = C - nu * Wm @ C
        norms = np.sqrt(np.maximum(np.diag(C @ K @ C.T), 0.0))
        if loss == "absolute":
            train_loss.append(norms.mean())
        else:
            train_loss.append(
                np.mean(np.where(norms <= delta, norms**2 / 2, delta * (norms - delta / 2)))
            )

    def weights(Xq):
        w = np.tile(w0, (len(Xq), 1))
        for nodes, coef, Cm in stages:
            P = np.zeros((len(Xq), N))
            for q, x in enumerate(Xq):
                S = nodes[leaf_of(nodes, x)]["S"]
                P[q, S] = coef[S]
            w += nu * P @ Cm
        return w

    return trees, weights, np.array(train_loss)


def corrupted_problem(seed, n=40):
    """One input, so that two different cuts never separate the same rows: the robust
    targets often make cutting off one or two outliers best, and with several inputs that
    cut is often possible through two of them, an exact tie (same training partition, other
    routing of new points). Both sides break it by okcore's rule, but the brute force sums
    its gains from N x N kernel blocks, okcore from the factor: this test is about the
    robust losses, test_ties.py about ties. Every sixth output is corrupted."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 1))
    Y = np.c_[np.sin(4 * X[:, 0]), np.cos(3 * X[:, 0])] + 0.2 * rng.standard_normal((n, 2))
    Y[::6] += 2.0
    return X, Y, rng.random((9, 1))


@pytest.mark.parametrize("loss", ["absolute", "huber"])
@pytest.mark.parametrize("leaf_order", ["variance", "gain"])
@pytest.mark.parametrize(("learning_rate", "seed"), [(0.3, 0), (0.7, 1)])
def test_robust_okboost_equals_bruteforce_with_rbf_kernel(loss, leaf_order, learning_rate, seed):
    X, Y, Xq = corrupted_problem(seed)
    K = RBFKernel(sigma=1.0).gram(Y)
    M, J = 6, 4
    trees, weights, train_loss = robust_okboost_bruteforce(
        X, K, M, learning_rate, J, leaf_order, loss, alpha=0.8
    )
    est = OKBoostRegressor.paper(
        loss=loss,
        alpha=0.8,
        n_estimators=M,
        learning_rate=learning_rate,
        max_splits=J,
        leaf_order=leaf_order,
    ).fit(X, Y, kernel={"type": "rbf", "sigma": 1.0})

    e = est.ensemble_
    for m, nodes in enumerate(trees):  # same trees
        lo, hi = e.node_offset[m], e.node_offset[m + 1]
        assert_same_tree(nodes, e.feature[lo:hi], e.threshold[lo:hi])
    np.testing.assert_allclose(est.train_loss_, train_loss, rtol=1e-8)
    if loss == "absolute":  # the descent property (see AbsoluteFeatureLoss)
        assert np.all(np.diff(train_loss) <= 1e-12)

    for Q in (Xq, X[:7]):
        wF = weights(Q)
        np.testing.assert_allclose(est.predict_weights(Q), wF, atol=1e-8)
        np.testing.assert_allclose(est.predict_kernel(Q), wF @ K @ wF.T, atol=1e-8)
        np.testing.assert_allclose(est.predict_kernel_train(Q), wF @ K, atol=1e-8)
        scores = np.diag(K)[None, :] - 2 * wF @ K
        index, dist = est.predict_index(Q, top_k=3)
        assert_preimages(index, scores)
        norm = np.einsum("ij,jk,ik->i", wF, K, wF)[:, None]
        np.testing.assert_allclose(dist, np.take_along_axis(scores, index, 1) + norm, atol=1e-8)
        np.testing.assert_array_equal(est.predict(Q), Y[index[:, 0]])
