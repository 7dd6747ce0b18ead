"""HTTP front end: `/ws` (client protocol over JSON text frames), `/healthz`, `/metrics`, and the dashboard.

The dashboard is static files (`gateway/static/`) served at `/` and `/static/<name>`; the page is a
client like any other and talks to the gateway only over `/ws`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
from aiohttp import WSCloseCode, WSMsgType, web
from prometheus_client import CONTENT_TYPE_LATEST

from gateway.core.client import Hub
from gateway.errors import ErrorCode
from gateway.faces.native.session import Session
from gateway.servers.hosts import HostPolicy, host_guard
from gateway.servers.http_guard import GuardedHttpProtocol, close_on_read_timeout, reserve_refusal
from gateway.servers.socket_transport import CLOSE_DRAIN_S, SocketTransport
from gateway.wire import Encoding

log = logging.getLogger(__name__)

#: The `close` reason of a client that did not authenticate in time ({} is server.auth_timeout_s).
AUTH_TIMEOUT_REASON = "not authenticated within {:g} s (server.auth_timeout_s)"

_CLOSE_CODES = {
    ErrorCode.GOING_AWAY: WSCloseCode.GOING_AWAY,
    ErrorCode.TOO_LARGE: WSCloseCode.MESSAGE_TOO_BIG,
    ErrorCode.BAD_REQUEST: WSCloseCode.UNSUPPORTED_DATA,
    ErrorCode.UNAVAILABLE: WSCloseCode.TRY_AGAIN_LATER,
}

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


class WebSocketTransport(SocketTransport):
    """WebSocket text frames, framed once per message in `gateway.wire`, written to the socket as they are.

    Writing the shared frame bytes directly (aiohttp's own writer would frame them again for each
    client) is what makes the fan-out as cheap as a bare broadcast; aiohttp still reads, answers
    pings and sends the close frame.
    """

    encoding: Encoding = "json"

    def __init__(self, ws: web.WebSocketResponse, transport: asyncio.WriteTransport, send_buffer_bytes: int) -> None:
        super().__init__(transport, send_buffer_bytes)
        self._ws = ws

    async def close(self, code: ErrorCode, reason: str) -> None:
        """Close with the matching WebSocket close code and the reason; abort if that does not finish in time.

        aiohttp waits for the client's close frame, and for room to send its own: a client that
        does not read would hold the connection open.
        """
        try:
            async with asyncio.timeout(CLOSE_DRAIN_S):
                await self._ws.close(
                    code=_CLOSE_CODES.get(code, WSCloseCode.POLICY_VIOLATION), message=reason.encode()[:120]
                )
        except (ConnectionError, TimeoutError):
            self.abort()


def _origin_allowed(request: web.Request, allowed: tuple[str, ...]) -> bool:
    origin = request.headers.get("Origin")
    if origin is None or origin in allowed or "*" in allowed:
        return True  # not a browser, or explicitly allowed
    return urlsplit(origin).netloc == request.host  # the page was served by this gateway


def build_app(
    hub: Hub,
    health: Callable[[], tuple[int, dict[str, Any]]],
    metrics: Callable[[], bytes],
    guards: Mapping[asyncio.BaseTransport, GuardedHttpProtocol] | None = None,
) -> web.Application:
    """The aiohttp application serving every HTTP endpoint.

    `guards` maps each connection's transport to its `GuardedHttpProtocol` (absent: no guard, as
    under a plain aiohttp site).
    """
    server = hub.server
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

    async def websocket(request: web.Request) -> web.StreamResponse:
        guard = connection_guards.get(request.transport) if request.transport is not None else None
        refusal = reserve_refusal(guard)  # past the cap: the reserve is for /healthz only
        if refusal is not None:
            return refusal
        if not _origin_allowed(request, server.allowed_origins):
            log.warning("refused a WebSocket from origin %s", request.headers.get("Origin"))
            raise web.HTTPForbidden(text="origin not allowed; add it to server.allowed_origins\n")
        ws = web.WebSocketResponse(
            compress=False,  # permessage-deflate costs +60 % CPU for small frames
            max_msg_size=server.max_frame_bytes + 1,  # aiohttp refuses frames >= its limit; ours are > max
            heartbeat=server.heartbeat_s or None,
        )
        try:
            await ws.prepare(request)
        except ConnectionError:
            return ws
        if request.transport is None:  # the client left during the handshake
            return ws
        transport = WebSocketTransport(ws, request.transport, server.send_buffer_bytes)
        session = Session(hub, transport, str(request.remote))
        session.start()
        close_on_read_timeout(guard, server.max_frame_bytes, session.close)
        auth_deadline = time.monotonic() + server.auth_timeout_s
        try:
            while True:
                waiting = None
                if server.auth_timeout_s and not session.client.authenticated:
                    waiting = max(auth_deadline - time.monotonic(), 0.0)
                try:
                    message = await ws.receive(waiting)
                except TimeoutError:
                    await session.close(ErrorCode.TIMEOUT, AUTH_TIMEOUT_REASON.format(server.auth_timeout_s))
                    break
                if message.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
                    break
                if session.closing:  # what the client sent after its last answer is not handled
                    await session.wait_finished()
                    break
                if guard is not None and message.type in (WSMsgType.TEXT, WSMsgType.BINARY):
                    guard.message_taken()
                # A client that is not reading its answers is not read either, but its auth deadline holds.
                left = None if waiting is None else max(auth_deadline - time.monotonic(), 0.0)
                try:
                    async with asyncio.timeout(left):
                        if message.type == WSMsgType.TEXT:
                            await _receive_text(session, message.data, server.max_request_bytes)
                        elif message.type == WSMsgType.BINARY:
                            await session.reject("binary frames are not accepted on /ws: send JSON text frames")
                except TimeoutError:
                    await session.close(ErrorCode.TIMEOUT, AUTH_TIMEOUT_REASON.format(server.auth_timeout_s))
                    break
        except ConnectionError:  # the peer vanished while we said goodbye
            pass
        finally:
            session.finish()
        return ws

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
    app.router.add_get("/ws", websocket)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", prometheus)
    app.router.add_get("/", index)
    app.router.add_get("/static/{name}", static)
    return app


async def _receive_text(session: Session, text: str, max_request_bytes: int) -> None:
    # Characters never outnumber UTF-8 bytes, and a character takes at most 4 bytes.
    size = len(text) if len(text) * 4 <= max_request_bytes else len(text.encode())
    try:
        request = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        await session.reject(f"not valid JSON: {error}")
        return
    await session.receive(request, size)


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
