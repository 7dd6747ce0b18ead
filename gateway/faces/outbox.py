"""Sending to one client of a socket face: its replies in order, then what its bus mailbox holds.

While the client keeps up, each bus item is rendered as it is published and joins the client's batch;
at the end of the event-loop iteration (one `call_soon` for all clients) each batch leaves in one
`write`, so the samples of one device cycle cost one send system call per client, not one each. A
reply is written at once, after what the client was already given, when the peer has room: while a
client keeps up, replies and items reach it in the order they were made. Once a client falls behind,
the mailbox coalesces (newest wins) and one writer task sends queued replies first, then the due
items. Every face with a socket of its own uses this; a face differs only in how it
renders an item (`render`), which should cache its bytes on the item so fan-out encodes once, and
optionally how it packs several rendered items into fewer frames (`Outbox.combine`).

A face whose rendering is the same for every client of one encoding (the native face) gives its
outboxes a `fanout_key`. Outboxes with equal keys, pack modes and subscriptions then form a
`FanoutGroup`: the bus hands it each sample once, and at the end of the iteration it renders and
joins (or packs) the iteration's samples once and writes the same bytes to every member that keeps
up, one `write` each, with no Python work per sample per client. A member that falls behind, gets
a reply queued, or receives an item of its own (a device event, a subscription's snapshot) steps
apart for the rest of the round: from then on its items take the one-by-one path above, in order,
and it rejoins once it has caught up, at a round's boundary.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from typing import Protocol
from weakref import WeakKeyDictionary, ref

from gateway.bus import Bus, Outgoing, Subscriber
from gateway.errors import ErrorCode
from gateway.servers.socket_transport import Target, target_of, write_each

log = logging.getLogger(__name__)

#: Replies waiting for a client that does not read; past this the face stops reading its requests.
MAX_QUEUED_RESULTS = 256
#: Bytes of replies likewise (the default of `server.max_queued_bytes`).
MAX_QUEUED_BYTES = 1024 * 1024
#: Seconds a closing client waits for its last frames to go out.
CLOSE_TIMEOUT_S = 1.0


class Transport(Protocol):
    """A client connection able to send encoded frames and to close."""

    def room(self) -> int:
        """Bytes that may still be written at once; negative when the peer is backed up or gone."""

    def write(self, data: bytes) -> None:
        """Write `data` now, without waiting (the caller checked `room` first)."""

    def try_write(self, data: bytes) -> bool:
        """Write `data` now if the peer has room for all of it; False (nothing written) otherwise."""

    async def send(self, frames: list[bytes]) -> None:
        """Send frames in order, waiting while the peer's buffers are full."""

    async def close(self, code: ErrorCode, reason: str) -> None:
        """Close the connection."""

    def abort(self) -> None:
        """Drop the connection at once, discarding what is unsent."""


#: Packs the rendered frames of several bus items (in order) into the frames to write.
Combine = Callable[[list[bytes]], list[bytes]]


class _Flusher:
    """Writes every batch filled during one event-loop iteration, from one callback at its end.

    Clients that receive the same frames in an iteration (the usual fan-out) share one joined (or
    packed) bytes object: `joined` builds it once per distinct batch and keeps it for the flush.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # Weakly: `_flushers` is keyed weakly by the loop, and a value holding its key would keep it forever.
        self._loop = ref(loop)
        self._due: list[Outbox | FanoutGroup] = []
        # (pack key, ids of the frames) -> (bytes to write, the frames: kept alive so no id is reused).
        self._memo: dict[tuple[Hashable, ...], tuple[bytes, list[bytes]]] = {}

    def joined(self, batch: list[bytes], pack_key: Hashable, combine: Combine | None) -> bytes:
        """The bytes of `batch` (packed by `combine` when set) in one object, built once per flush."""
        key = (pack_key, *map(id, batch))
        cached = self._memo.get(key)
        if cached is None:
            cached = self._memo[key] = (b"".join(batch if combine is None else combine(batch)), batch)
        return cached[0]

    def add(self, outbox: Outbox | FanoutGroup) -> None:
        """Flush `outbox` (or a group) at the end of this iteration (it has just started a batch)."""
        if not self._due:
            loop = self._loop()
            assert loop is not None  # a batch is only filled while its loop lives
            loop.call_soon(self._flush)
        self._due.append(outbox)

    def _flush(self) -> None:
        due, self._due = self._due, []
        try:
            for outbox in due:
                try:
                    outbox.flush_batch(self)
                except Exception:  # one client's failure must not keep the others' batches back
                    log.exception("client %s: writing a batch failed", outbox.name)
        finally:
            self._memo.clear()


class FanoutGroup:
    """Outboxes that receive the same bus items rendered alike; each round is rendered and joined once.

    A round is what the bus handed the group during one event-loop iteration. `members` take the
    round's bytes at its end; `apart` outboxes (behind, or served on their own this round) receive
    each item one by one as it comes, through their subscriber's direct path or mailbox.
    """

    def __init__(self, key: Hashable, bus: Bus, flusher: _Flusher) -> None:
        self.key = key
        self._bus = bus
        self._flusher = flusher
        self._members: list[Outbox] = []
        #: The members' `write_each` targets, in the same order.
        self._targets: list[Target] = []
        self._apart: list[Outbox] = []
        self._items: list[Outgoing] = []
        #: Items written to every member so far: a member's count is what was written while it was
        #: one (from its `_group_base`), added to its subscriber's when it leaves (`_move_out`).
        self._written = 0

    @property
    def name(self) -> str:
        """For logs."""
        return f"group {self.key!r}"

    @property
    def round_under_way(self) -> bool:
        """True when this iteration's round holds items not yet written to the members."""
        return bool(self._items)

    @property
    def members(self) -> int:
        """Outboxes in the group, apart or not."""
        return len(self._members) + len(self._apart)

    def add(self, item: Outgoing) -> None:
        """Take one item of this round (the bus calls this once per item for all the members)."""
        items = self._items
        if not items:
            self._flusher.add(self)
        items.append(item)
        if self._apart:
            for outbox in tuple(self._apart):
                outbox._subscriber.offer(item)

    def enter(self, outbox: Outbox) -> None:
        """Take `outbox` in: apart until the current round ends and it has caught up."""
        self._apart.append(outbox)
        self.rejoin(outbox)

    def leave(self, outbox: Outbox, replay: bool) -> None:
        """Let `outbox` go; with `replay`, it receives on its own what this round has so far."""
        if outbox._grouped:
            self.step_apart(outbox, replay)
        self._apart.remove(outbox)
        groups = _groups.get(self._bus)
        if not self._members and not self._apart and groups is not None and groups.get(self.key) is self:
            del groups[self.key]

    def step_apart(self, outbox: Outbox, replay: bool = True) -> None:
        """Serve `outbox` one item at a time from now on, this round's items so far first."""
        self._move_out(outbox)
        if replay:
            offer = outbox._subscriber.offer
            for item in self._items:
                offer(item)

    def rejoin(self, outbox: Outbox) -> None:
        """Take the round's bytes for `outbox` again, if it has caught up and no round is under way."""
        if not self._items and outbox._caught_up():
            self._move_in(outbox)

    def _move_in(self, outbox: Outbox) -> None:
        outbox._write_batch()  # what it batched on its own goes first
        self._apart.remove(outbox)
        self._members.append(outbox)
        self._targets.append(target_of(outbox._transport))
        outbox._group_base = self._written
        outbox._grouped = True

    def _move_out(self, outbox: Outbox) -> None:
        """`outbox` is no longer written to with the others (its count so far goes to its subscriber)."""
        outbox._grouped = False
        outbox._subscriber.count_delivered(self._written - outbox._group_base)
        index = self._members.index(outbox)
        del self._members[index]
        del self._targets[index]
        self._apart.append(outbox)

    def written_to(self, outbox: Outbox) -> int:
        """Items written to `outbox` as a member that its subscriber does not count yet."""
        return self._written - outbox._group_base if outbox._grouped else 0

    def flush_batch(self, flusher: _Flusher | None = None) -> None:
        """Write this round to every member (one `write` each); members without room fall behind."""
        items = self._items
        if not items:
            return
        self._items = []
        members = self._members
        if members:
            # Every member renders and packs alike (that is what the key says): any one's do for all.
            first = members[0]
            frames = [frame for frame in map(first._render, items) if frame is not None]
            behind: list[Outbox] = []
            if frames:
                combine = first._combine
                data = frames[0] if len(frames) == 1 else b"".join(frames if combine is None else combine(frames))
                for index, error in write_each(self._targets, data):  # once per client per iteration
                    if error is not None:
                        log.error("client %s: writing a batch failed", members[index].name, exc_info=error)
                    behind.append(members[index])
            for outbox in behind:
                # As if each item had found it backed up when published: its mailbox coalesces them.
                self._move_out(outbox)
                enqueue = outbox._subscriber.enqueue
                for item in items:
                    enqueue(item)
            self._written += len(items)  # the members that took this round (or had nothing to take)
        for outbox in tuple(self._apart):
            if outbox._caught_up():
                self._move_in(outbox)


_flushers: WeakKeyDictionary[asyncio.AbstractEventLoop, _Flusher] = WeakKeyDictionary()
#: The fan-out groups of each bus's subscribers, by the key their outboxes give them (the faces' own
#: registry: the bus only hands each group its samples, through `Subscriber.set_group`).
_groups: WeakKeyDictionary[Bus, dict[Hashable, FanoutGroup]] = WeakKeyDictionary()


def groups_of(bus: Bus) -> Mapping[Hashable, FanoutGroup]:
    """The fan-out groups of `bus`'s subscribers now, by key."""
    return _groups.get(bus, {})


def _flusher(loop: asyncio.AbstractEventLoop) -> _Flusher:
    flusher = _flushers.get(loop)
    if flusher is None:
        flusher = _flushers[loop] = _Flusher(loop)
    return flusher


class Outbox:
    """One client's outgoing frames; `render` turns a bus item into the face's bytes (None: skip it).

    A face may set a `combine` (`set_combine`) that packs the rendered bus items of one batch (and
    of one mailbox round) into fewer frames, e.g. the native face's multi-sample array frames.
    Outboxes with an equal `fanout_key` (not None) promise to render every item to the same bytes;
    those that also pack alike and subscribe alike share a `FanoutGroup`.
    """

    def __init__(
        self,
        name: str,
        subscriber: Subscriber,
        transport: Transport,
        render: Callable[[Outgoing], bytes | None],
        max_queued_bytes: int = MAX_QUEUED_BYTES,
        fanout_key: Hashable = None,
    ) -> None:
        self._name = name
        self._fanout_key = fanout_key
        self._group: FanoutGroup | None = None
        #: True while the group writes this round's bytes to it (set by the group).
        self._grouped = False
        #: The group's count of written items when this outbox became a member (set by the group).
        self._group_base = 0
        self._max_queued_bytes = max_queued_bytes
        self._queued_bytes = 0
        self._subscriber = subscriber
        self._transport = transport
        self._render = render
        self._results: deque[bytes] = deque()
        self._room = asyncio.Event()
        self._room.set()
        self._closing = False
        self._stopped = False
        self._sending = False
        self._writer: asyncio.Task[None] | None = None
        self._batch: list[bytes] = []
        self._batch_bytes = 0
        self._batch_room = 0
        self._flusher: _Flusher | None = None
        self._combine: Combine | None = None
        self._pack_key: Hashable = None

    def set_combine(self, combine: Combine | None, pack_key: Hashable = None) -> None:
        """Pack batches with `combine` from now on (None: one frame per item).

        Outboxes whose `combine` gives equal frames for equal input share a `pack_key` (for example
        the encoding and the frame limit), so that a batch sent to many clients is packed once.
        """
        self._combine = combine
        self._pack_key = ("packed", pack_key) if combine is not None else None
        self._regroup()

    @property
    def name(self) -> str:
        """The client's id, for logs."""
        return self._name

    @property
    def closing(self) -> bool:
        """True once the last frames are being sent."""
        return self._closing

    def start(self) -> None:
        """Take over the subscriber's direct path and start the writer."""
        self._flusher = _flusher(asyncio.get_running_loop())
        self._subscriber.direct = self._write_now
        self._subscriber.on_change = self._regroup
        self._subscriber.uncounted = self._written_by_group
        self._writer = asyncio.create_task(self._write_loop(), name=f"client:{self._name}:writer")
        self._writer.add_done_callback(self._writer_done)
        self._regroup()

    def _writer_done(self, writer: asyncio.Task[None]) -> None:
        # The finished task holds its frames (a cancelled one, through its exception's traceback),
        # and they hold this outbox: without this, every connection would wait for the cyclic
        # collector to be freed, buffers and all.
        if self._writer is writer:
            self._writer = None

    def _written_by_group(self) -> int:
        group = self._group
        return group.written_to(self) if group is not None else 0

    @property
    def group(self) -> FanoutGroup | None:
        """The fan-out group this outbox is in (None: it renders and writes on its own)."""
        return self._group

    def _regroup(self) -> None:
        """Join the group of the outboxes that now receive what this one does (or none)."""
        group = self._group
        key: Hashable = None
        bus = self._subscriber.bus
        flusher = self._flusher
        if self._fanout_key is not None and bus is not None and flusher is not None and not self._closing:
            signature = self._subscriber.fanout_signature()
            if signature is not None:
                key = (self._fanout_key, self._pack_key, signature)
        if group is not None and group.key == key:
            return
        if group is not None:
            self._group = None
            group.leave(self, replay=True)
        if key is not None:
            assert bus is not None
            assert flusher is not None
            groups = _groups.setdefault(bus, {})
            found = groups.get(key)
            if found is None:
                found = groups[key] = FanoutGroup(key, bus, flusher)
            self._group = found
            found.enter(self)
        self._subscriber.set_group(self._group)

    def _step_apart(self) -> None:
        """Receive items one by one from now on (this round's so far first), until caught up again."""
        group = self._group
        if group is not None and self._grouped:
            group.step_apart(self)

    def _caught_up(self) -> bool:
        """True when nothing of this client waits: a group may write to it again."""
        return not (self._results or self._sending or self._closing or self._subscriber.depth)

    def push(self, frame: bytes) -> None:
        """Send one reply frame: at once when the peer has room, else queued (in order, ahead of bus items)."""
        if self._write_reply_now(frame):
            return
        self._step_apart()  # the round's items so far go ahead of the reply
        self._results.append(frame)
        self._queued_bytes += len(frame)
        if len(self._results) >= MAX_QUEUED_RESULTS or self._queued_bytes >= self._max_queued_bytes:
            self._room.clear()
        self._subscriber.wakeup.set()

    def _write_reply_now(self, frame: bytes) -> bool:
        """Write a reply now if no earlier reply waits and the peer has room; False: nothing written.

        The writer task would send it one loop iteration later, at the cost of its wake-up: a request
        a client sends often (a subscription's change, say) then costs twice the CPU. What the client
        has already been given (its batch, this round's group items) goes first, as the writer would
        send it; items in its mailbox come after the reply, as they would from the writer.
        """
        if self._results or self._sending or self._closing or self._flusher is None:
            return False
        group = self._group
        if self._grouped and group is not None and group.round_under_way:
            group.step_apart(self)  # this round's items so far join the batch, ahead of the reply
        self._write_batch()
        return self._transport.try_write(frame)

    async def room(self) -> None:
        """Wait while the client has too many unsent replies."""
        await self._room.wait()

    async def flush_and_close(self, code: ErrorCode, reason: str, last: bytes | None) -> None:
        """Send what is queued (and `last`) within `CLOSE_TIMEOUT_S`, then close the transport."""
        if last is not None:
            self.push(last)
        self._step_apart()
        self._closing = True
        self._regroup()
        self._subscriber.wakeup.set()
        writer = self._writer
        if writer is not None:
            try:
                async with asyncio.timeout(CLOSE_TIMEOUT_S):
                    await asyncio.shield(writer)
            except Exception:  # the timeout, or the writer's own failure: stop it either way
                writer.cancel()
        await self._transport.close(code, reason)

    def abort(self) -> None:
        """Stop the writer and drop the connection at once (a client that does not read at shutdown)."""
        self.stop()
        self._transport.abort()

    def stop(self) -> None:
        """Stop the writer now (the connection is gone)."""
        self._closing = True
        self._stopped = True
        self._batch = []
        self._batch_bytes = 0
        self._results.clear()
        if self._subscriber.direct == self._write_now:
            self._subscriber.direct = None  # the subscriber and this outbox no longer hold each other
        if self._subscriber.on_change == self._regroup:
            self._subscriber.on_change = None
        if self._subscriber.uncounted == self._written_by_group:
            self._subscriber.uncounted = None
        group = self._group
        if group is not None:
            self._group = None
            group.leave(self, replay=False)
            self._subscriber.set_group(None)
        if self._writer is not None and not self._writer.done():
            self._writer.cancel()

    def _write_now(self, item: Outgoing) -> bool:
        """Add a pushed item to this iteration's batch when nothing is queued ahead and the peer has room.

        The room is read once per batch: the batch may take items while its bytes stay within what
        the transport had room for when it began (at least one item, as when each was written alone),
        so a batch holds at most the high-water mark plus one frame.
        """
        flusher = self._flusher
        if self._results or self._sending or self._closing or flusher is None:
            return False
        if self._grouped:
            self._step_apart()  # an item of its own: this round's group items go first
        batch = self._batch
        if batch:
            if self._batch_bytes > self._batch_room:
                return False
        else:
            room = self._transport.room()
            if room < 0:
                return False
            self._batch_room = room
        frame = self._render(item)
        if frame is None:
            return True
        if not batch:
            flusher.add(self)
        batch.append(frame)
        self._batch_bytes += len(frame)
        return True

    def flush_batch(self, flusher: _Flusher | None = None) -> None:
        """Write this iteration's batch in one `write` (in order; combined when the face packs frames).

        From the end-of-iteration `flusher`, clients with equal batches share the bytes it joins.
        Then an outbox apart from its group rejoins it if it has caught up.
        """
        self._write_batch(flusher)
        group = self._group
        if group is not None and not self._grouped and not self._stopped:
            group.rejoin(self)

    def _write_batch(self, flusher: _Flusher | None = None) -> None:
        batch = self._batch
        if not batch:
            return
        self._batch = []
        self._batch_bytes = 0
        if self._stopped:
            return  # the connection is gone
        combine = self._combine
        if len(batch) == 1:
            data = batch[0]
        elif flusher is not None:
            data = flusher.joined(batch, self._pack_key, combine)
        else:
            data = b"".join(batch if combine is None else combine(batch))
        self._transport.write(data)

    async def _write_loop(self) -> None:
        try:
            await self._write_until_closed()
        except (ConnectionError, OSError) as error:
            # The peer vanished mid-write; the reader sees the same and ends the connection.
            log.info("client %s: send failed: %s", self._name, error)

    async def _write_until_closed(self) -> None:
        subscriber = self._subscriber
        timeout: float | None = None
        while True:
            if timeout is None:
                await subscriber.wakeup.wait()
            else:
                try:
                    async with asyncio.timeout(timeout):
                        await subscriber.wakeup.wait()
                except TimeoutError:
                    pass
            subscriber.wakeup.clear()
            self.flush_batch()  # what was batched before this wake-up goes first
            frames = list(self._results)
            self._results.clear()
            self._queued_bytes = 0
            self._room.set()
            if self._closing:
                if frames:
                    await self._transport.send(frames)
                return
            due, next_due = subscriber.take_due(time.monotonic())
            rendered = [frame for frame in map(self._render, due) if frame is not None]
            combine = self._combine
            frames.extend(combine(rendered) if combine is not None and len(rendered) > 1 else rendered)
            if frames:
                self._sending = True
                try:
                    await self._transport.send(frames)
                finally:
                    self._sending = False
            group = self._group
            if group is not None and not self._grouped:
                group.rejoin(self)
            timeout = None if next_due is None else max(next_due - time.monotonic(), 0.0)
