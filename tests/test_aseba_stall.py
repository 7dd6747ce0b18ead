"""A gateway that stalls past an Aseba node's timeout keeps the node; a node that falls silent is still lost.

Against the project's simulated Thymio (fast, and it can fall silent on cue) and against Debian's
asebaplayground (a real Aseba VM, stopped with SIGSTOP for real silence).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from pathlib import Path

import pytest

from devices.aseba.adapter import AsebaAdapter
from devices.aseba.network import AsebaNetwork
from devices.aseba.options import AsebaOptions
from devices.sim.aseba_playground import Playground
from devices.sim.thymio import SimulatedThymio
from tests.adapter_rig import AdapterRig
from tests.conftest import require_peer
from tests.harness import free_port

NODE_TIMEOUT_S = 0.5


def disconnections(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if "disconnected" in record.getMessage()]


async def test_a_stall_past_the_node_timeout_is_not_the_nodes_silence_but_real_silence_still_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="devices.aseba.network")
    robot = SimulatedThymio(node_id=1)
    await robot.start()
    options = AsebaOptions(
        target=f"tcp:127.0.0.1;{robot.port}",
        list_nodes_period_ms=100,
        node_timeout_ms=round(NODE_TIMEOUT_S * 1000),
        thymio_program=False,
    )
    rig = AdapterRig(AsebaAdapter, "thymio", options)
    rig.start()
    try:
        await rig.connected()
        assert rig.adapter.network is not None
        node = rig.adapter.network.nodes[1]
        # The whole event loop stops (the simulated robot with it) for twice the node timeout, as a
        # paused or starved gateway would: on waking, the node has not yet had its turn to answer.
        time.sleep(2 * NODE_TIMEOUT_S)  # noqa: ASYNC251 - the stall being simulated
        # (A node taken for gone comes back at its next answer: the log tells the flap.)
        await asyncio.sleep(5 * 0.1)
        assert node.connected
        assert disconnections(caplog) == []
        # A robot that really falls silent is still lost, the timeout after its last word.
        robot.muted_until = time.monotonic() + 10 * NODE_TIMEOUT_S
        muted_at = time.monotonic()
        await rig.until(lambda: not node.connected, timeout=5 * NODE_TIMEOUT_S)
        assert time.monotonic() - muted_at >= NODE_TIMEOUT_S - 0.1  # its last answer came up to a period earlier
        assert len(disconnections(caplog)) == 1
    finally:
        await rig.stop()
        await robot.stop()


async def test_the_same_against_asebaplayground_stopped_for_real(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Debian's Aseba playground as the robot: the gateway's stall is forgiven, the robot's own is not."""
    require_peer("asebaplayground")
    caplog.set_level(logging.INFO, logger="devices.aseba.network")
    playground = Playground(tmp_path, [free_port()])
    await playground.start()
    assert playground.process is not None
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", playground.robots[0].port)
        lost = asyncio.Event()
        network = AsebaNetwork(
            reader,
            writer,
            on_node=lambda node: None if node.connected else lost.set(),
            on_event=lambda event: None,
            list_nodes_period_s=0.1,
            node_timeout_s=NODE_TIMEOUT_S,
        )
        serving = asyncio.create_task(network.serve())
        try:
            node = await network.wait_described(1, 20.0)
            time.sleep(2 * NODE_TIMEOUT_S)  # noqa: ASYNC251 - the gateway's stall being simulated
            await asyncio.sleep(5 * 0.1)
            assert node.connected
            assert disconnections(caplog) == []
            # The robot's process stopped: real silence, found after the timeout.
            playground.process.send_signal(signal.SIGSTOP)
            try:
                await asyncio.wait_for(lost.wait(), 5 * NODE_TIMEOUT_S)
            finally:
                playground.process.send_signal(signal.SIGCONT)
            assert len(disconnections(caplog)) == 1
        finally:
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
            writer.close()
    finally:
        await playground.stop()
