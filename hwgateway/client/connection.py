"""The asyncio client: one connection to a gateway, kept up with backoff, with subscriptions that survive it.

Layering: `transports` moves protocol messages; `Gateway` matches results to requests by id, routes
pushes to subscriptions, authenticates and re-subscribes after every reconnect. See docs/client.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
from collections.abc import Generator, Mapping, Sequence
from types import TracebackType
from typing import Any

from gateway.topics import matches, parse_pattern
from hwgateway.client.errors import ConnectionLost, GatewayError, GoingAway, RequestTimeout, Unauthorized, error_from
from hwgateway.client.feed import Feed
from hwgateway.client.models import DeviceEvent, DeviceInfo, EstopOutcome, Sample
from hwgateway.client.transports import Endpoint, Transport, open_transport, parse_url

__all__ = ["DeviceEvents", "Gateway", "Subscription", "connect"]

log = logging.getLogger(__name__)

#: Extra seconds a command waits for its result past its own `timeout_s` (the gateway answers `timeout` itself).
COMMAND_GRACE_S = 2.0
#: Seconds a reload may take: devices that stop go through their safe state, each bounded to a few seconds.
RELOAD_WAIT_S = 30.0


class Subscription:
    """Samples of the topics matching `patterns`, as an async iterator of `Sample`.

    Iterating subscribes on first use; `async with` subscribes on entry and unsubscribes on exit.
    After a reconnect the subscription is renewed (the gateway re-sends each topic's latest sample,
    so a `seq` may repeat). At most `queue_size` samples wait unread; older ones are dropped and
    counted in `dropped`. Iteration ends when the client closes, and raises `ConnectionLost` when the
    connection is lost for good (reconnect off, or a refused token).
    """

    def __init__(self, gateway: Gateway, patterns: Sequence[str], max_rate_hz: float | None, queue_size: int) -> None:
        if not patterns:
            raise ValueError("subscribe needs at least one topic pattern")
        for pattern in patterns:
            parse_pattern(pattern)  # InvalidArgument before anything is sent
        self.patterns = tuple(patterns)
        self.max_rate_hz = max_rate_hz
        #: The gateway's subscription id on the current connection (None until subscribed).
        self.id: int | None = None
        #: Topics that matched when the gateway last confirmed the subscription.
        self.topics: tuple[str, ...] = ()
        self._gateway = gateway
        self._feed: Feed[Sample] = Feed(queue_size)
        self._started = False

    @property
    def dropped(self) -> int:
        """Samples dropped because more than `queue_size` waited unread."""
        return self._feed.dropped

    def wants(self, topic: str) -> bool:
        """True when `topic` matches one of the patterns."""
        return any(matches(pattern, topic) for pattern in self.patterns)

    async def start(self) -> Subscription:
        """Subscribe now (idempotent); raise the gateway's error when it refuses."""
        if not self._started:
            self._started = True
            self._gateway._subscriptions.add(self)
            try:
                await self._renew(wait_ready=True)
            except BaseException:
                self._gateway._subscriptions.discard(self)
                self._started = False
                raise
        return self

    async def _renew(self, wait_ready: bool) -> None:
        fields: dict[str, Any] = {"topics": list(self.patterns)}
        if self.max_rate_hz is not None:
            fields["max_rate_hz"] = self.max_rate_hz
        data = await self._gateway._call("subscribe", fields, wait_ready=wait_ready)
        self.id = int(data["subscription"])
        self.topics = tuple(data.get("topics", ()))

    def _deliver(self, sample: Sample) -> None:
        self._feed.put(sample)

    def _end(self, error: BaseException | None) -> None:
        self._feed.end(error)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Sample:
        if not self._started:
            await self.start()
        return await self._feed.get()

    async def aclose(self) -> None:
        """Unsubscribe (when still connected) and end the iteration."""
        self._gateway._subscriptions.discard(self)
        self._feed.end()
        if self.id is not None and self._gateway.connected:
            with contextlib.suppress(GatewayError, ConnectionLost, TimeoutError):
                await self._gateway._call("unsubscribe", {"subscription": self.id}, wait_ready=False)
        self.id = None

    async def __aenter__(self) -> Subscription:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class DeviceEvents:
    """Availability changes (`DeviceEvent`) as an async iterator; starts with every device's current state."""

    def __init__(self, gateway: Gateway, queue_size: int) -> None:
        self._gateway = gateway
        self._feed: Feed[DeviceEvent] = Feed(queue_size)
        for event in gateway.device_status.values():
            self._feed.put(event)
        gateway._device_feeds.add(self)

    def _deliver(self, event: DeviceEvent) -> None:
        self._feed.put(event)

    def _end(self, error: BaseException | None) -> None:
        self._feed.end(error)

    def __aiter__(self) -> DeviceEvents:
        return self

    async def __anext__(self) -> DeviceEvent:
        return await self._feed.get()

    def close(self) -> None:
        """Stop receiving events."""
        self._gateway._device_feeds.discard(self)
        self._feed.end()


class Gateway:
    """A client of one hwgateway, over WebSocket (``ws://``) or msgpack (``tcp://``, ``unix:``).

    Create it with `connect`. Requests wait up to `request_timeout_s` seconds (also for a reconnect
    in progress); commands wait for their own deadline. With `reconnect`, a lost connection is
    re-established with exponential backoff from `backoff_initial_s` to `backoff_max_s` seconds
    (with jitter), the token is presented again and every open subscription is renewed; requests in
    flight when the connection dropped raise `ConnectionLost` (a command is never re-sent on its own).
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        reconnect: bool = True,
        backoff_initial_s: float = 0.1,
        backoff_max_s: float = 5.0,
        request_timeout_s: float = 10.0,
        typed: bool = True,
    ) -> None:
        if not 0 < backoff_initial_s <= backoff_max_s:
            raise ValueError("backoff needs 0 < backoff_initial_s <= backoff_max_s")
        self.url = url
        self.endpoint: Endpoint = parse_url(url)
        self.token = token
        self.reconnect = reconnect
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.request_timeout_s = request_timeout_s
        self.typed = typed
        #: The gateway's `hello` of the current (or last) connection.
        self.hello: dict[str, Any] = {}
        #: The latest availability of every device, by id (kept up to date by `device` pushes).
        self.device_status: dict[str, DeviceEvent] = {}
        #: How many times the connection was re-established.
        self.reconnects = 0
        self._transport: Transport | None = None
        self._reader: asyncio.Task[BaseException | None] | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._subscriptions: set[Subscription] = set()
        self._device_feeds: set[DeviceEvents] = set()
        #: Devices this client locked: locked again after a reconnect (a lock ends with its connection).
        self._locks: set[str] = set()
        self._closed = False
        self._failure: BaseException | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """True while a connection is up and authenticated."""
        return self._ready.is_set()

    async def open(self) -> Gateway:
        """Connect for the first time; raise `ConnectionLost` or `Unauthorized` when that fails."""
        if self._supervisor is None:
            await self._establish(reconnecting=False)
            self._supervisor = asyncio.create_task(self._supervise(), name="hwgateway-client")
        return self

    async def close(self) -> None:
        """Close the connection; subscriptions end, pending requests raise `ConnectionLost`."""
        self._closed = True
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        await self._drop_connection(ConnectionLost("client closed"))
        self._finish(None)

    async def __aenter__(self) -> Gateway:
        return await self.open()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __await__(self) -> Generator[Any, None, Gateway]:
        return self.open().__await__()

    async def _establish(self, reconnecting: bool) -> None:
        transport = await open_transport(self.endpoint)
        try:
            async with asyncio.timeout(self.request_timeout_s):
                hello = await transport.receive()
            if hello.get("op") != "hello":
                raise ConnectionLost(f"expected hello first, got {hello.get('op')!r}")
            self.hello = hello
            self._transport = transport
            self._reader = asyncio.create_task(self._read(transport), name="hwgateway-client-reader")
            if reconnecting:
                self.reconnects += 1
            if hello.get("auth_required"):
                if not self.token:
                    raise Unauthorized("the gateway requires a token (connect(url, token=...) or HWGW_TOKEN)")
                await self._call("auth", {"token": self.token}, wait_ready=False)
            for subscription in list(self._subscriptions):
                await subscription._renew(wait_ready=False)
            for device in sorted(self._locks):
                try:
                    await self._call("lock", {"device": device}, wait_ready=False)
                except GatewayError as error:  # taken by another client meanwhile, or gone from the config
                    log.warning("could not lock %s again after reconnecting: %s", device, error)
                    self._locks.discard(device)
        except TimeoutError:
            await self._drop_connection(ConnectionLost("the gateway did not answer in time"))
            raise ConnectionLost(f"{self.url}: no hello or answer within {self.request_timeout_s} s") from None
        except BaseException as error:
            await self._drop_connection(error if isinstance(error, ConnectionLost) else ConnectionLost(str(error)))
            if transport is not self._transport:
                await transport.close()
            raise
        self._ready.set()

    async def _drop_connection(self, error: BaseException) -> None:
        self._ready.clear()
        transport, self._transport = self._transport, None
        reader, self._reader = self._reader, None
        if reader is not None and reader is not asyncio.current_task():
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        if transport is not None:
            await transport.close()
        self._fail_pending(error)

    def _fail_pending(self, error: BaseException) -> None:
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(error)

    def _finish(self, error: BaseException | None) -> None:
        self._failure = error or ConnectionLost("client closed")
        for subscription in list(self._subscriptions):
            subscription._end(error)
        self._subscriptions.clear()
        for feed in list(self._device_feeds):
            feed._end(error)
        self._device_feeds.clear()

    async def _supervise(self) -> None:
        while True:
            reader = self._reader
            assert reader is not None
            reason = await asyncio.shield(reader)
            lost = reason if reason is not None else ConnectionLost("connection ended")
            log.info("connection to %s lost: %s", self.url, lost)
            await self._drop_connection(lost if isinstance(lost, ConnectionLost) else ConnectionLost(str(lost)))
            if not self.reconnect:
                self._finish(ConnectionLost(f"connection to {self.url} lost: {lost}"))
                return
            delay = self.backoff_initial_s
            while True:
                await asyncio.sleep(delay * random.uniform(0.8, 1.2))
                try:
                    await self._establish(reconnecting=True)
                except Unauthorized as error:
                    self._finish(error)
                    return
                except (ConnectionLost, GatewayError, OSError) as error:
                    log.debug("reconnect to %s failed: %s", self.url, error)
                    delay = min(delay * 2, self.backoff_max_s)
                    continue
                log.info("reconnected to %s", self.url)
                break

    async def _read(self, transport: Transport) -> BaseException | None:
        """Route every message until the connection ends; return why it ended."""
        try:
            while True:
                message = await transport.receive()
                op = message.get("op")
                if op == "result":
                    future = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
                    if future is not None and not future.done():
                        future.set_result(message)
                elif op == "state":
                    self._route_sample(message)
                elif op == "device":
                    event = DeviceEvent.from_wire(message)
                    self.device_status[event.device] = event
                    for feed in list(self._device_feeds):
                        feed._deliver(event)
                elif op == "close":
                    code, reason = message.get("code"), message.get("reason", "")
                    if code == "going_away":
                        return GoingAway(str(reason))
                    return ConnectionLost(f"closed by the gateway: {code}: {reason}")
        except ConnectionLost as error:
            return error

    def _route_sample(self, message: Mapping[str, Any]) -> None:
        topic = str(message.get("topic", ""))
        takers = [subscription for subscription in self._subscriptions if subscription.wants(topic)]
        if takers:
            sample = Sample.from_wire(message, typed=self.typed)
            for subscription in takers:
                subscription._deliver(sample)

    # -- requests ----------------------------------------------------------------------------------

    async def _call(
        self, op: str, fields: Mapping[str, Any], *, timeout_s: float | None = None, wait_ready: bool = True
    ) -> dict[str, Any]:
        """Send one request and return its result's data; raise the gateway's error for a failed result."""
        wait = self.request_timeout_s if timeout_s is None else timeout_s
        if wait_ready and not self._ready.is_set():
            if self._closed or self._supervisor is None or self._supervisor.done():
                raise self._failure or ConnectionLost("not connected (call open() or use `async with connect(...)`)")
            try:
                async with asyncio.timeout(self.request_timeout_s):
                    await self._ready.wait()
            except TimeoutError:
                raise ConnectionLost(f"not connected to {self.url} (reconnecting)") from None
        transport = self._transport
        if transport is None:
            raise ConnectionLost(f"not connected to {self.url}")
        request_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            await transport.send({"op": op, "id": request_id, **fields})
            async with asyncio.timeout(wait):
                answer = await future
        except TimeoutError:
            raise RequestTimeout(f"{op}: no answer from the gateway within {wait} s") from None
        finally:
            self._pending.pop(request_id, None)
        if not answer.get("ok"):
            raise error_from(answer.get("error"))
        data = answer.get("data")
        return data if isinstance(data, dict) else {}

    async def ping(self) -> float:
        """Round trip to the gateway; return its clock (seconds since the epoch)."""
        data = await self._call("ping", {})
        return float(data["time"])

    async def devices(self) -> list[DeviceInfo]:
        """Every enabled device of the gateway's config, in config order."""
        data = await self._call("list_devices", {})
        return [DeviceInfo.from_wire(entry) for entry in data.get("devices", ())]

    async def describe(self, type: str | None = None) -> dict[str, Any]:
        """Without `type`: every type and its kind; with it: its doc, JSON Schema and constants."""
        return await self._call("describe", {} if type is None else {"type": type})

    def subscribe(self, *patterns: str, max_rate_hz: float | None = None, queue_size: int = 1024) -> Subscription:
        """Samples of the topics matching `patterns` (``*``: one segment, ``**``: any), at most `max_rate_hz` each."""
        return Subscription(self, patterns, max_rate_hz, queue_size)

    async def command(
        self, device: str, type: str, data: Mapping[str, Any] | None = None, *, timeout_s: float | None = None
    ) -> dict[str, Any]:
        """Send a command; return its result data, or raise its error (`InvalidArgument`, `DeviceUnavailable`, ...).

        `timeout_s` (0-600 s) is the gateway's deadline for the device; without it the gateway's
        `server.command_timeout_s` applies (5 s by default).
        """
        fields: dict[str, Any] = {"device": device, "type": type, "data": dict(data or {})}
        if timeout_s is not None:
            fields["timeout_s"] = timeout_s
        wait = (timeout_s if timeout_s is not None else max(self.request_timeout_s, 5.0)) + COMMAND_GRACE_S
        return await self._call("command", fields, timeout_s=wait)

    async def lock(self, device: str) -> str:
        """Take `device`'s exclusive control lock (others' commands are then `Locked`); return the holder's session.

        The lock ends when this client unlocks it or disconnects; after a reconnect it is taken again.
        """
        data = await self._call("lock", {"device": device})
        self._locks.add(device)
        return str(data.get("locked_by"))

    async def unlock(self, device: str, *, force: bool = False) -> None:
        """Give `device`'s lock back; `force` ends another client's lock (admin tokens only)."""
        await self._call("unlock", {"device": device, "force": True} if force else {"device": device})
        self._locks.discard(device)

    async def estop(self) -> list[EstopOutcome]:
        """Stop every device's actuators at once; return what each device did."""
        data = await self._call("estop", {})
        return [
            EstopOutcome(str(entry.get("device", "")), bool(entry.get("ok")), str(entry.get("error", "")))
            for entry in data.get("devices", ())
        ]

    async def reload(self) -> dict[str, Any]:
        """Have the gateway apply its configuration file again (admin tokens only); return what it did.

        The result lists the devices `added`, `removed`, `restarted` (each through its safe state, whose
        outcome is in `safe_states`) and `unchanged`, the keys `applied` and those whose change needs a
        restart (`restart_needed`), and the file's `warnings`. An invalid file changes nothing: the
        error (`InvalidArgument`) names every problem, one per line.
        """
        return await self._call("reload", {}, timeout_s=max(self.request_timeout_s, RELOAD_WAIT_S))

    async def device_options(self, device: str) -> dict[str, Any]:
        """A configured device's options as running (admin tokens only).

        The result has every option's value in `options` (secrets, named in `secret`, as null), the
        names `overridden` by earlier edits, and the overrides `file` that holds those edits.
        """
        return await self._call("device_options", {"device": device})

    async def configure_device(self, device: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """Change options of `device` (admin tokens only): each value set, None back to the config file's.

        The gateway checks the whole configuration with the change first; a problem changes nothing
        and raises `InvalidArgument` naming every problem. Otherwise it keeps the change in its
        `[server] device_overrides` file and reloads: the result is the reload's (see `reload`).
        """
        fields = {"device": device, "options": dict(options)}
        return await self._call("configure_device", fields, timeout_s=max(self.request_timeout_s, RELOAD_WAIT_S))

    async def scan(
        self,
        *,
        families: Sequence[str] | None = None,
        timeout_s: float | None = None,
        serial: Sequence[str] = (),
        kortex: Sequence[str] = (),
    ) -> dict[str, Any]:
        """Have the gateway look for attached devices (admin tokens only), as `hwgateway scan` does.

        `families` of serial, gamepad, ble, wiimote (None: all); `timeout_s` (0.5-60 s) each looks;
        `serial` more ports, `kortex` arm addresses (HOST[:PORT]). The result has `findings` (kind, id,
        address, summary, options, notes), `skipped` families with why, and `config`: the TOML text.
        """
        fields: dict[str, Any] = {"serial": list(serial), "kortex": list(kortex)}
        if families is not None:
            fields["families"] = list(families)
        if timeout_s is not None:
            fields["timeout_s"] = timeout_s
        wait = (timeout_s or 4.0) + RELOAD_WAIT_S
        return await self._call("scan", fields, timeout_s=wait)

    async def pair(
        self,
        address: str = "",
        *,
        kind: str = "wiimote",
        timeout_s: float | None = None,
        passkey: int | None = None,
    ) -> dict[str, Any]:
        """Have the gateway pair a Bluetooth device through BlueZ (admin tokens only), as `hwgateway pair` does.

        `kind` wiimote (by its red sync button; `address` "" for the first one seen) or ble (by
        `address`); one pairing window of `timeout_s` (1-120 s, default 30); `passkey` the number a BLE
        device shows and asks to be typed. The result has `outcome` (paired, refused, timed_out),
        `message`, `address`, `name`, `paired`, `trusted`, `connected`, the `steps` taken and `config`
        (a paired Wii Remote's `[devices.<id>]` table). BlueZ unusable here: `DeviceUnavailable`.
        """
        fields: dict[str, Any] = {"kind": kind, "address": address}
        if timeout_s is not None:
            fields["timeout_s"] = timeout_s
        if passkey is not None:
            fields["passkey"] = passkey
        wait = (timeout_s or 30.0) + RELOAD_WAIT_S
        return await self._call("pair", fields, timeout_s=wait)

    def device_events(self, queue_size: int = 1024) -> DeviceEvents:
        """Availability changes, starting with every device's latest known state."""
        return DeviceEvents(self, queue_size)


def connect(
    url: str = "ws://127.0.0.1:8470/ws",
    *,
    token: str | None = None,
    reconnect: bool = True,
    backoff_initial_s: float = 0.1,
    backoff_max_s: float = 5.0,
    request_timeout_s: float = 10.0,
    typed: bool = True,
) -> Gateway:
    """A client for the gateway at `url`, used with ``async with`` (or awaited, then closed with `Gateway.close`).

    `url` is ``ws://host:port/ws`` (JSON over WebSocket), ``tcp://host:port`` or
    ``unix:/path/to.sock`` (msgpack). `token` is presented when the gateway asks for one.
    `typed` builds each sample's dataclass (`Sample.message`). See `Gateway` for the rest.
    """
    return Gateway(
        url,
        token=token,
        reconnect=reconnect,
        backoff_initial_s=backoff_initial_s,
        backoff_max_s=backoff_max_s,
        request_timeout_s=request_timeout_s,
        typed=typed,
    )
