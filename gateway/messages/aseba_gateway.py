"""hwgateway's own Aseba/Thymio types, for what the asebaros and thymio_msgs seeds have no message for."""

from __future__ import annotations

from typing import Annotated

from gateway.messages.common import Time, Vector3
from gateway.messages.schema import BOOL, F64, I16, STR, Array, Int, Nested, message

_MOTOR_TARGET = Int(16, minimum=-500, maximum=500)


@message("hwgateway/ThymioState")
class ThymioState:
    """A Thymio II's sensors and motors, sampled together by the gateway's program on the robot.

    `buttons`: backward, left, center, forward, right (true while pressed). `prox_horizontal`: the 7
    front and back proximity sensors, raw (0 = nothing, about 4000 = touching). `prox_ground_delta`:
    the 2 ground sensors, raw reflected light. `acceleration` in m/s² (the robot measures ±2 g in
    steps of 1/23 g). `temperature` in °C. `motor_left_speed` / `motor_right_speed`: measured wheel
    speeds in Thymio units (500 ≈ 20 cm/s).
    """

    stamp: Annotated[Time, Nested(Time)] = Time()
    buttons: Annotated[tuple[bool, ...], Array(BOOL, 5)] = (False,) * 5
    prox_horizontal: Annotated[tuple[int, ...], Array(I16, 7)] = (0,) * 7
    prox_ground_delta: Annotated[tuple[int, ...], Array(I16, 2)] = (0, 0)
    acceleration: Annotated[Vector3, Nested(Vector3)] = Vector3()
    temperature: Annotated[float, F64] = 0.0
    motor_left_speed: Annotated[int, I16] = 0
    motor_right_speed: Annotated[int, I16] = 0


@message("hwgateway/ThymioMotors", kind="command")
class ThymioMotors:
    """Wheel speed targets in Thymio units, -500..500 (500 ≈ 20 cm/s).

    Non-zero targets hold a lease for the commanding client: the motors stop when it disconnects, on
    estop, or when no new target arrives within the device's `motor_lease_ms`.
    """

    left: Annotated[int, _MOTOR_TARGET] = 0
    right: Annotated[int, _MOTOR_TARGET] = 0


@message("hwgateway/AsebaEvent", kind="command")
class AsebaEvent:
    """Send the user event `name` of the program running on the node, with its `data` words."""

    name: Annotated[str, STR] = ""
    data: Annotated[tuple[int, ...], Array(I16, max_length=258)] = ()
