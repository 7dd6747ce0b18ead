"""A gateway that stalls past an Aseba node's timeout keeps the node; a node that falls silent is still lost."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from devices.aseba.adapter import AsebaAdapter
from devices.aseba.options import AsebaOptions
from devices.sim.thymio import SimulatedThymio
from tests.adapter_rig import AdapterRig

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
