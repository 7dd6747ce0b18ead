"""The rosbridge listener: WebSocket at `/` on its own port (9090), and at `/rosbridge` on the HTTP port.

Frames are written raw like `/ws` does (`WebSocketTransport`): JSON text frames, and binary frames for
subscriptions that asked for CBOR. No permessage-deflate (both libraries offer it; it costs +60 % CPU),
the same Origin rules and tokens as `/ws`: `?token=` on the URL, or the rosbridge `auth` op.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable

import orjson
from aiohttp import WSMsgType, web

from gateway.core.client import Hub
from gateway.errors import Unauthorized
from gateway.faces.rosbridge import cbor
from gateway.faces.rosbridge.names import RosNames
from gateway.faces.rosbridge.ops import RosbridgeSession
from gateway.servers.hosts import HostPolicy, host_guard
from gateway.servers.http import WebSocketTransport, _origin_allowed
from gateway.servers.http_guard import (
    GuardedHttpProtocol,
    close_on_read_timeout,
    listen_guarded,
    reserve_refusal,
    serve_guarded,
)
from gateway.servers.limits import ConnectionLimits

log = logging.getLogger(__name__)


def handler(hub: Hub, names: RosNames) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The aiohttp handler serving one rosbridge WebSocket per request."""
    server = hub.server

    async def rosbridge(request: web.Request) -> web.StreamResponse:
        return await serve_guarded(request, serve)

    async def serve(request: web.Request, guard: GuardedHttpProtocol | None) -> web.StreamResponse:
        refusal = reserve_refusal(guard)
        if refusal is not None:
            return refusal
        if not _origin_allowed(request, server.allowed_origins):
            log.warning("refused a rosbridge WebSocket from origin %s", request.headers.get("Origin"))
            raise web.HTTPForbidden(text="origin not allowed; add it to server.allowed_origins\n")
        token = request.query.get("token")
        ws = web.WebSocketResponse(
            compress=False,  # permessage-deflate costs +60 % CPU for small frames
            max_msg_size=server.max_frame_bytes + 1,  # aiohttp refuses frames >= its limit; ours are > max
            heartbeat=server.heartbeat_s or None,
        )
        if request.transport is None:  # the client already left
            raise web.HTTPBadRequest()
        transport = WebSocketTransport(ws, request.transport, server.send_buffer_bytes)
        session = RosbridgeSession(hub, names, transport, str(request.remote))
        if token is not None:
            try:
                await session.client.authenticate(token)
            except Unauthorized:
                raise web.HTTPUnauthorized(text="token refused\n") from None
        await ws.prepare(request)
        session.start()
        close_on_read_timeout(guard, server.max_frame_bytes, session.close)
        try:
            async for message in ws:
                if guard is not None and message.type in (WSMsgType.TEXT, WSMsgType.BINARY):
                    guard.message_taken()
                if message.type == WSMsgType.TEXT:
                    await _receive_text(session, message.data, server.max_request_bytes)
                elif message.type == WSMsgType.BINARY:
                    await _receive_binary(session, message.data)
        finally:
            session.finish()
        return ws

    return rosbridge


async def _receive_text(session: RosbridgeSession, text: str, max_request_bytes: int) -> None:
    size = len(text) if len(text) * 4 <= max_request_bytes else len(text.encode())
    try:
        request = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        session.reject(f"not valid JSON: {error}")
        return
    await session.receive(request, size)


async def _receive_binary(session: RosbridgeSession, data: bytes) -> None:
    try:
        request = cbor.decode(data)
    except cbor.CborError as error:
        session.reject(str(error))
        return
    await session.receive(request, len(data))


class RosbridgeServer:
    """The dedicated rosbridge port: its own aiohttp runner in the gateway's event loop."""

    def __init__(self, hub: Hub, names: RosNames) -> None:
        self._app = web.Application(
            client_max_size=hub.server.max_frame_bytes, middlewares=[host_guard(HostPolicy(hub.server.allowed_hosts))]
        )
        self._app.router.add_get("/", handler(hub, names))
        self._server = hub.server
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self.port: int | None = None

    async def start(
        self,
        host: str,
        port: int,
        tls: ssl.SSLContext | None,
        limits: ConnectionLimits,
        registry: dict[asyncio.BaseTransport, GuardedHttpProtocol],
    ) -> None:
        """Listen on `host`:`port` (TLS with `tls`) under the gateway's connection `limits`.

        Raises `OSError` naming the listener when it cannot bind.
        """
        self._runner, self._listener = await listen_guarded(
            self._app, "rosbridge", host, port, tls, self._server, limits, registry
        )
        self.port = self._listener.sockets[0].getsockname()[1]

    async def stop_listening(self) -> None:
        """Accept no new connections."""
        if self._listener is not None:
            self._listener.close()

    async def cleanup(self) -> None:
        """Release the runner (after the sessions were closed)."""
        if self._runner is not None:
            await self._runner.cleanup()
