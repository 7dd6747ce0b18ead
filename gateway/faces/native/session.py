"""The native face: our own client protocol (docs/protocol.md), the same over WebSocket JSON and msgpack.

The transport's reader hands each decoded request to `Session.receive`; the session checks the
request's shape, calls the client core and answers with a `result`. What the ops mean lives in
`gateway.core.client`; this module owns only the wire: field checks, `hello`, `result`, `close`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from gateway import PROTOCOL_VERSION, __version__
from gateway.core.client import (
    MAX_CLIENT_TIMEOUT_S,
    MAX_RATE_HZ,
    MIN_CLIENT_TIMEOUT_S,
    MIN_RATE_HZ,
    Client,
    Hub,
)
from gateway.core.session_state import SessionState
from gateway.errors import (
    BadRequest,
    ErrorCode,
    GatewayError,
    InternalError,
    InvalidArgument,
    TooLarge,
    Unauthorized,
    UnknownOp,
)
from gateway.faces.native.messages import renderer
from gateway.faces.outbox import CLOSE_TIMEOUT_S, Outbox
from gateway.faces.outbox import Transport as FrameTransport
from gateway.servers.socket_transport import CLOSE_DRAIN_S
from gateway.throttled_logs import CONNECTION_LINES
from gateway.wire import Encoding, encode, pack_messages

log = logging.getLogger(__name__)

CAPABILITIES = (
    "auth",
    "describe",
    "estop",
    "subscribe.max_rate_hz",
    "coalescing",
    "commands.deadline",
    "locks",
    "multi_state",
)
MAX_ID_LENGTH = 128
#: Seconds a reader waits for a close begun elsewhere: the outbox's flush, then the socket's drain.
FINISH_WAIT_S = CLOSE_TIMEOUT_S + CLOSE_DRAIN_S + 0.5
#: The smallest `configure.max_frame_bytes` (a state message of a small device fits in it).
MIN_MULTI_FRAME_BYTES = 256

RequestId = int | str | None


class Transport(FrameTransport, Protocol):
    """A native-protocol connection: frames of one `encoding`."""

    encoding: Encoding


def _check_fields(request: Mapping[str, Any], op: str, allowed: frozenset[str]) -> None:
    for key in request:
        if key not in allowed:
            raise BadRequest(f"{op}: unknown field {key!r} (fields: {', '.join(sorted(allowed))})")


def _string(request: Mapping[str, Any], op: str, key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{op}.{key}: expected a non-empty string, got {type(value).__name__}")
    return value


#: The seconds a `scan` may ask each family to look for.
MIN_SCAN_TIMEOUT_S = 0.5
MAX_SCAN_TIMEOUT_S = 60.0
#: The bounds of a `pair` request's pairing window, in seconds (as `devices.bluez.pairing`'s).
MIN_PAIR_TIMEOUT_S = 1.0
MAX_PAIR_TIMEOUT_S = 120.0
#: Entries of a `scan` list (families, serial ports, Kortex addresses).
MAX_SCAN_ENTRIES = 16


def _strings(request: Mapping[str, Any], op: str, key: str) -> tuple[str, ...]:
    value = request.get(key, [])
    if (
        not isinstance(value, list)
        or len(value) > MAX_SCAN_ENTRIES
        or not all(isinstance(item, str) and 0 < len(item) <= 256 for item in value)
    ):
        raise BadRequest(f"{op}.{key}: expected an array of at most {MAX_SCAN_ENTRIES} non-empty strings")
    return tuple(value)


def _number(request: Mapping[str, Any], op: str, key: str, low: float, high: float) -> float | None:
    value = request.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise InvalidArgument(f"{op}.{key}: expected a number in [{low}, {high}], got {value!r}")
    return float(value)


class Session:
    """One client of the native protocol."""

    def __init__(self, hub: Hub, transport: Transport, peer: str) -> None:
        self.hub = hub
        self.transport = transport
        self.client = Client(hub, peer, transport.encoding)
        self.id = self.client.id
        # Every client of one encoding renders an item alike, so clients that subscribe alike share a
        # fan-out group (one render and join for them all).
        render = renderer(transport.encoding)
        self._outbox = Outbox(
            self.id,
            self.client.subscriber,
            transport,
            render,
            hub.server.max_queued_bytes,
            fanout_key=("native", transport.encoding),
        )
        self._closing_task: asyncio.Task[None] | None = None
        self._finished = asyncio.Event()
        #: Where the session is (opening until authenticated, then open, closing, closed).
        self.state = SessionState.OPENING
        self._multi_state = False
        self._multi_frame_bytes = hub.server.max_frame_bytes

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Queue `hello`, register with the hub and start the writer."""
        server = self.hub.server
        self._push(
            {
                "op": "hello",
                "server": "hwgateway",
                "version": __version__,
                "protocol": PROTOCOL_VERSION,
                "capabilities": list(CAPABILITIES),
                "auth_required": not self.client.authenticated,
                "session": self.id,
                "limits": {
                    "max_request_bytes": server.max_request_bytes,
                    "max_frame_bytes": server.max_frame_bytes,
                    "max_requests_per_s": server.max_requests_per_s,
                },
            }
        )
        self.hub.sessions.add(self)
        self.client.join()
        self._outbox.start()
        CONNECTION_LINES.log(
            log, "client %s connected from %s (%s)", self.id, self.client.peer, self.transport.encoding
        )
        if self.client.authenticated:  # no tokens configured: admitted at once
            self.state = SessionState.OPEN

    @property
    def admitted(self) -> bool:
        """True once the client authenticated (at once with no tokens): its auth deadline no longer holds."""
        return self.state is SessionState.OPEN

    @property
    def closing(self) -> bool:
        """True once the session is closing or closed: its reader stops handing it requests."""
        return self._outbox.closing or self.client.admission.refused_out

    async def wait_finished(self) -> None:
        """Return once the session is over, or after `FINISH_WAIT_S` (a close under way elsewhere is bounded)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(FINISH_WAIT_S):
                await self._finished.wait()

    async def close(self, code: ErrorCode, reason: str) -> None:
        """Send `close {code, reason}` after what is queued, then close the transport."""
        if self._outbox.closing:
            return
        if self.state is not SessionState.CLOSED:
            self.state = SessionState.CLOSING
        last = encode({"op": "close", "code": code.value, "reason": reason}, self.transport.encoding)
        await self._outbox.flush_and_close(code, reason, last)
        self.finish()

    def abort(self) -> None:
        """Drop the connection at once and forget the client."""
        self._outbox.abort()
        self.finish()

    def finish(self) -> None:
        """Forget the client: stop its writer, drop its subscriptions, end its leases."""
        self._finished.set()
        if self.state is SessionState.CLOSED:
            return
        self.state = SessionState.CLOSED
        self.hub.sessions.discard(self)
        self._outbox.stop()
        self.client.leave()
        CONNECTION_LINES.log(log, "client %s disconnected", self.id)

    # -- requests ----------------------------------------------------------------------------

    async def receive(self, request: object, size: int) -> None:
        """Handle one decoded request of `size` bytes; waits while the client is not reading.

        An `estop` never waits: it goes ahead of a full result queue.
        """
        if self.client.admission.refused_out:
            return
        if not (isinstance(request, Mapping) and request.get("op") == "estop"):
            await self._outbox.room()
        request_id: RequestId = None
        try:
            if not isinstance(request, Mapping):
                raise BadRequest(f"a request must be a map, got {type(request).__name__}")
            request_id = request.get("id")
            if isinstance(request_id, bool) or not isinstance(request_id, int | str):
                request_id = None
                raise BadRequest("every request needs an 'id' (an integer or a string)")
            if isinstance(request_id, str) and len(request_id) > MAX_ID_LENGTH:
                request_id = None
                raise BadRequest(f"id: longer than {MAX_ID_LENGTH} characters")
            if size > self.hub.server.max_request_bytes:
                raise TooLarge(f"request of {size} bytes exceeds the {self.hub.server.max_request_bytes}-byte limit")
            op = request.get("op")
            if not isinstance(op, str):
                raise BadRequest("every request needs an 'op' string")
            if op != "estop":
                self.client.admit()
            if not self.client.authenticated and op not in ("auth", "ping") and (op in OPS or op == "command"):
                raise Unauthorized(f"{op}: authenticate first with the 'auth' op")
            if op == "command":
                self._start_command(request_id, request)
                return
            handler = OPS.get(op)
            if handler is None:
                known = ", ".join(sorted([*OPS, "command"]))
                raise UnknownOp(f"unknown op {op!r} (ops: {known})")
            self._reply(request_id, await handler(self, request))
            if op == "auth":
                self.client.join()  # device pushes only after the auth result
        except GatewayError as error:
            await self._refuse(request_id, error)
        except Exception:
            log.exception("client %s: request failed", self.id)
            self._reply_error(request_id, InternalError("internal error; see the gateway's log"))

    async def reject(self, message: str) -> None:
        """Answer an undecodable (but safely delimited) frame with `bad_request`; the session goes on.

        Like any request, it waits while the client does not read its answers.
        """
        if self.client.admission.refused_out:
            return
        await self._outbox.room()
        await self._refuse(None, BadRequest(message))

    async def _refuse(self, request_id: RequestId, error: GatewayError) -> None:
        """Answer a refused request, or close the client once it has spent its budget of refusals."""
        await self.client.admission.refused(
            self.id, error.message, lambda: self._reply_error(request_id, error), self.close
        )

    async def _auth(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "auth", frozenset({"op", "id", "token"}))
        try:
            await self.client.authenticate(_string(request, "auth", "token"))
        except Unauthorized:
            if self.client.auth_exhausted:
                asyncio.get_running_loop().call_soon(self._close_soon, ErrorCode.UNAUTHORIZED, "too many wrong tokens")
            raise
        if self.state is SessionState.OPENING:
            self.state = SessionState.OPEN
        return {"authenticated": True, **self.client.signed_in()}

    def _close_soon(self, code: ErrorCode, reason: str) -> None:
        """Close after the current reply is queued (the reader keeps its own task)."""
        task = asyncio.create_task(self.close(code, reason), name=f"client:{self.id}:close")
        self._closing_task = task

    async def _ping(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "ping", frozenset({"op", "id"}))
        return {"pong": True, "time": time.time()}

    async def _list_devices(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "list_devices", frozenset({"op", "id"}))
        return {"devices": self.client.list_devices()}

    async def _describe(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "describe", frozenset({"op", "id", "type"}))
        return self.client.describe(_string(request, "describe", "type") if "type" in request else None)

    async def _subscribe(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "subscribe", frozenset({"op", "id", "topics", "max_rate_hz"}))
        topics = request.get("topics")
        if not isinstance(topics, list) or not topics or not all([isinstance(t, str) for t in topics]):
            raise BadRequest("subscribe.topics: expected a non-empty array of pattern strings")
        rate = _number(request, "subscribe", "max_rate_hz", MIN_RATE_HZ, MAX_RATE_HZ)
        subscription, matched = self.client.subscribe(topics, rate)
        return {"subscription": subscription, "topics": matched}

    async def _unsubscribe(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "unsubscribe", frozenset({"op", "id", "subscription"}))
        subscription = request.get("subscription")
        if isinstance(subscription, bool) or not isinstance(subscription, int):
            raise BadRequest("unsubscribe.subscription: expected the integer a subscribe result gave")
        self.client.unsubscribe(subscription)
        return {}

    async def _estop(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "estop", frozenset({"op", "id"}))
        return {"devices": await self.client.estop()}

    async def _lock(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "lock", frozenset({"op", "id", "device"}))
        device = _string(request, "lock", "device")
        return {"device": device, "locked_by": self.client.lock(device)}

    async def _unlock(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "unlock", frozenset({"op", "id", "device", "force"}))
        device = _string(request, "unlock", "device")
        force = request.get("force", False)
        if not isinstance(force, bool):
            raise BadRequest(f"unlock.force: expected true or false, got {type(force).__name__}")
        self.client.unlock(device, force)
        return {"device": device, "locked_by": None}

    async def _configure(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "configure", frozenset({"op", "id", "multi_state", "max_frame_bytes"}))
        multi_state = request.get("multi_state", self._multi_state)
        if not isinstance(multi_state, bool):
            raise BadRequest(f"configure.multi_state: expected true or false, got {type(multi_state).__name__}")
        limit = self.hub.server.max_frame_bytes
        frame_bytes = request.get("max_frame_bytes", self._multi_frame_bytes)
        if isinstance(frame_bytes, bool) or not isinstance(frame_bytes, int):
            raise BadRequest(f"configure.max_frame_bytes: expected an integer, got {type(frame_bytes).__name__}")
        if not MIN_MULTI_FRAME_BYTES <= frame_bytes <= limit:
            bounds = f"[{MIN_MULTI_FRAME_BYTES}, {limit}]"
            raise InvalidArgument(f"configure.max_frame_bytes: expected an integer in {bounds}, got {frame_bytes}")
        self._multi_state, self._multi_frame_bytes = multi_state, frame_bytes
        self._outbox.set_combine(self._pack if multi_state else None, (self.transport.encoding, frame_bytes))
        return {"multi_state": multi_state, "max_frame_bytes": frame_bytes}

    async def _reload(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "reload", frozenset({"op", "id"}))
        return await self.client.reload()

    async def _device_options(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "device_options", frozenset({"op", "id", "device"}))
        return await self.client.device_options(_string(request, "device_options", "device"))

    async def _configure_device(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "configure_device", frozenset({"op", "id", "device", "options"}))
        options = request.get("options")
        if not isinstance(options, dict) or not options or not all(isinstance(key, str) for key in options):
            raise BadRequest("configure_device.options: expected an object of option names to values (null: reset)")
        return await self.client.configure_device(_string(request, "configure_device", "device"), options)

    async def _scan(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "scan", frozenset({"op", "id", "families", "timeout_s", "serial", "kortex"}))
        families = _strings(request, "scan", "families") if "families" in request else None
        timeout = _number(request, "scan", "timeout_s", MIN_SCAN_TIMEOUT_S, MAX_SCAN_TIMEOUT_S)
        serial = _strings(request, "scan", "serial")
        if not all(path.startswith("/dev/") for path in serial):
            raise InvalidArgument("scan.serial: expected device paths under /dev/")
        kortex = _strings(request, "scan", "kortex")
        return await self.client.scan(families, timeout, serial, kortex)

    async def _pair(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "pair", frozenset({"op", "id", "kind", "address", "timeout_s", "passkey"}))
        kind = request.get("kind", "wiimote")
        address = request.get("address", "")
        if not isinstance(kind, str) or not isinstance(address, str) or len(address) > 64:
            raise BadRequest("pair.kind and pair.address: expected strings")
        passkey = request.get("passkey")
        if passkey is not None and (isinstance(passkey, bool) or not isinstance(passkey, int)):
            raise BadRequest(f"pair.passkey: expected an integer, got {type(passkey).__name__}")
        timeout = _number(request, "pair", "timeout_s", MIN_PAIR_TIMEOUT_S, MAX_PAIR_TIMEOUT_S)
        return await self.client.pair(kind, address, timeout, passkey)

    def _pack(self, frames: list[bytes]) -> list[bytes]:
        return pack_messages(frames, self.transport.encoding, self._multi_frame_bytes)

    def _start_command(self, request_id: RequestId, request: Mapping[str, Any]) -> None:
        _check_fields(request, "command", frozenset({"op", "id", "device", "type", "data", "timeout_s"}))
        device = _string(request, "command", "device")
        type_name = _string(request, "command", "type")
        timeout = _number(request, "command", "timeout_s", MIN_CLIENT_TIMEOUT_S, MAX_CLIENT_TIMEOUT_S)
        task = self.client.command(device, type_name, request.get("data", {}), timeout)
        task.add_done_callback(lambda done: self._command_done(request_id, done))

    def _command_done(self, request_id: RequestId, task: asyncio.Task[dict[str, Any]]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is None:
            self._reply(request_id, task.result())
        elif isinstance(error, GatewayError):
            self._reply_error(request_id, error)
        else:  # the core turns every failure into a GatewayError; this is a last guard
            self._reply_error(request_id, InternalError("internal error; see the gateway's log"))

    # -- output ------------------------------------------------------------------------------

    def _reply(self, request_id: RequestId, data: dict[str, Any]) -> None:
        self._push({"op": "result", "id": request_id, "ok": True, "data": data})

    def _reply_error(self, request_id: RequestId, error: GatewayError) -> None:
        self._push({"op": "result", "id": request_id, "ok": False, "error": error.to_dict()})

    def _push(self, message: dict[str, Any]) -> None:
        self._outbox.push(encode(message, self.transport.encoding))


#: The ops other than `command`, by name: functions of the class, so a session holds no bound methods of itself.
OPS: dict[str, Callable[[Session, Mapping[str, Any]], Awaitable[dict[str, Any]]]] = {
    "auth": Session._auth,
    "ping": Session._ping,
    "list_devices": Session._list_devices,
    "describe": Session._describe,
    "subscribe": Session._subscribe,
    "unsubscribe": Session._unsubscribe,
    "estop": Session._estop,
    "lock": Session._lock,
    "unlock": Session._unlock,
    "configure": Session._configure,
    "reload": Session._reload,
    "device_options": Session._device_options,
    "configure_device": Session._configure_device,
    "scan": Session._scan,
    "pair": Session._pair,
}
