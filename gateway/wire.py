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


def websocket_text_frame(payload: bytes) -> bytes:
    """An unmasked, unfragmented text frame, as a server sends it (RFC 6455 §5.2)."""
    length = len(payload)
    if length < 126:
        header = bytes((_WS_FIN_TEXT, length))
    elif length < 1 << 16:
        header = struct.pack("!BBH", _WS_FIN_TEXT, 126, length)
    else:
        header = struct.pack("!BBQ", _WS_FIN_TEXT, 127, length)
    return header + payload


def encode(message: Mapping[str, Any], encoding: Encoding) -> bytes:
    """One protocol message (a map) as the bytes to write on a socket of `encoding`."""
    if encoding == "json":
        return websocket_text_frame(orjson.dumps(message))
    packed: bytes = msgpack.packb(message, use_bin_type=True)
    return packed
