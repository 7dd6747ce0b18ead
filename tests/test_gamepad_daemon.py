"""The real daemon with SDL virtual pads from its config: capabilities, states, commands, errors, SIGTERM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.harness import connect, gateway_config
from tests.inprocess import start_in_process

PADS = """
[devices.pad]
kind = "gamepad"
virtual = true
rate_hz = 5.0

[devices.pad-plain]
kind = "gamepad"
virtual = true
virtual_features = ["rumble"]

[devices.pad-demo]
kind = "gamepad"
virtual = true
virtual_motion = "demo"
"""


def outputs_with(**values: object):
    def match(message: dict[str, Any]) -> bool:
        return (
            message["op"] == "state"
            and message["topic"] == "pad/virtual_outputs"
            and all(message["data"][key] == value for key, value in values.items())
        )

    return match


async def test_virtual_pads_in_the_daemon_and_sigterm_while_attached(tmp_path: Path) -> None:
    gateway = await start_in_process(tmp_path, gateway_config(tmp_path, PADS))
    try:
        client = await connect(gateway, "ws")
        devices = await client.until_connected({"pad", "pad-plain", "pad-demo"})
        pad = devices["pad"]
        assert pad["kind"] == "gamepad"
        assert "creos_messages/ControllerState" in pad["publishes"]
        assert set(pad["accepts"]) == {
            "rumble",
            "led",
            "hwgateway/GamepadTriggerRumble",
            "hwgateway/GamepadPlayerIndex",
        }
        capabilities = pad["capabilities"]
        assert (capabilities["attached"], capabilities["virtual"]) == (True, True)
        assert capabilities["name"] == "hwgateway virtual pad pad"
        assert (capabilities["rumble"], capabilities["trigger_rumble"], capabilities["led"]) == (True, True, True)
        plain = devices["pad-plain"]["capabilities"]
        assert (plain["rumble"], plain["trigger_rumble"], plain["led"]) == (True, False, False)

        await client.ok("subscribe", topics=["pad/**"])
        state = await client.wait_for(lambda m: m["op"] == "state" and m["topic"] == "pad/state")
        assert state["type"] == "creos_messages/ControllerState"
        assert state["data"]["axes"] == [0.0] * 6
        assert state["data"]["buttons"] == [0] * 17
        info = await client.wait_for(lambda m: m["op"] == "state" and m["topic"] == "pad/info")
        assert (info["data"]["attached"], info["data"]["type"]) == (True, "ps4")

        answer = await client.ok(
            "command", device="pad", type="rumble", data={"low": 0.5, "high": 1.0, "duration_s": 0.3}
        )
        assert answer == {"low": 32768, "high": 65535, "duration_ms": 300}
        await client.wait_for(outputs_with(rumble_low=32768, rumble_high=65535, last_call="Rumble"))
        # Nobody stops it: SDL sends (0, 0) to the device when the 300 ms are up.
        await client.wait_for(outputs_with(rumble_low=0, rumble_high=0, last_call="Rumble"), timeout=10.0)

        await client.ok(
            "command", device="pad", type="hwgateway/GamepadTriggerRumble", data={"left": 1.0, "right": 0.5}
        )
        await client.wait_for(outputs_with(trigger_left=65535, trigger_right=32768))
        await client.ok("command", device="pad", type="led", data={"rgb": [0.0, 0.5, 1.0]})
        await client.wait_for(outputs_with(led=[0, 128, 255]))
        await client.ok("command", device="pad", type="hwgateway/GamepadPlayerIndex", data={"index": 2})
        await client.wait_for(outputs_with(player_index=2))

        error = await client.error("command", device="pad-plain", type="led", data={"rgb": [1, 0, 0]})
        assert error == {
            "code": "unknown_command",
            "message": "pad 'hwgateway virtual pad pad-plain' of device 'pad-plain' has no LED; "
            "it has: rumble, a player index",
        }
        error = await client.error("command", device="pad", type="sound", data={})
        assert error["code"] == "unknown_command"
        error = await client.error("command", device="pad", type="hwgateway/GamepadPlayerIndex", data={"index": 9})
        assert error == {"code": "invalid_argument", "message": "data.index: 9 is outside [-1, 7]"}
        described = await client.ok("describe", type="hwgateway/GamepadTriggerRumble")
        assert described["kind"] == "command"

        await client.ok("subscribe", topics=["pad-demo/state"])
        await client.wait_for(
            lambda m: m.get("topic") == "pad-demo/state" and 2 in m["data"]["buttons"], timeout=15.0
        )  # the demo's scripted motion holds buttons into long presses
        await client.close()
    finally:
        code = await gateway.stop()  # its 10 s timeout guards a hang only
    assert code == 0  # SIGTERM stops the daemon although SDL is running with pads attached
    assert gateway.events("stopped")
