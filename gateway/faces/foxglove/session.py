"""One Foxglove WebSocket client: the protocol's ops translated onto the client core.

What a subscription, a command or a lease means lives in `gateway.core.client`; this module owns the
Foxglove wire only: serverInfo, channel and service advertisements (which follow the catalog and the
devices' availability), subscription ids, MessageData, client publishing, service calls, parameters
and `status` messages for bad input (the connection always goes on).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from gateway.bus import DeviceEvent, Outgoing, Sample
from gateway.core.client import Client, Hub
from gateway.core.session_state import SessionState
from gateway.errors import ErrorCode, GatewayError, InvalidArgument, ProtocolError
from gateway.faces.foxglove import parameters as params
from gateway.faces.foxglove import wire
from gateway.faces.foxglove.catalog import (
    REFRESH_S,
    Catalog,
    ChannelInfo,
    channel_advertisement,
    command_topic,
    schema_advertisement,
)
from gateway.faces.outbox import CLOSE_TIMEOUT_S, Outbox, Transport
from gateway.servers.socket_transport import CLOSE_DRAIN_S
from gateway.throttled_logs import CONNECTION_LINES

log = logging.getLogger(__name__)

#: Seconds a reader waits for a close begun elsewhere: the outbox's flush, then the socket's drain.
FINISH_WAIT_S = CLOSE_TIMEOUT_S + CLOSE_DRAIN_S + 0.5
#: What we implement, as serverInfo names it.
CAPABILITIES = ("clientPublish", "services", "parameters")
#: Channels one client may advertise for publishing (each names one device's command type).
MAX_CLIENT_CHANNELS = 256
#: The face's key for its cached MessageData frame on a sample (one per sample for all clients).
FRAME_KEY = "foxglove"
_UNSUPPORTED_OPS = frozenset(
    {
        "subscribeParameterUpdates",
        "unsubscribeParameterUpdates",
        "subscribeConnectionGraph",
        "unsubscribeConnectionGraph",
        "fetchAsset",
    }
)


class FoxgloveError(GatewayError):
    """Bad Foxglove input, answered with a `status` error."""

    code = ErrorCode.BAD_REQUEST


def _uint32(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= wire.U32_MAX:
        raise FoxgloveError(f"{what}: expected an integer in [0, 4294967295], got {value!r}")
    return value


def _list(request: Mapping[str, Any], op: str, key: str) -> list[Any]:
    value = request.get(key)
    if not isinstance(value, list):
        raise FoxgloveError(f"{op}.{key}: expected an array, got {type(value).__name__}")
    return value


def _message_text(error: GatewayError) -> str:
    return f"{error.code.value}: {error.message}"


class FoxgloveSession:
    """One connection speaking `subprotocol`; `server_info` is the serverInfo message sent first."""

    def __init__(
        self,
        hub: Hub,
        catalog: Catalog,
        transport: Transport,
        peer: str,
        subprotocol: str,
        server_info: dict[str, Any],
        port: int | None,
    ) -> None:
        self.hub = hub
        self.client = Client(hub, peer, "foxglove")
        self.id = self.client.id
        self.subprotocol = subprotocol
        self._catalog = catalog
        self._server_info = server_info
        self._port = port
        self._outbox = Outbox(self.id, self.client.subscriber, transport, self._render)
        self._schema_table = subprotocol == wire.SDK_V1_1
        self._status: dict[str, str] = {}
        self._accepts: dict[str, list[str]] = {}
        self._advertised: dict[int, ChannelInfo] = {}
        self._sent_schemas: set[int] = set()
        self._service_devices: set[str] = set()
        self._subscriptions: dict[int, tuple[ChannelInfo, int]] = {}
        self._subscribed_channels: dict[int, int] = {}
        self._by_topic: dict[str, bytes] = {}
        self._client_channels: dict[int, tuple[str, str, str]] = {}
        self._catalog_version = -1
        self._poller: asyncio.Task[None] | None = None
        self._finished = asyncio.Event()
        #: Where the session is (opening until authenticated, then open, closing, closed).
        self.state = SessionState.OPENING
        self._ops: dict[str, Callable[[Mapping[str, Any]], None]] = {
            "subscribe": self._subscribe,
            "unsubscribe": self._unsubscribe,
            "advertise": self._client_advertise,
            "unadvertise": self._client_unadvertise,
            "getParameters": self._get_parameters,
            "setParameters": self._set_parameters,
        }

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Send serverInfo and what exists now, register with the hub, start the writer."""
        self._outbox.push(wire.json_frame(self._server_info))
        self.hub.sessions.add(self)
        if self.client.authenticated:  # no tokens configured, or `?token=` on the URL; else closed at once
            self.state = SessionState.OPEN
            for device in self.client.list_devices():
                self._status[device["id"]] = device["status"]
                self._accepts[device["id"]] = device["accepts"]
            self._catalog.refresh(self.client)
            self._catalog_version = self._catalog.version
            advertise, services = self._diff()
            self._outbox.push(advertise or self._advertise_frame([]))
            if services:
                self._outbox.push(services)
            self._poller = asyncio.create_task(self._poll(), name=f"client:{self.id}:foxglove-topics")
        self.client.join()
        self._outbox.start()
        CONNECTION_LINES.log(
            log, "foxglove client %s connected from %s (%s)", self.id, self.client.peer, self.subprotocol
        )

    def refuse(self, message: str) -> None:
        """Queue a `status` error (sent before the connection closes)."""
        self._outbox.push(wire.status_frame(wire.ERROR, message))

    @property
    def admitted(self) -> bool:
        """True once authenticated: Foxglove has no auth message, so a client without it is closed at once."""
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
        """Send a `status` with the reason after what is queued, then close the connection."""
        if self._outbox.closing:
            return
        if self.state is not SessionState.CLOSED:
            self.state = SessionState.CLOSING
        level = wire.WARNING if code == ErrorCode.GOING_AWAY else wire.ERROR
        await self._outbox.flush_and_close(code, reason, wire.status_frame(level, reason))
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
        if self._poller is not None:
            self._poller.cancel()
        self._outbox.stop()
        self.client.leave()
        CONNECTION_LINES.log(log, "foxglove client %s disconnected", self.id)

    async def _poll(self) -> None:
        """Advertise topics as they appear on the bus."""
        while True:
            await asyncio.sleep(REFRESH_S)
            self._catalog.refresh(self.client)
            if self._catalog.version != self._catalog_version:
                self._catalog_version = self._catalog.version
                self._push_diff()

    # -- what the client is told exists ------------------------------------------------------

    def _push_diff(self) -> None:
        for frame in self._diff():
            if frame:
                self._outbox.push(frame)

    def _diff(self) -> tuple[bytes, bytes]:
        """Advertise and unadvertise so the client knows the channels and services of connected devices."""
        catalog = self._catalog
        connected = {device for device, status in self._status.items() if status == "connected"}
        wanted = {channel.id: channel for channel in catalog.channels.values() if channel.device in connected}
        frames: list[bytes] = []
        gone = [channel_id for channel_id in self._advertised if channel_id not in wanted]
        if gone:
            for channel_id in gone:
                self._drop_channel(channel_id)
            frames.append(wire.json_frame({"op": "unadvertise", "channelIds": gone}))
        new = [channel for channel_id, channel in sorted(wanted.items()) if channel_id not in self._advertised]
        if new:
            self._advertised.update((channel.id, channel) for channel in new)
            frames.append(self._advertise_frame(new))
        service_frames: list[bytes] = []
        left = sorted(self._service_devices - connected)
        if left:
            self._service_devices -= set(left)
            ids = [
                service.id
                for device in left
                for service in catalog.device_services(self.client, device, self._accepts.get(device, []))
            ]
            if ids:
                service_frames.append(wire.json_frame({"op": "unadvertiseServices", "serviceIds": ids}))
        came = sorted(connected - self._service_devices)
        if came:
            self._service_devices |= set(came)
            services = [
                service.advertisement()
                for device in came
                for service in catalog.device_services(self.client, device, self._accepts.get(device, []))
            ]
            if services:
                service_frames.append(wire.json_frame({"op": "advertiseServices", "services": services}))
        return b"".join(frames), b"".join(service_frames)

    def _advertise_frame(self, channels: list[ChannelInfo]) -> bytes:
        message: dict[str, Any] = {"op": "advertise"}
        if self._schema_table:
            schemas = {}
            for channel in channels:
                if channel.schema_id not in self._sent_schemas:
                    schemas[channel.schema_id] = schema_advertisement(channel)
            if schemas:
                self._sent_schemas.update(schemas)
                message["schemas"] = list(schemas.values())
        message["channels"] = [channel_advertisement(channel, self._schema_table) for channel in channels]
        return wire.json_frame(message)

    def _drop_channel(self, channel_id: int) -> None:
        """Forget an unadvertised channel and its subscription (the bus one ends on the next loop turn)."""
        channel = self._advertised.pop(channel_id)
        subscription = self._subscribed_channels.pop(channel_id, None)
        if subscription is not None:
            _, bus_subscription = self._subscriptions.pop(subscription)
            self._by_topic.pop(channel.topic, None)
            asyncio.get_running_loop().call_soon(self._end_bus_subscription, bus_subscription)

    def _end_bus_subscription(self, bus_subscription: int) -> None:
        with contextlib.suppress(GatewayError):
            self.client.unsubscribe(bus_subscription)

    # -- output ------------------------------------------------------------------------------

    def _render(self, item: Outgoing) -> bytes | None:
        if isinstance(item, Sample):
            subscription = self._by_topic.get(item.topic)
            if subscription is None:
                return None
            frame = item.encoded(FRAME_KEY, lambda: wire.message_data_frame(int(item.stamp * 1e9), self._payload(item)))
            return wire.with_subscription(frame, subscription)
        if isinstance(item, DeviceEvent) and self._status.get(item.device) != item.status:
            self._status[item.device] = item.status
            self._push_diff()
        return None

    def _payload(self, sample: Sample) -> bytes:
        """A sample's message in its Foxglove form (encoded once for every Foxglove client, as the form is)."""
        channel = self._catalog.channels.get(sample.topic)
        data = sample.data()
        return orjson.dumps(data if channel is None or channel.reshape is None else channel.reshape(data))

    def _status_error(self, message: str) -> None:
        self._outbox.push(wire.status_frame(wire.ERROR, message))

    # -- requests ----------------------------------------------------------------------------

    async def receive_text(self, text: str) -> None:
        """Handle one JSON message from the client; bad input is answered with a `status` error.

        Each refusal spends the client's refusal budget first (`Admission`); past it the client is closed.
        """
        if self.closing:
            return
        await self._outbox.room()
        size = len(text) if len(text) * 4 <= self.hub.server.max_request_bytes else len(text.encode())
        try:
            if size > self.hub.server.max_request_bytes:
                limit = self.hub.server.max_request_bytes
                raise FoxgloveError(f"message of {size} bytes exceeds the {limit}-byte limit")
            try:
                request = orjson.loads(text)
            except orjson.JSONDecodeError as error:
                raise FoxgloveError(f"not valid JSON: {error}") from None
            if not isinstance(request, dict) or not isinstance(request.get("op"), str):
                raise FoxgloveError("a JSON message must be an object with an 'op' string")
            self.client.admit()
            op = request["op"]
            handler = self._ops.get(op)
            if handler is None:
                if op in _UNSUPPORTED_OPS:
                    raise FoxgloveError(f"{op}: not supported (capabilities: {', '.join(CAPABILITIES)})")
                raise FoxgloveError(f"unknown op {op!r} (ops: {', '.join(sorted(self._ops))})")
            handler(request)
        except GatewayError as error:
            await self._refused(error)
        except Exception:
            log.exception("foxglove client %s: request failed", self.id)
            self._status_error("internal error; see the gateway's log")

    async def receive_binary(self, data: bytes) -> None:
        """Handle one binary message: client message data (a command) or a service call."""
        if self.closing:
            return
        await self._outbox.room()
        try:
            if len(data) > self.hub.server.max_request_bytes:
                raise FoxgloveError(
                    f"message of {len(data)} bytes exceeds the {self.hub.server.max_request_bytes}-byte limit"
                )
            try:
                message = wire.parse_client_binary(data)
            except ProtocolError as error:
                raise FoxgloveError(str(error)) from None
            if isinstance(message, wire.ServiceCallRequest):
                self._call_service(message)
            else:
                self._publish(message)
        except GatewayError as error:
            await self._refused(error)
        except Exception:
            log.exception("foxglove client %s: binary message failed", self.id)
            self._status_error("internal error; see the gateway's log")

    async def _refused(self, error: GatewayError) -> None:
        """A `status` error for refused input, within the client's refusal budget (then the close)."""
        text = error.message if isinstance(error, FoxgloveError) else _message_text(error)
        await self.client.admission.refused(self.id, text, lambda: self._status_error(text), self.close)

    def _subscribe(self, request: Mapping[str, Any]) -> None:
        errors = []
        for entry in _list(request, "subscribe", "subscriptions"):
            try:
                self._subscribe_one(entry)
            except GatewayError as error:
                errors.append(error.message if isinstance(error, FoxgloveError) else _message_text(error))
        if errors:
            raise FoxgloveError("; ".join(errors))

    def _subscribe_one(self, entry: object) -> None:
        if not isinstance(entry, dict):
            raise FoxgloveError(f"subscribe.subscriptions: expected {{id, channelId}} objects, got {entry!r}")
        subscription = _uint32(entry.get("id"), "subscribe.subscriptions[].id")
        channel_id = _uint32(entry.get("channelId"), "subscribe.subscriptions[].channelId")
        channel = self._advertised.get(channel_id)
        if channel is None:
            raise FoxgloveError(f"subscribe: unknown channel id {channel_id} (not advertised on this connection)")
        if subscription in self._subscriptions:
            raise FoxgloveError(f"subscribe: subscription id {subscription} is in use; unsubscribe it first")
        if channel_id in self._subscribed_channels:
            raise FoxgloveError(
                f"subscribe: channel {channel_id} already has subscription {self._subscribed_channels[channel_id]}"
            )
        self._subscriptions[subscription] = (channel, 0)
        self._subscribed_channels[channel_id] = subscription
        self._by_topic[channel.topic] = wire.subscription_bytes(subscription)
        try:
            bus_subscription, _ = self.client.subscribe([channel.topic], None)  # queues the latest sample
        except GatewayError:
            del self._subscriptions[subscription], self._subscribed_channels[channel_id], self._by_topic[channel.topic]
            raise
        self._subscriptions[subscription] = (channel, bus_subscription)

    def _unsubscribe(self, request: Mapping[str, Any]) -> None:
        unknown = []
        for value in _list(request, "unsubscribe", "subscriptionIds"):
            subscription = _uint32(value, "unsubscribe.subscriptionIds[]")
            entry = self._subscriptions.pop(subscription, None)
            if entry is None:
                unknown.append(subscription)
                continue
            channel, bus_subscription = entry
            del self._subscribed_channels[channel.id]
            self._by_topic.pop(channel.topic, None)
            self._end_bus_subscription(bus_subscription)
        if unknown:
            raise FoxgloveError(f"unsubscribe: no subscription {', '.join(map(str, unknown))} on this connection")

    def _client_advertise(self, request: Mapping[str, Any]) -> None:
        errors = []
        for entry in _list(request, "advertise", "channels"):
            try:
                self._client_advertise_one(entry)
            except FoxgloveError as error:
                errors.append(error.message)
        if errors:
            raise FoxgloveError("; ".join(errors))

    def _client_advertise_one(self, entry: object) -> None:
        if not isinstance(entry, dict):
            raise FoxgloveError(f"advertise.channels: expected channel objects, got {entry!r}")
        channel_id = _uint32(entry.get("id"), "advertise.channels[].id")
        topic, encoding, schema_name = entry.get("topic"), entry.get("encoding"), entry.get("schemaName", "")
        if not isinstance(topic, str) or not isinstance(encoding, str) or not isinstance(schema_name, str):
            raise FoxgloveError("advertise.channels[]: topic, encoding and schemaName must be strings")
        if channel_id in self._client_channels:
            raise FoxgloveError(f"advertise: client channel {channel_id} is already advertised; unadvertise it first")
        if len(self._client_channels) >= MAX_CLIENT_CHANNELS:
            raise FoxgloveError(f"advertise {topic}: a client may advertise at most {MAX_CLIENT_CHANNELS} channels")
        if encoding != "json":
            raise FoxgloveError(f"advertise {topic}: encoding {encoding!r} is not supported (supported: json)")
        named = command_topic(topic)
        if named is None:
            raise FoxgloveError(f"advertise {topic}: commands go to /<device>/command/<type> (e.g. /sim-1/command/led)")
        device, type_name = named
        accepts = self._accepts.get(device)
        if accepts is None:
            known = ", ".join(sorted(self._accepts))
            raise FoxgloveError(f"advertise {topic}: no device {device!r} (devices: {known})")
        if type_name not in accepts:
            known = ", ".join(accepts)
            raise FoxgloveError(f"advertise {topic}: {device} accepts no {type_name!r} (it accepts {known})")
        if schema_name and schema_name != type_name:
            raise FoxgloveError(f"advertise {topic}: schemaName {schema_name!r} is not the topic's type {type_name!r}")
        self._client_channels[channel_id] = (topic, device, type_name)

    def _client_unadvertise(self, request: Mapping[str, Any]) -> None:
        unknown = []
        for value in _list(request, "unadvertise", "channelIds"):
            channel_id = _uint32(value, "unadvertise.channelIds[]")
            if self._client_channels.pop(channel_id, None) is None:
                unknown.append(channel_id)
        if unknown:
            raise FoxgloveError(f"unadvertise: no client channel {', '.join(map(str, unknown))} on this connection")

    def _get_parameters(self, request: Mapping[str, Any]) -> None:
        names = _list(request, "getParameters", "parameterNames")
        if not all(isinstance(name, str) for name in names):
            raise FoxgloveError("getParameters.parameterNames: expected an array of strings")
        self._parameter_values(names, request.get("id"))

    def _set_parameters(self, request: Mapping[str, Any]) -> None:
        entries = _list(request, "setParameters", "parameters")
        names = [entry["name"] for entry in entries if isinstance(entry, dict) and isinstance(entry.get("name"), str)]
        if "id" in request:
            self._parameter_values(names, request.get("id"))  # the values stay as they are
        raise FoxgloveError(
            "setParameters: parameters are read-only here (gateway and device facts); change the gateway's config"
            " file, or send commands through /<device>/command/<type> or the services"
        )

    def _parameter_values(self, names: list[str], request_id: object) -> None:
        values = params.select(params.all_parameters(self.client, self._port), names)
        message: dict[str, Any] = {"op": "parameterValues", "parameters": values}
        if isinstance(request_id, str):
            message["id"] = request_id
        elif request_id is not None:
            raise FoxgloveError(f"parameters request id: expected a string, got {type(request_id).__name__}")
        self._outbox.push(wire.json_frame(message))

    # -- commands ----------------------------------------------------------------------------

    def _publish(self, message: wire.ClientMessageData) -> None:
        channel = self._client_channels.get(message.channel)
        if channel is None:
            raise FoxgloveError(f"message data: no client channel {message.channel} (advertise it first)")
        topic, device, type_name = channel
        try:
            data = orjson.loads(message.payload)
        except orjson.JSONDecodeError as error:
            raise FoxgloveError(f"{topic}: payload is not valid JSON: {error}") from None
        reshape = self._catalog.inward(self.client, type_name)
        if reshape is not None:
            data = reshape(data)
        self.client.admit()
        task = self.client.command(device, type_name, data, None)
        task.add_done_callback(lambda done: self._published(topic, done))

    def _published(self, topic: str, task: asyncio.Task[dict[str, Any]]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            text = _message_text(error) if isinstance(error, GatewayError) else "internal error"
            self._status_error(f"{topic}: {text}")

    def _call_service(self, call: wire.ServiceCallRequest) -> None:
        service = self._catalog.services.get(call.service)
        try:
            if service is None or service.device not in self._service_devices:
                raise FoxgloveError(f"unknown service id {call.service}")
            if call.encoding != "json":
                raise FoxgloveError(f"encoding {call.encoding!r} is not supported (supported: json)")
            try:
                data = orjson.loads(call.payload) if call.payload.strip() else {}
            except orjson.JSONDecodeError as error:
                raise InvalidArgument(f"request is not valid JSON: {error}") from None
            if service.request_reshape is not None:
                data = service.request_reshape(data)
            self.client.admit()
            task = self.client.command(service.device, service.type, data, None)
        except GatewayError as error:
            self._call_failed(call, error)
            return
        task.add_done_callback(lambda done: self._called(call, done))

    def _called(self, call: wire.ServiceCallRequest, task: asyncio.Task[dict[str, Any]]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is None:
            service = self._catalog.services.get(call.service)
            result = task.result()
            if service is not None and service.response_reshape is not None:
                result = service.response_reshape(result)
            payload = orjson.dumps(result)
            self._outbox.push(wire.service_call_response_frame(call.service, call.call, "json", payload))
        else:
            self._call_failed(call, error if isinstance(error, GatewayError) else GatewayError("internal error"))

    def _call_failed(self, call: wire.ServiceCallRequest, error: GatewayError) -> None:
        message = error.message if isinstance(error, FoxgloveError) else _message_text(error)
        if self.subprotocol == wire.LEGACY_V1:
            # The apps that speak the legacy subprotocol (Lichtblick, Foxglove Studio 1.x) wait for a
            # `serviceCallResponse` with the call id and ignore `serviceCallFailure`: without a
            # response their service panel shows "Calling…" for ever. So the call is answered with
            # a response holding the error (shown as the result), and a `status` error (shown in
            # the problems list) names it; `serviceCallFailure` follows for clients that handle it.
            payload = orjson.dumps({"error": error.to_dict()})
            self._outbox.push(wire.service_call_response_frame(call.service, call.call, "json", payload))
            self._status_error(f"service call {call.call} failed: {message}")
        self._outbox.push(
            wire.json_frame(
                {"op": "serviceCallFailure", "serviceId": call.service, "callId": call.call, "message": message}
            )
        )
