"""What the Python client raises when no answer comes: the URL and the reason, in httpx's own
exception types (a server that is down, a timeout)."""

from __future__ import annotations

import socket

import httpx
import pytest

from okboost_client import OKBoostClient


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_server_that_cannot_be_reached_is_named_with_its_url() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    with OKBoostClient(url) as c, pytest.raises(httpx.ConnectError) as caught:
        c.health()
    message = str(caught.value)
    assert f"cannot reach the okboost service at {url}/health/ready" in message, message
    assert "is it running" in message
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


def test_a_request_past_the_timeout_says_which_and_the_limit() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with OKBoostClient(
        "http://okboost.test", timeout=2.5, transport=httpx.MockTransport(slow)
    ) as c:
        with pytest.raises(httpx.ReadTimeout) as caught:
            c.models()
    message = str(caught.value)
    assert "GET http://okboost.test/models" in message and "timeout = 2.5 s" in message, message
