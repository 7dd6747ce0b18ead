"""A robot that leaves is removed from every Thymio Suite client's list, and comes back when it returns.

A student's lock outlives the robot's absence (a cable pulled and plugged in again does not hand
the robot to someone else); it ends when the student unlocks or leaves.

asebaplayground's Thymio (the real Aseba VM) reached through a TCP relay the test can cut, as a USB
cable is pulled; Thymio Suite's JavaScript client (npm thymio-api 0.11.1, unchanged) for a student
and for the teacher, through the daemon's TDM face.
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


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def playground(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Playground]:
    require_peer("asebaplayground")
    running = Playground(tmp_path_factory.mktemp("playground"), [free_port()])
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
