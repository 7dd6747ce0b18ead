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

from aiohttp import WSMessage, WSMsgType, web

from gateway.core.client import Hub
from gateway.core.origins import HOSTED_VIEWERS
from gateway.errors import Unauthorized
from gateway.faces.rosbridge import cbor
from gateway.faces.rosbridge.ops import RosbridgeSession
from gateway.ros.names import RosNames
from gateway.servers.hosts import HostPolicy, host_guard
from gateway.servers.http_guard import GuardedHttpProtocol, listen_guarded, serve_guarded
from gateway.servers.limits import ConnectionLimits
from gateway.servers.upgrade import WebSocketTransport, accept, receive_json_text, receive_messages, vet_upgrade

log = logging.getLogger(__name__)


def handler(hub: Hub, names: RosNames) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The aiohttp handler serving one rosbridge WebSocket per request."""
    server = hub.server

    async def rosbridge(request: web.Request) -> web.StreamResponse:
        return await serve_guarded(request, serve)

    async def serve(request: web.Request, guard: GuardedHttpProtocol | None) -> web.StreamResponse:
        ws = vet_upgrade(request, guard, server, "rosbridge WebSocket", server.max_frame_bytes, viewers=HOSTED_VIEWERS)
        if not isinstance(ws, web.WebSocketResponse):
            return ws
        if request.transport is None:  # the client already left
            raise web.HTTPBadRequest()
        session = RosbridgeSession(
            hub, names, WebSocketTransport(ws, request.transport, server.send_buffer_bytes), str(request.remote)
        )
        token = request.query.get("token")
        if token is not None:
            try:
                await session.client.authenticate(token)
            except Unauthorized:
                raise web.HTTPUnauthorized(text="token refused\n") from None
        if await accept(ws, request) is None:
            return ws
        session.start()

        async def handle(message: WSMessage) -> None:
            if message.type == WSMsgType.TEXT:
                await receive_json_text(session, message.data, server.max_request_bytes)
            else:
                await _receive_binary(session, message.data)

        try:
            await receive_messages(ws, guard, session, server.max_frame_bytes, handle)
        finally:
            session.finish()
        return ws

    return rosbridge


async def _receive_binary(session: RosbridgeSession, data: bytes) -> None:
    try:
        request = cbor.decode(data)
    except cbor.CborError as error:
        await session.reject(str(error))
        return
    await session.receive(request, len(data))


class RosbridgeServer:
    """The dedicated rosbridge port: its own aiohttp runner in the gateway's event loop (a `Face`).

    Its connections share the HTTP port's `registry` of guarded connections (the app aborts them).
    """

    name = "rosbridge"
    #: Nothing of this face outlives its listeners' sessions: `stop` has nothing to wait for.
    stop_deadline_s = 0.0

    def __init__(
        self,
        hub: Hub,
        names: RosNames,
        port: int,
        limits: ConnectionLimits,
        registry: dict[asyncio.BaseTransport, GuardedHttpProtocol],
    ) -> None:
        self._app = web.Application(
            client_max_size=hub.server.max_frame_bytes, middlewares=[host_guard(HostPolicy(hub.server.allowed_hosts))]
        )
        self._app.router.add_get("/", handler(hub, names))
        self._server = hub.server
        self._wanted_port = port
        self._limits = limits
        self._registry = registry
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self._scheme = "ws"
        self.port: int | None = None

    async def start(self, tls: ssl.SSLContext | None) -> None:
        """Listen on `server.host` and the configured port (TLS with `tls`) under the gateway's connection limits.

        Raises `OSError` naming the listener when it cannot bind.
        """
        self._runner, self._listener = await listen_guarded(
            self._app, "rosbridge", self._server.host, self._wanted_port, tls, self._server, self._limits,
            self._registry,
        )  # fmt: skip
        self._scheme = "wss" if tls else "ws"
        self.port = self._listener.sockets[0].getsockname()[1]

    def stop_listening(self) -> None:
        """Accept no new connections."""
        if self._listener is not None:
            self._listener.close()

    def abort_connections(self) -> None:
        """Nothing of its own: its connections are in the HTTP port's registry, which the app aborts."""

    async def cleanup(self) -> None:
        """Release the runner (after the sessions were closed)."""
        if self._runner is not None:
            await self._runner.cleanup()

    async def stop(self) -> None:
        """Nothing to stop beyond the listeners (closed by `stop_listening` and `cleanup`)."""

    def listeners(self) -> dict[str, str | None]:
        """The rosbridge port's URL."""
        return {"rosbridge": f"{self._scheme}://{self._server.host}:{self.port}/" if self.port else None}
