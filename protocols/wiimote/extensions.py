"""Extension controllers: identification, Nunchuk, Classic / Classic Pro, MotionPlus, Wii U Pro (spec §6).

All decoders take the extension bytes of a data report (unencrypted format, after the 0x55/0x00
init): 6 for the Wii extensions, 11 for the Wii U Pro Controller, whose whole controller reports
through the extension bytes (kernel `wiimod_pro_in_ext`). They raise `ProtocolError` when the bytes
are too few. Buttons read 1 when pressed (the wire is active-low).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum, IntFlag

from protocols.errors import ProtocolError

#: Extension controller registers (I2C 0x52) and the inactive MotionPlus (I2C 0x53).
EXT_INIT_1 = (0xA400F0, b"\x55")
EXT_INIT_2 = (0xA400FB, b"\x00")
EXT_ID_ADDRESS = 0xA400FA
MP_INIT = (0xA600F0, b"\x55")
MP_ID_ADDRESS = 0xA600FA
MP_ACTIVATE_ADDRESS = 0xA600FE
ID_SIZE = 6


class ExtensionType(Enum):
    """What the extension port reports."""

    NONE = "none"
    NUNCHUK = "nunchuk"
    CLASSIC = "classic"
    CLASSIC_PRO = "classic_pro"
    MOTIONPLUS = "motionplus"
    MOTIONPLUS_NUNCHUK = "motionplus_nunchuk"
    MOTIONPLUS_CLASSIC = "motionplus_classic"
    #: The Wii U Pro Controller (RVL-CNT-01-UC): not a plug-in, but it identifies itself this way.
    PRO_CONTROLLER = "pro_controller"
    UNKNOWN = "unknown"


#: MotionPlus activation codes (written to 0xA600FE) per pass-through target.
MP_MODE_ALONE = 0x04
MP_MODE_NUNCHUK = 0x05
MP_MODE_CLASSIC = 0x07

#: The 6 ID bytes each extension answers at 0xA400FA.
IDS: dict[ExtensionType, bytes] = {
    ExtensionType.NUNCHUK: bytes.fromhex("0000a4200000"),
    ExtensionType.CLASSIC: bytes.fromhex("0000a4200101"),
    ExtensionType.CLASSIC_PRO: bytes.fromhex("0100a4200101"),
    ExtensionType.MOTIONPLUS: bytes.fromhex("0000a4200405"),
    ExtensionType.MOTIONPLUS_NUNCHUK: bytes.fromhex("0000a4200505"),
    ExtensionType.MOTIONPLUS_CLASSIC: bytes.fromhex("0000a4200705"),
    ExtensionType.PRO_CONTROLLER: bytes.fromhex("0000a4200120"),
}
#: The inactive MotionPlus at 0xA600FA.
MP_INACTIVE_ID = bytes.fromhex("0000a6200005")


def identify(ext_id: bytes) -> ExtensionType:
    """The extension type from the 6 ID bytes at 0xA400FA (bytes 4-5 and, for the Classic, byte 0)."""
    if len(ext_id) != ID_SIZE:
        raise ProtocolError(f"extension ID has {len(ext_id)} bytes, expected 6")
    if ext_id == b"\xff" * 6:
        return ExtensionType.NONE
    kind = ext_id[4:6]
    if kind == b"\x00\x00":
        return ExtensionType.NUNCHUK
    if kind == b"\x01\x01":
        return ExtensionType.CLASSIC_PRO if ext_id[0] == 0x01 else ExtensionType.CLASSIC
    if kind == b"\x01\x20":
        return ExtensionType.PRO_CONTROLLER
    if kind[1] == 0x05:
        return {
            MP_MODE_ALONE: ExtensionType.MOTIONPLUS,
            MP_MODE_NUNCHUK: ExtensionType.MOTIONPLUS_NUNCHUK,
            MP_MODE_CLASSIC: ExtensionType.MOTIONPLUS_CLASSIC,
        }.get(kind[0], ExtensionType.UNKNOWN)
    return ExtensionType.UNKNOWN


def is_motionplus_id(mp_id: bytes) -> bool:
    """An inactive MotionPlus answers at 0xA600FA with byte 5 = 0x05 (the kernel's test)."""
    return len(mp_id) == ID_SIZE and mp_id[5] == 0x05


def _check(data: bytes) -> None:
    if len(data) < 6:
        raise ProtocolError(f"extension data has {len(data)} bytes, at least 6 needed")


@dataclass(frozen=True, slots=True)
class Nunchuk:
    """Nunchuk sample: stick (8-bit counts, centre ≈ 128), accelerometer (10-bit counts), C and Z."""

    stick: tuple[int, int]
    accel: tuple[int, int, int]
    c: bool
    z: bool


def decode_nunchuk(data: bytes) -> Nunchuk:
    """Decode a Nunchuk's 6 bytes."""
    _check(data)
    b5 = data[5]
    accel = (data[2] << 2 | (b5 >> 2 & 3), data[3] << 2 | (b5 >> 4 & 3), data[4] << 2 | (b5 >> 6 & 3))
    return Nunchuk((data[0], data[1]), accel, not b5 & 0x02, not b5 & 0x01)


def encode_nunchuk(sample: Nunchuk) -> bytes:
    """Encode a Nunchuk sample (the simulated extension)."""
    x, y, z = (v & 0x3FF for v in sample.accel)
    b5 = (z & 3) << 6 | (y & 3) << 4 | (x & 3) << 2 | (0 if sample.c else 0x02) | (0 if sample.z else 0x01)
    return bytes((sample.stick[0] & 0xFF, sample.stick[1] & 0xFF, x >> 2, y >> 2, z >> 2, b5))


def decode_nunchuk_passthrough(data: bytes) -> Nunchuk:
    """Decode a Nunchuk frame interleaved by an active MotionPlus (accelerometer LSBs partly lost)."""
    _check(data)
    b4, b5 = data[4], data[5]
    accel = (
        data[2] << 2 | (b5 >> 4 & 1) << 1,
        data[3] << 2 | (b5 >> 5 & 1) << 1,
        (b4 & 0xFE) << 2 | (b5 >> 6 & 3) << 1,
    )
    return Nunchuk((data[0], data[1]), accel, not b5 & 0x08, not b5 & 0x04)


def encode_nunchuk_passthrough(sample: Nunchuk, ext_connected: bool = True) -> bytes:
    """Encode a pass-through Nunchuk frame (byte 5 bit 1 = 0 marks extension data)."""
    x, y, z = (v & 0x3FF for v in sample.accel)
    b4 = (z >> 3) << 1 | (1 if ext_connected else 0)
    b5 = (z >> 1 & 3) << 6 | (y >> 1 & 1) << 5 | (x >> 1 & 1) << 4
    b5 |= (0 if sample.c else 0x08) | (0 if sample.z else 0x04)
    return bytes((sample.stick[0] & 0xFF, sample.stick[1] & 0xFF, x >> 2, y >> 2, b4 & 0xFF, b5))


class ClassicButton(IntFlag):
    """Classic Controller buttons as cwiid's word `~(b4 << 8 | b5)` (spec §6.3)."""

    UP = 0x0001
    LEFT = 0x0002
    ZR = 0x0004
    X = 0x0008
    A = 0x0010
    Y = 0x0020
    B = 0x0040
    ZL = 0x0080
    R = 0x0200
    PLUS = 0x0400
    HOME = 0x0800
    MINUS = 0x1000
    L = 0x2000
    DOWN = 0x4000
    RIGHT = 0x8000


CLASSIC_BUTTON_MASK = 0xFEFF


@dataclass(frozen=True, slots=True)
class Classic:
    """Classic Controller sample: left stick 0..63, right stick 0..31, triggers 0..31, `ClassicButton` word."""

    left: tuple[int, int]
    right: tuple[int, int]
    triggers: tuple[int, int]
    buttons: ClassicButton


def decode_classic(data: bytes) -> Classic:
    """Decode a Classic Controller's 6 bytes."""
    _check(data)
    b0, b1, b2, b3 = data[0], data[1], data[2], data[3]
    rx = (b0 >> 6 & 3) << 3 | (b1 >> 6 & 3) << 1 | (b2 >> 7 & 1)
    lt = (b2 >> 5 & 3) << 3 | (b3 >> 5 & 7)
    word = ~(data[4] << 8 | data[5]) & CLASSIC_BUTTON_MASK
    return Classic((b0 & 0x3F, b1 & 0x3F), (rx, b2 & 0x1F), (lt, b3 & 0x1F), ClassicButton(word))


def encode_classic(sample: Classic) -> bytes:
    """Encode a Classic Controller sample (the simulated extension)."""
    lx, ly = sample.left[0] & 0x3F, sample.left[1] & 0x3F
    rx, ry = sample.right[0] & 0x1F, sample.right[1] & 0x1F
    lt, rt = sample.triggers[0] & 0x1F, sample.triggers[1] & 0x1F
    word = ~int(sample.buttons) & 0xFFFF | 0x0100  # the unused bit 0 of byte 4 reads 1
    return bytes(
        (
            (rx >> 3) << 6 | lx,
            (rx >> 1 & 3) << 6 | ly,
            (rx & 1) << 7 | (lt >> 3) << 5 | ry,
            (lt & 7) << 5 | rt,
            word >> 8,
            word & 0xFF,
        )
    )


def decode_classic_passthrough(data: bytes) -> Classic:
    """Decode a Classic frame interleaved by an active MotionPlus: LX/LY lose their LSB, Up/Left move."""
    _check(data)
    b0, b1 = data[0], data[1]
    plain = decode_classic(bytes((b0 | 1, b1 | 1, data[2], data[3], data[4] | 1, data[5] | 3)))
    word = int(plain.buttons) & ~(ClassicButton.UP | ClassicButton.LEFT)
    word |= (0 if b0 & 1 else ClassicButton.UP) | (0 if b1 & 1 else ClassicButton.LEFT)
    return Classic((b0 & 0x3E, b1 & 0x3E), plain.right, plain.triggers, ClassicButton(word))


def encode_classic_passthrough(sample: Classic, ext_connected: bool = True) -> bytes:
    """Encode a pass-through Classic frame."""
    plain = bytearray(encode_classic(sample))
    up = not sample.buttons & ClassicButton.UP
    left = not sample.buttons & ClassicButton.LEFT
    plain[0] = (plain[0] & 0xFE) | (1 if up else 0)
    plain[1] = (plain[1] & 0xFE) | (1 if left else 0)
    plain[4] = (plain[4] & 0xFE) | (1 if ext_connected else 0)
    plain[5] = plain[5] & 0xFC
    return bytes(plain)


@dataclass(frozen=True, slots=True)
class MotionPlus:
    """MotionPlus sample: 14-bit rates (yaw, roll, pitch), slow-mode flags, extension-plugged flag."""

    yaw: int
    roll: int
    pitch: int
    yaw_slow: bool
    roll_slow: bool
    pitch_slow: bool
    ext_connected: bool


def is_flagged_invalid(data: bytes) -> bool:
    """Byte 5 bit 0: with a MotionPlus active it marks a frame invalid ("eg. during hotplug", kernel)."""
    _check(data)
    return bool(data[5] & 0x01)


def is_motionplus_frame(data: bytes) -> bool:
    """In pass-through mode byte 5 bit 1 tells MotionPlus frames (1) from extension frames (0)."""
    _check(data)
    return bool(data[5] & 0x02)


def decode_motionplus(data: bytes) -> MotionPlus:
    """Decode a MotionPlus frame; `ProtocolError` if byte 5 does not mark it as one."""
    _check(data)
    if not data[5] & 0x02:
        raise ProtocolError("extension frame is not MotionPlus data (byte 5 bit 1 clear)")
    return MotionPlus(
        data[0] | (data[3] >> 2) << 8,
        data[1] | (data[4] >> 2) << 8,
        data[2] | (data[5] >> 2) << 8,
        bool(data[3] & 0x02),
        bool(data[4] & 0x02),
        bool(data[3] & 0x01),
        bool(data[4] & 0x01),
    )


def encode_motionplus(sample: MotionPlus) -> bytes:
    """Encode a MotionPlus frame (the simulated gyro)."""
    yaw, roll, pitch = sample.yaw & 0x3FFF, sample.roll & 0x3FFF, sample.pitch & 0x3FFF
    return bytes(
        (
            yaw & 0xFF,
            roll & 0xFF,
            pitch & 0xFF,
            (yaw >> 8) << 2 | (0x02 if sample.yaw_slow else 0) | (0x01 if sample.pitch_slow else 0),
            (roll >> 8) << 2 | (0x02 if sample.roll_slow else 0) | (0x01 if sample.ext_connected else 0),
            (pitch >> 8) << 2 | 0x02,
        )
    )


#: Gyro scale in slow (low-range) mode: 8192 counts = 440 deg/s (the Linux kernel's figure; wiibrew
#: and Dolphin give 13.8 and 16.1 counts per deg/s: sources disagree by ±20 %, spec §6.4).
SLOW_COUNTS_PER_DEG_S = 8192 / 440
#: Fast (high-range) mode covers 2000 deg/s with the same counts.
FAST_COUNTS_PER_DEG_S = SLOW_COUNTS_PER_DEG_S * 440 / 2000
#: Zero rate in counts (the mid-point of 14 bits; each unit differs, hence the zeroing at rest).
NEUTRAL = 8192


def rad_per_count(slow: bool) -> float:
    """rad/s per count in slow or fast mode."""
    return math.radians(1.0) / (SLOW_COUNTS_PER_DEG_S if slow else FAST_COUNTS_PER_DEG_S)


def counts_from_rate(rate_rad_s: float, slow: bool) -> int:
    """The count offset from neutral for `rate_rad_s` (the simulated gyro)."""
    return round(rate_rad_s / rad_per_count(slow))


class ProButton(IntFlag):
    """Wii U Pro Controller buttons: `~(b8 << 8 | b9)` like the Classic's word, thumb clicks from b10."""

    UP = 0x0001
    LEFT = 0x0002
    ZR = 0x0004
    X = 0x0008
    A = 0x0010
    Y = 0x0020
    B = 0x0040
    ZL = 0x0080
    R = 0x0200
    PLUS = 0x0400
    HOME = 0x0800
    MINUS = 0x1000
    L = 0x2000
    DOWN = 0x4000
    RIGHT = 0x8000
    THUMB_R = 0x10000
    THUMB_L = 0x20000


PRO_BUTTON_MASK = 0x3FEFF
PRO_BYTES = 11


@dataclass(frozen=True, slots=True)
class ProController:
    """Wii U Pro Controller sample (kernel `wiimod_pro_in_ext` layout).

    `sticks`: raw 12-bit counts (left x, left y, right x, right y), centre ≈ 0x800, y grows upwards;
    `buttons`: `ProButton` word; `battery`: level 0 (empty) to 4 (full), from byte 10 bits 6:4;
    `charging` and `usb` from byte 10 bits 2 and 3 (both active-low; the kernel marks them "not
    entirely verified").
    """

    sticks: tuple[int, int, int, int]
    buttons: ProButton
    battery: int
    charging: bool
    usb: bool


def decode_pro(data: bytes) -> ProController:
    """Decode the first 11 extension bytes of a Wii U Pro Controller."""
    if len(data) < PRO_BYTES:
        raise ProtocolError(f"Pro Controller data has {len(data)} bytes, at least 11 needed")
    lx = data[0] | (data[1] & 0x0F) << 8
    rx = data[2] | (data[3] & 0x0F) << 8
    ly = data[4] | (data[5] & 0x0F) << 8
    ry = data[6] | (data[7] & 0x0F) << 8
    b10 = data[10]
    word = ~(data[8] << 8 | data[9] | (b10 & 0x03) << 16) & PRO_BUTTON_MASK
    return ProController((lx, ly, rx, ry), ProButton(word), b10 >> 4 & 0x07, not b10 & 0x04, not b10 & 0x08)


def encode_pro(sample: ProController) -> bytes:
    """Encode a Pro Controller sample (the simulated controller); unknown bits read 1, as the kernel saw."""
    lx, ly, rx, ry = (v & 0xFFF for v in sample.sticks)
    word = ~int(sample.buttons) & 0x3FFFF | 0x0100  # b8 bit 0 is an always-1 bit
    b10 = 0x80 | (sample.battery & 0x07) << 4 | (0 if sample.usb else 0x08) | (0 if sample.charging else 0x04)
    b10 |= word >> 16 & 0x03
    sticks = bytes((lx & 0xFF, lx >> 8, rx & 0xFF, rx >> 8, ly & 0xFF, ly >> 8, ry & 0xFF, ry >> 8))
    return sticks + bytes((word >> 8 & 0xFF, word & 0xFF, b10))
