"""LWP 3.0 messages: one `decode` for whatever the characteristic carries, one `encode` back.

Every message is the common header (§3.1: length, hub id, message type) then a payload whose layout
the message type fixes. The length is one byte up to 127, else two (§3.2: bit 7 of the first byte set,
7 low bits there, the high bits in the second byte). The hub id, unused and 0x00 by §3.1, is read past
(a message that sets it means what its type and payload say) and written as 0x00. A GATT write or
notification carries exactly one message, so `decode` refuses a declared length that differs from the
bytes given, any message longer than `MAX_MESSAGE_LENGTH`, an undefined message type, and every
payload of the wrong size, each with a `ProtocolError` naming the rule. Port and mode information
requests and replies are taken apart by `protocols.lwp3.modes`. Message types this codec does not take
apart (firmware update, H/W network, combined input formats) come back whole as `OtherMessage`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar

from protocols.errors import ProtocolError
from protocols.lwp3.constants import (
    AlertOperation,
    AlertType,
    Completion,
    EndState,
    ErrorCode,
    Feedback,
    HubAction,
    HubProperty,
    IoEvent,
    MessageType,
    PropertyOperation,
    Startup,
    SubCommand,
)
from protocols.lwp3.modes import (
    PortInformation,
    PortInformationRequest,
    PortModeInformation,
    PortModeInformationRequest,
    decode_port_information,
    decode_port_information_request,
    decode_port_mode_information,
    decode_port_mode_information_request,
    encode_payload,
)

E = TypeVar("E", bound=IntEnum)

#: Longest message accepted (bytes, header included). Hubs send at most a few dozen; the ATT MTU caps
#: a notification at 512.
MAX_MESSAGE_LENGTH = 512
#: Longest advertising name a hub holds (§3.5.5 note B).
MAX_NAME_LENGTH = 14


@dataclass(frozen=True, slots=True)
class HubPropertyMessage:
    """§3.5 Hub Properties: `operation` on `property`; `payload` is the raw value (Set and Update only)."""

    property: HubProperty
    operation: PropertyOperation
    payload: bytes = b""


@dataclass(frozen=True, slots=True)
class HubActionMessage:
    """§3.6 Hub Actions, downstream requests and upstream announcements alike."""

    action: HubAction


@dataclass(frozen=True, slots=True)
class HubAlertMessage:
    """§3.7 Hub Alerts: `ok` is the payload of an Update (False: the alert is raised)."""

    alert: AlertType
    operation: AlertOperation
    ok: bool = True


@dataclass(frozen=True, slots=True)
class AttachedIo:
    """§3.8 Hub Attached I/O: a device was attached to or detached from `port`.

    `io_type` is 0 when detached; `hardware_revision`/`software_revision` are the raw Int32 version
    numbers (attached only); `port_a`/`port_b` name the ports of a virtual port (attached virtual only).
    """

    port: int
    event: IoEvent
    io_type: int = 0
    hardware_revision: int = 0
    software_revision: int = 0
    port_a: int = 0
    port_b: int = 0


@dataclass(frozen=True, slots=True)
class GenericError:
    """§3.9 Generic Error: `code` answers the command whose message type is `command_type`."""

    command_type: int
    code: ErrorCode


@dataclass(frozen=True, slots=True)
class PortInputFormatSetup:
    """§3.17 Port Input Format Setup (Single): report `mode` of `port` on changes of `delta` (notify)."""

    port: int
    mode: int
    delta: int = 1
    notify: bool = True


@dataclass(frozen=True, slots=True)
class PortInputFormat:
    """§3.23 Port Input Format (Single): the hub's acknowledgement of a setup."""

    port: int
    mode: int
    delta: int
    notify: bool


@dataclass(frozen=True, slots=True)
class PortValue:
    """§3.21 Port Value (Single): the raw `data` of `port` (its layout is the port's mode's; see `values`)."""

    port: int
    data: bytes


@dataclass(frozen=True, slots=True)
class PortOutputCommand:
    """§3.26 Port Output Command: `subcommand` with its raw `payload` on `port`.

    Build the common ones with `start_speed`, `goto_absolute_position`, `start_power` and
    `write_direct_mode_data`.
    """

    port: int
    subcommand: int
    payload: bytes
    startup: Startup = Startup.IMMEDIATE
    completion: Completion = Completion.FEEDBACK


@dataclass(frozen=True, slots=True)
class PortOutputFeedback:
    """§3.32 Port Output Command Feedback: (port, feedback bits) for one or more ports."""

    entries: tuple[tuple[int, Feedback], ...]


@dataclass(frozen=True, slots=True)
class OtherMessage:
    """A defined message type this codec does not take apart, with its payload."""

    message_type: MessageType
    payload: bytes


Message = (
    HubPropertyMessage
    | HubActionMessage
    | HubAlertMessage
    | AttachedIo
    | GenericError
    | PortInputFormatSetup
    | PortInputFormat
    | PortValue
    | PortOutputCommand
    | PortOutputFeedback
    | PortInformationRequest
    | PortModeInformationRequest
    | PortInformation
    | PortModeInformation
    | OtherMessage
)


def _enum(cls: type[E], value: int, what: str) -> E:
    try:
        return cls(value)
    except ValueError:
        raise ProtocolError(f"{what} 0x{value:02x} is not defined by LWP 3.0") from None


def _exact(payload: bytes, size: int, what: str) -> None:
    if len(payload) != size:
        raise ProtocolError(f"{what} needs {size} payload bytes, got {len(payload)}")


def split_header(data: bytes) -> tuple[MessageType, bytes]:
    """Check the common header of one whole message; return its type and payload."""
    if len(data) > MAX_MESSAGE_LENGTH:
        raise ProtocolError(f"message of {len(data)} bytes exceeds the limit of {MAX_MESSAGE_LENGTH}")
    if len(data) < 3:
        raise ProtocolError(f"message of {len(data)} bytes is shorter than the 3-byte common header")
    if data[0] & 0x80:
        if len(data) < 4:
            raise ProtocolError("two-byte length needs a 4-byte common header")
        length = (data[0] & 0x7F) | (data[1] << 7)
        if length < 128:
            raise ProtocolError(f"two-byte length encodes {length}, which needs one byte")
        header = 2
    else:
        length = data[0]
        header = 1
    if length != len(data):
        raise ProtocolError(f"length field says {length} bytes, the message has {len(data)}")
    message_type = _enum(MessageType, data[header + 1], "message type")
    return message_type, bytes(data[header + 2 :])


def frame(message_type: int, payload: bytes) -> bytes:
    """Prefix `payload` with the common header (hub id 0)."""
    length = len(payload) + 3
    if length >= 128:
        length += 1
        if length > MAX_MESSAGE_LENGTH:
            raise ProtocolError(f"message of {length} bytes exceeds the limit of {MAX_MESSAGE_LENGTH}")
        return bytes([0x80 | (length & 0x7F), length >> 7, 0x00, message_type]) + payload
    return bytes([length, 0x00, message_type]) + payload


def decode(data: bytes) -> Message:
    """Decode one whole message (a GATT notification or write); raise `ProtocolError` on anything malformed."""
    message_type, payload = split_header(data)
    decoder = _DECODERS.get(message_type)
    if decoder is None:
        return OtherMessage(message_type, payload)
    return decoder(payload)


def _hub_property(payload: bytes) -> HubPropertyMessage:
    if len(payload) < 2:
        raise ProtocolError(f"hub property message needs at least 2 payload bytes, got {len(payload)}")
    prop = _enum(HubProperty, payload[0], "hub property")
    operation = _enum(PropertyOperation, payload[1], "hub property operation")
    value = payload[2:]
    if operation not in (PropertyOperation.SET, PropertyOperation.UPDATE) and value:
        raise ProtocolError(f"hub property operation {operation.name} carries no payload, got {len(value)} bytes")
    return HubPropertyMessage(prop, operation, value)


def _hub_action(payload: bytes) -> HubActionMessage:
    _exact(payload, 1, "hub action")
    return HubActionMessage(_enum(HubAction, payload[0], "hub action"))


def _hub_alert(payload: bytes) -> HubAlertMessage:
    if len(payload) < 2:
        raise ProtocolError(f"hub alert needs at least 2 payload bytes, got {len(payload)}")
    alert = _enum(AlertType, payload[0], "alert type")
    operation = _enum(AlertOperation, payload[1], "alert operation")
    if operation == AlertOperation.UPDATE:
        _exact(payload, 3, "hub alert update")
        if payload[2] not in (0x00, 0xFF):
            raise ProtocolError(f"hub alert payload 0x{payload[2]:02x} is neither 0x00 (ok) nor 0xff (alert)")
        return HubAlertMessage(alert, operation, payload[2] == 0x00)
    _exact(payload, 2, f"hub alert {operation.name}")
    return HubAlertMessage(alert, operation)


def _attached_io(payload: bytes) -> AttachedIo:
    if len(payload) < 2:
        raise ProtocolError(f"attached I/O needs at least 2 payload bytes, got {len(payload)}")
    port = payload[0]
    event = _enum(IoEvent, payload[1], "I/O event")
    if event == IoEvent.DETACHED:
        _exact(payload, 2, "detached I/O")
        return AttachedIo(port, event)
    if event == IoEvent.ATTACHED:
        _exact(payload, 12, "attached I/O")
        io_type, hardware, software = struct.unpack_from("<Hii", payload, 2)
        return AttachedIo(port, event, io_type, hardware, software)
    _exact(payload, 6, "attached virtual I/O")
    io_type, port_a, port_b = struct.unpack_from("<HBB", payload, 2)
    return AttachedIo(port, event, io_type, port_a=port_a, port_b=port_b)


def _generic_error(payload: bytes) -> GenericError:
    _exact(payload, 2, "generic error")
    return GenericError(payload[0], _enum(ErrorCode, payload[1], "error code"))


def _input_format_setup(payload: bytes) -> PortInputFormatSetup:
    _exact(payload, 7, "port input format setup")
    port, mode, delta, notify = struct.unpack("<BBIB", payload)
    return PortInputFormatSetup(port, mode, delta, _flag(notify))


def _input_format(payload: bytes) -> PortInputFormat:
    _exact(payload, 7, "port input format")
    port, mode, delta, notify = struct.unpack("<BBIB", payload)
    return PortInputFormat(port, mode, delta, _flag(notify))


def _flag(value: int) -> bool:
    if value not in (0, 1):
        raise ProtocolError(f"notification flag {value} is neither 0 nor 1")
    return value == 1


def _port_value(payload: bytes) -> PortValue:
    if len(payload) < 2:
        raise ProtocolError(f"port value needs a port and at least 1 value byte, got {len(payload)} bytes")
    return PortValue(payload[0], payload[1:])


def _output_command(payload: bytes) -> PortOutputCommand:
    if len(payload) < 3:
        raise ProtocolError(f"port output command needs at least 3 payload bytes, got {len(payload)}")
    port, info, subcommand = payload[0], payload[1], payload[2]
    try:
        startup, completion = Startup(info >> 4), Completion(info & 0x0F)
    except ValueError:
        raise ProtocolError(f"startup and completion byte 0x{info:02x} is not defined by LWP 3.0") from None
    return PortOutputCommand(port, subcommand, payload[3:], startup, completion)


def _output_feedback(payload: bytes) -> PortOutputFeedback:
    if not payload or len(payload) % 2:
        raise ProtocolError(f"output command feedback needs (port, feedback) pairs, got {len(payload)} bytes")
    entries = []
    for index in range(0, len(payload), 2):
        bits = payload[index + 1]
        if bits & ~0x1F:
            raise ProtocolError(f"feedback bits 0x{bits:02x} set undefined bits (only 0x1f are defined)")
        entries.append((payload[index], Feedback(bits)))
    return PortOutputFeedback(tuple(entries))


_DECODERS: dict[MessageType, Callable[[bytes], Message]] = {
    MessageType.HUB_PROPERTIES: _hub_property,
    MessageType.HUB_ACTIONS: _hub_action,
    MessageType.HUB_ALERTS: _hub_alert,
    MessageType.HUB_ATTACHED_IO: _attached_io,
    MessageType.GENERIC_ERROR: _generic_error,
    MessageType.PORT_INPUT_FORMAT_SETUP_SINGLE: _input_format_setup,
    MessageType.PORT_INPUT_FORMAT_SINGLE: _input_format,
    MessageType.PORT_VALUE_SINGLE: _port_value,
    MessageType.PORT_OUTPUT_COMMAND: _output_command,
    MessageType.PORT_OUTPUT_COMMAND_FEEDBACK: _output_feedback,
    MessageType.PORT_INFORMATION_REQUEST: decode_port_information_request,
    MessageType.PORT_MODE_INFORMATION_REQUEST: decode_port_mode_information_request,
    MessageType.PORT_INFORMATION: decode_port_information,
    MessageType.PORT_MODE_INFORMATION: decode_port_mode_information,
}


def encode(message: Message) -> bytes:
    """The bytes of one message, common header included."""
    match message:
        case HubPropertyMessage(prop, operation, payload):
            return frame(MessageType.HUB_PROPERTIES, bytes([prop, operation]) + payload)
        case HubActionMessage(action):
            return frame(MessageType.HUB_ACTIONS, bytes([action]))
        case HubAlertMessage(alert, operation, ok):
            tail = bytes([0x00 if ok else 0xFF]) if operation == AlertOperation.UPDATE else b""
            return frame(MessageType.HUB_ALERTS, bytes([alert, operation]) + tail)
        case AttachedIo(port, event, io_type, hardware, software, port_a, port_b):
            if event == IoEvent.DETACHED:
                return frame(MessageType.HUB_ATTACHED_IO, bytes([port, event]))
            if event == IoEvent.ATTACHED:
                return frame(
                    MessageType.HUB_ATTACHED_IO, struct.pack("<BBHii", port, event, io_type, hardware, software)
                )
            return frame(MessageType.HUB_ATTACHED_IO, struct.pack("<BBHBB", port, event, io_type, port_a, port_b))
        case GenericError(command_type, code):
            return frame(MessageType.GENERIC_ERROR, bytes([command_type, code]))
        case PortInputFormatSetup(port, mode, delta, notify):
            return frame(MessageType.PORT_INPUT_FORMAT_SETUP_SINGLE, struct.pack("<BBIB", port, mode, delta, notify))
        case PortInputFormat(port, mode, delta, notify):
            return frame(MessageType.PORT_INPUT_FORMAT_SINGLE, struct.pack("<BBIB", port, mode, delta, notify))
        case PortValue(port, data):
            return frame(MessageType.PORT_VALUE_SINGLE, bytes([port]) + data)
        case PortOutputCommand(port, subcommand, payload, startup, completion):
            info = (startup << 4) | completion
            return frame(MessageType.PORT_OUTPUT_COMMAND, bytes([port, info, subcommand]) + payload)
        case PortOutputFeedback(entries):
            return frame(MessageType.PORT_OUTPUT_COMMAND_FEEDBACK, b"".join(bytes([p, int(f)]) for p, f in entries))
        case PortInformationRequest():
            return frame(MessageType.PORT_INFORMATION_REQUEST, encode_payload(message))
        case PortModeInformationRequest():
            return frame(MessageType.PORT_MODE_INFORMATION_REQUEST, encode_payload(message))
        case PortInformation():
            return frame(MessageType.PORT_INFORMATION, encode_payload(message))
        case PortModeInformation():
            return frame(MessageType.PORT_MODE_INFORMATION, encode_payload(message))
        case OtherMessage(message_type, payload):
            return frame(message_type, payload)
    raise TypeError(f"not an LWP3 message: {message!r}")


# ---- port output sub commands (§3.27) -----------------------------------------------------------


def _check(value: int, low: int, high: int, what: str) -> None:
    if not low <= value <= high:
        raise ValueError(f"{what} {value} is outside [{low}, {high}]")


def start_speed(port: int, speed: int, max_power: int = 100, profile: int = 0) -> PortOutputCommand:
    """StartSpeed (0x07): run at `speed` % (-100..100; 0 holds the position) with at most `max_power` %."""
    _check(speed, -100, 100, "speed")
    _check(max_power, 0, 100, "max power")
    return PortOutputCommand(port, SubCommand.START_SPEED, struct.pack("<bBB", speed, max_power, profile))


def goto_absolute_position(
    port: int, position: int, speed: int, max_power: int = 100, end_state: EndState = EndState.HOLD, profile: int = 0
) -> PortOutputCommand:
    """GotoAbsolutePosition (0x0D): go to `position` degrees at `speed` % (1..100), then `end_state`."""
    _check(speed, 1, 100, "speed")
    _check(max_power, 0, 100, "max power")
    _check(position, -(2**31), 2**31 - 1, "position")
    payload = struct.pack("<iBBBB", position, speed, max_power, end_state, profile)
    return PortOutputCommand(port, SubCommand.GOTO_ABSOLUTE_POSITION, payload)


def write_direct_mode_data(port: int, mode: int, data: bytes) -> PortOutputCommand:
    """WriteDirectModeData (0x51): write `data` to `mode` of `port` (§6.1)."""
    return PortOutputCommand(port, SubCommand.WRITE_DIRECT_MODE_DATA, bytes([mode]) + data)


def start_power(port: int, power: int) -> PortOutputCommand:
    """StartPower (§3.27.1, through WriteDirectModeData mode 0): -100..100 % PWM, 0 float, 127 brake."""
    if power != 127:
        _check(power, -100, 100, "power")
    return write_direct_mode_data(port, 0, struct.pack("<b", power))


def set_rgb(port: int, red: int, green: int, blue: int) -> PortOutputCommand:
    """SetRgbColors (§3.27.21, WriteDirectModeData mode 1 of an RGB light): each channel 0..255."""
    for value, name in ((red, "red"), (green, "green"), (blue, "blue")):
        _check(value, 0, 255, name)
    return write_direct_mode_data(port, 1, bytes([red, green, blue]))


def request_property(prop: HubProperty) -> HubPropertyMessage:
    """Ask for one update of `prop`."""
    return HubPropertyMessage(prop, PropertyOperation.REQUEST_UPDATE)


def enable_property_updates(prop: HubProperty) -> HubPropertyMessage:
    """Ask the hub to send `prop` whenever it changes."""
    return HubPropertyMessage(prop, PropertyOperation.ENABLE_UPDATES)
