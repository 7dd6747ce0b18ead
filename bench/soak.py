"""Soak under abuse: 10 good clients at 1 kHz while 1,000 hostile connections attack, vs the same run without them.

    scripts/loopback-only.sh .venv/bin/python bench/soak.py --seconds 60 --attackers 1000

Each run starts the real daemon (`python -m gateway run`, default limits) with one `sim` device at
1 kHz. Three kinds of process take part, so that none disturbs another's measurement:

- `soak.py good`: ten good clients (4 WebSocket, 3 msgpack TCP, 3 Unix) subscribe to the device's
  state and measure sample latency (receipt `time.time()` − `stamp`) and the share of published
  samples they received; one more client measures ping round trips. It does nothing else.
- `soak.py attack` (`--attack-procs` of them, the attackers split evenly): hostile connections from
  127.0.x.y sources for the whole window: idle sockets, unfinished 1 MiB requests, never-reading
  request floods, slowloris HTTP headers and 4 GiB headers, each reconnecting when the gateway
  closes it.
- this process: samples the daemon's RSS and descriptors every 0.25 s, probes `/healthz` once a
  second on a new connection, and after the attackers have left, how long RSS and descriptors take
  to come back.

The same run without attackers comes first; the report gives both and their ratios.

`--face NAME` turns the attackers on one face instead (the good clients stay on the native face):
`native` (the default: WebSocket, msgpack TCP and Unix), `rosbridge` (its own port), `rosbridge-path`
(`/rosbridge` on the HTTP port), `foxglove`, `tdm-tcp` or `tdm-ws`. Each face gets the same attacks in
its own framing: idle sockets, unfinished messages, never-reading floods of frames it must refuse
(invalid JSON, unknown binary opcodes, bad flatbuffers), announced sizes beyond every limit, and on
WebSocket faces slowloris headers on that face's port.

    scripts/loopback-only.sh .venv/bin/python bench/soak.py --face tdm-tcp --seconds 20 --attackers 300
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import itertools
import json
import os
import pstats
import resource
import signal
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
PROFILED_GATEWAY = BENCH_DIR / "profiled_gateway.py"
#: The signals that start and stop its profiler (as `bench/profiled_gateway.py` defines them).
START_SIGNAL = signal.SIGRTMIN + 1
STOP_SIGNAL = signal.SIGRTMIN + 2
HOST = "127.0.0.1"
TOPIC = "bench-1/state"
GOOD_TRANSPORTS = ("ws",) * 4 + ("tcp",) * 3 + ("unix",) * 3
ATTACKS = ("idle", "partial", "flood", "slowloris", "huge_header")
WARMUP_S = 2.0
#: Time the attack is given to ramp up before the measured window opens.
RAMP_S = 2.0
#: After the attack, how long descriptors and RSS are watched for their return (s).
RECOVERY_S = 5.0
#: Descriptors above the pre-attack count that still count as "back".
FD_SLACK = 4
SAMPLE_PERIOD_S = 0.25
RECONNECT_S = 0.5
MiB = 1024 * 1024


FACES = ("native", "rosbridge", "rosbridge-path", "foxglove", "tdm-tcp", "tdm-ws")
#: Each face's WebSocket path and subprotocol (None: the face is a TCP stream).
FACE_WS: dict[str, tuple[str, str | None] | None] = {
    "rosbridge": ("/", None),
    "rosbridge-path": ("/rosbridge", None),
    "foxglove": ("/", "foxglove.websocket.v1"),
    "tdm-tcp": None,
    "tdm-ws": ("/", None),
}


def _config(workdir: Path, face: str = "native") -> str:
    faces = ""
    if face.startswith("rosbridge"):
        faces = "\n[rosbridge]\nenabled = true\nport = 0\n"
    elif face == "foxglove":
        faces = "\n[foxglove]\nenabled = true\nport = 0\n"
    elif face.startswith("tdm"):
        faces = f'\n[tdm]\nenabled = true\nhost = "{HOST}"\ntcp_port = 0\nws_port = 0\n'
    return (
        f'[server]\nhost = "{HOST}"\nhttp_port = 0\nmsgpack_port = 0\nunix_socket = "{workdir / "gw.sock"}"\n'
        f'{faces}\n[devices.bench-1]\nkind = "sim"\nrate_hz = 1000.0\n'
    )


# -- the daemon ---------------------------------------------------------------------------------


@dataclass
class Daemon:
    proc: asyncio.subprocess.Process
    log_path: Path
    http_port: int
    msgpack_port: int
    unix_socket: str
    face_port: int = 0


def _face_port(face: str, events: list[dict[str, Any]], http_port: int) -> int:
    """The port the attacked face listens on, from the daemon's log."""
    if face == "rosbridge-path":
        return http_port
    for event in events:
        if face in ("rosbridge", "foxglove") and event.get("event") == "listening":
            return int(str(event[face]).rstrip("/").rsplit(":", 1)[1])
        if face.startswith("tdm") and event.get("event") == "tdm face listening":
            return int(event["tcp" if face == "tdm-tcp" else "websocket"])
    return 0


async def start_daemon(workdir: Path, profile: Path | None = None, face: str = "native") -> Daemon:
    """The daemon on free ports; under cProfile (`bench/profiled_gateway.py`) when `profile` names its output."""
    config = workdir / "gateway.toml"
    config.write_text(_config(workdir, face))
    log_path = workdir / "gateway.log"
    log_file = log_path.open("wb")
    program = ["-m", "gateway"] if profile is None else [str(PROFILED_GATEWAY), str(profile)]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *program, "run", "--config", str(config), "--log-format", "json",
        stdout=log_file, stderr=asyncio.subprocess.STDOUT, cwd=BENCH_DIR.parent,
    )  # fmt: skip
    log_file.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        events = []
        for line in log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                events.append(json.loads(line))
        for event in events:
            if event.get("event") == "listening":
                http_port = int(event["http"].rstrip("/").rsplit(":", 1)[1])
                return Daemon(
                    proc,
                    log_path,
                    http_port,
                    int(event["msgpack"].rsplit(":", 1)[1]),
                    event["unix"],
                    _face_port(face, events, http_port),
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


# -- good clients (their own process) -----------------------------------------------------------


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


async def good_client(args: argparse.Namespace, transport: str, tally: Tally, stop: asyncio.Event) -> None:
    subscribe = {"op": "subscribe", "id": 1, "topics": [TOPIC]}
    if transport == "ws":
        async with aiohttp.ClientSession() as http:
            ws = await http.ws_connect(f"ws://{HOST}:{args.http_port}/ws", compress=0, max_msg_size=0)
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
        reader, writer = await asyncio.open_connection(HOST, args.msgpack_port)
    else:
        reader, writer = await asyncio.open_unix_connection(args.unix_socket)
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


async def pinger(args: argparse.Namespace, window: tuple[float, float], rtts: list[float], stop: asyncio.Event) -> None:
    """One client pinging every 100 ms: request handling under attack, as round trips (s)."""
    reader, writer = await asyncio.open_connection(HOST, args.msgpack_port)
    unpacker = msgpack.Unpacker(raw=False)
    for request_id in itertools.count(1):
        if stop.is_set():
            break
        sent = time.time()
        writer.write(msgpack.packb({"op": "ping", "id": request_id}))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2.0):
                while not any(isinstance(m, dict) and m.get("id") == request_id for m in unpacker):
                    data = await reader.read(65536)
                    if not data:
                        return
                    unpacker.feed(data)
                if window[0] <= sent <= window[1]:
                    rtts.append(time.time() - sent)
        await asyncio.sleep(max(0.0, sent + 0.1 - time.time()))
    writer.close()


def _percentiles_ms(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if len(ordered) < 2:
        return {"count": len(ordered), "p50": float("nan"), "p99": float("nan"), "max": float("nan")}
    return {
        "count": len(ordered),
        "p50": 1000 * statistics.median(ordered),
        "p99": 1000 * statistics.quantiles(ordered, n=100)[98],
        "max": 1000 * ordered[-1],
    }


async def good_main(args: argparse.Namespace) -> None:
    """The good clients' process: measure the window, print one JSON line."""
    stop = asyncio.Event()
    window = (args.window_start, args.window_start + args.seconds)
    tallies = [Tally(window_start=window[0], window_end=window[1]) for _ in GOOD_TRANSPORTS]
    rtts: list[float] = []
    tasks = [
        asyncio.create_task(good_client(args, t, tally, stop))
        for t, tally in zip(GOOD_TRANSPORTS, tallies, strict=True)
    ]
    tasks.append(asyncio.create_task(pinger(args, window, rtts, stop)))
    await asyncio.sleep(max(0.0, window[1] + 0.5 - time.time()))
    stop.set()
    errors = [repr(r) for r in await asyncio.gather(*tasks, return_exceptions=True) if isinstance(r, BaseException)]
    latencies = list(itertools.chain.from_iterable(t.latencies for t in tallies))
    expected = sum(t.published for t in tallies)
    result = {
        "delivered_ratio": sum(t.received for t in tallies) / expected if expected else 0.0,
        "latency_ms": _percentiles_ms(latencies),
        "ping_ms": _percentiles_ms(rtts),
        "cpu_s": time.process_time(),
        "errors": errors,
    }
    print(json.dumps(result), flush=True)


# -- attackers (their own processes) ----------------------------------------------------------


def _ws_header(length: int, opcode: int = 1) -> bytes:
    head = bytes([0x80 | opcode])
    if length < 126:
        return head + bytes([0x80 | length]) + b"\0\0\0\0"
    if length < 1 << 16:
        return head + bytes([0x80 | 126]) + length.to_bytes(2, "big") + b"\0\0\0\0"
    return head + bytes([0x80 | 127]) + length.to_bytes(8, "big") + b"\0\0\0\0"


async def _open_face(args: argparse.Namespace, source: str, small_buffer: bool) -> tuple[Any, Any]:
    """A connection to the attacked face (`--face`): upgraded on a WebSocket face, raw on a stream one."""
    sock = socket.socket()
    if small_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.bind((source, 0))
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (HOST, args.face_port))
    reader, writer = await asyncio.open_connection(sock=sock)
    websocket = FACE_WS[args.face]
    if websocket is not None:
        path, protocol = websocket
        key = base64.b64encode(os.urandom(16)).decode()
        offer = f"Sec-WebSocket-Protocol: {protocol}\r\n" if protocol else ""
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n{offer}"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        response = await reader.readuntil(b"\r\n\r\n")
        if not response.startswith(b"HTTP/1.1 101"):
            writer.close()
            raise ConnectionRefusedError("refused")
    return reader, writer


async def _attack_face_once(args: argparse.Namespace, kind: str, source: str, until: float) -> None:
    """One hostile connection to `--face`, in that face's framing."""
    if kind == "slowloris":
        reader, writer = await _open(args, "face-http", source, small_buffer=False)
    else:
        reader, writer = await _open_face(args, source, small_buffer=kind == "flood")
    websocket = FACE_WS[args.face] is not None
    binary = args.face.startswith("tdm")
    try:
        if kind == "idle":
            await reader.read()
        elif kind == "partial":
            size = 60_000  # within the TDM's 100 KB limit too: held unfinished until the read timeout
            head = _ws_header(size, 2 if binary else 1) if websocket else size.to_bytes(4, "little")
            writer.write(head + b"x" * 4096)
            await reader.read()
        elif kind == "huge_header":
            writer.write(_ws_header(4 << 30, 2) if websocket else b"\xff\xff\xff\xff")
            await reader.read()
        elif kind == "slowloris":
            writer.write(f"GET / HTTP/1.1\r\nHost: {HOST}\r\n".encode())
            while time.monotonic() < until and not reader.at_eof():
                writer.write(b"X-Slow: y\r\n")
                await asyncio.sleep(1.0)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.001):
                        await reader.read(65536)
        else:  # flood: frames the face must refuse, never reading the answers
            garbage = b"\xff" * 40
            if args.face == "tdm-tcp":
                junk = (len(garbage).to_bytes(4, "little") + garbage) * 2000
            elif binary:
                junk = (_ws_header(len(garbage), 2) + garbage) * 2000
            else:  # invalid JSON, and (Foxglove) an unknown binary opcode
                junk = (b"\x81\x81\0\0\0\0x" + _ws_header(1, 2) + b"\x7f") * 4000
            while time.monotonic() < until:
                writer.write(junk)
                await writer.drain()  # blocks for good once the gateway stops reading
    finally:
        writer.transport.abort()


async def _open(args: argparse.Namespace, transport: str, source: str, small_buffer: bool) -> tuple[Any, Any]:
    if transport == "unix":
        return await asyncio.open_unix_connection(args.unix_socket)
    sock = socket.socket()
    if small_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.bind((source, 0))
    sock.setblocking(False)
    port = {"ws": args.http_port, "http": args.http_port, "face-http": args.face_port}.get(transport, args.msgpack_port)
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
    if args.face != "native" and kind == "slowloris" and FACE_WS[args.face] is None:
        kind = "idle"  # a stream face has no HTTP headers to be slow with
    transport = "http" if kind == "slowloris" else ("ws", "tcp", "unix")[(index // len(ATTACKS)) % 3]
    source = f"127.0.{1 + index // 50}.{1 + index % 50}"
    while (left := until - time.monotonic()) > 0:
        counts["connections"] += 1
        try:
            async with asyncio.timeout(left):
                if args.face == "native":
                    await _attack_once(args, kind, transport, source, until)
                else:
                    await _attack_face_once(args, kind, source, until)
        except (OSError, ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            counts["refused_or_reset"] += 1
        except TimeoutError:
            break
        await asyncio.sleep(RECONNECT_S)


async def attack_main(args: argparse.Namespace) -> None:
    """One attack process: attackers `--first` .. `--first + --attackers - 1` until the window ends."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    # Real attackers run on other hosts: here they share the daemon's cores, so they yield them first.
    os.nice(19)
    until = time.monotonic() + args.window_start + args.seconds - time.time()
    counts = {"connections": 0, "refused_or_reset": 0}
    indices = range(args.first, args.first + args.attackers)
    await asyncio.gather(*(_attacker(args, index, until, counts) for index in indices))
    counts["cpu_ms"] = round(1000 * time.process_time())
    print(json.dumps(counts), flush=True)


# -- one run ------------------------------------------------------------------------------------


@dataclass
class RunResult:
    face: str
    attackers: int
    seconds: float
    delivered_ratio: float
    latency_ms: dict[str, float]
    ping_ms: dict[str, float]
    rss_before_mb: float
    rss_peak_mb: float
    rss_after_mb: float
    fds_before: int
    fds_peak: int
    fds_after: list[tuple[float, int]]
    fds_back_s: float | None
    log_bytes: int
    healthz_ok: int
    healthz_probes: int
    healthz_outcomes: dict[str, int]
    healthz_ms_max: float
    loop_lag_max_ms: float
    daemon_cpu_s: float
    stop_exit_code: int | None
    stop_s: float
    attack_counts: dict[str, int]
    good_errors: list[str]


def _child(args: argparse.Namespace, mode: str, daemon: Daemon, window_start: float, *extra: str) -> list[str]:
    return [
        sys.executable, __file__, mode, "--seconds", str(args.seconds), "--window-start", repr(window_start),
        "--http-port", str(daemon.http_port), "--msgpack-port", str(daemon.msgpack_port),
        "--unix-socket", daemon.unix_socket, "--face", args.face, "--face-port", str(daemon.face_port), *extra,
    ]  # fmt: skip


async def _probe_healthz(port: int, outcomes: Counter[str]) -> tuple[bool, float, float]:
    """One `/healthz` on a new connection: (answered 200, time taken in s, loop_lag_max_ms)."""
    started = time.monotonic()
    connector = aiohttp.TCPConnector(force_close=True)
    try:
        async with (
            aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=2)) as http,
            http.get(f"http://{HOST}:{port}/healthz") as response,
        ):
            outcomes[str(response.status)] += 1
            lag = 0.0
            if response.status in (200, 503):
                lag = float((await response.json())["loop_lag_max_ms"])
            return response.status == 200, time.monotonic() - started, lag
    except (aiohttp.ClientError, TimeoutError) as error:
        outcomes[type(error).__name__] += 1
        return False, time.monotonic() - started, 0.0


async def run(args: argparse.Namespace, attackers: int, profile: Path | None = None) -> RunResult:
    """One soak run; with `profile`, the daemon's window (only) is profiled into that file."""
    workdir = Path(tempfile.mkdtemp(prefix="hwgw-soak-"))
    daemon = await start_daemon(workdir, profile, args.face)
    process = psutil.Process(daemon.proc.pid)
    window_start = time.time() + WARMUP_S + (RAMP_S if attackers else 0.0)
    window_end = window_start + args.seconds
    good = await asyncio.create_subprocess_exec(
        *_child(args, "good", daemon, window_start), stdout=asyncio.subprocess.PIPE
    )
    await asyncio.sleep(WARMUP_S - 0.5)
    rss_before, fds_before = process.memory_info().rss, process.num_fds()
    attacks = []
    procs = max(1, min(args.attack_procs, attackers))
    for index in range(procs if attackers else 0):
        first, last = attackers * index // procs, attackers * (index + 1) // procs
        attacks.append(
            await asyncio.create_subprocess_exec(
                *_child(args, "attack", daemon, window_start, "--first", str(first), "--attackers", str(last - first)),
                stdout=asyncio.subprocess.PIPE,
            )
        )
    await asyncio.sleep(max(0.0, window_start - time.time()))
    log_start = daemon.log_path.stat().st_size
    if profile is not None:
        daemon.proc.send_signal(START_SIGNAL)
    cpu_start = sum(process.cpu_times()[:2])
    rss_peak, fds_peak = rss_before, fds_before
    outcomes: Counter[str] = Counter()
    probes: list[asyncio.Task[tuple[bool, float, float]]] = []
    next_probe = window_start
    while (now := time.time()) < window_end:
        if now >= next_probe:
            probes.append(asyncio.create_task(_probe_healthz(daemon.http_port, outcomes)))
            next_probe += 1.0
        rss_peak = max(rss_peak, process.memory_info().rss)
        fds_peak = max(fds_peak, process.num_fds())
        await asyncio.sleep(SAMPLE_PERIOD_S)
    if profile is not None:
        daemon.proc.send_signal(STOP_SIGNAL)
    answers = await asyncio.gather(*probes)
    log_bytes = daemon.log_path.stat().st_size - log_start
    daemon_cpu = sum(process.cpu_times()[:2]) - cpu_start
    counts: Counter[str] = Counter()
    for attack in attacks:
        assert attack.stdout is not None
        with contextlib.suppress(TimeoutError, ValueError):
            async with asyncio.timeout(15):
                counts.update(json.loads(await attack.stdout.readline()))
        with contextlib.suppress(ProcessLookupError):
            attack.kill()
        await attack.wait()
    left = time.monotonic()
    fds_after: list[tuple[float, int]] = []
    fds_back_s = None
    while (elapsed := time.monotonic() - left) < RECOVERY_S:
        fds = process.num_fds()
        fds_after.append((round(elapsed, 2), fds))
        rss_peak = max(rss_peak, process.memory_info().rss)
        if fds_back_s is None and fds <= fds_before + FD_SLACK:
            fds_back_s = elapsed
        await asyncio.sleep(SAMPLE_PERIOD_S)
    rss_after = process.memory_info().rss
    assert good.stdout is not None
    good_result = json.loads(await good.stdout.readline())
    await good.wait()
    code, stop_s = await stop_daemon(daemon)
    return RunResult(
        face=args.face,
        attackers=attackers,
        seconds=args.seconds,
        delivered_ratio=good_result["delivered_ratio"],
        latency_ms=good_result["latency_ms"],
        ping_ms=good_result["ping_ms"],
        rss_before_mb=rss_before / 1e6,
        rss_peak_mb=rss_peak / 1e6,
        rss_after_mb=rss_after / 1e6,
        fds_before=fds_before,
        fds_peak=fds_peak,
        fds_after=fds_after,
        fds_back_s=fds_back_s,
        log_bytes=log_bytes,
        healthz_ok=sum(ok for ok, _, _ in answers),
        healthz_probes=len(answers),
        healthz_outcomes=dict(outcomes),
        healthz_ms_max=1000 * max((took for _, took, _ in answers), default=0.0),
        loop_lag_max_ms=max((lag for _, _, lag in answers), default=0.0),
        daemon_cpu_s=daemon_cpu,
        stop_exit_code=code,
        stop_s=stop_s,
        attack_counts=dict(counts),
        good_errors=good_result["errors"],
    )


def _table(results: list[RunResult]) -> str:
    rows = [
        "| run | delivered | p50 / p99 / max ms | ping p99 ms | /healthz ok (slowest ms) | RSS before/peak/after MB "
        "| fds before/peak, back after | log bytes | daemon CPU s | stop |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        name = f"{r.attackers} attackers on {r.face}" if r.attackers else "no attackers"
        lat = r.latency_ms
        back = "never" if r.fds_back_s is None else f"{r.fds_back_s:.2f} s"
        rows.append(
            f"| {name} | {r.delivered_ratio:.4f} | {lat['p50']:.2f} / {lat['p99']:.2f} / {lat['max']:.1f} | "
            f"{r.ping_ms['p99']:.2f} | {r.healthz_ok}/{r.healthz_probes} ({r.healthz_ms_max:.0f}) | "
            f"{r.rss_before_mb:.0f}/{r.rss_peak_mb:.0f}/{r.rss_after_mb:.0f} | {r.fds_before}/{r.fds_peak}, {back} | "
            f"{r.log_bytes} | {r.daemon_cpu_s:.1f} | exit {r.stop_exit_code} in {r.stop_s:.2f} s |"
        )
    return "\n".join(rows)


async def main(args: argparse.Namespace) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    results = [] if args.attack_only else [await run(args, 0)]
    profile = RESULTS_DIR / "soak-attacked.pstats" if args.profile else None
    RESULTS_DIR.mkdir(exist_ok=True)
    results.append(await run(args, args.attackers, profile))
    print(_table(results))
    if profile is not None:
        _print_profile(profile)
    attacked = results[-1]
    if len(results) == 2:
        baseline = results[0]
        print(
            f"attacked/baseline: delivered {attacked.delivered_ratio / baseline.delivered_ratio:.4f}, "
            f"p99 {attacked.latency_ms['p99'] / baseline.latency_ms['p99']:.2f}x"
        )
    print(
        f"attack connections: {attacked.attack_counts}; /healthz answers {attacked.healthz_outcomes}; "
        f"loop lag max {attacked.loop_lag_max_ms:.0f} ms; fds after the attack (s, fds): {attacked.fds_after}"
    )
    for result in results:
        if result.good_errors:
            print(f"good clients' errors ({result.attackers} attackers): {result.good_errors}")
    RESULTS_DIR.mkdir(exist_ok=True)
    out = RESULTS_DIR / f"soak-{args.face}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.write_text(json.dumps([asdict(r) for r in results], indent=2))
    print(f"raw: {out.relative_to(BENCH_DIR.parent)}")


def _print_profile(path: Path) -> None:
    """The attacked run's costliest functions, by own time and by cumulative time (profiled, so inflated)."""
    stats = pstats.Stats(str(path))
    print(f"\nprofile of the attacked daemon's window ({path.relative_to(BENCH_DIR.parent)}), wall-clock:")
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(40)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "good", "attack"])
    parser.add_argument("--seconds", type=float, default=60.0, help="measured window per run (s)")
    parser.add_argument("--attackers", type=int, default=1000, help="hostile connections at once")
    parser.add_argument("--attack-procs", type=int, default=4, help="processes the attackers are split over")
    parser.add_argument("--attack-only", action="store_true", help="skip the run without attackers")
    parser.add_argument(
        "--profile", action="store_true", help="run the attacked daemon under cProfile and print its costliest calls"
    )
    parser.add_argument("--face", choices=FACES, default="native", help="the face the attackers target")
    parser.add_argument("--face-port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--window-start", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--http-port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--msgpack-port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--unix-socket", help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    arguments = _parser().parse_args()
    entry = {"bench": main, "good": good_main, "attack": attack_main}[arguments.mode]
    asyncio.run(entry(arguments))
