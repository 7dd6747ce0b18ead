"""Soak under abuse: 10 good clients at 1 kHz while 1,000 hostile connections attack, vs the same run without them.

    scripts/loopback-only.sh .venv/bin/python bench/soak.py --seconds 60 --attackers 1000

Each run starts the real daemon (`python -m gateway run`, default limits) with one `sim` device at
1 kHz. Ten good clients (4 WebSocket, 3 msgpack TCP, 3 Unix) subscribe to its state and measure
sample latency (receipt `time.time()` − `stamp`) and the share of published samples they received.
In the attack run a separate process (this file with `attack`) keeps 1,000 hostile connections
going from 127.0.x.y sources for the whole window: idle sockets, unfinished 1 MiB requests,
never-reading request floods, slowloris HTTP headers and 4 GiB headers, each reconnecting when the
gateway closes it. Reported: the good clients' p50/p99/max latency and delivered ratio in both
runs, the daemon's RSS and open descriptors (peak and end), and the bytes it logged.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import itertools
import json
import os
import resource
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import msgpack
import psutil

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
HOST = "127.0.0.1"
TOPIC = "bench-1/state"
GOOD_TRANSPORTS = ("ws",) * 4 + ("tcp",) * 3 + ("unix",) * 3
ATTACKS = ("idle", "partial", "flood", "slowloris", "huge_header")
WARMUP_S = 2.0
SAMPLE_PERIOD_S = 0.25
RECONNECT_S = 0.5
MiB = 1024 * 1024


def _config(workdir: Path) -> str:
    return (
        f'[server]\nhost = "{HOST}"\nhttp_port = 0\nmsgpack_port = 0\nunix_socket = "{workdir / "gw.sock"}"\n'
        '\n[devices.bench-1]\nkind = "sim"\nrate_hz = 1000.0\n'
    )


# -- the daemon ---------------------------------------------------------------------------------


@dataclass
class Daemon:
    proc: asyncio.subprocess.Process
    log_path: Path
    http_port: int
    msgpack_port: int
    unix_socket: str


async def start_daemon(workdir: Path) -> Daemon:
    config = workdir / "gateway.toml"
    config.write_text(_config(workdir))
    log_path = workdir / "gateway.log"
    log_file = log_path.open("wb")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "run", "--config", str(config), "--log-format", "json",
        stdout=log_file, stderr=asyncio.subprocess.STDOUT, cwd=BENCH_DIR.parent,
    )  # fmt: skip
    log_file.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for line in log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if event.get("event") == "listening":
                    return Daemon(
                        proc,
                        log_path,
                        int(event["http"].rstrip("/").rsplit(":", 1)[1]),
                        int(event["msgpack"].rsplit(":", 1)[1]),
                        event["unix"],
                    )
        if proc.returncode is not None:
            break
        await asyncio.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"the gateway did not start: {log_path.read_text()[-2000:]}")


async def stop_daemon(daemon: Daemon) -> tuple[int | None, float]:
    """SIGTERM; the exit code and how long the stop took (s)."""
    started = time.monotonic()
    daemon.proc.terminate()
    try:
        async with asyncio.timeout(20):
            code = await daemon.proc.wait()
    except TimeoutError:
        daemon.proc.kill()
        code = await daemon.proc.wait()
    return code, time.monotonic() - started


# -- good clients -------------------------------------------------------------------------------


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    received: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    window_start: float = 0.0
    window_end: float = float("inf")

    def note(self, message: Any) -> None:
        if not isinstance(message, dict) or message.get("op") != "state":
            return
        now = time.time()
        if not self.window_start <= now <= self.window_end:
            return
        self.received += 1
        self.latencies.append(now - message["stamp"])
        seq = message["seq"]
        self.first_seq = seq if self.first_seq is None else self.first_seq
        self.last_seq = seq

    @property
    def published(self) -> int:
        return 0 if self.first_seq is None or self.last_seq is None else self.last_seq - self.first_seq + 1


async def good_client(daemon: Daemon, transport: str, tally: Tally, stop: asyncio.Event) -> None:
    subscribe = {"op": "subscribe", "id": 1, "topics": [TOPIC]}
    if transport == "ws":
        async with aiohttp.ClientSession() as http:
            ws = await http.ws_connect(f"ws://{HOST}:{daemon.http_port}/ws", compress=0, max_msg_size=0)
            await ws.send_str(json.dumps(subscribe))
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    message = await ws.receive(timeout=0.5)
                    if message.type != aiohttp.WSMsgType.TEXT:
                        break
                    tally.note(json.loads(message.data))
            await ws.close()
        return
    if transport == "tcp":
        reader, writer = await asyncio.open_connection(HOST, daemon.msgpack_port)
    else:
        reader, writer = await asyncio.open_unix_connection(daemon.unix_socket)
    writer.write(msgpack.packb(subscribe))
    unpacker = msgpack.Unpacker(raw=False)
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.5):
                data = await reader.read(65536)
            if not data:
                break
            unpacker.feed(data)
            for message in unpacker:
                tally.note(message)
    writer.close()


async def pinger(daemon: Daemon, stop: asyncio.Event) -> None:
    """One client pinging every 100 ms, so that request handling is part of the load."""
    reader, writer = await asyncio.open_connection(HOST, daemon.msgpack_port)
    for request_id in itertools.count(1):
        if stop.is_set():
            break
        writer.write(msgpack.packb({"op": "ping", "id": request_id}))
        await asyncio.sleep(0.1)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.01):
                await reader.read(65536)
    writer.close()


# -- attackers (run in their own process) -------------------------------------------------------


def _ws_header(length: int, opcode: int = 1) -> bytes:
    head = bytes([0x80 | opcode])
    if length < 126:
        return head + bytes([0x80 | length]) + b"\0\0\0\0"
    if length < 1 << 16:
        return head + bytes([0x80 | 126]) + length.to_bytes(2, "big") + b"\0\0\0\0"
    return head + bytes([0x80 | 127]) + length.to_bytes(8, "big") + b"\0\0\0\0"


async def _open(args: argparse.Namespace, transport: str, source: str, small_buffer: bool) -> tuple[Any, Any]:
    if transport == "unix":
        return await asyncio.open_unix_connection(args.unix_socket)
    sock = socket.socket()
    if small_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.bind((source, 0))
    sock.setblocking(False)
    port = args.http_port if transport in ("ws", "http") else args.msgpack_port
    await asyncio.get_running_loop().sock_connect(sock, (HOST, port))
    reader, writer = await asyncio.open_connection(sock=sock)
    if transport == "ws":
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            f"GET /ws HTTP/1.1\r\nHost: {HOST}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        response = await reader.readuntil(b"\r\n\r\n")
        if not response.startswith(b"HTTP/1.1 101"):
            writer.close()
            raise ConnectionRefusedError("refused")
    return reader, writer


async def _attack_once(args: argparse.Namespace, kind: str, transport: str, source: str, until: float) -> None:
    reader, writer = await _open(args, transport, source, small_buffer=kind == "flood")
    try:
        if kind == "idle":
            await reader.read()  # until the gateway closes it (or the run ends)
        elif kind == "partial":
            head = _ws_header(MiB - 64) if transport == "ws" else b"\xc6" + (MiB - 64).to_bytes(4, "big")
            writer.write(head + b"x" * (256 * 1024))
            await reader.read()
        elif kind == "huge_header":
            writer.write(_ws_header(4 << 30, 2) if transport == "ws" else b"\xdb\xff\xff\xff\xff")
            await reader.read()
        elif kind == "slowloris":
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            while time.monotonic() < until and not reader.at_eof():
                writer.write(b"X-Slow: y\r\n")
                await asyncio.sleep(1.0)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.001):
                        await reader.read(65536)
        else:  # flood: subscribe to everything, then send junk and never read
            if transport == "ws":
                junk = (b"\x81\x81\0\0\0\0x" + _ws_header(1, 2) + b"\0") * 4000
            else:
                junk = (msgpack.packb(1) + msgpack.packb({"op": "ping"})) * 4000
            while time.monotonic() < until:
                writer.write(junk)
                await writer.drain()  # blocks for good once the gateway stops reading
    finally:
        writer.transport.abort()


async def _attacker(args: argparse.Namespace, index: int, until: float, counts: dict[str, int]) -> None:
    kind = ATTACKS[index % len(ATTACKS)]
    transport = "http" if kind == "slowloris" else ("ws", "tcp", "unix")[(index // len(ATTACKS)) % 3]
    source = f"127.0.{1 + index // 50}.{1 + index % 50}"
    while (left := until - time.monotonic()) > 0:
        counts["connections"] += 1
        try:
            async with asyncio.timeout(left):
                await _attack_once(args, kind, transport, source, until)
        except (OSError, ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            counts["refused_or_reset"] += 1
        except TimeoutError:
            break
        await asyncio.sleep(RECONNECT_S)


async def attack_main(args: argparse.Namespace) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    until = time.monotonic() + args.seconds
    counts = {"connections": 0, "refused_or_reset": 0}
    await asyncio.gather(*(_attacker(args, index, until, counts) for index in range(args.attackers)))
    print(json.dumps(counts), flush=True)


# -- one run ------------------------------------------------------------------------------------


@dataclass
class RunResult:
    attackers: int
    seconds: float
    delivered_ratio: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    rss_start_mb: float
    rss_peak_mb: float
    rss_end_mb: float
    fds_peak: int
    fds_end: int
    log_bytes: int
    healthz_ok_during: float
    healthz_outcomes: dict[str, int]
    loop_lag_max_ms: float
    stop_exit_code: int | None
    stop_s: float
    attack_counts: dict[str, int]


async def run(attackers: int, seconds: float) -> RunResult:
    workdir = Path(tempfile.mkdtemp(prefix="hwgw-soak-"))
    daemon = await start_daemon(workdir)
    process = psutil.Process(daemon.proc.pid)
    stop = asyncio.Event()
    tallies = [Tally() for _ in GOOD_TRANSPORTS]
    clients = [
        asyncio.create_task(good_client(daemon, t, tally, stop))
        for t, tally in zip(GOOD_TRANSPORTS, tallies, strict=True)
    ]
    pings = asyncio.create_task(pinger(daemon, stop))
    await asyncio.sleep(WARMUP_S)
    attack = None
    if attackers:
        attack = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "attack", "--attackers", str(attackers), "--seconds", str(seconds + 1),
            "--http-port", str(daemon.http_port), "--msgpack-port", str(daemon.msgpack_port),
            "--unix-socket", daemon.unix_socket, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        await asyncio.sleep(1.0)  # let the attack ramp up before the window opens
    rss_start = process.memory_info().rss
    log_start = daemon.log_path.stat().st_size
    start = time.time()
    for tally in tallies:
        tally.window_start, tally.window_end = start, start + seconds
    rss_peak, fds_peak = rss_start, process.num_fds()
    health_ok = health_total = 0
    health_outcomes: Counter[str] = Counter()
    loop_lag_max_ms = 0.0
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as http:
        while time.time() < start + seconds:
            await asyncio.sleep(SAMPLE_PERIOD_S)
            rss_peak = max(rss_peak, process.memory_info().rss)
            fds_peak = max(fds_peak, process.num_fds())
            if int(time.time() * 4) % 4 == 0:
                health_total += 1
                try:
                    async with http.get(f"http://{HOST}:{daemon.http_port}/healthz") as response:
                        health_ok += response.status == 200
                        health_outcomes[str(response.status)] += 1
                        if response.status in (200, 503):
                            body = await response.json()
                            loop_lag_max_ms = max(loop_lag_max_ms, body["loop_lag_max_ms"])
                except (aiohttp.ClientError, TimeoutError) as error:
                    health_outcomes[type(error).__name__] += 1
    log_bytes = daemon.log_path.stat().st_size - log_start
    counts: dict[str, int] = {}
    if attack is not None:
        assert attack.stdout is not None
        with contextlib.suppress(TimeoutError, ValueError):
            async with asyncio.timeout(15):
                counts = json.loads(await attack.stdout.readline())
        with contextlib.suppress(ProcessLookupError):
            attack.kill()
        await attack.wait()
    await asyncio.sleep(1.0)
    rss_end, fds_end = process.memory_info().rss, process.num_fds()
    stop.set()
    await asyncio.gather(*clients, pings, return_exceptions=True)
    code, stop_s = await stop_daemon(daemon)
    latencies = sorted(itertools.chain.from_iterable(t.latencies for t in tallies))
    expected = sum(t.published for t in tallies)
    return RunResult(
        attackers=attackers,
        seconds=seconds,
        delivered_ratio=sum(t.received for t in tallies) / expected if expected else 0.0,
        p50_ms=1000 * statistics.median(latencies) if latencies else float("nan"),
        p99_ms=1000 * statistics.quantiles(latencies, n=100)[98] if len(latencies) > 100 else float("nan"),
        max_ms=1000 * latencies[-1] if latencies else float("nan"),
        rss_start_mb=rss_start / 1e6,
        rss_peak_mb=rss_peak / 1e6,
        rss_end_mb=rss_end / 1e6,
        fds_peak=fds_peak,
        fds_end=fds_end,
        log_bytes=log_bytes,
        healthz_ok_during=health_ok / health_total if health_total else float("nan"),
        healthz_outcomes=dict(health_outcomes),
        loop_lag_max_ms=loop_lag_max_ms,
        stop_exit_code=code,
        stop_s=stop_s,
        attack_counts=counts,
    )


def _table(results: list[RunResult]) -> str:
    rows = [
        "| run | delivered | p50 ms | p99 ms | max ms | RSS start/peak/end MB | fds peak/end | log bytes "
        "| /healthz ok | stop |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        name = f"{r.attackers} attackers" if r.attackers else "no attackers"
        rows.append(
            f"| {name} | {r.delivered_ratio:.4f} | {r.p50_ms:.2f} | {r.p99_ms:.2f} | {r.max_ms:.1f} | "
            f"{r.rss_start_mb:.0f}/{r.rss_peak_mb:.0f}/{r.rss_end_mb:.0f} | {r.fds_peak}/{r.fds_end} | "
            f"{r.log_bytes} | {r.healthz_ok_during:.2f} | exit {r.stop_exit_code} in {r.stop_s:.2f} s |"
        )
    return "\n".join(rows)


async def main(args: argparse.Namespace) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    baseline = await run(0, args.seconds)
    attacked = await run(args.attackers, args.seconds)
    results = [baseline, attacked]
    print(_table(results))
    print(
        f"attacked/baseline: delivered ratio {attacked.delivered_ratio / baseline.delivered_ratio:.4f}, "
        f"p99 {attacked.p99_ms / baseline.p99_ms:.2f}x; attack connections: {attacked.attack_counts}; "
        f"/healthz answers {baseline.healthz_outcomes} / {attacked.healthz_outcomes}; "
        f"loop lag max {baseline.loop_lag_max_ms:.0f} / {attacked.loop_lag_max_ms:.0f} ms"
    )
    RESULTS_DIR.mkdir(exist_ok=True)
    out = RESULTS_DIR / f"soak-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.write_text(json.dumps([asdict(r) for r in results], indent=2))
    print(f"raw: {out.relative_to(BENCH_DIR.parent)}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "attack"])
    parser.add_argument("--seconds", type=float, default=60.0, help="measured window per run (s)")
    parser.add_argument("--attackers", type=int, default=1000, help="hostile connections at once")
    parser.add_argument("--http-port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--msgpack-port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--unix-socket", help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    arguments = _parser().parse_args()
    asyncio.run(attack_main(arguments) if arguments.mode == "attack" else main(arguments))
