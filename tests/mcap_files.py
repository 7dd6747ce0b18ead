"""Crafted MCAP files for the hostile-recording tests: built byte by byte, so they can lie.

Records: opcode (u8), length (u64), body; strings a u32 length and UTF-8; maps a u32 byte length.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable
from pathlib import Path

import lz4.frame
import zstandard

MAGIC = b"\x89MCAP0\r\n"
SAMPLE = b'{"last_command": "x"}'
STATE_TYPE = "hwgateway/SimOutputs"  # a type the bus knows: a replayed sample is published


def record(opcode: int, body: bytes) -> bytes:
    return struct.pack("<BQ", opcode, len(body)) + body


def string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<I", len(raw)) + raw


def string_map(values: dict[str, str]) -> bytes:
    body = b"".join(string(k) + string(v) for k, v in values.items())
    return struct.pack("<I", len(body)) + body


def header() -> bytes:
    return record(0x01, string("") + string("hwgateway tests"))


def channel(channel_id: int, topic: str, type_: str = STATE_TYPE) -> bytes:
    body = struct.pack("<HH", channel_id, 0) + string(topic) + string("json") + string_map({"type": type_})
    return record(0x04, body)


def message(channel_id: int, log_ns: int, data: bytes = SAMPLE, sequence: int = 0) -> bytes:
    return record(0x05, struct.pack("<HIQQ", channel_id, sequence, log_ns, log_ns) + data)


def metadata(name: str, values: dict[str, str]) -> bytes:
    return record(0x0C, string(name) + string_map(values))


def chunk(records: bytes, compression: str = "zstd", declared: int | None = None, crc: int | None = None,
          start_ns: int = 0, end_ns: int = 0) -> bytes:  # fmt: skip
    """A chunk of `records`; `declared` and `crc` may lie."""
    compress = {"zstd": zstandard.ZstdCompressor().compress, "lz4": lz4.frame.compress}.get(compression, bytes)
    data = compress(records)
    size = len(records) if declared is None else declared
    body = struct.pack("<QQQI", start_ns, end_ns, size, zlib.crc32(records) if crc is None else crc)
    return record(0x06, body + string(compression) + struct.pack("<Q", len(data)) + data)


def footer() -> bytes:
    return record(0x0F, struct.pack("<I", 0)) + record(0x02, struct.pack("<QQI", 0, 0, 0)) + MAGIC


def mcap(*parts: bytes) -> bytes:
    return MAGIC + header() + b"".join(parts) + footer()


def write(path: Path, *parts: bytes) -> Path:
    path.write_bytes(mcap(*parts))
    return path


def messages(channel_id: int, count: int, step_ns: int, first_ns: int = 1_700_000_000 * 10**9) -> Iterable[bytes]:
    for n in range(count):
        yield message(channel_id, first_ns + n * step_ns, sequence=n)


def many_messages(path: Path, count: int, per_chunk: int = 20_000, step_ns: int = 1_000_000) -> Path:
    """`count` small messages on one topic (1 kHz by default) in zstd chunks: a few kB per million."""
    first_ns = 1_700_000_000 * 10**9
    compressor = zstandard.ZstdCompressor()
    head = struct.pack("<BQ", 0x05, 22 + len(SAMPLE))
    with path.open("wb") as out:
        out.write(MAGIC + header() + channel(1, "pad/state"))
        for begin in range(0, count, per_chunk):
            n = min(per_chunk, count - begin)
            records = bytearray(n * (9 + 22 + len(SAMPLE)))
            view, size = memoryview(records), 9 + 22 + len(SAMPLE)
            for i in range(n):
                at = i * size
                view[at : at + 9] = head
                struct.pack_into("<HIQQ", records, at + 9, 1, begin + i, first_ns + (begin + i) * step_ns,
                                 first_ns + (begin + i) * step_ns)  # fmt: skip
                view[at + 31 : at + size] = SAMPLE
            data = compressor.compress(bytes(records))
            body = struct.pack("<QQQI", 0, 0, len(records), 0) + string("zstd") + struct.pack("<Q", len(data)) + data
            out.write(record(0x06, body))
        out.write(footer())
    return path


def zstd_bomb(expanded: int) -> bytes:
    """A zstd frame of `expanded` zero bytes (a few kB per 100 MB), made without holding them."""
    compressor = zstandard.ZstdCompressor().compressobj()
    zeros = bytes(1 << 20)
    parts = [compressor.compress(zeros[: min(len(zeros), expanded - done)]) for done in range(0, expanded, len(zeros))]
    return b"".join(parts) + compressor.flush()


def bomb_chunk(expanded: int, declared: int) -> bytes:
    """A zstd chunk whose records expand to `expanded` bytes while it declares `declared`."""
    data = zstd_bomb(expanded)
    body = struct.pack("<QQQI", 0, 0, declared, 0) + string("zstd") + struct.pack("<Q", len(data)) + data
    return record(0x06, body)
