"""A device of another gateway, shown here as `<gateway>:<device>` and driven over the MQTT federation.

The MQTT face's importer builds one per device another gateway lists (the composition root hands
it `RemoteDevice.imported`), so every face sees it like a local device. Its samples and
availability come from the importer; its commands, e-stop and client releases go back through it
(`Federation`). What it publishes and accepts is the remote device's, set per instance.

Leases: the remote gateway holds the leases of what our clients command there (its adapters follow
the core's lease rule). Here a `RemoteDevice` leases itself to each client that commanded it
(`gateway.core.lease`, keyed by client id): when that client leaves, its lease ends and the remote
is sent `release` for it, so its leases there end too. An estop is forwarded as one; at shutdown
and when the broker or the remote goes, the remote ends our clients' leases itself (our `status`
goes `offline`, or its own link is lost).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from gateway.core.adapter import Adapter, Command, DeviceContext
from gateway.core.lease import Lease, LeaseEnd, Leases


@dataclass(frozen=True, slots=True)
class RemoteOptions:
    """Where an imported device lives: its gateway and its id there."""

    gateway: str
    device: str


class Federation(Protocol):
    """What a remote device needs of the link that imported it (the MQTT face's `Importer`)."""

    def refresh(self, gateway: str, device: str) -> None:
        """Set the device's availability from what the link knows of it and of its gateway."""

    async def forward(self, gateway: str, device: str, command: Command) -> Mapping[str, Any]:
        """Send `command` to the device on its gateway and return its result data, or raise its error."""

    async def forward_estop(self, gateway: str) -> None:
        """Ask `gateway` for an emergency stop of all its devices."""

    def forward_release(self, gateway: str, client_id: str) -> None:
        """Our client `client_id` left: its leases on `gateway` end."""


class RemoteDevice(Adapter[RemoteOptions]):
    """A device of another gateway; its message types and capabilities are the remote's (`describe`)."""

    kind: ClassVar[str] = "remote"
    options_class: ClassVar[type[Any]] = RemoteOptions

    def __init__(self, ctx: DeviceContext, options: RemoteOptions, federation: Federation) -> None:
        super().__init__(ctx, options)
        self.federation = federation
        self.remote_capabilities: dict[str, Any] = {}
        #: True while `run` mirrors the remote: before it, the supervisor has yet to say `connecting`,
        #: and an availability set then would come out ahead of it (connected, connecting, connected).
        self.mirroring = False
        #: The clients that commanded this device, by client id; the value is their last command's type.
        self.leases: Leases[str, str] = Leases(ctx.device_id, self._on_lease_end, is_safe=lambda _: False)

    @classmethod
    def imported(cls, ctx: DeviceContext, gateway: str, device: str, federation: Federation) -> RemoteDevice:
        """The adapter of `device` on `gateway`, imported by `federation`."""
        return cls(ctx, RemoteOptions(gateway, device), federation)

    def describe(self, publishes: Iterable[str], accepts: Iterable[str], capabilities: Mapping[str, Any]) -> None:
        """Take what the remote gateway lists for the device (its types may change with its version)."""
        self.publishes = tuple(publishes)
        self.accepts = tuple(accepts)
        self.remote_capabilities = dict(capabilities)

    def capabilities(self) -> Mapping[str, Any]:
        """The remote's capabilities, plus where the device lives."""
        return {**self.remote_capabilities, "gateway": self.options.gateway}

    async def run(self) -> None:
        """Mirror the remote's availability (the federation sets it) until cancelled."""
        self.mirroring = True
        ending = LeaseEnd.DEVICE_LOST
        try:
            self.federation.refresh(self.options.gateway, self.options.device)
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            ending = LeaseEnd.SHUTDOWN
            raise
        finally:
            self.mirroring = False
            self.leases.end_all(ending)

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        """Send the command to the remote gateway and wait for its result."""
        # Leased before it is sent: a client that leaves while it is under way is still released there.
        self.leases.take(command.client_id, command.client_id, command.type)
        return await self.federation.forward(self.options.gateway, self.options.device, command)

    async def estop(self) -> None:
        """Ask the remote gateway for an emergency stop (which ends every lease there)."""
        self.leases.end_all(LeaseEnd.ESTOP)
        await self.federation.forward_estop(self.options.gateway)

    def release(self, client_id: str) -> None:
        """One of our clients left: its lease here ends, and with it its leases on the remote gateway."""
        self.leases.release(client_id)

    def _on_lease_end(self, client_id: str, lease: Lease[str], why: LeaseEnd) -> None:
        """The remote's own rule makes its outputs safe: it is told when one of our clients is gone."""
        if why is LeaseEnd.CLIENT_GONE:
            self.federation.forward_release(self.options.gateway, client_id)
