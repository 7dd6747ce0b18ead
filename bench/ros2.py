"""ROS 2 face: N rclpy subscribers (Fast DDS) against N native /ws clients, one device at 1 kHz.

Method (as bench/foxglove_fanout.py): each repeat runs a fresh daemon (`python -m gateway run`, one
sim device publishing its controller state at `--rate` Hz) twice, in alternating order: once with the
`[ros2]` face on (DDS domain `--domain`, interface `lo`) and N real ROS 2 nodes subscribed to the
state's ROS topic (`/bench_1/state`, `creos_messages/msg/ControllerState`, rclpy's default QoS), and
once with the face off and N native clients subscribed on `/ws`. The ROS 2 subscribers are the test
peer (`tests/ros2_peer/peer.py`, rclpy from `.venv-ros2`, `make ros2-peer`), one process each, started
once and kept across repeats; each counts and times messages in its own callback (latency = receipt −
the message's `timestamp`, both this host's clock) and reports them only at the window's edges.

Delivered = messages received in the window / (N × samples the gateway published in it, from its
/metrics); gateway CPU is the daemon's process alone, in % of one core and in µs per published sample
(what the face costs per sample, however many subscribers) and per delivered message. Medians over
the repeats, and ros2/native ratios.

Run:  scripts/loopback-only.sh .venv/bin/python bench/ros2.py [--subscribers 10] [--rate 1000] ...
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.fanout import (
    Window,
    gateway_config,
    measure_window,
    percentile,
    scrape_gateway,
    stop_process,
    wait_for_quiet_host,
)
from bench.foxglove_fanout import Tally, open_native, pump_native
from tests.ros2_peer.client import RosPeer

Face = Literal["native", "ros2"]
FACES: tuple[Face, ...] = ("native", "ros2")
ROS_TOPIC = "/bench_1/state"
ROS_TYPE = "creos_messages/msg/ControllerState"
START_TIMEOUT_S = 30.0
MATCH_TIMEOUT_S = 30.0


@dataclass
class Result:
    """One face's run: delivery, latency, and the gateway's and the host's CPU (% of one core)."""

    face: Face
    repeat: int
    published: int
    delivered_fraction: float
    delivered_per_s: float
    p50_ms: float
    p99_ms: float
    server_cpu_pct: float
    cpu_us_per_sample: float
    cpu_us_per_delivered: float
    other_cpu_pct: float


async def start_gateway(workdir: Path, rate: float, ros2_domain: int | None) -> tuple[asyncio.subprocess.Process, int]:
    """The daemon with one sim device at `rate` Hz (and the ROS 2 face on domain `ros2_domain`); its HTTP port."""
    config = workdir / "gateway.toml"
    ros2 = (
        f'[ros2]\nenabled = true\ndomain_id = {ros2_domain}\ninterfaces = ["lo"]\n\n' if ros2_domain is not None else ""
    )
    config.write_text(ros2 + gateway_config(rate))
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
    return proc, int(event["http"].rstrip("/").rsplit(":", 1)[1])


@contextlib.asynccontextmanager
async def native_fleet(port: int, count: int, window: Window) -> AsyncIterator[list[Tally]]:
    """`count` native /ws clients of the gateway on `port`, subscribed to the device's state."""
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    tallies = [Tally(window) for _ in range(count)]
    sockets = list(await asyncio.gather(*(open_native(session, port, tally) for tally in tallies)))
    pumps = [asyncio.create_task(pump_native(ws, tally)) for ws, tally in zip(sockets, tallies, strict=True)]
    try:
        yield tallies
    finally:
        for task in pumps:
            task.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
        await session.close()


async def counts(peers: list[RosPeer]) -> list[dict[str, Any]]:
    """Each peer's messages received so far and the latencies (ns) since the last call."""
    return list(await asyncio.gather(*(peer.request("count") for peer in peers)))


async def until_receiving(peers: list[RosPeer]) -> None:
    """Until every peer has received a message of the new gateway's state (its writer matched)."""
    first = [c["counts"].get(ROS_TOPIC, 0) for c in await counts(peers)]
    async with asyncio.timeout(MATCH_TIMEOUT_S):
        while True:
            now = [c["counts"].get(ROS_TOPIC, 0) for c in await counts(peers)]
            if all(b > a for a, b in zip(first, now, strict=True)):
                return
            await asyncio.sleep(0.2)


async def run_once(face: Face, repeat: int, args: argparse.Namespace, workdir: Path, peers: list[RosPeer]) -> Result:
    proc, http_port = await start_gateway(workdir, args.rate, args.domain if face == "ros2" else None)
    try:
        window = Window()
        if face == "native":
            async with native_fleet(http_port, args.subscribers, window) as tallies:
                await asyncio.sleep(args.warmup)
                before = await scrape_gateway(http_port)
                usage = await measure_window(proc.pid, window, args.seconds)
                after = await scrape_gateway(http_port)
                await asyncio.sleep(0.2)  # let in-flight frames of the window arrive
            received = sum(t.received for t in tallies)
            latencies = sorted(latency for t in tallies for latency in t.latencies)
        else:
            await until_receiving(peers)
            await asyncio.sleep(args.warmup)
            start = await counts(peers)
            before = await scrape_gateway(http_port)
            usage = await measure_window(proc.pid, window, args.seconds)
            after = await scrape_gateway(http_port)
            end = await counts(peers)
            received = sum(
                e["counts"].get(ROS_TOPIC, 0) - s["counts"].get(ROS_TOPIC, 0) for s, e in zip(start, end, strict=True)
            )
            latencies = sorted(ns / 1e9 for e in end for ns in e["latencies_ns"].get(ROS_TOPIC, []))
        published = int(after["published"] - before["published"])
        cpu_s = usage.server_cpu_pct / 100.0 * usage.wall_s
        return Result(
            face=face,
            repeat=repeat,
            published=published,
            delivered_fraction=received / (args.subscribers * published) if published else float("nan"),
            delivered_per_s=received / usage.wall_s,
            p50_ms=1e3 * percentile(latencies, 0.5),
            p99_ms=1e3 * percentile(latencies, 0.99),
            server_cpu_pct=usage.server_cpu_pct,
            cpu_us_per_sample=1e6 * cpu_s / published if published else float("nan"),
            cpu_us_per_delivered=1e6 * cpu_s / received if received else float("nan"),
            other_cpu_pct=usage.other_cpu_pct,
        )
    finally:
        await stop_process(proc)


async def start_peers(count: int, domain: int) -> list[RosPeer]:
    """`count` rclpy nodes on `domain`, each subscribed to the state's ROS topic, counting and timing."""
    peers = list(await asyncio.gather(*(RosPeer.start(domain, f"bench_subscriber_{i}") for i in range(count))))
    await asyncio.gather(
        *(peer.request("subscribe_timed", topic=ROS_TOPIC, type=ROS_TYPE, stamp_field="timestamp") for peer in peers)
    )
    return peers


KEYS = (
    "delivered_fraction",
    "delivered_per_s",
    "p50_ms",
    "p99_ms",
    "server_cpu_pct",
    "cpu_us_per_sample",
    "cpu_us_per_delivered",
)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    results: list[Result] = []
    load_before = os.getloadavg()
    peers = await start_peers(args.subscribers, args.domain)
    try:
        with tempfile.TemporaryDirectory(prefix="hwgw-ros2-bench-") as tmp:
            for repeat in range(args.repeats):
                for face in FACES if repeat % 2 == 0 else tuple(reversed(FACES)):
                    await wait_for_quiet_host(args.quiet_below, args.quiet_wait)
                    started = time.monotonic()
                    result = await run_once(face, repeat, args, Path(tmp), peers)
                    results.append(result)
                    print(
                        f"  {face:7} #{repeat}: delivered {result.delivered_fraction:.3f}, p50 {result.p50_ms:.2f} ms,"
                        f" p99 {result.p99_ms:.2f} ms, gateway CPU {result.server_cpu_pct:.0f} %"
                        f" ({result.cpu_us_per_sample:.0f} µs/sample), other {result.other_cpu_pct:.0f} %"
                        f" [{time.monotonic() - started:.0f} s]",
                        flush=True,
                    )
    finally:
        await asyncio.gather(*(peer.close() for peer in peers), return_exceptions=True)
    medians = {
        face: {key: statistics.median(getattr(r, key) for r in results if r.face == face) for key in KEYS}
        for face in FACES
    }
    ratios = {key: medians["ros2"][key] / medians["native"][key] for key in KEYS}
    load_after = os.getloadavg()
    print(
        f"\n{args.subscribers} subscribers x {args.rate:g} msg/s, {args.repeats} repeats of {args.seconds:g} s"
        f" (medians); load average {load_before[0]:.2f} before, {load_after[0]:.2f} after"
    )
    print(f"{'':8}{'delivered':>10}{'msg/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'CPU %':>7}{'µs/sample':>11}{'µs/msg':>8}")
    for face in FACES:
        m = medians[face]
        print(
            f"{face:8}{m['delivered_fraction']:>10.3f}{m['delivered_per_s']:>9.0f}{m['p50_ms']:>9.2f}"
            f"{m['p99_ms']:>9.2f}{m['server_cpu_pct']:>7.0f}{m['cpu_us_per_sample']:>11.0f}{m['cpu_us_per_delivered']:>8.1f}"
        )
    print(
        f"ros2/native: delivered {ratios['delivered_fraction']:.2f}x, CPU {ratios['server_cpu_pct']:.2f}x,"
        f" p50 {ratios['p50_ms']:.2f}x, p99 {ratios['p99_ms']:.2f}x"
    )
    return {
        "results": [asdict(r) for r in results],
        "medians": medians,
        "ratios": ratios,
        "loadavg": {"before": load_before, "after": load_after},
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=10)
    parser.add_argument("--rate", type=float, default=1000.0, help="samples per second of the sim device")
    parser.add_argument("--seconds", type=float, default=10.0, help="measurement window (s)")
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--domain", type=int, default=77, help="DDS domain id of the ROS 2 side")
    parser.add_argument("--quiet-below", type=float, default=30.0, help="host busy %% to wait under before a run")
    parser.add_argument("--quiet-wait", type=float, default=20.0, help="at most this long (s)")
    parser.add_argument("--json", help="also write the results to this file")
    return parser.parse_args()


if __name__ == "__main__":
    arguments = parse_args()
    summary = asyncio.run(main(arguments))
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(summary, indent=1))
