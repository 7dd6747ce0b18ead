"""ros2 recordings (rosbag2 v9, MCAP storage, CDR) read by independent readers, unchanged.

One bag holds every bus type (three values each, every field set), the recording's own channels
and the Joy of a controller state: `rosbags`' AnyReader (types from the bag's own schemas),
Foxglove's `mcap-ros2-support` and npm `@mcap/core` + `@foxglove/rosmsg2-serialization` decode
every message, equal field by field to the plain value sent. The daemon's `[record] format = "ros2"`
splits, prunes and records commands; `hwgateway record --format ros2` records a running gateway.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
import websockets
import yaml  # type: ignore[import-untyped]
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from rosbags.highlevel import AnyReader
from rosbags.rosbag2 import Reader

from gateway.messages import REGISTRY
from gateway.record.bag import namer_of
from gateway.record.channels import COMMAND_TOPIC, COMMAND_TYPE, DEVICE_TOPIC, DEVICE_TYPE, RESULT_TOPIC, RESULT_TYPE
from gateway.record.sink import McapSink
from gateway.ros import typesupport
from gateway.ros.joy import joy_of_controller_state
from gateway.ros.names import DeviceNaming
from gateway.ros.types import MsgType
from gateway.ros.typesupport import JOY
from tests.conftest import require_peer
from tests.harness import WsClient, gateway_config
from tests.inprocess import running_gateway
from tests.ros2_values import example

NODE_READER = Path(__file__).parent / "node" / "mcap"
#: Every bus message type (a service's request and response types are no topic types in ROS 2).
TYPES = sorted(name for name in REGISTRY if "/msg/" in typesupport.for_bus_type(name).name)
DEVICE_EVENT = {"device": "pad", "kind": "gamepad", "status": "connected", "detail": "é ✓", "stamp": 1.5,
                "locked_by": None}  # fmt: skip
COMMAND = {"command": 7, "client": "c1", "device": "pad", "type": "rumble", "data": {"strong": 0.5}, "stamp": 2.5}
RESULT = {"command": 7, "client": "c1", "device": "pad", "type": "rumble", "ok": False, "data": None,
          "error": {"code": "invalid_argument", "message": "data.strong: too strong"}, "latency_s": 0.01,
          "stamp": 2.6}  # fmt: skip


def _bus_topic(index: int, name: str) -> str:
    return "pad/state" if name == "creos_messages/ControllerState" else f"dev{index % 4}/t{index}/s-{index}"


def write_every_type(bag: Path) -> dict[str, tuple[MsgType, list[dict[str, Any]]]]:
    """A bag of every bus type (3 values each) plus the own channels; returns {ROS topic: (type, values)}."""
    sent: dict[str, tuple[MsgType, list[dict[str, Any]]]] = {}
    namer = namer_of([DeviceNaming("pad", "gamepad", "", ())])
    sink = McapSink(bag, {}, chunk_bytes=8192, namer=namer)
    time_ns = 10**18
    for index, name in enumerate(TYPES):
        support = typesupport.for_bus_type(name)
        topic = _bus_topic(index, name)
        values = [example(support.msg, seed) for seed in range(3)]
        for seq, value in enumerate(values):
            time_ns += 1000
            assert sink.message(topic, name, time_ns, time_ns - 7, seq, orjson.dumps(value))
        ros_topic = namer(topic)
        assert ros_topic is not None
        sent[ros_topic] = (support.msg, values)
        if name == "creos_messages/ControllerState":
            sent["/pad/joy"] = (JOY.msg, [joy_of_controller_state(value) for value in values])
    for topic, type_, value in ((DEVICE_TOPIC, DEVICE_TYPE, DEVICE_EVENT), (COMMAND_TOPIC, COMMAND_TYPE, COMMAND),
                                (RESULT_TOPIC, RESULT_TYPE, RESULT)):  # fmt: skip
        time_ns += 1000
        sink.message(topic, type_, time_ns, time_ns, 0, orjson.dumps(value))
    sink.metadata("hwgateway", {"gateway_version": "test", "devices": "[]"})
    sink.close()
    assert sink.skipped == 0
    return sent


@pytest.fixture(scope="module")
def bag(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[MsgType, list[dict[str, Any]]]]]:
    """The bag of every type and what was sent on each ROS topic."""
    path = tmp_path_factory.mktemp("ros2") / "every_type"
    return path, write_every_type(path)


def _from_object(msg: MsgType, value: Any) -> dict[str, Any]:
    """A decoded message object (rosbags', mcap-ros2-support's) as our plain dict: ROS field names to bus keys."""
    plain: dict[str, Any] = {}
    for field in msg.fields:
        item = getattr(value, field.name)
        nested = field.type.nested
        if field.type.array:
            items = list(item.tolist() if isinstance(item, np.ndarray) else item)
            if nested is not None:
                items = [_from_object(nested, element) for element in items]
            for length in reversed(field.type.inner):
                items = [items[start : start + length] for start in range(0, len(items), length)]
            plain[field.key] = items
        elif nested is not None:
            plain[field.key] = _from_object(nested, item)
        else:
            plain[field.key] = item.item() if isinstance(item, np.generic) else item
    return plain


def _from_dict(msg: MsgType, value: dict[str, Any]) -> dict[str, Any]:
    """The node reader's JSON (ROS field names, int64 beyond 2^53 as text) as our plain dict."""
    plain: dict[str, Any] = {}
    for field in msg.fields:
        item = value[field.name]
        nested = field.type.nested

        def one(element: Any, nested: MsgType | None = nested, base: str = field.type.base) -> Any:
            if nested is not None:
                return _from_dict(nested, element)
            return int(element) if isinstance(element, str) and base != "string" else element

        if field.type.array:
            items = [one(element) for element in item]
            for length in reversed(field.type.inner):
                items = [items[start : start + length] for start in range(0, len(items), length)]
            plain[field.key] = items
        else:
            plain[field.key] = one(item)
    return plain


def _own(topic: str) -> Any:
    return {"/_gateway/device": DEVICE_EVENT, "/_gateway/command": COMMAND, "/_gateway/command_result": RESULT}[topic]


def _own_value(topic: str, decoded: dict[str, Any]) -> dict[str, Any]:
    from gateway.record.ros_channels import BUS_TOPICS, from_ros

    return from_ros(BUS_TOPICS[topic], decoded)


def test_metadata_yaml_and_the_mcap_files_are_rosbag2s(bag: tuple[Path, Any]) -> None:
    path, sent = bag
    info = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["version"] == 9
    assert info["storage_identifier"] == "mcap"
    assert info["relative_file_paths"] == ["every_type_0.mcap"]
    expected = sum(len(values) for _, values in sent.values()) + 3
    assert info["message_count"] == expected
    by_topic = {t["topic_metadata"]["name"]: t for t in info["topics_with_message_count"]}
    for topic, (msg, values) in sent.items():
        assert by_topic[topic]["message_count"] == len(values)
        assert by_topic[topic]["topic_metadata"]["type"] == msg.name
        assert by_topic[topic]["topic_metadata"]["type_description_hash"].startswith("RIHS01_")
        assert by_topic[topic]["topic_metadata"]["serialization_format"] == "cdr"
    assert info["custom_data"]["hwgateway.gateway_version"] == "test"
    with (path / "every_type_0.mcap").open("rb") as file:
        reader = make_reader(file)
        assert reader.get_header().profile == "ros2"
        summary = reader.get_summary()
        assert summary is not None
        assert {s.encoding for s in summary.schemas.values()} == {"ros2msg"}
        assert {c.message_encoding for c in summary.channels.values()} == {"cdr"}
        serialized = {m.name: m.metadata for m in reader.iter_metadata()}["rosbag2"]["serialized_metadata"]
        assert yaml.safe_load(serialized)["message_count"] == expected


def test_rosbags_reads_every_message_equal_to_what_was_sent(bag: tuple[Path, Any]) -> None:
    path, sent = bag
    with Reader(path) as plain_reader:
        assert plain_reader.message_count == sum(len(values) for _, values in sent.values()) + 3
        hashes = {c.topic: c.digest for c in plain_reader.connections}
    for topic, (msg, _) in sent.items():
        assert hashes[topic] == typesupport.for_class(msg.cls).hash
    got: dict[str, list[Any]] = {}
    with AnyReader([path]) as reader:  # its typestore is made from the bag's own ros2msg schemas
        for connection, _, raw in reader.messages():
            decoded = reader.deserialize(raw, connection.msgtype)
            got.setdefault(connection.topic, []).append(decoded)
    for topic, (msg, values) in sent.items():
        assert [_from_object(msg, item) for item in got[topic]] == values, topic
    for topic in ("/_gateway/device", "/_gateway/command", "/_gateway/command_result"):
        support = {"/_gateway/device": "DeviceEvent", "/_gateway/command": "CommandRecord"}.get(
            topic, "CommandResultRecord"
        )
        (item,) = got[topic]
        assert type(item).__name__.endswith(support), item
        fields = {name: getattr(item, name) for name in item.__dataclass_fields__ if name != "__msgtype__"}
        assert _own_value(topic, fields) == _own(topic)


def test_mcap_ros2_support_decodes_every_message(bag: tuple[Path, Any]) -> None:
    path, sent = bag
    got: dict[str, list[Any]] = {}
    with (path / "every_type_0.mcap").open("rb") as file:
        reader = make_reader(file, decoder_factories=[DecoderFactory()])
        for _, channel, _, decoded in reader.iter_decoded_messages(log_time_order=True):
            got.setdefault(channel.topic, []).append(decoded)
    assert sum(len(items) for items in got.values()) == sum(len(values) for _, values in sent.values()) + 3
    for topic, (msg, values) in sent.items():
        decoded_values = [_from_object(msg, item) for item in got[topic]]
        assert [_bytes_as_lists(value) for value in decoded_values] == values, topic


def _bytes_as_lists(value: Any) -> Any:
    if isinstance(value, bytes):
        return list(value)
    if isinstance(value, list):
        return [_bytes_as_lists(item) for item in value]
    if isinstance(value, dict):
        return {key: _bytes_as_lists(item) for key, item in value.items()}
    return value


def node_read_ros2(path: Path) -> dict[str, Any]:
    """What the npm reader (@mcap/core, @foxglove/rosmsg2-serialization) decodes of one bag file."""
    assert (NODE_READER / "node_modules" / "@foxglove" / "rosmsg2-serialization").is_dir(), "npm ci in tests/node/mcap"
    done = subprocess.run(["node", "read_ros2.mjs", str(path)], cwd=NODE_READER, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


def test_npm_rosmsg2_serialization_decodes_every_message(bag: tuple[Path, Any]) -> None:
    path, sent = bag
    summary = node_read_ros2(path / "every_type_0.mcap")
    assert summary["profile"] == "ros2"
    assert summary["decodeErrors"] == 0
    assert summary["total"] == sum(len(values) for _, values in sent.values()) + 3
    for topic, (msg, values) in sent.items():
        node = summary["topics"][topic]
        assert (node["schemaEncoding"], node["messageEncoding"]) == ("ros2msg", "cdr")
        assert node["hash"] == typesupport.for_class(msg.cls).hash
        assert [_from_dict(msg, item) for item in node["messages"]] == values, topic
    (event,) = summary["topics"]["/_gateway/device"]["messages"]
    assert _own_value("/_gateway/device", event) == DEVICE_EVENT


ROOT = Path(__file__).parents[1]
#: rclpy's side: each (type, hex CDR) of stdin deserialized by rclpy with its rosidl-built class.
RCLPY_READER = """
import json, sys
sys.path.insert(0, sys.argv[1])
from rclpy.serialization import deserialize_message
from peer import message_class, plain
items = json.load(sys.stdin)
print(json.dumps([plain(deserialize_message(bytes.fromhex(data), message_class(type_))) for type_, data in items]))
"""


def _without_project() -> dict[str, str]:
    """The environment without PYTHONPATH: the project's `hwgateway` package is not the peer's message package."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


def test_rclpy_deserializes_our_cdr_with_its_own_classes(bag: tuple[Path, Any]) -> None:
    python = require_peer(str(ROOT / ".venv-ros2" / "bin" / "python"))  # make ros2-peer builds it
    path, sent = bag
    items: list[tuple[str, str]] = []
    topics: list[str] = []
    with (path / "every_type_0.mcap").open("rb") as file:
        for schema, channel, message in make_reader(file).iter_messages(log_time_order=True):
            if channel.topic in sent:
                assert schema is not None
                items.append((schema.name, message.data.hex()))
                topics.append(channel.topic)
    done = subprocess.run(
        [python, "-c", RCLPY_READER, str(ROOT / "tests" / "ros2_peer")], input=json.dumps(items).encode(),
        capture_output=True, timeout=60, cwd=path, env=_without_project(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    got: dict[str, list[Any]] = {}
    for topic, value in zip(topics, json.loads(done.stdout), strict=True):
        got.setdefault(topic, []).append(value)
    for topic, (msg, values) in sent.items():
        assert [_from_dict(msg, item) for item in got[topic]] == values, topic


FAST_SIM = '[devices.sim-1]\nkind = "sim"\nrate_hz = 400.0\nleds = 3\n'


async def test_the_daemon_records_a_bag_split_pruned_with_commands(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    record = (
        f'[record]\nfolder = "{folder}"\nformat = "ros2"\nmax_file_bytes = 16384\nchunk_bytes = 4096\n'
        "max_total_bytes = 65536\n"
    )
    pushed: list[dict[str, Any]] = []
    config = gateway_config(tmp_path, devices=FAST_SIM, extra=record)
    async with (
        running_gateway(tmp_path, config) as gateway,
        websockets.connect(f"ws://127.0.0.1:{gateway.http_port}/ws") as ws,
    ):
        client = await WsClient(ws).start()
        await client.ok("subscribe", topics=["sim-1/state"])
        (directory,) = folder.glob("hwgateway_*")
        async with asyncio.timeout(60):
            while (directory / f"{directory.name}_0.mcap").exists() or len(pushed) < 1000:
                message = await client.recv()
                if message["op"] == "state":
                    pushed.append(message)
        await client.ok("command", device="sim-1", type="led", data={"index": 1, "rgb": [1, 0, 0]})
    info = yaml.safe_load((directory / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    files = info["relative_file_paths"]
    assert sorted(p.name for p in directory.glob("*.mcap")) == sorted(files)
    numbers = [int(name.rsplit("_", 1)[1].split(".")[0]) for name in files]
    assert numbers[0] > 0, "the oldest files were pruned"
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    assert sum((directory / name).stat().st_size for name in files) <= 65536 + 16384 + 8192
    by_log = {round(p["recv_stamp"] * 1e9): p for p in pushed}
    counts: dict[str, int] = {}
    commands = []
    compared = 0
    with AnyReader([directory]) as reader:
        for connection, timestamp, raw in reader.messages():
            counts[connection.topic] = counts.get(connection.topic, 0) + 1
            decoded = reader.deserialize(raw, connection.msgtype)
            if connection.topic == "/sim_1/state" and timestamp in by_log:
                msg = typesupport.for_bus_type(by_log[timestamp]["type"]).msg
                assert _from_object(msg, decoded) == _as_cdr(msg, by_log[timestamp]["data"])
                compared += 1
            elif connection.topic == "/_gateway/command":
                commands.append(json.loads(decoded.data_json))  # type: ignore[attr-defined]
    assert compared > 100, compared
    assert commands == [{"index": 1, "rgb": [1, 0, 0]}]
    by_topic = {t["topic_metadata"]["name"]: t["message_count"] for t in info["topics_with_message_count"]}
    assert by_topic == counts
    assert counts["/_gateway/device"] >= len(files)  # each file starts with the availability of every device
    assert counts["/_gateway/command_result"] == 1


def _as_cdr(msg: MsgType, plain: dict[str, Any]) -> dict[str, Any]:
    """The native face's plain value as CDR holds it: a float32 field's values rounded to float32."""
    out: dict[str, Any] = {}
    for field in msg.fields:
        nested = field.type.nested

        def one(item: Any, nested: MsgType | None = nested, base: str = field.type.base) -> Any:
            if nested is not None:
                return _as_cdr(nested, item)
            return float(np.float32(item)) if base == "float32" else item

        def walk(item: Any, depth: int) -> Any:
            return [walk(element, depth - 1) for element in item] if depth else one(item)

        value = plain[field.key]
        out[field.key] = walk(value, len(field.type.inner) + (1 if field.type.array else 0))
    return out


async def test_hwgateway_record_format_ros2_refuses_an_existing_bag_before_connecting(tmp_path: Path) -> None:
    from gateway.record import EXIT_BAD_FILE
    from hwgateway.recorder import RecordError, RecordOptions, record

    (tmp_path / "taken").mkdir()
    options = RecordOptions(output=str(tmp_path / "taken"), url="ws://127.0.0.1:9/ws", format="ros2")
    with pytest.raises(RecordError) as refused:  # the port is never asked: the output is checked first
        await record(options)
    assert refused.value.exit_code == EXIT_BAD_FILE
    assert "it exists already" in str(refused.value)
