"""The read deadlines of every stream connection of an event loop, kept by one timer.

A stream face waits for each read under a deadline (auth, an unfinished message, idle:
`gateway.servers.stream_listener`). Given to `asyncio.timeout_at`, each read made a timer and
cancelled it, and every connection kept one in the loop's heap, which every timer of the process
(a device's tick among them) was then pushed and popped through, comparing in Python: with 50 idle
msgpack clients the heap held 53 timers where the fan-out floor's holds 3 (docs/performance.md).

Here a read only stores its deadline (`Deadline.arm`, a float), and one timer per loop wakes at the
earliest deadline set, ends the reads whose deadline has passed and sleeps until the next: a
deadline that moves later (the usual case, a read restarting the idle time) costs no timer work.
A read whose deadline passes fails with `DeadlinePassed` through its `asyncio.StreamReader`
(`set_exception`, as a lost connection fails it), naming which deadline it was.
"""

from __future__ import annotations

import asyncio
import math
import time
from weakref import WeakKeyDictionary, ref

#: A timer is due within this of its time (asyncio fires timers so: the clock's resolution, s).
_RESOLUTION = time.get_clock_info("monotonic").resolution


class DeadlinePassed(TimeoutError):
    """A read's deadline passed; `which` names it ("auth", "partial" or "idle")."""

    def __init__(self, which: str) -> None:
        super().__init__(f"the {which} deadline passed")
        self.which = which


class Deadline:
    """The deadline of one connection's reads, on its reader, armed before each read."""

    __slots__ = ("_reader", "_watch", "when", "which")

    def __init__(self, reader: asyncio.StreamReader, watch: ReadDeadlines) -> None:
        self._reader = reader
        self._watch = watch
        #: `time.monotonic()` by which the read under way must end; `math.inf`: none (not reading).
        self.when = math.inf
        #: The deadline's name, for `DeadlinePassed`.
        self.which = ""

    def arm(self, when: float, which: str) -> None:
        """The read about to start must end by `when` (`time.monotonic()`, s); `math.inf`: no deadline."""
        self.when = when
        self.which = which
        if when < self._watch.due:
            self._watch.wake_at(when)

    def disarm(self) -> None:
        """The read ended: no deadline until the next `arm`."""
        self.when = math.inf

    def expire(self) -> None:
        """Fail the read under way (or the next one) with `DeadlinePassed`."""
        self.when = math.inf
        self._reader.set_exception(DeadlinePassed(self.which))

    def close(self) -> None:
        """The connection's reading is over: forget it."""
        self._watch.forget(self)


class ReadDeadlines:
    """The deadlines of one event loop's stream connections, and the one timer that keeps them."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # Both weakly: `_watches` is keyed weakly by the loop, and a value holding its key (a timer
        # holds its loop) would keep it forever. A closed loop drops its timers.
        self._loop = ref(loop)
        self._deadlines: set[Deadline] = set()
        self._timer: ref[asyncio.TimerHandle] | None = None
        #: When the timer fires (`time.monotonic()`, s); `math.inf` when none is set.
        self.due = math.inf

    def watch(self, reader: asyncio.StreamReader) -> Deadline:
        """A deadline for the reads of `reader` (disarmed until its first `arm`)."""
        deadline = Deadline(reader, self)
        self._deadlines.add(deadline)
        return deadline

    def forget(self, deadline: Deadline) -> None:
        """Stop keeping `deadline` (its timer runs on until it is due, then finds nothing)."""
        self._deadlines.discard(deadline)

    def wake_at(self, when: float) -> None:
        """Fire at `when` (`time.monotonic()`, s), earlier than set so far."""
        timer = None if self._timer is None else self._timer()
        if timer is not None:
            timer.cancel()
        loop = self._loop()
        assert loop is not None  # deadlines are armed only while their loop runs
        self.due = when
        self._timer = ref(loop.call_at(loop.time() + when - time.monotonic(), self._fire))

    def _fire(self) -> None:
        self._timer = None
        self.due = math.inf
        now = time.monotonic() + _RESOLUTION
        earliest = math.inf
        for deadline in tuple(self._deadlines):
            when = deadline.when
            if when <= now:
                deadline.expire()
            elif when < earliest:
                earliest = when
        if earliest != math.inf:
            self.wake_at(earliest)


_watches: WeakKeyDictionary[asyncio.AbstractEventLoop, ReadDeadlines] = WeakKeyDictionary()


def read_deadlines() -> ReadDeadlines:
    """The running loop's `ReadDeadlines` (made on first use)."""
    loop = asyncio.get_running_loop()
    watch = _watches.get(loop)
    if watch is None:
        watch = _watches[loop] = ReadDeadlines(loop)
    return watch
