"""Protocol samples → bus messages: `wiimote/State`, `creos_messages/ControllerState`, `hwgateway/WiimoteClassic`.

Choices (spec §9.5), documented in README "Wii Remotes":
- `buttons` follow the seed's MSG_BTN_* constants (1, 2, A, B, +, −, Left, Right, Up, Down, Home),
  not the order the ROS nodes actually publish;
- `linear_acceleration_raw` and `nunchuk_acceleration_raw` are 10-bit counts; `_zeroed` are m/s²
  from the factory calibration (gravity included, as in ROS);
- gyro: x = pitch, y = roll, z = yaw (as cwiid/ROS), rad/s with the MotionPlus's own calibration
  (0xA60020) per axis and per range: slow-range frames use the bias of the last successful zeroing
  at rest (the factory slow zero before one), fast-range frames the factory fast zero. Without a
  valid calibration: the kernel's nominal scale, and the at-rest bias for both ranges (8192 before
  one), the best guess there is;
- `nunchuk_joystick_zeroed` in [-1, 1] from the Nunchuk's calibration with X negated, as both ROS
  nodes do (push right → negative); the ControllerState view uses right/up positive;
- `percent_battery` = raw × 100 / 208, clamped to 100.
"""

from __future__ import annotations

from devices.wiimote.imu import QUANTISATION_VARIANCE, ZeroingResult, diagonal
from gateway.messages.common import Header, Time, Vector3
from gateway.messages.creos import ControllerState
from gateway.messages.wiimote import IrSourceInfo, State
from gateway.messages.wiimote_gateway import WiimoteClassic
from protocols.wiimote import extensions as ext
from protocols.wiimote.calibration import (
    NOMINAL_GYRO,
    STANDARD_GRAVITY,
    AccelCalibration,
    ClassicCalibration,
    GyroAxis,
    GyroCalibration,
    NunchukCalibration,
    ProCalibration,
)
from protocols.wiimote.connection import Sample
from protocols.wiimote.ir import IrObject
from protocols.wiimote.reports import Button

#: Core buttons in MSG_BTN_* order.
BUTTON_ORDER = (
    Button.ONE,
    Button.TWO,
    Button.A,
    Button.B,
    Button.PLUS,
    Button.MINUS,
    Button.LEFT,
    Button.RIGHT,
    Button.UP,
    Button.DOWN,
    Button.HOME,
)
#: Classic buttons in MSG_CLASSIC_BTN_* order.
CLASSIC_ORDER = (
    ext.ClassicButton.X,
    ext.ClassicButton.Y,
    ext.ClassicButton.A,
    ext.ClassicButton.B,
    ext.ClassicButton.PLUS,
    ext.ClassicButton.MINUS,
    ext.ClassicButton.LEFT,
    ext.ClassicButton.RIGHT,
    ext.ClassicButton.UP,
    ext.ClassicButton.DOWN,
    ext.ClassicButton.HOME,
    ext.ClassicButton.L,
    ext.ClassicButton.R,
    ext.ClassicButton.ZL,
    ext.ClassicButton.ZR,
)
#: State's x, y, z gyro axes.
STATE_GYRO_AXES = (GyroAxis.PITCH, GyroAxis.ROLL, GyroAxis.YAW)
#: Pro Controller buttons in the seed's Origin order, by position (B is the bottom face button, as
#: the kernel's BTN_SOUTH): ✕ ◯ △ □ L1 R1 L2 R2 Share Options PS L3 R3, D-pad left up right down.
PRO_ORDER = (
    ext.ProButton.B,
    ext.ProButton.A,
    ext.ProButton.X,
    ext.ProButton.Y,
    ext.ProButton.L,
    ext.ProButton.R,
    ext.ProButton.ZL,
    ext.ProButton.ZR,
    ext.ProButton.MINUS,
    ext.ProButton.PLUS,
    ext.ProButton.HOME,
    ext.ProButton.THUMB_L,
    ext.ProButton.THUMB_R,
    ext.ProButton.LEFT,
    ext.ProButton.UP,
    ext.ProButton.RIGHT,
    ext.ProButton.DOWN,
)
#: Names of the `controller` stream's axes and buttons, in its order (for clients such as the dashboard).
CONTROLLER_AXES = ("stick x", "stick y", "right x", "right y", "L", "R")
CONTROLLER_BUTTONS = (
    *("1", "2", "A", "B", "+", "−", "◀", "▶", "▲", "▼", "Home"),
    *("Z", "C"),
    *("X", "Y", "A", "B", "+", "−", "◀", "▶", "▲", "▼", "Home", "L", "R", "ZL", "ZR"),
)
BATTERY_FULL = 208
NO_GYRO_COVARIANCE = (-1.0,) + (0.0,) * 8
_INVALID_IR = IrSourceInfo(State.INVALID_FLOAT, State.INVALID_FLOAT, State.INVALID)


def percent_battery(raw: int) -> float:
    """Battery byte → percent of 208 (cwiid's full), clamped to 100."""
    return min(raw * 100.0 / BATTERY_FULL, 100.0)


def button_flags(buttons: int) -> tuple[bool, ...]:
    """The core buttons word as 11 booleans in MSG_BTN_* order."""
    return tuple(bool(buttons & flag) for flag in BUTTON_ORDER)


def ir_sources(objects: tuple[IrObject | None, ...] | None) -> tuple[IrSourceInfo, ...]:
    """Always 4 entries; unseen ones x = y = INVALID_FLOAT, ir_size = INVALID (also size < 1, as ROS C++)."""
    slots = list(objects or ())[:4] + [None] * (4 - len(objects or ()))
    return tuple(
        IrSourceInfo(float(o.x), float(o.y), o.size if o.size >= 1 else State.INVALID) if o else _INVALID_IR
        for o in slots
    )


def _vector(values: tuple[float, float, float]) -> Vector3:
    return Vector3(values[0], values[1], values[2])


def _ms2(cal: AccelCalibration, raw: tuple[int, int, int]) -> Vector3:
    g = cal.to_g((float(raw[0]), float(raw[1]), float(raw[2])))
    return Vector3(g[0] * STANDARD_GRAVITY, g[1] * STANDARD_GRAVITY, g[2] * STANDARD_GRAVITY)


def gyro_axes(mp: ext.MotionPlus) -> tuple[tuple[int, int, int], tuple[bool, bool, bool]]:
    """(pitch, roll, yaw) counts and their slow flags: State's x, y, z."""
    return (mp.pitch, mp.roll, mp.yaw), (mp.pitch_slow, mp.roll_slow, mp.yaw_slow)


class StateBuilder:
    """Turns samples into `wiimote/State`, holding the zeroing result and the last status values."""

    def __init__(self) -> None:
        #: Slow-range zero per State axis (counts) from the last successful zeroing at rest; None before.
        self.gyro_bias: tuple[float, float, float] | None = None
        self.accel_variance: tuple[float, float, float] = (QUANTISATION_VARIANCE,) * 3
        self.gyro_variance: tuple[float, float, float] | None = None
        #: Wall-clock time (s since the epoch) of the last successful zeroing; 0 before one.
        self.zeroing_time = 0.0

    def apply_zeroing(self, result: ZeroingResult, wall_time: float) -> None:
        """Adopt a successful run's bias and variances; a failed run changes nothing (as ROS)."""
        if not result.ok:
            return
        self.accel_variance = result.accel_variance
        if result.gyro_bias is not None:
            self.gyro_bias = result.gyro_bias
            self.gyro_variance = result.gyro_variance
        self.zeroing_time = wall_time

    def state(
        self,
        sample: Sample,
        *,
        stamp: float,
        calibration: AccelCalibration,
        nunchuk_calibration: NunchukCalibration,
        battery: int,
        leds: int,
        rumble: bool,
        motionplus: bool,
        gyro_calibration: GyroCalibration = NOMINAL_GYRO,
    ) -> State:
        """The `wiimote/State` of `sample`; `stamp` in s since the epoch."""
        accel = sample.accel or (0, 0, 0)
        accel_cov = tuple(
            var * (STANDARD_GRAVITY / calibration.counts_per_g(axis)) ** 2
            for axis, var in enumerate(self.accel_variance)
        )
        gyro_raw = gyro_zeroed = Vector3()
        gyro_cov: tuple[float, ...] = NO_GYRO_COVARIANCE
        if motionplus and sample.motionplus is not None:
            raw, slow = gyro_axes(sample.motionplus)
            gyro_raw = _vector((float(raw[0]), float(raw[1]), float(raw[2])))
            cal = gyro_calibration
            gyro_zeroed = _vector(
                _v3(
                    [
                        (raw[i] - self._zero(i, slow[i], cal)) * cal.rad_per_count(STATE_GYRO_AXES[i], slow[i])
                        for i in range(3)
                    ]
                )
            )
            variance = self.gyro_variance or (QUANTISATION_VARIANCE,) * 3
            # The variances were measured at rest, in the slow range.
            gyro_cov = diagonal(
                _v3([v * cal.rad_per_count(STATE_GYRO_AXES[i], True) ** 2 for i, v in enumerate(variance)])
            )
        nunchuk = sample.nunchuk
        n_raw = n_zeroed = Vector3()
        stick_raw = stick_zeroed = (0.0, 0.0)
        n_buttons = (False, False)
        if nunchuk is not None:
            n_raw = _vector((float(nunchuk.accel[0]), float(nunchuk.accel[1]), float(nunchuk.accel[2])))
            n_zeroed = _ms2(nunchuk_calibration.accel, nunchuk.accel)
            stick_raw = (float(nunchuk.stick[0]), float(nunchuk.stick[1]))
            stick_zeroed = (
                -nunchuk_calibration.stick_x.normalize(nunchuk.stick[0]),
                nunchuk_calibration.stick_y.normalize(nunchuk.stick[1]),
            )
            n_buttons = (nunchuk.z, nunchuk.c)
        return State(
            header=Header(Time.from_seconds(stamp)),
            angular_velocity_zeroed=gyro_zeroed,
            angular_velocity_raw=gyro_raw,
            angular_velocity_covariance=gyro_cov,
            linear_acceleration_zeroed=_ms2(calibration, accel) if sample.accel else Vector3(),
            linear_acceleration_raw=_vector((float(accel[0]), float(accel[1]), float(accel[2]))),
            linear_acceleration_covariance=diagonal(_v3(list(accel_cov))),
            nunchuk_acceleration_zeroed=n_zeroed,
            nunchuk_acceleration_raw=n_raw,
            nunchuk_joystick_zeroed=stick_zeroed,
            nunchuk_joystick_raw=stick_raw,
            buttons=button_flags(sample.buttons),
            nunchuk_buttons=n_buttons,
            LEDs=tuple(bool(leds >> i & 1) for i in range(4)),
            rumble=rumble,
            ir_tracking=ir_sources(sample.ir),
            raw_battery=float(battery),
            percent_battery=percent_battery(battery),
            zeroing_time=Time.from_seconds(self.zeroing_time),
        )

    def _zero(self, index: int, slow: bool, cal: GyroCalibration) -> float:
        axis = STATE_GYRO_AXES[index]
        if slow or not cal.factory:
            # The at-rest mean was measured in the slow range; without a factory fast zero it is
            # still a better fast zero than 8192 (real units' fast zeros sit 300-800 counts lower).
            return self.gyro_bias[index] if self.gyro_bias is not None else cal.zero(axis, slow)
        return cal.zero(axis, slow=False)


def _v3(values: list[float]) -> tuple[float, float, float]:
    return (values[0], values[1], values[2])


def classic_message(classic: ext.Classic, cal: ClassicCalibration, pro: bool, stamp: float) -> WiimoteClassic:
    """The Classic Controller's `hwgateway/WiimoteClassic`."""
    sticks = (
        cal.left_x.normalize(classic.left[0]),
        cal.left_y.normalize(classic.left[1]),
        cal.right_x.normalize(classic.right[0]),
        cal.right_y.normalize(classic.right[1]),
    )
    triggers = tuple(
        max(0.0, min(1.0, (raw - zero) / max(31 - zero, 1)))
        for raw, zero in zip(classic.triggers, (cal.left_trigger_zero, cal.right_trigger_zero), strict=True)
    )
    return WiimoteClassic(
        header=Header(Time.from_seconds(stamp)),
        pro=pro,
        sticks=sticks,
        triggers=triggers,
        sticks_raw=(float(classic.left[0]), float(classic.left[1]), float(classic.right[0]), float(classic.right[1])),
        triggers_raw=(float(classic.triggers[0]), float(classic.triggers[1])),
        buttons=tuple(bool(classic.buttons & flag) for flag in CLASSIC_ORDER),
    )


def controller_state(
    state: State, classic: WiimoteClassic | None, nunchuk_calibration: NunchukCalibration, nunchuk: ext.Nunchuk | None
) -> ControllerState:
    """The remote as a generic controller.

    `axes`: left x, left y (Nunchuk stick, else Classic left stick), right x, right y (Classic),
    left trigger, right trigger (Classic) — sticks right/up positive, 0 where absent.
    `buttons`: the 11 core buttons in MSG_BTN_* order, then Nunchuk Z, C, then the 15 Classic
    buttons in MSG_CLASSIC_BTN_* order (1 pressed, 0 released).
    """
    axes = [0.0] * 6
    if nunchuk is not None:
        axes[0] = nunchuk_calibration.stick_x.normalize(nunchuk.stick[0])
        axes[1] = nunchuk_calibration.stick_y.normalize(nunchuk.stick[1])
    elif classic is not None:
        axes[0], axes[1] = classic.sticks[0], classic.sticks[1]
    if classic is not None:
        axes[2], axes[3] = classic.sticks[2], classic.sticks[3]
        axes[4], axes[5] = classic.triggers
    pressed = state.buttons + state.nunchuk_buttons + (classic.buttons if classic else (False,) * 15)
    return ControllerState(state.header.stamp, tuple(axes), tuple(int(p) for p in pressed))


def pro_controller_state(pro: ext.ProController, cal: ProCalibration, stamp: float) -> ControllerState:
    """A Wii U Pro Controller as the seed's Origin layout.

    `axes`: left x, left y, right x, right y in [-1, 1] (right and up positive, centred on the first
    report as the kernel does, ±0x400 counts full scale, clamped), then ZL and ZR as 0 or 1 (they
    are digital). `buttons`: `PRO_ORDER`, 1 pressed, 0 released.
    """
    sticks = tuple(axis.normalize(raw) for axis, raw in zip(cal.axes, pro.sticks, strict=True))
    triggers = (float(bool(pro.buttons & ext.ProButton.ZL)), float(bool(pro.buttons & ext.ProButton.ZR)))
    buttons = tuple(int(bool(pro.buttons & flag)) for flag in PRO_ORDER)
    return ControllerState(Time.from_seconds(stamp), sticks + triggers, buttons)
