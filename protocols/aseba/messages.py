"""Typed Aseba messages: every type of the protocol (consts.h, up to version 9) encoded and decoded.

Types below 0x8000 are user events (`UserMessage`). Messages whose payload is a list of 16-bit words
decode to `WordMessage` (the type says which command or report it is); the five with strings or
bytes have their own classes. Unknown types, and bootloader messages carrying raw bytes, decode to
`RawMessage`: kept, never dropped. Every decode error is a `ProtocolError` naming the broken rule.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from protocols.aseba.framing import HOST_SOURCE, Frame, encode_frame
from protocols.errors import ProtocolError

#: The protocol version this gateway speaks in ListNodes / GetNodeDescription.
PROTOCOL_VERSION = 5
#: The oldest target protocol version accepted (every newer one is accepted too).
MIN_PROTOCOL_VERSION = 4
#: The first target protocol version that answers GetDeviceInfo (a Thymio II's UUID and name).
DEVICE_INFO_PROTOCOL_VERSION = 6
#: First id of the non-user ranges: bootloader 0x80xx, node reports 0x90xx, host commands 0xA0xx.
USER_MESSAGE_LIMIT = 0x8000


class MessageType(IntEnum):
    """Aseba message ids (consts.h, with the protocol 6-8 extensions)."""

    BOOTLOADER_RESET = 0x8000
    BOOTLOADER_READ_PAGE = 0x8001
    BOOTLOADER_WRITE_PAGE = 0x8002
    BOOTLOADER_PAGE_DATA_WRITE = 0x8003
    BOOTLOADER_DESCRIPTION = 0x8004
    BOOTLOADER_PAGE_DATA_READ = 0x8005
    BOOTLOADER_ACK = 0x8006
    DESCRIPTION = 0x9000
    NAMED_VARIABLE_DESCRIPTION = 0x9001
    LOCAL_EVENT_DESCRIPTION = 0x9002
    NATIVE_FUNCTION_DESCRIPTION = 0x9003
    DISCONNECTED = 0x9004
    VARIABLES = 0x9005
    ARRAY_ACCESS_OUT_OF_BOUNDS = 0x9006
    DIVISION_BY_ZERO = 0x9007
    EVENT_EXECUTION_KILLED = 0x9008
    NODE_SPECIFIC_ERROR = 0x9009
    EXECUTION_STATE_CHANGED = 0x900A
    BREAKPOINT_SET_RESULT = 0x900B
    NODE_PRESENT = 0x900C
    DEVICE_INFO = 0x900D
    CHANGED_VARIABLES = 0x900E
    GET_DESCRIPTION = 0xA000
    SET_BYTECODE = 0xA001
    RESET = 0xA002
    RUN = 0xA003
    PAUSE = 0xA004
    STEP = 0xA005
    STOP = 0xA006
    GET_EXECUTION_STATE = 0xA007
    BREAKPOINT_SET = 0xA008
    BREAKPOINT_CLEAR = 0xA009
    BREAKPOINT_CLEAR_ALL = 0xA00A
    GET_VARIABLES = 0xA00B
    SET_VARIABLES = 0xA00C
    WRITE_BYTECODE = 0xA00D
    REBOOT = 0xA00E
    SUSPEND_TO_RAM = 0xA00F
    GET_NODE_DESCRIPTION = 0xA010
    LIST_NODES = 0xA011
    GET_DEVICE_INFO = 0xA012
    SET_DEVICE_INFO = 0xA013
    GET_CHANGED_VARIABLES = 0xA014
    GET_NODE_DESCRIPTION_FRAGMENT = 0xA015


#: Types whose payload is raw bytes rather than words (kept as `RawMessage`).
_BYTE_TYPES = frozenset(
    {MessageType.BOOTLOADER_PAGE_DATA_WRITE, MessageType.BOOTLOADER_PAGE_DATA_READ, MessageType.SET_DEVICE_INFO}
)
#: Word messages whose words are signed values (all others are unsigned ids, addresses, counts).
_SIGNED_TYPES = frozenset({MessageType.VARIABLES, MessageType.SET_VARIABLES, MessageType.CHANGED_VARIABLES})


@dataclass(frozen=True, slots=True)
class UserMessage:
    """A user event: `type` is the event id (< 0x8000), `data` its signed 16-bit words."""

    source: int
    type: int
    data: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class WordMessage:
    """A protocol message whose payload is 16-bit words (commands, Variables, NodePresent, ...).

    `words` are unsigned, except in Variables, SetVariables and ChangedVariables, where every word
    after the first (the start address, or SetVariables' destination) is signed: values, and
    SetVariables' start address, which is below 4096 anyway (12-bit addressing).
    """

    source: int
    type: MessageType
    words: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Description:
    """The first frame of a node description: the VM's sizes (words) and how many frames follow."""

    source: int
    name: str
    protocol_version: int
    bytecode_size: int
    stack_size: int
    variables_size: int
    named_variable_count: int
    local_event_count: int
    native_function_count: int


@dataclass(frozen=True, slots=True)
class NamedVariableDescription:
    """A named variable of `size` words (sent in address order)."""

    source: int
    size: int
    name: str


@dataclass(frozen=True, slots=True)
class LocalEventDescription:
    """A local event of the node (the i-th has id 0xFFFE - i)."""

    source: int
    name: str
    description: str


@dataclass(frozen=True, slots=True)
class NativeFunctionDescription:
    """A native function; `parameters` are (size, name): size > 0 fixed, < 0 template id, 0 any."""

    source: int
    name: str
    description: str
    parameters: tuple[tuple[int, str], ...]


@dataclass(frozen=True, slots=True)
class NodeSpecificError:
    """A node-specific execution error at `pc` (e.g. "VM ASSERT !" on a Thymio)."""

    source: int
    pc: int
    message: str


class DeviceInfoType(IntEnum):
    """What a DeviceInfo / GetDeviceInfo carries (aseba-target-thymio2 `AsebaHandleDeviceInfoMessages`)."""

    UUID = 1
    NAME = 2
    RF_SETTINGS = 3


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """Device information (protocol 6): `info` 1 UUID, 2 friendly name, 3 RF settings; raw `data`."""

    source: int
    info: int
    data: bytes


@dataclass(frozen=True, slots=True)
class RawMessage:
    """A message kept as bytes: an unknown type, or one whose payload is raw bytes."""

    source: int
    type: int
    payload: bytes


Message = (
    UserMessage
    | WordMessage
    | Description
    | NamedVariableDescription
    | LocalEventDescription
    | NativeFunctionDescription
    | NodeSpecificError
    | DeviceInfo
    | RawMessage
)


class _Reader:
    """Reads words and strings from a payload, raising `ProtocolError` on truncation."""

    def __init__(self, type_: int, payload: bytes) -> None:
        self._type = type_
        self._data = payload
        self._offset = 0

    def _take(self, size: int, what: str) -> bytes:
        end = self._offset + size
        if end > len(self._data):
            raise ProtocolError(f"message 0x{self._type:04X} truncated: {what} runs past {len(self._data)} bytes")
        chunk = self._data[self._offset : end]
        self._offset = end
        return chunk

    def u16(self, what: str) -> int:
        value: int = struct.unpack("<H", self._take(2, what))[0]
        return value

    def i16(self, what: str) -> int:
        value: int = struct.unpack("<h", self._take(2, what))[0]
        return value

    def string(self, what: str) -> str:
        length = self._take(1, what + " length")[0]
        return self._take(length, what).decode("utf-8", errors="replace")

    def rest(self) -> bytes:
        chunk = self._data[self._offset :]
        self._offset = len(self._data)
        return chunk


def _words(type_: int, payload: bytes, signed: bool) -> tuple[int, ...]:
    if len(payload) % 2:
        raise ProtocolError(f"message 0x{type_:04X} has an odd payload of {len(payload)} bytes; words expected")
    return struct.unpack(f"<{len(payload) // 2}{'h' if signed else 'H'}", payload)


def decode(frame: Frame) -> Message:
    """The typed message of `frame`; raise `ProtocolError` when its payload does not fit its type."""
    type_, source, payload = frame.type, frame.source, frame.payload
    if type_ < USER_MESSAGE_LIMIT:
        return UserMessage(source, type_, _words(type_, payload, signed=True))
    try:
        known = MessageType(type_)
    except ValueError:
        return RawMessage(source, type_, payload)
    reader = _Reader(type_, payload)
    if known is MessageType.DESCRIPTION:
        name = reader.string("name")
        version, bytecode, stack, variables, named, events, natives = (
            reader.u16(what) for what in ("version", "bytecode", "stack", "variables", "named", "events", "natives")
        )
        return Description(source, name, version, bytecode, stack, variables, named, events, natives)
    if known is MessageType.NAMED_VARIABLE_DESCRIPTION:
        size = reader.u16("size")
        return NamedVariableDescription(source, size, reader.string("name"))
    if known is MessageType.LOCAL_EVENT_DESCRIPTION:
        return LocalEventDescription(source, reader.string("name"), reader.string("description"))
    if known is MessageType.NATIVE_FUNCTION_DESCRIPTION:
        name, doc = reader.string("name"), reader.string("description")
        count = reader.u16("parameter count")
        parameters = tuple((reader.i16("parameter size"), reader.string("parameter name")) for _ in range(count))
        return NativeFunctionDescription(source, name, doc, parameters)
    if known is MessageType.NODE_SPECIFIC_ERROR:
        return NodeSpecificError(source, reader.u16("pc"), reader.string("message"))
    if known is MessageType.DEVICE_INFO:
        info = reader.rest()
        if len(info) < 2 or len(info) < 2 + info[1]:
            raise ProtocolError(f"DeviceInfo truncated: {len(info)} bytes")
        return DeviceInfo(source, info[0], bytes(info[2 : 2 + info[1]]))
    if known in _BYTE_TYPES:
        return RawMessage(source, type_, payload)
    if known in _SIGNED_TYPES:
        if len(payload) < 2:
            raise ProtocolError(f"{known.name} needs a start address, got {len(payload)} bytes")
        start = struct.unpack_from("<H", payload)[0]
        return WordMessage(source, known, (start, *_words(type_, payload[2:], signed=True)))
    return WordMessage(source, known, _words(type_, payload, signed=False))


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    if len(data) > 255:
        raise ProtocolError(f"string of {len(data)} bytes exceeds the Aseba limit of 255")
    return bytes((len(data),)) + data


def _pack_words(words: tuple[int, ...], what: str) -> bytes:
    for word in words:
        if not -0x8000 <= word <= 0xFFFF:
            raise ProtocolError(f"{what}: {word} does not fit 16 bits")
    return b"".join(struct.pack("<H", word & 0xFFFF) for word in words)


def payload_of(message: Message) -> tuple[int, bytes]:
    """The (type, payload bytes) of a message."""
    if isinstance(message, UserMessage):
        if not 0 <= message.type < USER_MESSAGE_LIMIT:
            raise ProtocolError(f"user event id {message.type} is outside 0..0x7FFF")
        return message.type, _pack_words(message.data, "event data")
    if isinstance(message, WordMessage):
        return message.type, _pack_words(message.words, message.type.name)
    if isinstance(message, RawMessage):
        return message.type, message.payload
    if isinstance(message, Description):
        counts = (
            message.protocol_version,
            message.bytecode_size,
            message.stack_size,
            message.variables_size,
            message.named_variable_count,
            message.local_event_count,
            message.native_function_count,
        )
        return MessageType.DESCRIPTION, _string(message.name) + _pack_words(counts, "Description")
    if isinstance(message, NamedVariableDescription):
        return MessageType.NAMED_VARIABLE_DESCRIPTION, struct.pack("<H", message.size) + _string(message.name)
    if isinstance(message, LocalEventDescription):
        return MessageType.LOCAL_EVENT_DESCRIPTION, _string(message.name) + _string(message.description)
    if isinstance(message, NativeFunctionDescription):
        body = _string(message.name) + _string(message.description) + struct.pack("<H", len(message.parameters))
        for size, name in message.parameters:
            body += struct.pack("<h", size) + _string(name)
        return MessageType.NATIVE_FUNCTION_DESCRIPTION, body
    if isinstance(message, NodeSpecificError):
        return MessageType.NODE_SPECIFIC_ERROR, struct.pack("<H", message.pc) + _string(message.message)
    if len(message.data) > 255:
        raise ProtocolError(f"DeviceInfo data of {len(message.data)} bytes exceeds 255")
    return MessageType.DEVICE_INFO, bytes((message.info, len(message.data))) + message.data


def encode(message: Message) -> bytes:
    """The frame bytes of `message` (its `source` goes in the header)."""
    type_, payload = payload_of(message)
    return encode_frame(message.source, type_, payload)


def command(type_: MessageType, *words: int) -> bytes:
    """A host command frame (source 0) whose payload is `words`, e.g. GetVariables(dest, start, length)."""
    return encode(WordMessage(HOST_SOURCE, type_, words))
