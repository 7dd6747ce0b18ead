"""The msgpack socket's stream reader: byte tables whole, byte by byte and concatenated; hostile input."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
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
    reader.receive_data(b"\x91" * 40)  # nested arrays: small headers, each promising one more byte
    assert reader.next_message() is None
    reader.receive_data(b"\x91" * 70)
    with pytest.raises(MessageTooLarge, match="exceeds the 100-byte limit"):
        reader.next_message()


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


@pytest.mark.parametrize(
    "header",
    [
        b"\xdb\xff\xff\xff\xff",  # str32 of 4 GiB
        b"\xc6\x00\x10\x00\x00",  # bin32 of 1 MiB
        b"\xc9\x00\x10\x00\x00\x01",  # ext32 of 1 MiB
        b"\xdd\x7f\xff\xff\xff",  # array32 of 2**31-1 elements
        b"\xdf\x00\x01\x00\x00",  # map32 of 65,536 pairs
        b"\x81\xa1k\xdb\x00\x01\x00\x00",  # a str32 inside a map
        b"\x92\xc4\xff" + b"x" * 255 + b"\xda\xff\x00",  # the second element of an array tips it over
    ],
)
def test_a_header_promising_too_much_is_refused_before_its_payload(header: bytes) -> None:
    reader = MsgpackStreamReader(1024)
    reader.receive_data(header)
    with pytest.raises(MessageTooLarge, match="promises a message of at least"):
        reader.next_message()
    with pytest.raises(MessageTooLarge):
        reader.receive_data(b"x")


def test_partial_bytes_count_the_unfinished_message_only() -> None:
    reader = MsgpackStreamReader(1024)
    whole = msgpack.packb({"op": "ping", "id": 1})
    reader.receive_data(whole + whole[:5])
    assert drain(reader) == [({"op": "ping", "id": 1}, len(whole))]
    assert reader.partial_bytes == 5
    reader.receive_data(whole[5:])
    assert drain(reader) == [({"op": "ping", "id": 1}, len(whole))]
    assert reader.partial_bytes == 0


@settings(max_examples=300)
@given(st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text()
                    | st.binary(), lambda inner: st.lists(inner, max_size=5)
                    | st.dictionaries(st.text(max_size=5), inner, max_size=5), max_leaves=20),
       st.integers(1, 50))  # fmt: skip
def test_the_size_guard_accepts_every_value_within_the_limit(value: object, chunk: int) -> None:
    packed = msgpack.packb(value, use_bin_type=True) + msgpack.packb(msgpack.ExtType(5, b"abc"))
    reader = MsgpackStreamReader(len(packed))
    got = []
    for start in range(0, len(packed), chunk):
        reader.receive_data(packed[start : start + chunk])
        got.extend(drain(reader))
    assert len(got) == 2
    assert reader.partial_bytes == 0
