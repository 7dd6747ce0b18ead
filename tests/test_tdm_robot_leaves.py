"""A robot that leaves is removed from every Thymio Suite client's list, and comes back when it returns.

A student's lock outlives the robot's absence (a cable pulled and plugged in again does not hand
the robot to someone else); it ends when the student unlocks or leaves.

asebaplayground's Thymio (the real Aseba VM) reached through a TCP relay the test can cut, as a USB
cable is pulled; Thymio Suite's JavaScript client (npm thymio-api 0.11.1, unchanged) for a student
and for the teacher, through the daemon's TDM face. The same for a robot behind a wireless dongle
whose other robot stays (asebaswitch in front of both, as a dongle carries several robots on one
link): the device of the robot that left is no longer connected, its neighbour's is.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from devices.sim.aseba_playground import Playground
from tests.conftest import require_peer
from tests.harness import connect, free_port, gateway_config
from tests.inprocess import start_in_process
from tests.thymio_api import thymio_api

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(120)]

ROBOT = "thymio-1"


class Relay:
    """A TCP relay from `port` on 127.0.0.1 to the robot's port; `cut` drops it and every connection."""

    def __init__(self, port: int, target: int) -> None:
        self.port = port
        self.target = target
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Listen (again) on `port`."""
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)

    async def cut(self) -> None:
        """Stop listening and close every relayed connection, both sides."""
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._writers.clear()
        await self._server.wait_closed()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        robot_reader, robot_writer = await asyncio.open_connection("127.0.0.1", self.target)
        self._writers += [writer, robot_writer]
        for source, sink in ((reader, robot_writer), (robot_reader, writer)):
            task = asyncio.create_task(self._pipe(source, sink))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await source.read(4096):
                sink.write(data)
                await sink.drain()
        sink.close()


@pytest_asyncio.fixture(loop_scope="module")
async def playground(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Playground]:
    # One playground per test: it crashes when a robot's next client connects before it has closed
    # its end of the last one (Playground.wait_released), as the next test's would right after this
    # one's relay is cut.
    require_peer("asebaplayground")
    running = Playground(tmp_path_factory.mktemp("playground"), [free_port(), free_port()])
    await running.start()
    yield running
    await running.stop()


async def test_a_robot_that_leaves_is_removed_from_every_list_and_comes_back(
    playground: Playground, tmp_path_factory: pytest.TempPathFactory
) -> None:
    relay = Relay(free_port(), playground.robots[0].port)
    await relay.start()
    tmp_path = tmp_path_factory.mktemp("gateway")
    ws = free_port()
    device = f'[devices.{ROBOT}]\nkind = "aseba"\ntarget = "tcp:127.0.0.1;{relay.port}"\nrequest_timeout_ms = 5000\n'
    tdm = f'[tdm]\nenabled = true\nhost = "127.0.0.1"\ntcp_port = {free_port()}\nws_port = {ws}\n'
    running = await start_in_process(tmp_path, gateway_config(tmp_path, device, extra=tdm))
    try:
        async with thymio_api() as api:
            url = f"ws://127.0.0.1:{ws}"
            for client in ("student", "teacher"):
                await api.call("connect", client=client, url=url)
                await api.call("waitNodes", timeout_s=30, client=client, count=1, status="available")
            await api.call("lock", client="student", node=ROBOT)
            await api.call("waitStatus", client="teacher", node=ROBOT, status="busy")
            await relay.cut()  # the cable is pulled
            for client in ("student", "teacher"):
                await api.call("waitGone", client=client, node=ROBOT)
            native = await connect(running, "ws")
            [listed] = (await native.ok("list_devices"))["devices"]
            assert listed["status"] != "connected"
            await native.close()
            await relay.start()  # plugged in again: listed again for both, still the student's
            for client in ("student", "teacher"):
                await api.call("waitNodes", timeout_s=30, client=client, count=1)
            await api.call("waitStatus", client="student", node=ROBOT, status="ready")
            await api.call("waitStatus", client="teacher", node=ROBOT, status="busy")
            await api.call("unlock", client="student", node=ROBOT)
            await api.call("waitStatus", client="teacher", node=ROBOT, status="available")
    finally:
        assert await running.stop() == 0
        await relay.cut()


async def test_a_robot_that_leaves_a_dongle_is_removed_while_its_neighbour_stays(
    playground: Playground, tmp_path_factory: pytest.TempPathFactory
) -> None:
    switch = require_peer("asebaswitch")
    first, second = playground.robots
    relay = Relay(free_port(), second.port)
    await relay.start()
    switch_port = free_port()
    dongle = await asyncio.create_subprocess_exec(
        switch, "-p", str(switch_port), f"tcp:127.0.0.1;{first.port}", f"tcp:127.0.0.1;{relay.port}",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    tmp_path = tmp_path_factory.mktemp("dongle")
    ws = free_port()
    devices = "".join(
        f'[devices.{name}]\nkind = "aseba"\ntarget = "tcp:127.0.0.1;{switch_port}"\nnode_id = {robot.node_id}\n'
        "list_nodes_period_ms = 200\nnode_timeout_ms = 1000\n"  # a silent robot is gone after 1 s, not 3
        for name, robot in (("near", first), ("far", second))
    )
    tdm = f'[tdm]\nenabled = true\nhost = "127.0.0.1"\ntcp_port = {free_port()}\nws_port = {ws}\n'
    running = None
    try:
        await asyncio.sleep(1.0)  # the switch connects to both robots before it accepts clients
        running = await start_in_process(tmp_path, gateway_config(tmp_path, devices, extra=tdm))
        async with thymio_api() as api:
            await api.call("connect", url=f"ws://127.0.0.1:{ws}")
            await api.call("waitNodes", timeout_s=30, count=2, status="available")
            await relay.cut()  # the far robot is switched off; the near one stays on the dongle
            await api.call("waitGone", timeout_s=30, node="far")
            assert [n["name"] for n in await api.call("nodes")] == ["near"]
            native = await connect(running, "ws")
            statuses = {d["id"]: d["status"] for d in (await native.ok("list_devices"))["devices"]}
            await native.close()
            assert statuses["near"] == "connected"
            assert statuses["far"] != "connected"
            await api.call("lock", node="near")  # the neighbour still works
    finally:
        if running is not None:
            assert await running.stop() == 0
        dongle.terminate()
        await dongle.wait()
        await relay.cut()
