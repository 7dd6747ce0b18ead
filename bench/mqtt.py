"""MQTT federation benchmark: gateway A's samples reaching a WebSocket client of gateway B through mosquitto.

Method: Debian's mosquitto on a free loopback port (`set_tcp_nodelay true`, no persistence); gateway A
(`python -m gateway run`) with `--topics` simulated controllers publishing `--rate` samples a second in
total (10 topics × 100 Hz by default), exported with `publish_rate_hz = 10000` (the highest, so the
limit coalesces nothing); gateway B with `import = true` and no devices of its own. One WebSocket client
subscribes to every `state` topic on B (A's devices, imported) and, in the same run, one on A directly
(the baseline without the broker hop). Latency is the client's receipt time minus the sample's device
`stamp` (one host, one clock). CPU is % of one core of A, B and mosquitto over the measured window
(psutil). Then a command round trip (`led`, sequential) from a client of B to an imported device, and
the same client command on A directly.

Run:  scripts/loopback-only.sh .venv/bin/python bench/mqtt.py [--rate 1000] [--topics 10] [--duration 10]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import psutil

THIS_FILE = Path(__file__).resolve()
REPO_ROOT = THIS_FILE.parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.harness import RunningGateway, connect, gateway_config, start_gateway  # noqa: E402
from tests.mosquitto_broker import Broker, start_broker  # noqa: E402


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def devices(topics: int, rate_hz: float) -> str:
    return "".join(
        f'\n[devices.sim-{i}]\nkind = "sim"\nrate_hz = {rate_hz / topics}\nleds = 1\n' for i in range(topics)
    )


async def receive(client: Any, latencies: list[float], stop_at: float, warmup_until: float) -> int:
    count = 0
    while time.time() < stop_at:
        try:
            message = await client.recv(timeout=1.0)
        except TimeoutError:
            continue
        if message.get("op") != "state":
            continue
        now = time.time()
        if now >= warmup_until:
            latencies.append((now - message["stamp"]) * 1000)
            count += 1
    return count


async def round_trips(client: Any, device: str, count: int, failures: list[str]) -> list[float]:
    """Sequential `led` commands while the stream goes on; a refused or late one is kept in `failures`."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        answer = await client.request("command", device=device, type="led", data={"rgb": [1, 0, 0]}, timeout=15.0)
        if answer["ok"]:
            times.append((time.perf_counter() - started) * 1000)
        else:
            failures.append(answer["error"]["code"])
    return times or [float("nan")]


async def wait_imported(client: Any, count: int) -> None:
    async with asyncio.timeout(20):
        while True:
            devices = (await client.ok("list_devices"))["devices"]
            if len([d for d in devices if d["status"] == "connected"]) >= count:
                return
            await asyncio.sleep(0.1)


#: Bridge counters read from /metrics before and after the measured window (where samples are lost).
COUNTERS = ("hwgw_mqtt_published_total", "hwgw_mqtt_received_total", "hwgw_mqtt_imported_total",
            "hwgw_mqtt_coalesced_total")  # fmt: skip


async def counters(gateway: RunningGateway) -> dict[str, float]:
    async with aiohttp.ClientSession() as session, session.get(gateway.base_url + "/metrics") as response:
        text = await response.text()
    values = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in COUNTERS:
            values[name.removeprefix("hwgw_mqtt_").removesuffix("_total")] = float(value)
    return values


def cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        broker: Broker = await start_broker(tmp_path)
        # The highest publish_rate_hz: on a loaded host a device's timer runs late and then fires twice
        # within a millisecond, and any lower limit would coalesce those (by design); this measures the path.
        mqtt = f'[mqtt]\nurl = "{broker.url}"\npublish_rate_hz = 10000\n'
        a: RunningGateway = await start_gateway(
            tmp_path, gateway_config(tmp_path, devices=devices(args.topics, args.rate), extra=mqtt + 'gateway = "a"\n')
        )
        b_config = gateway_config(tmp_path, devices="", extra=mqtt + 'gateway = "b"\nimport = true\n')
        b: RunningGateway = await start_gateway(tmp_path, b_config.replace("gw.sock", "gw-b.sock"))
        try:
            via_b = await connect(b, "ws")
            direct = await connect(a, "ws")
            await wait_imported(via_b, args.topics)
            await via_b.ok("subscribe", topics=["*/state"])
            await direct.ok("subscribe", topics=["*/state"])
            processes = {
                "A": psutil.Process(a.proc.pid), "B": psutil.Process(b.proc.pid),
                "broker": psutil.Process(broker.proc.pid),  # type: ignore[union-attr]
            }  # fmt: skip
            start = time.time()
            warmup_until = start + 1.0
            stop_at = warmup_until + args.duration
            via_latency: list[float] = []
            direct_latency: list[float] = []
            receivers = asyncio.gather(
                receive(via_b, via_latency, stop_at, warmup_until),
                receive(direct, direct_latency, stop_at, warmup_until),
            )
            await asyncio.sleep(1.0)
            before = {name: cpu(p) for name, p in processes.items()}
            wall = time.monotonic()
            counted_before = {"A": await counters(a), "B": await counters(b)}
            via_count, direct_count = await receivers
            elapsed = time.monotonic() - wall
            counted = {}
            for name, gateway in (("A", a), ("B", b)):
                after = await counters(gateway)
                counted[name] = {key: int(value - counted_before[name].get(key, 0.0)) for key, value in after.items()}
            usage = {name: round(100 * (cpu(p) - before[name]) / elapsed, 1) for name, p in processes.items()}
            await via_b.close()
            await direct.close()
            via_b = await connect(b, "ws")
            direct = await connect(a, "ws")
            failed_via: list[str] = []
            failed_direct: list[str] = []
            rtt_via = await round_trips(via_b, "a:sim-0", args.commands, failed_via)
            rtt_direct = await round_trips(direct, "sim-0", args.commands, failed_direct)
            await via_b.close()
            await direct.close()
        finally:
            for gateway in (b, a):
                with contextlib.suppress(TimeoutError):
                    await gateway.stop(timeout=30.0)
            await broker.stop()
    expected = int(args.rate * args.duration)
    return {
        "rate_msg_s": args.rate,
        "topics": args.topics,
        "duration_s": args.duration,
        "expected": expected,
        "via_broker": {
            "delivered": via_count,
            "p50_ms": round(statistics.median(via_latency), 3),
            "p99_ms": round(percentile(via_latency, 0.99), 3),
        },
        "direct_on_a": {
            "delivered": direct_count,
            "p50_ms": round(statistics.median(direct_latency), 3),
            "p99_ms": round(percentile(direct_latency, 0.99), 3),
        },
        "cpu_percent": usage,
        "bridge_counters": counted,
        "command_rtt_ms": {
            "via_broker": {"p50": round(statistics.median(rtt_via), 3), "p99": round(percentile(rtt_via, 0.99), 3)},
            "direct_on_a": {
                "p50": round(statistics.median(rtt_direct), 3),
                "p99": round(percentile(rtt_direct, 0.99), 3),
            },
            "count": args.commands,
            "failed": {"via_broker": dict(Counter(failed_via)), "direct_on_a": dict(Counter(failed_direct))},
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=1000.0, help="samples per second in total")
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds")
    parser.add_argument("--commands", type=int, default=500)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args)), indent=2))


if __name__ == "__main__":
    main()
