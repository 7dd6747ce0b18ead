"""CBOR (RFC 8949) for rosbridge's `compression: "cbor"`: messages out, and requests in binary frames.

roslib decodes a binary frame as one CBOR message; roslibpy never asks for CBOR (it cannot read
binary frames). Decoding refuses trailing bytes and anything that is not a map, and cbor2 caps the
nesting depth, so hostile input ends in `CborError`. Two CBOR extensions are refused because a few
bytes of them cost hours: value sharing (tags 28 and 29), which builds cycles and vectors that hold
one vector twice at every level (300 bytes: 2**40 elements to walk or hash), and map keys other than
strings (an array key is hashed whole, shared parts again each time).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

import cbor2


class CborError(ValueError):
    """A binary frame is not one CBOR map."""


def encode(message: Mapping[str, Any]) -> bytes:
    """One message as CBOR (floats stay 64-bit, as JSON numbers would read)."""
    encoded: bytes = cbor2.dumps(message)
    return encoded


class _SharedValue(Exception):
    """Raised by cbor2 for tags 28 and 29; it names this one as the cause of its error."""


def _refuse_shared(*_: object) -> NoReturn:
    raise _SharedValue("shared values (CBOR tags 28 and 29) are not accepted")


_NO_SHARING = {28: _refuse_shared, 29: _refuse_shared}


def decode(data: bytes) -> dict[str, Any]:
    """One CBOR map from a whole binary frame; `CborError` for anything else."""
    try:
        value = cbor2.loads(data, semantic_decoders=_NO_SHARING, strict_hashable_types=True)
    except (cbor2.CBORError, ValueError, TypeError, OverflowError, RecursionError, MemoryError) as error:
        reason = error.__cause__ if isinstance(error.__cause__, _SharedValue) else error
        raise CborError(f"not valid CBOR: {reason}") from None
    if not isinstance(value, dict):
        raise CborError(f"a CBOR request must be a map, got {type(value).__name__}")
    return value
