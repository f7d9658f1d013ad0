"""save / load: exact round trips, no pickle, and every kind of damaged model refused."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from okdata import make_regression, rbf_gram, ring_edges

import okcore
from okcore import (
    OK3ForestRegressor,
    OK3Regressor,
    OKBoostRegressor,
    PersistenceError,
    load,
    save,
)
from okcore.trees.ensemble import TreeEnsemble

N = 25
ESTIMATORS = {
    "boost": lambda: OKBoostRegressor(
        n_estimators=6, learning_rate=0.3, max_splits=3, random_state=1
    ),
    "tree": lambda: OK3Regressor(max_splits=8, min_samples_leaf=2),
    "forest": lambda: OK3ForestRegressor(n_estimators=3, max_features=2, random_state=2),
    # robust losses: per-row leaf weights and F_0's weights persist (format version 3)
    "boost-absolute": lambda: OKBoostRegressor(
        loss="absolute", n_estimators=6, learning_rate=0.3, max_splits=3, random_state=1
    ),
    "boost-huber": lambda: OKBoostRegressor(
        loss="huber", alpha=0.8, n_estimators=6, max_splits=3, subsample=0.8, random_state=1
    ),
}
KERNELS = ("linear", "rbf", "polynomial", "gram", "diffusion")
# every array field of the ensemble (from the dataclass, not from io's own list)
ENSEMBLE_ARRAYS = tuple(
    f.name
    for f in dataclasses.fields(TreeEnsemble)
    if f.name not in ("combine", "learning_rate", "l2_regularization")
)


def fit(kind: str, kernel: str, **fit_kwargs):
    X, Y = make_regression(n=N, p=3, seed=6)
    est = ESTIMATORS[kind]()
    if kernel == "linear":
        return est.fit(X, Y, **fit_kwargs), X, Y
    if kernel == "rbf":
        return est.fit(X, Y, kernel={"type": "rbf", "sigma": 1.5}, **fit_kwargs), X, Y
    if kernel == "polynomial":
        return est.fit(X, Y, kernel={"type": "polynomial", "degree": 2}, **fit_kwargs), X, Y
    if kernel == "gram":
        return est.fit(X, gram=rbf_gram(Y, Y, 0.5), **fit_kwargs), X, None
    edges = ring_edges(N, chords=10, seed=3)
    return (
        est.fit(X, kernel={"type": "diffusion", "beta": 0.7, "edges": edges}, **fit_kwargs),
        X,
        None,
    )


def assert_same_model(a, b, X, Y):
    Xq = np.r_[X[:5], np.random.default_rng(0).random((4, X.shape[1]))]
    assert type(a) is type(b)
    assert a.get_params() == b.get_params()
    for method in ("predict_weights", "predict_kernel", "predict_kernel_train", "predict"):
        np.testing.assert_array_equal(getattr(b, method)(Xq), getattr(a, method)(Xq))
    np.testing.assert_array_equal(b.predict_kernel(Xq, X[:3]), a.predict_kernel(Xq, X[:3]))
    for got, want in zip(b.predict_index(Xq, top_k=3), a.predict_index(Xq, top_k=3), strict=True):
        np.testing.assert_array_equal(got, want)
    if Y is not None:
        got, want = b.predict_index(Xq, Y[::4], top_k=2), a.predict_index(Xq, Y[::4], top_k=2)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(b.feature_importances_, a.feature_importances_)
    # every fitted attribute of the original survives (a new one that io forgets fails here)
    fitted = sorted(k for k in vars(a) if k.endswith("_") and not k.startswith("_"))
    assert fitted == sorted(k for k in vars(b) if k.endswith("_") and not k.startswith("_"))
    for name in set(fitted) - {"output_space_", "ensemble_"}:
        want, got = getattr(a, name), getattr(b, name)
        if isinstance(want, np.ndarray) or isinstance(got, np.ndarray):
            np.testing.assert_array_equal(got, want)
            assert np.asarray(got).dtype == np.asarray(want).dtype, name
        else:
            assert got == want and type(got) is type(want), name
    sa, sb = a.output_space_, b.output_space_
    assert sb.kernel.to_dict() == sa.kernel.to_dict() and type(sb.kernel) is type(sa.kernel)
    for field in ("phi", "diag", "eigenvalues", "outputs"):
        if getattr(sa, field) is None:
            assert getattr(sb, field) is None, field
        else:
            np.testing.assert_array_equal(getattr(sb, field), getattr(sa, field))
    ea, eb = a.ensemble_, b.ensemble_
    assert (eb.combine, eb.learning_rate, eb.l2_regularization) == (
        ea.combine,
        ea.learning_rate,
        ea.l2_regularization,
    )
    for field in ENSEMBLE_ARRAYS:
        if getattr(ea, field) is None:  # the weights of losses whose leaves are means
            assert getattr(eb, field) is None, field
            continue
        np.testing.assert_array_equal(getattr(eb, field), getattr(ea, field))
        assert getattr(eb, field).dtype == getattr(ea, field).dtype, field


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("kind", sorted(ESTIMATORS))
def test_round_trip(kind, kernel, tmp_path):
    est, X, Y = fit(kind, kernel)
    path = save(est, tmp_path / "model")
    assert path == tmp_path / "model"
    assert sorted(p.name for p in path.iterdir()) == ["arrays.npz", "manifest.json"]
    assert_same_model(est, load(path), X, Y)
    assert_same_model(est, load(str(path)), X, Y)  # str paths too


def test_round_trip_of_one_dimensional_outputs(tmp_path):
    X, Y = make_regression(n=N, p=3, seed=6)
    est = OKBoostRegressor(n_estimators=4, max_splits=3, random_state=0).fit(X, Y[:, 0])
    loaded = load(save(est, tmp_path / "m"))
    assert loaded.predict(X).shape == (N,)
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))


@pytest.mark.parametrize("early", ["eval_set", "hold_out"])
def test_round_trip_of_early_stopped_boosting(early, tmp_path):
    X, Y = make_regression(n=40, p=3, seed=6, noise=1.0)
    est = OKBoostRegressor(
        n_estimators=30,
        learning_rate=0.8,
        max_splits=8,
        n_iter_no_change=2,
        tol=0.0,
        random_state=0,
    )
    if early == "eval_set":
        est.fit(X[:30], Y[:30], eval_set=(X[30:], Y[30:]))
    else:
        est.fit(X, Y, kernel={"type": "rbf", "gamma": 0.5})
    assert est.validation_loss_ is not None
    assert_same_model(est, load(save(est, tmp_path / "m")), X, Y)


@pytest.mark.parametrize(("patience", "grown_as"), [(2, True), (None, False)])
def test_models_saved_before_early_stopping_load_as_grown(patience, grown_as, tmp_path):
    """A manifest without ``early_stopping``: the model stopped early exactly when it had
    a patience, and loads saying so."""
    X, Y = make_regression(n=40, p=3, seed=6, noise=1.0)
    est = OKBoostRegressor(n_estimators=5, max_splits=3, n_iter_no_change=patience)
    path = save(est.fit(X, Y), tmp_path / "m")
    manifest = json.loads((path / "manifest.json").read_text())
    del manifest["params"]["early_stopping"]
    (path / "manifest.json").write_text(json.dumps(manifest))
    loaded = load(path)
    assert loaded.early_stopping is grown_as and loaded.n_iter_no_change == patience
    assert_same_model(est.set_params(early_stopping=grown_as), loaded, X, Y)


@pytest.mark.parametrize("kernel", [None, {"type": "rbf", "gamma": 0.5}])
def test_round_trip_of_penalised_boosting(kernel, tmp_path):
    X, Y = make_regression(n=N, p=3, seed=6)
    est = OKBoostRegressor(n_estimators=6, max_splits=4, l2_regularization=2.5, random_state=0)
    est.fit(X, Y, kernel=kernel)
    path = save(est, tmp_path / "m")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["ensemble"]["l2_regularization"] == 2.5
    loaded = load(path)
    assert loaded.ensemble_.l2_regularization == 2.5
    assert_same_model(est, loaded, X, Y)
    # the penalty is part of W^F: a manifest that falsifies it is refused
    manifest["ensemble"]["l2_regularization"] = -1.0
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(PersistenceError, match="l2_regularization must be finite and >= 0"):
        load(path)


def test_stopped_forest_round_trip(tmp_path):
    X, Y = make_regression(n=N, p=3, seed=6)
    est = OK3ForestRegressor(n_estimators=5, random_state=0).fit(
        X, Y, callback=lambda p: p.done == 2
    )
    loaded = load(save(est, tmp_path / "m"))
    assert loaded.n_estimators_ == 2 and loaded.stopped_by_callback_ is True
    assert_same_model(est, loaded, X, Y)


def test_numpy_scalar_parameters_round_trip(tmp_path):
    X, Y = make_regression(n=N, p=3, seed=6)
    est = OKBoostRegressor(
        n_estimators=np.int64(4),
        learning_rate=np.float32(0.5),
        max_splits=np.int32(3),
        max_features=np.float64(0.7),
        random_state=np.int64(4),
    ).fit(X, Y)
    path = save(est, tmp_path / "m")
    params = json.loads((path / "manifest.json").read_text())["params"]
    assert params["n_estimators"] == 4 and params["random_state"] == 4
    assert params["learning_rate"] == 0.5 and params["max_splits"] == 3
    loaded = load(path)
    assert loaded.get_params() == est.get_params()
    assert_same_model(est, loaded, X, Y)


def test_generator_random_state_is_saved_as_none(tmp_path):
    X, Y = make_regression(n=N, p=3, seed=6)
    est = OK3Regressor(max_splits=4, random_state=np.random.default_rng(0)).fit(X, Y)
    loaded = load(save(est, tmp_path / "m"))
    assert loaded.random_state is None
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))


def test_manifest_contents(tmp_path):
    est, _, _ = fit("boost", "diffusion")
    path = save(est, tmp_path / "m")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format"] == "okcore-model"
    assert manifest["format_version"] == 1
    assert manifest["okcore_version"] == okcore.__version__
    assert manifest["estimator"] == "OKBoostRegressor"
    assert manifest["params"] == est.get_params()
    assert manifest["kernel"] == {"type": "diffusion", "beta": 0.7}  # edges are an array
    with np.load(path / "arrays.npz", allow_pickle=False) as npz:
        assert set(npz.files) == set(manifest["arrays"])
        np.testing.assert_array_equal(npz["kernel.edges"], est.output_space_.kernel.edges)
        for name in npz.files:
            assert manifest["arrays"][name]["sha256"] == sha256(npz[name])
            assert manifest["arrays"][name]["shape"] == list(npz[name].shape)


# ---------------------------------------------------------------------- no pickle
def test_loading_never_unpickles(tmp_path, monkeypatch):
    est, X, Y = fit("forest", "rbf")
    path = save(est, tmp_path / "m")
    calls = []
    real_load = np.load

    def spy(*args, **kwargs):
        calls.append(kwargs.get("allow_pickle"))
        return real_load(*args, **kwargs)

    def forbidden(*args, **kwargs):
        raise AssertionError("load must never unpickle")

    monkeypatch.setattr(np, "load", spy)
    monkeypatch.setattr(pickle, "loads", forbidden)
    monkeypatch.setattr(pickle, "load", forbidden)
    monkeypatch.setattr(pickle, "Unpickler", forbidden)
    assert_same_model(est, load(path), X, Y)
    assert calls == [False]


def test_a_pickled_object_array_is_refused(tmp_path):
    est, _, _ = fit("tree", "linear")
    path = save(est, tmp_path / "m")
    arrays = read_arrays(path)
    arrays["space.diag"] = np.array([{"evil": 1}] * N, dtype=object)
    np.savez(path / "arrays.npz", **arrays)  # an object array is stored pickled
    with pytest.raises(PersistenceError, match="corrupted"):
        load(path)


# ---------------------------------------------------------------------- damaged models
def sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def read_arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path / "arrays.npz", allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def rewrite(path: Path, arrays: dict[str, np.ndarray], *, rehash: bool) -> None:
    """Write new arrays; with ``rehash`` also a manifest whose checksums match them."""
    np.savez(path / "arrays.npz", **arrays)
    if rehash:
        manifest = json.loads((path / "manifest.json").read_text())
        for name, array in arrays.items():
            manifest["arrays"][name] = {
                "sha256": sha256(array),
                "shape": list(array.shape),
                "dtype": array.dtype.str,
            }
        (path / "manifest.json").write_text(json.dumps(manifest))


def set_entry(path: Path, name: str, position: int, value, *, rehash: bool) -> None:
    """Change one entry (flat index) of one saved array."""
    arrays = read_arrays(path)
    arrays[name] = arrays[name].copy()
    if value < 0 and arrays[name].dtype.kind == "u":  # a tampered file may hold any type
        arrays[name] = arrays[name].astype(np.int32)
    arrays[name].flat[position] = value
    rewrite(path, arrays, rehash=rehash)


def edit_manifest(path: Path, **changes) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    manifest.update(changes)
    (path / "manifest.json").write_text(json.dumps(manifest))


@pytest.fixture
def saved(tmp_path) -> Path:
    est, _, _ = fit("boost", "rbf")
    return save(est, tmp_path / "model")


@pytest.mark.parametrize("damage", ["random bytes", "truncated", "empty"])
def test_corrupted_arrays_file(saved, damage):
    data = (saved / "arrays.npz").read_bytes()
    if damage == "random bytes":
        data = np.random.default_rng(0).bytes(len(data))
    elif damage == "truncated":
        data = data[: len(data) // 2]
    else:
        data = b""
    (saved / "arrays.npz").write_bytes(data)
    with pytest.raises(PersistenceError, match=r"model arrays at .*arrays\.npz are corrupted"):
        load(saved)


def test_flipped_bytes_inside_the_archive(saved):
    data = bytearray((saved / "arrays.npz").read_bytes())
    middle = len(data) // 2
    data[middle : middle + 16] = bytes(16)
    (saved / "arrays.npz").write_bytes(bytes(data))
    with pytest.raises(PersistenceError):
        load(saved)


@pytest.mark.parametrize(
    "name", ["ensemble.value", "ensemble.threshold", "space.phi", "ensemble.train_leaf"]
)
def test_modified_array_fails_its_checksum(saved, name):
    set_entry(saved, name, 0, read_arrays(saved)[name].flat[0] + 1, rehash=False)
    with pytest.raises(PersistenceError, match=f"model array '{name}' at .* fails its checksum"):
        load(saved)


def test_changed_dtype_fails_its_checksum(saved):
    arrays = read_arrays(saved)
    arrays["ensemble.left"] = arrays["ensemble.left"].astype(np.int64)
    rewrite(saved, arrays, rehash=False)
    with pytest.raises(PersistenceError, match="'ensemble.left' .* fails its checksum"):
        load(saved)


def test_missing_or_extra_array(saved):
    arrays = read_arrays(saved)
    extra = {**arrays, "surprise": np.zeros(3)}
    rewrite(saved, extra, rehash=False)
    with pytest.raises(PersistenceError, match="do not match the manifest's list"):
        load(saved)
    del arrays["space.diag"]
    rewrite(saved, arrays, rehash=False)
    with pytest.raises(PersistenceError, match="do not match the manifest's list"):
        load(saved)


STRUCTURE_DAMAGE = {
    "child index out of range": ("ensemble.left", 0, 10_000),
    "child index out of range ": ("ensemble.right", 0, -5),
    "split feature out of range": ("ensemble.feature", 0, 3),
    "leaf number out of range": ("ensemble.leaf", -1, 99),
    "training leaf out of range": ("ensemble.train_leaf", 0, 50),
    "tree offsets are not increasing": ("ensemble.node_offset", 1, 0),
    "node sample counts must be positive": ("ensemble.n_samples", -1, 0),
    "node sample counts must be positive ": ("ensemble.train_count", 3, -1),
}


@pytest.mark.parametrize("what", sorted(STRUCTURE_DAMAGE))
def test_valid_checksum_but_invalid_structure(saved, what):
    name, position, value = STRUCTURE_DAMAGE[what]
    set_entry(saved, name, position, value, rehash=True)
    with pytest.raises(PersistenceError, match=f"^model structure is invalid: {what.strip()}"):
        load(saved)


@pytest.mark.parametrize("name", ["ensemble.train_leaf", "ensemble.train_count"])
def test_valid_checksum_but_training_leaves_or_counts_not_integers(saved, name):
    arrays = read_arrays(saved)
    arrays[name] = arrays[name].astype(np.float64)
    rewrite(saved, arrays, rehash=True)
    with pytest.raises(PersistenceError, match="^model structure is invalid: training leaves"):
        load(saved)


def test_valid_checksum_but_leaf_values_of_the_wrong_width(saved):
    arrays = read_arrays(saved)
    arrays["ensemble.value"] = arrays["ensemble.value"][:, :-1].copy()
    rewrite(saved, arrays, rehash=True)
    with pytest.raises(
        PersistenceError, match="^model structure is invalid: leaf values or counts"
    ):
        load(saved)


def test_valid_checksum_but_non_finite_leaf_value(saved):
    arrays = read_arrays(saved)
    arrays["ensemble.value"] = arrays["ensemble.value"].copy()
    arrays["ensemble.value"][0, 0] = np.nan
    rewrite(saved, arrays, rehash=True)
    with pytest.raises(PersistenceError, match="^model structure is invalid"):
        load(saved)


@pytest.mark.parametrize(
    ("name", "change", "what"),
    [
        ("ensemble.init", lambda a: a[:1].copy(), "initial value or eigenvalues"),
        ("space.eigenvalues", lambda a: a[:1].copy(), "initial value or eigenvalues"),
        ("space.outputs", lambda a: a[:-1].copy(), "training outputs do not match"),
        ("space.phi", lambda a: np.where(a == a.flat[0], np.inf, a), "output space arrays"),
    ],
)
def test_valid_checksum_but_inconsistent_output_space(saved, name, change, what):
    arrays = read_arrays(saved)
    arrays[name] = change(arrays[name])
    rewrite(saved, arrays, rehash=True)
    with pytest.raises(PersistenceError, match=f"^model structure is invalid: {what}"):
        load(saved)


def test_missing_manifest(saved):
    (saved / "manifest.json").unlink()
    with pytest.raises(PersistenceError, match=r"^no model at .* \(manifest.json missing\)$"):
        load(saved)
    with pytest.raises(PersistenceError, match="manifest.json missing"):
        load(saved.parent / "never-saved")


def test_missing_arrays(saved):
    (saved / "arrays.npz").unlink()
    with pytest.raises(PersistenceError, match="^model arrays missing"):
        load(saved)


def test_unreadable_manifest(saved):
    (saved / "manifest.json").write_text("{not json")
    with pytest.raises(PersistenceError, match="manifest at .* is unreadable"):
        load(saved)
    (saved / "manifest.json").write_text("[1, 2]")
    with pytest.raises(PersistenceError, match="is not an okcore model"):
        load(saved)


def test_wrong_format(saved):
    edit_manifest(saved, format="lightgbm")
    with pytest.raises(PersistenceError, match="is not an okcore model"):
        load(saved)


@pytest.mark.parametrize("version", [0, 10, "1", "2", None])
def test_wrong_format_version(saved, version):
    edit_manifest(saved, format_version=version)
    expected = (
        f"^model format version {version!r} is not supported "
        "\\(this okcore reads versions 1, 2, 3, 4, 5, 6, 7, 8, 9\\)"
        + ("; it was saved by a newer okcore: upgrade okcore to load it$" if version == 10 else "$")
    )
    with pytest.raises(PersistenceError, match=expected):
        load(saved)


def test_unknown_estimator(saved):
    edit_manifest(saved, estimator="GradientBoostingRegressor")
    with pytest.raises(
        PersistenceError, match="^unknown estimator 'GradientBoostingRegressor' in manifest$"
    ):
        load(saved)


def test_invalid_parameters_in_manifest(saved):
    manifest = json.loads((saved / "manifest.json").read_text())
    edit_manifest(saved, params={**manifest["params"], "max_splits": 0})
    with pytest.raises(PersistenceError, match="is inconsistent: The 'max_splits' parameter"):
        load(saved)
    edit_manifest(saved, params={**manifest["params"], "not_a_param": 1})
    with pytest.raises(PersistenceError, match="is inconsistent"):
        load(saved)


def test_manifest_missing_a_section(saved):
    manifest = json.loads((saved / "manifest.json").read_text())
    del manifest["ensemble"]
    (saved / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(PersistenceError, match="is inconsistent"):
        load(saved)


# ---------------------------------------------------------------------- saving
@pytest.mark.parametrize("cls", [OKBoostRegressor, OK3Regressor, OK3ForestRegressor])
def test_saving_an_unfitted_estimator(cls, tmp_path):
    with pytest.raises(PersistenceError, match="^only fitted okcore estimators can be saved$"):
        save(cls(), tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_saving_something_else(tmp_path):
    from sklearn.linear_model import LinearRegression

    X, Y = make_regression(n=10)
    with pytest.raises(PersistenceError, match="only fitted okcore estimators can be saved"):
        save(LinearRegression().fit(X, Y), tmp_path / "m")


def test_save_over_an_existing_model_replaces_it(tmp_path):
    first, X, Y = fit("tree", "linear")
    second, _, _ = fit("forest", "rbf")
    path = save(first, tmp_path / "model")
    (path / "stray.txt").write_text("left over")
    save(second, path)
    assert sorted(p.name for p in path.iterdir()) == ["arrays.npz", "manifest.json"]
    assert_same_model(second, load(path), X, Y)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no temporary left behind


def test_save_creates_parent_directories(tmp_path):
    est, X, Y = fit("tree", "gram")
    path = save(est, tmp_path / "a" / "b" / "model")
    assert_same_model(est, load(path), X, Y)


def test_round_trip_of_a_nystrom_model(tmp_path):
    """n_landmarks on the estimator: the Nystrom space (landmarks, feature map) persists."""
    rng = np.random.default_rng(11)
    X, Y = rng.random((80, 4)), rng.random((80, 3))
    est = OKBoostRegressor(n_estimators=6, max_splits=3, n_landmarks=30, random_state=2)
    est.fit(X, Y, kernel={"type": "rbf", "sigma": 0.5})
    assert (
        est.output_space_.landmarks.shape == (30, 3) and 0 < est.output_space_.trace_fraction <= 1
    )
    back = load(save(est, tmp_path / "m"))
    Xq, cand = rng.random((7, 4)), rng.random((9, 3))
    np.testing.assert_array_equal(back.predict_kernel(Xq), est.predict_kernel(Xq))
    for a, b in zip(
        back.predict_index(Xq, cand, top_k=3), est.predict_index(Xq, cand, top_k=3), strict=True
    ):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("kind", "version", "weights"),
    [("boost", 1, False), ("boost-absolute", 3, True), ("boost-huber", 3, True)],
)
def test_format_version_is_raised_only_for_models_with_leaf_weights(
    kind, version, weights, tmp_path
):
    """Squared-loss models keep the version-1 layout (readable by older okcore); robust-loss
    models need the weights an older reader would ignore (wrong W^F), so they are version 3."""
    est, _, _ = fit(kind, "rbf")
    path = save(est, tmp_path / "m")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format_version"] == version
    has = {"ensemble.train_weight", "ensemble.init_weight"} <= set(manifest["arrays"])
    assert has is weights
    assert manifest["params"]["loss"] == est.loss


def test_a_version_1_model_without_loss_parameters_still_loads(saved):
    """Models written before `loss` / `alpha` existed load as the square loss."""
    manifest = json.loads((saved / "manifest.json").read_text())
    del manifest["params"]["loss"], manifest["params"]["alpha"]
    (saved / "manifest.json").write_text(json.dumps(manifest))
    model = load(saved)
    assert (model.loss, model.alpha) == ("squared", 0.9)


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("ensemble.train_weight", lambda a: a[:, :-1].copy()),
        ("ensemble.train_weight", lambda a: np.where(a == a.max(), np.nan, a)),
        ("ensemble.init_weight", lambda a: a[:-1].copy()),
        ("ensemble.init_weight", lambda a: a.astype(np.float32)),
    ],
)
def test_valid_checksum_but_inconsistent_leaf_weights(tmp_path, name, change):
    saved = save(fit("boost-absolute", "rbf")[0], tmp_path / "m")
    arrays = read_arrays(saved)
    arrays[name] = change(arrays[name])
    rewrite(saved, arrays, rehash=True)
    with pytest.raises(PersistenceError, match="^model structure is invalid: leaf or initial"):
        load(saved)


def test_saving_a_multilabel_classifier_says_how(tmp_path):
    from okcore import MultiLabelClassifier

    X, Y = make_regression(n=30)
    model = MultiLabelClassifier(OKBoostRegressor(n_estimators=5), threshold=0.5)
    model.fit(X, (Y > 0).astype(int))
    with pytest.raises(PersistenceError, match=r"okcore.save\(model.estimator_, path\)"):
        save(model, tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_save_never_deletes_a_folder_that_is_not_a_model(tmp_path):
    """save(model, "results") on a folder of the user's files used to delete them all."""
    est, _, _ = fit("tree", "linear")
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    with pytest.raises(PersistenceError, match="holds other files, not a saved model"):
        save(est, folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]  # no temporary left
    assert (folder / "notes.txt").read_text() == "keep me"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert (save(est, empty) / "manifest.json").is_file()  # an empty folder is used


def test_save_over_a_file_or_under_one_is_a_persistence_error(tmp_path):
    est, _, _ = fit("tree", "linear")
    file = tmp_path / "model.npz"
    file.write_text("not a folder")
    with pytest.raises(PersistenceError, match="it is a file, not a model folder"):
        save(est, file)
    with pytest.raises(PersistenceError, match="cannot be created or written"):
        save(est, file / "model")
    assert file.read_text() == "not a folder"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz"]


@pytest.mark.parametrize("version", [True, 1.0])
def test_a_format_version_that_only_compares_equal_is_refused(saved, version):
    edit_manifest(saved, format_version=version)
    with pytest.raises(PersistenceError, match=f"^model format version {version!r} is not"):
        load(saved)
