"""Saving bipartite models without pickle (okcore.io format version 9): the default rank
average and every kind of member round-trip to identical scores of all three blocks, and a
damaged or tampered model folder raises PersistenceError instead of loading; the default
reports each member it fits (what a job shows while it trains)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import okcore
from okcore import OKBoostRegressor, PersistenceError, io
from okcore.bipartite import (
    NRLMF,
    BipartiteRegressor,
    NeighbourRegressor,
    RankAveragedBipartite,
)
from okcore.bipartite.pairs import predict_block
from okcore.kernel_models.ridge import KernelRidgeRegressor


def _similarity(n: int, seed: int) -> np.ndarray:
    A = np.random.default_rng(seed).random((n, 3))
    S = A @ A.T
    d = np.sqrt(np.diag(S))
    return S / np.outer(d, d)


def _features() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    Xr, Xc = rng.normal(size=(18, 4)), rng.normal(size=(12, 3))
    Y = (Xr[:, :1] @ Xc[:, :1].T + 0.5 * rng.normal(size=(18, 12)) > 0.8).astype(float)
    return Xr, Xc, Y


def _same_scores(model: Any, loaded: Any, Xr_new: Any, Xc_new: Any) -> None:
    for args in ((Xr_new,), (None, Xc_new), (Xr_new, Xc_new)):
        np.testing.assert_array_equal(predict_block(loaded, *args), predict_block(model, *args))


@pytest.fixture(scope="module")
def default_model() -> BipartiteRegressor:
    Xr, Xc, Y = _features()
    Y[0, 5] = np.nan  # an unknown pair: filled before every member
    return BipartiteRegressor(random_state=3).fit(Xr, Xc, Y)


def test_default_round_trip_scores_every_block_identically(default_model, tmp_path) -> None:  # type: ignore[no-untyped-def]
    loaded = okcore.load(okcore.save(default_model, tmp_path / "m"))
    rng = np.random.default_rng(1)
    _same_scores(default_model, loaded, rng.normal(size=(5, 4)), rng.normal(size=(4, 3)))
    members = loaded.default_model_.members_
    assert [type(m).__name__ for m in members] == [
        type(m).__name__ for m in default_model.default_model_.members_
    ]
    assert loaded.default_model_.weights == default_model.default_model_.weights_for()
    np.testing.assert_array_equal(loaded.Y_, default_model.Y_)
    assert loaded.n_unknown_ == 1
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert manifest["format_version"] == io.BIPARTITE_VERSION
    assert manifest["members"] == ["default"]
    assert manifest["attributes"]["n_train_"] == 18
    assert manifest["attributes"]["n_features_in_"] == 4
    with pytest.raises(okcore.DataError, match="no W"):
        loaded.row_weights(np.zeros((1, 4)))


def test_default_on_similarities_round_trips(tmp_path) -> None:  # type: ignore[no-untyped-def]
    S_r, S_c = _similarity(14, 0), _similarity(10, 1)
    Y = ((S_r[:, :1] * S_c[:1, :]) > 0.6).astype(float)
    model = BipartiteRegressor(inputs="similarity").fit(S_r, S_c, Y)
    loaded = okcore.load(okcore.save(model, tmp_path / "m"))
    _same_scores(model, loaded, S_r[:3], S_c[:4])


@pytest.mark.parametrize(
    "make",
    [
        lambda: BipartiteRegressor(NeighbourRegressor(3, 0.8, "cosine")),
        lambda: BipartiteRegressor(
            KernelRidgeRegressor(alpha=1.0), new_pairs="kronecker", recovery_neighbors=3
        ),
        lambda: BipartiteRegressor(
            OKBoostRegressor(n_estimators=5),
            new_pairs="pair-trees",
            max_pairs=100,
            pair_estimator=OKBoostRegressor(n_estimators=3),
        ),  # fmt: skip
        lambda: BipartiteRegressor(OKBoostRegressor(n_estimators=5), new_pairs="refit"),
        lambda: NRLMF(3, n_neighbors=3, max_iter=10),
        lambda: RankAveragedBipartite(
            [NRLMF(3, max_iter=5), BipartiteRegressor(NeighbourRegressor(3, 0.8, "cosine"))],
            [2.0, 1.0],
        ),
    ],
    ids=["wknn", "kronecker", "pair-trees", "refit", "nrlmf", "rank-average"],
)
def test_every_member_kind_round_trips(make, tmp_path) -> None:  # type: ignore[no-untyped-def]
    Xr, Xc, Y = _features()
    model = make().fit(Xr, Xc, Y)
    loaded = okcore.load(okcore.save(model, tmp_path / "m"))
    assert type(loaded) is type(model)
    _same_scores(model, loaded, Xr[:3] + 0.1, Xc[:4] - 0.1)


def test_weighted_refit_keeps_its_vertex_weights(tmp_path) -> None:  # type: ignore[no-untyped-def]
    Xr, Xc, Y = _features()
    model = BipartiteRegressor(OKBoostRegressor(n_estimators=4), new_pairs="refit").fit(
        Xr, Xc, Y, row_weight=np.linspace(0.5, 2.0, 18)
    )
    loaded = okcore.load(okcore.save(model, tmp_path / "m"))
    np.testing.assert_array_equal(loaded.row_weight_, model.row_weight_)
    _same_scores(model, loaded, Xr[:2], Xc[:2])


def test_unfitted_models_are_not_saved(tmp_path) -> None:  # type: ignore[no-untyped-def]
    for model in (BipartiteRegressor(), NRLMF(), RankAveragedBipartite([NRLMF()])):
        with pytest.raises(PersistenceError, match="only fitted"):
            okcore.save(model, tmp_path / "m")


@pytest.fixture()
def saved(default_model, tmp_path) -> Path:  # type: ignore[no-untyped-def]
    return okcore.save(default_model, tmp_path / "m")


def _edit(path: Path, change: Any) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    change(manifest)
    (path / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    ("where", "change", "message"),
    [
        ("", lambda m: m.update(members=["../outside"]), "members its manifest lists"),
        ("", lambda m: m.update(members=[]), "members its manifest lists"),
        ("default", lambda m: m.update(weights=[1.0, 1.0]), "members its manifest lists"),
        ("default", lambda m: m.update(weights=[1.0, -1.0, 1.0, 1.0]), "positive"),
        ("", lambda m: m["attributes"].update(n_rows_=17), "number of row or column"),
        ("", lambda m: m["attributes"].update(n_features_in_=5), "width"),
        ("default/member-2", lambda m: m["params"].update(n_factors=7), "side models"),
        ("default/member-0", lambda m: m["params"].update(new_pairs="kronecker"), "Kronecker"),
        ("default/member-1", lambda m: m["params"].update(new_pairs="two-step"), "no Kronecker"),
        ("", lambda m: m.pop("members"), "inconsistent"),
        ("", lambda m: m["arrays"]["Y"].update(sha256="0" * 64), "checksum"),
    ],
)
def test_a_tampered_manifest_raises(saved, where, change, message) -> None:  # type: ignore[no-untyped-def]
    _edit(saved / where if where else saved, change)
    with pytest.raises(PersistenceError, match=message):
        okcore.load(saved)


def test_a_missing_or_swapped_member_raises(saved) -> None:  # type: ignore[no-untyped-def]
    shutil.rmtree(saved / "default" / "member-3" / "cols")
    with pytest.raises(PersistenceError, match="manifest.json missing"):
        okcore.load(saved)


def test_a_nested_rank_average_raises(saved) -> None:  # type: ignore[no-untyped-def]
    # a rank average put where a member is: refused (no deeper nesting)
    member = saved / "default" / "member-1"
    shutil.rmtree(member)
    shutil.copytree(saved / "default", member)
    with pytest.raises(PersistenceError):
        okcore.load(saved)


def test_changed_interactions_fail_their_checksum(saved) -> None:  # type: ignore[no-untyped-def]
    with np.load(saved / "arrays.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["Y"][0, 0] = 1.0 - arrays["Y"][0, 0]
    np.savez(saved / "arrays.npz", **arrays)
    with pytest.raises(PersistenceError, match="'Y' .* fails its checksum"):
        okcore.load(saved)


def test_the_default_reports_its_members_and_their_trees() -> None:
    Xr, Xc, Y = _features()
    heard: list[Any] = []
    BipartiteRegressor().fit(Xr, Xc, Y, callback=heard.append)
    starts = [p for p in heard if p.phase == "members"]
    n = len(starts) - 1
    assert [p.done for p in starts] == list(range(n + 1))
    assert [p.part for p in starts[:-1]] == [f"member-{i}" for i in range(n)]
    trees = {p.part for p in heard if p.phase == "trees"}
    assert any(part.endswith("/rows") for part in trees)
    assert any(part.endswith("/columns") for part in trees)


def test_a_rank_average_keeps_its_block_weights(tmp_path):
    from okcore.defaults import BIPARTITE_BLOCK_WEIGHTS

    rng = np.random.default_rng(4)
    X_rows, X_cols = rng.normal(size=(14, 3)), rng.normal(size=(9, 3))
    Y = (rng.uniform(size=(14, 9)) < 0.3).astype(float)
    members = [
        okcore.bipartite.NRLMF(n_factors=3, max_iter=5, random_state=0),
        okcore.bipartite.NRLMF(n_factors=4, max_iter=5, random_state=1),
    ]
    assert "new_rows" in BIPARTITE_BLOCK_WEIGHTS
    model = okcore.bipartite.RankAveragedBipartite(
        members, [1.0, 1.0], block_weights={"new_rows": [0.0, 1.0]}
    ).fit(X_rows, X_cols, Y)
    okcore.save(model, tmp_path / "m")
    loaded = okcore.load(tmp_path / "m")
    assert loaded.block_weights == {"new_rows": [0.0, 1.0]}
    new_rows, new_cols = rng.normal(size=(4, 3)), rng.normal(size=(3, 3))
    for method, new in (("predict_new_rows", new_rows), ("predict_new_cols", new_cols)):
        np.testing.assert_array_equal(getattr(loaded, method)(new), getattr(model, method)(new))
