"""The TDM codec on its own: tdmclient's encoder makes the requests, hostile bytes get `ProtocolError`."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from flatbuffers import flexbuffers
from hypothesis import given
from hypothesis import strategies as st
from tdmclient.fb import FlexBuffer
from tdmclient.thymio import ThymioFB

from protocols.errors import ProtocolError
from protocols.tdm import codec
from protocols.tdm.messages import (
    CompileAndLoad,
    EventDefinition,
    Handshake,
    MessageType,
    NamedValues,
    NodeRequest,
    RegisterEvents,
    Request,
    RequestListOfNodes,
    SetVMExecutionState,
    Unsupported,
    WatchNode,
)
from tests.fuzzing import fuzz_settings

NODE = bytes(range(16))


def message(*fields: Any) -> bytes:
    """A client message as tdmclient encodes it."""
    encoded: bytes = ThymioFB.create_message(fields, ThymioFB.SCHEMA)
    return encoded


def with_raw_value(value: bytes, kind: int = ThymioFB.MESSAGE_TYPE_SET_VARIABLES) -> bytes:
    """SetVariables (or SendEvents) of one variable whose flexbuffer is `value`, in tdmclient's flatbuffer."""
    encode = FlexBuffer.encode_vec_untyped_int16
    FlexBuffer.encode_vec_untyped_int16 = staticmethod(lambda _: value)
    try:
        return message(kind, (7, (NODE,), [("v", [0])]))
    finally:
        FlexBuffer.encode_vec_untyped_int16 = encode


def flex(build: str, elements: list[int]) -> bytes:
    """A flexbuffer made by the official runtime's Builder method `build`."""
    builder = flexbuffers.Builder()
    getattr(builder, build)(elements)
    return bytes(builder.Finish())


def nested_vectors(levels: int) -> bytes:
    """A flexbuffer whose every vector holds the one below it twice: 2**levels ints in 5 * levels bytes."""
    data = bytearray([2, 1, 2, 4, 4])  # a vector of two ints (packed type INT = 4), byte width 1
    below = 1
    for _ in range(levels):
        start = len(data) + 1
        data += bytes([2, start - below, start + 1 - below, 40, 40])  # two offsets back, packed type VECTOR
        below = start
    return bytes(data + bytes([len(data) - below, 40, 1]))  # the root: that last vector


#: RequestListOfNodes as tdmclient encodes it, with its union tag (a 4-byte field there) changed to 99.
TAG_99 = bytes(
    [4, 0, 0, 0, 236, 255, 255, 255, 99, 0, 0, 0, 4, 0, 0, 0, 252, 255, 255, 255, 4, 0, 4, 0, 8, 0, 12, 0, 4, 0, 8, 0]
)

REQUESTS: list[tuple[bytes, Request]] = [
    (message(ThymioFB.MESSAGE_TYPE_CONNECTION_HANDSHAKE, ()), Handshake(1, 1, 102400, "")),
    (
        message(ThymioFB.MESSAGE_TYPE_CONNECTION_HANDSHAKE, (1, 2, 4096, None, False, 0, None, "secret")),
        Handshake(1, 2, 4096, "secret"),
    ),
    (message(ThymioFB.MESSAGE_TYPE_REQUEST_LIST_OF_NODES, ()), RequestListOfNodes()),
    (message(ThymioFB.MESSAGE_TYPE_LOCK_NODE, (3, (NODE,))), NodeRequest(MessageType.LOCK_NODE, 3, NODE)),
    (message(ThymioFB.MESSAGE_TYPE_UNLOCK_NODE, (4, (NODE,))), NodeRequest(MessageType.UNLOCK_NODE, 4, NODE)),
    (
        message(ThymioFB.MESSAGE_TYPE_REQUEST_NODE_ASEBA_VM_DESCRIPTION, (5, (NODE,))),
        NodeRequest(MessageType.REQUEST_NODE_ASEBA_VM_DESCRIPTION, 5, NODE),
    ),
    (
        message(ThymioFB.MESSAGE_TYPE_COMPILE_AND_LOAD_CODE_ON_VM, (6, (NODE,), 1, "var a = 1 # é", 2)),
        CompileAndLoad(6, NODE, 1, "var a = 1 # é", 2),
    ),
    (message(ThymioFB.MESSAGE_TYPE_WATCH_NODE, (8, (NODE,), 0x3F)), WatchNode(8, NODE, 0x3F)),
    (
        message(
            ThymioFB.MESSAGE_TYPE_SET_VARIABLES, (9, (NODE,), [("motor.left.target", [100]), ("leds.top", [32, 0, -1])])
        ),
        NamedValues(MessageType.SET_VARIABLES, 9, NODE, (("motor.left.target", (100,)), ("leds.top", (32, 0, -1)))),
    ),
    (
        message(ThymioFB.MESSAGE_TYPE_SEND_EVENTS, (10, (NODE,), [("go", []), ("to", [-32768, 32767])])),
        NamedValues(MessageType.SEND_EVENTS, 10, NODE, (("go", ()), ("to", (-32768, 32767)))),
    ),
    (
        message(ThymioFB.MESSAGE_TYPE_REGISTER_EVENTS, (11, (NODE,), [("go", 0, 0), ("to", 2, 0)])),
        RegisterEvents(11, NODE, (EventDefinition("go", 0), EventDefinition("to", 2))),
    ),
    (
        message(ThymioFB.MESSAGE_TYPE_SET_VM_EXECUTION_STATE, (12, (NODE,), 4)),
        SetVMExecutionState(12, NODE, 4),
    ),
    (message(ThymioFB.MESSAGE_TYPE_RENAME_NODE, (13, (NODE,), "bob")), Unsupported(MessageType.RENAME_NODE, 13)),
    (message(ThymioFB.MESSAGE_TYPE_PING, ()), Unsupported(MessageType.PING, 0)),
]


@pytest.mark.parametrize(("data", "expected"), REQUESTS, ids=[type(r).__name__ for _, r in REQUESTS])
def test_requests_as_tdmclient_encodes_them(data: bytes, expected: Request) -> None:
    assert codec.decode(data) == expected


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (FlexBuffer.encode_vec_untyped_int16([5, -6, 0]), (5, -6, 0)),  # what tdmclient sends
        (codec.flex_vector([1, 2]), (1, 2)),  # what we send
        (flex("TypedVectorFromElements", [1, -2, 3]), (1, -2, 3)),
        (flex("FixedTypedVectorFromElements", [4, 5, 6]), (4, 5, 6)),
        (flexbuffers.Dumps(-7), (-7,)),  # a scalar
        (flexbuffers.Dumps([]), ()),
        (b"\x00\x00\x01", ()),  # a null: thymio-api's emitEvents(name) of an event without data
        (flexbuffers.Dumps(list(range(codec.MAX_VALUES))), tuple(range(codec.MAX_VALUES))),
    ],
)
def test_values_in_every_flexbuffer_form_of_ints(value: bytes, words: tuple[int, ...]) -> None:
    decoded = codec.decode(with_raw_value(value))
    assert isinstance(decoded, NamedValues)
    assert decoded.values == (("v", words),)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (nested_vectors(40), "element 0 is not one"),  # 2**41 ints if expanded: it must not be
        (flexbuffers.Dumps([[1, 2]]), "element 0 is not one"),
        (flexbuffers.Dumps([1, "x"]), "element 1 is not one"),
        (flexbuffers.Dumps([1.5]), "element 0 is not one"),
        (flexbuffers.Dumps({"a": 1}), "an integer or a vector of integers"),
        (flexbuffers.Dumps("text"), "an integer or a vector of integers"),
        (flexbuffers.Dumps(True), "an integer or a vector of integers"),
        (flexbuffers.Dumps([40000]), "in [-32768, 32767], got 40000"),
        (flexbuffers.Dumps([-32769]), "in [-32768, 32767], got -32769"),
        (flexbuffers.Dumps(list(range(codec.MAX_VALUES + 1))), f"exceeds {codec.MAX_VALUES}"),
        (b"\x01", "not a flexbuffer"),
        (b"\x00\x44\x08", "not a flexbuffer"),
    ],
)
def test_values_that_are_no_ints_are_refused_naming_why(value: bytes, error: str) -> None:
    for kind in (ThymioFB.MESSAGE_TYPE_SET_VARIABLES, ThymioFB.MESSAGE_TYPE_SEND_EVENTS):
        with pytest.raises(ProtocolError) as refused:
            codec.decode(with_raw_value(value, kind))
        assert error in str(refused.value)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"", "0 bytes is too short"),
        (b"\xff" * 40, "not a TDM flatbuffer"),
        (TAG_99, "unknown TDM message type 99"),
        (message(ThymioFB.MESSAGE_TYPE_LOCK_NODE, (3, (NODE,)))[:-4], "is outside the"),
        (message(ThymioFB.MESSAGE_TYPE_COMPILE_AND_LOAD_CODE_ON_VM, (6, (NODE,), 1, "x" * 65537, 2)), "exceeds 65536"),
    ],
)
def test_hostile_messages_are_refused_naming_the_rule(data: bytes, error: str) -> None:
    with pytest.raises(ProtocolError) as refused:
        codec.decode(data)
    assert error in str(refused.value)


def _decodes_or_refuses(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        codec.decode(data)


@given(st.binary(max_size=400))
@pytest.mark.fuzz
@fuzz_settings(400)
def test_no_input_crashes_the_decoder(data: bytes) -> None:
    _decodes_or_refuses(data)


@given(st.sampled_from([data for data, _ in REQUESTS]), st.data())
@pytest.mark.fuzz
@fuzz_settings(400)
def test_no_damaged_request_crashes_the_decoder(data: bytes, draw: st.DataObject) -> None:
    damaged = bytearray(data)
    for _ in range(draw.draw(st.integers(1, 4))):
        damaged[draw.draw(st.integers(0, len(damaged) - 1))] = draw.draw(st.integers(0, 255))
    _decodes_or_refuses(bytes(damaged[: draw.draw(st.integers(0, len(damaged)))]))
