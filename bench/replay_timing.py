"""How closely a replay keeps the recorded timing, against a bare asyncio loop keeping the same schedule.

Method: a recording of `--messages` messages on one topic, `--period-ms` apart (`tests.mcap_files`),
played by the real daemon (`python -m gateway run`, one `kind = "replay"` device, `delay_s` 1.5)
to one WebSocket client subscribed to it, at speed 1 and at speed 10; the receipt time of each
message (this process's `time.monotonic()`). The **bare** side is this process alone: an asyncio task
that sleeps to the same absolute deadlines (the schedule at speed 1) and notes when it wakes.

Reported, as medians over `--repeats` runs (the sides alternate):
- speed 1: each message's lag, its receipt offset from the first message minus its recorded offset,
  p50/p99/max of |lag| (ms); the bare side's lateness to its deadlines likewise; ratios gateway/bare.
- speed 10: the received span over a tenth of the recorded span (1.0 is exact).
The old test bounds: speed-1 lag under 250 ms, speed-10 span under a third of the recorded span.

Run:  scripts/loopback-only.sh .venv/bin/python bench/replay_timing.py [--messages 200] [--period-ms 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import websockets

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.harness import WsClient, gateway_config, start_gateway  # noqa: E402 - after the path fix above
from tests.mcap_files import many_messages  # noqa: E402

TOPIC = "pad/state"


def _abs_ms(values: list[float]) -> dict[str, float]:
    """p50/p99/max of |value| in ms (values in s)."""
    magnitudes = sorted(abs(v) * 1000 for v in values)
    cuts = statistics.quantiles(magnitudes, n=100, method="inclusive")
    return {"p50_ms": cuts[49], "p99_ms": cuts[98], "max_ms": magnitudes[-1]}


async def replayed(folder: Path, recording: Path, speed: float, count: int) -> list[float]:
    """Receipt times (s, monotonic) of the `count` messages a gateway replaying `recording` sends."""
    device = f'[devices.player]\nkind = "replay"\nfile = {json.dumps(str(recording))}\nspeed = {speed}\ndelay_s = 1.5\n'
    gateway = await start_gateway(folder, gateway_config(folder, devices=device))
    received: list[float] = []
    try:
        async with websockets.connect(f"ws://127.0.0.1:{gateway.http_port}/ws", max_size=None) as ws:
            client = await WsClient(ws).start()
            await client.ok("subscribe", topics=[TOPIC])
            async with asyncio.timeout(60 + count * 0.1):
                while len(received) < count:
                    message = await client.recv(30)
                    if message["op"] == "state" and message["topic"] == TOPIC:
                        received.append(time.monotonic())
    finally:
        await gateway.stop()
    return received


async def bare(offsets: list[float]) -> list[float]:
    """Wake-up times (s, monotonic) of a task sleeping to `offsets` after it starts."""
    started = time.monotonic()
    woke = []
    for offset in offsets:
        await asyncio.sleep(max(started + offset - time.monotonic(), 0.0))
        woke.append(time.monotonic())
    return woke


def lags(times: list[float], offsets: list[float]) -> list[float]:
    """Each time's offset from the first, minus the schedule's offset from its first (s)."""
    return [(at - times[0]) - (offset - offsets[0]) for at, offset in zip(times, offsets, strict=True)]


async def main(args: argparse.Namespace) -> None:
    period_s = args.period_ms / 1000
    offsets = [index * period_s for index in range(args.messages)]
    recorded_span = offsets[-1] - offsets[0]
    runs: dict[str, list[dict[str, float]]] = {"gateway speed 1": [], "bare": []}
    spans: list[float] = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        recording = many_messages(folder / "steady.mcap", args.messages, step_ns=args.period_ms * 1_000_000)
        for repeat in range(args.repeats):
            for side in ("gateway", "bare") if repeat % 2 == 0 else ("bare", "gateway"):
                if side == "bare":
                    runs["bare"].append(_abs_ms(lags(await bare(offsets), offsets)))
                else:
                    times = await replayed(folder, recording, 1.0, args.messages)
                    runs["gateway speed 1"].append(_abs_ms(lags(times, offsets)))
            fast = await replayed(folder, recording, 10.0, args.messages)
            spans.append((fast[-1] - fast[0]) / (recorded_span / 10))
    median = {side: {key: statistics.median(r[key] for r in rs) for key in rs[0]} for side, rs in runs.items()}
    report: dict[str, Any] = {
        "messages": args.messages,
        "period_ms": args.period_ms,
        "repeats": args.repeats,
        "speed 1 |lag| median": median,
        "speed 1 gateway/bare": {key: median["gateway speed 1"][key] / median["bare"][key] for key in median["bare"]},
        "speed 10 span / (recorded span / 10) median": statistics.median(spans),
        "load_average": list(psutil.getloadavg()),
    }
    print(json.dumps(report, indent=2))


def cli(argv: list[str] | None = None) -> None:
    """Parse the arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=200, help="messages in the recording")
    parser.add_argument("--period-ms", type=int, default=10, help="recorded time between two messages (ms)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each side (medians reported)")
    args = parser.parse_args(argv)
    if args.messages < 2 or args.period_ms < 1 or args.repeats < 1:
        parser.error("--messages must be at least 2, --period-ms and --repeats positive")
    asyncio.run(main(args))


if __name__ == "__main__":
    cli()
