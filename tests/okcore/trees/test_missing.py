"""Missing input values (NaN) in every tree type against brute-force references.

The references try, at every node (best-first trees) or level (oblivious trees), every
feature, every cut between distinct observed values and the cut "missing or not", with the
missing rows on each side, and keep the best by okcore's tie rule (candidates in the order
of the search inputs: every feature with its missing rows right, then the features holding
missing values with them left). One output column and a linear kernel: N*var is the sum of
squared deviations. Slow and obvious on purpose.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from okdata import beats_reference
from scipy import sparse

from okcore import KernelRidgeRegressor, OK3ForestRegressor, OK3Regressor, OKBoostRegressor
from okcore.exceptions import DataError
from okcore.io import load, save

FEATURE_THRESHOLD = 1e-7
CONSTANT = 1e-12


def sse(y: np.ndarray) -> float:
    return float(((y - y.mean()) ** 2).sum()) if len(y) else 0.0


def candidates(X: np.ndarray, S: np.ndarray):
    """(feature, threshold, missing_left, goes_left mask over S) in the search's order."""
    out = []
    for missing_left in (False, True):
        for f in range(X.shape[1]):
            x = X[S, f]
            miss = np.isnan(x)
            if missing_left and not np.isnan(X[:, f]).any():
                continue  # no twin column: the feature holds no missing value
            values = np.unique(x[~miss])
            cuts = []
            if missing_left and miss.any():
                cuts.append(-np.inf)  # missing left, every observed value right
            for a, b in zip(values[:-1], values[1:], strict=True):
                if b > a + FEATURE_THRESHOLD:
                    t = a / 2 + b / 2
                    cuts.append(a if t == b or not np.isfinite(t) else t)
            if not missing_left and miss.any() and len(values):
                cuts.append(values[-1])  # every observed value left, missing right
            for t in cuts:
                out.append((f, t, missing_left, np.where(miss, missing_left, x <= t)))
    return out


def best_split(X, y, S, min_leaf):
    best = None
    for f, t, ml, left in candidates(X, S):
        if left.sum() < min_leaf or (~left).sum() < min_leaf:
            continue
        gain = sse(y[S]) - sse(y[S[left]]) - sse(y[S[~left]])
        if best is None or beats_reference(gain, best[0]):
            best = (gain, f, t, ml, S[left], S[~left])
    return None if best is None or best[0] <= 0 else best


def default_side(X, f, S_left, S_right, learned):
    """missing_left of a cut: the learned side, or the larger child for a feature that held
    no missing value in training (right on a tie)."""
    if np.isnan(X[:, f]).any():
        return learned
    return len(S_left) > len(S_right)


def grow_best_first(X, y, J, min_leaf=1):
    """Best-first tree, leaves split by N*var (the paper's order): nodes as dicts."""
    nodes = [{"S": np.arange(len(y))}]
    root = sse(y)
    open_ = [0]
    for _ in range(J):
        order = sorted(open_, key=lambda i: (-sse(y[nodes[i]["S"]]), i))
        for node in order:
            S = nodes[node]["S"]
            if len(S) < 2 * min_leaf or sse(y[S]) <= CONSTANT * root:
                open_.remove(node)
                continue
            split = best_split(X, y, S, min_leaf)
            open_.remove(node)
            if split is None:
                continue
            _, f, t, ml, SL, SR = split
            nodes[node].update(f=f, t=t, ml=default_side(X, f, SL, SR, ml))
            nodes[node]["children"] = (len(nodes), len(nodes) + 1)
            nodes += [{"S": SL}, {"S": SR}]
            open_ += [len(nodes) - 2, len(nodes) - 1]
            break
        else:
            break
    return nodes


def predict_reference(nodes, y, X):
    out = np.empty(len(X))
    for q, x in enumerate(X):
        node = 0
        while "children" in nodes[node]:
            n = nodes[node]
            v = x[n["f"]]
            left = n["ml"] if np.isnan(v) else v <= n["t"]
            node = n["children"][0 if left else 1]
        out[q] = y[nodes[node]["S"]].mean()
    return out


def data(n=80, seed=0):
    """Feature 0 drives y where observed; feature 1's missingness shifts y; feature 2 is
    never missing. 25 % of features 0 and 1 missing."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.random((n, 3)), 3)
    y = np.sin(4 * X[:, 0]) + 0.3 * X[:, 2] + 0.05 * rng.standard_normal(n)
    X[rng.random(n) < 0.25, 0] = np.nan
    missing_1 = rng.random(n) < 0.25
    X[missing_1, 1] = np.nan
    y = y + 1.5 * missing_1
    queries = np.round(rng.random((40, 3)), 3)
    queries[::3, 0] = np.nan
    queries[1::3, 1] = np.nan
    queries[2::4, 2] = np.nan  # never missing in training: the larger child
    return X, y, queries


def tree_arrays(model):
    e = model.ensemble_
    internal = e.left >= 0
    return e.feature[internal], e.threshold[internal], e.missing_left[internal]


SEARCHES = {
    "exact": dict(max_bins=None),
    "histogram": dict(max_bins=255),
    "histogram_unrefined": dict(max_bins=255, refine_cuts=False),
}


def outputs(y: np.ndarray, n_outputs: int) -> np.ndarray:
    """y, or n_outputs copies of it (the same partitions, through the kernels of several
    search columns)."""
    return y if n_outputs == 1 else np.repeat(y[:, None], n_outputs, axis=1)


def first_column(prediction: np.ndarray) -> np.ndarray:
    return prediction if prediction.ndim == 1 else prediction[:, 0]


@pytest.mark.parametrize("search", sorted(SEARCHES))
@pytest.mark.parametrize("sparse_input", [False, True])
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_best_first_tree_equals_the_brute_force(search, sparse_input, n_outputs):
    X, y, queries = data()
    J = 7
    nodes = grow_best_first(X, y, J)
    Xin = X
    if sparse_input:  # zeros implicit, NaN stored: a stored NaN is missing
        X = np.where(X < 0.3, 0.0, X)
        nodes = grow_best_first(X, y, J)
        Xin = sparse.csr_matrix(np.nan_to_num(X, nan=7.0))
        Xin.data[Xin.data == 7.0] = np.nan
        assert Xin.nnz < X.size
    model = OK3Regressor(max_splits=J, **SEARCHES[search]).fit(Xin, outputs(y, n_outputs))
    feature, threshold, missing_left = tree_arrays(model)
    ref = [n for n in nodes if "children" in n]
    np.testing.assert_array_equal(feature, [n["f"] for n in ref])
    np.testing.assert_allclose(threshold, [n["t"] for n in ref], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(missing_left, [int(n["ml"]) for n in ref])
    assert missing_left.any() and not missing_left.all()  # both sides were learned
    for Q in (X, queries):
        Qin = Q if not sparse_input else sparse.csr_matrix(Q)
        np.testing.assert_allclose(
            first_column(model.predict(Qin)), predict_reference(nodes, y, Q), atol=1e-12
        )


def grow_oblivious(X, y, depth, min_leaf=1):
    """Oblivious tree: one (feature, cut, side) per level maximising the summed gain over
    the level's open nodes; a node whose children would be too small passes whole."""
    root = sse(y)
    frontier = [np.arange(len(y))]
    leaves, cuts = [], []
    for _ in range(depth):
        frontier_open = []
        for S in frontier:
            if len(S) >= 2 * min_leaf and sse(y[S]) > CONSTANT * root:
                frontier_open.append(S)
            else:
                leaves.append(S)
        frontier = frontier_open
        if not frontier:
            break
        best = None
        everything = np.arange(len(y))
        for f, t, ml, _ in candidates(X, everything):
            total = 0.0
            for S in frontier:
                x = X[S, f]
                left = np.where(np.isnan(x), ml, x <= t)
                if left.sum() >= min_leaf and (~left).sum() >= min_leaf:
                    total += sse(y[S]) - sse(y[S[left]]) - sse(y[S[~left]])
            if best is None or beats_reference(total, best[0]):
                best = (total, f, t, ml)
        if best is None or best[0] <= 0:
            break
        _, f, t, ml = best
        cuts.append((f, t, ml))
        nxt = []
        for S in frontier:
            x = X[S, f]
            left = np.where(np.isnan(x), ml, x <= t)
            if left.sum() >= min_leaf and (~left).sum() >= min_leaf:
                nxt += [S[left], S[~left]]
            else:
                nxt.append(S)
        frontier = nxt
    return cuts, leaves + frontier


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_oblivious_tree_equals_the_brute_force(n_outputs):
    """One output column: the compiled one-output growth; three: the level loop."""
    X, y, queries = data(n=120, seed=1)
    depth = 3
    cuts, leaves = grow_oblivious(X, y, depth)
    model = OKBoostRegressor(
        tree_type="oblivious", n_estimators=1, learning_rate=1.0, max_depth=depth,
        max_bins=255, l2_regularization=0.0, sketch_dim=None, early_stopping=False,
        refine_cuts=False, random_state=0,
    ).fit(X, outputs(y, n_outputs))  # fmt: skip
    feature, threshold, missing_left = tree_arrays(model)
    got = sorted({(int(f), float(t)) for f, t in zip(feature, threshold, strict=True)})
    assert got == sorted({(f, float(t)) for f, t, _ in cuts})
    for f, t, ml in cuts:  # one learned side per level (features holding missing values)
        if np.isnan(X[:, f]).any():
            assert set(missing_left[(feature == f) & (threshold == t)].tolist()) == {int(ml)}
    assert any(ml for *_, ml in cuts)
    leaf_of = np.empty(len(y), dtype=int)
    for i, S in enumerate(leaves):
        leaf_of[S] = i
    means = np.array([y[S].mean() for S in leaves])
    np.testing.assert_allclose(first_column(model.predict(X)), means[leaf_of], atol=1e-12)


def test_all_observed_data_give_the_trees_of_before():
    """No NaN: no twin column, so every tree type grows the trees of the build before
    missing values existed (arrays recorded from it: data/missing_all_observed.npz)."""
    recorded = np.load(RECORDED)
    for name, arrays in all_observed_fits().items():
        for key, value in arrays.items():
            np.testing.assert_array_equal(value, recorded[f"{name}/{key}"], err_msg=name + key)


def test_nan_at_prediction_in_a_feature_never_missing_goes_to_the_larger_child():
    X, y, _ = data()
    X[:, 0] = np.nan_to_num(X[:, 0], nan=0.5)  # feature 0 now never missing
    model = OK3Regressor(max_splits=5).fit(X, y)
    e = model.ensemble_
    cuts = np.flatnonzero((e.left >= 0) & (e.feature == 0))
    assert len(cuts)
    for node in cuts:
        left_larger = e.n_samples[e.left[node]] > e.n_samples[e.right[node]]
        assert bool(e.missing_left[node]) == left_larger
    query = X[:5].copy()
    query[:, 0] = np.nan
    leaves = e.apply(query)[0]
    for q in range(5):  # walk by hand: NaN in feature 0 takes the larger child
        node = 0
        while e.left[node] >= 0:
            x = query[q, e.feature[node]]
            larger_left = e.n_samples[e.left[node]] > e.n_samples[e.right[node]]
            side = larger_left if e.feature[node] == 0 else bool(e.missing_left[node])
            left = side if np.isnan(x) else x <= e.threshold[node]
            node = e.left[node] if left else e.right[node]
        assert e.leaf[node] == leaves[q]


@pytest.mark.parametrize(
    "estimator",
    [
        OKBoostRegressor(n_estimators=15, random_state=0),
        OKBoostRegressor(n_estimators=5, tree_type="best-first", max_bins=None, random_state=0),
        OK3ForestRegressor(n_estimators=4, bootstrap=True, max_bins=64, random_state=0),
    ],
    ids=["oblivious", "exact", "forest"],
)
def test_save_and_load_keep_the_missing_sides(estimator, tmp_path):
    X, y, queries = data()
    model = estimator.fit(X, y)
    assert model.ensemble_.missing_left.any()
    loaded = load(save(model, tmp_path / "m"))
    np.testing.assert_array_equal(loaded.ensemble_.missing_left, model.ensemble_.missing_left)
    np.testing.assert_array_equal(loaded.predict(queries), model.predict(queries))


def test_a_model_file_without_the_sides_sends_missing_values_right(tmp_path):
    """A file saved before ``missing_left`` existed (the array and its manifest entry
    removed) loads, and sends every missing input right, as such models did."""
    X, y, queries = data()
    model = OK3Regressor(max_splits=6).fit(X, y)
    folder = save(model, tmp_path / "m")
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["arrays"]["ensemble.missing_left"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    arrays = dict(np.load(folder / "arrays.npz"))
    del arrays["ensemble.missing_left"]
    np.savez(folder / "arrays.npz", **arrays)
    old = load(folder)
    assert old.ensemble_.missing_left is None
    all_right = replace(model.ensemble_, missing_left=np.zeros_like(model.ensemble_.missing_left))
    np.testing.assert_array_equal(old.predict_features(queries), all_right.decision(queries))


def test_models_without_trees_refuse_missing_values_naming_what_to_do():
    X, y, _ = data()
    with pytest.raises(DataError, match=r"holds missing values \(NaN\).*impute.*OKBoostRegressor"):
        KernelRidgeRegressor().fit(X, y)
    model = KernelRidgeRegressor().fit(np.nan_to_num(X), y)
    with pytest.raises(DataError, match="KernelRidgeRegressor does not accept them"):
        model.predict(X)


def reference_random_root(X, y, seed, max_features):
    """OK3-et's root split drawn as the builder draws it (a permutation of the features, one
    uniform each): each tried feature's cut in the range of its observed values, scored
    with the missing rows right, then left (a feature holding missing values), the better
    kept; the best of the tried by the tie rule (columns in order, twins after the inputs)."""
    rng = np.random.default_rng(seed)
    p = X.shape[1]
    features, uniforms = rng.permutation(p), rng.random(p)
    twins = [f for f in range(p) if np.isnan(X[:, f]).any()]
    tried, candidates = 0, []
    for t, f in enumerate(features):
        x = X[:, f]
        miss = np.isnan(x)
        if miss.all() or x[~miss].max() <= x[~miss].min() + FEATURE_THRESHOLD:
            continue
        tried += 1
        lo, hi = x[~miss].min(), x[~miss].max()
        cut = lo + uniforms[t] * (hi - lo)
        best = None
        for missing_left in (False, True) if f in twins else (False,):
            left = np.where(miss, missing_left, x <= cut)
            if left.all() or not left.any():
                continue
            gain = sse(y) - sse(y[left]) - sse(y[~left])
            column = p + twins.index(f) if missing_left else f
            if best is None or beats_reference(gain, best[1]):
                best = (column, gain, cut, missing_left, f)
        if best is not None:
            candidates.append(best)
        if tried == max_features:
            break
    chosen = None
    for candidate in sorted(candidates):
        if chosen is None or beats_reference(candidate[1], chosen[1]):
            chosen = candidate
    return chosen


@pytest.mark.parametrize("binned", [False, True])
@pytest.mark.parametrize("max_features", [1, 2, 3])
@pytest.mark.parametrize("seed", range(6))
def test_random_split_equals_the_reference(binned, max_features, seed):
    from okcore.trees.binning import bin_inputs
    from okcore.trees.builder import TreeParams, build_tree
    from okcore.trees.missing import missing_features, with_twins

    X, y, _ = data(seed=seed)
    twins = missing_features(X)
    inputs = with_twins(X, twins)
    params = TreeParams(
        splitter="random", max_splits=1, max_features=max_features, leaf_order="variance",
        min_samples_leaf=1, max_depth=None, missing=tuple(int(f) for f in twins),
    )  # fmt: skip
    rng = np.random.default_rng(seed)
    if binned:
        tree = build_tree(None, y[:, None], params, rng, binned=bin_inputs(inputs, 255))
    else:
        tree = build_tree(np.ascontiguousarray(inputs.T), y[:, None], params, rng)
    _, _, threshold, missing_left, feature = reference_random_root(X, y, seed, max_features)
    assert (tree.feature[0], bool(tree.missing_left[0])) == (feature, missing_left)
    np.testing.assert_allclose(tree.threshold[0], threshold, rtol=0, atol=1e-12)


def test_random_splits_learn_the_missing_side_in_every_search():
    """OK3-et grows the same tree from the exact inputs, their bins and a CSR matrix (one
    distinct value per bin), with missing values on both sides."""
    X, y, _ = data(n=200, seed=4)
    X = np.where(X < 0.2, 0.0, X)
    Xs = sparse.csr_matrix(np.nan_to_num(X, nan=7.0))
    Xs.data[Xs.data == 7.0] = np.nan
    trees = [
        OK3Regressor(splitter="random", max_splits=15, max_bins=bins, random_state=3)
        .fit(inputs, y)
        .ensemble_
        for bins, inputs in ((None, X), (255, X), (255, Xs))
    ]
    assert trees[0].missing_left.any()
    for e in trees[1:]:
        np.testing.assert_array_equal(e.feature, trees[0].feature)
        np.testing.assert_array_equal(e.missing_left, trees[0].missing_left)
        np.testing.assert_allclose(e.threshold, trees[0].threshold, rtol=0, atol=1e-12)


def test_infinity_is_still_refused():
    X, y, _ = data()
    X[3, 2] = np.inf
    with pytest.raises(DataError, match="contains infinity"):
        OK3Regressor().fit(X, y)


# ---------------------------------------------------------------- recorded all-observed fits
RECORDED = Path(__file__).with_name("data") / "missing_all_observed.npz"


def all_observed_fits() -> dict[str, dict[str, np.ndarray]]:
    """A few fits of each tree type on data without missing values: node arrays and
    predictions (public API only, so the build before missing values records them too)."""
    rng = np.random.default_rng(5)
    X = rng.random((400, 5))
    Y = np.c_[np.sin(3 * X[:, 0]) + X[:, 1] * X[:, 2], X[:, 3] ** 2] + 0.1 * rng.standard_normal(
        (400, 2)
    )
    queries = rng.random((50, 5))
    Xs = sparse.csr_matrix(np.where(X < 0.5, 0.0, X))
    fits = {
        "oblivious": (OKBoostRegressor(n_estimators=10, random_state=0), X),
        "oblivious_one_output": (OKBoostRegressor(n_estimators=10, random_state=0), X, 0),
        "best_first_hist": (
            OKBoostRegressor(n_estimators=5, tree_type="best-first", max_bins=32, random_state=0),
            X,
        ),
        "exact": (OK3Regressor(max_splits=20), X),
        "forest": (OK3ForestRegressor(n_estimators=3, max_bins=64, random_state=0), X),
        "sparse": (OK3Regressor(max_splits=15, max_bins=64), Xs),
        "random": (OK3ForestRegressor(n_estimators=3, splitter="random", random_state=0), X),
        "random_binned": (
            OK3ForestRegressor(n_estimators=3, splitter="random", max_bins=32, random_state=0),
            X,
        ),
        "random_sparse": (OK3Regressor(splitter="random", max_bins=32, random_state=0), Xs),
    }
    out = {}
    for name, (est, inputs, *column) in fits.items():
        target = Y[:, column[0]] if column else Y
        model = est.fit(inputs, target)
        e = model.ensemble_
        Q = queries if not sparse.issparse(inputs) else sparse.csr_matrix(queries)
        out[name] = {
            "feature": e.feature,
            "threshold": e.threshold,
            "value": e.value,
            "predict": np.asarray(model.predict(Q), dtype=float),
        }
    return out


if __name__ == "__main__":  # record (run with the build to compare against on PYTHONPATH)
    np.savez_compressed(
        RECORDED, **{f"{n}/{k}": v for n, a in all_observed_fits().items() for k, v in a.items()}
    )


@pytest.mark.parametrize("tree_type", ["best-first", "oblivious"])
def test_refined_cuts_beside_the_missing_bin_route_rows_as_the_growth_did(tree_type):
    """Few bins, so refinement moves cuts inside bins, next to the missing values' bin too:
    prediction must send every training row where the growth did (each leaf's value is the
    mean of the training rows prediction routes to it)."""
    rng = np.random.default_rng(3)
    X = rng.random((600, 3))
    y = np.sin(6 * X[:, 0]) + (X[:, 1] > 0.8) + 0.05 * rng.standard_normal(600)
    X[rng.random(600) < 0.3, 0] = np.nan
    X[rng.random(600) < 0.3, 1] = np.nan
    model = OKBoostRegressor(
        tree_type=tree_type, n_estimators=1, learning_rate=1.0, max_depth=4, max_splits=12,
        max_bins=6, refine_cuts=True, l2_regularization=0.0, sketch_dim=None,
        early_stopping=False, random_state=0,
    ).fit(X, y)  # fmt: skip
    e = model.ensemble_
    assert e.missing_left.any()
    leaves = e.apply(X)[0]
    prediction = model.predict(X)
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        np.testing.assert_allclose(prediction[rows], y[rows].mean(), atol=1e-10)


def test_a_similarity_with_a_missing_value_is_refused_saying_so():
    from okcore import SimilarityInputs

    rng = np.random.default_rng(0)
    F = rng.random((30, 3))
    S = F @ F.T
    S[2, 5] = S[5, 2] = np.nan
    with pytest.raises(DataError, match=r"X holds a missing value \(NaN\) at \[2, 5\]: a similar"):
        SimilarityInputs(OKBoostRegressor(n_estimators=3)).fit(S, F[:, 0])
