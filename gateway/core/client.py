"""The protocol-free client core: who a client is and what it may do, whatever wire protocol it speaks.

A face (`gateway/faces/...`) turns its protocol's requests into these calls and their answers (data,
or a raised `GatewayError`) into its protocol's replies. Everything a client holds lives here: its
authentication, its bus subscriber, its request budget, its commands in flight and, through the
command router, its leases, which end when the client leaves.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.bus import Bus, Subscriber
from gateway.commands import MIN_COMMAND_TIMEOUT_S, CommandRouter
from gateway.core.admission import Admission
from gateway.core.auth_guard import MAX_FAILURES_PER_CONNECTION, AuthGuard, Throttled
from gateway.core.config import DeviceConfig, ServerConfig
from gateway.credentials import OPEN_ACCESS, Credential, find
from gateway.errors import (
    DeviceUnavailable,
    ErrorCode,
    GatewayError,
    InternalError,
    InvalidArgument,
    Locked,
    RateLimited,
    Unauthorized,
    UnknownDevice,
)
from gateway.messages import REGISTRY, schema_of
from gateway.supervisor import AdapterFactory, DeviceHandle, Supervisor

log = logging.getLogger(__name__)

#: Patterns in one subscribe, and subscriptions one client may hold.
MAX_PATTERNS = 64
MAX_SUBSCRIPTIONS = 256
#: The command deadlines (s) and subscription rates (Hz) a client may ask for.
MIN_CLIENT_TIMEOUT_S = MIN_COMMAND_TIMEOUT_S
MAX_CLIENT_TIMEOUT_S = 600.0
MIN_RATE_HZ = 0.001
MAX_RATE_HZ = 10000.0

_client_numbers = itertools.count(1)


class FaceSession(Protocol):
    """One connection of a face, as the gateway sees it at shutdown and in metrics."""

    @property
    def client(self) -> Client:
        """The client core behind the connection."""

    async def close(self, code: ErrorCode, reason: str) -> None:
        """Say goodbye in the face's own protocol, then close the connection."""

    def abort(self) -> None:
        """Drop the connection at once and forget the client (when `close` did not finish in time)."""


class AdminOps(Protocol):
    """What only an admin token may ask of the gateway; the composition root hands it to the hub."""

    async def reload_op(self) -> dict[str, Any]:
        """Apply the configuration file as it is now; its report, or `InvalidArgument` naming every problem."""

    async def scan_op(
        self,
        families: tuple[str, ...] | None,
        timeout_s: float | None,
        serial: tuple[str, ...],
        kortex: tuple[str, ...],
    ) -> dict[str, Any]:
        """Look for attached devices (`hwgateway scan`); the findings, the families skipped, the config text."""

    async def pair_op(self, kind: str, address: str, timeout_s: float | None, passkey: int | None) -> dict[str, Any]:
        """Pair a Bluetooth device through BlueZ (`hwgateway pair`); the outcome with each step taken."""

    async def device_options_op(self, device: str) -> dict[str, Any]:
        """A configured device's options as running, which of them are overridden, and the overrides file."""

    async def configure_device_op(self, device: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """Set (None: reset) options of a device, checked as `check-config` checks, then reload; its report."""


@dataclass
class Hub:
    """What every client shares: the bus, the devices and the server's limits."""

    bus: Bus
    supervisor: Supervisor
    router: CommandRouter
    server: ServerConfig
    credentials: tuple[Credential, ...]
    sessions: set[FaceSession] = field(default_factory=set)
    auth_guard: AuthGuard = field(default_factory=AuthGuard)
    #: The admin operations (reload); None where the gateway offers none (then they are `unavailable`).
    admin: AdminOps | None = None

    def devices(self) -> list[DeviceHandle]:
        """Every device's handle, for faces that read devices with no client of their own (MQTT's export).

        Read-only by intent: what a face may change goes through a `Client`'s `command`, `lock` and
        `unlock`, never through the supervisor.
        """
        return list(self.supervisor.devices.values())

    def device(self, device: str) -> DeviceHandle | None:
        """One device's handle (None when there is no such device)."""
        return self.supervisor.devices.get(device)

    def add_device(self, config: DeviceConfig, factory: AdapterFactory) -> DeviceHandle:
        """Add a device at run time, supervised like a configured one (the MQTT face's imported devices)."""
        return self.supervisor.add(config, factory)


class Client:
    """One connected client of any face.

    `id` names the client in logs, metrics and leases (`c1`, `c2`, ...); `peer` is its source
    address (an IP address without the port, or `unix`), which auth throttling counts by.
    """

    def __init__(self, hub: Hub, peer: str, encoding: str) -> None:
        self.hub = hub
        self.peer = peer
        self.auth_failures = 0
        self.id = f"c{next(_client_numbers)}"
        self.subscriber = Subscriber(self.id, encoding)
        #: What the client's token grants (None until it authenticates; everything with no tokens set).
        self.credential: Credential | None = None if hub.credentials else OPEN_ACCESS
        self.connected_at = time.time()
        #: Request rate, refusal budget and auth deadline: the same rules on every face.
        self.admission = Admission(hub.server)
        self._commands: set[asyncio.Task[dict[str, Any]]] = set()
        self._joined = False
        self._attached = False

    # -- lifecycle ---------------------------------------------------------------------------

    def join(self) -> None:
        """Start receiving device events, beginning with every device's availability, once authenticated.

        Call it when the connection is ready and again after a successful `authenticate`, once the
        face has queued its answer (so the answer goes out first); later calls do nothing.
        """
        self._joined = True
        if self.authenticated and not self._attached:
            self._attached = True
            self.hub.bus.attach(self.subscriber)
            for handle in self.hub.supervisor.devices.values():
                self.subscriber.offer(handle.event())

    def leave(self) -> None:
        """Forget the client: drop its subscriptions and what it had unsent, end its leases."""
        if not self._joined:
            return
        self._joined = False
        self.hub.bus.detach(self.subscriber)
        self._release_locks()
        self.hub.router.release(self.id)

    # -- admission ---------------------------------------------------------------------------

    def admit(self) -> None:
        """Spend one request of the client's budget; raise `RateLimited` when it is spent."""
        self.admission.admit()

    @property
    def auth_exhausted(self) -> bool:
        """True once the client has presented too many wrong tokens: its face closes the connection."""
        return self.auth_failures >= MAX_FAILURES_PER_CONNECTION

    @property
    def authenticated(self) -> bool:
        """True once the client presented a valid token (always, with no tokens configured)."""
        return self.credential is not None

    async def authenticate(self, token: str, urgent: bool = False) -> None:
        """Check `token` against the configured ones; raise `Unauthorized` when wrong.

        Digests are compared in constant time, and attempts are throttled per source address
        (`AuthGuard`); `RateLimited` when too many attempts from the address already wait. An
        `urgent` check (an emergency stop's token) waits behind nothing.
        """
        credentials = self.hub.credentials
        if not credentials:
            return
        found: list[Credential] = []

        def check() -> bool:
            match = find(credentials, token)
            if match is not None:
                found.append(match)
            return match is not None

        guard = self.hub.auth_guard
        try:
            accepted = guard.check_now(self.peer, check) if urgent else await guard.attempt(self.peer, check)
        except Throttled as throttled:
            raise RateLimited(f"{throttled}; try again later") from None
        if not accepted:
            self.auth_failures += 1
            raise Unauthorized("token refused")
        self.credential = found[0]
        log.info("client %s authenticated as %s (%s)", self.id, found[0].name, found[0].role)

    def signed_in(self) -> dict[str, Any]:
        """Who the client is signed in as: the token's config `name`, its `role` and its `devices` patterns.

        Empty before authentication. A gateway without tokens signs everyone in as `open`, `admin` on `*`.
        """
        credential = self.credential
        if credential is None:
            return {}
        return {"name": credential.name, "role": credential.role, "devices": list(credential.devices)}

    def _may_control(self, device: str, what: str) -> None:
        """Raise `Unauthorized` unless the client's role and device patterns let it control `device`."""
        credential = self.credential
        if credential is None:
            raise Unauthorized(f"{what}: authenticate first")
        if not credential.permits(device):
            reason = "a read-only token" if credential.role == "read" else "a token whose devices do not include it"
            raise Unauthorized(f"{what} on {device!r}: not allowed for {reason}")

    def _check_lock(self, device: str) -> None:
        handle = self.hub.supervisor.devices.get(device)
        if handle is not None and handle.locked_by not in (None, self.id):
            raise Locked(f"device {device!r} is locked by client {handle.locked_by}")

    # -- reads -------------------------------------------------------------------------------

    def list_devices(self) -> list[dict[str, Any]]:
        """Every configured device with its availability, message types, topics and capabilities."""
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
                    "locked_by": handle.locked_by,
                }
            )
        return devices

    def devices(self) -> list[DeviceHandle]:
        """Every configured device's handle (its id, kind, status and lock holder), for faces to read.

        Faces read devices here, never through the supervisor: what they may change goes through
        `command`, `lock` and `unlock`.
        """
        return self.hub.devices()

    def device(self, device: str) -> DeviceHandle | None:
        """One device's handle (None when there is no such device)."""
        return self.hub.device(device)

    def topics(self) -> list[tuple[str, str]]:
        """Every known topic (published at least once) with the type of its latest sample."""
        bus = self.hub.bus
        known = []
        for topic in bus.topics():
            sample = bus.latest(topic)
            if sample is not None:
                known.append((topic, sample.type))
        return known

    def describe(self, type_name: str | None) -> dict[str, Any]:
        """A message type's schema, constants, doc and whether a read-only token may send it (`read_only`).

        Every type's name and kind when `type_name` is None.
        """
        if type_name is None:
            return {"types": [{"type": name, "kind": info.kind} for name, info in sorted(REGISTRY.items())]}
        info = REGISTRY.get(type_name)
        if info is None:
            raise InvalidArgument(f"describe.type: no message type {type_name!r} (describe without 'type' lists them)")
        described: dict[str, Any] = {
            "type": type_name,
            "kind": info.kind,
            "doc": info.doc,
            "schema": schema_of(info.cls),
            "constants": dict(info.constants),
            "read_only": info.read_only,
        }
        if info.response is not None:
            described["response_schema"] = schema_of(info.response)
        return described

    # -- subscriptions -----------------------------------------------------------------------

    def subscribe(
        self, patterns: Iterable[str], max_rate_hz: float | None, newest: bool = True
    ) -> tuple[int, list[str]]:
        """Subscribe to topic `patterns` at most `max_rate_hz` per topic (None: every sample).

        Returns the subscription id and the topics it matches now; their latest samples are queued at
        once unless `newest` is False.
        """
        patterns = list(patterns)
        if len(patterns) > MAX_PATTERNS:
            raise InvalidArgument(f"subscribe.topics: more than {MAX_PATTERNS} patterns")
        if len(self.subscriber.subscriptions) >= MAX_SUBSCRIPTIONS:
            raise InvalidArgument(f"subscribe: a client may hold at most {MAX_SUBSCRIPTIONS} subscriptions")
        if max_rate_hz is not None and not MIN_RATE_HZ <= max_rate_hz <= MAX_RATE_HZ:
            raise InvalidArgument(
                f"subscribe.max_rate_hz: expected a number in [{MIN_RATE_HZ}, {MAX_RATE_HZ}], got {max_rate_hz}"
            )
        subscription = self.hub.bus.subscribe(self.subscriber, patterns, max_rate_hz, newest)
        # The bus has just routed every published topic this subscription matches: asking each
        # topic again would cost topics x patterns per subscribe.
        matched = sorted(self.hub.bus.matched_topics(self.subscriber, subscription))
        return subscription, matched

    def unsubscribe(self, subscription: int) -> None:
        """End one subscription of this client; `InvalidArgument` when it has no such id."""
        if not self.hub.bus.unsubscribe(self.subscriber, subscription):
            raise InvalidArgument(f"unsubscribe.subscription: no subscription {subscription} on this session")

    def may_see(self, device: str) -> bool:
        """True when the client's token sees `device` (its device patterns match; every device with no tokens)."""
        return self.credential is not None and self.credential.sees(device)

    # -- commands ----------------------------------------------------------------------------

    async def read(self, device: str, type_name: str, data: object) -> dict[str, Any]:
        """Run a read-only service (registered with `read_only`) on `device` and return its result data.

        `InvalidArgument` when `type_name` is not one; otherwise as `command` (see there).
        """
        info = REGISTRY.get(type_name)
        if info is None or not info.read_only:
            raise InvalidArgument(f"read: {type_name!r} is not a read-only service")
        return await self.command(device, type_name, data, None)

    def command(
        self, device: str, type_name: str, data: object, timeout_s: float | None
    ) -> asyncio.Task[dict[str, Any]]:
        """Start one command on `device`; the task gives its result data or raises a `GatewayError`.

        `timeout_s` (seconds, in [`MIN_CLIENT_TIMEOUT_S`, `MAX_CLIENT_TIMEOUT_S`]; None: the server's default) is the
        deadline. Raises `RateLimited` at once when the client has too many commands in flight.
        A read-only service (`read_only` in the registry: a variable, a description) is answered under
        another client's lock and for every role, on the devices the client's token sees: watching
        takes no lock, so a teacher watches every robot while students hold theirs.
        """
        server = self.hub.server
        info = REGISTRY.get(type_name)
        if info is not None and info.read_only:
            if not self.may_see(device):
                raise Unauthorized(f"command on {device!r}: not allowed for a token whose devices do not include it")
        else:
            self._may_control(device, "command")
            self._check_lock(device)
        if timeout_s is not None and not MIN_CLIENT_TIMEOUT_S <= timeout_s <= MAX_CLIENT_TIMEOUT_S:
            raise InvalidArgument(
                f"command.timeout_s: expected a number in [{MIN_CLIENT_TIMEOUT_S}, {MAX_CLIENT_TIMEOUT_S}],"
                f" got {timeout_s}"
            )
        if len(self._commands) >= server.max_inflight_commands:
            raise RateLimited(f"more than {server.max_inflight_commands} commands in flight")
        task = asyncio.create_task(self._run_command(device, type_name, data, timeout_s or server.command_timeout_s))
        self._commands.add(task)
        task.add_done_callback(self._commands.discard)
        return task

    async def _run_command(self, device: str, type_name: str, data: object, timeout: float) -> dict[str, Any]:
        try:
            return await self.hub.router.execute(device, type_name, data, self.id, timeout)
        except GatewayError:
            raise
        except Exception:
            log.exception("client %s: command %s on %s failed", self.id, type_name, device)
            raise InternalError("internal error; see the gateway's log") from None

    # -- locks -------------------------------------------------------------------------------

    def lock(self, device: str) -> str:
        """Take `device`'s exclusive control lock (again: no change); return its holder, this client.

        While it is held, other clients' commands to the device are answered `locked`; `estop`
        still works for everyone. The lock ends with `unlock` or when this client leaves.
        """
        handle = self._handle(device)
        self._may_control(device, "lock")
        self._check_lock(device)
        handle.set_lock(self.id)
        return self.id

    def unlock(self, device: str, force: bool = False) -> None:
        """Release `device`'s lock; `force` (admin only) ends another client's lock."""
        handle = self._handle(device)
        self._may_control(device, "unlock")
        if handle.locked_by is None:
            return
        if handle.locked_by != self.id:
            if not force:
                raise Locked(f"device {device!r} is locked by client {handle.locked_by}, not by this one")
            if self.credential is None or not self.credential.admin:
                raise Unauthorized(f"unlock of {device!r} with force: only an admin token may end another's lock")
            log.warning("client %s ended client %s's lock of %s", self.id, handle.locked_by, device)
        handle.set_lock(None)

    def _handle(self, device: str) -> DeviceHandle:
        handle = self.hub.supervisor.devices.get(device)
        if handle is None:
            known = ", ".join(sorted(self.hub.supervisor.devices)) or "none"
            raise UnknownDevice(f"no device {device!r} (devices: {known})")
        return handle

    def _release_locks(self) -> None:
        for handle in self.hub.supervisor.devices.values():
            if handle.locked_by == self.id:
                handle.set_lock(None)

    def _require_admin(self, what: str) -> AdminOps:
        """The hub's admin operations, for an admin token only (`Unauthorized` otherwise)."""
        credential = self.credential
        if credential is None:
            raise Unauthorized(f"{what}: authenticate first")
        if not credential.admin:
            raise Unauthorized(f"{what}: only an admin token may ask it (this token's role: {credential.role})")
        if self.hub.admin is None:
            raise DeviceUnavailable(f"{what}: this gateway offers no admin operations")
        return self.hub.admin

    async def reload(self) -> dict[str, Any]:
        """Apply the gateway's configuration file again (admin only); what it did (`gateway.reload.ReloadReport`).

        An invalid file changes nothing and is `InvalidArgument`, with every problem on a line of its own.
        """
        admin = self._require_admin("reload")
        log.warning("client %s asked for a reload of the configuration", self.id)
        return await admin.reload_op()

    async def scan(
        self,
        families: tuple[str, ...] | None,
        timeout_s: float | None,
        serial: tuple[str, ...],
        kortex: tuple[str, ...],
    ) -> dict[str, Any]:
        """Look for attached devices (admin only), as `hwgateway scan`; what was found and its config.

        `families` (None: all) each look for `timeout_s` s; `serial` are more ports, `kortex` arm
        addresses. The devices the gateway drives already are not disturbed.
        """
        admin = self._require_admin("scan")
        log.info("client %s asked for a scan", self.id)
        return await admin.scan_op(families, timeout_s, serial, kortex)

    async def pair(self, kind: str, address: str, timeout_s: float | None, passkey: int | None) -> dict[str, Any]:
        """Pair a Wii Remote (`kind` wiimote, by its sync button) or a BLE device (admin only), as `hwgateway pair`.

        One pairing window of `timeout_s` s; the result says `paired`, `refused` or `timed_out`, with
        each step taken. BlueZ missing, no adapter, the adapter off, no permission: `DeviceUnavailable`
        saying what to do.
        """
        admin = self._require_admin("pair")
        log.warning("client %s asked for a %s pairing %s", self.id, kind, address or "(the first Wii Remote seen)")
        return await admin.pair_op(kind, address, timeout_s, passkey)

    async def device_options(self, device: str) -> dict[str, Any]:
        """A configured device's options as running (admin only); secrets are named, never sent."""
        admin = self._require_admin("device_options")
        return await admin.device_options_op(device)

    async def configure_device(self, device: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """Change options of a device (admin only): each value set, None back to the file's; then a reload.

        The result is layered over the configuration file and checked whole first: a problem changes
        nothing and is `InvalidArgument`, every problem on a line. Returns the reload's report.
        """
        admin = self._require_admin("configure_device")
        log.warning("client %s changes the options of %s: %s", self.id, device, ", ".join(sorted(options)))
        return await admin.configure_device_op(device, options)

    async def estop(self) -> list[dict[str, Any]]:
        """Stop every device's actuators at once (never rate-limited); each device's outcome."""
        log.warning("client %s triggered an emergency stop", self.id)
        return await self.hub.router.estop(self.id)
