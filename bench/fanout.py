"""Fan-out benchmark: the gateway against a bare server, N clients x R msg/s, WebSocket and msgpack/TCP.

Method (docs: the shared specs/perf-baselines.md, bench/README.md): for each transport, each repeat
runs the real daemon (`python -m gateway run`, one sim device at `--rate` Hz) and
bench/baseline_server.py (a state message of the same shape, serialized once, the same bytes to every
client). The pair's order alternates between repeats so that host drift (about 10 % on this VM) hits
both alike. Each server is its own process, so psutil measures its CPU and RSS alone; this process
holds all N client connections. Results are medians (min-max) over the repeats, and gateway/baseline
ratios.

With `--transports rosbridge` the pair is two gateway processes with the rosbridge face enabled:
N rosbridge clients (`subscribe` on /bench_1/state, JSON `publish` frames) against N clients of the
gateway's own WebSocket (/ws), so the ratios are the face's cost over the native protocol.

Run:  scripts/loopback-only.sh .venv/bin/python bench/fanout.py [--clients 50] [--rate 1000] ...
"""

from __future__ import annotations

import abc
import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import importlib.metadata
import itertools
import json
import math
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import aiohttp
import msgpack
import orjson
import psutil

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import (  # noqa: E402
    hold_read_buffers_in_heap,
    positive_float,
    positive_int,
    spread,
    thread_seconds_between,
    thread_times_ns,
)
from bench.profile_breakdown import Breakdown, profile_breakdown  # noqa: E402 - after the path fix above
from bench.profiled_gateway import START_SIGNAL, STOP_SIGNAL  # noqa: E402

Transport = Literal["ws", "msgpack", "rosbridge"]
#: A side of the comparison: the gateway (write batching), the gateway with clients that asked for
#: multi-sample frames (`configure {"multi_state": true}`), the bare baseline server, and the bare
#: server batching a tick's messages into one write per client (`floor`: the least the gateway's
#: one-send-per-client-per-turn design can cost, with no gateway code), and on request that floor
#: making each tick's sample as the gateway's sim device does (`typed`: a typed `ControllerState`
#: made plain per message; the floor of the design including its typed device sample).
ServerKind = Literal["gateway", "multi", "baseline", "floor", "typed"]
#: The sides run by default; `--sides` may also name `typed`.
SIDES: tuple[ServerKind, ...] = ("gateway", "multi", "baseline", "floor")
ALL_SIDES: tuple[ServerKind, ...] = (*SIDES, "typed")
#: The sides that run bench/baseline_server.py.
BARE_KINDS: tuple[ServerKind, ...] = ("baseline", "floor", "typed")
TRANSPORTS: tuple[Transport, ...] = ("ws", "msgpack", "rosbridge")
DEFAULT_TRANSPORTS: tuple[Transport, ...] = ("ws", "msgpack")
ROS_TOPIC = "/bench_1/state"


def side_name(transport: Transport, kind: ServerKind) -> str:
    """How a side is shown: for rosbridge, the baseline is the gateway's native WebSocket."""
    if transport == "rosbridge":
        return "rosbridge" if kind == "gateway" else "native-ws"
    return {"multi": "gateway+multi", "floor": "bare-batched", "typed": "bare-batched+typed"}.get(kind, kind)


@dataclass(frozen=True)
class Scenario:
    """N clients, each subscribed to `topics` topics published together at `rate` Hz each."""

    name: str
    clients: int
    rate: float
    topics: int = 1

    @property
    def per_client(self) -> float:
        """Messages per second each client should receive."""
        return self.rate * self.topics

    def describe(self) -> str:
        topics = f" x {self.topics} topics" if self.topics > 1 else ""
        return f"{self.clients} clients{topics} x {self.rate:g} Hz = {self.per_client:,.0f} msg/s per client"


#: The scenarios of issue 22: one 1 kHz topic, a device cycle of 4 topics, and many clients.
SCENARIOS = {
    "single": Scenario("single", 50, 1000.0, 1),
    "multi-topic": Scenario("multi-topic", 50, 250.0, 4),
    "many-clients": Scenario("many-clients", 200, 250.0, 1),
}


BASELINE_SERVER = BENCH_DIR / "baseline_server.py"
PROFILED_GATEWAY = BENCH_DIR / "profiled_gateway.py"
RESULTS_DIR = BENCH_DIR / "results"

HOST = "127.0.0.1"
DEVICE_ID = "bench-1"
TOPIC = f"{DEVICE_ID}/state"


def topics_of(count: int) -> list[str]:
    """The sim device's state topics with `state_topics = count` (the baseline uses the same names)."""
    return [TOPIC, *(f"{TOPIC}/{index}" for index in range(2, count + 1))]


#: A run whose client process (one, holding every connection) is this busy measures its own queueing.
CLIENT_BOUND_PCT = 95.0

SUBSCRIBE_ID = 1
CONFIGURE_ID = 2

START_TIMEOUT_S = 20.0
CONNECT_TIMEOUT_S = 30.0
REQUEST_TIMEOUT_S = 10.0
CLOSE_TIMEOUT_S = 2.0
SCRAPE_TIMEOUT_S = 5.0
STOP_TIMEOUT_S = 10.0
RSS_PERIOD_S = 0.1
QUIET_SAMPLE_S = 0.5
QUIET_SAMPLES = 4
READ_SIZE = 65536
LOG_TAIL_LINES = 40
MAX_PROBLEMS = 20

#: Every server pid started and not yet reaped, for the last-resort cleanup in `main`.
_live_pids: set[int] = set()


# -- server processes ---------------------------------------------------------------------------


@dataclass
class ServerProcess:
    """A server subprocess that printed its `listening` line; `port` serves the benchmark's transport."""

    kind: ServerKind
    proc: asyncio.subprocess.Process
    port: int
    http_port: int | None
    log_tail: deque[str]
    problems: list[str]
    drain: asyncio.Task[None]

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def stop(self) -> int | None:
        code = await stop_process(self.proc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.drain, CLOSE_TIMEOUT_S)
        return code


async def stop_process(proc: asyncio.subprocess.Process) -> int | None:
    """SIGTERM and wait; SIGKILL when it does not exit in time. None if even that did not reap it."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), STOP_TIMEOUT_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), STOP_TIMEOUT_S)
    if proc.returncode is not None:
        _live_pids.discard(proc.pid)
    return proc.returncode


def gateway_config(rate: float, rosbridge: bool = False, topics: int = 1) -> str:
    """Free ports, no Unix socket, one sim device: the only publisher, `topics` topics at `rate` Hz.

    All clients come from 127.0.0.1, so the per-peer cap is raised to the total cap.
    """
    return (
        f'[server]\nhost = "{HOST}"\nhttp_port = 0\nmsgpack_port = 0\nunix_socket = ""\n'
        "max_clients_per_peer = 1000\n\n"
        + ("[rosbridge]\nenabled = true\nport = 0\n\n" if rosbridge else "")
        + f'[devices.{DEVICE_ID}]\nkind = "sim"\nrate_hz = {float(rate)!r}\nleds = 1\nstate_topics = {topics}\n'
    )


def server_argv(
    kind: ServerKind, transport: Transport, scenario: Scenario, workdir: Path, profile: Path | None = None
) -> list[str]:
    if kind not in BARE_KINDS or transport == "rosbridge":
        config = workdir / "gateway.toml"
        config.write_text(gateway_config(scenario.rate, rosbridge=transport == "rosbridge", topics=scenario.topics))
        # Profiled: cProfile only during the window (START_SIGNAL ... STOP_SIGNAL, sent by `drive_clients`).
        program = ["-m", "gateway"] if profile is None else [str(PROFILED_GATEWAY), str(profile)]
        return [sys.executable, *program, "run", "--config", str(config), "--log-format", "json"]
    return [
        sys.executable,
        *([] if profile is None else [str(PROFILED_GATEWAY), str(profile)]),
        str(BASELINE_SERVER),
        "--transport",
        transport,
        "--rate",
        repr(float(scenario.rate)),
        "--topics",
        str(scenario.topics),
        *(["--batch"] if kind in ("floor", "typed") else []),
        *(["--typed-sample"] if kind == "typed" else []),
    ]


def _port_of(url: str) -> int:
    """The port of `http://h:p/`, `ws://h:p/ws` or `tcp://h:p`."""
    return int(url.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[1])


def ports_from_listening(kind: ServerKind, transport: Transport, line: dict[str, Any]) -> tuple[int, int | None]:
    """(port for `transport`, HTTP port for /metrics or None) from a server's `listening` line."""
    if kind in BARE_KINDS and transport != "rosbridge":
        return int(line["port"]), None
    http_port = _port_of(line["http"])
    if transport == "rosbridge" and kind == "gateway":
        if not line.get("rosbridge"):
            raise RuntimeError(f"the gateway does not listen for rosbridge: {line}")
        return _port_of(line["rosbridge"]), http_port
    if transport in ("ws", "rosbridge"):
        return http_port, http_port
    if not line.get("msgpack"):
        raise RuntimeError(f"the gateway does not listen on msgpack/TCP: {line}")
    return _port_of(line["msgpack"]), http_port


def _note_line(raw: bytes, tail: deque[str], problems: list[str]) -> dict[str, Any] | None:
    """Keep the line in the tail; keep warnings and errors aside; return it parsed when it is JSON."""
    text = raw.decode(errors="replace").rstrip()
    tail.append(text)
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        if text and len(problems) < MAX_PROBLEMS:
            problems.append(text)  # not a log record: a traceback or a crash message
        return None
    if record.get("level") in ("warning", "error", "critical") and len(problems) < MAX_PROBLEMS:
        problems.append(text)
    return record


async def _wait_listening(proc: asyncio.subprocess.Process, tail: deque[str], problems: list[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    while raw := await proc.stdout.readline():
        record = _note_line(raw, tail, problems)
        if record is not None and record.get("event") == "listening":
            return record
    code = await proc.wait()
    raise RuntimeError(f"server exited ({code}) before listening:\n" + "\n".join(tail))


async def _drain_output(proc: asyncio.subprocess.Process, tail: deque[str], problems: list[str]) -> None:
    # A full stdout pipe would block the server's logging, and then its event loop.
    assert proc.stdout is not None
    with contextlib.suppress(ConnectionError, ValueError):
        async for raw in proc.stdout:
            _note_line(raw, tail, problems)


async def start_server(
    kind: ServerKind, transport: Transport, scenario: Scenario, workdir: Path, profile: Path | None = None
) -> ServerProcess:
    """Start a server process and wait (bounded) for its `listening` line."""
    proc = await asyncio.create_subprocess_exec(
        *server_argv(kind, transport, scenario, workdir, profile),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        limit=1 << 20,  # JSON tracebacks can be long lines
    )
    _live_pids.add(proc.pid)
    tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
    problems: list[str] = []
    try:
        async with asyncio.timeout(START_TIMEOUT_S):
            listening = await _wait_listening(proc, tail, problems)
        port, http_port = ports_from_listening(kind, transport, listening)
    except BaseException as error:
        await stop_process(proc)
        if isinstance(error, TimeoutError):
            raise RuntimeError(f"{kind} did not listen within {START_TIMEOUT_S} s:\n" + "\n".join(tail)) from None
        raise
    drain = asyncio.create_task(_drain_output(proc, tail, problems), name=f"{kind}-output")
    return ServerProcess(kind, proc, port, http_port, tail, problems, drain)


# -- clients ------------------------------------------------------------------------------------


@dataclass
class Window:
    """The measurement window in wall-clock time (`time.time()`); nothing is counted outside it."""

    start: float = math.inf
    end: float = math.inf


class Tally:
    """What one client saw inside the window: counts, seq gaps and publish-to-receipt latencies."""

    __slots__ = ("final_seq", "first_seq", "last_seq", "latencies", "received", "skipped", "window")

    def __init__(self, window: Window) -> None:
        self.window = window
        #: Per topic (seq counts each topic on its own).
        self.last_seq: dict[str, int] = {}
        self.first_seq: dict[str, int] = {}
        self.final_seq: dict[str, int] = {}
        self.received = 0
        self.skipped = 0
        self.latencies: list[float] = []

    def record(self, message: Any, now: float) -> None:
        """Count one pushed message (or each of a multi-sample array) received at `now` (the hot path)."""
        if isinstance(message, list):
            for item in message:
                self.record(item, now)
            return
        if message.get("op") != "state":
            return
        seq: int = message["seq"]
        topic: str = message["topic"]
        previous = self.last_seq.get(topic)
        self.last_seq[topic] = seq
        window = self.window
        if not window.start <= now < window.end:
            return
        self.received += 1
        # Both stamps are this host's time.time(): the server's at publication, ours at receipt.
        self.latencies.append(now - message["stamp"])
        if previous is not None and seq > previous + 1:
            self.skipped += seq - previous - 1
        self.first_seq.setdefault(topic, seq)
        self.final_seq[topic] = seq

    def record_publish(self, message: Any, now: float) -> None:
        """Count one rosbridge `publish` (no seq: what was skipped comes from the gateway's counters)."""
        if message.get("op") != "publish":
            return
        window = self.window
        if not window.start <= now < window.end:
            return
        self.received += 1
        stamp = message["msg"]["timestamp"]  # the sim device's time.time() at publication
        self.latencies.append(now - (stamp["sec"] + stamp["nanosec"] * 1e-9))


class Connection(abc.ABC):
    """One client: read `hello`, subscribe to the topic, then `pump` pushes into its tally."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally

    @abc.abstractmethod
    async def receive_message(self) -> Any:
        """The next message (handshake only; bounded by REQUEST_TIMEOUT_S)."""

    @abc.abstractmethod
    async def send_message(self, message: dict[str, Any]) -> None:
        """Send one request."""

    @abc.abstractmethod
    async def pump(self) -> None:
        """Record every pushed message until the connection closes."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close the connection (bounded)."""

    async def subscribe(self, topics: list[str], multi: bool = False) -> None:
        hello = await self.receive_message()
        if not isinstance(hello, dict) or hello.get("op") != "hello":
            raise RuntimeError(f"expected hello, got {hello!r}")
        if multi:
            if "multi_state" not in hello.get("capabilities", []):
                raise RuntimeError("the server does not offer multi_state")
            await self.send_message({"op": "configure", "id": CONFIGURE_ID, "multi_state": True})
            while True:  # only `device` pushes come before it: there is no subscription yet
                configured = await self.receive_message()
                if isinstance(configured, dict) and configured.get("op") == "result":
                    break
            if configured.get("id") != CONFIGURE_ID or not configured.get("ok"):
                raise RuntimeError(f"configure refused: {configured}")
        await self.send_message({"op": "subscribe", "id": SUBSCRIBE_ID, "topics": topics})
        while True:
            message = await self.receive_message()
            if isinstance(message, dict) and message.get("op") == "result" and message.get("id") == SUBSCRIBE_ID:
                if not message.get("ok"):
                    raise RuntimeError(f"subscribe refused: {message}")
                return
            self.tally.record(message, time.time())  # a push before the result: before the window too


class WsConnection(Connection):
    """aiohttp client WebSocket, JSON text frames."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, tally: Tally) -> None:
        super().__init__(tally)
        self._ws = ws

    @classmethod
    async def open(cls, session: aiohttp.ClientSession, port: int, tally: Tally) -> WsConnection:
        # compress=0: no permessage-deflate offer, as in the baseline method.
        ws = await session.ws_connect(f"ws://{HOST}:{port}/ws", compress=0, max_msg_size=0)
        return cls(ws, tally)

    async def receive_message(self) -> Any:
        message = await self._ws.receive(timeout=REQUEST_TIMEOUT_S)
        if message.type != aiohttp.WSMsgType.TEXT:
            raise ConnectionError(f"expected a text frame, got {message.type.name}: {message.data!r}")
        return orjson.loads(message.data)

    async def send_message(self, message: dict[str, Any]) -> None:
        await self._ws.send_str(orjson.dumps(message).decode())

    async def pump(self) -> None:
        record, loads, clock = self.tally.record, orjson.loads, time.time
        async for message in self._ws:
            if message.type == aiohttp.WSMsgType.TEXT:
                now = clock()
                record(loads(message.data), now)
            elif message.type == aiohttp.WSMsgType.ERROR:
                return

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._ws.close(), CLOSE_TIMEOUT_S)


class RosbridgeConnection(Connection):
    """aiohttp client WebSocket speaking rosbridge v2 (what roslibjs sends), JSON text frames."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, tally: Tally) -> None:
        super().__init__(tally)
        self._ws = ws

    @classmethod
    async def open(cls, session: aiohttp.ClientSession, port: int, tally: Tally) -> RosbridgeConnection:
        ws = await session.ws_connect(f"ws://{HOST}:{port}/", compress=0, max_msg_size=0)
        return cls(ws, tally)

    async def receive_message(self) -> Any:
        message = await self._ws.receive(timeout=REQUEST_TIMEOUT_S)
        if message.type != aiohttp.WSMsgType.TEXT:
            raise ConnectionError(f"expected a text frame, got {message.type.name}: {message.data!r}")
        return orjson.loads(message.data)

    async def send_message(self, message: dict[str, Any]) -> None:
        await self._ws.send_str(orjson.dumps(message).decode())

    async def subscribe(self, topics: list[str], multi: bool = False) -> None:
        # rosbridge answers a good subscribe with nothing: the first publish confirms it.
        del topics, multi
        request = {"op": "subscribe", "id": f"subscribe:{ROS_TOPIC}:1", "topic": ROS_TOPIC}
        await self.send_message({**request, "type": "creos_messages/ControllerState", "compression": "none"})
        while True:
            message = await self.receive_message()
            if message.get("op") == "status":
                raise RuntimeError(f"subscribe refused: {message}")
            if message.get("op") == "publish":
                return

    async def pump(self) -> None:
        record, loads, clock = self.tally.record_publish, orjson.loads, time.time
        async for message in self._ws:
            if message.type == aiohttp.WSMsgType.TEXT:
                now = clock()
                record(loads(message.data), now)
            elif message.type == aiohttp.WSMsgType.ERROR:
                return

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._ws.close(), CLOSE_TIMEOUT_S)


def client_socket(family: int, mss: int) -> socket.socket:
    """A client's TCP socket whose SYN offers segments of at most `mss` bytes (0: the kernel's choice).

    Why a benchmark pins it: Linux estimates each socket's receive MSS from the largest segment it
    has received (`icsk_ack.rcv_mss`, at least 536 bytes, never lowered by smaller ones) and, for a
    stream of small messages, sends the delayed ACK on arrival (in the sender's system call) while
    fewer than that many bytes wait unacknowledged, and from the reader's `recv` otherwise. A server
    that once writes two samples in one segment (a batched round while its loop is busy) moves
    every later ACK of that connection into the reading process: with 500 clients in this one process,
    about 4 points of a core more. Pinned, every side's connections estimate the same MSS whatever
    they received once; the servers then send every second ACK themselves (docs/performance.md).
    """
    sock = socket.socket(family, socket.SOCK_STREAM)
    if mss:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
        except BaseException:
            sock.close()
            raise
    return sock


class MsgpackConnection(Connection):
    """asyncio TCP stream carrying concatenated msgpack maps."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tally: Tally) -> None:
        super().__init__(tally)
        self._reader = reader
        self._writer = writer
        self._unpacker = msgpack.Unpacker(raw=False)

    @classmethod
    async def open(cls, port: int, tally: Tally, mss: int = 0) -> MsgpackConnection:
        """Connect to `port` on the loopback; with `mss`, through `client_socket(mss)`."""
        if not mss:
            reader, writer = await asyncio.open_connection(HOST, port, limit=READ_SIZE)
            return cls(reader, writer, tally)
        sock = client_socket(socket.AF_INET, mss)
        try:
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, (HOST, port))
        except BaseException:
            sock.close()
            raise
        reader, writer = await asyncio.open_connection(sock=sock, limit=READ_SIZE)
        return cls(reader, writer, tally)

    async def receive_message(self) -> Any:
        while True:
            with contextlib.suppress(StopIteration):
                return next(self._unpacker)
            data = await asyncio.wait_for(self._reader.read(READ_SIZE), REQUEST_TIMEOUT_S)
            if not data:
                raise ConnectionError("connection closed during the handshake")
            self._unpacker.feed(data)

    async def send_message(self, message: dict[str, Any]) -> None:
        self._writer.write(msgpack.packb(message, use_bin_type=True))
        await self._writer.drain()

    async def pump(self) -> None:
        record, clock, unpacker, reader = self.tally.record, time.time, self._unpacker, self._reader
        for message in unpacker:  # left over from the handshake's last read
            record(message, clock())
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(READ_SIZE):
                # One receipt time per read: the messages of one chunk arrived together.
                now = clock()
                unpacker.feed(data)
                for message in unpacker:
                    record(message, now)

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._writer.wait_closed(), CLOSE_TIMEOUT_S)


@dataclass
class Fleet:
    """The benchmark's N subscribed clients and their pump tasks."""

    connections: list[Connection]
    pumps: list[asyncio.Task[None]]

    @property
    def tallies(self) -> list[Tally]:
        return [connection.tally for connection in self.connections]

    def alive(self) -> int:
        return sum(not pump.done() for pump in self.pumps)


@contextlib.asynccontextmanager
async def client_fleet(
    transport: Transport, port: int, count: int, window: Window, kind: ServerKind = "gateway", topics: int = 1
) -> AsyncIterator[Fleet]:
    """Connect and subscribe `count` clients concurrently; close them all on the way out."""
    # limit=0: the default connector stalls connection 101 (perf-baselines.md, finding 5).
    websocket = transport in ("ws", "rosbridge")
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) if websocket else None
    rosbridge = transport == "rosbridge" and kind == "gateway"
    fleet = Fleet([], [])

    async def open_one() -> None:
        tally = Tally(window)
        connection: Connection
        if session is not None and rosbridge:
            connection = await RosbridgeConnection.open(session, port, tally)
        elif session is not None:
            connection = await WsConnection.open(session, port, tally)
        else:
            connection = await MsgpackConnection.open(port, tally)
        fleet.connections.append(connection)  # listed at once, so that it is closed even on failure
        await connection.subscribe(topics_of(topics), multi=kind == "multi")

    try:
        async with asyncio.timeout(CONNECT_TIMEOUT_S), asyncio.TaskGroup() as group:
            for _ in range(count):
                group.create_task(open_one())
        fleet.pumps = [asyncio.create_task(c.pump()) for c in fleet.connections]
        yield fleet
    finally:
        for pump in fleet.pumps:
            pump.cancel()
        await asyncio.gather(*fleet.pumps, return_exceptions=True)
        await asyncio.gather(*(c.close() for c in fleet.connections), return_exceptions=True)
        if session is not None:
            await session.close()


# -- measurement --------------------------------------------------------------------------------


@dataclass
class Usage:
    """Usage over the window, CPU in % of one core: the server, this (client) process, and the rest.

    `other_cpu_pct` is the host's busy CPU minus server and client: other programs, and kernel
    softirq time (loopback TCP) that is not charged to a process. Large values mean a noisy run.
    """

    wall_s: float
    server_cpu_pct: float
    server_rss_peak_mb: float
    client_cpu_pct: float
    other_cpu_pct: float


def _host_busy_seconds() -> float:
    times = psutil.cpu_times()
    return sum(getattr(times, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq"))


async def measure_window(
    server_pid: int, window: Window, seconds: float, client_pids: Sequence[int] | None = None
) -> Usage:
    """Open the window for `seconds`, sampling the server's RSS; CPU is the schedstat delta of each process.

    The clients' CPU is this process's, or with `client_pids` the sum of those processes' instead.
    """
    server = psutil.Process(server_pid)
    clients = [os.getpid()] if client_pids is None else list(client_pids)
    rss_peak = server.memory_info().rss
    server_cpu, client_cpu = thread_times_ns(server.pid), [thread_times_ns(pid) for pid in clients]
    host_cpu = _host_busy_seconds()
    started = time.monotonic()
    window.start = time.time()
    deadline = started + seconds
    while (left := deadline - time.monotonic()) > 0:
        await asyncio.sleep(min(RSS_PERIOD_S, left))
        rss_peak = max(rss_peak, server.memory_info().rss)
    window.end = time.time()
    wall = time.monotonic() - started
    server_used = thread_seconds_between(server_cpu, thread_times_ns(server.pid))
    client_used = sum(
        thread_seconds_between(before, thread_times_ns(pid)) for pid, before in zip(clients, client_cpu, strict=True)
    )
    other_used = _host_busy_seconds() - host_cpu - server_used - client_used
    return Usage(
        wall_s=wall,
        server_cpu_pct=100.0 * server_used / wall,
        server_rss_peak_mb=rss_peak / 1e6,
        client_cpu_pct=100.0 * client_used / wall,
        other_cpu_pct=100.0 * other_used / wall,
    )


async def wait_for_quiet_host(below_pct: float, max_wait_s: float) -> float:
    """Wait until the whole host's busy CPU stays under `below_pct` (of one core); return the last value.

    This machine is shared (test runs, builds): a run next to other load measures that load. After
    `max_wait_s` the run goes ahead anyway, and its `other CPU %` shows the noise.
    """
    deadline = time.monotonic() + max_wait_s
    quiet = 0
    announced = False
    while True:
        busy_before, started = _host_busy_seconds(), time.monotonic()
        await asyncio.sleep(QUIET_SAMPLE_S)
        busy = 100.0 * (_host_busy_seconds() - busy_before) / (time.monotonic() - started)
        quiet = quiet + 1 if busy < below_pct else 0
        if quiet >= QUIET_SAMPLES or time.monotonic() >= deadline:
            return busy
        if not announced and quiet == 0:
            print(f"  waiting for the host to go quiet (busy {busy:.0f} % of a core)", file=sys.stderr, flush=True)
            announced = True


def _metric_sums(text: str) -> dict[str, float]:
    """Prometheus text: each metric's value summed over its label sets."""
    sums: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_and_labels, _, value = line.rpartition(" ")
        name = name_and_labels.split("{", 1)[0]
        with contextlib.suppress(ValueError):
            sums[name] = sums.get(name, 0.0) + float(value)
    return sums


GATEWAY_COUNTERS = {
    "published": "hwgw_bus_published_total",
    "delivered": "hwgw_client_delivered_total",
    "coalesced": "hwgw_client_coalesced_total",
}


async def scrape_gateway(http_port: int) -> dict[str, float]:
    """The gateway's own counters (summed over clients) and its loop lag, from /metrics and /healthz."""
    timeout = aiohttp.ClientTimeout(total=SCRAPE_TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        async with session.get(f"http://{HOST}:{http_port}/metrics") as response:
            sums = _metric_sums(await response.text())
        async with session.get(f"http://{HOST}:{http_port}/healthz") as response:
            health = await response.json()
    scraped = {key: sums.get(name, math.nan) for key, name in GATEWAY_COUNTERS.items()}
    scraped["loop_lag_max_ms"] = float(health.get("loop_lag_max_ms", math.nan))
    return scraped


async def gateway_counters(server: ServerProcess) -> dict[str, float] | None:
    """Best effort: a failed scrape must not spoil the run's client-side numbers."""
    if server.http_port is None:
        return None
    try:
        return await scrape_gateway(server.http_port)
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return None


# -- one run ------------------------------------------------------------------------------------


@dataclass
class RunResult:
    """One side, one transport, one scenario, one repeat. Rates are per second of the window."""

    scenario: str
    server: ServerKind
    transport: Transport
    repeat: int
    clients: int
    rate: float
    topics: int
    window_s: float
    received: int
    skipped: int
    delivered_per_s: float
    expected_per_s: float
    published_per_s: float
    skipped_fraction: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    server_cpu_pct: float
    server_us_per_msg: float
    server_rss_peak_mb: float
    client_cpu_pct: float
    other_cpu_pct: float
    clients_alive: int
    host_busy_before_pct: float = math.nan
    attempts: int = 1
    noisy: bool = False
    gateway: dict[str, float] | None = None
    server_exit_code: int | None = None
    server_problems: list[str] = field(default_factory=list)


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of sorted data (NaN when empty)."""
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def gateway_rates(
    before: dict[str, float] | None, after: dict[str, float] | None, span_s: float
) -> dict[str, float] | None:
    """The gateway's counters per second between two scrapes, and the loop lag seen at the end."""
    if before is None or after is None:
        return None
    rates = {f"{key}_per_s": (after[key] - before[key]) / span_s for key in GATEWAY_COUNTERS}
    return {**rates, "loop_lag_max_ms": after["loop_lag_max_ms"]}


def published_in_window(tallies: Sequence[Tally]) -> int:
    """Per topic, the widest seq span any client saw (what the server published), summed over topics."""
    widest: dict[str, int] = {}
    for tally in tallies:
        for topic, first in tally.first_seq.items():
            widest[topic] = max(widest.get(topic, 0), tally.final_seq[topic] - first + 1)
    return sum(widest.values())


def summarize(
    kind: ServerKind, transport: Transport, repeat: int, scenario: Scenario, fleet: Fleet, usage: Usage
) -> RunResult:
    tallies = fleet.tallies
    received = sum(t.received for t in tallies)
    skipped = sum(t.skipped for t in tallies)
    latencies = sorted(itertools.chain.from_iterable(t.latencies for t in tallies))
    wall = usage.wall_s
    return RunResult(
        scenario=scenario.name,
        server=kind,
        transport=transport,
        repeat=repeat,
        clients=scenario.clients,
        rate=scenario.rate,
        topics=scenario.topics,
        window_s=wall,
        received=received,
        skipped=skipped,
        delivered_per_s=received / wall,
        expected_per_s=scenario.clients * scenario.per_client,
        published_per_s=published_in_window(tallies) / wall,
        skipped_fraction=skipped / (received + skipped) if received + skipped else math.nan,
        p50_ms=1e3 * percentile(latencies, 0.50),
        p99_ms=1e3 * percentile(latencies, 0.99),
        max_ms=1e3 * latencies[-1] if latencies else math.nan,
        server_cpu_pct=usage.server_cpu_pct,
        server_us_per_msg=1e6 * usage.server_cpu_pct / 100.0 * wall / received if received else math.nan,
        server_rss_peak_mb=usage.server_rss_peak_mb,
        client_cpu_pct=usage.client_cpu_pct,
        other_cpu_pct=usage.other_cpu_pct,
        clients_alive=fleet.alive(),
    )


async def drive_clients(
    server: ServerProcess,
    transport: Transport,
    repeat: int,
    scenario: Scenario,
    args: argparse.Namespace,
    profiled: bool = False,
) -> RunResult:
    window = Window()
    async with client_fleet(transport, server.port, scenario.clients, window, server.kind, scenario.topics) as fleet:
        await asyncio.sleep(args.warmup)
        # The scrapes bracket the window closely; their span is measured, so the rates are per second.
        before, scraped_at = await gateway_counters(server), time.monotonic()
        if profiled:
            os.kill(server.pid, START_SIGNAL)
        usage = await measure_window(server.pid, window, args.seconds)
        if profiled:
            os.kill(server.pid, STOP_SIGNAL)
        after, span = await gateway_counters(server), time.monotonic() - scraped_at
        result = summarize(server.kind, transport, repeat, scenario, fleet, usage)
    result.gateway = gateway_rates(before, after, span)
    if transport == "rosbridge" and server.kind == "gateway" and result.gateway is not None:
        # rosbridge messages carry no seq: take what was published from the gateway's own counter.
        result.published_per_s = result.gateway["published_per_s"]
        expected = result.published_per_s * result.window_s * result.clients
        result.skipped = max(0, round(expected - result.received))
        result.skipped_fraction = result.skipped / expected if expected else math.nan
    return result


async def run_once(
    kind: ServerKind,
    transport: Transport,
    repeat: int,
    scenario: Scenario,
    args: argparse.Namespace,
    workdir: Path,
    profile: Path | None = None,
) -> RunResult:
    """Fresh server process, N clients, warm-up, window; the server is stopped whatever happens."""
    server = await start_server(kind, transport, scenario, workdir, profile)
    try:
        result = await drive_clients(server, transport, repeat, scenario, args, profiled=profile is not None)
    finally:
        code = await server.stop()
    result.server_exit_code = code
    result.server_problems = list(server.problems)
    return result


def run_budget(args: argparse.Namespace) -> float:
    """Upper bound of one run; past it the run is abandoned (and its server stopped)."""
    return START_TIMEOUT_S + CONNECT_TIMEOUT_S + float(args.warmup + args.seconds) + 4 * SCRAPE_TIMEOUT_S + 30.0


Plan = list[tuple[int, Scenario, Transport, ServerKind]]


def sides_for(transport: Transport, sides: Sequence[ServerKind]) -> list[ServerKind]:
    """rosbridge compares the face with the native /ws: no multi-sample side there."""
    if transport == "rosbridge":
        return ["gateway", "baseline"]
    return list(sides)


def schedule(
    scenarios: Sequence[Scenario], transports: Sequence[Transport], sides: Sequence[ServerKind], repeats: int
) -> Plan:
    """Interleaved sides; each repeat rotates their order, so that none always runs first."""
    plan: Plan = []
    for repeat in range(repeats):
        for scenario in scenarios:
            for transport in transports:
                order = sides_for(transport, sides)
                shift = repeat % len(order)
                plan.extend((repeat, scenario, transport, kind) for kind in order[shift:] + order[:shift])
    return plan


async def measured_run(
    kind: ServerKind,
    transport: Transport,
    repeat: int,
    scenario: Scenario,
    args: argparse.Namespace,
    workdir: Path,
    label: str,
) -> RunResult:
    """One run on a quiet host; redone (up to `--retries` times) while other programs load the host."""
    for attempt in range(args.retries + 1):
        busy = await wait_for_quiet_host(args.quiet_below, args.quiet_wait) if args.quiet_below > 0 else math.nan
        async with asyncio.timeout(run_budget(args)):
            result = await run_once(kind, transport, repeat, scenario, args, workdir)
        result.host_busy_before_pct = busy
        result.attempts = attempt + 1
        result.noisy = result.other_cpu_pct > args.noisy_above
        if not result.noisy:
            break
        print(f"{label}: noisy, {progress_line(result)}", file=sys.stderr, flush=True)
    return result


@dataclass
class Profiled:
    """A gateway run under cProfile: where its CPU went, by category (not counted in the medians)."""

    scenario: str
    transport: Transport
    server: ServerKind
    delivered: int
    breakdown: Breakdown


async def run_all(
    args: argparse.Namespace, results: list[RunResult], failures: list[dict[str, Any]], profiles: list[Profiled]
) -> None:
    """Run the schedule, appending to `results` as it goes (so an interrupt keeps what was measured)."""
    plan = schedule(args.scenarios, args.transports, args.sides, args.repeats)
    with tempfile.TemporaryDirectory(prefix="hwgw-bench-") as tmp:
        for index, (repeat, scenario, transport, kind) in enumerate(plan, 1):
            label = f"[{index}/{len(plan)}] {scenario.name} {transport} {side_name(transport, kind)}"
            try:
                result = await measured_run(kind, transport, repeat, scenario, args, Path(tmp), label)
            except Exception as error:  # a failed run is reported; the others still count
                failures.append(
                    {
                        "scenario": scenario.name,
                        "repeat": repeat,
                        "transport": transport,
                        "server": kind,
                        "error": repr(error),
                    }
                )
                print(f"{label}: FAILED {error!r}", file=sys.stderr, flush=True)
                continue
            results.append(result)
            print(f"{label}: {progress_line(result)}", file=sys.stderr, flush=True)
        if args.profile:
            await profile_runs(args, Path(tmp), profiles)


async def profile_runs(args: argparse.Namespace, workdir: Path, profiles: list[Profiled]) -> None:
    """One extra run of each gateway side under cProfile, after the measured ones."""
    for scenario in args.scenarios:
        for transport in args.transports:
            for kind in sides_for(transport, args.sides):
                if kind in BARE_KINDS:
                    continue
                label = f"[profile] {scenario.name} {transport} {side_name(transport, kind)}"
                path = workdir / f"profile-{scenario.name}-{transport}-{kind}.pstats"
                try:
                    async with asyncio.timeout(run_budget(args)):
                        result = await run_once(kind, transport, 0, scenario, args, workdir, profile=path)
                    breakdown = profile_breakdown(path)
                except Exception as error:
                    print(f"{label}: FAILED {error!r}", file=sys.stderr, flush=True)
                    continue
                profiles.append(Profiled(scenario.name, transport, kind, result.received, breakdown))
                print(f"{label}: done ({progress_line(result)})", file=sys.stderr, flush=True)


# -- report -------------------------------------------------------------------------------------


METRICS = (
    "delivered_per_s",
    "published_per_s",
    "skipped_fraction",
    "p50_ms",
    "p99_ms",
    "max_ms",
    "server_cpu_pct",
    "server_us_per_msg",
    "server_rss_peak_mb",
    "client_cpu_pct",
    "other_cpu_pct",
)


@dataclass(frozen=True)
class Stat:
    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Iterable[float]) -> Stat:
        finite = [v for v in values if not math.isnan(v)]
        if not finite:
            return cls(math.nan, math.nan, math.nan)
        return cls(statistics.median(finite), min(finite), max(finite))


Group = tuple[str, Transport]
Summary = dict[Group, dict[ServerKind, dict[str, Stat]]]


def aggregate(results: Sequence[RunResult]) -> Summary:
    summary: Summary = {}
    for result in results:
        summary.setdefault((result.scenario, result.transport), {}).setdefault(result.server, {})
    for (scenario, transport), servers in summary.items():
        for kind in servers:
            runs = [r for r in results if (r.scenario, r.transport, r.server) == (scenario, transport, kind)]
            servers[kind] = {name: Stat.of(getattr(r, name) for r in runs) for name in METRICS}
            servers[kind]["runs"] = Stat.of([float(len(runs))])
    return summary


def progress_line(result: RunResult) -> str:
    return (
        f"{result.delivered_per_s:,.0f} msg/s of {result.expected_per_s:,.0f}, "
        f"skipped {100 * result.skipped_fraction:.2f} %, p50 {result.p50_ms:.2f} ms, p99 {result.p99_ms:.2f} ms, "
        f"cpu {result.server_cpu_pct:.0f} % ({result.server_us_per_msg:.2f} µs/msg), "
        f"rss {result.server_rss_peak_mb:.1f} MB, client cpu {result.client_cpu_pct:.0f} %, "
        f"other cpu {result.other_cpu_pct:.0f} %, alive {result.clients_alive}/{result.clients}"
    )


def _cell(stat: Stat, fmt: str, scale: float = 1.0) -> str:
    if math.isnan(stat.median):
        return "-"
    median, low, high = (format(v * scale, fmt) for v in (stat.median, stat.low, stat.high))
    return median if low == high else f"{median} ({low}-{high})"


TABLE_COLUMNS: tuple[tuple[str, str, str, float], ...] = (
    # header, metric, format, scale
    ("delivered msg/s", "delivered_per_s", ",.0f", 1.0),
    ("published msg/s", "published_per_s", ",.0f", 1.0),
    ("skipped %", "skipped_fraction", ".2f", 100.0),
    ("p50 ms", "p50_ms", ".2f", 1.0),
    ("p99 ms", "p99_ms", ".2f", 1.0),
    ("max ms", "max_ms", ".1f", 1.0),
    ("server CPU %", "server_cpu_pct", ".0f", 1.0),
    ("srv µs/msg", "server_us_per_msg", ".2f", 1.0),
    ("peak RSS MB", "server_rss_peak_mb", ".1f", 1.0),
    ("client CPU %", "client_cpu_pct", ".0f", 1.0),
    ("other CPU %", "other_cpu_pct", ".0f", 1.0),
)


def table(summary: Summary, args: argparse.Namespace) -> str:
    header = ["scenario", "transport", "server", "runs", *(column[0] for column in TABLE_COLUMNS)]
    lines = [
        f"window {args.seconds:g} s; median (min-max) of {args.repeats} interleaved repeats; "
        + "; ".join(f"{scenario.name}: {scenario.describe()}" for scenario in args.scenarios),
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for (scenario, transport), servers in summary.items():
        for kind, stats in servers.items():
            cells = [_cell(stats[metric], fmt, scale) for _, metric, fmt, scale in TABLE_COLUMNS]
            side = side_name(transport, kind)
            lines.append(
                f"| {scenario} | {transport} | {side} | {stats['runs'].median:.0f} | " + " | ".join(cells) + " |"
            )
    return "\n".join(lines)


RATIO_METRICS = {
    "delivered": "delivered_per_s",
    "cpu_per_msg": "server_us_per_msg",
    "p99": "p99_ms",
    "cpu": "server_cpu_pct",
    "rss": "server_rss_peak_mb",
}


def _ratio(gateway: Stat, baseline: Stat) -> float:
    return gateway.median / baseline.median if baseline.median else math.nan


def ratios(servers: dict[ServerKind, dict[str, Stat]]) -> dict[ServerKind, dict[str, float]]:
    """Each gateway side's medians over the baseline's (when both ran)."""
    baseline = servers.get("baseline")
    if baseline is None:
        return {}
    return {
        kind: {name: _ratio(stats[metric], baseline[metric]) for name, metric in RATIO_METRICS.items()}
        for kind, stats in servers.items()
        if kind != "baseline"
    }


def summary_line(group: Group, servers: dict[ServerKind, dict[str, Stat]]) -> str:
    """`multi-topic ws: gateway/bare delivered 1.00x cpu/msg 0.45x p99 0.9x | gateway+multi/bare …`."""
    scenario, transport = group
    bare = side_name(transport, "baseline")
    parts = [
        f"{side_name(transport, kind)}/{bare} delivered {r['delivered']:.2f}x "
        f"cpu/msg {r['cpu_per_msg']:.2f}x p99 {r['p99']:.2f}x"
        for kind, r in ratios(servers).items()
    ]
    return f"{scenario} {transport}: " + (" | ".join(parts) if parts else "no baseline to compare with")


def paired_line(group: Group, results: Sequence[RunResult], bottom: ServerKind = "floor") -> str | None:
    """`multi-topic ws: cpu/msg over bare-batched, repeat by repeat: gateway 0.97x (0.91-1.04) | …`.

    Each repeat runs every side back to back, so a ratio within one repeat shares that minute's host;
    the median of these ratios is steadier than the ratio of medians when the host drifts. With 6
    repeats or more, the interval that holds the true median at 95 % follows (`median_interval`):
    `gateway 1.08x (0.91-1.30; median 1.03-1.12 at 95 %)`. Over the plain floor (`bottom`) come the
    gateway's sides and the typed floor; over the typed floor, the gateway's sides.
    """
    scenario, transport = group
    by_repeat: dict[tuple[ServerKind, int], float] = {}
    for result in results:  # one per side and repeat (a run redone after noise: its last attempt); the last counts
        if (result.scenario, result.transport) == group:
            by_repeat[result.server, result.repeat] = result.server_us_per_msg
    tops: tuple[ServerKind, ...] = ("gateway", "multi", "typed") if bottom == "floor" else ("gateway", "multi")
    parts = []
    for kind in tops:
        paired = []
        for (side, repeat), floor in by_repeat.items():
            own = by_repeat.get((kind, repeat), math.nan)
            if side == bottom and floor > 0 and math.isfinite(own):  # NaN: a run that delivered nothing
                paired.append(own / floor)
        if paired:
            parts.append(f"{side_name(transport, kind)} {spread(paired, 'x')}")
    if not parts:
        return None
    over = side_name(transport, bottom)
    return f"{scenario} {transport}: cpu/msg over {over}, repeat by repeat: " + " | ".join(parts)


def profile_table(profiles: Sequence[Profiled], summary: Summary) -> str:
    """The CPU breakdown of each profiled run: shares of its profiled time, applied to the measured µs/msg."""
    lines = [
        "CPU breakdown under cProfile, during the window only (own time by category, waits in epoll left out).",
        "category's time per delivered message under the profiler (which inflates it); 'µs/msg' is its share",
        "times the median server µs per delivered message of the unprofiled runs.",
    ]
    for profiled in profiles:
        measured = summary.get((profiled.scenario, profiled.transport), {}).get(profiled.server)
        us_per_msg = measured["server_us_per_msg"].median if measured else math.nan
        side = side_name(profiled.transport, profiled.server)
        lines.append(f"\n{profiled.scenario} {profiled.transport} {side} ({profiled.delivered:,} messages delivered)")
        lines.append("| category | profiled s | profiled µs/msg | share % | µs/msg |")
        lines.append("|---|---|---|---|---|")
        total = profiled.breakdown.total
        delivered = profiled.delivered or math.nan
        for category, seconds in [*profiled.breakdown.categories, ("total", total)]:
            share = seconds / total if total else math.nan
            lines.append(
                f"| {category} | {seconds:.2f} | {1e6 * seconds / delivered:.2f} | {100 * share:.1f} "
                f"| {share * us_per_msg:.2f} |"
            )
        lines.append("top functions (tottime s): " + "; ".join(f"{name} {t:.2f}" for name, t in profiled.breakdown.top))
    return "\n".join(lines)


def _stat_json(stat: Stat) -> dict[str, float | None]:
    # JSON has no NaN; null says "not measured".
    return {k: (None if math.isnan(v) else v) for k, v in dataclasses.asdict(stat).items()}


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def environment() -> dict[str, Any]:
    versions = {}
    for package in ("hwgateway", "aiohttp", "msgpack", "orjson", "psutil"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[package] = importlib.metadata.version(package)
    commit = None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        git = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=5, check=True
        )
        commit = git.stdout.strip()
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "versions": versions,
        "git_commit": commit,
    }


def write_json(
    path: Path,
    args: argparse.Namespace,
    started: datetime.datetime,
    results: list[RunResult],
    failures: list[dict[str, Any]],
    profiles: list[Profiled],
    complete: bool,
) -> None:
    summary = aggregate(results)
    arguments = {k: v for k, v in vars(args).items() if k not in ("output", "scenarios")}
    document = {
        "benchmark": "fanout",
        "started_utc": started.isoformat(),
        "complete": complete,
        "args": {**arguments, "scenarios": [dataclasses.asdict(s) for s in args.scenarios]},
        "environment": environment(),
        "load_average": os.getloadavg(),
        "summary": {
            f"{scenario} {transport}": {
                **{kind: {m: _stat_json(s) for m, s in stats.items()} for kind, stats in servers.items()},
                "ratio": _jsonable(ratios(servers)),
            }
            for (scenario, transport), servers in summary.items()
        },
        "profiles": [_jsonable(dataclasses.asdict(p)) for p in profiles],
        "runs": [_jsonable(dataclasses.asdict(r)) for r in results],
        "failures": failures,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n")


def report(
    args: argparse.Namespace,
    started: datetime.datetime,
    results: list[RunResult],
    failures: list[dict[str, Any]],
    profiles: list[Profiled],
    complete: bool,
) -> None:
    summary = aggregate(results)
    print()
    print(f"load average (1, 5, 15 min) at the end: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(table(summary, args))
    print()
    for group, servers in summary.items():
        print(summary_line(group, servers))
    for group in summary:
        for bottom in ("floor", "typed"):
            if (line := paired_line(group, results, bottom)) is not None:
                print(line)
    if profiles:
        print()
        print(profile_table(profiles, summary))
    noisy = [r for r in results if r.noisy]
    if noisy:
        names = ", ".join(
            f"{r.scenario} {r.transport} {r.server} #{r.repeat + 1} ({r.other_cpu_pct:.0f} %)" for r in noisy
        )
        print(f"\nWARNING: {len(noisy)} run(s) stayed noisy (other CPU > {args.noisy_above:g} %): {names}")
    client_bound = sorted({f"{r.scenario} {r.transport}" for r in results if r.client_cpu_pct >= CLIENT_BOUND_PCT})
    if client_bound:
        print(
            f"\nNOTE: the clients' process used >= {CLIENT_BOUND_PCT:g} % of a core in {', '.join(client_bound)}: "
            "there, latency is mostly the clients' own queueing, on every side alike."
        )
    if failures:
        print(f"\n{len(failures)} run(s) failed; see 'failures' in the JSON.")
    path = Path(args.output) / f"fanout-{started.strftime('%Y%m%dT%H%M%SZ')}.json"
    write_json(path, args, started, results, failures, profiles, complete)
    print(f"\nraw results: {path}")


# -- entry point --------------------------------------------------------------------------------


def _transports(text: str) -> list[Transport]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in TRANSPORTS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"expected a comma-separated subset of {','.join(TRANSPORTS)}")
    return [cast(Transport, name) for name in dict.fromkeys(names)]


def _sides(text: str) -> list[ServerKind]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names or any(name not in ALL_SIDES for name in names):
        raise argparse.ArgumentTypeError(f"expected a comma-separated subset of {','.join(ALL_SIDES)}")
    return [cast(ServerKind, name) for name in dict.fromkeys(names)]


def _scenarios(text: str) -> list[Scenario]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names or any(name not in SCENARIOS for name in names):
        raise argparse.ArgumentTypeError(f"expected a comma-separated subset of {','.join(SCENARIOS)}")
    return [SCENARIOS[name] for name in dict.fromkeys(names)]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Fan-out of the gateway vs a bare server: scenarios of N clients x topics x R Hz, "
        "WebSocket and msgpack/TCP."
    )
    parser.add_argument(
        "--scenarios",
        type=_scenarios,
        default=list(SCENARIOS.values()),
        help="comma-separated: " + "; ".join(f"{name} ({s.describe()})" for name, s in SCENARIOS.items()),
    )
    parser.add_argument("--clients", type=positive_int, help="a custom scenario instead: connections")
    parser.add_argument("--rate", type=positive_float, help="... msg/s published per topic (default 1000)")
    parser.add_argument("--topics", type=positive_int, help="... topics published together (default 1)")
    parser.add_argument(
        "--sides", type=_sides, default=list(SIDES), help="default gateway,multi,baseline,floor (also: typed)"
    )
    parser.add_argument("--seconds", type=positive_float, default=5.0, help="measurement window (default 5)")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds before the window (default 1)")
    parser.add_argument("--repeats", type=positive_int, default=3, help="interleaved repeats (default 3)")
    parser.add_argument(
        "--transports",
        type=_transports,
        default=list(DEFAULT_TRANSPORTS),
        help="default ws,msgpack; rosbridge: rosbridge clients vs the gateway's native /ws",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also run each gateway side once under cProfile and print where its CPU goes",
    )
    parser.add_argument(
        "--quiet-below",
        type=float,
        default=25.0,
        help="before each run, wait until the host's busy CPU is under this %% of a core (0: don't wait)",
    )
    parser.add_argument("--quiet-wait", type=float, default=120.0, help="longest such wait in s (default 120)")
    parser.add_argument(
        "--noisy-above",
        type=float,
        default=40.0,
        help="a run whose 'other CPU' exceeds this %% of a core is noisy (default 40; about 10-20 when quiet)",
    )
    parser.add_argument("--retries", type=int, default=2, help="times a noisy run is redone (default 2)")
    parser.add_argument("--output", default=str(RESULTS_DIR), help="directory of the JSON results")
    args = parser.parse_args(argv)
    if args.clients is not None or args.rate is not None or args.topics is not None:
        args.scenarios = [Scenario("custom", args.clients or 50, args.rate or 1000.0, args.topics or 1)]
    for scenario in args.scenarios:
        if not 0.1 <= scenario.rate <= 10000:
            parser.error("--rate: the sim device accepts 0.1 to 10000 Hz")
        if scenario.topics > 16:
            parser.error("--topics: the sim device publishes at most 16 state topics")
    for name in ("warmup", "quiet_below", "quiet_wait", "retries"):
        if getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')}: must be >= 0")
    return args


def _kill_leftovers() -> None:
    """Last resort (a second Ctrl-C, a bug): kill any server we started that is still our child."""
    for pid in list(_live_pids):
        with contextlib.suppress(psutil.Error):
            child = psutil.Process(pid)
            if child.ppid() == os.getpid():
                child.kill()
                child.wait(STOP_TIMEOUT_S)
        _live_pids.discard(pid)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    hold_read_buffers_in_heap()  # every side's clients read alike, whichever runs first
    started = datetime.datetime.now(datetime.UTC)
    results: list[RunResult] = []
    failures: list[dict[str, Any]] = []
    profiles: list[Profiled] = []
    complete = False
    try:
        asyncio.run(run_all(args, results, failures, profiles))
        complete = True
    except KeyboardInterrupt:
        print(f"\ninterrupted after {len(results)} run(s); reporting those", file=sys.stderr)
    finally:
        _kill_leftovers()
    if results or failures:
        report(args, started, results, failures, profiles, complete)
    return 0 if complete and not failures else 1


if __name__ == "__main__":
    sys.exit(main())
