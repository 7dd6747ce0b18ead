"""The WebSocket meter (RFC 6455 section 5.2): frame and message boundaries, fed whole, byte by byte, split anywhere."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.errors import ProtocolError
from protocols.websocket_meter import WebSocketMeter

TEXT, CONTINUATION, BINARY, PING = 0x1, 0x0, 0x2, 0x9


def frame(payload: bytes, opcode: int = TEXT, final: bool = True, masked: bool = True) -> bytes:
    """One client frame (masked with a zero key, so the payload reads as it is)."""
    head = bytes([(0x80 if final else 0) | opcode])
    mask = 0x80 if masked else 0
    if len(payload) < 126:
        head += bytes([mask | len(payload)])
    elif len(payload) < 1 << 16:
        head += bytes([mask | 126]) + len(payload).to_bytes(2, "big")
    else:
        head += bytes([mask | 127]) + len(payload).to_bytes(8, "big")
    return head + (b"\0\0\0\0" if masked else b"") + payload


STREAM = (
    frame(b"x")
    + frame(b"")
    + frame(b"a" * 200)  # 16-bit length
    + frame(b"b" * 70_000, BINARY)  # 64-bit length
    + frame(b"part", final=False)
    + frame(b"", PING)  # a control frame inside a fragmented message
    + frame(b"-end", CONTINUATION)
)
MESSAGES = 5


def test_a_stream_fed_whole_counts_its_messages_and_ends_on_a_boundary() -> None:
    meter = WebSocketMeter(1 << 20)
    assert meter.feed(STREAM) == (len(STREAM), len(STREAM), MESSAGES)
    assert meter.partial_bytes == 0


def test_byte_by_byte_the_boundary_comes_with_the_last_byte_of_each_frame() -> None:
    meter = WebSocketMeter(1 << 20)
    messages = 0
    boundaries = []
    for index in range(len(STREAM)):
        end, boundary, ended = meter.feed(STREAM[: index + 1], index)
        assert end == index + 1
        messages += ended
        if boundary == index + 1:
            boundaries.append(index + 1)
    assert messages == MESSAGES
    assert len(boundaries) == 7  # every frame, the control frame included
    assert boundaries[-1] == len(STREAM)


def test_a_cut_frame_is_partial_and_the_boundary_stays_before_it() -> None:
    meter = WebSocketMeter(1 << 20)
    whole = frame(b"ok")
    cut = frame(b"y" * 1000)[:500]
    end, boundary, messages = meter.feed(whole + cut)
    assert (end, boundary, messages) == (len(whole) + 500, len(whole), 1)
    assert meter.partial_bytes == meter.partial_frame_bytes == 500


def test_a_header_cut_anywhere_is_carried_over() -> None:
    data = frame(b"z" * 70_000) + frame(b"q")
    for cut in range(1, 14):
        meter = WebSocketMeter(1 << 20)
        first = meter.feed(data[:cut])
        second = meter.feed(data, cut)
        assert first[0] == cut
        assert first[2] == 0
        assert second == (len(data), len(data), 2), cut


def test_max_messages_stops_right_after_the_last_one_allowed() -> None:
    data = frame(b"1") + frame(b"2") + frame(b"3")
    meter = WebSocketMeter(1 << 20)
    end, boundary, messages = meter.feed(data, 0, 2)
    assert (end, boundary, messages) == (14, 14, 2)
    assert meter.feed(data, end, 2) == (len(data), len(data), 1)


@pytest.mark.parametrize(
    "data",
    [
        # One 4 GiB frame: refused once its 14-byte header is in, before any payload.
        frame(b"", BINARY)[:1] + bytes([0x80 | 127]) + (4 << 30).to_bytes(8, "big") + b"\0\0\0\0",
        # A fragmented message over 1 KiB: refused at the header of the fragment that takes it over.
        frame(b"a" * 600, final=False) + frame(b"b" * 600, CONTINUATION)[:8],
    ],
)
def test_a_header_announcing_too_much_is_refused_once_read(data: bytes) -> None:
    with pytest.raises(ProtocolError, match="over the 1024-byte limit"):
        WebSocketMeter(1024).feed(data)
    meter = WebSocketMeter(1024)
    meter.feed(data[:-1])  # one byte short of the header: nothing to refuse yet


def test_control_frames_do_not_count_toward_the_message_limit() -> None:
    data = frame(b"a" * 1000, final=False) + frame(b"p" * 100, PING) + frame(b"b" * 24, CONTINUATION)
    assert WebSocketMeter(1024).feed(data) == (len(data), len(data), 1)


@given(st.lists(st.integers(min_value=1, max_value=len(STREAM)), max_size=12))
def test_any_split_gives_the_same_messages(cuts: list[int]) -> None:
    meter = WebSocketMeter(1 << 20)
    points = sorted({0, *cuts, len(STREAM)})
    messages = 0
    for start, stop in itertools.pairwise(points):
        end, boundary, ended = meter.feed(STREAM[:stop], start)
        assert end == stop
        assert start <= boundary <= stop
        messages += ended
    assert messages == MESSAGES
    assert meter.partial_bytes == 0
