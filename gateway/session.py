"""One client session of the client protocol, the same behind the WebSocket and the msgpack servers.

The transport's reader hands each decoded request to `Session.receive`; one writer task sends the
session's results (in order) and then whatever its coalescing mailbox holds. See docs/protocol.md.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway import PROTOCOL_VERSION, __version__
from gateway.bus import Bus, Outgoing, Subscriber
from gateway.commands import CommandRouter
from gateway.config import ServerConfig
from gateway.errors import (
    BadRequest,
    ErrorCode,
    GatewayError,
    InternalError,
    InvalidArgument,
    RateLimited,
    TooLarge,
    Unauthorized,
    UnknownOp,
)
from gateway.messages import REGISTRY, schema_of
from gateway.supervisor import Supervisor
from gateway.wire import Encoding, encode

log = logging.getLogger(__name__)

CAPABILITIES = ("auth", "describe", "estop", "subscribe.max_rate_hz", "coalescing", "commands.deadline")
MAX_ID_LENGTH = 128
MAX_PATTERNS = 64
MAX_SUBSCRIPTIONS = 256
MAX_COMMAND_TIMEOUT_S = 600.0
MAX_RATE_HZ = 10000.0
#: Results waiting for a client that does not read; past this the session stops reading requests.
MAX_QUEUED_RESULTS = 256
#: Seconds a closing session waits for its last frames to go out.
CLOSE_TIMEOUT_S = 1.0

RequestId = int | str | None
_session_numbers = itertools.count(1)


class Transport(Protocol):
    """A client connection able to send encoded frames and to close."""

    encoding: Encoding

    def try_write(self, frame: bytes) -> bool:
        """Write `frame` now unless the peer is backed up (then return False and write nothing)."""

    async def send(self, frames: list[bytes]) -> None:
        """Send frames in order, waiting while the peer's buffers are full."""

    async def close(self, code: ErrorCode, reason: str) -> None:
        """Close the connection."""


@dataclass
class Hub:
    """What every session shares: the bus, the devices and the server's limits."""

    bus: Bus
    supervisor: Supervisor
    router: CommandRouter
    server: ServerConfig
    tokens: tuple[str, ...]
    sessions: set[Session] = field(default_factory=set)


class TokenBucket:
    """Allows `rate` requests per second on average, and bursts of up to `burst`."""

    def __init__(self, rate: float, burst: int) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._tokens = float(burst)
        self._updated = time.monotonic()

    def take(self) -> bool:
        """Spend one token if there is one."""
        now = time.monotonic()
        self._tokens = min(self._burst, self._tokens + (now - self._updated) * self._rate)
        self._updated = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True


def _check_fields(request: Mapping[str, Any], op: str, allowed: frozenset[str]) -> None:
    for key in request:
        if key not in allowed:
            raise BadRequest(f"{op}: unknown field {key!r} (fields: {', '.join(sorted(allowed))})")


def _string(request: Mapping[str, Any], op: str, key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{op}.{key}: expected a non-empty string, got {type(value).__name__}")
    return value


def _number(request: Mapping[str, Any], op: str, key: str, low: float, high: float) -> float | None:
    value = request.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not low < value <= high:
        raise InvalidArgument(f"{op}.{key}: expected a number in ({low}, {high}], got {value!r}")
    return float(value)


class Session:
    """One connected client."""

    def __init__(self, hub: Hub, transport: Transport, peer: str) -> None:
        self.hub = hub
        self.transport = transport
        self.peer = peer
        self.id = f"c{next(_session_numbers)}"
        self.subscriber = Subscriber(self.id, transport.encoding)
        self.authenticated = not hub.tokens
        self.connected_at = time.time()
        self._results: deque[bytes] = deque()
        self._room = asyncio.Event()
        self._room.set()
        self._bucket = TokenBucket(hub.server.max_requests_per_s, hub.server.request_burst)
        self._commands: set[asyncio.Task[None]] = set()
        self._closing = False
        self._sending = False
        self._writer: asyncio.Task[None] | None = None
        self._ops: dict[str, Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]] = {
            "auth": self._auth,
            "ping": self._ping,
            "list_devices": self._list_devices,
            "describe": self._describe,
            "subscribe": self._subscribe,
            "unsubscribe": self._unsubscribe,
            "estop": self._estop,
        }

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Queue `hello`, register with the hub and start the writer."""
        self._push(
            {
                "op": "hello",
                "server": "hwgateway",
                "version": __version__,
                "protocol": PROTOCOL_VERSION,
                "capabilities": list(CAPABILITIES),
                "auth_required": not self.authenticated,
                "session": self.id,
                "limits": {
                    "max_request_bytes": self.hub.server.max_request_bytes,
                    "max_frame_bytes": self.hub.server.max_frame_bytes,
                    "max_requests_per_s": self.hub.server.max_requests_per_s,
                },
            }
        )
        self.subscriber.direct = self._write_now
        self.hub.sessions.add(self)
        if self.authenticated:
            self._attach()
        self._writer = asyncio.create_task(self._write_loop(), name=f"session:{self.id}:writer")
        log.info("client %s connected from %s (%s)", self.id, self.peer, self.transport.encoding)

    async def close(self, code: ErrorCode, reason: str) -> None:
        """Send `close {code, reason}` after what is queued, then close the transport."""
        if self._closing:
            return
        self._closing = True
        self._push({"op": "close", "code": code.value, "reason": reason})
        if self._writer is not None:
            try:
                async with asyncio.timeout(CLOSE_TIMEOUT_S):
                    await asyncio.shield(self._writer)
            except Exception:  # the timeout, or the writer's own failure: stop it either way
                self._writer.cancel()
        await self.transport.close(code, reason)
        self.finish()

    def finish(self) -> None:
        """Forget the client: stop its writer, drop its subscriptions, end its leases."""
        if self not in self.hub.sessions:
            return
        self._closing = True
        self.hub.sessions.discard(self)
        if self._writer is not None and not self._writer.done():
            self._writer.cancel()
        self.hub.bus.detach(self.subscriber)
        self.hub.router.release(self.id)
        log.info("client %s disconnected", self.id)

    # -- requests ----------------------------------------------------------------------------

    async def receive(self, request: object, size: int) -> None:
        """Handle one decoded request of `size` bytes; waits while the client is not reading.

        An `estop` never waits: it goes ahead of a full result queue.
        """
        if not (isinstance(request, Mapping) and request.get("op") == "estop"):
            await self._room.wait()
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
            if op != "estop" and not self._bucket.take():
                raise RateLimited(f"more than {self.hub.server.max_requests_per_s:g} requests per second; slow down")
            if not self.authenticated and op not in ("auth", "ping") and (op in self._ops or op == "command"):
                raise Unauthorized(f"{op}: authenticate first with the 'auth' op")
            if op == "command":
                self._start_command(request_id, request)
                return
            handler = self._ops.get(op)
            if handler is None:
                known = ", ".join(sorted([*self._ops, "command"]))
                raise UnknownOp(f"unknown op {op!r} (ops: {known})")
            self._reply(request_id, await handler(request))
        except GatewayError as error:
            self._reply_error(request_id, error)
        except Exception:
            log.exception("client %s: request failed", self.id)
            self._reply_error(request_id, InternalError("internal error; see the gateway's log"))

    def reject(self, message: str) -> None:
        """Answer an undecodable (but safely delimited) frame with `bad_request`; the session goes on."""
        self._reply_error(None, BadRequest(message))

    async def _auth(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "auth", frozenset({"op", "id", "token"}))
        token = _string(request, "auth", "token")
        if not self.hub.tokens:
            return {"authenticated": True}
        if not any(hmac.compare_digest(token.encode(), known.encode()) for known in self.hub.tokens):
            log.warning("client %s from %s presented a wrong token", self.id, self.peer)
            raise Unauthorized("token refused")
        if not self.authenticated:
            self.authenticated = True
            self._attach()
        return {"authenticated": True}

    def _attach(self) -> None:
        """Start receiving device events, beginning with every device's current availability."""
        self.hub.bus.attach(self.subscriber)
        for handle in self.hub.supervisor.devices.values():
            self.subscriber.offer(handle.event())

    async def _ping(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "ping", frozenset({"op", "id"}))
        return {"pong": True, "time": time.time()}

    async def _list_devices(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "list_devices", frozenset({"op", "id"}))
        devices = []
        for handle in self.hub.supervisor.devices.values():
            adapter = handle.adapter
            devices.append(
                {
                    "id": handle.id,
                    "kind": handle.kind,
                    "status": handle.status,
                    "detail": handle.detail,
                    "publishes": list(adapter.publishes),
                    "accepts": list(adapter.accepts),
                    "topics": self.hub.bus.topics(handle.id + "/"),
                    "capabilities": dict(adapter.capabilities()),
                }
            )
        return {"devices": devices}

    async def _describe(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "describe", frozenset({"op", "id", "type"}))
        if "type" not in request:
            return {"types": [{"type": name, "kind": info.kind} for name, info in sorted(REGISTRY.items())]}
        name = _string(request, "describe", "type")
        info = REGISTRY.get(name)
        if info is None:
            raise InvalidArgument(f"describe.type: no message type {name!r} (describe without 'type' lists them)")
        described: dict[str, Any] = {
            "type": name,
            "kind": info.kind,
            "doc": info.doc,
            "schema": schema_of(info.cls),
            "constants": dict(info.constants),
        }
        if info.response is not None:
            described["response_schema"] = schema_of(info.response)
        return described

    async def _subscribe(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "subscribe", frozenset({"op", "id", "topics", "max_rate_hz"}))
        topics = request.get("topics")
        if not isinstance(topics, list) or not topics or not all(isinstance(t, str) for t in topics):
            raise BadRequest("subscribe.topics: expected a non-empty array of pattern strings")
        if len(topics) > MAX_PATTERNS:
            raise InvalidArgument(f"subscribe.topics: more than {MAX_PATTERNS} patterns")
        if len(self.subscriber.subscriptions) >= MAX_SUBSCRIPTIONS:
            raise InvalidArgument(f"subscribe: a client may hold at most {MAX_SUBSCRIPTIONS} subscriptions")
        rate = _number(request, "subscribe", "max_rate_hz", 0.0, MAX_RATE_HZ)
        bus = self.hub.bus
        subscription = bus.subscribe(self.subscriber, topics, rate)
        matched = [t for t in bus.topics() if self.subscriber.subscriptions[subscription].matches(t)]
        return {"subscription": subscription, "topics": matched}

    async def _unsubscribe(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "unsubscribe", frozenset({"op", "id", "subscription"}))
        subscription = request.get("subscription")
        if isinstance(subscription, bool) or not isinstance(subscription, int):
            raise BadRequest("unsubscribe.subscription: expected the integer a subscribe result gave")
        if not self.hub.bus.unsubscribe(self.subscriber, subscription):
            raise InvalidArgument(f"unsubscribe.subscription: no subscription {subscription} on this session")
        return {}

    async def _estop(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _check_fields(request, "estop", frozenset({"op", "id"}))
        log.warning("client %s triggered an emergency stop", self.id)
        return {"devices": await self.hub.router.estop()}

    def _start_command(self, request_id: RequestId, request: Mapping[str, Any]) -> None:
        _check_fields(request, "command", frozenset({"op", "id", "device", "type", "data", "timeout_s"}))
        device = _string(request, "command", "device")
        type_name = _string(request, "command", "type")
        timeout = _number(request, "command", "timeout_s", 0.0, MAX_COMMAND_TIMEOUT_S)
        if len(self._commands) >= self.hub.server.max_inflight_commands:
            raise RateLimited(f"more than {self.hub.server.max_inflight_commands} commands in flight")
        data = request.get("data", {})
        task = asyncio.create_task(
            self._run_command(request_id, device, type_name, data, timeout or self.hub.server.command_timeout_s)
        )
        self._commands.add(task)
        task.add_done_callback(self._commands.discard)

    async def _run_command(
        self, request_id: RequestId, device: str, type_name: str, data: object, timeout: float
    ) -> None:
        try:
            result = await self.hub.router.execute(device, type_name, data, self.id, timeout)
        except GatewayError as error:
            self._reply_error(request_id, error)
        except Exception:
            log.exception("client %s: command %s on %s failed", self.id, type_name, device)
            self._reply_error(request_id, InternalError("internal error; see the gateway's log"))
        else:
            self._reply(request_id, result)

    # -- output ------------------------------------------------------------------------------

    def _reply(self, request_id: RequestId, data: dict[str, Any]) -> None:
        self._push({"op": "result", "id": request_id, "ok": True, "data": data})

    def _reply_error(self, request_id: RequestId, error: GatewayError) -> None:
        self._push({"op": "result", "id": request_id, "ok": False, "error": error.to_dict()})

    def _write_now(self, item: Outgoing) -> bool:
        """Write a pushed item straight to the socket when nothing is queued ahead of it."""
        if self._results or self._sending or self._closing:
            return False
        return self.transport.try_write(item.frame(self.transport.encoding))

    def _push(self, message: dict[str, Any]) -> None:
        self._results.append(encode(message, self.transport.encoding))
        if len(self._results) >= MAX_QUEUED_RESULTS:
            self._room.clear()
        self.subscriber.wakeup.set()

    async def _write_loop(self) -> None:
        try:
            await self._write_until_closed()
        except (ConnectionError, OSError) as error:
            # The peer vanished mid-write; the reader sees the same and finishes the session.
            log.info("client %s: send failed: %s", self.id, error)

    async def _write_until_closed(self) -> None:
        subscriber = self.subscriber
        encoding = self.transport.encoding
        timeout: float | None = None
        while True:
            if timeout is None:
                await subscriber.wakeup.wait()
            else:
                try:
                    async with asyncio.timeout(timeout):
                        await subscriber.wakeup.wait()
                except TimeoutError:
                    pass
            subscriber.wakeup.clear()
            frames = list(self._results)
            self._results.clear()
            self._room.set()
            if self._closing:
                if frames:
                    await self.transport.send(frames)
                return
            due, next_due = subscriber.take_due(time.monotonic())
            frames.extend(item.frame(encoding) for item in due)
            if frames:
                self._sending = True
                try:
                    await self.transport.send(frames)
                finally:
                    self._sending = False
            timeout = None if next_due is None else max(next_due - time.monotonic(), 0.0)
