"""What hostile clients cost the real daemon in time, CPU and resident memory, against the daemon unabused.

Method: the real daemon (`python -m gateway run`, one `sim` device at 50 Hz, `tests.harness`'s
config) on loopback. Three measurements, each run `--repeats` times; medians are reported, and the
ratios of the abused side to its baseline from the same run:

- **pings**: another client's pings over msgpack/TCP (one at a time, 5 ms apart, `--pings` per
  window): round trip p50/p99 (ms) and the daemon's CPU per ping (µs: psutil user + system of
  the whole daemon over the window, its 50 Hz device included, divided by the pings),
  **quiet** (no other client) against **flooded** (a client that floods rejected requests over
  msgpack/TCP with a 4 KiB receive buffer and never reads, so the gateway has stopped reading it).
  The two windows alternate in order between repeats. The old test bound: flooded p99 under 10 ms
  and flooded CPU under twice the quiet CPU plus 50 ms per 100 pings.
- **partial**: 24 msgpack/TCP connections each send half of a value announced at 1 MiB (12 MiB in
  all) and stop; `server.read_timeout_s = 1` closes them. Resident memory (RSS, MiB) before, at
  the peak (all held) and 0.5 s after the last is closed, over `--rounds` rounds on one daemon:
  the peak's and the after's growth over the start. The old test bounds: peak growth over 8 MiB
  (held), after growth under 16 MiB, and no round's peak more than 8 MiB over the first's.
  Also the seconds from the last byte sent to the close, against `read_timeout_s` (ratio).
- **refusal**: a msgpack header announcing 4 GiB: the time until the close (ms), against a ping's
  round trip on a fresh connection (the bare cost of a connection's first exchange).
- **stall**: a `sim` device at 1 kHz; a msgpack/TCP client (32 KiB receive buffer) subscribed to
  it reads nothing for `STALL_S` while the daemon's RSS is sampled every 0.25 s: the highest RSS
  over the window's start (MiB), against the same window with the client reading (**reading**).
  The old test bound (`test_slow_client.py`): a stalled client's growth under 8 MiB.

Run:  scripts/loopback-only.sh .venv/bin/python bench/abuse.py [--repeats 3] [--pings 200] [--rounds 4]
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

import msgpack
import psutil

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.abuse_clients import open_raw, read_until_closed  # noqa: E402 - after the path fix above
from tests.harness import RunningGateway, connect, gateway_config, start_gateway  # noqa: E402

MiB = 1024 * 1024
HALF = 512 * 1024
READ_TIMEOUT_S = 1.0
FLOOD_BUDGET = "max_requests_per_s = 1000000.0\nrequest_burst = 1000000\nrefusal_burst = 1000000\n"


def _cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def _rss_mib(process: psutil.Process) -> float:
    return float(process.memory_info().rss) / MiB


def _p(values: list[float], percent: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[percent - 1]


async def ping_window(gateway: RunningGateway, count: int) -> dict[str, float]:
    """`count` pings from a new msgpack/TCP client: round trip p50/p99 (ms), daemon CPU per ping (µs)."""
    process = psutil.Process(gateway.proc.pid)
    client = await connect(gateway, "tcp")
    rtts = []
    cpu = _cpu_s(process)
    for _ in range(count):
        started = time.perf_counter()
        await client.ok("ping")
        rtts.append(time.perf_counter() - started)
        await asyncio.sleep(0.005)
    cpu_us = (_cpu_s(process) - cpu) / count * 1e6
    await client.close()
    return {"p50_ms": _p(rtts, 50) * 1000, "p99_ms": _p(rtts, 99) * 1000, "cpu_us_per_ping": cpu_us}


async def start_flood(gateway: RunningGateway) -> asyncio.StreamWriter:
    """A client that writes rejected requests until the gateway stops reading it (and never reads)."""
    _, writer = await open_raw(gateway, "tcp", receive_buffer=4096)
    chunk = (msgpack.packb(1) + msgpack.packb([1])) * 2000
    for _ in range(100_000):
        writer.write(chunk)
        try:
            async with asyncio.timeout(0.5):
                await writer.drain()
        except TimeoutError:
            return writer  # stalled: the gateway stopped reading it
    raise RuntimeError("the gateway read everything a client that never reads sent")


async def pings(tmp_path: Path, repeats: int, count: int) -> dict[str, Any]:
    """Quiet and flooded ping windows, alternating, on one daemon."""
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, server=FLOOD_BUDGET))
    runs: dict[str, list[dict[str, float]]] = {"quiet": [], "flooded": []}
    try:
        await ping_window(gateway, 50)  # warm-up
        for repeat in range(repeats):
            for side in ("quiet", "flooded") if repeat % 2 == 0 else ("flooded", "quiet"):
                flood = await start_flood(gateway) if side == "flooded" else None
                runs[side].append(await ping_window(gateway, count))
                if flood is not None:
                    flood.transport.abort()
                    await asyncio.sleep(0.3)
    finally:
        await gateway.stop()
    medians = {side: {key: statistics.median(r[key] for r in rs) for key in rs[0]} for side, rs in runs.items()}
    ratios = {key: medians["flooded"][key] / medians["quiet"][key] for key in medians["quiet"]}
    return {"median": medians, "flooded/quiet": ratios}


async def partial_round(gateway: RunningGateway, process: psutil.Process) -> dict[str, float]:
    """24 half-sent 1 MiB values held until the read timeout closes them: RSS (MiB) and close delay (s)."""
    held = []
    for _ in range(24):
        reader, writer = await open_raw(gateway, "tcp")
        writer.write(b"\xc6" + (MiB - 64).to_bytes(4, "big") + b"x" * HALF)
        await writer.drain()
        held.append((reader, writer))
    last_sent = time.monotonic()
    await asyncio.sleep(0.3)
    peak = _rss_mib(process)
    for reader, writer in held:
        await read_until_closed(reader, timeout=10.0)
        writer.close()
    closed_after = time.monotonic() - last_sent
    await asyncio.sleep(0.5)
    return {"peak_mib": peak, "after_mib": _rss_mib(process), "closed_after_s": closed_after}


async def partial(tmp_path: Path, repeats: int, rounds: int) -> dict[str, Any]:
    """`rounds` rounds of held partial requests on a fresh daemon, `repeats` times."""
    runs: list[dict[str, float]] = []
    for _ in range(repeats):
        config = gateway_config(tmp_path, server=f"read_timeout_s = {READ_TIMEOUT_S}\n")
        gateway = await start_gateway(tmp_path, config)
        try:
            process = psutil.Process(gateway.proc.pid)
            await asyncio.sleep(0.5)
            before = _rss_mib(process)
            results = [await partial_round(gateway, process) for _ in range(rounds)]
        finally:
            await gateway.stop()
        runs.append(
            {
                "before_mib": before,
                "first_peak_growth_mib": results[0]["peak_mib"] - before,
                "max_peak_over_first_mib": max(r["peak_mib"] for r in results) - results[0]["peak_mib"],
                "max_after_growth_mib": max(r["after_mib"] for r in results) - before,
                "closed_after_s": statistics.median(r["closed_after_s"] for r in results),
            }
        )
    median = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    return {
        "median": median,
        "after growth / held (12 MiB)": median["max_after_growth_mib"] / 12,
        "closed_after / read_timeout_s": median["closed_after_s"] / READ_TIMEOUT_S,
    }


async def refusal(tmp_path: Path, repeats: int) -> dict[str, Any]:
    """A 4 GiB header's close (ms) against a fresh connection's first ping (ms), alternating."""
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, server="read_timeout_s = 3600.0\n"))
    refused, pinged = [], []
    try:
        for _ in range(repeats * 10):
            reader, writer = await open_raw(gateway, "tcp")
            started = time.perf_counter()
            writer.write(b"\xdb\xff\xff\xff\xff")
            await read_until_closed(reader, timeout=10.0)
            refused.append((time.perf_counter() - started) * 1000)
            writer.close()
            client = await connect(gateway, "tcp")
            started = time.perf_counter()
            await client.ok("ping")
            pinged.append((time.perf_counter() - started) * 1000)
            await client.close()
    finally:
        await gateway.stop()
    median = {"refused_ms": statistics.median(refused), "first_ping_ms": statistics.median(pinged)}
    return {"median": median, "refused/first ping": median["refused_ms"] / median["first_ping_ms"]}


STALL_S = 5.0
FAST_DEVICE = '[devices.fast]\nkind = "sim"\nrate_hz = 1000.0\n'


async def stall_window(gateway: RunningGateway, reading: bool) -> float:
    """The daemon's RSS growth (MiB) over `STALL_S` with one 1 kHz subscriber reading or not."""
    process = psutil.Process(gateway.proc.pid)
    client = await connect(gateway, "tcp", receive_buffer=32 * 1024)
    await client.ok("subscribe", topics=["fast/**"])
    await asyncio.sleep(0.5)
    drain = asyncio.create_task(_read_forever(client)) if reading else None
    before = _rss_mib(process)
    peak = before
    for _ in range(int(STALL_S / 0.25)):
        await asyncio.sleep(0.25)
        peak = max(peak, _rss_mib(process))
    if drain is not None:
        drain.cancel()
    await client.close()
    await asyncio.sleep(0.5)
    return peak - before


async def _read_forever(client: Any) -> None:
    while True:
        await client.receive(30)


async def stall(tmp_path: Path, repeats: int) -> dict[str, Any]:
    """Stalled and reading windows, alternating, on one daemon with a 1 kHz device."""
    gateway = await start_gateway(tmp_path, gateway_config(tmp_path, FAST_DEVICE))
    runs: dict[str, list[float]] = {"stalled": [], "reading": []}
    try:
        await asyncio.sleep(0.5)
        for repeat in range(repeats):
            for side in ("stalled", "reading") if repeat % 2 == 0 else ("reading", "stalled"):
                runs[side].append(await stall_window(gateway, reading=side == "reading"))
    finally:
        await gateway.stop()
    median = {f"{side}_rss_growth_mib": statistics.median(values) for side, values in runs.items()}
    return {
        "median": median,
        "stalled - reading (MiB)": median["stalled_rss_growth_mib"] - median["reading_rss_growth_mib"],
    }


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp_path = Path(folder)
        report: dict[str, Any] = {
            "pings": await pings(tmp_path, args.repeats, args.pings),
            "partial": await partial(tmp_path, args.repeats, args.rounds),
            "refusal": await refusal(tmp_path, args.repeats),
            "stall": await stall(tmp_path, args.repeats),
        }
    report["load_average"] = list(psutil.getloadavg())
    print(json.dumps(report, indent=2))


def cli(argv: list[str] | None = None) -> None:
    """Parse the arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each measurement (medians reported)")
    parser.add_argument("--pings", type=int, default=200, help="pings per window")
    parser.add_argument("--rounds", type=int, default=4, help="partial-request rounds per daemon")
    args = parser.parse_args(argv)
    if min(args.repeats, args.pings, args.rounds) < 1 or args.pings < 2:
        parser.error("--repeats and --rounds must be positive, --pings at least 2")
    asyncio.run(main(args))


if __name__ == "__main__":
    cli()
