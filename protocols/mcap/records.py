"""MCAP records: the 9-byte record header, and the bodies of the records a reader of messages needs.

Every record is opcode (u8), body length (u64 little-endian), body. Strings are a u32 length and
UTF-8; maps a u32 byte length and key/value strings. Records this reader does not use (indexes,
statistics, attachments) parse to None: a reader skips them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

from protocols.errors import ProtocolError

#: The 8 bytes an MCAP file starts (and, complete, ends) with.
MAGIC = b"\x89MCAP0\r\n"
#: Opcode (1 byte) and body length (8 bytes).
RECORD_HEADER_BYTES = 9
#: Keys of one map record (channel or metadata); a hostile map cannot make millions of strings.
MAX_MAP_ENTRIES = 4096

_HEADER = struct.Struct("<BQ")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_MESSAGE = struct.Struct("<HIQQ")
#: Bytes of a message record's body before its data.
MESSAGE_HEADER_BYTES = _MESSAGE.size
_CHUNK = struct.Struct("<QQQI")
_FOOTER = struct.Struct("<QQI")


class McapError(ProtocolError):
    """The bytes are not MCAP, or a record breaks the format or a limit; the message says which."""


class Op(IntEnum):
    """The record opcodes of MCAP version 0."""

    HEADER = 0x01
    FOOTER = 0x02
    SCHEMA = 0x03
    CHANNEL = 0x04
    MESSAGE = 0x05
    CHUNK = 0x06
    MESSAGE_INDEX = 0x07
    CHUNK_INDEX = 0x08
    ATTACHMENT = 0x09
    ATTACHMENT_INDEX = 0x0A
    STATISTICS = 0x0B
    METADATA = 0x0C
    METADATA_INDEX = 0x0D
    SUMMARY_OFFSET = 0x0E
    DATA_END = 0x0F


@dataclass(frozen=True, slots=True)
class Header:
    """The first record: the file's profile and the library that wrote it."""

    profile: str
    library: str


@dataclass(frozen=True, slots=True)
class Footer:
    """The last record: where the summary starts (0: none), bytes from the file's start."""

    summary_start: int
    summary_offset_start: int
    summary_crc: int


@dataclass(frozen=True, slots=True)
class Schema:
    """A message schema: `id` (1-65535), name, encoding, data."""

    id: int
    name: str
    encoding: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Channel:
    """A topic: `id`, its schema's id (0: none), topic, message encoding, metadata."""

    id: int
    schema_id: int
    topic: str
    message_encoding: str
    metadata: dict[str, str]


class Message(NamedTuple):
    """One message: its channel, sequence, log and publish times (ns since the epoch), data.

    A named tuple, not a dataclass: a recording may hold millions, and a tuple is built fastest.
    """

    channel_id: int
    sequence: int
    log_time: int
    publish_time: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Chunk:
    """Compressed records: message time range (ns), declared uncompressed size (bytes) and CRC-32 (0: none)."""

    message_start_time: int
    message_end_time: int
    uncompressed_size: int
    uncompressed_crc: int
    compression: str
    records: bytes


@dataclass(frozen=True, slots=True)
class Metadata:
    """A named map of strings (`hwgateway` holds the recorded gateway's devices)."""

    name: str
    metadata: dict[str, str]


@dataclass(frozen=True, slots=True)
class DataEnd:
    """The end of the data section: the summary (if any) follows."""

    data_section_crc: int


Record = Header | Footer | Schema | Channel | Message | Chunk | Metadata | DataEnd


def record_header(data: bytes | bytearray | memoryview, offset: int = 0) -> tuple[int, int]:
    """The opcode and body length (bytes) of the record at `offset`; `McapError` on opcode 0."""
    opcode, length = _HEADER.unpack_from(data, offset)
    if opcode == 0:
        raise McapError(f"opcode 0 at byte {offset} is not an MCAP record")
    return int(opcode), int(length)


class _Body:
    """A cursor over one record body: every read checks that the body holds it."""

    __slots__ = ("data", "op", "position")

    def __init__(self, op: str, data: bytes | memoryview) -> None:
        self.op = op
        self.data = data
        self.position = 0

    def _take(self, size: int, what: str) -> bytes | memoryview:
        end = self.position + size
        if end > len(self.data):
            raise McapError(f"{self.op}: {what} of {size} bytes runs past the record's end ({len(self.data)} bytes)")
        chunk = self.data[self.position : end]
        self.position = end
        return chunk

    def unpack(self, layout: struct.Struct, what: str) -> tuple[int, ...]:
        values: tuple[int, ...] = layout.unpack(self._take(layout.size, what))
        return values

    def string(self, what: str) -> str:
        (size,) = self.unpack(_U32, what)
        try:
            return bytes(self._take(size, what)).decode()
        except UnicodeDecodeError:
            raise McapError(f"{self.op}: {what} is not UTF-8") from None

    def prefixed(self, layout: struct.Struct, what: str) -> bytes:
        (size,) = self.unpack(layout, what)
        return bytes(self._take(size, what))

    def rest(self) -> bytes:
        return bytes(self._take(len(self.data) - self.position, "the rest"))

    def map(self, what: str) -> dict[str, str]:
        (size,) = self.unpack(_U32, what)
        inner = _Body(self.op, self._take(size, what))
        result: dict[str, str] = {}
        while inner.position < len(inner.data):
            if len(result) >= MAX_MAP_ENTRIES:
                raise McapError(f"{self.op}: {what} has more than {MAX_MAP_ENTRIES} entries")
            key = inner.string(f"a key of {what}")
            result[key] = inner.string(f"a value of {what}")
        return result


def parse_record(opcode: int, body: bytes | memoryview) -> Record | None:
    """The record of `opcode` with `body`; None for the records a message reader skips."""
    if opcode == Op.MESSAGE:
        if len(body) < _MESSAGE.size:
            raise McapError(f"Message: {len(body)} bytes, shorter than its {_MESSAGE.size}-byte header")
        channel_id, sequence, log_time, publish_time = _MESSAGE.unpack_from(body)
        return Message(channel_id, sequence, log_time, publish_time, bytes(body[_MESSAGE.size :]))
    if opcode == Op.CHANNEL:
        cursor = _Body("Channel", body)
        channel_id, schema_id = cursor.unpack(_U16, "id")[0], cursor.unpack(_U16, "schema id")[0]
        topic = cursor.string("topic")
        return Channel(channel_id, schema_id, topic, cursor.string("message encoding"), cursor.map("metadata"))
    if opcode == Op.SCHEMA:
        cursor = _Body("Schema", body)
        (schema_id,) = cursor.unpack(_U16, "id")
        name, encoding = cursor.string("name"), cursor.string("encoding")
        return Schema(schema_id, name, encoding, cursor.prefixed(_U32, "data"))
    if opcode == Op.CHUNK:
        cursor = _Body("Chunk", body)
        start, end, size, crc = cursor.unpack(_CHUNK, "header")
        compression = cursor.string("compression")
        return Chunk(start, end, size, crc, compression, cursor.prefixed(_U64, "records"))
    if opcode == Op.METADATA:
        cursor = _Body("Metadata", body)
        name = cursor.string("name")
        return Metadata(name, cursor.map("metadata"))
    if opcode == Op.HEADER:
        cursor = _Body("Header", body)
        profile = cursor.string("profile")
        return Header(profile, cursor.string("library"))
    if opcode == Op.FOOTER:
        return Footer(*_Body("Footer", body).unpack(_FOOTER, "body"))
    if opcode == Op.DATA_END:
        return DataEnd(*_Body("DataEnd", body).unpack(_U32, "body"))
    return None
