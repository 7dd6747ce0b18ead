"""A recording read as it plays: the chunk index, each chunk's messages, and when a file is loaded whole instead."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from gateway.record.channels import DEVICE_TOPIC
from gateway.record.replay_source import Recording, load_recording
from gateway.record.replay_stream import StreamedRecording, index_recording, open_recording
from tests import mcap_files as f

FIRST_NS = 1_700_000_000 * 10**9
KEEP = frozenset({DEVICE_TOPIC})


def played(source: StreamedRecording) -> list[tuple[int, bytes]]:
    """Every message of `source`, block after block, as the player reads them."""
    out = []
    for block in range(source.blocks):
        loaded = source.load_block(block)
        assert source.block_start(block) + len(loaded) == (
            source.block_start(block + 1) if block + 1 < source.blocks else len(source)
        )
        out += [(loaded.log_ns[i], loaded.message(i).data) for i in range(len(loaded))]
    return out


def event(device: str, at_ns: int) -> bytes:
    return f.message(9, at_ns, data=json.dumps({"device": device, "status": "connected"}).encode())


def test_chunks_play_one_after_the_other_as_a_whole_load_would(tmp_path: Path) -> None:
    path = f.many_messages(tmp_path / "long.mcap", 10_000, per_chunk=1000)
    source = index_recording(path)
    assert isinstance(source, StreamedRecording)
    assert (source.blocks, len(source)) == (10, 10_000)
    whole = load_recording(path)
    assert played(source) == [(whole.log_ns[i], whole.message(i).data) for i in range(len(whole))]
    assert (source.first_ns, source.last_ns) == (whole.log_ns[0], whole.log_ns[-1])
    for index in (0, 999, 1000, 5555, 9999):
        block = source.block_of(index)
        assert source.block_start(block) <= index < source.block_start(block) + 1000
    assert source.block_for_time(whole.log_ns[2500]) == 2
    assert source.block_for_time(whole.log_ns[-1] + 1) == source.blocks


def test_the_index_holds_a_few_numbers_per_chunk_not_the_messages(tmp_path: Path) -> None:
    path = f.many_messages(tmp_path / "long.mcap", 200_000)
    tracemalloc.start()
    try:
        source = index_recording(path)
        indexed = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert source is not None
    assert len(source) == 200_000
    assert indexed < 1_000_000  # the whole load holds 200,000 x (30 + data) bytes, about 10 MB
    assert isinstance(open_recording(path), StreamedRecording)


def test_files_a_chunk_index_cannot_play_are_loaded_whole(tmp_path: Path) -> None:
    head = f.channel(1, "pad/state")
    cases = {
        "overlapping": (f.chunk(head + f.message(1, FIRST_NS) + f.message(1, FIRST_NS + 10)),
                        f.chunk(f.message(1, FIRST_NS + 5))),
        "loose": (f.chunk(head + f.message(1, FIRST_NS)), f.message(1, FIRST_NS + 10)),
        "redefined": (f.chunk(head + f.message(1, FIRST_NS)),
                      f.chunk(f.channel(1, "pad/other") + f.message(1, FIRST_NS + 10))),
    }  # fmt: skip
    for name, parts in cases.items():
        path = f.write(tmp_path / f"{name}.mcap", *parts)
        assert index_recording(path) is None, name
        whole = open_recording(path)
        assert isinstance(whole, Recording), name
        assert list(whole.log_ns) == sorted(whole.log_ns), name
    path = f.write(tmp_path / "apart.mcap", *cases["redefined"][:1], f.chunk(f.message(1, FIRST_NS + 10)))
    assert isinstance(index_recording(path), StreamedRecording)


def test_availability_events_play_for_the_chosen_devices_only(tmp_path: Path) -> None:
    events = f.channel(9, DEVICE_TOPIC, "hwgateway/DeviceEvent")
    first = f.chunk(
        events
        + f.channel(1, "pad/state")
        + f.channel(2, "lamp/state")
        + event("pad", FIRST_NS)
        + event("lamp", FIRST_NS)
        + f.message(1, FIRST_NS + 1)
        + f.message(2, FIRST_NS + 2)
    )
    second = f.chunk(f.message(1, FIRST_NS + 3) + event("lamp", FIRST_NS + 4) + event("pad", FIRST_NS + 5))
    path = f.write(tmp_path / "events.mcap", first, second)  # fmt: skip
    source = index_recording(path, KEEP, patterns=("pad/**",))
    assert isinstance(source, StreamedRecording)
    whole = load_recording(path, KEEP, patterns=("pad/**",))
    assert played(source) == [(whole.log_ns[i], whole.message(i).data) for i in range(len(whole))]
    assert len(source) == 4  # pad's two events and two samples
    assert source.last_ns == FIRST_NS + 5


def test_a_damaged_last_chunk_plays_what_was_read_of_it(tmp_path: Path) -> None:
    good = f.chunk(f.channel(1, "pad/state") + b"".join(f.messages(1, 5, 1000)))
    bad_tail = f.chunk(b"".join(f.messages(1, 3, 1000, FIRST_NS + 10_000)) + b"\x05\xff")  # a cut record
    path = tmp_path / "damaged.mcap"
    path.write_bytes(f.MAGIC + f.header() + good + bad_tail)
    source = index_recording(path)
    assert isinstance(source, StreamedRecording)
    assert len(source) == 8
    assert len(played(source)) == 8
    assert "too few for a record" in source.contents.stopped_by
