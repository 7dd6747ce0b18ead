"""The Foxglove WebSocket listener: its own port (8765), in the gateway's loop, with the gateway's rules.

The handshake must select a subprotocol or Foxglove gives up (close 1006): we answer the newest of
`foxglove.sdk.v1.1`, `foxglove.sdk.v1` and the legacy `foxglove.websocket.v1` that the client offers.
Frames are written raw like `/ws` does (`WebSocketTransport`); the Host guard (421), the Origin rules
and the tokens are the gateway's own. Foxglove has no auth message, so a token comes as `?token=`.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from typing import Any

from aiohttp import WSMessage, WSMsgType, web

from gateway import __version__
from gateway.core.client import Hub
from gateway.core.origins import HOSTED_VIEWERS
from gateway.errors import ErrorCode, Unauthorized
from gateway.faces.foxglove import wire
from gateway.faces.foxglove.catalog import Catalog
from gateway.faces.foxglove.session import CAPABILITIES, FoxgloveSession
from gateway.servers.hosts import HostPolicy, host_guard
from gateway.servers.http_guard import GuardedHttpProtocol, guarded_factory, serve_guarded
from gateway.servers.limits import LISTEN_BACKLOG, ConnectionLimits
from gateway.servers.upgrade import WebSocketTransport, accept, offered_subprotocols, receive_messages, vet_upgrade

log = logging.getLogger(__name__)


class FoxgloveServer:
    """The Foxglove port: one aiohttp runner, one catalog of channels and services for all its clients.

    Connections pass the gateway's guard as on the HTTP port: the shared client cap (`limits`), the
    header deadline and the WebSocket read limits.
    """

    name = "foxglove"
    #: Nothing of this face outlives its listeners' sessions: `stop` has nothing to wait for.
    stop_deadline_s = 0.0

    def __init__(self, hub: Hub, limits: ConnectionLimits, port: int) -> None:
        self.hub = hub
        self._limits = limits
        self._wanted_port = port
        self._scheme = "ws"
        self._guards: dict[asyncio.BaseTransport, GuardedHttpProtocol] = {}
        self.catalog = Catalog()
        #: Milliseconds since the epoch at start, as foxglove-sdk makes it: the same for every
        #: connection to this gateway process, new after a restart.
        self.session_id = str(int(time.time() * 1000))
        self._app = web.Application(
            client_max_size=hub.server.max_frame_bytes, middlewares=[host_guard(HostPolicy(hub.server.allowed_hosts))]
        )
        self._app.router.add_get("/", self._handle)
        self._runner: web.AppRunner | None = None
        self._server: asyncio.Server | None = None
        self.port: int | None = None

    def server_info(self) -> dict[str, Any]:
        """The serverInfo message."""
        return {
            "op": "serverInfo",
            "name": f"hwgateway {__version__}",
            "capabilities": list(CAPABILITIES),
            "supportedEncodings": ["json"],
            "metadata": {"fg-library": f"hwgateway/{__version__}", "server": "hwgateway", "version": __version__},
            "sessionId": self.session_id,
        }

    async def start(self, tls: ssl.SSLContext | None = None) -> None:
        """Listen on `server.host` and the configured port (TLS with `tls`); `OSError` naming it when it cannot bind."""
        server = self.hub.server
        host, port = server.host, self._wanted_port
        self._scheme = "wss" if tls else "ws"
        self._runner = web.AppRunner(
            self._app,
            handle_signals=False,
            access_log=None,
            shutdown_timeout=1.0,
            max_headers=server.http_max_headers,
            max_field_size=server.http_max_field_bytes,
            max_line_size=server.http_max_field_bytes,
        )
        await self._runner.setup()
        assert self._runner.server is not None
        factory = guarded_factory(
            self._runner.server, self._limits, server.http_header_timeout_s, server.read_timeout_s, self._guards
        )
        try:
            self._server = await asyncio.get_running_loop().create_server(
                factory,
                host,
                port,
                reuse_address=True,
                backlog=LISTEN_BACKLOG,
                ssl=tls,
                ssl_handshake_timeout=server.http_header_timeout_s if tls else None,
            )
        except OSError as error:
            raise OSError(error.errno, f"Foxglove {host}:{port}: {error.strerror or error}") from None
        self.port = self._server.sockets[0].getsockname()[1]

    def stop_listening(self) -> None:
        """Accept no new connections."""
        if self._server is not None:
            self._server.close()

    async def stop(self) -> None:
        """Nothing to stop beyond the listeners (closed by `stop_listening` and `cleanup`)."""

    def listeners(self) -> dict[str, str | None]:
        """The Foxglove port's URL."""
        return {"foxglove": f"{self._scheme}://{self.hub.server.host}:{self.port}/" if self.port else None}

    def abort_connections(self) -> None:
        """Drop every connection of this port at once (the end of a shutdown that ran out of time)."""
        for transport in list(self._guards):
            if isinstance(transport, asyncio.WriteTransport):
                transport.abort()

    async def cleanup(self) -> None:
        """Release the runner (after the sessions were closed)."""
        self.abort_connections()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        return await serve_guarded(request, self._serve)

    async def _serve(self, request: web.Request, guard: GuardedHttpProtocol | None) -> web.StreamResponse:
        server = self.hub.server
        subprotocol = wire.choose_subprotocol(offered_subprotocols(request))
        ws = vet_upgrade(
            request, guard, server, "Foxglove WebSocket", server.max_frame_bytes, subprotocol, HOSTED_VIEWERS
        )
        if not isinstance(ws, web.WebSocketResponse):
            return ws
        if subprotocol is None:
            raise web.HTTPBadRequest(
                text=f"offer one of the WebSocket subprotocols {', '.join(wire.SUBPROTOCOLS)} (Foxglove WebSocket)\n"
            )
        if request.transport is None:  # the client already left
            raise web.HTTPBadRequest()
        transport = WebSocketTransport(ws, request.transport, server.send_buffer_bytes)
        session = FoxgloveSession(
            self.hub, self.catalog, transport, str(request.remote), subprotocol, self.server_info(), self.port
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
        if not session.client.authenticated:
            session.refuse("this gateway needs a token: connect to ws://<host>:<port>/?token=<token>")
            await session.close(ErrorCode.UNAUTHORIZED, "token required")
            return ws

        async def handle(message: WSMessage) -> None:
            if message.type == WSMsgType.TEXT:
                await session.receive_text(message.data)
            else:
                await session.receive_binary(message.data)

        try:
            await receive_messages(ws, guard, session, server.max_frame_bytes, handle)
        finally:
            session.finish()
        return ws
