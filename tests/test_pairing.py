"""Pairing through BlueZ's D-Bus API (`devices/bluez/`): python-dbusmock's `bluez5` template on a private bus.

A private `dbus-daemon` stands for the system bus (`DBUS_SYSTEM_BUS_ADDRESS`); BlueZ is the template
with pairing through the caller's agent (tests/dbusmock_bluez_pairing.py), one mock process per
test. BlueZ missing, the adapter absent or off, and no permission are each named with what to do;
a Wii Remote pairs with its sync-button PIN, and pairings are accepted, refused and timed out.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dbus
import pytest
from dbusmock.testcase import BusType, PrivateDBus, SpawnedMock

from devices.bluez.dbus import BluezUnavailable
from devices.bluez.pairing import BLE, PAIRED, REFUSED, TIMED_OUT, WIIMOTE, PairRequest, pair
from gateway.app import GatewayAdmin
from gateway.config import loads
from gateway.core.discovery import slug
from gateway.credentials import hash_token
from gateway.scan import ScanRequest, render, scan
from hwgateway.client import DeviceUnavailable, InvalidArgument, Unauthorized, connect
from tests.harness import until
from tests.inprocess import start_in_process
from tests.test_schemas import result_data_validator, violations

TEMPLATE = str(Path(__file__).with_name("dbusmock_bluez_pairing.py"))
MOCK = "org.bluez.Mock"
#: The template's hci1 has address 01:02:03:04:05:06: its reversed bytes make a PIN an agent can send.
ADAPTER_NAME = "hci1"
REMOTE = "00:1F:32:AA:BB:CC"
REMOTE_NAME = "Nintendo RVL-CNT-01-TR"


@pytest.fixture(scope="module")
def system_bus() -> Iterator[PrivateDBus]:
    before = os.environ.get("DBUS_SYSTEM_BUS_ADDRESS")
    try:
        with PrivateDBus(BusType.SYSTEM) as bus:  # sets DBUS_SYSTEM_BUS_ADDRESS to itself
            yield bus
    finally:
        if before is None:
            os.environ.pop("DBUS_SYSTEM_BUS_ADDRESS", None)
        else:
            os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = before


class Bluez:
    """The mock BlueZ of one test, driven through its `org.bluez.Mock` interface (dbus-python, blocking)."""

    def __init__(self, spawned: SpawnedMock) -> None:
        self.spawned = spawned
        self.bus = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])

    def mock(self, method: str, *args: Any) -> Any:
        return getattr(self.spawned.obj, method)(*args, dbus_interface=MOCK)

    def device(self, adapter: str, address: str) -> dict[str, Any]:
        path = f"/org/bluez/{adapter}/dev_{address.replace(':', '_')}"
        props = self.bus.get_object("org.bluez", path).GetAll(
            "org.bluez.Device1", dbus_interface="org.freedesktop.DBus.Properties"
        )
        return {str(key): value for key, value in props.items()}


@pytest.fixture
def bluez(system_bus: PrivateDBus) -> Iterator[Bluez]:
    spawned = SpawnedMock.spawn_with_template(TEMPLATE, None, BusType.SYSTEM, stdout=subprocess.DEVNULL)
    mock = Bluez(spawned)
    try:
        yield mock
    finally:
        mock.bus.close()
        spawned.terminate()


async def test_without_bluez_on_the_bus_the_error_says_to_start_it(system_bus: PrivateDBus) -> None:
    with pytest.raises(BluezUnavailable, match=r"BlueZ is not running: start bluetoothd"):
        await pair(PairRequest(timeout_s=1.0))


async def test_without_an_adapter_and_with_it_off_the_error_says_what_to_do(bluez: Bluez) -> None:
    with pytest.raises(BluezUnavailable, match=r"no Bluetooth adapter: plug one in"):
        await pair(PairRequest(timeout_s=1.0))
    bluez.mock("AddAdapter", ADAPTER_NAME, "gateway")
    adapter = bluez.bus.get_object("org.bluez", f"/org/bluez/{ADAPTER_NAME}")
    adapter.Set("org.bluez.Adapter1", "Powered", False, dbus_interface="org.freedesktop.DBus.Properties")
    with pytest.raises(BluezUnavailable, match=r"adapter is off \(hci1\): `bluetoothctl power on`"):
        await pair(PairRequest(timeout_s=1.0))


async def test_without_permission_the_error_names_the_group(bluez: Bluez) -> None:
    bluez.mock("AddAdapter", ADAPTER_NAME, "gateway")
    bluez.mock("DenyAgents")
    with pytest.raises(BluezUnavailable, match=r"no permission to use BlueZ .*bluetooth group"):
        await pair(PairRequest(timeout_s=1.0))


async def test_a_wii_remote_pressed_during_the_window_pairs_with_the_sync_button_pin(bluez: Bluez) -> None:
    bluez.mock("AddAdapter", ADAPTER_NAME, "gateway")
    asked = asyncio.Event()
    steps: list[str] = []

    def progress(step: str) -> None:
        steps.append(step)
        if "red sync button" in step:
            asked.set()

    pairing = asyncio.create_task(pair(PairRequest(WIIMOTE, timeout_s=20.0), progress))
    await asyncio.wait_for(asked.wait(), 10)
    # The remote shows up only now, as when its sync button is pressed while the window is open.
    await asyncio.to_thread(bluez.mock, "AddPairable", ADAPTER_NAME, REMOTE, REMOTE_NAME, "pin")
    outcome = await asyncio.wait_for(pairing, 20)
    assert outcome.outcome == PAIRED, outcome
    assert (outcome.address, outcome.name, outcome.adapter) == (REMOTE.lower(), REMOTE_NAME, "01:02:03:04:05:06")
    assert (outcome.paired, outcome.trusted, outcome.connected) == (True, True, True)
    assert outcome.message == f"{REMOTE_NAME} at {REMOTE.lower()} is paired, trusted and connected"
    assert any("answered the Wii Remote's PIN" in step for step in steps), steps
    assert outcome.steps == steps
    state = bluez.device(ADAPTER_NAME, REMOTE)
    assert (bool(state["Paired"]), bool(state["Trusted"]), bool(state["Connected"])) == (True, True, True)
    # Paired again: nothing to pair, still trusted and connected.
    again = await pair(PairRequest(WIIMOTE, REMOTE.lower(), timeout_s=5.0))
    assert again.outcome == PAIRED
    assert any("paired already" in step for step in again.steps)


async def test_a_pin_an_agent_cannot_send_is_refused_saying_bluez_s_wiimote_plugin_is_needed(bluez: Bluez) -> None:
    bluez.mock("AddAdapter", "hci0", "gateway")  # address 00:01:02:03:04:05: a zero byte in the PIN
    bluez.mock("AddPairable", "hci0", REMOTE, REMOTE_NAME, "pin")
    outcome = await pair(PairRequest(WIIMOTE, REMOTE, timeout_s=5.0))
    assert outcome.outcome == REFUSED
    assert "wiimote plugin" in outcome.message
    assert not bool(bluez.device("hci0", REMOTE)["Paired"])


async def test_a_refusal_says_to_use_the_sync_button(bluez: Bluez) -> None:
    bluez.mock("AddAdapter", ADAPTER_NAME, "gateway")
    bluez.mock("AddPairable", ADAPTER_NAME, REMOTE, REMOTE_NAME, "refuse")
    outcome = await pair(PairRequest(WIIMOTE, timeout_s=5.0))
    assert outcome.outcome == REFUSED
    assert outcome.message.startswith("the device refused the PIN or key: pair by the red sync button (not 1+2)")
    assert (outcome.paired, outcome.trusted, outcome.connected) == (False, False, False)


async def test_a_silent_device_and_an_absent_one_time_out_and_the_pairing_is_cancelled(bluez: Bluez) -> None:
    bluez.mock("AddAdapter", ADAPTER_NAME, "gateway")
    nobody = await pair(PairRequest(WIIMOTE, timeout_s=1.0))
    assert nobody.outcome == TIMED_OUT
    assert nobody.message.startswith("no Wii Remote was seen within 1 s: press the red sync button")
    bluez.mock("AddPairable", ADAPTER_NAME, REMOTE, REMOTE_NAME, "silent")
    silent = await pair(PairRequest(WIIMOTE, timeout_s=1.0))
    assert silent.outcome == TIMED_OUT
    assert "did not finish pairing within 1 s" in silent.message
    assert "pairing cancelled: the window closed" in silent.steps
    device = bluez.bus.get_object("org.bluez", f"/org/bluez/{ADAPTER_NAME}/dev_{REMOTE.replace(':', '_')}")
    calls = [str(call[1]) for call in device.GetCalls(dbus_interface="org.freedesktop.DBus.Mock")]
    assert calls[-2:] == ["Pair", "CancelPairing"], calls


async def test_a_ble_device_that_shows_a_passkey_is_confirmed_and_paired(bluez: Bluez) -> None:
    bluez.mock("AddAdapter", ADAPTER_NAME, "gateway")
    address = "D4:12:34:56:78:9A"
    bluez.mock("AddPairable", ADAPTER_NAME, address, "BBC micro:bit [zotov]", "confirm")
    outcome = await pair(PairRequest(BLE, address, timeout_s=5.0))
    assert outcome.outcome == PAIRED, outcome
    assert "confirmed passkey 123456 (check that the device shows the same)" in outcome.steps


def test_hwgateway_pair_prints_progress_and_exits_by_outcome(bluez: Bluez) -> None:
    bluez.mock("AddAdapter", ADAPTER_NAME, "gateway")
    bluez.mock("AddPairable", ADAPTER_NAME, REMOTE, REMOTE_NAME, "refuse")
    command = [sys.executable, "-m", "gateway", "pair", REMOTE, "--timeout", "5"]
    refused = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 1, refused.stderr
    assert "hwgateway: pairing failed: the device refused the PIN or key" in refused.stderr
    assert "hwgateway: refused:" in refused.stderr
    bluez.mock("RemoveAdapterWithDevices", ADAPTER_NAME)
    missing = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert missing.returncode == 3, missing.stderr
    assert "no Bluetooth adapter: plug one in" in missing.stderr


ADMIN_TOKEN = "admin-token-for-pairing-tests"
READ_TOKEN = "read-token-for-pairing-tests"


async def test_the_pair_op_is_for_admin_tokens_and_answers_the_outcome_and_config(bluez: Bluez, tmp_path: Path) -> None:
    config = f"""
[server]
host = "127.0.0.1"
http_port = 0
msgpack_port = -1
unix_socket = ""

[auth.tokens.admin]
hash = "{hash_token(ADMIN_TOKEN)}"
role = "admin"

[auth.tokens.viewer]
hash = "{hash_token(READ_TOKEN)}"
role = "read"
"""
    running = await start_in_process(tmp_path, config)
    url = f"ws://127.0.0.1:{running.http_port}/ws"
    try:
        async with connect(url, token=READ_TOKEN) as viewer:
            with pytest.raises(Unauthorized, match="only an admin token"):
                await viewer.pair()
        async with connect(url, token=ADMIN_TOKEN) as admin:
            with pytest.raises(DeviceUnavailable, match=r"pair: no Bluetooth adapter: plug one in"):
                await admin.pair(timeout_s=1.0)
            with pytest.raises(InvalidArgument, match=r"pair.address: a BLE device is paired by its address"):
                await admin.pair(kind="ble")
            bluez.mock("AddAdapter", ADAPTER_NAME, "gateway")
            bluez.mock("AddPairable", ADAPTER_NAME, REMOTE, REMOTE_NAME, "pin")
            paired = await admin.pair(REMOTE, timeout_s=5.0)
            assert not violations(result_data_validator("pair"), paired), paired
            assert (paired["outcome"], paired["paired"], paired["trusted"], paired["connected"]) == (
                PAIRED,
                True,
                True,
                True,
            )
            assert paired["config"].splitlines()[1:] == [
                "[devices.wiimote-00-1f-32-aa-bb-cc]",
                'kind = "wiimote"',
                'address = "00:1f:32:aa:bb:cc"',
            ]
            assert any("answered the Wii Remote's PIN" in step for step in paired["steps"])
            # One pairing window at a time: a second request while one is open is refused, saying so.
            waiting = asyncio.create_task(admin.pair("00:1F:32:00:00:01", timeout_s=1.5))
            admin_ops = running.gateway.hub.admin
            assert isinstance(admin_ops, GatewayAdmin)
            await until(lambda: admin_ops._pairing.locked(), "the first window open")
            async with connect(url, token=ADMIN_TOKEN) as other:  # a session answers its requests in turn
                with pytest.raises(DeviceUnavailable, match="another pairing window is open"):
                    await other.pair(timeout_s=1.0)
            timed_out = await waiting
            assert timed_out["outcome"] == TIMED_OUT
            assert timed_out["message"].startswith("the Wii Remote 00:1F:32:00:00:01 was not seen within 1.5 s")
    finally:
        await running.stop()


async def test_scan_lists_the_wii_remotes_bluez_knows_and_one_pressed_during_its_window(bluez: Bluez) -> None:
    bluez.mock("AddAdapter", ADAPTER_NAME, "gateway")
    bluez.mock("AddDevice", ADAPTER_NAME, "11:22:33:44:55:66", "Some Phone")  # not a remote: not listed
    scanning = asyncio.create_task(scan(ScanRequest(families=("wiimote",), timeout_s=3.0)))
    await asyncio.sleep(0.5)  # the discovery window is open
    # The remote shows up only now, as when its sync button is pressed during the window.
    await asyncio.to_thread(bluez.mock, "AddPairable", ADAPTER_NAME, REMOTE, REMOTE_NAME, "pin")
    report = await asyncio.wait_for(scanning, 15)
    address = REMOTE.lower()
    assert report.skipped == []
    assert [finding.as_dict() for finding in report.findings] == [
        {
            "kind": "wiimote",
            "id": "wiimote-" + slug(address),
            "address": address,
            "summary": f"{REMOTE_NAME} at {address} (seen)",
            "options": {"address": address},
            "notes": [f"not paired: `hwgateway pair {address}` (press the red sync button) so it reconnects by itself"],
        }
    ]
    config = loads(render(report.findings))  # what it prints is a config `check-config` takes
    assert [(device.id, device.kind) for device in config.devices] == [("wiimote-" + slug(address), "wiimote")]

    assert (await pair(PairRequest(WIIMOTE, address, timeout_s=5.0))).outcome == PAIRED
    known = await scan(ScanRequest(families=("wiimote",), timeout_s=0.0))  # no window: what BlueZ holds
    assert [(finding.summary, finding.notes) for finding in known.findings] == [
        (f"{REMOTE_NAME} at {address} (connected)", ())
    ]


async def test_scan_without_an_adapter_says_so_for_wii_remotes_and_goes_on(bluez: Bluez) -> None:
    report = await scan(ScanRequest(families=("wiimote", "gamepad"), timeout_s=1.0))
    assert [(skipped.family, skipped.reason) for skipped in report.skipped] == [
        (
            "wiimote",
            "no Bluetooth adapter: plug one in, or check `rfkill list` and that the kernel sees it (`btmgmt info`)",
        )
    ]
