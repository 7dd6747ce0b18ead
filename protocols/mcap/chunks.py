"""MCAP chunks: their declared size checked before decompressing, the output capped, the records inside.

A chunk says how many bytes its records expand to; a file from anywhere may lie. The declared size
is checked against `max_bytes` before any work, the decompressor may produce at most that many
bytes (one more is a lie, refused), and a CRC, when the chunk has one, must match.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

import lz4.frame
import zstandard

from protocols.mcap.records import (
    MESSAGE_HEADER_BYTES,
    RECORD_HEADER_BYTES,
    Chunk,
    McapError,
    Message,
    Op,
    Record,
    parse_record,
)

#: What one chunk may expand to, bytes: the recorder's largest `chunk_bytes` (64 MiB) and room for
#: the message that ends a chunk.
MAX_CHUNK_BYTES = 80 * 1024 * 1024
_HEADER = struct.Struct("<BQ")
_MESSAGE_HEADER = struct.Struct("<HIQQ")
#: Schema and channel records one chunk may hold (65,535 ids of each).
MAX_DEFINITIONS = 2 * 65535
#: Records of other kinds one chunk may hold (MCAP puts none there; some tools may).
MAX_OTHER = 1024
#: The compressions MCAP writers use ("" is none).
COMPRESSIONS = ("", "lz4", "zstd")


def decompress(chunk: Chunk, max_bytes: int = MAX_CHUNK_BYTES) -> bytes:
    """The records of `chunk`, uncompressed; `McapError` when its declared size, compression or CRC is wrong.

    No more than `max_bytes` (and no more than the chunk declares) is ever produced.
    """
    declared = chunk.uncompressed_size
    if declared > max_bytes:
        raise McapError(f"Chunk: declares {declared} uncompressed bytes, more than the {max_bytes} allowed")
    if chunk.compression == "":
        records = chunk.records
    elif chunk.compression == "zstd":
        records = _zstd(chunk.records, declared)
    elif chunk.compression == "lz4":
        records = _lz4(chunk.records, declared)
    else:
        raise McapError(f"Chunk: unknown compression {chunk.compression[:32]!r} (known: none, lz4, zstd)")
    if len(records) != declared:
        raise McapError(f"Chunk: holds {len(records)} bytes uncompressed, not the {declared} it declares")
    if chunk.uncompressed_crc and zlib.crc32(records) != chunk.uncompressed_crc:
        raise McapError("Chunk: CRC mismatch: its records are damaged")
    return records


def _zstd(data: bytes, declared: int) -> bytes:
    out = bytearray()
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
        with reader:
            while len(out) <= declared:
                piece = reader.read(min(declared + 1 - len(out), 1 << 20))
                if not piece:
                    break
                out += piece
    except zstandard.ZstdError as error:
        raise McapError(f"Chunk: zstd: {error}") from None
    if len(out) > declared:
        raise McapError(f"Chunk: expands past the {declared} bytes it declares")
    return bytes(out)


def _lz4(data: bytes, declared: int) -> bytes:
    try:
        decompressor = lz4.frame.LZ4FrameDecompressor()
        out: bytes = decompressor.decompress(data, max_length=declared + 1)
    except RuntimeError as error:  # lz4.frame raises RuntimeError on damaged frames
        raise McapError(f"Chunk: lz4: {error}") from None
    if len(out) > declared:
        raise McapError(f"Chunk: expands past the {declared} bytes it declares")
    return out


def chunk_records(records: bytes) -> Iterator[Record]:
    """The records in a chunk's uncompressed `records`, parsed; `McapError` on a cut, nested or bad one.

    Messages, most of any chunk, take a short path: one header read each, no other checks than lengths.
    A chunk holds schemas, channels and messages (MCAP's rule); beyond MAX_DEFINITIONS schemas and
    channels, or MAX_OTHER records of any other kind, it is refused: tens of millions of tiny records
    that compress to a few kB would otherwise cost a minute of CPU each to walk through.
    """
    view = memoryview(records)
    position, size = 0, len(records)
    definitions = others = 0
    header, message_header = _HEADER.unpack_from, _MESSAGE_HEADER.unpack_from
    while position < size:
        if size - position < RECORD_HEADER_BYTES:
            raise McapError(f"Chunk: {size - position} bytes at its end are too few for a record")
        opcode, length = header(records, position)
        body = position + RECORD_HEADER_BYTES
        end = body + length
        if end > size:
            raise McapError(f"Chunk: a record of {length} bytes at byte {position} runs past the chunk's end")
        if opcode == Op.MESSAGE and length >= MESSAGE_HEADER_BYTES:
            channel_id, sequence, log_time, publish_time = message_header(records, body)
            yield Message(channel_id, sequence, log_time, publish_time, records[body + MESSAGE_HEADER_BYTES : end])
        else:
            if opcode == 0:
                raise McapError(f"Chunk: opcode 0 at byte {position} is not an MCAP record")
            if opcode == Op.CHUNK:
                raise McapError("Chunk: holds another chunk")
            if opcode in (Op.SCHEMA, Op.CHANNEL):
                definitions += 1
                if definitions > MAX_DEFINITIONS:
                    raise McapError(f"Chunk: holds more than {MAX_DEFINITIONS} schemas and channels")
            else:
                others += 1
                if others > MAX_OTHER:
                    raise McapError(
                        f"Chunk: holds more than {MAX_OTHER} records that are not schemas, channels or messages"
                    )
            record = parse_record(opcode, view[body:end])
            if record is not None:
                yield record
        position = end
