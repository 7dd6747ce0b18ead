"""The real daemon with a simulated micro:bit and LEGO hub on its in-process BLE radio, over the client protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.harness import connect, gateway_config
from tests.inprocess import running_gateway

BLE_DEVICES = """
[devices.mb]
kind = "microbit"
simulate = true
sim_services = ["button", "led", "accelerometer", "io_pin"]
accelerometer_period_ms = 80

[devices.hub]
kind = "lego_hub"
simulate = true
sim_hub = "boost"
sim_attached = ["C=motor"]
"""


def motor_state(message: dict[str, Any]) -> bool:
    return bool(message["op"] == "state" and message["topic"] == "hub/port/A")


async def test_ble_devices_in_the_daemon(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, BLE_DEVICES)) as gateway:
        client = await connect(gateway, "ws")
        devices = await client.until_connected({"mb", "hub"})
        assert devices["mb"]["capabilities"]["services"] == [
            "accelerometer",
            "button",
            "device_information",
            "io_pin",
            "led",
        ]
        assert "hwgateway/MicrobitText" in devices["mb"]["accepts"]
        assert devices["hub"]["capabilities"]["hub"] == "boost_move_hub"
        assert devices["hub"]["capabilities"]["connectors"] == ["A", "B", "C", "D"]

        await client.ok("subscribe", topics=["mb/**", "hub/**"])
        state = await client.wait_for(lambda m: m["op"] == "state" and m["topic"] == "mb/state")
        assert state["type"] == "hwgateway/MicrobitState"
        assert state["data"]["acceleration"]["z"] < -9.0  # lying flat: -1 g
        hub = await client.wait_for(
            lambda m: m["op"] == "state" and m["topic"] == "hub/hub" and m["data"]["firmware_version"] != ""
        )
        assert hub["data"]["hub"] == "boost_move_hub"
        assert {"A", "B", "C"} <= {p["port_name"] for p in hub["data"]["attached"]}

        answer = await client.ok("command", device="mb", type="hwgateway/MicrobitLeds", data={"rows": [[True] * 5] * 5})
        assert answer == {"matrix": [31] * 5}
        error = await client.error("command", device="mb", type="hwgateway/MicrobitUartSend", data={"text": "x"})
        assert error == {"code": "unknown_command", "message": "the micro:bit's program did not start the UART service"}
        error = await client.error(
            "command", device="hub", type="hwgateway/LegoMotorSpeed", data={"port": "B", "speed_percent": 101}
        )
        assert error["code"] == "invalid_argument"
        assert (await client.ok("describe", type="hwgateway/LegoMotorPosition"))["kind"] == "command"

        # A motor started by a msgpack client stops when that client goes away.
        driver = await connect(gateway, "tcp")
        await driver.ok(
            "command", device="hub", type="hwgateway/LegoMotorSpeed", data={"port": "A", "speed_percent": 60}
        )
        await client.wait_for(lambda m: motor_state(m) and m["data"]["speed_deg_s"] > 100)
        await driver.close()
        await client.wait_for(lambda m: motor_state(m) and m["data"]["speed_deg_s"] == 0.0, timeout=5.0)
        await client.ok(
            "command", device="hub", type="hwgateway/LegoMotorSpeed", data={"port": "A", "speed_percent": -60}
        )
        await client.wait_for(lambda m: motor_state(m) and m["data"]["speed_deg_s"] < -100)
        stopped = await client.ok("estop")
        assert {(r["device"], r["ok"]) for r in stopped["devices"]} >= {("hub", True), ("mb", True)}
        await client.wait_for(lambda m: motor_state(m) and m["data"]["speed_deg_s"] == 0.0, timeout=5.0)
        await client.close()


async def test_a_simulated_micro_bit_takes_button_presses_from_a_client(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, BLE_DEVICES)) as running:
        client = await connect(running, "ws")
        devices = await client.until_connected({"mb"})
        assert devices["mb"]["capabilities"]["sim_buttons"] == ["A", "B"]
        await client.ok("subscribe", topics=["mb/buttons"])

        def buttons(message: dict[str, Any]) -> list[int] | None:
            is_buttons = message["op"] == "state" and message["topic"] == "mb/buttons"
            return list(message["data"]["buttons"]) if is_buttons else None

        result = await client.ok(
            "command", device="mb", type="hwgateway/SimButton", data={"button": "B", "pressed_s": 1.0}
        )
        assert result == {"pressed": "B", "for_s": 1.0}
        await client.wait_for(lambda m: buttons(m) == [0, 1], timeout=5.0)
        await client.wait_for(lambda m: buttons(m) == [0, 0], timeout=5.0)  # released after its second
        error = await client.error("command", device="mb", type="hwgateway/SimButton", data={"button": "C"})
        assert error["code"] == "invalid_argument"
        await client.close()


async def test_a_simulated_hub_takes_presses_of_its_green_button(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, BLE_DEVICES)) as running:
        client = await connect(running, "ws")
        devices = await client.until_connected({"hub"})
        assert devices["hub"]["capabilities"]["sim_buttons"] == ["green"]
        await client.ok("subscribe", topics=["hub/button"])

        def pressed(message: dict[str, Any]) -> list[int] | None:
            is_button = message["op"] == "state" and message["topic"] == "hub/button"
            return list(message["data"]["buttons"]) if is_button else None

        await client.ok("command", device="hub", type="hwgateway/SimButton", data={"button": "green"})
        await client.wait_for(lambda m: pressed(m) == [1], timeout=5.0)
        await client.wait_for(lambda m: pressed(m) == [0], timeout=5.0)  # released after half a second
        error = await client.error("command", device="hub", type="hwgateway/SimButton", data={"button": "A"})
        assert error["code"] == "invalid_argument"
        await client.close()
