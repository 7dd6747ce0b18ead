"""A Thymio's UUID (Aseba DeviceInfo, protocol 6): asked by the adapter, answered by the simulator, made known.

The `aseba` adapter against the simulated Thymio over TCP: a robot that answers GetDeviceInfo gives
its device an identity (`DeviceContext.set_identity`, `capabilities()["uuid"]`) before the device
is connected; one that never answers (as Debian's playground does not) connects as before, without
one. The network's handling of DeviceInfo replies that name no robot, and the `sim_uuid` option.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import AsyncIterator

import pytest

from devices.aseba.adapter import AsebaAdapter
from devices.aseba.network import MAX_UUID_REQUESTS, AsebaNetwork
from devices.aseba.options import AsebaOptions
from devices.sim.thymio import SimulatedThymio
from protocols.aseba.framing import FrameReader
from protocols.aseba.messages import (
    PROTOCOL_VERSION,
    DeviceInfo,
    DeviceInfoType,
    Message,
    MessageType,
    WordMessage,
    decode,
    encode,
)
from tests.adapter_rig import AdapterRig

ROBOT_UUID = uuid.UUID("2b9e1c3a-0d4f-4e8b-9a6c-5f7e2d1b3c4a")


async def robot(answers: uuid.UUID | None) -> SimulatedThymio:
    started = SimulatedThymio(node_id=1, uuid=answers)
    await started.start()
    return started


@pytest.fixture
async def answering() -> AsyncIterator[SimulatedThymio]:
    started = await robot(ROBOT_UUID)
    yield started
    await started.stop()


@pytest.fixture
async def silent() -> AsyncIterator[SimulatedThymio]:
    started = await robot(None)
    yield started
    await started.stop()


def rig_for(sim: SimulatedThymio) -> AdapterRig[AsebaAdapter]:
    options = AsebaOptions(target=f"tcp:127.0.0.1;{sim.port}", list_nodes_period_ms=100, thymio_program=False)
    return AdapterRig(AsebaAdapter, "thymio", options)


async def test_a_uuid_reply_becomes_the_device_identity_before_it_is_connected(answering: SimulatedThymio) -> None:
    rig = rig_for(answering)
    rig.start()
    try:
        await rig.connected()
        assert rig.identities[-1] == str(ROBOT_UUID)
        # Known when "connected" was reported: a face folding duplicates never shows two.
        assert rig.adapter.capabilities()["uuid"] == str(ROBOT_UUID)
        assert rig.adapter.network is not None
        assert rig.adapter.network.nodes[1].uuid == ROBOT_UUID
    finally:
        await rig.stop()
    changes = [identity for identity, _ in itertools.groupby(rig.identities)]
    assert changes == [None, str(ROBOT_UUID)]  # unknown as the link opens, then told, and kept


async def test_a_node_that_never_answers_connects_without_an_identity(silent: SimulatedThymio) -> None:
    rig = rig_for(silent)
    rig.start()
    try:
        await rig.connected()
        network = rig.adapter.network
        assert network is not None
        # Asked again a few times (a frame lost on a radio link), then never again; nothing waited on it.
        await rig.until(lambda: network.nodes[1].uuid_requests == MAX_UUID_REQUESTS, timeout=10.0)
        await asyncio.sleep(0.3)
        assert rig.statuses[-1][0] == "connected"
        assert all(identity is None for identity in rig.identities)
        assert rig.adapter.capabilities()["uuid"] == ""
        assert network.nodes[1].uuid_requests == MAX_UUID_REQUESTS
    finally:
        await rig.stop()


class Link:
    """The writer side of an `AsebaNetwork` on no socket: the frames it sends, but its ListNodes."""

    def __init__(self) -> None:
        self._frames = FrameReader()

    def write(self, data: bytes) -> None:
        self._frames.feed(data)

    def sent(self) -> list[Message]:
        frames = [decode(frame) for frame in iter(self._frames.next, None)]
        return [m for m in frames if not (isinstance(m, WordMessage) and m.type is MessageType.LIST_NODES)]


async def test_the_network_keeps_a_16_byte_uuid_and_ignores_nil_short_and_other_infos() -> None:
    changes: list[uuid.UUID | None] = []
    link, reader = Link(), asyncio.StreamReader()
    network = AsebaNetwork(
        reader,
        link,  # type: ignore[arg-type]  # a network only writes to its writer until it closes
        on_node=lambda node: changes.append(node.uuid),
        on_event=lambda _: None,
    )
    serving = asyncio.create_task(network.serve())

    async def receive(message: DeviceInfo | WordMessage) -> None:
        reader.feed_data(encode(message))
        for _ in range(5):
            await asyncio.sleep(0)

    try:
        await receive(WordMessage(3, MessageType.NODE_PRESENT, (6,)))
        # Asked first: its one-frame answer comes before the description's hundred frames.
        assert [m.words if isinstance(m, WordMessage) else m for m in link.sent()] == [
            (3, DeviceInfoType.UUID),
            (3, PROTOCOL_VERSION),
        ]
        await receive(DeviceInfo(3, DeviceInfoType.UUID, bytes(16)))  # nil: names no robot
        await receive(DeviceInfo(3, DeviceInfoType.UUID, b"short"))
        await receive(DeviceInfo(3, DeviceInfoType.NAME, b"my thymio"))
        assert network.nodes[3].uuid is None
        await receive(DeviceInfo(3, DeviceInfoType.UUID, ROBOT_UUID.bytes))
        await receive(DeviceInfo(3, DeviceInfoType.UUID, ROBOT_UUID.bytes))  # the same again: nothing to report
        assert network.nodes[3].uuid == ROBOT_UUID
        assert changes == [None, ROBOT_UUID]  # present, then its UUID
        # A protocol 5 node (Debian's playground) is not asked; it is described as before.
        await receive(WordMessage(4, MessageType.NODE_PRESENT, (5,)))
        [asked] = link.sent()
        assert isinstance(asked, WordMessage)
        assert (asked.type, asked.words) == (MessageType.GET_NODE_DESCRIPTION, (4, PROTOCOL_VERSION))
        assert network.nodes[4].uuid_requests == 0
    finally:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)


def test_sim_uuid_must_be_a_uuid_that_names_a_robot() -> None:
    assert AsebaOptions(simulate=True, sim_uuid=str(ROBOT_UUID)).sim_uuid == str(ROBOT_UUID)
    with pytest.raises(ValueError, match="sim_uuid: 'robot-1' is not a UUID"):
        AsebaOptions(simulate=True, sim_uuid="robot-1")
    with pytest.raises(ValueError, match="nil UUID"):
        AsebaOptions(simulate=True, sim_uuid=str(uuid.UUID(int=0)))
