"""Helpers the benchmarks share."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import json
import math
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: glibc's `mallopt` parameters (malloc.h) and the values `hold_read_buffers_in_heap` gives them, in bytes.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_BYTES = 4 << 20
TRIM_THRESHOLD_BYTES = 64 << 20

#: Fields of /proc/PID/task/TID/schedstat (Documentation/scheduler/sched-stats.rst): time on a core and
#: time runnable but waiting for one, both in ns.
ON_CPU, WAITING = 0, 1


async def read_json_line(stream: asyncio.StreamReader, event: str, timeout: float = 20.0) -> dict[str, Any]:
    """The first JSON line on `stream` whose `event` is `event` (other lines are skipped); `timeout` in s."""
    async with asyncio.timeout(timeout):
        while True:
            line = await stream.readline()
            if not line:
                raise RuntimeError(f"process ended before printing {event!r}")
            with contextlib.suppress(ValueError):
                message: dict[str, Any] = json.loads(line)
                if message.get("event") == event:
                    return message


def thread_times_ns(pid: int, field: int = ON_CPU) -> dict[int, int]:
    """One schedstat field (`ON_CPU` or `WAITING`, in ns) of each live thread of `pid`, by thread id.

    Linux only ({} elsewhere or once the process is gone). Unlike psutil's `cpu_times`, which counts
    10 ms scheduler ticks, this is exact to the nanosecond: a 5 s window at 12 % of a core is 60 ticks,
    too coarse to tell a 3 % difference from noise. The kernel brings a thread's figure up to date
    when the thread leaves its core: read while it runs, it lags by up to one tick.
    """
    times: dict[int, int] = {}
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            times[int(stat.parent.name)] = int(stat.read_text().split()[field])
        except (OSError, IndexError, ValueError):  # a thread that ended meanwhile
            continue
    return times


def thread_seconds_between(before: dict[int, int], after: dict[int, int]) -> float:
    """Seconds the threads of `after` added since `before` (threads that ended in between are not counted)."""
    return sum(ns - before.get(tid, 0) for tid, ns in after.items()) / 1e9


def hold_read_buffers_in_heap() -> bool:
    """Fix this process's malloc thresholds so a socket read costs the same in every run; True once set.

    asyncio reads a stream socket into a fresh 256 KiB buffer (`sock.recv(max_size)`). glibc's malloc
    maps a block that large (its dynamic mmap threshold starts at 128 KiB), shrinks it with `mremap`
    to what was read and unmaps it once freed: three system calls and fresh pages for every read. The
    threshold rises only after a larger block is freed whole, which happens at one point of a
    process's life and not at another; so 500 benchmark clients in one process cost far more in its
    first run than in the later ones (measured: the client process at 96-100 % of a core and p50 9-15 ms
    in the first run, 49-58 % and 3.3-4.0 ms after), and whichever side ran first lost. Fixed thresholds,
    `MMAP_THRESHOLD_BYTES` and `TRIM_THRESHOLD_BYTES`, keep read buffers in the heap from the start
    (both: with the mmap threshold alone the first run stayed slow, the heap's top given back instead).
    Only glibc has these parameters: elsewhere nothing changes and False is returned.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # mallopt returns 1 on success (glibc); a libc that only stubs it returns 0.
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))


def median_interval(values: Iterable[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Two of `values` that hold their distribution's true median with at least `confidence`; None if too few.

    Distribution-free (the sign test's interval): each value falls below the true median with
    probability 1/2, so the k-th smallest of n lies above it with probability P(Binomial(n, 1/2) < k),
    and the k-th smallest and k-th largest enclose it with at least 1 - 2 P(Binomial(n, 1/2) < k).
    The largest such k is taken. Repeats of a benchmark on a shared machine vary run to run in ways
    no normal law describes; this interval assumes only that they are independent. It needs 6 values
    at 95 % (then it is their minimum and maximum); 15 give the 4th smallest and 4th largest.
    Values that are not finite (a run that delivered nothing) are left out.
    """
    ordered = sorted(value for value in values if math.isfinite(value))
    count = len(ordered)
    outside = (1.0 - confidence) / 2.0  # allowed on each side
    below = 0.0  # P(Binomial(count, 1/2) < k)
    k = 0
    while k < count:
        below_next = below + math.comb(count, k) / (1 << count)  # exact integers: no overflow past 1,023 values
        if below_next > outside:
            break
        below, k = below_next, k + 1
    if k == 0:
        return None
    return ordered[k - 1], ordered[count - k]


def spread(values: Iterable[float], suffix: str = "") -> str:
    """`1.08x (0.91-1.30; median 1.03-1.12 at 95 %)`: median, range and (from 6 values) `median_interval`.

    Not-finite values are left out; `suffix` follows the median ("x" for ratios).
    """
    finite = sorted(value for value in values if math.isfinite(value))
    if not finite:
        return "n/a"
    interval = median_interval(finite)
    at_95 = f"; median {interval[0]:.2f}-{interval[1]:.2f} at 95 %" if interval else ""
    return f"{statistics.median(finite):.2f}{suffix} ({finite[0]:.2f}-{finite[-1]:.2f}{at_95})"


def positive_int(text: str) -> int:
    """An argparse type: a whole number above 0 (a count of calls, repeats, clients)."""
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a number above 0 (seconds, a rate in Hz)."""
    value = float(text)
    if not value > 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value
