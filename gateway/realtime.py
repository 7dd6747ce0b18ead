"""What a periodic control loop needs from the operating system: a deadline sleep and a scheduling policy.

A 1 kHz loop runs in a small process of its own (devices/kortex/cyclic_process.py), not on the
gateway's event loop nor on one of its threads: in the gateway's process every thread shares one
interpreter lock with the event loop serving the clients, and a garbage collection there stops
them all for 1-45 ms. In its own process the loop sleeps on absolute deadlines with a `Pacer`
(`select.poll` for long waits, `clock_nanosleep` to just before the deadline, then a short spin),
so the kernel wakes it at its deadline whatever the gateway does.

`apply_policy` gives the calling thread (the loop process's only one) SCHED_FIFO priority and CPU
affinity (`SchedulingPolicy`) when the process may (CAP_SYS_NICE), else logs the refusal once at info.
`keep_off_cpus` moves the daemon itself off the CPUs its loops are pinned to.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import select
import socket
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

#: Timer slack asked of the kernel for a real-time loop (ns); Linux's default of 50 µs is added
#: to every timed wait of a normal thread.
TIMER_SLACK_NS = 1
_PR_SET_TIMERSLACK = 29
#: Waits longer than this (ns) sleep first in poll(), which `Pacer.stop` interrupts.
_LONG_WAIT_NS = 2_000_000

_refusal_logged = False


@dataclass(frozen=True, slots=True)
class SchedulingPolicy:
    """How a real-time loop asks to be scheduled.

    `priority`: SCHED_FIFO priority, 1 (lowest) to 99; 0 keeps normal scheduling. `cpus`: the CPUs
    the loop may run on (Linux numbering); empty leaves it on every CPU. SCHED_FIFO needs
    CAP_SYS_NICE (or root); a refusal is logged once, at info, and the loop runs with normal
    scheduling.
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
                    "%s: SCHED_FIFO refused (%s); running with normal scheduling. For real-time priority, grant "
                    "CAP_SYS_NICE (the systemd unit does) or raise RLIMIT_RTPRIO to at least the priority.",
                    name,
                    error.strerror or error,
                )
    else:
        applied.append("normal scheduling")
    return ", ".join(applied)


def keep_off_cpus(cpus: frozenset[int]) -> str | None:
    """Move every thread of this process off `cpus` (its loops' own); what was done, in words.

    A loop pinned to a CPU with normal scheduling (no CAP_SYS_NICE) still shares that CPU with the
    daemon's event loop unless the daemon leaves it; processes started afterwards (the loops
    themselves) may still pin themselves there. None: nothing to do, or nothing would be left.
    """
    if not cpus:
        return None
    try:
        allowed = os.sched_getaffinity(0)
        rest = allowed - cpus
        if not rest or rest == allowed:
            return None
        for thread in os.listdir("/proc/self/task"):
            with contextlib.suppress(ProcessLookupError):  # a thread that just ended
                os.sched_setaffinity(int(thread), rest)
    except OSError as error:
        log.info("could not keep the daemon off its loops' CPUs %s: %s", sorted(cpus), error.strerror or error)
        return None
    done = f"the daemon runs on CPUs {_cpu_list(rest)}, leaving {_cpu_list(cpus)} to its loops"
    log.info("%s", done)
    return done


def _cpu_list(cpus: set[int] | frozenset[int]) -> str:
    """CPU numbers as the logs write them: "0,1,2"."""
    return ",".join(map(str, sorted(cpus)))


def _set_timer_slack(nanoseconds: int) -> None:
    """Best effort: PR_SET_TIMERSLACK on the calling thread (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_TIMERSLACK, nanoseconds, 0, 0, 0)


class Pacer:
    """Sleeps a loop to absolute deadlines (`time.perf_counter_ns`); `stop` cuts any wait short.

    `spin_ns`: the end of each wait is spent polling the clock rather than in the kernel, which
    wakes a normal thread 50-100 µs late (a SCHED_FIFO one about half that). Waits longer than
    2 ms sleep in poll() first, which `stop` and any `watch`ed socket end early.
    """

    def __init__(self, spin_ns: int = 100_000) -> None:
        self.spin_ns = spin_ns
        self._stopping = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._wake_poll = select.poll()
        self._wake_poll.register(self._wake_r, select.POLLIN)

    @property
    def stopping(self) -> bool:
        """True once `stop` was called."""
        return self._stopping

    def stop(self) -> None:
        """Mark the loop stopping and wake any wait (safe from a signal handler)."""
        self._stopping = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")

    def watch(self, sock: socket.socket) -> None:
        """Also end long waits when `sock` becomes readable (a loop's control socket, at low rates)."""
        self._wake_poll.register(sock, select.POLLIN)

    def woken(self) -> bool:
        """Whether the wake-up socket was written to (by `stop` or a signal); drains it."""
        woke = False
        with contextlib.suppress(BlockingIOError):
            while self._wake_r.recv(64):
                woke = True
        return woke

    def wait(self, deadline_ns: int) -> None:
        """Sleep until `deadline_ns`, or less if `stop` is called or a watched socket is readable."""
        remaining = deadline_ns - self.spin_ns - time.perf_counter_ns()
        if remaining > _LONG_WAIT_NS:
            # poll() counts whole milliseconds: wait in it for most of a long sleep, stop- and watch-aware.
            if self._wake_poll.poll((remaining - _LONG_WAIT_NS // 2) // 1_000_000):
                return
            remaining = deadline_ns - self.spin_ns - time.perf_counter_ns()
        if remaining > 0:
            time.sleep(remaining / 1e9)  # clock_nanosleep: microsecond resolution
        while not self._stopping and time.perf_counter_ns() < deadline_ns:
            pass  # the spin: `spin_ns` at most

    def close(self) -> None:
        """Close the wake-up socket."""
        self._wake_r.close()
        self._wake_w.close()
