"""Test harness: the real daemon started through its CLI, and real clients on every transport.

`tests.inprocess` starts the same gateway in the test's event loop (no process: for tests that check
nothing of signals, the CLI, exit codes or stdout); both are a `GatewayUnderTest` to the helpers here.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import itertools
import json
import os
import re
import resource
import signal
import socket
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import aiohttp
import msgpack
import websockets

from gateway.config import load

TransportName = Literal["ws", "tcp", "unix"]
_DEMO = load(Path(__file__).resolve().parent.parent / "gateway" / "demo.toml")
#: The ids of `hwgateway demo`'s devices, in config order, then its bindings (each a device of kind `binding`).
DEMO_IDS = [device.id for device in _DEMO.devices] + [b.name for b in _DEMO.bindings.bindings if b.enabled]
DEMO_DEVICES = len(DEMO_IDS)
TRANSPORTS: tuple[TransportName, ...] = ("ws", "tcp", "unix")
#: Seconds a daemon process may take to log `listening`: the demo imports every device family, and with
#: several pytest-xdist workers on two loaded cores its start took over 15 s.
START_TIMEOUT_S = 30.0

SIM_DEVICE = """
[devices.sim-1]
kind = "sim"
rate_hz = 50.0
leds = 3
"""


#: The ports `free_port` hands out lie below Linux's ephemeral range (32768-60999), where every
#: `bind(("127.0.0.1", 0))` of a daemon, broker or client picks its port, so none of those can take one
#: between the probe and its use; each pytest-xdist worker (`gw0`, `gw1`, ...) has a slice of its own, so
#: two workers never hand out the same port either.
_FREE_PORTS_FROM = 12000
_FREE_PORTS_PER_WORKER = 1000
_FREE_PORTS_WORKERS = 20


def _worker_index() -> int:
    """This pytest-xdist worker's number (0 without xdist)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(worker.removeprefix("gw")) % _FREE_PORTS_WORKERS


_first_port = _FREE_PORTS_FROM + _worker_index() * _FREE_PORTS_PER_WORKER
_port_candidates = itertools.cycle(range(_first_port, _first_port + _FREE_PORTS_PER_WORKER))


def free_port() -> int:
    """A TCP port on 127.0.0.1, free now and handed out by no other worker (for fixed-port configs).

    Ports are taken in turn from this worker's slice, so a port comes back only after a thousand
    others; one that is still bound (or in TIME_WAIT) is skipped.
    """
    for _ in range(_FREE_PORTS_PER_WORKER):
        port = next(_port_candidates)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {_first_port}..{_first_port + _FREE_PORTS_PER_WORKER - 1}")


def gateway_config(tmp_path: Path, devices: str = SIM_DEVICE, server: str = "", extra: str = "") -> str:
    """A config on free ports (0) with a Unix socket in `tmp_path`, plus `devices` and extra TOML."""
    return (
        '[server]\nhost = "127.0.0.1"\nhttp_port = 0\nmsgpack_port = 0\n'
        f'unix_socket = "{tmp_path / "gw.sock"}"\n{server}\n'
        "[supervisor]\nbackoff_initial_s = 0.1\nbackoff_max_s = 0.4\n"
        f"{extra}\n{devices}"
    )


def demo_config(tmp_path: Path, extra: str = "", thymio_motor_lease_ms: int | None = None) -> str:
    """`gateway/demo.toml` with every listener on a free port (0) and its Unix socket in `tmp_path`.

    `extra` TOML goes first; `thymio_motor_lease_ms` sets the simulated Thymio's motor lease (ms).
    """
    text = resources.files("gateway").joinpath("demo.toml").read_text(encoding="utf-8")
    text = re.sub(r"(?m)^(http_port|port|tcp_port|ws_port) = \d+$", r"\1 = 0", text)
    text = re.sub(r"(?m)^msgpack_port = \d+$", f'msgpack_port = 0\nunix_socket = "{tmp_path / "gw.sock"}"', text)
    if thymio_motor_lease_ms is not None:
        lease = f"motor_lease_ms = {thymio_motor_lease_ms}\n"
        text = text.replace("[devices.thymio-demo]\n", f"[devices.thymio-demo]\n{lease}")
    return extra + "\n" + text


class GatewayUnderTest(abc.ABC):
    """A started gateway as a test reaches it: its addresses, its JSON log lines, and `stop`.

    Two kinds exist: `RunningGateway`, the daemon in a process of its own (`hwgateway run`), and
    `tests.inprocess.InProcessGateway`, the same `Gateway` in the test's event loop.
    """

    http_port: int
    msgpack_port: int | None
    unix_socket: str | None
    logs: list[dict[str, Any]]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @abc.abstractmethod
    async def stop(self, signum: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        """Stop the gateway (as `signum` would) and return its exit code (0: a clean stop)."""

    def events(self, name: str) -> list[dict[str, Any]]:
        return [line for line in self.logs if line.get("event") == name]

    async def until_connected(self, timeout: float = 30.0) -> None:
        """Wait until every configured device is `connected` (a loaded machine may take seconds)."""
        async with asyncio.timeout(timeout):
            while True:
                client = await connect(self, "ws")
                try:
                    devices = (await client.ok("list_devices"))["devices"]
                finally:
                    await client.close()
                if all(device["status"] == "connected" for device in devices):
                    return
                await asyncio.sleep(0.2)


@dataclass
class RunningGateway(GatewayUnderTest):
    """A gateway process started with `hwgateway run`; `logs` collects its JSON log lines."""

    proc: asyncio.subprocess.Process
    http_port: int
    msgpack_port: int | None
    unix_socket: str | None
    logs: list[dict[str, Any]] = field(default_factory=list)
    _drain: asyncio.Task[None] | None = None

    async def stop(self, signum: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        """Signal the process and return its exit code."""
        if self.proc.returncode is None:
            self.proc.send_signal(signum)
        try:
            async with asyncio.timeout(timeout):
                code = await self.proc.wait()
        finally:
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
        if self._drain is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._drain, 2.0)
        return code


async def metric(gateway: GatewayUnderTest, name: str, labels: str = "") -> float:
    """One sample of the gateway's /metrics: `name{labels}` (0 when absent)."""
    async with aiohttp.ClientSession() as session, session.get(gateway.base_url + "/metrics") as response:
        text = await response.text()
    for line in text.splitlines():
        if line.startswith(f"{name}{{{labels}}} ") if labels else line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def healthz(gateway: GatewayUnderTest) -> dict[str, Any]:
    """The gateway's /healthz body."""
    async with aiohttp.ClientSession() as session, session.get(gateway.base_url + "/healthz") as response:
        body: dict[str, Any] = await response.json()
        return body


async def until(predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Poll `predicate` every 10 ms until true (a simulated peer has no event to wait on); fail naming `what`."""
    try:
        async with asyncio.timeout(timeout):
            while not predicate():  # noqa: ASYNC110 (polled: the peer has no event)
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"never happened: {what}") from None


def health_faults(body: dict[str, Any]) -> list[str]:
    """What makes a /healthz body unhealthy (503) but the event loop's lag: [] when nothing else is.

    The lag is wall clock: a test machine running other tests lags too, whatever the daemon does.
    Its budget lives in the benchmarks (bench/), which measure it against a bare baseline.
    """
    return [] if body["adapter_tasks_alive"] else ["a device task died"]


async def devices_connected(gateway: GatewayUnderTest, devices: Iterable[str], timeout: float = 20.0) -> None:
    """Until every one of `devices` is `connected`, as /healthz reports them (`timeout` in s)."""
    wanted = set(devices)
    async with asyncio.timeout(timeout):
        while True:
            status = {d["id"]: d["status"] for d in (await healthz(gateway))["devices"]}
            if all(status.get(device) == "connected" for device in wanted):
                return
            await asyncio.sleep(0.1)


async def _read_logs(proc: asyncio.subprocess.Process, logs: list[dict[str, Any]]) -> None:
    assert proc.stdout is not None
    async for raw in proc.stdout:
        try:
            logs.append(json.loads(raw))
        except ValueError:
            logs.append({"event": raw.decode(errors="replace").rstrip()})


def write_config(tmp_path: Path, config_text: str) -> Path:
    """Write `config_text` to a new numbered file in `tmp_path` and return its path."""
    config_path = tmp_path / f"gateway-{next(_config_numbers)}.toml"
    config_path.write_text(config_text)
    return config_path


_config_numbers = itertools.count(1)


async def start_gateway(
    tmp_path: Path, config_text: str, *extra_args: str, open_files: int | None = None, new_session: bool = False
) -> RunningGateway:
    """Write `config_text` and run `python -m gateway run` on it until it logs `listening`.

    `open_files` sets the process's RLIMIT_NOFILE (soft and hard), as a systemd `LimitNOFILE=` would.
    `new_session` starts it in a session and process group of its own (its pid is the group's id), so
    that a test can signal the whole group as a terminal does when it closes.
    """
    config_path = write_config(tmp_path, config_text)

    def limit_open_files() -> None:
        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gateway",
        "run",
        "--config",
        str(config_path),
        "--log-format",
        "json",
        *extra_args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=limit_open_files if open_files is not None else None,
        start_new_session=new_session,
    )
    return await _until_listening(proc)


async def start_demo(tmp_path: Path, http_port: int, msgpack_port: int, *extra_args: str) -> RunningGateway:
    """Run `python -m gateway demo` on the given ports (and a Unix socket in `tmp_path`) until it listens.

    Its other faces (rosbridge, Foxglove, TDM) listen on free ports, not on their fixed defaults, which
    a demo on another pytest-xdist worker may hold. `extra_args` go last on its command line (`--mqtt URL`).
    """
    faces = ("--rosbridge-port", "0", "--foxglove-port", "0", "--tdm-port", "0", "--tdm-ws-port", "0")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "demo", "--http-port", str(http_port), "--msgpack-port", str(msgpack_port),
        "--unix-socket", str(tmp_path / "demo.sock"), *faces, "--log-format", "json", *extra_args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    return await _until_listening(proc)


async def _until_listening(proc: asyncio.subprocess.Process) -> RunningGateway:
    logs: list[dict[str, Any]] = []
    drain = asyncio.create_task(_read_logs(proc, logs))
    try:
        async with asyncio.timeout(START_TIMEOUT_S):
            while not any(line.get("event") == "listening" for line in logs):
                if drain.done():
                    # Its output ended before the process was reaped: wait for it, else the process
                    # object is collected "still running" and a later test fails on the warning.
                    await proc.wait()
                    raise RuntimeError(f"gateway exited during start: {logs}")
                await asyncio.sleep(0.02)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        await drain
        raise RuntimeError(f"gateway did not start: {logs}") from None
    listening = next(line for line in logs if line.get("event") == "listening")
    http_port = int(listening["http"].rstrip("/").rsplit(":", 1)[1])
    msgpack_port = int(listening["msgpack"].rsplit(":", 1)[1]) if listening.get("msgpack") else None
    return RunningGateway(proc, http_port, msgpack_port, listening.get("unix"), logs, drain)


class Client(abc.ABC):
    """A protocol client: requests with ids, and the pushed messages kept apart in `pushed`."""

    encoding: str = ""

    def __init__(self) -> None:
        self.hello: dict[str, Any] = {}
        self.pushed: list[dict[str, Any]] = []
        #: Called with every message sent and received (tests check them against the schemas).
        self.on_send: Callable[[dict[str, Any]], None] | None = None
        self.on_receive: Callable[[dict[str, Any]], None] | None = None
        self._ids = itertools.count(1)

    async def send(self, message: dict[str, Any]) -> None:
        if self.on_send is not None:
            self.on_send(message)
        await self.send_raw(self.encode(message))

    async def recv(self, timeout: float = 5.0) -> dict[str, Any]:
        """The next message from the gateway."""
        message = await self.receive(timeout)
        if self.on_receive is not None:
            self.on_receive(message)
        return message

    @abc.abstractmethod
    def encode(self, message: Any) -> bytes:
        """Encode one message for this transport."""

    @abc.abstractmethod
    async def send_raw(self, data: bytes) -> None:
        """Send bytes as they are."""

    @abc.abstractmethod
    async def receive(self, timeout: float = 5.0) -> dict[str, Any]:
        """The next message as the transport decodes it."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close the connection."""

    async def start(self) -> Client:
        self.hello = await self.recv()
        assert self.hello["op"] == "hello", self.hello
        return self

    async def result(self, request_id: Any, timeout: float = 5.0) -> dict[str, Any]:
        """Wait for the result of `request_id`, keeping pushed messages in `pushed`."""
        async with asyncio.timeout(timeout):
            while True:
                message = await self.recv(timeout)
                if message["op"] == "result" and message["id"] == request_id:
                    return message
                self.pushed.append(message)

    async def request(self, op: str, timeout: float = 5.0, **fields: Any) -> dict[str, Any]:
        request_id = next(self._ids)
        await self.send({"op": op, "id": request_id, **fields})
        return await self.result(request_id, timeout)

    async def ok(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send a request that must succeed; return its data."""
        answer = await self.request(op, **fields)
        assert answer["ok"], answer
        data: dict[str, Any] = answer["data"]
        return data

    async def error(self, op: str, **fields: Any) -> dict[str, str]:
        """Send a request that must fail; return its error."""
        answer = await self.request(op, **fields)
        assert not answer["ok"], answer
        error: dict[str, str] = answer["error"]
        return error

    async def until_connected(self, device_ids: Iterable[str], timeout: float = 15.0) -> dict[str, dict[str, Any]]:
        """Poll `list_devices` until every one of `device_ids` is connected (`timeout` in s); all devices by id."""
        wanted = set(device_ids)
        devices: dict[str, dict[str, Any]] = {}
        try:
            async with asyncio.timeout(timeout):
                while True:
                    devices = {d["id"]: d for d in (await self.ok("list_devices"))["devices"]}
                    if all(devices[i]["status"] == "connected" for i in wanted):
                        return devices
                    await asyncio.sleep(0.05)
        except TimeoutError:
            raise AssertionError(f"not connected in {timeout} s: {devices}") from None

    async def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 5.0) -> dict[str, Any]:
        """The first pushed message (already kept or new) that satisfies `predicate`."""
        for index, message in enumerate(self.pushed):
            if predicate(message):
                return self.pushed.pop(index)
        async with asyncio.timeout(timeout):
            while True:
                message = await self.recv(timeout)
                if predicate(message):
                    return message
                self.pushed.append(message)


class WsClient(Client):
    """The `websockets` library's client on /ws."""

    encoding = "json"

    def __init__(self, ws: Any) -> None:
        super().__init__()
        self.ws = ws

    def encode(self, message: Any) -> bytes:
        return json.dumps(message).encode()

    async def send_raw(self, data: bytes) -> None:
        await self.ws.send(data.decode())

    async def receive(self, timeout: float = 5.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            message: dict[str, Any] = json.loads(await self.ws.recv())
            return message

    async def close(self) -> None:
        # websockets stops reading once `max_queue` messages wait unread, and the server's close frame
        # would then wait behind them until `close_timeout` (10 s): keep reading while closing.
        drain = asyncio.create_task(self._read_to_the_end())
        try:
            await self.ws.close()
        finally:
            await drain

    async def _read_to_the_end(self) -> None:
        # ConcurrencyError: another task of the test is reading; it drains the messages instead.
        with contextlib.suppress(websockets.ConnectionClosed, websockets.ConcurrencyError):
            async for _ in self.ws:
                pass


class MsgpackClient(Client):
    """A plain asyncio stream client speaking the msgpack socket."""

    encoding = "msgpack"

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__()
        self.reader = reader
        self.writer = writer
        self.unpacker = msgpack.Unpacker(raw=False)

    def encode(self, message: Any) -> bytes:
        packed: bytes = msgpack.packb(message, use_bin_type=True)
        return packed

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def receive(self, timeout: float = 5.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                for message in self.unpacker:
                    return message  # type: ignore[no-any-return]
                data = await self.reader.read(65536)
                if not data:
                    raise ConnectionError("connection closed")
                self.unpacker.feed(data)

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


def _small_buffer_socket(port: int, receive_buffer: int) -> socket.socket:
    """A TCP socket connected to `port` whose receive buffer is fixed before the handshake."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    return sock


async def connect(
    gateway: GatewayUnderTest,
    transport: TransportName,
    receive_buffer: int | None = None,
    source: str | None = None,
    **ws_options: Any,
) -> Client:
    """Connect a client over `transport` and read its `hello`.

    `receive_buffer` fixes the client's kernel receive buffer (bytes), as a slow network would, instead
    of Linux's autotuning up to tens of megabytes on loopback. `source`: the 127.0.0.0/8 address a TCP
    connection comes from (the gateway counts some things per address), not with `receive_buffer`.
    """
    client: Client
    local_addr = None if source is None else (source, 0)
    if transport == "ws":
        if receive_buffer is not None:
            ws_options["sock"] = _small_buffer_socket(gateway.http_port, receive_buffer)
        elif local_addr is not None:
            ws_options["local_addr"] = local_addr
        ws = await websockets.connect(
            f"ws://127.0.0.1:{gateway.http_port}/ws", max_size=None, compression=None, **ws_options
        )
        client = WsClient(ws)
    elif transport == "tcp":
        assert gateway.msgpack_port is not None
        if receive_buffer is not None:
            streams = await asyncio.open_connection(sock=_small_buffer_socket(gateway.msgpack_port, receive_buffer))
        else:
            streams = await asyncio.open_connection("127.0.0.1", gateway.msgpack_port, local_addr=local_addr)
        client = MsgpackClient(*streams)
    else:
        assert gateway.unix_socket is not None
        client = MsgpackClient(*await asyncio.open_unix_connection(gateway.unix_socket))
    return await client.start()
