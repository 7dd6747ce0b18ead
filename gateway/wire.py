"""Encoding of client-protocol messages: JSON (orjson) for WebSocket, msgpack for the socket."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgpack
import orjson

Encoding = Literal["json", "msgpack"]
ENCODINGS: tuple[Encoding, ...] = ("json", "msgpack")


def encode(message: Mapping[str, Any], encoding: Encoding) -> bytes:
    """Serialize one protocol message (a map) for `encoding`."""
    if encoding == "json":
        return orjson.dumps(message)
    packed: bytes = msgpack.packb(message, use_bin_type=True)
    return packed
