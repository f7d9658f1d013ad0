"""/docs (Swagger UI) and /redoc that work offline.

The pages and their assets come from fastapi-offline, which installs Swagger UI's and
ReDoc's files with the package and serves them under ``/static-offline-docs``. A
Content-Security-Policy on the two pages keeps every request they make on the service's
own origin: ReDoc's side menu would otherwise fetch its logo from cdn.redoc.ly.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

DOCS_PAGES = ("/docs", "/redoc")

DOCS_CONTENT_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self' 'unsafe-inline'",  # Swagger UI's inline start-up script
        "style-src 'self' 'unsafe-inline'",  # ReDoc's and Swagger UI's computed styles
        "img-src 'self' data:",
        "font-src 'self' data:",
        "worker-src 'self' blob:",  # ReDoc's search index
        "connect-src 'self'",
    ]
)


def create_offline_docs_app(**fastapi_kwargs: Any) -> FastAPI:
    """A FastAPI app whose /docs and /redoc load nothing from another host."""
    app = FastAPIOffline(**fastapi_kwargs)
    app.add_middleware(DocsContentPolicy)
    return app


class DocsContentPolicy:
    """Add :data:`DOCS_CONTENT_POLICY` to the answers of the documentation pages."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in DOCS_PAGES:
            await self.app(scope, receive, send)
            return

        async def with_policy(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)["Content-Security-Policy"] = DOCS_CONTENT_POLICY
            await send(message)

        await self.app(scope, receive, with_policy)
