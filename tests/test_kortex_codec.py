"""The pure Kortex codec: the spec's golden hex vectors, the TCP splitter, header bits, errors, protos."""

from __future__ import annotations

import contextlib
import importlib.util
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.errors import ProtocolError
from protocols.kortex.errors import ErrorCode, KortexError, SubErrorCodes, error_name, sub_error_code, sub_error_name
from protocols.kortex.frame import decode_error, decode_frame, encode_error, encode_frame, encode_notification
from protocols.kortex.framing import (
    MAGIC,
    MAX_TCP_FRAME_BYTES,
    MAX_UDP_FRAME_BYTES,
    TCP_HEADER_SIZE,
    TcpSplitter,
    check_udp,
    encode_tcp,
)
from protocols.kortex.generated import Frame_pb2, Session_pb2
from protocols.kortex.header import FrameType, Header, split_uid
from protocols.kortex.router import ErrorResponse, Notification, Ping, Response, Router, Unexpected
from protocols.kortex.services import Function
from tests.fuzzing import fuzz_settings

# -- golden vectors (spec kortex.md §1.1 and §1.4, computed there from the rules) ----------------------

#: CreateSession admin/admin, session timeout 60000 ms, connection timeout 2000 ms, message 1, session 0, on TCP.
GOLDEN_CREATE_SESSION_TCP = bytes.fromhex(
    "07784574526f4b07 0000002d 0a140d00000011 1501000000 1d01000110 2515000000"
    " 12150a0561646d696e10e0d4031a0561646d696e20d00f".replace(" ", "")
)
GOLDEN_CREATE_SESSION_FRAME = GOLDEN_CREATE_SESSION_TCP[TCP_HEADER_SIZE:]
GOLDEN_CREATE_SESSION_PAYLOAD = bytes.fromhex("0a0561646d696e10e0d4031a0561646d696e20d00f")
#: A UDP RefreshFeedback, session 3, message 5, no payload.
GOLDEN_REFRESH_FEEDBACK_UDP = bytes.fromhex("0a0f 0d00000011 1505000300 1d03000310".replace(" ", ""))


def create_session_info() -> bytes:
    return Session_pb2.CreateSessionInfo(
        username="admin", password="admin", session_inactivity_timeout=60000, connection_inactivity_timeout=2000
    ).SerializeToString()


def test_golden_create_session_encodes_exactly() -> None:
    router = Router()
    message_id, frame = router.request(Function.SESSION_CREATE_SESSION, create_session_info())
    assert message_id == 1
    assert len(frame) == 45
    assert encode_tcp(frame) == GOLDEN_CREATE_SESSION_TCP


def test_golden_create_session_decodes() -> None:
    [frame_bytes] = TcpSplitter().feed(GOLDEN_CREATE_SESSION_TCP)
    frame = decode_frame(frame_bytes)
    header = frame.header
    assert header.pack() == (0x11000000, 0x00000001, 0x10010001, 21)
    assert (header.header_version, header.frame_type, header.device_id) == (1, FrameType.REQUEST, 0)
    assert (header.session_id, header.message_id) == (0, 1)
    assert (header.service_version, header.service_id, header.function_id) == (1, 1, 1)
    assert header.function_uid == 0x10001
    assert Function.SESSION_CREATE_SESSION.value == 0x10001
    assert header.payload_length == 21 == len(frame.payload)
    info = Session_pb2.CreateSessionInfo.FromString(frame.payload)
    assert (info.username, info.password) == ("admin", "admin")
    assert (info.session_inactivity_timeout, info.connection_inactivity_timeout) == (60000, 2000)
    assert frame.payload == GOLDEN_CREATE_SESSION_PAYLOAD


def test_golden_refresh_feedback_round_trip() -> None:
    header = Header(frame_type=FrameType.REQUEST, session_id=3, message_id=5, service_id=3, function_id=3)
    assert header.pack() == (0x11000000, 0x00030005, 0x10030003, 0)
    assert encode_frame(header) == GOLDEN_REFRESH_FEEDBACK_UDP
    assert len(GOLDEN_REFRESH_FEEDBACK_UDP) == 17
    decoded = decode_frame(check_udp(GOLDEN_REFRESH_FEEDBACK_UDP))
    assert decoded.header == header
    assert decoded.payload == b""
    router = Router()
    router.session_id, router._message_id = 3, 4
    assert router.request(Function.BASE_CYCLIC_REFRESH_FEEDBACK) == (5, GOLDEN_REFRESH_FEEDBACK_UDP)


# -- the TCP splitter ---------------------------------------------------------------------------------


def frames_for_stream() -> list[bytes]:
    notification = encode_notification(Function.BASE_ARM_STATE_TOPIC, 7, 3, b"\x08\x04")
    return [GOLDEN_CREATE_SESSION_FRAME, GOLDEN_REFRESH_FEEDBACK_UDP, notification, b""]


def test_splitter_whole_and_byte_by_byte() -> None:
    frames = frames_for_stream()
    stream = b"".join(encode_tcp(frame) for frame in frames)
    assert TcpSplitter().feed(stream) == frames
    splitter = TcpSplitter()
    received = [frame for byte in stream for frame in splitter.feed(bytes([byte]))]
    assert received == frames
    assert splitter.buffered == 0
    assert splitter.discarded_bytes == 0


def test_splitter_split_at_every_byte() -> None:
    frames = frames_for_stream()
    stream = b"".join(encode_tcp(frame) for frame in frames)
    for cut in range(len(stream) + 1):
        splitter = TcpSplitter()
        assert splitter.feed(stream[:cut]) + splitter.feed(stream[cut:]) == frames, cut


@pytest.mark.parametrize(
    "garbage",
    [b"x", b"\x07xEtRo", b"\x00" * 100, MAGIC[:-1] + b"!", b"noise\x07\x07xEtR"],
    ids=["one-byte", "partial-magic", "zeros", "broken-magic", "magic-prefixes"],
)
def test_splitter_skips_garbage_before_the_magic(garbage: bytes) -> None:
    stream = garbage + encode_tcp(GOLDEN_CREATE_SESSION_FRAME) + garbage + encode_tcp(GOLDEN_REFRESH_FEEDBACK_UDP)
    splitter = TcpSplitter()
    assert splitter.feed(stream) == [GOLDEN_CREATE_SESSION_FRAME, GOLDEN_REFRESH_FEEDBACK_UDP]
    assert splitter.discarded_bytes == 2 * len(garbage)
    splitter = TcpSplitter()
    assert [frame for byte in stream for frame in splitter.feed(bytes([byte]))] == [
        GOLDEN_CREATE_SESSION_FRAME,
        GOLDEN_REFRESH_FEEDBACK_UDP,
    ]


def test_splitter_keeps_only_a_possible_magic_start_of_endless_garbage() -> None:
    splitter = TcpSplitter()
    assert splitter.feed(b"\xff" * 100_000) == []
    assert splitter.buffered == len(MAGIC) - 1
    assert splitter.discarded_bytes == 100_000 - (len(MAGIC) - 1)


def test_splitter_refuses_oversized_lengths() -> None:
    with pytest.raises(ProtocolError, match=f"length {MAX_TCP_FRAME_BYTES + 1} exceeds the limit of "):
        TcpSplitter().feed(MAGIC + (MAX_TCP_FRAME_BYTES + 1).to_bytes(4, "big"))
    with pytest.raises(ProtocolError, match="length 4294967295 exceeds the limit of 16777216 bytes"):
        TcpSplitter().feed(MAGIC + b"\xff\xff\xff\xff")
    small = TcpSplitter(max_frame_bytes=16)
    assert small.feed(MAGIC + (16).to_bytes(4, "big") + bytes(16)) == [bytes(16)]
    with pytest.raises(ProtocolError, match=r"length 17 exceeds the limit of 16 bytes \(max_frame_bytes\)"):
        small.feed(MAGIC + (17).to_bytes(4, "big"))


def test_sizes_refused_on_send() -> None:
    with pytest.raises(ProtocolError, match="exceeds the UDP limit of 65507 bytes"):
        check_udp(bytes(MAX_UDP_FRAME_BYTES + 1))
    assert check_udp(bytes(MAX_UDP_FRAME_BYTES)) == bytes(MAX_UDP_FRAME_BYTES)


@given(st.lists(st.binary(max_size=300), max_size=6), st.binary(max_size=40), st.integers(min_value=1, max_value=64))
@pytest.mark.fuzz
@fuzz_settings(100)
def test_splitter_round_trips_any_frames_in_any_chunks(frames: list[bytes], garbage: bytes, chunk: int) -> None:
    garbage = garbage.replace(b"\x07", b"")  # garbage holding a magic would be a frame
    stream = garbage + b"".join(encode_tcp(frame) for frame in frames)
    splitter = TcpSplitter()
    received = [
        frame for start in range(0, len(stream), chunk) for frame in splitter.feed(stream[start : start + chunk])
    ]
    assert received == frames


@given(st.binary(max_size=2000))
@pytest.mark.fuzz
@fuzz_settings(100)
def test_no_input_crashes_the_decoders(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        TcpSplitter(max_frame_bytes=1000).feed(data)
    with contextlib.suppress(ProtocolError):
        Router().receive(data)


# -- header bits -------------------------------------------------------------------------------------

_FIELD_BITS = {
    "frame_type": 4,
    "session_id": 16,
    "message_id": 16,
    "service_id": 12,
    "function_id": 16,
    "device_id": 8,
    "error_code": 4,
    "error_sub_code": 12,
    "payload_length": 24,
    "header_version": 4,
    "service_version": 4,
    "payload_reserved": 8,
}


@given(st.fixed_dictionaries({name: st.integers(0, (1 << bits) - 1) for name, bits in _FIELD_BITS.items()}))
def test_header_pack_unpack_round_trip(fields: dict[str, Any]) -> None:
    header = Header(**fields)
    words = header.pack()
    assert all(0 <= word <= 0xFFFFFFFF for word in words)
    assert Header.unpack(*words) == header


def test_header_bit_positions() -> None:
    header = Header(
        frame_type=0x5,
        device_id=0xAB,
        error_code=0x3,
        error_sub_code=0xCDE,
        session_id=0x1234,
        message_id=0x5678,
        service_id=0x9AB,
        function_id=0xCDEF,
        payload_length=0x123456,
        payload_reserved=0x7F,
    )
    assert header.pack() == (0x15AB3CDE, 0x12345678, 0x19ABCDEF, 0x7F123456)
    assert header.function_uid == 0x9ABCDEF
    assert split_uid(0x200B0) == (2, 0xB0)


@pytest.mark.parametrize(("name", "value"), [("device_id", 256), ("message_id", 1 << 16), ("frame_type", 16)])
def test_header_fields_must_fit(name: str, value: int) -> None:
    with pytest.raises(ProtocolError, match=f"header {name} {value} does not fit"):
        Header(**{"frame_type": 1, name: value})


def test_header_words_must_fit() -> None:
    with pytest.raises(ProtocolError, match="header word service_info 4294967296 does not fit 32 bits"):
        Header.unpack(0, 0, 1 << 32, 0)


# -- frames, errors, router --------------------------------------------------------------------------


def test_error_codes_by_name() -> None:
    assert error_name(3) == "ERROR_DEVICE"
    assert error_name(9) == "ERROR_9"
    assert sub_error_name(12) == "INVALID_SESSION"
    assert sub_error_name(5) == "UNSUPPORTED_METHOD"
    assert sub_error_name(108) == "ROUTER_UNVAILABLE"
    assert sub_error_name(143) == "WRONG_MODE"
    assert sub_error_name(999) == "SUB_ERROR_999"
    assert sub_error_code("ROBOT_IN_FAULT") == 22
    assert sub_error_code("WRONG_SERVOING_MODE") == 75
    with pytest.raises(KeyError, match="NO_SUCH"):
        sub_error_code("NO_SUCH")
    # The IntEnum mirrors the generated enum exactly.
    assert {code.name: code.value for code in ErrorCode} == dict(Frame_pb2.ErrorCodes.items())
    assert len(SubErrorCodes.keys()) > 100


def test_error_response_decoded_from_payload_and_header() -> None:
    request = Header(frame_type=FrameType.REQUEST, session_id=4, message_id=9, service_id=2, function_id=48)
    frame = decode_frame(encode_error(request, ErrorCode.ERROR_DEVICE, 22, "arm in fault"))
    assert frame.is_error
    assert (frame.header.error_code, frame.header.error_sub_code, frame.header.frame_type) == (
        3,
        22,
        FrameType.RESPONSE,
    )
    error = decode_error(frame)
    assert error == KortexError(3, 22, "arm in fault", 2, 48)
    assert str(error) == "ERROR_DEVICE/ROBOT_IN_FAULT <srv: 2, fct: 48>: arm in fault"
    # No payload: the header's nibbles are all there is.
    bare = Header(
        frame_type=FrameType.RESPONSE, message_id=9, error_code=1, error_sub_code=5, service_id=3, function_id=2
    )
    assert decode_error(decode_frame(encode_frame(bare))) == KortexError(1, 5, "", 3, 2)


def test_router_classifies_frames_and_learns_the_session() -> None:
    router = Router()
    assert router.next_message_id() == 1
    response = Header(frame_type=FrameType.RESPONSE, session_id=42, message_id=1, service_id=1, function_id=1)
    event = router.receive(encode_frame(response))
    assert isinstance(event, Response)
    assert event.message_id == 1
    assert router.session_id == 42
    _, data = router.request(Function.SESSION_KEEP_ALIVE)
    assert decode_frame(data).header.session_id == 42
    error = Header(frame_type=FrameType.RESPONSE, message_id=2, error_code=1, error_sub_code=12)
    event = router.receive(encode_frame(error))
    assert isinstance(event, ErrorResponse)
    assert event.error.sub_name == "INVALID_SESSION"
    assert router.session_id == 42  # an error response teaches nothing
    event = router.receive(encode_notification(Function.BASE_ARM_STATE_TOPIC, 7, 42, b"\x08\x04"))
    assert isinstance(event, Notification)
    assert (event.service_id, event.handle, event.frame.payload) == (2, 7, b"\x08\x04")
    event = router.receive(encode_frame(Header(frame_type=FrameType.PING, session_id=42, message_id=77)))
    assert isinstance(event, Ping)
    assert decode_frame(event.reply).header == Header(frame_type=FrameType.PONG, session_id=42, message_id=77)
    assert isinstance(router.receive(encode_frame(Header(frame_type=FrameType.RAW))), Unexpected)
    router.reset()
    assert router.session_id == 0


def test_message_ids_wrap_like_the_vendors() -> None:
    router = Router()
    router._message_id = 0xFFFE
    assert [router.next_message_id() for _ in range(3)] == [0xFFFF, 0, 1]


def test_decode_frame_refuses_non_frames() -> None:
    with pytest.raises(ProtocolError, match="not a Kortex Frame"):
        decode_frame(b"\x0a\xff")
    with pytest.raises(ProtocolError, match="Kortex Frame without a header"):
        decode_frame(b"\x12\x00")


# -- generated code ----------------------------------------------------------------------------------


def test_generated_code_matches_a_fresh_regeneration() -> None:
    script = Path(__file__).resolve().parent.parent / "scripts" / "gen-kortex-protos.py"
    spec = importlib.util.spec_from_file_location("gen_kortex_protos", script)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with tempfile.TemporaryDirectory() as fresh:
        module.generate(Path(fresh))
        assert module.differences(Path(fresh), module.GENERATED_DIR) == []
