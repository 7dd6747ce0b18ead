"""BlueZ over D-Bus (`org.bluez` on the system bus): calls, its objects, adapters, a discovery window.

Through dbus-fast (bleak's D-Bus library, in the `ble` extra). Every failure a person can fix is a
`BluezUnavailable` that names it and what to do: no system bus, BlueZ not running, no adapter, the
adapter off, no permission. The system bus is `DBUS_SYSTEM_BUS_ADDRESS` when it is set (the tests'
private bus).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dbus_fast.aio import MessageBus

BLUEZ = "org.bluez"
ADAPTER = "org.bluez.Adapter1"
DEVICE = "org.bluez.Device1"
PROPERTIES = "org.freedesktop.DBus.Properties"
AGENT_MANAGER = "org.bluez.AgentManager1"
AGENT = "org.bluez.Agent1"


class BluezUnavailable(ConnectionError):
    """BlueZ cannot be used here; the message says why and what to do."""


class BluezCallFailed(ConnectionError):
    """A BlueZ call was answered with an error: `name` is the D-Bus error name."""

    def __init__(self, name: str, text: str) -> None:
        super().__init__(f"{name}: {text}" if text else name)
        self.name = name


@dataclass(frozen=True, slots=True)
class Adapter:
    """One Bluetooth adapter: its object path (/org/bluez/hci0), address, and whether it is powered."""

    path: str
    address: str
    powered: bool


async def connect_system_bus() -> MessageBus:
    """The system bus (`DBUS_SYSTEM_BUS_ADDRESS` when set), or `BluezUnavailable` saying what is missing."""
    try:
        from dbus_fast import BusType
        from dbus_fast.aio import MessageBus
    except ImportError:
        raise BluezUnavailable("dbus-fast is not installed: install hwgateway's `ble` extra") from None
    try:
        return await MessageBus(bus_type=BusType.SYSTEM).connect()
    except (OSError, ValueError) as error:
        raise BluezUnavailable(f"no D-Bus system bus ({error}): is dbus running?") from None


async def call(bus: MessageBus, path: str, interface: str, member: str, signature: str = "", body: Any = ()) -> Any:
    """One method call on `org.bluez`; its reply's body, or `BluezUnavailable` / `BluezCallFailed`."""
    from dbus_fast import Message, MessageType

    message = Message(
        destination=BLUEZ, path=path, interface=interface, member=member, signature=signature, body=list(body)
    )
    reply = await bus.call(message)
    assert reply is not None  # a method call always has a reply
    if reply.message_type == MessageType.ERROR:
        name = reply.error_name or ""
        text = str(reply.body[0]) if reply.body else ""
        if name in ("org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner"):
            raise BluezUnavailable("BlueZ is not running: start bluetoothd (systemctl start bluetooth)")
        if name in ("org.freedesktop.DBus.Error.AccessDenied", "org.bluez.Error.NotPermitted") and (
            "pair" not in text.lower()
        ):
            raise BluezUnavailable(
                f"no permission to use BlueZ ({text or name}): run as a member of the bluetooth group "
                "(the service user is; see scripts/install-user.sh)"
            )
        raise BluezCallFailed(name, text)
    return reply.body


async def managed_objects(bus: MessageBus) -> dict[str, dict[str, dict[str, Any]]]:
    """BlueZ's objects: path -> interface -> property -> plain value."""
    (objects,) = await call(bus, "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
    return {
        path: {iface: {key: variant.value for key, variant in props.items()} for iface, props in ifaces.items()}
        for path, ifaces in objects.items()
    }


def adapters_of(objects: dict[str, dict[str, dict[str, Any]]]) -> list[Adapter]:
    """The adapters among BlueZ's objects, by path."""
    return sorted(
        (
            Adapter(path, str(ifaces[ADAPTER].get("Address", "")), bool(ifaces[ADAPTER].get("Powered", False)))
            for path, ifaces in objects.items()
            if ADAPTER in ifaces
        ),
        key=lambda adapter: adapter.path,
    )


async def powered_adapter(bus: MessageBus) -> Adapter:
    """The first powered adapter; `BluezUnavailable` when there is none, or all are off."""
    adapters = adapters_of(await managed_objects(bus))
    if not adapters:
        raise BluezUnavailable(
            "no Bluetooth adapter: plug one in, or check `rfkill list` and that the kernel sees it (`btmgmt info`)"
        )
    for adapter in adapters:
        if adapter.powered:
            return adapter
    names = ", ".join(adapter.path.rsplit("/", 1)[-1] for adapter in adapters)
    raise BluezUnavailable(
        f"the Bluetooth adapter is off ({names}): `bluetoothctl power on`, or `rfkill unblock bluetooth`"
    )


async def discover(bus: MessageBus, adapter: Adapter, seconds: float, transport: str | None = None) -> None:
    """Let `adapter` look for devices for `seconds` (a Wii Remote shows up while its sync or 1+2 is pressed).

    `transport` ("bredr": classic, as Wii Remotes; "le": Bluetooth LE) limits the search to one radio
    where BlueZ takes discovery filters (BlueZ drops this client's filter when it disconnects).
    """
    if transport is not None:
        from dbus_fast import Variant

        only = {"Transport": Variant("s", transport)}
        with contextlib.suppress(BluezCallFailed):  # a BlueZ without filters discovers both
            await call(bus, adapter.path, ADAPTER, "SetDiscoveryFilter", "a{sv}", [only])
    await call(bus, adapter.path, ADAPTER, "StartDiscovery")
    try:
        await asyncio.sleep(seconds)
    finally:
        with contextlib.suppress(BluezCallFailed, BluezUnavailable):
            await call(bus, adapter.path, ADAPTER, "StopDiscovery")
