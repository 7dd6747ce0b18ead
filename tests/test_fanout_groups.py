"""Fan-out groups: clients that subscribe alike share one render and join per iteration, one write each.

Each test drives real `Outbox`es on real Unix socket pairs with the real bus, as the native face
sets them up (a `fanout_key` per encoding), and reads every client's socket itself: what each one
receives, in which order, and how many writes it took. The membership changes are the ones that
can happen in the middle of an iteration: a client falls behind, gets a reply, gets an item of its
own, subscribes, unsubscribes, reconfigures its packing, closes or vanishes.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from devices.sim.controller import controller_state
from gateway.bus import Bus, DeviceEvent, Outgoing, Subscriber
from gateway.errors import ErrorCode
from gateway.faces.native.messages import renderer
from gateway.faces.outbox import FanoutGroup, Outbox, groups_of
from gateway.servers.socket_transport import HIGH_WATER_BYTES
from gateway.wire import encode, pack_messages
from tests.test_outbox_batching import (
    TOPICS,
    CountingTransport,
    publish_tick,
    read_in_order_until_newest,
    read_messages,
    seqs,
)

KEY = ("native", "msgpack")
RENDER_MSGPACK = renderer("msgpack")


class CountingRender:
    """The native msgpack render, counting its calls: every client of a group shares one render."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, item: Outgoing) -> bytes:
        self.calls += 1
        return RENDER_MSGPACK(item)


@dataclass
class Client:
    subscriber: Subscriber
    outbox: Outbox
    transport: CountingTransport
    peer: socket.socket

    @property
    def group(self) -> FanoutGroup | None:
        return self.outbox.group

    @property
    def grouped(self) -> bool:
        """True while its group writes the shared bytes to it."""
        return self.outbox._grouped


@contextlib.asynccontextmanager
async def clients(
    bus: Bus,
    count: int,
    render: Callable[[Outgoing], bytes | None],
    patterns: tuple[str, ...] = ("dev/**",),
    small_buffers: tuple[int, ...] = (),
) -> AsyncIterator[list[Client]]:
    """`count` clients subscribed to `patterns`; those whose index is in `small_buffers` get 4 KiB buffers."""
    made: list[tuple[Client, asyncio.StreamWriter]] = []
    try:
        for index in range(count):
            ours, peer = socket.socketpair()
            small = index in small_buffers
            if small:
                peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
            peer.setblocking(False)
            _, writer = await asyncio.open_unix_connection(sock=ours)
            transport = CountingTransport(writer, 4096 if small else 0)
            subscriber = Subscriber(f"c{index}", "msgpack")
            bus.attach(subscriber)
            outbox = Outbox(f"c{index}", subscriber, transport, render, fanout_key=KEY)
            outbox.start()
            bus.subscribe(subscriber, patterns, None)
            made.append((Client(subscriber, outbox, transport, peer), writer))
        yield [client for client, _ in made]
    finally:
        for client, writer in made:
            client.outbox.stop()
            bus.detach(client.subscriber)
            writer.close()
            client.peer.close()


async def rejoined(client: Client) -> None:
    """Wait until the client is back in its group (its writer rejoins once it has sent all it held)."""
    async with asyncio.timeout(5):
        while not client.grouped:  # noqa: ASYNC110 - the outbox's own state, which has no event
            await asyncio.sleep(0.01)


def result(request_id: int) -> bytes:
    return encode({"op": "result", "id": request_id, "ok": True, "data": {}}, "msgpack")


def flat(values: list[Any]) -> list[dict[str, Any]]:
    """Messages with multi-sample arrays unpacked."""
    out: list[dict[str, Any]] = []
    for value in values:
        out.extend(value if isinstance(value, list) else [value])
    return out


def ops(messages: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(m["op"], m.get("topic") or m.get("id") or m.get("device")) for m in messages]


async def test_clients_that_subscribe_alike_share_one_render_and_take_one_write_each_per_iteration() -> None:
    bus, render = Bus(), CountingRender()
    async with clients(bus, 5, render) as group:
        assert len({id(client.group) for client in group}) == 1
        assert all(client.grouped for client in group)
        ticks = 40
        for tick in range(ticks):
            publish_tick(bus, tick)
            await asyncio.sleep(0)
        expected = [(topic, tick + 1) for tick in range(ticks) for topic in TOPICS]
        for client in group:
            assert seqs(await read_messages(client.peer, ticks * len(TOPICS))) == expected
            assert client.transport.writes == ticks
            assert client.subscriber.delivered == ticks * len(TOPICS)
        assert render.calls == ticks * len(TOPICS)  # once per sample, not once per sample per client


async def test_clients_that_subscribe_differently_or_rate_limited_get_no_shared_group() -> None:
    bus, render = Bus(), CountingRender()
    async with clients(bus, 2, render) as alike, clients(bus, 1, render, ("dev/a", "dev/b")) as narrow:
        limited = Subscriber("limited", "msgpack")
        bus.subscribe(limited, ["dev/**"], 50.0)
        other = Subscriber("other", "msgpack")
        other_box = Outbox("other", other, alike[0].transport, render, fanout_key=KEY)
        other_box.start()
        bus.subscribe(other, ["dev/**"], 50.0)  # a rate-limited subscription keeps its own timing
        try:
            assert alike[0].group is alike[1].group is not None
            assert narrow[0].group is not None
            assert narrow[0].group is not alike[0].group
            assert other_box.group is None
            publish_tick(bus, 0)
            await asyncio.sleep(0)
            assert seqs(await read_messages(alike[1].peer, 4)) == [(topic, 1) for topic in TOPICS]
            assert seqs(await read_messages(narrow[0].peer, 2)) == [("dev/a", 1), ("dev/b", 1)]
        finally:
            other_box.stop()
            bus.detach(other)


async def test_a_client_that_falls_behind_coalesces_without_holding_the_others_back_then_rejoins() -> None:
    bus, render = Bus(), CountingRender()
    async with clients(bus, 3, render, small_buffers=(0,)) as group:
        slow, fast = group[0], group[1:]
        ticks = 1500
        frame_bytes = 0
        peak_buffer = 0
        for tick in range(ticks):
            publish_tick(bus, tick)
            await asyncio.sleep(0)
            frame_bytes = len(RENDER_MSGPACK(bus.latest("dev/a")))  # type: ignore[arg-type]
            peak_buffer = max(peak_buffer, slow.transport._transport.get_write_buffer_size())
            if tick % 100 == 99:  # the fast clients read as they go
                for client in fast:
                    await read_messages(client.peer, 100 * len(TOPICS))
        assert not slow.grouped
        assert slow.subscriber.depth <= len(TOPICS)
        assert slow.subscriber.coalesced > ticks  # most of its samples were replaced unsent
        assert peak_buffer <= HIGH_WATER_BYTES + len(TOPICS) * frame_bytes
        for client in fast:
            assert client.grouped
            assert client.transport.writes == ticks  # never held back by the slow one
        # The slow client reads again: each topic in order, the newest last; then it is back in the group.
        await read_in_order_until_newest(slow.peer, ticks)
        await rejoined(slow)
        writes = slow.transport.writes
        publish_tick(bus, ticks)
        await asyncio.sleep(0)
        assert seqs(await read_messages(slow.peer, 4)) == [(topic, ticks + 1) for topic in TOPICS]
        assert slow.transport.writes == writes + 1


async def test_a_reply_in_mid_iteration_keeps_its_place_and_the_client_rejoins_after_it() -> None:
    bus, render = Bus(), CountingRender()
    async with clients(bus, 2, render) as (replying, other):
        state = controller_state(0.0)
        bus.publish("dev/a", state)
        bus.publish("dev/b", state)
        replying.outbox.push(result(7))
        assert not replying.grouped
        assert other.grouped
        bus.publish("dev/c", state)
        bus.publish("dev/d", state)
        await asyncio.sleep(0)
        publish_tick(bus, 1)
        await asyncio.sleep(0)
        assert ops(await read_messages(replying.peer, 9)) == [
            ("state", "dev/a"),
            ("state", "dev/b"),
            ("result", 7),
            ("state", "dev/c"),
            ("state", "dev/d"),
            *(("state", topic) for topic in TOPICS),
        ]
        assert ops(await read_messages(other.peer, 8)) == [("state", topic) for topic in TOPICS * 2]
        await rejoined(replying)  # caught up: back in the group


async def test_a_reply_between_rounds_is_written_at_once_and_the_client_stays_in_its_group() -> None:
    bus, render = Bus(), CountingRender()
    async with clients(bus, 2, render) as (replying, _other):
        replying.outbox.push(result(8))
        # On the socket before the loop runs again: no writer task wake-up, no round left.
        assert msgpack.unpackb(replying.peer.recv(65536)) == {"op": "result", "id": 8, "ok": True, "data": {}}
        assert replying.grouped
        publish_tick(bus, 1)
        await asyncio.sleep(0)
        assert ops(await read_messages(replying.peer, 4)) == [("state", topic) for topic in TOPICS]
        assert render.calls == len(TOPICS)  # the round was still rendered once for both


#: One step: ("publish", topic), ("reply", client index) or ("tick", None), the end of an iteration.
Action = tuple[str, Any]
actions = st.lists(
    st.one_of(
        st.tuples(st.just("publish"), st.sampled_from(TOPICS)),
        st.tuples(st.just("reply"), st.integers(0, 2)),
        st.just(("tick", None)),
    ),
    max_size=40,
)
#: Two clients share a group (every topic); the third has a group of its own (two topics).
NARROW = ("dev/a", "dev/c")


async def _play(sequence: list[Action]) -> tuple[list[list[tuple[str, Any]]], list[int]]:
    """Run `sequence` against three clients; what each one received, in order, and its `delivered` count."""
    bus = Bus()
    async with clients(bus, 2, RENDER_MSGPACK) as wide, clients(bus, 1, RENDER_MSGPACK, NARROW) as narrow:
        everyone = [*wide, *narrow]
        for position, action in enumerate(sequence, start=1):
            if action[0] == "publish":
                bus.publish(action[1], controller_state(0.0))
            elif action[0] == "reply":
                everyone[action[1]].outbox.push(result(position))  # the request id: its place
            else:
                await asyncio.sleep(0)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        wanted = [_expected(sequence, index) for index in range(3)]
        received = [ops(await read_messages(c.peer, len(w))) for c, w in zip(everyone, wanted, strict=True)]
        return received, [c.subscriber.delivered for c in everyone]


def _expected(sequence: list[Action], index: int) -> list[tuple[str, Any]]:
    """What client `index` must receive: every matching sample and its own replies, in the order they happened."""
    expected: list[tuple[str, Any]] = []
    for position, action in enumerate(sequence, start=1):
        if action[0] == "publish" and (index < 2 or action[1] in NARROW):
            expected.append(("state", action[1]))
        elif action[0] == "reply" and action[1] == index:
            expected.append(("result", position))
    return expected


@settings(max_examples=120, deadline=None)
@given(actions)
def test_replies_and_samples_reach_each_client_in_the_order_they_happened(sequence: list[Action]) -> None:
    # Clients that keep up (their sockets are never full here): nothing is coalesced and nothing
    # overtakes. (Before replies were written at once, a reply waited for the writer task and went
    # ahead of the samples published meanwhile, which the mailbox then coalesced.)
    received, delivered = asyncio.run(_play(sequence))
    assert received == [_expected(sequence, index) for index in range(3)]
    # Each client's count of sent items, whether its group wrote them (counted once a round for all
    # its members) or it took them on its own after a reply stepped it apart.
    assert delivered == [sum(op == "state" for op, _ in messages) for messages in received]


async def test_an_item_of_its_own_in_mid_iteration_keeps_its_place() -> None:
    bus, render = Bus(), CountingRender()
    async with clients(bus, 2, render) as (told, other):
        state = controller_state(0.0)
        bus.publish("dev/a", state)
        told.subscriber.offer(DeviceEvent("dev", "sim", "connected", "", 1.0))  # what Bus.device_event does
        bus.publish("dev/b", state)
        await asyncio.sleep(0)
        assert ops(await read_messages(told.peer, 3)) == [("state", "dev/a"), ("device", "dev"), ("state", "dev/b")]
        assert ops(await read_messages(other.peer, 2)) == [("state", "dev/a"), ("state", "dev/b")]
        assert told.grouped  # its own batch went out, and nothing else waits: back in at once


async def test_subscribing_and_unsubscribing_in_mid_iteration_keep_what_was_published_before() -> None:
    bus, render = Bus(), CountingRender()
    bus.publish("extra/x", controller_state(0.0))
    async with clients(bus, 2, render) as (changing, other):
        first_group = other.group
        state = controller_state(1.0)
        bus.publish("dev/a", state)
        bus.publish("extra/x", state)  # not subscribed yet
        subscription = bus.subscribe(changing.subscriber, ["extra/*"], None)  # the snapshot: extra/x seq 2
        assert changing.group is not first_group
        bus.publish("dev/b", state)
        bus.publish("extra/x", state)
        await asyncio.sleep(0)
        expected = [("dev/a", 1), ("extra/x", 2), ("dev/b", 1), ("extra/x", 3)]
        assert seqs(await read_messages(changing.peer, 4)) == expected
        assert seqs(await read_messages(other.peer, 2)) == [("dev/a", 1), ("dev/b", 1)]

        bus.publish("dev/c", state)
        bus.publish("extra/x", state)
        assert bus.unsubscribe(changing.subscriber, subscription)
        assert changing.group is first_group
        bus.publish("dev/d", state)
        bus.publish("extra/x", state)  # no longer subscribed
        await asyncio.sleep(0)
        publish_tick(bus, 2)
        await asyncio.sleep(0)
        expected_after = [("dev/c", 1), ("extra/x", 4), ("dev/d", 1), *((topic, 2) for topic in TOPICS)]
        assert seqs(await read_messages(changing.peer, 7)) == expected_after
        assert changing.grouped


async def test_a_subscription_that_matches_nothing_yet_keeps_the_client_in_its_group_until_a_topic_matches_it() -> None:
    bus, render = Bus(), CountingRender()
    publish_tick(bus, 0)
    async with clients(bus, 2, render) as (waiting, other):
        for client in (waiting, other):  # each one's snapshot when it subscribed
            assert seqs(await read_messages(client.peer, 4)) == [(topic, 1) for topic in TOPICS]
        shared = other.group
        subscription = bus.subscribe(waiting.subscriber, ["later/*"], None)  # no such topic yet
        assert waiting.group is shared  # a subscription that receives nothing changes nothing
        state = controller_state(1.0)
        bus.publish("dev/a", state)
        bus.publish("later/x", state)  # the first sample of a topic it matches, in mid-iteration
        bus.publish("dev/b", state)
        assert waiting.group is not shared
        await asyncio.sleep(0)
        assert seqs(await read_messages(waiting.peer, 3)) == [("dev/a", 2), ("later/x", 1), ("dev/b", 2)]
        assert seqs(await read_messages(other.peer, 2)) == [("dev/a", 2), ("dev/b", 2)]

        assert bus.unsubscribe(waiting.subscriber, subscription)
        assert waiting.group is shared
        bus.subscribe(waiting.subscriber, ["never/*"], None)
        assert waiting.group is shared
        publish_tick(bus, 2)
        bus.publish("later/x", state)  # no longer subscribed
        await asyncio.sleep(0)
        expected = [("dev/a", 3), ("dev/b", 3), ("dev/c", 2), ("dev/d", 2)]
        assert seqs(await read_messages(waiting.peer, 4)) == expected
        assert seqs(await read_messages(other.peer, 4)) == expected
        await rejoined(waiting)


async def test_a_client_closing_or_vanishing_in_mid_iteration_leaves_the_others_unaffected() -> None:
    bus, render = Bus(), CountingRender()
    loop = asyncio.get_running_loop()
    async with clients(bus, 3, render) as (closing, vanishing, staying):
        group = staying.group
        assert group is not None
        assert group.members == 3
        state = controller_state(0.0)
        last = encode({"op": "close", "code": ErrorCode.GOING_AWAY.value, "reason": "bye"}, "msgpack")
        # All in one iteration, each step a callback of its own, as the device's and the clients' tasks are.
        loop.call_soon(bus.publish, "dev/a", state)
        loop.call_soon(vanishing.outbox.stop)  # the connection is gone: nothing more is written to it
        loop.call_soon(bus.publish, "dev/b", state)
        close = asyncio.create_task(closing.outbox.flush_and_close(ErrorCode.GOING_AWAY, "bye", last))
        loop.call_soon(bus.publish, "dev/c", state)  # after its close began: not for it
        await close
        assert group.members == 1
        publish_tick(bus, 1)
        await asyncio.sleep(0)
        assert ops(await read_messages(closing.peer, 3)) == [("state", "dev/a"), ("state", "dev/b"), ("close", None)]
        assert seqs(await read_messages(staying.peer, 7)) == [
            ("dev/a", 1),
            ("dev/b", 1),
            ("dev/c", 1),
            *((topic, 1 if topic == "dev/d" else 2) for topic in TOPICS),
        ]
        assert vanishing.transport.writes == 0
        staying.outbox.stop()
        assert not groups_of(bus)  # the last one out drops the group


def _packing(limit: int) -> Callable[[list[bytes]], list[bytes]]:
    calls: list[int] = []

    def pack(frames: list[bytes]) -> list[bytes]:
        calls.append(len(frames))
        return pack_messages(frames, "msgpack", limit)

    pack.calls = calls  # type: ignore[attr-defined]
    return pack


async def test_multi_sample_frames_are_packed_once_per_group_within_each_frame_limit() -> None:
    bus, render = Bus(), CountingRender()
    async with clients(bus, 4, render) as group:
        wide, narrow = _packing(1 << 20), _packing(700)
        for client in group[:2]:
            client.outbox.set_combine(wide, ("msgpack", 1 << 20))
        for client in group[2:]:
            client.outbox.set_combine(narrow, ("msgpack", 700))
        assert group[0].group is group[1].group
        assert group[2].group is group[3].group
        assert group[0].group is not group[2].group
        ticks = 10
        for tick in range(ticks):
            publish_tick(bus, tick)
            await asyncio.sleep(0)
        expected = [(topic, tick + 1) for tick in range(ticks) for topic in TOPICS]
        for client in group[:2]:
            received = await read_messages(client.peer, ticks)
            assert all(isinstance(value, list) and len(value) == len(TOPICS) for value in received)
            assert seqs(flat(received)) == expected
        for client in group[2:]:
            received = await read_messages(client.peer, 2 * ticks)  # 3 of about 230 B fit in 700 B, then 1
            assert all(len(msgpack.packb(value)) <= 700 for value in received)
            assert seqs(flat(received)) == expected
        assert wide.calls == narrow.calls == [len(TOPICS)] * ticks  # type: ignore[attr-defined]


async def test_turning_packing_on_in_mid_iteration_keeps_the_order() -> None:
    bus, render = Bus(), CountingRender()
    async with clients(bus, 2, render) as (packing, other):
        state = controller_state(0.0)
        bus.publish("dev/a", state)
        bus.publish("dev/b", state)
        packing.outbox.set_combine(_packing(1 << 20), ("msgpack", 1 << 20))
        assert packing.group is not other.group
        bus.publish("dev/c", state)
        bus.publish("dev/d", state)
        await asyncio.sleep(0)
        received = await read_messages(packing.peer, 2)
        assert all(isinstance(value, list) for value in received)  # what it had batched is packed too
        assert seqs(flat(received)) == [(topic, 1) for topic in TOPICS]
        assert seqs(await read_messages(other.peer, 4)) == [(topic, 1) for topic in TOPICS]
