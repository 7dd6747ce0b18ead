"""Aseba framing: a 6-byte little-endian header (payload length, source, type) and the payload.

A `FrameReader` is fed arbitrary chunks of a byte stream (USB packets of 64 bytes, coalesced TCP
segments) and yields whole frames. A header announcing a payload over `MAX_PAYLOAD` bytes cannot be
a valid frame: the reader raises `ProtocolError` and starts hunting for the next frame boundary.

Resynchronizing: Aseba frames carry no start marker or checksum, so after garbage (line noise on a
serial port, a frame that does not decode) the reader skips bytes until a NodePresent header
(length 2, type 0x900C): every node sends one in answer to each periodic ListNodes, so the stream
realigns within one discovery period, and the frames that follow are whole again.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from protocols.errors import ProtocolError

#: Header: u16 payload length in bytes, u16 source node id, u16 message type (all little-endian).
HEADER = struct.Struct("<HHH")
#: ASEBA_MAX_EVENT_ARG_SIZE: 258 words of 2 bytes (consts.h); the serializer refuses more.
MAX_PAYLOAD = 516
#: The source id a host (client) uses: ASEBA_DEST_DEBUG.
HOST_SOURCE = 0
#: Type of NodePresent, the frame a resynchronizing reader looks for.
NODE_PRESENT = 0x900C


@dataclass(frozen=True, slots=True)
class Frame:
    """One Aseba frame: `source` node id, message `type` (0..0xFFFF) and raw `payload` bytes."""

    source: int
    type: int
    payload: bytes


def encode_frame(source: int, type_: int, payload: bytes) -> bytes:
    """The bytes of one frame; raise `ProtocolError` when the payload exceeds `MAX_PAYLOAD` bytes."""
    if len(payload) > MAX_PAYLOAD:
        raise ProtocolError(f"payload of {len(payload)} bytes exceeds the Aseba limit of {MAX_PAYLOAD} bytes")
    if not 0 <= source <= 0xFFFF or not 0 <= type_ <= 0xFFFF:
        raise ProtocolError(f"source {source} and type {type_} must fit 16 bits unsigned")
    return HEADER.pack(len(payload), source, type_) + payload


class FrameReader:
    """Splits a byte stream into frames: `feed(chunk)` then `next()` until it returns None."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.hunting = False
        #: Bytes skipped while resynchronizing.
        self.skipped = 0

    def feed(self, data: bytes) -> None:
        """Append received bytes."""
        self._buffer += data

    def next(self) -> Frame | None:
        """The next whole frame, or None until more bytes arrive.

        Raise `ProtocolError` (and clear the buffer) on a header announcing more than
        `MAX_PAYLOAD` bytes.
        """
        if self.hunting and not self._hunt():
            return None
        if len(self._buffer) < HEADER.size:
            return None
        length, source, type_ = HEADER.unpack_from(self._buffer)
        if length > MAX_PAYLOAD:
            self.resynchronize()
            raise ProtocolError(f"frame announces {length} payload bytes, over the Aseba limit of {MAX_PAYLOAD}")
        end = HEADER.size + length
        if len(self._buffer) < end:
            return None
        payload = bytes(self._buffer[HEADER.size : end])
        del self._buffer[:end]
        return Frame(source, type_, payload)

    def resynchronize(self) -> None:
        """Skip bytes up to the next NodePresent header (after garbage or an undecodable frame)."""
        self.hunting = True
        self.skipped += 1
        del self._buffer[:1]  # the current position is known to be wrong

    def _hunt(self) -> bool:
        position = 0
        while position + HEADER.size <= len(self._buffer):
            length, _, type_ = HEADER.unpack_from(self._buffer, position)
            if length == 2 and type_ == NODE_PRESENT:
                break
            position += 1
        self.skipped += position
        del self._buffer[:position]
        if len(self._buffer) < HEADER.size:
            return False  # keep the tail: it may begin a header
        self.hunting = False
        return True

    @property
    def pending(self) -> int:
        """Bytes buffered that do not form a whole frame yet."""
        return len(self._buffer)
