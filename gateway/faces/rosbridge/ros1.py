"""ROS 1 binary serialization of our messages, for rosbridge's `compression: "cbor-raw"`.

Lichtblick's and Foxglove's Rosbridge sources subscribe with `cbor-raw` and read each message's
`bytes` with a ROS 1 reader built from the definition `rosapi/topics_and_raw_types` gave
(`rosapi.full_text`). This writes exactly that layout, field by field in definition order:
integers, floats and bools little-endian at their size, a string as u32 length + UTF-8, a nested
message inline, a variable-length array as u32 count + items, a fixed-length one as its items.
An array of arrays (which ROS cannot express) is written flattened, as its definition says
(`float32[] leds`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Any

from gateway.messages import info_of
from gateway.messages.schema import Array, Bool, Float, Int, Nested, Spec, Str

Writer = Callable[[bytearray, Any], None]

_INT_FORMATS = {(8, True): "b", (8, False): "B", (16, True): "h", (16, False): "H"}
_INT_FORMATS |= {(32, True): "i", (32, False): "I", (64, True): "q", (64, False): "Q"}
_U32 = struct.Struct("<I")
_cache: dict[type[Any], Writer] = {}


def _flatten(value: Any) -> Iterator[Any]:
    for item in value:
        if isinstance(item, list | tuple):
            yield from _flatten(item)
        else:
            yield item


def _scalar(fmt: str) -> Writer:
    packer = struct.Struct("<" + fmt)

    def write(out: bytearray, value: Any) -> None:
        out += packer.pack(value)

    return write


def _write_string(out: bytearray, value: Any) -> None:
    data = str(value).encode()
    out += _U32.pack(len(data))
    out += data


def _writer(spec: Spec) -> Writer:
    """The writer of one field spec."""
    if isinstance(spec, Int):
        return _scalar(_INT_FORMATS[(spec.bits, spec.signed)])
    if isinstance(spec, Float):
        return _scalar("f" if spec.bits == 32 else "d")
    if isinstance(spec, Bool):
        return _scalar("?")
    if isinstance(spec, Str):
        return _write_string
    if isinstance(spec, Nested):
        return message_writer(spec.cls)
    if isinstance(spec, Array):
        nested = isinstance(spec.item, Array)
        item = spec.item
        while isinstance(item, Array):
            item = item.item
        write_item = _writer(item)
        # The definition gives a length only to a fixed array of scalars or messages (see rosapi).
        counted = nested or spec.length is None

        def write_array(out: bytearray, value: Any) -> None:
            items = list(_flatten(value)) if nested else value
            if counted:
                out += _U32.pack(len(items))
            for element in items:
                write_item(out, element)

        return write_array
    raise TypeError(f"no ROS 1 layout for field spec {spec!r}")


def message_writer(cls: type[Any]) -> Writer:
    """The writer of a message class's plain form (a dict), made once per class."""
    known = _cache.get(cls)
    if known is not None:
        return known
    fields: list[tuple[str, Writer]] = []

    def write(out: bytearray, value: Any) -> None:
        for name, write_field in fields:
            write_field(out, value[name])

    _cache[cls] = write  # before the fields: a type may (indirectly) hold itself
    fields.extend((name, _writer(spec)) for name, spec in info_of(cls).fields)
    return write


def serialize(cls: type[Any], data: dict[str, Any]) -> bytes:
    """The ROS 1 bytes of `data`, a message of `cls` in its plain form."""
    out = bytearray()
    message_writer(cls)(out, data)
    return bytes(out)
