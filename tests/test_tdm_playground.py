"""tdmclient 0.1.21 (unchanged) through the gateway's TDM face to Debian's asebaplayground (the real VM).

The program compiled by the gateway really runs on the playground's Aseba VM: the event sent by
tdmclient changes a variable there and the VM's `emit` comes back as an EventsEmitted.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from devices.sim.aseba_playground import Playground
from tests import tdm_programs as programs
from tests.conftest import require_peer
from tests.harness import connect, free_port, gateway_config
from tests.inprocess import running_gateway

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(120)]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def playground(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Playground]:
    require_peer("asebaplayground")
    running = Playground(tmp_path_factory.mktemp("playground"), [free_port()])
    await running.start()
    yield running
    await running.stop()


@pytest.mark.parametrize("ws", [False, True], ids=["tcp", "websocket"])
async def test_tdmclient_runs_a_program_on_the_playground_vm(
    playground: Playground, tmp_path_factory: pytest.TempPathFactory, ws: bool
) -> None:
    await playground.wait_released()  # the last test's gateway has left the robot
    tmp_path = tmp_path_factory.mktemp("gateway")
    tcp, websocket = free_port(), free_port()
    devices = f"""
[devices.thymio-playground]
kind = "aseba"
target = "tcp:127.0.0.1;{playground.robots[0].port}"
request_timeout_ms = 5000
"""
    tdm = f"[tdm]\nenabled = true\ntcp_port = {tcp}\nws_port = {websocket}\n"
    async with running_gateway(tmp_path, gateway_config(tmp_path, devices, extra=tdm)) as running:
        native = await connect(running, "ws")
        for _ in range(300):
            if (await native.ok("list_devices"))["devices"][0]["status"] == "connected":
                break
            await asyncio.sleep(0.1)
        port = websocket if ws else tcp
        seen = await asyncio.to_thread(programs.full_sequence, port, ws, programs.PLAYGROUND_PROGRAM, "seen", False)
        assert seen["bad"]["error_line"] == 2
        assert seen["good"] is None
        assert ("pong", [5, 1]) in seen["events"]  # emitted by the playground's VM
        assert seen["watched"] == 5  # written by the program on the playground's VM
        # Read back through the native face: the variable lives on the real VM.
        answer = await native.ok(
            "command", device="thymio-playground", type="asebaros_msgs/GetVariable", data={"variable": "seen"}
        )
        assert answer["data"] == [5]
        await native.close()
    assert playground.process is not None
    assert playground.process.returncode is None, playground.log()
