"""Cost as the work grows: clients, devices, patterns per client and churn, the gateway against bare servers.

Method (issue 42): each point of a sweep runs three sides one after the other, in rotating order,
each a fresh server process measured alone by psutil while this process holds every client:

- **gateway**: the real daemon (`python -m gateway run`) with D sim devices `bench-1` ... `bench-D`
  at `--rate` Hz each (one `state` topic each);
- **baseline**: bench/baseline_server.py with `--devices D` (bare aiohttp, or asyncio streams for
  msgpack: D generators, one send per message per client);
- **floor** (bare-batched): the same with `--batch`: what the generators produce in one event-loop
  turn leaves in one write per client, across devices (the gateway's design with no gateway code).

Every client subscribes with P patterns (`*/state`, which takes every device, and P-1 others:
`bench-k/*`, overlapping it). With churn C, every client (or the first
`--churners` of them) also makes C subscribe/unsubscribe changes a second of one more subscription of
P patterns that match nothing; with `--held H` each of those clients also holds H subscriptions of P
such patterns (the issue's case: 64 subscriptions of 64 patterns). `--churn 0,5` measures both
rates side by side in each repeat and prints each side's CPU per message with churn over without,
paired by repeat (the machine drifts more between repeats than a few changes a second cost).

`--client-mss BYTES` pins every client socket's TCP MSS (bench/fanout.py `client_socket`): where
the kernel sends the clients' ACKs from then does not depend on what each side once wrote.

`--client-processes N` spreads the clients over N processes of their own, each holding a block of
consecutive clients (a client's index still says whether it churns and names its patterns). At
hundreds of clients one process reading every socket is what bounds the p99; spread, the p99 says
more about the server, on a host with cores for them. The window's start and end go to every
process beforehand, and "clients' cpu" is then the sum of theirs.

`--cpu-quota PCT` runs every side's server under the same CPU quota (PCT % of one core) in a cgroup
of its own: cgroup v2 when its cpu controller can be used, else cgroup v1's cpu controller; where
neither is writable the run goes on without a quota and says so.

The default sweeps (one axis at a time, from 10 clients x 10 devices x 1 pattern, no churn):
clients 1, 10, 50, 200, 500 of one device; devices 1, 10, 50, 100 for 10 clients; patterns 1, 16,
64 without and with 5 changes a second on every client, and the issue's case: 64 with one client
of ten holding 64 subscriptions, without and with churn.
Printed per point: delivered (share of D x rate x clients), msg/s, server CPU, µs per delivered
message, p99; then the gateway's ratios to both bare sides, and per sweep where the gateway stops
delivering everything (delivered < `--complete`).

Run:  scripts/loopback-only.sh .venv/bin/python bench/scale.py [--transport msgpack] [--seconds 3] \
          [--repeats 1] [--cpu-quota 25] [--sweep devices] [--clients 10 --devices 100 ...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import math
import multiprocessing
import multiprocessing.process
import os
import statistics
import sys
import tempfile
import time
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

import aiohttp

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import hold_read_buffers_in_heap, spread  # noqa: E402 - after the path fix above
from bench.fanout import (  # noqa: E402
    CONNECT_TIMEOUT_S,
    HOST,
    LOG_TAIL_LINES,
    START_TIMEOUT_S,
    Connection,
    MsgpackConnection,
    ServerKind,
    ServerProcess,
    Tally,
    Window,
    WsConnection,
    _drain_output,
    _live_pids,
    _wait_listening,
    client_socket,
    gateway_counters,
    gateway_rates,
    measure_window,
    percentile,
    ports_from_listening,
    stop_process,
)

Side = Literal["gateway", "baseline", "floor"]
SIDES: tuple[Side, ...] = ("gateway", "baseline", "floor")
SIDE_NAMES = {"gateway": "gateway", "baseline": "bare", "floor": "bare-batched"}
BASELINE_SERVER = BENCH_DIR / "baseline_server.py"
CHURN_ID_BASE = 1000
#: Request ids of the subscriptions a churner holds besides (below `CHURN_ID_BASE`: not churn).
HELD_ID_BASE = 100
#: What Linux takes for TCP_MAXSEG, in bytes: TCP_MIN_MSS to MAX_TCP_WINDOW (include/net/tcp.h).
MIN_MSS, MAX_MSS = 88, 32767


@dataclass(frozen=True)
class Point:
    """One point of a sweep: `clients` each subscribed with `patterns` patterns to `devices` x `rate` Hz."""

    sweep: str
    clients: int
    devices: int
    patterns: int = 1
    churn: float = 0.0
    rate: float = 100.0
    #: How many of the clients churn (None: every one).
    churners: int | None = None
    #: Subscriptions each churner holds besides, each of `patterns` patterns that match nothing.
    held: int = 0

    @property
    def expected_per_s(self) -> float:
        """Messages per second all clients together should receive."""
        return self.clients * self.devices * self.rate

    def label(self) -> str:
        who = "" if self.churners is None else f" on {self.churners} cl"
        held = f" holding {self.held} subs" if self.held else ""
        churn = f" churn {self.churn:g}/s{who}{held}" if self.churn else f"{who}{held}" if held else ""
        return f"{self.clients} cl x {self.devices} dev x {self.rate:g} Hz, {self.patterns} pat{churn}"

    def churning(self, n: int) -> bool:
        """True for the clients (by index) that churn, or would at a churn rate."""
        return self.churners is None or n < self.churners


def sweeps(names: Sequence[str], rate: float) -> list[Point]:
    """The default sweeps of issue 42, one axis at a time."""
    points: list[Point] = []
    if "clients" in names:
        points += [Point("clients", n, 1, rate=rate) for n in (1, 10, 50, 200, 500)]
    if "devices" in names:
        points += [Point("devices", 10, n, rate=rate) for n in (1, 10, 50, 100)]
    if "patterns" in names:
        points += [Point("patterns", 10, 10, p, c, rate) for c in (0.0, 5.0) for p in (1, 16, 64)]
        # The case: one client of ten churning at 64 patterns and holding 64 subscriptions
        # of 64 patterns, with and without the churn in the same repeat.
        points += [Point("patterns", 10, 10, 64, c, rate, churners=1, held=63) for c in (0.0, 5.0)]
    return points


def patterns_for(count: int) -> list[str]:
    """`*/state` (every device) and `count - 1` overlapping `bench-k/*`."""
    return ["*/state", *(f"bench-{k}/*" for k in range(1, count))]


def churn_patterns(client: int, count: int, held: int | None = None) -> list[str]:
    """`count` distinct patterns that match no topic (for a held subscription: `held`'s own)."""
    prefix = f"churn-{client}" if held is None else f"held-{client}-{held}"
    return [f"{prefix}-{k}/*" for k in range(count)]


async def hold(connection: Connection, client: int, point: Point) -> None:
    """Subscribe the point's held subscriptions (answered through the pump, before the window)."""
    for held in range(point.held):
        patterns = churn_patterns(client, point.patterns, held)
        await connection.send_message({"op": "subscribe", "id": HELD_ID_BASE + held, "topics": patterns})


def gateway_config(point: Point) -> str:
    """Free ports, no Unix socket, D sim devices at `rate` Hz; every client is 127.0.0.1."""
    head = (
        f'[server]\nhost = "{HOST}"\nhttp_port = 0\nmsgpack_port = 0\nunix_socket = ""\nmax_clients_per_peer = 1000\n\n'
    )
    devices = "".join(
        f'[devices.bench-{n}]\nkind = "sim"\nrate_hz = {float(point.rate)!r}\nleds = 1\n\n'
        for n in range(1, point.devices + 1)
    )
    return head + devices


def server_argv(side: Side, transport: str, point: Point, workdir: Path) -> list[str]:
    if side == "gateway":
        config = workdir / "gateway.toml"
        config.write_text(gateway_config(point))
        return [sys.executable, "-m", "gateway", "run", "--config", str(config), "--log-format", "json"]
    argv = [sys.executable, str(BASELINE_SERVER), "--transport", transport, "--rate", repr(float(point.rate))]
    return [*argv, "--devices", str(point.devices), *(["--batch"] if side == "floor" else [])]


# -- the CPU quota ------------------------------------------------------------------------------


class Quota:
    """A cgroup with a CPU quota that server processes are moved into (v2's cpu.max or v1's cfs quota)."""

    PERIOD_US = 100_000

    def __init__(self, path: Path, version: int) -> None:
        self.path = path
        self.version = version

    @classmethod
    def create(cls, percent: float, root: Path = Path("/sys/fs/cgroup")) -> tuple[Quota | None, str]:
        """A cgroup limited to `percent` % of one core, or None and why not."""
        quota_us = max(1000, round(cls.PERIOD_US * percent / 100.0))
        name = f"hwgw-bench-scale-{os.getpid()}"
        reasons: list[str] = []
        for base, version in ((root / "unified", 2), (root, 2), (root / "cpu", 1)):
            controllers = base / "cgroup.controllers"
            if version == 2 and not (controllers.exists() and "cpu" in controllers.read_text().split()):
                reasons.append(f"{base}: no cgroup v2 cpu controller")
                continue
            if version == 1 and not (base / "cpu.cfs_quota_us").exists():
                reasons.append(f"{base}: no cgroup v1 cpu controller")
                continue
            path = base / name
            try:
                if version == 2:
                    subtree = base / "cgroup.subtree_control"
                    if "cpu" not in subtree.read_text().split():
                        subtree.write_text("+cpu")
                    path.mkdir()
                    (path / "cpu.max").write_text(f"{quota_us} {cls.PERIOD_US}")
                else:
                    path.mkdir()
                    (path / "cpu.cfs_period_us").write_text(str(cls.PERIOD_US))
                    (path / "cpu.cfs_quota_us").write_text(str(quota_us))
            except OSError as error:
                reasons.append(f"{path}: {error.strerror or error}")
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            return cls(path, version), f"cgroup v{version} {path}: {quota_us} us per {cls.PERIOD_US} us"
        return None, "; ".join(reasons)

    def add(self, pid: int) -> None:
        """Move process `pid` (and the threads it starts from now on) into the cgroup."""
        (self.path / "cgroup.procs").write_text(str(pid))

    def throttled_s(self) -> float:
        """Seconds the cgroup's processes were held back by the quota so far."""
        stat = self.path / "cpu.stat"
        with contextlib.suppress(OSError):
            for line in stat.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "throttled_usec":
                    return int(value) / 1e6
                if key == "throttled_time":
                    return int(value) / 1e9
        return math.nan

    def remove(self) -> None:
        """Delete the cgroup (its processes have exited)."""
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)


# -- one run ------------------------------------------------------------------------------------


async def start_server(side: Side, transport: str, point: Point, workdir: Path, quota: Quota | None) -> ServerProcess:
    """Start a server process (in the quota's cgroup) and wait for its `listening` line."""
    proc = await asyncio.create_subprocess_exec(
        *server_argv(side, transport, point, workdir),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        limit=1 << 20,
    )
    _live_pids.add(proc.pid)
    tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
    problems: list[str] = []
    kind: ServerKind = side
    try:
        if quota is not None:
            quota.add(proc.pid)
        async with asyncio.timeout(START_TIMEOUT_S * (1 if quota is None else 4)):
            listening = await _wait_listening(proc, tail, problems)
        port, http_port = ports_from_listening(kind, transport, listening)  # type: ignore[arg-type]
    except BaseException:
        await stop_process(proc)
        raise
    drain = asyncio.create_task(_drain_output(proc, tail, problems), name=f"{side}-output")
    return ServerProcess(kind, proc, port, http_port, tail, problems, drain)


class ChurnTally(Tally):
    """A tally that also keeps the subscription ids the server gave the churning requests."""

    __slots__ = ("changes", "churn_ids", "held")

    def __init__(self, window: Window) -> None:
        super().__init__(window)
        self.churn_ids: asyncio.Queue[int] = asyncio.Queue()
        #: Churn requests (subscribe or unsubscribe) the server answered with success.
        self.changes = 0
        #: Held subscriptions the server accepted.
        self.held = 0

    def record(self, message: Any, now: float) -> None:
        """Count a state message; keep the subscription of a churn request's result."""
        if isinstance(message, dict) and message.get("op") == "result":
            request = message.get("id")
            data = message.get("data")
            if isinstance(request, int) and request >= CHURN_ID_BASE and message.get("ok"):
                self.changes += 1
            elif isinstance(request, int) and request >= HELD_ID_BASE and message.get("ok"):
                self.held += 1
            if isinstance(request, int) and request >= CHURN_ID_BASE and isinstance(data, dict):
                subscription = data.get("subscription")
                if isinstance(subscription, int):
                    self.churn_ids.put_nowait(subscription)
            return
        super().record(message, now)


async def churn(connection: Connection, tally: ChurnTally, client: int, point: Point) -> None:
    """Subscribe and unsubscribe one more subscription (`patterns` that match nothing), `churn` changes a second."""
    period = 1.0 / point.churn
    request_ids = itertools.count(CHURN_ID_BASE)
    patterns = churn_patterns(client, point.patterns)
    # Spread the clients' changes over the period rather than all at once.
    await asyncio.sleep(period * (client % 97) / 97)
    while True:
        await connection.send_message({"op": "subscribe", "id": next(request_ids), "topics": patterns})
        await asyncio.sleep(period)
        subscription = await tally.churn_ids.get()
        await connection.send_message({"op": "unsubscribe", "id": next(request_ids), "subscription": subscription})
        await asyncio.sleep(period)


@dataclass
class Fleet:
    connections: list[Connection] = field(default_factory=list)
    tallies: list[ChurnTally] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    #: Seconds from the first connection attempt until every client had subscribed.
    connect_s: float = math.nan


@contextlib.asynccontextmanager
async def fleet_of(
    transport: str, port: int, point: Point, window: Window, mss: int = 0, first: int = 0, count: int | None = None
) -> AsyncIterator[Fleet]:
    """Connect and subscribe the point's clients; pump (and churn) until closed.

    `mss`: each client socket's TCP MSS, in bytes (`client_socket`); 0 leaves it to the kernel.
    `first`, `count`: only the clients `first` to `first + count - 1` (default: every one), where a
    client's index says whether it churns and names its patterns, as in one process.
    """
    count = point.clients - first if count is None else count
    session = None
    if transport == "ws":
        # `socket_factory` is aiohttp 3.12's: only asked for when pinning.
        pinned: dict[str, Any] = {"socket_factory": lambda info: client_socket(info[0], mss)} if mss else {}
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, **pinned))
    fleet = Fleet()

    async def open_one() -> None:
        tally = ChurnTally(window)
        connection: Connection
        if session is not None:
            connection = await WsConnection.open(session, port, tally)
        else:
            connection = await MsgpackConnection.open(port, tally, mss)
        fleet.connections.append(connection)
        fleet.tallies.append(tally)
        await connection.subscribe(patterns_for(point.patterns))
        # Read from now on: a client waiting for the others to connect would let the server's
        # samples pile up in its buffers, and the window would measure that backlog.
        fleet.tasks.append(asyncio.create_task(connection.pump()))

    try:
        started = time.monotonic()
        async with asyncio.timeout(CONNECT_TIMEOUT_S * 2), asyncio.TaskGroup() as group:
            for _ in range(count):
                group.create_task(open_one())
        fleet.connect_s = time.monotonic() - started
        for n, connection in enumerate(fleet.connections, first):
            if point.churning(n):
                await hold(connection, n, point)
        if point.churn:
            fleet.tasks += [
                asyncio.create_task(churn(c, t, n, point))
                for n, (c, t) in enumerate(zip(fleet.connections, fleet.tallies, strict=True), first)
                if point.churning(n)
            ]
        yield fleet
    finally:
        for task in fleet.tasks:
            task.cancel()
        await asyncio.gather(*fleet.tasks, return_exceptions=True)
        await asyncio.gather(*(c.close() for c in fleet.connections), return_exceptions=True)
        if session is not None:
            await session.close()


@dataclass
class Counted:
    """What a set of clients counted inside the window."""

    received: int
    changes: int
    held: int
    #: Seconds until every client of the set had subscribed (the slowest process's).
    connect_s: float
    latencies: list[float]


class Counts(Protocol):
    """What a client's tally, or a set of clients' `Counted`, holds."""

    received: int
    changes: int
    held: int
    latencies: list[float]


def summed(parts: Sequence[Counts], connect_s: float) -> Counted:
    """The counts of every part together: each client's tally in one process, or each process's."""
    return Counted(
        received=sum(part.received for part in parts),
        changes=sum(part.changes for part in parts),
        held=sum(part.held for part in parts),
        connect_s=connect_s,
        latencies=list(itertools.chain.from_iterable(part.latencies for part in parts)),
    )


#: Seconds between sending the client processes their window and its start (each must have it first).
WINDOW_LEAD_S = 0.2


def blocks(clients: int, processes: int) -> list[tuple[int, int]]:
    """(first client, count) of each client process: consecutive blocks, sizes within one of each other."""
    processes = max(1, min(processes, clients))
    base, extra = divmod(clients, processes)
    firsts = itertools.accumulate((base + (k < extra) for k in range(processes - 1)), initial=0)
    return [(first, base + (k < extra)) for k, first in enumerate(firsts)]


def serve_clients(conn: Any, transport: str, port: int, point: Point, first: int, count: int, mss: int) -> None:
    """A client process (`--client-processes`): hold its block of clients, count in the window it is sent.

    Over `conn` it sends `("connected", seconds)`, receives `(window start, window end)` in
    `time.time()` seconds, sends `("counted", Counted's fields)` once the window has ended, and closes its
    clients on the next message (or when the pipe closes). A failure goes back as `("failed", text)`.
    """
    hold_read_buffers_in_heap()
    try:
        asyncio.run(_serve_clients(conn, transport, port, point, first, count, mss))
    except Exception as error:  # the parent reports it with the run that failed
        with contextlib.suppress(OSError):
            conn.send(("failed", f"clients {first}-{first + count - 1}: {error!r}"))


async def _serve_clients(conn: Any, transport: str, port: int, point: Point, first: int, count: int, mss: int) -> None:
    loop = asyncio.get_running_loop()
    window = Window()
    async with fleet_of(transport, port, point, window, mss, first, count) as fleet:
        conn.send(("connected", fleet.connect_s))
        window.start, window.end = await loop.run_in_executor(None, conn.recv)
        await asyncio.sleep(max(window.end - time.time(), 0.0) + WINDOW_LEAD_S)
        # Plain data: the parent need not find `Counted` by this process's module name.
        conn.send(("counted", vars(summed(fleet.tallies, fleet.connect_s))))
        with contextlib.suppress(EOFError, OSError):
            await loop.run_in_executor(None, conn.recv)


class ClientProcesses:
    """The point's clients spread over processes of their own, `blocks` of consecutive clients each."""

    def __init__(self, workers: list[tuple[multiprocessing.process.BaseProcess, Any]]) -> None:
        self._workers = workers
        #: Each process's pid, for its CPU.
        self.pids = [process.pid for process, _ in workers if process.pid is not None]
        self.connect_s = math.nan

    async def _receive(self, conn: Any, expected: str, timeout: float) -> Any:
        ready = await asyncio.get_running_loop().run_in_executor(None, conn.poll, timeout)
        if not ready:
            raise TimeoutError(f"a client process sent no {expected!r} within {timeout:g} s")
        try:
            kind, value = conn.recv()
        except EOFError:
            raise RuntimeError(f"a client process ended before sending {expected!r}") from None
        if kind != expected:
            raise RuntimeError(f"a client process failed: {value}")
        return value

    async def connected(self) -> None:
        """Wait until every process's clients have subscribed."""
        timeout = CONNECT_TIMEOUT_S * 2 + START_TIMEOUT_S  # its start, then `fleet_of`'s own bound
        self.connect_s = max([await self._receive(conn, "connected", timeout) for _, conn in self._workers])

    async def open_window(self, seconds: float) -> Window:
        """Send every process the window, starting `WINDOW_LEAD_S` from now; return when it starts."""
        window = Window()
        window.start = time.time() + WINDOW_LEAD_S
        window.end = window.start + seconds
        for _, conn in self._workers:
            conn.send((window.start, window.end))
        await asyncio.sleep(max(window.start - time.time(), 0.0))
        return window

    async def counted(self, seconds: float) -> Counted:
        """What every process's clients counted in the window (waits for its end)."""
        parts = [
            Counted(**await self._receive(conn, "counted", seconds + CONNECT_TIMEOUT_S)) for _, conn in self._workers
        ]
        return summed(parts, self.connect_s)


@contextlib.asynccontextmanager
async def client_processes(
    transport: str, port: int, point: Point, mss: int, processes: int
) -> AsyncIterator[ClientProcesses]:
    """Start a process per block of clients, wait for them to subscribe; close them all at the end."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of this one's loop
    workers: list[tuple[multiprocessing.process.BaseProcess, Any]] = []
    try:
        for first, count in blocks(point.clients, processes):
            ours, theirs = context.Pipe()
            worker = context.Process(
                target=serve_clients, args=(theirs, transport, port, point, first, count, mss), daemon=True
            )
            worker.start()
            theirs.close()
            workers.append((worker, ours))
        fleet = ClientProcesses(workers)
        await fleet.connected()
        yield fleet
    finally:
        for _, conn in workers:
            with contextlib.suppress(OSError):
                conn.send("close")
        loop = asyncio.get_running_loop()
        for process, conn in workers:
            await loop.run_in_executor(None, process.join, CONNECT_TIMEOUT_S)
            if process.is_alive():
                process.kill()
                await loop.run_in_executor(None, process.join, 1.0)
            conn.close()


@dataclass
class Run:
    """One side at one point, one repeat; rates per second of the window, CPU in % of one core."""

    point: Point
    side: Side
    repeat: int
    delivered_per_s: float
    delivered: float
    p99_ms: float
    server_cpu_pct: float
    us_per_msg: float
    throttled_s: float
    changes: int = 0
    #: Held subscriptions accepted (every churner's `Point.held`).
    held: int = 0
    loop_lag_max_ms: float = math.nan
    coalesced_per_s: float = math.nan
    #: CPU of this benchmark's own process (every client), % of one core: near 100 the clients are the limit.
    client_cpu_pct: float = math.nan
    #: Seconds every client took to connect and subscribe.
    connect_s: float = math.nan


class ClientsHere:
    """Every client in this process (the default): the fleet counts in the window `measure_window` opens."""

    #: No other process: `measure_window` counts this one's CPU as the clients'.
    pids: list[int] | None = None

    def __init__(self, fleet: Fleet, window: Window) -> None:
        self._fleet = fleet
        self._window = window

    async def open_window(self, seconds: float) -> Window:
        """The fleet's window (`measure_window` opens it now)."""
        return self._window

    async def counted(self, seconds: float) -> Counted:
        """What the fleet counted."""
        return summed(self._fleet.tallies, self._fleet.connect_s)


@contextlib.asynccontextmanager
async def clients_of(
    transport: str, port: int, point: Point, args: argparse.Namespace
) -> AsyncIterator[ClientsHere | ClientProcesses]:
    """The point's clients, connected and subscribed: in this process, or in `--client-processes`."""
    if args.client_processes > 1:
        async with client_processes(transport, port, point, args.client_mss, args.client_processes) as fleet:
            yield fleet
    else:
        window = Window()
        async with fleet_of(transport, port, point, window, args.client_mss) as here:
            yield ClientsHere(here, window)


async def run_once(
    side: Side, transport: str, point: Point, repeat: int, args: argparse.Namespace, workdir: Path, quota: Quota | None
) -> Run:
    server = await start_server(side, transport, point, workdir, quota)
    try:
        async with clients_of(transport, server.port, point, args) as clients:
            await asyncio.sleep(args.warmup)
            before, scraped_at = await gateway_counters(server), time.monotonic()
            throttled = quota.throttled_s() if quota is not None else math.nan
            window = await clients.open_window(args.seconds)
            usage = await measure_window(server.pid, window, args.seconds, clients.pids)
            throttled = (quota.throttled_s() - throttled) if quota is not None else math.nan
            after, span = await gateway_counters(server), time.monotonic() - scraped_at
            counted = await clients.counted(args.seconds)
    finally:
        await server.stop()
    wall = usage.wall_s
    rates = gateway_rates(before, after, span)
    received = counted.received
    per_s = received / wall
    return Run(
        point=point,
        side=side,
        repeat=repeat,
        delivered_per_s=per_s,
        delivered=per_s / point.expected_per_s,
        p99_ms=1e3 * percentile(sorted(counted.latencies), 0.99),
        server_cpu_pct=usage.server_cpu_pct,
        us_per_msg=1e6 * usage.server_cpu_pct / 100.0 * wall / received if received else math.nan,
        throttled_s=throttled,
        changes=counted.changes,
        held=counted.held,
        client_cpu_pct=usage.client_cpu_pct,
        connect_s=counted.connect_s,
        loop_lag_max_ms=rates["loop_lag_max_ms"] if rates else math.nan,
        coalesced_per_s=rates["coalesced_per_s"] if rates else math.nan,
    )


# -- report -------------------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    finite = [value for value in values if not math.isnan(value)]
    return statistics.median(finite) if finite else math.nan


@dataclass
class Cell:
    """The medians of one side at one point."""

    delivered: float
    per_s: float
    cpu_pct: float
    us_per_msg: float
    p99_ms: float
    lag_ms: float

    @classmethod
    def of(cls, runs: Sequence[Run]) -> Cell:
        return cls(
            median([r.delivered for r in runs]),
            median([r.delivered_per_s for r in runs]),
            median([r.server_cpu_pct for r in runs]),
            median([r.us_per_msg for r in runs]),
            median([r.p99_ms for r in runs]),
            median([r.loop_lag_max_ms for r in runs]),
        )


def ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(b) else math.nan


def report(runs: Sequence[Run], complete: float) -> str:
    """A table per sweep, the gateway's ratios to the bare sides, and where it stops delivering everything."""
    lines: list[str] = []
    points = list(dict.fromkeys(run.point for run in runs))
    for sweep in dict.fromkeys(point.sweep for point in points):
        lines.append(f"\n## sweep: {sweep}")
        header = "point | side | delivered | msg/s | server CPU % | us/msg | p99 ms | loop lag ms"
        lines += [header, "|".join("---" for _ in header.split("|"))]
        first_short: Point | None = None
        ratios: list[str] = []
        for point in (p for p in points if p.sweep == sweep):
            cells = {side: Cell.of([r for r in runs if r.point == point and r.side == side]) for side in SIDES}
            for side in SIDES:
                if not any(r.point == point and r.side == side for r in runs):
                    continue
                c = cells[side]
                lines.append(
                    f"{point.label()} | {SIDE_NAMES[side]} | {c.delivered:.2f} | {c.per_s:,.0f} | {c.cpu_pct:.1f} | "
                    f"{c.us_per_msg:.1f} | {c.p99_ms:.1f} | {c.lag_ms:.1f}"
                )
            gateway = cells["gateway"]
            if first_short is None and gateway.delivered < complete:
                first_short = point
            ratios.append(
                f"  {point.label()}: gateway/bare delivered {ratio(gateway.per_s, cells['baseline'].per_s):.2f}, "
                f"cpu/msg {ratio(gateway.us_per_msg, cells['baseline'].us_per_msg):.2f}, "
                f"p99 {ratio(gateway.p99_ms, cells['baseline'].p99_ms):.2f}; "
                f"gateway/bare-batched delivered {ratio(gateway.per_s, cells['floor'].per_s):.2f}, "
                f"cpu/msg {ratio(gateway.us_per_msg, cells['floor'].us_per_msg):.2f}, "
                f"p99 {ratio(gateway.p99_ms, cells['floor'].p99_ms):.2f}"
            )
        lines.append("ratios (medians):")
        lines += ratios
        lines += paired_p99(runs, [p for p in points if p.sweep == sweep])
        lines += churn_ratios(runs, [p for p in points if p.sweep == sweep])
        lines.append(
            f"gateway delivers everything (>= {complete:.2f}) through the whole sweep"
            if first_short is None
            else f"gateway stops delivering everything at: {first_short.label()}"
        )
    return "\n".join(lines)


def paired_p99(runs: Sequence[Run], points: Sequence[Point]) -> list[str]:
    """Each point's gateway p99 over each bare side's p99 of the same repeat, with the median's interval.

    The sides of a repeat run one after the other, so a repeat's ratio shares that minute's host; over
    several repeats the median of these ratios (and from 6 repeats, its 95 % interval) says whether
    the gateway's tail is at or below the bare side's, which a ratio of medians mixing minutes cannot.
    The floor over bare aiohttp, paired the same way, is what the gateway's design costs with no
    gateway code: a gateway at the floor stands as far from bare as the floor does.
    """
    lines: list[str] = []
    for point in points:
        cells = [
            f"{SIDE_NAMES[bottom]} {spread(paired)}"
            for bottom in ("baseline", "floor")
            if len(paired := _paired_p99(runs, point, "gateway", bottom)) > 1
        ]
        if not cells:
            continue
        line = f"  p99 by repeat, {point.label()}: gateway over {', over '.join(cells)}"
        if len(design := _paired_p99(runs, point, "floor", "baseline")) > 1:
            line += f"; {SIDE_NAMES['floor']} over {SIDE_NAMES['baseline']} {spread(design)}"
        lines.append(line)
    return lines


def _paired_p99(runs: Sequence[Run], point: Point, top: Side, bottom: Side) -> list[float]:
    """`top`'s p99 over `bottom`'s, repeat by repeat, at `point` (repeats missing either side left out)."""
    tops = {r.repeat: r.p99_ms for r in runs if r.point == point and r.side == top}
    return [ratio(tops[r.repeat], r.p99_ms) for r in runs if r.point == point and r.side == bottom and r.repeat in tops]


def churn_ratios(runs: Sequence[Run], points: Sequence[Point]) -> list[str]:
    """Each churning point's CPU per message over the same point without churn, side by side.

    Paired by repeat (both ran in it, one after the other), then the median of the repeats: the
    machine's drift between repeats is larger than the churn's cost at a few changes a second.
    """
    lines: list[str] = []
    for point in points:
        calm = replace(point, churn=0.0)
        if not point.churn or calm not in points:
            continue
        cells: list[str] = []
        for side in SIDES:
            by_repeat = {r.repeat: r.us_per_msg for r in runs if r.point == calm and r.side == side}
            paired = [
                ratio(r.us_per_msg, by_repeat[r.repeat])
                for r in runs
                if r.point == point and r.side == side and r.repeat in by_repeat
            ]
            if paired:
                cells.append(f"{SIDE_NAMES[side]} {spread(paired)}")
        lines.append(f"  churn cost, {point.label()}: cpu/msg over no churn, by repeat: {', '.join(cells)}")
    return lines


# -- main ---------------------------------------------------------------------------------------


def _floats(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--transport", choices=["ws", "msgpack"], default="msgpack")
    parser.add_argument("--sweep", default="clients,devices,patterns", help="which default sweeps (comma-separated)")
    parser.add_argument("--clients", type=int, help="one custom point instead: clients")
    parser.add_argument("--devices", type=_floats, help="... devices (a list: a sweep of devices)")
    parser.add_argument("--patterns", type=int, default=1, help="... patterns per client")
    parser.add_argument(
        "--churn",
        type=_floats,
        default=[0.0],
        help="... subscription changes per client per second (a list, e.g. 0,5: points measured side by side)",
    )
    parser.add_argument("--churners", type=int, help="... how many clients churn (default: every one)")
    parser.add_argument("--held", type=int, default=0, help="... subscriptions each churner holds besides")
    parser.add_argument("--rate", type=float, default=100.0, help="Hz per device (default 100)")
    parser.add_argument("--sides", default=",".join(SIDES), help="default gateway,baseline,floor")
    parser.add_argument("--seconds", type=float, default=3.0, help="measurement window (default 3)")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds before the window (default 1)")
    parser.add_argument("--repeats", type=int, default=1, help="repeats, sides in rotating order (default 1)")
    parser.add_argument("--cpu-quota", type=float, help="every server under this CPU quota, %% of one core")
    parser.add_argument("--complete", type=float, default=0.99, help="delivered share counted as everything")
    parser.add_argument(
        "--client-mss",
        type=int,
        default=0,
        help="pin every client socket's TCP MSS to this many bytes, 88 to 32767 (default 0: the kernel's); "
        "536 makes each side's clients send their ACKs alike (see bench/fanout.py client_socket)",
    )
    parser.add_argument(
        "--client-processes",
        type=int,
        default=1,
        help="spread the clients over this many processes of their own, in consecutive blocks "
        "(default 1: this process holds them all; its reading then bounds the p99 at hundreds of clients)",
    )
    args = parser.parse_args(argv)
    if args.client_processes < 1:
        parser.error("--client-processes: 1 or more")
    if args.client_mss and not MIN_MSS <= args.client_mss <= MAX_MSS:
        parser.error(f"--client-mss: 0 (the kernel's) or {MIN_MSS} to {MAX_MSS} bytes")
    if not 0 <= args.held < CHURN_ID_BASE - HELD_ID_BASE:
        parser.error(f"--held: 0 to {CHURN_ID_BASE - HELD_ID_BASE - 1} (the gateway allows 256 subscriptions a client)")
    return args


def plan_points(args: argparse.Namespace) -> list[Point]:
    if args.clients is not None:
        counts = args.devices or [1.0]
        return [
            Point("custom", args.clients, int(n), args.patterns, churn, args.rate, args.churners, args.held)
            for n in counts
            for churn in args.churn
        ]
    return sweeps(args.sweep.split(","), args.rate)


async def run_all(args: argparse.Namespace) -> list[Run]:
    sides: list[Side] = [side for side in SIDES if side in args.sides.split(",")]
    quota: Quota | None = None
    if args.cpu_quota:
        quota, how = Quota.create(args.cpu_quota)
        if quota is None:
            print(f"--cpu-quota {args.cpu_quota:g}: no writable cgroup ({how}); running WITHOUT a quota", flush=True)
        else:
            print(f"CPU quota {args.cpu_quota:g} % of a core for every server: {how}", flush=True)
    runs: list[Run] = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
            for repeat in range(args.repeats):
                for point in plan_points(args):
                    shift = repeat % len(sides)
                    for side in sides[shift:] + sides[:shift]:
                        run = await run_once(side, args.transport, point, repeat, args, Path(tmp), quota)
                        runs.append(run)
                        print(
                            f"[{repeat + 1}/{args.repeats}] {point.label()} {SIDE_NAMES[side]}: "
                            f"delivered {run.delivered:.2f} ({run.delivered_per_s:,.0f}/s), "
                            f"cpu {run.server_cpu_pct:.0f} %, "
                            f"{run.us_per_msg:.1f} us/msg, p99 {run.p99_ms:.1f} ms, throttled {run.throttled_s:.2f} s, "
                            f"{run.changes} subscription changes, {run.held} held, "
                            f"clients' cpu {run.client_cpu_pct:.0f} %, "
                            f"connected in {run.connect_s:.2f} s",
                            flush=True,
                        )
    finally:
        if quota is not None:
            quota.remove()
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    hold_read_buffers_in_heap()  # every side's clients read alike, whichever runs first
    runs = asyncio.run(run_all(args))
    print(report(runs, args.complete))
    mss = f"{args.client_mss} bytes" if args.client_mss else "the kernel's"
    where = "this process" if args.client_processes == 1 else f"up to {args.client_processes} processes"
    print(
        f"\ntransport {args.transport}, {args.seconds:g} s windows, {args.repeats} repeat(s), client MSS {mss}, "
        f"clients in {where}; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    for pid in list(_live_pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
