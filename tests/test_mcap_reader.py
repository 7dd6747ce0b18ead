"""The MCAP reader replay and `--recover` use: lengths, chunk sizes, CRCs and truncations checked, memory bounded."""

from __future__ import annotations

import json
import struct
import threading
import tracemalloc
from pathlib import Path

import pytest

from gateway.record import recover
from gateway.record.mcap_read import Abandoned, read_records
from gateway.record.replay_source import MAX_REPLAYED_DEVICES, load_recording, playable
from protocols.mcap.chunks import MAX_CHUNK_BYTES, MAX_DEFINITIONS, MAX_OTHER, decompress
from protocols.mcap.records import Chunk, McapError, Message, parse_record
from tests import mcap_files as f

FIRST_NS = 1_700_000_000 * 10**9


def small_recording() -> bytes:
    """Chunks of three messages (zstd), three (none) and one (lz4), then one message outside any chunk."""
    first = f.channel(1, "pad/state") + b"".join(f.messages(1, 3, 1_000_000))
    second = b"".join(f.messages(1, 3, 1_000_000, FIRST_NS + 3_000_000))
    third = f.message(1, FIRST_NS + 6_000_000)
    return f.mcap(f.chunk(first), f.chunk(second, compression=""), f.chunk(third, compression="lz4"),
                  f.message(1, FIRST_NS + 9_000_000))  # fmt: skip


def boundaries(data: bytes) -> list[int]:
    """The offset of every top-level record (and the end)."""
    offsets, position = [], len(f.MAGIC)
    while position + 9 <= len(data):
        offsets.append(position)
        position += 9 + struct.unpack_from("<Q", data, position + 1)[0]
    return [*offsets, len(data)]


def read_all(data: bytes, path: Path) -> list[Message]:
    path.write_bytes(data)
    with path.open("rb") as file:
        return [r for r in read_records(file) if isinstance(r, Message)]


def test_a_whole_file_reads_every_message_in_and_out_of_chunks(tmp_path: Path) -> None:
    messages = read_all(small_recording(), tmp_path / "a.mcap")
    assert [m.log_time - FIRST_NS for m in messages] == [0, 1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000,
                                                         6_000_000, 9_000_000]  # fmt: skip
    assert recover.read(tmp_path / "a.mcap").complete


def test_a_cut_at_every_byte_gives_a_prefix_or_a_clear_error(tmp_path: Path) -> None:
    data = small_recording()
    full = read_all(data, tmp_path / "full.mcap")
    first_chunk_end = boundaries(data)[2]
    for cut in range(len(data) - len(f.MAGIC)):  # every record boundary and every byte between; not the last magic
        path = tmp_path / "cut.mcap"
        path.write_bytes(data[:cut])
        if cut < first_chunk_end:  # the first chunk, which holds the channel, is cut: nothing to read
            with pytest.raises(recover.BadRecording, match="not a readable MCAP file"):
                recover.read(path)
            continue
        contents = recover.read(path)
        assert not contents.complete, cut
        assert contents.stopped_by, cut
        assert contents.messages <= len(full), cut
        recording = load_recording(path)
        assert [recording.log_ns[i] for i in range(len(recording))] == [m.log_time for m in full[: len(recording)]]


def test_wrong_crcs_lengths_past_the_end_and_lying_sizes_are_named(tmp_path: Path) -> None:
    records = f.channel(1, "pad/state") + b"".join(f.messages(1, 3, 1_000_000))
    cases = {
        "CRC mismatch": f.chunk(records, crc=12345),
        "not the 10 it declares": f.chunk(records, compression="", declared=10),
        "expands past the 10 bytes it declares": f.chunk(records, declared=10),
        "claims 18446744073709551615 bytes": struct.pack("<BQ", 0x05, 2**64 - 1) + b"\x00" * 40,
        "unknown compression 'gzip'": f.record(
            0x06, struct.pack("<QQQI", 0, 0, 10, 0) + f.string("gzip") + struct.pack("<Q", 10) + bytes(10)
        ),
        "runs past the record's end": f.record(0x04, struct.pack("<HH", 1, 0) + struct.pack("<I", 1000) + b"pad"),
        "opcode 0": bytes(64),
    }
    for expected, damage in cases.items():
        path = tmp_path / "bad.mcap"
        path.write_bytes(f.mcap(f.chunk(records), damage))
        contents = recover.read(path)
        assert contents.messages == 3, expected  # what came before the damage
        assert not contents.complete, expected
        assert expected in contents.stopped_by, (expected, contents.stopped_by)


@pytest.mark.parametrize("declared", [300 * 2**20, 2**32, 2**64 - 1])
def test_a_chunk_declaring_more_than_the_cap_is_refused_before_any_decompression(tmp_path: Path, declared: int) -> None:
    path = tmp_path / "bomb.mcap"
    path.write_bytes(f.mcap(f.channel(1, "pad/state"), f.bomb_chunk(300 * 2**20, declared)))
    tracemalloc.start()
    try:
        contents = recover.read(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert f"declares {declared} uncompressed bytes, more than the {MAX_CHUNK_BYTES} allowed" in contents.stopped_by
    assert peak < 2 * 2**20, peak  # the file's few kB, never the 300 MB


def test_a_chunk_expanding_past_what_it_declares_stops_one_byte_past_it(tmp_path: Path) -> None:
    path = tmp_path / "liar.mcap"
    path.write_bytes(f.mcap(f.channel(1, "pad/state"), f.bomb_chunk(300 * 2**20, 4096)))
    tracemalloc.start()
    try:
        contents = recover.read(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "expands past the 4096 bytes it declares" in contents.stopped_by, contents.stopped_by
    assert peak < 4 * 2**20, peak


def test_decompress_refuses_before_reading_the_data() -> None:
    lie = Chunk(0, 0, MAX_CHUNK_BYTES + 1, 0, "zstd", b"not even zstd")
    with pytest.raises(McapError, match="more than the"):
        decompress(lie)
    with pytest.raises(McapError, match="zstd"):
        decompress(Chunk(0, 0, 100, 0, "zstd", b"not even zstd"))
    with pytest.raises(McapError, match="lz4"):
        decompress(Chunk(0, 0, 100, 0, "lz4", b"not even lz4"))


def test_parse_record_names_short_bodies() -> None:
    with pytest.raises(McapError, match="shorter than its 22-byte header"):
        parse_record(0x05, b"\x01\x00")
    with pytest.raises(McapError, match="not UTF-8"):
        parse_record(0x0C, struct.pack("<I", 2) + b"\xff\xfe" + struct.pack("<I", 0))
    assert parse_record(0x07, b"anything") is None  # a message index: skipped


def test_reading_is_abandoned_when_cancelled(tmp_path: Path) -> None:
    path = f.many_messages(tmp_path / "many.mcap", 50_000)
    cancel = threading.Event()
    read = 0

    def read_until_cancelled() -> None:
        nonlocal read
        with path.open("rb") as file:
            for _ in read_records(file, cancel):
                read += 1
                if read == 1000:
                    cancel.set()

    with pytest.raises(Abandoned):
        read_until_cancelled()
    assert read < 1000 + 4096  # within the next look at `cancel`
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Abandoned):
        load_recording(path, cancel=cancel)


def test_a_file_lists_at_most_the_capped_devices_and_topics(tmp_path: Path) -> None:
    devices = [{"id": f"dev{n}", "kind": "sim"} for n in range(5002)]
    channels = b"".join(f.channel(n + 1, f"dev{n}/state") for n in range(5002))
    samples = b"".join(f.message(n + 1, FIRST_NS + n) for n in range(5002))

    path = f.write(tmp_path / "crowd.mcap", f.metadata("hwgateway", {"devices": json.dumps(devices)}),
                   f.chunk(channels + samples))  # fmt: skip
    recording = load_recording(path)
    assert len(recording.devices) == MAX_REPLAYED_DEVICES
    played = {topic.split("/")[0] for topic in recording.chosen_topics()}
    assert len(played) == MAX_REPLAYED_DEVICES
    assert len(recording) == MAX_REPLAYED_DEVICES
    assert len(recording.refused) == 5002 - MAX_REPLAYED_DEVICES
    assert all("more than 256 devices" in why for why in recording.refused.values())


def test_topics_the_bus_refuses_are_left_out_and_named(tmp_path: Path) -> None:
    long = "pad/" + "x" * 300
    path = f.write(tmp_path / "odd.mcap", f.channel(1, "pad/bad topic"), f.channel(2, long), f.channel(3, "pad/state"),
                   f.channel(4, "lonely"), *(f.message(c, FIRST_NS + c) for c in (1, 2, 3, 4)))  # fmt: skip
    recording = load_recording(path)
    assert recording.chosen_topics() == ["pad/state"]
    assert len(recording) == 1
    assert set(recording.refused) == {"pad/bad topic", long[:77] + "...", "lonely"}
    assert "not a valid bus topic" in recording.refused["pad/bad topic"]
    assert "replay/pad/bad topic" not in load_recording(path, prefix="replay/").chosen_topics()


def test_messages_out_of_order_are_sorted_by_log_time(tmp_path: Path) -> None:
    times = [5, 1, 4, 2, 3]
    path = f.write(tmp_path / "shuffled.mcap", f.channel(1, "pad/state"),
                   *(f.message(1, FIRST_NS + t, data=b'{"n": %d}' % t) for t in times))  # fmt: skip
    recording = load_recording(path)
    assert [recording.message(i).data for i in range(5)] == [b'{"n": %d}' % t for t in sorted(times)]


def test_a_message_of_an_undefined_channel_is_counted_not_played(tmp_path: Path) -> None:
    path = f.write(tmp_path / "orphan.mcap", f.channel(1, "pad/state"), f.message(7, FIRST_NS), f.message(1, FIRST_NS))
    recording = load_recording(path)
    assert len(recording) == 1
    assert recording.contents.counts == {"#7": 1, "pad/state": 1}
    assert recover.repair(path, tmp_path / "fixed.mcap").messages == 2
    assert recover.read(tmp_path / "fixed.mcap").counts == {"pad/state": 1}


def test_log_times_past_2_to_the_63_load(tmp_path: Path) -> None:
    path = f.write(tmp_path / "far.mcap", f.channel(1, "pad/state"), f.message(1, 2**64 - 1), f.message(1, 0))
    recording = load_recording(path)
    assert list(recording.log_ns) == [0, 2**64 - 1]


def test_more_than_a_replay_loads_is_refused_before_and_while_loading(tmp_path: Path) -> None:
    big = b'{"last_command": "' + b"x" * 1000 + b'"}'
    path = f.write(tmp_path / "heavy.mcap", f.channel(1, "pad/state"), f.channel(2, "pad/light"),
                   f.chunk(b"".join(f.message(1, FIRST_NS + n, data=big) for n in range(20))),
                   f.message(2, FIRST_NS + 100))  # fmt: skip
    with pytest.raises(recover.BadRecording, match=r"more than [0-9.]+ MiB, more than one replay loads"):
        load_recording(path, max_bytes=10_000)
    with pytest.raises(recover.BadRecording, match=r"more than [0-9.]+ MiB, more than one replay loads"):
        playable(path, max_bytes=10_000)
    assert playable(path, patterns=("pad/light",), max_bytes=10_000) == 1  # fewer topics: it fits
    assert len(load_recording(path, patterns=("pad/light",), max_bytes=10_000)) == 1
    assert playable(path) == 21


def test_a_record_read_whole_may_be_no_larger_than_a_chunk(tmp_path: Path) -> None:
    huge = f.message(1, FIRST_NS, data=b"x" * 200_000)
    path = f.write(tmp_path / "huge.mcap", f.channel(1, "pad/state"), f.message(1, FIRST_NS), huge)
    read: list[Message] = []

    def read_messages() -> None:
        with path.open("rb") as file:
            read.extend(r for r in read_records(file, max_chunk_bytes=1000) if isinstance(r, Message))

    with pytest.raises(McapError, match=r"is 200022 bytes, more than the 1000 one record or chunk may hold"):
        read_messages()
    assert len(read) == 1  # the message before it


def test_metadata_in_compressed_chunks_cannot_fill_the_memory(tmp_path: Path) -> None:
    chunk = f.chunk(f.metadata("note", {"text": "y" * 40_000_000}))  # 40 MB that compress to almost nothing
    path = f.write(tmp_path / "notes.mcap", f.chunk(f.channel(1, "pad/state") + f.message(1, FIRST_NS)), chunk, chunk)
    assert path.stat().st_size < 1_000_000
    contents = recover.read(path)
    assert f"its schemas, channels and metadata hold more than {recover.MAX_DEFINITION_BYTES} bytes" in (
        contents.stopped_by
    )
    assert contents.messages == 1
    assert len(contents.metadata) == 1


def test_a_chunk_of_millions_of_tiny_records_is_refused_after_a_thousand(tmp_path: Path) -> None:
    empty = struct.pack("<BQ", 0x7F, 0)  # a record of an unknown kind, 9 bytes: 9 million in 80 MiB
    head = f.channel(1, "pad/state") + f.message(1, FIRST_NS)
    path = f.write(tmp_path / "dust.mcap", f.chunk(head + empty * (MAX_OTHER + 1)))
    contents = recover.read(path)
    assert f"Chunk: holds more than {MAX_OTHER} records that are not schemas, channels or messages" in (
        contents.stopped_by
    )
    path = f.write(tmp_path / "few.mcap", f.chunk(head + empty * MAX_OTHER))
    assert recover.read(path).complete
    channels = b"".join(f.channel(n % 65535 + 1, "pad/state") for n in range(MAX_DEFINITIONS + 1))
    path = f.write(tmp_path / "redefined.mcap", f.chunk(channels + f.message(1, FIRST_NS)))
    contents = recover.read(path)
    assert f"Chunk: holds more than {MAX_DEFINITIONS} schemas and channels" in contents.stopped_by
    assert contents.messages == 0


def test_messages_of_channels_never_defined_stop_the_reading_after_a_thousand(tmp_path: Path) -> None:
    orphans = b"".join(f.message(7, FIRST_NS + n) for n in range(recover.MAX_ORPHANS + 1))
    path = f.write(tmp_path / "orphans.mcap", f.chunk(f.channel(1, "pad/state") + f.message(1, FIRST_NS) + orphans))
    contents = recover.read(path)
    assert f"more than {recover.MAX_ORPHANS} messages of channels it never defines" in contents.stopped_by
    assert contents.counts["pad/state"] == 1
