"""One gateway link carrying several nodes: asebaswitch in front of two asebaplayground Thymios.

The switch holds one long-lived connection per simulated robot (the playground crashes on quick
reconnects); the gateway is the switch's client. Runs only in the loopback-only namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from devices.sim.aseba_playground import Playground, loopback_only
from tests.conftest import require_peer
from tests.harness import Client, GatewayUnderTest, connect, free_port, gateway_config
from tests.inprocess import start_in_process

pytestmark = pytest.mark.timeout(120)
TIMEOUT_S = 20.0


@pytest.fixture
async def switched_gateway(tmp_path: Path) -> AsyncIterator[GatewayUnderTest]:
    require_peer("asebaplayground")
    switch = require_peer("asebaswitch")
    playground = Playground(tmp_path / "playground", [free_port(), free_port()])
    await playground.start()  # refuses outside a loopback-only namespace, and so guards the switch too
    assert loopback_only()
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        switch, "-p", str(port), *(f"tcp:127.0.0.1;{robot.port}" for robot in playground.robots),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    running = None
    try:
        await asyncio.sleep(1.0)  # the switch connects to both robots before it accepts clients
        devices = f"""
[devices.switch]
kind = "aseba"
target = "tcp:127.0.0.1;{port}"
node_id = 2
request_timeout_ms = 5000
"""
        running = await start_in_process(tmp_path, gateway_config(tmp_path, devices))
        yield running
    finally:
        if running is not None:
            assert await running.stop() == 0
        process.terminate()
        with contextlib.suppress(ProcessLookupError):
            await process.wait()
        assert playground.process is not None
        assert playground.process.returncode is None, playground.log()
        await playground.stop()


async def command(client: Client, type_: str, data: dict[str, Any]) -> dict[str, Any]:
    answer = await client.request("command", timeout=TIMEOUT_S, device="switch", type=type_, data=data)
    assert answer["ok"], answer
    result: dict[str, Any] = answer["data"]
    return result


def state_of(node_id: int) -> Callable[[dict[str, Any]], bool]:
    """Matches the `state` event of node `node_id`."""
    return lambda message: message.get("topic") == f"switch/node/{node_id}/events/state"


async def test_one_link_carries_two_thymios(switched_gateway: GatewayUnderTest) -> None:
    client = await connect(switched_gateway, "ws")
    await client.ok("subscribe", topics=["switch/**"])
    nodes: list[dict[str, Any]] = []
    for _ in range(int(TIMEOUT_S / 0.1)):
        answer = await client.request("command", device="switch", type="asebaros_msgs/GetNodeList", data={})
        nodes = answer["data"]["nodes"] if answer["ok"] else []  # "connecting" until a node is described
        if [(n["id"], n["name"], n["running"]) for n in nodes] == [(1, "thymio-II", True), (2, "thymio-II", True)]:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"nodes: {nodes}")
    # The services address node_id 2.
    assert (await command(client, "asebaros_msgs/GetVariable", {"variable": "_id"}))["data"] == [2]
    await command(client, "thymio_msgs/Led", {"id": 3, "values": [1.0, 0.5]})
    for _ in range(50):
        leds = (await command(client, "asebaros_msgs/GetVariable", {"variable": "gw.led"}))["data"]
        if leds[24:26] == [32, 16]:
            break
        await asyncio.sleep(0.1)
    assert leds[24:26] == [32, 16]
    for node_id in (1, 2):
        state = await client.wait_for(state_of(node_id), timeout=TIMEOUT_S)
        assert state["data"]["source"] == node_id
    description = await client.wait_for(lambda m: m.get("topic") == "switch/node/1/description", timeout=TIMEOUT_S)
    assert "gw.led" in description["data"]["variables"]
    await client.close()
