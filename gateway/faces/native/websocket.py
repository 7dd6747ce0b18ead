"""The native protocol's WebSocket endpoint, `/ws` on the HTTP port: one JSON text frame per message."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import WSMessage, WSMsgType, web

from gateway.core.client import Hub
from gateway.faces.native.session import Session
from gateway.servers.http_guard import GuardedHttpProtocol
from gateway.servers.upgrade import WebSocketTransport, accept, receive_json_text, receive_messages, vet_upgrade


def handler(
    hub: Hub, guards: Mapping[asyncio.BaseTransport, GuardedHttpProtocol]
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The aiohttp handler serving one native session per WebSocket request.

    `guards` maps each HTTP connection's transport to its `GuardedHttpProtocol` (absent: no guard,
    as under a plain aiohttp site); its read timeout and frame limit hold on the upgraded socket.
    """
    server = hub.server

    async def websocket(request: web.Request) -> web.StreamResponse:
        guard = guards.get(request.transport) if request.transport is not None else None
        ws = vet_upgrade(request, guard, server, "WebSocket", server.max_frame_bytes)
        if not isinstance(ws, web.WebSocketResponse):
            return ws
        transport = await accept(ws, request)
        if transport is None:  # the client left during the handshake
            return ws
        session = Session(hub, WebSocketTransport(ws, transport, server.send_buffer_bytes), str(request.remote))
        session.start()

        async def handle(message: WSMessage) -> None:
            if message.type == WSMsgType.TEXT:
                await receive_json_text(session, message.data, server.max_request_bytes)
            else:
                await session.reject("binary frames are not accepted on /ws: send JSON text frames")

        try:
            await receive_messages(ws, guard, session, server.max_frame_bytes, handle)
        finally:
            session.finish()
        return ws

    return websocket
