"""Fuzzing the MCAP reader path replay and `--recover` use: any bytes give records or `McapError`, never a crash."""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.record.mcap_read import read_records
from gateway.record.recover import BadRecording
from gateway.record.replay_source import Recording, load_recording
from gateway.record.replay_stream import index_recording
from protocols.mcap.chunks import chunk_records, decompress
from protocols.mcap.records import Chunk, McapError, Message, parse_record
from tests import mcap_files as f
from tests.fuzzing import fuzz_settings

pytestmark = pytest.mark.fuzz
T = TypeVar("T")

FIRST_NS = 1_700_000_000 * 10**9
#: A small valid recording: metadata, a zstd chunk, an uncompressed chunk, loose records, a footer.
SEED = f.mcap(
    f.metadata("hwgateway", {"devices": '[{"id": "pad", "kind": "sim"}]'}),
    f.chunk(f.channel(1, "pad/state") + b"".join(f.messages(1, 4, 1_000_000))),
    f.chunk(f.channel(2, "pad/other") + b"".join(f.messages(2, 3, 1_000_000, FIRST_NS + 500)), compression=""),
    f.message(1, FIRST_NS + 10**9),
)
#: Chunks only, in time order, with availability events: a file replay reads as it plays.
EVENTS = f.channel(9, "_gateway/device", "hwgateway/DeviceEvent")
CHUNKED = f.mcap(
    f.chunk(EVENTS + f.channel(1, "pad/state") + f.message(9, FIRST_NS, data=b'{"device": "pad"}')
            + b"".join(f.messages(1, 4, 1_000_000, FIRST_NS + 1))),
    f.chunk(f.message(9, FIRST_NS + 10**7, data=b'{"device": "lamp"}')
            + b"".join(f.messages(1, 3, 1_000_000, FIRST_NS + 10**8))),
    f.chunk(b"".join(f.messages(1, 3, 1_000_000, FIRST_NS + 10**9)), compression=""),
)  # fmt: skip

#: A mutation: (where, what): overwrite bytes, cut, or insert.
mutations = st.lists(
    st.tuples(st.sampled_from(["set", "cut", "insert"]), st.integers(0, len(SEED)), st.binary(min_size=1, max_size=9)),
    min_size=1,
    max_size=4,
)


def mutate(data: bytes, changes: list[tuple[str, int, bytes]]) -> bytes:
    for how, at, what in changes:
        at = min(at, len(data))
        if how == "set":
            data = data[:at] + what + data[at + len(what) :]
        elif how == "cut":
            data = data[:at]
        else:
            data = data[:at] + what + data[at:]
    return data


def outcome(run: Callable[[], T]) -> T | str:
    """What `run` returns, or the text of the named error it raises (any other exception fails the test)."""
    try:
        return run()
    except (McapError, BadRecording) as error:
        return f"{type(error).__name__}: {error}"


def read_all(path: Path) -> int:
    with path.open("rb") as file:
        return sum(1 for _ in read_records(file))


@given(st.sampled_from([SEED, CHUNKED]), mutations)
@fuzz_settings(100)  # each example writes a file and reads it three ways: `make fuzz` runs 5,000 within the timeout
def test_a_mutated_recording_reads_as_records_or_a_named_error(
    seed: bytes, changes: list[tuple[str, int, bytes]]
) -> None:
    data = mutate(seed, changes)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.mcap"
        path.write_bytes(data)
        read = outcome(lambda: read_all(path))
        assert isinstance(read, int) or read.startswith("McapError: "), read
        recording = outcome(lambda: load_recording(path, frozenset({"_gateway/device"})))
        if isinstance(recording, str):
            assert "not a readable MCAP file" in recording, recording
            return
        times = list(recording.log_ns)
        assert times == sorted(times)
        assert all(len(recording.message(i).data) == recording.size[i] for i in range(len(recording)))
        assert recording.contents.complete or recording.contents.stopped_by
        streamed = index_recording(path, frozenset({"_gateway/device"}))
        if streamed is not None:  # read as it plays: the same messages, block by block, as the index says
            played = [m for b in range(streamed.blocks) for m in _messages(streamed.load_block(b))]
            assert played == [(m.log_time_ns, m.data) for m in map(recording.message, range(len(recording)))]


def _messages(recording: Recording) -> list[tuple[int, bytes]]:
    return [(m.log_time_ns, m.data) for m in map(recording.message, range(len(recording)))]


@given(st.integers(0, 255), st.binary(max_size=64))
@fuzz_settings(300)
def test_any_record_body_parses_or_is_named(opcode: int, body: bytes) -> None:
    parsed = outcome(lambda: parse_record(opcode, body))
    assert not isinstance(parsed, str) or parsed.startswith("McapError: "), parsed


@given(
    st.sampled_from(["", "zstd", "lz4", "gzip"]),
    st.integers(0, 2**64 - 1) | st.integers(0, 4096),
    st.binary(max_size=256),
)
@fuzz_settings(300)
def test_any_chunk_decompresses_to_its_declared_size_or_is_named(compression: str, declared: int, data: bytes) -> None:
    records = outcome(lambda: decompress(Chunk(0, 0, declared, 0, compression, data), max_bytes=1 << 20))
    if isinstance(records, str):
        assert records.startswith("McapError: Chunk: "), records
        return
    assert len(records) == declared <= 1 << 20
    parsed = outcome(lambda: list(chunk_records(records)))
    assert isinstance(parsed, list) or parsed.startswith("McapError: Chunk: "), parsed


@given(st.binary(max_size=512))
@fuzz_settings(300)
def test_any_chunk_contents_parse_or_are_named(records: bytes) -> None:
    message = struct.pack("<BQ", 0x05, 22) + bytes(22)
    parsed = outcome(lambda: list(chunk_records(message + records)))
    assert isinstance(parsed, list) or parsed.startswith("McapError: "), parsed
    if isinstance(parsed, list):
        assert parsed[0] == Message(0, 0, 0, 0, b"")
