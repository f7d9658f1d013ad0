"""The default rules (okcore.defaults): the generated docs are current, and a fit shows and
saves what it resolved (``resolved_params_``)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import okcore
from okcore import OK3ForestRegressor, OK3Regressor, OKBoostRegressor, defaults

ROOT = Path(__file__).resolve().parents[2]
RESOLVED = {
    "tree_type",
    "max_splits",
    "max_depth",
    "l2_regularization",
    "max_bins",
    "sketch_dim",
    "refine_cuts",
    "n_estimators",
    "early_stopping",
    "n_iter_no_change",
    "max_features",
}


def _generator():
    spec = importlib.util.spec_from_file_location("gen", ROOT / "scripts/gen_defaults_page.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_defaults_page_and_the_readme_table_are_generated_from_the_rules() -> None:
    gen = _generator()
    assert (ROOT / "docs/defaults.md").read_text() == gen.page(), (
        "docs/defaults.md is out of date: run python scripts/gen_defaults_page.py"
    )
    readme = (ROOT / "README.md").read_text()
    assert readme == gen.readme(readme), (
        "README.md's defaults table is out of date: run python scripts/gen_defaults_page.py"
    )
    assert "defaults.md" in (ROOT / "mkdocs.yml").read_text()


def test_every_rule_is_dated_sourced_and_shows_the_numbers_in_force(monkeypatch) -> None:
    for rule in defaults.rules():
        assert rule.date[:4] == "2026" and len(rule.date) == 10, rule.setting
        assert rule.section and rule.measured and rule.when and rule.change_when
        rule.rule_text()  # every {field} has its number
    monkeypatch.setattr(defaults, "AUTO_N_ESTIMATORS_MIN_ROWS", 12_345)
    (n_estimators,) = (r for r in defaults.rules() if r.setting == "n_estimators")
    assert "12,345" in n_estimators.rule_text()
    assert {r.setting for r in defaults.rules()} >= {
        "n_estimators", "learning_rate", "tree_type", "max_depth", "l2_regularization",
        "max_bins, sketch_dim", "refine_cuts", "early_stopping", "max_features",
    }  # fmt: skip


def test_the_signature_defaults_are_the_rules() -> None:
    params = OKBoostRegressor().get_params()
    by_setting = {r.setting: r.default for r in defaults.rules()}
    for name in ("n_estimators", "learning_rate", "tree_type", "max_depth", "max_splits"):
        assert by_setting[name] == (
            f'"{params[name]}"' if isinstance(params[name], str) else str(params[name])
        ), name


def test_each_task_default_is_dated_sourced_and_shows_the_numbers_in_force(monkeypatch) -> None:
    tasks = defaults.task_defaults()
    assert [t.task.split()[0] for t in tasks] == ["regression", "multi-label", "bipartite"]
    for task in tasks:
        assert task.date[:4] == "2026" and len(task.date) == 10, task.task
        assert (ROOT / "docs" / task.record).is_file(), task.record
        assert task.chosen_on and task.reported_on and task.chosen_on != task.reported_on
    monkeypatch.setattr(defaults, "AUTO_BUDGET_SECONDS", 123.0)
    monkeypatch.setattr(defaults, "BIPARTITE_WEIGHTS", (1.0, 3.0, 5.0, 7.0))
    regression, multilabel, bipartite = defaults.task_defaults()
    assert "123 s" in regression.rule
    assert "1, 3, 5, 7" in bipartite.rule
    monkeypatch.setattr(defaults, "MULTILABEL_METRIC", "hamming_loss")
    assert '"hamming_loss"' in defaults.task_defaults()[1].rule


def test_the_task_defaults_are_the_numbers_the_models_use() -> None:
    """The automatic choice, the multi-label and the bipartite defaults read their numbers
    from okcore.defaults (one source), so the page says what they do."""
    import inspect

    from okcore.auto import engine
    from okcore.bipartite import BipartiteRegressor
    from okcore.bipartite.default import default_model

    assert engine.default_budget(1) == defaults.AUTO_BUDGET_SECONDS
    assert engine.default_budget(4 * defaults.AUTO_BUDGET_ROWS) == pytest.approx(
        4 * defaults.AUTO_BUDGET_SECONDS
    )
    select = inspect.signature(engine.select).parameters
    assert select["eta"].default == defaults.AUTO_HALVING_FACTOR
    assert select["min_rows"].default == defaults.AUTO_MIN_ROWS
    assert select["refine_folds"].default == defaults.AUTO_REFINE_FOLDS
    assert okcore.AutoRegressor().cv == defaults.AUTO_HOLDOUT
    assert [c.name for c in okcore.auto.regression_candidates(0)] == list(defaults.AUTO_CANDIDATES)
    labels = okcore.MultiLabelClassifier()
    assert (labels.scores, labels.metric, labels.threshold, labels.n_splits) == (
        defaults.MULTILABEL_SCORES,
        defaults.MULTILABEL_METRIC,
        defaults.MULTILABEL_THRESHOLD,
        defaults.MULTILABEL_FOLDS,
    )
    model = default_model("features", 0, bipartite=BipartiteRegressor)
    assert tuple(model.weights) == defaults.BIPARTITE_WEIGHTS
    assert tuple(model.weights_for("new_rows")) == defaults.BIPARTITE_BLOCK_WEIGHTS["new_rows"]
    nrlmf = model.members[2]
    assert {k: nrlmf.get_params()[k] for k in defaults.BIPARTITE_NRLMF} == dict(
        defaults.BIPARTITE_NRLMF
    )
    wknnir = model.members[0]
    assert wknnir.recovery_neighbors == defaults.BIPARTITE_NEIGHBORS
    assert wknnir.row_estimator.eta == defaults.BIPARTITE_ETA


def test_one_output_means_a_factor_of_rank_one() -> None:
    """A 1-D y with a Gaussian output kernel has many factor columns: the many-output rules."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 3)), rng.normal(size=60)
    linear = OKBoostRegressor(n_estimators=3, random_state=0).fit(X, y)
    rbf = OKBoostRegressor(n_estimators=3, random_state=0).fit(
        X, y, kernel={"type": "rbf", "gamma": 1.0}
    )
    assert linear.output_space_.rank == 1 and rbf.output_space_.rank > 1
    assert linear.resolved_params_["l2_regularization"] == defaults.OBLIVIOUS_L2_ONE_OUTPUT
    assert rbf.resolved_params_["l2_regularization"] == defaults.OBLIVIOUS_L2_MANY_OUTPUTS
    assert rbf.resolved_params_["max_depth"] == defaults.OBLIVIOUS_DEPTH_MANY_OUTPUTS
    assert linear.resolved_params_["refine_cuts"] is False


def test_resolved_params_hold_every_resolved_value_and_survive_saving(tmp_path) -> None:
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(80, 4)), rng.normal(size=(80, 3))
    est = OKBoostRegressor(n_estimators="auto", random_state=0)
    est.set_params(n_estimators=4).fit(X, Y)
    resolved = est.resolved_params_
    assert set(resolved) == RESOLVED
    plan = est.growth_plan(80, est.output_space_.rank, est.tree_type_)
    assert {k: resolved[k] for k in plan.resolved()} == plan.resolved()
    assert resolved["tree_type"] == "oblivious" and resolved["max_depth"] == 4
    assert resolved["n_estimators"] == 4 and resolved["early_stopping"] is False
    assert resolved["max_features"] == 4  # 1.0: all p inputs
    json.dumps(resolved)  # plain values
    okcore.save(est, tmp_path / "m")
    manifest = json.loads((tmp_path / "m/manifest.json").read_text())
    assert manifest["resolved_params"] == resolved
    assert okcore.load(tmp_path / "m").resolved_params_ == resolved


def test_auto_rounds_and_early_stopping_resolve_in_the_record() -> None:
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(60, 3)), rng.normal(size=(60, 2))
    est = OKBoostRegressor(
        n_estimators=6, n_iter_no_change=2, tree_type="best-first", random_state=0
    ).fit(X, Y)
    r = est.resolved_params_
    assert (r["early_stopping"], r["n_iter_no_change"]) == (True, 2)
    assert (r["tree_type"], r["max_splits"], r["max_depth"]) == ("best-first", 10, None)
    assert (r["max_bins"], r["sketch_dim"], r["l2_regularization"]) == (None, None, 0.0)


def test_a_model_saved_before_resolved_params_loads_with_what_it_tells(tmp_path) -> None:
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(50, 3)), rng.normal(size=(50, 2))
    est = OKBoostRegressor(n_estimators=3, random_state=0).fit(X, Y)
    okcore.save(est, tmp_path / "m")
    path = tmp_path / "m/manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["resolved_params"]
    path.write_text(json.dumps(manifest))
    loaded = okcore.load(tmp_path / "m")
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    expected = {k: v for k, v in est.resolved_params_.items() if k in {*est.growth_plan(
        50, est.output_space_.rank, est.tree_type_).resolved(), "n_estimators"}}  # fmt: skip
    assert loaded.resolved_params_ == expected
    manifest["resolved_params"] = {"max_depth": [4]}
    path.write_text(json.dumps(manifest))
    with pytest.raises(okcore.PersistenceError, match="resolved parameters"):
        okcore.load(tmp_path / "m")


@pytest.mark.parametrize("cls", [OK3Regressor, OK3ForestRegressor])
def test_trees_and_forests_resolve_their_candidate_features(cls, tmp_path) -> None:
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(40, 9)), rng.normal(size=(40, 2))
    params = {"n_estimators": 3} if cls is OK3ForestRegressor else {}
    est = cls(splitter="random", max_features=None, random_state=0, **params).fit(X, Y)
    assert est.resolved_params_ == {"max_features": 3, "max_bins": None, "refine_cuts": False}
    okcore.save(est, tmp_path / "m")
    assert okcore.load(tmp_path / "m").resolved_params_ == est.resolved_params_


def test_the_docstring_states_the_numbers_in_force() -> None:
    """The estimator's docstring gives a default's number in one sentence: the rule's."""
    doc = " ".join((OKBoostRegressor.__doc__ or "").split())
    for sentence in (
        f"None is {defaults.DEFAULT_MAX_SPLITS}",
        f'"auto" is {defaults.OBLIVIOUS_L2_MANY_OUTPUTS:g} or {defaults.OBLIVIOUS_L2_ONE_OUTPUT:g}',
        f"None is {defaults.DEFAULT_N_ITER_NO_CHANGE} rounds",
        f'"auto" is {defaults.AUTO_SKETCH_DIM} with the fast search when r > '
        f"{defaults.AUTO_SKETCH_DIM}",
        f'"auto" is {defaults.AUTO_MAX_BINS} from N x r >= 2e5',
        "docs/defaults.md",
    ):
        assert sentence in doc, sentence
    assert defaults.AUTO_FAST_MIN_WORK == 2e5


def test_kernel_ridge_resolves_its_penalty_and_width(tmp_path) -> None:
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(40, 3)), rng.normal(size=(40, 2))
    est = okcore.KernelRidgeRegressor(random_state=0).fit(X, Y)
    assert est.resolved_params_["alpha"] == est.alpha_
    np.testing.assert_allclose(est.resolved_params_["gamma"], est.ensemble_.gamma)
    okcore.save(est, tmp_path / "m")
    assert okcore.load(tmp_path / "m").resolved_params_ == est.resolved_params_


def test_the_wrappers_show_their_models_resolved_params() -> None:
    rng = np.random.default_rng(6)
    X = rng.normal(size=(30, 3))
    labels = (rng.random(size=(30, 4)) < 0.4).astype(float)
    booster = OKBoostRegressor(n_estimators=3, random_state=0)
    clf = okcore.MultiLabelClassifier(booster, threshold=0.5).fit(X, labels)
    assert clf.resolved_params_ == clf.estimator_.resolved_params_
    assert clf.resolved_params_["n_estimators"] == 3
    X_cols = rng.normal(size=(4, 2))
    net = okcore.bipartite.BipartiteRegressor(booster).fit(X, X_cols, labels)
    assert net.resolved_params_ == {
        "rows": net.row_model_.resolved_params_,
        "cols": net.col_model_.resolved_params_,
    }
