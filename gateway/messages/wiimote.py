"""Wii Remote messages of the ROS `wiimote` package (seed 000), with its constants."""

from __future__ import annotations

from typing import Annotated, ClassVar

from gateway.messages.common import Header, Time, Vector3
from gateway.messages.schema import BOOL, F32, F64, I8, I32, I64, U64, Array, Float, Nested, message

_COVARIANCE = Array(F64, 9)
_ZERO9 = (0.0,) * 9


@message("wiimote/IrSourceInfo")
class IrSourceInfo:
    """One IR light source seen by the camera; x = INVALID_FLOAT when the source is not seen."""

    x: Annotated[float, F64] = -1.0
    y: Annotated[float, F64] = -1.0
    ir_size: Annotated[int, I64] = -1


@message("wiimote/State")
class State:
    """One complete Wii Remote state: IMU, buttons, Nunchuk, IR, LEDs, rumble, battery.

    Units: angular velocity in rad/s, covariances in rad²/s² and m²/s⁴, accelerations `_zeroed` in
    m/s², `linear_acceleration_raw` in 10-bit accelerometer counts, battery raw in units of 208 = full.
    `buttons` is indexed by the MSG_BTN_* constants, `nunchuk_buttons` by MSG_BTN_Z / MSG_BTN_C.
    """

    INVALID: ClassVar[int] = -1
    INVALID_FLOAT: ClassVar[float] = -1.0
    MSG_BTN_1: ClassVar[int] = 0
    MSG_BTN_2: ClassVar[int] = 1
    MSG_BTN_A: ClassVar[int] = 2
    MSG_BTN_B: ClassVar[int] = 3
    MSG_BTN_PLUS: ClassVar[int] = 4
    MSG_BTN_MINUS: ClassVar[int] = 5
    MSG_BTN_LEFT: ClassVar[int] = 6
    MSG_BTN_RIGHT: ClassVar[int] = 7
    MSG_BTN_UP: ClassVar[int] = 8
    MSG_BTN_DOWN: ClassVar[int] = 9
    MSG_BTN_HOME: ClassVar[int] = 10
    MSG_BTN_Z: ClassVar[int] = 0
    MSG_BTN_C: ClassVar[int] = 1
    MSG_CLASSIC_BTN_X: ClassVar[int] = 0
    MSG_CLASSIC_BTN_Y: ClassVar[int] = 1
    MSG_CLASSIC_BTN_A: ClassVar[int] = 2
    MSG_CLASSIC_BTN_B: ClassVar[int] = 3
    MSG_CLASSIC_BTN_PLUS: ClassVar[int] = 4
    MSG_CLASSIC_BTN_MINUS: ClassVar[int] = 5
    MSG_CLASSIC_BTN_LEFT: ClassVar[int] = 6
    MSG_CLASSIC_BTN_RIGHT: ClassVar[int] = 7
    MSG_CLASSIC_BTN_UP: ClassVar[int] = 8
    MSG_CLASSIC_BTN_DOWN: ClassVar[int] = 9
    MSG_CLASSIC_BTN_HOME: ClassVar[int] = 10
    MSG_CLASSIC_BTN_L: ClassVar[int] = 11
    MSG_CLASSIC_BTN_R: ClassVar[int] = 12
    MSG_CLASSIC_BTN_ZL: ClassVar[int] = 13
    MSG_CLASSIC_BTN_ZR: ClassVar[int] = 14

    header: Annotated[Header, Nested(Header)] = Header()
    angular_velocity_zeroed: Annotated[Vector3, Nested(Vector3)] = Vector3()
    angular_velocity_raw: Annotated[Vector3, Nested(Vector3)] = Vector3()
    angular_velocity_covariance: Annotated[tuple[float, ...], _COVARIANCE] = _ZERO9
    linear_acceleration_zeroed: Annotated[Vector3, Nested(Vector3)] = Vector3()
    linear_acceleration_raw: Annotated[Vector3, Nested(Vector3)] = Vector3()
    linear_acceleration_covariance: Annotated[tuple[float, ...], _COVARIANCE] = _ZERO9
    nunchuk_acceleration_zeroed: Annotated[Vector3, Nested(Vector3)] = Vector3()
    nunchuk_acceleration_raw: Annotated[Vector3, Nested(Vector3)] = Vector3()
    nunchuk_joystick_zeroed: Annotated[tuple[float, ...], Array(F32, 2)] = (0.0, 0.0)
    nunchuk_joystick_raw: Annotated[tuple[float, ...], Array(F32, 2)] = (0.0, 0.0)
    buttons: Annotated[tuple[bool, ...], Array(BOOL, 11)] = (False,) * 11
    nunchuk_buttons: Annotated[tuple[bool, ...], Array(BOOL, 2)] = (False, False)
    LEDs: Annotated[tuple[bool, ...], Array(BOOL, 4)] = (False,) * 4
    rumble: Annotated[bool, BOOL] = False
    ir_tracking: Annotated[tuple[IrSourceInfo, ...], Array(Nested(IrSourceInfo))] = ()
    raw_battery: Annotated[float, F32] = 0.0
    percent_battery: Annotated[float, Float(32, 0.0, 100.0)] = 0.0
    zeroing_time: Annotated[Time, Nested(Time)] = Time()
    errors: Annotated[int, U64] = 0


#: The most segments a `pulse_pattern` holds: over five seconds of the shortest (20 ms) ones, and few
#: enough that checking four LEDs' patterns stays far below the event loop's 10 ms budget.
MAX_PULSE_SEGMENTS = 256


@message("wiimote/TimedSwitch", kind="command")
class TimedSwitch:
    """Switch an output on or off, or repeat an on/off `pulse_pattern` (seconds) `num_cycles` times.

    `pulse_pattern` holds at most 256 durations, each 0 s or in [0.02, 3600] s (the adapter refuses
    non-zero durations under 20 ms).
    """

    ON: ClassVar[int] = 1
    OFF: ClassVar[int] = 0
    NO_CHANGE: ClassVar[int] = -2
    REPEAT: ClassVar[int] = -1
    FOREVER: ClassVar[int] = -1

    switch_mode: Annotated[int, I8] = 0
    num_cycles: Annotated[int, I32] = 0
    pulse_pattern: Annotated[tuple[float, ...], Array(Float(32, 0.0, 3600.0), max_length=MAX_PULSE_SEGMENTS)] = ()
