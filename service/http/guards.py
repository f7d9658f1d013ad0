"""ASGI guards in front of the routes: the Host allow-list, the cross-site check,
request-body caps and read timeout, and a last-resort 500 that keeps the connection usable.

They are plain ASGI middleware (no request object is built), so a refused request costs
a header scan and nothing is read from a body that is too large.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from urllib.parse import urlsplit

import anyio
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.errors import BodyTimeout, TooLarge, error_body

log = logging.getLogger("okboost.service")

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
"""Host names a local server always answers to (the default allow-list)."""
WILDCARD_BINDS = ("0.0.0.0", "::", "")


def is_json_media(content_type: str) -> bool:
    """Whether a Content-Type is read as JSON (also a missing one, as the routes do)."""
    media = content_type.split(";")[0].strip().lower()
    return media in ("", "application/json") or media.endswith("+json")


class BodyLimits:
    """Caps on request bodies, checked on Content-Length before reading and while streaming:
    ``max_json_bytes`` for JSON bodies, ``max_bytes`` for the others (multipart uploads of
    binary arrays, which cost no more memory than their size); ``read_timeout`` seconds
    at most between two parts of a body (a client that promises 10 bytes and sends 2 gets
    408 and its connection closed, instead of holding it forever), and ``deadline`` seconds
    for the whole body from the first read (a client that sends one byte every few
    seconds is cut off too)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int,
        max_json_bytes: int,
        read_timeout: float,
        deadline: float = float("inf"),
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_json_bytes = max_json_bytes
        self.read_timeout = read_timeout
        self.deadline = deadline

    def _too_large(self, size: int | str, json_body: bool) -> TooLarge:
        if json_body:
            return TooLarge(
                f"JSON request body of {size} bytes exceeds the limit of {self.max_json_bytes} "
                "bytes for JSON (OKBOOST_MAX_JSON_BYTES): send large arrays as binary parts of "
                "a multipart request (README, Binary uploads), up to "
                f"{self.max_bytes} bytes (OKBOOST_MAX_REQUEST_BYTES)"
            )
        return TooLarge(
            f"request body of {size} bytes exceeds the limit of {self.max_bytes} bytes "
            "(OKBOOST_MAX_REQUEST_BYTES); send fewer rows per request or raise the limit"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        json_body = is_json_media(headers.get("content-type", ""))
        limit = self.max_json_bytes if json_body else self.max_bytes
        declared = headers.get("content-length")
        if declared is not None:
            length = int(declared) if declared.isdigit() else -1
            if length < 0:
                body = error_body(400, "bad_request", "invalid Content-Length header")
                await JSONResponse(body, 400, headers={"connection": "close"})(scope, receive, send)
                return
            if length > limit:
                err = self._too_large(length, json_body)
                await JSONResponse(err.body(), 413, headers={"connection": "close"})(
                    scope, receive, send
                )
                return
        received = 0
        body_done = False
        started: float | None = None

        async def limited() -> Message:
            nonlocal received, body_done, started
            if body_done:  # only a disconnect can come now: wait for it as long as it takes
                return await receive()
            now = anyio.current_time()
            started = now if started is None else started
            left = self.deadline - (now - started)
            try:
                with anyio.fail_after(max(min(self.read_timeout, left), 0.0)):
                    message = await receive()
            except TimeoutError:
                if left <= self.read_timeout:
                    raise BodyTimeout(
                        f"the request body did not arrive in full within {self.deadline:g} s "
                        f"({received} bytes received); send it faster, or in several "
                        "requests (OKBOOST_BODY_DEADLINE)"
                    ) from None
                raise BodyTimeout(
                    f"no part of the request body arrived for {self.read_timeout:g} s "
                    f"({received} bytes received); send the whole body promptly "
                    "(OKBOOST_BODY_READ_TIMEOUT)"
                ) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
                if received > limit:
                    raise self._too_large(f"more than {limit}", json_body)
            return message

        await self.app(scope, limited, send)


def _host_name(header: str) -> str | None:
    """The host of a Host header without its port ("[::1]" keeps its brackets); None when
    the header is not a host[:port]."""
    header = header.strip().lower()
    if header.startswith("["):
        end = header.find("]")
        rest = header[end + 1 :]
        if end < 0 or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return None
        try:
            ipaddress.IPv6Address(header[1:end])
        except ValueError:
            return None
        return header[: end + 1]
    host, _, port = header.partition(":")
    if not host or (port and not port.isdigit()) or "/" in host or "@" in host:
        return None
    return host


def default_allowed_hosts(bind_host: str) -> list[str]:
    """localhost, 127.0.0.1 and [::1], plus the interface the server is bound to when it
    is a specific one."""
    hosts = list(LOCAL_HOSTS)
    bind = bind_host.strip().lower()
    if bind not in WILDCARD_BINDS:
        try:
            bind = f"[{ipaddress.IPv6Address(bind)}]"
        except ValueError:
            pass
        if bind not in hosts:
            hosts.append(bind)
    return hosts


class HostAllowList:
    """Answer only requests whose Host header names an allowed host ('*' allows any).

    A web page can make a browser send requests to a server on localhost under its own
    domain name (DNS rebinding): the Host header then carries that domain, and this check
    refuses it (400) before any route runs. Starlette's TrustedHostMiddleware does the same
    check but answers in plain text; the service answers every error in its JSON shape."""

    def __init__(self, app: ASGIApp, *, allowed_hosts: Iterable[str]) -> None:
        self.app = app
        self.allowed = {h.strip().lower() for h in allowed_hosts if h.strip()}
        self.allow_any = "*" in self.allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.allow_any or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("host", "")
        host = _host_name(header)
        if host is None or host not in self.allowed:
            message = (
                f"Host header {header[:100]!r} is not one this server answers to "
                f"({', '.join(sorted(self.allowed))}); add the name clients use to "
                "OKBOOST_ALLOWED_HOSTS (comma-separated) if it is yours"
            )
            body = error_body(400, "host_not_allowed", message)
            await JSONResponse(body, 400)(scope, receive, send)
            return
        await self.app(scope, receive, send)


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that change nothing; every other one is refused cross-site."""
DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_key(origin: str) -> tuple[str, int | None] | None:
    """(host, port) of an Origin header such as ``https://app.example:8443``, None when it
    is not a scheme://host[:port] origin (``null`` included)."""
    try:
        parts = urlsplit(origin.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    return parts.hostname, port if port is not None else DEFAULT_PORTS[parts.scheme]


def normalise_origin(origin: str) -> str:
    """``scheme://host[:port]`` lower-cased, without a default port or a trailing slash."""
    key = _origin_key(origin)
    if key is None:
        return origin.strip().lower()
    scheme = urlsplit(origin.strip().lower()).scheme
    host = f"[{key[0]}]" if ":" in key[0] else key[0]
    return (
        f"{scheme}://{host}" if key[1] == DEFAULT_PORTS[scheme] else f"{scheme}://{host}:{key[1]}"
    )


def _same_origin(origin: str, host_header: str) -> bool:
    """Whether ``origin`` names the host (and port, when the Host header has one) the
    request was sent to."""
    key = _origin_key(origin)
    host = _host_name(host_header)
    if key is None or host is None:
        return False
    name = key[0] if ":" not in key[0] else f"[{key[0]}]"
    port = host_header.strip().lower()[len(host) :].removeprefix(":")
    return name == host and (not port or int(port) == key[1])


class CrossSiteGuard:
    """Refuse (403) a state-changing request that a browser sent from a web page of another
    site, unless that page's origin is allowed.

    Browsers let any page send a POST with a "simple" body (text/plain, a form, a multipart
    form) to any address, localhost included, without asking the server first; without a
    token, such a request from a page the user merely visits could train, import or delete
    models. Browsers say where a request comes from: ``Sec-Fetch-Site`` (``same-origin``,
    ``same-site``, ``cross-site``, or ``none`` when the user typed the address) and
    ``Origin``. A request is refused when Sec-Fetch-Site is ``same-site`` or ``cross-site``
    or, from a browser that does not send Sec-Fetch-Site, when its Origin is not the host
    the request was sent to; unless its Origin is in ``allowed_origins``. Sec-Fetch-Site
    ``same-origin`` is taken as the browser says (a reverse proxy may rewrite Host).
    Clients that are not browsers (curl, httpx, the okboost clients) send neither header and
    are not affected; GET, HEAD and OPTIONS are never refused."""

    def __init__(self, app: ASGIApp, *, allowed_origins: Iterable[str]) -> None:
        self.app = app
        self.allowed = {normalise_origin(o) for o in allowed_origins if o.strip()}

    def refusal(self, scope: Scope) -> str | None:
        """Why the request is refused as cross-site, or None."""
        if scope["method"] in SAFE_METHODS:
            return None
        headers = Headers(scope=scope)
        fetch_site = headers.get("sec-fetch-site", "").strip().lower()
        origin = headers.get("origin")
        if origin is not None and normalise_origin(origin) in self.allowed:
            return None
        if fetch_site in ("same-origin", "none"):  # the browser's word, proxies or not
            return None
        if fetch_site in ("same-site", "cross-site"):
            return f"Sec-Fetch-Site: {fetch_site}, Origin: {(origin or 'none')[:100]}"
        # a browser without Sec-Fetch-Site: its Origin against the Host the request names
        if origin is not None and not _same_origin(origin, headers.get("host", "")):
            return f"Origin: {origin[:100]}"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        why = scope["type"] == "http" and self.refusal(scope)
        if why:
            message = (
                f"cross-site request refused ({why}): this server takes state-changing "
                "requests only from its own pages and from clients that are not browsers. "
                "If the web page sending it is yours, add its origin (scheme://host:port) to "
                "OKBOOST_ALLOWED_ORIGINS"
            )
            body = error_body(403, "cross_site_refused", message)
            await JSONResponse(body, 403, headers={"connection": "close"})(scope, receive, send)
            return
        await self.app(scope, receive, send)


class LastResort:
    """Turn an exception no handler took into the JSON 500 answer, and return normally.

    Starlette's own last handler re-raises after answering, and uvicorn then closes the
    connection, so the client's next pooled request fails; here the exception is logged
    and the connection stays usable. An exception after the answer has started cannot be
    answered any more and is left to the server."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking)
        except Exception as exc:
            if started:
                raise
            log.error(
                "unhandled error on %s %s", scope.get("method"), scope.get("path"), exc_info=exc
            )
            body = error_body(500, "internal_error", "internal server error; see the server log")
            await JSONResponse(body, 500)(scope, receive, send)
