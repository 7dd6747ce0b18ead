"""A dedicated thread for a periodic control loop, and the two hand-overs it has with the event loop.

Why a thread: a 1 kHz loop on the gateway's event loop waits behind every client's work, and behind
asyncio's timers, which wake on whole milliseconds. A thread that sleeps on absolute deadlines
(`select` with a microsecond timeout, then a short spin) is woken by the kernel at its deadline
whatever the event loop is doing. Python's GIL still runs one thread at a time: while such a thread
runs, the interpreter's switch interval is lowered so that a woken loop waits at most that long for
a busy event loop to let go (a thread blocked in a system call never holds it).

Hand-overs, neither of which ever blocks either side:

- `ToLoop`: thread -> event loop, a bounded queue drained by one `call_soon_threadsafe` callback at
  a time; when the event loop falls behind, the oldest items are replaced (counted), so a busy loop
  never accumulates work.
- `Latest`: event loop -> thread, a latest-value slot (one reference, swapped atomically).

`RealtimeThread` runs a body on its own thread with optional SCHED_FIFO priority and CPU affinity
(`SchedulingPolicy`), applied when the process may (CAP_SYS_NICE), else logged once at info.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

#: The interpreter's switch interval while a real-time thread runs (s): how long a woken loop can
#: wait for the GIL behind a busy event loop. CPython's default is 5 ms, five periods at 1 kHz.
SWITCH_INTERVAL_S = 0.0002
#: Timer slack asked of the kernel for a real-time thread (ns); Linux's default of 50 µs is added
#: to every timed wait of a normal thread.
TIMER_SLACK_NS = 1
_PR_SET_TIMERSLACK = 29
#: Waits longer than this (ns) sleep first in poll(), which `stop` interrupts.
_LONG_WAIT_NS = 2_000_000

_switch_lock = threading.Lock()
_switch_users = 0
_switch_saved = 0.0
_refusal_logged = False


@dataclass(frozen=True, slots=True)
class SchedulingPolicy:
    """How a real-time thread asks to be scheduled.

    `priority`: SCHED_FIFO priority, 1 (lowest) to 99; 0 keeps normal scheduling. `cpus`: the CPUs
    the thread may run on (Linux numbering); empty leaves it on every CPU of the process. Both need
    CAP_SYS_NICE (or root) for SCHED_FIFO; a refusal is logged once, at info, and the thread runs
    with normal scheduling.
    """

    priority: int = 0
    cpus: tuple[int, ...] = ()


#: Normal scheduling on every CPU.
NORMAL = SchedulingPolicy()


def apply_policy(policy: SchedulingPolicy, name: str) -> str:
    """Apply `policy` to the calling thread; return what is in force, in words."""
    global _refusal_logged
    applied: list[str] = []
    _set_timer_slack(TIMER_SLACK_NS)
    if policy.cpus:
        try:
            os.sched_setaffinity(0, policy.cpus)
            applied.append(f"CPUs {','.join(map(str, policy.cpus))}")
        except (OSError, ValueError) as error:
            applied.append(f"every CPU (affinity {list(policy.cpus)} refused: {error})")
    if policy.priority > 0:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(policy.priority))
            applied.append(f"SCHED_FIFO priority {policy.priority}")
        except OSError as error:
            applied.append("normal scheduling")
            if not _refusal_logged:
                _refusal_logged = True
                log.info(
                    "%s: SCHED_FIFO refused (%s); running with normal scheduling. Grant CAP_SYS_NICE "
                    "(the systemd unit does) for real-time priority.",
                    name,
                    error.strerror or error,
                )
    else:
        applied.append("normal scheduling")
    return ", ".join(applied)


def _set_timer_slack(nanoseconds: int) -> None:
    """Best effort: PR_SET_TIMERSLACK on the calling thread (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_TIMERSLACK, nanoseconds, 0, 0, 0)


def _lower_switch_interval(interval_s: float) -> None:
    global _switch_users, _switch_saved
    with _switch_lock:
        if _switch_users == 0:
            _switch_saved = sys.getswitchinterval()
        sys.setswitchinterval(min(sys.getswitchinterval(), interval_s))
        _switch_users += 1


def _restore_switch_interval() -> None:
    global _switch_users
    with _switch_lock:
        _switch_users -= 1
        if _switch_users == 0:
            sys.setswitchinterval(_switch_saved)


class Latest(Generic[T]):
    """A latest-value slot: one side `put`s, the other reads `value`; a reference swap, no lock."""

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value

    def put(self, value: T) -> None:
        """Replace the value; the reader sees the old or the new one, never a mix."""
        self.value = value


class ToLoop(Generic[T]):
    """Items from a thread to an event loop's `deliver`, in order, bounded, never blocking.

    At most one drain callback is scheduled at a time, however many items arrive before the loop
    runs it; past `capacity` waiting items the oldest are dropped (`overwritten` counts them).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, deliver: Callable[[T], None], capacity: int = 256) -> None:
        self._loop = loop
        self._deliver = deliver
        self._items: deque[T] = deque(maxlen=capacity)
        self._scheduled = False
        #: Items dropped because the event loop had not taken them when newer ones arrived.
        self.overwritten = 0

    def post(self, item: T) -> None:
        """Queue `item` (from any thread); wake the loop unless a drain is already on its way."""
        items = self._items
        if len(items) == items.maxlen:
            self.overwritten += 1
        items.append(item)  # deque.append is atomic; maxlen drops the oldest
        if not self._scheduled:
            self._scheduled = True
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is left to tell
                self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        # Cleared before taking, so an item posted meanwhile schedules the next drain.
        self._scheduled = False
        items = self._items
        while True:
            try:
                item = items.popleft()
            except IndexError:
                return
            self._deliver(item)


class RealtimeThread:
    """Runs `body(self)` on a dedicated daemon thread until `stop`; `wait` sleeps to a deadline.

    `switch_interval_s`: the interpreter's switch interval while the thread runs (None: leave it);
    lower means a woken thread waits less for a busy event loop, and every thread switches (and
    spends CPU on switching) more often.

    The body loops on `while not thread.stopping`, sleeping with `wait` (to a deadline) or
    `wait_readable` (for a socket); `stop` interrupts either within a millisecond. `spin_ns`: the
    end of each wait is spent polling the clock rather than in the kernel, which wakes a normal
    thread 50-100 µs late (a SCHED_FIFO one about half that).
    """

    def __init__(
        self,
        name: str,
        body: Callable[[RealtimeThread], None],
        policy: SchedulingPolicy = NORMAL,
        spin_ns: int = 100_000,
        switch_interval_s: float | None = SWITCH_INTERVAL_S,
    ) -> None:
        self.name = name
        self.policy = policy
        self.spin_ns = spin_ns
        self.switch_interval_s = switch_interval_s
        #: What `apply_policy` put in force, once the thread started.
        self.scheduling = ""
        #: The exception that ended the body, if one did.
        self.error: BaseException | None = None
        self._body = body
        self._stopping = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._wake_poll = select.poll()
        self._wake_poll.register(self._wake_r, select.POLLIN)
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._started = threading.Event()

    @property
    def stopping(self) -> bool:
        """True once `stop` was called."""
        return self._stopping

    @property
    def alive(self) -> bool:
        """Whether the thread is still running."""
        return self._thread.is_alive()

    @property
    def native_id(self) -> int | None:
        """The kernel's id of the thread (for `os.sched_getscheduler`), once started."""
        return self._thread.native_id

    def start(self) -> None:
        """Start the thread; return once it applied its scheduling policy."""
        if self.switch_interval_s is not None:
            _lower_switch_interval(self.switch_interval_s)
        self._thread.start()
        self._started.wait(1.0)

    def stop(self, timeout_s: float = 1.0) -> bool:
        """Ask the body to end, wake it, and join for at most `timeout_s`; True if it ended."""
        self._stopping = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")
        if self._thread.ident is not None and threading.current_thread() is not self._thread:
            self._thread.join(timeout_s)
        if self._thread.is_alive():
            log.warning("%s: the real-time thread did not end within %.1f s", self.name, timeout_s)
            return False
        # Closed only once the thread is gone, so no wait of its uses a closed (or reused) descriptor.
        self._wake_r.close()
        self._wake_w.close()
        return True

    def wait(self, deadline_ns: int) -> None:
        """Sleep until `deadline_ns` (`time.perf_counter_ns`), or less if `stop` is called."""
        remaining = deadline_ns - self.spin_ns - time.perf_counter_ns()
        if remaining > _LONG_WAIT_NS:
            # poll() counts whole milliseconds: wait in it for most of a long sleep, stop-aware.
            if self._wake_poll.poll((remaining - _LONG_WAIT_NS // 2) // 1_000_000):
                return
            remaining = deadline_ns - self.spin_ns - time.perf_counter_ns()
        if remaining > 0:
            time.sleep(remaining / 1e9)  # clock_nanosleep: microsecond resolution
        while not self._stopping and time.perf_counter_ns() < deadline_ns:
            pass  # the spin: `spin_ns` at most; the lowered switch interval still lets the event loop in

    def wait_readable(self, sock: socket.socket, timeout_s: float) -> bool:
        """Wait up to `timeout_s` (millisecond resolution) for `sock` to be readable, or for `stop`."""
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        ready = {fd for fd, _ in poller.poll(max(timeout_s, 0.0) * 1000)}
        return sock.fileno() in ready

    def _main(self) -> None:
        try:
            self.scheduling = apply_policy(self.policy, self.name)
            self._started.set()
            self._body(self)
        except BaseException as error:  # kept for the owner, which decides what it means
            self.error = error
            log.exception("%s: the real-time thread failed", self.name)
        finally:
            self._started.set()
            if self.switch_interval_s is not None:
                _restore_switch_interval()
