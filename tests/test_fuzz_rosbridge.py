"""Fuzzing the rosbridge face: any JSON text, CBOR bytes or request map is answered, never a crash."""

from __future__ import annotations

import asyncio
from typing import Any

import cbor2
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from devices.registry import KINDS
from gateway.core.config import DeviceConfig
from gateway.faces.rosbridge.ops import RosbridgeSession
from gateway.faces.rosbridge.server import _receive_binary
from gateway.ros.names import RosNames, namings_of
from gateway.servers.upgrade import receive_json_text
from tests.fuzzing import FUZZ_MAX_REQUEST_BYTES, Capture, fuzz_hub, fuzz_settings

pytestmark = pytest.mark.fuzz

OPS = ["auth", "subscribe", "unsubscribe", "advertise", "publish", "unadvertise", "call_service", "set_level", "x"]
FIELDS = ["op", "id", "topic", "type", "msg", "service", "args", "compression", "throttle_rate", "queue_length"]
FIELDS += ["fragment_size", "level", "mac", "timeout"]
NAMES = ["/sim_1/state", "/sim_1/cmd/led", "sim_1/cmd/led", "/rosapi/topics", "rosapi/message_details", "/nope", ""]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats()
    | st.text(max_size=30)
    | st.sampled_from(NAMES)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
requests = st.dictionaries(st.sampled_from(FIELDS), values, max_size=6) | st.builds(
    lambda op, rest: {**rest, "op": op, "id": "r"},
    st.sampled_from(OPS),
    st.dictionaries(st.sampled_from(FIELDS[2:]), values, max_size=5),
)


def _session() -> tuple[RosbridgeSession, Capture]:
    devices = (DeviceConfig("sim-1", "sim", True, _sim_options()),)
    capture = Capture()
    session = RosbridgeSession(fuzz_hub(devices), RosNames(namings_of(devices, KINDS)), capture, "fuzz")
    session.start()
    return session, capture


def _sim_options() -> Any:
    return KINDS.options_class("sim")()


def _messages(capture: Capture) -> list[dict[str, Any]]:
    """Every message in the written bytes (one write may hold several frames: fragments)."""
    data = b"".join(capture.frames)
    decoded = []
    while data:
        binary, length, header = data[0] == 0x82, data[1], 2
        if length == 126:
            length, header = int.from_bytes(data[2:4]), 4
        elif length == 127:
            length, header = int.from_bytes(data[2:10]), 10
        payload, data = data[header : header + length], data[header + length :]
        decoded.append(cbor2.loads(payload) if binary else orjson.loads(payload))
    return decoded


async def _settle(session: RosbridgeSession) -> None:
    for _ in range(5):
        await asyncio.sleep(0)
    session.finish()


def _no_internal_error(messages: list[dict[str, Any]]) -> None:
    for message in messages:
        assert message["op"] in ("status", "service_response", "publish", "fragment"), message
        text = message.get("msg") if message["op"] == "status" else message.get("values")
        assert "internal_error" not in str(text), message


@given(st.lists(requests, min_size=1, max_size=5))
@fuzz_settings(100)
def test_any_request_maps_are_answered_without_internal_errors(batch: list[dict[str, Any]]) -> None:
    async def run() -> None:
        session, capture = _session()
        for request in batch:
            await session.receive(request, len(orjson.dumps(request, default=str)))
        await _settle(session)
        _no_internal_error(_messages(capture))

    asyncio.run(run())


@given(st.text(max_size=300) | requests.map(lambda r: orjson.dumps(r, default=str).decode()))
@fuzz_settings(100)
def test_any_websocket_text_is_answered_or_served(text: str) -> None:
    async def run() -> None:
        session, capture = _session()
        await receive_json_text(session, text, FUZZ_MAX_REQUEST_BYTES)
        await _settle(session)
        _no_internal_error(_messages(capture))

    asyncio.run(run())


@given(st.binary(max_size=120) | requests.map(lambda r: cbor2.dumps(r, default=lambda e, v: e.encode(str(v)))))
@fuzz_settings(100)
def test_any_binary_frame_is_answered_or_served(data: bytes) -> None:
    async def run() -> None:
        session, capture = _session()
        await _receive_binary(session, data)
        await _settle(session)
        _no_internal_error(_messages(capture))

    asyncio.run(run())
