"""Sans-I/O reader of the msgpack socket: a byte stream of concatenated msgpack values.

Feed bytes with `receive_data`, then call `next_message` until it returns None. Each message comes
with its encoded size. Bytes that are not msgpack, a value over the size limit, or nesting deeper
than msgpack's stack raise `ProtocolError`; messages decoded before the bad bytes are not lost.

A value's size is known from its headers before its payload arrives: a str, bin or ext header, or an
array or map count, that promises more bytes than the limit allows is refused as soon as the header
is read, so a peer cannot make the reader wait for (and buffer) a value that could never be accepted.
"""

from __future__ import annotations

import msgpack

from protocols.errors import ProtocolError


class MessageTooLarge(ProtocolError):
    """One value is larger than the configured limit."""


# Bytes after the type byte: (length-field size, fixed payload size) per type byte; see the msgpack spec.
_SCALAR_TAIL = {
    0xC0: 0, 0xC1: 0, 0xC2: 0, 0xC3: 0, 0xCA: 4, 0xCB: 8, 0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8,
    0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8, 0xD4: 2, 0xD5: 3, 0xD6: 5, 0xD7: 9, 0xD8: 17,
}  # fmt: skip
# Type byte -> (bytes of the length field, extra bytes after it): str8..32, bin8..32, ext8..32.
_SIZED = {0xD9: (1, 0), 0xDA: (2, 0), 0xDB: (4, 0), 0xC4: (1, 0), 0xC5: (2, 0), 0xC6: (4, 0),
          0xC7: (1, 1), 0xC8: (2, 1), 0xC9: (4, 1)}  # fmt: skip
# Type byte -> (bytes of the count field, elements per count): array16/32, map16/32.
_CONTAINERS = {0xDC: (2, 1), 0xDD: (4, 1), 0xDE: (2, 2), 0xDF: (4, 2)}


class _SizeGuard:
    """Walks msgpack headers as bytes arrive and fails once a value promises more than `limit` bytes."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._header = bytearray()  # an incomplete header carried over from the previous chunk
        self._skip = 0  # payload bytes of the current str/bin/ext or fixed-size scalar still to come
        self._open: list[int] = []  # elements still to come in each open array/map, outermost first
        self._promised = 0  # sum of `_open`: each element takes at least one more byte
        self._consumed = 0  # bytes of the current top-level value seen so far

    def feed(self, data: bytes) -> None:
        """Account for `data`; raise `MessageTooLarge` when a header promises too much."""
        view = memoryview(data)
        index, end = 0, len(view)
        while index < end:
            if self._skip:
                taken = min(self._skip, end - index)
                self._skip -= taken
                self._consumed += taken
                index += taken
                if not self._skip:
                    self._value_done()
                continue
            need = self._header_size(self._header[0] if self._header else view[index])
            taken = min(need - len(self._header), end - index)
            self._header += view[index : index + taken]
            index += taken
            if len(self._header) == need:
                header, self._header = bytes(self._header), bytearray()
                self._consumed += len(header)
                self._start_value(header)

    @staticmethod
    def _header_size(first: int) -> int:
        if first in _SIZED:
            return 1 + _SIZED[first][0]
        if first in _CONTAINERS:
            return 1 + _CONTAINERS[first][0]
        return 1

    def _start_value(self, header: bytes) -> None:
        first = header[0]
        if self._open:
            self._open[-1] -= 1
            self._promised -= 1
        if first <= 0x7F or first >= 0xE0:
            payload, elements = 0, 0
        elif first <= 0x8F:
            payload, elements = 0, 2 * (first & 0x0F)
        elif first <= 0x9F:
            payload, elements = 0, first & 0x0F
        elif first <= 0xBF:
            payload, elements = first & 0x1F, 0
        elif first in _SIZED:
            width, extra = _SIZED[first]
            payload, elements = int.from_bytes(header[1 : 1 + width], "big") + extra, 0
        elif first in _CONTAINERS:
            width, per = _CONTAINERS[first]
            payload, elements = 0, per * int.from_bytes(header[1 : 1 + width], "big")
        else:
            payload, elements = _SCALAR_TAIL[first], 0
        least = self._consumed + payload + self._promised + elements
        if least > self._limit:
            what = "a container" if elements else "a value"
            raise MessageTooLarge(
                f"{what} whose header promises a message of at least {least} bytes exceeds the {self._limit}-byte limit"
            )
        if elements:
            self._open.append(elements)
            self._promised += elements
        elif payload:
            self._skip = payload
        else:  # a scalar, or an empty map or array
            self._value_done()

    def _value_done(self) -> None:
        while self._open and self._open[-1] == 0:
            self._open.pop()
        if not self._open:
            self._consumed = 0

    @property
    def partial_bytes(self) -> int:
        """Bytes of the top-level value that has started but not ended."""
        return self._consumed + len(self._header)


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
        self._received = 0  # stream bytes fed so far
        # Headers are walked only for the value still incomplete when the unpacker runs out of data:
        # complete values (nearly all of them) cost nothing extra. `_tail` holds the stream from
        # `_tail_start` on; the guard has walked the value at `_guard_start` up to `_walked`.
        self._tail = bytearray()
        self._tail_start = 0
        self._guard = _SizeGuard(max_message_bytes)
        self._guard_start = 0
        self._walked = 0

    def receive_data(self, data: bytes) -> None:
        """Add bytes read from the socket; raise `MessageTooLarge` when a value cannot fit."""
        if self._failed:
            raise self._failed
        try:
            self._unpacker.feed(data)
            self._tail += data
            self._received += len(data)
        except msgpack.BufferFull:
            self._failed = MessageTooLarge(f"a message exceeds the {self.max_message_bytes}-byte limit")
            raise self._failed from None

    def _check_incomplete(self) -> None:
        """Walk the headers of the incomplete value at the end of the stream (bytes not walked yet)."""
        start = self._message_start
        del self._tail[: start - self._tail_start]
        self._tail_start = start
        if self._guard_start != start:
            self._guard = _SizeGuard(self.max_message_bytes)
            self._guard_start = self._walked = start
        try:
            self._guard.feed(bytes(self._tail[self._walked - start :]))
        except MessageTooLarge as error:
            self._failed = error
            raise
        self._walked = self._received

    def close(self) -> None:
        """Free the buffer now (the connection ended); the reader accepts nothing after this."""
        self._unpacker = msgpack.Unpacker(max_buffer_size=1)
        self._tail = bytearray()
        # A new error, not the stored one: its traceback's frames would hold this reader in a cycle.
        self._failed = ProtocolError("the stream reader is closed")

    @property
    def partial_bytes(self) -> int:
        """Bytes held of a message that has begun but not ended (0 between messages).

        Exact once `next_message` has returned None.
        """
        return self._received - self._message_start

    def next_message(self) -> tuple[object, int] | None:
        """The next complete value and its size in bytes, or None until more bytes arrive.

        Raises `MessageTooLarge` as soon as the headers of an incomplete value promise too much.
        """
        if self._failed:
            raise self._failed
        start = self._message_start
        try:
            value = self._unpacker.unpack()
        except msgpack.OutOfData:
            self._check_incomplete()
            return None
        except (ValueError, TypeError, msgpack.StackError) as error:
            if "exceeds max_" in str(error):  # the unpacker's own length limits: say which value and why
                self._check_incomplete()
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
