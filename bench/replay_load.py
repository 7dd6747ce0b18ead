"""Replay of a long recording: what loading it costs the gateway that plays it.

Builds a recording of `--messages` small messages of one 1 kHz topic (2,000,000 by default: a
33-minute recording), then runs a gateway (`python -m gateway run`) with a `kind = "replay"` device
of it. Until the device is `connected` (the file loaded), /healthz is asked every 0.1 s: its answers,
how many were not 200, and the slowest round trip. Then the gateway's peak RSS (VmHWM) and how long
it takes to exit after SIGTERM. A second gateway gets SIGTERM 1 s after it listens, while the file
still loads: how long it takes to exit.

Run:  scripts/loopback-only.sh .venv/bin/python bench/replay_load.py [--messages 2000000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from tests.harness import RunningGateway, gateway_config, start_gateway  # noqa: E402
from tests.mcap_files import many_messages  # noqa: E402


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set (VmHWM), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def stop_seconds(gateway: RunningGateway) -> tuple[int, float]:
    started = time.monotonic()
    code = await gateway.stop(timeout=30.0)
    return code, time.monotonic() - started


async def run(messages: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        started = time.monotonic()
        path = many_messages(tmp / "long.mcap", messages)
        print(
            f"recording: {messages} messages, {path.stat().st_size} bytes (built in {time.monotonic() - started:.1f} s)"
        )
        device = f'[devices.player]\nkind = "replay"\nfile = {json.dumps(str(path))}\n'
        gateway = await start_gateway(tmp, gateway_config(tmp, devices=device))
        started = time.monotonic()
        answers, not_ok, slowest = 0, 0, 0.0
        url = f"http://127.0.0.1:{gateway.http_port}/healthz"
        async with aiohttp.ClientSession() as http:
            while True:
                asked = time.monotonic()
                async with http.get(url) as reply:
                    body = await reply.json()
                slowest = max(slowest, time.monotonic() - asked)
                answers += 1
                not_ok += reply.status != 200
                if any(line.get("event") == "device player is connected" for line in gateway.logs):
                    break
                await asyncio.sleep(0.1)
        loaded = time.monotonic() - started
        print(f"loaded in {loaded:.1f} s; /healthz meanwhile: {answers} answers, {not_ok} not 200, "
              f"slowest {slowest * 1000:.0f} ms; last status {body.get('status')}")  # fmt: skip
        print(f"gateway peak RSS {peak_rss_mib(gateway.proc.pid):.0f} MiB")
        code, seconds = await stop_seconds(gateway)
        print(f"SIGTERM after loading: exit {code} in {seconds:.2f} s")

        gateway = await start_gateway(tmp, gateway_config(tmp, devices=device))
        await asyncio.sleep(1.0)
        code, seconds = await stop_seconds(gateway)
        print(f"SIGTERM 1 s into loading: exit {code} in {seconds:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=2_000_000, help="messages in the recording")
    asyncio.run(run(parser.parse_args().messages))


if __name__ == "__main__":
    main()
