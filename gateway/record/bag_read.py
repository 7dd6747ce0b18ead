"""Reading ros2 bags for the replay: the bag's files, and each CDR channel as a bus topic of JSON messages.

A bag is a directory: its `metadata.yaml` (rosbag2_bagfile_information) lists its files, or, for a
killed recording without one, its `*.mcap` files in split order are read. Only MCAP storage is
read (a sqlite3 bag is refused: `ros2 bag convert` makes an MCAP one), without per-file or
per-message compression. metadata.yaml is read safely: at most `MAX_METADATA_BYTES`, no YAML
anchors or aliases (a "billion laughs" file), every file it names inside the bag directory.

A `cdr` channel plays as a bus topic (`CdrChannels`): its topic is the `hwgateway_topic` our
recordings put in the channel's metadata, else the ROS topic without its leading `/` (`/pad/state`
-> `pad/state`, as the naming rule names a device `pad`); its type the bus type whose ROS 2 type
the schema names (`creos_messages/msg/ControllerState`). A channel of a type the gateway does not
have, or whose `topic_type_hash` differs from the gateway's hash of that type, is left out with its
reason; the Joy channels our recordings derive from controller states are left out silently. A
message whose bytes are no CDR of its type makes the whole bag refused (`BadRecording`), naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import yaml  # type: ignore[import-untyped]  # no stubs in the venv; safe_load and parse only

from gateway.messages import REGISTRY
from gateway.record.bag import METADATA_FILE, bag_files
from gateway.record.channels import COMMAND_TOPIC, COMMAND_TYPE, DEVICE_TOPIC, DEVICE_TYPE, RESULT_TOPIC, RESULT_TYPE
from gateway.record.recover import BadRecording
from gateway.record.ros_channels import BUS_TOPICS, SUPPORTS, from_ros
from gateway.ros.cdr import CdrError
from gateway.ros.typesupport import for_bus_type
from protocols.mcap.records import Channel, Message, Schema

#: Bytes a bag's metadata.yaml may hold.
MAX_METADATA_BYTES = 4 * 1024 * 1024
#: Files one bag may list.
MAX_BAG_FILES = 100_000

Decode = Callable[[Message], bytes]
OWN_TYPES = {DEVICE_TOPIC: DEVICE_TYPE, COMMAND_TOPIC: COMMAND_TYPE, RESULT_TOPIC: RESULT_TYPE}


def is_bag(path: str | Path) -> bool:
    """True when `path` is a directory (a bag; a file is one MCAP recording)."""
    return Path(path).is_dir()


def _metadata(directory: Path) -> dict[str, Any]:
    """The `rosbag2_bagfile_information` of `directory`/metadata.yaml, checked; BadRecording when unusable."""
    path = directory / METADATA_FILE
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_METADATA_BYTES + 1)
    except OSError as error:
        raise BadRecording(f"{path}: {error.strerror}") from None
    if len(raw) > MAX_METADATA_BYTES:
        raise BadRecording(f"{path}: more than {MAX_METADATA_BYTES} bytes, more than a bag's metadata holds")
    try:
        text = raw.decode()
        if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=yaml.SafeLoader)):
            raise BadRecording(f"{path}: YAML aliases, which no rosbag2 metadata uses")
        document = yaml.safe_load(text)
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        raise BadRecording(f"{path}: not YAML ({str(error).splitlines()[0]})") from None
    info = document.get("rosbag2_bagfile_information") if isinstance(document, dict) else None
    if not isinstance(info, dict):
        raise BadRecording(f"{path}: no rosbag2_bagfile_information in it")
    return info


def bag_paths(directory: Path) -> list[Path]:
    """The MCAP files of the bag `directory`, in order; BadRecording when it is no readable MCAP bag."""
    if not (directory / METADATA_FILE).exists():
        files = bag_files(directory)
        if not files:
            raise BadRecording(f"{directory}: no {METADATA_FILE} and no .mcap file: not a ros2 bag")
        return files
    info = _metadata(directory)
    storage = info.get("storage_identifier")
    if storage != "mcap":
        raise BadRecording(
            f"{directory}: its storage is {storage!r}; only MCAP bags are read (`ros2 bag convert` makes one)"
        )
    for key in ("compression_mode", "compression_format"):
        if info.get(key):
            raise BadRecording(
                f"{directory}: {key} {info[key]!r}: compressed bags are not read (MCAP chunk compression is)"
            )
    names = info.get("relative_file_paths")
    if not isinstance(names, list) or not names or not all(isinstance(name, str) for name in names):
        raise BadRecording(f"{directory}: relative_file_paths is no list of file names")
    if len(names) > MAX_BAG_FILES:
        raise BadRecording(f"{directory}: more than {MAX_BAG_FILES} files")
    root = directory.resolve()
    paths = []
    for name in names:
        path = (directory / name).resolve()
        if not path.is_relative_to(root) or path == root:
            raise BadRecording(f"{directory}: the file {name!r} it lists lies outside the bag")
        if not path.is_file():
            alone = directory / Path(name).name  # early rosbag2 wrote `<bag>/<file>` paths
            if not alone.is_file():
                raise BadRecording(f"{directory}: the file {name!r} it lists is missing")
            path = alone
        paths.append(path)
    return paths


_ROS_TO_BUS: dict[str, str] = {}


def _bus_type(ros_type: str) -> str | None:
    if not _ROS_TO_BUS:
        for name in REGISTRY:
            _ROS_TO_BUS.setdefault(for_bus_type(name).name, name)
    return _ROS_TO_BUS.get(ros_type)


class CdrChannels:
    """What each channel of a recording plays as: bus topic, bus type and the converter of its messages."""

    def __init__(self, path: str | Path) -> None:
        self.path = path

    def channel(self, channel: Channel, schema: Schema | None) -> tuple[str, str, Decode | None] | str | None:
        """(bus topic, bus type, converter or None for JSON), or why the channel is left out (None: silently)."""
        if channel.message_encoding != "cdr":
            return channel.topic, channel.metadata.get("type") or (schema.name if schema else ""), None
        if channel.metadata.get("hwgateway_derived"):
            return None
        ros_topic = channel.topic
        ros_type = schema.name if schema is not None else ""
        topic = channel.metadata.get("hwgateway_topic") or BUS_TOPICS.get(ros_topic) or ros_topic.removeprefix("/")
        own = SUPPORTS.get(topic)
        if own is not None and own.name == ros_type:
            support, type_ = own, OWN_TYPES[topic]
        else:
            own = None
            bus = _bus_type(ros_type)
            if bus is None:
                return f"its type {ros_type or '(no schema)'} is no type of the gateway"
            support, type_ = for_bus_type(bus), bus
        recorded_hash = channel.metadata.get("topic_type_hash", "")
        if recorded_hash and recorded_hash != support.hash:
            return f"its {ros_type} ({recorded_hash}) is not the gateway's ({support.hash})"
        decode, path = support.decode, self.path

        def convert(message: Message) -> bytes:
            try:
                value = decode(message.data)
            except CdrError as error:
                raise BadRecording(
                    f"{path}: the message on {ros_topic} at {message.log_time} ns is no CDR {ros_type}: {error}"
                ) from None
            return orjson.dumps(from_ros(topic, value) if own is not None else value)

        return topic, type_, convert
