"""Input similarities as inputs (okcore.similarity): the kernel map equals trees on the
explicit kernel-map features, kpca equals scikit-learn's KernelPCA, and cross-validation and
grid search never let a test item's column reach a fold's training."""

from __future__ import annotations

import json

import numpy as np
import pytest
from okdata import make_regression
from sklearn.decomposition import KernelPCA
from sklearn.metrics.pairwise import rbf_kernel

import okcore
from okcore import OK3ForestRegressor, OK3Regressor, OKBoostRegressor, SimilarityInputs
from okcore.exceptions import DataError, PersistenceError
from okcore.model_selection import cross_validate, grid_search, kfold

GAMMA = 0.4


def items(n: int = 60, seed: int = 0):
    X, Y = make_regression(n=n, p=3, d=2, seed=seed)
    return X, Y, rbf_kernel(X, X, gamma=GAMMA)


ESTIMATORS = {
    "ok3": lambda: OK3Regressor(max_splits=6),
    "forest": lambda: OK3ForestRegressor(n_estimators=4, max_features=5, random_state=0),
    "okboost": lambda: OKBoostRegressor(n_estimators=5, max_splits=3, random_state=0),
}


@pytest.mark.parametrize("kind", sorted(ESTIMATORS))
def test_similarity_trees_equal_trees_on_the_explicit_kernel_map(kind):
    """Features of an item = its kernel values against the N training items, computed
    explicitly from raw inputs: the same trees, the same predictions and W^F."""
    X, Y, _ = items()
    train, new = X[:45], X[45:]
    features, new_features = rbf_kernel(train, train, gamma=GAMMA), rbf_kernel(new, train, GAMMA)
    explicit = ESTIMATORS[kind]().fit(features, Y[:45])
    model = SimilarityInputs(ESTIMATORS[kind]()).fit(features, Y[:45])
    np.testing.assert_array_equal(model.predict(new_features), explicit.predict(new_features))
    np.testing.assert_array_equal(
        model.predict_weights(new_features), explicit.predict_weights(new_features)
    )
    assert model.n_features_in_ == 45 and model.estimator_.n_features_in_ == 45


def test_kpca_features_are_scikit_learns_kernel_pca():
    _, _, S = items()
    train, new = S[:45, :45], S[45:, :45]
    model = SimilarityInputs(OK3Regressor(max_splits=3), map="kpca", n_components=5)
    model.fit(train, np.arange(45.0))
    reference = KernelPCA(n_components=5, kernel="precomputed").fit(train)
    for ours, theirs in (
        (model.transform(train), reference.transform(train)),
        (model.transform(new), reference.transform(new)),
    ):
        signs = np.sign(np.sum(ours * theirs, axis=0))  # eigenvectors are defined up to sign
        np.testing.assert_allclose(ours * signs, theirs, atol=1e-8)


def poisoned(S: np.ndarray, test: np.ndarray) -> np.ndarray:
    """S with the columns of the test items made NaN: a fit that used one would raise."""
    out = S.copy()
    out[:, test] = np.nan
    return out


@pytest.mark.parametrize(
    "make",
    [
        lambda: SimilarityInputs(OK3Regressor(max_splits=5)),
        lambda: SimilarityInputs(OK3Regressor(max_splits=5), map="kpca", n_components=8),
        lambda: okcore.KernelRidgeRegressor(input_kernel="precomputed", alpha=[0.1, 1.0]),
    ],
    ids=["kernel_map", "kpca", "krr"],
)
def test_cross_validation_never_uses_a_test_items_column(make):
    """With the test items' columns NaN, every fold still fits (it never sees them) and
    scores exactly as on the clean similarity; and the scores equal a hand-written loop on
    the blocks S[train, train] and S[test, train]."""
    _, Y, S = items()
    train, test = kfold(60, 4, 0)[1]
    split = [(train, test)]
    clean = cross_validate(make(), S, Y, cv=split)
    dirty = cross_validate(make(), poisoned(S, test), Y, cv=split)
    for name in clean:
        np.testing.assert_array_equal(clean[name], dirty[name])
    by_hand = make().fit(S[np.ix_(train, train)], Y[train])
    expected = okcore.metrics.err_phi(by_hand, S[np.ix_(test, train)], Y[test])
    assert clean["err_phi"][0] == pytest.approx(expected, rel=1e-12)


class ColumnSpy(OK3Regressor):
    """Records the item numbers of the columns each fit sees (S[a, b] = 1000 a + b)."""

    seen: list[np.ndarray] = []

    def fit(self, X, Y=None, **kwargs):
        ColumnSpy.seen.append(np.unique(np.asarray(X) % 1000).astype(int))
        return super().fit(X, Y, **kwargs)


def test_grid_search_fits_each_fold_on_its_training_columns_only():
    _, Y, _ = items()
    S = 1000.0 * np.arange(60)[:, None] + np.arange(60)[None, :]
    ColumnSpy.seen = []
    result = grid_search(
        SimilarityInputs(ColumnSpy()), {"estimator__max_splits": [2, 4]}, S, Y, cv=3,
        random_state=1,
    )  # fmt: skip
    folds = kfold(60, 3, 1)
    fold_fits, refit = ColumnSpy.seen[:-1], ColumnSpy.seen[-1]
    assert len(fold_fits) == 6
    for k, seen in enumerate(fold_fits):
        np.testing.assert_array_equal(seen, folds[k % 3][0])
    np.testing.assert_array_equal(refit, np.arange(60))  # the refit sees every item
    assert result.best_estimator.n_features_in_ == 60


@pytest.mark.parametrize("kind", ["kernel_map", "kpca"])
def test_save_and_load_keep_the_input_map(tmp_path, kind):
    _, Y, S = items()
    model = SimilarityInputs(OKBoostRegressor(n_estimators=4, random_state=0), map=kind)
    model.fit(S[:50, :50], Y[:50])
    okcore.save(model, tmp_path / "m")
    loaded = okcore.load(tmp_path / "m")
    assert isinstance(loaded, SimilarityInputs) and loaded.map == kind
    # the manifest describes the model as callers see it: N similarity columns
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert manifest["attributes"]["n_features_in_"] == 50 and manifest["format_version"] == 5
    np.testing.assert_array_equal(loaded.predict(S[50:, :50]), model.predict(S[50:, :50]))
    assert loaded.n_features_in_ == 50


def test_a_damaged_input_map_is_refused(tmp_path):
    _, Y, S = items()
    model = SimilarityInputs(OK3Regressor(), map="kpca", n_components=4).fit(S, Y)
    okcore.save(model, tmp_path / "m")
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    manifest["input_map"]["n_items"] = 59
    (tmp_path / "m" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(PersistenceError, match="input map"):
        okcore.load(tmp_path / "m")


def test_shapes_are_checked_with_clear_messages():
    X, Y, S = items()
    with pytest.raises(DataError, match=r"square \(N, N\) similarity"):
        SimilarityInputs(OK3Regressor()).fit(X, Y)
    model = SimilarityInputs(OK3Regressor()).fit(S[:40, :40], Y[:40])
    with pytest.raises(DataError, match="expecting 40 features"):
        model.predict(S[40:])
    with pytest.raises(DataError, match="takes the similarity itself"):
        SimilarityInputs(okcore.KernelRidgeRegressor(input_kernel="precomputed")).fit(S, Y)
    with pytest.raises(DataError, match=r"square \(N, N\) similarity among the N items"):
        cross_validate(SimilarityInputs(OK3Regressor()), X, Y, cv=3)
    assert okcore.pairwise_inputs(model) and not okcore.pairwise_inputs(OK3Regressor())
