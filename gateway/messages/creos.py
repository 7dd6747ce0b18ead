"""The generic remote-controller state of Avular's `creos_messages` (seed 001)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from gateway.messages.common import Time
from gateway.messages.schema import Array, Float, Int, Nested, message

_BUTTON_STATE = Int(8, choices=(-1, 0, 1, 2))


@message("creos_messages/ControllerState")
class ControllerState:
    """Axes and buttons of a controller.

    `axes`: self-centring axes in [-1, 1] (-1 left/down, 1 right/up, 0 at rest), others in [0, 1];
    gamepad order: left x, left y, right x, right y, left trigger, right trigger.
    `buttons`: ButtonState values (1 pressed, 0 released, 2 long press; 3-way switches -1/0/1);
    gamepad order: ✕ ◯ △ □ L1 R1 L2 R2 Share Options PS L3 R3, D-pad left up right down.
    `timestamp`: time of the sample (seconds since the Unix epoch).
    """

    kLeft: ClassVar[int] = -1
    kDown: ClassVar[int] = -1
    kMiddle: ClassVar[int] = 0
    kReleased: ClassVar[int] = 0
    kRight: ClassVar[int] = 1
    kPressed: ClassVar[int] = 1
    kUp: ClassVar[int] = 1
    kLongPress: ClassVar[int] = 2

    timestamp: Annotated[Time, Nested(Time)] = Time()
    axes: Annotated[tuple[float, ...], Array(Float(32, -1.0, 1.0), max_length=64)] = ()
    buttons: Annotated[tuple[int, ...], Array(_BUTTON_STATE, max_length=128)] = ()
