"""The in-process daemon with a simulated Thymio and its TDM face, for tests that drive it as a TDM client."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tdmclient.thymio import ThymioFB

from gateway.faces.tdm.nodes import node_id
from tests.harness import Client, connect, free_port, gateway_config
from tests.inprocess import InProcessGateway, start_in_process

DEVICE = "thymio-sim"
#: The simulated Thymio: the gateway's Aseba VM behind TCP on 127.0.0.1.
CONFIG = f'[devices.{DEVICE}]\nkind = "aseba"\nsimulate = true\n'
NODE = node_id(DEVICE)
MOTORS = ("motor.left.target", "motor.right.target")


def message(kind: int, *fields: Any) -> bytes:
    """A TDM message as tdmclient encodes it."""
    encoded: Any = ThymioFB.create_message((kind, fields), ThymioFB.SCHEMA)
    return bytes(encoded)


async def start_thymio_with_tdm(tmp_path: Path) -> InProcessGateway:
    """The daemon with `DEVICE` and its TDM face on free ports, once the robot is connected."""
    tdm = f'[tdm]\nenabled = true\nhost = "127.0.0.1"\ntcp_port = {free_port()}\nws_port = {free_port()}\n'
    running = await start_in_process(tmp_path, gateway_config(tmp_path, CONFIG, extra=tdm))
    native = await connect(running, "ws")
    try:
        async with asyncio.timeout(20):
            while (await native.ok("list_devices"))["devices"][0]["status"] != "connected":  # noqa: ASYNC110 (polled)
                await asyncio.sleep(0.05)
    finally:
        await native.close()
    return running


async def motor_targets(native: Client) -> tuple[int, int]:
    """Both motor targets, read from the robot's VM."""
    words = []
    for variable in MOTORS:
        value = await native.ok("command", device=DEVICE, type="asebaros_msgs/GetVariable", data={"variable": variable})
        words.append(value["data"][0])
    return words[0], words[1]
