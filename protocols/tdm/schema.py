"""The fields of every table a TDM client sends, with their slots and schema defaults (Mobsya's `thymio.fbs`).

A FlatBuffers writer leaves out a scalar equal to its schema default (generated clients such as
thymio-api never force defaults), so a reader must give an absent field its schema default, not 0:
`CompileAndLoadCodeOnVM.language` is `Aseba` (1) when absent, `ConnectionHandshake.maxMessageSize`
102400, `EnableThymio2PairingMode.enable` true. An absent string, byte vector, table or vector of
tables reads as empty. Slots count the schema's fields in order (a union field would take two).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from protocols.tdm.messages import MessageType, ProgrammingLanguage, VMExecutionStateCommand

#: How a field is stored: a scalar of that width and sign, a UTF-8 string, a byte vector, a `NodeId`
#: table (its 16 bytes), or a vector of one of the nested tables below.
Kind = Literal["bool", "i16", "u16", "i32", "u32", "string", "bytes", "node_id", "NodeVariable", "EventDescription"]
SCALARS = frozenset({"bool", "i16", "u16", "i32", "u32"})


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a table: its `name` in the schema, `slot`, storage `kind` and schema `default` (scalars)."""

    name: str
    slot: int
    kind: Kind
    default: int = 0


def _fields(*specs: tuple[str, Kind] | tuple[str, Kind, int]) -> tuple[Field, ...]:
    """Fields in schema order (their slots), each with its default (0 when not given)."""
    return tuple(Field(spec[0], slot, spec[1], spec[2] if len(spec) == 3 else 0) for slot, spec in enumerate(specs))


_ASEBA = int(ProgrammingLanguage.ASEBA)
_REQUEST_AND_NODE: tuple[tuple[str, Kind], ...] = (("request_id", "u32"), ("node_id", "node_id"))
_PROGRAM = _fields(*_REQUEST_AND_NODE, ("language", "i32", _ASEBA), ("program", "string"), ("options", "u32"))

#: Tables nested in requests: a named value (variable or event) and an event's description.
NESTED: dict[str, tuple[Field, ...]] = {
    "NodeVariable": _fields(("name", "string"), ("value", "bytes")),
    "EventDescription": _fields(("name", "string"), ("fixed_sized", "u32"), ("index", "u32")),
}

#: The body of every request a client may send, by message type (server-only messages are absent).
REQUESTS: dict[MessageType, tuple[Field, ...]] = {
    MessageType.CONNECTION_HANDSHAKE: _fields(
        ("min_protocol_version", "u32", 1),
        ("protocol_version", "u32", 1),
        ("max_message_size", "u32", 102400),
        ("token", "bytes"),
        ("localhost_peer", "bool"),
        ("ws_port", "u16"),
        ("uuid", "node_id"),
        ("password", "string"),
    ),
    MessageType.DEVICE_MANAGER_SHUTDOWN_REQUEST: _fields(("request_id", "u32")),
    MessageType.REQUEST_LIST_OF_NODES: (),
    MessageType.REQUEST_NODE_ASEBA_VM_DESCRIPTION: _fields(*_REQUEST_AND_NODE),
    MessageType.LOCK_NODE: _fields(*_REQUEST_AND_NODE),
    MessageType.UNLOCK_NODE: _fields(*_REQUEST_AND_NODE),
    MessageType.RENAME_NODE: _fields(*_REQUEST_AND_NODE, ("new_name", "string")),
    MessageType.COMPILE_AND_LOAD_CODE_ON_VM: _PROGRAM,
    MessageType.WATCH_NODE: _fields(("request_id", "u32"), ("node_or_group_id", "node_id"), ("info_type", "u32")),
    MessageType.SET_VARIABLES: _fields(
        ("request_id", "u32"), ("node_or_group_id", "node_id"), ("vars", "NodeVariable")
    ),
    MessageType.REGISTER_EVENTS: _fields(
        ("request_id", "u32"), ("node_or_group_id", "node_id"), ("events", "EventDescription")
    ),
    MessageType.SEND_EVENTS: _fields(*_REQUEST_AND_NODE, ("events", "NodeVariable")),
    MessageType.SET_BREAKPOINTS: _fields(*_REQUEST_AND_NODE),
    MessageType.SET_VM_EXECUTION_STATE: _fields(
        *_REQUEST_AND_NODE, ("command", "i16", int(VMExecutionStateCommand.STOP))
    ),
    MessageType.SCRATCHPAD_UPDATE: _fields(
        ("request_id", "u32"),
        ("scratchpad_id", "node_id"),
        ("group_id", "node_id"),
        ("node_id", "node_id"),
        ("language", "i32", _ASEBA),
        ("text", "string"),
        ("name", "string"),
        ("deleted", "bool"),
    ),
    MessageType.FIRMWARE_UPGRADE_REQUEST: _fields(*_REQUEST_AND_NODE),
    MessageType.PING: (),
    MessageType.ENABLE_THYMIO2_PAIRING_MODE: _fields(("enable", "bool", 1)),
    MessageType.THYMIO2_WIRELESS_DONGLE_PAIRING_REQUEST: _fields(("request_id", "u32")),
    MessageType.COMPILE_AND_SAVE: _PROGRAM,
    MessageType.SAVE_BYTECODE: _fields(*_REQUEST_AND_NODE, ("program", "string")),
}
