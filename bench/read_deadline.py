"""What a stream connection's read deadline costs: per read, and per timer of the whole process.

The stream faces (msgpack, TDM) read each connection under a deadline (auth, an unfinished message,
idle: gateway/servers/stream_listener.py). Three ways side by side, in one process, no sockets:

- `none`: no deadline (the bare read);
- `timeout_at`: `asyncio.timeout_at` around each read, what the gateway did before: a timer made
  and cancelled per read, and one in the loop's heap per waiting connection;
- `shared`: `gateway.servers.read_deadlines` (one timer per loop; a read stores its deadline).

Measured:
- **per read**: µs of CPU (`time.thread_time`) per `StreamReader.read` of data already buffered,
  under each way: what the deadline adds to every read of a busy client;
- **per tick**: µs of CPU per wake-up of a task sleeping on a timer (`asyncio.sleep`, as a device's
  tick does; due at once, so no wait is timed) while `--clients` connections wait for data under
  each way: what their deadlines add to every timer of the process (a timer is pushed and popped
  through the loop's heap, comparing in Python, `TimerHandle.__lt__`).
Each figure is the median of `--repeats` interleaved runs; ratios are to `none`.

Run:  .venv/bin/python bench/read_deadline.py [--reads 20000] [--ticks 2000] [--clients 50] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import positive_int  # noqa: E402 - after the path fix
from gateway.servers.read_deadlines import read_deadlines  # noqa: E402

WAYS = ("none", "timeout_at", "shared")
#: The deadline of every read: never reached in a run (as an idle deadline of a client that reads).
DEADLINE_S = 3600.0
CHUNK = b"x" * 64
#: A tick's sleep, s: due at once, so a tick is the timer's work and no wait (`sleep(0)` would make no timer).
TICK_S = 1e-9

Reader = Callable[[asyncio.StreamReader], Coroutine[Any, Any, bytes]]


def reader_for(way: str) -> Reader:
    """A read of 64 bytes under `way`'s deadline (`DEADLINE_S` from now)."""
    if way == "none":

        async def read(reader: asyncio.StreamReader) -> bytes:
            return await reader.read(len(CHUNK))

    elif way == "timeout_at":

        async def read(reader: asyncio.StreamReader) -> bytes:
            loop = asyncio.get_running_loop()
            async with asyncio.timeout_at(loop.time() + DEADLINE_S):
                return await reader.read(len(CHUNK))

    else:
        deadlines: dict[asyncio.StreamReader, Any] = {}

        async def read(reader: asyncio.StreamReader) -> bytes:
            deadline = deadlines.get(reader)
            if deadline is None:
                deadline = deadlines[reader] = read_deadlines().watch(reader)
            deadline.arm(time.monotonic() + DEADLINE_S, "idle")
            data = await reader.read(len(CHUNK))
            deadline.disarm()
            return data

    return read


async def per_read_us(way: str, reads: int) -> float:
    """µs of CPU per read of buffered data under `way`."""
    read, reader = reader_for(way), asyncio.StreamReader()
    started = time.thread_time()
    for _ in range(reads):
        reader.feed_data(CHUNK)
        await read(reader)
    return (time.thread_time() - started) / reads * 1e6


async def per_tick_us(way: str, ticks: int, clients: int) -> float:
    """µs of CPU per timer wake-up while `clients` readers wait for data under `way`."""
    read = reader_for(way)
    waiting = [asyncio.ensure_future(read(asyncio.StreamReader())) for _ in range(clients)]
    await asyncio.sleep(0)  # every reader is waiting, its deadline set
    started = time.thread_time()
    for _ in range(ticks):
        await asyncio.sleep(TICK_S)
    spent = time.thread_time() - started
    for task in waiting:
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.gather(*waiting)
    return spent / ticks * 1e6


def measure(reads: int, ticks: int, clients: int, repeats: int) -> dict[str, dict[str, float]]:
    """Median over `repeats` of each way's µs per read and per tick (each repeat in a new loop)."""
    runs: dict[str, dict[str, list[float]]] = {way: {"read": [], "tick": []} for way in WAYS}
    for _ in range(repeats):
        for way in WAYS:  # interleaved, so a noisy moment falls on every way
            runs[way]["read"].append(asyncio.run(per_read_us(way, reads)))
            runs[way]["tick"].append(asyncio.run(per_tick_us(way, ticks, clients)))
    return {way: {kind: statistics.median(values) for kind, values in kinds.items()} for way, kinds in runs.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--reads", type=positive_int, default=20000, help="reads timed per way and repeat")
    parser.add_argument("--ticks", type=positive_int, default=2000, help="timer wake-ups timed per way and repeat")
    parser.add_argument("--clients", type=positive_int, default=50, help="connections waiting during the ticks")
    parser.add_argument("--repeats", type=positive_int, default=5, help="interleaved repeats (median taken)")
    args = parser.parse_args(argv)
    result = measure(args.reads, args.ticks, args.clients, args.repeats)
    bare = result["none"]
    print(f"µs of CPU, median of {args.repeats} repeats; ratio to no deadline:")
    for kind, label in (("read", "per read"), ("tick", f"per timer wake-up, {args.clients} connections waiting")):
        cells = ", ".join(f"{way} {result[way][kind]:.2f} ({result[way][kind] / bare[kind]:.2f}x)" for way in WAYS)
        print(f"{label}: {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
