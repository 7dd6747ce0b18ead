"""`hwgateway record --recover BAG [-o OUT]`: what a ros2 bag holds; a repaired copy with metadata.yaml rebuilt.

A killed recording leaves its last MCAP file without summary and footer, and a metadata.yaml that
misses that file's messages (`gateway.record.bag` writes it when each file starts and ends). The
recovery reads every `*.mcap` file of the directory as far as it is readable (the same reader as a
JSON recording's recovery: a cut anywhere loses only the chunk it cut), reports each, and with
`-o OUT` writes the bag `OUT` (a new directory): each file repaired, and metadata.yaml made from what
the files hold, not from the old one.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gateway.record import EXIT_BAD_FILE, EXIT_OK
from gateway.record.bag import FileStats, TopicStats, bag_files, write_metadata
from gateway.record.recover import BadRecording, Contents, describe, read, repair


def stats_of(path: Path, contents: Contents) -> FileStats:
    """A bag file's stats from what reading it found: counts per topic, types and hashes of its channels."""
    stats = FileStats(path)
    for channel in contents.channels.values():
        count = contents.counts.get(channel.topic, 0)
        if channel.topic in stats.topics or not count:
            continue
        schema = contents.schemas.get(channel.schema_id)
        stats.topics[channel.topic] = TopicStats(
            schema.name if schema else "", channel.metadata.get("topic_type_hash", ""), count
        )
    stats.first_ns = contents.first_ns or 0
    stats.last_ns = contents.last_ns or 0
    return stats


def _custom(contents: Contents) -> dict[str, str]:
    custom: dict[str, str] = {}
    for metadata in contents.metadata:
        if metadata.name != "rosbag2":
            custom.update({f"{metadata.name}.{key}": value for key, value in metadata.metadata.items()})
    return custom


def recover_bag(directory: Path, output: Path | None) -> list[tuple[Path, Contents]]:
    """Read (and with `output`, repair into the new bag `output`) every MCAP file of `directory`.

    Raise BadRecording when the directory has no MCAP file, or a file is not MCAP at all.
    """
    files = bag_files(directory)
    if not files:
        raise BadRecording(f"{directory}: no .mcap file: not a ros2 bag")
    if output is not None:
        try:
            output.mkdir()
        except OSError as error:
            raise BadRecording(f"{output}: {error.strerror}") from None
    found: list[tuple[Path, Contents]] = []
    stats: list[FileStats] = []
    custom: dict[str, str] = {}
    for path in files:
        if output is None:
            contents = read(path)
            stats.append(stats_of(path, contents))
        else:
            target = output / f"{output.name}_{len(found)}.mcap"
            contents = repair(path, target, profile="ros2")
            stats.append(stats_of(target, contents))
        custom.update(_custom(contents))
        found.append((path, contents))
    if output is not None:
        write_metadata(output, stats, custom)
    return found


def run_bag(path: str, output: str | None) -> int:
    """The command on a bag directory: report each file; with OUT, write the repaired bag."""
    target = Path(output) if output else None
    try:
        found = recover_bag(Path(path), target)
    except BadRecording as error:
        print(f"hwgateway record: {error}", file=sys.stderr)
        return EXIT_BAD_FILE
    except OSError as error:
        print(f"hwgateway record: {path}: {error.strerror}", file=sys.stderr)
        return EXIT_BAD_FILE
    for file, contents in found:
        print(describe(file, contents))
    total = sum(contents.messages for _, contents in found)
    print(f"{path}: a ros2 bag of {len(found)} files, {total} messages")
    if target is not None:
        print(f"  repaired bag written to {target} (metadata.yaml rebuilt from its files)")
    return EXIT_OK
