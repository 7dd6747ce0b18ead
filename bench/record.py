"""Recorder benchmark: the gateway serving 50 WebSocket clients, with and without `hwgateway record`.

One gateway (`python -m gateway run`) with a simulated Wii Remote publishing `wiimote/State` on
`wii/state` at `--rate` Hz (1,000). This process holds `--clients` WebSocket clients subscribed to it.
Phases of `--seconds` each, in the same run: without the recorder, with it (a separate
`hwgateway record` process on `wii/state`), and without it again; then a second gateway, the same
but with the daemon's own `[record]` of `wii/state`, for one more phase (its recorder CPU per
message is that gateway's CPU above the mean of the two phases without a recorder). Per phase: fan-out latency (client
receive time minus the sample's `recv_stamp`, same host clock) p50/p99; the gateway's event-loop lag
(`hwgw_event_loop_lag_seconds`, sampled every 0.25 s) p50/p99; gateway CPU; with the recorder its CPU
per message written, the messages written and dropped and the file size.

`--format ros2` puts the ros2 bag (rosbag2, CDR) side by side with the JSON MCAP in the same run: a
phase with `hwgateway record --format ros2` after the JSON one, and a third gateway with
`[record] format = "ros2"`; for each format the CPU per recorded message and the bytes per message
(the files' bytes over the messages written), and the ratios ros2 / JSON.

Run:  scripts/loopback-only.sh .venv/bin/python bench/record.py [--seconds 60] [--clients 50] [--rate 1000]
      [--format ros2]  (at 1,000 msg/s: --remotes 0 --rate 1000)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import psutil

HOST = "127.0.0.1"
TOPIC = "wii-0/state"  # what the clients subscribe to
RECORDED = "*/state"  # what the recorders record: every simulated remote's state
_CLIENTS = [0]  # set by main: the number of clients, for the per-client rate
_REMOTES = [10]  # set by main: simulated remotes (each sends about 110 changed reports a second)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def _config(workdir: Path, port: int, rate: float, record: str = "") -> Path:
    """The gateway's config; `record`: "" (no `[record]`), or the `[record]` format ("json", "ros2")."""
    path = workdir / (f"bench-record-{record}.toml" if record else "bench.toml")
    folder = workdir / f"daemon-{record}"
    section = f'[record]\nfolder = "{folder}"\nformat = "{record}"\ntopics = ["{RECORDED}"]\n\n' if record else ""
    if _REMOTES[0]:
        remotes = "".join(
            f'[devices.wii-{n}]\nkind = "wiimote"\ntransport = "sim"\nsim_rate_hz = {rate}\n\n'
            for n in range(_REMOTES[0])
        )
    else:  # the generic sim controller publishes at exactly `rate` (creos_messages/ControllerState)
        remotes = f'[devices.wii-0]\nkind = "sim"\nrate_hz = {rate}\nleds = 4\n\n'

    path.write_text(
        f'[server]\nhost = "{HOST}"\nhttp_port = {port}\nmsgpack_port = -1\nunix_socket = ""\n\n{section}'
        f'[logging]\nlevel = "warning"\n\n{remotes}'
    )
    return path


async def _published(port: int) -> float:
    """wiimote/State samples published so far on every remote's state topic."""
    pattern = re.compile(r'^hwgw_bus_published_total\{topic="wii-\d+/state"\} (\S+)$', re.M)  # any sample type
    async with aiohttp.ClientSession() as http, http.get(f"http://{HOST}:{port}/metrics") as response:
        return sum(float(v) for v in pattern.findall(await response.text()))


async def _record_state(port: int) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.get(f"http://{HOST}:{port}/healthz") as reply:
        body = await reply.json()
    state: dict[str, Any] = body.get("record", {})
    return state


def _megabytes(path: Path | None) -> float:
    """The size of the recording (MB; a bag directory's MCAP files; 0 when none was written)."""
    if path is None or not path.exists():
        return 0.0
    if path.is_dir():
        return sum(file.stat().st_size for file in path.glob("*.mcap")) / 1e6
    return path.stat().st_size / 1e6


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _client(url: str, latencies: list[float], ready: asyncio.Event, count: list[int]) -> None:
    async with aiohttp.ClientSession() as http, http.ws_connect(url) as ws:
        await ws.send_str(json.dumps({"op": "subscribe", "id": 1, "topics": [TOPIC]}))
        count[0] += 1
        if count[0] >= count[1]:
            ready.set()
        async for message in ws:
            now = time.time()
            data = orjson.loads(message.data)
            if data.get("op") == "state":
                latencies.append(now - data["recv_stamp"])


async def _lag_sampler(port: int, lags: list[float]) -> None:
    pattern = re.compile(r"^hwgw_event_loop_lag_seconds (\S+)$", re.M)
    async with aiohttp.ClientSession() as http:
        while True:
            async with http.get(f"http://{HOST}:{port}/metrics") as response:
                match = pattern.search(await response.text())
            if match:
                lags.append(float(match.group(1)))
            await asyncio.sleep(0.25)


async def _phase(
    name: str,
    port: int,
    gateway: psutil.Process,
    seconds: float,
    latencies: list[float],
    record_to: Path | None,
    record_format: str = "json",
) -> dict[str, Any]:
    latencies.clear()
    lags: list[float] = []
    sampler = asyncio.create_task(_lag_sampler(port, lags))
    recorder = None
    if record_to is not None:
        recorder = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "gateway",
            "record",
            "--format",
            record_format,
            "-o",
            str(record_to),
            "--url",
            f"ws://{HOST}:{port}/ws",
            "--topics",
            RECORDED,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(30):  # the file appears once the recorder has subscribed
            while not _megabytes(record_to):  # noqa: ASYNC110 - another process writes it
                await asyncio.sleep(0.1)
        latencies.clear()
    daemon0 = await _record_state(port)
    published0 = await _published(port)
    cpu0 = gateway.cpu_times()
    rec_proc = psutil.Process(recorder.pid) if recorder else None
    rec0 = rec_proc.cpu_times() if rec_proc else None
    started = time.monotonic()
    await asyncio.sleep(seconds)
    elapsed = time.monotonic() - started
    cpu1 = gateway.cpu_times()
    daemon1 = await _record_state(port)
    published1 = await _published(port)
    result: dict[str, Any] = {
        "phase": name,
        "samples": len(latencies),
        "per_client_msg_s": len(latencies) / elapsed / max(1, _CLIENTS[0]),
        "fanout_p50_ms": _pct(latencies, 0.5) * 1e3,
        "fanout_p99_ms": _pct(latencies, 0.99) * 1e3,
        "loop_lag_p50_ms": _pct(lags, 0.5) * 1e3,
        "loop_lag_p99_ms": _pct(lags, 0.99) * 1e3,
        "bus_msg_s": (published1 - published0) / elapsed,
        "gateway_cpu_pct": 100 * ((cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)) / elapsed,
    }
    sampler.cancel()
    if daemon1:
        result.update(
            {
                "daemon_written": daemon1["written"] - daemon0["written"],
                "daemon_dropped": daemon1["dropped"] - daemon0["dropped"],
                "daemon_file_mb_per_min": (daemon1["bytes"] - daemon0["bytes"]) / 1e6 / elapsed * 60,
                "daemon_bytes_per_msg": (daemon1["bytes"] - daemon0["bytes"])
                / max(1, daemon1["written"] - daemon0["written"]),
            }
        )
    if recorder is not None and rec_proc is not None and rec0 is not None:
        rec1 = rec_proc.cpu_times()
        recorder.send_signal(signal.SIGINT)
        out, err = await recorder.communicate()
        line = out.decode().strip()
        match = re.search(r": (\d+) messages .*; (\d+) dropped", line)
        written = int(match.group(1)) if match else 0
        result.update(
            {
                "recorder_line": line or err.decode()[-300:],
                "recorder_cpu_pct": 100 * ((rec1.user + rec1.system) - (rec0.user + rec0.system)) / elapsed,
                "recorder_cpu_us_per_msg": 1e6
                * ((rec1.user + rec1.system) - (rec0.user + rec0.system))
                / max(written, 1),
                "written": written,
                "dropped": int(match.group(2)) if match else -1,
                "file_mb": _megabytes(record_to),
                "file_mb_per_min": _megabytes(record_to) / elapsed * 60,
                "bytes_per_msg": _megabytes(record_to) * 1e6 / max(written, 1),
            }
        )
    return result


async def _serve(
    args: argparse.Namespace, workdir: Path, record: str, phases: tuple[tuple[str, str], ...]
) -> list[dict[str, Any]]:
    """Start one gateway (with `[record]` of that format when `record`), serve the clients, run `phases`.

    Each phase: its name and the format `hwgateway record` records in meanwhile ("": none).
    """
    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "run", "--config", str(_config(workdir, port, args.rate, record)),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    results = []
    try:
        async with asyncio.timeout(20):
            while True:
                with contextlib.suppress(OSError):
                    _, writer = await asyncio.open_connection(HOST, port)
                    writer.close()
                    break
                await asyncio.sleep(0.1)
        gateway = psutil.Process(proc.pid)
        latencies: list[float] = []
        ready = asyncio.Event()
        count = [0, args.clients]
        clients = [
            asyncio.create_task(_client(f"ws://{HOST}:{port}/ws", latencies, ready, count)) for _ in range(args.clients)
        ]
        if not args.clients:
            ready.set()
        await asyncio.wait_for(ready.wait(), 30)
        await asyncio.sleep(2.0)  # warm up
        for name, cli in phases:
            record_to = (workdir / ("bench.mcap" if cli == "json" else "bench_bag")) if cli else None
            results.append(await _phase(name, port, gateway, args.seconds, latencies, record_to, cli or "json"))
            print(json.dumps(results[-1]), flush=True)
        for task in clients:
            task.cancel()
    finally:
        proc.send_signal(signal.SIGTERM)
        await proc.wait()
    return results


async def main(args: argparse.Namespace) -> int:
    _CLIENTS[0] = args.clients
    _REMOTES[0] = args.remotes
    workdir = Path(tempfile.mkdtemp(prefix="hwgw-bench-record-"))
    ros2 = args.format == "ros2"
    phases: tuple[tuple[str, str], ...] = (("without", ""), ("with hwgateway record", "json"))
    phases += (("with hwgateway record --format ros2", "ros2"),) if ros2 else ()
    results = await _serve(args, workdir, "", (*phases, ("without again", "")))
    results += await _serve(args, workdir, "json", (("daemon [record]", ""),))
    if ros2:
        results += await _serve(args, workdir, "ros2", (("daemon [record] format ros2", ""),))
    print(f"\n{args.clients} clients on {TOPIC}; {args.remotes} remotes recorded; {args.seconds:g} s a phase")
    for r in results:
        if "bus_msg_s" in r:
            print(f"{r['phase']}: {r['bus_msg_s']:.0f} msg/s on the recorded topics")
    print("delivered per client: " + ", ".join(f"{r['phase']} {r['per_client_msg_s']:.0f} msg/s" for r in results))
    print("| phase | fan-out p50 ms | fan-out p99 ms | loop lag p50 ms | loop lag p99 ms | gateway CPU % |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['phase']} | {r['fanout_p50_ms']:.2f} | {r['fanout_p99_ms']:.2f} | {r['loop_lag_p50_ms']:.2f} | "
            f"{r['loop_lag_p99_ms']:.2f} | {r['gateway_cpu_pct']:.1f} |"
        )
    by_phase = {r["phase"]: r for r in results}
    recorders = [by_phase[name] for name, cli in phases if cli]
    for rec in recorders:
        print(
            f"{rec['phase']}: {rec['written']} written, {rec['dropped']} dropped, {rec['file_mb_per_min']:.2f} MB/min, "
            f"{rec['recorder_cpu_pct']:.1f} % CPU, {rec['recorder_cpu_us_per_msg']:.1f} µs CPU per message, "
            f"{rec['bytes_per_msg']:.1f} bytes per message"
        )
    bare = (by_phase["without"]["gateway_cpu_pct"] + by_phase["without again"]["gateway_cpu_pct"]) / 2
    daemons = [r for r in results if r["phase"].startswith("daemon")]
    for daemon in daemons:
        extra_us = (daemon["gateway_cpu_pct"] - bare) / 100 * args.seconds / max(daemon["daemon_written"], 1) * 1e6
        daemon["extra_us_per_msg"] = extra_us
        print(
            f"{daemon['phase']}: {daemon['daemon_written']} written, {daemon['daemon_dropped']} dropped, "
            f"{daemon['daemon_file_mb_per_min']:.2f} MB/min, {daemon['daemon_bytes_per_msg']:.1f} bytes per message; "
            f"gateway CPU {daemon['gateway_cpu_pct']:.1f} % vs {bare:.1f} % without: {extra_us:.1f} µs CPU per "
            "message recorded"
        )
    if ros2:
        json_cli, ros2_cli = recorders
        json_daemon, ros2_daemon = daemons
        print(
            "ros2 / json: hwgateway record "
            f"{ros2_cli['recorder_cpu_us_per_msg'] / max(json_cli['recorder_cpu_us_per_msg'], 1e-9):.2f}x CPU per "
            f"message, {ros2_cli['bytes_per_msg'] / max(json_cli['bytes_per_msg'], 1e-9):.2f}x bytes per message; "
            f"daemon {ros2_daemon['daemon_bytes_per_msg'] / max(json_daemon['daemon_bytes_per_msg'], 1e-9):.2f}x "
            "bytes per message"
        )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rate", type=float, default=1000.0, help="each remote's sim_rate_hz")
    parser.add_argument(
        "--remotes", type=int, default=10, help="simulated Wii Remotes, all recorded (0: one generic sim at --rate)"
    )
    parser.add_argument(
        "--format", choices=("json", "ros2"), default="json", help="ros2: the ros2 bag side by side with JSON"
    )
    sys.exit(asyncio.run(main(parser.parse_args())))
