"""Foxglove fan-out: N Foxglove WebSocket clients against N native /ws clients of the same gateway build.

Method (as bench/fanout.py): each repeat runs two fresh daemons (`python -m gateway run`, one sim device
at `--rate` Hz, the Foxglove listener on), one measured with N native clients subscribed on `/ws`, the
other with N Foxglove clients (`foxglove.sdk.v1`) subscribed to the device's channel; the order
alternates between repeats. Delivered = messages received in the window / (N × samples the gateway
published in it, from its /metrics); latency = receipt − the sample's stamp (both this host's clock);
CPU is the gateway process's, in % of one core. Medians over the repeats, and Foxglove/native ratios.

Run:  scripts/loopback-only.sh .venv/bin/python bench/foxglove_fanout.py [--clients 50] [--rate 1000] ...
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import hold_read_buffers_in_heap
from bench.fanout import (
    HOST,
    TOPIC,
    Window,
    gateway_config,
    measure_window,
    percentile,
    scrape_gateway,
    stop_process,
    wait_for_quiet_host,
)

Face = Literal["native", "foxglove"]
FACES: tuple[Face, ...] = ("native", "foxglove")
START_TIMEOUT_S = 20.0
CONNECT_TIMEOUT_S = 30.0
_MESSAGE_HEAD = struct.Struct("<BIQ")


class Tally:
    """Messages one client received inside the window, with their publish-to-receipt latencies."""

    __slots__ = ("latencies", "received", "window")

    def __init__(self, window: Window) -> None:
        self.window = window
        self.received = 0
        self.latencies: list[float] = []

    def record(self, stamp_s: float, now: float) -> None:
        if self.window.start <= now < self.window.end:
            self.received += 1
            self.latencies.append(now - stamp_s)


async def open_native(session: aiohttp.ClientSession, port: int, tally: Tally) -> aiohttp.ClientWebSocketResponse:
    ws = await session.ws_connect(f"ws://{HOST}:{port}/ws", compress=0, max_msg_size=0)
    await ws.receive_json()  # hello
    await ws.send_str(orjson.dumps({"op": "subscribe", "id": 1, "topics": [TOPIC]}).decode())
    return ws


async def pump_native(ws: aiohttp.ClientWebSocketResponse, tally: Tally) -> None:
    record, loads, clock = tally.record, orjson.loads, time.time
    async for message in ws:
        if message.type == aiohttp.WSMsgType.TEXT:
            now = clock()
            decoded = loads(message.data)
            if decoded.get("op") == "state":
                record(decoded["stamp"], now)


async def open_foxglove(session: aiohttp.ClientSession, port: int, tally: Tally) -> aiohttp.ClientWebSocketResponse:
    ws = await session.ws_connect(f"ws://{HOST}:{port}/", protocols=("foxglove.sdk.v1",), compress=0, max_msg_size=0)
    while True:
        message = await ws.receive_json(timeout=10)
        if message.get("op") == "advertise":
            channel = next((c for c in message["channels"] if c["topic"] == f"/{TOPIC}"), None)
            if channel is not None:
                break
    await ws.send_str(
        orjson.dumps({"op": "subscribe", "subscriptions": [{"id": 0, "channelId": channel["id"]}]}).decode()
    )
    return ws


async def pump_foxglove(ws: aiohttp.ClientWebSocketResponse, tally: Tally) -> None:
    record, unpack, clock = tally.record, _MESSAGE_HEAD.unpack_from, time.time
    async for message in ws:
        if message.type == aiohttp.WSMsgType.BINARY:
            now = clock()
            _, _, log_time = unpack(message.data)
            record(log_time / 1e9, now)


@dataclass
class Result:
    face: Face
    repeat: int
    delivered_fraction: float
    delivered_per_s: float
    p50_ms: float
    p99_ms: float
    server_cpu_pct: float
    client_cpu_pct: float
    other_cpu_pct: float


async def start_gateway(workdir: Path, rate: float) -> tuple[asyncio.subprocess.Process, int, int]:
    config = workdir / "gateway.toml"
    config.write_text(gateway_config(rate) + "\n[foxglove]\nenabled = true\nport = 0\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "run", "--config", str(config), "--log-format", "json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert proc.stdout is not None
    async with asyncio.timeout(START_TIMEOUT_S):
        while True:
            line = await proc.stdout.readline()
            if not line:
                raise RuntimeError("the gateway exited during start")
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if event.get("event") == "listening":
                    break

    async def drain() -> None:
        assert proc.stdout is not None
        while await proc.stdout.read(65536):
            pass

    asyncio.get_running_loop().create_task(drain())
    http_port = int(event["http"].rstrip("/").rsplit(":", 1)[1])
    fox_port = int(event["foxglove"].rstrip("/").rsplit(":", 1)[1])
    return proc, http_port, fox_port


@contextlib.asynccontextmanager
async def fleet(face: Face, port: int, count: int, window: Window) -> AsyncIterator[list[Tally]]:
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    sockets: list[aiohttp.ClientWebSocketResponse] = []
    pumps: list[asyncio.Task[None]] = []
    tallies = [Tally(window) for _ in range(count)]
    opener, pump = (open_native, pump_native) if face == "native" else (open_foxglove, pump_foxglove)
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            sockets = list(await asyncio.gather(*(opener(session, port, tally) for tally in tallies)))
        pumps = [asyncio.create_task(pump(ws, tally)) for ws, tally in zip(sockets, tallies, strict=True)]
        yield tallies
    finally:
        for task in pumps:
            task.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
        await session.close()


async def run_once(face: Face, repeat: int, args: argparse.Namespace, workdir: Path) -> Result:
    proc, http_port, fox_port = await start_gateway(workdir, args.rate)
    try:
        window = Window()
        async with fleet(face, http_port if face == "native" else fox_port, args.clients, window) as tallies:
            await asyncio.sleep(args.warmup)
            before = await scrape_gateway(http_port)
            usage = await measure_window(proc.pid, window, args.seconds)
            after = await scrape_gateway(http_port)
            await asyncio.sleep(0.2)  # let in-flight frames of the window arrive
        published = after["published"] - before["published"]
        received = sum(t.received for t in tallies)
        latencies = sorted(latency for t in tallies for latency in t.latencies)
        return Result(
            face=face,
            repeat=repeat,
            delivered_fraction=received / (args.clients * published) if published else float("nan"),
            delivered_per_s=received / usage.wall_s,
            p50_ms=1e3 * percentile(latencies, 0.5),
            p99_ms=1e3 * percentile(latencies, 0.99),
            server_cpu_pct=usage.server_cpu_pct,
            client_cpu_pct=usage.client_cpu_pct,
            other_cpu_pct=usage.other_cpu_pct,
        )
    finally:
        await stop_process(proc)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="hwgw-foxglove-bench-") as tmp:
        for repeat in range(args.repeats):
            for face in FACES if repeat % 2 == 0 else tuple(reversed(FACES)):
                await wait_for_quiet_host(args.quiet_below, args.quiet_wait)
                result = await run_once(face, repeat, args, Path(tmp))
                results.append(result)
                print(
                    f"  {face:8} #{repeat}: delivered {result.delivered_fraction:.3f}, p50 {result.p50_ms:.2f} ms,"
                    f" p99 {result.p99_ms:.2f} ms, gateway CPU {result.server_cpu_pct:.0f} %,"
                    f" other {result.other_cpu_pct:.0f} %",
                    flush=True,
                )
    medians = {
        face: {
            key: statistics.median(getattr(r, key) for r in results if r.face == face)
            for key in ("delivered_fraction", "delivered_per_s", "p50_ms", "p99_ms", "server_cpu_pct")
        }
        for face in FACES
    }
    ratios = {key: medians["foxglove"][key] / medians["native"][key] for key in medians["native"]}
    print(f"\n{args.clients} clients x {args.rate:g} msg/s, {args.repeats} repeats of {args.seconds:g} s (medians)")
    print(f"{'':10}{'delivered':>10}{'msg/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'CPU %':>8}")
    for face in FACES:
        m = medians[face]
        print(
            f"{face:10}{m['delivered_fraction']:>10.3f}{m['delivered_per_s']:>10.0f}{m['p50_ms']:>9.2f}"
            f"{m['p99_ms']:>9.2f}{m['server_cpu_pct']:>8.0f}"
        )
    print(
        f"foxglove/native: delivered {ratios['delivered_fraction']:.2f}x, CPU {ratios['server_cpu_pct']:.2f}x,"
        f" p99 {ratios['p99_ms']:.2f}x"
    )
    return {"results": [asdict(r) for r in results], "medians": medians, "ratios": ratios}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rate", type=float, default=1000.0, help="samples per second of the sim device")
    parser.add_argument("--seconds", type=float, default=10.0, help="measurement window (s)")
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quiet-below", type=float, default=30.0, help="host busy %% to wait under before a run")
    parser.add_argument("--quiet-wait", type=float, default=20.0, help="at most this long (s)")
    parser.add_argument("--json", help="also write the results to this file")
    return parser.parse_args()


if __name__ == "__main__":
    arguments = parse_args()
    hold_read_buffers_in_heap()  # every side's clients read alike, whichever runs first
    summary = asyncio.run(main(arguments))
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(summary, indent=1))
