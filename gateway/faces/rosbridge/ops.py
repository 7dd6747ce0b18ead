"""The rosbridge v2 ops on the client core: what roslibjs and roslibpy send, and what they expect back.

subscribe / unsubscribe → bus subscriptions (one `publish` per client per topic however many
subscriptions, as both libraries dispatch by topic name); advertise / publish / unadvertise → commands
(their leases are the client's, ended when it leaves); call_service → a command or a rosapi service,
answered by `service_response` with `values` always present; auth, set_level, and `status` messages for
everything that goes wrong, carrying the request's id. What the ops mean lives in `gateway.core.client`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from gateway.bus import Outgoing, Sample
from gateway.core.client import MAX_CLIENT_TIMEOUT_S, MAX_RATE_HZ, MIN_CLIENT_TIMEOUT_S, MIN_RATE_HZ, Client, Hub
from gateway.core.session_state import SessionState
from gateway.errors import (
    BadRequest,
    ErrorCode,
    GatewayError,
    InternalError,
    InvalidArgument,
    TooLarge,
    Unauthorized,
    UnknownCommand,
    UnknownOp,
)
from gateway.faces.outbox import CLOSE_TIMEOUT_S, Outbox, Transport
from gateway.faces.rosbridge import cbor, ros1, rosapi
from gateway.messages import REGISTRY
from gateway.ros import names as ros
from gateway.servers.socket_transport import CLOSE_DRAIN_S
from gateway.throttled_logs import CONNECTION_LINES
from gateway.wire import websocket_binary_frame, websocket_text_frame

log = logging.getLogger(__name__)

#: Status levels, least severe first; a client hears those at or above its level (default `error`).
LEVELS = ("debug", "info", "warning", "error", "none")
DEFAULT_LEVEL = "error"
MAX_ID_LENGTH = 256
#: Compressions a client may ask for; png is served as none (see docs/rosbridge.md).
COMPRESSIONS = ("none", "cbor", "png", "cbor-raw")
JSON_KEY = "rosbridge.json"
CBOR_KEY = "rosbridge.cbor"
RAW_KEY = "rosbridge.cbor-raw"
SUPPORTED_OPS = (
    "auth",
    "subscribe",
    "unsubscribe",
    "advertise",
    "publish",
    "unadvertise",
    "call_service",
    "set_level",
)

#: Seconds a reader waits for a close begun elsewhere: the outbox's flush, then the socket's drain.
FINISH_WAIT_S = CLOSE_TIMEOUT_S + CLOSE_DRAIN_S + 0.5
RequestId = str | int | None
_generated_ids = itertools.count(1)
#: The integer ids a reply can echo (JSON readers and orjson hold 64 bits); others are answered without one.
MIN_INT_ID = -(1 << 63)
MAX_INT_ID = (1 << 64) - 1
#: Publishers (advertise ids) one client may hold in all its topics: each costs memory until it leaves.
MAX_PUBLISHERS = 256


@dataclass(slots=True)
class Subscription:
    """One rosbridge subscribe: its id, the bus subscription behind it and how it wants frames."""

    id: str
    bus_id: int
    cbor: bool
    fragment_size: int | None
    raw: bool = False


@dataclass(slots=True)
class SubscribedTopic:
    """A ROS topic this client subscribes to, however many times; merged like rosbridge does."""

    subscriptions: dict[str, Subscription] = field(default_factory=dict)
    cbor: bool = False
    fragment_size: int | None = None
    raw: bool = False

    def merge(self) -> None:
        """cbor-raw, else CBOR, when any subscription asked for it; the smallest fragment size asked for."""
        subscriptions = self.subscriptions.values()
        self.raw = any(s.raw for s in subscriptions)
        self.cbor = any(s.cbor for s in subscriptions)
        sizes = [s.fragment_size for s in subscriptions if s.fragment_size]
        self.fragment_size = min(sizes) if sizes else None


def publish_message(name: str, sample: Sample) -> dict[str, Any]:
    """The rosbridge `publish` of a sample on ROS topic `name`."""
    return {"op": "publish", "topic": name, "msg": sample.data()}


def raw_publish_frame(name: str, sample: Sample) -> bytes:
    """The `cbor-raw` publish of a sample: `msg` holds its ROS 1 `bytes` and its time (`secs`, `nsecs`)."""
    info = REGISTRY.get(sample.type)
    if info is None:  # no definition was given for it either: the CBOR form is all there is
        return websocket_binary_frame(cbor.encode(publish_message(name, sample)))
    secs, nsecs = divmod(round(sample.stamp * 1e9), 1_000_000_000)
    raw = {"secs": secs, "nsecs": nsecs, "bytes": ros1.serialize(info.cls, sample.data())}
    return websocket_binary_frame(cbor.encode({"op": "publish", "topic": name, "msg": raw}))


def fragmented(name: str, sample: Sample, size: int) -> bytes:
    """The `publish` of `sample`, as `fragment` messages when its JSON is longer than `size` characters."""
    text = orjson.dumps(publish_message(name, sample)).decode()
    if len(text) <= size:
        return websocket_text_frame(text.encode())
    return fragment_frames(f"publish:{name}:{sample.seq}", text, size)


def fragment_frames(message_id: str, text: str, size: int) -> bytes:
    """`text` as rosbridge `fragment` messages of at most `size` characters, framed and concatenated."""
    chunks = [text[start : start + size] for start in range(0, len(text), size)]
    return b"".join(
        websocket_text_frame(
            orjson.dumps({"op": "fragment", "id": message_id, "data": chunk, "num": number, "total": len(chunks)})
        )
        for number, chunk in enumerate(chunks)
    )


def _field(request: Mapping[str, Any], op: str, key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
    value = request.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise BadRequest(f"{op}.{key}: expected {_kind_name(kind)}, got bool")
    if not isinstance(value, kind):
        raise BadRequest(f"{op}.{key}: expected {_kind_name(kind)}, got {type(value).__name__}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join({str: "a string", int: "an integer", float: "a number", bool: "a boolean"}.get(k, k.__name__)
                       for k in kinds)  # fmt: skip


def _name(request: Mapping[str, Any], op: str, key: str) -> str:
    value = _field(request, op, key, str, "")
    if not value or len(value) > ros.MAX_NAME_LENGTH:
        raise BadRequest(f"{op}.{key}: expected a ROS name of 1-{ros.MAX_NAME_LENGTH} characters")
    return ros.normalize(value)


class RosbridgeSession:
    """One rosbridge client."""

    def __init__(self, hub: Hub, names: ros.RosNames, transport: Transport, peer: str) -> None:
        self.hub = hub
        self.names = names
        self.transport = transport
        self.client = Client(hub, peer, "rosbridge")
        self.id = self.client.id
        self.level = LEVELS.index(DEFAULT_LEVEL)
        self._outbox = Outbox(self.id, self.client.subscriber, transport, self._render)
        self._topics: dict[str, SubscribedTopic] = {}
        #: Bus topic → (ROS name, its subscription) or None, for the hot path; cleared on every change.
        self._routes: dict[str, tuple[str, SubscribedTopic] | None] = {}
        self._advertised: dict[str, set[RequestId]] = {}
        self._closing_task: asyncio.Task[None] | None = None
        self._finished = asyncio.Event()
        #: Where the session is (opening until authenticated, then open, closing, closed).
        self.state = SessionState.OPENING
        self._ops: dict[str, Callable[[RequestId, Mapping[str, Any]], Awaitable[None]]] = {
            "auth": self._auth,
            "subscribe": self._subscribe,
            "unsubscribe": self._unsubscribe,
            "advertise": self._advertise,
            "publish": self._publish,
            "unadvertise": self._unadvertise,
            "call_service": self._call_service,
            "set_level": self._set_level,
        }

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Register with the hub and start the writer (rosbridge sends nothing until asked)."""
        self.hub.sessions.add(self)
        self.client.join()
        self._outbox.start()
        CONNECTION_LINES.log(log, "rosbridge client %s connected from %s", self.id, self.client.peer)
        if self.client.authenticated:  # no tokens configured, or `?token=` on the URL
            self.state = SessionState.OPEN

    @property
    def admitted(self) -> bool:
        """True once the client authenticated (at once with no tokens, or with `?token=`)."""
        return self.state is SessionState.OPEN

    @property
    def closing(self) -> bool:
        """True once the session is closing: what the client sends is no longer handled."""
        return self._outbox.closing or self.client.admission.refused_out

    async def wait_finished(self) -> None:
        """Return once the session is over, or after the outbox's close timeout and the socket's drain."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(FINISH_WAIT_S):
                await self._finished.wait()

    async def close(self, code: ErrorCode, reason: str) -> None:
        """Send what is queued, then close the WebSocket (rosbridge has no goodbye message)."""
        if self._outbox.closing:
            return
        if self.state is not SessionState.CLOSED:
            self.state = SessionState.CLOSING
        await self._outbox.flush_and_close(code, reason, None)
        self.finish()

    def abort(self) -> None:
        """Drop the connection at once and forget the client."""
        self._outbox.abort()
        self.finish()

    def finish(self) -> None:
        """Forget the client: its subscriptions and publishers, and its leases (neither library unsubscribes)."""
        self._finished.set()
        if self.state is SessionState.CLOSED:
            return
        self.state = SessionState.CLOSED
        self.hub.sessions.discard(self)
        self._outbox.stop()
        self.client.leave()
        self._topics.clear()
        self._routes.clear()
        self._advertised.clear()
        CONNECTION_LINES.log(log, "rosbridge client %s disconnected", self.id)

    # -- requests ----------------------------------------------------------------------------

    async def receive(self, request: object, size: int) -> None:
        """Handle one decoded request of `size` bytes; every failure becomes a `status` with its id.

        A refused request spends the client's refusal budget first (`Admission`): past it, the
        client is closed rather than answered.
        """
        if self.closing:
            return
        await self._outbox.room()
        request_id: RequestId = None
        op = "request"
        try:
            if not isinstance(request, Mapping):
                raise BadRequest(f"a rosbridge message must be an object, got {type(request).__name__}")
            request_id = _request_id(request.get("id"))
            if size > self.hub.server.max_request_bytes:
                raise TooLarge(f"message of {size} bytes exceeds the {self.hub.server.max_request_bytes}-byte limit")
            raw_op = request.get("op")
            if not isinstance(raw_op, str) or not raw_op:
                raise BadRequest("every rosbridge message needs an 'op' string")
            op = raw_op[:64]
            self.client.admit()
            handler = self._ops.get(op)
            if handler is None:
                raise UnknownOp(f"unsupported op {op!r} (this server supports: {', '.join(SUPPORTED_OPS)})")
            if op != "auth" and not self.client.authenticated:
                raise Unauthorized(f"{op}: authenticate first (?token= on the URL, or the auth op)")
            await handler(request_id, request)
        except GatewayError as error:
            message = _message_of(error)
            await self.client.admission.refused(
                self.id, message, lambda: self._failed(op, request, request_id, message), self.close
            )
        except Exception:
            log.exception("rosbridge client %s: %s failed", self.id, op)
            self._failed(op, request, request_id, f"{InternalError.code.value}: see the gateway's log")

    def _failed(self, op: str, request: object, request_id: RequestId, message: str) -> None:
        """A `status` error; a failed call_service also gets its `service_response`, so the caller never hangs."""
        if op == "call_service" and isinstance(request, Mapping):
            self._service_failed(request_id, str(request.get("service", ""))[: ros.MAX_NAME_LENGTH], message)
        else:
            self._status("error", f"{op}: {message}", request_id)

    async def reject(self, message: str) -> None:
        """Answer an undecodable frame with a `status` error, within the refusal budget (then close)."""
        if self.closing:
            return
        await self._outbox.room()
        await self.client.admission.refused(self.id, message, lambda: self._status("error", message, None), self.close)

    async def _auth(self, request_id: RequestId, request: Mapping[str, Any]) -> None:
        # rosbridge's auth op (roslib / roslibpy `authenticate(mac, ...)`): `mac` carries the token.
        mac = _field(request, "auth", "mac", str, "")
        if not mac:
            raise BadRequest("auth.mac: expected the token as a string")
        try:
            await self.client.authenticate(mac)
        except Unauthorized:
            if self.client.auth_exhausted:
                asyncio.get_running_loop().call_soon(self._close_soon, ErrorCode.UNAUTHORIZED, "too many wrong tokens")
            raise
        if self.state is SessionState.OPENING:
            self.state = SessionState.OPEN
        self._status("info", "authenticated", request_id)
        self.client.join()

    def _close_soon(self, code: ErrorCode, reason: str) -> None:
        """Close after the current status is queued (the reader keeps its own task)."""
        self._closing_task = asyncio.create_task(self.close(code, reason), name=f"client:{self.id}:close")

    async def _set_level(self, request_id: RequestId, request: Mapping[str, Any]) -> None:
        level = _field(request, "set_level", "level", str, "")
        if level not in LEVELS:
            raise BadRequest(f"set_level.level: expected one of {', '.join(LEVELS)}, got {level!r}")
        self.level = LEVELS.index(level)

    # -- subscriptions -----------------------------------------------------------------------

    async def _subscribe(self, request_id: RequestId, request: Mapping[str, Any]) -> None:
        name = _name(request, "subscribe", "topic")
        requested_type = _field(request, "subscribe", "type", str, "")
        compression = _field(request, "subscribe", "compression", str, "none")
        if compression not in COMPRESSIONS:
            raise BadRequest(f"subscribe.compression: expected one of {', '.join(COMPRESSIONS)}, got {compression!r}")
        throttle_ms = _field(request, "subscribe", "throttle_rate", (int, float), 0)
        queue_length = _field(request, "subscribe", "queue_length", int, 0)
        fragment_size = _field(request, "subscribe", "fragment_size", int, None)
        if throttle_ms < 0:
            raise BadRequest(f"subscribe.throttle_rate: expected milliseconds >= 0, got {throttle_ms}")
        if queue_length < 0:
            raise BadRequest(f"subscribe.queue_length: expected an integer >= 0, got {queue_length}")
        if fragment_size is not None and fragment_size < 1:
            raise BadRequest(f"subscribe.fragment_size: expected an integer >= 1, got {fragment_size}")
        pattern = self._bus_pattern(name, requested_type)
        rate = 1000.0 / throttle_ms if throttle_ms else None
        if rate is not None and rate > MAX_RATE_HZ:
            rate = None  # shorter than the core's shortest interval: every sample
        if rate is not None and rate < MIN_RATE_HZ:
            raise BadRequest(f"subscribe.throttle_rate: at most {1000.0 / MIN_RATE_HZ:g} ms, got {throttle_ms}")
        subscription_id = str(request_id) if request_id is not None else f"subscribe:{name}:{next(_generated_ids)}"
        binary = compression in ("cbor", "cbor-raw")
        subscription = Subscription(
            subscription_id, 0, compression == "cbor", fragment_size if not binary else None, compression == "cbor-raw"
        )
        # The topic is set up first: the bus sends the newest sample during `subscribe`, through `_render`.
        self._routes.clear()
        topic = self._topics.setdefault(name, SubscribedTopic())
        # Only the topic's first subscription gets the newest sample: rosbridge publishes each message
        # once per topic, and roslib and roslibpy hand it to every callback of the topic.
        newest = not topic.subscriptions
        previous = topic.subscriptions.get(subscription_id)
        topic.subscriptions[subscription_id] = subscription
        topic.merge()
        try:
            subscription.bus_id, _ = self.client.subscribe([pattern], rate, newest=newest)
        except GatewayError:
            self._routes.clear()
            if previous is not None:
                topic.subscriptions[subscription_id] = previous
            else:
                del topic.subscriptions[subscription_id]
            if topic.subscriptions:
                topic.merge()
            else:
                del self._topics[name]
            raise
        if previous is not None:  # the same id again replaces that subscription, as rosbridge does
            self.client.unsubscribe(previous.bus_id)
        if compression == "png":
            self._status("warning", f"subscribe {name}: compression {compression!r} is served as 'none'", request_id)
        if queue_length > 1:
            self._status("info", f"subscribe {name}: the newest message wins (queue_length 1)", request_id)

    def _bus_pattern(self, name: str, requested_type: str) -> str:
        """The bus topic (or, before its first sample, the device's topics) behind ROS topic `name`."""
        known: dict[str, tuple[str, str]] = {}
        for topic, type_name in self.client.topics():
            ros_name = self.names.topic(topic)
            if ros_name is not None:
                known[ros_name] = (topic, type_name)
        if name in known:
            topic, type_name = known[name]
            if not ros.same_type(requested_type, type_name):
                raise InvalidArgument(f"type mismatch: {name} carries {ros.ros_type(type_name)}, not {requested_type}")
            return topic
        if name in self.names.command_topics:
            raise UnknownCommand(f"{name} is a command topic: publish to it; the gateway publishes nothing there")
        device = self.names.device_of(name)
        bus_type = ros.bus_type(requested_type) if requested_type else None
        publishes = self._publishes(device) if device is not None else ()
        if device is None or bus_type is None or bus_type not in publishes:
            raise InvalidArgument(f"unknown topic {name} (rosapi/topics lists them)")
        # Not published yet (the device is still connecting): wait for it among the device's topics.
        return device + "/**"

    def _publishes(self, device: str) -> tuple[str, ...]:
        for listed in self.client.list_devices():
            if listed["id"] == device:
                return tuple(listed["publishes"])
        return ()

    async def _unsubscribe(self, request_id: RequestId, request: Mapping[str, Any]) -> None:
        name = _name(request, "unsubscribe", "topic")
        topic = self._topics.get(name)
        if topic is None:
            raise InvalidArgument(f"not subscribed to {name}")
        self._routes.clear()
        if request_id is None:  # no id: every subscription of the topic, as rosbridge does
            removed = list(topic.subscriptions.values())
        else:
            one = topic.subscriptions.get(str(request_id))
            if one is None:
                raise InvalidArgument(f"no subscription {request_id!r} to {name}")
            removed = [one]
        for subscription in removed:
            del topic.subscriptions[subscription.id]
            self.client.unsubscribe(subscription.bus_id)
        if topic.subscriptions:
            topic.merge()
        else:
            del self._topics[name]

    # -- publishing = commands ---------------------------------------------------------------

    def _command_topic(self, op: str, name: str, requested_type: str) -> ros.Endpoint:
        endpoint = self.names.command_topics.get(name)
        if endpoint is None:
            device = self.names.device_of(name)
            accepts = sorted(n for n, e in self.names.command_topics.items() if e.device == device)
            hint = f"; {device} accepts: {', '.join(accepts)}" if device and accepts else ""
            raise UnknownCommand(f"{name} is no command topic{hint}")
        if not ros.same_type(requested_type, endpoint.type):
            raise InvalidArgument(f"type mismatch: {name} takes {endpoint.ros_type}, not {requested_type}")
        return endpoint

    async def _advertise(self, request_id: RequestId, request: Mapping[str, Any]) -> None:
        name = _name(request, "advertise", "topic")
        self._command_topic("advertise", name, _field(request, "advertise", "type", str, ""))
        publishers = self._advertised.get(name)
        if publishers is not None and request_id in publishers:
            return
        if sum(map(len, self._advertised.values())) >= MAX_PUBLISHERS:
            raise InvalidArgument(
                f"advertise {name}: a client may hold at most {MAX_PUBLISHERS} publishers; unadvertise some first"
            )
        self._advertised.setdefault(name, set()).add(request_id)

    async def _unadvertise(self, request_id: RequestId, request: Mapping[str, Any]) -> None:
        name = _name(request, "unadvertise", "topic")
        publishers = self._advertised.get(name)
        if publishers is None:
            raise InvalidArgument(f"{name} is not advertised by this client")
        publishers.discard(request_id)
        if request_id is None or not publishers:
            del self._advertised[name]

    async def _publish(self, request_id: RequestId, request: Mapping[str, Any]) -> None:
        name = _name(request, "publish", "topic")
        endpoint = self._command_topic("publish", name, "")
        message = request.get("msg", {})
        if not isinstance(message, Mapping):
            raise InvalidArgument(f"publish.msg: expected an object, got {type(message).__name__}")
        task = self.client.command(endpoint.device, endpoint.type, message, None)
        task.add_done_callback(lambda done: self._published(request_id, name, done))

    def _published(self, request_id: RequestId, name: str, task: asyncio.Task[dict[str, Any]]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            self._status("error", f"publish {name}: {_message_of(error)}", request_id)

    # -- services ----------------------------------------------------------------------------

    async def _call_service(self, request_id: RequestId, request: Mapping[str, Any]) -> None:
        service = str(request.get("service", ""))
        name = _name(request, "call_service", "service")
        args = request.get("args", {})
        if isinstance(args, list) and not args:
            args = {}  # rosbridge also takes positional args; an empty list is no args
        if not isinstance(args, Mapping):
            raise InvalidArgument(f"call_service.args: expected an object, got {type(args).__name__}")
        timeout = _field(request, "call_service", "timeout", (int, float), None)
        if timeout is not None and not MIN_CLIENT_TIMEOUT_S <= timeout <= MAX_CLIENT_TIMEOUT_S:
            raise InvalidArgument(
                f"call_service.timeout: expected seconds in [{MIN_CLIENT_TIMEOUT_S}, {MAX_CLIENT_TIMEOUT_S}]"
            )
        answer = rosapi.handler(name)
        if answer is not None:
            self._service_response(request_id, service, answer(self.client, self.names, args), True)
            return
        endpoint = self.names.services.get(name)
        if endpoint is None:
            raise UnknownCommand(f"unknown service {name} (rosapi/services lists them)")
        if not ros.same_type(_field(request, "call_service", "type", str, ""), endpoint.type):
            raise InvalidArgument(f"type mismatch: {name} is a {endpoint.ros_type}")
        task = self.client.command(endpoint.device, endpoint.type, args, timeout)
        task.add_done_callback(lambda done: self._service_done(request_id, service, done))

    def _service_done(self, request_id: RequestId, service: str, task: asyncio.Task[dict[str, Any]]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is None:
            self._service_response(request_id, service, task.result(), True)
        else:
            self._service_failed(request_id, service, _message_of(error))

    def _service_failed(self, request_id: RequestId, service: str, message: str) -> None:
        # As rosbridge: a status first, then the response whose `values` is the error string.
        self._status("error", f"call_service {service}: {message}", request_id)
        self._service_response(request_id, service, message, False)

    def _service_response(self, request_id: RequestId, service: str, values: object, result: bool) -> None:
        response: dict[str, Any] = {"op": "service_response", "service": service, "values": values, "result": result}
        if request_id is not None:
            response["id"] = request_id
        self._push(response)

    # -- output ------------------------------------------------------------------------------

    def _render(self, item: Outgoing) -> bytes | None:
        if type(item) is not Sample:
            return None  # device availability has no rosbridge message
        try:
            route = self._routes[item.topic]
        except KeyError:
            route = self._routes[item.topic] = self._route(item.topic)
        if route is None:
            return None  # a topic of a device-wide subscription waiting for another topic
        name, topic = route
        if topic.raw:
            return item.encoded(RAW_KEY, lambda: raw_publish_frame(name, item))
        if topic.cbor:
            return item.encoded(CBOR_KEY, lambda: websocket_binary_frame(cbor.encode(publish_message(name, item))))
        size = topic.fragment_size
        if size is not None:
            return item.encoded(f"rosbridge.fragments.{size}", lambda: fragmented(name, item, size))
        return item.encoded(JSON_KEY, lambda: websocket_text_frame(orjson.dumps(publish_message(name, item))))

    def _route(self, bus_topic: str) -> tuple[str, SubscribedTopic] | None:
        name = self.names.topic(bus_topic)
        topic = self._topics.get(name) if name is not None else None
        return None if name is None or topic is None else (name, topic)

    def _status(self, level: Literal["debug", "info", "warning", "error"], message: str, request_id: RequestId) -> None:
        if LEVELS.index(level) < self.level:
            return
        status: dict[str, Any] = {"op": "status", "level": level, "msg": message}
        if request_id is not None:
            status["id"] = request_id
        self._push(status)

    def _push(self, message: dict[str, Any]) -> None:
        try:
            encoded = orjson.dumps(message)
        except orjson.JSONEncodeError as error:  # a value no JSON reader could take: say so, never crash
            log.debug("rosbridge client %s: reply not encodable: %s", self.id, error)
            encoded = orjson.dumps(
                {"op": "status", "level": "error", "msg": f"the reply to {message.get('op')!s:.64} is not encodable"}
            )
        self._outbox.push(websocket_text_frame(encoded))


def _request_id(value: object) -> RequestId:
    """The request's id as sent (roslib: `subscribe:/t:<uuid>`, roslibpy: `...:<n>`); None if unusable."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    if isinstance(value, str) and len(value) > MAX_ID_LENGTH:
        return None
    if isinstance(value, int) and not MIN_INT_ID <= value <= MAX_INT_ID:
        return None  # a CBOR bignum: no JSON reply could carry it back
    return value


def _message_of(error: BaseException) -> str:
    if isinstance(error, GatewayError):
        return f"{error.code.value}: {error.message}"
    return f"{InternalError.code.value}: see the gateway's log"
