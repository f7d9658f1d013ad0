"""Cross-site writes: a web page the user visits cannot POST or DELETE to the service (no
token on loopback by default), unless its origin is allowed; the token guards every route."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from svc_data import TestClient, clustered_graph, diffusion_request, make_settings
from test_errors import assert_error

from service.app import create_app

EVIL = "https://evil.example"
PAGE_HEADERS = [  # what a browser sends with a request from a page of another site
    {"origin": EVIL, "sec-fetch-site": "cross-site"},
    {"origin": EVIL},  # browsers without Sec-Fetch-* headers
    {"sec-fetch-site": "cross-site"},  # a form POST may carry Origin: null or none
    {"origin": "null"},  # sandboxed frames, file:// pages
    {"origin": "http://localhost:9999", "sec-fetch-site": "same-site"},  # another port
]


def _train_body() -> dict[str, Any]:
    return diffusion_request(clustered_graph(), wait=False)


@pytest.mark.parametrize("headers", PAGE_HEADERS, ids=lambda h: ",".join(h.values()))
def test_cross_site_writes_are_refused(
    client: TestClient, trained: dict[str, Any], headers: dict[str, str]
) -> None:
    model_id = trained["model_id"]
    text = {**headers, "content-type": "text/plain"}
    attempts = [
        client.post("/models/import", content=b"\x1f\x8b archive", headers=text),
        client.post("/train", files={"json": (None, json.dumps(_train_body()))}, headers=headers),
        client.post("/predict", files={"json": (None, "{}")}, headers=headers),
        client.post("/kernel", content=b"{}", headers=text),
        client.post("/evaluate", files={"json": (None, "{}")}, headers=headers),
        client.delete(f"/models/{model_id}", headers=headers),
    ]
    for r in attempts:
        assert_error(r, 403, "cross_site_refused", "OKBOOST_ALLOWED_ORIGINS")
    assert client.get(f"/models/{model_id}", headers=headers).status_code == 200
    assert len(client.get("/models").json()["models"]) == 1  # nothing trained or imported


def test_same_origin_and_non_browser_requests_pass(
    client: TestClient, trained: dict[str, Any]
) -> None:
    body = {"model_id": trained["model_id"], "inputs": [[0.0] * 4], "top_k": 1}
    for headers in (
        {},  # curl, httpx, the okboost clients
        {"origin": "http://localhost", "sec-fetch-site": "same-origin"},  # the /docs page
        {"origin": "http://localhost"},
        {"sec-fetch-site": "none"},  # typed by the user
        # the docs page behind a reverse proxy that rewrites Host: the browser's word counts
        {"origin": "https://models.example.org", "sec-fetch-site": "same-origin"},
    ):
        r = client.post("/predict", json=body, headers=headers)
        assert r.status_code == 200, (headers, r.text)


@pytest.fixture
def allowing(tmp_path: Path) -> Iterator[TestClient]:
    settings = make_settings(tmp_path, allowed_origins="https://app.example.org/, http://x:81")
    with TestClient(create_app(settings)) as c:
        yield c


def test_an_allowed_origin_may_write_and_gets_cors_answers(allowing: TestClient) -> None:
    headers = {"origin": "https://app.example.org", "sec-fetch-site": "cross-site"}
    r = allowing.post("/train", json=_train_body(), headers=headers)
    assert r.status_code == 202, r.text
    assert r.headers["access-control-allow-origin"] == "https://app.example.org"
    preflight = allowing.options(
        "/train",
        headers={
            "origin": "https://app.example.org",
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type,authorization",
        },
    )
    assert preflight.status_code == 200, preflight.text
    r = allowing.post("/train", json=_train_body(), headers={"origin": EVIL})
    assert_error(r, 403, "cross_site_refused", EVIL)


def test_import_needs_an_archive_content_type(client: TestClient) -> None:
    """text/plain is what a page can send anywhere without a preflight."""
    for media in ("text/plain", None):
        headers = {"content-type": media} if media else {}
        r = client.post(
            "/models/import", content=b"\x1f\x8b\x08 not a real archive", headers=headers
        )
        assert_error(r, 415, "unsupported_media_type", "application/gzip")


def test_every_route_of_the_openapi_schema_needs_the_token(tmp_path: Path) -> None:
    """Every operation the schema lists (but the health probes) is a 401 without the
    token, before its body or its parameters are looked at."""
    with TestClient(create_app(make_settings(tmp_path, token="s3cret"))) as c:
        paths = c.app.openapi()["paths"]  # type: ignore[attr-defined]
        checked = 0
        for template, operations in paths.items():
            path = template.replace("{model_id}", "0" * 32).replace("{job_id}", "0" * 32)
            for method in operations:
                if template.startswith("/health/"):
                    continue
                r = c.request(method.upper(), path, content=b"{}")
                assert r.status_code == 401, (method, template, r.text)
                checked += 1
        assert checked >= 14
        assert c.get("/health/live").status_code == 200


def test_the_schema_documents_the_403_of_every_post_and_delete(client: TestClient) -> None:
    paths = client.app.openapi()["paths"]  # type: ignore[attr-defined]
    for template, operations in paths.items():
        for method, operation in operations.items():
            documented = "403" in operation["responses"]
            assert documented == (method in ("post", "delete")), (method, template)
