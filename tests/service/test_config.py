"""Settings come from OKBOOST_* environment variables when the app factory gets none."""

from __future__ import annotations

from pathlib import Path

import pytest
from svc_data import TestClient

from service.app import create_app
from service.cli import main
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


@pytest.mark.parametrize("name", ["WAIT_TIMEOUT", "MAX_JOB_SECONDS", "BODY_DEADLINE"])
@pytest.mark.parametrize("value", ["inf", "nan"])
def test_a_limit_of_infinity_or_nan_is_refused(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    """They were accepted: a wait, a job or a body with no bound."""
    monkeypatch.setenv(f"OKBOOST_{name}", value)
    with pytest.raises(ValueError, match=name.lower()):
        Settings()


def test_blas_threads_limited_while_serving_then_restored(tmp_path: Path) -> None:
    from threadpoolctl import threadpool_info

    def blas_threads() -> list[int]:
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    with TestClient(create_app(Settings(model_dir=tmp_path, blas_threads=1))):
        assert all(n == 1 for n in blas_threads())
    assert blas_threads() == before


# ------------------------------------------------------------------ safe by default
def test_host_header_allow_list(tmp_path: Path) -> None:
    """DNS rebinding: a page of evil.example resolving to 127.0.0.1 reaches the server with
    Host: evil.example. Without a token only local names are answered."""
    with TestClient(create_app(Settings(model_dir=tmp_path))) as c:
        for host in ("localhost", "localhost:8000", "127.0.0.1:8000", "[::1]:8000"):
            assert c.get("/models", headers={"host": host}).status_code == 200, host
        for host in ("evil.example", "evil.example:8000", "127.0.0.1.evil.example", "[::1"):
            r = c.get("/models", headers={"host": host})
            assert r.status_code == 400, host
            assert r.json()["error"]["code"] == "host_not_allowed"
            assert "OKBOOST_ALLOWED_HOSTS" in r.json()["error"]["message"]
    named = Settings(model_dir=tmp_path, allowed_hosts="okboost.lab.example, localhost")
    with TestClient(create_app(named)) as c:
        assert c.get("/health/live", headers={"host": "okboost.lab.example:80"}).status_code == 200
        assert c.get("/health/live", headers={"host": "127.0.0.1"}).status_code == 400
    with TestClient(create_app(Settings(model_dir=tmp_path, token="t"))) as c:  # token: any
        assert c.get("/health/live", headers={"host": "evil.example"}).status_code == 200
        assert c.get("/models", headers={"host": "evil.example"}).status_code == 401
    assert Settings(host="10.1.2.3").allowed_host_list()[-1] == "10.1.2.3"


def test_token_from_a_file(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("s3cret-from-file\n")
    assert Settings(token_file=tmp_path / "token").token == "s3cret-from-file"
    assert Settings(token="given", token_file=tmp_path / "token").token == "given"
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ValueError, match="is empty"):
        Settings(token_file=tmp_path / "empty")
    with pytest.raises(ValueError, match="cannot be read"):
        Settings(token_file=tmp_path / "missing")


def test_serve_refuses_all_interfaces_without_a_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("OKBOOST_TOKEN", "OKBOOST_TOKEN_FILE", "OKBOOST_ALLOW_REMOTE_WITHOUT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--model-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "refusing to listen on 0.0.0.0 without a token" in err and "OKBOOST_TOKEN" in err
    assert Settings(host="0.0.0.0", token="t").exposure_problem() is None
    assert Settings(host="0.0.0.0", allow_remote_without_token=True).exposure_problem() is None
    assert Settings(host="127.0.0.1").exposure_problem() is None
    assert Settings(host="::1").exposure_problem() is None
    assert Settings(host="192.168.1.5").exposure_problem() is not None
