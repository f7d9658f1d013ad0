"""/docs and /redoc in a real headless browser, offline: the operations render, and the pages
request nothing from any host but the service."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import httpx
import pytest
from e2e_server import Server
from external_tools import require_tool

pytestmark = pytest.mark.browser

# Debian's chromium on a closed network: no first-run, sync, update or component traffic; every
# host name but the loopback address fails to resolve, so a CDN asset could not load either
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-features=AutofillServerCommunication",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--virtual-time-budget=20000",  # let the page fetch /openapi.json and render
    "--window-size=1000,1100",
]


@pytest.fixture
def browser() -> str:
    return require_tool("chromium", "chromium-browser", install="apt-get install chromium")


def chromium(
    browser: str, url: str, workdir: Path, *action: str
) -> subprocess.CompletedProcess[str]:
    """Run the browser once on ``url`` with a fresh profile and a network log in ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [
            browser,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={workdir / 'profile'}",
            f"--log-net-log={workdir / 'net.json'}",
            *action,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )


def page_requests(net_log: Path, origin: str) -> list[str]:
    """URLs the page at ``origin`` requested (initiated by it: its scripts, styles, images and
    fetches; the browser's own background requests carry no such initiator)."""
    log = json.loads(net_log.read_text())
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        event["params"]["url"]
        for event in log["events"]
        if event["type"] == start_job and event.get("params", {}).get("initiator") == origin
    ]


def operations(server: Server) -> list[tuple[str, str, str]]:
    schema = httpx.get(f"{server.url}/openapi.json").json()
    return [
        (method, path, op["summary"])
        for path, item in schema["paths"].items()
        for method, op in item.items()
    ]


@pytest.mark.parametrize("page", ["docs", "redoc"])
def test_docs_page_renders_every_operation_offline(
    browser: str, server: Server, tmp_path: Path, page: str
) -> None:
    html = httpx.get(f"{server.url}/{page}")
    assert html.status_code == 200
    assert "default-src 'self'" in html.headers["content-security-policy"]
    assert not re.search(r"(src|href)=\"?https?:", html.text), "an asset from another host"

    dom = chromium(browser, f"{server.url}/{page}", tmp_path, "--dump-dom").stdout
    ops = operations(server)
    assert len(ops) >= 10
    if page == "docs":  # Swagger UI: one block per operation, its path in data-path
        rendered = re.findall(r'class="opblock-summary-path" data-path="([^"]+)"', dom)
        assert sorted(rendered) == sorted(path for _, path, _ in ops)
    else:  # ReDoc: one side-menu entry per operation, with its HTTP method badge
        badges = re.findall(r'class="[^"]*\boperation-type (\w+)"', dom)
        assert sorted(badges) == sorted(method for method, _, _ in ops)
    for _, _, summary in ops:
        assert summary.replace("<", "&lt;").replace(">", "&gt;") in dom, summary

    requested = page_requests(tmp_path / "net.json", server.url)
    assert f"{server.url}/openapi.json" in requested
    assert all(url.startswith(server.url + "/") for url in requested), requested


def test_docs_screenshot_shows_the_operations(browser: str, server: Server, tmp_path: Path) -> None:
    shot = tmp_path / "docs.png"
    chromium(browser, f"{server.url}/docs", tmp_path, f"--screenshot={shot}")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1000, 1100)
    assert len(data) > 20_000  # a blank page compresses to a few hundred bytes
