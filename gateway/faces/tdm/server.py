"""The TDM face's listeners: TCP (length-prefixed flatbuffers) and WebSocket (one binary message each).

The WebSocket listener is an aiohttp application behind the same Host guard as the gateway's own
HTTP listener (DNS rebinding), at every path (Thymio Suite connects to `/`). Both listeners count
toward the gateway's shared connection caps (`server.max_clients` in all, `max_clients_per_peer`):
a WebSocket past them gets HTTP 503 with the reason, a TCP connection one `Error` message and the close.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Any

from aiohttp import WSMessage, WSMsgType, web

from gateway.core.client import Hub
from gateway.core.config import TdmConfig
from gateway.errors import ErrorCode
from gateway.faces.tdm.announce import Announcer
from gateway.faces.tdm.session import TdmSession
from gateway.faces.tdm.shared import TdmShared
from gateway.servers.hosts import HostPolicy, host_guard
from gateway.servers.http_guard import GuardedHttpProtocol, listen_guarded, serve_guarded
from gateway.servers.limits import LISTEN_BACKLOG, ConnectionLimits, Refused, Ticket
from gateway.servers.socket_transport import StreamWriterTransport, close_or_abort
from gateway.servers.stream_listener import read_stream
from gateway.servers.upgrade import accept, close_websocket, receive_messages, vet_upgrade
from protocols.errors import ProtocolError
from protocols.tdm import codec
from protocols.tdm.framing import MAX_MESSAGE_BYTES, FrameReader, frame
from protocols.tdm.messages import ErrorType

log = logging.getLogger(__name__)

_READ_BYTES = 65536
#: Seconds the zeroconf goodbye may take at shutdown (python-zeroconf sends it three times, 125 ms apart).
ANNOUNCER_STOP_S = 2.0


class TcpTransport(StreamWriterTransport):
    """TDM frames over TCP: each message behind its 4-byte little-endian length."""

    framing = "tcp"

    def frame(self, message: bytes) -> bytes:
        """`message` with its length prefix."""
        return frame(message)


class WebSocketTransport:
    """TDM messages over WebSocket: one binary message each, sent by aiohttp's writer."""

    framing = "ws"

    def __init__(self, ws: web.WebSocketResponse, transport: asyncio.Transport | None) -> None:
        self._ws = ws
        self._transport = transport

    def frame(self, message: bytes) -> bytes:
        """A WebSocket message carries one flatbuffer as it is."""
        return message

    def room(self) -> int:
        """Never write synchronously: the writer task sends (aiohttp's send is a coroutine)."""
        return -1

    def write(self, data: bytes) -> None:
        """Not used (`room` is always negative): the writer task sends each message."""
        raise RuntimeError("the TDM WebSocket sends through aiohttp's writer only")

    def try_write(self, data: bytes) -> bool:
        """Never writes synchronously (see `room`)."""
        return False

    async def send(self, frames: list[bytes]) -> None:
        """Send each frame as a binary message."""
        for message in frames:
            await self._ws.send_bytes(message)

    def abort(self) -> None:
        """Drop the connection at once."""
        if self._transport is not None:
            self._transport.abort()

    async def close(self, code: ErrorCode, reason: str) -> None:
        """Close the WebSocket with `code`'s close code and a reason (aborted when it does not end in time)."""
        await close_websocket(self._ws, code, reason, self.abort)


class TdmServer:
    """Both listeners of the TDM face; `tcp_port` / `ws_port` are the bound ports once started."""

    name = "tdm"
    #: Seconds `stop` may take: saying goodbye over zeroconf when announced, else nothing to wait for.
    stop_deadline_s = 0.0

    def __init__(self, hub: Hub, config: TdmConfig, limits: ConnectionLimits) -> None:
        self.hub = hub
        self.config = config
        self.tcp_port: int | None = None
        self.ws_port: int | None = None
        self._limits = limits
        self._guards: dict[asyncio.BaseTransport, GuardedHttpProtocol] = {}
        self._tcp: asyncio.Server | None = None
        self._runner: web.AppRunner | None = None
        self._ws_listener: asyncio.Server | None = None
        self._announcer: Announcer | None = None
        if config.zeroconf:
            self.stop_deadline_s = ANNOUNCER_STOP_S
        #: Groups and scratchpads, shared by every session of this face.
        self.shared = TdmShared(config.groups)

    async def start(self, tls: ssl.SSLContext | None = None) -> None:
        """Listen on both ports (no TLS: Thymio Suite and tdmclient speak none); `OSError` naming one it cannot bind."""
        config = self.config
        app = web.Application(middlewares=[host_guard(HostPolicy(self.hub.server.allowed_hosts))])
        app.router.add_get("/{tail:.*}", self._websocket)
        self._runner, self._ws_listener = await listen_guarded(
            app, "TDM WebSocket", config.host, config.ws_port, None, self.hub.server, self._limits, self._guards
        )
        self.ws_port = self._ws_listener.sockets[0].getsockname()[1]
        try:
            self._tcp = await asyncio.start_server(
                self._serve_tcp, config.host, config.tcp_port, reuse_address=True, backlog=LISTEN_BACKLOG
            )
        except OSError as error:
            raise OSError(error.errno, f"TDM TCP {config.host}:{config.tcp_port}: {error.strerror}") from None
        self.tcp_port = self._tcp.sockets[0].getsockname()[1]
        log.info("tdm face listening", extra={"tcp": self.tcp_port, "websocket": self.ws_port, "host": config.host})
        if config.zeroconf:
            self._announcer = Announcer(config.host, self.tcp_port, self.ws_port)
            self._announcer.start()

    def stop_listening(self) -> None:
        """Stop listening (the gateway closes the sessions with every other face's)."""
        if self._tcp is not None:
            self._tcp.close()
        if self._ws_listener is not None:
            self._ws_listener.close()

    def abort_connections(self) -> None:
        """Drop the WebSocket listener's connections at once (TCP sessions are aborted through the hub)."""
        for transport in list(self._guards):
            if isinstance(transport, asyncio.WriteTransport):
                transport.abort()

    async def cleanup(self) -> None:
        """Release the WebSocket application once the sessions are closed (aborting what is left)."""
        await self.stop()  # a start that failed later on never ran the app's stop pass
        self.abort_connections()
        if self._runner is not None:
            await self._runner.cleanup()

    async def stop(self) -> None:
        """Withdraw the zeroconf announcement, if any (the listeners close by `stop_listening` and `cleanup`)."""
        announcer, self._announcer = self._announcer, None
        if announcer is not None:
            await announcer.stop()

    def listeners(self) -> dict[str, str | None]:
        """Both ports' addresses."""
        if self.tcp_port is None:
            return {"tdm": None}
        host = self.config.host
        return {"tdm": f"tcp://{host}:{self.tcp_port} and ws://{host}:{self.ws_port}"}

    async def _serve_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        try:
            ticket = self._limits.admit(str(peer[0]) if peer else None)
        except Refused:  # logged (once per interval) by the limits; the TDM's Error carries no text
            writer.write(frame(codec.error(0, ErrorType.UNKNOWN_ERROR)))
            close_or_abort(writer.transport)
            return
        try:
            await self._serve_admitted(reader, writer, peer, ticket)
        finally:
            ticket.release()

    async def _serve_admitted(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Any, ticket: Ticket
    ) -> None:
        transport = TcpTransport(writer, self.hub.server.send_buffer_bytes)
        peer_address = str(peer[0]) if peer else "unknown"
        session = TdmSession(self.hub, transport, peer_address, self.ws_port or 0, shared=self.shared)
        session.start()
        frames = FrameReader(MAX_MESSAGE_BYTES)
        pending: list[bytes] = []

        async def handle() -> bool:
            while pending:
                if session.closing:
                    await session.wait_finished()
                    return False
                await session.receive(pending.pop(0))
            return True

        try:
            # The handshake (and its password) within auth_timeout_s, and a frame begun within read_timeout_s.
            await read_stream(
                reader, session, ticket, self.hub.server, lambda data: pending.extend(frames.feed(data)),
                lambda: frames.partial_bytes, handle, _READ_BYTES,
            )  # fmt: skip
        except ProtocolError as error:
            await session.close(ErrorCode.TOO_LARGE, str(error))
        except (ConnectionError, OSError):
            pass
        finally:
            session.finish()
            close_or_abort(writer.transport)

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        return await serve_guarded(request, self._serve_websocket)

    async def _serve_websocket(self, request: web.Request, guard: GuardedHttpProtocol | None) -> web.StreamResponse:
        # The same upgrade as every WebSocket face: the Origin guard (a web page may not drive a
        # robot through the TDM), the reserve's 503, the heartbeat.
        ws = vet_upgrade(request, guard, self.hub.server, "TDM WebSocket", MAX_MESSAGE_BYTES)
        if not isinstance(ws, web.WebSocketResponse):
            return ws
        transport = await accept(ws, request)
        if transport is None:
            return ws
        session = TdmSession(
            self.hub, WebSocketTransport(ws, transport), str(request.remote), self.ws_port or 0, shared=self.shared
        )
        session.start()

        async def handle(message: WSMessage) -> None:
            if message.type == WSMsgType.BINARY:
                await session.receive(message.data)
            else:
                await session.close(ErrorCode.BAD_REQUEST, "the TDM protocol sends binary messages")

        try:
            await receive_messages(ws, guard, session, MAX_MESSAGE_BYTES, handle)
        finally:
            session.finish()
        return ws
