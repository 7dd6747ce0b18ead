"""The msgpack socket: a stream of msgpack maps each way, on TCP and on a Unix socket."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
import ssl
import stat
from pathlib import Path

from gateway.core.client import Hub
from gateway.errors import ErrorCode
from gateway.faces.native.session import Session
from gateway.servers.limits import LISTEN_BACKLOG, ConnectionLimits, Refused, Ticket
from gateway.servers.socket_transport import StreamWriterTransport, close_or_abort
from gateway.servers.stream_listener import read_stream
from gateway.wire import Encoding, encode
from protocols.errors import ProtocolError
from protocols.msgpack_stream import MessageTooLarge, MsgpackStreamReader

log = logging.getLogger(__name__)

READ_SIZE = 65536
#: Requests handled from one read before the reader lets the event loop run other connections.
YIELD_EVERY = 32
BIN_KEYS = "request keys must be msgpack str, not bin (pack text as str: use_bin_type=True with str keys)"


class StreamTransport(StreamWriterTransport):
    """msgpack frames out over an asyncio stream."""

    encoding: Encoding = "msgpack"

    async def drained(self) -> None:
        """The stream's own flow control says when the peer has room again."""
        await self._writer.drain()


def _remove_stale_socket(path: Path) -> None:
    """Remove a socket file left by a run that did not stop cleanly (bind() would fail on it).

    Never one that a live process serves (a second gateway or demo started by mistake): a socket that
    accepts a connection is in use, and that is an `OSError` (EADDRINUSE) naming it.
    """
    if not path.is_socket():
        return
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
        except (ConnectionRefusedError, FileNotFoundError):  # nobody listens: stale
            pass
        except OSError:  # it exists and something is there (a full backlog, a timeout): leave it
            raise OSError(errno.EADDRINUSE, "in use by another process") from None
        else:
            raise OSError(errno.EADDRINUSE, "in use by another live process (another gateway?)")
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _same_file(path: Path, identity: tuple[int, int] | None) -> bool:
    try:
        status = os.stat(path)
    except OSError:
        return False
    return identity == (status.st_dev, status.st_ino)


class MsgpackServer:
    """Serves sessions on TCP and/or a Unix socket, within the shared connection limits."""

    name = "msgpack"
    #: Nothing of this face outlives its listeners' sessions: `stop` has nothing to wait for.
    stop_deadline_s = 0.0

    def __init__(self, hub: Hub, limits: ConnectionLimits) -> None:
        self._hub = hub
        self._limits = limits
        self._servers: list[asyncio.Server] = []
        self._handlers: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self._unix_path: Path | None = None
        self._unix_identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the socket file bound
        self._scheme = "tcp"
        self.tcp_port: int | None = None

    async def start(self, tls: ssl.SSLContext | None = None) -> None:
        """Listen on `server.host`:`server.msgpack_port` (-1: not at all; `tls`: with TLS) and `server.unix_socket`."""
        server = self._hub.server
        self._scheme = "tls" if tls else "tcp"
        await self.listen(server.host, server.msgpack_port, server.unix_socket, tls)

    async def listen(self, host: str, port: int, unix_path: str, tls: ssl.SSLContext | None = None) -> None:
        """Listen on `host:port` (port -1: not at all; `tls`: with TLS) and on `unix_path` (empty: not at all)."""
        if port >= 0:
            try:
                server = await asyncio.start_server(
                    self._serve,
                    host,
                    port,
                    limit=READ_SIZE,
                    backlog=LISTEN_BACKLOG,
                    ssl=tls,
                    ssl_handshake_timeout=self._hub.server.http_header_timeout_s if tls else None,
                )
            except OSError as error:
                raise OSError(error.errno, f"msgpack socket {host}:{port}: {error.strerror or error}") from None
            self._servers.append(server)
            self.tcp_port = server.sockets[0].getsockname()[1]
        if unix_path:
            path = Path(unix_path)
            try:
                _remove_stale_socket(path)
                server = await asyncio.start_unix_server(
                    self._serve, str(path), limit=READ_SIZE, backlog=LISTEN_BACKLOG
                )
            except OSError as error:
                hint = ' (set server.unix_socket, or "" to disable it)' if not path.parent.is_dir() else ""
                raise OSError(error.errno, f"unix socket {path}: {error.strerror or error}{hint}") from None
            os.chmod(path, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IWGRP)
            self._servers.append(server)
            self._unix_path = path
            status = os.stat(path)
            self._unix_identity = (status.st_dev, status.st_ino)

    def stop_listening(self) -> None:
        """Refuse new connections; live sessions go on until closed."""
        for server in self._servers:
            server.close()
        # Only the socket file this server bound: never one another process put at the same path since.
        if self._unix_path is not None and _same_file(self._unix_path, self._unix_identity):
            with contextlib.suppress(OSError):
                self._unix_path.unlink()

    async def stop(self) -> None:
        """Nothing to stop beyond the listeners (closed by `stop_listening` and `cleanup`)."""

    def listeners(self) -> dict[str, str | None]:
        """The TCP address and the Unix socket's path."""
        tcp = f"{self._scheme}://{self._hub.server.host}:{self.tcp_port}" if self.tcp_port else None
        return {"msgpack": tcp, "unix": str(self._unix_path) if self._unix_path is not None else None}

    def abort_connections(self) -> None:
        """Drop every connection at once."""
        for writer in self._handlers.values():
            writer.transport.abort()

    async def cleanup(self) -> None:
        """Abort what is still open and wait (bounded) for the handlers to end."""
        await self.end_connections()

    async def end_connections(self, timeout_s: float = 1.0) -> None:
        """Abort every connection still open and wait (at most `timeout_s`) for their handlers to end."""
        for writer in self._handlers.values():
            writer.transport.abort()
        if self._handlers:
            await asyncio.wait(list(self._handlers), timeout=timeout_s)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers[task] = writer
        try:
            await self._serve_connection(reader, writer)
        except (ConnectionError, OSError) as error:  # the peer vanished while we said goodbye
            log.debug("msgpack connection ended: %s", error)
        except asyncio.CancelledError:
            # Only the loop's end cancels a handler (shutdown aborted its socket first); asyncio's
            # stream callback would log each cancellation as an error, with a traceback.
            close_or_abort(writer.transport)
        finally:
            del self._handlers[task]

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peername = writer.get_extra_info("peername")
        # The source address without the port: auth throttling counts failures per address.
        peer = str(peername[0]) if isinstance(peername, tuple) else "unix"
        try:
            ticket = self._limits.admit(peer if isinstance(peername, tuple) else None)
        except Refused as refused:
            refusal = {"op": "close", "code": ErrorCode.UNAVAILABLE.value, "reason": str(refused)}
            writer.write(encode(refusal, "msgpack"))
            close_or_abort(writer.transport)
            return
        transport = StreamTransport(writer, self._hub.server.send_buffer_bytes)
        session = Session(self._hub, transport, peer)
        session.start()
        decoder = MsgpackStreamReader(self._hub.server.max_frame_bytes, READ_SIZE)
        try:
            await self._read(reader, decoder, session, ticket)
        except MessageTooLarge as error:
            await session.close(ErrorCode.TOO_LARGE, str(error))
        except ProtocolError as error:
            await session.close(ErrorCode.BAD_REQUEST, str(error))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            ticket.release()
            session.finish()
            close_or_abort(writer.transport)
            # Exceptions and tasks keep this frame alive in reference cycles until the cyclic
            # collector runs; the up to max_frame_bytes of a partial request must not wait for it.
            decoder.close()

    async def _read(
        self, reader: asyncio.StreamReader, decoder: MsgpackStreamReader, session: Session, ticket: Ticket
    ) -> None:
        """Feed requests to `session` until the peer leaves or a deadline passes (then close it)."""

        async def handle() -> bool:
            handled = 0
            while (message := decoder.next_message()) is not None:
                if session.closing:  # the rest of a flood is not even decoded
                    await session.wait_finished()
                    return False
                handled += 1
                if handled % YIELD_EVERY == 0:
                    await asyncio.sleep(0)  # one read may hold thousands of requests: let others run
                value, size = message
                if isinstance(value, dict) and not all(isinstance(key, str) for key in value):
                    # Else a map packed with bin keys would read as one without an "id".
                    await session.reject(BIN_KEYS)
                    continue
                await session.receive(value, size)
            return True

        server = self._hub.server
        await read_stream(
            reader,
            session,
            ticket,
            server,
            decoder.receive_data,
            lambda: decoder.partial_bytes,
            handle,
            READ_SIZE,
            server.idle_timeout_s,
        )
