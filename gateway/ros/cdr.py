"""CDR (XCDR1, little endian) encoding and decoding of ROS 2 messages, as rmw and rosbag2 write them.

A message is the 4-byte encapsulation header `00 01 00 00` (CDR_LE, options 0) and then its fields
in definition order: a primitive aligned to its size (1, 2, 4 or 8 bytes, counted from the end of
the header), a string as an aligned u32 length (bytes + 1), the UTF-8 bytes and a NUL, a nested
message inline (its fields align themselves), a fixed array as its items, a sequence as an aligned
u32 count and its items (the first item aligned to its size when there is one). A message without
fields is one byte, 0 (`structure_needs_at_least_one_member`).

`encoder(msg)` and `decoder(msg)` (a `gateway.ros.types.MsgType`) are built once per type. The
encoder takes the plain dict the native face sends (or the message dataclass itself); the decoder
gives that plain dict back (arrays as lists, nested messages as dicts). Both raise `CdrError` with
the type and field on anything they cannot do: for hostile bytes (short, a count beyond the bytes
left, a string without its NUL or not UTF-8, a bool other than 0 or 1, another encapsulation,
trailing bytes beyond 3 bytes of padding) a clear error, never a crash, and never an allocation
larger than the input.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from gateway.ros.types import FieldType, MsgType

#: The encapsulation header of little-endian plain CDR (XCDR1), options 0.
HEADER = b"\x00\x01\x00\x00"
#: Padding a writer may leave after the last field (Fast DDS pads payloads to 4 bytes).
_MAX_TRAILING = 3

Writer = Callable[[bytearray, Any], None]
Reader = Callable[[bytes, int], tuple[Any, int]]


class CdrError(ValueError):
    """Bytes that are no CDR message of the type, or a value that cannot be encoded as it."""


#: Primitive -> (struct code, size in bytes).
_PRIMITIVES = {
    "bool": ("?", 1), "int8": ("b", 1), "uint8": ("B", 1), "int16": ("h", 2), "uint16": ("H", 2),
    "int32": ("i", 4), "uint32": ("I", 4), "int64": ("q", 8), "uint64": ("Q", 8),
    "float32": ("f", 4), "float64": ("d", 8),
}  # fmt: skip
_U32 = struct.Struct("<I")


def _pad(out: bytearray, size: int) -> None:
    """Align the next write to `size` bytes after the header."""
    padding = (4 - len(out)) % size
    if padding:
        out += b"\x00" * padding


# -- encoding -------------------------------------------------------------------------------------


def _flatten(value: Any, inner: tuple[int, ...], path: str) -> list[Any]:
    """The rows of an array of arrays one after another, each row checked against its fixed length."""
    if not inner:
        return list(value)
    flat: list[Any] = []
    for row in value:
        if len(row) != inner[0]:
            raise CdrError(f"{path}: a row holds {len(row)} items, not {inner[0]}")
        flat.extend(_flatten(row, inner[1:], path))
    return flat


def _scalar_writer(code: str, size: int) -> Writer:
    packer = struct.Struct("<" + code)
    pack = packer.pack

    def write(out: bytearray, value: Any) -> None:
        padding = (4 - len(out)) % size
        if padding:
            out += b"\x00" * padding
        out += pack(value)

    return write


def _write_string(out: bytearray, value: Any) -> None:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    data = value.encode()
    padding = -len(out) % 4
    if padding:
        out += b"\x00" * padding
    out += _U32.pack(len(data) + 1)
    out += data
    out += b"\x00"


def _items_writer(field_type: FieldType, name: str) -> Callable[[bytearray, list[Any]], None]:
    """Writes a list of items of the field's base type (no count)."""
    if field_type.base in _PRIMITIVES:
        code, size = _PRIMITIVES[field_type.base]

        def write_primitives(out: bytearray, items: list[Any]) -> None:
            if items:
                _pad(out, size)
                out += struct.pack(f"<{len(items)}{code}", *items)

        return write_primitives
    write_one = _single_writer(FieldType(field_type.base, nested=field_type.nested), name)

    def write_each(out: bytearray, items: list[Any]) -> None:
        for item in items:
            write_one(out, item)

    return write_each


def _single_writer(field_type: FieldType, name: str) -> Writer:
    if field_type.nested is not None:
        return encoder_body(field_type.nested)
    if field_type.base == "string":
        return _write_string
    return _scalar_writer(*_PRIMITIVES[field_type.base])


def _field_writer(field_type: FieldType, name: str) -> Writer:
    """The writer of one field's value (see the module's layout)."""
    if not field_type.array:
        return _single_writer(field_type, name)
    write_items = _items_writer(field_type, name)
    if field_type.array == "fixed":
        length = field_type.length

        def write_fixed(out: bytearray, value: Any) -> None:
            if len(value) != length:
                raise ValueError(f"expected {length} items, got {len(value)}")
            write_items(out, list(value))

        return write_fixed
    inner = field_type.inner

    def write_sequence(out: bytearray, value: Any) -> None:
        items = _flatten(value, inner, name) if inner else list(value)
        padding = -len(out) % 4
        if padding:
            out += b"\x00" * padding
        out += _U32.pack(len(items))
        write_items(out, items)

    return write_sequence


_BODIES: dict[str, Writer] = {}


def encoder_body(msg: MsgType) -> Writer:
    """The writer of `msg`'s fields (no header) from its plain dict or its dataclass, made once per type."""
    known = _BODIES.get(msg.name)
    if known is not None:
        return known
    fields: list[tuple[str, Writer]] = []
    if msg.empty:

        def write(out: bytearray, value: Any) -> None:
            out += b"\x00"

    else:

        def write(out: bytearray, value: Any) -> None:
            name = ""
            try:
                if type(value) is dict:
                    for name, write_field in fields:
                        write_field(out, value[name])
                else:
                    for name, write_field in fields:
                        write_field(out, getattr(value, name))
            except CdrError:
                raise
            except (KeyError, AttributeError):
                raise CdrError(f"{msg.name}: the value has no field {name!r}") from None
            except (TypeError, ValueError, OverflowError, struct.error) as error:
                raise CdrError(f"{msg.name}.{name}: cannot encode: {error}") from None

    _BODIES[msg.name] = write
    fields.extend((field.key, _field_writer(field.type, f"{msg.name}.{field.name}")) for field in msg.fields)
    return write


def encoder(msg: MsgType) -> Callable[[Any], bytes]:
    """The CDR encoder of `msg`: plain dict (or dataclass) in, header and body out; raises `CdrError`."""
    body = encoder_body(msg)

    def encode(value: Any) -> bytes:
        out = bytearray(HEADER)
        body(out, value)
        return bytes(out)

    return encode


# -- decoding -------------------------------------------------------------------------------------


def _align(position: int, size: int) -> int:
    return position + (4 - position) % size


def _scalar_reader(base: str) -> Reader:
    code, size = _PRIMITIVES[base]
    unpack = struct.Struct("<" + code).unpack_from
    if base == "bool":

        def read_bool(data: bytes, position: int) -> tuple[Any, int]:
            position = _align(position, size)
            (byte,) = struct.unpack_from("<B", data, position)
            if byte > 1:
                raise CdrError(f"a bool holds {byte} (0 or 1 expected)")
            return byte == 1, position + 1

        return read_bool

    def read(data: bytes, position: int) -> tuple[Any, int]:
        position = _align(position, size)
        return unpack(data, position)[0], position + size

    return read


def _read_string(data: bytes, position: int) -> tuple[str, int]:
    position = _align(position, 4)
    (length,) = _U32.unpack_from(data, position)
    position += 4
    end = position + length
    if length == 0 or end > len(data):
        raise CdrError(f"a string of {length} bytes at byte {position} (of {len(data)})")
    if data[end - 1] != 0:
        raise CdrError(f"a string at byte {position} does not end with NUL")
    try:
        text = data[position : end - 1].decode()
    except UnicodeDecodeError as error:
        raise CdrError(f"a string at byte {position} is not UTF-8: {error}") from None
    return text, end


def _min_size(field_type: FieldType) -> int:
    """A lower bound of one item's size in bytes, to refuse a count the remaining bytes cannot hold."""
    if field_type.base in _PRIMITIVES:
        return _PRIMITIVES[field_type.base][1]
    if field_type.base == "string":
        return 5
    return 1


def _items_reader(field_type: FieldType) -> Callable[[bytes, int, int], tuple[list[Any], int]]:
    """Reads `count` items of the field's base type."""
    if field_type.base in _PRIMITIVES and field_type.base != "bool":
        code, size = _PRIMITIVES[field_type.base]

        def read_primitives(data: bytes, position: int, count: int) -> tuple[list[Any], int]:
            if not count:
                return [], position
            position = _align(position, size)
            return list(struct.unpack_from(f"<{count}{code}", data, position)), position + count * size

        return read_primitives
    if field_type.base == "bool":

        def read_bools(data: bytes, position: int, count: int) -> tuple[list[Any], int]:
            raw = data[position : position + count]
            if len(raw) != count:
                raise CdrError(f"{count} bools at byte {position} run past the end ({len(data)} bytes)")
            if raw.strip(b"\x00\x01"):
                raise CdrError(f"a bool at byte {position} holds a byte other than 0 or 1")
            return [byte == 1 for byte in raw], position + count

        return read_bools
    read_one = _single_reader(FieldType(field_type.base, nested=field_type.nested))

    def read_each(data: bytes, position: int, count: int) -> tuple[list[Any], int]:
        items = []
        for _ in range(count):
            item, position = read_one(data, position)
            items.append(item)
        return items, position

    return read_each


def _single_reader(field_type: FieldType) -> Reader:
    if field_type.nested is not None:
        return decoder_body(field_type.nested)
    if field_type.base == "string":
        return _read_string
    return _scalar_reader(field_type.base)


def _fold(items: list[Any], inner: tuple[int, ...]) -> list[Any]:
    """A flat list folded back into rows of the fixed lengths `inner` (outermost first)."""
    for length in reversed(inner):
        if len(items) % length:
            raise CdrError(f"{len(items)} items do not make rows of {length}")
        items = [items[start : start + length] for start in range(0, len(items), length)]
    return items


def _field_reader(field_type: FieldType) -> Reader:
    if not field_type.array:
        return _single_reader(field_type)
    read_items = _items_reader(field_type)
    if field_type.array == "fixed":
        length = field_type.length

        def read_fixed(data: bytes, position: int) -> tuple[Any, int]:
            return read_items(data, position, length)

        return read_fixed
    inner = field_type.inner
    item_size = _min_size(field_type)

    def read_sequence(data: bytes, position: int) -> tuple[Any, int]:
        position = _align(position, 4)
        (count,) = _U32.unpack_from(data, position)
        position += 4
        if count * item_size > len(data) - position:
            raise CdrError(f"a count of {count} at byte {position - 4} exceeds the {len(data) - position} bytes left")
        items, position = read_items(data, position, count)
        return (_fold(items, inner) if inner else items), position

    return read_sequence


_READERS: dict[str, Reader] = {}


def decoder_body(msg: MsgType) -> Reader:
    """The reader of `msg`'s fields at a position (no header) into its plain dict, made once per type."""
    known = _READERS.get(msg.name)
    if known is not None:
        return known
    fields: list[tuple[str, Reader]] = []
    if msg.empty:

        def read(data: bytes, position: int) -> tuple[Any, int]:
            if position >= len(data):
                raise CdrError(f"{msg.name}: no byte left for its one member")
            return {}, position + 1

    else:

        def read(data: bytes, position: int) -> tuple[Any, int]:
            value = {}
            name = ""
            try:
                for name, read_field in fields:
                    value[name], position = read_field(data, position)
            except CdrError as error:
                raise CdrError(f"{msg.name}.{name}: {error}") from None
            except struct.error:
                raise CdrError(f"{msg.name}.{name}: the bytes end at {len(data)}") from None
            return value, position

    _READERS[msg.name] = read
    fields.extend((field.key, _field_reader(field.type)) for field in msg.fields)
    return read


def decoder(msg: MsgType) -> Callable[[bytes], dict[str, Any]]:
    """The CDR decoder of `msg`: header and body in, the plain dict out; raises `CdrError`."""
    body = decoder_body(msg)

    def decode(data: bytes) -> dict[str, Any]:
        data = bytes(data)
        if len(data) < 4:
            raise CdrError(f"{msg.name}: {len(data)} bytes, shorter than the CDR header")
        if data[:2] != HEADER[:2]:
            raise CdrError(f"{msg.name}: encapsulation {data[:2].hex()} is not little-endian CDR (0001)")
        value, position = body(data, 4)
        if len(data) - position > _MAX_TRAILING:
            raise CdrError(f"{msg.name}: {len(data) - position} bytes after the message")
        result: dict[str, Any] = value
        return result

    return decode
