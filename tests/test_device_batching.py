"""Samples of many devices that fall in one event-loop turn leave in one write per client (issue 42, items 2-3).

The in-process tests drive the real bus and `Outbox`es on real Unix socket pairs, with one asyncio
task per device as the sim devices run, and read every client's socket themselves: how many
writes each client took, what it received and in which order. The end-to-end test runs the real
gateway with many sim devices and a stalled event loop, so that the turn after the stall holds
more than the high-water mark of samples, and checks that clients on WebSocket (JSON) and
msgpack/TCP that keep up receive every sample of every topic, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import pytest

from devices.sim.controller import controller_state
from gateway.bus import Bus, Subscriber
from gateway.faces.native.messages import renderer
from gateway.faces.outbox import Outbox
from gateway.servers.socket_transport import HIGH_WATER_BYTES
from tests.harness import TransportName, connect, devices_connected, gateway_config
from tests.inprocess import running_gateway
from tests.test_outbox_batching import CountingTransport

KEY = ("native", "msgpack")


@dataclass
class Client:
    subscriber: Subscriber
    outbox: Outbox
    transport: CountingTransport
    peer: socket.socket


@contextlib.asynccontextmanager
async def clients(
    bus: Bus, patterns: list[tuple[str, ...]], small_buffers: tuple[int, ...] = (), alone: tuple[int, ...] = ()
) -> AsyncIterator[list[Client]]:
    """One client per entry of `patterns`, subscribed to it; those in `small_buffers` get 4 KiB buffers.

    Those in `alone` have no fan-out key (as a face that renders per client): no group, one by one.
    """
    made: list[tuple[Client, asyncio.StreamWriter]] = []
    try:
        for index, subscribed in enumerate(patterns):
            ours, peer = socket.socketpair()
            small = index in small_buffers
            if small:
                peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
            else:
                ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
                peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            peer.setblocking(False)
            _, writer = await asyncio.open_unix_connection(sock=ours)
            transport = CountingTransport(writer, 0)
            subscriber = Subscriber(f"c{index}", "msgpack")
            bus.attach(subscriber)
            key = None if index in alone else KEY
            outbox = Outbox(f"c{index}", subscriber, transport, renderer("msgpack"), fanout_key=key)
            outbox.start()
            bus.subscribe(subscriber, subscribed, None)
            made.append((Client(subscriber, outbox, transport, peer), writer))
        yield [client for client, _ in made]
    finally:
        for client, writer in made:
            client.outbox.stop()
            bus.detach(client.subscriber)
            writer.close()
            client.peer.close()


async def devices_tick(bus: Bus, devices: int, ticks: int, samples_per_tick: int = 1) -> None:
    """`devices` device tasks; each tick all of them wake in one turn (as timers due together do) and publish.

    A tick waits for the previous one's writes (a turn of their own) before it starts.
    """
    go = [asyncio.Event() for _ in range(ticks)]

    async def device(index: int) -> None:
        for tick in range(ticks):
            await go[tick].wait()
            state = controller_state(float(tick))
            for _ in range(samples_per_tick):
                bus.publish(f"dev{index}/state", state)

    tasks = [asyncio.create_task(device(index)) for index in range(devices)]
    await asyncio.sleep(0)  # every device waits for its first tick
    for event in go:
        event.set()
        for _ in range(3):  # the devices' turn, the flush's, and one to spare
            await asyncio.sleep(0)
    await asyncio.gather(*tasks)


async def read_all(peer: socket.socket, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    """`count` msgpack maps from `peer`, in order."""
    loop = asyncio.get_running_loop()
    unpacker = msgpack.Unpacker(raw=False)
    values: list[dict[str, Any]] = []
    async with asyncio.timeout(timeout):
        while len(values) < count:
            unpacker.feed(await loop.sock_recv(peer, 1 << 20))
            values.extend(unpacker)
    return values


def assert_every_seq_in_order(messages: list[dict[str, Any]], topics: set[str], per_topic: int) -> None:
    """Each topic's samples 1 .. `per_topic`, every one, in order."""
    seen: dict[str, list[int]] = {}
    for message in messages:
        if message["op"] == "state":
            seen.setdefault(message["topic"], []).append(message["seq"])
    assert set(seen) == topics
    for topic, seqs in seen.items():
        assert seqs == list(range(1, per_topic + 1)), topic


async def test_samples_of_many_devices_in_one_turn_leave_in_one_write_per_client() -> None:
    bus = Bus()
    devices, ticks = 25, 8
    topics = {f"dev{index}/state" for index in range(devices)}
    # Two clients of one fan-out group, one of a group of its own, and one served one by one.
    patterns = [("*/state",), ("*/state",), ("*/state", "dev1/*"), ("*/state",)]
    async with clients(bus, patterns, alone=(3,)) as group:
        assert group[0].outbox.group is group[1].outbox.group is not None
        assert group[2].outbox.group not in (None, group[0].outbox.group)
        assert group[3].outbox.group is None
        await devices_tick(bus, devices, ticks)
        for client in group:
            assert_every_seq_in_order(await read_all(client.peer, devices * ticks), topics, ticks)
            assert client.transport.writes == ticks  # one write per turn, however many devices
            assert client.subscriber.coalesced == 0


async def test_a_turn_over_the_high_water_mark_reaches_clients_that_keep_up_whole() -> None:
    bus = Bus()
    devices, ticks, per_tick = 60, 4, 10
    topics = {f"dev{index}/state" for index in range(devices)}
    async with clients(bus, [("*/state",)] * 3) as group:
        await devices_tick(bus, devices, ticks, per_tick)
        frame = renderer("msgpack")(bus.latest("dev0/state"))  # type: ignore[arg-type]
        assert devices * per_tick * len(frame) > HIGH_WATER_BYTES  # each turn is over the mark
        for client in group:
            assert_every_seq_in_order(await read_all(client.peer, devices * ticks * per_tick), topics, ticks * per_tick)
            assert client.transport.writes == ticks  # still in the group: one write per turn
            assert client.subscriber.coalesced == 0
            assert client.outbox._grouped


async def test_a_slow_client_is_coalesced_newest_wins_bounded_and_keeps_the_others_whole() -> None:
    bus = Bus()
    devices, ticks, per_tick = 30, 40, 5
    topics = {f"dev{index}/state" for index in range(devices)}
    async with clients(bus, [("*/state",)] * 3, small_buffers=(2,)) as group:
        fast, slow = group[:2], group[2]
        readers = [asyncio.create_task(read_all(c.peer, devices * ticks * per_tick, timeout=30.0)) for c in fast]
        peak_depth = peak_unsent = 0

        async def watch() -> None:
            nonlocal peak_depth, peak_unsent
            while True:
                peak_depth = max(peak_depth, slow.subscriber.depth)
                peak_unsent = max(peak_unsent, slow.transport._transport.get_write_buffer_size())
                await asyncio.sleep(0)

        watcher = asyncio.create_task(watch())
        try:
            await devices_tick(bus, devices, ticks, per_tick)
        finally:
            watcher.cancel()
        for client, reader in zip(fast, readers, strict=True):
            assert_every_seq_in_order(await reader, topics, ticks * per_tick)
            assert client.subscriber.coalesced == 0
        # The slow one: one slot per topic, at most the mark and one turn unsent, newest wins.
        assert slow.subscriber.coalesced > 0
        assert peak_depth <= devices
        frame = renderer("msgpack")(bus.latest("dev0/state"))  # type: ignore[arg-type]
        assert peak_unsent <= HIGH_WATER_BYTES + devices * per_tick * len(frame)
        last: dict[str, int] = {}
        loop = asyncio.get_running_loop()
        unpacker = msgpack.Unpacker(raw=False)
        async with asyncio.timeout(10):
            while any(last.get(topic) != ticks * per_tick for topic in topics):
                unpacker.feed(await loop.sock_recv(slow.peer, 65536))
                for message in unpacker:
                    if message["op"] == "state":
                        assert message["seq"] > last.get(message["topic"], 0)  # in order per topic
                        last[message["topic"]] = message["seq"]


SIM_DEVICES = 40
BLOCKER = "blocker"


def many_sims() -> str:
    sims = "".join(f'[devices.sim{index}]\nkind = "sim"\nrate_hz = 100.0\n\n' for index in range(SIM_DEVICES))
    # One more stalls the event loop once, 0.3 s: every sim's catch-up falls in the turn after it.
    blocker = f'[devices.{BLOCKER}]\nkind = "sim"\nrate_hz = 100.0\nblock_loop_s = 0.3\nblock_loop_after_s = 1.0\n'
    return sims + blocker


@pytest.mark.parametrize("transport", ["ws", "tcp"])
async def test_clients_that_keep_up_get_every_sample_of_many_devices_through_a_stalled_turn(
    tmp_path: Path, transport: TransportName
) -> None:
    async with running_gateway(tmp_path, gateway_config(tmp_path, many_sims())) as gateway:
        names = [f"sim{index}" for index in range(SIM_DEVICES)]
        await devices_connected(gateway, [*names, BLOCKER])
        client = await connect(gateway, transport)
        subscribed = await client.ok("subscribe", topics=["*/state"])
        last: dict[str, int] = {}
        gaps: list[tuple[str, int, int]] = []
        stalled = False
        loop = asyncio.get_running_loop()
        started = loop.time()
        # Until well after the stall (the blocker's clock starts when it connects).
        while loop.time() - started < 2.5:
            message = await client.recv()
            if message["op"] != "state":
                continue
            topic, seq = message["topic"], message["seq"]
            if topic == f"{BLOCKER}/state":
                continue
            previous = last.get(topic)
            if previous is not None and seq != previous + 1:
                gaps.append((topic, previous, seq))
            last[topic] = seq
            stalled = stalled or any(
                record.get("message", "").startswith("blocking the event loop") for record in gateway.logs
            )
        # Quiet before closing: a WebSocket close waits for the close frame behind what is in flight.
        await client.ok("unsubscribe", subscription=subscribed["subscription"])
        await client.close()
    assert stalled
    assert set(last) == {f"{name}/state" for name in names}
    assert gaps == []
