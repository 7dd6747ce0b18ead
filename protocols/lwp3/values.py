"""Typed readings from LWP 3.0 payloads: hub property values and port values by I/O type and mode.

A Port Value message carries raw bytes whose layout is that of the port's current input mode (set with
Port Input Format Setup). `port_reading` knows the modes the gateway uses; each checks the exact size.
Readings hold the hub's raw values: what they mean in SI units is the mode's own information
(RAW and SI ranges, SYMBOL), which a client asks the hub for and applies with `modes.ModeScale`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from protocols.errors import ProtocolError
from protocols.lwp3.constants import HubProperty, IoType
from protocols.lwp3.messages import MAX_NAME_LENGTH

#: Motors with a tacho (position feedback): mode 1 SPEED (Int8 %), 2 POS (Int32 degrees), 3 APOS (Int16 degrees).
TACHO_MOTORS = frozenset(
    {
        IoType.EXTERNAL_MOTOR_TACHO,
        IoType.INTERNAL_MOTOR_TACHO,
        IoType.TECHNIC_LARGE_MOTOR,
        IoType.TECHNIC_XL_MOTOR,
        IoType.TECHNIC_MEDIUM_ANGULAR_MOTOR,
        IoType.TECHNIC_LARGE_ANGULAR_MOTOR,
        IoType.TECHNIC_MEDIUM_ANGULAR_MOTOR_GREY,
        IoType.TECHNIC_LARGE_ANGULAR_MOTOR_GREY,
    }
)
#: Motors driven by power only (no feedback).
PLAIN_MOTORS = frozenset({IoType.MOTOR, IoType.TRAIN_MOTOR})
MOTOR_MODE_SPEED = 1
MOTOR_MODE_POSITION = 2
RGB_LIGHT_MODE_RGB = 1
COLOR_DISTANCE_MODE_COLOR = 0
COLOR_DISTANCE_MODE_PROXIMITY = 1
COLOR_DISTANCE_MODE_BOTH = 8
#: LEGO colour numbers (§3.27.20 SetRgbColorNo and the colour sensor's mode 0); 255 is "no colour".
COLOR_NAMES = ("black", "pink", "purple", "blue", "light_blue", "cyan", "green", "yellow", "orange", "red", "white")
NO_COLOR = 255


@dataclass(frozen=True, slots=True)
class MotorReading:
    """A tacho motor's reading: `position_deg` (mode 2), `speed_percent` (mode 1) or `absolute_deg` (mode 3)."""

    mode: int
    value: float


@dataclass(frozen=True, slots=True)
class TiltReading:
    """Tilt in degrees about x (roll), y (pitch) and z (yaw; 0 where the sensor has two axes)."""

    x_deg: float
    y_deg: float
    z_deg: float = 0


@dataclass(frozen=True, slots=True)
class ColorDistanceReading:
    """The colour and distance sensor: `color` (0-10, 255 none) and `proximity` (0 near .. 10 far; -1 unread)."""

    color: int
    proximity: int


@dataclass(frozen=True, slots=True)
class AccelerationReading:
    """Technic hub accelerometer (mode 0 GRV) per axis, in the mode's SI unit (mG) once scaled."""

    x: float
    y: float
    z: float


@dataclass(frozen=True, slots=True)
class TemperatureReading:
    """Technic hub temperature (mode 0), in the mode's SI unit (°C, "DEG") once scaled."""

    value: float


Reading = MotorReading | TiltReading | ColorDistanceReading | AccelerationReading | TemperatureReading


def _unpack(layout: str, data: bytes, what: str) -> tuple[int, ...]:
    size = struct.calcsize(layout)
    if len(data) != size:
        raise ProtocolError(f"{what} value needs {size} bytes, got {len(data)}")
    values: tuple[int, ...] = struct.unpack(layout, data)
    return values


def _raw(value: int) -> float:
    return value


def port_reading(io_type: int, mode: int, data: bytes, to_si: Callable[[int], float] | None = None) -> Reading | None:
    """The reading of a Port Value from a device of `io_type` in `mode`; None for modes not interpreted.

    `to_si` turns each raw value into the mode's SI unit (`modes.ModeScale.to_si`, from the hub's
    mode information); without it readings hold the raw values. Colour numbers and proximity steps
    are indices and stay raw.
    """
    si = to_si or _raw
    if io_type in TACHO_MOTORS:
        layouts = {MOTOR_MODE_SPEED: "<b", MOTOR_MODE_POSITION: "<i", 3: "<h"}
        if mode not in layouts:
            return None
        (value,) = _unpack(layouts[mode], data, f"motor mode {mode}")
        return MotorReading(mode, si(value))
    if io_type in (IoType.INTERNAL_TILT, IoType.EXTERNAL_TILT) and mode == 0:
        x, y = _unpack("<bb", data, "tilt angle")
        return TiltReading(si(x), si(y))
    if io_type == IoType.TECHNIC_HUB_TILT and mode == 0:
        # Sent as yaw, pitch, roll; yaw counts the other way round.
        yaw, pitch, roll = _unpack("<hhh", data, "technic hub tilt")
        return TiltReading(si(roll), si(pitch), -si(yaw))
    if io_type == IoType.COLOR_DISTANCE_SENSOR:
        if mode == COLOR_DISTANCE_MODE_COLOR:
            (color,) = _unpack("<B", data, "colour")
            return ColorDistanceReading(_color(color), -1)
        if mode == COLOR_DISTANCE_MODE_PROXIMITY:
            (proximity,) = _unpack("<B", data, "proximity")
            return ColorDistanceReading(NO_COLOR, _proximity(proximity))
        if mode == COLOR_DISTANCE_MODE_BOTH:
            color, proximity, _, _ = _unpack("<BBBB", data, "colour and distance")
            return ColorDistanceReading(_color(color), _proximity(proximity))
        return None
    if io_type == IoType.TECHNIC_HUB_ACCELEROMETER and mode == 0:
        x, y, z = _unpack("<hhh", data, "accelerometer")
        return AccelerationReading(si(x), si(y), si(z))
    if io_type == IoType.TECHNIC_HUB_TEMPERATURE and mode == 0:
        (value,) = _unpack("<h", data, "temperature")
        return TemperatureReading(si(value))
    return None


def _color(value: int) -> int:
    if value >= len(COLOR_NAMES) and value != NO_COLOR:
        raise ProtocolError(f"colour {value} is neither a LEGO colour number (0-10) nor 255 (none)")
    return value


def _proximity(value: int) -> int:
    if value > 10:
        raise ProtocolError(f"proximity {value} is outside 0-10")
    return value


def reading_mode(io_type: int) -> int | None:
    """The input mode the gateway subscribes to on a device of `io_type`; None: nothing to read."""
    if io_type in TACHO_MOTORS:
        return MOTOR_MODE_POSITION
    if io_type in (IoType.INTERNAL_TILT, IoType.EXTERNAL_TILT, IoType.TECHNIC_HUB_TILT):
        return 0
    if io_type == IoType.COLOR_DISTANCE_SENSOR:
        return COLOR_DISTANCE_MODE_BOTH
    if io_type in (IoType.TECHNIC_HUB_ACCELEROMETER, IoType.TECHNIC_HUB_TEMPERATURE):
        return 0
    return None


# ---- hub properties (§3.5.5) ----------------------------------------------------------------------

PropertyValue = str | int | bool | bytes


def version_text(raw: int) -> str:
    """A version number (§3.5.6: 0MMM mmmm BBBB BBBB bbbb bbbb bbbb bbbb, BCD digits) as "M.m.BB.bbbb"."""
    digits = f"{raw & 0x7FFFFFFF:08x}"
    return f"{digits[0]}.{digits[1]}.{digits[2:4]}.{digits[4:]}"


def property_value(prop: HubProperty, payload: bytes) -> PropertyValue:
    """The typed value of a hub property Update: name str, button bool, versions text, RSSI/battery int."""
    if prop in (HubProperty.ADVERTISING_NAME, HubProperty.MANUFACTURER_NAME, HubProperty.RADIO_FW_VERSION):
        if len(payload) > (MAX_NAME_LENGTH if prop == HubProperty.ADVERTISING_NAME else 15):
            raise ProtocolError(f"{prop.name} of {len(payload)} bytes is longer than the protocol allows")
        try:
            return payload.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError(f"{prop.name} is not UTF-8") from None
    if prop == HubProperty.BUTTON:
        (state,) = _unpack("<B", payload, "button")
        if state not in (0, 1):
            raise ProtocolError(f"button state {state} is neither 0 nor 1")
        return state == 1
    if prop in (HubProperty.FW_VERSION, HubProperty.HW_VERSION):
        (raw,) = _unpack("<i", payload, prop.name)
        return version_text(raw)
    if prop == HubProperty.RSSI:
        (rssi,) = _unpack("<b", payload, "RSSI")
        return rssi
    if prop == HubProperty.BATTERY_VOLTAGE:
        (percent,) = _unpack("<B", payload, "battery")
        if percent > 100:
            raise ProtocolError(f"battery level {percent} % is above 100")
        return percent
    if prop in (HubProperty.SYSTEM_TYPE_ID, HubProperty.BATTERY_TYPE, HubProperty.HW_NETWORK_ID):
        (value,) = _unpack("<B", payload, prop.name)
        return value
    if prop == HubProperty.LWP_VERSION:
        (value,) = _unpack("<H", payload, "LWP version")
        return f"{value >> 8:x}.{value & 0xFF:02x}"
    return bytes(payload)
