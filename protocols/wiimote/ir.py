"""The IR camera: object formats (basic, extended, full) and the register initialisation sequence (spec §3, §5).

Positions are camera pixels (x 0..1023, y 0..767); `size` is the 4-bit blob size (extended and full
modes only). A slot whose position bytes are all 0xFF is empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from protocols.errors import ProtocolError

#: Camera register addresses in the register space (I2C device 0xB0).
REG_CONTROL = 0xB00030
REG_SENSITIVITY_1 = 0xB00000
REG_SENSITIVITY_2 = 0xB0001A
REG_MODE = 0xB00033
#: Kernel default sensitivity (wiibrew level 3, "Cliff"): 9 bytes to 0xB00000 and 2 to 0xB0001A.
SENSITIVITY_1 = bytes.fromhex("020000710100aa0064")
SENSITIVITY_2 = bytes.fromhex("6303")
MAX_OBJECTS = 4
_EMPTY = 1023


class IrMode(IntEnum):
    """Camera data format written to 0xB00033."""

    OFF = 0
    BASIC = 1
    EXTENDED = 3
    FULL = 5


#: Bytes per object group in each format (basic packs two objects in 5 bytes).
FORMAT_BYTES = {IrMode.BASIC: 10, IrMode.EXTENDED: 12, IrMode.FULL: 36}


@dataclass(frozen=True, slots=True)
class IrObject:
    """One tracked light: camera pixel `x`, `y`; `size` 0..15, or -1 where the format has none."""

    x: int
    y: int
    size: int = -1


def init_writes(mode: IrMode) -> list[tuple[int, bytes]]:
    """Register writes that turn the camera on in `mode`, after 0x13 and 0x1A enable it (kernel order)."""
    return [
        (REG_CONTROL, b"\x01"),
        (REG_SENSITIVITY_1, SENSITIVITY_1),
        (REG_SENSITIVITY_2, SENSITIVITY_2),
        (REG_MODE, bytes((mode,))),
        (REG_CONTROL, b"\x08"),
    ]


def _object(x: int, y: int, size: int) -> IrObject | None:
    if x == _EMPTY and y == _EMPTY:
        return None
    return IrObject(x, y, size)


def decode_objects(mode: IrMode, data: bytes) -> list[IrObject | None]:
    """The 4 object slots (None = not seen) from `data` in format `mode`; `ProtocolError` on a wrong length."""
    expected = FORMAT_BYTES.get(mode)
    if expected is None or len(data) != expected:
        raise ProtocolError(f"IR data of {len(data)} bytes does not fit format {mode!r}")
    objects: list[IrObject | None] = []
    if mode == IrMode.BASIC:
        for start in (0, 5):
            b = data[start : start + 5]
            objects.append(_object(b[0] | (b[2] >> 4 & 3) << 8, b[1] | (b[2] >> 6 & 3) << 8, -1))
            objects.append(_object(b[3] | (b[2] & 3) << 8, b[4] | (b[2] >> 2 & 3) << 8, -1))
        return objects
    step = 3 if mode == IrMode.EXTENDED else 9
    for start in range(0, expected, step):
        b = data[start : start + 3]
        objects.append(_object(b[0] | (b[2] >> 4 & 3) << 8, b[1] | (b[2] >> 6 & 3) << 8, b[2] & 0x0F))
    return objects


def encode_objects(mode: IrMode, objects: list[IrObject | None]) -> bytes:
    """The inverse of `decode_objects` (the simulated camera); missing slots are empty."""
    slots = (list(objects) + [None] * MAX_OBJECTS)[:MAX_OBJECTS]
    xy = [(o.x & 0x3FF, o.y & 0x3FF, max(o.size, 0) & 0x0F) if o else (_EMPTY, _EMPTY, 0x0F) for o in slots]
    if mode == IrMode.BASIC:
        out = b""
        for (x1, y1, _), (x2, y2, _) in ((xy[0], xy[1]), (xy[2], xy[3])):
            packed = (y1 >> 8) << 6 | (x1 >> 8) << 4 | (y2 >> 8) << 2 | (x2 >> 8)
            out += bytes((x1 & 0xFF, y1 & 0xFF, packed, x2 & 0xFF, y2 & 0xFF))
        return out
    out = b""
    for (x, y, size), obj in zip(xy, slots, strict=True):
        out += bytes((x & 0xFF, y & 0xFF, (y >> 8) << 6 | (x >> 8) << 4 | size))
        if mode == IrMode.FULL:
            # Bounding box and intensity (the host ignores them): a box of `size` around the blob.
            if obj is None:
                out += b"\xff" * 6
            else:
                half = max(obj.size, 0)
                out += bytes((max(x - half, 0) >> 3, max(y - half, 0) >> 3, min(x + half, 1023) >> 3))
                out += bytes((min(y + half, 767) >> 3, 0, min(half * 16, 255)))
    if mode not in FORMAT_BYTES:
        raise ValueError(f"no object format for {mode!r}")
    return out
