"""The msgpack socket: a stream of msgpack maps each way, on TCP and on a Unix socket."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
import stat
from pathlib import Path

from gateway.core.client import Hub
from gateway.errors import ErrorCode
from gateway.faces.native.session import Session
from gateway.servers.socket_transport import SocketTransport
from gateway.wire import Encoding
from protocols.errors import ProtocolError
from protocols.msgpack_stream import MessageTooLarge, MsgpackStreamReader

log = logging.getLogger(__name__)

READ_SIZE = 65536
BIN_KEYS = "request keys must be msgpack str, not bin (pack text as str: use_bin_type=True with str keys)"


class StreamTransport(SocketTransport):
    """msgpack frames out over an asyncio stream."""

    encoding: Encoding = "msgpack"

    def __init__(self, writer: asyncio.StreamWriter, send_buffer_bytes: int) -> None:
        super().__init__(writer.transport, send_buffer_bytes)
        self._writer = writer

    async def drained(self) -> None:
        """The stream's own flow control says when the peer has room again."""
        await self._writer.drain()

    async def close(self, code: ErrorCode, reason: str) -> None:
        """Close the socket (the `close` message already went out)."""
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()


def _remove_stale_socket(path: Path) -> None:
    # A socket file left by a run that did not stop cleanly would make bind() fail.
    if path.is_socket():
        path.unlink()


class MsgpackServer:
    """Serves sessions on TCP and/or a Unix socket."""

    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._servers: list[asyncio.Server] = []
        self._unix_path: Path | None = None
        self.tcp_port: int | None = None

    async def start(self, host: str, port: int, unix_path: str, tls: ssl.SSLContext | None = None) -> None:
        """Listen on `host:port` (port -1: not at all; `tls`: with TLS) and on `unix_path` (empty: not at all)."""
        if port >= 0:
            try:
                server = await asyncio.start_server(self._serve, host, port, limit=READ_SIZE, ssl=tls)
            except OSError as error:
                raise OSError(error.errno, f"msgpack socket {host}:{port}: {error.strerror or error}") from None
            self._servers.append(server)
            self.tcp_port = server.sockets[0].getsockname()[1]
        if unix_path:
            path = Path(unix_path)
            try:
                _remove_stale_socket(path)
                server = await asyncio.start_unix_server(self._serve, str(path), limit=READ_SIZE)
            except OSError as error:
                hint = ' (set server.unix_socket, or "" to disable it)' if not path.parent.is_dir() else ""
                raise OSError(error.errno, f"unix socket {path}: {error.strerror or error}{hint}") from None
            os.chmod(path, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IWGRP)
            self._servers.append(server)
            self._unix_path = path

    def stop_listening(self) -> None:
        """Refuse new connections; live sessions go on until closed."""
        for server in self._servers:
            server.close()
        if self._unix_path is not None:
            with contextlib.suppress(OSError):
                self._unix_path.unlink()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peername = writer.get_extra_info("peername")
        # The source address without the port: auth throttling counts failures per address.
        peer = str(peername[0]) if isinstance(peername, tuple) else "unix"
        transport = StreamTransport(writer, self._hub.server.send_buffer_bytes)
        session = Session(self._hub, transport, peer)
        session.start()
        decoder = MsgpackStreamReader(self._hub.server.max_frame_bytes, READ_SIZE)
        try:
            while data := await reader.read(READ_SIZE):
                decoder.receive_data(data)
                while (message := decoder.next_message()) is not None:
                    value, size = message
                    if isinstance(value, dict) and not all(isinstance(key, str) for key in value):
                        # Else a map packed with bin keys would read as one without an "id".
                        session.reject(BIN_KEYS)
                        continue
                    await session.receive(value, size)
        except MessageTooLarge as error:
            await session.close(ErrorCode.TOO_LARGE, str(error))
        except ProtocolError as error:
            await session.close(ErrorCode.BAD_REQUEST, str(error))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            session.finish()
            writer.close()
