"""CBOR (RFC 8949) for rosbridge's `compression: "cbor"`: messages out, and requests in binary frames.

roslib decodes a binary frame as one CBOR message; roslibpy never asks for CBOR (it cannot read
binary frames). Decoding refuses trailing bytes and anything that is not a map, and cbor2 caps the
nesting depth, so hostile input ends in `CborError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import cbor2


class CborError(ValueError):
    """A binary frame is not one CBOR map."""


def encode(message: Mapping[str, Any]) -> bytes:
    """One message as CBOR (floats stay 64-bit, as JSON numbers would read)."""
    encoded: bytes = cbor2.dumps(message)
    return encoded


def decode(data: bytes) -> dict[str, Any]:
    """One CBOR map from a whole binary frame; `CborError` for anything else."""
    try:
        value = cbor2.loads(data)
    except (cbor2.CBORError, ValueError, TypeError, OverflowError, RecursionError, MemoryError) as error:
        raise CborError(f"not valid CBOR: {error}") from None
    if not isinstance(value, dict):
        raise CborError(f"a CBOR request must be a map, got {type(value).__name__}")
    return value
