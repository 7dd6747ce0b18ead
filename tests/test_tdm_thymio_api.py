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
from gateway.credentials import hash_token
from tests.conftest import require_peer
from tests.harness import Client, GatewayUnderTest, connect, free_port, gateway_config
from tests.inprocess import start_in_process
from tests.thymio_api import ThymioApi, ThymioApiError, thymio_api

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(120)]

ROBOTS = ("thymio-1", "thymio-2")
#: Tokens: the teacher's (admin, every robot) and one student's per robot (control, that robot only).
TEACHER = "teacher-token-0123456789"
STUDENTS = {"thymio-1": "student-one-0123456789", "thymio-2": "student-two-0123456789"}
#: What VPL3 loads: a variable set at start, a registered event with data and one without.
PROGRAM = """var seen = 7
onevent ping
    seen = event.args[0]
onevent go
    seen = 42
"""
EVENTS = [{"name": "ping", "fixed_size": 1}, {"name": "go", "fixed_size": 0}]


def devices_config(playground: Playground) -> str:
    """One `aseba` device per playground robot."""
    return "".join(
        f'[devices.{name}]\nkind = "aseba"\ntarget = "tcp:127.0.0.1;{robot.port}"\nrequest_timeout_ms = 5000\n'
        for name, robot in zip(ROBOTS, playground.robots, strict=True)
    )


def tokens_config() -> str:
    """The teacher's admin token and each student's control token for their robot."""
    text = f'[auth.tokens.teacher]\nhash = "{hash_token(TEACHER)}"\nrole = "admin"\n'
    for robot, token in STUDENTS.items():
        text += f'[auth.tokens.{robot}]\nhash = "{hash_token(token)}"\nrole = "control"\ndevices = ["{robot}"]\n'
    return text


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
    config = gateway_config(tmp_path, devices_config(playground), extra=tdm + tokens_config())
    running = await start_in_process(tmp_path, config)
    native = await teacher_native(running)
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


async def teacher_native(running: GatewayUnderTest) -> Client:
    """A native-face client with the teacher's token."""
    native = await connect(running, "ws")
    await native.ok("auth", token=TEACHER)
    return native


async def read_variable(running: GatewayUnderTest, device: str, name: str) -> list[int]:
    """A variable as the playground's VM holds it, read through the native face."""
    native = await teacher_native(running)
    answer = await native.ok("command", device=device, type="asebaros_msgs/GetVariable", data={"variable": name})
    await native.close()
    data: list[int] = answer["data"]
    return data


async def test_every_call_of_the_suite_apps_succeeds_and_the_program_runs(
    gateway: tuple[GatewayUnderTest, str], api: ThymioApi
) -> None:
    """Issue 36's table, in VPL3's order, by a student; the teacher watches the scratchpad and shared state."""
    running, url = gateway
    await api.call("connect", client="teacher", url=url, password=TEACHER)
    await api.call("waitNodes", client="teacher", count=len(ROBOTS))
    await api.call("watchScratchpads", client="teacher", node="thymio-1")
    await api.call("watchGroup", client="teacher", node="thymio-1")
    await api.call("connect", url=url, password=STUDENTS["thymio-1"])
    nodes = await api.call("waitNodes", count=1, status="available")
    assert [n["name"] for n in nodes] == ["thymio-1"]  # a student sees only their robot
    assert nodes[0]["type"] == "Thymio 2"
    await api.call("lock", node="thymio-1")
    await api.call("waitStatus", node="thymio-1", status="ready")
    await api.call("waitStatus", client="teacher", node="thymio-1", status="busy")
    await api.call("watchGroup", node="thymio-1")
    await api.call("setEventsDescriptions", node="thymio-1", events=EVENTS, group=True)  # declareCustomEvents
    assert await api.call("sendAsebaProgram", node="thymio-1", code=PROGRAM, check=True) is None
    with pytest.raises(ThymioApiError) as bad:
        await api.call("sendAsebaProgram", node="thymio-1", code="var a = 1\na = nope\n", check=True)
    assert "nope" in bad.value.error
    assert await api.call("sendAsebaProgram", node="thymio-1", code=PROGRAM) is None
    assert await api.call("setScratchPad", node="thymio-1", text=PROGRAM) is None
    await api.call("runProgram", node="thymio-1")
    await api.call("watchVariables", node="thymio-1")
    await api.call("waitVariable", node="thymio-1", name="seen", value=7)  # the program ran on the VM
    await api.call("setVariables", node="thymio-1", vars={"seen": 3})
    await api.call("waitVariable", node="thymio-1", name="seen", value=3)
    await api.call("groupSetVariables", node="thymio-1", vars={"score": 5, "level": [1, 2]})
    await api.call("waitVariable", node="thymio-1", name="score", value=5, shared=True)
    await api.call("groupEmitEvents", node="thymio-1", events={"ping": [9]})
    await api.call("waitVariable", node="thymio-1", name="seen", value=9)
    assert await read_variable(running, "thymio-1", "seen") == [9]  # read back from the playground's VM
    await api.call("groupEmitEvents", node="thymio-1", events={"go": None})  # an event without data
    await api.call("waitVariable", node="thymio-1", name="seen", value=42)
    await api.call("emitEvents", node="thymio-1", events={"ping": [11]})
    await api.call("waitVariable", node="thymio-1", name="seen", value=11)
    # The teacher saw the scratchpad, the group's events and its shared variables, without a lock.
    await api.call("waitScratchpad", client="teacher", node="thymio-1", text=PROGRAM)
    await api.call("waitVariable", client="teacher", node="thymio-1", name="level", value=[1, 2], shared=True)
    described = api.seen("eventsDescriptions", client="teacher")
    assert [e["name"] for e in described[-1]["events"]] == ["ping", "go"]
    await api.call("unlock", node="thymio-1")
    await api.call("waitStatus", client="teacher", node="thymio-1", status="available")
    await api.call("close", client="teacher")
    await api.call("close")
