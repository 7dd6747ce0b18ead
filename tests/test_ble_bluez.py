"""bleak's real BlueZ backend: a scan where the machine has a Bluetooth adapter, the clear error where it has none.

The virtual radio (tests/test_ble_link.py) covers bleak's API and the adapters; only these tests touch
BlueZ over D-Bus. Pairing and real firmware are not exercised anywhere in CI (see README).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from devices.ble.link import Backend, BleNotFound, BleUnavailable, Selector, find_device


def bluetooth_adapters() -> list[str]:
    """The HCI adapters the kernel knows (hci0, ...)."""
    root = Path("/sys/class/bluetooth")
    return sorted(p.name for p in root.iterdir() if p.name.startswith("hci")) if root.is_dir() else []


async def test_a_real_scan_through_bluez_where_there_is_an_adapter() -> None:
    adapters = bluetooth_adapters()
    if not adapters:
        pytest.skip("no Bluetooth adapter on this machine (/sys/class/bluetooth has no hci*): BlueZ scan not run")
    # A name nobody advertises: the scan runs its full second through BlueZ and finds nothing.
    try:
        with pytest.raises(BleNotFound, match="within 1 s"):
            await find_device(Selector(name="hwgateway-test-nobody"), 1.0, Backend())
    except BleUnavailable as error:
        pytest.fail(f"adapters {adapters} exist but BlueZ cannot scan: {error}")


async def test_without_an_adapter_the_error_says_what_is_missing() -> None:
    if bluetooth_adapters():
        pytest.skip("this machine has a Bluetooth adapter; the no-adapter message cannot be seen here")
    with pytest.raises(BleUnavailable) as caught:
        await find_device(Selector(name="x"), 1.0, Backend())
    message = str(caught.value)
    assert any(hint in message for hint in ("bluetoothd", "BlueZ is not running", "no usable Bluetooth adapter"))
