"""Fuzzing the TDM face's sessions: random and damaged requests against a simulated Thymio, then the robot is stopped.

The in-process daemon with a simulated Thymio (the gateway's Aseba VM behind TCP) and its TDM face.
Each round, one TDM session (as Thymio Suite or tdmclient opens it) locks the node and sends
requests of every kind the face reads: well-formed ones with random names, values, flags, states and
programs (words of the Aseba language at random, and programs that drive the motors), some of them
damaged byte by byte or cut short. No request may fail inside the face (each gets its answer or a
TDM `Error`, never the log's traceback), the daemon keeps answering, and once the client has sent
Stop (as Thymio Suite's Stop button does) and gone, the robot is stopped: the motors it set,
directly or through a program it loaded, are back at 0. (Without the Stop, a program a client
leaves running keeps driving after it goes: the lease covers the motor targets a client sets
itself, not what its program sets.)

The requests come from a seeded generator, the same every run; HWGW_FUZZ_SCALE=N runs N times as
many rounds (`make fuzz`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from tdmclient.thymio import ThymioFB

from gateway.faces.tdm.session import TdmSession
from tests.fuzzing import LogRecords
from tests.harness import connect
from tests.inprocess import InProcessGateway
from tests.tdm_thymio import MOTORS, NODE, message, motor_targets, start_thymio_with_tdm
from tests.test_aseba_compiler import ASEBA_WORDS
from tests.test_tdm_pings import TcpCapture

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300), pytest.mark.fuzz]

SCALE = max(1, int(os.environ.get("HWGW_FUZZ_SCALE", "1")))
ROUNDS, REQUESTS_PER_ROUND = 3 * SCALE, 40
COMPILE = ThymioFB.MESSAGE_TYPE_COMPILE_AND_LOAD_CODE_ON_VM
#: SetVMExecutionState's Stop (the real TDM's Stop also sets both motor targets to 0 first).
STOP = 0
VARIABLES = [*MOTORS, "leds.top", "timer.period", "event.args", "nope", "", "x" * 300]
EVENTS = ["go", "to", "button.center", "nope", ""]
#: Programs that drive the motors: at once, and again on every timer tick.
DRIVING = [
    "motor.left.target = 200\nmotor.right.target = -200",
    "timer.period[0] = 20\nonevent timer0\nmotor.left.target = 300\nmotor.right.target = 300",
]


def _words(rng: random.Random) -> list[int]:
    choices = [0, 1, -1, 200, 500, 32767, -32768, rng.randint(-32768, 32767)]
    return [rng.choice(choices) for _ in range(rng.randint(0, 5))]


def _request(rng: random.Random, request_id: int) -> bytes:
    """One request of a kind the face reads, with random content (Thymio Suite's and tdmclient's forms)."""
    node = (NODE,) if rng.random() < 0.85 else (bytes(rng.randrange(256) for _ in range(rng.choice([0, 4, 16]))),)
    kind = rng.randrange(11)
    if kind == 0:
        return message(ThymioFB.MESSAGE_TYPE_REQUEST_LIST_OF_NODES)
    if kind == 1:
        lock = rng.choice([ThymioFB.MESSAGE_TYPE_LOCK_NODE, ThymioFB.MESSAGE_TYPE_UNLOCK_NODE])
        return message(lock, request_id, node)
    if kind == 2:
        return message(ThymioFB.MESSAGE_TYPE_REQUEST_NODE_ASEBA_VM_DESCRIPTION, request_id, node)
    if kind == 3:
        values = [(rng.choice(VARIABLES), _words(rng)) for _ in range(rng.randint(0, 3))]
        return message(ThymioFB.MESSAGE_TYPE_SET_VARIABLES, request_id, node, values)
    if kind == 4:
        events = [(rng.choice(EVENTS), _words(rng)) for _ in range(rng.randint(0, 3))]
        return message(ThymioFB.MESSAGE_TYPE_SEND_EVENTS, request_id, node, events)
    if kind == 5:
        definitions = [(rng.choice(EVENTS), rng.randint(0, 40), 0) for _ in range(rng.randint(0, 3))]
        return message(ThymioFB.MESSAGE_TYPE_REGISTER_EVENTS, request_id, node, definitions)
    if kind == 6:
        source = rng.choice(DRIVING) if rng.random() < 0.3 else " ".join(rng.choices(ASEBA_WORDS, k=rng.randint(0, 40)))
        return message(COMPILE, request_id, node, 1, source, rng.choice([0, 2]))
    if kind == 7:
        return message(ThymioFB.MESSAGE_TYPE_SET_VM_EXECUTION_STATE, request_id, node, rng.randint(0, 8))
    if kind == 8:
        return message(ThymioFB.MESSAGE_TYPE_WATCH_NODE, request_id, node, rng.randrange(64))
    if kind == 9:
        text = " ".join(rng.choices(ASEBA_WORDS, k=rng.randint(0, 10)))
        return message(ThymioFB.MESSAGE_TYPE_SCRATCHPAD_UPDATE, request_id, (b"\x01" * 16,), None, node, 1, text)
    return message(ThymioFB.MESSAGE_TYPE_RENAME_NODE, request_id, node, "bob")


def _damaged(rng: random.Random, data: bytes) -> bytes:
    """`data` with 1-4 bytes changed, sometimes cut short."""
    damaged = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        damaged[rng.randrange(len(damaged))] = rng.randrange(256)
    return bytes(damaged[: rng.randint(0, len(damaged))] if rng.random() < 0.3 else damaged)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[InProcessGateway]:
    running = await start_thymio_with_tdm(tmp_path_factory.mktemp("tdm-fuzz"))
    yield running
    assert await running.stop() == 0


async def _motors(gateway: InProcessGateway) -> tuple[int, int]:
    native = await connect(gateway, "ws")
    try:
        return await motor_targets(native)
    finally:
        await native.close()


async def test_random_and_damaged_requests_are_answered_and_the_robot_stops_when_the_client_goes(
    gateway: InProcessGateway,
) -> None:
    face = gateway.gateway.tdm
    assert face is not None
    rng = random.Random(7)
    drove = 0
    with LogRecords("gateway.faces.tdm", logging.ERROR) as errors:  # a request that failed inside the face
        for _ in range(ROUNDS):
            capture = TcpCapture()
            session = TdmSession(gateway.gateway.hub, capture, "127.0.0.1", 0, shared=face.shared)
            session.start()
            await session.receive(message(ThymioFB.MESSAGE_TYPE_CONNECTION_HANDSHAKE))
            await session.receive(message(ThymioFB.MESSAGE_TYPE_LOCK_NODE, 1, (NODE,)))
            await session.receive(message(COMPILE, 2, (NODE,), 1, DRIVING[1], 2))
            for number in range(REQUESTS_PER_ROUND):
                data = _request(rng, number + 3)
                await session.receive(_damaged(rng, data) if rng.random() < 0.3 else data)
                if session.closing:
                    break  # its refusal budget spent: closed, as a client sending garbage is
            for _ in range(20):
                await asyncio.sleep(0.005)
            drove += await _motors(gateway) != (0, 0)
            if session.closing:  # closed for its refusals: the next client stops the program it left
                session.finish()
                session = TdmSession(gateway.gateway.hub, TcpCapture(), "127.0.0.1", 0, shared=face.shared)
                session.start()
                await session.receive(message(ThymioFB.MESSAGE_TYPE_CONNECTION_HANDSHAKE))
            # The client stops its program (Thymio Suite's Stop), then goes.
            await session.receive(message(ThymioFB.MESSAGE_TYPE_LOCK_NODE, 90, (NODE,)))
            await session.receive(message(ThymioFB.MESSAGE_TYPE_SET_VM_EXECUTION_STATE, 91, (NODE,), STOP))
            session.finish()
            async with asyncio.timeout(5):
                while await _motors(gateway) != (0, 0):  # noqa: ASYNC110 (the robot is polled)
                    await asyncio.sleep(0.05)
        assert not errors.messages, errors.messages
        assert (await _motors(gateway)) == (0, 0)
    assert drove, "no round left the robot driving before its client went: the stop was not tested"
