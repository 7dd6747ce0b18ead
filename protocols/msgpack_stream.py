"""Sans-I/O reader of the msgpack socket: a byte stream of concatenated msgpack values.

Feed bytes with `receive_data`, then call `next_message` until it returns None. Each message comes
with its encoded size. Bytes that are not msgpack, a value over the size limit, or nesting deeper
than msgpack's stack raise `ProtocolError`; messages decoded before the bad bytes are not lost.
"""

from __future__ import annotations

import msgpack

from protocols.errors import ProtocolError


class MessageTooLarge(ProtocolError):
    """One value is larger than the configured limit."""


class MsgpackStreamReader:
    """Splits a msgpack byte stream into values of at most `max_message_bytes` each."""

    def __init__(self, max_message_bytes: int, read_size: int = 65536) -> None:
        self.max_message_bytes = max_message_bytes
        # Room for one whole message plus the start of the next one from the same read.
        self._unpacker = msgpack.Unpacker(
            raw=False, strict_map_key=False, max_buffer_size=max_message_bytes + read_size
        )
        self._failed: ProtocolError | None = None
        # The unpacker parses partial values incrementally, so tell() moves before a value is complete:
        # a value starts where the previous one ended.
        self._message_start = 0

    def receive_data(self, data: bytes) -> None:
        """Add bytes read from the socket; raise `MessageTooLarge` when a value cannot fit."""
        if self._failed:
            raise self._failed
        try:
            self._unpacker.feed(data)
        except msgpack.BufferFull:
            self._failed = MessageTooLarge(f"a message exceeds the {self.max_message_bytes}-byte limit")
            raise self._failed from None

    def next_message(self) -> tuple[object, int] | None:
        """The next complete value and its size in bytes, or None until more bytes arrive."""
        if self._failed:
            raise self._failed
        start = self._message_start
        try:
            value = self._unpacker.unpack()
        except msgpack.OutOfData:
            return None
        except (ValueError, TypeError, msgpack.StackError) as error:
            # FormatError and ExtraData are ValueErrors; an unhashable map key is a TypeError.
            detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            self._failed = ProtocolError(f"undecodable msgpack at stream byte {start} ({detail})")
            raise self._failed from None
        self._message_start = self._unpacker.tell()
        size = self._message_start - start
        if size > self.max_message_bytes:
            self._failed = MessageTooLarge(f"a message of {size} bytes exceeds the {self.max_message_bytes}-byte limit")
            raise self._failed
        return value, size
