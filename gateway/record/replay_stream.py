"""A recording played as it is read: an index of its chunks, and only the chunks being played in memory.

`open_recording` reads the file once (in the caller's thread) and keeps, per chunk holding chosen
messages, where it is, how many it holds and their time span: a few numbers per chunk, whatever
the number of messages. The player loads a chunk's messages (`load_block`, in a thread) when it
gets there. A file that cannot be played that way, because chosen messages lie outside chunks,
chunks overlap in time, or a channel id changes its topic, is loaded whole (`load_recording`).
"""

from __future__ import annotations

import bisect
import itertools
import threading
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from gateway.record.channels import DEVICE_TOPIC
from gateway.record.mcap_read import ChunkMark, read_chunk_at
from gateway.record.recover import BadRecording, check_readable, stream_marked
from gateway.record.replay_source import (
    MAX_LOADED_BYTES,
    Chooser,
    Recording,
    keep_chosen_events,
    load_recording,
    recorded_devices,
)
from protocols.mcap.records import Channel, McapError, Message


@dataclass(frozen=True, slots=True)
class Block:
    """One chunk's chosen messages: the chunk record's byte in the file, their count and span (ns)."""

    offset: int
    count: int
    first_ns: int
    last_ns: int


@dataclass(slots=True)
class _Span:
    """Count and span of some messages of a chunk, while indexing."""

    count: int = 0
    first: int = 2**64
    last: int = -1

    def add(self, log_ns: int) -> None:
        self.count += 1
        self.first = min(self.first, log_ns)
        self.last = max(self.last, log_ns)


@dataclass(slots=True)
class _ChunkSpans:
    offset: int
    samples: list[int] = field(default_factory=lambda: [0, 2**64, -1])  # count, first, last: updated inline
    events: dict[str, _Span] = field(default_factory=dict)  # by device: kept for the chosen devices only


class StreamedRecording:
    """The chosen messages of a recording, indexed by chunk; `load_block` reads one chunk's (see module)."""

    def __init__(self, path: str | Path, blocks: list[Block], holder: Recording, numbers: dict[int, int],
                 devices: set[str]) -> None:  # fmt: skip
        self.path = path
        self.block_list = blocks
        #: (topic, type) by topic number, refusals, contents and recorded devices, as `load_recording` gives.
        self.topics = holder.topics
        self.refused = holder.refused
        self.contents = holder.contents
        self.devices = holder.devices
        self._numbers = numbers  # channel id -> topic number (-1: not played)
        self._chosen_devices = devices
        self._starts = array("Q", [0])
        for block in blocks:
            self._starts.append(self._starts[-1] + block.count)
        self._lasts = array("Q", (block.last_ns for block in blocks))

    def __len__(self) -> int:
        return self._starts[-1]

    def chosen_topics(self) -> list[str]:
        """The played topics (not `_gateway/` ones)."""
        return [topic for topic, _ in self.topics if not topic.startswith("_gateway/")]

    @property
    def first_ns(self) -> int:
        """Log time of the earliest chosen message, ns."""
        return self.block_list[0].first_ns if self.block_list else 0

    @property
    def last_ns(self) -> int:
        """Log time of the latest chosen message, ns."""
        return self.block_list[-1].last_ns if self.block_list else 0

    @property
    def blocks(self) -> int:
        """Chunks holding chosen messages."""
        return len(self.block_list)

    def block_of(self, index: int) -> int:
        """The block holding message `index`."""
        return bisect.bisect_right(self._starts, index) - 1

    def block_start(self, block: int) -> int:
        """The index of the first message of `block`."""
        return self._starts[block]

    def block_for_time(self, log_ns: int) -> int:
        """The first block with a message at `log_ns` or later (`blocks` when none)."""
        return bisect.bisect_left(self._lasts, log_ns)

    def load_block(self, block: int, cancel: threading.Event | None = None) -> Recording:
        """The chosen messages of `block` in log-time order (blocking: call it in a thread).

        Raise BadRecording when the file no longer holds what the index says (changed since).
        """
        wanted = self.block_list[block]
        recording = Recording(topics=self.topics)
        numbers = self._numbers
        stopped = ""  # a damaged chunk stops where it stopped when indexed: its messages before are the block
        try:
            with open(self.path, "rb") as file:
                for record in read_chunk_at(file, wanted.offset, cancel):
                    if type(record) is Message:
                        number = numbers.get(record.channel_id, -1)
                        if number >= 0:
                            recording.append(number, record.log_time, record.publish_time, record.data)
        except (OSError, McapError) as error:
            stopped = f" ({error})"
        keep_chosen_events(recording, self._chosen_devices, False, cancel)
        if len(recording) != wanted.count:
            raise BadRecording(f"{self.path}: the file changed while it was replayed{stopped}")
        return recording


def index_recording(
    path: str | Path,
    keep: frozenset[str] = frozenset(),
    patterns: tuple[str, ...] = ("**",),
    prefix: str = "",
    cancel: threading.Event | None = None,
) -> StreamedRecording | None:
    """The chunk index of `path` for the chosen topics, or None when it cannot be played chunk by chunk.

    Arguments and errors as `load_recording`'s.
    """
    if Path(path).is_dir():
        return None  # a ros2 bag's files and CDR messages are loaded whole
    holder = Recording()
    contents = holder.contents
    chooser = Chooser(holder, patterns, prefix, keep)
    numbers: dict[int, int] = {}
    events: set[int] = set()  # topic numbers of `_gateway/device`
    seen: dict[int, Channel] = {}
    chunks: list[_ChunkSpans] = []
    current: _ChunkSpans | None = None
    stats = [0, 0, 0]  # `current.samples`
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as error:
        raise BadRecording(f"{path}: {error.strerror}") from None
    with file:
        for item in stream_marked(file, contents, cancel):
            if isinstance(item, ChunkMark):
                current = None if item.offset < 0 else _ChunkSpans(item.offset)
                if current is not None:
                    chunks.append(current)
                    stats = current.samples
                continue
            channel = contents.channels[item.channel_id]
            if channel.message_encoding == "cdr":
                return None  # a ros2 bag's MCAP file: its CDR messages are converted as they load
            if seen.get(item.channel_id) is not channel:
                seen[item.channel_id] = channel
                schema = contents.schemas.get(channel.schema_id)
                number = chooser.number(channel.topic, channel.metadata.get("type") or (schema.name if schema else ""))
                if numbers.setdefault(item.channel_id, number) != number:
                    return None  # a channel id defined again for another topic: chunks alone do not say which
                if channel.topic == DEVICE_TOPIC and number >= 0:
                    events.add(number)
            number = numbers[item.channel_id]
            if number < 0:
                continue
            if current is None:
                return None  # a chosen message outside any chunk
            log_ns = item.log_time
            if number in events:
                current.events.setdefault(_device_of(item.data), _Span()).add(log_ns)
            else:  # most messages: no call
                stats[0] += 1
                if log_ns < stats[1]:
                    stats[1] = log_ns
                if log_ns > stats[2]:
                    stats[2] = log_ns
    check_readable(path, contents)
    holder.devices = recorded_devices(contents)
    blocks = []
    for spans in chunks:
        span = _Span(*spans.samples)
        for device, of_device in spans.events.items():
            if device in chooser.devices:
                span.count += of_device.count
                span.first, span.last = min(span.first, of_device.first), max(span.last, of_device.last)
        if span.count:
            blocks.append(Block(spans.offset, span.count, span.first, span.last))
    if any(a.last_ns > b.first_ns for a, b in itertools.pairwise(blocks)):
        return None  # chunks overlap in time: played one after the other, their messages would be out of order
    return StreamedRecording(path, blocks, holder, numbers, chooser.devices)


def open_recording(
    path: str | Path,
    keep: frozenset[str] = frozenset(),
    patterns: tuple[str, ...] = ("**",),
    prefix: str = "",
    cancel: threading.Event | None = None,
    max_bytes: int = MAX_LOADED_BYTES,
) -> StreamedRecording | Recording:
    """`path` indexed to be read as it plays, or, when it cannot be, loaded whole (`load_recording`)."""
    indexed = index_recording(path, keep, patterns, prefix, cancel)
    if indexed is not None:
        return indexed
    return load_recording(path, keep, patterns, prefix, cancel, max_bytes)


def _device_of(data: bytes) -> str:
    try:
        device = orjson.loads(data).get("device")
    except (ValueError, AttributeError):
        return ""
    return device if isinstance(device, str) else ""
