"""A wrapper around aiohttp's per-connection protocol: admission, header timeout, WebSocket read limits.

aiohttp parses HTTP and WebSocket frames; this layer sees every byte before it does and enforces
what aiohttp does not: a connection cap, a deadline for a request's headers (slowloris), a deadline
and a shared byte budget for a WebSocket message that has begun but not ended.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from aiohttp import web

from gateway.core.config import ServerConfig
from gateway.errors import ErrorCode
from gateway.servers.limits import HTTP_RESERVE, LISTEN_BACKLOG, ConnectionLimits, Refused, Ticket
from gateway.servers.socket_transport import close_or_abort
from gateway.throttled_logs import RateLimitedLog
from protocols.errors import ProtocolError
from protocols.websocket_meter import WebSocketMeter

log = logging.getLogger(__name__)

#: WebSocket close codes the guard sends itself (RFC 6455 section 7.4.1).
WS_MESSAGE_TOO_BIG = 1009
WS_TRY_AGAIN_LATER = 1013
WS_POLICY_VIOLATION = 1008
#: Connections the guard closes are logged at most once per interval (an attack makes thousands).
_CLOSURES = RateLimitedLog("connections closed by limits", 10.0, logging.INFO)
#: WebSocket data messages aiohttp may hold for a handler that is not taking them.
MAX_QUEUED_MESSAGES = 64
#: Seconds a refused connection stays open for the client to read the refusal.
REFUSED_LINGER_S = 1.0


def _http_error(status: str, reason: str) -> bytes:
    body = (reason + "\n").encode()
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
        "Retry-After: 1\r\nConnection: close\r\n\r\n"
    ).encode() + body


def _ws_close_frame(code: int, reason: str) -> bytes:
    payload = code.to_bytes(2, "big") + reason.encode()[:120]
    return bytes([0x88, len(payload)]) + payload


class GuardedHttpProtocol(asyncio.Protocol):
    """Delegates to aiohttp's `RequestHandler` once the connection is admitted."""

    def __init__(
        self,
        inner_factory: Callable[[], asyncio.Protocol],
        limits: ConnectionLimits,
        header_timeout_s: float,
        read_timeout_s: float,
        registry: dict[asyncio.BaseTransport, GuardedHttpProtocol],
    ) -> None:
        self._factory = inner_factory
        self._limits = limits
        self._header_timeout_s = header_timeout_s
        self._read_timeout_s = read_timeout_s
        self._registry = registry
        self._inner: asyncio.Protocol | None = None
        self._transport: asyncio.Transport | None = None
        self.ticket: Ticket | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._requests = 0
        self._in_request = False
        self._header_bytes = 0
        self._meter: WebSocketMeter | None = None
        self._connected_at = 0.0
        # WebSocket bytes not yet handed to aiohttp: the rest of a read while its queue is full, and
        # an unfinished frame (aiohttp gets whole frames only, so a partial one is ours to free).
        self._held = bytearray()
        self._metered = 0  # bytes of `_held` the meter has read
        self._queued = 0  # data messages handed to aiohttp and not yet taken by the handler
        self._paused = False
        self._on_read_timeout: Callable[[str], None] | None = None

    # -- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        peer = transport.get_extra_info("peername")
        address = peer[0] if peer else None
        try:
            self.ticket = self._limits.admit(address, reserve=HTTP_RESERVE)
        except Refused as refused:
            # The reserve is for /healthz and the like: a newcomer takes the place of the oldest
            # reserve connection that has not even sent its request yet (an idle or slow one).
            if not self._evict_a_waiting_reserve_connection():
                self._refuse_early(transport, str(refused))
                return
            try:
                self.ticket = self._limits.admit(address, reserve=HTTP_RESERVE)
            except Refused as again:
                self._refuse_early(transport, str(again))
                return
        self._connected_at = time.monotonic()
        self._registry[transport] = self
        self._inner = self._factory()
        self._inner.connection_made(transport)
        self._arm(self._header_timeout_s, self._header_timed_out)

    def _evict_a_waiting_reserve_connection(self) -> bool:
        waiting = [
            guard
            for guard in self._registry.values()
            if guard.in_reserve and guard._requests == 0 and not guard._in_request and guard._transport is not None
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda guard: guard._connected_at)
        assert oldest.ticket is not None
        assert oldest._transport is not None
        oldest.ticket.release()  # now: the abort's connection_lost comes a loop iteration later
        oldest._transport.abort()
        return True

    def _refuse_early(self, transport: asyncio.Transport, reason: str) -> None:
        """Answer 503 and end the connection, reading (and dropping) the request meanwhile.

        Closing with the request unread would make the kernel reset the connection, and the client
        could lose the answer; so the write side is shut first and the socket dropped a moment later.
        """
        transport.write(_http_error("503 Service Unavailable", reason))
        if transport.can_write_eof():
            transport.write_eof()
            asyncio.get_running_loop().call_later(REFUSED_LINGER_S, transport.abort)
        else:
            close_or_abort(transport)

    def data_received(self, data: bytes) -> None:
        if self._inner is None or self._transport is None or self._transport.is_closing():
            return
        if self._meter is not None:
            self._held += data
            self._pump()
            return
        if not self._in_request:
            self._header_bytes += len(data)
            assert self.ticket is not None
            if not self.ticket.hold_partial(self._header_bytes):
                self._refuse_http("503 Service Unavailable", "too many unfinished requests; try again later")
                return
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else False

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        self._drop_held()
        if self._transport is not None:
            self._registry.pop(self._transport, None)
        if self.ticket is not None:
            self.ticket.release()
        if self._inner is not None:
            self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    # -- called by the request handlers ------------------------------------------------------

    @property
    def in_reserve(self) -> bool:
        """True when this connection was admitted past the cap (only plain HTTP is served then)."""
        return self.ticket is not None and self.ticket.reserve

    def request_started(self) -> None:
        """A request's headers are in: the header deadline no longer applies."""
        self._requests += 1
        self._in_request = True
        self._header_bytes = 0
        if self.ticket is not None:
            self.ticket.hold_partial(0)
        self._cancel_timer()

    def request_finished(self) -> None:
        """The handler returned: the next request's headers must come within the deadline again."""
        self._in_request = False
        if self._meter is None:
            self._arm(self._header_timeout_s, self._header_timed_out)

    def upgraded(self, max_message_bytes: int, on_read_timeout: Callable[[str], None]) -> None:
        """The connection is a WebSocket now: meter its frames."""
        self._meter = WebSocketMeter(max_message_bytes)
        self._on_read_timeout = on_read_timeout

    # -- internals ---------------------------------------------------------------------------

    def message_taken(self) -> None:
        """The WebSocket handler took one data message from aiohttp's queue."""
        self._queued = max(self._queued - 1, 0)
        if self._held and self._queued < MAX_QUEUED_MESSAGES // 2:
            self._pump()

    def _pump(self) -> None:
        """Hand aiohttp whole frames while fewer than `MAX_QUEUED_MESSAGES` data messages wait for the handler.

        aiohttp's reader pauses by queued payload bytes, so one-byte messages would pile up by the
        hundred thousand in one read; past the cap the rest waits here and the socket is not read.
        The bytes of a frame that has not ended wait here too.
        """
        assert self._meter is not None
        assert self._inner is not None
        assert self._transport is not None
        held = self._held
        while self._metered < len(held) and self._queued < MAX_QUEUED_MESSAGES:
            try:
                self._metered, boundary, messages = self._meter.feed(
                    held, self._metered, MAX_QUEUED_MESSAGES - self._queued
                )
            except ProtocolError as error:
                self._drop_held()
                self._close_ws(WS_MESSAGE_TOO_BIG, str(error))
                return
            self._queued += messages
            if not self._track_partial():
                self._drop_held()
                return
            if boundary:
                # Copies only the whole frames; what is left is at most one frame and a backlog.
                chunk = bytes(held[:boundary])
                del held[:boundary]
                self._metered -= boundary
                self._inner.data_received(chunk)
                if self._transport.is_closing():
                    return
        if self._metered < len(held):
            self._paused = True
            if self._transport.is_reading():
                self._transport.pause_reading()
        elif self._paused:
            self._paused = False
            # aiohttp pauses reading too, when its queue holds many bytes: leave that pause alone.
            if not getattr(self._inner, "_reading_paused", False) and not self._transport.is_reading():
                self._transport.resume_reading()

    def _drop_held(self) -> None:
        """Free the bytes not handed to aiohttp (the connection is being closed, or has been)."""
        self._held = bytearray()
        self._metered = 0

    def _track_partial(self) -> bool:
        assert self._meter is not None
        assert self.ticket is not None
        partial = self._meter.partial_bytes
        if not self.ticket.hold_partial(partial):
            self._close_ws(WS_TRY_AGAIN_LATER, "too many unfinished messages on the gateway; try again later")
            return False
        if partial and self._timer is None and self._read_timeout_s:
            self._arm(self._read_timeout_s, self._read_timed_out)
        elif not partial:
            self._cancel_timer()
        return True

    def _arm(self, delay: float, callback: Callable[[], None]) -> None:
        self._cancel_timer()
        self._timer = asyncio.get_running_loop().call_later(delay, callback)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _header_timed_out(self) -> None:
        self._timer = None
        if self._in_request or self._meter is not None or self._transport is None:
            return
        if self._requests == 0 or self._header_bytes:
            self._refuse_http(
                "408 Request Timeout", f"request headers not received within {self._header_timeout_s:g} s"
            )
        else:  # an idle keep-alive connection: close it quietly
            self._transport.close()

    def _read_timed_out(self) -> None:
        self._timer = None
        reason = f"a message begun {self._read_timeout_s:g} s ago is still unfinished (server.read_timeout_s)"
        _CLOSURES.log("closing a WebSocket: %s", reason)
        if self._on_read_timeout is not None:
            self._on_read_timeout(reason)
        else:
            self._close_ws(WS_POLICY_VIOLATION, reason)

    def _refuse_http(self, status: str, reason: str) -> None:
        assert self._transport is not None
        _CLOSURES.log("closing an HTTP connection: %s", reason)
        self._transport.write(_http_error(status, reason))
        close_or_abort(self._transport)

    def _close_ws(self, code: int, reason: str) -> None:
        """Send a close frame ourselves and drop the connection (aiohttp's reader may be mid-frame)."""
        assert self._transport is not None
        _CLOSURES.log("closing a WebSocket with %d: %s", code, reason)
        self._transport.write(_ws_close_frame(code, reason))
        close_or_abort(self._transport)


def guard_of(request: web.Request) -> GuardedHttpProtocol | None:
    """The guard of the connection `request` came on (None when it left, or under a plain aiohttp site)."""
    transport = request.transport
    protocol = transport.get_protocol() if transport is not None else None
    return protocol if isinstance(protocol, GuardedHttpProtocol) else None


#: What serves one guarded request: the request and its connection's guard (None without one).
GuardedHandler = Callable[[web.Request, "GuardedHttpProtocol | None"], Awaitable[web.StreamResponse]]
#: Closing tasks started by read timeouts, held until done.
_closing: set[asyncio.Task[None]] = set()


async def serve_guarded(request: web.Request, serve: GuardedHandler) -> web.StreamResponse:
    """`serve(request, guard)`; the headers are in, so no header deadline while the request lasts."""
    guard = guard_of(request)
    if guard is None:
        return await serve(request, None)
    guard.request_started()
    try:
        return await serve(request, guard)
    finally:
        guard.request_finished()


def close_on_read_timeout(
    guard: GuardedHttpProtocol | None,
    max_message_bytes: int,
    close: Callable[[ErrorCode, str], Coroutine[Any, Any, None]],
) -> None:
    """Arm `guard`'s read timeout on an upgraded WebSocket: `close(ErrorCode.TIMEOUT, reason)` when late.

    A message held unfinished past the read timeout closes the socket; `max_message_bytes` bounds one.
    """
    if guard is None:
        return

    def read_timed_out(reason: str) -> None:
        task = asyncio.create_task(close(ErrorCode.TIMEOUT, reason))
        _closing.add(task)
        task.add_done_callback(_closing.discard)

    guard.upgraded(max_message_bytes, read_timed_out)


def reserve_refusal(guard: GuardedHttpProtocol | None) -> web.Response | None:
    """The 503 for a WebSocket asked on a connection admitted past the cap (the reserve is for `/healthz`)."""
    if guard is None or not guard.in_reserve:
        return None
    refusal = web.Response(
        status=503, text="too many clients (server.max_clients); try again later\n", headers={"Retry-After": "1"}
    )
    refusal.force_close()
    return refusal


def guarded_factory(
    inner_factory: Callable[[], Any],
    limits: ConnectionLimits,
    header_timeout_s: float,
    read_timeout_s: float,
    registry: dict[asyncio.BaseTransport, GuardedHttpProtocol],
) -> Callable[[], GuardedHttpProtocol]:
    """A protocol factory for `loop.create_server`."""
    return lambda: GuardedHttpProtocol(inner_factory, limits, header_timeout_s, read_timeout_s, registry)


async def listen_guarded(
    app: web.Application,
    name: str,
    host: str,
    port: int,
    tls: ssl.SSLContext | None,
    server: ServerConfig,
    limits: ConnectionLimits,
    registry: dict[asyncio.BaseTransport, GuardedHttpProtocol],
) -> tuple[web.AppRunner, asyncio.Server]:
    """Serve `app` on `host:port` behind the connection limits and header/read deadlines of `server`.

    Every HTTP listener of the gateway (the main port and each face's own) is started this way, so the
    same caps, slowloris guard and shutdown abort (through `registry`) hold on all of them. Raises
    `OSError` naming the listener (`name`) when the address cannot be bound.
    """
    runner = web.AppRunner(
        app,
        handle_signals=False,
        access_log=None,
        shutdown_timeout=1.0,
        max_headers=server.http_max_headers,
        max_field_size=server.http_max_field_bytes,
        max_line_size=server.http_max_field_bytes,
    )
    await runner.setup()
    assert runner.server is not None
    factory = guarded_factory(runner.server, limits, server.http_header_timeout_s, server.read_timeout_s, registry)
    try:
        listener = await asyncio.get_running_loop().create_server(
            factory,
            host,
            port,
            reuse_address=True,
            backlog=LISTEN_BACKLOG,
            ssl=tls,
            # A TLS handshake is part of the request headers' time.
            ssl_handshake_timeout=server.http_header_timeout_s if tls else None,
        )
    except OSError as error:
        await runner.cleanup()
        raise OSError(error.errno, f"{name} {host}:{port}: {error.strerror or error}") from None
    return runner, listener
