"""The messages of a recording in log-time order, as the replay device and `hwgateway replay` play them.

The replay device plays a file chunk by chunk when it can (`gateway.record.replay_stream`); this
module loads the files it cannot, whole: read in a worker thread (`load_recording`, abandonable)
into compact arrays, per message 30 bytes of times, topic and place, and its data once in one
buffer, so a long recording of small messages costs tens of bytes per message, never a Python
object each. What one file may bring is capped: `MAX_LOADED_BYTES` in all, `MAX_REPLAYED_DEVICES`
devices and `MAX_REPLAYED_TOPICS` topics; a topic the bus would refuse (a space in it, too long)
is left out and named in `Recording.refused`.

A ros2 bag (a directory, or an MCAP file of `cdr` channels) is read here too, file after file, each
CDR message turned into the JSON the bus type's plain form is (`gateway.record.bag_read`).
"""

from __future__ import annotations

import json
import threading
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from gateway.record.channels import DEVICE_TOPIC
from gateway.record.mcap_read import Abandoned
from gateway.record.recover import BadRecording, Contents, check_readable, read, stream_messages
from gateway.topics import check_device_id, check_topic, matches_any

if TYPE_CHECKING:
    from gateway.record.bag_read import CdrChannels, Decode

#: Bytes of messages (data and 30 bytes of bookkeeping each) one recording may load.
MAX_LOADED_BYTES = 256 * 1024 * 1024
#: Recorded devices one recording may list or play (as MQTT imports are capped).
MAX_REPLAYED_DEVICES = 256
#: Recorded topics one recording may play.
MAX_REPLAYED_TOPICS = 4096
_PER_MESSAGE_BYTES = 30


@dataclass(frozen=True, slots=True)
class Recorded:
    """One recorded message: topic, type (the channel's `type` metadata or schema name), times (ns), JSON."""

    topic: str
    type: str
    log_time_ns: int
    publish_time_ns: int
    data: bytes


@dataclass(slots=True)
class Recording:
    """The chosen messages of a recording in log-time order, and what was left out and why."""

    #: (topic, type) by topic number.
    topics: list[tuple[str, str]] = field(default_factory=list)
    log_ns: array[int] = field(default_factory=lambda: array("Q"))
    publish_ns: array[int] = field(default_factory=lambda: array("Q"))
    topic: array[int] = field(default_factory=lambda: array("H"))
    start: array[int] = field(default_factory=lambda: array("Q"))
    size: array[int] = field(default_factory=lambda: array("I"))
    data: bytearray = field(default_factory=bytearray)
    #: The recorded devices of the `hwgateway` metadata (at most MAX_REPLAYED_DEVICES).
    devices: list[dict[str, Any]] = field(default_factory=list)
    #: Recorded topics not played, with the reason (each said once).
    refused: dict[str, str] = field(default_factory=dict)
    contents: Contents = field(default_factory=Contents)

    def __len__(self) -> int:
        return len(self.log_ns)

    def message(self, index: int) -> Recorded:
        """The message at `index` (0 is the earliest)."""
        topic, type_ = self.topics[self.topic[index]]
        start = self.start[index]
        data = bytes(self.data[start : start + self.size[index]])
        return Recorded(topic, type_, self.log_ns[index], self.publish_ns[index], data)

    def chosen_topics(self) -> list[str]:
        """The played topics (not `_gateway/` ones)."""
        return [topic for topic, _ in self.topics if not topic.startswith("_gateway/")]

    def append(self, number: int, log_ns: int, publish_ns: int, data: bytes) -> None:
        """Add a message of topic number `number` at the end."""
        self.log_ns.append(log_ns)
        self.publish_ns.append(publish_ns)
        self.topic.append(number)
        self.start.append(len(self.data))
        self.size.append(len(data))
        self.data += data

    # -- the block interface the player uses (a loaded recording is one block) --------------------

    @property
    def first_ns(self) -> int:
        """Log time of the earliest message, ns (0 when empty)."""
        return self.log_ns[0] if self.log_ns else 0

    @property
    def last_ns(self) -> int:
        """Log time of the latest message, ns (0 when empty)."""
        return self.log_ns[-1] if self.log_ns else 0

    @property
    def blocks(self) -> int:
        """Parts the recording is read in: one, already in memory."""
        return 1

    def block_of(self, index: int) -> int:
        """The part holding message `index`."""
        return 0

    def block_start(self, block: int) -> int:
        """The index of the first message of part `block`."""
        return 0

    def block_for_time(self, log_ns: int) -> int:
        """The first part with a message at `log_ns` or later (`blocks` when none)."""
        return 0 if self.log_ns and self.log_ns[-1] >= log_ns else 1

    def load_block(self, block: int, cancel: threading.Event | None = None) -> Recording:
        """Part `block`'s messages: all of them, here."""
        return self


def load(path: str | Path) -> list[Recorded]:
    """Every bus message of `path` (not the gateway's own channels), sorted by log time.

    A truncated file gives what its complete chunks hold; raise BadRecording when it is not MCAP.
    """
    recording = load_recording(path)
    return [recording.message(i) for i in range(len(recording))]


def recorded_devices(contents: Contents) -> list[dict[str, Any]]:
    """The devices the recording's `hwgateway` metadata lists (id, kind, publishes, accepts); [] without it.

    At most MAX_REPLAYED_DEVICES, with a valid device id each.
    """
    for metadata in contents.metadata:
        if metadata.name == "hwgateway":
            try:
                devices = json.loads(metadata.metadata.get("devices", "[]"))
            except ValueError:
                return []
            if not isinstance(devices, list):
                return []
            return [d for d in devices if isinstance(d, dict) and _valid_id(d.get("id"))][:MAX_REPLAYED_DEVICES]
    return []


def _valid_id(device: object) -> bool:
    try:
        check_device_id(device)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return False
    return True


class Chooser:
    """Decides once per channel whether its messages play, under which topic number, or why not."""

    def __init__(self, recording: Recording, patterns: tuple[str, ...], prefix: str, keep: frozenset[str]) -> None:
        self.recording = recording
        self.patterns = patterns
        self.prefix = prefix
        self.keep = keep
        self.numbers: dict[tuple[str, str], int] = {}
        self.devices: set[str] = set()

    def number(self, topic: str, type_: str) -> int:
        """The topic number of (topic, type), or -1: not played (refusals noted)."""
        key = (topic, type_)
        number = self.numbers.get(key)
        if number is not None:
            return number
        number = self.numbers[key] = self._decide(topic, type_)
        return number

    def _decide(self, topic: str, type_: str) -> int:
        refused = self.recording.refused
        if topic.startswith("_gateway/"):
            return self._add(topic, type_) if topic in self.keep else -1
        if not matches_any(self.patterns, topic):
            return -1
        shown = topic if len(topic) <= 80 else topic[:77] + "..."
        try:
            check_topic(self.prefix + topic)
        except ValueError:
            refused[shown] = "not a valid bus topic (<device>/<stream> of letters, digits and _ . : -, <= 256 chars)"
            return -1
        device = topic.split("/", 1)[0]
        if device not in self.devices and len(self.devices) >= MAX_REPLAYED_DEVICES:
            refused[shown] = f"the file has more than {MAX_REPLAYED_DEVICES} devices"
            return -1
        if len(self.recording.topics) >= MAX_REPLAYED_TOPICS:
            refused[shown] = f"the file has more than {MAX_REPLAYED_TOPICS} topics"
            return -1
        self.devices.add(device)
        return self._add(topic, type_)

    def _add(self, topic: str, type_: str) -> int:
        self.recording.topics.append((topic, type_))
        return len(self.recording.topics) - 1


def playable(
    path: str | Path, patterns: tuple[str, ...] = ("**",), prefix: str = "", max_bytes: int = MAX_LOADED_BYTES
) -> int:
    """How many messages `load_recording` would play from `path`, counted without keeping them.

    Raise BadRecording as `load_recording` would: not MCAP, or more than `max_bytes` to load.
    """
    if Path(path).is_dir():  # a ros2 bag
        return len(load_recording(path, patterns=patterns, prefix=prefix, max_bytes=max_bytes))
    contents = read(path)
    if any(channel.message_encoding == "cdr" for channel in contents.channels.values()):
        return len(load_recording(path, patterns=patterns, prefix=prefix, max_bytes=max_bytes))
    chooser = Chooser(Recording(), patterns, prefix, frozenset())
    chosen = [topic for topic in contents.counts if chooser.number(topic, "") >= 0]
    count = sum(contents.counts[topic] for topic in chosen)
    if sum(contents.data_bytes[topic] for topic in chosen) + _PER_MESSAGE_BYTES * count > max_bytes:
        raise _too_big(path, max_bytes)
    return count


def _too_big(path: str | Path, max_bytes: int) -> BadRecording:
    return BadRecording(
        f"{path}: its chosen messages hold more than {max_bytes / 2**20:g} MiB, more than one replay loads;"
        " choose fewer topics, or split the file"
    )


def load_recording(
    path: str | Path,
    keep: frozenset[str] = frozenset(),
    patterns: tuple[str, ...] = ("**",),
    prefix: str = "",
    cancel: threading.Event | None = None,
    max_bytes: int = MAX_LOADED_BYTES,
) -> Recording:
    """The messages of `path` on topics matching `patterns`, in log-time order (see the module doc).

    `keep`: gateway channels (`_gateway/...` topics) to load too; `_gateway/device` events are kept
    for the chosen devices only. `prefix`: what the replay puts in front of each topic (a topic the
    bus refuses with it is left out). A truncated or damaged file gives what was readable before the
    damage; raise BadRecording when nothing of it is MCAP, or it holds more than `max_bytes` of
    chosen messages; `Abandoned` (gateway.record.mcap_read) when `cancel` is set. A ros2 bag: see the module.
    """
    recording = Recording()
    contents = recording.contents
    chooser = Chooser(recording, patterns, prefix, keep)
    cdr = _Cdr(path)
    numbers: dict[int, int] = {}  # channel id -> topic number, for the channels seen so far
    decoders: dict[int, Decode | None] = {}  # channel id -> CDR to JSON (None: JSON already)
    seen_channels: dict[int, object] = {}
    log_ns, data, append = recording.log_ns, recording.data, recording.append
    ordered, last = True, -(2**63)
    for file_path in _files(Path(path)):
        try:
            file = open(file_path, "rb")  # noqa: SIM115 - closed below
        except OSError as error:
            raise BadRecording(f"{file_path}: {error.strerror}") from None
        contents.complete = False  # each file of a bag ends with its footer
        with file:
            for message in stream_messages(file, contents, cancel):
                channel_id = message.channel_id
                channel = contents.channels[channel_id]
                if seen_channels.get(channel_id) is not channel:  # new, or defined again (each file of a bag)
                    seen_channels[channel_id] = channel
                    numbers[channel_id], decoders[channel_id] = _choose(cdr, chooser, channel, contents)
                number = numbers[channel_id]
                if number < 0:
                    continue
                decode = decoders[channel_id]
                payload = message.data if decode is None else decode(message)
                if len(data) + _PER_MESSAGE_BYTES * (len(log_ns) + 1) + len(payload) > max_bytes:
                    raise _too_big(path, max_bytes)
                ordered = ordered and message.log_time >= last
                last = message.log_time
                append(number, message.log_time, message.publish_time, payload)
    check_readable(path, contents)
    recording.devices = recorded_devices(contents)
    keep_chosen_events(recording, chooser.devices, ordered, cancel)
    return recording


def _files(path: Path) -> list[Path]:
    """The MCAP files of a recording: itself, or a ros2 bag directory's files in order."""
    if not path.is_dir():
        return [path]
    from gateway.record.bag_read import bag_paths  # the ROS 2 type layer only when a bag is read

    return bag_paths(path)


class _Cdr:
    """`gateway.record.bag_read.CdrChannels` of a recording, made at its first `cdr` channel."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.channels: CdrChannels | None = None

    def channel(self, channel: Any, schema: Any) -> tuple[str, str, Decode | None] | str | None:
        """As `CdrChannels.channel`; a JSON channel without loading the ROS 2 types."""
        if channel.message_encoding != "cdr":
            return channel.topic, channel.metadata.get("type") or (schema.name if schema else ""), None
        if self.channels is None:
            from gateway.record.bag_read import CdrChannels

            self.channels = CdrChannels(self.path)
        return self.channels.channel(channel, schema)


def _choose(cdr: _Cdr, chooser: Chooser, channel: Any, contents: Contents) -> tuple[int, Decode | None]:
    """The topic number of a channel (-1: not played, its reason noted) and its converter."""
    played = cdr.channel(channel, contents.schemas.get(channel.schema_id))
    if played is None:
        return -1, None
    if isinstance(played, str):
        shown = channel.topic if len(channel.topic) <= 80 else channel.topic[:77] + "..."
        chooser.recording.refused[shown] = played
        return -1, None
    topic, type_, decode = played
    return chooser.number(topic, type_), decode


def keep_chosen_events(recording: Recording, devices: set[str], ordered: bool, cancel: threading.Event | None) -> None:
    """Drop `_gateway/device` events of devices not played, and sort by log time unless already sorted.

    Looks at `cancel` between its steps (seconds each for millions of messages).
    """
    events = {n for n, (topic, _) in enumerate(recording.topics) if topic == DEVICE_TOPIC}
    keep: list[int] | range = range(len(recording))
    if events:
        keep = [i for i in keep if recording.topic[i] not in events or event_device(recording, i) in devices]
        if len(keep) == len(recording):
            keep = range(len(recording))
    if ordered and isinstance(keep, range):
        return
    _look(cancel)
    order = sorted(keep, key=recording.log_ns.__getitem__)
    for name in ("log_ns", "publish_ns", "topic", "start", "size"):
        _look(cancel)
        values: array[int] = getattr(recording, name)
        setattr(recording, name, array(values.typecode, (values[i] for i in order)))


def _look(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise Abandoned


def event_device(recording: Recording, index: int) -> str:
    """The device a `_gateway/device` event at `index` is about ("" when unreadable)."""
    start = recording.start[index]
    try:
        device = orjson.loads(recording.data[start : start + recording.size[index]]).get("device")
    except (ValueError, AttributeError):
        return ""
    return device if isinstance(device, str) else ""
