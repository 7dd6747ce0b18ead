"""Read what an MCAP file holds, also a truncated one (a killed recorder), and write a repaired copy.

The reader streams records from the start, so a file cut anywhere yields every message of its complete
chunks; a file that does not start with the MCAP magic, or whose records are garbage, is refused with
a clear message.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, cast

from mcap.writer import CompressionType, Writer

from gateway.record import EXIT_BAD_FILE, EXIT_OK
from gateway.record.mcap_read import Abandoned, ChunkMark, read_records
from protocols.mcap.records import Channel, Footer, McapError, Message, Metadata, Schema

#: Bytes of schemas, channels and metadata one file may define, all told (they are kept while reading).
MAX_DEFINITION_BYTES = 64 * 1024 * 1024


#: Messages of undefined channels one file may have (MCAP defines a channel before its messages).
MAX_ORPHANS = 1024


class BadRecording(Exception):
    """The file is not MCAP, or nothing of it can be read."""


@dataclass(slots=True)
class Contents:
    """What could be read: per-topic message counts, schemas, channels, and why reading stopped."""

    schemas: dict[int, Schema] = field(default_factory=dict)
    channels: dict[int, Channel] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    #: Bytes of message data per topic.
    data_bytes: Counter[str] = field(default_factory=Counter)
    metadata: list[Metadata] = field(default_factory=list)
    complete: bool = False
    stopped_by: str = ""
    first_ns: int | None = None
    last_ns: int | None = None

    @property
    def messages(self) -> int:
        """Messages read."""
        return sum(self.counts.values())


def stream_messages(file: BinaryIO, contents: Contents, cancel: threading.Event | None = None) -> Iterator[Message]:
    """Yield the messages of `file` in file order, filling `contents` (see `stream_marked`)."""
    yield from cast(Iterator[Message], stream_marked(file, contents, cancel, marks=False))


def stream_marked(
    file: BinaryIO, contents: Contents, cancel: threading.Event | None = None, marks: bool = True
) -> Iterator[Message | ChunkMark]:
    """Yield the messages of `file` in file order, filling `contents`; stop quietly at a bad tail.

    A message of a channel not defined before it is counted, not yielded. `marks`: also the
    `ChunkMark`s around each chunk's messages.

    `Abandoned` (from `cancel`) goes through.
    """
    # by channel id, counted into `contents.counts` and `data_bytes` under the channel's topic
    counts: dict[int, int] = {}
    sizes: dict[int, int] = {}
    first, last = 2**64, -1
    kept = 0  # bytes of schemas, channels and metadata read, all told
    orphans = 0  # messages of undefined channels

    def keep(size: int) -> None:
        nonlocal kept
        kept += size
        if kept > MAX_DEFINITION_BYTES:  # compressed chunks of metadata would otherwise fill the memory
            raise McapError(f"its schemas, channels and metadata hold more than {MAX_DEFINITION_BYTES} bytes")

    def count(channel_id: int) -> None:
        if channel_id not in counts:
            return
        channel = contents.channels.get(channel_id)
        topic = channel.topic if channel else f"#{channel_id}"
        contents.counts[topic] += counts.pop(channel_id)
        contents.data_bytes[topic] += sizes.pop(channel_id)

    try:
        for record in read_records(file, cancel, marks=marks):
            if type(record) is Message:  # the most of any file: first, and no more than needed per message
                counts[record.channel_id] = counts.get(record.channel_id, 0) + 1
                sizes[record.channel_id] = sizes.get(record.channel_id, 0) + len(record.data)
                if record.log_time < first:
                    first = record.log_time
                if record.log_time > last:
                    last = record.log_time
                if record.channel_id in contents.channels:
                    yield record
                else:  # counted (as #id), but nothing can play it; a file of little else is refused
                    orphans += 1
                    if orphans > MAX_ORPHANS:
                        raise McapError(f"more than {MAX_ORPHANS} messages of channels it never defines")
            elif isinstance(record, Schema):
                keep(len(record.data) + len(record.name) + len(record.encoding))
                contents.schemas[record.id] = record
            elif isinstance(record, Channel):
                keep(len(record.topic) + len(record.message_encoding) + _map_bytes(record.metadata))
                count(record.id)  # a channel defined again may change its topic
                contents.channels[record.id] = record
            elif isinstance(record, Metadata):
                keep(len(record.name) + _map_bytes(record.metadata))
                contents.metadata.append(record)
            elif isinstance(record, ChunkMark):
                yield record
            elif isinstance(record, Footer):
                contents.complete = True
    except Abandoned:
        raise
    except Exception as error:  # hostile bytes raise McapError (checked lengths, caps, CRCs): all end the read
        contents.stopped_by = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    finally:
        for channel_id in list(counts):
            count(channel_id)
        if last >= 0:
            contents.first_ns, contents.last_ns = first, last
    if not contents.complete and not contents.stopped_by:
        contents.stopped_by = "the file ends before its footer"


def _map_bytes(values: dict[str, str]) -> int:
    return sum(len(key) + len(value) for key, value in values.items())


def read(path: str | Path) -> Contents:
    """Everything readable in `path`; raise BadRecording when it is not an MCAP file at all."""
    contents = Contents()
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as error:
        raise BadRecording(f"{path}: {error.strerror}") from None
    with file:
        for _ in stream_messages(file, contents):
            pass
    check_readable(path, contents)
    return contents


def check_readable(path: str | Path, contents: Contents) -> None:
    """Raise `BadRecording` when reading `path` found nothing at all (`contents`: what the read found)."""
    if not contents.complete and not contents.channels and not contents.messages:
        raise BadRecording(f"{path}: not a readable MCAP file ({contents.stopped_by})")


def repair(source: str | Path, target: str | Path, profile: str = "") -> Contents:
    """Copy every readable message of `source` (schemas, channels, metadata) into a complete `target`.

    `profile`: the MCAP profile of `target` ("ros2" for a bag's file).
    """
    contents = Contents()
    with open(source, "rb") as file, open(target, "wb") as out:
        writer = Writer(out, compression=CompressionType.ZSTD)
        writer.start(profile=profile, library="hwgateway recover")
        schema_ids: dict[int, int] = {}
        channel_ids: dict[int, int] = {}
        for message in stream_messages(file, contents):
            channel_id = channel_ids.get(message.channel_id)
            if channel_id is None:
                channel = contents.channels[message.channel_id]
                schema = contents.schemas.get(channel.schema_id)
                if schema is not None and schema.id not in schema_ids:
                    schema_ids[schema.id] = writer.register_schema(schema.name, schema.encoding, schema.data)
                channel_id = channel_ids[message.channel_id] = writer.register_channel(
                    channel.topic, channel.message_encoding, schema_ids.get(channel.schema_id, 0), channel.metadata
                )
            writer.add_message(channel_id, message.log_time, message.data, message.publish_time, message.sequence)
        for metadata in contents.metadata:
            writer.add_metadata(metadata.name, metadata.metadata)
        writer.finish()  # type: ignore[no-untyped-call]
    check_readable(source, contents)
    return contents


def describe(path: str | Path, contents: Contents) -> str:
    """A human summary: messages per topic, time span, and whether the file was complete."""
    span = (
        0.0 if contents.first_ns is None or contents.last_ns is None else (contents.last_ns - contents.first_ns) / 1e9
    )
    state = (
        "complete" if contents.complete else f"incomplete ({contents.stopped_by}); recovered up to the last whole chunk"
    )
    lines = [f"{path}: {state}", f"  {contents.messages} messages on {len(contents.channels)} channels, {span:.2f} s"]
    lines += [f"  {topic}: {count}" for topic, count in sorted(contents.counts.items())]
    return "\n".join(lines)


def run(path: str, output: str | None) -> int:
    """`hwgateway record --recover FILE [-o OUT]`: say what is readable; with OUT, write a repaired copy.

    A directory is a ros2 bag (`gateway.record.bag_recover`).
    """
    if Path(path).is_dir():
        from gateway.record.bag_recover import run_bag

        return run_bag(path, output)
    try:
        contents = repair(path, output) if output else read(path)
    except BadRecording as error:
        if output:
            Path(output).unlink(missing_ok=True)
        print(f"hwgateway record: {error}", file=sys.stderr)
        return EXIT_BAD_FILE
    except OSError as error:
        print(f"hwgateway record: {path}: {error.strerror}", file=sys.stderr)
        return EXIT_BAD_FILE
    print(describe(path, contents))
    if output:
        print(f"  repaired copy written to {output}")
    return EXIT_OK
