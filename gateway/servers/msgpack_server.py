"""The msgpack socket: a stream of msgpack maps each way, on TCP and on a Unix socket."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import math
import os
import socket
import ssl
import stat
import time
from pathlib import Path

from gateway.core.client import Hub
from gateway.errors import ErrorCode
from gateway.faces.native.session import Session
from gateway.servers.http import AUTH_TIMEOUT_REASON
from gateway.servers.limits import ConnectionLimits, RateLimitedLog, Refused, Ticket
from gateway.servers.socket_transport import CLOSE_DRAIN_S, SocketTransport, close_or_abort
from gateway.wire import Encoding, encode
from protocols.errors import ProtocolError
from protocols.msgpack_stream import MessageTooLarge, MsgpackStreamReader

log = logging.getLogger(__name__)

READ_SIZE = 65536
#: Requests handled from one read before the reader lets the event loop run other connections.
YIELD_EVERY = 32
_PARTIAL_REASON = "a request begun {:g} s ago is still unfinished (server.read_timeout_s)"
_IDLE_REASON = "nothing received for {:g} s (server.idle_timeout_s; send ping to stay connected)"
_TIMEOUTS = RateLimitedLog("msgpack clients timed out", 10.0, logging.INFO)
_BUDGET_REASON = "too many unfinished requests on the gateway (server.max_partial_bytes); try again later"
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
        """Close the socket (the `close` message already went out); abort it if it does not drain in time."""
        self._writer.close()
        try:
            async with asyncio.timeout(CLOSE_DRAIN_S):
                await self._writer.wait_closed()
        except TimeoutError:
            self.abort()
        except OSError:
            pass


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

    def __init__(self, hub: Hub, limits: ConnectionLimits) -> None:
        self._hub = hub
        self._limits = limits
        self._servers: list[asyncio.Server] = []
        self._handlers: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self._unix_path: Path | None = None
        self._unix_identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the socket file bound
        self.tcp_port: int | None = None

    async def start(self, host: str, port: int, unix_path: str, tls: ssl.SSLContext | None = None) -> None:
        """Listen on `host:port` (port -1: not at all; `tls`: with TLS) and on `unix_path` (empty: not at all)."""
        if port >= 0:
            try:
                server = await asyncio.start_server(
                    self._serve,
                    host,
                    port,
                    limit=READ_SIZE,
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
                server = await asyncio.start_unix_server(self._serve, str(path), limit=READ_SIZE)
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
        server = self._hub.server
        now = time.monotonic()
        auth_deadline = now + server.auth_timeout_s if server.auth_timeout_s else math.inf
        last_read = now
        partial_since = math.inf
        while True:
            deadlines = [(math.inf, "")]
            if not session.client.authenticated:
                deadlines.append((auth_deadline, AUTH_TIMEOUT_REASON.format(server.auth_timeout_s)))
            if server.read_timeout_s:
                deadlines.append((partial_since + server.read_timeout_s, _PARTIAL_REASON.format(server.read_timeout_s)))
            if server.idle_timeout_s:
                deadlines.append((last_read + server.idle_timeout_s, _IDLE_REASON.format(server.idle_timeout_s)))
            deadline, reason = min(deadlines)
            try:
                async with asyncio.timeout_at(None if deadline == math.inf else _loop_time(deadline)):
                    data = await reader.read(READ_SIZE)
            except TimeoutError:
                _TIMEOUTS.log("closing msgpack client %s: %s", session.id, reason)
                await session.close(ErrorCode.TIMEOUT, reason)
                return
            if not data:
                return
            last_read = time.monotonic()
            decoder.receive_data(data)
            if not ticket.hold_partial(decoder.partial_bytes):
                await session.close(ErrorCode.UNAVAILABLE, _BUDGET_REASON)
                return
            # A client that is not reading its answers is not read either, but its auth deadline holds.
            waiting_for_auth = not session.client.authenticated and auth_deadline != math.inf
            try:
                async with asyncio.timeout_at(_loop_time(auth_deadline) if waiting_for_auth else None):
                    handled = 0
                    while (message := decoder.next_message()) is not None:
                        if session.closing:  # the rest of a flood is not even decoded
                            await session.wait_finished()
                            return
                        handled += 1
                        if handled % YIELD_EVERY == 0:
                            await asyncio.sleep(0)  # one read may hold thousands of requests: let others run
                        value, size = message
                        if isinstance(value, dict) and not all(isinstance(key, str) for key in value):
                            # Else a map packed with bin keys would read as one without an "id".
                            await session.reject(BIN_KEYS)
                            continue
                        await session.receive(value, size)
            except TimeoutError:
                await session.close(ErrorCode.TIMEOUT, AUTH_TIMEOUT_REASON.format(server.auth_timeout_s))
                return
            # Time spent waiting for a client to read its answers is not time it was idle.
            last_read = time.monotonic()
            if not decoder.partial_bytes:
                partial_since = math.inf
            elif partial_since == math.inf:
                partial_since = last_read


def _loop_time(monotonic_deadline: float) -> float:
    """`time.monotonic()` deadline to the event loop's clock."""
    return asyncio.get_running_loop().time() + monotonic_deadline - time.monotonic()
