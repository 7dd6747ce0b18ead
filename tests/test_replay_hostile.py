"""Recordings from anywhere through the real daemon: odd and hostile MCAP files never hang it.

Each crafted file goes through `kind = "replay"`, `hwgateway replay` and `record --recover`: a clear
error or a correct replay, /healthz answering throughout, SIGTERM exiting 0 with safe states.
"""

from __future__ import annotations

import asyncio
import json
import signal
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import websockets

from gateway.record.replay_source import MAX_REPLAYED_DEVICES
from tests import mcap_files as f
from tests.harness import SIM_DEVICE, RunningGateway, WsClient, free_port, gateway_config, health_faults, start_gateway
from tests.test_record import hwgateway

FIRST_NS = 1_700_000_000 * 10**9
STOP_TIMEOUT_S = 5.0


def one_message(path: Path) -> Path:
    return f.write(path, f.channel(1, "pad/state"), f.message(1, FIRST_NS))


def instant(path: Path) -> Path:
    """Two messages 1 ns apart: a span of almost nothing."""
    return f.write(path, f.channel(1, "pad/state"), f.message(1, FIRST_NS), f.message(1, FIRST_NS + 1))


def odd_topics(path: Path) -> Path:
    bad = (f.channel(2, "r-sim-pad/bad topic"), f.channel(3, "pad/" + "x" * 300))
    samples = [f.message(c, FIRST_NS + n * 10_000_000) for n in range(20) for c in (1, 2, 3)]
    return f.write(path, f.channel(1, "pad/state"), *bad, f.chunk(b"".join(samples)))


def dense(path: Path) -> Path:
    """About 9 kB: 300 messages 1 ms apart (a 0.3 ms turn at speed 1000)."""
    records = f.channel(1, "pad/state") + b"".join(f.messages(1, 300, 1_000_000))
    return f.write(path, f.chunk(records))


def crowd(path: Path) -> Path:
    """5,002 recorded devices listed, one topic each."""
    devices = json.dumps([{"id": f"dev{n}", "kind": "sim"} for n in range(5002)])
    channels = b"".join(f.channel(n + 1, f"dev{n}/state") for n in range(5002))
    samples = b"".join(f.message(n + 1, FIRST_NS + n * 1000) for n in range(5002))
    return f.write(path, f.metadata("hwgateway", {"devices": devices}), f.chunk(channels + samples))


def with_damage(path: Path, damage: bytes) -> Path:
    """Ten good messages in a chunk, then `damage`."""
    good = f.chunk(f.channel(1, "pad/state") + b"".join(f.messages(1, 10, 1_000_000)))
    path.write_bytes(f.MAGIC + f.header() + good + damage)
    return path


CRAFTED: dict[str, Callable[[Path], Path]] = {
    "one-message": one_message,
    "instant": instant,
    "odd-topics": odd_topics,
    "dense": dense,
    "crowd": crowd,
    "bomb-declared": lambda p: with_damage(p, f.bomb_chunk(300 * 2**20, 300 * 2**20)),
    "bomb-liar": lambda p: with_damage(p, f.bomb_chunk(300 * 2**20, 1000)),
    "claims-gigabytes": lambda p: with_damage(p, f.bomb_chunk(1000, 2**34)),
    "bad-crc": lambda p: with_damage(p, f.chunk(f.message(1, FIRST_NS + 10**9), crc=1)),
    "past-the-end": lambda p: with_damage(p, struct.pack("<BQ", 0x06, 2**40) + bytes(100)),
}
#: Messages each crafted file plays (the good ones before any damage).
PLAYS = {"one-message": 1, "instant": 2, "odd-topics": 20, "dense": 300, "crowd": MAX_REPLAYED_DEVICES}


async def health(port: int) -> tuple[int, dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{port}/healthz", timeout=aiohttp.ClientTimeout(total=10)) as reply,
    ):
        body: dict[str, Any] = await reply.json()
        return reply.status, body


async def healthy_for(gateway: RunningGateway, seconds: float) -> int:
    """Ask /healthz every 0.2 s for `seconds`; each must name no fault (`health_faults`). The answers counted.

    (At least one is asked for: how many fit in the window is the machine's speed, not a bound.)
    """
    answers = 0
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    while loop.time() < until:
        _, body = await health(gateway.http_port)
        assert health_faults(body) == [], body
        answers += 1
        await asyncio.sleep(0.2)
    return answers


async def stop_safely(gateway: RunningGateway) -> None:
    """SIGTERM: exit 0 within STOP_TIMEOUT_S, the sim device in its safe state."""
    assert await gateway.stop(timeout=STOP_TIMEOUT_S) == 0, gateway.logs[-20:]
    safe = {line["device"]: line for line in gateway.logs if line.get("safe_state")}
    assert safe.get("sim-1", {}).get("safe_state") == "ok", gateway.logs[-20:]


def replay_device(name: str, path: Path, **options: Any) -> str:
    lines = [f"[devices.{name}]", 'kind = "replay"', f"file = {json.dumps(str(path))}"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in options.items()]
    return "\n".join(lines) + "\n"


def failures(gateway: RunningGateway, device: str) -> list[dict[str, Any]]:
    return [line for line in gateway.logs if str(line.get("event", "")).startswith(f"device {device} failed")]


async def test_every_crafted_file_as_a_replay_device_plays_or_is_refused_and_the_daemon_answers(
    tmp_path: Path,
) -> None:
    devices = SIM_DEVICE
    for n, (name, make) in enumerate(CRAFTED.items()):
        path = make(tmp_path / f"{name}.mcap")
        devices += replay_device(
            f"player-{n}", path, prefix=f"p{n}-", loop=True, speed=1000.0 if name == "dense" else 1.0
        )
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, devices=devices))
    try:
        assert await healthy_for(gateway, 3.0) >= 1
        async with websockets.connect(f"ws://127.0.0.1:{gateway.http_port}/ws", max_size=None) as ws:
            client = await WsClient(ws).start()
            listed = {d["id"]: d for d in (await client.ok("list_devices"))["devices"]}
        for n, name in enumerate(CRAFTED):
            player = listed[f"player-{n}"]
            assert player["status"] == "connected", (name, player)
            assert not failures(gateway, f"player-{n}"), (name, failures(gateway, f"player-{n}"))
        crowd_n = list(CRAFTED).index("crowd")
        replayed = [d for d in listed if d.startswith(f"p{crowd_n}-dev")]
        assert len(replayed) == MAX_REPLAYED_DEVICES, len(replayed)
        said = [line["event"] for line in gateway.logs if "leaves out" in str(line.get("event", ""))]
        assert len(said) == 2, said  # odd topics and the crowd, once each
        assert any("leaves out 2 recorded topics: 'r-sim-pad/bad topic'" in s for s in said), said
        assert any(f"leaves out {5002 - MAX_REPLAYED_DEVICES} recorded topics" in s for s in said), said
        damaged = [
            line["event"] for line in gateway.logs if "before the file's end or damage" in str(line.get("event", ""))
        ]
        assert len(damaged) == 5, damaged  # the five damaged files, once each
        assert any("declares 314572800 uncompressed bytes" in s for s in damaged), damaged
        assert any("CRC mismatch" in s for s in damaged), damaged
        assert await healthy_for(gateway, 1.0) >= 1
    finally:
        await stop_safely(gateway)


async def test_a_one_message_file_looped_replays_it_again_and_again_without_spinning(tmp_path: Path) -> None:
    path = one_message(tmp_path / "one.mcap")
    devices = SIM_DEVICE + replay_device("player", path, loop=True, prefix="replay-")
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, devices=devices))
    try:
        async with websockets.connect(f"ws://127.0.0.1:{gateway.http_port}/ws", max_size=None) as ws:
            client = await WsClient(ws).start()
            await client.ok("subscribe", topics=["replay-pad/state"])
            for _ in range(3):  # the one message, looped
                state = await client.wait_for(lambda m: m["op"] == "state", 10)
                assert state["data"]["last_command"] == "x", state
            assert await healthy_for(gateway, 1.0) >= 1
            assert (await client.ok("ping")) is not None
    finally:
        await stop_safely(gateway)


async def test_a_dense_file_looped_at_speed_1000_leaves_the_loop_to_others(tmp_path: Path) -> None:
    path = dense(tmp_path / "dense.mcap")
    devices = SIM_DEVICE + replay_device("player", path, loop=True, speed=1000.0, prefix="replay-")
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, devices=devices))
    try:
        async with (
            # max_queue=None: samples pile up unread, which must not hold off the closing handshake
            websockets.connect(f"ws://127.0.0.1:{gateway.http_port}/ws", max_size=None, max_queue=None) as watching,
            websockets.connect(f"ws://127.0.0.1:{gateway.http_port}/ws", max_size=None) as other,
        ):
            watcher = await WsClient(watching).start()
            await watcher.ok("subscribe", topics=["replay-pad/state"])
            for _ in range(100):  # the replay plays (a client behind gets the newest sample: not every one)
                await watcher.wait_for(lambda m: m["op"] == "state", 10)
            bystander = await WsClient(other).start()
            for _ in range(10):
                assert await bystander.ok("ping") is not None
                _, body = await health(gateway.http_port)
                assert health_faults(body) == [], body  # the lag's budget: bench/replay_load.py
                await asyncio.sleep(0.1)
    finally:
        await stop_safely(gateway)


async def test_odd_topics_are_left_out_once_and_the_rest_replays_without_restarts(tmp_path: Path) -> None:
    path = odd_topics(tmp_path / "odd.mcap")
    devices = SIM_DEVICE + replay_device("player", path, loop=True, speed=10.0, prefix="replay-")
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, devices=devices))
    try:
        async with websockets.connect(f"ws://127.0.0.1:{gateway.http_port}/ws", max_size=None) as ws:
            client = await WsClient(ws).start()
            await client.ok("subscribe", topics=["replay-pad/**"])
            topics = set()
            for _ in range(45):  # more than one turn of the loop (20 good messages a turn)
                state = await client.wait_for(lambda m: m["op"] == "state", 10)
                topics.add(state["topic"])
            assert topics == {"replay-pad/state"}, topics
        assert not failures(gateway, "player"), failures(gateway, "player")
        said = [line["event"] for line in gateway.logs if "leaves out" in str(line.get("event", ""))]
        assert len(said) == 1, said
        assert "'r-sim-pad/bad topic': not a valid bus topic" in said[0], said
    finally:
        await stop_safely(gateway)


@pytest.fixture(scope="module")
def two_million(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,000,000 messages of one topic at 1 kHz (a 33-minute recording)."""
    return f.many_messages(tmp_path_factory.mktemp("big") / "big.mcap", 2_000_000)


def peak_rss_mib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    raise AssertionError("no VmHWM")


async def test_a_two_million_message_file_loads_while_the_daemon_answers_in_bounded_memory(
    tmp_path: Path, two_million: Path
) -> None:
    devices = SIM_DEVICE + replay_device("player", two_million, prefix="replay-")
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, devices=devices))
    try:
        async with websockets.connect(f"ws://127.0.0.1:{gateway.http_port}/ws", max_size=None) as ws:
            client = await WsClient(ws).start()
            answers = 0
            async with asyncio.timeout(120):
                while True:
                    _, body = await health(gateway.http_port)  # each within 10 s: the loop is not held
                    assert health_faults(body) == [], body
                    answers += 1
                    assert await client.ok("ping") is not None
                    devices_now = {d["id"]: d for d in (await client.ok("list_devices"))["devices"]}
                    if devices_now["player"]["status"] == "connected":
                        break
                    await asyncio.sleep(0.2)
            assert answers >= 2, "the file loads for a while: the daemon answered meanwhile"
            await client.ok("subscribe", topics=["replay-pad/state"])
            await client.wait_for(lambda m: m["op"] == "state", 10)
            assert devices_now["player"]["capabilities"]["duration_s"] == pytest.approx(1999.999)
        assert peak_rss_mib(gateway.proc.pid) < 200  # read as it plays; 920 MiB when every message was an object
    finally:
        await stop_safely(gateway)


async def test_sigterm_while_a_file_loads_exits_at_once(tmp_path: Path, two_million: Path) -> None:
    devices = SIM_DEVICE + replay_device("player", two_million)
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, devices=devices))
    try:
        async with websockets.connect(f"ws://127.0.0.1:{gateway.http_port}/ws", max_size=None) as ws:
            client = await WsClient(ws).start()
            listed = {d["id"]: d for d in (await client.ok("list_devices"))["devices"]}
        assert listed["player"]["status"] != "connected", listed["player"]  # still loading
    finally:
        await stop_safely(gateway)  # the loading thread is abandoned: exit 0 within 5 s


async def test_hwgateway_replay_stops_at_sigterm_while_reading_and_plays_a_looped_one_message_file(
    tmp_path: Path, two_million: Path
) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "replay", str(two_million), "--http-port", str(free_port()),
        "--msgpack-port", "-1", "--unix-socket", str(tmp_path / "r.sock"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    started = await asyncio.wait_for(proc.stderr.readline(), 30)  # not a fixed sleep: a loaded start takes > 1 s
    assert started.decode() == f"hwgateway replay: reading {two_million}\n", started
    proc.send_signal(signal.SIGTERM)  # while reading the file (seconds for 2,000,000 messages)
    out, err = await asyncio.wait_for(proc.communicate(), STOP_TIMEOUT_S)
    assert proc.returncode == 0, err.decode()
    assert "messages of" not in out.decode(), out  # it never got to serving

    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "replay", str(one_message(tmp_path / "one.mcap")), "--loop",
        "--http-port", str(port), "--msgpack-port", "-1", "--unix-socket", str(tmp_path / "r.sock"),
        "--log-format", "json", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(20):
            while b'"listening"' not in await proc.stdout.readline():
                pass
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
            client = await WsClient(ws).start()
            await client.ok("subscribe", topics=["pad/state"])
            for _ in range(3):
                await client.wait_for(lambda m: m["op"] == "state", 10)
        for _ in range(5):
            _, body = await health(port)
            assert health_faults(body) == [], body
            await asyncio.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.communicate(), STOP_TIMEOUT_S)
    assert proc.returncode == 0


@pytest.mark.parametrize("name", list(CRAFTED))
async def test_every_crafted_file_through_recover_and_the_replay_command(tmp_path: Path, name: str) -> None:
    path = CRAFTED[name](tmp_path / f"{name}.mcap")
    code, out, err = await hwgateway("record", "--recover", str(path), "-o", str(tmp_path / "fixed.mcap"))
    assert code == 0, err
    damaged = name.startswith(("bomb", "claims", "bad", "past"))
    assert ("incomplete" in out) == damaged, out
    recovered = int(out.splitlines()[1].split()[0])
    assert recovered == (10 if damaged else {"crowd": 5002, "odd-topics": 60}.get(name, PLAYS.get(name))), out
    code, out, err = await hwgateway("record", "--recover", str(tmp_path / "fixed.mcap"))
    assert code == 0, err
    assert out.splitlines()[0].endswith(": complete"), out

    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "replay", str(path), "--http-port", str(port), "--msgpack-port", "-1",
        "--unix-socket", str(tmp_path / "r.sock"), "--log-format", "json", stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = await asyncio.wait_for(proc.stdout.readline(), 20)
        plays = 10 if damaged else PLAYS[name]
        assert f"hwgateway replay: {plays} messages of" in first.decode(), first
        _, body = await asyncio.wait_for(_when_listening(proc, port), 20)
        assert health_faults(body) == [], body
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.communicate(), STOP_TIMEOUT_S)
    assert proc.returncode == 0


async def test_a_heavy_file_plays_chunk_by_chunk_unless_its_chunks_overlap(tmp_path: Path) -> None:
    """300 MiB of messages (a few kB compressed): read as it plays; loaded whole (overlapping chunks): refused."""
    heavy = b'{"last_command": "' + b"0" * (1 << 20) + b'"}'  # 1 MiB each
    in_order = [f.chunk(f.message(1, FIRST_NS + n * 10**8, data=heavy)) for n in range(300)]
    path = f.write(tmp_path / "heavy.mcap", f.channel(1, "pad/state"), *in_order)
    assert path.stat().st_size < 2 * 2**20
    devices = SIM_DEVICE + replay_device("player", path, prefix="replay-")
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, devices=devices))
    try:
        async with websockets.connect(f"ws://127.0.0.1:{gateway.http_port}/ws", max_size=None) as ws:
            client = await WsClient(ws).start()
            async with asyncio.timeout(60):
                while True:
                    player = {d["id"]: d for d in (await client.ok("list_devices"))["devices"]}["player"]
                    if player["capabilities"]["position_s"] >= 3.0:  # 30 chunks played
                        break
                    await asyncio.sleep(0.2)
            assert player["capabilities"]["duration_s"] == pytest.approx(29.9)
        assert await healthy_for(gateway, 0.5) >= 1
        assert peak_rss_mib(gateway.proc.pid) < 200  # two chunks of 1 MiB in memory, not 300
    finally:
        await stop_safely(gateway)
    code, out, err = await _replay_command_until_serving(tmp_path, path)
    assert code == 0, err
    assert "hwgateway replay: 300 messages of" in out, out

    half = heavy[: 1 << 19] + b'"}'
    overlapping = [f.chunk(f.message(1, FIRST_NS + n, data=half) + f.message(1, FIRST_NS + 10**9 + n, data=half))
                   for n in range(300)]  # fmt: skip
    path = f.write(tmp_path / "tangled.mcap", f.channel(1, "pad/state"), *overlapping)
    code, _, err = await hwgateway("replay", str(path), "--http-port", str(free_port()), "--msgpack-port", "-1")
    assert code == 3, err
    assert "its chosen messages hold more than 256 MiB, more than one replay loads" in err, err


async def _replay_command_until_serving(tmp_path: Path, path: Path) -> tuple[int | None, str, str]:
    """`hwgateway replay PATH` until it listens, then SIGTERM: its exit code, stdout and stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "replay", str(path), "--http-port", str(free_port()), "--msgpack-port",
        "-1", "--unix-socket", str(tmp_path / "r.sock"), "--log-format", "json", stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    lines = []
    try:
        async with asyncio.timeout(60):
            while b'"listening"' not in (line := await proc.stdout.readline()) and line:
                lines.append(line.decode())
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(proc.communicate(), STOP_TIMEOUT_S)
    return proc.returncode, "".join(lines) + out.decode(), err.decode()


async def _when_listening(proc: asyncio.subprocess.Process, port: int) -> tuple[int, dict[str, Any]]:
    assert proc.stdout is not None
    while b'"listening"' not in await proc.stdout.readline():
        pass
    return await health(port)
