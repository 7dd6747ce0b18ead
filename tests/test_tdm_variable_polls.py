"""Watched variables are read once per node and period for every TDM client watching it.

The in-process daemon with a simulated Thymio (the gateway's Aseba VM behind TCP) and its TDM face;
three TDM sessions on its hub (a student holding the lock, the teacher and a second app of the
student) watch the node's variables. The reads are paced by a sleep the test releases by hand, and
counted where the daemon counts every command (its Prometheus command histogram), so no clock is
involved: each period is one read of the node, whatever the number of watchers, and every watcher
gets every variable first, then what changed (the same for all of them).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from tdmclient import FlatBuffer
from tdmclient.thymio import ThymioFB

from gateway.faces.tdm.nodes import node_id
from gateway.faces.tdm.session import TdmSession
from gateway.faces.tdm.variables import VARIABLES_PERIOD_S
from tests.harness import connect, free_port, gateway_config
from tests.inprocess import InProcessGateway, start_in_process
from tests.test_tdm_pings import ManualSleep, TcpCapture

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(60)]

DEVICE = "thymio-sim"
CONFIG = f'[devices.{DEVICE}]\nkind = "aseba"\nsimulate = true\n'
NODE = node_id(DEVICE)
WATCH_VARIABLES = 0x01


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[InProcessGateway]:
    tmp_path: Path = tmp_path_factory.mktemp("polls")
    tdm = f'[tdm]\nenabled = true\nhost = "127.0.0.1"\ntcp_port = {free_port()}\nws_port = {free_port()}\n'
    running = await start_in_process(tmp_path, gateway_config(tmp_path, CONFIG, extra=tdm))
    native = await connect(running, "ws")
    for _ in range(200):
        if (await native.ok("list_devices"))["devices"][0]["status"] == "connected":
            break
        await asyncio.sleep(0.05)
    await native.close()
    yield running
    assert await running.stop() == 0


def message(kind: int, *fields: Any) -> bytes:
    encoded: Any = ThymioFB.create_message((kind, fields), ThymioFB.SCHEMA)
    return bytes(encoded)


def variables_sent(capture: TcpCapture) -> list[dict[str, Any]]:
    """The node variables of every VariablesChanged the session sent, one dict per message."""
    data, found = b"".join(capture.frames), []
    while data:
        length = int.from_bytes(data[:4], "little")
        fb = FlatBuffer()
        fb.parse(data[4 : 4 + length], ThymioFB.SCHEMA)
        data = data[4 + length :]
        if fb.root.union_type != ThymioFB.MESSAGE_TYPE_VARIABLES_CHANGED:
            continue
        fields = fb.root.union_data[0].fields
        node = bytes(b if isinstance(b, int) else ord(b) for b in fields[0][0].fields[0][0])
        if node == NODE:
            found.append({v.fields[0][0]: v.fields[1][0] for v in fields[1][0]})
    return found


def reads(running: InProcessGateway) -> float:
    """How many `hwgateway/AsebaVariables`-or-other commands the device has answered (the daemon's count)."""
    labels = {"device": DEVICE, "outcome": "ok"}
    return running.gateway.metrics.registry.get_sample_value("hwgw_command_latency_seconds_count", labels) or 0.0


async def settle(sleep: ManualSleep, waits: int) -> None:
    """Until the reading task has asked to sleep `waits` times (each read is a real round trip to the VM)."""
    async with asyncio.timeout(20):
        while len(sleep.delays) < waits:  # noqa: ASYNC110 (the reading task's sleeps are counted, they have no event)
            await asyncio.sleep(0.01)
    for _ in range(10):
        await asyncio.sleep(0)


async def sent(capture: object, until: Callable[[list[dict[str, Any]]], bool]) -> list[dict[str, Any]]:
    """The node variables the session sent, once they satisfy `until` (its writer is a task)."""
    assert isinstance(capture, TcpCapture)
    async with asyncio.timeout(20):
        while not until(found := variables_sent(capture)):  # noqa: ASYNC110 (the session's writer is polled)
            await asyncio.sleep(0.01)
    return found


def has_target(found: list[dict[str, Any]]) -> bool:
    """Whether a VariablesChanged sent `motor.left.target` = 123."""
    return any(variables.get("motor.left.target") == [123] for variables in found)


async def test_each_period_reads_the_node_once_for_every_watcher(gateway: InProcessGateway) -> None:
    face = gateway.gateway.tdm
    assert face is not None
    sleep = ManualSleep()
    face.shared.polls.sleep = sleep
    sessions = [TdmSession(gateway.gateway.hub, TcpCapture(), "127.0.0.1", 0, shared=face.shared) for _ in range(3)]
    captures = [session.transport for session in sessions]
    before = reads(gateway)
    try:
        for number, session in enumerate(sessions):
            session.start()
            await session.receive(message(ThymioFB.MESSAGE_TYPE_CONNECTION_HANDSHAKE))
            await session.receive(message(ThymioFB.MESSAGE_TYPE_WATCH_NODE, 1, (NODE,), WATCH_VARIABLES))
            if number == 0:
                await settle(sleep, 1)  # the first read, then its sleep
        assert face.shared.polls.watched() == {DEVICE: 3}
        assert sleep.delays == [VARIABLES_PERIOD_S]
        for capture in captures:  # every variable at once, the later watchers from the last read
            [first] = await sent(capture, bool)
            assert "motor.left.target" in first
        for period in range(1, 4):
            sleep.release()
            await settle(sleep, period + 1)
            assert reads(gateway) - before == period + 1  # one read a period, not one per watcher
        native = await connect(gateway, "ws")
        data = {"variable": "motor.left.target", "data": [123]}
        await native.ok("command", device=DEVICE, type="asebaros_msgs/SetVariable", data=data)
        sleep.release()
        await settle(sleep, 5)
        received = [await sent(capture, has_target) for capture in captures]
        await native.close()  # (its motor targets go back to 0 as it leaves)
        assert received[1] == received[0]  # the same reads to every watcher
        assert received[2] == received[0]
        state = dict(received[0][0])
        for changes in received[0][1:]:  # then only what changed (the simulated VM's state moves too)
            assert changes
            assert all(state.get(name) != value for name, value in changes.items())
            state.update(changes)
        assert state["motor.left.target"] == [123]
        sessions[1].finish()  # a watcher leaves: the others keep their reads
        assert face.shared.polls.watched() == {DEVICE: 2}
        await sessions[2].receive(message(ThymioFB.MESSAGE_TYPE_WATCH_NODE, 2, (NODE,), 0))  # stops watching
        assert face.shared.polls.watched() == {DEVICE: 1}
    finally:
        for session in sessions:
            session.finish()
    assert face.shared.polls.watched() == {}  # the last watcher gone, the node is no longer read
