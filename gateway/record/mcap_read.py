"""Read the records of an MCAP file in file order, with chunks opened: the path replay and `--recover` share.

Every record's length is checked against the bytes left in the file before it is read, so a length
past the end never allocates; chunks go through `protocols.mcap.chunks` (declared size capped before
decompressing). Records nobody here uses (indexes, attachments) are skipped without being read.
Reading can be abandoned from another thread (`cancel`): it then raises `Abandoned` within one record.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from protocols.mcap.chunks import MAX_CHUNK_BYTES, chunk_records, decompress
from protocols.mcap.records import (
    MAGIC,
    RECORD_HEADER_BYTES,
    Chunk,
    Footer,
    McapError,
    Op,
    Record,
    parse_record,
    record_header,
)

#: The records read in full; any other is skipped by seeking past it.
_READ = frozenset({Op.HEADER, Op.FOOTER, Op.SCHEMA, Op.CHANNEL, Op.MESSAGE, Op.CHUNK, Op.METADATA, Op.DATA_END})
#: A chunk record's own fields besides its records (times, sizes, CRC, compression name), bytes at most.
_CHUNK_HEADER_ROOM = 64 * 1024
#: Inner records between two looks at `cancel`.
_CANCEL_EVERY = 4096


@dataclass(frozen=True, slots=True)
class ChunkMark:
    """With `marks`: a chunk's records follow (`offset`: its record's byte in the file), or end (-1)."""

    offset: int


class Abandoned(Exception):
    """Reading stopped because its `cancel` event was set."""


def read_records(
    file: BinaryIO, cancel: threading.Event | None = None, max_chunk_bytes: int = MAX_CHUNK_BYTES, marks: bool = False
) -> Iterator[Record | ChunkMark]:
    """The records of `file` (from its start) in order, chunks replaced by what they hold.

    `marks`: a `ChunkMark` before and after the records of each chunk.

    Raise `McapError` at the first bad byte (records already yielded stay good), `Abandoned` when
    `cancel` is set. Ends quietly after the footer, or at a clean end of the file between records.
    """
    size = os.fstat(file.fileno()).st_size
    magic = file.read(len(MAGIC))
    if magic != MAGIC:
        raise McapError(f"InvalidMagic: the file does not start with the MCAP magic (it starts {magic[:8]!r})")
    position = len(MAGIC)
    while True:
        if cancel is not None and cancel.is_set():
            raise Abandoned
        header = file.read(RECORD_HEADER_BYTES)
        if not header:
            return
        if len(header) < RECORD_HEADER_BYTES:
            raise McapError(f"the file ends inside a record header at byte {position}")
        opcode, length = record_header(header)
        body_start = position + RECORD_HEADER_BYTES
        if length > size - body_start:
            left = size - body_start
            raise McapError(
                f"a record (opcode {opcode:#04x}) at byte {position} claims {length} bytes; {left} are left"
            )
        position = body_start + length
        if opcode not in _READ:
            file.seek(position)
            continue
        if length > max_chunk_bytes + _CHUNK_HEADER_ROOM:  # read whole: no record may be larger than a chunk
            raise McapError(
                f"a record (opcode {opcode:#04x}) at byte {body_start - RECORD_HEADER_BYTES} is {length} bytes,"
                f" more than the {max_chunk_bytes} one record or chunk may hold"
            )
        body = file.read(length)
        if len(body) < length:
            raise McapError(f"the file ends inside a record at byte {body_start - RECORD_HEADER_BYTES}")
        record = parse_record(opcode, body)
        if isinstance(record, Chunk):
            if marks:
                yield ChunkMark(body_start - RECORD_HEADER_BYTES)
            yield from _chunk(record, cancel, max_chunk_bytes)
            if marks:
                yield ChunkMark(-1)
        elif record is not None:
            yield record
            if isinstance(record, Footer):
                return


def read_chunk_at(
    file: BinaryIO, offset: int, cancel: threading.Event | None = None, max_chunk_bytes: int = MAX_CHUNK_BYTES
) -> Iterator[Record]:
    """The records of the chunk whose record starts at byte `offset` of `file` (an index said where)."""
    size = os.fstat(file.fileno()).st_size
    file.seek(offset)
    header = file.read(RECORD_HEADER_BYTES)
    if len(header) < RECORD_HEADER_BYTES:
        raise McapError(f"no record at byte {offset}: the file is shorter")
    opcode, length = record_header(header)
    if (
        opcode != Op.CHUNK
        or length > size - offset - RECORD_HEADER_BYTES
        or length > max_chunk_bytes + _CHUNK_HEADER_ROOM
    ):
        raise McapError(f"no chunk at byte {offset}: the file changed")
    record = parse_record(opcode, file.read(length))
    if not isinstance(record, Chunk):  # a file cut shorter since: the body parses short
        raise McapError(f"no chunk at byte {offset}: the file changed")
    yield from _chunk(record, cancel, max_chunk_bytes)


def _chunk(chunk: Chunk, cancel: threading.Event | None, max_chunk_bytes: int) -> Iterator[Record]:
    count = 0
    for record in chunk_records(decompress(chunk, max_chunk_bytes)):
        count += 1
        if count >= _CANCEL_EVERY:
            count = 0
            if cancel is not None and cancel.is_set():
                raise Abandoned
        yield record
