"""The sans-I/O Aseba codec: framing limits, every message type, description assembly, split replies."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.aseba.description import DescriptionAssembler, VariablesReassembly
from protocols.aseba.framing import MAX_PAYLOAD, Frame, FrameReader, encode_frame
from protocols.aseba.messages import (
    Description,
    DeviceInfo,
    LocalEventDescription,
    Message,
    MessageType,
    NamedVariableDescription,
    NativeFunctionDescription,
    NodeSpecificError,
    RawMessage,
    UserMessage,
    WordMessage,
    command,
    decode,
    encode,
)
from protocols.errors import ProtocolError
from tests.fuzzing import fuzz_settings

#: The 100 description frames of asebaplayground's simulated Thymio (captured, in the shared data/ folder).
VECTOR = Path(__file__).parent / "data" / "thymio-playground-description.json"


def frames_of(data: bytes) -> list[Frame]:
    reader = FrameReader()
    reader.feed(data)
    frames = []
    while (frame := reader.next()) is not None:
        frames.append(frame)
    return frames


def test_header_is_little_endian_length_source_type() -> None:
    assert encode_frame(1, 0x900C, b"\x05\x00") == bytes.fromhex("020001000c900500")
    assert command(MessageType.LIST_NODES, 5) == bytes.fromhex("02000000 11a0 0500".replace(" ", ""))


def test_reader_splits_a_stream_fed_byte_by_byte() -> None:
    stream = encode(UserMessage(3, 7, (1, -2))) + command(MessageType.RUN, 3)
    reader = FrameReader()
    out = []
    for byte in stream:
        reader.feed(bytes((byte,)))
        while (frame := reader.next()) is not None:
            out.append(decode(frame))
    assert out == [UserMessage(3, 7, (1, -2)), WordMessage(0, MessageType.RUN, (3,))]


def test_hostile_length_is_rejected_naming_the_limit() -> None:
    reader = FrameReader()
    reader.feed(struct.pack("<HHH", MAX_PAYLOAD + 1, 1, 0x9005) + b"\x00" * 10)
    with pytest.raises(ProtocolError, match="516"):
        reader.next()
    assert reader.hunting
    with pytest.raises(ProtocolError, match="516"):
        encode_frame(0, 1, b"\x00" * (MAX_PAYLOAD + 2))


def test_reader_resynchronizes_on_the_next_node_present() -> None:
    present = encode(WordMessage(1, MessageType.NODE_PRESENT, (5,)))
    variables = encode(WordMessage(1, MessageType.VARIABLES, (10, 1, 2)))
    reader = FrameReader()
    # A header announcing 5 bytes swallows part of the next frame: the framing is lost.
    reader.feed(b"\x05\x00\x01\x00\x05\x90\x01" + variables + variables)
    junk = reader.next()
    assert junk is not None
    with pytest.raises(ProtocolError):
        decode(junk)
    reader.resynchronize()
    for chunk in (variables[:3], variables[3:] + present[:4], present[4:], variables):
        reader.feed(chunk)
    frames = []
    while (frame := reader.next()) is not None:
        frames.append(decode(frame))
    assert frames == [WordMessage(1, MessageType.NODE_PRESENT, (5,)), WordMessage(1, MessageType.VARIABLES, (10, 1, 2))]
    assert not reader.hunting


def test_truncated_payloads_and_odd_word_counts_are_protocol_errors() -> None:
    with pytest.raises(ProtocolError, match="truncated"):
        decode(Frame(1, MessageType.DESCRIPTION, b"\x09thymio"))
    with pytest.raises(ProtocolError, match="odd"):
        decode(Frame(1, 5, b"\x01\x02\x03"))
    with pytest.raises(ProtocolError, match="start address"):
        decode(Frame(1, MessageType.VARIABLES, b""))


def test_unknown_types_are_kept_raw() -> None:
    assert decode(Frame(2, 0xB123, b"\x01\x02\x03")) == RawMessage(2, 0xB123, b"\x01\x02\x03")


@pytest.mark.parametrize("type_", [t for t in MessageType])
def test_every_message_type_round_trips(type_: MessageType) -> None:
    samples: dict[MessageType, Message] = {
        MessageType.DESCRIPTION: Description(1, "thymio-II", 9, 1534, 32, 586, 44, 17, 60),
        MessageType.NAMED_VARIABLE_DESCRIPTION: NamedVariableDescription(1, 3, "acc"),
        MessageType.LOCAL_EVENT_DESCRIPTION: LocalEventDescription(1, "tap", "tap detected"),
        MessageType.NATIVE_FUNCTION_DESCRIPTION: NativeFunctionDescription(
            1, "math.fill", "fill", ((-1, "dest"), (1, "value"))
        ),
        MessageType.NODE_SPECIFIC_ERROR: NodeSpecificError(1, 12, "VM ASSERT !"),
        MessageType.DEVICE_INFO: DeviceInfo(1, 2, b"robot"),
        MessageType.VARIABLES: WordMessage(1, MessageType.VARIABLES, (40, -1, 2, 3)),
        MessageType.SET_VARIABLES: WordMessage(0, MessageType.SET_VARIABLES, (1, 40, -5)),
    }
    message: Message
    if type_ in samples:
        message = samples[type_]
    elif type_ in (MessageType.BOOTLOADER_PAGE_DATA_WRITE, MessageType.BOOTLOADER_PAGE_DATA_READ):
        message = RawMessage(1, type_, b"\x01\x02\x03\x04")
    elif type_ is MessageType.SET_DEVICE_INFO:
        message = RawMessage(0, type_, b"\x01\x00\x02\x05\x01hello")
    elif type_ is MessageType.CHANGED_VARIABLES:
        message = WordMessage(1, type_, (10, -3))
    else:
        message = WordMessage(1, type_, (1, 2, 0xFFFF))
    [frame] = frames_of(encode(message))
    assert decode(frame) == message


def test_thymio_playground_description_assembles_with_addresses() -> None:
    assembler = DescriptionAssembler()
    for type_, payload in json.loads(VECTOR.read_text()):
        part = decode(Frame(1, type_, bytes.fromhex(payload)))
        assert isinstance(
            part, Description | NamedVariableDescription | LocalEventDescription | NativeFunctionDescription
        )
        assert not assembler.complete
        assembler.add(part)
    assert assembler.complete
    description = assembler.result()
    assert (description.name, description.protocol_version) == ("thymio-II", 5)
    assert (description.bytecode_size, description.stack_size, description.variables_size) == (1534, 32, 586)
    assert (len(description.variables), len(description.local_events), len(description.natives)) == (30, 17, 52)
    assert description.variable("_id").address == 0
    assert description.variable("event.args").address == 2
    assert description.variable("event.args").size == 32
    assert description.variable("_productId").address == 34
    assert description.variable("acc").size == 3
    assert description.user_data_start == 74
    assert description.local_event_id("button.backward") == 0xFFFE
    assert description.local_event_id("timer1") == 0xFFEE
    assert description.natives[description.native_index("leds.top")].name == "leds.top"
    with pytest.raises(KeyError, match=r"leds\.prox"):
        description.native_index("leds.prox")


def test_description_with_too_many_parts_or_no_header_is_an_error() -> None:
    assembler = DescriptionAssembler()
    with pytest.raises(ProtocolError, match="before"):
        assembler.add(NamedVariableDescription(1, 1, "x"))
    assembler.add(Description(1, "n", 9, 100, 32, 10, 1, 0, 0))
    assembler.add(NamedVariableDescription(1, 1, "x"))
    with pytest.raises(ProtocolError, match="more named variables"):
        assembler.add(NamedVariableDescription(1, 1, "y"))
    assert assembler.result().protocol_version == 9  # newer protocols are accepted


def test_variables_reply_split_in_47_word_frames_is_reassembled() -> None:
    values = tuple(range(-60, 80))
    read = VariablesReassembly(100, len(values))
    read.add(5, (9, 9))  # another request's range: ignored
    for offset in range(0, len(values), 47):
        assert not read.complete
        read.add(100 + offset, values[offset : offset + 47])
    assert read.values() == values
    partial = VariablesReassembly(0, 3)
    partial.add(0, (1,))
    with pytest.raises(ProtocolError, match="2 of 3"):
        partial.values()


@given(st.binary(max_size=2000), st.integers(min_value=1, max_value=64))
@pytest.mark.fuzz
@fuzz_settings(300)
def test_any_bytes_give_frames_or_protocol_errors_only(data: bytes, chunk: int) -> None:
    reader = FrameReader()
    for offset in range(0, len(data), chunk):
        reader.feed(data[offset : offset + chunk])
        while True:
            try:
                frame = reader.next()
            except ProtocolError:
                continue
            if frame is None:
                break
            assert len(frame.payload) <= MAX_PAYLOAD
            try:
                message = decode(frame)
            except ProtocolError:
                reader.resynchronize()
                continue
            try:
                encoded = encode(message)
            except ProtocolError:
                continue  # invalid UTF-8 decoded as U+FFFD (3 bytes each) may no longer fit 255 bytes
            [again] = frames_of(encoded)
            assert decode(again) == message


@given(st.lists(st.integers(min_value=-32768, max_value=32767), max_size=258), st.integers(0, 0x7FFF))
def test_user_events_round_trip(data: list[int], event_id: int) -> None:
    message = UserMessage(3, event_id, tuple(data))
    [frame] = frames_of(encode(message))
    assert decode(frame) == message
