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
    assert isinstance(training._estimator("ok3", {"max_splits": 2}), okcore.OK3Regressor)
    assert built == ["ok3"]
