"""Calibration stored in the remote's EEPROM, in extension registers and in the MotionPlus (spec §4, §6).

Accelerometer values are 10-bit counts (`to_g` turns a reading into units of standard gravity);
the MotionPlus calibration (0xA60020) gives each gyro axis its zero and scale per range.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from enum import IntEnum

from protocols.errors import ProtocolError

#: EEPROM address of the first calibration block; the redundant copy is 10 bytes later.
ACCEL_CAL_ADDRESS = 0x0016
ACCEL_CAL_BLOCK = 10
#: Both blocks, read at once.
ACCEL_CAL_SIZE = 2 * ACCEL_CAL_BLOCK
#: Extension calibration register (16 bytes) and its backup copy.
EXT_CAL_ADDRESS = 0xA40020
EXT_CAL_SIZE = 16
#: m/s² per g (the ROS nodes' EARTH_GRAVITY).
STANDARD_GRAVITY = 9.80665


def checksum(block: bytes) -> int:
    """(sum of the bytes + 0x55) & 0xFF: the checksum of the EEPROM and extension calibration blocks."""
    return (sum(block) + 0x55) & 0xFF


@dataclass(frozen=True, slots=True)
class AccelCalibration:
    """Zero-g and one-g points per axis in 10-bit counts; `factory` is False for the built-in default."""

    zero: tuple[int, int, int] = (512, 512, 512)
    one: tuple[int, int, int] = (616, 616, 616)
    factory: bool = False

    def to_g(self, raw: tuple[float, float, float]) -> tuple[float, float, float]:
        """(raw − zero)/(one − zero) per axis, in g; gravity is not removed."""
        return (
            (raw[0] - self.zero[0]) / self._span(0),
            (raw[1] - self.zero[1]) / self._span(1),
            (raw[2] - self.zero[2]) / self._span(2),
        )

    def counts_per_g(self, axis: int) -> float:
        """Counts per g on `axis` (0 = x)."""
        return float(self._span(axis))

    def _span(self, axis: int) -> int:
        # A zero span would divide by zero (the ROS node's crash with a bad Nunchuk calibration);
        # parse_* never produce one, and this guards hand-built values.
        return self.one[axis] - self.zero[axis] or 1


DEFAULT_ACCEL = AccelCalibration()


def _points(block: bytes) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    zero = (block[0] << 2 | (block[3] >> 4 & 3), block[1] << 2 | (block[3] >> 2 & 3), block[2] << 2 | (block[3] & 3))
    one = (block[4] << 2 | (block[7] >> 4 & 3), block[5] << 2 | (block[7] >> 2 & 3), block[6] << 2 | (block[7] & 3))
    return zero, one


def _plausible(zero: tuple[int, int, int], one: tuple[int, int, int]) -> bool:
    return all(o > z for z, o in zip(zero, one, strict=True))


def parse_accel_block(block: bytes) -> AccelCalibration:
    """Parse one 10-byte EEPROM block; raise `ProtocolError` if its checksum or values are wrong."""
    if len(block) != ACCEL_CAL_BLOCK:
        raise ProtocolError(f"accelerometer calibration block has {len(block)} bytes, expected 10")
    if checksum(block[:9]) != block[9]:
        raise ProtocolError(f"accelerometer calibration checksum {block[9]:#04x} != {checksum(block[:9]):#04x}")
    zero, one = _points(block)
    if not _plausible(zero, one):
        raise ProtocolError("accelerometer calibration has a one-g point not above its zero-g point")
    return AccelCalibration(zero, one, factory=True)


def parse_accel_calibration(data: bytes) -> AccelCalibration:
    """The first valid of the two EEPROM blocks (20 bytes from 0x0016), else the default (as Nintendo does)."""
    for start in (0, ACCEL_CAL_BLOCK):
        try:
            return parse_accel_block(data[start : start + ACCEL_CAL_BLOCK])
        except ProtocolError:
            continue
    return DEFAULT_ACCEL


def encode_accel_block(cal: AccelCalibration, byte8: int = 0x40) -> bytes:
    """A 10-byte EEPROM block for `cal` (byte 8: volume and motor flag), checksum included."""
    zero, one = cal.zero, cal.one
    lsb_zero = (zero[0] & 3) << 4 | (zero[1] & 3) << 2 | (zero[2] & 3)
    lsb_one = (one[0] & 3) << 4 | (one[1] & 3) << 2 | (one[2] & 3)
    body = bytes((zero[0] >> 2, zero[1] >> 2, zero[2] >> 2, lsb_zero, one[0] >> 2, one[1] >> 2, one[2] >> 2, lsb_one))
    body += bytes((byte8,))
    return body + bytes((checksum(body),))


@dataclass(frozen=True, slots=True)
class StickAxis:
    """One stick axis: `minimum`, `centre`, `maximum` in the stick's raw counts."""

    minimum: int
    centre: int
    maximum: int

    def normalize(self, raw: float) -> float:
        """Raw counts → [-1, 1], 0 at the centre, scaled separately on each side, clamped."""
        if raw >= self.centre:
            span = self.maximum - self.centre
            value = (raw - self.centre) / span if span > 0 else 0.0
        else:
            span = self.centre - self.minimum
            value = (raw - self.centre) / span if span > 0 else 0.0
        return max(-1.0, min(1.0, value))


@dataclass(frozen=True, slots=True)
class NunchukCalibration:
    """Nunchuk accelerometer (10-bit counts) and stick (8-bit counts) calibration; `factory` if read."""

    accel: AccelCalibration = AccelCalibration((512, 512, 512), (716, 716, 716))
    stick_x: StickAxis = StickAxis(0x20, 0x80, 0xE0)
    stick_y: StickAxis = StickAxis(0x20, 0x80, 0xE0)
    factory: bool = False


@dataclass(frozen=True, slots=True)
class ClassicCalibration:
    """Classic Controller sticks (left 6-bit, right 5-bit counts) and trigger zero points (5-bit)."""

    left_x: StickAxis = StickAxis(4, 32, 60)
    left_y: StickAxis = StickAxis(4, 32, 60)
    right_x: StickAxis = StickAxis(2, 16, 30)
    right_y: StickAxis = StickAxis(2, 16, 30)
    left_trigger_zero: int = 0
    right_trigger_zero: int = 0
    factory: bool = False


def _check_ext_block(block: bytes) -> None:
    if len(block) != EXT_CAL_SIZE:
        raise ProtocolError(f"extension calibration has {len(block)} bytes, expected 16")
    expected = checksum(block[:14])
    if block[14] != expected or block[15] != (expected + 0x55) & 0xFF:
        raise ProtocolError("extension calibration checksum mismatch")


def parse_nunchuk_calibration(block: bytes) -> NunchukCalibration:
    """Parse the 16 bytes at 0xA40020; an invalid block yields the default (marked not factory)."""
    try:
        _check_ext_block(block)
        zero, one = _points(block[:8])
        if not _plausible(zero, one):
            raise ProtocolError("nunchuk calibration has a one-g point not above its zero-g point")
        x = StickAxis(block[9], block[10], block[8])
        y = StickAxis(block[12], block[13], block[11])
        if not (x.minimum < x.centre < x.maximum and y.minimum < y.centre < y.maximum):
            raise ProtocolError("nunchuk stick calibration is not ordered min < centre < max")
    except ProtocolError:
        return NunchukCalibration()
    return NunchukCalibration(AccelCalibration(zero, one, True), x, y, factory=True)


def parse_classic_calibration(block: bytes) -> ClassicCalibration:
    """Parse the 16 bytes at 0xA40020 (sticks at 8-bit scale: left >> 2, right >> 3); default if invalid."""
    try:
        _check_ext_block(block)
        axes = [
            StickAxis(block[i + 1] >> s, block[i + 2] >> s, block[i] >> s) for i, s in ((0, 2), (3, 2), (6, 3), (9, 3))
        ]
        if not all(a.minimum < a.centre < a.maximum for a in axes):
            raise ProtocolError("classic stick calibration is not ordered min < centre < max")
    except ProtocolError:
        return ClassicCalibration()
    return ClassicCalibration(axes[0], axes[1], axes[2], axes[3], block[12] >> 3, block[13] >> 3, factory=True)


def encode_ext_calibration(body14: bytes) -> bytes:
    """Append the two checksum bytes to a 14-byte extension calibration body."""
    if len(body14) != 14:
        raise ValueError("an extension calibration body has 14 bytes")
    first = checksum(body14)
    return body14 + bytes((first, (first + 0x55) & 0xFF))


# ---------------------------------------------------------------- MotionPlus gyro calibration

#: Each MotionPlus's factory calibration, read from the inactive MotionPlus (I2C 0x53) registers.
GYRO_CAL_ADDRESS = 0xA60020
GYRO_CAL_SIZE = 32
_GYRO_BLOCK = 16
#: Data counts are 14 bits; the calibration's zeros and scale points are 16 bits (counts << 2).
_GYRO_CAL_SHIFT = 4


class GyroAxis(IntEnum):
    """MotionPlus axes in wire (and calibration block) order."""

    YAW = 0
    ROLL = 1
    PITCH = 2


@dataclass(frozen=True, slots=True)
class GyroRange:
    """One range (slow or fast) of a MotionPlus: per-axis zero (14-bit counts) and counts per deg/s."""

    zero: tuple[float, float, float]
    counts_per_deg_s: tuple[float, float, float]


@dataclass(frozen=True, slots=True)
class GyroCalibration:
    """A MotionPlus's slow (low-range) and fast (high-range) calibration; `factory` False for nominal."""

    slow: GyroRange
    fast: GyroRange
    factory: bool = False

    def range(self, slow: bool) -> GyroRange:
        """The slow or the fast range."""
        return self.slow if slow else self.fast

    def zero(self, axis: GyroAxis, slow: bool) -> float:
        """The zero-rate reading of `axis` in that range, in 14-bit counts."""
        return self.range(slow).zero[axis]

    def rad_per_count(self, axis: GyroAxis, slow: bool) -> float:
        """rad/s per count of `axis` in that range."""
        return math.radians(1.0) / self.range(slow).counts_per_deg_s[axis]


#: The Linux kernel's nominal scale (8192/440 counts per deg/s slow, 8192/2000 fast), zero at 8192.
NOMINAL_GYRO = GyroCalibration(
    GyroRange((8192.0,) * 3, (8192 / 440,) * 3),
    GyroRange((8192.0,) * 3, (8192 / 2000,) * 3),
)


def gyro_calibration_crc(data: bytes) -> int:
    """The zlib CRC-32 over bytes 0x00-0x0D and 0x10-0x1D (the block bodies), as Dolphin computes it."""
    return zlib.crc32(data[0:14] + data[16:30])


def _gyro_range(block: bytes) -> GyroRange:
    values = [int.from_bytes(block[i : i + 2], "big") for i in range(0, 12, 2)]
    degrees = block[12] * 6
    if degrees == 0:
        raise ProtocolError("MotionPlus calibration has a scale of 0 deg/s")
    zeros, scales = values[:3], values[3:]
    if any(scale == zero for zero, scale in zip(zeros, scales, strict=True)):
        raise ProtocolError("MotionPlus calibration has a scale point equal to its zero")
    # The scale point lies below the zero on some axes (yaw and pitch on real units): the magnitude
    # keeps "raw above zero is positive", the kernel's and ROS's sign.
    per_deg = [abs(s - z) / _GYRO_CAL_SHIFT / degrees for z, s in zip(zeros, scales, strict=True)]
    return GyroRange(
        (zeros[0] / _GYRO_CAL_SHIFT, zeros[1] / _GYRO_CAL_SHIFT, zeros[2] / _GYRO_CAL_SHIFT),
        (per_deg[0], per_deg[1], per_deg[2]),
    )


def parse_gyro_calibration(data: bytes) -> GyroCalibration:
    """Parse and verify the 32 bytes at 0xA60020; raise `ProtocolError` when the CRC or a value is wrong.

    Fast block at 0x00, slow at 0x10, each: yaw, roll, pitch zero then scale point (big-endian u16,
    14-bit counts << 2), the scale point's rate in deg/s ÷ 6, a UID byte, then half of the CRC-32
    (high half at 0x0E, low half at 0x1E) (Dolphin `MotionPlus::CalibrationData`).
    """
    if len(data) != GYRO_CAL_SIZE:
        raise ProtocolError(f"MotionPlus calibration has {len(data)} bytes, expected 32")
    stored = int.from_bytes(data[14:16], "big") << 16 | int.from_bytes(data[30:32], "big")
    computed = gyro_calibration_crc(data)
    if stored != computed:
        raise ProtocolError(f"MotionPlus calibration CRC {stored:#010x} != computed {computed:#010x}")
    return GyroCalibration(_gyro_range(data[_GYRO_BLOCK:]), _gyro_range(data[:_GYRO_BLOCK]), factory=True)


# ---------------------------------------------------------------- Wii U Pro Controller sticks

#: Pro Controller sticks: 12-bit counts, ±0x400 around the centre 0x800 (kernel `wiimod_pro_probe`).
PRO_STICK_CENTRE = 0x800
PRO_STICK_SPAN = 0x400
#: A first reading further than this from 0x800 is taken for a moved stick, not its rest (kernel).
PRO_CENTRE_LIMIT = 500


@dataclass(frozen=True, slots=True)
class ProCalibration:
    """Pro Controller stick axes (left x, left y, right x, right y) in raw 12-bit counts."""

    axes: tuple[StickAxis, StickAxis, StickAxis, StickAxis]


def _pro_axis(raw: int) -> StickAxis:
    centre = raw if abs(raw - PRO_STICK_CENTRE) < PRO_CENTRE_LIMIT else PRO_STICK_CENTRE
    return StickAxis(centre - PRO_STICK_SPAN, centre, centre + PRO_STICK_SPAN)


def pro_calibration_from(first_sticks: tuple[int, int, int, int]) -> ProCalibration:
    """The kernel's "trivial automatic calibration" from the first report's sticks.

    Each is taken for its centre (the controller's own calibration is unknown), unless it is more
    than 500 counts off 0x800, which means the stick was held: then 0x800.
    """
    lx, ly, rx, ry = first_sticks
    return ProCalibration((_pro_axis(lx), _pro_axis(ly), _pro_axis(rx), _pro_axis(ry)))
