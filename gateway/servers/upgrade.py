"""One upgrade path for every WebSocket face (`/ws`, rosbridge, Foxglove, TDM).

Each face's handler calls `vet_upgrade` (the reserve's 503, the Origin rule's 403, subprotocol
negotiation, the heartbeat and the frame cap), may then check a `?token=`, calls `accept` for the
101, and hands its messages to `receive_messages`, which holds the auth deadline (`Admission`) and
stops reading a client that is closing. The Host guard (421) is the listener's middleware
(`gateway.servers.hosts`); connection caps and read deadlines are the listener's protocol
(`gateway.servers.http_guard`). Close codes are mapped from `ErrorCode` here, once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Protocol

import orjson
from aiohttp import WSCloseCode, WSMessage, WSMsgType, web

from gateway.core.config import ServerConfig
from gateway.core.origins import origin_allowed, refusal_text
from gateway.errors import ErrorCode
from gateway.servers.http_guard import GuardedHttpProtocol, close_on_read_timeout, reserve_refusal
from gateway.servers.socket_transport import CLOSE_DRAIN_S, SocketTransport
from gateway.throttled_logs import RateLimitedLog
from gateway.wire import Encoding

if TYPE_CHECKING:
    from gateway.core.client import Client

log = logging.getLogger(__name__)
_ORIGINS = RateLimitedLog("WebSocket upgrades refused for their Origin", 10.0)

#: The WebSocket close code for each way a session ends (RFC 6455 section 7.4.1).
CLOSE_CODES = {
    ErrorCode.GOING_AWAY: WSCloseCode.GOING_AWAY,
    ErrorCode.TOO_LARGE: WSCloseCode.MESSAGE_TOO_BIG,
    ErrorCode.BAD_REQUEST: WSCloseCode.UNSUPPORTED_DATA,
    ErrorCode.UNAVAILABLE: WSCloseCode.TRY_AGAIN_LATER,
}


def close_code(code: ErrorCode) -> int:
    """The WebSocket close code for a session closed with `code` (policy violation when no closer one)."""
    return int(CLOSE_CODES.get(code, WSCloseCode.POLICY_VIOLATION))


class WsSession(Protocol):
    """What `receive_messages` needs of a face's session."""

    @property
    def client(self) -> Client:
        """The client core behind the connection (its `admission` holds the auth deadline)."""

    @property
    def admitted(self) -> bool:
        """True once the client authenticated (or, on the TDM, handshook): its auth deadline no longer holds."""

    @property
    def closing(self) -> bool:
        """True once the session is closing: nothing more it sent is handled."""

    async def close(self, code: ErrorCode, reason: str) -> None:
        """Say goodbye in the face's protocol, then close."""

    async def wait_finished(self) -> None:
        """Return once the session is over (bounded by the session)."""


class WebSocketTransport(SocketTransport):
    """WebSocket frames framed once per message in `gateway.wire`, written to the socket as they are.

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
        await close_websocket(self._ws, code, reason, self.abort)


async def close_websocket(ws: web.WebSocketResponse, code: ErrorCode, reason: str, abort: Callable[[], None]) -> None:
    """Close `ws` with `code`'s close code and `reason`; `abort()` when that does not end in `CLOSE_DRAIN_S`."""
    try:
        async with asyncio.timeout(CLOSE_DRAIN_S):
            await ws.close(code=close_code(code), message=reason.encode()[:120])
    except (ConnectionError, TimeoutError):
        abort()


def offered_subprotocols(request: web.Request) -> list[str]:
    """The subprotocols the client offers, in its order."""
    return [
        name.strip()
        for header in request.headers.getall("Sec-WebSocket-Protocol", [])
        for name in header.split(",")
        if name.strip()
    ]


def vet_upgrade(
    request: web.Request,
    guard: GuardedHttpProtocol | None,
    server: ServerConfig,
    what: str,
    max_message_bytes: int,
    subprotocol: str | None = None,
    viewers: Collection[str] = (),
) -> web.WebSocketResponse | web.Response:
    """The WebSocket for an upgrade that passes every rule, or the refusal to return.

    Refusals: 503 on a connection admitted into the `/healthz` reserve, 403 for an Origin the rule
    of `gateway.core.origins` refuses (raised, as `web.HTTPForbidden`, whose text is the config line
    that would admit it); `viewers` are the hosted viewer origins this face speaks to. `subprotocol`
    is the one the face chose from `offered_subprotocols` (None: none). Every face gets the same
    heartbeat (`server.heartbeat_s`) and no compression (permessage-deflate costs +60 % CPU for small frames).
    """
    refusal = reserve_refusal(guard)
    if refusal is not None:
        return refusal
    origin = request.headers.get("Origin")
    if not origin_allowed(origin, request.host, server, viewers):
        assert origin is not None  # a request without Origin is always allowed
        _ORIGINS.log("refused a %s from origin %s", what, origin[:200])
        raise web.HTTPForbidden(text=refusal_text(origin, server))
    return web.WebSocketResponse(
        protocols=(subprotocol,) if subprotocol else (),
        compress=False,
        max_msg_size=max_message_bytes + 1,  # aiohttp refuses frames >= its limit; ours are > max
        heartbeat=server.heartbeat_s or None,
    )


async def accept(ws: web.WebSocketResponse, request: web.Request) -> asyncio.Transport | None:
    """Send the 101; the connection's transport, or None when the client left during the handshake."""
    transport = request.transport
    if transport is None:
        return None
    try:
        await ws.prepare(request)
    except ConnectionError:
        return None
    return transport if request.transport is not None else None


async def receive_messages(
    ws: web.WebSocketResponse,
    guard: GuardedHttpProtocol | None,
    session: WsSession,
    max_message_bytes: int,
    handle: Callable[[WSMessage], Awaitable[None]],
) -> None:
    """Hand each text and binary message to `handle` until the client leaves or the session closes.

    A client not `admitted` by its auth deadline is closed (`ErrorCode.TIMEOUT`), even while it is
    not reading its answers (the handler waits for room then); a message begun and not finished
    within `server.read_timeout_s` closes it too (the guard's read timeout).
    """
    close_on_read_timeout(guard, max_message_bytes, session.close)
    admission = session.client.admission
    try:
        while True:
            left = None if session.admitted else admission.auth_left()
            try:
                message = await ws.receive(left)
            except TimeoutError:
                await session.close(ErrorCode.TIMEOUT, admission.auth_timeout_reason)
                return
            if message.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
                return
            if session.closing:  # what the client sent after its last answer is not handled
                await session.wait_finished()
                return
            if message.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                continue
            if guard is not None:
                guard.message_taken()
            left = None if session.admitted else admission.auth_left()
            try:
                async with asyncio.timeout(left):
                    await handle(message)
            except TimeoutError:
                await session.close(ErrorCode.TIMEOUT, admission.auth_timeout_reason)
                return
    except ConnectionError:  # the peer vanished while we said goodbye
        pass


class JsonRequestSink(Protocol):
    """A face session that takes JSON requests sent as WebSocket text frames (native `/ws`, rosbridge)."""

    async def receive(self, request: object, size: int) -> None:
        """Handle one decoded request, `size` bytes long on the wire."""

    async def reject(self, message: str) -> None:
        """Answer a frame that is not a request (here: not valid JSON)."""


async def receive_json_text(session: JsonRequestSink, text: str, max_request_bytes: int) -> None:
    """Hand one JSON text frame to `session`, its size in bytes counted for the request limit."""
    # Characters never outnumber UTF-8 bytes, and a character takes at most 4 bytes: encode only near the limit.
    size = len(text) if len(text) * 4 <= max_request_bytes else len(text.encode())
    try:
        request = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        await session.reject(f"not valid JSON: {error}")
        return
    await session.receive(request, size)
