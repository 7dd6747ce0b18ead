"""The real daemon against Debian's asebaplayground (the real Aseba VM in simulated Thymio IIs).

One playground per module with two robots: robot 1 reached over TCP, robot 2 over a serial pty
that socat bridges to its TCP port. Each robot has exactly one long-lived client (the gateway or
socat): the playground crashes when clients reconnect quickly. Runs only inside the tests'
loopback-only network namespace (the playground binds every interface).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from devices.aseba.network import AsebaNetwork
from devices.aseba.thymio_program import EVENTS
from devices.sim.aseba_playground import Playground
from tests.conftest import require_peer
from tests.harness import Client, GatewayUnderTest, connect, free_port, gateway_config
from tests.inprocess import start_in_process

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(120)]

#: Generous: the playground answers on its simulation tick, and CI machines are loaded.
REPLY_TIMEOUT_S = 10.0


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def playground(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Playground]:
    require_peer("asebaplayground")
    running = Playground(tmp_path_factory.mktemp("playground"), [free_port(), free_port()])
    await running.start()
    yield running
    await running.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def serial_path(playground: Playground, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    socat = require_peer("socat")
    link = tmp_path_factory.mktemp("serial") / "ttyThymio"
    process = await asyncio.create_subprocess_exec(
        socat, "pty,raw,echo=0,link=" + str(link), f"tcp:127.0.0.1:{playground.robots[1].port}"
    )
    for _ in range(int(REPLY_TIMEOUT_S / 0.05)):
        if link.exists():
            break
        await asyncio.sleep(0.05)
    assert link.exists(), "socat did not create the pty"
    yield str(link)
    process.terminate()
    with contextlib.suppress(ProcessLookupError):
        await process.wait()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(
    playground: Playground, serial_path: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[GatewayUnderTest]:
    devices = f"""
[devices.thymio-tcp]
kind = "aseba"
target = "tcp:127.0.0.1;{playground.robots[0].port}"
request_timeout_ms = 5000

[devices.thymio-serial]
kind = "aseba"
target = "ser:device={serial_path}"
request_timeout_ms = 5000
"""
    tmp_path = tmp_path_factory.mktemp("gateway")
    running = await start_in_process(tmp_path, gateway_config(tmp_path, devices))
    yield running
    assert await running.stop() == 0
    assert playground.process is not None
    assert playground.process.returncode is None, playground.log()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(gateway: GatewayUnderTest) -> AsyncIterator[Client]:
    ws = await connect(gateway, "ws")
    await ws.ok("subscribe", topics=["thymio-tcp/**", "thymio-serial/**"])
    devices: list[dict[str, Any]] = []
    for _ in range(300):
        devices = (await ws.ok("list_devices"))["devices"]
        if all(d["status"] == "connected" for d in devices if d["id"].startswith("thymio-")):
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"Thymios not connected: {devices}; gateway log: {gateway.logs[-20:]}")
    yield ws
    await ws.close()


async def command(client: Client, type_: str, data: dict[str, Any], device: str = "thymio-tcp") -> dict[str, Any]:
    answer = await client.request(
        "command", timeout=REPLY_TIMEOUT_S, device=device, type=type_, data=data, timeout_s=REPLY_TIMEOUT_S
    )
    assert answer["ok"], answer
    result: dict[str, Any] = answer["data"]
    return result


async def variable(client: Client, name: str, device: str = "thymio-tcp") -> list[int]:
    data: list[int] = (await command(client, "asebaros_msgs/GetVariable", {"variable": name}, device))["data"]
    return data


async def eventually(client: Client, name: str, expected: list[int], device: str = "thymio-tcp") -> None:
    """Read `name` until it equals `expected`: events reach the VM on its next simulation step."""
    seen: list[int] = []
    for _ in range(50):
        seen = await variable(client, name, device)
        if seen == expected:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name} is {seen}, expected {expected}")


async def test_discovery_publishes_the_node_list_and_description(client: Client) -> None:
    nodes = await client.wait_for(
        lambda m: m["op"] == "state" and m["topic"] == "thymio-tcp/nodes" and m["data"]["nodes"][0]["name"] != "",
        timeout=10,
    )
    assert [(n["id"], n["name"], n["connected"]) for n in nodes["data"]["nodes"]] == [(1, "thymio-II", True)]
    listed = await command(client, "asebaros_msgs/GetNodeList", {"ignored": True})
    [node] = listed["nodes"]
    assert node["running"] is True  # the gateway's Thymio program
    description = (await command(client, "asebaros_msgs/GetDescription", {}))["description"]
    assert description["name"] == "thymio-II"
    assert list(description["events"]) == list(EVENTS)
    for name in ("_id", "event.args", "temperature", "prox.horizontal", "gw.led", "gw.gesture"):
        assert name in description["variables"]
    serial = await command(client, "asebaros_msgs/GetNodeList", {}, device="thymio-serial")
    assert [(n["id"], n["name"]) for n in serial["nodes"]] == [(2, "thymio-II")]


async def test_get_and_set_variables_by_name(client: Client) -> None:
    assert await variable(client, "_id") == [1]
    assert await variable(client, "_productId") == [8]
    assert 100 < (await variable(client, "temperature"))[0] < 400  # 0.1 degC
    assert len(await variable(client, "event.args")) == 32
    await command(client, "asebaros_msgs/SetVariable", {"variable": "mic.threshold", "data": [7]})
    await eventually(client, "mic.threshold", [7])


async def test_bad_variable_requests_are_refused_clearly(client: Client) -> None:
    wrong_size = await client.error(
        "command", device="thymio-tcp", type="asebaros_msgs/SetVariable", data={"variable": "acc", "data": [1]}
    )
    assert wrong_size["code"] == "invalid_argument"
    assert "3 words" in wrong_size["message"]
    unknown = await client.error(
        "command", device="thymio-tcp", type="asebaros_msgs/GetVariable", data={"variable": "no.such"}
    )
    assert unknown["code"] == "invalid_argument"
    assert "no.such" in unknown["message"]
    assert await variable(client, "_id") == [1]  # the link still works


async def test_events_both_ways(client: Client) -> None:
    state = await client.wait_for(
        lambda m: m["op"] == "state" and m["topic"] == "thymio-tcp/node/1/events/state", timeout=10
    )
    assert state["type"] == "asebaros_msgs/Event"
    assert state["data"]["source"] == 1
    assert len(state["data"]["data"]) == 20
    buttons = await client.wait_for(lambda m: m["op"] == "state" and m["topic"] == "thymio-tcp/node/1/buttons")
    assert buttons["data"]["buttons"] == [0, 0, 0, 0, 0]
    # An anonymous event from the client: id 6 is the program's set_speed.
    await command(client, "asebaros_msgs/AnonymousEvent", {"type": 6, "data": [120, -80]})
    await eventually(client, "motor.left.target", [120])
    await eventually(client, "motor.right.target", [-80])
    await command(client, "asebaros_msgs/AnonymousEvent", {"type": 6, "data": [0, 0]})
    await eventually(client, "motor.left.target", [0])


async def test_every_thymio_command_reaches_the_robot(client: Client) -> None:
    for group, count in enumerate((8, 8, 4, 2, 2, 1, 1)):
        values = [round((i + 1) / 8, 3) for i in range(count)]
        await command(client, "thymio_msgs/Led", {"id": group, "values": values})
    leds = await variable(client, "gw.led")
    assert leds[0:8] == [4, 8, 12, 16, 20, 24, 28, 32]
    assert leds[16:20] == [4, 8, 12, 16]
    assert leds[48] == 4
    too_many = await client.error(
        "command", device="thymio-tcp", type="thymio_msgs/Led", data={"id": 6, "values": [1.0, 1.0]}
    )
    assert too_many["code"] == "invalid_argument"
    await command(client, "thymio_msgs/Sound", {"frequency": 440.0, "duration": {"sec": 0, "nanosec": 500_000_000}})
    await eventually(client, "gw.sound", [440, 30])
    await command(client, "sound", {"frequency_hz": 880.0, "duration_s": 1.0})
    await eventually(client, "gw.sound", [880, 60])
    await command(client, "thymio_msgs/SystemSound", {"sound": 3})
    await eventually(client, "gw.system_sound", [3])
    await command(client, "thymio_msgs/Comm", {"value": 77})
    await eventually(client, "prox.comm.tx", [77])
    assert await variable(client, "gw.comm_enable") == [1]
    await command(client, "led", {"index": 0, "rgb": [1.0, 0.0, 0.5]})
    await eventually(client, "gw.led_top", [32, 0, 16])
    await command(client, "led", {"index": 2, "rgb": [0.0, 1.0, 0.0]})
    await eventually(client, "gw.led_bottom_right", [0, 32, 0])


async def test_led_gesture_is_animated_by_the_robot(client: Client) -> None:
    gesture = {"gesture": 1, "wave": 1, "leds": 0, "period": 1.0, "length": 8, "mirror": 0, "mask": [True] * 7}
    await command(client, "thymio_msgs/LedGesture", gesture)
    await eventually(client, "gw.gesture", [1, 0, 1, 1000, 8, 0, 1, 1, 1, 1, 1, 1, 1, 1])
    assert (await variable(client, "timer.period"))[0] == 20
    first = await variable(client, "gw.frame")
    await asyncio.sleep(0.3)
    second = await variable(client, "gw.frame")
    assert first != second  # the wave moves
    assert all(0 <= v <= 32 for v in first + second)
    rect = {"gesture": 1, "wave": 0, "leds": 2, "period": 2.0, "length": 4, "mirror": 0, "mask": [True, False]}
    await command(client, "thymio_msgs/LedGesture", rect)
    await asyncio.sleep(0.2)
    frame = await variable(client, "gw.frame")
    assert frame[1] == 0  # masked
    assert all(v in (0, 32) for v in frame)
    await command(client, "thymio_msgs/LedGesture", {"gesture": 0})
    await eventually(client, "timer.period", [0, 100])


async def test_serial_link_through_a_pty(client: Client) -> None:
    assert await variable(client, "_id", device="thymio-serial") == [2]
    await command(client, "thymio_msgs/Led", {"id": 0, "values": [1.0] * 8}, device="thymio-serial")
    await eventually(client, "gw.led", [32] * 8 + [0] * 48, device="thymio-serial")
    state = await client.wait_for(
        lambda m: m["op"] == "state" and m["topic"] == "thymio-serial/node/2/events/state", timeout=10
    )
    assert len(state["data"]["data"]) == 20


async def test_an_estop_stops_a_program_that_drives_the_motors(client: Client) -> None:
    # The real VM runs a script that sets both targets every 20 ms: zeroing them alone would not hold.
    # (Last but one: the serial robot keeps this stopped script instead of the gateway's program.)
    device = "thymio-serial"
    source = "timer.period[0] = 20\nonevent timer0\nmotor.left.target = 300\nmotor.right.target = 300"
    compiled = await command(client, "hwgateway/AsebaCompile", {"source": source, "load": True}, device)
    assert compiled["ok"], compiled
    await command(client, "hwgateway/AsebaVMControl", {"command": "run"}, device)
    await eventually(client, "motor.left.target", [300], device)
    await client.ok("estop")
    await eventually(client, "motor.left.target", [0], device)
    await eventually(client, "motor.right.target", [0], device)
    await asyncio.sleep(0.5)  # 25 timer periods, had the script kept running
    assert await variable(client, "motor.left.target", device) == [0]
    assert await variable(client, "motor.right.target", device) == [0]


async def test_playground_survived(playground: Playground) -> None:
    assert playground.process is not None
    assert playground.process.returncode is None, playground.log()


async def test_a_start_that_is_given_up_leaves_no_playground_behind(tmp_path_factory: pytest.TempPathFactory) -> None:
    require_peer("asebaplayground")
    playground = Playground(tmp_path_factory.mktemp("given-up"), [free_port()])
    starting = asyncio.create_task(playground.start())
    async with asyncio.timeout(30):
        while playground.process is None:  # noqa: ASYNC110 (the process is polled: start() has no event)
            await asyncio.sleep(0.01)
    starting.cancel()  # as when its caller times out or the bench gives up
    with contextlib.suppress(asyncio.CancelledError):
        await starting
    assert playground.process.returncode is not None  # stopped, not left running on its ports


async def test_clients_one_after_another_after_wait_released(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Without `wait_released` between them, the second or third client crashed the playground (SIGSEGV)."""
    require_peer("asebaplayground")
    playground = Playground(tmp_path_factory.mktemp("one-after-another"), [free_port()])
    await playground.start()
    try:
        for _ in range(8):
            await playground.wait_released()
            reader, writer = await asyncio.open_connection("127.0.0.1", playground.robots[0].port)
            network = AsebaNetwork(reader, writer, on_node=lambda node: None, on_event=lambda event: None)
            serving = asyncio.create_task(network.serve())
            node = await network.wait_described(1, REPLY_TIMEOUT_S)
            assert node.description is not None
            assert node.description.name == "thymio-II"
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
            await network.close()
        assert playground.process is not None
        assert playground.process.returncode is None, playground.log()
    finally:
        await playground.stop()
