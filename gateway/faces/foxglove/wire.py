"""The Foxglove WebSocket protocol's frames (sans-I/O): subprotocols, binary layouts, JSON messages.

Binary integers are little-endian. Server → client: MessageData `0x01 | u32 subscription | u64 log
time (ns) | payload` and ServiceCallResponse `0x03 | u32 service | u32 call | u32 n | encoding[n] |
payload`. Client → server: MessageData `0x01 | u32 channel | payload` and ServiceCallRequest
`0x02 | u32 service | u32 call | u32 n | encoding[n] | payload`. Each server frame here is a whole
WebSocket frame (RFC 6455), ready to be written to the socket as it is.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.errors import ProtocolError
from gateway.wire import websocket_binary_frame, websocket_text_frame

#: The subprotocols we speak, most preferred first. `foxglove.sdk.v1.1` (foxglove-sdk 0.30) differs
#: from v1 only in `advertise`: schemas travel once per connection in `schemas`, channels name a
#: `schemaId`. `foxglove.websocket.v1` is the legacy name older apps and the npm client offer.
SDK_V1_1 = "foxglove.sdk.v1.1"
SDK_V1 = "foxglove.sdk.v1"
LEGACY_V1 = "foxglove.websocket.v1"
SUBPROTOCOLS = (SDK_V1_1, SDK_V1, LEGACY_V1)

MESSAGE_DATA = 0x01
SERVICE_CALL_RESPONSE = 0x03
CLIENT_MESSAGE_DATA = 0x01
SERVICE_CALL_REQUEST = 0x02

#: Status levels.
INFO, WARNING, ERROR = 0, 1, 2

#: Longest encoding name a service call may carry (the only one we take is "json").
MAX_ENCODING_LENGTH = 64
U32_MAX = 0xFFFFFFFF

_U32 = struct.Struct("<I")
_MESSAGE_HEAD = struct.Struct("<BIQ")
_CALL_HEAD = struct.Struct("<BIII")


def choose_subprotocol(offered: Iterable[str]) -> str | None:
    """The subprotocol to answer among those a client `offered` (None: none of ours).

    The newest one we speak wins whatever the client's order, as foxglove-sdk's server does.
    """
    names = {name.strip() for name in offered}
    return next((name for name in SUBPROTOCOLS if name in names), None)


def json_frame(message: Mapping[str, Any]) -> bytes:
    """A JSON message as a WebSocket text frame."""
    return websocket_text_frame(orjson.dumps(message))


def status_frame(level: int, message: str) -> bytes:
    """A `status` message (level 0 info, 1 warning, 2 error)."""
    return json_frame({"op": "status", "level": level, "message": message})


def message_data_frame(log_time_ns: int, payload: bytes) -> bytes:
    """A MessageData WebSocket frame for subscription 0; `with_subscription` retargets it."""
    return websocket_binary_frame(_MESSAGE_HEAD.pack(MESSAGE_DATA, 0, log_time_ns) + payload)


def with_subscription(frame: bytes, subscription: bytes) -> bytes:
    """`frame` (from `message_data_frame`) for the 4-byte little-endian `subscription`, sharing the rest."""
    length_code = frame[1] & 0x7F
    start = 3 if length_code < 126 else 5 if length_code == 126 else 11  # WS header + opcode byte
    if frame[start : start + 4] == subscription:
        return frame
    return b"".join((frame[:start], subscription, frame[start + 4 :]))


def subscription_bytes(subscription: int) -> bytes:
    """A subscription id as MessageData carries it."""
    return _U32.pack(subscription)


def service_call_response_frame(service: int, call: int, encoding: str, payload: bytes) -> bytes:
    """A ServiceCallResponse WebSocket frame."""
    name = encoding.encode()
    return websocket_binary_frame(_CALL_HEAD.pack(SERVICE_CALL_RESPONSE, service, call, len(name)) + name + payload)


@dataclass(frozen=True, slots=True)
class ClientMessageData:
    """A client's message on one of its advertised channels."""

    channel: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class ServiceCallRequest:
    """A client's call of an advertised service."""

    service: int
    call: int
    encoding: str
    payload: bytes


def parse_client_binary(data: bytes) -> ClientMessageData | ServiceCallRequest:
    """Decode one binary client message; raise `ProtocolError` naming what is wrong."""
    if not data:
        raise ProtocolError("empty binary message: expected an opcode byte")
    opcode = data[0]
    if opcode == CLIENT_MESSAGE_DATA:
        if len(data) < 5:
            raise ProtocolError(f"client message data of {len(data)} bytes: needs at least 5 (opcode, u32 channel)")
        return ClientMessageData(_U32.unpack_from(data, 1)[0], data[5:])
    if opcode == SERVICE_CALL_REQUEST:
        if len(data) < _CALL_HEAD.size:
            raise ProtocolError(
                f"service call request of {len(data)} bytes: needs at least 13 (opcode, service, call, encoding length)"
            )
        _, service, call, length = _CALL_HEAD.unpack_from(data)
        if length > MAX_ENCODING_LENGTH or _CALL_HEAD.size + length > len(data):
            raise ProtocolError(f"service call request: encoding length {length} exceeds the message or 64 bytes")
        try:
            encoding = data[_CALL_HEAD.size : _CALL_HEAD.size + length].decode()
        except UnicodeDecodeError:
            raise ProtocolError("service call request: the encoding name is not UTF-8") from None
        return ServiceCallRequest(service, call, encoding, data[_CALL_HEAD.size + length :])
    raise ProtocolError(f"unknown binary opcode 0x{opcode:02x} (client opcodes: 0x01 message data, 0x02 service call)")
