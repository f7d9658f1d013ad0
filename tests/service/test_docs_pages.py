"""/docs and /redoc need no CDN: every asset they name is served by the service itself, and a
Content-Security-Policy keeps the pages on its origin (tests/e2e/test_docs_browser.py renders
them in a real browser)."""

from __future__ import annotations

import re

import pytest
from svc_data import TestClient

from service.http.docs_pages import DOCS_CONTENT_POLICY


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_page_names_only_assets_the_service_serves(client: TestClient, page: str) -> None:
    r = client.get(page)
    assert r.status_code == 200
    assert r.headers["content-security-policy"] == DOCS_CONTENT_POLICY
    assets = re.findall(r'(?:src|href)="([^"]+)"', r.text)
    assert assets, r.text
    for asset in assets:
        assert asset.startswith("/static-offline-docs/"), asset
        served = client.get(asset)
        assert served.status_code == 200 and len(served.content) > 1000, asset


def test_the_api_answers_carry_no_docs_policy(client: TestClient) -> None:
    assert "content-security-policy" not in client.get("/health/live").headers
