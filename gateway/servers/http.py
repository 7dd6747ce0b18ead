"""The HTTP port: `/healthz`, `/metrics` and the dashboard, under the Host check and the connection guard.

Faces add their own WebSocket endpoints to the application (the native face's `/ws`, rosbridge's
`/rosbridge`). The dashboard is static files (`gateway/static/`) served at `/` and `/static/<name>`;
the page is a client like any other and talks to the gateway only over `/ws`.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from gateway.core.config import ServerConfig
from gateway.servers.hosts import HostPolicy, host_guard
from gateway.servers.http_guard import GuardedHttpProtocol

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
_STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
# Files are not fingerprinted, so browsers revalidate (ETag / Last-Modified) before each use.
_STATIC_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
# A Host header that can go into the CSP as it is; anything else gets only 'self'.
_PLAIN_HOST = re.compile(r"[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?")


def build_app(
    server: ServerConfig,
    health: Callable[[], tuple[int, dict[str, Any]]],
    metrics: Callable[[], bytes],
    guards: Mapping[asyncio.BaseTransport, GuardedHttpProtocol] | None = None,
) -> web.Application:
    """The aiohttp application serving every HTTP endpoint.

    `guards` maps each connection's transport to its `GuardedHttpProtocol` (absent: no guard, as
    under a plain aiohttp site).
    """
    connection_guards: Mapping[asyncio.BaseTransport, GuardedHttpProtocol] = {} if guards is None else guards

    @web.middleware
    async def guarded(request: web.Request, handler: Handler) -> web.StreamResponse:
        guard = connection_guards.get(request.transport) if request.transport is not None else None
        if guard is None:
            return await handler(request)
        guard.request_started()
        try:
            return await handler(request)
        finally:
            guard.request_finished()

    async def healthz(request: web.Request) -> web.Response:
        status, body = health()
        return web.json_response(body, status=status, dumps=lambda obj: orjson.dumps(obj).decode())

    async def prometheus(request: web.Request) -> web.Response:
        return web.Response(
            body=metrics(), headers={"Content-Type": CONTENT_TYPE_LATEST, "X-Content-Type-Options": "nosniff"}
        )

    files = _static_files(STATIC_DIR)

    async def index(request: web.Request) -> web.StreamResponse:
        page = files.get("index.html")
        if page is None:
            raise web.HTTPServiceUnavailable(text=f"dashboard files are missing from {STATIC_DIR}\n")
        return web.FileResponse(page, headers=_page_headers(request))

    async def static(request: web.Request) -> web.StreamResponse:
        path = files.get(request.match_info["name"])
        # Only files present at start are served, so no path can leave the folder; the page itself is
        # served at `/` only, with its Content-Security-Policy.
        if path is None or path.suffix == ".html":
            raise web.HTTPNotFound()
        return web.FileResponse(path, headers={"Content-Type": _STATIC_TYPES[path.suffix], **_STATIC_HEADERS})

    app = web.Application(
        client_max_size=server.max_frame_bytes, middlewares=[guarded, host_guard(HostPolicy(server.allowed_hosts))]
    )
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", prometheus)
    app.router.add_get("/", index)
    app.router.add_get("/static/{name}", static)
    return app


def _static_files(directory: Path) -> dict[str, Path]:
    """The dashboard's files by name."""
    if not directory.is_dir():
        log.warning("dashboard files are missing: no folder %s", directory)
        return {}
    return {path.name: path for path in sorted(directory.iterdir()) if path.is_file() and path.suffix in _STATIC_TYPES}


def _page_headers(request: web.Request) -> dict[str, str]:
    """Headers of the dashboard page: nothing but this gateway may supply scripts, styles or sockets."""
    connect = "'self'"
    if _PLAIN_HOST.fullmatch(request.host):
        connect += f" ws://{request.host} wss://{request.host}"
    policy = (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src {connect}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return {
        "Content-Type": _STATIC_TYPES[".html"],
        "Content-Security-Policy": policy,
        "Referrer-Policy": "no-referrer",
        **_STATIC_HEADERS,
    }
