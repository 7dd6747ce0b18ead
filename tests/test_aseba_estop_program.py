"""An e-stop stops a Thymio whose program drives its motors; a client that leaves lets its program run.

The in-process daemon with a simulated Thymio (the gateway's Aseba VM behind TCP) and its TDM face.
A TDM client loads and runs a program that sets both motor targets on every timer tick, as a
student's VPL or Aseba program does. Zeroing the targets alone does not stop such a robot: the next
tick sets them again. So the e-stop (STOP ALL, the shutdown's) stops the VM of a node running a
script, then zeroes the motors. A client that leaves without Stop leaves its program running, as
`tdmclient run` expects (it loads a program, starts it and exits); its own motor settings are
leased and end with it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from tdmclient.thymio import ThymioFB

from gateway.faces.tdm.session import TdmSession
from tests.harness import Client, connect
from tests.inprocess import InProcessGateway
from tests.tdm_thymio import NODE, message, motor_targets, start_thymio_with_tdm
from tests.test_tdm_pings import TcpCapture

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(60)]

#: Sets both motor targets every 20 ms, whatever they were set to in between.
DRIVING = "timer.period[0] = 20\nonevent timer0\nmotor.left.target = 300\nmotor.right.target = 300"
LOAD = 2  # CompileAndLoadCodeOnVM's option: load the program on the node
RUN = 1  # SetVMExecutionState's Run


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[InProcessGateway]:
    running = await start_thymio_with_tdm(tmp_path_factory.mktemp("estop-program"))
    yield running
    assert await running.stop() == 0


@pytest_asyncio.fixture(loop_scope="module")
async def native(gateway: InProcessGateway) -> AsyncIterator[Client]:
    client = await connect(gateway, "ws")
    yield client
    await client.close()


async def settles_at(native: Client, expected: tuple[int, int]) -> None:
    """The targets reach `expected` within 2 s, and are still there 0.3 s later (15 timer ticks)."""
    async with asyncio.timeout(2):
        while await motor_targets(native) != expected:  # noqa: ASYNC110 (the robot is polled)
            await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)
    assert await motor_targets(native) == expected


async def driving_session(gateway: InProcessGateway) -> TdmSession:
    """A TDM client that has loaded and started `DRIVING`, as Thymio Suite's Run does."""
    face = gateway.gateway.tdm
    assert face is not None
    session = TdmSession(gateway.gateway.hub, TcpCapture(), "127.0.0.1", 0, shared=face.shared)
    session.start()
    await session.receive(message(ThymioFB.MESSAGE_TYPE_CONNECTION_HANDSHAKE))
    await session.receive(message(ThymioFB.MESSAGE_TYPE_LOCK_NODE, 1, (NODE,)))
    await session.receive(message(ThymioFB.MESSAGE_TYPE_COMPILE_AND_LOAD_CODE_ON_VM, 2, (NODE,), 1, DRIVING, LOAD))
    await session.receive(message(ThymioFB.MESSAGE_TYPE_SET_VM_EXECUTION_STATE, 3, (NODE,), RUN))
    return session


async def test_an_estop_stops_a_robot_its_program_drives(gateway: InProcessGateway, native: Client) -> None:
    session = await driving_session(gateway)
    try:
        await settles_at(native, (300, 300))
        await native.ok("estop")
        await settles_at(native, (0, 0))  # before the fix: back at 300 within one tick, for good
    finally:
        session.finish()


async def test_a_client_that_leaves_without_stop_leaves_its_program_running(
    gateway: InProcessGateway, native: Client
) -> None:
    session = await driving_session(gateway)
    session.finish()
    await settles_at(native, (300, 300))
    await native.ok("estop")  # and STOP ALL still stops it
    await settles_at(native, (0, 0))
