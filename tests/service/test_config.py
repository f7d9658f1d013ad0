"""Settings come from OKBOOST_* environment variables when the app factory gets none."""

from __future__ import annotations

from pathlib import Path

import pytest
from svc_data import TestClient

from service.app import create_app
from service.config import Settings


def test_environment_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OKBOOST_MODEL_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("OKBOOST_TOKEN", "t0k")
    monkeypatch.setenv("OKBOOST_MAX_WORKERS", "2")
    app = create_app()
    settings: Settings = app.state.services.settings
    assert settings.model_dir == tmp_path / "store" and settings.max_workers == 2
    assert settings.host == "127.0.0.1"  # local only unless told otherwise
    with TestClient(app) as c:
        assert c.get("/models").status_code == 401
        assert c.get("/models", headers={"Authorization": "Bearer t0k"}).status_code == 200
    assert (tmp_path / "store" / "jobs").is_dir()


def test_bad_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OKBOOST_MAX_WORKERS", "0")
    with pytest.raises(ValueError, match="max_workers"):
        Settings()


def test_blas_threads_limited_while_serving_then_restored(tmp_path: Path) -> None:
    from threadpoolctl import threadpool_info

    def blas_threads() -> list[int]:
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    with TestClient(create_app(Settings(model_dir=tmp_path, blas_threads=1))):
        assert all(n == 1 for n in blas_threads())
    assert blas_threads() == before
