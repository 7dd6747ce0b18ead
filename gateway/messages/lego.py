"""LEGO Powered Up hub messages and commands (`kind = "lego_hub"`, LEGO Wireless Protocol 3.0)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from gateway.messages.common import Time, Vector3
from gateway.messages.schema import BOOL, F64, STR, U8, U16, Array, Int, Nested, message, structure

_PORT = STR  # a connector letter (A-D) or a built-in port id in hex; the adapter checks it
_SPEED = Int(8, minimum=-100, maximum=100)
_POWER = Int(8, False, maximum=100)


@structure
class LegoPortDevice:
    """A device on a hub port.

    `port` id, its `port_name` (A-D for connectors, else hex), `io_type` (LWP3 IO Type ID) and
    `device` (the type's name, e.g. technic_large_motor).
    """

    port: Annotated[int, U8] = 0
    port_name: Annotated[str, _PORT] = ""
    io_type: Annotated[int, U16] = 0
    device: Annotated[str, STR] = ""


@message("hwgateway/LegoHubState")
class LegoHubState:
    """A hub's state, published on `<id>/hub` on every change.

    `system_type` is the LWP3 System Type ID (0x40 BOOST Move hub, 0x41 City hub, 0x80 Technic hub),
    `hub` its name; `battery_percent` 0-100; `button` the green button; `rssi_dbm` as the hub
    measures it (-127..0); `attached` every port device; `temperature` in °C and `acceleration` in
    m/s² from a Technic hub's built-in sensors (0 elsewhere).
    """

    stamp: Annotated[Time, Nested(Time)] = Time()
    name: Annotated[str, STR] = ""
    system_type: Annotated[int, U8] = 0
    hub: Annotated[str, STR] = ""
    firmware_version: Annotated[str, STR] = ""
    battery_percent: Annotated[int, Int(8, False, maximum=100)] = 0
    button: Annotated[bool, BOOL] = False
    rssi_dbm: Annotated[int, Int(8, minimum=-127, maximum=0)] = 0
    attached: Annotated[tuple[LegoPortDevice, ...], Array(Nested(LegoPortDevice), max_length=64)] = ()
    temperature: Annotated[float, F64] = 0.0
    acceleration: Annotated[Vector3, Nested(Vector3)] = Vector3()


@message("hwgateway/LegoMotor")
class LegoMotor:
    """A tacho motor's position and speed, on `<id>/port/<port>`.

    `position_deg` as the motor counts it (mode 2 POS); `speed_deg_s` derived by the gateway from
    successive positions and their arrival times (the hub reports a position only when it changes,
    so 0.25 s without one publishes the same position at 0 deg/s).
    """

    stamp: Annotated[Time, Nested(Time)] = Time()
    port: Annotated[str, _PORT] = ""
    position_deg: Annotated[int, Int(32)] = 0
    speed_deg_s: Annotated[float, F64] = 0.0


@message("hwgateway/LegoTilt")
class LegoTilt:
    """Tilt in degrees (x roll, y pitch, z yaw; z is 0 for two-axis sensors), on `<id>/port/<port>`."""

    stamp: Annotated[Time, Nested(Time)] = Time()
    port: Annotated[str, _PORT] = ""
    x_deg: Annotated[int, Int(16)] = 0
    y_deg: Annotated[int, Int(16)] = 0
    z_deg: Annotated[int, Int(16)] = 0


@message("hwgateway/LegoColorDistance")
class LegoColorDistance:
    """The colour and distance sensor's reading, on `<id>/port/<port>`.

    LEGO colour number `color` (0-10, 255 none) and its `color_name`; `proximity` 0 (touching) to
    10 (nothing within about 10 cm).
    """

    NO_COLOR: ClassVar[int] = 255

    stamp: Annotated[Time, Nested(Time)] = Time()
    port: Annotated[str, _PORT] = ""
    color: Annotated[int, U8] = 255
    color_name: Annotated[str, STR] = ""
    proximity: Annotated[int, Int(8, minimum=-1, maximum=10)] = -1


@message("hwgateway/LegoMotorSpeed", kind="command")
class LegoMotorSpeed:
    """Run the motor on `port` (A-D) at `speed_percent` (-100..100; 0 holds).

    At most `max_power_percent` is used (StartSpeed; StartPower for motors without a tacho).
    Leased: the motor stops when the commanding client disconnects, on estop and at shutdown.
    """

    port: Annotated[str, _PORT] = "A"
    speed_percent: Annotated[int, _SPEED] = 0
    max_power_percent: Annotated[int, _POWER] = 100


@message("hwgateway/LegoMotorPosition", kind="command")
class LegoMotorPosition:
    """Turn the tacho motor on `port` to `position_deg` at `speed_percent` (1-100), then `end_state`.

    `end_state`: 0 float, 126 hold, 127 brake (GotoAbsolutePosition). Leased like `LegoMotorSpeed`.
    """

    FLOAT: ClassVar[int] = 0
    HOLD: ClassVar[int] = 126
    BRAKE: ClassVar[int] = 127

    port: Annotated[str, _PORT] = "A"
    position_deg: Annotated[int, Int(32)] = 0
    speed_percent: Annotated[int, Int(8, False, minimum=1, maximum=100)] = 50
    max_power_percent: Annotated[int, _POWER] = 100
    end_state: Annotated[int, Int(8, False, choices=(0, 126, 127))] = 126


@message("hwgateway/LegoMotorStop", kind="command")
class LegoMotorStop:
    """Stop the motor on `port` (empty: every motor): power 0 (float), or `brake`."""

    port: Annotated[str, _PORT] = ""
    brake: Annotated[bool, BOOL] = False
