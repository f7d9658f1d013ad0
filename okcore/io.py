"""Saving and loading models as data, never pickle (house style: LightGBM's text models).

A model is a directory with ``manifest.json`` (format, versions, estimator, parameters,
kernel, scalar attributes, the values the fit resolved (``resolved_params_``), per-array
SHA-256 and shape; for OKBoost the warm-start record:
the fingerprint of the training data, the random generator's state and the growth plan,
so that ``warm_start`` continues a loaded model) and ``arrays.npz`` read with
``allow_pickle=False``. Loading verifies checksums and the tree structure (every index in
range), so a corrupted or tampered model fails with :class:`PersistenceError` instead of
crashing or mispredicting.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .bipartite.neighbours import NeighbourRegressor
from .boosting.start import StartedEnsemble, start_params
from .estimators import ESTIMATORS
from .exceptions import OKCoreError, PersistenceError
from .io_bipartite import BIPARTITE, load_bipartite, save_bipartite
from .io_folder import FORMAT, array_entries, json_value, read_arrays, write_files, write_folder
from .kernel_models.kernel_ensemble import KernelEnsemble
from .kernel_models.krr import INPUT_KERNELS
from .meta import clone
from .outputs.kernels import DiffusionKernel, make_kernel
from .outputs.space import OutputSpace
from .similarity import SimilarityInputs, SimilarityMap
from .trees.ensemble import NODE_FIELDS, TreeEnsemble, stored_counts

#: Version written for models whose leaf values are not leaf means (robust losses: per-row
#: leaf weights and F_0's weights, which an older reader would ignore and so compute wrong
#: W^F); version 2 for models with a Nystrom output space (landmarks and feature map, which
#: a version-1 reader would ignore and so mis-embed new outputs); every other model is still
#: written as version 1. Version 4: models of kernel models (boosted KRR, a
#: :class:`~okcore.kernel_models.kernel_ensemble.KernelEnsemble`: basis rows, alphas, coefficients instead
#: of trees), which older readers cannot read. Version 5: models on a precomputed input
#: similarity (:class:`~okcore.similarity.SimilarityInputs`: the input map's kind and
#: arrays, without which an older reader would take the similarities for features).
#: Version 6: models made of models (:class:`~okcore.averaging.AveragedRegressor`,
#: :class:`~okcore.auto.AutoRegressor`): a manifest naming the members, each member a
#: model folder of its own (``member-0``, ...). Version 7: weighted-neighbour models
#: (:class:`~okcore.bipartite.NeighbourRegressor`: the training outputs, no trees). Version
#: 8: boosting started from kernel ridge (OKBoostRegressor's ``init``: the kernel ridge
#: model's arrays beside the trees, which an older reader would drop). Version 9: bipartite
#: models (:class:`~okcore.bipartite.BipartiteRegressor`, its default
#: :class:`~okcore.bipartite.RankAveragedBipartite`, :class:`~okcore.bipartite.NRLMF`;
#: :mod:`okcore.io_bipartite`): a manifest naming the member folders (one-sided models,
#: rank-averaged members) beside the interactions. This okcore reads all nine.
FORMAT_VERSION = 3
NYSTROM_VERSION = 2
KERNEL_MODEL_VERSION = 4
SIMILARITY_VERSION = 5
COMPOSITE_VERSION = 6
NEIGHBOURS_VERSION = 7
START_MODEL_VERSION = 8
BIPARTITE_VERSION = 9
READ_VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8, 9)
#: Models made of models, saved as a manifest and one folder per member.
COMPOSITES = ("AveragedRegressor", "AutoRegressor")
NYSTROM_ARRAYS = ("landmarks", "feature_map", "landmark_index")
#: Ensemble arrays saved only when present (robust losses), so squared-loss files keep
#: their version-1/2 layout.
ENSEMBLE_WEIGHT_ARRAYS = ("train_weight", "init_weight")
#: The side of missing inputs per node (okcore.trees.missing), saved when present; files
#: without it send every missing input right. No format version of its own: readers that do
#: not know it refuse missing inputs, so they cannot mispredict them.
MISSING_ARRAY = "missing_left"
#: Saved models name their class.
CLASSES = {cls.__name__: cls for cls in ESTIMATORS.values()}
ENSEMBLE_ARRAYS = (
    *NODE_FIELDS,
    "value",
    "node_offset",
    "leaf_offset",
    "train_leaf",
    "train_count",
    "init",
)
SCALARS = (
    "n_features_in_",
    "n_train_",
    "fit_time_",
    "output_1d_",
    "n_estimators_",
    "stopped_by_callback_",
    "max_bins_",
    "sketch_dim_",
)
OPTIONAL_ARRAYS = ("train_loss_", "validation_loss_", "train_indices_")
#: Arrays of a kernel-model ensemble (its ``train_phi`` is the output space's phi).
KERNEL_ENSEMBLE_ARRAYS = (
    "gamma",
    "init",
    "coef",
    "basis_offset",
    "basis_index",
    "basis_inputs",
    "alpha",
)
#: Fitted arrays of one estimator kind, saved when the estimator has them.
ESTIMATOR_ARRAYS = ("objective_", "cv_alphas_", "cv_errors_", "cv_gammas_")
#: Fitted scalars of one estimator kind, saved when the estimator has them.
ESTIMATOR_SCALARS = ("alpha_", "tree_type_", "n_estimators_planned_")


def _json_param(value: Any) -> Any:
    """Parameters are JSON scalars or lists of numbers (per-feature RBF widths); a random
    Generator is not saved (None)."""
    if isinstance(value, np.generic):  # numpy scalars (accepted by fit) as plain JSON values
        value = value.item()
    if isinstance(value, list | tuple | np.ndarray):
        return [float(v) for v in np.asarray(value, dtype=np.float64).ravel()]
    return value if value is None or isinstance(value, bool | int | float | str) else None


def _not_saveable(estimator: Any) -> str:
    """Why :func:`save` refuses an object that is none of the models it writes: what it
    writes, and for a multi-label classifier how to keep one."""
    name = type(estimator).__name__
    message = (
        "only fitted okcore estimators can be saved: the regressors of okcore.ESTIMATORS, "
        "AveragedRegressor, AutoRegressor, SimilarityInputs, NeighbourRegressor and the "
        f"bipartite models; got {name}"
    )
    if name == "MultiLabelClassifier":
        message += (
            ". A MultiLabelClassifier is kept as its parts: save its fitted regressor with "
            "okcore.save(model.estimator_, path) and keep model.thresholds_, model.sigmoid_ "
            "(the score map) and model.label_names_ beside it; setting estimator_ "
            "(okcore.load(path)), thresholds_, sigmoid_ and label_names_ on a "
            "MultiLabelClassifier of the same parameters predicts as the fitted one"
        )
    return message


def save(estimator: Any, path: str | os.PathLike) -> Path:
    """Write a fitted estimator to the directory ``path``.

    A model already saved at ``path`` is replaced; a file, or a folder holding other files,
    is refused with :class:`PersistenceError` and left as it is. Missing parent folders are
    created. Files are written in a temporary sibling directory that is renamed into place,
    so a crash never leaves a half-written model at ``path``.
    """
    from . import __version__

    if type(estimator).__name__ in COMPOSITES:
        return _save_composite(estimator, Path(path), __version__)
    if type(estimator).__name__ in BIPARTITE:
        return save_bipartite(estimator, Path(path), __version__, BIPARTITE_VERSION, save)
    if isinstance(estimator, NeighbourRegressor) and hasattr(estimator, "Y_"):
        return _save_neighbours(estimator, Path(path))
    names = getattr(estimator, "feature_names_in_", None)
    input_map = None
    if isinstance(estimator, SimilarityInputs) and hasattr(estimator, "ensemble_"):
        wrapper_components = estimator.n_components
        estimator, input_map = estimator.estimator_, estimator.input_map_
    if type(estimator).__name__ not in CLASSES:
        raise PersistenceError(_not_saveable(estimator))
    if not hasattr(estimator, "ensemble_"):
        raise PersistenceError("only fitted okcore estimators can be saved")
    path = Path(path)
    space, ens = estimator.output_space_, estimator.ensemble_
    arrays: dict[str, np.ndarray] = {}
    started = ens if isinstance(ens, StartedEnsemble) else None
    if started is not None:  # the starting kernel ridge model, then its trees as any boosting
        arrays.update({f"start_model.{f}": getattr(ens.start, f) for f in KERNEL_ENSEMBLE_ARRAYS})
        arrays["start_model.train_start"] = started.train_start
        ens = started.trees
    if isinstance(ens, KernelEnsemble):
        arrays.update({f"kernel_ensemble.{f}": getattr(ens, f) for f in KERNEL_ENSEMBLE_ARRAYS})
        ensemble_meta: dict[str, Any] = {"kind": "kernel", "input_kernel": ens.kernel}
    else:
        arrays.update(
            {f"ensemble.{f}": getattr(ens, f) for f in ENSEMBLE_ARRAYS if f != "train_count"}
        )
        # implicit ones written out (1 byte each): the file layout is unchanged
        arrays["ensemble.train_count"] = ens.fit_counts()
        for name in (*ENSEMBLE_WEIGHT_ARRAYS, MISSING_ARRAY):
            if getattr(ens, name) is not None:
                arrays[f"ensemble.{name}"] = getattr(ens, name)
        ensemble_meta = {"combine": ens.combine, "learning_rate": ens.learning_rate}
        if ens.l2_regularization > 0.0:  # absent: leaf means (models saved before it existed)
            ensemble_meta["l2_regularization"] = ens.l2_regularization
        if started is not None:
            ensemble_meta["start_model"] = {"input_kernel": started.start.kernel}
    arrays["space.phi"], arrays["space.diag"] = space.phi, space.diag
    if space.eigenvalues is not None:
        arrays["space.eigenvalues"] = space.eigenvalues
    if space.outputs is not None:
        arrays["space.outputs"] = space.outputs
    for name in NYSTROM_ARRAYS:
        if getattr(space, name) is not None:
            arrays[f"space.{name}"] = getattr(space, name)
    kernel = space.kernel.to_dict()
    if isinstance(space.kernel, DiffusionKernel):
        arrays["kernel.edges"] = space.kernel.edges
        kernel = {"type": "diffusion", "beta": space.kernel.beta}
    for name in (*OPTIONAL_ARRAYS, *ESTIMATOR_ARRAYS):
        value = getattr(estimator, name, None)
        if value is not None:
            arrays[name] = np.asarray(value)
    if input_map is not None:
        arrays.update({f"input_map.{k}": v for k, v in input_map.arrays().items()})
    params = {k: _json_param(v) for k, v in estimator.get_params().items()}
    init = getattr(estimator, "init", None)
    if init is not None and not isinstance(init, str):  # a starting model: its parameters
        params["init"] = start_params(init)
    manifest = {
        "format": FORMAT,
        "format_version": SIMILARITY_VERSION
        if input_map is not None
        else START_MODEL_VERSION
        if started is not None
        else _format_version(ens, space),
        "okcore_version": __version__,
        "estimator": type(estimator).__name__,
        "params": params,
        "kernel": kernel,
        "ensemble": ensemble_meta,
        "space": {"trace_fraction": space.trace_fraction, "diag_exact": space.diag_exact},
        "attributes": {
            k: getattr(estimator, k)
            for k in (*SCALARS, *ESTIMATOR_SCALARS)
            if hasattr(estimator, k)
        },
        "arrays": array_entries(arrays),
    }
    resolved = getattr(estimator, "resolved_params_", None)
    if resolved is not None:
        manifest["resolved_params"] = {k: _json_param(v) for k, v in resolved.items()}
    record = estimator.warm_start_record() if hasattr(estimator, "warm_start_record") else None
    if record is not None:
        manifest["warm_start"] = record
    if input_map is not None:
        # the model's inputs are the N items' similarities ("attributes" describe the model
        # as callers see it: archives check the stored inputs against them); the wrapped
        # estimator's own width (kpca: the components) is the map's n_features
        manifest["input_map"] = {
            "kind": input_map.kind,
            "n_items": input_map.n_items,
            "n_features": estimator.n_features_in_,
            "total_mean": input_map.total_mean,
            "n_components": wrapper_components,
        }
        manifest["attributes"]["n_features_in_"] = input_map.n_items
    return _write(path, _with_feature_names(manifest, names), arrays)


def _save_neighbours(model: NeighbourRegressor, path: Path) -> Path:
    """A weighted-neighbour model: its parameters, the training outputs and (cosine) rows."""
    from . import __version__

    arrays = {"neighbours.Y": model.Y_}
    if model.X_fit_ is not None:
        arrays["neighbours.X"] = model.X_fit_
    manifest = {
        "format": FORMAT,
        "format_version": NEIGHBOURS_VERSION,
        "okcore_version": __version__,
        "estimator": "NeighbourRegressor",
        "params": model.get_params(),
        "attributes": {"n_features_in_": model.n_features_in_},
        "arrays": array_entries(arrays),
    }
    return _write(
        path, _with_feature_names(manifest, getattr(model, "feature_names_in_", None)), arrays
    )


def _load_neighbours(manifest: dict, arrays: dict[str, np.ndarray]) -> NeighbourRegressor:
    model = NeighbourRegressor(**manifest["params"])
    Y, X = arrays["neighbours.Y"], arrays.get("neighbours.X")
    n_features = int(manifest["attributes"]["n_features_in_"])
    if Y.ndim != 2 or (X is None) != (model.input_kernel == "precomputed"):
        raise PersistenceError("neighbour model arrays do not match its input kernel")
    if X is not None and X.shape != (Y.shape[0], n_features):
        raise PersistenceError(f"neighbour model rows are {X.shape}, outputs {Y.shape}")
    if X is None and n_features != Y.shape[0]:
        raise PersistenceError("a precomputed neighbour model has one input per training item")
    model.Y_, model.X_fit_, model.n_features_in_, model.fit_time_ = Y, X, n_features, 0.0
    return model


def _with_feature_names(manifest: dict[str, Any], names: Any) -> dict[str, Any]:
    """``manifest`` with the column names the model was fitted on (``feature_names_in_``,
    :func:`okcore._validation.record_feature_names`), when it has them. A reader that does
    not know the key predicts as before: by position, without the check of the names."""
    if names is not None:
        manifest["feature_names_in"] = [str(name) for name in names]
    return manifest


def _restore_feature_names(model: Any, manifest: dict[str, Any]) -> Any:
    """``model`` with the ``feature_names_in_`` of its manifest, checked: one string per
    input column (``n_features_in_``)."""
    names = manifest.get("feature_names_in")
    if names is None:
        return model
    if (
        not isinstance(names, list)
        or any(not isinstance(name, str) for name in names)
        or len(names) != int(model.n_features_in_)
    ):
        raise ValueError(  # load() names the model's folder
            "its feature_names_in are not one string per input column "
            f"({int(model.n_features_in_)})"
        )
    model.feature_names_in_ = np.asarray(names, dtype=object)
    return model


def _write(path: Path, manifest: dict[str, Any], arrays: dict[str, np.ndarray]) -> Path:
    """Write ``manifest.json`` and ``arrays.npz`` in a temporary sibling renamed into place."""

    return write_folder(path, lambda tmp: write_files(tmp, manifest, arrays))


def _save_composite(estimator: Any, path: Path, version: str) -> Path:
    """An :class:`AveragedRegressor` or :class:`AutoRegressor`: the manifest names the
    members, each saved by :func:`save` in its own folder."""
    from .auto import AutoRegressor
    from .averaging import AveragedRegressor

    name = type(estimator).__name__
    if isinstance(estimator, AutoRegressor) and not hasattr(estimator, "best_estimator_"):
        raise PersistenceError("only fitted okcore estimators can be saved")
    model = estimator.best_estimator_ if isinstance(estimator, AutoRegressor) else estimator
    if isinstance(model, AveragedRegressor):
        if not hasattr(model, "estimators_"):
            raise PersistenceError("only fitted okcore estimators can be saved")
        members, weights = list(model.estimators_), [float(w) for w in model.weights_]
    else:
        members, weights = [model], [1.0]
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "format_version": COMPOSITE_VERSION,
        "okcore_version": version,
        "estimator": name,
        "params": {
            k: json_value(v)
            for k, v in estimator.get_params(deep=False).items()
            if k != "estimators"
        },
        "members": [f"member-{i}" for i in range(len(members))],
        "weights": weights,
        # as every model's manifest: what callers check the stored inputs against
        "attributes": {
            "n_train_": int(members[0].output_space_.n_samples),
            "n_features_in_": int(members[0].n_features_in_),
        },
    }
    if isinstance(estimator, AutoRegressor):
        manifest["selection"] = {
            "best_name": estimator.best_name_,
            "members": [[m, params] for m, params in estimator.members_],
            "seed": estimator.seed_,
            "leaderboard": estimator.leaderboard_,
            "score_name": estimator.score_name_,
            "greater_is_better": estimator.greater_is_better_,
            "cpu_seconds": estimator.cpu_seconds_,
            "refit_cpu_seconds": estimator.refit_cpu_seconds_,
            "max_cpu_seconds": estimator.max_cpu_seconds_,
            "n_rungs": estimator.n_rungs_,
            "fit_time": estimator.fit_time_,
        }

    _with_feature_names(manifest, getattr(estimator, "feature_names_in_", None))

    def write(tmp: Path) -> None:
        for folder, member in zip(manifest["members"], members, strict=True):
            save(member, tmp / folder)
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))

    return write_folder(path, write)


def _load_composite(path: Path, manifest: dict) -> Any:
    """The :class:`AveragedRegressor` or :class:`AutoRegressor` of :func:`_save_composite`."""
    from .auto import AutoRegressor
    from .averaging import AveragedRegressor

    folders, weights = manifest["members"], manifest["weights"]
    if (
        not isinstance(folders, list)
        or not folders
        or not isinstance(weights, list)
        or len(weights) != len(folders)
        or any(not isinstance(f, str) or not f.startswith("member-") or "/" in f for f in folders)
    ):
        raise PersistenceError(f"model at {path} is inconsistent: bad list of members")
    members = [load(path / folder) for folder in folders]
    if any(type(m).__name__ in COMPOSITES for m in members):
        raise PersistenceError(f"model at {path} is inconsistent: nested composite members")
    model = members[0] if len(members) == 1 else AveragedRegressor.from_fitted(members, weights)
    params = {k: v for k, v in manifest["params"].items() if v is not None}
    if manifest["estimator"] == "AveragedRegressor":
        if len(members) == 1:
            model = AveragedRegressor.from_fitted(members, weights)
        model.estimators = list(members)
        # as saved, None (equal weights) included: get_params reports what it was given
        model.set_params(**{k: v for k, v in manifest["params"].items() if k != "estimators"})
        return model
    auto = AutoRegressor()
    auto.set_params(**params)
    info = manifest["selection"]
    auto._adopt(model, [(str(m), dict(p)) for m, p in info["members"]], int(info["seed"]))
    if len(auto.members_) != len(members):
        raise PersistenceError(f"model at {path} is inconsistent: members and selection differ")
    auto.best_name_ = str(info["best_name"])
    auto.leaderboard_ = list(info["leaderboard"])
    auto.score_name_ = str(info["score_name"])
    auto.greater_is_better_ = bool(info["greater_is_better"])
    auto.cpu_seconds_ = float(info["cpu_seconds"])
    auto.refit_cpu_seconds_ = float(info["refit_cpu_seconds"])
    auto.max_cpu_seconds_ = float(info["max_cpu_seconds"])
    auto.n_rungs_ = int(info["n_rungs"])
    auto.fit_time_ = float(info.get("fit_time", 0.0))  # absent: saved before it was
    auto.stopped_by_callback_ = False  # a stopped selection leaves nothing to save
    return auto


def _format_version(ens: Any, space: OutputSpace) -> int:
    """The oldest format that holds the model: readers of older ones would mispredict."""
    if isinstance(ens, KernelEnsemble):
        return KERNEL_MODEL_VERSION
    if any(getattr(ens, name) is not None for name in ENSEMBLE_WEIGHT_ARRAYS):
        return FORMAT_VERSION
    return NYSTROM_VERSION if space.feature_map is not None else 1


def load(path: str | os.PathLike) -> Any:
    """Read a model saved by :func:`save`; raises :class:`PersistenceError` on any problem."""
    path = Path(path)
    try:
        manifest = json.loads((path / "manifest.json").read_text())
    except FileNotFoundError:
        raise PersistenceError(f"no model at {path} (manifest.json missing)") from None
    except (OSError, ValueError) as exc:
        raise PersistenceError(f"model manifest at {path} is unreadable: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise PersistenceError(f"{path} is not an okcore model (format field missing or wrong)")
    version = manifest.get("format_version")
    if type(version) is not int or version not in READ_VERSIONS:  # true and 1.0 are not 1
        newer = type(version) is int and version > max(READ_VERSIONS)
        raise PersistenceError(
            f"model format version {manifest.get('format_version')!r} is not supported "
            f"(this okcore reads versions {', '.join(map(str, READ_VERSIONS))})"
            + ("; it was saved by a newer okcore: upgrade okcore to load it" if newer else "")
        )
    try:
        if manifest.get("estimator") in COMPOSITES:
            return _restore_feature_names(_load_composite(path, manifest), manifest)
        if manifest.get("estimator") in BIPARTITE:
            return load_bipartite(path, manifest, load)
        arrays = read_arrays(path / "arrays.npz", manifest["arrays"])
        return _restore_feature_names(_rebuild(manifest, arrays), manifest)
    except PersistenceError:
        raise
    except (OKCoreError, KeyError, TypeError, ValueError, IndexError) as exc:
        raise PersistenceError(f"model at {path} is inconsistent: {exc}") from None


def _grown_with_early_stopping(params: dict[str, Any]) -> bool:
    """Before ``early_stopping`` existed a model stopped early exactly when it was given a
    patience (``n_iter_no_change``)."""
    return params.get("n_iter_no_change") is not None


#: Parameters that models saved before them do not list, with the value those models were
#: grown with (not today's default), or a function of the saved parameters giving it: a
#: loaded model reports how it was made. Parameters whose default changed need nothing here:
#: every saved model lists the values it was grown with.
PARAMETERS_ADDED_SINCE: dict[str, Any] = {
    "refine_cuts": False,
    "l2_regularization": 0.0,
    "tree_type": "best-first",
    "colsample_bytree": 1.0,
    "early_stopping": _grown_with_early_stopping,
    "warm_start": False,
}


def _rebuild(manifest: dict, arrays: dict[str, np.ndarray]) -> Any:
    """The saved model: an estimator, or one wrapped in its input similarity map."""
    if manifest["estimator"] == "NeighbourRegressor":
        return _load_neighbours(manifest, arrays)
    if "input_map" not in manifest:
        return _rebuild_estimator(manifest, arrays)
    meta = manifest["input_map"]
    attributes = {**manifest["attributes"], "n_features_in_": int(meta["n_features"])}
    inner = _rebuild_estimator({**manifest, "attributes": attributes}, arrays)
    return _similarity_model(meta, arrays, inner)


def _rebuild_estimator(manifest: dict, arrays: dict[str, np.ndarray]) -> Any:
    cls = CLASSES.get(manifest["estimator"])
    if cls is None:
        raise PersistenceError(f"unknown estimator {manifest['estimator']!r} in manifest")
    params = dict(manifest["params"])
    for name, grown_as in PARAMETERS_ADDED_SINCE.items():  # how older models were grown
        if name in cls().get_params() and name not in params:
            params[name] = grown_as(manifest["params"]) if callable(grown_as) else grown_as
    estimator = cls().set_params(**params)
    estimator.validate_params()
    spec = dict(manifest["kernel"])
    if spec.get("type") == "diffusion":
        spec["edges"] = arrays["kernel.edges"]
    eigenvalues, diag = arrays.get("space.eigenvalues"), arrays["space.diag"]
    # models written before the field existed: the fraction from the eigenvalues kept
    saved = manifest.get("space", {})
    trace = float(np.sum(diag))
    fraction = (
        min(1.0, float(np.sum(eigenvalues)) / trace)
        if eigenvalues is not None and trace > 0
        else 1.0
    )
    space = OutputSpace(
        phi=arrays["space.phi"],
        diag=diag,
        kernel=make_kernel(spec),
        eigenvalues=eigenvalues,
        outputs=arrays.get("space.outputs"),
        trace_fraction=float(saved.get("trace_fraction", fraction)),
        diag_exact=bool(saved.get("diag_exact", True)),
        **{name: arrays.get(f"space.{name}") for name in NYSTROM_ARRAYS},
    )
    attributes = manifest["attributes"]
    ens: TreeEnsemble | KernelEnsemble | StartedEnsemble
    if manifest["ensemble"].get("kind") == "kernel":
        ens = KernelEnsemble(
            kernel=str(manifest["ensemble"]["input_kernel"]),
            **{f: arrays[f"kernel_ensemble.{f}"] for f in KERNEL_ENSEMBLE_ARRAYS},
            train_phi=space.phi,
        )
        _check_kernel_structure(ens, space, int(attributes["n_features_in_"]))
    else:
        ens = TreeEnsemble(
            combine=manifest["ensemble"]["combine"],
            learning_rate=float(manifest["ensemble"]["learning_rate"]),
            **{f: arrays[f"ensemble.{f}"] for f in ENSEMBLE_ARRAYS if f != "train_count"},
            train_count=stored_counts(arrays["ensemble.train_count"]),
            train_weight=arrays.get("ensemble.train_weight"),
            init_weight=arrays.get("ensemble.init_weight"),
            missing_left=arrays.get(f"ensemble.{MISSING_ARRAY}"),
            l2_regularization=float(manifest["ensemble"].get("l2_regularization", 0.0)),
        )
        _check_structure(ens, space, int(attributes["n_features_in_"]))
        start = manifest["ensemble"].get("start_model")
        if start is not None:
            ens = _started(ens, start, arrays, space, int(attributes["n_features_in_"]))
    for key, value in attributes.items():
        if key in SCALARS or key in ESTIMATOR_SCALARS:
            setattr(estimator, key, value)
    for name in OPTIONAL_ARRAYS:  # None where they do not apply (losses of trees, forests)
        setattr(estimator, name, arrays.get(name))
    for name in ESTIMATOR_ARRAYS:
        if name in arrays:
            setattr(estimator, name, arrays[name])
        elif name.startswith("cv_") and "alpha_" in attributes:  # a fixed alpha: no CV
            setattr(estimator, name, None)
    # models saved before every estimator had the same fitted attributes
    n_train = int(attributes["n_train_"])
    if estimator.train_indices_ is None:
        estimator.train_indices_ = np.arange(n_train)
    defaults = {
        "n_estimators_": ens.n_trees,
        "stopped_by_callback_": False,
        "max_bins_": estimator.get_params().get("max_bins"),
        "sketch_dim_": None,
    }
    if "tree_type" in estimator.get_params():  # saved before "auto": the type it names
        defaults["tree_type_"] = estimator.get_params()["tree_type"]
    if hasattr(estimator, "resolve_n_estimators"):  # saved before "auto": the M it names
        defaults["n_estimators_planned_"] = estimator.get_params()["n_estimators"]
    for key, value in defaults.items():
        if key not in attributes:
            setattr(estimator, key, value)
    estimator.output_space_ = space
    estimator.ensemble_ = ens
    estimator.resolved_params_ = _resolved_params(manifest, estimator)
    if "warm_start" in manifest:  # absent: saved before it, or nothing to continue
        if not hasattr(estimator, "restore_warm_start"):
            raise PersistenceError(f"{manifest['estimator']} models have no warm-start record")
        estimator.restore_warm_start(manifest["warm_start"])
    return estimator


def _started(
    trees: TreeEnsemble, meta: dict, arrays: dict[str, np.ndarray], space: OutputSpace, p: int
) -> StartedEnsemble:
    """A boosting model started from kernel ridge: its kernel ridge model (checked as any
    kernel model) and F_0 on the training rows, (N, r), before the trees."""
    start = KernelEnsemble(
        kernel=str(meta["input_kernel"]),
        **{f: arrays[f"start_model.{f}"] for f in KERNEL_ENSEMBLE_ARRAYS},
        train_phi=space.phi,
    )
    _check_kernel_structure(start, space, p)
    if start.kernel == "precomputed":
        raise PersistenceError("a starting model's input kernel cannot be precomputed")
    train_start = arrays["start_model.train_start"]
    if train_start.shape != space.phi.shape or not np.isfinite(train_start).all():
        raise PersistenceError("the starting model's training values do not match the outputs")
    return StartedEnsemble(start, trees, train_start)


def _resolved_params(manifest: dict, estimator: Any) -> dict[str, Any]:
    """The fitted ``resolved_params_``: as saved, checked (names to JSON scalars); for a
    model saved before they were, what its saved attributes and warm-start plan tell (the
    search, the tree type and the planned rounds)."""
    saved = manifest.get("resolved_params")
    if saved is not None:
        if not isinstance(saved, dict) or not all(
            isinstance(k, str) and (v is None or isinstance(v, bool | int | float | str))
            for k, v in saved.items()
        ):
            raise PersistenceError("the resolved parameters are not names with plain values")
        return dict(saved)
    resolved: dict[str, Any] = {}
    plan = manifest.get("warm_start", {}).get("plan")
    if isinstance(plan, dict):
        resolved.update({k: v for k, v in plan.items() if k != "max_leaves"})
    for name in ("tree_type", "max_bins", "sketch_dim"):
        if hasattr(estimator, f"{name}_"):
            resolved.setdefault(name, getattr(estimator, f"{name}_"))
    if hasattr(estimator, "n_estimators_planned_"):
        resolved["n_estimators"] = estimator.n_estimators_planned_
    return resolved


def _similarity_model(meta: dict, arrays: dict[str, np.ndarray], inner: Any) -> SimilarityInputs:
    """The saved estimator wrapped in its input map, checked against it."""
    kind, n_items = str(meta["kind"]), int(meta["n_items"])
    mean, projection = arrays["input_map.column_mean"], arrays["input_map.projection"]
    if kind == "kernel_map":
        valid = inner.n_features_in_ == n_items and mean.size == 0
    else:
        valid = (
            kind == "kpca"
            and mean.shape == (n_items,)
            and projection.shape == (n_items, inner.n_features_in_)
            and bool(np.all(np.isfinite(projection)) and np.all(np.isfinite(mean)))
        )
    if not valid or n_items < 1:
        raise PersistenceError("model structure is invalid: the input map does not fit the model")
    input_map = SimilarityMap(kind, n_items, mean, float(meta["total_mean"]), projection)
    components = meta.get("n_components")
    model = SimilarityInputs(clone(inner), map=kind, n_components=components)
    model.validate_params()
    model._adopt(inner, input_map)
    return model


def _check_structure(ens: TreeEnsemble, space: OutputSpace, n_features: int) -> None:
    """Every index the compiled predictors follow must be in range (they do not check)."""

    def fail(what: str) -> None:
        raise PersistenceError(f"model structure is invalid: {what}")

    if ens.combine not in ("boosting", "average"):
        fail(f"unknown combination {ens.combine!r}")
    if not (np.isfinite(ens.l2_regularization) and ens.l2_regularization >= 0.0):
        fail(f"l2_regularization must be finite and >= 0, got {ens.l2_regularization!r}")
    n_nodes, n_leaves = len(ens.feature), len(ens.value)
    if any(len(getattr(ens, f)) != n_nodes for f in NODE_FIELDS):
        fail("node arrays differ in length")
    if ens.missing_left is not None and (
        ens.missing_left.shape != (n_nodes,)
        or ens.missing_left.dtype != np.uint8
        or np.any(ens.missing_left > 1)
    ):
        fail("missing_left must hold one 0/1 byte per node")
    for offsets, total in ((ens.node_offset, n_nodes), (ens.leaf_offset, n_leaves)):
        if offsets[0] != 0 or offsets[-1] != total or np.any(np.diff(offsets) < 1):
            fail("tree offsets are not increasing")
    n_trees = ens.n_trees
    if len(ens.leaf_offset) != n_trees + 1 or ens.train_leaf.shape != (n_trees, space.n_samples):
        fail("per-tree arrays do not match the number of trees or training outputs")
    count = ens.train_leaf if ens.train_count is None else ens.train_count
    if count.shape != ens.train_leaf.shape or ens.value.shape[1] != space.rank:
        fail("leaf values or counts have the wrong shape")
    if ens.train_leaf.dtype.kind not in "iu" or count.dtype.kind not in "iu":
        fail("training leaves and counts must be integers")
    tree_of_node = np.repeat(np.arange(n_trees), np.diff(ens.node_offset))
    size = np.diff(ens.node_offset)[tree_of_node]
    leaves = np.diff(ens.leaf_offset)[tree_of_node]
    internal = ens.left >= 0
    if np.any((ens.feature[internal] < 0) | (ens.feature[internal] >= n_features)):
        fail("split feature out of range")
    for child in (ens.left, ens.right):
        local = np.arange(n_nodes) - ens.node_offset[tree_of_node]
        if np.any(child[internal] >= size[internal]) or np.any(child[internal] <= local[internal]):
            fail("child index out of range")
    if np.any(ens.right[internal] < 0) or np.any(ens.leaf[internal] != -1):
        fail("internal node marked as leaf")
    if np.any((ens.leaf[~internal] < 0) | (ens.leaf[~internal] >= leaves[~internal])):
        fail("leaf number out of range")
    if np.any(ens.train_leaf < 0) or np.any(ens.train_leaf >= np.diff(ens.leaf_offset)[:, None]):
        fail("training leaf out of range")
    if np.any(ens.n_samples < 1) or np.any(count < 0):  # W^F divides by leaf sizes
        fail("node sample counts must be positive")
    if not np.all(np.isfinite(ens.value)):
        fail("output space arrays are inconsistent")
    for weights, shape in (
        (ens.train_weight, ens.train_leaf.shape),
        (ens.init_weight, (space.n_samples,)),
    ):
        if weights is not None and (
            weights.shape != shape
            or weights.dtype != np.float64
            or not np.all(np.isfinite(weights))
        ):
            fail("leaf or initial weights do not match the trees and training outputs")
    # arrays the predictions broadcast against: a wrong length would not always raise
    if ens.init.shape != (space.rank,):
        fail("initial value or eigenvalues do not match the output space's rank")
    if not np.all(np.isfinite(ens.init)):
        fail("output space arrays are inconsistent")
    _check_space(space)


def _check_space(space: OutputSpace) -> None:
    """The output space's arrays must agree with each other (rank, rows, Nystrom maps)."""

    def fail(what: str) -> None:
        raise PersistenceError(f"model structure is invalid: {what}")

    if len(space.diag) != space.n_samples:
        fail("output space arrays are inconsistent")
    if space.eigenvalues is not None and space.eigenvalues.shape != (space.rank,):
        fail("initial value or eigenvalues do not match the output space's rank")
    if space.outputs is not None and len(space.outputs) != space.n_samples:
        fail("training outputs do not match the output space")
    if not np.all(np.isfinite(space.phi)):
        fail("output space arrays are inconsistent")
    if space.feature_map is not None or space.landmarks is not None:
        fmap, marks, index = space.feature_map, space.landmarks, space.landmark_index
        if (
            fmap is None
            or marks is None
            or space.outputs is None
            or fmap.shape != (len(marks), space.rank)
            or marks.shape[1:] != space.outputs.shape[1:]
            or not (np.all(np.isfinite(fmap)) and np.all(np.isfinite(marks)))
        ):
            fail("Nystrom landmarks or feature map do not match the output space")
        if (
            index is not None
            and marks is not None
            and (
                index.shape != (len(marks),)
                or np.any(index < 0)
                or np.any(index >= space.n_samples)
            )
        ):
            fail("Nystrom landmark rows out of range")


def _check_kernel_structure(ens: KernelEnsemble, space: OutputSpace, n_features: int) -> None:
    """Every index and shape the kernel-model predictions follow must be consistent."""

    def fail(what: str) -> None:
        raise PersistenceError(f"model structure is invalid: {what}")

    if ens.kernel not in INPUT_KERNELS:
        fail(f"unknown input kernel {ens.kernel!r}")
    n_basis, offsets = len(ens.basis_index), ens.basis_offset
    if (
        offsets.ndim != 1
        or len(offsets) != len(ens.coef) + 1
        or offsets[0] != 0
        or offsets[-1] != n_basis
        or np.any(np.diff(offsets) < 1)
    ):
        fail("stage offsets do not match the basis vectors and coefficients")
    width = 0 if ens.kernel == "precomputed" else n_features
    if ens.alpha.shape != (n_basis, space.rank) or ens.basis_inputs.shape != (n_basis, width):
        fail("alphas or basis inputs have the wrong shape")
    if np.any(ens.basis_index < 0) or (
        ens.kernel == "precomputed" and np.any(ens.basis_index >= n_features)
    ):
        fail("basis row out of range")
    if ens.gamma.shape != ((n_features,) if ens.kernel == "rbf" else (0,)) or np.any(
        ens.gamma <= 0
    ):
        fail("RBF widths do not match the input features")
    if ens.init.shape != (space.rank,):
        fail("initial value does not match the output space's rank")
    for name in KERNEL_ENSEMBLE_ARRAYS:
        if not np.all(np.isfinite(getattr(ens, name))):
            fail(f"{name} holds NaN or infinity")
    _check_space(space)
