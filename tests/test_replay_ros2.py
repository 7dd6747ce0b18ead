"""ros2 bags read back: ours and rosbags' replay as devices; hostile bags refused; a killed one recovered.

The replay reads each CDR message with the shared type layer's decoder and plays it as the JSON
the bus type's plain form is: equal to the value the native face sent. A bag written by `rosbags`
(not by us: no `hwgateway_*` channel metadata, its own RIHS01 hashes) plays through
`kind = "replay"` as devices named after its topics. `hwgateway record --format ros2`, killed,
leaves a bag that `hwgateway record --recover` reads and repairs (metadata.yaml rebuilt).
"""

from __future__ import annotations

import asyncio
import itertools
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import websockets
import yaml  # type: ignore[import-untyped]
from mcap.writer import Writer as McapWriter
from rosbags.highlevel import AnyReader
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer as BagWriter
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from gateway.messages import REGISTRY, from_plain, to_plain
from gateway.record.bag import metadata_yaml
from gateway.record.channels import COMMAND_TOPIC, DEVICE_TOPIC, RESULT_TOPIC
from gateway.record.recover import BadRecording, read, run
from gateway.record.replay_source import load_recording, playable
from gateway.ros import typesupport
from tests.harness import WsClient, gateway_config
from tests.inprocess import running_gateway, start_in_process
from tests.ros2_values import example, to_rosbags
from tests.test_record import hwgateway
from tests.test_record_ros2 import COMMAND, DEVICE_EVENT, FAST_SIM, RESULT, write_every_type

FIRST_NS = 1_700_000_000 * 10**9
STATE = "creos_messages/ControllerState"
FEEDBACK = "thymio_msgs/Led"


@pytest.fixture(scope="module")
def our_bag(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("ours") / "every_type"
    return path, write_every_type(path)


def test_our_bag_loads_every_message_as_the_plain_value_sent(our_bag: tuple[Path, dict[str, Any]]) -> None:
    path, sent = our_bag
    keep = frozenset({DEVICE_TOPIC, COMMAND_TOPIC, RESULT_TOPIC})
    recording = load_recording(path, keep=keep)
    assert recording.refused == {}
    got: dict[str, list[Any]] = {}
    types: dict[str, str] = {}
    for index in range(len(recording)):
        message = recording.message(index)
        got.setdefault(message.topic, []).append(orjson.loads(message.data))
        if not message.topic.startswith("_gateway/"):
            types[message.topic] = message.type
    derived = 1  # the Joy of the controller state is left out: it is derived, not recorded
    assert len(got) == len(sent) - derived + 3
    for ros_topic, (msg, values) in sent.items():
        if ros_topic == "/pad/joy":
            continue
        (bus_topic,) = [topic for topic, type_ in types.items() if typesupport.for_bus_type(type_).msg is msg]
        assert got[bus_topic] == values, bus_topic
    assert got[DEVICE_TOPIC] == [DEVICE_EVENT]
    assert got[COMMAND_TOPIC] == [COMMAND]
    assert got[RESULT_TOPIC] == [RESULT]
    assert playable(path) == len(load_recording(path))


def _store_of(*bus_types: str) -> Any:
    """A rosbags typestore of these bus types, parsed by rosbags from our `.msg` texts."""
    store = get_typestore(Stores.EMPTY)
    types: dict[str, Any] = {}
    for bus_type in bus_types:
        support = typesupport.for_bus_type(bus_type)
        for msg in [support.msg, *support.msg.dependencies()]:
            types.update(get_types_from_msg(typesupport.for_class(msg.cls).definition, msg.name))
    store.register(types)
    return store


def _valid(bus_type: str, seed: int) -> dict[str, Any]:
    """A value of `bus_type` the bus takes (in its ranges), varied by `seed`."""
    if bus_type == STATE:
        axes = [round(seed / 64 - 0.25, 6), -0.5, 1.0]
        return {"timestamp": {"sec": 1_700_000_000 + seed, "nanosec": seed * 1000}, "axes": axes, "buttons": [1, 0, 2]}
    return {"id": seed % 7, "values": [seed / 64, 0.5]}


def rosbags_bag(path: Path, count: int = 40) -> dict[str, list[dict[str, Any]]]:
    """A bag written by rosbags' own writer (v9, MCAP): a controller state and a Thymio LED; {bus topic: values}."""
    store = _store_of(STATE, FEEDBACK)
    sent: dict[str, list[dict[str, Any]]] = {}
    with BagWriter(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        for ros_topic, bus_type in (("/pad/state", STATE), ("/thymio/led", FEEDBACK)):
            msg = typesupport.for_bus_type(bus_type).msg
            connection = writer.add_connection(ros_topic, msg.name, typestore=store)
            values = sent.setdefault(ros_topic.removeprefix("/"), [])
            for seed in range(count):
                value = _valid(bus_type, seed)
                values.append(value)
                raw = store.serialize_cdr(to_rosbags(msg, value, store.types), msg.name)
                writer.write(connection, FIRST_NS + seed * 10_000_000 + len(values), bytes(raw))
    return sent


def test_a_bag_rosbags_wrote_loads_and_replays_as_devices(tmp_path: Path) -> None:
    sent = rosbags_bag(tmp_path / "theirs")
    recording = load_recording(tmp_path / "theirs")
    assert recording.refused == {}
    got: dict[str, list[Any]] = {}
    for index in range(len(recording)):
        message = recording.message(index)
        got.setdefault(message.topic, []).append(orjson.loads(message.data))
    assert got == sent
    for topic, values in sent.items():  # each a valid bus message
        info = REGISTRY[recording.topics[[t for t, _ in recording.topics].index(topic)][1]]
        assert all(to_plain(from_plain(info.cls, value)) == value for value in values)
    assert {topic: type_ for topic, type_ in recording.topics} == {"pad/state": STATE, "thymio/led": FEEDBACK}


async def test_kind_replay_plays_a_bag_rosbags_wrote(tmp_path: Path) -> None:
    sent = rosbags_bag(tmp_path / "theirs")
    device = f'[devices.player]\nkind = "replay"\nfile = "{tmp_path / "theirs"}"\nprefix = "r-"\nloop = true\n'
    config = gateway_config(tmp_path, devices=device)
    async with (
        running_gateway(tmp_path, config) as gateway,
        websockets.connect(f"ws://127.0.0.1:{gateway.http_port}/ws", max_size=None) as ws,
    ):
        client = await WsClient(ws).start()
        await client.ok("subscribe", topics=["r-pad/state", "r-thymio/led"])
        # The player lists its devices once it has read the bag (after it is itself connected).
        async with asyncio.timeout(30):
            while True:
                listed = {d["id"] for d in (await client.ok("list_devices"))["devices"]}
                if {"r-pad", "r-thymio"} <= listed:
                    break
                await asyncio.sleep(0.05)
        received: dict[str, list[Any]] = {}
        async with asyncio.timeout(30):
            while min((len(values) for values in received.values()), default=0) < 10 or len(received) < 2:
                message = await client.recv(10)
                if message["op"] == "state":
                    received.setdefault(message["topic"], []).append(message["data"])
    assert set(received) == {"r-pad/state", "r-thymio/led"}
    for topic, values in received.items():
        recorded = sent[topic.removeprefix("r-")]
        indexes = [recorded.index(value) for value in values]  # each one a value sent
        steps = {(later - earlier) % len(recorded) for earlier, later in itertools.pairwise(indexes)}
        assert steps == {1}, (topic, indexes)  # in order, looping from the last to the first


def _mcap_file(path: Path, topic: str, ros_type: str, schema: bytes, data: bytes, hash_: str = "") -> None:
    with path.open("wb") as file:
        writer = McapWriter(file)
        writer.start(profile="ros2", library="test")
        schema_id = writer.register_schema(ros_type, "ros2msg", schema)
        metadata = {"topic_type_hash": hash_} if hash_ else {}
        channel = writer.register_channel(topic, "cdr", schema_id, metadata)
        writer.add_message(channel, log_time=FIRST_NS, data=data, publish_time=FIRST_NS)
        writer.finish()  # type: ignore[no-untyped-call]


def _good(directory: Path) -> Path:
    """A one-file bag written by rosbags (its metadata.yaml included)."""
    rosbags_bag(directory, count=3)
    return directory


def _metadata(directory: Path, text: str) -> Path:
    (directory / "metadata.yaml").write_text(text)
    return directory


def _edit_metadata(directory: Path, **changes: Any) -> Path:
    document = yaml.safe_load((directory / "metadata.yaml").read_text())
    document["rosbag2_bagfile_information"].update(changes)
    return _metadata(directory, yaml.safe_dump(document))


def hostile(name: str, directory: Path) -> Path:
    """A bag directory made bad in one way."""
    if name == "empty":
        directory.mkdir()
        return directory
    if name == "not-yaml":
        return _metadata(_good(directory), "rosbag2_bagfile_information: [unclosed\n")
    if name == "no-information":
        return _metadata(_good(directory), "something: else\n")
    if name == "aliases":
        laughs = "a: &a [x, x, x, x, x, x, x, x]\n" + "".join(
            f"{chr(98 + n)}: &{chr(98 + n)} [*{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}]\n"
            for n in range(8)
        )
        return _metadata(_good(directory), laughs + "rosbag2_bagfile_information: *i\n")
    if name == "huge-metadata":
        return _metadata(_good(directory), "# " + "x" * (5 * 2**20) + "\n")
    if name == "sqlite3":
        return _edit_metadata(_good(directory), storage_identifier="sqlite3")
    if name == "compressed":
        return _edit_metadata(_good(directory), compression_mode="FILE", compression_format="zstd")
    if name == "outside":
        return _edit_metadata(_good(directory), relative_file_paths=["../../etc/passwd"])
    if name == "missing-file":
        return _edit_metadata(_good(directory), relative_file_paths=["gone.mcap"])
    if name == "truncated":
        bag = _good(directory)
        (mcap,) = bag.glob("*.mcap")
        mcap.write_bytes(mcap.read_bytes()[:12])
        return bag
    if name == "not-mcap":
        bag = _good(directory)
        (mcap,) = bag.glob("*.mcap")
        mcap.write_bytes(b"rosbag2 sqlite? no: just text\n" * 50)
        return bag
    if name == "bad-cdr":
        directory.mkdir()
        support = typesupport.for_bus_type(STATE)
        data = b"\x00\x01\x00\x00" + b"\xff" * 7  # shorter than any ControllerState
        _mcap_file(directory / "bad_0.mcap", "/pad/state", support.name, support.schema.encode(), data, support.hash)
        return directory
    raise AssertionError(name)


REFUSALS = {
    "empty": "no metadata.yaml and no .mcap file",
    "not-yaml": "not YAML",
    "no-information": "no rosbag2_bagfile_information",
    "aliases": "YAML aliases",
    "huge-metadata": "more than 4194304 bytes",
    "sqlite3": "only MCAP bags are read",
    "compressed": "compressed bags are not read",
    "outside": "lies outside the bag",
    "missing-file": "is missing",
    "truncated": "not a readable MCAP file",
    "not-mcap": "not a readable MCAP file",
    "bad-cdr": "is no CDR creos_messages/msg/ControllerState",
}


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_a_hostile_bag_is_refused_with_a_clear_error(tmp_path: Path, name: str) -> None:
    directory = hostile(name, tmp_path / name)
    with pytest.raises(BadRecording) as refused:
        load_recording(directory)
    assert REFUSALS[name] in str(refused.value), refused.value
    assert str(directory) in str(refused.value)


def test_a_channel_of_another_type_or_hash_is_left_out_with_its_reason(tmp_path: Path) -> None:
    directory = tmp_path / "mixed"
    directory.mkdir()
    support = typesupport.for_bus_type(STATE)
    value = support.encode(example(support.msg))
    _mcap_file(directory / "a_0.mcap", "/pad/state", support.name, support.schema.encode(), value, "RIHS01_" + "0" * 64)
    _mcap_file(directory / "a_1.mcap", "/cam/image", "sensor_msgs/msg/Image", b"uint32 height", b"\x00\x01\x00\x00")
    recording = load_recording(directory)
    assert len(recording) == 0
    assert "is not the gateway's" in recording.refused["/pad/state"]
    assert "is no type of the gateway" in recording.refused["/cam/image"]


def _readable(path: Path) -> int:
    """Messages readable so far in a file another process writes."""
    try:
        return read(path).messages
    except (BadRecording, FileNotFoundError):
        return 0


async def test_a_killed_ros2_recording_is_recovered_with_its_metadata_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = await start_in_process(tmp_path, gateway_config(tmp_path, devices=FAST_SIM))
    bag = tmp_path / "killed"
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway", "record", "--format", "ros2", "-o", str(bag), "--chunk-size", "4096",
            "--url", f"ws://127.0.0.1:{demo.http_port}/ws", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        mcap = bag / "killed_0.mcap"
        async with asyncio.timeout(30):
            while _readable(mcap) < 30:  # noqa: ASYNC110 - until a few chunks are written (another process)
                await asyncio.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    finally:
        await demo.stop()
    left = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert left["message_count"] == 0  # written when the file started: its messages are not counted
    assert run(str(bag), None) == 0
    assert "incomplete" in capsys.readouterr().out
    fixed = tmp_path / "fixed"
    code, out, err = await hwgateway("record", "--recover", str(bag), "-o", str(fixed))
    assert code == 0, err
    recovered = int(out.splitlines()[-2].split(", ")[-1].split()[0])
    assert recovered > 20, out
    info = yaml.safe_load((fixed / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["message_count"] == recovered
    counts: dict[str, int] = {}
    with AnyReader([fixed]) as reader:  # an independent reader opens the repaired bag and decodes it all
        for connection, _, raw in reader.messages():
            reader.deserialize(raw, connection.msgtype)
            counts[connection.topic] = counts.get(connection.topic, 0) + 1
    assert sum(counts.values()) == recovered
    assert {t["topic_metadata"]["name"]: t["message_count"] for t in info["topics_with_message_count"]} == counts
    assert counts["/sim_1/state"] > 10, counts
    assert len(load_recording(fixed)) > 10  # and it replays


def test_metadata_yaml_quotes_what_it_holds() -> None:
    text = metadata_yaml([], {"hwgateway.devices": 'a "quoted"\nline: *not an alias'})
    info = yaml.safe_load(text)["rosbag2_bagfile_information"]
    assert info["custom_data"] == {"hwgateway.devices": 'a "quoted"\nline: *not an alias'}
    assert info["relative_file_paths"] == []
