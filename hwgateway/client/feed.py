"""A bounded queue that one producer fills and one async consumer drains, and that can be ended."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class Feed(Generic[T]):
    """Holds at most `size` items (the oldest go first, counted in `dropped`); `end` wakes the consumer."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"queue size must be at least 1, got {size}")
        self._items: deque[T] = deque(maxlen=size)
        self._ready = asyncio.Event()
        self._ended = False
        self._error: BaseException | None = None
        self.dropped = 0

    @property
    def ended(self) -> bool:
        """True once `end` was called."""
        return self._ended

    def put(self, item: T) -> None:
        """Add an item (ignored after `end`)."""
        if self._ended:
            return
        if len(self._items) == self._items.maxlen:
            self.dropped += 1
        self._items.append(item)
        self._ready.set()

    def end(self, error: BaseException | None = None) -> None:
        """No more items: the consumer gets what is left, then `error` (or the end of iteration)."""
        if not self._ended:
            self._ended = True
            self._error = error
            self._ready.set()

    async def get(self) -> T:
        """The next item; raise the end's error, or `StopAsyncIteration` when ended without one."""
        while not self._items:
            if self._ended:
                if self._error is not None:
                    raise self._error
                raise StopAsyncIteration
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()
