"""The real daemon with a simulated Wii Remote inside it: state over WebSocket and msgpack, commands, bad input."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.harness import RunningGateway, connect, gateway_config, start_gateway

WIIMOTE = """
[devices.wiimote-1]
kind = "wiimote"
transport = "sim"
sim_extension = "nunchuk"
sim_motionplus = true
"""


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[RunningGateway]:
    running = await start_gateway(tmp_path, gateway_config(tmp_path, WIIMOTE))
    yield running
    assert await running.stop() == 0


async def test_state_and_commands_over_websocket(gateway: RunningGateway) -> None:
    client = await connect(gateway, "ws")
    await client.ok("subscribe", topics=["wiimote-1/**"])
    await client.wait_for(lambda m: m["op"] == "device" and m["device"] == "wiimote-1" and m["status"] == "connected")
    devices = (await client.ok("list_devices"))["devices"]
    [remote] = [d for d in devices if d["id"] == "wiimote-1"]
    assert remote["kind"] == "wiimote"
    assert {"hwgateway/WiimoteLeds", "wiimote/TimedSwitch", "led", "rumble", "hwgateway/Calibrate"} <= set(
        remote["accepts"]
    )
    state = await client.wait_for(
        lambda m: (
            m["op"] == "state"
            and m["topic"] == "wiimote-1/state"
            and m["data"]["angular_velocity_covariance"][0] != -1.0
            and m["data"]["nunchuk_acceleration_raw"]["z"] > 0
        ),
        timeout=10,
    )
    assert state["type"] == "wiimote/State"
    assert len(state["data"]["buttons"]) == 11
    assert len(state["data"]["ir_tracking"]) == 4
    leds = {"leds": [{"switch_mode": 1}, {"switch_mode": 0}, {"switch_mode": -2}, {"switch_mode": 1}]}
    result = await client.ok("command", device="wiimote-1", type="hwgateway/WiimoteLeds", data=leds)
    assert result["leds"] == [True, False, False, True]
    await client.wait_for(
        lambda m: (
            m["op"] == "state" and m["topic"] == "wiimote-1/state" and m["data"]["LEDs"] == [True, False, False, True]
        )
    )
    rumble = {"switch_mode": -1, "num_cycles": 1, "pulse_pattern": [0.3]}
    await client.ok("command", device="wiimote-1", type="wiimote/TimedSwitch", data=rumble)
    await client.wait_for(lambda m: m["op"] == "state" and m["topic"] == "wiimote-1/state" and m["data"]["rumble"])
    calibrated = await client.request("command", timeout=15, device="wiimote-1", type="hwgateway/Calibrate", data={})
    assert calibrated["ok"]
    assert calibrated["data"]["calibrated"] is True
    error = await client.error(
        "command", device="wiimote-1", type="wiimote/TimedSwitch", data={"switch_mode": -1, "num_cycles": -5}
    )
    assert error["code"] == "invalid_argument"
    assert "num_cycles" in error["message"]
    await client.close()


async def test_controller_view_over_msgpack(gateway: RunningGateway) -> None:
    client = await connect(gateway, "tcp")
    await client.ok("subscribe", topics=["wiimote-1/controller"])
    controller = await client.wait_for(
        lambda m: m["op"] == "state" and m["topic"] == "wiimote-1/controller", timeout=10
    )
    assert controller["type"] == "creos_messages/ControllerState"
    assert len(controller["data"]["axes"]) == 6
    assert len(controller["data"]["buttons"]) == 28
    await client.close()
