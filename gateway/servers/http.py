"""HTTP front end: `/ws` (client protocol over JSON text frames), `/healthz`, `/metrics` and `/`."""

from __future__ import annotations

import contextlib
import html
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import orjson
from aiohttp import WSCloseCode, WSMsgType, web

from gateway.errors import ErrorCode
from gateway.session import Hub, Session
from gateway.wire import Encoding

log = logging.getLogger(__name__)

_CLOSE_CODES = {
    ErrorCode.GOING_AWAY: WSCloseCode.GOING_AWAY,
    ErrorCode.TOO_LARGE: WSCloseCode.MESSAGE_TOO_BIG,
    ErrorCode.BAD_REQUEST: WSCloseCode.UNSUPPORTED_DATA,
}


class WebSocketTransport:
    """Frames out over an aiohttp WebSocket as text frames."""

    encoding: Encoding = "json"

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self._ws = ws

    async def send(self, frames: list[bytes]) -> None:
        """Send each frame as one text message; aiohttp waits when the socket is full."""
        for frame in frames:
            await self._ws.send_frame(frame, WSMsgType.TEXT)

    async def close(self, code: ErrorCode, reason: str) -> None:
        """Close with the matching WebSocket close code and the reason."""
        with contextlib.suppress(ConnectionError):
            await self._ws.close(
                code=_CLOSE_CODES.get(code, WSCloseCode.POLICY_VIOLATION), message=reason.encode()[:120]
            )


def _origin_allowed(request: web.Request, allowed: tuple[str, ...]) -> bool:
    origin = request.headers.get("Origin")
    if origin is None or origin in allowed or "*" in allowed:
        return True  # not a browser, or explicitly allowed
    return urlsplit(origin).netloc == request.host  # the page was served by this gateway


def build_app(
    hub: Hub,
    health: Callable[[], tuple[int, dict[str, Any]]],
    metrics: Callable[[], bytes],
) -> web.Application:
    """The aiohttp application serving every HTTP endpoint."""
    server = hub.server

    async def websocket(request: web.Request) -> web.StreamResponse:
        if not _origin_allowed(request, server.allowed_origins):
            log.warning("refused a WebSocket from origin %s", request.headers.get("Origin"))
            raise web.HTTPForbidden(text="origin not allowed; add it to server.allowed_origins\n")
        ws = web.WebSocketResponse(
            compress=False,  # permessage-deflate costs +60 % CPU for small frames
            max_msg_size=server.max_frame_bytes,
            heartbeat=server.heartbeat_s or None,
        )
        await ws.prepare(request)
        session = Session(hub, WebSocketTransport(ws), str(request.remote))
        session.start()
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    await _receive_text(session, message.data, server.max_request_bytes)
                elif message.type == WSMsgType.BINARY:
                    session.reject("binary frames are not accepted on /ws: send JSON text frames")
        finally:
            session.finish()
        return ws

    async def healthz(request: web.Request) -> web.Response:
        status, body = health()
        return web.json_response(body, status=status, dumps=lambda obj: orjson.dumps(obj).decode())

    async def prometheus(request: web.Request) -> web.Response:
        return web.Response(
            body=metrics(), content_type="text/plain", charset="utf-8", headers={"X-Content-Type-Options": "nosniff"}
        )

    async def index(request: web.Request) -> web.Response:
        return web.Response(text=_index_page(hub), content_type="text/html")

    app = web.Application(client_max_size=server.max_frame_bytes)
    app.router.add_get("/ws", websocket)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", prometheus)
    app.router.add_get("/", index)
    return app


async def _receive_text(session: Session, text: str, max_request_bytes: int) -> None:
    # Characters never outnumber UTF-8 bytes, and a character takes at most 4 bytes.
    size = len(text) if len(text) * 4 <= max_request_bytes else len(text.encode())
    try:
        request = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        session.reject(f"not valid JSON: {error}")
        return
    await session.receive(request, size)


def _index_page(hub: Hub) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(h.id)}</td><td>{html.escape(h.kind)}</td><td>{html.escape(h.status)}</td>"
        f"<td>{html.escape(', '.join(hub.bus.topics(h.id + '/')))}</td></tr>"
        for h in hub.supervisor.devices.values()
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>hwgateway</title></head><body>"
        "<h1>hwgateway</h1><p>WebSocket: <code>/ws</code> · <a href='/healthz'>/healthz</a> · "
        "<a href='/metrics'>/metrics</a></p><table border='1' cellpadding='4'>"
        "<tr><th>device</th><th>kind</th><th>status</th><th>topics</th></tr>"
        f"{rows}</table></body></html>"
    )
