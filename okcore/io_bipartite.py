"""Saving and loading bipartite models as data (:mod:`okcore.io`'s format version 9).

A bipartite model is a folder with ``manifest.json``, ``arrays.npz`` (read with
``allow_pickle=False``, every array checked against its SHA-256 and shape) and one folder
per model it is made of, each a model folder of its own written by :func:`okcore.save`.
The manifest's ``members`` names those folders; which names an estimator may list is
fixed here, so a tampered manifest cannot send a load outside the model's folder:

- :class:`~okcore.bipartite.BipartiteRegressor` with a named model: ``rows`` and
  ``cols`` (the one-sided models), and ``pairs`` (the pair estimator of
  ``new_pairs="pair-trees"``); arrays: the learnt interactions ``Y``, Kronecker ridge's
  ``pairs.offset``, ``pairs.dual``, ``pairs.X_rows``, ``pairs.X_cols``, and for "refit"
  the training inputs ``X_rows``, ``X_cols`` (its second step is fitted on them) and the
  vertex weights when given. Other models do not save the training inputs (they predict
  without them): a loaded model's ``X_rows_`` / ``X_cols_`` are then None;
- :class:`~okcore.bipartite.BipartiteRegressor` with no model named (the default):
  ``default``, its :class:`~okcore.bipartite.RankAveragedBipartite`, and ``Y``;
- :class:`~okcore.bipartite.RankAveragedBipartite`: ``member-0``, ``member-1``, ... and
  the weights (and the per-block weights, when given) in the manifest; a member is any
  bipartite model here but another rank average or default (no deeper nesting);
- :class:`~okcore.bipartite.NRLMF`: ``rows`` and ``cols``, the two
  :class:`~okcore.bipartite.NeighbourRegressor` whose training outputs are the latent
  vectors (:meth:`~okcore.bipartite.NRLMF.from_side_models`), and its objective curve.

The manifest's ``attributes`` describe the model as callers see it: ``n_train_`` the row
vertices, ``n_features_in_`` the row inputs' width (what a caller checks stored inputs
against), ``n_rows_``, ``n_cols_``.

Loading checks that every part agrees with the others (vertex counts, array shapes, finite
values) and raises :class:`~okcore.PersistenceError` otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._validation import validate_params
from .bipartite.ensemble import RankAveragedBipartite
from .bipartite.model import BipartiteRegressor
from .bipartite.neighbours import NeighbourRegressor
from .bipartite.nrlmf import NRLMF
from .bipartite.pairs import KroneckerRidge, PairTrees
from .bipartite.validation import BLOCKS
from .exceptions import PersistenceError
from .io_folder import FORMAT, array_entries, json_value, read_arrays, write_files, write_folder
from .meta import clone

#: The bipartite models saved here, by class name.
BIPARTITE = ("BipartiteRegressor", "RankAveragedBipartite", "NRLMF")
#: Parameters of a BipartiteRegressor that are models (saved as member folders).
MODEL_PARAMS = ("row_estimator", "col_estimator", "pair_estimator")


def save_bipartite(
    model: Any,
    path: Path,
    version: str,
    format_version: int,
    save_member: Callable[[Any, Path], Path],
) -> Path:
    """Write a fitted bipartite model (module docstring) to the folder ``path``; each member
    model is written by ``save_member`` (:func:`okcore.io.save`)."""

    name = type(model).__name__
    members: dict[str, Any]
    arrays: dict[str, np.ndarray] = {}
    extra: dict[str, Any] = {}
    if isinstance(model, RankAveragedBipartite):
        if not hasattr(model, "members_"):
            raise PersistenceError("only fitted okcore estimators can be saved")
        if any(_nested(m) for m in model.members_):
            raise PersistenceError("a rank average's members cannot be rank averages")
        members = {f"member-{i}": m for i, m in enumerate(model.members_)}
        extra["weights"] = model.weights_for()
        if model.block_weights:  # checked by fit: a block name -> one weight per member
            extra["block_weights"] = {b: model.weights_for(b) for b in sorted(model.block_weights)}
        n_rows, n_cols = int(model.n_rows_), int(model.n_cols_)
        params: dict[str, Any] = {}
        n_features = _row_width(model.members_[0])
    elif isinstance(model, NRLMF):
        if not hasattr(model, "row_model_"):
            raise PersistenceError("only fitted okcore estimators can be saved")
        members = {"rows": model.row_model_, "cols": model.col_model_}
        if getattr(model, "objective_", None) is not None:
            arrays["objective"] = np.asarray(model.objective_, dtype=np.float64)
        n_rows, n_cols = int(model.n_rows_), int(model.n_cols_)
        params = {k: json_value(v) for k, v in model.get_params().items()}
        n_features = int(model.row_model_.n_features_in_)
        extra["fit_time"] = float(getattr(model, "fit_time_", 0.0))
    elif isinstance(model, BipartiteRegressor):
        if not hasattr(model, "Y_"):
            raise PersistenceError("only fitted okcore estimators can be saved")
        members, more = _regressor_parts(model)
        arrays.update(more)
        arrays["Y"] = np.asarray(model.Y_, dtype=np.float64)
        n_rows, n_cols = (int(n) for n in model.Y_.shape)
        params = {
            k: json_value(v)
            for k, v in model.get_params(deep=False).items()
            if k not in MODEL_PARAMS
        }
        n_features = _row_width(model)
        extra["n_unknown"] = int(getattr(model, "n_unknown_", 0))
        extra["resolved_params"] = getattr(model, "resolved_params_", {"rows": {}, "cols": {}})
    else:
        raise PersistenceError("only fitted okcore estimators can be saved")
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "format_version": format_version,
        "okcore_version": version,
        "estimator": name,
        "params": params,
        "members": list(members),
        **extra,
        "attributes": {
            "n_train_": n_rows,
            "n_features_in_": n_features,
            "n_rows_": n_rows,
            "n_cols_": n_cols,
        },
        "arrays": array_entries(arrays),
    }

    def write(tmp: Path) -> None:
        for folder, member in members.items():
            save_member(member, tmp / folder)
        write_files(tmp, manifest, arrays, default=_json)

    return write_folder(path, write)


def _json(value: Any) -> Any:
    """JSON for the resolved parameters' numpy scalars; anything else as None."""
    return value.item() if isinstance(value, np.generic) else None


def _nested(member: Any) -> bool:
    """Whether a member is itself a rank average (or a default, which holds one)."""
    return isinstance(member, RankAveragedBipartite) or (
        isinstance(member, BipartiteRegressor) and member._default() is not None
    )


def _row_width(model: Any) -> int:
    """The width of a bipartite model's row inputs (features, or training rows)."""
    if isinstance(model, RankAveragedBipartite):
        return _row_width(model.members_[0])
    if isinstance(model, NRLMF):
        return int(model.row_model_.n_features_in_)
    X = getattr(model, "X_rows_", None)
    if X is not None:
        return int(X.shape[1])
    if getattr(model, "row_model_", None) is not None:
        return int(model.row_model_.n_features_in_)
    return _row_width(model.default_model_)


def _regressor_parts(model: BipartiteRegressor) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The member folders and arrays of a fitted BipartiteRegressor."""
    default = model._default()
    if default is not None:
        return {"default": default}, {}
    members: dict[str, Any] = {"rows": model.row_model_, "cols": model.col_model_}
    arrays: dict[str, np.ndarray] = {}
    pair = model.pair_model_
    if isinstance(pair, PairTrees):
        members["pairs"] = pair.estimator
    elif isinstance(pair, KroneckerRidge):
        arrays["pairs.offset"] = np.asarray(pair.offset_, dtype=np.float64)
        arrays["pairs.dual"] = pair.dual_
        arrays["pairs.X_rows"], arrays["pairs.X_cols"] = pair.X_rows_, pair.X_cols_
    if model.new_pairs == "refit":  # its second step is fitted on the training inputs
        if sp.issparse(model.X_rows_) or sp.issparse(model.X_cols_):
            raise PersistenceError(
                "a bipartite model with new_pairs='refit' on sparse inputs cannot be saved: "
                "its second step needs the inputs (use new_pairs='two-step')"
            )
        arrays["X_rows"] = np.asarray(model.X_rows_, dtype=np.float64)
        arrays["X_cols"] = np.asarray(model.X_cols_, dtype=np.float64)
    for name in ("row_weight", "col_weight"):
        if getattr(model, f"{name}_", None) is not None:
            arrays[name] = getattr(model, f"{name}_")
    return members, arrays


def _expected_members(manifest: dict) -> list[str]:
    """The member folders an estimator's manifest may name (module docstring)."""
    name, members = manifest["estimator"], manifest["members"]
    if name == "RankAveragedBipartite":
        weights = manifest["weights"]
        if not isinstance(weights, list) or not weights:
            raise PersistenceError("a rank average's manifest must list its weights")
        return [f"member-{i}" for i in range(len(weights))]
    if name == "NRLMF":
        return ["rows", "cols"]
    if members == ["default"]:
        return ["default"]
    return ["rows", "cols", "pairs"] if "pairs" in members else ["rows", "cols"]


def load_bipartite(path: Path, manifest: dict, load_member: Callable[[Path], Any]) -> Any:
    """The bipartite model of :func:`save_bipartite`, each member folder read by
    ``load_member`` (:func:`okcore.io.load`), every part checked against the others;
    PersistenceError when they disagree."""

    def fail(what: str) -> None:
        raise PersistenceError(f"model at {path} is inconsistent: {what}")

    if manifest["members"] != _expected_members(manifest):
        fail(f"a {manifest['estimator']} does not have the members its manifest lists")
    attributes = manifest["attributes"]
    n_rows, n_cols = int(attributes["n_rows_"]), int(attributes["n_cols_"])
    if n_rows < 1 or n_cols < 1:
        fail("a bipartite model has at least one row and one column vertex")
    arrays = read_arrays(path / "arrays.npz", manifest["arrays"])
    if not all(np.all(np.isfinite(a)) for a in arrays.values() if a.dtype.kind == "f"):
        fail("an array holds NaN or infinity")
    members = {folder: load_member(path / folder) for folder in manifest["members"]}
    name = manifest["estimator"]
    if name == "RankAveragedBipartite":
        model: Any = _rank_average(manifest, members, fail)
    elif name == "NRLMF":
        model = _nrlmf(manifest, members, arrays, fail)
    else:
        model = _regressor(manifest, members, arrays, fail)
    if (int(model.n_rows_), int(model.n_cols_)) != (n_rows, n_cols):
        fail("its parts disagree on the number of row or column vertices")
    if _row_width(model) != int(attributes["n_features_in_"]):
        fail("its row model's inputs do not have the width the manifest gives")
    return model


def _sides(model: Any) -> tuple[int, int]:
    """(rows, columns) a fitted bipartite model was trained on."""
    return int(model.n_rows_), int(model.n_cols_)


def _rank_average(manifest: dict, members: dict[str, Any], fail: Any) -> RankAveragedBipartite:
    models = list(members.values())
    weights = manifest["weights"]
    if any(_nested(m) or type(m).__name__ not in BIPARTITE for m in models):
        fail("a rank average's members must be bipartite models, not rank averages")
    blocks = manifest.get("block_weights")
    if blocks is not None and not (
        isinstance(blocks, dict) and all(isinstance(v, list) and v for v in blocks.values())
    ):
        fail("a rank average's block weights must map block names to lists of weights")
    model = RankAveragedBipartite(models, [float(w) for w in weights], blocks or None)
    try:
        for block in (None, *BLOCKS):
            model.weights_for(block)
    except Exception as exc:  # a DataError naming the weights
        fail(str(exc))
    given = [weights, *(blocks or {}).values()]
    if not all(np.isfinite(float(w)) for ws in given for w in ws):
        fail("a rank average's weights must be finite")
    if len({_sides(m) for m in models}) != 1:
        fail("the rank average's members were trained on different networks")
    model.members_ = models
    model.n_rows_, model.n_cols_ = _sides(models[0])
    return model


def _nrlmf(manifest: dict, members: dict[str, Any], arrays: dict, fail: Any) -> NRLMF:
    rows, cols = members["rows"], members["cols"]
    if not isinstance(rows, NeighbourRegressor) or not isinstance(cols, NeighbourRegressor):
        fail("NRLMF's side models must be neighbour models")
    if rows.input_kernel != cols.input_kernel:
        fail("NRLMF's side models take different inputs")
    model = NRLMF.from_side_models(rows, cols)
    model.set_params(**manifest["params"])
    validate_params(model, model._parameter_constraints)
    if (model.n_factors, model.n_neighbors, model.eta) != (
        rows.Y_.shape[1],
        rows.n_neighbors,
        rows.eta,
    ):
        fail("NRLMF's parameters do not match its side models")
    if "objective" in arrays:
        model.objective_ = arrays["objective"]
    model.fit_time_ = float(manifest.get("fit_time", 0.0))
    return model


def _regressor(
    manifest: dict, members: dict[str, Any], arrays: dict, fail: Any
) -> BipartiteRegressor:
    model = BipartiteRegressor(**manifest["params"])
    validate_params(model, model._parameter_constraints)
    Y = arrays.get("Y")
    if Y is None or Y.ndim != 2:
        fail("the interactions Y are missing")
    assert Y is not None
    model.Y_, model.n_unknown_ = Y, int(manifest.get("n_unknown", 0))
    model.n_rows_, model.n_cols_ = Y.shape
    model.X_rows_ = model.X_cols_ = None
    model.row_weight_ = model.col_weight_ = None
    resolved = manifest.get("resolved_params", {"rows": {}, "cols": {}})
    if not isinstance(resolved, dict):
        fail("the resolved parameters are not a mapping")
    model.resolved_params_ = resolved
    if "default" in members:
        default = members["default"]
        if not isinstance(default, RankAveragedBipartite):
            fail("the default of a bipartite model is a rank average")
        if _sides(default) != Y.shape:
            fail("the default's members were trained on another network than Y")
        model.default_model_ = default
        model.row_model_ = model.col_model_ = model.pair_model_ = None
        return model
    rows, cols = members["rows"], members["cols"]
    if type(rows).__name__ in BIPARTITE or type(cols).__name__ in BIPARTITE:
        fail("the one-sided models of a bipartite model are one-sided okcore models")
    if _train_items(rows) != Y.shape[0] or _train_items(cols) != Y.shape[1]:
        fail("the one-sided models were not trained on the rows and columns of Y")
    model.row_estimator, model.col_estimator = clone(rows), clone(cols)
    model.row_model_, model.col_model_, model.default_model_ = rows, cols, None
    model.pair_model_ = _pair_model(model, members, arrays, fail)
    if model.new_pairs == "refit":
        X_rows, X_cols = arrays.get("X_rows"), arrays.get("X_cols")
        if X_rows is None or X_cols is None or (len(X_rows), len(X_cols)) != Y.shape:
            fail("new_pairs='refit' needs the training inputs of both sides")
        model.X_rows_, model.X_cols_ = X_rows, X_cols
    for name, n in (("row_weight", Y.shape[0]), ("col_weight", Y.shape[1])):
        weight = arrays.get(name)
        if weight is not None and weight.shape != (n,):
            fail(f"{name} does not have one weight per vertex")
        setattr(model, f"{name}_", weight)
    return model


def _train_items(model: Any) -> int:
    """Training items of a one-sided model (its rows)."""
    if isinstance(model, NeighbourRegressor):
        return int(model.Y_.shape[0])
    return int(model.n_train_)


def _pair_model(model: BipartiteRegressor, members: dict, arrays: dict, fail: Any) -> Any:
    """The fitted pair model of "pair-trees" / "kronecker" (None for the others)."""
    names = ("pairs.offset", "pairs.dual", "pairs.X_rows", "pairs.X_cols")
    if model.new_pairs == "pair-trees":
        if "pairs" not in members:
            fail("new_pairs='pair-trees' needs its pair model")
        trees = PairTrees(members["pairs"], int(model.max_pairs), np.random.default_rng(0))
        trees.n_pairs_ = int(members["pairs"].n_train_)
        return trees
    if "pairs" in members:
        fail(f"new_pairs={model.new_pairs!r} has no pair model")
    if model.new_pairs != "kronecker":
        if any(k in arrays for k in names):
            fail(f"new_pairs={model.new_pairs!r} has no Kronecker arrays")
        return None
    if any(k not in arrays for k in names):
        fail("new_pairs='kronecker' needs its Kronecker ridge arrays")
    offset, dual, X_rows, X_cols = (arrays[k] for k in names)
    n_rows, n_cols = model.Y_.shape
    if (
        offset.shape != ()
        or dual.shape != (n_rows, n_cols)
        or X_rows.ndim != 2
        or X_cols.ndim != 2
        or (len(X_rows), len(X_cols)) != (n_rows, n_cols)
    ):
        fail("the Kronecker ridge arrays do not match the interactions")
    pair = KroneckerRidge(float(model.pair_alpha), model.pair_kernel)
    pair.offset_, pair.dual_ = float(offset), dual
    pair.X_rows_, pair.X_cols_ = X_rows, X_cols
    return pair
