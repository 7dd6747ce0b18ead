"""`hwgateway record` / `replay`: the demo recorded, read by two independent readers, killed, replayed."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import websockets
from mcap.reader import make_reader

from tests.harness import WsClient, demo_config, free_port, gateway_config, start_demo, start_gateway
from tests.inprocess import start_in_process

NODE_READER = Path(__file__).parent / "node" / "mcap"
RECORDED_TOPICS = ("wiimote-demo/state", "sim-lamp/state")


async def hwgateway(*args: str, timeout: float = 30.0, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run `python -m gateway ARGS` (with `env` added to the environment); its exit code, stdout and stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def node_read(path: Path) -> dict[str, Any]:
    """The summary the npm @mcap/core reader prints (tests/node/mcap; `make test` runs `npm ci` there)."""
    assert (NODE_READER / "node_modules" / "@mcap" / "core").is_dir(), "run `npm ci` in tests/node/mcap"
    done = subprocess.run(["node", "read_mcap.mjs", str(path)], cwd=NODE_READER, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


def python_read(path: Path) -> tuple[dict[str, int], list[tuple[str, int, int, int, bytes]], dict[str, Any]]:
    """Per-topic counts, messages in log-time order (topic, log, publish, sequence, data), and the reader."""
    with path.open("rb") as file:
        reader = make_reader(file)
        summary = reader.get_summary()
        assert summary is not None
        assert summary.statistics is not None
        messages = [
            (channel.topic, message.log_time, message.publish_time, message.sequence, message.data)
            for _, channel, message in reader.iter_messages(log_time_order=True)
        ]
        channels = {
            channel.topic: (channel.message_encoding, summary.schemas.get(channel.schema_id))
            for channel in summary.channels.values()
        }
        metadata = {m.name: m.metadata for m in reader.iter_metadata()}
        counts = {
            summary.channels[cid].topic: count for cid, count in summary.statistics.channel_message_counts.items()
        }
    return counts, messages, {"channels": channels, "metadata": metadata}


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo recorded for 3 s (all topics, small chunks so there are several)."""
    tmp = tmp_path_factory.mktemp("record")
    path = tmp / "demo.mcap"

    async def record() -> None:
        demo = await start_in_process(tmp, demo_config(tmp))
        try:
            await demo.until_connected()  # every device publishes from the recording's first second
            url = f"ws://127.0.0.1:{demo.http_port}/ws"
            code, out, err = await hwgateway("record", "-o", str(path), "--url", url, "--duration", "3",
                                             "--chunk-size", "16384")  # fmt: skip
            assert code == 0, err
            assert " 0 dropped" in out, out
        finally:
            await demo.stop()

    asyncio.run(record())
    return path


def test_both_readers_see_every_channel_schema_and_message_in_log_time_order(recording: Path) -> None:
    counts, messages, info = python_read(recording)
    log_times = [m[1] for m in messages]
    assert log_times == sorted(log_times)
    assert sum(counts.values()) == len(messages) > 500
    # every demo device is there, each topic a json channel with its jsonschema
    for topic in ("sim-pad/state", "sim-lamp/state", "wiimote-demo/state", "gamepad-demo/state", "arm-demo/base"):
        assert counts.get(topic, 0) > 0, topic
    for topic, (encoding, schema) in info["channels"].items():
        assert encoding == "json"
        assert schema is not None, topic
        assert schema.encoding == "jsonschema", topic
        assert json.loads(schema.data)["type"] == "object"
    assert counts["_gateway/device"] >= 6  # one availability message per demo device at least
    devices = json.loads(info["metadata"]["hwgateway"]["devices"])
    assert {d["id"] for d in devices} >= {"sim-pad", "wiimote-demo"}
    assert info["metadata"]["hwgateway"]["gateway_version"]
    # sequence = the bus's seq, one more per sample on a topic (more when the gateway skipped samples
    # for this client while it fell behind, newest wins: seen on a loaded host); publish time = the
    # device stamp
    pad = [m for m in messages if m[0] == "sim-pad/state"]
    assert all(b[3] > a[3] for a, b in itertools.pairwise(pad))
    assert sum(b[3] == a[3] + 1 for a, b in itertools.pairwise(pad)) >= len(pad) // 2
    first = json.loads(pad[-1][4])
    stamp = first["timestamp"]["sec"] * 10**9 + first["timestamp"]["nanosec"]
    assert abs(pad[-1][2] - stamp) < 1_000  # the same reading of the sim's clock: only rounding to ns apart

    node = node_read(recording)
    assert node["ordered"]
    assert node["decodeErrors"] == 0
    assert node["total"] == len(messages) == node["statistics"]["messageCount"]
    assert {topic: c["count"] for topic, c in node["channels"].items()} == counts
    for topic, channel in node["channels"].items():
        assert (channel["messageEncoding"], channel["schemaEncoding"]) == ("json", "jsonschema"), topic
    assert node["compression"] == ["zstd"]
    assert "gateway_version" in node["metadata"]["hwgateway"]


async def test_a_killed_recorder_leaves_a_file_readable_to_its_last_chunk(tmp_path: Path) -> None:
    demo = await start_in_process(tmp_path, demo_config(tmp_path))
    path = tmp_path / "killed.mcap"
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway", "record", "-o", str(path), "--chunk-size", "8192",
            "--url", f"ws://127.0.0.1:{demo.http_port}/ws", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        async with asyncio.timeout(20):
            # Until several 8 KiB chunks are written: at 30 kB the whole chunks held 100-135 messages
            # (the first ones hold every channel's schema and latest sample), too near the bound below.
            while not path.exists() or path.stat().st_size < 60_000:  # noqa: ASYNC110 - another process writes it
                await asyncio.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    finally:
        await demo.stop()
    code, out, err = await hwgateway("record", "--recover", str(path))
    assert code == 0, err
    assert "incomplete" in out, out
    assert "last whole chunk" in out, out
    recovered = int(out.splitlines()[1].split()[0])
    assert recovered > 100
    fixed = tmp_path / "fixed.mcap"
    code, out, err = await hwgateway("record", "--recover", str(path), "-o", str(fixed))
    assert code == 0, err
    assert "repaired copy" in out, out
    _, messages, _ = python_read(fixed)
    assert len(messages) == recovered
    assert node_read(fixed)["total"] == recovered


def last_chunk_middle(data: bytes) -> int:
    """The offset of the middle of the last Chunk record's compressed records (MCAP: opcode 0x06)."""
    position, chunks = 8, []  # after the magic; then records of opcode (1 byte), length (u64), body
    while position + 9 <= len(data):
        opcode, length = data[position], int.from_bytes(data[position + 1 : position + 9], "little")
        body = position + 9
        if opcode == 0x06:
            # Chunk: start and end time, uncompressed size (u64 each), CRC (u32), compression (string), records.
            name_length = int.from_bytes(data[body + 28 : body + 32], "little")
            records = body + 32 + name_length + 8
            chunks.append((body + length - records, records))
        position = body + length
    assert len(chunks) > 1, "the recording needs a chunk before the damaged one"
    size, start = chunks[-1]
    return start + size // 2


async def test_bad_files_are_refused_with_clear_errors(tmp_path: Path, recording: Path) -> None:
    text = tmp_path / "notes.mcap"
    text.write_text("not an mcap file\n" * 10)
    for args in (["record", "--recover", str(text)], ["replay", str(text)]):
        code, _, err = await hwgateway(*args)
        assert code == 3, err
        assert "not a readable MCAP file" in err, err
        assert "InvalidMagic" in err, err
    code, _, err = await hwgateway("replay", str(tmp_path / "missing.mcap"))
    assert code == 3, err
    assert "No such file" in err, err
    good = recording.read_bytes()
    corrupt = tmp_path / "corrupt.mcap"
    middle = last_chunk_middle(good)  # not the file's middle: that may fall in an index no one reads
    corrupt.write_bytes(good[:middle] + bytes(b ^ 0xFF for b in good[middle : middle + 64]) + good[middle + 64 :])
    code, out, err = await hwgateway("record", "--recover", str(corrupt))
    assert code == 0, err
    assert "incomplete" in out, out
    assert 0 < int(out.splitlines()[1].split()[0]) < sum(python_read(recording)[0].values())
    truncated = tmp_path / "truncated.mcap"
    truncated.write_bytes(good[:40])  # the magic and part of the header: no chunk at all
    code, _, err = await hwgateway("record", "--recover", str(truncated))
    assert code == 3, err
    assert "not a readable MCAP file" in err, err
    code, _, err = await hwgateway("replay", str(recording), "--topics", "nothing/**")
    assert code == 5, err
    assert "no recorded topic matches nothing/**" in err, err


async def test_record_refuses_a_pattern_matching_nothing_and_an_absent_gateway(tmp_path: Path) -> None:
    code, _, err = await hwgateway(
        "record", "-o", str(tmp_path / "x.mcap"), "--url", f"ws://127.0.0.1:{free_port()}/ws"
    )
    assert code == 4, err
    assert "cannot reach the gateway" in err, err
    gateway = await start_in_process(tmp_path, gateway_config(tmp_path))
    try:
        url = f"ws://127.0.0.1:{gateway.http_port}/ws"
        code, _, err = await hwgateway("record", "-o", str(tmp_path / "y.mcap"), "--url", url, "--topics", "nope/*")
        assert code == 5, err
        assert "no topic matches nope/*" in err, err
        assert not (tmp_path / "y.mcap").exists()
    finally:
        await gateway.stop()


async def test_record_honours_hwgw_url_and_takes_the_url_forms_of_the_other_commands(tmp_path: Path) -> None:
    gateway = await start_in_process(tmp_path, gateway_config(tmp_path))
    try:
        await gateway.until_connected()
        env = {"HWGW_URL": f"unix:{gateway.unix_socket}"}
        forms = {
            "unix.mcap": ((), env),  # no --url: HWGW_URL, as `hwgateway sub` and the others
            "tcp.mcap": (("--url", f"tcp://127.0.0.1:{gateway.msgpack_port}"), env),
            "http.mcap": (("--url", f"http://127.0.0.1:{gateway.http_port}"), None),  # its /ws
        }
        for name, (url, environment) in forms.items():
            code, out, err = await hwgateway(
                "record",
                "-o",
                str(tmp_path / name),
                *url,
                "--duration",
                "1",
                "--topics",
                "sim-1/state",
                env=environment,
            )
            assert code == 0, (name, err)
            assert " 0 dropped" in out, out
            counts, messages, _ = python_read(tmp_path / name)
            assert counts["sim-1/state"] > 0, (name, counts)
            data = json.loads(next(m[4] for m in messages if m[0] == "sim-1/state"))
            assert len(data["axes"]) == 6, data
        code, _, err = await hwgateway("record", "-o", str(tmp_path / "x.mcap"), "--url", "ftp://x")
        assert code == 2, err
        assert "the scheme must be ws, wss, http, tcp or unix" in err
    finally:
        await gateway.stop()


async def test_record_says_when_its_own_file_cannot_be_written(tmp_path: Path) -> None:
    gateway = await start_in_process(tmp_path, gateway_config(tmp_path))
    try:
        url = f"ws://127.0.0.1:{gateway.http_port}/ws"
        absent = tmp_path / "absent" / "x.mcap"
        for output, reason in ((absent, f"no folder {absent.parent}"), (tmp_path, "it is a folder")):
            code, _, err = await hwgateway("record", "-o", str(output), "--url", url, "--duration", "1")
            assert code == 3, err
            assert err == f"hwgateway record: cannot write {output}: {reason}\n"  # not "cannot reach the gateway"
    finally:
        await gateway.stop()


@pytest.fixture(scope="module")
def topics_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two steady demo topics recorded for 2 s (no stale latest values: replay timing starts at once)."""
    tmp = tmp_path_factory.mktemp("topics")
    path = tmp / "topics.mcap"

    async def record() -> None:
        demo = await start_demo(tmp, free_port(), free_port())
        try:
            url = f"ws://127.0.0.1:{demo.http_port}/ws"
            code, _, err = await hwgateway("record", "-o", str(path), "--url", url, "--duration", "2",
                                           "--topics", *RECORDED_TOPICS)  # fmt: skip
            assert code == 0, err
        finally:
            await demo.stop()

    asyncio.run(record())
    return path


#: One replayed sample: its topic and its data.
Sample = tuple[str, Any]


async def _replayed(tmp_path: Path, path: Path, speed: float, recorded: list[Sample]) -> list[Sample]:
    """Run a gateway with a replay device of `path`; the samples a WebSocket client receives.

    It reads until the last recorded sample of every topic has arrived: a client that falls behind
    (a loaded machine) gets each topic's newest sample, not every one (docs/protocol.md, coalescing).
    """
    device = f'[devices.player]\nkind = "replay"\nfile = {json.dumps(str(path))}\nspeed = {speed}\ndelay_s = 1.5\n'
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, devices=device))
    last = {topic: data for topic, data in recorded}
    received: list[Sample] = []
    try:
        async with websockets.connect(f"ws://127.0.0.1:{gateway.http_port}/ws", max_size=None) as ws:
            client = await WsClient(ws).start()
            await client.ok("subscribe", topics=["**"])
            # The player opens its file in a thread before it says connected (then waits delay_s to play):
            # a command sent before that is refused as "connecting", not as a replay.
            await client.until_connected(["player"])
            error = await client.error("command", device="player", type="led", data={"index": 0})
            assert error["code"] == "unavailable", error
            assert "replays topics.mcap" in error["message"], error
            waiting = dict(last)
            async with asyncio.timeout(60):
                while waiting:
                    message = await client.recv(30)
                    if message["op"] == "state":
                        received.append((message["topic"], message["data"]))
                        if last.get(message["topic"]) == message["data"]:
                            waiting.pop(message["topic"], None)
            assert not [m for m in client.pushed if m["op"] == "state"], "a state arrived before the subscribe result"
    finally:
        await gateway.stop()
    return received


def _in_order_within(received: list[Sample], recorded: list[Sample]) -> bool:
    """Whether each topic's received samples are its recorded ones, some left out, none added or reordered.

    Per topic: a client that falls behind is sent each topic's newest sample, topic by topic, so the
    order between topics is not the recording's then.
    """
    for topic in {topic for topic, _ in received}:
        remaining = iter(data for name, data in recorded if name == topic)
        if not all(any(data == candidate for candidate in remaining) for name, data in received if name == topic):
            return False
    return True


def _recorded_samples(path: Path) -> list[Sample]:
    _, recorded, _ = python_read(path)
    return [(topic, json.loads(data)) for topic, _, _, _, data in recorded if topic != "_gateway/device"]


async def test_replay_at_speed_10_delivers_the_recorded_messages_in_the_same_order(
    tmp_path: Path, topics_recording: Path
) -> None:
    recorded = _recorded_samples(topics_recording)
    received = await _replayed(tmp_path, topics_recording, 10.0, recorded)
    # (How close to a tenth of the recorded span it plays, and how closely speed 1 keeps the
    # recorded timing, against a bare loop's timers, is bench/replay_timing.py's measure.)
    assert _in_order_within(received, recorded), received
    assert {topic for topic, _ in received} == {topic for topic, _ in recorded}


async def test_replay_at_speed_1_delivers_the_recorded_topics_in_order(tmp_path: Path, topics_recording: Path) -> None:
    recorded = _recorded_samples(topics_recording)
    received = await _replayed(tmp_path, topics_recording, 1.0, recorded)
    assert _in_order_within(received, recorded), received


async def test_demo_record_writes_a_complete_file_at_ctrl_c(tmp_path: Path) -> None:
    path = tmp_path / "first.mcap"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "demo", "--http-port", str(free_port()), "--msgpack-port", str(free_port()),
        "--unix-socket", str(tmp_path / "demo.sock"), "--log-format", "json", "--record", str(path),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        async with asyncio.timeout(20):
            while not path.exists() or path.stat().st_size < 100:  # noqa: ASYNC110 - another process writes it
                await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 20)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    assert f"{path}: " in out.decode()
    counts, messages, _ = python_read(path)  # a complete file: its summary is there
    assert counts["sim-pad/state"] > 10
    assert len(messages) == sum(counts.values())


def test_the_compressions_the_command_offers_are_the_ones_the_sink_writes() -> None:
    from gateway.record import COMPRESSION_NAMES
    from gateway.record.sink import COMPRESSIONS

    assert list(COMPRESSION_NAMES) == sorted(COMPRESSIONS)
