"""The bytes that go on a client's socket: each protocol message encoded once, ready to write.

"json" is a JSON text message in an RFC 6455 frame (the /ws endpoint); "msgpack" is a bare msgpack
map (the msgpack socket). Framing the WebSocket message here, once per sample, lets the same bytes go
to every client with one `transport.write` each, as a bare broadcast server would.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, Literal

import msgpack
import orjson

Encoding = Literal["json", "msgpack"]
ENCODINGS: tuple[Encoding, ...] = ("json", "msgpack")

_WS_FIN_TEXT = 0x81
_WS_FIN_BINARY = 0x82


def _websocket_frame(first_byte: int, payload: bytes) -> bytes:
    length = len(payload)
    if length < 126:
        header = bytes((first_byte, length))
    elif length < 1 << 16:
        header = struct.pack("!BBH", first_byte, 126, length)
    else:
        header = struct.pack("!BBQ", first_byte, 127, length)
    return header + payload


def websocket_text_frame(payload: bytes) -> bytes:
    """An unmasked, unfragmented text frame, as a server sends it (RFC 6455 §5.2)."""
    return _websocket_frame(_WS_FIN_TEXT, payload)


def websocket_binary_frame(payload: bytes) -> bytes:
    """An unmasked, unfragmented binary frame, as a server sends it (RFC 6455 §5.2)."""
    return _websocket_frame(_WS_FIN_BINARY, payload)


def encode(message: Mapping[str, Any], encoding: Encoding) -> bytes:
    """One protocol message (a map) as the bytes to write on a socket of `encoding`."""
    if encoding == "json":
        return websocket_text_frame(orjson.dumps(message))
    packed: bytes = msgpack.packb(message, use_bin_type=True)
    return packed
