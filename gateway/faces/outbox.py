"""Sending to one client of a socket face: its replies in order, then what its bus mailbox holds.

While the client keeps up, each bus item is written straight to its socket as it is published; once it
falls behind, the mailbox coalesces (newest wins) and one writer task sends replies first, then the
due items. Every face with a socket of its own uses this; a face differs only in how it renders an
item (`render`), which should cache its bytes on the item so fan-out encodes once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

from gateway.bus import Outgoing, Subscriber
from gateway.errors import ErrorCode

log = logging.getLogger(__name__)

#: Replies waiting for a client that does not read; past this the face stops reading its requests.
MAX_QUEUED_RESULTS = 256
#: Bytes of replies likewise (the default of `server.max_queued_bytes`).
MAX_QUEUED_BYTES = 1024 * 1024
#: Seconds a closing client waits for its last frames to go out.
CLOSE_TIMEOUT_S = 1.0


class Transport(Protocol):
    """A client connection able to send encoded frames and to close."""

    def try_write(self, frame: bytes) -> bool:
        """Write `frame` now unless the peer is backed up (then return False and write nothing)."""

    async def send(self, frames: list[bytes]) -> None:
        """Send frames in order, waiting while the peer's buffers are full."""

    async def close(self, code: ErrorCode, reason: str) -> None:
        """Close the connection."""

    def abort(self) -> None:
        """Drop the connection at once, discarding what is unsent."""


class Outbox:
    """One client's outgoing frames; `render` turns a bus item into the face's bytes (None: skip it)."""

    def __init__(
        self,
        name: str,
        subscriber: Subscriber,
        transport: Transport,
        render: Callable[[Outgoing], bytes | None],
        max_queued_bytes: int = MAX_QUEUED_BYTES,
    ) -> None:
        self._name = name
        self._max_queued_bytes = max_queued_bytes
        self._queued_bytes = 0
        self._subscriber = subscriber
        self._transport = transport
        self._render = render
        self._results: deque[bytes] = deque()
        self._room = asyncio.Event()
        self._room.set()
        self._closing = False
        self._sending = False
        self._writer: asyncio.Task[None] | None = None

    @property
    def closing(self) -> bool:
        """True once the last frames are being sent."""
        return self._closing

    def start(self) -> None:
        """Take over the subscriber's direct path and start the writer."""
        self._subscriber.direct = self._write_now
        self._writer = asyncio.create_task(self._write_loop(), name=f"client:{self._name}:writer")

    def push(self, frame: bytes) -> None:
        """Queue one reply frame (replies go out in order, ahead of bus items)."""
        self._results.append(frame)
        self._queued_bytes += len(frame)
        if len(self._results) >= MAX_QUEUED_RESULTS or self._queued_bytes >= self._max_queued_bytes:
            self._room.clear()
        self._subscriber.wakeup.set()

    async def room(self) -> None:
        """Wait while the client has too many unsent replies."""
        await self._room.wait()

    async def flush_and_close(self, code: ErrorCode, reason: str, last: bytes | None) -> None:
        """Send what is queued (and `last`) within `CLOSE_TIMEOUT_S`, then close the transport."""
        if last is not None:
            self.push(last)
        self._closing = True
        self._subscriber.wakeup.set()
        if self._writer is not None:
            try:
                async with asyncio.timeout(CLOSE_TIMEOUT_S):
                    await asyncio.shield(self._writer)
            except Exception:  # the timeout, or the writer's own failure: stop it either way
                self._writer.cancel()
        await self._transport.close(code, reason)

    def abort(self) -> None:
        """Stop the writer and drop the connection at once (a client that does not read at shutdown)."""
        self.stop()
        self._transport.abort()

    def stop(self) -> None:
        """Stop the writer now (the connection is gone)."""
        self._closing = True
        if self._writer is not None and not self._writer.done():
            self._writer.cancel()

    def _write_now(self, item: Outgoing) -> bool:
        """Write a pushed item straight to the socket when nothing is queued ahead of it."""
        if self._results or self._sending or self._closing:
            return False
        frame = self._render(item)
        return True if frame is None else self._transport.try_write(frame)

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
            frames = list(self._results)
            self._results.clear()
            self._queued_bytes = 0
            self._room.set()
            if self._closing:
                if frames:
                    await self._transport.send(frames)
                return
            due, next_due = subscriber.take_due(time.monotonic())
            for item in due:
                frame = self._render(item)
                if frame is not None:
                    frames.append(frame)
            if frames:
                self._sending = True
                try:
                    await self._transport.send(frames)
                finally:
                    self._sending = False
            timeout = None if next_due is None else max(next_due - time.monotonic(), 0.0)
