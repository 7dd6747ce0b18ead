"""Write batching per client and multi-sample frames: order, a stalled client's coalescing, frame limits.

The in-process tests drive the real `Outbox` on a real socket pair with the real bus; the end-to-end
tests ask the running gateway for multi-sample frames over WebSocket and msgpack/TCP.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import orjson
import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped, unused-ignore]

from devices.sim.controller import controller_state
from gateway.bus import Bus, Subscriber
from gateway.faces.native.messages import renderer, state_message
from gateway.faces.native.msgpack_server import StreamTransport
from gateway.faces.outbox import Outbox
from gateway.servers.socket_transport import HIGH_WATER_BYTES
from gateway.wire import Encoding, encode, pack_messages, websocket_payload
from hwgateway.client.transports import open_transport, parse_url
from tests.harness import TransportName, connect, gateway_config
from tests.inprocess import running_gateway

TOPICS = ("dev/a", "dev/b", "dev/c", "dev/d")


class CountingSocket:
    """A socket whose `send`s count as its transport's writes (a fan-out group sends through it directly)."""

    def __init__(self, sock: socket.socket, owner: CountingTransport) -> None:
        self._sock = sock
        self._owner = owner

    def send(self, data: bytes) -> int:
        self._owner.writes += 1
        return self._sock.send(data)


class CountingTransport(StreamTransport):
    """The msgpack socket's transport, counting its writes (each one send system call on a free socket).

    A write counts once however it goes: `write`, `try_write`, or a fan-out group's direct `send`
    (one write even when the kernel takes part of it and asyncio buffers the rest).
    """

    writes = 0

    def __init__(self, writer: asyncio.StreamWriter, send_buffer_bytes: int) -> None:
        super().__init__(writer, send_buffer_bytes)
        if self._direct is not None:
            self._direct = CountingSocket(self._direct, self)  # type: ignore[assignment]

    def write(self, data: bytes) -> None:
        self.writes += 1
        super().write(data)

    def try_write(self, data: bytes) -> bool:
        before = self.writes
        written = super().try_write(data)
        if written and self.writes == before:  # not counted by the socket: asyncio's write took it
            self.writes += 1
        return written


@dataclass
class Rig:
    bus: Bus
    subscriber: Subscriber
    outbox: Outbox
    transport: CountingTransport
    peer: socket.socket


@contextlib.asynccontextmanager
async def rig(send_buffer_bytes: int = 0, receive_buffer: int | None = None) -> AsyncIterator[Rig]:
    """An outbox on one end of a Unix socket pair; the test reads the other end (`peer`) itself."""
    ours, peer = socket.socketpair()
    if receive_buffer is not None:
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, receive_buffer)
    peer.setblocking(False)
    _, writer = await asyncio.open_unix_connection(sock=ours)
    transport = CountingTransport(writer, send_buffer_bytes)
    bus = Bus()
    subscriber = Subscriber("t1", "msgpack")
    outbox = Outbox("t1", subscriber, transport, renderer("msgpack"))
    outbox.start()
    bus.subscribe(subscriber, ["dev/**"], None)
    try:
        yield Rig(bus, subscriber, outbox, transport, peer)
    finally:
        outbox.stop()
        writer.close()
        peer.close()


def publish_tick(bus: Bus, tick: int) -> None:
    """One device cycle: every topic at once."""
    state = controller_state(float(tick))
    for topic in TOPICS:
        bus.publish(topic, state)


async def read_messages(peer: socket.socket, count: int, timeout: float = 5.0) -> list[Any]:
    """`count` msgpack values from `peer` (maps, or arrays of maps), in order."""
    loop = asyncio.get_running_loop()
    unpacker = msgpack.Unpacker(raw=False)
    values: list[Any] = []
    async with asyncio.timeout(timeout):
        while len(values) < count:
            unpacker.feed(await loop.sock_recv(peer, 65536))
            values.extend(unpacker)
    return values


async def read_in_order_until_newest(peer: socket.socket, newest: int, timeout: float = 10.0) -> None:
    """Read `peer` until every topic's sample `newest` has come, each topic's seqs rising on the way."""
    loop = asyncio.get_running_loop()
    unpacker = msgpack.Unpacker(raw=False)
    last: dict[str, int] = {}
    async with asyncio.timeout(timeout):
        while any(last.get(topic) != newest for topic in TOPICS):
            unpacker.feed(await loop.sock_recv(peer, 65536))
            for message in unpacker:
                assert message["seq"] > last.get(message["topic"], 0)
                last[message["topic"]] = message["seq"]


def seqs(messages: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(m["topic"], m["seq"]) for m in messages if m["op"] == "state"]


async def test_samples_of_one_iteration_leave_in_one_write_in_order() -> None:
    async with rig() as r:
        ticks = 50
        for tick in range(ticks):
            publish_tick(r.bus, tick)
            await asyncio.sleep(0)  # the end of the iteration: the batch leaves
        received = await read_messages(r.peer, ticks * len(TOPICS))
        assert seqs(received) == [(topic, tick + 1) for tick in range(ticks) for topic in TOPICS]
        assert r.transport.writes == ticks
        assert r.subscriber.delivered == ticks * len(TOPICS)


async def test_a_reply_keeps_its_place_between_the_samples_around_it() -> None:
    async with rig() as r:
        state = controller_state(0.0)
        r.bus.publish("dev/a", state)
        r.bus.publish("dev/b", state)
        r.outbox.push(encode({"op": "result", "id": 1, "ok": True, "data": {}}, "msgpack"))
        r.bus.publish("dev/c", state)
        r.bus.publish("dev/d", state)
        await asyncio.sleep(0)
        publish_tick(r.bus, 1)  # the next iteration's batch goes after all of those
        received = await read_messages(r.peer, 9)
        assert [(m["op"], m.get("topic")) for m in received] == [
            ("state", "dev/a"),
            ("state", "dev/b"),
            ("result", None),
            ("state", "dev/c"),
            ("state", "dev/d"),
            *(("state", topic) for topic in TOPICS),
        ]


async def test_replies_to_a_peer_that_does_not_read_wait_in_order_behind_the_first_queued() -> None:
    async with rig(send_buffer_bytes=4096, receive_buffer=4096) as r:
        ok = {"ok": True, "data": {"pad": "x" * 1000}}
        replies = 100
        for request_id in range(replies):  # far more than the socket buffers take
            r.outbox.push(encode({"op": "result", "id": request_id, **ok}, "msgpack"))
        assert r.outbox._results  # the rest wait for the writer
        received = await read_messages(r.peer, replies)
        assert [m["id"] for m in received] == list(range(replies))


async def test_a_stalled_client_is_coalesced_newest_wins_with_bounded_memory() -> None:
    async with rig(send_buffer_bytes=4096, receive_buffer=4096) as r:
        ticks = 3000
        peak_buffer = 0
        asyncio_transport = r.transport._transport
        for tick in range(ticks):
            publish_tick(r.bus, tick)
            await asyncio.sleep(0)
            peak_buffer = max(peak_buffer, asyncio_transport.get_write_buffer_size())
        frame_bytes = len(renderer("msgpack")(r.bus.latest("dev/a")))  # type: ignore[arg-type]
        # What the gateway holds: the high-water mark and one batch over it, and one slot per topic.
        assert peak_buffer <= HIGH_WATER_BYTES + len(TOPICS) * frame_bytes
        assert r.subscriber.depth <= len(TOPICS)
        assert r.subscriber.coalesced > ticks  # most samples were replaced unsent
        # Reading again: every topic's samples arrive in order, and the newest one arrives last.
        await read_in_order_until_newest(r.peer, ticks)


def _decode(frame: bytes, encoding: Encoding) -> tuple[list[Any], int]:
    """A packed frame's messages and its size as the limit counts it."""
    if encoding == "json":
        payload = websocket_payload(frame)
        value = orjson.loads(payload)
        return (value if isinstance(value, list) else [value]), len(payload)
    value = msgpack.unpackb(frame, raw=False)
    return (value if isinstance(value, list) else [value]), len(frame)


@pytest.mark.parametrize("encoding", ["json", "msgpack"])
@pytest.mark.parametrize("max_bytes", [256, 700, 1500, 1 << 20])
def test_multi_sample_frames_keep_order_and_never_exceed_the_frame_limit(encoding: Encoding, max_bytes: int) -> None:
    bus = Bus()
    messages = []
    for tick in range(20):
        for topic in TOPICS:
            messages.append(state_message(bus.publish(topic, controller_state(float(tick)))))
    messages.insert(7, {"op": "device", "device": "dev", "detail": "x" * 600})  # alone over 256 and 700 bytes
    frames = [encode(message, encoding) for message in messages]
    packed = pack_messages(frames, encoding, max_bytes)
    decoded: list[Any] = []
    for frame in packed:
        values, size = _decode(frame, encoding)
        assert size <= max_bytes or len(values) == 1  # only a message alone over the limit goes over it
        decoded.extend(values)
    assert decoded == orjson.loads(orjson.dumps(messages))
    assert len(packed) < len(frames) or max_bytes == 256  # 256 B hold one state message only


async def test_the_outbox_packs_a_batch_when_the_face_combines() -> None:
    async with rig() as r:
        r.outbox.set_combine(lambda frames: pack_messages(frames, "msgpack", 1 << 20), "test")
        publish_tick(r.bus, 0)
        await asyncio.sleep(0)
        (array,) = await read_messages(r.peer, 1)
        assert seqs(array) == [(topic, 1) for topic in TOPICS]
        assert r.transport.writes == 1


# -- end to end: the configure op on the running gateway ------------------------------------------

FOUR_TOPICS = '[devices.quad]\nkind = "sim"\nrate_hz = 200.0\nstate_topics = 4\n'
QUAD_TOPICS = ["quad/state", "quad/state/2", "quad/state/3", "quad/state/4"]
ARRAY_LIMIT = 1024
SCHEMAS = Path(__file__).resolve().parent.parent / "docs" / "schemas"


def _validator(name: str) -> Any:
    return Draft202012Validator(json.loads((SCHEMAS / f"{name}.json").read_text(encoding="utf-8")))


async def _frames(client: Any, count: int) -> list[tuple[Any, int]]:
    """The next `count` pushes as decoded values with their sizes (WebSocket: payload bytes)."""
    out = []
    for _ in range(count):
        if client.encoding == "json":
            raw = await asyncio.wait_for(client.ws.recv(), 5)
            text = raw.encode() if isinstance(raw, str) else raw
            out.append((orjson.loads(text), len(text)))
        else:
            value = await client.receive()
            out.append((value, len(msgpack.packb(value, use_bin_type=True))))
    return out


async def answer(client: Any, request_id: int, op: str, **fields: Any) -> dict[str, Any]:
    """Send a request and return its result, passing over the pushes (maps or arrays) before it."""
    await client.send({"op": op, "id": request_id, **fields})
    async with asyncio.timeout(5):
        while True:
            ((value, _),) = await _frames(client, 1)
            if isinstance(value, dict) and value["op"] == "result" and value["id"] == request_id:
                return value


@pytest.mark.parametrize("transport", ["ws", "tcp"])
async def test_multi_sample_frames_on_request_and_bad_configure_requests(
    tmp_path: Path, transport: TransportName
) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, FOUR_TOPICS)) as gateway:
        client = await connect(gateway, transport)
        assert "multi_state" in client.hello["capabilities"]
        bad: list[tuple[dict[str, Any], str]] = [
            ({"multi_state": "yes"}, "bad_request"),
            ({"multi_state": 1}, "bad_request"),
            ({"max_frame_bytes": True}, "bad_request"),
            ({"max_frame_bytes": 1.5}, "bad_request"),
            ({"max_frame_bytes": 255}, "invalid_argument"),
            ({"max_frame_bytes": client.hello["limits"]["max_frame_bytes"] + 1}, "invalid_argument"),
            ({"multi_state": True, "batch": 4}, "bad_request"),
        ]
        for fields, code in bad:
            error = await client.error("configure", **fields)
            assert error["code"] == code, (fields, error)
        assert await client.ok("configure") == {"multi_state": False, "max_frame_bytes": 1048576}
        await client.ok("subscribe", topics=["quad/state", "quad/state/*"])
        configured = await answer(client, 100, "configure", multi_state=True, max_frame_bytes=ARRAY_LIMIT)
        assert configured["data"] == {"multi_state": True, "max_frame_bytes": ARRAY_LIMIT}

        arrays = 0
        last: dict[str, int] = {}
        frame_schema, state_schema = _validator("frame.multi_state"), _validator("server.state")
        for value, size in await _frames(client, 60):
            messages = value if isinstance(value, list) else [value]
            if isinstance(value, list):
                arrays += 1
                assert len(value) >= 2
                assert size <= ARRAY_LIMIT
                frame_schema.validate(value)
            for message in messages:
                if message["op"] != "state":
                    continue
                state_schema.validate(message)
                assert message["seq"] > last.get(message["topic"], 0)  # in order within and across frames
                last[message["topic"]] = message["seq"]
            states = [m for m in messages if m["op"] == "state"]
            ticks = [(m["seq"], QUAD_TOPICS.index(m["topic"])) for m in states]
            assert ticks == sorted(ticks)  # one cycle's topics in publication order
        assert arrays > 10  # a cycle of 4 (about 330 B each) splits into 3 + 1 under 1 KiB
        assert set(last) == set(QUAD_TOPICS)

        assert (await answer(client, 101, "configure", multi_state=False))["ok"]
        for value, _ in await _frames(client, 20):
            assert isinstance(value, dict)  # one message per frame again, from the result on
        await client.close()


@pytest.mark.parametrize("transport", ["ws", "tcp"])
async def test_the_client_library_unpacks_multi_sample_frames(tmp_path: Path, transport: TransportName) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, FOUR_TOPICS)) as gateway:
        url = (
            f"ws://127.0.0.1:{gateway.http_port}/ws" if transport == "ws" else f"tcp://127.0.0.1:{gateway.msgpack_port}"
        )
        pipe = await open_transport(parse_url(url))
        try:
            assert (await pipe.receive())["op"] == "hello"
            await pipe.send({"op": "configure", "id": 1, "multi_state": True})
            await pipe.send({"op": "subscribe", "id": 2, "topics": ["quad/**"]})
            last: dict[str, int] = {}
            states = 0
            async with asyncio.timeout(10):
                while states < 200:  # a second of 4 topics at 200 Hz is 800 messages
                    message = await pipe.receive()
                    assert isinstance(message, dict)  # arrays arrive as their messages, one by one
                    if message["op"] == "state" and message["topic"] in QUAD_TOPICS:
                        assert message["seq"] > last.get(message["topic"], 0)
                        last[message["topic"]] = message["seq"]
                        states += 1
            assert set(last) == set(QUAD_TOPICS)
        finally:
            await pipe.close()
