"""The service reaches okcore through its public API: the estimator registry, no privates."""

from __future__ import annotations

import re
from pathlib import Path

import okcore


def test_the_service_reaches_okcore_through_its_public_api_only():
    """No service module imports an okcore private module or calls a private method."""
    service = Path(__file__).resolve().parents[2] / "service"
    private = re.compile(
        r"from okcore\.?\w*\._|import okcore\._|okcore\.\w+\._\w|\._validate_params"
    )
    offenders = [
        f"{path.name}: {line.strip()}"
        for path in service.rglob("*.py")
        for line in path.read_text().splitlines()
        if private.search(line)
    ]
    assert offenders == []


def test_the_service_builds_estimators_through_the_registry(monkeypatch):
    from service.training import fit as training

    built = []
    real = okcore.make_estimator

    def spy(name, params=None):
        built.append(name)
        return real(name, params)

    monkeypatch.setattr(okcore, "make_estimator", spy)
    assert isinstance(training.checked_estimator("ok3", {"max_splits": 2}), okcore.OK3Regressor)
    assert built == ["ok3"]


def test_the_service_imports_only_names_of_okcore_all():
    """Every okcore name a service module uses is in ``okcore.__all__``: no
    ``okcore.<submodule>`` import, no ``okcore.<name>`` outside the public API."""
    import ast

    service = Path(__file__).resolve().parents[2] / "service"
    public = set(okcore.__all__)
    offenders = []
    for path in service.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("okcore."):
                offenders.append(f"{path.name}: from {node.module} import ...")
            elif isinstance(node, ast.Import):
                offenders += [
                    f"{path.name}: import {a.name}"
                    for a in node.names
                    if a.name.startswith("okcore.")
                ]
            if isinstance(node, ast.ImportFrom) and node.module == "okcore":
                offenders += [
                    f"{path.name}: from okcore import {a.name}"
                    for a in node.names
                    if a.name not in public
                ]
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "okcore"
                and node.attr not in public
            ):
                offenders.append(f"{path.name}: okcore.{node.attr}")
    assert offenders == []


def test_model_names_and_eval_set_support_come_from_the_registry():
    from service.schemas.api import TrainRequest
    from service.schemas.params import EVAL_SET_MODELS, PARAM_MODELS

    names = [*okcore.ESTIMATORS, "auto"]  # and the automatic choice among them
    assert list(okcore.estimator_names(include_auto=True)) == names
    assert list(PARAM_MODELS) == names
    assert TrainRequest.model_json_schema()["properties"]["model"]["enum"] == names
    assert set(EVAL_SET_MODELS) == {
        n for n, cls in okcore.ESTIMATORS.items() if cls.supports_eval_set
    }
