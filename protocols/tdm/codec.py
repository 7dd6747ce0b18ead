"""Decoding the TDM's client requests and encoding its server messages (one flatbuffer each).

The reader is our own, bounds-checked: every offset, length and string of hostile input is checked
against the buffer and any breach raises `ProtocolError`. The writer is the official `flatbuffers`
runtime's Builder. Slots follow the field order of Mobsya's `thymio.fbs`; a table's union field
`message` takes two slots (type, value).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

import flatbuffers
from flatbuffers import flexbuffers

from protocols.errors import ProtocolError
from protocols.tdm.messages import (
    CompileAndLoad,
    EventDefinition,
    Handshake,
    MessageType,
    NamedValues,
    NodeInfo,
    NodeRequest,
    RegisterEvents,
    Request,
    RequestListOfNodes,
    ScratchpadUpdate,
    SetVMExecutionState,
    Unsupported,
    VMDescription,
    WatchNode,
)
from protocols.tdm.schema import NESTED, REQUESTS, SCALARS, Field

#: Longest program text, variable or event name, and password accepted (characters are bytes here).
MAX_STRING_BYTES = 65536
#: Most values in one variable or event, and most names in one request.
MAX_VALUES = 1024
MAX_ITEMS = 1024
_INT16 = (-32768, 32767)


class _Reader:
    """Bounds-checked access to one flatbuffer."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def _unpack(self, fmt: str, pos: int) -> int:
        size = struct.calcsize(fmt)
        if pos < 0 or pos + size > len(self.data):
            raise ProtocolError(f"flatbuffer offset {pos} (+{size}) is outside the {len(self.data)}-byte message")
        value: int = struct.unpack_from(fmt, self.data, pos)[0]
        return value

    def u8(self, pos: int) -> int:
        return self._unpack("<B", pos)

    def i16(self, pos: int) -> int:
        return self._unpack("<h", pos)

    def u16(self, pos: int) -> int:
        return self._unpack("<H", pos)

    def i32(self, pos: int) -> int:
        return self._unpack("<i", pos)

    def u32(self, pos: int) -> int:
        return self._unpack("<I", pos)

    def table(self, pos: int) -> _Table:
        vtable = pos - self.i32(pos)
        vtable_len = self.u16(vtable)
        if vtable_len < 4 or vtable_len % 2:
            raise ProtocolError(f"flatbuffer vtable at {vtable} has a bad length {vtable_len}")
        self.u16(vtable + vtable_len - 2)  # the whole vtable lies in the buffer
        return _Table(self, pos, vtable, vtable_len)

    def indirect(self, pos: int) -> int:
        return pos + self.u32(pos)

    def vector(self, pos: int, element_size: int) -> tuple[int, int]:
        """(start, count) of the vector whose offset is at `pos`."""
        start = self.indirect(pos)
        count = self.u32(start)
        if count * element_size > len(self.data) - start - 4:
            raise ProtocolError(f"flatbuffer vector of {count} elements runs past the end of the message")
        return start + 4, count


class _Table:
    """One table: its fields by slot number; absent fields give the schema's default."""

    def __init__(self, reader: _Reader, pos: int, vtable: int, vtable_len: int) -> None:
        self._reader = reader
        self._pos = pos
        self._vtable = vtable
        self._vtable_len = vtable_len

    def _field(self, slot: int) -> int | None:
        entry = 4 + 2 * slot
        if entry >= self._vtable_len:
            return None
        offset = self._reader.u16(self._vtable + entry)
        return self._pos + offset if offset else None

    def scalar(self, slot: int, read: Callable[[_Reader, int], int], default: int = 0) -> int:
        pos = self._field(slot)
        return default if pos is None else read(self._reader, pos)

    def string(self, slot: int) -> str:
        raw = self.raw(slot)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ProtocolError(f"flatbuffer string is not UTF-8: {error}") from None

    def raw(self, slot: int) -> bytes:
        pos = self._field(slot)
        if pos is None:
            return b""
        start, count = self._reader.vector(pos, 1)
        if count > MAX_STRING_BYTES:
            raise ProtocolError(f"flatbuffer string or byte vector of {count} bytes exceeds {MAX_STRING_BYTES}")
        return self._reader.data[start : start + count]

    def table(self, slot: int) -> _Table | None:
        pos = self._field(slot)
        return None if pos is None else self._reader.table(self._reader.indirect(pos))

    def tables(self, slot: int) -> list[_Table]:
        pos = self._field(slot)
        if pos is None:
            return []
        start, count = self._reader.vector(pos, 4)
        if count > MAX_ITEMS:
            raise ProtocolError(f"flatbuffer vector of {count} tables exceeds {MAX_ITEMS}")
        return [self._reader.table(self._reader.indirect(start + 4 * i)) for i in range(count)]

    def node_id(self, slot: int) -> bytes:
        node = self.table(slot)
        return b"" if node is None else node.raw(0)


def _values(raw: bytes) -> tuple[int, ...]:
    """A flexbuffer value: an int or a vector of ints (what tdmclient sends), as 16-bit words.

    Read one level deep, never with `flexbuffers.Loads`: its vectors may share elements, so a few
    hundred hostile bytes of nested vectors expand into billions of values (100 bytes: 50 s).
    """
    if not raw:
        return ()
    try:
        items = _flex_ints(flexbuffers.GetRoot(raw))
    except ProtocolError:
        raise
    except Exception as error:  # the runtime raises many kinds on garbage; all mean "not a flexbuffer"
        raise ProtocolError(f"value is not a flexbuffer: {type(error).__name__}: {error}") from None
    for item in items:
        if not _INT16[0] <= item <= _INT16[1]:
            raise ProtocolError(f"values must be integers in [-32768, 32767], got {item}")
    return tuple(items)


def _flex_ints(root: flexbuffers.Ref) -> list[int]:
    """The integers of a flexbuffer int, or of a vector (untyped, typed or fixed) of ints; none for a null."""
    if root.IsNull:  # thymio-api's emitEvents(name) of an event without data
        return []
    if root.IsInt:
        return [root.AsInt]
    # Not IsAnyVector: the runtime's own is broken for fixed typed vectors (it calls a property).
    if root.IsTypedVector:
        vector = root.AsTypedVector
    elif root.IsFixedTypedVector:
        vector = root.AsFixedTypedVector
    elif root.IsVector and not root.IsMap:
        vector = root.AsVector
    else:
        raise ProtocolError("values must be an integer or a vector of integers")
    if len(vector) > MAX_VALUES:
        raise ProtocolError(f"value of {len(vector)} elements exceeds {MAX_VALUES}")
    items = []
    for index in range(len(vector)):
        item = vector[index]
        if not item.IsInt:
            raise ProtocolError(f"values must be integers: element {index} is not one")
        items.append(item.AsInt)
    return items


#: How each scalar kind of `protocols.tdm.schema` is read.
_SCALAR_READERS: dict[str, Callable[[_Reader, int], int]] = {
    "bool": lambda reader, pos: int(reader.u8(pos) != 0),
    "i16": _Reader.i16,
    "u16": _Reader.u16,
    "i32": _Reader.i32,
    "u32": _Reader.u32,
}
_EMPTY: dict[str, Any] = {"string": "", "bytes": b"", "node_id": b""}


def _read(table: _Table | None, fields: tuple[Field, ...]) -> dict[str, Any]:
    """Every field of `table`, an absent one (or each, with no table) as its schema default (`protocols.tdm.schema`)."""
    values: dict[str, Any] = {}
    for field in fields:
        kind = field.kind
        if table is None:
            values[field.name] = field.default if kind in SCALARS else _EMPTY.get(kind, [])
        elif kind in SCALARS:
            values[field.name] = table.scalar(field.slot, _SCALAR_READERS[kind], field.default)
        elif kind == "string":
            values[field.name] = table.string(field.slot)
        elif kind == "bytes":
            values[field.name] = table.raw(field.slot)
        elif kind == "node_id":
            values[field.name] = table.node_id(field.slot)
        else:
            values[field.name] = [_read(item, NESTED[kind]) for item in table.tables(field.slot)]
    return values


def _pairs(items: list[dict[str, Any]]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple((item["name"], _values(item["value"])) for item in items)


def decode(data: bytes) -> Request:
    """One client message; `ProtocolError` for anything that is no valid TDM request."""
    kind, values = fields(data)
    return _request(kind, values)


def fields(data: bytes) -> tuple[MessageType, dict[str, Any]]:
    """One client message's type and every field of its body by schema name, absent ones as their defaults.

    Nested tables come as lists of dicts, byte vectors (flexbuffer values among them) as bytes;
    `ProtocolError` for anything that is no valid TDM request.
    """
    if len(data) < 8:
        raise ProtocolError(f"a TDM message of {len(data)} bytes is too short to be a flatbuffer")
    reader = _Reader(data)
    try:
        root = reader.table(reader.u32(0))
        tag = root.scalar(0, _Reader.u8)
        body = root.table(1)
    except (ProtocolError, struct.error) as error:
        raise ProtocolError(f"not a TDM flatbuffer: {error}") from None
    try:
        kind = MessageType(tag)
    except ValueError:
        raise ProtocolError(f"unknown TDM message type {tag}") from None
    schema = REQUESTS.get(kind)
    if schema is None:
        raise ProtocolError(f"TDM message {kind.name} is sent by servers only")
    if body is None and schema and kind is not MessageType.CONNECTION_HANDSHAKE:
        # tdmclient sends an empty handshake without a body: then every field has its default.
        raise ProtocolError(f"TDM message {kind.name} has no body")
    try:
        return kind, _read(body, schema)
    except struct.error as error:
        raise ProtocolError(f"TDM message {kind.name}: {error}") from None


def _request(kind: MessageType, v: dict[str, Any]) -> Request:
    if kind is MessageType.CONNECTION_HANDSHAKE:
        return Handshake(v["min_protocol_version"], v["protocol_version"], v["max_message_size"], v["password"])
    if kind is MessageType.REQUEST_LIST_OF_NODES:
        return RequestListOfNodes()
    if kind in (MessageType.LOCK_NODE, MessageType.UNLOCK_NODE, MessageType.REQUEST_NODE_ASEBA_VM_DESCRIPTION):
        return NodeRequest(kind, v["request_id"], v["node_id"])
    if kind is MessageType.COMPILE_AND_LOAD_CODE_ON_VM:
        return CompileAndLoad(v["request_id"], v["node_id"], v["language"], v["program"], v["options"])
    if kind is MessageType.WATCH_NODE:
        return WatchNode(v["request_id"], v["node_or_group_id"], v["info_type"])
    if kind is MessageType.SET_VARIABLES:
        return NamedValues(kind, v["request_id"], v["node_or_group_id"], _pairs(v["vars"]))
    if kind is MessageType.SEND_EVENTS:
        return NamedValues(kind, v["request_id"], v["node_id"], _pairs(v["events"]))
    if kind is MessageType.REGISTER_EVENTS:
        events = tuple(EventDefinition(e["name"], e["fixed_sized"]) for e in v["events"])
        return RegisterEvents(v["request_id"], v["node_or_group_id"], events)
    if kind is MessageType.SET_VM_EXECUTION_STATE:
        return SetVMExecutionState(v["request_id"], v["node_id"], v["command"])
    if kind is MessageType.SCRATCHPAD_UPDATE:
        return ScratchpadUpdate(
            v["request_id"], v["scratchpad_id"], v["group_id"], v["node_id"], v["language"], v["text"],
            v["name"], bool(v["deleted"]),
        )  # fmt: skip
    # Requests whose first field is their request id get an Error naming it; notifications get 0.
    return Unsupported(kind, v.get("request_id", 0))


# -- encoding ---------------------------------------------------------------------------------


def flex_vector(values: Sequence[int]) -> bytes:
    """An untyped flexbuffer vector of ints, as the TDM sends every value (a scalar too)."""
    builder = flexbuffers.Builder()
    with builder.Vector():
        for value in values:
            builder.Int(value)
    return bytes(builder.Finish())


class _Writer:
    """One outgoing message: build the body with `builder`, then `finish`."""

    def __init__(self) -> None:
        self.builder = flatbuffers.Builder(256)
        self.builder.ForceDefaults(True)

    def node_id(self, node_id: bytes) -> int:
        b = self.builder
        data = b.CreateByteVector(node_id)
        b.StartObject(1)
        b.PrependUOffsetTRelativeSlot(0, data, 0)
        return int(b.EndObject())

    def tables(self, offsets: Sequence[int]) -> int:
        b = self.builder
        b.StartVector(4, len(offsets), 4)
        for offset in reversed(offsets):
            b.PrependUOffsetTRelative(offset)
        return int(b.EndVector())

    def named_values(self, values: Sequence[tuple[str, Sequence[int]]]) -> int:
        b = self.builder
        items = []
        for name, words in values:
            name_offset = b.CreateString(name)
            value_offset = b.CreateByteVector(flex_vector(words))
            b.StartObject(2)
            b.PrependUOffsetTRelativeSlot(0, name_offset, 0)
            b.PrependUOffsetTRelativeSlot(1, value_offset, 0)
            items.append(b.EndObject())
        return self.tables(items)

    def finish(self, kind: MessageType, body: int) -> bytes:
        b = self.builder
        b.StartObject(2)
        b.PrependUint8Slot(0, int(kind), 0)
        b.PrependUOffsetTRelativeSlot(1, body, 0)
        b.Finish(b.EndObject())
        return bytes(b.Output())


def _empty(kind: MessageType) -> bytes:
    writer = _Writer()
    writer.builder.StartObject(0)
    return writer.finish(kind, writer.builder.EndObject())


def handshake(protocol_version: int, max_message_size: int, localhost_peer: bool, ws_port: int) -> bytes:
    """The server's `ConnectionHandshake` (protocol 1)."""
    writer = _Writer()
    b = writer.builder
    b.StartObject(8)
    b.PrependUint32Slot(0, 1, 0)
    b.PrependUint32Slot(1, protocol_version, 0)
    b.PrependUint32Slot(2, max_message_size, 0)
    b.PrependBoolSlot(4, localhost_peer, False)
    b.PrependUint16Slot(5, ws_port, 0)
    return writer.finish(MessageType.CONNECTION_HANDSHAKE, b.EndObject())


def ping() -> bytes:
    """A `Ping` (the server sends one every 2.5 s)."""
    return _empty(MessageType.PING)


def _request_id_only(kind: MessageType, request_id: int) -> bytes:
    writer = _Writer()
    b = writer.builder
    b.StartObject(1)
    b.PrependUint32Slot(0, request_id, 0)
    return writer.finish(kind, b.EndObject())


def request_completed(request_id: int) -> bytes:
    """`RequestCompleted`: the request succeeded."""
    return _request_id_only(MessageType.REQUEST_COMPLETED, request_id)


def error(request_id: int, code: int) -> bytes:
    """`Error` with an `ErrorType` code."""
    writer = _Writer()
    b = writer.builder
    b.StartObject(2)
    b.PrependUint32Slot(0, request_id, 0)
    b.PrependInt32Slot(1, code, 0)
    return writer.finish(MessageType.ERROR, b.EndObject())


def nodes_changed(nodes: Sequence[NodeInfo]) -> bytes:
    """`NodesChanged` listing `nodes` (clients keep the list; only changes need be sent)."""
    writer = _Writer()
    b = writer.builder
    offsets = []
    for node in nodes:
        node_id = writer.node_id(node.node_id)
        group_id = writer.node_id(node.group_id)
        name = b.CreateString(node.name)
        fw_version = b.CreateString(node.fw_version)
        b.StartObject(8)
        b.PrependUOffsetTRelativeSlot(0, node_id, 0)
        b.PrependUOffsetTRelativeSlot(1, group_id, 0)
        b.PrependInt32Slot(2, int(node.status), 0)
        b.PrependInt32Slot(3, int(node.type), 0)
        b.PrependUOffsetTRelativeSlot(4, name, 0)
        b.PrependUint64Slot(5, node.capabilities, 0)
        b.PrependUOffsetTRelativeSlot(6, fw_version, 0)
        offsets.append(b.EndObject())
    vector = writer.tables(offsets)
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(0, vector, 0)
    return writer.finish(MessageType.NODES_CHANGED, b.EndObject())


def vm_description(description: VMDescription) -> bytes:
    """`NodeAsebaVMDescription`."""
    writer = _Writer()
    b = writer.builder
    node_id = writer.node_id(description.node_id)
    variables = []
    for variable in description.variables:
        name = b.CreateString(variable.name)
        b.StartObject(3)
        b.PrependUint16Slot(0, variable.index, 0)
        b.PrependUOffsetTRelativeSlot(1, name, 0)
        b.PrependUint32Slot(2, variable.size, 0)
        variables.append(b.EndObject())
    events = []
    for event in description.events:
        name = b.CreateString(event.name)
        text = b.CreateString(event.description)
        b.StartObject(3)
        b.PrependUint16Slot(0, event.index, 0)
        b.PrependUOffsetTRelativeSlot(1, name, 0)
        b.PrependUOffsetTRelativeSlot(2, text, 0)
        events.append(b.EndObject())
    functions = []
    for function in description.functions:
        parameters = []
        for parameter_name, size in function.parameters:
            parameter = b.CreateString(parameter_name)
            b.StartObject(2)
            b.PrependUOffsetTRelativeSlot(0, parameter, 0)
            b.PrependUint32Slot(1, size & 0xFFFFFFFF, 0)
            parameters.append(b.EndObject())
        parameter_vector = writer.tables(parameters)
        name = b.CreateString(function.name)
        text = b.CreateString(function.description)
        b.StartObject(4)
        b.PrependUint16Slot(0, function.index, 0)
        b.PrependUOffsetTRelativeSlot(1, name, 0)
        b.PrependUOffsetTRelativeSlot(2, text, 0)
        b.PrependUOffsetTRelativeSlot(3, parameter_vector, 0)
        functions.append(b.EndObject())
    variable_vector, event_vector, function_vector = (
        writer.tables(variables),
        writer.tables(events),
        writer.tables(functions),
    )
    b.StartObject(8)
    b.PrependUint32Slot(0, description.request_id, 0)
    b.PrependUOffsetTRelativeSlot(1, node_id, 0)
    b.PrependUint32Slot(2, description.bytecode_size, 0)
    b.PrependUint32Slot(3, description.data_size, 0)
    b.PrependUint32Slot(4, description.stack_size, 0)
    b.PrependUOffsetTRelativeSlot(5, variable_vector, 0)
    b.PrependUOffsetTRelativeSlot(6, event_vector, 0)
    b.PrependUOffsetTRelativeSlot(7, function_vector, 0)
    return writer.finish(MessageType.NODE_ASEBA_VM_DESCRIPTION, b.EndObject())


def compilation_success(
    request_id: int, bytecode_size: int, total_bytecode: int, variables: int, total_variables: int
) -> bytes:
    """`CompilationResultSuccess` (sizes in words)."""
    writer = _Writer()
    b = writer.builder
    b.StartObject(5)
    for slot, value in enumerate((request_id, bytecode_size, total_bytecode, variables, total_variables)):
        b.PrependUint32Slot(slot, value, 0)
    return writer.finish(MessageType.COMPILATION_RESULT_SUCCESS, b.EndObject())


def compilation_failure(request_id: int, message: str, character: int, line: int, column: int) -> bytes:
    """`CompilationResultFailure`: the first error, where it is (line and column count from 1)."""
    writer = _Writer()
    b = writer.builder
    text = b.CreateString(message)
    b.StartObject(5)
    b.PrependUint32Slot(0, request_id, 0)
    b.PrependUOffsetTRelativeSlot(1, text, 0)
    b.PrependUint32Slot(2, character, 0)
    b.PrependUint32Slot(3, line, 0)
    b.PrependUint32Slot(4, column, 0)
    return writer.finish(MessageType.COMPILATION_RESULT_FAILURE, b.EndObject())


def _node_values(
    kind: MessageType, node_id: bytes, values: Sequence[tuple[str, Sequence[int]]], stamp_ms: int
) -> bytes:
    writer = _Writer()
    b = writer.builder
    node = writer.node_id(node_id)
    vector = writer.named_values(values)
    b.StartObject(3)
    b.PrependUOffsetTRelativeSlot(0, node, 0)
    b.PrependUOffsetTRelativeSlot(1, vector, 0)
    b.PrependUint64Slot(2, stamp_ms, 0)
    return writer.finish(kind, b.EndObject())


def variables_changed(node_id: bytes, values: Sequence[tuple[str, Sequence[int]]], stamp_ms: int) -> bytes:
    """`VariablesChanged`: the new value of each named variable; `stamp_ms` since the epoch."""
    return _node_values(MessageType.VARIABLES_CHANGED, node_id, values, stamp_ms)


def events_emitted(node_id: bytes, events: Sequence[tuple[str, Sequence[int]]], stamp_ms: int) -> bytes:
    """`EventsEmitted`: events the node's program emitted, with their data."""
    return _node_values(MessageType.EVENTS_EMITTED, node_id, events, stamp_ms)


def vm_state_changed(node_id: bytes, state: int, line: int = 0, error_code: int = 0, message: str = "") -> bytes:
    """`VMExecutionStateChanged`."""
    writer = _Writer()
    b = writer.builder
    node = writer.node_id(node_id)
    text = b.CreateString(message)
    b.StartObject(5)
    b.PrependUOffsetTRelativeSlot(0, node, 0)
    b.PrependInt16Slot(1, state, 0)
    b.PrependUint32Slot(2, line, 0)
    b.PrependInt16Slot(3, error_code, 0)
    b.PrependUOffsetTRelativeSlot(4, text, 0)
    return writer.finish(MessageType.VM_EXECUTION_STATE_CHANGED, b.EndObject())


def events_descriptions_changed(group_id: bytes, events: Sequence[EventDefinition]) -> bytes:
    """`EventsDescriptionsChanged`: the events registered on a group (index = registration order)."""
    writer = _Writer()
    b = writer.builder
    node = writer.node_id(group_id)
    offsets = []
    for index, event in enumerate(events):
        name = b.CreateString(event.name)
        b.StartObject(3)
        b.PrependUOffsetTRelativeSlot(0, name, 0)
        b.PrependUint32Slot(1, event.size, 0)
        b.PrependUint32Slot(2, index, 0)
        offsets.append(b.EndObject())
    vector = writer.tables(offsets)
    b.StartObject(2)
    b.PrependUOffsetTRelativeSlot(0, node, 0)
    b.PrependUOffsetTRelativeSlot(1, vector, 0)
    return writer.finish(MessageType.EVENTS_DESCRIPTIONS_CHANGED, b.EndObject())


def scratchpad_update(scratchpad: ScratchpadUpdate) -> bytes:
    """`ScratchpadUpdate` from the server: a scratchpad's new text (or its deletion) for watchers."""
    writer = _Writer()
    b = writer.builder
    scratchpad_id = writer.node_id(scratchpad.scratchpad_id)
    group_id = writer.node_id(scratchpad.group_id)
    node_id = writer.node_id(scratchpad.node_id)
    text = b.CreateString(scratchpad.text)
    name = b.CreateString(scratchpad.name)
    b.StartObject(8)
    b.PrependUint32Slot(0, scratchpad.request_id, 0)
    b.PrependUOffsetTRelativeSlot(1, scratchpad_id, 0)
    b.PrependUOffsetTRelativeSlot(2, group_id, 0)
    b.PrependUOffsetTRelativeSlot(3, node_id, 0)
    b.PrependInt32Slot(4, scratchpad.language, 0)
    b.PrependUOffsetTRelativeSlot(5, text, 0)
    b.PrependUOffsetTRelativeSlot(6, name, 0)
    b.PrependBoolSlot(7, scratchpad.deleted, False)
    return writer.finish(MessageType.SCRATCHPAD_UPDATE, b.EndObject())
