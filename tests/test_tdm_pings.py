"""The TDM session's Pings, paced by a sleep the test releases by hand: one every `PING_PERIOD_S`, none before.

tdmclient's reader only stops after its next message, so the real TDM (and the gateway) ping every
2.5 s (pitfall P1); `test_tdm.py` sees one arrive over TCP, this checks the period without a clock.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tdmclient import FlatBuffer
from tdmclient.thymio import ThymioFB

from gateway.bus import Bus
from gateway.commands import CommandRouter
from gateway.core.client import Hub
from gateway.core.config import ServerConfig, SupervisorConfig
from gateway.faces.tdm.session import PING_PERIOD_S, TdmSession
from gateway.supervisor import Supervisor
from protocols.tdm.framing import frame
from tests.fuzzing import Capture


class TcpCapture(Capture):
    """A captured TDM connection framed as over TCP (a 4-byte little-endian length before each message)."""

    framing = "tcp"

    def frame(self, message: bytes) -> bytes:
        return frame(message)

    def kinds(self) -> list[int]:
        """The TDM message type of every message sent so far."""
        data, kinds = b"".join(self.frames), []
        while data:
            length = int.from_bytes(data[:4], "little")
            fb = FlatBuffer()
            fb.parse(data[4 : 4 + length], ThymioFB.SCHEMA)
            kinds.append(fb.root.union_type)
            data = data[4 + length :]
        return kinds


class ManualSleep:
    """Stands in for `asyncio.sleep`: records each delay (s) and returns when the test releases it."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self._releases: asyncio.Queue[None] = asyncio.Queue()

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await self._releases.get()

    def release(self) -> None:
        self._releases.put_nowait(None)


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


def _handshake() -> bytes:
    encoded: Any = ThymioFB.create_message((ThymioFB.MESSAGE_TYPE_CONNECTION_HANDSHAKE, ()), ThymioFB.SCHEMA)
    return bytes(encoded)


async def test_a_ping_follows_each_period_after_the_handshake_and_none_before() -> None:
    bus = Bus()
    supervisor = Supervisor(bus, SupervisorConfig(), ())
    hub = Hub(bus, supervisor, CommandRouter(supervisor, lambda *_: None), ServerConfig(), ())
    transport, sleep = TcpCapture(), ManualSleep()
    session = TdmSession(hub, transport, "127.0.0.1", 0, sleep=sleep)
    session.start()
    try:
        await _settle()
        assert sleep.delays == []  # nothing is sent, pings included, before the client's handshake
        await session.receive(_handshake())
        await _settle()
        assert ThymioFB.MESSAGE_TYPE_CONNECTION_HANDSHAKE in transport.kinds()
        assert ThymioFB.MESSAGE_TYPE_PING not in transport.kinds()
        assert sleep.delays == [PING_PERIOD_S]  # the first ping waits a whole period
        for count in (1, 2, 3):
            sleep.release()
            await _settle()
            assert transport.kinds().count(ThymioFB.MESSAGE_TYPE_PING) == count
            assert sleep.delays == [PING_PERIOD_S] * (count + 1)
    finally:
        session.finish()
    assert PING_PERIOD_S == 2.5  # the real TDM's period
