"""Find Wii Remotes among hidraw devices through sysfs (spec §1.1, §9.1).

Each `/sys/class/hidraw/hidrawN/device/uevent` carries `HID_ID=0005:0000057E:00000306` (bus, vendor,
product), `HID_NAME`, and `HID_UNIQ` (the remote's Bluetooth address). The bound kernel driver is
the `device/driver` symlink: `wiimote` means hid-wiimote is talking to the remote too, which fights
us (it re-sends report modes and re-initialises extensions), so it is reported for a warning.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

VENDOR_NINTENDO = 0x057E
#: RVL-CNT-01 (original) and RVL-CNT-01-TR (Wii Remote Plus, built-in MotionPlus); the Wii U Pro
#: Controller (RVL-CNT-01-UC) shares product 0330 and is told apart by its extension ID.
PRODUCTS = (0x0306, 0x0330)
NAMES = ("Nintendo RVL-CNT-01", "Nintendo RVL-CNT-01-TR", "Nintendo RVL-CNT-01-UC")
BUS_BLUETOOTH = 0x0005


@dataclass(frozen=True, slots=True)
class HidrawRemote:
    """One remote found: its hidraw node, Bluetooth `address` (lower case), name, product, bound driver."""

    node: str
    dev_path: str
    address: str
    name: str
    product: int
    driver: str

    @property
    def device_id(self) -> str:
        """The id a discovered remote gets on the bus: `wiimote-<address>`."""
        return f"wiimote-{self.address}"

    @property
    def kernel_driver_bound(self) -> bool:
        """hid-wiimote holds the remote and will keep writing to it."""
        return self.driver == "wiimote"


def parse_uevent(text: str) -> dict[str, str]:
    """KEY=value lines → dict."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def _ids(hid_id: str) -> tuple[int, int, int] | None:
    parts = hid_id.split(":")
    if len(parts) != 3:
        return None
    try:
        bus, vendor, product = (int(part, 16) for part in parts)
    except ValueError:
        return None
    return bus, vendor, product


def is_wiimote(fields: dict[str, str]) -> bool:
    """A Wii Remote by HID_ID (vendor 057E, product 0306/0330), or failing that by HID_NAME."""
    ids = _ids(fields.get("HID_ID", ""))
    if ids is not None and ids[1] == VENDOR_NINTENDO and ids[2] in PRODUCTS:
        return True
    return fields.get("HID_NAME", "") in NAMES


def find_remotes(sysfs_root: str = "/sys", dev_root: str = "/dev") -> list[HidrawRemote]:
    """Every Wii Remote hidraw node, sorted by address (never by enumeration order)."""
    found: list[HidrawRemote] = []
    class_dir = Path(sysfs_root) / "class" / "hidraw"
    try:
        nodes = sorted(os.listdir(class_dir))
    except OSError:
        return []
    for node in nodes:
        device = class_dir / node / "device"
        try:
            fields = parse_uevent((device / "uevent").read_text(errors="replace"))
        except OSError:
            continue  # the node vanished while we looked
        if not is_wiimote(fields):
            continue
        ids = _ids(fields.get("HID_ID", "")) or (BUS_BLUETOOTH, VENDOR_NINTENDO, 0)
        try:
            driver = os.path.basename(os.readlink(device / "driver"))
        except OSError:
            driver = ""
        address = fields.get("HID_UNIQ", "").lower()
        found.append(
            HidrawRemote(node, str(Path(dev_root) / node), address, fields.get("HID_NAME", ""), ids[2], driver)
        )
    return sorted(found, key=lambda remote: (remote.address, remote.node))


def select(remotes: list[HidrawRemote], address: str, taken: set[str]) -> HidrawRemote | None:
    """The remote with `address` (any when empty) that no other device has taken."""
    for remote in remotes:
        if remote.address in taken:
            continue
        if not address or remote.address == address.lower():
            return remote
    return None
