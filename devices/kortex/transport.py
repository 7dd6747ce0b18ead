"""Thin asyncio transports for a `KortexConnection`: TCP with the magic/length splitter, UDP bare.

They hold no protocol logic: bytes in are cut into Frames and handed to the connection, Frames out
are framed (TCP) or size-checked (UDP) and written.
"""

from __future__ import annotations

import asyncio
import logging

from devices.kortex.connection import KortexConnection
from protocols.errors import ProtocolError
from protocols.kortex.framing import TcpSplitter, check_udp, encode_tcp

log = logging.getLogger(__name__)


class _TcpProtocol(asyncio.Protocol):
    def __init__(self, connection: KortexConnection) -> None:
        self._connection = connection
        self._splitter = TcpSplitter()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        discarded = self._splitter.discarded_bytes
        try:
            frames = self._splitter.feed(data)
        except ProtocolError as error:
            if self._transport is not None:
                self._transport.abort()
            self._connection.lost(error)
            return
        if self._splitter.discarded_bytes != discarded:
            log.warning(
                "%s: skipped %d bytes that did not start with the Kortex magic",
                self._connection.name,
                self._splitter.discarded_bytes - discarded,
            )
        for frame in frames:
            self._connection.frame_received(frame)

    def connection_lost(self, exc: Exception | None) -> None:
        self._connection.lost(exc)


class _UdpProtocol(asyncio.DatagramProtocol):
    def __init__(self, connection: KortexConnection) -> None:
        self._connection = connection

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        self._connection.frame_received(data)

    def error_received(self, exc: Exception) -> None:
        self._connection.transport_error(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self._connection.lost(exc)


async def open_tcp(connection: KortexConnection, host: str, port: int, timeout_s: float) -> None:
    """Connect `connection` to the robot's TCP port (10000)."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(timeout_s):
        transport, _ = await loop.create_connection(lambda: _TcpProtocol(connection), host, port)

    def send(frame: bytes) -> None:
        transport.write(encode_tcp(frame))

    connection.attach(send, transport.close)


async def open_udp(connection: KortexConnection, host: str, port: int) -> None:
    """Connect `connection` to the robot's UDP port (10001) from one fixed local port."""
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(lambda: _UdpProtocol(connection), remote_addr=(host, port))

    def send(frame: bytes) -> None:
        transport.sendto(check_udp(frame))

    connection.attach(send, transport.close)
