"""Thymio Suite's JavaScript client (npm thymio-api 0.11.1, unchanged) through the TDM face to asebaplayground.

The calls VPL3, Scratch and Blockly make (issue 36's table), in the order VPL3's run makes them, with
the program compiled by the gateway running on the playground's real Aseba VM: a variable it sets is
read back through the native face.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from devices.sim.aseba_playground import Playground
from tests.conftest import require_peer
from tests.harness import GatewayUnderTest, connect, free_port, gateway_config
from tests.inprocess import start_in_process
from tests.thymio_api import ThymioApi, thymio_api

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(120)]

ROBOTS = ("thymio-1", "thymio-2")


def devices_config(playground: Playground) -> str:
    """One `aseba` device per playground robot."""
    return "".join(
        f'[devices.{name}]\nkind = "aseba"\ntarget = "tcp:127.0.0.1;{robot.port}"\nrequest_timeout_ms = 5000\n'
        for name, robot in zip(ROBOTS, playground.robots, strict=True)
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def playground(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Playground]:
    require_peer("asebaplayground")
    running = Playground(tmp_path_factory.mktemp("playground"), [free_port() for _ in ROBOTS])
    await running.start()
    yield running
    await running.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(
    playground: Playground, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[GatewayUnderTest, str]]:
    tmp_path = tmp_path_factory.mktemp("gateway")
    ws = free_port()
    tdm = f'[tdm]\nenabled = true\nhost = "127.0.0.1"\ntcp_port = {free_port()}\nws_port = {ws}\n'
    running = await start_in_process(tmp_path, gateway_config(tmp_path, devices_config(playground), extra=tdm))
    native = await connect(running, "ws")
    for _ in range(300):
        if all(d["status"] == "connected" for d in (await native.ok("list_devices"))["devices"]):
            break
        await asyncio.sleep(0.1)
    await native.close()
    yield running, f"ws://127.0.0.1:{ws}"
    assert await running.stop() == 0
    assert playground.process is not None
    assert playground.process.returncode is None, playground.log()


@pytest_asyncio.fixture(loop_scope="module")
async def api() -> AsyncIterator[ThymioApi]:
    async with thymio_api() as running:
        yield running


async def test_thymio_api_lists_locks_and_sets_variables(gateway: tuple[GatewayUnderTest, str], api: ThymioApi) -> None:
    running, url = gateway
    nodes = await api.call("connect", url=url)
    nodes = await api.call("waitNodes", count=len(ROBOTS), status="available")
    assert sorted(n["name"] for n in nodes) == list(ROBOTS)
    assert all(n["type"] == "Thymio 2" for n in nodes)
    await api.call("lock", node="thymio-1")
    await api.call("waitStatus", node="thymio-1", status="ready")
    await api.call("setEventsDescriptions", node="thymio-1", events=[{"name": "ping", "fixed_size": 1}], group=True)
    await api.call("watchVariables", node="thymio-1")
    await api.call("setVariables", node="thymio-1", vars={"motor.left.target": 0})
    await api.call("runProgram", node="thymio-1")
    await api.call("unlock", node="thymio-1")
    await api.call("waitStatus", node="thymio-1", status="available")
    native = await connect(running, "ws")
    assert all(d["locked_by"] is None for d in (await native.ok("list_devices"))["devices"])
    await native.close()
