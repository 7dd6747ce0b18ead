"""Kortex transport framing: the TCP stream splitter and the UDP datagram limit (spec kortex.md §1.1-1.2).

On TCP every frame is ``MAGIC (8 bytes) | length (uint32, big-endian) | Frame (length bytes)``. On
UDP a datagram is one bare Frame of at most 65507 bytes.
"""

from __future__ import annotations

from protocols.errors import ProtocolError

#: BEL, "xEtRoK" ("KoRtEx" reversed), BEL.
MAGIC = b"\x07xEtRoK\x07"
#: Magic plus the 4-byte length.
TCP_HEADER_SIZE = len(MAGIC) + 4
#: The vendor's C++ TCP transport refuses to send larger frames (16 MiB), so nothing larger is valid.
MAX_TCP_FRAME_BYTES = 16 * 1024 * 1024
#: 65535 - 20 (IP header) - 8 (UDP header).
MAX_UDP_FRAME_BYTES = 65507


def encode_tcp(frame: bytes) -> bytes:
    """Wrap one serialized Frame for the TCP stream."""
    if len(frame) > MAX_TCP_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(frame)} bytes exceeds the TCP limit of {MAX_TCP_FRAME_BYTES} bytes")
    return MAGIC + len(frame).to_bytes(4, "big") + frame


def check_udp(datagram: bytes) -> bytes:
    """Return `datagram` if it fits one UDP frame, else raise `ProtocolError`."""
    if len(datagram) > MAX_UDP_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(datagram)} bytes exceeds the UDP limit of {MAX_UDP_FRAME_BYTES} bytes")
    return datagram


class TcpSplitter:
    """Cuts a Kortex TCP byte stream into serialized Frames.

    Unlike the vendor's reader, which gives up on a bad magic, bytes before a magic are skipped and
    counted in `discarded_bytes`, so the stream resynchronizes after garbage. A length above
    `max_frame_bytes` raises `ProtocolError`: past a corrupt length the stream cannot be trusted.
    """

    def __init__(self, max_frame_bytes: int = MAX_TCP_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        #: Bytes skipped because they did not start with the magic.
        self.discarded_bytes = 0
        self._buffer = bytearray()

    @property
    def buffered(self) -> int:
        """Bytes held back waiting for the rest of a frame."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return every Frame they complete, in order."""
        buffer = self._buffer
        buffer += data
        frames: list[bytes] = []
        while True:
            start = buffer.find(MAGIC)
            if start < 0:
                # A magic split across reads can only begin in the last len(MAGIC) - 1 bytes.
                keep = len(MAGIC) - 1
                if len(buffer) > keep:
                    self.discarded_bytes += len(buffer) - keep
                    del buffer[: len(buffer) - keep]
                return frames
            if start:
                self.discarded_bytes += start
                del buffer[:start]
            if len(buffer) < TCP_HEADER_SIZE:
                return frames
            length = int.from_bytes(buffer[len(MAGIC) : TCP_HEADER_SIZE], "big")
            if length > self.max_frame_bytes:
                raise ProtocolError(
                    f"TCP frame length {length} exceeds the limit of {self.max_frame_bytes} bytes (max_frame_bytes)"
                )
            end = TCP_HEADER_SIZE + length
            if len(buffer) < end:
                return frames
            frames.append(bytes(buffer[TCP_HEADER_SIZE:end]))
            del buffer[:end]
