"""Fuzzing the Foxglove face: any binary client message decodes or is refused by name; any frame is answered."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from devices.registry import KINDS
from gateway.bus import Bus
from gateway.commands import CommandRouter
from gateway.core.client import Hub
from gateway.core.config import DeviceConfig, ServerConfig, SupervisorConfig
from gateway.faces.foxglove import wire
from gateway.faces.foxglove.catalog import Catalog
from gateway.faces.foxglove.session import FoxgloveSession
from gateway.supervisor import Supervisor
from protocols.errors import ProtocolError
from tests.fuzzing import Capture, fuzz_settings

pytestmark = pytest.mark.fuzz

OPS = ["subscribe", "unsubscribe", "advertise", "unadvertise", "getParameters", "setParameters", "nope"]
FIELDS = ["op", "subscriptions", "subscriptionIds", "channels", "channelIds", "parameterNames", "parameters", "id"]
scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats() | st.text(max_size=20)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
requests = st.dictionaries(st.sampled_from(FIELDS), values, max_size=5) | st.builds(
    lambda op, rest: {**rest, "op": op}, st.sampled_from(OPS), st.dictionaries(st.sampled_from(FIELDS[1:]), values)
)
binaries = st.binary(max_size=80) | st.builds(
    lambda opcode, body: bytes((opcode,)) + body, st.sampled_from([1, 2, 3]), st.binary(max_size=40)
)


@given(binaries)
@fuzz_settings(300)
def test_any_binary_client_message_decodes_or_is_refused_by_name(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        message = wire.parse_client_binary(data)
        assert isinstance(message, wire.ClientMessageData | wire.ServiceCallRequest)


def _session() -> FoxgloveSession:
    bus = Bus()
    devices = (DeviceConfig("sim-1", "sim", True, KINDS.options_class("sim")()),)
    supervisor = Supervisor(bus, SupervisorConfig(), devices, KINDS)
    hub = Hub(bus, supervisor, CommandRouter(supervisor, lambda *_: None), ServerConfig(max_request_bytes=4096), ())
    info: dict[str, Any] = {"op": "serverInfo", "name": "fuzz", "capabilities": [], "sessionId": "fuzz"}
    session = FoxgloveSession(hub, Catalog(), Capture(), "fuzz", wire.SDK_V1, info, None)
    session.start()
    return session


@given(st.lists(st.text(max_size=200) | requests.map(lambda r: orjson.dumps(r, default=str).decode()), max_size=4))
@fuzz_settings(100)
def test_any_text_frames_leave_the_session_serving(texts: list[str]) -> None:
    async def run() -> None:
        session = _session()
        for text in texts:
            await session.receive_text(text)
        for _ in range(5):
            await asyncio.sleep(0)
        session.finish()

    asyncio.run(run())


@given(st.lists(binaries, max_size=4))
@fuzz_settings(100)
def test_any_binary_frames_leave_the_session_serving(frames: list[bytes]) -> None:
    async def run() -> None:
        session = _session()
        for frame in frames:
            await session.receive_binary(frame)
        for _ in range(5):
            await asyncio.sleep(0)
        session.finish()

    asyncio.run(run())
