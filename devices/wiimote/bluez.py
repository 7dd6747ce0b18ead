"""The Wii Remotes among BlueZ's devices (`devices/bluez/dbus.py` talks to BlueZ), found by their advertised name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from devices.bluez.dbus import DEVICE
from devices.wiimote.discovery import NAMES


@dataclass(frozen=True, slots=True)
class Remote:
    """A Wii Remote BlueZ knows: object path, address (lower case), name, paired, connected."""

    path: str
    address: str
    name: str
    paired: bool
    connected: bool


def remotes_of(objects: dict[str, dict[str, dict[str, Any]]]) -> list[Remote]:
    """The Wii Remotes among BlueZ's devices (by their advertised name), by address."""
    found = []
    for path, ifaces in objects.items():
        device = ifaces.get(DEVICE)
        if device is None or str(device.get("Name", "")) not in NAMES:
            continue
        found.append(
            Remote(
                path,
                str(device.get("Address", "")).lower(),
                str(device["Name"]),
                bool(device.get("Paired", False)),
                bool(device.get("Connected", False)),
            )
        )
    return sorted(found, key=lambda remote: remote.address)
