"""LoadScript's `set_as_default`, through the real daemon and a simulated Thymio that restarts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from devices.sim.thymio import SimulatedThymio
from tests.harness import Client, connect, free_port, gateway_config
from tests.inprocess import running_gateway

pytestmark = pytest.mark.timeout(60)

CORPUS = Path(__file__).parent / "data" / "aseba_corpus"
TIMEOUT_S = 5.0


async def command(client: Client, type_: str, data: dict[str, Any]) -> dict[str, Any]:
    return await client.request("command", timeout=TIMEOUT_S, device="bot", type=type_, data=data, timeout_s=TIMEOUT_S)


async def eventually_script_runs(client: Client) -> None:
    """Wait until the node (re)appears running 05_const.aesl with SCALE = 4."""
    seen: dict[str, Any] = {}
    for _ in range(150):
        seen = await command(client, "asebaros_msgs/GetVariable", {"variable": "v"})
        if seen["ok"] and seen["data"]["data"] == [40, 85, -4]:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the script does not run: {seen}")


async def test_a_default_script_is_loaded_on_nodes_found_later(tmp_path: Path) -> None:
    port = free_port()
    thymio = SimulatedThymio(port=port)
    await thymio.start()
    devices = f"""
[devices.bot]
kind = "aseba"
target = "tcp:127.0.0.1;{port}"
script_folders = ["{CORPUS}"]
"""
    async with running_gateway(tmp_path, gateway_config(tmp_path, devices)) as gateway:
        client = await connect(gateway, "ws")
        for _ in range(100):
            answer = await command(client, "asebaros_msgs/GetDescription", {})
            if answer["ok"]:
                break
            await asyncio.sleep(0.1)
        load = {"file_name": "05_const.aesl", "constants": [{"name": "SCALE", "value": 4}], "set_as_default": True}
        answer = await command(client, "asebaros_msgs/LoadScript", load)
        assert answer["ok"], answer
        await eventually_script_runs(client)
        # The robot goes away and comes back with an empty VM: the gateway loads the script again.
        await thymio.stop()
        thymio = SimulatedThymio(port=port)
        await thymio.start()
        await eventually_script_runs(client)
        description = (await command(client, "asebaros_msgs/GetDescription", {}))["data"]["description"]
        assert description["events"] == ["in_a"]
        assert {"name": "SCALE", "value": 4} in description["constants"]
        await client.close()
        await thymio.stop()
