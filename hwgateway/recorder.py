"""`hwgateway record`: a client of a running gateway that writes what it receives to an MCAP file.

One channel per topic (`json` messages, `jsonschema` schemas from `describe`), log time = the gateway's
receive time (`recv_stamp`), publish time = the device stamp, sequence = `seq`; availability changes on
`_gateway/device`; a `hwgateway` metadata record with the gateway version and device list.
With `format = "ros2"` the output is a rosbag2 directory instead (`gateway.record.bag`): CDR
messages on the topics the ROS naming rule gives the gateway's devices.
"""

from __future__ import annotations

import abc
import asyncio
import itertools
import json
import os
import signal
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from gateway.record import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_QUEUE,
    DEFAULT_URL,
    EXIT_BAD_FILE,
    EXIT_CONNECT,
    EXIT_NO_TOPICS,
    EXIT_OK,
    EXIT_USAGE,
)
from gateway.record.bag import namer_of
from gateway.record.channels import DEVICE_SCHEMA, DEVICE_TOPIC, DEVICE_TYPE
from gateway.record.sink import McapSink, StateText
from gateway.ros.names import DeviceNaming
from hwgateway.client.errors import ConnectionLost
from hwgateway.client.transports import MsgpackTransport, parse_url

_PROGRESS_INTERVAL_S = 0.5


class RecordError(Exception):
    """Recording could not start; `exit_code` is the command's exit status."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True, slots=True)
class RecordOptions:
    """What to record: `url` of the gateway's /ws, topic `patterns`, `duration_s` (None: until stopped)."""

    output: str
    url: str = DEFAULT_URL
    patterns: tuple[str, ...] = ("**",)
    duration_s: float | None = None
    token: str | None = None
    compression: str = "zstd"
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    queue_size: int = DEFAULT_QUEUE
    progress: bool = False
    format: str = "json"


@dataclass(slots=True)
class RecordSummary:
    """What a recording wrote: messages, dropped samples (queue full), topics and file bytes."""

    messages: int
    dropped: int
    topics: int
    bytes: int
    seconds: float


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


class _Session(abc.ABC):
    """Requests with ids over one connection; pushes that arrive meanwhile are kept in order."""

    def __init__(self) -> None:
        self.pushed: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    @abc.abstractmethod
    async def receive(self) -> dict[str, Any] | None:
        """The next message, or None once the connection ended."""

    @abc.abstractmethod
    async def send(self, message: dict[str, Any]) -> None:
        """Send one request."""

    @abc.abstractmethod
    async def read_into(self, sink: McapSink) -> None:
        """Queue pushes until the connection ends or the gateway says it closes (the hot path)."""

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request and return its result's data; raise RecordError on an error result."""
        request_id = next(self._ids)
        await self.send({"op": op, "id": request_id, **fields})
        while True:
            message = await self.receive()
            if message is None:
                raise RecordError(f"the gateway closed the connection during {op}", EXIT_CONNECT)
            if message.get("op") == "result" and message.get("id") == request_id:
                if not message["ok"]:
                    error = message["error"]
                    raise RecordError(f"{op} refused: {error['code']}: {error['message']}", EXIT_CONNECT)
                data: dict[str, Any] = message["data"]
                return data
            self.pushed.append(message)


class _WebSocketSession(_Session):
    """The /ws endpoint: JSON text; a `state` push goes to the sink as its text, unparsed."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        super().__init__()
        self.ws = ws

    async def receive(self) -> dict[str, Any] | None:
        message = await self.ws.receive()
        if message.type != aiohttp.WSMsgType.TEXT:
            return None
        decoded: dict[str, Any] = json.loads(message.data)
        return decoded

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send_str(json.dumps(message))

    async def read_into(self, sink: McapSink) -> None:
        async for message in self.ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                return
            text: str = message.data
            if text.startswith(_STATE_PREFIX):
                sink.put(StateText(text))
            elif not _handle(sink, json.loads(text)):
                return


class _MsgpackSession(_Session):
    """The msgpack socket (tcp:// or unix:), through the client library's transport."""

    def __init__(self, transport: MsgpackTransport) -> None:
        super().__init__()
        self.transport = transport

    async def receive(self) -> dict[str, Any] | None:
        try:
            return await self.transport.receive()
        except ConnectionLost:
            return None

    async def send(self, message: dict[str, Any]) -> None:
        try:
            await self.transport.send(message)
        except ConnectionLost as error:
            raise RecordError(f"the gateway closed the connection: {error}", EXIT_CONNECT) from None

    async def read_into(self, sink: McapSink) -> None:
        while (message := await self.receive()) is not None:
            if message.get("op") == "state":
                sink.put(StateText(orjson.dumps(message, default=_plain)))
            elif not _handle(sink, message):
                return


def _plain(value: Any) -> Any:
    """JSON for what msgpack may carry and JSON has not (bytes: their values, as the JSON face sends them)."""
    if isinstance(value, bytes | bytearray):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


async def _config_digest(url: str) -> str:
    """The gateway's config digest from its /healthz ("" when it cannot be read; always for tcp/unix URLs)."""
    if not url.startswith(("ws://", "wss://")):
        return ""
    health = url.replace("ws://", "http://", 1).replace("wss://", "https://", 1).rsplit("/", 1)[0] + "/healthz"
    try:
        async with aiohttp.ClientSession() as http, http.get(health, timeout=aiohttp.ClientTimeout(total=5)) as reply:
            body = await reply.json()
    except (aiohttp.ClientError, OSError, ValueError, TimeoutError):
        return ""
    return str(body.get("config_digest", "")) if isinstance(body, dict) else ""


async def _schemas(session: _Session, devices: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The JSON Schema of every message type the devices publish."""
    schemas: dict[str, dict[str, Any]] = {DEVICE_TYPE: DEVICE_SCHEMA}
    for type_ in sorted({t for device in devices for t in device.get("publishes", [])}):
        schemas[type_] = (await session.request("describe", type=type_))["schema"]
    return schemas


def _progress(sink: McapSink, started: float) -> None:
    elapsed = max(time.monotonic() - started, 1e-9)
    sys.stderr.write(
        f"\rrecording {sink.path.name}: {sink.written} messages, {sink.bytes_written / 1e6:.2f} MB, "
        f"{sink.written / elapsed:.0f} msg/s, {sink.dropped} dropped   "
    )
    sys.stderr.flush()


def _handle(sink: McapSink, message: dict[str, Any]) -> bool:
    """Queue one parsed push; False when the gateway said it closes."""
    op = message.get("op")
    if op == "state":
        sink.put(StateText(json.dumps(message)))
    elif op == "device":
        event = {key: value for key, value in message.items() if key != "op"}
        stamp = _ns(float(event.get("stamp", time.time())))
        sink.message(DEVICE_TOPIC, DEVICE_TYPE, stamp, stamp, 0, json.dumps(event).encode())
    return op != "close"


async def record(options: RecordOptions, stop: asyncio.Event | None = None) -> RecordSummary:
    """Record until `duration_s`, `stop` is set, or the gateway closes; raise RecordError if it cannot start.

    `options.url` takes the forms of the other client commands: ws://, wss://, http(s):// (its /ws),
    tcp://host:port and unix:/path (the msgpack socket).
    """
    stop = stop or asyncio.Event()
    try:
        endpoint = parse_url(options.url)
    except ValueError as error:
        raise RecordError(str(error), EXIT_USAGE) from None
    # before connecting: a file we cannot write is not the gateway's fault
    _check_output(options.output, options.format == "ros2")
    if endpoint.scheme in ("tcp", "unix"):
        try:
            transport = await MsgpackTransport.open(endpoint)
        except ConnectionLost as error:
            raise RecordError(f"cannot reach the gateway: {error}", EXIT_CONNECT) from None
        try:
            return await _record_on(_MsgpackSession(transport), options, stop)
        finally:
            await transport.close()
    try:
        async with aiohttp.ClientSession() as http, http.ws_connect(endpoint.url, max_msg_size=0) as ws:
            return await _record_on(_WebSocketSession(ws), replace(options, url=endpoint.url), stop)
    except (aiohttp.ClientError, ConnectionError, TimeoutError) as error:
        raise RecordError(f"cannot reach the gateway at {endpoint.url}: {error}", EXIT_CONNECT) from None
    except OSError as error:
        if error.filename is not None:  # the output file (the sink's open), not the connection
            raise _output_error(options.output, error) from None
        raise RecordError(f"cannot reach the gateway at {endpoint.url}: {error}", EXIT_CONNECT) from None


def _check_output(output: str, bag: bool = False) -> None:
    """RecordError (EXIT_BAD_FILE) naming `output` when it cannot be written: no folder, not writable, a folder.

    `bag`: `output` is a ros2 bag directory to create, so it must not exist yet (as `ros2 bag record -o`).
    """
    path = Path(output)
    folder = path.parent
    if bag and path.exists():
        raise RecordError(f"cannot write the bag {output}: it exists already", EXIT_BAD_FILE)
    if path.is_dir():
        raise RecordError(f"cannot write {output}: it is a folder", EXIT_BAD_FILE)
    if not folder.is_dir():
        raise RecordError(f"cannot write {output}: no folder {folder}", EXIT_BAD_FILE)
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise RecordError(f"cannot write {output}: permission denied", EXIT_BAD_FILE)


def _output_error(output: str, error: OSError) -> RecordError:
    return RecordError(f"cannot write {output}: {error.strerror or error}", EXIT_BAD_FILE)


async def _record_on(session: _Session, options: RecordOptions, stop: asyncio.Event) -> RecordSummary:
    hello = await session.receive()
    if hello is None or hello.get("op") != "hello":
        raise RecordError(f"{options.url} is not a hwgateway WebSocket (first message {hello!r})", EXIT_CONNECT)
    if hello.get("auth_required"):
        if not options.token:
            raise RecordError("the gateway needs a token: pass --token or set HWGW_TOKEN", EXIT_CONNECT)
        await session.request("auth", token=options.token)
    devices = (await session.request("list_devices"))["devices"]
    schemas = await _schemas(session, devices)
    subscribed = await session.request("subscribe", topics=list(options.patterns))
    if not subscribed["topics"]:
        raise RecordError(f"no topic matches {' '.join(options.patterns)}", EXIT_NO_TOPICS)
    namer = None
    if options.format == "ros2":
        namer = namer_of([DeviceNaming(str(d.get("id", "")), str(d.get("kind", "")), "", tuple(d.get("accepts", ())))
                          for d in devices])  # fmt: skip
    try:
        sink = McapSink(options.output, schemas, options.compression, options.chunk_bytes, options.queue_size,
                        namer=namer)  # fmt: skip
    except OSError as error:
        raise _output_error(options.output, error) from None
    sink.metadata(
        "hwgateway",
        {
            "gateway_version": str(hello.get("version", "")),
            "protocol": str(hello.get("protocol", "")),
            "url": options.url,
            "patterns": json.dumps(list(options.patterns)),
            "devices": json.dumps(devices),
            "config_digest": await _config_digest(options.url),
            "started": f"{time.time():.6f}",
            "commands": "not recorded: a client sees only its own commands; the daemon's [record] records all",
        },
    )
    started = time.monotonic()
    deadline = None if options.duration_s is None else started + options.duration_s
    try:
        for message in session.pushed:
            _handle(sink, message)
        await _pump(session, sink, stop, deadline, options.progress, started)
    finally:
        if options.progress:
            _progress(sink, started)
            sys.stderr.write("\n")
        await asyncio.to_thread(sink.close)
    return RecordSummary(sink.written, sink.dropped, sink.channels, sink.bytes_written, time.monotonic() - started)


async def _pump(
    session: _Session, sink: McapSink, stop: asyncio.Event, deadline: float | None, progress: bool, started: float
) -> None:
    """Hand every push to the sink until `stop`, the deadline or the end of the connection.

    The hot path is one task reading the socket; a `state` push goes to the writer thread as its
    text, unparsed (the gateway sends `{"op":"state",...` first), so the loop does no JSON work.
    """
    reader = asyncio.create_task(session.read_into(sink))
    waits: set[asyncio.Future[Any]] = {reader, asyncio.ensure_future(stop.wait())}
    try:
        while True:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return
            if progress:
                _progress(sink, started)
            wait = _PROGRESS_INTERVAL_S if deadline is None else min(_PROGRESS_INTERVAL_S, deadline - now)
            done, _ = await asyncio.wait(waits, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            if done:
                return
    finally:
        for task in waits:
            task.cancel()
        await asyncio.gather(*waits, return_exceptions=True)


_STATE_PREFIX = '{"op":"state"'


def run(options: RecordOptions) -> int:
    """Run a recording from the command line (Ctrl-C, SIGTERM or SIGHUP ends it cleanly); return the exit code."""
    options = replace(options, token=options.token or os.environ.get("HWGW_TOKEN"))

    async def main() -> RecordSummary:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        # SIGHUP too: a closed terminal ends the recording with a complete file, not a truncated one.
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(signum, stop.set)
        return await record(options, stop)

    try:
        summary = asyncio.run(main())
    except RecordError as error:
        print(f"hwgateway record: {error}", file=sys.stderr)
        return error.exit_code
    print(
        f"{options.output}: {summary.messages} messages on {summary.topics} channels, "
        f"{summary.bytes / 1e6:.2f} MB in {summary.seconds:.1f} s; {summary.dropped} dropped (writer queue full)"
    )
    return EXIT_OK
