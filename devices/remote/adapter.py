"""A device of another gateway, shown here as `<gateway>:<device>` and driven over the MQTT federation.

The MQTT face's importer builds one per device another gateway lists (the composition root hands
it `RemoteDevice.imported`), so every face sees it like a local device. Its samples and
availability come from the importer; its commands, e-stop and client releases go back through it
(`Federation`). What it publishes and accepts is the remote device's, set per instance.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from gateway.core.adapter import Adapter, Command, DeviceContext


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
        try:
            self.federation.refresh(self.options.gateway, self.options.device)
            await asyncio.Event().wait()
        finally:
            self.mirroring = False

    async def handle_command(self, command: Command) -> Mapping[str, Any] | None:
        """Send the command to the remote gateway and wait for its result."""
        return await self.federation.forward(self.options.gateway, self.options.device, command)

    async def estop(self) -> None:
        """Ask the remote gateway for an emergency stop."""
        await self.federation.forward_estop(self.options.gateway)

    def release(self, client_id: str) -> None:
        """Tell the remote gateway that one of our clients left, so its leases there end."""
        self.federation.forward_release(self.options.gateway, client_id)
