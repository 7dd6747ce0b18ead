"""Writing pre-encoded frames to a client's socket, with backpressure that never blocks the bus."""

from __future__ import annotations

import asyncio
import asyncio.selector_events
import contextlib
import socket
from collections.abc import Sequence
from typing import Any, Protocol

from gateway.errors import ErrorCode
from gateway.wire import Encoding

#: Bytes a client may have unsent in the kernel-side buffer of asyncio before it counts as backed up.
HIGH_WATER_BYTES = 64 * 1024
#: How often a backed-up WebSocket is checked for room (aiohttp offers no public drain for raw writes).
DRAIN_POLL_S = 0.005
#: Seconds a closing connection may take to send what it has buffered before it is aborted.
CLOSE_DRAIN_S = 1.0
#: Seconds a stream connection the gateway closes waits at most, after its goodbye and FIN, for the peer
#: to close its side (what the peer still sends meanwhile is read and dropped).
LINGER_S = 1.0
#: Seconds after which the lingering ends early when the peer sent nothing since it began: a peer that
#: is not sending cannot be reset by its own bytes, and an idle client must not hold the gateway's stop.
#: A peer that did send is waited for until it closes or `LINGER_S` is up, even across pauses.
LINGER_QUIET_S = 0.2


def close_or_abort(transport: asyncio.BaseTransport, drain_s: float = CLOSE_DRAIN_S) -> None:
    """Close `transport` after its buffered bytes go out, or abort it if they have not gone in `drain_s`.

    A peer that does not read would otherwise keep a closing socket (and its buffers) forever.
    """
    transport.close()
    if isinstance(transport, asyncio.WriteTransport) and transport.get_write_buffer_size():
        asyncio.get_running_loop().call_later(drain_s, transport.abort)


#: asyncio's plain TCP and Unix stream transport (private, so not in the type stubs).
_SELECTOR_SOCKET_TRANSPORT: type = getattr(asyncio.selector_events, "_SelectorSocketTransport", type(None))


def _selector_socket(transport: asyncio.BaseTransport) -> socket.socket | None:
    """The socket under one of asyncio's own selector transports (None for TLS, uvloop, pipes...)."""
    if not isinstance(transport, _SELECTOR_SOCKET_TRANSPORT):
        return None
    sock = getattr(transport, "_sock", None)  # where asyncio keeps it (3.8-3.14)
    return sock if isinstance(sock, socket.socket) else None


class Writer(Protocol):
    """What `write_each` writes to: a client connection that may refuse bytes when backed up."""

    def try_write(self, data: bytes) -> bool:
        """Write `data` now if the peer has room for all of it; False (nothing written) otherwise."""


#: One client of `write_each`: its writer, and where a `SocketTransport` over asyncio's own socket
#: transport has them, that transport (private attributes are read) and its socket; else None, None.
Target = tuple[Writer, Any, socket.socket | None]


def target_of(writer: Writer) -> Target:
    """`writer` as a `write_each` target (the direct path for a `SocketTransport` over a plain socket)."""
    if isinstance(writer, SocketTransport) and writer._direct is not None:
        return writer, writer._transport, writer._direct
    return writer, None, None


def write_each(targets: Sequence[Target], data: bytes) -> list[tuple[int, Exception | None]]:
    """`try_write(data)` on each target, as one loop; returns the (index, error) of those that took nothing.

    The fan-out's hot loop: the same bytes to every member of a group, once per event-loop
    iteration. A client whose asyncio transport is open with nothing unsent (the usual case) costs
    a socket `send` and no Python call, touching its transport and socket only: fewer objects than a
    bare server's `transport.write`, which matters as much as the calls, each client's objects being
    out of the CPU caches by the next round. This is asyncio's own write (3.8-3.14: `_buffer`,
    `_closing`, `_eof`); anything else (bytes unsent, closing, TLS) goes through `try_write`. A
    target that raises is returned with its error, and the others still get their bytes.
    """
    size = len(data)
    refused: list[tuple[int, Exception | None]] = []
    # The direct path of `SocketTransport.try_write`, written out here on purpose: a call per client
    # is what this loop saves.
    for index, (writer, transport, sock) in enumerate(targets):
        try:
            if sock is None or transport._buffer or transport._closing or transport._eof:
                if not writer.try_write(data):
                    refused.append((index, None))
                continue
            try:
                sent = sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                transport.write(data)  # asyncio meets the same error and ends the connection its usual way
                continue
            if sent < size:
                transport.write(memoryview(data)[sent:])  # the rest waits in asyncio's buffer, in order
        except Exception as error:  # one client's failure must not keep the others' bytes back
            refused.append((index, error))
    return refused


class SocketTransport:
    """Frames go out with one `write` per batch while the peer keeps up; otherwise the mailbox holds them."""

    encoding: Encoding

    def __init__(self, transport: asyncio.WriteTransport, send_buffer_bytes: int) -> None:
        self._transport = transport
        #: True once the gateway ended its side (FIN sent): nothing more may be written.
        self._ended = False
        self._direct = _selector_socket(transport)
        sock = transport.get_extra_info("socket")
        if send_buffer_bytes and sock is not None and sock.family != socket.AF_UNIX:
            # Linux autotunes TCP send buffers up to megabytes; a stalled client would hold them all.
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer_bytes)

    def abort(self) -> None:
        """Drop the connection at once, discarding whatever is unsent."""
        self._transport.abort()

    def room(self) -> int:
        """Bytes below the high-water mark of unsent data; negative when backed up or closing."""
        transport = self._transport
        if self._ended or transport.is_closing():
            return -1
        return HIGH_WATER_BYTES - transport.get_write_buffer_size()

    def write(self, data: bytes) -> None:
        """Write `data` now (one send system call when nothing is buffered); dropped once closing."""
        transport = self._transport
        if not (self._ended or transport.is_closing()):
            transport.write(data)

    def try_write(self, data: bytes) -> bool:
        """Write `data` now if it fits below the high-water mark, or whole when nothing is unsent; else False.

        The fan-out path: called once per client per event-loop iteration with bytes shared by many.
        A peer that has taken everything so far takes the round whatever its size (a loaded loop
        gathers the samples of many devices into one round, which may pass the mark): refusing it
        would move a client that keeps up to the mailbox, which coalesces what it could have sent.
        The unsent bytes are then at most the mark plus one round.
        While asyncio holds nothing unsent for this peer, the bytes go straight to the socket's
        `send` (asyncio's `write` would do the same, after 1-2 µs of checks); what the kernel does
        not take then goes to asyncio's buffer, in order, as `write` would put it.
        """
        transport = self._transport
        unsent = transport.get_write_buffer_size()
        if self._ended or transport.is_closing() or (unsent and unsent + len(data) > HIGH_WATER_BYTES):
            return False
        sock = self._direct
        if unsent or sock is None:
            transport.write(data)
            return True
        try:
            sent = sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            transport.write(data)  # asyncio meets the same error and ends the connection its usual way
            return True
        if sent < len(data):
            transport.write(memoryview(data)[sent:])
        return True

    async def send(self, frames: list[bytes]) -> None:
        """Write frames in order, then wait until the peer has taken most of them."""
        self._transport.write(b"".join(frames))
        await self.drained()

    async def drained(self) -> None:
        """Return once the unsent bytes are below the high-water mark; raise when the peer is gone."""
        transport = self._transport
        while transport.get_write_buffer_size() > HIGH_WATER_BYTES:
            if transport.is_closing():
                raise ConnectionResetError("the client's connection closed")
            await asyncio.sleep(DRAIN_POLL_S)


class StreamWriterTransport(SocketTransport):
    """A `SocketTransport` over an asyncio stream (the native msgpack and the TDM TCP listeners)."""

    def __init__(self, writer: asyncio.StreamWriter, send_buffer_bytes: int) -> None:
        transport = writer.transport
        assert isinstance(transport, asyncio.WriteTransport)
        super().__init__(transport, send_buffer_bytes)
        self._writer = writer

    async def close(self, code: ErrorCode, reason: str) -> None:
        """Close the socket, lingering first; abort it when what is buffered does not drain in `CLOSE_DRAIN_S`.

        Lingering: the gateway's side ends (FIN after the goodbye already written), then what the
        peer still sends is read and dropped until it closes too, for at most `LINGER_S` s (or
        `LINGER_QUIET_S` when it sends nothing meanwhile). Closing a socket with unread bytes makes the
        kernel reset the connection, and a reset can destroy the goodbye before the peer reads it:
        a client still sending when it is closed (a flood, a pipelined batch) would get
        "connection reset" instead of the reason.
        """
        await self._linger()
        self._writer.close()
        try:
            async with asyncio.timeout(CLOSE_DRAIN_S):
                await self._writer.wait_closed()
        except TimeoutError:
            self.abort()
        except OSError:  # ConnectionError included: the peer is gone, nothing left to close
            pass

    async def _linger(self) -> None:
        transport = self._writer.transport
        if self._ended or not isinstance(transport, asyncio.Transport) or transport.is_closing():
            return
        if not transport.can_write_eof():  # TLS cannot half-close
            return
        self._ended = True
        dropping = _DropUntilClosed(transport.get_protocol())
        transport.set_protocol(dropping)
        transport.resume_reading()  # the stream may have paused it with its buffer full
        transport.write_eof()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(LINGER_QUIET_S):
                await dropping.peer_closed.wait()
        if dropping.sent_since and not dropping.peer_closed.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(LINGER_S - LINGER_QUIET_S):
                    await dropping.peer_closed.wait()


class _DropUntilClosed(asyncio.Protocol):
    """Stands in for a stream's protocol while its connection lingers: drops what arrives, notes the peer's end.

    The stream's own protocol still learns of the connection's loss, so a reader waiting on it wakes.
    """

    def __init__(self, stream_protocol: asyncio.BaseProtocol) -> None:
        self._stream_protocol = stream_protocol
        self.peer_closed = asyncio.Event()
        #: True once the peer sent something after the lingering began.
        self.sent_since = False

    def data_received(self, data: bytes) -> None:
        """Drop it: the session is over."""
        self.sent_since = True

    def eof_received(self) -> bool:
        """The peer closed its side: keep the transport for the gateway's own close."""
        self.peer_closed.set()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        """Hand the loss to the stream's protocol (its reader and `wait_closed` wake)."""
        self.peer_closed.set()
        self._stream_protocol.connection_lost(exc)

    def pause_writing(self) -> None:
        """Flow control stays the stream's (its writer's `drain`)."""
        self._stream_protocol.pause_writing()

    def resume_writing(self) -> None:
        """Flow control stays the stream's."""
        self._stream_protocol.resume_writing()
