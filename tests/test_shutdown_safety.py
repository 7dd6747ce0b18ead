"""SIGTERM with subscribers that stopped reading and actuators leased: safe states at once, exit 0 in time."""

from __future__ import annotations

import asyncio
import functools
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from devices.sim.kortex_arm import SimulatedArm
from devices.sim.thymio import SimulatedThymio
from tests.harness import TRANSPORTS, Client, connect, gateway_config, start_gateway, until
from tests.mosquitto_broker import Broker, mosquitto  # noqa: F401 (a fixture)

WIIMOTE = """
[devices.wiimote-1]
kind = "wiimote"
transport = "sim"
"""

#: systemd's TimeoutStopSec: a daemon still running then is killed, with no safe state. Waits for the
#: exit are bounded by it as hang guards; the exit takes well under a second here.
EXIT_WITHIN_S = 15.0


@pytest.fixture
async def arm() -> AsyncIterator[SimulatedArm]:
    simulated = SimulatedArm("kortex3")
    await simulated.start()
    yield simulated
    await simulated.stop()


def _devices(arm: SimulatedArm) -> str:
    return f"""
[devices.sim-1]
kind = "sim"
rate_hz = 1000.0
leds = 64

[devices.arm-1]
kind = "kortex"
host = "127.0.0.1"
username = "admin"
password = "admin"
tcp_port = {arm.tcp_port}
udp_port = {arm.udp_port}
api = "kortex3"
transport = "tcp"
analog_output_modes = ["voltage", "voltage", "current", "current"]
publish_rate_hz = 1000.0
{WIIMOTE}"""


def _connected(message: dict[str, Any], device: str) -> bool:
    return bool(message["op"] == "device" and message["device"] == device and message["status"] == "connected")


async def _stop_reading(client: Client) -> None:
    """Subscribe to everything, then never read again: the daemon's buffers towards it fill up."""
    await client.send({"op": "subscribe", "id": "all", "topics": ["**"]})


async def test_sigterm_with_stuck_clients_puts_every_device_in_its_safe_state_and_exits_0(
    tmp_path: Path, arm: SimulatedArm
) -> None:
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, _devices(arm)))
    try:
        # Once the daemon is gone, a WebSocket client with unread frames waits `close_timeout` to close.
        driver = await connect(gateway, "ws", close_timeout=0.5)
        await driver.ok("subscribe", topics=["*/state", "arm-1/wrist/feedback"])
        for device in ("arm-1", "wiimote-1", "sim-1"):
            await driver.wait_for(functools.partial(_connected, device=device), timeout=10)
        await driver.ok(
            "command",
            device="arm-1",
            type="kortex/WristCyclicC61/Command",
            data={"digital_outputs_state": 0b1111, "analog_output_a_channel_1_value": 5.0},
        )
        await driver.ok(
            "command",
            device="wiimote-1",
            type="wiimote/TimedSwitch",
            data={"switch_mode": 1, "num_cycles": 0, "pulse_pattern": []},
        )
        await driver.ok("command", device="sim-1", type="rumble", data={"low": 1.0, "high": 1.0, "duration_s": 60})
        async with asyncio.timeout(5):  # the next cycle carries it (later on a loaded machine)
            while arm.wrist.digital_outputs_state != 0b1111:  # noqa: ASYNC110 (the arm is polled, it has no event)
                await asyncio.sleep(0.01)
        stuck = []
        for transport in TRANSPORTS:
            for _ in range(2):
                small = 4096 if transport != "unix" else None  # a Unix socket's buffers are fixed
                options: dict[str, Any] = {"close_timeout": 0.5} if transport == "ws" else {}
                client = await connect(gateway, transport, receive_buffer=small, **options)
                await _stop_reading(client)
                stuck.append(client)
        # Let the daemon's buffers towards the stuck clients fill (1 kHz of samples and 1 kHz of arm feedback).
        await asyncio.sleep(2.0)
        gateway.proc.send_signal(signal.SIGTERM)
        code = await gateway.stop(timeout=EXIT_WITHIN_S)
        assert code == 0, gateway.logs[-20:]
        assert arm.wrist.digital_outputs_state == 0
        assert arm.wrist.analog_output_a_channel_1_value == 0.0
        # CloseSession on both links, the cyclic process's on UDP included.
        assert sorted(session.link.kind for session in arm.closed_sessions) == ["tcp", "udp"]
        safe = {line["device"]: line for line in gateway.logs if line.get("safe_state")}
        assert set(safe) == {"sim-1", "arm-1", "wiimote-1"}, gateway.logs[-30:]
        assert all(line["safe_state"] == "ok" for line in safe.values()), safe
        assert safe["wiimote-1"]["outputs"]["rumble"] == 0
        assert safe["sim-1"]["outputs"]["rumble_low"] == 0.0
        assert safe["arm-1"]["outputs"]["digital_outputs_state"] == 0
        assert gateway.events("stopped")
        for client in [driver, *stuck]:
            await client.close()
    finally:
        await gateway.stop()


@pytest.fixture
async def thymio() -> AsyncIterator[SimulatedThymio]:
    robot = SimulatedThymio(node_id=1)
    await robot.start()
    yield robot
    await robot.stop()


async def test_sighup_to_the_process_group_puts_the_leased_arm_and_thymio_in_their_safe_state(
    tmp_path: Path, arm: SimulatedArm, thymio: SimulatedThymio
) -> None:
    """A closed terminal (SIGHUP to the whole process group, the arm's cyclic process included) stops in order."""
    devices = f"""
[devices.arm-1]
kind = "kortex"
host = "127.0.0.1"
username = "admin"
password = "admin"
tcp_port = {arm.tcp_port}
udp_port = {arm.udp_port}
api = "kortex3"
transport = "tcp"
analog_output_modes = ["voltage", "voltage", "current", "current"]

[devices.thymio-1]
kind = "aseba"
target = "tcp:127.0.0.1;{thymio.port}"
motor_lease_ms = 600000
"""
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, devices), new_session=True)
    try:
        await gateway.until_connected()
        driver = await connect(gateway, "ws", close_timeout=0.5)
        await driver.ok(
            "command",
            device="arm-1",
            type="kortex/WristCyclicC61/Command",
            data={"digital_outputs_state": 0b1011, "analog_output_a_channel_1_value": 4.0},
        )
        await driver.ok("command", device="thymio-1", type="hwgateway/ThymioMotors", data={"left": 200, "right": -150})
        await until(lambda: arm.wrist.digital_outputs_state == 0b1011, "wrist outputs on")
        await until(lambda: thymio.get("motor.left.target") == 200, "Thymio motors on")
        # The driver stays connected: its leases are held when the terminal closes.
        os.killpg(gateway.proc.pid, signal.SIGHUP)
        async with asyncio.timeout(EXIT_WITHIN_S):
            code = await gateway.proc.wait()
        await gateway.stop()  # the log lines drained
        assert code == 0, gateway.logs[-20:]
        assert [line["signal"] for line in gateway.logs if "signal" in line] == ["SIGHUP"]
        safe = {line["device"]: line for line in gateway.logs if line.get("safe_state")}
        assert set(safe) == {"arm-1", "thymio-1"}, gateway.logs[-30:]
        assert all(line["safe_state"] == "ok" for line in safe.values()), safe
        assert safe["arm-1"]["outputs"]["digital_outputs_state"] == 0
        assert arm.wrist.digital_outputs_state == 0
        assert arm.wrist.analog_output_a_channel_1_value == 0.0
        assert (thymio.get("motor.left.target"), thymio.get("motor.right.target")) == (0, 0)
        # The cyclic process ended its UDP session itself: SIGHUP did not kill it before the e-stop.
        assert sorted(session.link.kind for session in arm.closed_sessions) == ["tcp", "udp"]
        assert gateway.events("stopped")
        await driver.close()
    finally:
        await gateway.stop()


async def _mqtt_connected(gateway: Any) -> None:
    import aiohttp

    async with asyncio.timeout(15), aiohttp.ClientSession() as session:
        while True:
            async with session.get(gateway.base_url + "/healthz") as response:
                if (await response.json())["mqtt"]["state"] == "connected":
                    return
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("round_", range(8))
async def test_sigterm_with_the_mqtt_bridge_connected_and_leases_held_puts_every_device_in_its_safe_state(
    tmp_path: Path,
    arm: SimulatedArm,
    mosquitto: Broker,  # noqa: F811 (the fixture)
    round_: int,
) -> None:
    """Before the fix the stop hung for ever in 4 of 12 rounds: the exporter swallowed its cancellation."""
    mqtt = (
        f'[mqtt]\nurl = "{mosquitto.url}"\ngateway = "lab"\npublish_rate_hz = 20.0\n'
        "reconnect_initial_s = 0.05\nreconnect_max_s = 0.3\n"
    )
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, _devices(arm), extra=mqtt))
    try:
        await gateway.until_connected()
        await _mqtt_connected(gateway)
        driver = await connect(gateway, "ws", close_timeout=0.5)
        await driver.ok(
            "command",
            device="arm-1",
            type="kortex/WristCyclicC61/Command",
            data={"digital_outputs_state": 0b0110, "analog_output_a_channel_1_value": 2.0},
        )
        await driver.ok("command", device="sim-1", type="rumble", data={"low": 1.0, "high": 1.0, "duration_s": 60})
        await driver.ok(
            "command",
            device="wiimote-1",
            type="wiimote/TimedSwitch",
            data={"switch_mode": 1, "num_cycles": 0, "pulse_pattern": []},
        )
        await until(lambda: arm.wrist.digital_outputs_state == 0b0110, "wrist outputs on")
        await asyncio.sleep(0.05 * round_)  # the stop meets the exporter at a different point of its cycle
        gateway.proc.send_signal(signal.SIGTERM)
        code = await gateway.stop(timeout=EXIT_WITHIN_S)
        assert code == 0, gateway.logs[-20:]
        safe = {line["device"]: line for line in gateway.logs if line.get("safe_state")}
        assert set(safe) == {"sim-1", "arm-1", "wiimote-1"}, gateway.logs[-30:]
        assert all(line["safe_state"] == "ok" for line in safe.values()), safe
        assert arm.wrist.digital_outputs_state == 0
        assert safe["sim-1"]["outputs"]["rumble_low"] == 0.0
        assert safe["wiimote-1"]["outputs"]["rumble"] == 0
        assert not [line for line in gateway.logs if "left behind" in str(line.get("event"))], gateway.logs[-30:]
        await driver.close()
    finally:
        await gateway.stop()
