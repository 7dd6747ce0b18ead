"""ros2 recordings: a rosbag2 directory (version 9, MCAP storage) of CDR messages, and its metadata.yaml.

A bag is a directory `<name>/` holding `<name>_0.mcap`, `<name>_1.mcap`, ... (a split starts the next
file, as `ros2 bag record --max-bag-size` does) and `metadata.yaml` (`rosbag2_bagfile_information`,
version 9, as rosbag2 and rosbags write it). Each MCAP file has the profile `ros2`, one schema per
type (encoding `ros2msg`: the `.msg` text with its dependencies) and one channel per topic
(encoding `cdr`, metadata `offered_qos_profiles` and `topic_type_hash` = the RIHS01 hash, plus
`hwgateway_topic` and `hwgateway_type`, the bus topic and type, so that a replay names them back).
Types, schemas, hashes and CDR all come from `gateway.ros.typesupport`, the one encoder the ROS 2
face shares. Topics follow the ROS naming rule (`gateway.ros.names.RosNames`); each
`creos_messages/ControllerState` is also written as `sensor_msgs/msg/Joy` on its sibling `joy`
topic. metadata.yaml is written when each file starts and ends: a killed recording has one that
misses its last file's messages, which `hwgateway record --recover` rebuilds.
"""

from __future__ import annotations

import logging
import os
import re
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson
from mcap.writer import Writer

from gateway import __version__
from gateway.bus import Sample
from gateway.record.ros_channels import ROS_TOPICS, SUPPORTS, to_ros
from gateway.ros.cdr import CdrError
from gateway.ros.joy import CONTROLLER_TYPE, joy_of_controller_state, joy_topic
from gateway.ros.names import DeviceNaming, NameCollision, RosNames
from gateway.ros.typesupport import JOY, TypeSupport, for_bus_type

log = logging.getLogger(__name__)

#: The rosbag2 metadata version written (Jazzy's; rosbags 0.11 writes it too).
BAG_VERSION = 9
METADATA_FILE = "metadata.yaml"
#: The QoS profiles a channel says it was offered with: none known (players use their default).
_QOS = "[]"
_FILE_NUMBER = re.compile(r"_(\d+)\.mcap$")

#: (topic, type, log time ns, publish time ns, sequence, JSON bytes), as `gateway.record.sink` queues it.
Record = tuple[str, str, int, int, int, bytes]
Namer = Callable[[str], "str | None"]


def bag_name(prefix: str) -> str:
    """A new bag's directory name, ROS's form with UTC time: `<prefix>_2026_12_04-08_55_13`."""
    return f"{prefix}_{time.strftime('%Y_%m_%d-%H_%M_%S', time.gmtime())}"


def file_number(path: Path) -> int:
    """The split number of a bag file (`x_3.mcap` -> 3; -1 when the name has none)."""
    match = _FILE_NUMBER.search(path.name)
    return int(match.group(1)) if match else -1


def bag_files(directory: Path) -> list[Path]:
    """The MCAP files of a bag directory in split order."""
    return sorted(directory.glob("*.mcap"), key=lambda path: (file_number(path), path.name))


def namer_of(devices: list[DeviceNaming]) -> Namer:
    """The ROS topic of a bus topic by the ROS naming rule of these devices (None: no name, it clashes)."""
    try:
        names = RosNames(devices)
    except NameCollision as error:
        log.warning("ros2 recording: %s; topics named without namespaces", error)
        names = RosNames([])
    return names.topic


@dataclass(slots=True)
class TopicStats:
    """One topic of a bag file: its ROS 2 type, RIHS01 hash and message count."""

    type: str
    hash: str
    count: int = 0


@dataclass(slots=True)
class FileStats:
    """What one bag file holds: messages per ROS topic and the log time span (ns)."""

    path: Path
    topics: dict[str, TopicStats] = field(default_factory=dict)
    first_ns: int = 0
    last_ns: int = 0

    @property
    def count(self) -> int:
        """Messages in the file."""
        return sum(topic.count for topic in self.topics.values())

    def add(self, topic: str, support: TypeSupport, log_ns: int) -> None:
        """Count one message."""
        stats = self.topics.get(topic)
        if stats is None:
            stats = self.topics[topic] = TopicStats(support.name, support.hash)
        stats.count += 1
        if not self.first_ns or log_ns < self.first_ns:
            self.first_ns = log_ns
        self.last_ns = max(self.last_ns, log_ns)


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar: JSON's string form, with every unprintable character escaped."""
    quoted = orjson.dumps(text).decode()
    if quoted.isprintable():
        return quoted
    return "".join(char if char.isprintable() else f"\\U{ord(char):08x}" for char in quoted)


def metadata_yaml(files: list[FileStats], custom: dict[str, str]) -> str:
    """metadata.yaml of a bag made of `files` (rosbag2_bagfile_information version 9)."""
    topics: dict[str, TopicStats] = {}
    for stats in files:
        for name, topic in stats.topics.items():
            total = topics.setdefault(name, TopicStats(topic.type, topic.hash))
            total.count += topic.count
    spans = [(stats.first_ns, stats.last_ns) for stats in files if stats.count]
    start = min((first for first, _ in spans), default=0)
    end = max((last for _, last in spans), default=0)
    lines = [
        "rosbag2_bagfile_information:",
        f"  version: {BAG_VERSION}",
        "  storage_identifier: mcap",
        "  duration:",
        f"    nanoseconds: {end - start}",
        "  starting_time:",
        f"    nanoseconds_since_epoch: {start}",
        f"  message_count: {sum(stats.count for stats in files)}",
        "  topics_with_message_count:" + ("" if topics else " []"),
    ]
    for name, topic in topics.items():
        lines += [
            "    - topic_metadata:",
            f"        name: {_quoted(name)}",
            f"        type: {_quoted(topic.type)}",
            "        serialization_format: cdr",
            "        offered_qos_profiles: []",
            f"        type_description_hash: {_quoted(topic.hash)}",
            f"      message_count: {topic.count}",
        ]
    lines += ['  compression_format: ""', '  compression_mode: ""']
    lines.append("  relative_file_paths:" + ("" if files else " []"))
    lines += [f"    - {_quoted(stats.path.name)}" for stats in files]
    lines.append("  files:" + ("" if files else " []"))
    for stats in files:
        first = stats.first_ns if stats.count else 0
        lines += [
            f"    - path: {_quoted(stats.path.name)}",
            "      starting_time:",
            f"        nanoseconds_since_epoch: {first}",
            "      duration:",
            f"        nanoseconds: {stats.last_ns - first if stats.count else 0}",
            f"      message_count: {stats.count}",
        ]
    lines.append("  custom_data:" + ("" if custom else " {}"))
    lines += [f"    {_quoted(key)}: {_quoted(value)}" for key, value in sorted(custom.items())]
    lines.append('  ros_distro: "hwgateway"')
    return "\n".join(lines) + "\n"


def write_metadata(directory: Path, files: list[FileStats], custom: dict[str, str]) -> None:
    """Write `directory`/metadata.yaml at once (a temporary file renamed over it)."""
    temporary = directory / (METADATA_FILE + ".tmp")
    temporary.write_text(metadata_yaml(files, custom), encoding="utf-8")
    os.replace(temporary, directory / METADATA_FILE)


@dataclass(slots=True)
class _Channel:
    """Where one bus topic and type go: the channel, its encoder, and the Joy channel of a controller."""

    id: int
    topic: str
    support: TypeSupport
    own: str = ""  # the own channel's bus topic (its values go through `to_ros`)
    joy: _Channel | None = None


class Bag:
    """One bag directory being written: its files' stats, custom data and metadata.yaml."""

    def __init__(self, directory: Path, namer: Namer) -> None:
        directory.mkdir(parents=True)  # an existing bag is never written into
        self.directory = directory
        self.namer = namer
        self.files: list[FileStats] = []
        self.custom: dict[str, str] = {}
        self._number = 0

    def next_path(self) -> Path:
        """The path of the bag's next file (`<name>_<n>.mcap`)."""
        path = self.directory / f"{self.directory.name}_{self._number}.mcap"
        self._number += 1
        return path

    def set_custom(self, name: str, values: dict[str, str]) -> None:
        """Keep a metadata record's values as custom data (`<name>.<key>`)."""
        for key, value in values.items():
            self.custom[f"{name}.{key}"] = value

    def write_metadata(self) -> None:
        """Write metadata.yaml for the files so far."""
        write_metadata(self.directory, self.files, self.custom)

    def forget(self, path: Path) -> None:
        """A file of this bag was removed (pruned): leave it out of metadata.yaml."""
        self.files = [stats for stats in self.files if stats.path != path]


class BagFile:
    """One MCAP file of a bag: its writer, schemas and channels; `write` takes a JSON record, `write_sample` a sample.

    A record of a type with no ROS 2 type support, or whose values CDR cannot hold, is left out and
    counted in `skipped` (logged once per topic); a bus topic the naming rule gives no name too.
    """

    def __init__(self, bag: Bag, compression: Any, chunk_bytes: int) -> None:
        self.bag = bag
        self.path = bag.next_path()
        self.opened = time.monotonic()
        self.stats = FileStats(self.path)
        self.skipped = 0
        self.file: BinaryIO = open(self.path, "xb")  # noqa: SIM115 - closed by close()
        self.writer = Writer(self.file, chunk_size=chunk_bytes, compression=compression)
        self.writer.start(profile="ros2", library=f"hwgateway {__version__}")
        self._schemas: dict[str, int] = {}
        self._channels: dict[tuple[str, str], _Channel | None] = {}
        self._said: set[str] = set()
        bag.files.append(self.stats)
        bag.write_metadata()

    @property
    def channels(self) -> int:
        """Channels registered in this file."""
        return len({channel.id for channel in self._channels.values() if channel is not None})

    def write(self, record: Record) -> None:
        """Add one JSON record (its topic and type are bus names)."""
        topic, type_, log_ns, publish_ns, sequence, data = record
        channel = self._channel(topic, type_)
        if channel is None:
            return
        try:
            value = orjson.loads(data)
            self._add(channel, to_ros(channel.own, value) if channel.own else value, log_ns, publish_ns, sequence)
        except (CdrError, ValueError, TypeError, KeyError) as error:
            self._skip(topic, f"cannot be written as {channel.support.name}: {error}")

    def write_sample(self, sample: Sample) -> None:
        """Add one bus sample (encoded from its message, no JSON on the way)."""
        channel = self._channel(sample.topic, sample.type)
        if channel is None:
            return
        log_ns, publish_ns = round(sample.recv_stamp * 1e9), round(sample.stamp * 1e9)
        try:
            self._add(channel, sample.message, log_ns, publish_ns, sample.seq)
        except (CdrError, ValueError, TypeError, KeyError) as error:
            self._skip(sample.topic, f"cannot be written as {channel.support.name}: {error}")

    def _add(self, channel: _Channel, value: Any, log_ns: int, publish_ns: int, sequence: int) -> None:
        data = channel.support.encode(value)
        self.writer.add_message(channel.id, log_time=log_ns, data=data, publish_time=publish_ns,
                                sequence=sequence & 0xFFFFFFFF)  # fmt: skip
        self.stats.add(channel.topic, channel.support, log_ns)
        joy = channel.joy
        if joy is not None:
            plain = value if isinstance(value, dict) else _plain(value)
            self.writer.add_message(joy.id, log_time=log_ns, data=JOY.encode(joy_of_controller_state(plain)),
                                    publish_time=publish_ns, sequence=sequence & 0xFFFFFFFF)  # fmt: skip
            self.stats.add(joy.topic, JOY, log_ns)

    def _skip(self, topic: str, reason: str) -> None:
        self.skipped += 1
        if topic not in self._said:
            self._said.add(topic)
            log.warning("ros2 recording leaves out %s: %s", topic, reason)

    def _channel(self, topic: str, type_: str) -> _Channel | None:
        key = (topic, type_)
        if key in self._channels:
            channel = self._channels[key]
            if channel is None:
                self.skipped += 1
            return channel
        channel = self._channels[key] = self._register(topic, type_)
        if channel is None:
            self.skipped += 1
        return channel

    def _register(self, topic: str, type_: str) -> _Channel | None:
        own = SUPPORTS.get(topic)
        if own is not None:
            return _Channel(self._register_channel(ROS_TOPICS[topic], own, topic, type_), ROS_TOPICS[topic], own,
                            own=topic)  # fmt: skip
        try:
            support = for_bus_type(type_)
        except KeyError:
            self._skip(topic, f"its type {type_} has no ROS 2 type")
            return None
        name = self.bag.namer(topic)
        if name is None:
            self._skip(topic, "its ROS name is another topic's")
            return None
        channel = _Channel(self._register_channel(name, support, topic, type_), name, support)
        if type_ == CONTROLLER_TYPE:
            joy = joy_topic(name)
            channel.joy = _Channel(self._register_channel(joy, JOY, topic, type_, derived=True), joy, JOY)
        return channel

    def _register_channel(self, name: str, support: TypeSupport, topic: str, type_: str, derived: bool = False) -> int:
        schema_id = self._schemas.get(support.name)
        if schema_id is None:
            schema_id = self._schemas[support.name] = self.writer.register_schema(
                support.name, "ros2msg", support.schema.encode()
            )
        metadata = {"offered_qos_profiles": _QOS, "topic_type_hash": support.hash, "hwgateway_topic": topic,
                    "hwgateway_type": type_}  # fmt: skip
        if derived:
            metadata["hwgateway_derived"] = "sensor_msgs/msg/Joy of the controller state"
        return self.writer.register_channel(name, "cdr", schema_id, metadata)

    def close(self) -> None:
        """Write the `rosbag2` metadata record, the summary and footer, close the file and update metadata.yaml."""
        try:
            text = metadata_yaml(self.bag.files, self.bag.custom).split("\n", 1)[1]
            self.writer.add_metadata("rosbag2", {"serialized_metadata": textwrap.dedent(text).strip()})
            self.writer.finish()  # type: ignore[no-untyped-call]
        finally:
            self.file.close()
        self.bag.write_metadata()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _remove_bag(directory: Path) -> bool:
    """Remove a bag directory made of MCAP files and metadata.yaml (anything else in it: left, False)."""
    for path in directory.iterdir():
        if path.suffix == ".mcap" or path.name.startswith(METADATA_FILE):
            path.unlink(missing_ok=True)
    try:
        directory.rmdir()
    except OSError as error:
        log.warning("cannot remove old bag %s: %s", directory, error)
        return False
    return True


def prune_bags(folder: Path, prefix: str, max_total_bytes: int, bag: Bag, keep: Path) -> list[Path]:
    """Remove the oldest recordings while the prefix's bags in `folder` hold more than `max_total_bytes`.

    Older bags go whole, oldest first; then the oldest files of `bag` (never `keep`, the open one),
    its metadata.yaml rewritten without them. Returns what was removed.
    """
    if not max_total_bytes:
        return []
    older = [path for path in sorted(folder.glob(f"{prefix}_*")) if path.is_dir() and path != bag.directory]
    units = [(path, sum(_size(file) for file in bag_files(path))) for path in older]
    units += [(path, _size(path)) for path in bag_files(bag.directory) if path != keep]
    total = sum(size for _, size in units) + _size(keep)
    removed = []
    for path, size in units:
        if total <= max_total_bytes:
            break
        if path.is_dir():
            if not _remove_bag(path):
                continue
        else:
            try:
                path.unlink()
            except OSError as error:
                log.warning("cannot remove old recording %s: %s", path, error)
                continue
            bag.forget(path)
        total -= size
        removed.append(path)
    if any(path.parent == bag.directory for path in removed):
        bag.write_metadata()
    return removed


def _plain(message: Any) -> dict[str, Any]:
    from gateway.messages import to_plain

    plain: dict[str, Any] = to_plain(message)
    return plain
