"""The bare server of bench/fanout.py, batched (`--batch`): each message still arrives as its own frame, in order."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import msgpack
import orjson
import pytest

from bench.baseline_server import (
    LISTEN_BACKLOG,
    MsgpackFanout,
    WsFanout,
    tick_messages,
    typed_tick_maker,
    ws_text_frame,
)
from devices.sim.controller import controller_state
from gateway.bus import Bus
from gateway.faces.native.messages import renderer
from gateway.messages import to_plain
from gateway.servers import limits

REPO_ROOT = Path(__file__).resolve().parent.parent
BASELINE_SERVER = REPO_ROOT / "bench" / "baseline_server.py"
TOPICS = ["bench-1/state", "bench-1/state/2", "bench-1/state/3"]
TICKS = 5


@pytest.mark.parametrize(
    ("size", "header"),
    [
        (0, b"\x81\x00"),
        (125, b"\x81\x7d"),
        (126, b"\x81\x7e\x00\x7e"),
        (65535, b"\x81\x7e\xff\xff"),
        (65536, b"\x81\x7f\x00\x00\x00\x00\x00\x01\x00\x00"),
    ],
)
def test_ws_text_frame_uses_the_rfc_6455_length_forms(size: int, header: bytes) -> None:
    payload = b"x" * size
    assert ws_text_frame(payload) == header + payload


@contextlib.asynccontextmanager
async def bare_server(transport: str, *options: str) -> AsyncIterator[int]:
    argv = ["--transport", transport, "--rate", "100", "--topics", str(len(TOPICS)), "--batch", *options]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(BASELINE_SERVER), *argv, stdout=asyncio.subprocess.PIPE, cwd=REPO_ROOT
    )
    try:
        assert proc.stdout is not None
        line = orjson.loads(await asyncio.wait_for(proc.stdout.readline(), 20))
        assert line["event"] == "listening"
        yield int(line["port"])
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 10)


def assert_ticks_in_order(messages: list[dict[str, object]]) -> None:
    """Whole ticks: every topic once per tick, in topic order, one `seq` per tick, ticks in a row."""
    states = [message for message in messages if message.get("op") == "state"]
    first = states[0]["seq"]
    assert isinstance(first, int)
    expected = [(first + index // len(TOPICS), TOPICS[index % len(TOPICS)]) for index in range(len(states))]
    assert [(message["seq"], message["topic"]) for message in states] == expected


async def test_batched_ws_sends_each_message_as_its_own_text_frame() -> None:
    async with (
        bare_server("ws") as port,
        aiohttp.ClientSession() as session,
        session.ws_connect(f"ws://127.0.0.1:{port}/ws", compress=0) as ws,
    ):
        await ws.send_str(orjson.dumps({"op": "subscribe", "id": 1, "topics": TOPICS}).decode())
        messages: list[dict[str, object]] = []
        while sum(message.get("op") == "state" for message in messages) < TICKS * len(TOPICS):
            frame = await asyncio.wait_for(ws.receive(), 10)
            assert frame.type == aiohttp.WSMsgType.TEXT
            messages.append(orjson.loads(frame.data))
    assert_ticks_in_order(messages)


@pytest.mark.parametrize("options", [(), ("--typed-sample",)], ids=["plain", "typed"])
async def test_batched_msgpack_sends_each_message_as_its_own_map(options: tuple[str, ...]) -> None:
    async with bare_server("msgpack", *options) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(msgpack.packb({"op": "subscribe", "id": 1, "topics": TOPICS}))
        unpacker = msgpack.Unpacker(raw=False)
        messages: list[dict[str, object]] = []
        while sum(message.get("op") == "state" for message in messages) < TICKS * len(TOPICS):
            unpacker.feed(await asyncio.wait_for(reader.read(65536), 10))
            messages.extend(unpacker)
        writer.close()
    assert all(isinstance(message, dict) for message in messages)
    assert_ticks_in_order(messages)


@pytest.mark.parametrize("fanout", [WsFanout, MsgpackFanout], ids=["ws", "msgpack"])
async def test_the_bare_servers_queue_a_storm_of_connections_as_the_gateway_does(
    fanout: type[WsFanout] | type[MsgpackFanout],
) -> None:
    """asyncio's backlog of 100 made 500 clients connecting at once wait a second (or hang, with SYN cookies)."""
    server = fanout()
    port = await server.start("127.0.0.1", 0)
    try:
        ss = await asyncio.create_subprocess_exec("ss", "-ltnH", f"sport = :{port}", stdout=asyncio.subprocess.PIPE)
        listed, _ = await ss.communicate()
    finally:
        await server.stop()
    backlogs = {int(line.split()[2]) for line in listed.decode().splitlines()}  # LISTEN, Recv-Q, Send-Q (backlog)
    assert LISTEN_BACKLOG == limits.LISTEN_BACKLOG
    assert backlogs == {min(LISTEN_BACKLOG, int(Path("/proc/sys/net/core/somaxconn").read_text()))}


def test_the_typed_tick_is_the_gateways_render_of_the_sims_sample_in_the_plain_ticks_shape() -> None:
    now = 1_765_000_000.25
    typed = typed_tick_maker()(7, now, TOPICS)
    plain = tick_messages(7, now, TOPICS)
    assert [message.keys() for message in typed] == [message.keys() for message in plain]
    assert [message["topic"] for message in typed] == TOPICS
    assert all(message["data"] == to_plain(controller_state(now)) for message in typed)
    assert all(message["data"].keys() == plain[0]["data"].keys() for message in typed)
    # What a gateway client receives of the same sample, less what the bus adds (its seq and receipt time).
    rendered = msgpack.unpackb(renderer("msgpack")(Bus().publish(TOPICS[0], controller_state(now), now)))
    assert {**typed[0], "seq": 1, "recv_stamp": rendered["recv_stamp"]} == rendered
