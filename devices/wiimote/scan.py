"""Finding Wii Remotes through BlueZ: those it knows already, and those seen in a discovery window.

A remote is discoverable only while its red sync button (or 1+2) is pressed: `hwgateway scan`
discovers for its timeout, then lists every device BlueZ holds whose name is a Wii Remote's.
Raises `BluezUnavailable` (with what to do) when BlueZ or an adapter is missing or off.
"""

from __future__ import annotations

from devices.bluez.dbus import connect_system_bus, discover, managed_objects, powered_adapter
from devices.wiimote.bluez import Remote, remotes_of
from gateway.core.discovery import Finding, slug


async def scan_wiimotes(discover_s: float) -> list[Finding]:
    """One finding per Wii Remote BlueZ knows after a discovery of `discover_s` seconds."""
    bus = await connect_system_bus()
    try:
        adapter = await powered_adapter(bus)
        if discover_s > 0:
            await discover(bus, adapter, discover_s, transport="bredr")  # Wii Remotes are classic devices
        return [_finding(remote) for remote in remotes_of(await managed_objects(bus))]
    finally:
        bus.disconnect()


def _finding(remote: Remote) -> Finding:
    notes = []
    if not remote.paired:
        notes.append(
            f"not paired: `hwgateway pair {remote.address}` (press the red sync button) so it reconnects by itself"
        )
    state = "connected" if remote.connected else "paired" if remote.paired else "seen"
    return Finding(
        "wiimote",
        "wiimote-" + slug(remote.address),
        remote.address,
        f"{remote.name} at {remote.address} ({state})",
        {"address": remote.address},
        ("address",),
        tuple(notes),
    )
