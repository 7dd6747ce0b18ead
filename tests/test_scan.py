"""`hwgateway scan`: each family against its real peer or simulator, the config it prints, `--write`, the `scan` op.

Serial: Debian's asebaplayground (the real Aseba VM) behind socat pseudo-terminals: one robot alone,
and two behind asebaswitch (as a wireless dongle carries several robots on one port). Gamepads: SDL
virtual joysticks, one SDL maps and one it cannot. BLE: the Bumble virtual radio with a simulated
micro:bit and LEGO hub. Kortex: the simulated arm, both API versions. Wii Remotes (BlueZ's
D-Bus API, python-dbusmock): tests/test_pairing.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from devices.ble.link import Backend
from devices.ble.scan import scan_ble
from devices.ble.virtual_radio import VirtualRadio
from devices.gamepad.model import VirtualSpec
from devices.gamepad.scan import scan_gamepads
from devices.gamepad.sdl_backend import acquire, release
from devices.kortex.scan import parse_address, probe_arm
from devices.sim.aseba_playground import Playground
from devices.sim.kortex_arm import SimulatedArm
from devices.sim.lego_hub import SimulatedLegoHub
from devices.sim.microbit import SimulatedMicrobit
from gateway.config import loads
from gateway.core.discovery import Finding
from gateway.credentials import hash_token
from gateway.errors import ConfigError
from gateway.scan import ScanRequest, merge, merge_into, render, scan
from hwgateway.client import Unauthorized, connect
from protocols.lwp3.constants import SystemType
from tests.conftest import require_peer
from tests.harness import free_port
from tests.inprocess import running_gateway

#: Generous: the playground answers on its simulation tick, and CI machines are loaded.
SERIAL_TIMEOUT_S = 8.0


async def _pty_to(socat: str, folder: Path, name: str, port: int) -> tuple[asyncio.subprocess.Process, str]:
    link = folder / name
    process = await asyncio.create_subprocess_exec(socat, "pty,raw,echo=0,link=" + str(link), f"tcp:127.0.0.1:{port}")
    for _ in range(200):
        if link.exists():
            break
        await asyncio.sleep(0.05)
    assert link.exists(), "socat did not create the pty"
    return process, str(link)


@pytest_asyncio.fixture
async def serial_ports(tmp_path: Path) -> AsyncIterator[tuple[str, str]]:
    """Two ptys: robot 1 alone, and asebaswitch in front of robots 2 and 3."""
    require_peer("asebaplayground")
    switch = require_peer("asebaswitch")
    socat = require_peer("socat")
    playground = Playground(tmp_path / "playground", [free_port(), free_port(), free_port()])
    await playground.start()  # refuses outside a loopback-only namespace
    processes: list[asyncio.subprocess.Process] = []
    try:
        switch_port = free_port()
        processes.append(
            await asyncio.create_subprocess_exec(
                switch, "-p", str(switch_port), *(f"tcp:127.0.0.1;{robot.port}" for robot in playground.robots[1:]),
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
            )
        )  # fmt: skip
        await asyncio.sleep(1.0)  # the switch connects to both robots before it accepts clients
        single, path_single = await _pty_to(socat, tmp_path, "ttyThymio", playground.robots[0].port)
        dongle, path_dongle = await _pty_to(socat, tmp_path, "ttyDongle", switch_port)
        processes += [single, dongle]
        yield path_single, path_dongle
    finally:
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
                await process.wait()
        await playground.stop()


async def test_serial_ports_are_asked_for_their_nodes(serial_ports: tuple[str, str], tmp_path: Path) -> None:
    single, dongle = serial_ports
    report = await scan(ScanRequest(families=("serial",), ports=(single, dongle), timeout_s=SERIAL_TIMEOUT_S))
    assert report.skipped == []
    by_address = {finding.address: finding for finding in report.findings}
    assert set(by_address) == {single, dongle}
    robot = by_address[single]
    assert (robot.kind, robot.id, robot.options) == ("aseba", "thymio-ttythymio", {"target": f"ser:device={single}"})
    assert robot.summary == f"Thymio on {single}: thymio-II 1"
    pair = by_address[dongle]
    assert pair.options == {"target": f"ser:device={dongle}", "node_id": 2}
    assert pair.summary == f"Thymio wireless dongle on {dongle}: thymio-II 2, thymio-II 3"
    # What it prints is a config `check-config` takes as it is.
    config = loads(render(report.findings))
    assert [device.id for device in config.devices] == ["thymio-ttythymio", "thymio-ttydongle"]


async def test_gamepads_are_listed_with_their_guid_and_whether_sdl_maps_them() -> None:
    backend = acquire()
    try:
        await backend.ready()
        mapped = await backend.attach_virtual(VirtualSpec("Scan Pad"))
        unmapped = await backend.attach_virtual(VirtualSpec("Odd Stick", layout="raw"))
        try:
            assert await scan_gamepads() == []  # virtual joysticks (a demo's) are left out by default
            findings = {finding.summary.split("'")[1]: finding for finding in await scan_gamepads(include_virtual=True)}
        finally:
            await backend.detach_virtual(mapped)
            await backend.detach_virtual(unmapped)
    finally:
        await release(backend)
    assert set(findings) == {"Scan Pad", "Odd Stick"}
    pad, stick = findings["Scan Pad"], findings["Odd Stick"]
    assert pad.kind == "gamepad"
    assert len(pad.options["guid"]) == 32
    assert "mapping known" in pad.summary
    assert pad.notes == ()
    assert "no mapping" in stick.summary
    assert any("mapping_files" in note for note in stick.notes)
    assert loads(render([pad])).devices[0].options.guid == pad.options["guid"]


async def test_ble_finds_micro_bits_by_name_and_lego_hubs_by_service() -> None:
    radio = VirtualRadio()
    microbit = SimulatedMicrobit(radio, "BBC micro:bit [tivit]")
    hub = SimulatedLegoHub(radio, SystemType.CITY_HUB)
    await microbit.start()
    await hub.start()
    try:
        findings = await scan_ble(1.0, Backend.virtual(radio))
    finally:
        await microbit.stop()
        await hub.stop()
    kinds = {finding.kind: finding for finding in findings}
    assert set(kinds) == {"microbit", "lego_hub"}
    assert kinds["microbit"].id == "microbit-tivit"
    assert kinds["microbit"].options == {"address": microbit.address.lower()}
    assert kinds["lego_hub"].options == {"address": hub.address.lower()}
    assert [d.kind for d in loads(render(findings)).devices] == [f.kind for f in findings]


@pytest.mark.parametrize("api", ["kortex2", "kortex3"])
async def test_an_arm_at_an_address_is_probed_and_its_api_told(api: str) -> None:
    arm = SimulatedArm(api)  # type: ignore[arg-type]
    await arm.start()
    try:
        finding = await probe_arm(f"127.0.0.1:{arm.tcp_port}", "admin", "admin", 3.0)
        refused = await probe_arm(f"127.0.0.1:{arm.tcp_port}", "admin", "wrong", 3.0)
    finally:
        await arm.stop()
    assert finding.options["api"] == api
    assert finding.options["tcp_port"] == arm.tcp_port
    assert finding.notes == ()
    assert "refused the session" in refused.summary
    nobody = await probe_arm(f"127.0.0.1:{free_port()}", "admin", "admin", 1.0)
    assert "nothing answers" in nobody.summary
    assert parse_address("10.0.0.7") == ("10.0.0.7", 10000)
    with pytest.raises(ValueError, match="not a number"):
        parse_address("arm:x")


FOUND = [
    Finding("aseba", "thymio-ttyacm0", "/dev/ttyACM0", "Thymio on /dev/ttyACM0", {"target": "ser:device=/dev/ttyACM0"},
            ("target",)),
    Finding("wiimote", "wiimote-00-19-1d-11-22-33", "00:19:1d:11:22:33", "Nintendo RVL-CNT-01",
            {"address": "00:19:1d:11:22:33"}, ("address",)),
    Finding("microbit", "microbit-tivit", "C0:DE:00:00:00:01", "BBC micro:bit", {"address": "c0:de:00:00:00:01"},
            ("address",)),
]  # fmt: skip

EXISTING = """# My lab's gateway.
[server]
http_port = 8470   # the usual port

# The robot on the desk.
[devices.desk]
kind = "aseba"
target = "ser:device=/dev/ttyACM0"

[devices.wiimote-00-19-1d-11-22-33]
kind = "sim"
"""


def test_write_merges_new_devices_keeping_comments_and_existing_ids(tmp_path: Path) -> None:
    merged, result = merge(EXISTING, FOUND)
    assert merged.startswith(EXISTING)  # every line as it was, comments included
    assert result.already == {"thymio-ttyacm0": "desk"}
    assert result.added == ["wiimote-00-19-1d-11-22-33-2", "microbit-tivit"]
    config = loads(merged)
    assert [d.id for d in config.devices] == ["desk", "wiimote-00-19-1d-11-22-33", *result.added]
    path = tmp_path / "config.toml"
    path.write_text(EXISTING)
    assert merge_into(path, FOUND, loads).added == result.added
    assert path.read_text() == merged
    assert merge_into(path, FOUND, loads).added == []  # a second scan adds nothing
    # A merge that check-config refuses writes nothing.
    broken = tmp_path / "broken.toml"
    broken.write_text('[server]\nhttp_port = "x"\n')
    with pytest.raises(ConfigError, match=r"server\.http_port"):
        merge_into(broken, FOUND, loads)
    assert broken.read_text() == '[server]\nhttp_port = "x"\n'


async def test_the_cli_prints_config_and_writes_only_when_asked(tmp_path: Path) -> None:
    arm = SimulatedArm("kortex3")
    await arm.start()
    try:
        target = tmp_path / "config.toml"
        target.write_text(EXISTING)
        command = [sys.executable, "-m", "gateway", "scan", "--only", "serial", "--timeout", "0.5"]
        command += ["--kortex", f"127.0.0.1:{arm.tcp_port}", "--write", str(target)]
        process = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await process.communicate()
    finally:
        await arm.stop()
    assert process.returncode == 0, err
    assert b"[devices.kortex-127-0-0-1]" in out
    assert b"added kortex-127-0-0-1" in err
    text = target.read_text()
    assert text.startswith(EXISTING)
    assert loads(text).devices[-1].options.api == "kortex3"


async def test_the_scan_op_is_for_admin_tokens_and_answers_findings_and_config(tmp_path: Path) -> None:
    admin, reader = "admin-token-for-the-scan-test", "reader-token-for-the-scan-test"
    config = f"""
[server]
http_port = 0
msgpack_port = -1
unix_socket = ""
[auth.tokens.admin]
hash = "{hash_token(admin)}"
role = "admin"
[auth.tokens.reader]
hash = "{hash_token(reader)}"
role = "read"
"""
    arm = SimulatedArm("kortex2")
    await arm.start()
    try:
        async with running_gateway(tmp_path, config) as running:
            url = f"ws://127.0.0.1:{running.http_port}/ws"
            async with connect(url, token=reader) as client:
                with pytest.raises(Unauthorized):
                    await client.scan(families=["serial"], timeout_s=0.5)
            async with connect(url, token=admin) as client:
                found = await client.scan(families=["serial"], timeout_s=0.5, kortex=[f"127.0.0.1:{arm.tcp_port}"])
    finally:
        await arm.stop()
    assert [f["kind"] for f in found["findings"]] == ["kortex"]
    assert found["findings"][0]["options"]["api"] == "kortex2"
    assert loads(found["config"]).devices[0].kind == "kortex"
