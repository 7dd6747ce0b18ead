"""The msgpack socket's stream reader: byte tables whole, byte by byte and concatenated; hostile input."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.errors import ProtocolError
from protocols.msgpack_stream import MessageTooLarge, MsgpackStreamReader
from tests.fuzzing import fuzz_settings

MESSAGES = [
    {"op": "ping", "id": 1},
    {"op": "subscribe", "id": "s-1", "topics": ["sim-1/**"], "max_rate_hz": 30.5},
    {"op": "command", "id": 3, "device": "d", "type": "led", "data": {"rgb": [1, 0, 0.5]}},
    [1, 2, 3],
    "not a map",
]
STREAM = b"".join(msgpack.packb(m) for m in MESSAGES)


def drain(reader: MsgpackStreamReader) -> list[tuple[object, int]]:
    out = []
    while (message := reader.next_message()) is not None:
        out.append(message)
    return out


def expected() -> list[tuple[object, int]]:
    return [(m, len(msgpack.packb(m))) for m in MESSAGES]


def test_whole_stream() -> None:
    reader = MsgpackStreamReader(1024)
    reader.receive_data(STREAM)
    assert drain(reader) == expected()


def test_byte_by_byte() -> None:
    reader = MsgpackStreamReader(1024)
    got = []
    for byte in STREAM:
        reader.receive_data(bytes([byte]))
        got.extend(drain(reader))
    assert got == expected()


def test_split_at_every_position() -> None:
    for cut in range(len(STREAM) + 1):
        reader = MsgpackStreamReader(1024)
        reader.receive_data(STREAM[:cut])
        got = drain(reader)
        reader.receive_data(STREAM[cut:])
        got.extend(drain(reader))
        assert got == expected(), cut


def test_garbage_after_good_messages_keeps_them_then_fails_for_good() -> None:
    reader = MsgpackStreamReader(1024)
    reader.receive_data(msgpack.packb({"op": "ping", "id": 1}) + b"\xc1\x00")
    assert reader.next_message() == ({"op": "ping", "id": 1}, 13)
    with pytest.raises(ProtocolError, match=r"undecodable msgpack at stream byte 13 \(FormatError"):
        reader.next_message()
    with pytest.raises(ProtocolError):
        reader.receive_data(b"\x90")


def test_message_over_the_limit() -> None:
    reader = MsgpackStreamReader(100, read_size=64)
    reader.receive_data(msgpack.packb("x" * 150))
    with pytest.raises(MessageTooLarge, match="a message of 152 bytes exceeds the 100-byte limit"):
        reader.next_message()


def test_buffer_cannot_grow_past_the_limit() -> None:
    reader = MsgpackStreamReader(100, read_size=64)
    header = msgpack.packb("x" * 100_000)[:5]
    reader.receive_data(header)
    assert reader.next_message() is None
    with pytest.raises(MessageTooLarge, match="exceeds the 100-byte limit"):
        reader.receive_data(b"x" * 200)


def test_deep_nesting_is_refused() -> None:
    reader = MsgpackStreamReader(1 << 20)
    reader.receive_data(b"\x91" * 5000 + b"\x00")
    with pytest.raises(ProtocolError, match="StackError"):
        reader.next_message()


def test_unhashable_map_key_is_refused() -> None:
    reader = MsgpackStreamReader(1024)
    reader.receive_data(b"\x81\x80\x00")  # {{}: 0}
    with pytest.raises(ProtocolError, match="undecodable"):
        reader.next_message()


@pytest.mark.fuzz
@fuzz_settings(500)
@given(chunks=st.lists(st.binary(max_size=64), max_size=8))
def test_no_input_crashes_or_hangs(chunks: list[bytes]) -> None:
    reader = MsgpackStreamReader(256, read_size=64)
    try:
        for chunk in chunks:
            reader.receive_data(chunk)
            for _ in range(len(chunk) + 1):
                if reader.next_message() is None:
                    break
    except ProtocolError:
        pass
