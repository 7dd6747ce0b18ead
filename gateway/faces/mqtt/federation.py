"""Federation: other gateways' devices shown here as `<gateway>:<device>`, their commands sent over MQTT.

Each imported device is an adapter added through the client core at run time, so every face
(WebSocket, msgpack, dashboard, ...) sees it like a local one; the composition root gives the
adapter (`devices.remote`), which forwards to the `Importer`. Its samples come from the remote
gateway's retained topics and are checked against their message types before they reach the bus; its
availability follows the remote's `availability` topic and its gateway's `status` (last will
`offline`: every device of that gateway turns `disconnected`). A command goes to the remote's
`<device>/set` with our reply topic, the command's remaining deadline and the commanding client's id,
and, when `[mqtt] token_file` is set, this gateway's token (user property `token`) for gateways that
check tokens.

Leases: the remote gateway holds the leases of what our clients command there (its adapters follow
the core's lease rule). Here a `RemoteDevice` leases itself to each client that commanded it
(`gateway.core.lease`, keyed by client id): when that client leaves, its lease ends and the remote
is sent `release` for it (once per gateway), so its leases there end too. An estop is forwarded as
one; at shutdown and when the broker or the remote goes, the remote ends our clients' leases
itself (our `status` goes `offline`, or its own link is lost).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from gateway.bus import DeviceStatus
from gateway.core.adapter import Adapter, Command, DeviceContext
from gateway.core.client import MIN_CLIENT_TIMEOUT_S, Hub
from gateway.core.config import DeviceConfig
from gateway.errors import DeviceUnavailable, ErrorCode, GatewayError, RequestTimeout
from gateway.faces.mqtt.commands import CLIENT_PROPERTY, PEER_PROPERTY, TOKEN_PROPERTY
from gateway.faces.mqtt.link import Link
from gateway.faces.mqtt.topics import TopicMap, imported_id
from gateway.messages import REGISTRY, from_plain, to_plain
from gateway.topics import check_device_id, check_topic

log = logging.getLogger(__name__)

_STATUSES: frozenset[str] = frozenset({"connecting", "connected", "disconnected", "stopped"})
#: Imported devices and gateways kept at most (a hostile broker cannot grow them without bound).
MAX_IMPORTED_DEVICES = 1024
#: Estops forwarded to one gateway within this many seconds are sent once.
ESTOP_DEDUP_S = 0.2
#: Samples of not yet listed devices kept until their device list arrives.
MAX_EARLY_SAMPLES = 4096


@dataclass
class _Remote:
    """What is known of one other gateway."""

    online: bool = False
    devices: set[str] = field(default_factory=set)
    last_estop: float = 0.0


class ImportedDevice(Protocol):
    """What the importer drives of an imported device's adapter (`devices.remote.RemoteDevice`)."""

    @property
    def ctx(self) -> DeviceContext:
        """Where its samples and availability go."""

    @property
    def mirroring(self) -> bool:
        """True while it runs (its availability may be set)."""

    def describe(self, publishes: Iterable[str], accepts: Iterable[str], capabilities: Mapping[str, Any]) -> None:
        """Take what the remote gateway lists for the device."""


#: Builds the adapter of an imported device: its context, its gateway, its id there, and the importer
#: it forwards to (the composition root gives `devices.remote.RemoteDevice.imported`).
ImportAdapter = Callable[[DeviceContext, str, str, "Importer"], ImportedDevice]


class Importer:
    """Keeps imported devices in step with what other gateways publish."""

    def __init__(self, hub: Hub, adapter: ImportAdapter, topics: TopicMap, link: Link, token: str = "") -> None:
        self._hub = hub
        self._adapter = adapter
        #: The adapters of the imported devices, by local id.
        self._devices: dict[str, ImportedDevice] = {}
        self._token = token
        self._topics = topics
        self._link = link
        self._remotes: dict[str, _Remote] = {}
        self._status: dict[tuple[str, str], tuple[DeviceStatus, str]] = {}
        self._pending: dict[bytes, asyncio.Future[dict[str, Any]]] = {}
        self._pending_gateway: dict[bytes, str] = {}
        self._commanded: set[tuple[str, str]] = set()
        self._ids = itertools.count(1)
        self._early: dict[tuple[str, str], tuple[str, bytes]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        #: Imported messages refused by reason (shown in /metrics).
        self.rejected: Counter[str] = Counter()
        self.imported = 0

    # -- what the broker says ----------------------------------------------------------------

    def on_status(self, gateway: str, payload: bytes) -> bool | None:
        """A gateway's `status` (`online`/`offline`); returns whether it is online (None: unreadable).

        Going `offline` fails its pending commands and turns its devices `disconnected`.
        """
        text = payload.decode(errors="replace").strip()
        if text.startswith("{"):
            try:
                text = str(orjson.loads(text).get("state", ""))
            except (orjson.JSONDecodeError, AttributeError):
                text = ""
        if text not in ("online", "offline"):
            self.rejected["bad_status"] += 1
            return None
        remote = self._remote(gateway)
        if remote is None:
            return None
        remote.online = text == "online"
        if not remote.online:
            self._fail_pending(gateway, f"gateway {gateway!r} went offline")
        for device in remote.devices:
            self.refresh(gateway, device)
        return remote.online

    def on_devices(self, gateway: str, payload: bytes) -> None:
        """A gateway's retained device list: add the devices not imported yet."""
        try:
            listing = orjson.loads(payload)
            devices = listing["devices"]
            if not isinstance(devices, list):
                raise TypeError("devices is not a list")
        except (orjson.JSONDecodeError, KeyError, TypeError):
            self.rejected["bad_devices"] += 1
            return
        remote = self._remote(gateway)
        if remote is None:
            return
        for entry in devices:
            try:
                self._add(gateway, remote, entry)
            except (KeyError, TypeError, ValueError) as error:
                log.warning("gateway %s lists a device this gateway cannot import: %s", gateway, error)
                self.rejected["bad_devices"] += 1

    def on_availability(self, gateway: str, device: str, payload: bytes) -> None:
        """A remote device's retained availability (our `device` message)."""
        try:
            event = orjson.loads(payload)
            status, detail = event["status"], event.get("detail", "")
            if status not in _STATUSES or not isinstance(detail, str):
                raise ValueError(status)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            self.rejected["bad_availability"] += 1
            return
        self._status[(gateway, device)] = (status, detail[:256])
        self.refresh(gateway, device)

    def on_state(self, gateway: str, device: str, bus_topic: str, payload: bytes) -> None:
        """A remote sample: checked against its type, then published on our bus as `<gateway>:<topic>`."""
        local_id = imported_id(gateway, device)
        adapter = self._devices.get(local_id)
        if adapter is None:
            # Retained samples may arrive before the device list: keep the newest until it does.
            if len(self._early) < MAX_EARLY_SAMPLES or (gateway, bus_topic) in self._early:
                self._early[(gateway, bus_topic)] = (device, payload)
            else:
                self.rejected["unknown_device"] += 1
            return
        try:
            envelope = orjson.loads(payload)
            info = REGISTRY[envelope["type"]]
            message = from_plain(info.cls, envelope["data"])
            stamp = envelope.get("stamp")
            stamp = float(stamp) if isinstance(stamp, int | float) and not isinstance(stamp, bool) else None
            stream = bus_topic.split("/", 1)[1]
            check_topic(f"{local_id}/{stream}")
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError, GatewayError):
            self.rejected["bad_state"] += 1
            return
        adapter.ctx.publish(stream, message, stamp)
        self.imported += 1

    def on_reply(self, properties: Properties | None, payload: bytes) -> None:
        """The answer to one of our forwarded commands (matched by Correlation Data)."""
        correlation = getattr(properties, "CorrelationData", None) if properties is not None else None
        future = self._pending.get(correlation) if isinstance(correlation, bytes) else None
        if future is None or future.done():
            self.rejected["unmatched_reply"] += 1
            return
        try:
            result = orjson.loads(payload)
            if not isinstance(result, dict):
                raise TypeError("not an object")
        except (orjson.JSONDecodeError, TypeError):
            future.set_exception(DeviceUnavailable("the remote gateway's answer was not JSON"))
            return
        future.set_result(result)

    def broker_lost(self) -> None:
        """The broker connection dropped: every imported device is unreachable until it is back."""
        for name, remote in self._remotes.items():
            remote.online = False
            self._fail_pending(name, "the MQTT broker is unreachable")
            for device in remote.devices:
                self.refresh(name, device, "the MQTT broker is unreachable")

    # -- what our clients ask ----------------------------------------------------------------

    def imports(self, device: str) -> bool:
        """True when `device` is one this importer added (another gateway's)."""
        return device in self._devices

    async def forward(self, gateway: str, device: str, command: Command) -> dict[str, Any]:
        """Send `command` to `device` on `gateway` and return its result data, or raise its error."""
        remote = self._remotes.get(gateway)
        if remote is None or not remote.online or not self._link.connected:
            raise DeviceUnavailable(f"gateway {gateway!r} is not reachable")
        remaining = command.deadline - time.monotonic()
        if remaining < MIN_CLIENT_TIMEOUT_S:  # the remote would refuse a shorter deadline
            raise RequestTimeout("the command's deadline passed before it was sent")
        correlation = f"{self._topics.own}/{next(self._ids)}".encode()
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[correlation] = future
        self._pending_gateway[correlation] = gateway
        self._commanded.add((gateway, command.client_id))
        properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        properties.ResponseTopic = self._topics.gateway(self._topics.own, "reply")
        properties.CorrelationData = correlation
        properties.UserProperty = self._credentials(
            [(PEER_PROPERTY, self._topics.own), (CLIENT_PROPERTY, command.client_id)]
        )
        body = {"type": command.type, "data": to_plain(command.message), "timeout_s": round(remaining, 6)}
        try:
            await self._link.publish(
                self._topics.device(gateway, device, "set"),
                orjson.dumps(body),
                qos=1,
                properties=properties,
            )
            result = await future  # the router's deadline bounds the wait
        finally:
            self._pending.pop(correlation, None)
            self._pending_gateway.pop(correlation, None)
        if result.get("ok") is True:
            data = result.get("data")
            return dict(data) if isinstance(data, dict) else {}
        raise _remote_error(result.get("error"))

    async def forward_estop(self, gateway: str) -> None:
        """Ask `gateway` for an emergency stop (once for all of its devices)."""
        remote = self._remotes.get(gateway)
        if remote is None or not self._link.connected:
            return
        now = time.monotonic()
        if now - remote.last_estop < ESTOP_DEDUP_S:
            return
        remote.last_estop = now
        await self._link.publish(
            self._topics.gateway(gateway, "estop"),
            orjson.dumps({"peer": self._topics.own}),
            qos=1,
            properties=self._properties([(PEER_PROPERTY, self._topics.own)]),
        )

    def forward_release(self, gateway: str, client_id: str) -> None:
        """Our client `client_id` left: if it commanded devices of `gateway`, its leases there end."""
        if (gateway, client_id) not in self._commanded or not self._link.connected:
            return
        self._commanded.discard((gateway, client_id))
        payload = orjson.dumps({"peer": self._topics.own, "client": client_id})
        task = asyncio.create_task(self._quiet_publish(self._topics.gateway(gateway, "release"), payload))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- helpers -----------------------------------------------------------------------------

    def _credentials(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """`pairs` plus this gateway's token, when it has one."""
        return [*pairs, (TOKEN_PROPERTY, self._token)] if self._token else pairs

    def _properties(self, pairs: list[tuple[str, str]]) -> Properties:
        properties = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        properties.UserProperty = self._credentials(pairs)
        return properties

    async def _quiet_publish(self, topic: str, payload: bytes) -> None:
        try:
            await self._link.publish(
                topic, payload, qos=1, properties=self._properties([(PEER_PROPERTY, self._topics.own)])
            )
        except Exception as error:
            log.warning("MQTT publish to %s failed: %s", topic, error)

    def refresh(self, gateway: str, device: str, why: str = "") -> None:
        """Set an imported device's availability from its gateway's status and its own."""
        adapter = self._devices.get(imported_id(gateway, device))
        remote = self._remotes.get(gateway)
        if adapter is None or remote is None:
            return
        if not adapter.mirroring:
            return  # its `run` refreshes it first thing
        ctx = adapter.ctx
        if not self._link.connected:
            ctx.set_status("disconnected", why or "the MQTT broker is unreachable")
        elif not remote.online:
            ctx.set_status("disconnected", f"gateway {gateway!r} is offline")
        else:
            status, detail = self._status.get((gateway, device), ("connecting", "waiting for its availability"))
            ctx.set_status(status, f"on {gateway}: {detail}" if detail else f"on {gateway}")

    def _remote(self, gateway: str) -> _Remote | None:
        remote = self._remotes.get(gateway)
        if remote is None:
            try:
                check_device_id(gateway)
            except ValueError:
                self.rejected["bad_gateway_name"] += 1
                return None
            if len(self._remotes) >= MAX_IMPORTED_DEVICES:
                self.rejected["too_many_gateways"] += 1
                return None
            remote = self._remotes[gateway] = _Remote()
        return remote

    def _add(self, gateway: str, remote: _Remote, entry: Any) -> None:
        device = check_device_id(str(entry["id"]))
        local_id = imported_id(gateway, device)
        check_device_id(local_id)
        publishes = tuple(str(t) for t in entry.get("publishes", ()))
        accepts = tuple(str(t) for t in entry.get("accepts", ()) if t in REGISTRY)
        capabilities = entry.get("capabilities", {})
        capabilities = dict(capabilities) if isinstance(capabilities, dict) else {}
        adapter = self._devices.get(local_id)
        if adapter is not None:  # the remote's types may change with its version
            adapter.describe(publishes, accepts, capabilities)
            return
        if self._hub.device(local_id) is not None:
            return  # a device of this gateway holds the id
        if len(self._hub.devices()) >= MAX_IMPORTED_DEVICES:
            raise ValueError("too many devices")
        kind = str(entry.get("kind", "remote"))[:64]

        def build(ctx: DeviceContext, options: Any) -> Adapter[Any]:
            imported = self._adapter(ctx, gateway, device, self)
            if not isinstance(imported, Adapter):
                raise TypeError(f"an imported device's adapter must be an Adapter, not {type(imported).__name__}")
            imported.describe(publishes, accepts, capabilities)
            self._devices[local_id] = imported
            return imported

        # An imported device has no options in this gateway's config: its adapter knows where it lives.
        self._hub.add_device(DeviceConfig(local_id, kind, True, None), build)
        remote.devices.add(device)
        log.info("imported device %s from gateway %s", local_id, gateway)
        for key in [k for k, v in self._early.items() if k[0] == gateway and v[0] == device]:
            self.on_state(gateway, device, key[1], self._early.pop(key)[1])

    def _fail_pending(self, gateway: str, reason: str) -> None:
        for correlation, name in list(self._pending_gateway.items()):
            future = self._pending.get(correlation)
            if name == gateway and future is not None and not future.done():
                future.set_exception(DeviceUnavailable(reason))

    def close(self) -> None:
        """Fail every pending command and stop background publishes."""
        for future in self._pending.values():
            if not future.done():
                future.set_exception(DeviceUnavailable("the gateway is stopping"))
        for task in self._tasks:
            task.cancel()


def _remote_error(error: object) -> GatewayError:
    """The remote's `result` error as the same `GatewayError` here."""
    code, message = "device_error", "the remote gateway refused the command"
    if isinstance(error, dict):
        code = str(error.get("code", code))
        message = str(error.get("message", message))[:1024]
    try:
        error_code = ErrorCode(code)
    except ValueError:
        error_code = ErrorCode.DEVICE_ERROR
    for cls in _error_classes():
        if cls.code == error_code:
            return cls(message)
    return DeviceUnavailable(message)


def _error_classes() -> list[type[GatewayError]]:
    classes: list[type[GatewayError]] = []
    pending: list[type[GatewayError]] = [GatewayError]
    while pending:
        cls = pending.pop()
        classes.append(cls)
        pending.extend(cls.__subclasses__())
    return classes
