"""Finding Bluetooth LE devices the gateway drives: BBC micro:bits (by name) and LEGO hubs (by their service).

One passive listen of `timeout_s` seconds through bleak (BlueZ, or the virtual radio in tests):
a micro:bit advertises its name ("BBC micro:bit [zotov]") and no service; a LEGO Powered Up hub
advertises the LEGO Wireless Protocol 3 hub service. Raises `BleError` (with what to do) when
there is no usable adapter or no BlueZ.
"""

from __future__ import annotations

import asyncio

from bleak import BleakScanner
from bleak.backends.device import BLEDevice
from bleak.backends.scanner import AdvertisementData
from bleak.exc import BleakError

from devices.ble.link import Backend, explain
from gateway.core.discovery import Finding, slug
from protocols.lwp3.constants import HUB_SERVICE_UUID

#: What a micro:bit's advertised name starts with (the `microbit` kind's default `name_prefix`).
MICROBIT_NAME_PREFIX = "BBC micro:bit"


async def scan_ble(timeout_s: float, backend: Backend) -> list[Finding]:
    """Listen for `timeout_s` seconds; one finding per micro:bit or LEGO hub heard, by address."""
    heard: dict[str, tuple[BLEDevice, AdvertisementData]] = {}

    def seen(device: BLEDevice, data: AdvertisementData) -> None:
        heard[device.address.upper()] = (device, data)

    try:
        async with BleakScanner(seen, **backend.scanner_kwargs()):
            await asyncio.sleep(timeout_s)
    except (BleakError, OSError) as error:
        raise explain(error) from None
    findings = []
    for address, (device, data) in sorted(heard.items()):
        finding = classify(address, data.local_name or device.name or "", data.service_uuids, data.rssi)
        if finding is not None:
            findings.append(finding)
    return findings


def classify(address: str, name: str, service_uuids: list[str], rssi: int | None) -> Finding | None:
    """The finding for one advertiser, or None when it is nothing the gateway drives."""
    signal = f", {rssi} dBm" if rssi is not None else ""
    options: dict[str, object] = {"address": address.lower()}
    if name.startswith(MICROBIT_NAME_PREFIX):
        nickname = name.removeprefix(MICROBIT_NAME_PREFIX).strip(" []")
        return Finding(
            "microbit",
            "microbit-" + slug(nickname or address),
            address,
            f"BBC micro:bit {name!r} at {address}{signal}",
            options,
            ("address",),
            ("its program must start the Bluetooth services the gateway reads (README, BBC micro:bit)",),
        )
    if HUB_SERVICE_UUID in (uuid.lower() for uuid in service_uuids):
        return Finding(
            "lego_hub",
            "lego-" + slug(name or address),
            address,
            f"LEGO Powered Up hub {name!r} at {address}{signal}",
            options,
            ("address",),
        )
    return None
