"""Fuzzing the Foxglove face: any binary client message decodes or is refused by name; any frame is answered.

The session catches every exception of a request itself (it logs it and answers `internal error`),
so "the session keeps serving" alone could not fail: the frame tests read what the session wrote and
what it logged, and an internal error in either fails them, as the rosbridge twin does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
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


def _session(capture: Capture) -> FoxgloveSession:
    bus = Bus()
    devices = (DeviceConfig("sim-1", "sim", True, KINDS.options_class("sim")()),)
    supervisor = Supervisor(bus, SupervisorConfig(), devices, KINDS)
    hub = Hub(bus, supervisor, CommandRouter(supervisor, lambda *_: None), ServerConfig(max_request_bytes=4096), ())
    info: dict[str, Any] = {"op": "serverInfo", "name": "fuzz", "capabilities": [], "sessionId": "fuzz"}
    session = FoxgloveSession(hub, Catalog(), capture, "fuzz", wire.SDK_V1, info, None)
    session.start()
    return session


def _frames(capture: Capture) -> list[tuple[int, bytes]]:
    """(opcode, payload) of every unmasked WebSocket frame the session wrote."""
    data = b"".join(capture.frames)
    frames = []
    while data:
        opcode, length, header = data[0] & 0x0F, data[1], 2
        if length == 126:
            length, header = int.from_bytes(data[2:4]), 4
        elif length == 127:
            length, header = int.from_bytes(data[2:10]), 10
        frames.append((opcode, data[header : header + length]))
        data = data[header + length :]
    return frames


#: What the server may send a client, JSON ops and binary opcodes (1 message data, 3 service call response).
_SERVER_OPS = {"serverInfo", "advertise", "unadvertise", "advertiseServices", "unadvertiseServices", "status"}
_SERVER_OPS |= {"removeStatus", "parameterValues", "serviceCallFailure", "connectionGraphUpdate"}
_SERVER_BINARY = {wire.MESSAGE_DATA, wire.SERVICE_CALL_RESPONSE}


def _no_internal_error(capture: Capture, logged: list[logging.LogRecord]) -> None:
    """Every frame is a server message naming no internal error, and the face logged no error."""
    for opcode, payload in _frames(capture):
        if opcode == 0x1:
            message = orjson.loads(payload)
            assert message["op"] in _SERVER_OPS, message
            assert "internal" not in str(message.get("message", "")), message
        else:
            assert opcode == 0x2, (opcode, payload)
            assert payload[0] in _SERVER_BINARY, payload
            assert b"internal" not in payload, payload
    assert not logged, [record.getMessage() for record in logged]


class _Errors(logging.Handler):
    """Keeps the error records (a request's caught exception is logged at ERROR)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def _logged_errors() -> Iterator[list[logging.LogRecord]]:
    """The ERROR records the gateway's loggers emit meanwhile."""
    handler = _Errors()
    logger = logging.getLogger("gateway")
    logger.addHandler(handler)
    try:
        yield handler.records
    finally:
        logger.removeHandler(handler)


async def _settle(session: FoxgloveSession) -> None:
    for _ in range(5):
        await asyncio.sleep(0)
    session.finish()


@given(st.lists(st.text(max_size=200) | requests.map(lambda r: orjson.dumps(r, default=str).decode()), max_size=4))
@fuzz_settings(100)
def test_any_text_frames_are_answered_without_internal_errors(texts: list[str]) -> None:
    async def run() -> None:
        capture = Capture()
        with _logged_errors() as logged:
            session = _session(capture)
            for text in texts:
                await session.receive_text(text)
            await _settle(session)
        _no_internal_error(capture, logged)

    asyncio.run(run())


@given(st.lists(binaries, max_size=4))
@fuzz_settings(100)
def test_any_binary_frames_are_answered_without_internal_errors(frames: list[bytes]) -> None:
    async def run() -> None:
        capture = Capture()
        with _logged_errors() as logged:
            session = _session(capture)
            for frame in frames:
                await session.receive_binary(frame)
            await _settle(session)
        _no_internal_error(capture, logged)

    asyncio.run(run())
