"""The real daemon with a simulated Wii Remote inside it: state over WebSocket and msgpack, commands, bad input."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.messages.wiimote import State
from tests.harness import GatewayUnderTest, connect, gateway_config
from tests.inprocess import running_gateway, start_in_process

WIIMOTE = """
[devices.wiimote-1]
kind = "wiimote"
transport = "sim"
sim_extension = "nunchuk"
sim_motionplus = true
"""


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[GatewayUnderTest]:
    running = await start_in_process(tmp_path, gateway_config(tmp_path, WIIMOTE))
    yield running
    assert await running.stop() == 0


async def test_state_and_commands_over_websocket(gateway: GatewayUnderTest) -> None:
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


async def test_controller_view_over_msgpack(gateway: GatewayUnderTest) -> None:
    client = await connect(gateway, "tcp")
    await client.ok("subscribe", topics=["wiimote-1/controller"])
    controller = await client.wait_for(
        lambda m: m["op"] == "state" and m["topic"] == "wiimote-1/controller", timeout=10
    )
    assert controller["type"] == "creos_messages/ControllerState"
    assert len(controller["data"]["axes"]) == 6
    assert len(controller["data"]["buttons"]) == 28
    await client.close()


DEMO_REMOTE = """
[devices.wiimote-demo]
kind = "wiimote"
transport = "sim"
sim_extension = "nunchuk"
sim_motion = "demo"
"""


def _pressed(message: dict[str, Any]) -> set[str]:
    """The names of what a wiimote/State shows pressed (core buttons by index, N:Z / N:C on the Nunchuk)."""
    if message.get("op") != "state" or message.get("topic") != "wiimote-demo/state":
        return set()
    data = message["data"]
    names = {str(index) for index, down in enumerate(data["buttons"]) if down}
    return names | {f"N:{'ZC'[index]}" for index, down in enumerate(data["nunchuk_buttons"]) if down}


async def test_the_demo_remote_presses_its_buttons_and_takes_presses_from_a_client(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, DEMO_REMOTE)) as running:
        client = await connect(running, "ws")
        await client.ok("subscribe", topics=["wiimote-demo/state"])
        # The script: after 3 s at rest, one button after another (A first), so "print the buttons" prints.
        await client.wait_for(lambda m: _pressed(m) == {str(State.MSG_BTN_A)}, timeout=20)
        await client.wait_for(lambda m: _pressed(m) == {str(State.MSG_BTN_B)}, timeout=10)
        [remote] = (await client.ok("list_devices"))["devices"]
        assert "hwgateway/SimButton" in remote["accepts"]
        assert remote["capabilities"]["sim_buttons"][-2:] == ["Z", "C"]
        # A press as the dashboard sends it: HOME held for 2 s (the script presses it much later).
        client.pushed.clear()
        result = await client.ok("command", device="wiimote-demo", type="hwgateway/SimButton",
                                 data={"button": "HOME", "pressed_s": 2.0})  # fmt: skip
        assert result == {"pressed": "HOME", "for_s": 2.0}
        await client.wait_for(lambda m: str(State.MSG_BTN_HOME) in _pressed(m), timeout=5)
        await client.ok("command", device="wiimote-demo", type="hwgateway/SimButton", data={"button": "Z"})
        await client.wait_for(lambda m: "N:Z" in _pressed(m), timeout=5)
        error = await client.error("command", device="wiimote-demo", type="hwgateway/SimButton", data={"button": "X"})
        assert error["code"] == "invalid_argument"
        assert "no button 'X'" in error["message"]
        await client.close()


async def test_a_real_remote_does_not_take_simulated_presses(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, '[devices.w]\nkind = "wiimote"\n')) as running:
        client = await connect(running, "ws")
        error = await client.error("command", device="w", type="hwgateway/SimButton", data={"button": "A"})
        assert error["code"] == "unknown_command"
        await client.close()
