"""wiimote/State assembly: units, covariances, zeroing at rest, IR slots, battery, Nunchuk and Classic."""

from __future__ import annotations

import math

import pytest

from devices.wiimote.convert import (
    StateBuilder,
    button_flags,
    classic_message,
    ir_sources,
    percent_battery,
    pro_controller_state,
)
from devices.wiimote.imu import ACCEL_MAX_STD, QUANTISATION_VARIANCE, Zeroing, ZeroingResult
from gateway.messages.common import Vector3
from gateway.messages.wiimote import IrSourceInfo, State
from protocols.wiimote import extensions as ext
from protocols.wiimote import reports as rp
from protocols.wiimote.calibration import (
    AccelCalibration,
    ClassicCalibration,
    GyroAxis,
    GyroCalibration,
    NunchukCalibration,
    parse_gyro_calibration,
    pro_calibration_from,
)
from protocols.wiimote.connection import Sample
from protocols.wiimote.ir import IrObject

CAL = AccelCalibration((500, 500, 500), (600, 600, 600), True)


def sample(**fields: object) -> Sample:
    values: dict[str, object] = {
        "report": 0x37,
        "buttons": 0,
        "accel": (500, 550, 600),
        "ir": None,
        "nunchuk": None,
        "classic": None,
        "motionplus": None,
    }
    values.update(fields)
    return Sample(**values)  # type: ignore[arg-type]


def build(builder: StateBuilder, s: Sample, battery: int = 0xD0, motionplus: bool = False) -> State:
    return builder.state(
        s,
        stamp=1_700_000_000.25,
        calibration=CAL,
        nunchuk_calibration=NunchukCalibration(),
        battery=battery,
        leds=0b1001,
        rumble=True,
        motionplus=motionplus,
    )


def test_units_and_fields_without_motionplus() -> None:
    state = build(StateBuilder(), sample(buttons=rp.Button.TWO | rp.Button.DOWN))
    assert state.linear_acceleration_raw.y == 550.0
    assert state.linear_acceleration_zeroed.x == 0.0
    assert state.linear_acceleration_zeroed.y == pytest.approx(0.5 * 9.80665)
    assert state.linear_acceleration_zeroed.z == pytest.approx(9.80665)
    assert state.angular_velocity_covariance == (-1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    assert state.angular_velocity_zeroed.x == state.angular_velocity_raw.x == 0.0
    # Quantisation floor: (1/12 count²) × (9.80665 m/s² / 100 counts)².
    assert state.linear_acceleration_covariance[0] == pytest.approx(QUANTISATION_VARIANCE * (9.80665 / 100) ** 2)
    assert state.linear_acceleration_covariance[1] == 0.0
    assert state.buttons[State.MSG_BTN_2]
    assert state.buttons[State.MSG_BTN_DOWN]
    assert sum(state.buttons) == 2
    assert state.LEDs == (True, False, False, True)
    assert state.rumble is True
    assert state.header.stamp.sec == 1_700_000_000
    assert state.zeroing_time.sec == 0
    assert state.nunchuk_acceleration_raw.x == 0.0
    assert state.nunchuk_joystick_zeroed == (0.0, 0.0)
    assert state.nunchuk_buttons == (False, False)


def test_button_order_is_the_msg_btn_constants() -> None:
    order = [
        (rp.Button.ONE, State.MSG_BTN_1),
        (rp.Button.TWO, State.MSG_BTN_2),
        (rp.Button.A, State.MSG_BTN_A),
        (rp.Button.B, State.MSG_BTN_B),
        (rp.Button.PLUS, State.MSG_BTN_PLUS),
        (rp.Button.MINUS, State.MSG_BTN_MINUS),
        (rp.Button.LEFT, State.MSG_BTN_LEFT),
        (rp.Button.RIGHT, State.MSG_BTN_RIGHT),
        (rp.Button.UP, State.MSG_BTN_UP),
        (rp.Button.DOWN, State.MSG_BTN_DOWN),
        (rp.Button.HOME, State.MSG_BTN_HOME),
    ]
    for button, index in order:
        flags = button_flags(button)
        assert flags[index]
        assert sum(flags) == 1


def test_battery_percent_is_clamped() -> None:
    assert percent_battery(104) == 50.0
    assert percent_battery(208) == 100.0
    assert percent_battery(255) == 100.0
    assert build(StateBuilder(), sample(), battery=0xFF).percent_battery == 100.0


def test_ir_always_four_entries() -> None:
    assert ir_sources(None) == (IrSourceInfo(State.INVALID_FLOAT, State.INVALID_FLOAT, State.INVALID),) * 4
    sources = ir_sources((IrObject(10, 20, 0), IrObject(30, 40, 5), None, IrObject(1, 2)))
    assert [(s.x, s.y, s.ir_size) for s in sources] == [
        (10.0, 20.0, -1),
        (30.0, 40.0, 5),
        (-1.0, -1.0, -1),
        (1.0, 2.0, -1),
    ]


def test_gyro_slow_and_fast_scales_and_bias() -> None:
    builder = StateBuilder()
    builder.apply_zeroing(ZeroingResult(True, "", (1.0, 1.0, 1.0), (8000.0, 8100.0, 8200.0), (4.0, 9.0, 16.0)), 123.5)
    # x = pitch (fast), y = roll (slow), z = yaw (slow); each 440 counts above its bias.
    mp = ext.MotionPlus(
        yaw=8640, roll=8540, pitch=8440, yaw_slow=True, roll_slow=True, pitch_slow=False, ext_connected=False
    )
    state = build(builder, sample(motionplus=mp), motionplus=True)
    slow = math.radians(440) / 8192  # rad/s per count in slow mode
    assert state.angular_velocity_raw.x == 8440.0
    assert state.angular_velocity_zeroed.y == pytest.approx(440 * slow)
    assert state.angular_velocity_zeroed.z == pytest.approx(440 * slow)
    assert state.angular_velocity_zeroed.x == pytest.approx(440 * slow * 2000 / 440)
    assert state.angular_velocity_covariance[0] == pytest.approx(4.0 * slow**2)
    assert state.angular_velocity_covariance[4] == pytest.approx(9.0 * slow**2)
    assert state.angular_velocity_covariance[8] == pytest.approx(16.0 * slow**2)
    assert state.linear_acceleration_covariance[0] == pytest.approx(1.0 * (9.80665 / 100) ** 2)
    assert state.zeroing_time.sec == 123
    # A failed run keeps the previous bias and time.
    builder.apply_zeroing(ZeroingResult(False, "moved", (99.0,) * 3, (0.0, 0.0, 0.0), (1e6,) * 3), 999.0)
    assert build(builder, sample(motionplus=mp), motionplus=True) == state


def test_nunchuk_fields() -> None:
    nunchuk = ext.Nunchuk((0xE0, 0x20), (512, 512, 716), c=True, z=False)
    state = build(StateBuilder(), sample(nunchuk=nunchuk))
    assert state.nunchuk_acceleration_raw.z == 716.0
    assert state.nunchuk_acceleration_zeroed.z == pytest.approx(9.80665)
    assert state.nunchuk_joystick_raw == (224.0, 32.0)
    # Full right reads -1 (X negated, as the ROS nodes do); full down reads -1.
    assert state.nunchuk_joystick_zeroed == (-1.0, -1.0)
    assert state.nunchuk_buttons[State.MSG_BTN_Z] is False
    assert state.nunchuk_buttons[State.MSG_BTN_C] is True


def test_classic_message() -> None:
    classic = ext.Classic((60, 4), (16, 30), (31, 1), ext.ClassicButton.L | ext.ClassicButton.X)
    message = classic_message(classic, ClassicCalibration(), True, 5.0)
    assert message.sticks == (1.0, -1.0, 0.0, 1.0)
    assert message.triggers == pytest.approx((1.0, 1 / 31))
    assert message.buttons[State.MSG_CLASSIC_BTN_L]
    assert message.buttons[State.MSG_CLASSIC_BTN_X]
    assert sum(message.buttons) == 2
    assert message.pro


def test_zeroing_warms_up_then_averages() -> None:
    zeroing = Zeroing(warmup=3, samples=4)
    assert zeroing.add((1, 1, 1), None) is None  # not started
    zeroing.start()
    for _ in range(3):
        assert zeroing.add((900, 900, 900), (0, 0, 0)) is None  # warm-up samples are discarded
    results = [zeroing.add((500 + i % 2, 500, 600), (8000 + i, 8100, 8200)) for i in range(4)]
    assert results[:3] == [None, None, None]
    result = results[3]
    assert result is not None
    assert result.ok
    assert result.gyro_bias == (8001.5, 8100.0, 8200.0)
    assert result.accel_variance == (0.25, 0.0, 0.0)
    assert result.gyro_variance is not None
    assert result.gyro_variance[0] == pytest.approx(1.25)
    assert not zeroing.active


def test_zeroing_rejects_motion() -> None:
    zeroing = Zeroing(warmup=0, samples=10)
    zeroing.start()
    spread = int(ACCEL_MAX_STD * 3)
    results = [zeroing.add((500 + (spread if i % 2 else -spread), 500, 600), None) for i in range(10)]
    result = results[-1]
    assert result is not None
    assert not result.ok
    assert "accelerometer std" in result.reason
    zeroing.start()
    gyro_results = [zeroing.add((500, 500, 600), (8000 + (200 if i % 2 else -200), 0, 0)) for i in range(10)]
    assert gyro_results[-1] is not None
    assert "gyro std" in gyro_results[-1].reason


def test_gyro_uses_the_units_calibration_per_axis_and_range() -> None:
    # Unit 1 of issue 14's real calibration blocks.
    cal = parse_gyro_calibration(bytes.fromhex("7983735472e830c3cc4a34fcc84fcc5b774975a4739a3552ca2237262de5b5a2"))
    builder = StateBuilder()
    # Before any zeroing: the factory zero of each range. 100 deg/s on pitch (slow), roll (fast), yaw (slow).
    slow_pitch = 0x739A / 4 + 100 * cal.slow.counts_per_deg_s[GyroAxis.PITCH]
    fast_roll = 0x7354 / 4 + 100 * cal.fast.counts_per_deg_s[GyroAxis.ROLL]
    slow_yaw = 0x7749 / 4 - 100 * cal.slow.counts_per_deg_s[GyroAxis.YAW]
    mp = ext.MotionPlus(round(slow_yaw), round(fast_roll), round(slow_pitch), True, False, True, False)
    zeroed = build_gyro(builder, mp, cal)
    assert (zeroed.x, zeroed.y, zeroed.z) == pytest.approx(tuple(math.radians(v) for v in (100, 100, -100)), abs=2e-3)
    # A zeroing at rest moves the slow-range zero only: the fast range keeps its factory zero.
    rest = (0x739A / 4 + 5, 0x75A4 / 4 - 3, 0x7749 / 4 + 2)
    builder.apply_zeroing(ZeroingResult(True, "", (1.0,) * 3, rest, (4.0, 9.0, 16.0)), 1.0)
    after = build_gyro(builder, mp, cal)
    assert after.x == pytest.approx(zeroed.x - 5 * cal.rad_per_count(GyroAxis.PITCH, True))
    assert after.y == zeroed.y
    assert after.z == pytest.approx(zeroed.z - 2 * cal.rad_per_count(GyroAxis.YAW, True))
    state = builder.state(
        sample(motionplus=mp),
        stamp=0.0,
        calibration=CAL,
        nunchuk_calibration=NunchukCalibration(),
        battery=0,
        leds=0,
        rumble=False,
        motionplus=True,
        gyro_calibration=cal,
    )
    assert state.angular_velocity_covariance[0] == pytest.approx(4.0 * cal.rad_per_count(GyroAxis.PITCH, True) ** 2)
    assert state.angular_velocity_covariance[8] == pytest.approx(16.0 * cal.rad_per_count(GyroAxis.YAW, True) ** 2)


def build_gyro(builder: StateBuilder, mp: ext.MotionPlus, cal: GyroCalibration) -> Vector3:
    state = builder.state(
        sample(motionplus=mp),
        stamp=0.0,
        calibration=CAL,
        nunchuk_calibration=NunchukCalibration(),
        battery=0,
        leds=0,
        rumble=False,
        motionplus=True,
        gyro_calibration=cal,
    )
    return state.angular_velocity_zeroed


def test_pro_controller_state_in_the_origin_layout() -> None:
    cal = pro_calibration_from((0x7F8, 0x806, 0x803, 0x7FC))
    pro = ext.ProController(
        (0x7F8 - 0x400, 0x806 + 0x200, 0x803, 0x7FC - 0x600),
        ext.ProButton.Y
        | ext.ProButton.L
        | ext.ProButton.ZL
        | ext.ProButton.MINUS
        | ext.ProButton.THUMB_R
        | ext.ProButton.RIGHT
        | ext.ProButton.DOWN,
        3,
        charging=False,
        usb=False,
    )
    pad = pro_controller_state(pro, cal, 1_700_000_000.5)
    assert pad.timestamp.sec == 1_700_000_000
    assert pad.axes == (-1.0, 0.5, 0.0, -1.0, 1.0, 0.0)  # left full left, half up; right full down (clamped)
    # ✕ ◯ △ □ L1 R1 L2 R2 Share Options PS L3 R3 left up right down
    assert pad.buttons == (0, 0, 0, 1, 1, 0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 1, 1)
