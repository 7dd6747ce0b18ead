"""Every request of the TDM with each defaultable field left out, as generated FlatBuffers clients write it.

A generated writer (thymio-api's, flatc's) leaves out a scalar equal to its schema default and any
string, vector or table not set; the face must read each as thymio.fbs's default. The defaults
below are copied from thymio.fbs (Mobsya/aseba) by hand, not from `protocols.tdm.schema`, so a
wrong default there fails here.
"""

from __future__ import annotations

from typing import Any

import flatbuffers
import pytest
from flatbuffers import flexbuffers

from protocols.tdm import codec
from protocols.tdm.messages import (
    CompileAndLoad,
    Handshake,
    MessageType,
    ScratchpadUpdate,
    SetVMExecutionState,
)
from protocols.tdm.schema import NESTED, REQUESTS, SCALARS, Field

NODE = bytes(range(16))
GROUP = bytes(range(16, 32))
#: thymio.fbs's non-zero defaults; every other scalar defaults to 0 (false), every string and vector to empty.
FBS_DEFAULTS = {
    (MessageType.CONNECTION_HANDSHAKE, "min_protocol_version"): 1,
    (MessageType.CONNECTION_HANDSHAKE, "protocol_version"): 1,
    (MessageType.CONNECTION_HANDSHAKE, "max_message_size"): 102400,
    (MessageType.COMPILE_AND_LOAD_CODE_ON_VM, "language"): 1,  # ProgrammingLanguage.Aseba
    (MessageType.COMPILE_AND_SAVE, "language"): 1,
    (MessageType.SCRATCHPAD_UPDATE, "language"): 1,
    (MessageType.ENABLE_THYMIO2_PAIRING_MODE, "enable"): 1,  # true
}
_PREPEND = {
    "bool": "PrependBoolSlot",
    "i16": "PrependInt16Slot",
    "u16": "PrependUint16Slot",
    "i32": "PrependInt32Slot",
    "u32": "PrependUint32Slot",
}


def given_value(kind: str, slot: int, default: int) -> Any:
    """A value of `kind` that is not its default, so the field is written."""
    if kind == "bool":
        return 1 - default
    if kind in SCALARS:
        return default + 2 + slot
    return {"string": f"text {slot} é", "bytes": bytes([slot, 1, 2]), "node_id": NODE}.get(kind)


def build(kind: MessageType, leave_out: str | None) -> tuple[bytes, dict[str, Any]]:
    """The message with every field but `leave_out` set to a non-default value, as a generated writer does it.

    Returns the message and the values written (nested tables: one item each).
    """
    builder = flatbuffers.Builder(256)  # no ForceDefaults: like thymio-api's, an unset field is absent
    written: dict[str, Any] = {}
    offsets: dict[str, int] = {}
    schema = REQUESTS[kind]
    for field in schema:  # strings, vectors and tables are written before the table that points at them
        if field.name == leave_out or field.kind in SCALARS:
            continue
        offsets[field.name], written[field.name] = _offset(builder, field)
    builder.StartObject(len(schema))
    for field in schema:
        if field.name == leave_out:
            continue
        if field.kind in SCALARS:
            written[field.name] = given_value(field.kind, field.slot, field.default)
            getattr(builder, _PREPEND[field.kind])(field.slot, written[field.name], field.default)
        else:
            builder.PrependUOffsetTRelativeSlot(field.slot, offsets[field.name], 0)
    body = builder.EndObject()
    builder.StartObject(2)
    builder.PrependUint8Slot(0, int(kind), 0)
    builder.PrependUOffsetTRelativeSlot(1, body, 0)
    builder.Finish(builder.EndObject())
    return bytes(builder.Output()), written


def _offset(builder: flatbuffers.Builder, field: Field) -> tuple[int, Any]:
    value = given_value(field.kind, field.slot, field.default)
    if field.kind == "string":
        return builder.CreateString(value), value
    if field.kind == "bytes":
        return builder.CreateByteVector(value), value
    if field.kind == "node_id":
        data = builder.CreateByteVector(NODE)
        builder.StartObject(1)
        builder.PrependUOffsetTRelativeSlot(0, data, 0)
        return builder.EndObject(), NODE
    # A vector of one nested table, its own fields all written.
    nested = NESTED[field.kind]
    item: dict[str, Any] = {}
    inner: dict[str, int] = {}
    for sub in nested:
        if sub.kind == "string":
            item[sub.name] = "go"
            inner[sub.name] = builder.CreateString("go")
        elif sub.kind == "bytes":
            item[sub.name] = bytes(flexbuffers.Dumps([3, -4]))
            inner[sub.name] = builder.CreateByteVector(item[sub.name])
    builder.StartObject(len(nested))
    for sub in nested:
        if sub.kind in SCALARS:
            item[sub.name] = sub.slot + 5
            getattr(builder, _PREPEND[sub.kind])(sub.slot, item[sub.name], sub.default)
        else:
            builder.PrependUOffsetTRelativeSlot(sub.slot, inner[sub.name], 0)
    table = builder.EndObject()
    builder.StartVector(4, 1, 4)
    builder.PrependUOffsetTRelative(table)
    return builder.EndVector(), [item]


def default_of(kind: MessageType, field: Field) -> Any:
    if field.kind in SCALARS:
        return FBS_DEFAULTS.get((kind, field.name), 0)
    return {"string": "", "bytes": b"", "node_id": b""}.get(field.kind, [])


CASES = [(kind, field) for kind, schema in REQUESTS.items() for field in schema]


@pytest.mark.parametrize(("kind", "field"), CASES, ids=[f"{k.name}.{f.name}" for k, f in CASES])
def test_a_left_out_field_reads_as_its_schema_default(kind: MessageType, field: Field) -> None:
    data, written = build(kind, field.name)
    decoded_kind, values = codec.fields(data)
    assert decoded_kind is kind
    assert values[field.name] == default_of(kind, field)
    assert {name: values[name] for name in written} == written  # every other field as written
    codec.decode(data)  # and the request itself decodes


@pytest.mark.parametrize("kind", [k for k, schema in REQUESTS.items() if schema], ids=lambda k: k.name)
def test_a_body_with_every_field_left_out_reads_as_every_default(kind: MessageType) -> None:
    builder = flatbuffers.Builder(64)
    builder.StartObject(0)
    body = builder.EndObject()
    builder.StartObject(2)
    builder.PrependUint8Slot(0, int(kind), 0)
    builder.PrependUOffsetTRelativeSlot(1, body, 0)
    builder.Finish(builder.EndObject())
    _, values = codec.fields(bytes(builder.Output()))
    assert values == {field.name: default_of(kind, field) for field in REQUESTS[kind]}


def test_the_requests_thymio_api_sends_without_their_defaults() -> None:
    """The three that failed with thymio-api: sendAsebaProgram, setScratchPad, and a Stop command."""
    program, _ = build(MessageType.COMPILE_AND_LOAD_CODE_ON_VM, "language")
    decoded = codec.decode(program)
    assert isinstance(decoded, CompileAndLoad)
    assert decoded.language == 1
    check_only, _ = build(MessageType.COMPILE_AND_LOAD_CODE_ON_VM, "options")  # sendAsebaProgram(code, true)
    decoded = codec.decode(check_only)
    assert isinstance(decoded, CompileAndLoad)
    assert decoded.options == 0
    scratchpad, _ = build(MessageType.SCRATCHPAD_UPDATE, "language")
    decoded_scratchpad = codec.decode(scratchpad)
    assert isinstance(decoded_scratchpad, ScratchpadUpdate)
    assert decoded_scratchpad.language == 1
    stop, _ = build(MessageType.SET_VM_EXECUTION_STATE, "command")
    decoded_stop = codec.decode(stop)
    assert isinstance(decoded_stop, SetVMExecutionState)
    assert decoded_stop.command == 0
    handshake, _ = build(MessageType.CONNECTION_HANDSHAKE, "max_message_size")
    decoded_handshake = codec.decode(handshake)
    assert isinstance(decoded_handshake, Handshake)
    assert decoded_handshake.max_message_size == 102400
