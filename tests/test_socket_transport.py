"""`SocketTransport.try_write` and `write_each`, the fan-out write: straight to the socket while asyncio holds nothing.

Real sockets throughout: a TCP connection on 127.0.0.1 (asyncio's selector transport, the direct
path), a TLS one (no direct path: asyncio's `write`), and a peer that stops reading so that the
kernel takes only part of a write. What the peer reads must be every accepted byte, in order.
And `StreamWriterTransport.close`'s lingering close, with a peer that goes on sending.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import AsyncIterator

import pytest
import trustme

from gateway.errors import ErrorCode
from gateway.servers.socket_transport import (
    HIGH_WATER_BYTES,
    LINGER_QUIET_S,
    LINGER_S,
    SocketTransport,
    StreamWriterTransport,
    target_of,
    write_each,
)


@contextlib.asynccontextmanager
async def connection(small_buffers: bool = False) -> AsyncIterator[tuple[SocketTransport, socket.socket]]:
    """Our transport on an accepted TCP connection, and the peer's blocking socket (the test reads it)."""
    listener = socket.create_server(("127.0.0.1", 0))
    peer = socket.create_connection(listener.getsockname())
    ours, _ = listener.accept()
    listener.close()
    if small_buffers:
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    _, writer = await asyncio.open_connection(sock=ours)
    transport = SocketTransport(writer.transport, 4096 if small_buffers else 0)
    try:
        yield transport, peer
    finally:
        writer.transport.abort()
        peer.close()


async def read_exactly(peer: socket.socket, size: int) -> bytes:
    """`size` bytes from the blocking `peer`, read in a thread so the event loop keeps sending."""

    def read() -> bytes:
        peer.settimeout(5.0)
        chunks = bytearray()
        while len(chunks) < size:
            chunk = peer.recv(size - len(chunks))
            assert chunk, f"the connection ended after {len(chunks)} of {size} bytes"
            chunks += chunk
        return bytes(chunks)

    return await asyncio.to_thread(read)


def pattern(index: int, size: int) -> bytes:
    """`size` bytes that tell batch `index` and every offset in it apart."""
    return bytes((index * 31 + offset * 7) % 251 for offset in range(size))


async def test_the_direct_path_sends_without_asyncio_and_keeps_nothing_back() -> None:
    async with connection() as (transport, peer):
        assert transport._direct is not None  # a selector socket transport: the direct path is on
        batches = [pattern(index, 300 + index) for index in range(50)]
        for batch in batches:
            assert transport.try_write(batch)
        assert transport._transport.get_write_buffer_size() == 0
        assert await read_exactly(peer, sum(map(len, batches))) == b"".join(batches)


async def test_what_the_kernel_does_not_take_goes_to_asyncio_in_order_then_the_peer_gets_it_all() -> None:
    async with connection(small_buffers=True) as (transport, peer):
        accepted: list[bytes] = []
        index = 0
        # The peer reads nothing yet: writes go through until the kernel's buffers and then
        # asyncio's hold the high-water mark.
        while True:
            batch = pattern(index, 7_000)
            if not transport.try_write(batch):
                break
            accepted.append(batch)
            index += 1
        unsent = transport._transport.get_write_buffer_size()
        assert 0 < unsent <= HIGH_WATER_BYTES  # a partial send left the rest to asyncio, and no more
        assert transport.room() < len(batch)
        assert await read_exactly(peer, sum(map(len, accepted))) == b"".join(accepted)
        await asyncio.sleep(0.05)  # the writer drained: the direct path is back
        assert transport._transport.get_write_buffer_size() == 0
        assert transport.try_write(b"after")
        assert await read_exactly(peer, 5) == b"after"


async def test_a_batch_over_the_high_water_mark_goes_whole_when_nothing_is_unsent_and_nothing_follows_it() -> None:
    async with connection(small_buffers=True) as (transport, peer):
        big = pattern(1, 3 * HIGH_WATER_BYTES)
        assert transport.try_write(big)  # a peer that took everything so far takes a whole round
        assert transport._transport.get_write_buffer_size() > 0  # the kernel could not take it all
        assert not transport.try_write(b"x")  # behind now: nothing more until it has drained
        assert await read_exactly(peer, len(big)) == big
        await asyncio.sleep(0.05)
        assert transport._transport.get_write_buffer_size() == 0
        assert transport.try_write(b"ok")
        assert await read_exactly(peer, 2) == b"ok"


async def test_a_closing_or_vanished_peer_is_refused_or_reported_by_asyncio_never_raised() -> None:
    async with connection() as (transport, peer):
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        peer.close()  # a reset: the next send fails with ECONNRESET or EPIPE
        await asyncio.sleep(0.05)
        for _ in range(3):
            transport.try_write(b"into the void")  # asyncio takes the error and closes the transport
            await asyncio.sleep(0.01)
        assert transport._transport.is_closing()
        assert not transport.try_write(b"no more")


async def test_tls_has_no_direct_path_and_still_delivers_in_order() -> None:
    authority = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    authority.configure_trust(client_context)
    accepted: asyncio.Future[SocketTransport] = asyncio.get_running_loop().create_future()

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result(SocketTransport(writer.transport, 0))
        await reader.read()

    server = await asyncio.start_server(on_connection, "127.0.0.1", 0, ssl=server_context)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context)
    try:
        transport = await asyncio.wait_for(accepted, 5.0)
        assert transport._direct is None
        batches = [pattern(index, 1_000) for index in range(20)]
        for batch in batches:
            assert transport.try_write(batch)
        received = await asyncio.wait_for(reader.readexactly(sum(map(len, batches))), 5.0)
        assert received == b"".join(batches)
    finally:
        writer.close()
        server.close()
        await server.wait_closed()


def _read_then_keep_sending(peer: socket.socket, then: str) -> bytes:
    """What the gateway sent until its FIN; then the peer closes ("close"), does nothing ("quiet"), or
    sends once and stays ("sent").
    """
    peer.settimeout(5.0)
    said = bytearray()
    while chunk := peer.recv(65536):
        said += chunk
    if then == "close":
        peer.sendall(b"late bytes" * 1000)  # still sending after the gateway's FIN
        peer.close()
    elif then == "sent":
        peer.sendall(b"late bytes" * 1000)
    return bytes(said)


@pytest.mark.parametrize("then", ["close", "quiet", "sent"])
async def test_a_stream_close_lingers_while_the_peer_sends_and_no_longer_than_linger_s(then: str) -> None:
    """The goodbye, a FIN, then the peer's late bytes are dropped until it closes or `LINGER_S` is up.

    A peer that sends nothing after the FIN is waited for `LINGER_QUIET_S` only.
    """
    listener = socket.create_server(("127.0.0.1", 0))
    peer = socket.create_connection(listener.getsockname())
    ours, _ = listener.accept()
    listener.close()
    reader, writer = await asyncio.open_connection(sock=ours)
    transport = StreamWriterTransport(writer, 0)
    reading = asyncio.create_task(reader.read(65536))  # the listener's read loop, waiting
    await asyncio.sleep(0)
    transport.write(b"goodbye")
    loop = asyncio.get_running_loop()
    started = loop.time()
    closing = asyncio.create_task(transport.close(ErrorCode.GOING_AWAY, "test"))
    try:
        peer_side = asyncio.create_task(asyncio.to_thread(_read_then_keep_sending, peer, then))
        await asyncio.wait_for(closing, 5)
        took = loop.time() - started
        assert await asyncio.wait_for(peer_side, 10) == b"goodbye"
        if then == "sent":
            assert LINGER_S * 0.9 <= took < LINGER_S + 0.5, took
        elif then == "quiet":
            assert LINGER_QUIET_S * 0.9 <= took < LINGER_S * 0.9, took
        else:
            assert took < LINGER_S * 0.9, took
        assert transport.room() < 0
        assert writer.transport.is_closing()
        # The listener's read loop, waiting all along, wakes without an error (the late bytes went nowhere else).
        assert isinstance(await asyncio.wait_for(reading, 5), bytes)
    finally:
        peer.close()


@contextlib.asynccontextmanager
async def connections(count: int) -> AsyncIterator[list[tuple[SocketTransport, socket.socket]]]:
    async with contextlib.AsyncExitStack() as stack:
        yield [await stack.enter_async_context(connection()) for _ in range(count)]


async def test_write_each_sends_to_every_client_directly_and_in_order() -> None:
    async with connections(5) as pairs:
        targets = [target_of(transport) for transport, _ in pairs]
        assert all(sock is not None for _, _, sock in targets)  # the direct path
        rounds = [pattern(index, 200 + index) for index in range(30)]
        for data in rounds:
            assert write_each(targets, data) == []
        for transport, peer in pairs:
            assert transport._transport.get_write_buffer_size() == 0
            assert await read_exactly(peer, sum(map(len, rounds))) == b"".join(rounds)


async def test_write_each_puts_its_bytes_after_what_asyncio_holds_and_refuses_past_the_mark() -> None:
    async with connection(small_buffers=True) as (transport, peer):
        accepted: list[bytes] = []
        while transport._transport.get_write_buffer_size() == 0:  # the peer does not read yet
            accepted.append(pattern(len(accepted), 7_000))
            assert transport.try_write(accepted[-1])
        targets = [target_of(transport)]
        while True:
            data = pattern(len(accepted), 1_000)
            refused = write_each(targets, data)
            if refused:
                break
            accepted.append(data)  # behind asyncio's unsent bytes, never ahead of them
        assert refused == [(0, None)]
        assert await read_exactly(peer, sum(map(len, accepted))) == b"".join(accepted)


async def test_write_each_sends_nothing_to_a_transport_that_began_closing() -> None:
    async with connections(2) as [(closing, closing_peer), (other, other_peer)]:
        closing._transport.close()  # nothing unsent: asyncio closes the socket on the next iteration
        assert write_each([target_of(closing), target_of(other)], b"late") == [(0, None)]
        assert await read_exactly(other_peer, 4) == b"late"
        await asyncio.sleep(0.05)
        closing_peer.settimeout(5.0)
        assert closing_peer.recv(100) == b""  # the end of the stream, and nothing written after close


class Failing:
    """A writer whose connection fails in `try_write`."""

    def try_write(self, data: bytes) -> bool:
        raise RuntimeError("broken")


class Taking:
    """A writer with no socket of its own (not a `SocketTransport`): `write_each` calls its `try_write`."""

    def __init__(self) -> None:
        self.taken: list[bytes] = []

    def try_write(self, data: bytes) -> bool:
        self.taken.append(data)
        return True


async def test_write_each_reports_a_failing_writer_and_still_writes_to_the_others() -> None:
    async with connection() as (transport, peer):
        taking = Taking()
        refused = write_each([target_of(Failing()), target_of(taking), target_of(transport)], b"round")
        assert [index for index, _ in refused] == [0]
        assert isinstance(refused[0][1], RuntimeError)
        assert taking.taken == [b"round"]
        assert await read_exactly(peer, 5) == b"round"


async def test_write_each_to_a_vanished_peer_leaves_it_to_asyncio_and_never_raises() -> None:
    async with connections(2) as [(gone, gone_peer), (other, other_peer)]:
        gone_peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        gone_peer.close()  # a reset: the next send fails
        await asyncio.sleep(0.05)
        targets = [target_of(gone), target_of(other)]
        for index in range(3):
            write_each(targets, pattern(index, 100))
            await asyncio.sleep(0.01)
        assert gone._transport.is_closing()
        assert write_each(targets, b"end") == [(0, None)]
        assert await read_exactly(other_peer, 303) == b"".join(pattern(index, 100) for index in range(3)) + b"end"
