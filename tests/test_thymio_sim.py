"""The real daemon with simulated Thymio IIs (devices.sim.thymio): commands, reassembly, bad input."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from devices.sim.thymio import SimulatedThymio
from protocols.aseba.messages import MessageType, WordMessage
from tests.conftest import require_peer
from tests.harness import Client, GatewayUnderTest, connect, free_port, gateway_config, start_demo
from tests.inprocess import running_gateway, start_in_process

TIMEOUT_S = 10.0


@pytest.fixture
async def robots() -> AsyncIterator[list[SimulatedThymio]]:
    started = [SimulatedThymio(node_id=1), SimulatedThymio(node_id=2)]
    for robot in started:
        await robot.start()
    yield started
    for robot in started:
        await robot.stop()


@pytest.fixture
async def gateway(tmp_path: Path, robots: list[SimulatedThymio]) -> AsyncIterator[GatewayUnderTest]:
    devices = "".join(
        f"""
[devices.thymio-{robot.node_id}]
kind = "aseba"
target = "tcp:127.0.0.1;{robot.port}"
node_timeout_ms = 1000
list_nodes_period_ms = 200
"""
        for robot in robots
    )
    running = await start_in_process(tmp_path, gateway_config(tmp_path, devices))
    yield running
    assert await running.stop() == 0


async def connected(gateway: GatewayUnderTest) -> Client:
    client = await connect(gateway, "ws")
    for _ in range(int(TIMEOUT_S / 0.05)):
        devices = (await client.ok("list_devices"))["devices"]
        if all(d["status"] == "connected" for d in devices):
            return client
        await asyncio.sleep(0.05)
    raise AssertionError(f"not connected: {devices}")


async def command(client: Client, device: str, type_: str, data: dict[str, Any]) -> dict[str, Any]:
    answer = await client.request("command", timeout=TIMEOUT_S, device=device, type=type_, data=data)
    assert answer["ok"], answer
    result: dict[str, Any] = answer["data"]
    return result


async def until(predicate: Any, what: str) -> None:
    for _ in range(int(TIMEOUT_S / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"never happened: {what}")


async def test_thymio_commands_light_the_simulated_robot(
    gateway: GatewayUnderTest, robots: list[SimulatedThymio]
) -> None:
    client = await connected(gateway)
    robot = robots[0]
    await command(client, "thymio-1", "thymio_msgs/Led", {"id": 0, "values": [1.0, 0.5, 0.0, 0.25]})
    await until(lambda: robot.outputs.leds.get("leds.circle") == (32, 16, 0, 8, 0, 0, 0, 0), "circle LEDs")
    await command(client, "thymio-1", "thymio_msgs/Led", {"id": 4, "values": [1.0, 0.0]})
    await until(lambda: robot.outputs.leds.get("leds.temperature") == (32, 0), "temperature LEDs")
    await command(client, "thymio-1", "led", {"rgb": [0.0, 0.5, 1.0]})
    await until(lambda: robot.outputs.leds.get("leds.top") == (0, 16, 32), "top LED")
    await command(client, "thymio-1", "thymio_msgs/Sound", {"frequency": 523.0, "duration": {"sec": 1}})
    await until(lambda: robot.outputs.tone == (523, 60), "tone")
    await command(client, "thymio-1", "thymio_msgs/SystemSound", {"sound": -1})
    await until(lambda: robot.outputs.system_sound == -1, "system sound")
    await command(client, "thymio-1", "thymio_msgs/Comm", {"value": 5})
    await until(lambda: robot.outputs.comm_enabled and robot.get("prox.comm.tx") == 5, "IR transmit")
    gesture = {"gesture": 1, "wave": 0, "leds": 1, "period": 0.5, "length": 4, "mirror": 0, "mask": []}
    await command(client, "thymio-1", "thymio_msgs/LedGesture", gesture)
    await until(lambda: robot.outputs.leds.get("leds.prox.h") not in (None, (0,) * 8), "gesture frame")
    first = robot.outputs.leds["leds.prox.h"]
    await until(lambda: robot.outputs.leds["leds.prox.h"] != first, "gesture moves")
    await command(client, "thymio-1", "thymio_msgs/LedGesture", {"gesture": 0, "leds": 1})
    await until(lambda: robot.outputs.leds.get("leds.prox.h") == (0,) * 8, "gesture off")
    assert robots[1].outputs.leds == {}  # the other link's robot saw none of it
    await client.close()


async def test_named_events_from_clients(gateway: GatewayUnderTest, robots: list[SimulatedThymio]) -> None:
    client = await connected(gateway)
    await command(client, "thymio-1", "hwgateway/AsebaEvent", {"name": "set_led_top", "data": [32, 0, 16]})
    await until(lambda: robots[0].outputs.leds.get("leds.top") == (32, 0, 16), "top LED by event name")
    error = await client.error("command", device="thymio-1", type="hwgateway/AsebaEvent", data={"name": "nope"})
    assert error["code"] == "invalid_argument"
    assert "has no event 'nope'" in error["message"]
    await client.close()


async def test_state_and_button_events_reach_clients(gateway: GatewayUnderTest, robots: list[SimulatedThymio]) -> None:
    client = await connected(gateway)
    await client.ok("subscribe", topics=["thymio-1/node/1/**"])
    robots[0].set("button.center", 1)
    buttons = await client.wait_for(
        lambda m: m.get("topic") == "thymio-1/node/1/buttons" and m["data"]["buttons"] == [0, 0, 1, 0, 0],
        timeout=TIMEOUT_S,
    )
    assert buttons["type"] == "creos_messages/ControllerState"
    state = await client.wait_for(lambda m: m.get("topic") == "thymio-1/node/1/events/state")
    assert state["data"]["data"][17] == 220  # temperature, 0.1 degC
    si = await client.wait_for(lambda m: m.get("topic") == "thymio-1/node/1/state", timeout=TIMEOUT_S)
    assert si["type"] == "hwgateway/ThymioState"
    assert si["data"]["temperature"] == 22.0
    assert si["data"]["buttons"] == [False, False, True, False, False]
    steps = si["data"]["acceleration"]["z"] * 23 / 9.80665  # the robot counts 23 steps per g
    assert abs(steps - round(steps)) < 1e-9
    assert 20 <= round(steps) <= 23  # lying flat: about 1 g along z
    robots[0].receive_ir(1234)
    comm = await client.wait_for(lambda m: m.get("topic") == "thymio-1/node/1/comm", timeout=TIMEOUT_S)
    assert comm["type"] == "thymio_msgs/Comm"
    assert comm["data"]["value"] == 1234
    await client.close()


async def test_long_variables_are_reassembled_from_47_word_frames(
    gateway: GatewayUnderTest, robots: list[SimulatedThymio]
) -> None:
    client = await connected(gateway)
    args = (await command(client, "thymio-1", "asebaros_msgs/GetVariable", {"variable": "gw.led"}))["data"]
    assert len(args) == 56  # two frames: 47 + 9 words
    await command(client, "thymio-1", "asebaros_msgs/SetVariable", {"variable": "gw.led", "data": list(range(56))})
    again = (await command(client, "thymio-1", "asebaros_msgs/GetVariable", {"variable": "gw.led"}))["data"]
    assert again == list(range(56))
    await client.close()


async def test_garbage_on_the_link_is_skipped(gateway: GatewayUnderTest, robots: list[SimulatedThymio]) -> None:
    client = await connected(gateway)
    robot = robots[0]
    robot.send_garbage(b"\xff\xff\x01\x00\x05\x90" + b"\x00" * 10)  # announces 65535 bytes
    robot.send_garbage(b"\x03\x00\x01\x00\x00\x90\x01\x02\x03")  # a truncated Description
    robot.send_garbage(b"\x02\x00\x01\x00\x42\xb0\x01\x00")  # an unknown type
    robot.send_garbage(b"\x05\x00\x01\x00\x05\x90\x01")  # swallows the start of the next frames
    robot.send(WordMessage(1, MessageType.VARIABLES, (500, 1, 2, 3)))
    robot.send(WordMessage(1, MessageType.VARIABLES, (500, 1, 2, 3)))
    for _ in range(3):
        wrong = await client.error(
            "command", device="thymio-1", type="asebaros_msgs/SetVariable", data={"variable": "acc", "data": [1]}
        )
        assert wrong["code"] == "invalid_argument"
        assert "3 words" in wrong["message"]
    # The reader realigns on the next NodePresent (ListNodes every 200 ms here); replies that
    # arrive while it hunts are lost, so read after that.
    await asyncio.sleep(0.6)
    data = (await command(client, "thymio-1", "asebaros_msgs/GetVariable", {"variable": "_id"}))["data"]
    assert data == [1]
    other = (await command(client, "thymio-2", "asebaros_msgs/GetVariable", {"variable": "_id"}))["data"]
    assert other == [2]
    await client.close()


async def test_a_node_vanishing_mid_description_is_described_when_it_returns(tmp_path: Path) -> None:
    vanishing, steady = SimulatedThymio(node_id=3), SimulatedThymio(node_id=4)
    vanishing.mute_after_description_frames = 10
    vanishing.mute_s = 1.5
    for robot in (vanishing, steady):
        await robot.start()
    devices = f"""
[devices.vanishing]
kind = "aseba"
target = "tcp:127.0.0.1;{vanishing.port}"
node_timeout_ms = 1000
list_nodes_period_ms = 200

[devices.steady]
kind = "aseba"
target = "tcp:127.0.0.1;{steady.port}"
"""
    async with running_gateway(tmp_path, gateway_config(tmp_path, devices)) as running:
        client = await connect(running, "ws")
        await client.ok("subscribe", topics=["vanishing/nodes"])
        gone = await client.wait_for(
            lambda m: m.get("topic") == "vanishing/nodes" and not m["data"]["nodes"][0]["connected"], timeout=TIMEOUT_S
        )
        assert gone["data"]["nodes"][0]["name"] == ""  # never fully described
        unavailable = await client.error("command", device="vanishing", type="asebaros_msgs/GetDescription", data={})
        assert unavailable["code"] == "unavailable"
        # Meanwhile the other link works.
        other = (await command(client, "steady", "asebaros_msgs/GetVariable", {"variable": "_id"}))["data"]
        assert other == [4]
        await client.wait_for(
            lambda m: m.get("topic") == "vanishing/nodes" and m["data"]["nodes"][0]["name"] == "thymio-II",
            timeout=TIMEOUT_S,
        )
        data = (await command(client, "vanishing", "asebaros_msgs/GetVariable", {"variable": "_id"}))["data"]
        assert data == [3]
        await client.close()
        for robot in (vanishing, steady):
            await robot.stop()


async def test_motor_lease_ends_with_the_client_or_its_time(tmp_path: Path) -> None:
    robot = SimulatedThymio(node_id=1)
    await robot.start()
    devices = f"""
[devices.thymio]
kind = "aseba"
target = "tcp:127.0.0.1;{robot.port}"
motor_lease_ms = 400
"""
    async with running_gateway(tmp_path, gateway_config(tmp_path, devices)) as running:
        client = await connected(running)
        for value in (200, 150):  # renewing the lease keeps the motor running past its first deadline
            await command(
                client, "thymio", "asebaros_msgs/SetVariable", {"variable": "motor.left.target", "data": [value]}
            )
            await until(lambda v=value: robot.get("motor.left.target") == v, "motor set")
            await asyncio.sleep(0.25)
        assert robot.get("motor.left.target") == 150
        await until(lambda: robot.get("motor.left.target") == 0, "lease ran out")
        await command(client, "thymio", "asebaros_msgs/SetVariable", {"variable": "motor.right.target", "data": [-90]})
        await until(lambda: robot.get("motor.right.target") == -90, "motor set")
        await client.close()
        await until(lambda: robot.get("motor.right.target") == 0, "client gone")
        other = await connected(running)
        await command(other, "thymio", "asebaros_msgs/SetVariable", {"variable": "motor.right.target", "data": [60]})
        await until(lambda: robot.get("motor.right.target") == 60, "motor set")
        assert await other.ok("estop")
        await until(lambda: robot.get("motor.right.target") == 0, "estop")
        # The motor command takes the same lease.
        await command(other, "thymio", "hwgateway/ThymioMotors", {"left": 300, "right": -300})
        await until(lambda: (robot.get("motor.left.target"), robot.get("motor.right.target")) == (300, -300), "motors")
        await until(lambda: robot.get("motor.left.target") == 0 and robot.get("motor.right.target") == 0, "lease")
        error = await other.error("command", device="thymio", type="hwgateway/ThymioMotors", data={"left": 501})
        assert error["code"] == "invalid_argument"
        await other.close()
        await robot.stop()


async def test_demo_has_a_simulated_thymio_that_websocket_clients_command(tmp_path: Path) -> None:
    demo = await start_demo(tmp_path, free_port(), free_port())
    try:
        client = await connect(demo, "ws")
        await client.ok("subscribe", topics=["thymio-demo/node/1/**"])
        for _ in range(int(TIMEOUT_S / 0.05)):
            devices = {d["id"]: d for d in (await client.ok("list_devices"))["devices"]}
            if devices["thymio-demo"]["status"] == "connected":
                break
            await asyncio.sleep(0.05)
        assert "thymio_msgs/Led" in devices["thymio-demo"]["accepts"]
        await command(client, "thymio-demo", "thymio_msgs/Led", {"id": 0, "values": [1.0] * 8})
        await command(client, "thymio-demo", "thymio_msgs/SystemSound", {"sound": 2})
        await command(client, "thymio-demo", "led", {"rgb": [1.0, 0.0, 0.0]})
        leds = (await command(client, "thymio-demo", "asebaros_msgs/GetVariable", {"variable": "gw.led"}))["data"]
        assert leds[:8] == [32] * 8
        state = await client.wait_for(lambda m: m.get("topic") == "thymio-demo/node/1/events/state", timeout=TIMEOUT_S)
        assert len(state["data"]["data"]) == 20
        await client.close()
    finally:
        assert await demo.stop() == 0


async def test_garbage_on_a_serial_line_is_survived(tmp_path: Path) -> None:
    socat = require_peer("socat")
    robot = SimulatedThymio(node_id=5)
    await robot.start()
    link = tmp_path / "ttyThymio"
    bridge = await asyncio.create_subprocess_exec(socat, f"pty,raw,echo=0,link={link}", f"tcp:127.0.0.1:{robot.port}")
    devices = f"""
[devices.serial]
kind = "aseba"
target = "ser:device={link}"
list_nodes_period_ms = 200
"""
    running = None
    try:
        await until(link.exists, "socat's pty")
        running = await start_in_process(tmp_path, gateway_config(tmp_path, devices))
        client = await connected(running)
        assert (await command(client, "serial", "asebaros_msgs/GetVariable", {"variable": "_id"}))["data"] == [5]
        for noise in (b"\x00\xff\x13\x37" * 40, b"\x05\x00\x05\x00\x05\x90\x01", b"\xff\xff\xff\xff\xff\xff\xff"):
            robot.send_garbage(noise)
            await asyncio.sleep(0.6)
            data = (await command(client, "serial", "asebaros_msgs/GetVariable", {"variable": "_id"}))["data"]
            assert data == [5]
        await command(client, "serial", "thymio_msgs/Led", {"id": 2, "values": [1.0, 1.0, 1.0, 1.0]})
        await until(lambda: robot.outputs.leds.get("leds.buttons") == (32, 32, 32, 32), "button LEDs")
        await client.close()
    finally:
        if running is not None:
            assert await running.stop() == 0
        bridge.terminate()
        await bridge.wait()
        await robot.stop()


async def test_a_lost_link_reconnects_and_reloads_the_program(tmp_path: Path) -> None:
    robot = SimulatedThymio(node_id=1)
    await robot.start()
    port = robot.port
    devices = f"""
[devices.thymio]
kind = "aseba"
target = "tcp:127.0.0.1;{port}"
"""
    async with running_gateway(tmp_path, gateway_config(tmp_path, devices)) as running:
        client = await connected(running)
        await client.ok("subscribe", topics=["thymio"])
        await robot.stop()  # the robot vanishes: a fresh one (no program loaded) takes its port
        await client.wait_for(lambda m: m["op"] == "device" and m["status"] == "disconnected", timeout=TIMEOUT_S)
        robot = SimulatedThymio(node_id=1, port=port)
        await robot.start()
        await client.close()
        client = await connected(running)
        await command(client, "thymio", "thymio_msgs/Led", {"id": 5, "values": [1.0]})
        await until(lambda: robot.outputs.leds.get("leds.sound") == (32,), "microphone LED")
        await client.close()
        await robot.stop()


def _pressed_thymio(message: dict[str, Any]) -> set[str]:
    """The touch buttons a node/1/buttons sample shows pressed (the Thymio program's button order)."""
    if message.get("op") != "state" or message.get("topic") != "thymio/node/1/buttons":
        return set()
    order = ("backward", "left", "center", "forward", "right")
    return {name for name, value in zip(order, message["data"]["buttons"], strict=True) if value}


async def test_the_demo_thymio_presses_its_buttons_and_takes_presses_from_a_client(tmp_path: Path) -> None:
    devices = '[devices.thymio]\nkind = "aseba"\nsimulate = true\nsim_motion = "demo"\n'
    async with running_gateway(tmp_path, gateway_config(tmp_path, devices)) as running:
        client = await connected(running)
        await client.ok("subscribe", topics=["thymio/node/1/buttons"])
        # The script: forward, then backward, ... one at a time.
        await client.wait_for(lambda m: _pressed_thymio(m) == {"forward"}, timeout=TIMEOUT_S)
        await client.wait_for(lambda m: _pressed_thymio(m) == {"backward"}, timeout=TIMEOUT_S)
        [thymio] = (await client.ok("list_devices"))["devices"]
        assert thymio["capabilities"]["sim_buttons"] == ["forward", "backward", "left", "right", "center"]
        result = await command(client, "thymio", "hwgateway/SimButton", {"button": "center", "pressed_s": 3.0})
        assert result == {"pressed": "center", "for_s": 3.0}
        await client.wait_for(lambda m: "center" in _pressed_thymio(m), timeout=TIMEOUT_S)
        error = await client.error("command", device="thymio", type="hwgateway/SimButton", data={"button": "A"})
        assert error["code"] == "invalid_argument"
        await client.close()
