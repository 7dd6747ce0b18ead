"""Aseba benchmark: GetVariable round trip and node-event latency, through the gateway and direct.

Method: a simulated Thymio (devices/sim/thymio.py: the Python Aseba VM behind TCP on 127.0.0.1)
runs in its own process and emits a user event every 1/`--stamp-hz` s carrying its
`time.monotonic_ns()` (one system-wide clock, so latency is comparable across processes). In
turn, in the same run and against the same robot process: (1) the real daemon (`python -m gateway
run`) with one `aseba` device on it and one WebSocket client, which sends `--requests` sequential
`asebaros_msgs/GetVariable` commands (`temperature`) and receives the stamp events as
`asebaros_msgs/AnonymousEvent`; (2) a direct asyncio client (`devices.aseba.network`, the same
code the adapter uses) doing the same over its own TCP connection. The robot serves one client at
a time in each phase. Figures: round-trip and event latency p50/p99 in ms, and the ratio
gateway/direct.

Run:  scripts/loopback-only.sh .venv/bin/python bench/aseba.py [--requests 500] [--events 500]
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

import aiohttp

THIS_FILE = Path(__file__).resolve()
REPO_ROOT = THIS_FILE.parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import read_json_line  # noqa: E402 - after the path fix above
from devices.aseba.network import AsebaNetwork  # noqa: E402 - after the path fix above
from devices.sim.thymio import words_stamp  # noqa: E402
from protocols.aseba.messages import UserMessage  # noqa: E402

DEVICE = "bench-thymio"
STAMP_EVENT = 100
START_TIMEOUT_S = 20.0
GET_VARIABLE = "asebaros_msgs/GetVariable"
#: Pause between sequential requests (s): keeps the client under the gateway's 200 requests/s limit.
PACE_S = 0.006


async def until_count(samples: list[float], count: int) -> None:
    """Wait until `samples` holds `count` entries (the events arrive at the robot's stamp rate)."""
    for _ in range(int(START_TIMEOUT_S / 0.05) + count):
        if len(samples) >= count:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"only {len(samples)} of {count} events arrived")


def summary(samples_s: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples_s)
    return {
        "n": len(ms),
        "p50_ms": statistics.median(ms),
        "p99_ms": ms[min(len(ms) - 1, int(len(ms) * 0.99))],
    }


async def through_gateway(port: int, requests: int, events: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as workdir:
        config = Path(workdir) / "gateway.toml"
        config.write_text(
            '[server]\nhost = "127.0.0.1"\nhttp_port = 0\nmsgpack_port = -1\nunix_socket = ""\n\n'
            f'[devices.{DEVICE}]\nkind = "aseba"\ntarget = "tcp:127.0.0.1;{port}"\nthymio_program = false\n'
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway", "run", "--config", str(config), "--log-format", "json",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, cwd=REPO_ROOT,
        )  # fmt: skip
        assert proc.stdout is not None
        listening = await read_json_line(proc.stdout, "listening")
        drain = asyncio.create_task(proc.stdout.read())
        http_port = int(listening["http"].rstrip("/").rsplit(":", 1)[1])
        latencies: list[float] = []
        round_trips: list[float] = []
        results: dict[int, asyncio.Future[dict[str, Any]]] = {}
        async with aiohttp.ClientSession() as http, http.ws_connect(f"ws://127.0.0.1:{http_port}/ws") as ws:
            connected = asyncio.Event()

            async def consume() -> None:
                async for message in ws:
                    data = json.loads(message.data)
                    if data["op"] == "result" and data["id"] in results:
                        results.pop(data["id"]).set_result(data)
                    elif data["op"] == "state" and data["topic"] == f"{DEVICE}/anonymous_events":
                        latencies.append((time.monotonic_ns() - words_stamp(data["data"]["data"])) / 1e9)
                    elif data["op"] == "device" and data["status"] == "connected":
                        connected.set()

            reader = asyncio.create_task(consume())
            await ws.send_json({"op": "subscribe", "id": 0, "topics": [f"{DEVICE}/**"]})
            await asyncio.wait_for(connected.wait(), START_TIMEOUT_S)
            await asyncio.sleep(0.5)
            latencies.clear()
            data = {"variable": "temperature"}
            for request_id in range(1, requests + 1):
                future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
                results[request_id] = future
                started = time.perf_counter()
                await ws.send_json(
                    {
                        "op": "command",
                        "id": request_id,
                        "device": DEVICE,
                        "type": "asebaros_msgs/GetVariable",
                        "data": data,
                    }
                )
                answer = await asyncio.wait_for(future, 10)
                round_trips.append(time.perf_counter() - started)
                assert answer["ok"], answer
                assert answer["data"]["data"] == [220], answer
                await asyncio.sleep(PACE_S)
            await until_count(latencies, events)
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        proc.terminate()
        await proc.wait()
        drain.cancel()
    return {"get_variable": summary(round_trips), "event_latency": summary(latencies[:events])}


async def direct(port: int, requests: int, events: int) -> dict[str, Any]:
    latencies: list[float] = []

    def on_event(message: UserMessage) -> None:
        if message.type == STAMP_EVENT:
            latencies.append((time.monotonic_ns() - words_stamp(message.data)) / 1e9)

    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    network = AsebaNetwork(reader, writer, on_node=lambda node: None, on_event=on_event)
    serving = asyncio.create_task(network.serve())
    node = await network.wait_described(1, START_TIMEOUT_S)
    assert node.description is not None
    temperature = node.description.variable("temperature")
    await asyncio.sleep(0.5)
    latencies.clear()
    round_trips: list[float] = []
    for _ in range(requests):
        started = time.perf_counter()
        values = await network.get_variables(1, temperature.address, temperature.size)
        round_trips.append(time.perf_counter() - started)
        assert values == (220,)
        await asyncio.sleep(PACE_S)
    await until_count(latencies, events)
    serving.cancel()
    await asyncio.gather(serving, return_exceptions=True)
    await network.close()
    return {"get_variable": summary(round_trips), "event_latency": summary(latencies[:events])}


async def main(args: argparse.Namespace) -> None:
    robot = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "devices.sim.thymio", "--stamp-hz", str(args.stamp_hz),
        "--stamp-event", str(STAMP_EVENT), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        cwd=REPO_ROOT,
    )  # fmt: skip
    assert robot.stdout is not None
    assert robot.stdin is not None
    port = int((await read_json_line(robot.stdout, "listening"))["port"])
    try:
        gateway = await through_gateway(port, args.requests, args.events)
        await asyncio.sleep(0.5)
        bare = await direct(port, args.requests, args.events)
    finally:
        robot.stdin.close()
        await robot.wait()
    report = {"gateway": gateway, "direct": bare, "ratio_p50": {}}
    print(f"{'':16}{'gateway p50/p99 ms':>22}{'direct p50/p99 ms':>22}{'ratio p50':>12}")
    for metric in ("get_variable", "event_latency"):
        g, d = gateway[metric], bare[metric]
        ratio = g["p50_ms"] / d["p50_ms"]
        report["ratio_p50"][metric] = ratio
        gateway_ms = f"{g['p50_ms']:>12.3f} /{g['p99_ms']:>8.3f}"
        direct_ms = f"{d['p50_ms']:>12.3f} /{d['p99_ms']:>8.3f}"
        print(f"{metric:16}{gateway_ms}{direct_ms}{ratio:>12.2f}")
    if args.json:
        await asyncio.to_thread(Path(args.json).write_text, json.dumps(report, indent=2))


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=500, help="sequential GetVariable requests per phase")
    parser.add_argument("--events", type=int, default=500, help="stamped node events measured per phase")
    parser.add_argument("--stamp-hz", type=float, default=200.0, help="rate of the robot's stamped events")
    parser.add_argument("--json", help="also write the figures to this file")
    asyncio.run(main(parser.parse_args()))


if __name__ == "__main__":
    cli()
