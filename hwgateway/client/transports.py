"""The client's two wire transports: WebSocket (JSON text frames) and msgpack over TCP or a Unix socket.

Each is a connected pipe of protocol messages (maps): `send`, `receive`, `close`. A multi-sample frame
(an array of messages, sent after `configure {"multi_state": true}`) is received as its messages in
order. `open_transport` picks
one from the URL: ``ws://host:port/ws`` (or ``wss://``), ``tcp://host:port``, ``unix:/path/to.sock``.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import msgpack
import orjson

from hwgateway.client.errors import ConnectionLost

if TYPE_CHECKING:
    import aiohttp

__all__ = ["Endpoint", "MsgpackTransport", "Transport", "WebSocketTransport", "open_transport", "parse_url"]

#: Largest message accepted from the gateway (bytes); the gateway's own default frame limit is 1 MiB.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_READ_SIZE = 65536


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where to connect: `scheme` ws/wss (`url` as given), tcp (`host`, `port`) or unix (`path`)."""

    scheme: Literal["ws", "wss", "tcp", "unix"]
    url: str = ""
    host: str = ""
    port: int = 0
    path: str = ""


def parse_url(url: str) -> Endpoint:
    """Parse a gateway URL; raise `ValueError` naming what is wrong with it."""
    parts = urlsplit(url)
    if parts.scheme in ("ws", "wss"):
        if not parts.hostname:
            raise ValueError(f"{url!r}: a WebSocket URL needs a host, e.g. ws://127.0.0.1:8470/ws")
        scheme: Literal["ws", "wss"] = "wss" if parts.scheme == "wss" else "ws"
        return Endpoint(scheme, url=url if parts.path else url.rstrip("/") + "/ws")
    if parts.scheme in ("http", "https"):
        ws = ("wss" if parts.scheme == "https" else "ws") + url[len(parts.scheme) :]
        return parse_url(ws)
    if parts.scheme == "tcp":
        if not parts.hostname or parts.port is None:
            raise ValueError(f"{url!r}: a msgpack TCP URL needs a host and port, e.g. tcp://127.0.0.1:8471")
        return Endpoint("tcp", host=parts.hostname, port=parts.port)
    if parts.scheme == "unix":
        path = parts.path or parts.netloc
        if not path:
            raise ValueError(f"{url!r}: a Unix socket URL needs a path, e.g. unix:/run/hwgateway/hwgateway.sock")
        return Endpoint("unix", path=path)
    raise ValueError(f"{url!r}: the scheme must be ws, wss, http, tcp or unix")


def _messages(value: object, what: str) -> list[dict[str, Any]]:
    """One decoded frame as its messages: a map, or an array of maps (a multi-sample frame)."""
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        return value
    raise ConnectionLost(f"the gateway sent a frame that is neither a map nor an array of maps: {what}")


class Transport(abc.ABC):
    """A connection carrying protocol messages; every failure surfaces as `ConnectionLost`."""

    @abc.abstractmethod
    async def send(self, message: dict[str, Any]) -> None:
        """Send one message."""

    @abc.abstractmethod
    async def receive(self) -> dict[str, Any]:
        """The next message from the gateway."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close the connection (idempotent)."""


class WebSocketTransport(Transport):
    """JSON text frames over aiohttp's WebSocket client."""

    def __init__(self, session: aiohttp.ClientSession, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._session = session
        self._ws = ws
        self._ready: deque[dict[str, Any]] = deque()

    @classmethod
    async def open(cls, url: str) -> WebSocketTransport:
        """Connect to `url`."""
        import aiohttp  # only WebSocket clients pay for importing it

        session = aiohttp.ClientSession()
        try:
            ws = await session.ws_connect(url, max_msg_size=MAX_MESSAGE_BYTES, autoping=True, compress=0)
        except (aiohttp.ClientError, OSError) as error:
            await session.close()
            raise ConnectionLost(f"cannot connect to {url}: {error}") from None
        except BaseException:
            await session.close()
            raise
        return cls(session, ws)

    async def send(self, message: dict[str, Any]) -> None:
        """Send one JSON text frame."""
        import aiohttp

        try:
            await self._ws.send_str(orjson.dumps(message).decode())
        except (ConnectionError, aiohttp.ClientError, RuntimeError) as error:
            raise ConnectionLost(f"send failed: {error}") from None

    async def receive(self) -> dict[str, Any]:
        """The next message: a text frame decoded, or the next one of a multi-sample frame."""
        import aiohttp

        if self._ready:
            return self._ready.popleft()
        try:
            frame = await self._ws.receive()
        except (ConnectionError, aiohttp.ClientError) as error:
            raise ConnectionLost(f"receive failed: {error}") from None
        if frame.type == aiohttp.WSMsgType.TEXT:
            first, *rest = _messages(orjson.loads(frame.data), repr(frame.data[:80]))
            self._ready.extend(rest)
            return first
        if frame.type == aiohttp.WSMsgType.ERROR:
            raise ConnectionLost(f"WebSocket error: {self._ws.exception()}")
        raise ConnectionLost(f"WebSocket closed ({self._ws.close_code})")

    async def close(self) -> None:
        """Close the WebSocket and its HTTP session."""
        with contextlib.suppress(Exception):
            await self._ws.close()
        await self._session.close()


class MsgpackTransport(Transport):
    """A stream of msgpack maps over TCP or a Unix socket."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._unpacker = msgpack.Unpacker(raw=False, max_buffer_size=MAX_MESSAGE_BYTES)
        self._ready: deque[dict[str, Any]] = deque()

    @classmethod
    async def open(cls, endpoint: Endpoint) -> MsgpackTransport:
        """Connect to a tcp or unix endpoint."""
        try:
            if endpoint.scheme == "unix":
                streams = await asyncio.open_unix_connection(endpoint.path, limit=_READ_SIZE)
            else:
                streams = await asyncio.open_connection(endpoint.host, endpoint.port, limit=_READ_SIZE)
        except OSError as error:
            where = endpoint.path if endpoint.scheme == "unix" else f"{endpoint.host}:{endpoint.port}"
            raise ConnectionLost(f"cannot connect to {endpoint.scheme}:{where}: {error.strerror or error}") from None
        return cls(*streams)

    async def send(self, message: dict[str, Any]) -> None:
        """Pack and write one map."""
        try:
            self._writer.write(msgpack.packb(message, use_bin_type=True))
            await self._writer.drain()
        except (ConnectionError, RuntimeError) as error:
            raise ConnectionLost(f"send failed: {error}") from None

    async def receive(self) -> dict[str, Any]:
        """The next map from the stream (the maps of a multi-sample array one by one)."""
        if self._ready:
            return self._ready.popleft()
        while True:
            try:
                message = next(self._unpacker)
            except StopIteration:
                pass
            except (ValueError, msgpack.UnpackException) as error:
                raise ConnectionLost(f"undecodable msgpack from the gateway: {error}") from None
            else:
                first, *rest = _messages(message, f"{message!r:.80}")
                self._ready.extend(rest)
                return first
            try:
                data = await self._reader.read(_READ_SIZE)
            except ConnectionError as error:
                raise ConnectionLost(f"receive failed: {error}") from None
            if not data:
                raise ConnectionLost("the gateway closed the connection")
            try:
                self._unpacker.feed(data)
            except msgpack.BufferFull:
                raise ConnectionLost(f"a message from the gateway exceeds {MAX_MESSAGE_BYTES} bytes") from None

    async def close(self) -> None:
        """Close the socket."""
        self._writer.close()
        with contextlib.suppress(OSError, RuntimeError):
            await self._writer.wait_closed()


async def open_transport(endpoint: Endpoint) -> Transport:
    """Connect to `endpoint`; raise `ConnectionLost` when it cannot be reached."""
    if endpoint.scheme in ("ws", "wss"):
        return await WebSocketTransport.open(endpoint.url)
    return await MsgpackTransport.open(endpoint)
