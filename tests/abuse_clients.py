"""Hostile and clumsy clients for the abuse tests and bench/soak.py: raw bytes on every transport."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import socket
from typing import Any

import msgpack

from tests.harness import RunningGateway, TransportName

#: Opcodes of RFC 6455 section 5.2.
WS_TEXT, WS_BINARY, WS_CLOSE = 0x1, 0x2, 0x8


def ws_frame(payload: bytes, opcode: int = WS_TEXT, fin: bool = True, length: int | None = None) -> bytes:
    """One masked client frame; `length` may announce more payload than `payload` holds."""
    size = len(payload) if length is None else length
    head = bytes([(0x80 if fin else 0) | opcode])
    if size < 126:
        head += bytes([0x80 | size])
    elif size < 1 << 16:
        head += bytes([0x80 | 126]) + size.to_bytes(2, "big")
    else:
        head += bytes([0x80 | 127]) + size.to_bytes(8, "big")
    mask = os.urandom(4)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def ws_frame_header(length: int, opcode: int = WS_TEXT, fin: bool = True) -> bytes:
    """A frame header with a zero mask, so the payload can follow unmasked as it is."""
    head = bytes([(0x80 if fin else 0) | opcode])
    if length < 126:
        return head + bytes([0x80 | length]) + b"\0\0\0\0"
    if length < 1 << 16:
        return head + bytes([0x80 | 126]) + length.to_bytes(2, "big") + b"\0\0\0\0"
    return head + bytes([0x80 | 127]) + length.to_bytes(8, "big") + b"\0\0\0\0"


async def open_raw(
    gateway: RunningGateway,
    transport: TransportName,
    receive_buffer: int | None = None,
    source: str | None = None,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connected stream: on "ws" after the HTTP upgrade (the 101 response read), otherwise the raw socket."""
    if transport == "unix":
        assert gateway.unix_socket is not None
        return await asyncio.open_unix_connection(gateway.unix_socket)
    port = gateway.http_port if transport == "ws" else gateway.msgpack_port
    assert port is not None
    sock = socket.socket()
    if receive_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    if source is not None:
        sock.bind((source, 0))
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock)
    if transport == "ws":
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            (
                f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        response = await reader.readuntil(b"\r\n\r\n")
        if not response.startswith(b"HTTP/1.1 101"):
            with contextlib.suppress(TimeoutError, ConnectionError):
                response += await read_until_closed(reader, timeout=2.0)
            writer.close()
            raise ConnectionRefusedError(response.decode(errors="replace").strip())
    return reader, writer


async def read_until_closed(reader: asyncio.StreamReader, timeout: float) -> bytes:
    """Everything the gateway sends until it closes the connection (TimeoutError if it does not)."""
    chunks = []
    async with asyncio.timeout(timeout):
        with contextlib.suppress(ConnectionResetError):  # an abort after the last bytes is a close too
            while data := await reader.read(65536):
                chunks.append(data)
    return b"".join(chunks)


def msgpack_messages(data: bytes) -> list[Any]:
    """The msgpack values in `data` (a trailing partial value is ignored)."""
    unpacker = msgpack.Unpacker(raw=False)
    unpacker.feed(data)
    return list(unpacker)


def ws_server_frames(data: bytes) -> list[tuple[int, bytes]]:
    """(opcode, payload) of the unmasked server frames in `data`."""
    frames = []
    index = 0
    while index + 2 <= len(data):
        opcode, length = data[index] & 0x0F, data[index + 1] & 0x7F
        index += 2
        if length == 126:
            length = int.from_bytes(data[index : index + 2], "big")
            index += 2
        elif length == 127:
            length = int.from_bytes(data[index : index + 8], "big")
            index += 8
        if index + length > len(data):
            break
        frames.append((opcode, data[index : index + length]))
        index += length
    return frames


def close_of(transport: TransportName, data: bytes) -> dict[str, Any] | None:
    """The gateway's `close` message in what it sent, on any transport."""
    if transport == "ws":
        messages = [json.loads(p) for op, p in ws_server_frames(data) if op == WS_TEXT]
    else:
        messages = msgpack_messages(data)
    return next((m for m in messages if isinstance(m, dict) and m.get("op") == "close"), None)


def ws_close_code(data: bytes) -> int | None:
    """The status code of the gateway's WebSocket close frame, if it sent one."""
    for opcode, payload in ws_server_frames(data):
        if opcode == WS_CLOSE and len(payload) >= 2:
            return int.from_bytes(payload[:2], "big")
    return None
