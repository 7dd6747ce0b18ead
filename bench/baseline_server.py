"""The bare fan-out server that bench/fanout.py compares the gateway with: no gateway code at all.

It speaks just enough of the client protocol for the benchmark's clients (`hello`, a `result` for
`subscribe`, then `state` pushes) and generates `--rate` state messages per second on absolute
deadlines, the way the sim device does (with `--topics N`, N messages per tick on `bench-1/state`
and `bench-1/state/2` … `/N`, like the sim's `state_topics`). Each message is serialized once and
the same bytes go to every subscribed client, one send per message: `ws.send_frame(bytes, TEXT)`
on an aiohttp WebSocket (compress=False), or `writer.write(bytes)` on an asyncio stream for msgpack
over TCP.

With `--batch` it is the floor of the gateway's own design instead: the messages of one tick go to
each client in one write (one send system call) to the socket's transport, each still its own
WebSocket frame (framed here) or msgpack map, the way the gateway's write batching sends them.

With `--devices N` (bench/scale.py) N generators run side by side, each on its own deadlines as N
sim devices do, device `i` publishing on `bench-i/state` (and its `--topics`). Unbatched, every
message is sent on its own; with `--batch`, what the generators produce in one event-loop turn is
collected and leaves in one write per client at the turn's end (one `call_soon` for all of them),
however many devices it came from: the floor of batching a turn's samples across devices.

With `--typed-sample` (with `--batch`: bench/fanout.py's `typed` side) each tick's messages are made
as the gateway's sim device and bus make them: one typed sample a tick (`controller_state`, the
sim's own function), made plain (`to_plain`) once per message, where the plain floor writes each
message's dict itself. It is the floor of the gateway's design including its typed device sample,
the one piece of gateway code it runs; without the option this server imports nothing of the gateway.

On start it prints one JSON line `{"event": "listening", "port": N}`; it stops on SIGTERM/SIGINT,
and by itself when its parent goes away, so a killed benchmark never leaves it running.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgpack
import orjson
from aiohttp import WSMsgType, web

TOPIC = "bench-1/state"
TYPE = "creos_messages/ControllerState"
AXES = 6
BUTTONS = 17
#: Same as the sim device: beyond this lag the generator skips ahead instead of bursting stale samples.
MAX_CATCH_UP_S = 0.1
PARENT_CHECK_S = 1.0
#: Connections the kernel holds until accepted, as every listener of the gateway (gateway/servers/limits.py):
#: with asyncio's default of 100, 500 clients connecting at once to the msgpack server lost SYNs (each
#: tried again a second later: 1.04 s to connect them, 0.07-0.12 s with this), and in one run of 15 a
#: client's connection was lost in the overflow, its hello never came and the run failed.
LISTEN_BACKLOG = 1024

Encode = Callable[[dict[str, Any]], bytes]
#: A tick's `state` messages: (seq, stamp, topics) -> one message per topic.
MakeTick = Callable[[int, float, list[str]], list[dict[str, Any]]]
Send = Callable[[bytes], Awaitable[None]]
SendBatch = Callable[[list[bytes]], Awaitable[None]]


def encode_json(message: dict[str, Any]) -> bytes:
    return orjson.dumps(message)


def encode_msgpack(message: dict[str, Any]) -> bytes:
    packed: bytes = msgpack.packb(message, use_bin_type=True)
    return packed


def topics_of(count: int, device: int = 1) -> list[str]:
    """The sim device's state topics with `state_topics = count`, of device `bench-<device>`."""
    topic = f"bench-{device}/state"
    return [topic, *(f"{topic}/{index}" for index in range(2, count + 1))]


def state_message(seq: int, now: float, topic: str = TOPIC) -> dict[str, Any]:
    """A `state` envelope shaped like the gateway's for the sim's ControllerState (6 axes, 17 buttons)."""
    phase = 2 * math.pi * 0.25 * now
    axes = [
        math.cos(phase),
        math.sin(phase),
        math.cos(phase / 2),
        math.sin(phase / 2),
        0.5 + 0.5 * math.sin(phase),
        0.5 - 0.5 * math.sin(phase),
    ]
    pressed = int(now) % BUTTONS
    fraction, whole = math.modf(now)
    return {
        "op": "state",
        "topic": topic,
        "type": TYPE,
        "seq": seq,
        "stamp": now,
        "recv_stamp": now,
        "data": {
            "timestamp": {"sec": int(whole), "nanosec": min(round(fraction * 1e9), 999_999_999)},
            "axes": axes,
            "buttons": [1 if index == pressed else 0 for index in range(BUTTONS)],
        },
    }


def tick_messages(seq: int, now: float, topics: list[str]) -> list[dict[str, Any]]:
    """A tick's `state` messages, each written out as a dict (`state_message`)."""
    return [state_message(seq, now, topic) for topic in topics]


def typed_tick_maker() -> MakeTick:
    """`tick_messages` made as the gateway makes them: one typed sample a tick, `to_plain` once per topic."""
    repo = str(Path(__file__).resolve().parent.parent)
    if repo not in sys.path:
        sys.path.insert(0, repo)
    from devices.sim.controller import controller_state  # only this option runs gateway code
    from gateway.messages import to_plain

    def typed_tick_messages(seq: int, now: float, topics: list[str]) -> list[dict[str, Any]]:
        sample = controller_state(now)
        return [
            {
                "op": "state",
                "topic": topic,
                "type": TYPE,
                "seq": seq,
                "stamp": now,
                "recv_stamp": now,
                "data": to_plain(sample),
            }
            for topic in topics
        ]

    return typed_tick_messages


class TurnBatcher:
    """Collects the messages of one event-loop turn, from any number of generators; one write per client at its end."""

    def __init__(self, send_batch: SendBatch) -> None:
        self._send_batch = send_batch
        self._pending: list[bytes] = []
        self._flushing: set[asyncio.Task[None]] = set()

    async def add(self, payloads: list[bytes]) -> None:
        """Take a tick's messages; the first of a turn schedules the flush at the turn's end."""
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.extend(payloads)

    def _flush(self) -> None:
        payloads, self._pending = self._pending, []
        task = asyncio.ensure_future(self._send_batch(payloads))
        self._flushing.add(task)
        task.add_done_callback(self._flushing.discard)


def hello_message() -> dict[str, Any]:
    return {"op": "hello", "server": "baseline", "capabilities": []}


def result_message(request: Any) -> dict[str, Any]:
    """Answer any request with success; only `subscribe` matters to the benchmark."""
    request_id = request.get("id") if isinstance(request, dict) else None
    return {"op": "result", "id": request_id, "ok": True, "data": {"subscription": 1, "topics": [TOPIC]}}


def ws_text_frame(payload: bytes) -> bytes:
    """`payload` as one unmasked, unfragmented WebSocket text frame (RFC 6455 5.2), as a server sends it."""
    size = len(payload)
    if size < 126:
        header = bytes((0x81, size))
    elif size < 1 << 16:
        header = bytes((0x81, 126)) + size.to_bytes(2, "big")
    else:
        header = bytes((0x81, 127)) + size.to_bytes(8, "big")
    return header + payload


async def generate(
    rate: float,
    encode: Encode,
    send: Send,
    topics: int = 1,
    send_batch: SendBatch | None = None,
    device: int = 1,
    make: MakeTick = tick_messages,
) -> None:
    """Produce `rate` ticks/s of `topics` messages on deadlines t0 + k/rate; when late, the due ones go back to back.

    With `send_batch`, each tick's messages go out together through it instead of one `send` each.
    `make` makes a tick's messages.
    """
    names = topics_of(topics, device)
    period = 1.0 / rate
    next_tick = time.monotonic()
    seq = 0
    while True:
        now = time.monotonic()
        if now - next_tick > MAX_CATCH_UP_S:
            next_tick = now
        while next_tick <= now:
            seq += 1
            # `stamp` is taken here, as the sim device does, so latency = receipt - generation time.
            stamp = time.time()
            if send_batch is not None:
                await send_batch([encode(message) for message in make(seq, stamp, names)])
            else:
                for message in make(seq, stamp, names):
                    await send(encode(message))
            next_tick += period
        await asyncio.sleep(max(next_tick - time.monotonic(), 0.0))


class WsFanout:
    """aiohttp WebSocket server on /ws; `broadcast` sends the same frame to every subscriber."""

    def __init__(self) -> None:
        self.clients: list[web.WebSocketResponse] = []
        #: Each subscriber's socket transport, for `broadcast_batch`'s raw writes.
        self.transports: dict[web.WebSocketResponse, asyncio.Transport] = {}
        self._runner: web.AppRunner | None = None

    async def start(self, host: str, port: int) -> int:
        app = web.Application()
        app.router.add_get("/ws", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port, reuse_address=True, backlog=LISTEN_BACKLOG).start()
        bound: int = self._runner.addresses[0][1]
        return bound

    async def stop(self) -> None:
        for ws in list(self.clients):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), 1.0)
        if self._runner is not None:
            await self._runner.cleanup()

    async def broadcast(self, frame: bytes) -> None:
        for ws in list(self.clients):
            try:
                await ws.send_frame(frame, WSMsgType.TEXT)
            except ConnectionError:
                self._forget(ws)

    async def broadcast_batch(self, payloads: list[bytes]) -> None:
        """The payloads as text frames, in one write per subscriber (aiohttp has no batched send)."""
        data = b"".join(ws_text_frame(payload) for payload in payloads)
        for ws in list(self.clients):
            transport = self.transports.get(ws)
            if transport is None or transport.is_closing():
                self._forget(ws)
                continue
            transport.write(data)

    def _forget(self, ws: web.WebSocketResponse) -> None:
        self.transports.pop(ws, None)
        with contextlib.suppress(ValueError):
            self.clients.remove(ws)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        # compress=False: aiohttp's default negotiates permessage-deflate (+60 % CPU), the gateway's does not.
        ws = web.WebSocketResponse(compress=False)
        await ws.prepare(request)
        await ws.send_frame(encode_json(hello_message()), WSMsgType.TEXT)
        try:
            async for message in ws:
                if message.type != WSMsgType.TEXT:
                    continue
                request_body = orjson.loads(message.data)
                await ws.send_frame(encode_json(result_message(request_body)), WSMsgType.TEXT)
                if request_body.get("op") == "subscribe" and ws not in self.clients and request.transport:
                    self.clients.append(ws)
                    self.transports[ws] = request.transport
        finally:
            self._forget(ws)
        return ws


class MsgpackFanout:
    """asyncio stream server; `broadcast` writes the same packed bytes to every subscriber."""

    def __init__(self) -> None:
        self.clients: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._handle, host, port, backlog=LISTEN_BACKLOG)
        bound: int = self._server.sockets[0].getsockname()[1]
        return bound

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self.clients):
            writer.close()

    async def broadcast(self, frame: bytes) -> None:
        writers = list(self.clients)
        for writer in writers:
            writer.write(frame)
        # drain() returns at once unless that socket's buffer is over its high-water mark.
        for writer in writers:
            try:
                await writer.drain()
            except ConnectionError:
                self._forget(writer)

    async def broadcast_batch(self, payloads: list[bytes]) -> None:
        """The packed messages back to back, in one write per subscriber's transport.

        Written to the transport as `WsFanout.broadcast_batch` writes its frames: `drain()` per writer
        (what `broadcast` does, the streams idiom) would add a coroutine per client per tick that
        neither the WebSocket floor nor the gateway runs, and the floor would not be one.
        """
        data = b"".join(payloads)
        for writer in list(self.clients):
            transport = writer.transport
            if transport.is_closing():
                self._forget(writer)
                continue
            transport.write(data)

    def _forget(self, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ValueError):
            self.clients.remove(writer)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(encode_msgpack(hello_message()))
        unpacker = msgpack.Unpacker(raw=False)
        try:
            while data := await reader.read(65536):
                unpacker.feed(data)
                for request in unpacker:
                    writer.write(encode_msgpack(result_message(request)))
                    subscribing = isinstance(request, dict) and request.get("op") == "subscribe"
                    if subscribing and writer not in self.clients:
                        self.clients.append(writer)
        except ConnectionError:
            pass
        finally:
            self._forget(writer)
            writer.close()
            # Awaiting the close retrieves a reset's exception, which asyncio would otherwise log.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 1.0)


async def watch_parent(stop: asyncio.Event) -> None:
    """Stop when the process that started us is gone (we were re-parented)."""
    parent = os.getppid()
    while os.getppid() == parent:  # noqa: ASYNC110 - re-parenting has no event to wait on
        await asyncio.sleep(PARENT_CHECK_S)
    stop.set()


async def serve(
    transport: str,
    host: str,
    port: int,
    rate: float,
    topics: int = 1,
    batch: bool = False,
    devices: int = 1,
    typed_sample: bool = False,
) -> None:
    fanout: WsFanout | MsgpackFanout = WsFanout() if transport == "ws" else MsgpackFanout()
    encode = encode_json if transport == "ws" else encode_msgpack
    make = typed_tick_maker() if typed_sample else tick_messages
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    bound = await fanout.start(host, port)
    print(orjson.dumps({"event": "listening", "port": bound, "transport": transport}).decode(), flush=True)
    send_batch: SendBatch | None = fanout.broadcast_batch if batch else None
    if batch and devices > 1:
        assert send_batch is not None
        send_batch = TurnBatcher(send_batch).add  # a turn's ticks of every device in one write
    generators = [
        asyncio.create_task(
            generate(rate, encode, fanout.broadcast, topics, send_batch, device, make), name=f"generator-{device}"
        )
        for device in range(1, devices + 1)
    ]
    stopping = asyncio.create_task(stop.wait())
    tasks: list[asyncio.Task[Any]] = [*generators, stopping, asyncio.create_task(watch_parent(stop))]
    try:
        # A generator that dies (it should not) also ends the process instead of idling silently.
        await asyncio.wait([*generators, stopping], return_when=asyncio.FIRST_COMPLETED)
        for generator in generators:
            if generator.done() and not generator.cancelled():
                generator.result()  # re-raises its exception
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await fanout.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--transport", choices=["ws", "msgpack"], required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--rate", type=float, default=1000.0, help="ticks per second (messages per topic)")
    parser.add_argument("--topics", type=int, default=1, help="messages per tick, one per topic")
    parser.add_argument("--batch", action="store_true", help="one write per client per tick (the gateway's design)")
    parser.add_argument("--devices", type=int, default=1, help="generators side by side, bench-1 ... bench-N")
    parser.add_argument(
        "--typed-sample", action="store_true", help="make each tick's sample as the gateway's sim device does"
    )
    args = parser.parse_args(argv)
    asyncio.run(
        serve(args.transport, args.host, args.port, args.rate, args.topics, args.batch, args.devices, args.typed_sample)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
