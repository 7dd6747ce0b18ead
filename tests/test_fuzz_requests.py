"""Fuzzing the native face's request handling: any JSON text or msgpack bytes gets answers, never a crash."""

from __future__ import annotations

import asyncio
from typing import Any

import msgpack
import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from gateway.errors import ErrorCode
from gateway.faces.native.session import Session
from gateway.servers.upgrade import receive_json_text
from gateway.wire import Encoding
from protocols.errors import ProtocolError
from protocols.msgpack_stream import MsgpackStreamReader
from tests.fuzzing import FUZZ_MAX_REQUEST_BYTES, Capture, fuzz_hub, fuzz_settings

pytestmark = pytest.mark.fuzz

OPS = ["auth", "ping", "list_devices", "describe", "subscribe", "unsubscribe", "command", "estop", "lock", "unlock"]
FIELDS = ["op", "id", "token", "type", "topics", "max_rate_hz", "subscription", "device", "data", "timeout_s", "force"]
scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats() | st.text(max_size=40)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
#: Maps of our field names with any values, and well-formed envelopes of every op with any fields.
requests = st.dictionaries(st.sampled_from(FIELDS), values, max_size=6) | st.builds(
    lambda op, rest: {**rest, "op": op, "id": 1},
    st.sampled_from(OPS),
    st.dictionaries(st.sampled_from(FIELDS[2:]), values, max_size=4),
)


def _size(request: dict[str, Any]) -> int:
    return len(orjson.dumps(request, default=str))


def _session(encoding: Encoding) -> tuple[Session, Capture]:
    capture = Capture(encoding)
    session = Session(fuzz_hub(), capture, "fuzz")
    session.start()
    return session, capture


def _results(capture: Capture) -> list[dict[str, Any]]:
    decoded = []
    for frame in capture.frames:
        if capture.encoding == "json":
            header = 2 if frame[1] < 126 else 4 if frame[1] == 126 else 10
            decoded.append(orjson.loads(frame[header:]))
        else:
            decoded.append(msgpack.unpackb(frame))
    return [message for message in decoded if message["op"] == "result"]


async def _settle(session: Session) -> None:
    for _ in range(5):
        await asyncio.sleep(0)
    session.finish()


@given(st.lists(requests, min_size=1, max_size=5))
@fuzz_settings(150)
def test_any_request_maps_get_one_result_each(batch: list[dict[str, Any]]) -> None:
    async def run() -> None:
        session, capture = _session("json")
        for request in batch:
            await session.receive(request, _size(request))
        await _settle(session)
        results = _results(capture)
        assert len(results) == len(batch), (batch, results)
        assert all(result["ok"] or result["error"]["code"] != "internal_error" for result in results), results

    asyncio.run(run())


@given(st.text(max_size=300) | requests.map(lambda r: orjson.dumps(r, default=str).decode()))
@fuzz_settings(200)
def test_any_websocket_text_gets_one_result(text: str) -> None:
    async def run() -> None:
        session, capture = _session("json")
        await receive_json_text(session, text, FUZZ_MAX_REQUEST_BYTES)
        await _settle(session)
        results = _results(capture)
        assert len(results) == 1, (text, results)
        assert results[0]["ok"] or results[0]["error"]["code"] != "internal_error", results

    asyncio.run(run())


@given(st.lists(st.binary(max_size=80) | requests.map(lambda r: msgpack.packb(r, default=str)), max_size=6))
@example([b"\x00" * 32, b"\x00" * 33])  # 65 requests refused: one past the refusal budget (make fuzz found it)
@fuzz_settings(150)
def test_any_msgpack_bytes_get_results_or_a_protocol_error(chunks: list[bytes]) -> None:
    async def run() -> None:
        session, capture = _session("msgpack")
        reader = MsgpackStreamReader(FUZZ_MAX_REQUEST_BYTES, 65536)
        handled = 0
        try:
            for chunk in chunks:
                reader.receive_data(chunk)
                while (message := reader.next_message()) is not None:
                    await session.receive(*message)
                    handled += 1
        except ProtocolError:
            pass
        await _settle(session)
        results = _results(capture)
        if capture.closed is None:
            assert len(results) == handled
        else:
            # Past `refusal_burst` refused requests (65 zero bytes are 65 ints, each refused) the
            # session closes instead of answering, and answers nothing after.
            assert capture.closed[0] is ErrorCode.RATE_LIMITED, capture.closed
            assert session.client.admission.refused_out
            assert len(results) < handled
        assert all(result["ok"] or result["error"]["code"] != "internal_error" for result in results), results

    asyncio.run(run())
