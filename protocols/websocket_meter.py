"""Sans-I/O meter of a client's WebSocket byte stream (RFC 6455 section 5.2): how much is an unfinished message.

It reads only frame headers and skips payloads, so it costs little next to the real parser; the
gateway uses it to bound the bytes and the time a client may spend on one message, and to hand the
real parser whole frames only (the bytes of an unfinished frame stay with the gateway, which frees
them itself when the connection ends). A header that announces a payload over `max_message_bytes`
(one frame, or a fragmented message so far) raises `ProtocolError` as soon as the header is complete.
"""

from __future__ import annotations

from protocols.errors import ProtocolError

_FIN = 0x80
_OPCODE = 0x0F
_MASK = 0x80
_CONTROL = 0x8


class WebSocketMeter:
    """Follows frame boundaries of one direction of a WebSocket connection."""

    def __init__(self, max_message_bytes: int) -> None:
        self.max_message_bytes = max_message_bytes
        self._header = bytearray()  # a header cut by the end of a chunk, carried over to the next
        self._payload_left = 0
        self._message_bytes = 0  # bytes of the unfinished data message, headers included
        self._message_payload = 0  # payload bytes of its complete fragments
        self._frame_length = 0
        self._completed = 0
        self._frame_bytes = 0  # bytes of the current frame so far, headers included
        self._frame_final = False
        self._frame_control = False

    @property
    def partial_bytes(self) -> int:
        """Bytes received of a message or frame that has not ended (0 between messages)."""
        return self._message_bytes + self._frame_bytes

    @property
    def partial_frame_bytes(self) -> int:
        """Bytes received of the frame that has begun but not ended (0 between frames)."""
        return self._frame_bytes

    def feed(self, data: bytes | bytearray, start: int = 0, max_messages: int | None = None) -> tuple[int, int, int]:
        """Account for `data[start:]`, received from the client; raise `ProtocolError` on an oversized header.

        Stops right after the `max_messages`-th data message that ends in it (None: reads all).
        Returns `(end, boundary, messages)`: the index where it stopped, the index just after the
        last frame that ended in what it read (`start` when none did), and how many data messages
        ended in it.
        """
        index, end = start, len(data)
        boundary = start
        self._completed = 0
        limit = -1 if max_messages is None else max_messages
        while index < end and self._completed != limit:
            if self._payload_left:
                taken = min(self._payload_left, end - index)
                self._payload_left -= taken
                self._frame_bytes += taken
                index += taken
                if not self._payload_left:
                    self._frame_done()
                    boundary = index
                continue
            header = self._header
            if not header and end - index >= 2:
                need = _header_size(data[index + 1])
                if end - index >= need:  # the whole header is here: no copy into the carry-over
                    self._frame_bytes += need
                    index += need
                    if self._start_frame(data[index - need : index]):
                        boundary = index
                    continue
            header.append(data[index])
            index += 1
            self._frame_bytes += 1
            if len(header) >= 2:
                need = _header_size(header[1])
                taken = min(need - len(header), end - index)
                header += data[index : index + taken]
                index += taken
                self._frame_bytes += taken
                if len(header) == need:
                    whole = bytes(header)
                    header.clear()
                    if self._start_frame(whole):
                        boundary = index
        return index, boundary, self._completed

    def _start_frame(self, header: bytes | bytearray) -> bool:
        """Begin a frame from its whole header; True when it has no payload (so it has ended too)."""
        opcode = header[0] & _OPCODE
        length = header[1] & 0x7F
        if length == 126:
            length = int.from_bytes(header[2:4], "big")
        elif length == 127:
            length = int.from_bytes(header[2:10], "big")
        self._frame_control = bool(opcode & _CONTROL)
        self._frame_final = bool(header[0] & _FIN)
        total = (0 if self._frame_control else self._message_payload) + length
        if total > self.max_message_bytes:
            raise ProtocolError(
                f"a WebSocket frame announces a message of at least {total} bytes, over the "
                f"{self.max_message_bytes}-byte limit"
            )
        self._frame_length = length
        self._payload_left = length
        if not length:
            self._frame_done()
            return True
        return False

    def _frame_done(self) -> None:
        if self._frame_control:
            self._frame_bytes = 0
            return
        if self._frame_final:
            self._message_bytes = self._message_payload = 0
            self._completed += 1
        else:
            self._message_bytes += self._frame_bytes
            self._message_payload += self._frame_length
        self._frame_bytes = 0


def _header_size(second: int) -> int:
    """The full header size, from its second byte (mask bit and payload-length code)."""
    length = second & 0x7F
    return 2 + (2 if length == 126 else 8 if length == 127 else 0) + (4 if second & _MASK else 0)
