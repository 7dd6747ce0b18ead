"""The four Kortex header words and their bit fields (spec kortex.md §1.4).

======================  ===========================================================================
word                    bits, most significant first
======================  ===========================================================================
frame_info              header version (4) | frame type (4) | device id (8) | error code (4) |
                        error sub-code (12)
message_info            session id (16) | message id (16)
service_info            service version (4) | service id (12) | function id (16)
payload_info            reserved (8) | payload length (24)
======================  ===========================================================================

The low 28 bits of service_info, ``service_id << 16 | function_id``, are the function UID.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from protocols.errors import ProtocolError

#: The only header version there is.
HEADER_VERSION = 1
#: Every service is at version 1 in Kortex 2.6 and 3.4.
SERVICE_VERSION = 1
#: payload_info holds the payload length in 24 bits.
MAX_PAYLOAD_LENGTH = (1 << 24) - 1


class FrameType(IntEnum):
    """The frameType nibble of frame_info; 4 and 6 are undefined, and errors are responses."""

    RESERVED = 0
    REQUEST = 1
    RAW = 2
    RESPONSE = 3
    NOTIFICATION = 5
    PING = 7
    PONG = 8


_WIDTHS = {
    "header_version": 4,
    "frame_type": 4,
    "device_id": 8,
    "error_code": 4,
    "error_sub_code": 12,
    "session_id": 16,
    "message_id": 16,
    "service_version": 4,
    "service_id": 12,
    "function_id": 16,
    "payload_length": 24,
    "payload_reserved": 8,
}


@dataclass(frozen=True, slots=True)
class Header:
    """The decoded header of one frame. `function_uid` is ``service_id << 16 | function_id``."""

    frame_type: int
    session_id: int = 0
    message_id: int = 0
    service_id: int = 0
    function_id: int = 0
    device_id: int = 0
    error_code: int = 0
    error_sub_code: int = 0
    payload_length: int = 0
    header_version: int = HEADER_VERSION
    service_version: int = SERVICE_VERSION
    payload_reserved: int = 0

    def __post_init__(self) -> None:
        for name, bits in _WIDTHS.items():
            value = getattr(self, name)
            if not 0 <= value < 1 << bits:
                raise ProtocolError(f"header {name} {value} does not fit {bits} bits")

    @property
    def function_uid(self) -> int:
        """The function UID used in the vendor's stubs (e.g. 0x10001 for Session.CreateSession)."""
        return self.service_id << 16 | self.function_id

    def pack(self) -> tuple[int, int, int, int]:
        """The (frame_info, message_info, service_info, payload_info) words."""
        return (
            self.header_version << 28
            | self.frame_type << 24
            | self.device_id << 16
            | self.error_code << 12
            | self.error_sub_code,
            self.session_id << 16 | self.message_id,
            self.service_version << 28 | self.service_id << 16 | self.function_id,
            self.payload_reserved << 24 | self.payload_length,
        )

    @classmethod
    def unpack(cls, frame_info: int, message_info: int, service_info: int, payload_info: int) -> Header:
        """Split the four 32-bit words into fields."""
        for name, word in (
            ("frame_info", frame_info),
            ("message_info", message_info),
            ("service_info", service_info),
            ("payload_info", payload_info),
        ):
            if not 0 <= word <= 0xFFFFFFFF:
                raise ProtocolError(f"header word {name} {word} does not fit 32 bits")
        return cls(
            header_version=frame_info >> 28,
            frame_type=frame_info >> 24 & 0xF,
            device_id=frame_info >> 16 & 0xFF,
            error_code=frame_info >> 12 & 0xF,
            error_sub_code=frame_info & 0xFFF,
            session_id=message_info >> 16,
            message_id=message_info & 0xFFFF,
            service_version=service_info >> 28,
            service_id=service_info >> 16 & 0xFFF,
            function_id=service_info & 0xFFFF,
            payload_reserved=payload_info >> 24,
            payload_length=payload_info & 0xFFFFFF,
        )


def split_uid(function_uid: int) -> tuple[int, int]:
    """(service id, function id) of a function UID such as 0x30001."""
    if not 0 <= function_uid < 1 << 28:
        raise ProtocolError(f"function UID {function_uid:#x} does not fit 28 bits")
    return function_uid >> 16, function_uid & 0xFFFF
