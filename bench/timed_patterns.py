"""The busiest TimedSwitch patterns the limits allow, against the same daemon idle.

The real daemon (`python -m gateway run`) with one simulated Wii Remote; a msgpack/TCP client pings it
every 10 ms. Each repeat runs two windows, in alternating order: **idle** (LEDs and rumble off) and
**busy** (all four LEDs and the rumble motor on REPEAT FOREVER [0.02, 0.02], the shortest the limits
allow: 250 output edges/s). Reported per phase: ping round trip p50/p99/max (ms), the daemon's CPU
(% of one core, psutil) and, for the record, the answer to issue 12's hostile command.

    scripts/loopback-only.sh .venv/bin/python bench/timed_patterns.py --seconds 5 --repeats 3
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
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

from bench.common import read_json_line  # noqa: E402 - after the path fix above

DEVICE = "wiimote-1"
CONFIG = f"""
[server]
host = "127.0.0.1"
http_port = 0
msgpack_port = 0
unix_socket = ""

[devices.{DEVICE}]
kind = "wiimote"
transport = "sim"
"""
OFF = {"switch_mode": 0}
BUSIEST = {"switch_mode": -1, "num_cycles": -1, "pulse_pattern": [0.02, 0.02]}
HOSTILE = {"switch_mode": -1, "num_cycles": -1, "pulse_pattern": [1e-300]}


class Peer:
    """A msgpack/TCP client making one request at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.unpacker = msgpack.Unpacker(raw=False)
        self.ids = itertools.count(1)

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        request_id = next(self.ids)
        self.writer.write(msgpack.packb({"op": op, "id": request_id, **fields}))
        while True:
            for message in self.unpacker:
                if message.get("op") == "result" and message.get("id") == request_id:
                    return message  # type: ignore[no-any-return]
            data = await self.reader.read(65536)
            if not data:
                raise ConnectionError("gateway closed the connection")
            self.unpacker.feed(data)

    async def outputs(self, leds: dict[str, Any], rumble: dict[str, Any]) -> None:
        for type_name, data in (("hwgateway/WiimoteLeds", {"leds": [leds] * 4}), ("wiimote/TimedSwitch", rumble)):
            answer = await self.request("command", device=DEVICE, type=type_name, data=data)
            assert answer["ok"], answer


async def window(peer: Peer, process: psutil.Process, seconds: float) -> dict[str, float]:
    """Ping every 10 ms for `seconds`; the round trips and the daemon's CPU over the window."""
    times: list[float] = []
    cpu_before = sum(process.cpu_times()[:2])
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        sent = time.monotonic()
        await peer.request("ping")
        times.append(time.monotonic() - sent)
        await asyncio.sleep(0.01)
    elapsed = time.monotonic() - started
    cuts = statistics.quantiles(times, n=100, method="inclusive")
    return {
        "pings": len(times),
        "p50_ms": cuts[49] * 1000,
        "p99_ms": cuts[98] * 1000,
        "max_ms": max(times) * 1000,
        "cpu_pct": (sum(process.cpu_times()[:2]) - cpu_before) / elapsed * 100,
    }


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "gateway.toml"
        config.write_text(CONFIG)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway", "run", "--config", str(config), "--log-format", "json",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, cwd=REPO_ROOT,
        )  # fmt: skip
        assert proc.stdout is not None
        try:
            listening = await read_json_line(proc.stdout, "listening")
            drain = asyncio.create_task(proc.stdout.read())
            port = int(listening["msgpack"].rsplit(":", 1)[1])
            peer = Peer(*await asyncio.open_connection("127.0.0.1", port))
            for _ in range(100):
                if (await peer.request("list_devices"))["data"]["devices"][0]["status"] == "connected":
                    break
                await asyncio.sleep(0.1)
            hostile = await peer.request("command", device=DEVICE, type="wiimote/TimedSwitch", data=HOSTILE)
            process = psutil.Process(proc.pid)
            runs: dict[str, list[dict[str, float]]] = {"idle": [], "busy": []}
            await window(peer, process, 1.0)  # warm-up
            for repeat in range(args.repeats):
                for phase in ("idle", "busy") if repeat % 2 == 0 else ("busy", "idle"):
                    await peer.outputs(BUSIEST if phase == "busy" else OFF, BUSIEST if phase == "busy" else OFF)
                    runs[phase].append(await window(peer, process, args.seconds))
            await peer.outputs(OFF, OFF)
            drain.cancel()
        finally:
            proc.terminate()
            await proc.wait()
    report: dict[str, Any] = {"hostile_answer": hostile}
    for phase, results in runs.items():
        report[phase] = {key: statistics.median(r[key] for r in results) for key in results[0]}
    for key in ("p50_ms", "p99_ms", "cpu_pct"):
        report[f"busy/idle {key}"] = report["busy"][key] / report["idle"][key]
    print(json.dumps(report, indent=2))


def cli() -> None:
    """Parse the arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each window (s)")
    parser.add_argument("--repeats", type=int, default=3, help="idle/busy pairs, order alternating")
    asyncio.run(main(parser.parse_args()))


if __name__ == "__main__":
    cli()
