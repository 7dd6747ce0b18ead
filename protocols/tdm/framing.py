"""TCP framing of the TDM: a 4-byte little-endian length, then one flatbuffer."""

from __future__ import annotations

import struct

from protocols.errors import ProtocolError

#: The largest message the real TDM accepts (`tdm::maxAppEndPointMessageSize`), bytes.
MAX_MESSAGE_BYTES = 102400
_LENGTH = struct.Struct("<I")


def frame(message: bytes) -> bytes:
    """`message` with its length prefix."""
    return _LENGTH.pack(len(message)) + message


class FrameReader:
    """Splits a TCP byte stream into messages; a length above `max_bytes` raises `ProtocolError`."""

    def __init__(self, max_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self._buffer = bytearray()
        self._max_bytes = max_bytes

    @property
    def partial_bytes(self) -> int:
        """Bytes held of a message not yet complete."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return the messages now complete, in order."""
        self._buffer += data
        messages = []
        while len(self._buffer) >= _LENGTH.size:
            (length,) = _LENGTH.unpack_from(self._buffer)
            if length > self._max_bytes:
                raise ProtocolError(f"TDM frame of {length} bytes exceeds the {self._max_bytes}-byte limit")
            end = _LENGTH.size + length
            if len(self._buffer) < end:
                break
            messages.append(bytes(self._buffer[_LENGTH.size : end]))
            del self._buffer[:end]
        return messages
