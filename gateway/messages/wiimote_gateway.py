"""hwgateway's own Wii Remote types: per-LED TimedSwitch commands, calibration, the Classic Controller state.

The seed (ROS `wiimote`) defines `wiimote/State` and `wiimote/TimedSwitch` (gateway.messages.wiimote);
what the seed leaves to topics of a node (LED arrays, a calibrate service, the Classic's Joy topic)
is here under `hwgateway/`.
"""

from __future__ import annotations

from typing import Annotated

from gateway.messages.common import Header
from gateway.messages.schema import BOOL, F32, Array, Float, Nested, message
from gateway.messages.wiimote import TimedSwitch


@message("hwgateway/WiimoteLeds", kind="command")
class WiimoteLeds:
    """Drive the four LEDs: `leds[i]` is a TimedSwitch for LED i+1 (up to 4; a shorter array leaves the rest).

    This is the ROS node's former LEDControl (`timed_switch_array`). Each LED runs its own pattern; a
    new switch for an LED cancels the pattern running on it; NO_CHANGE leaves that LED (and any
    pattern on it) alone. Rumble is driven by a bare `wiimote/TimedSwitch` command.
    """

    leds: Annotated[tuple[TimedSwitch, ...], Array(Nested(TimedSwitch), max_length=4)] = ()


@message("hwgateway/Calibrate", kind="command")
class Calibrate:
    """Re-zero the gyro at rest now: 100 warm-up samples, then 100 averaged (the ROS `imu/calibrate` service).

    The answer says whether it succeeded; a run with too much spread (the remote moved) keeps the
    previous bias. Hold the remote still for about 2 s (at 100 reports/s).
    """


@message("hwgateway/WiimoteClassic")
class WiimoteClassic:
    """A Classic Controller (or Classic Pro) plugged into the remote, published on `<id>/classic`.

    `buttons[15]` is indexed by wiimote/State's MSG_CLASSIC_BTN_* constants (X Y A B + − Left Right
    Up Down Home L R ZL ZR; L and R are the triggers' full-press clicks). `sticks`: left x, left y,
    right x, right y in [-1, 1] (right and up positive, from the controller's calibration);
    `triggers`: left, right analog travel in [0, 1]. `sticks_raw` (left 0..63, right 0..31) and
    `triggers_raw` (0..31) are the controller's counts. `pro` is True for a Classic Controller Pro.
    """

    header: Annotated[Header, Nested(Header)] = Header()
    pro: Annotated[bool, BOOL] = False
    sticks: Annotated[tuple[float, ...], Array(Float(32, -1.0, 1.0), 4)] = (0.0,) * 4
    triggers: Annotated[tuple[float, ...], Array(Float(32, 0.0, 1.0), 2)] = (0.0, 0.0)
    sticks_raw: Annotated[tuple[float, ...], Array(F32, 4)] = (0.0,) * 4
    triggers_raw: Annotated[tuple[float, ...], Array(F32, 2)] = (0.0, 0.0)
    buttons: Annotated[tuple[bool, ...], Array(BOOL, 15)] = (False,) * 15
