"""Helpers the benchmarks share."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

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
