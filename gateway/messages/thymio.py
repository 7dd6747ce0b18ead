"""Thymio II commands of `thymio_msgs` (seed 002)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from gateway.messages.common import Duration
from gateway.messages.schema import BOOL, F32, I16, U8, U16, Array, Float, Int, Nested, message

_UNIT = Float(32, 0.0, 1.0)


@message("thymio_msgs/Comm")
class Comm:
    """An IR communication message: the 11-bit `value`, per-sensor `payloads` and `intensities`."""

    value: Annotated[int, I16] = 0
    payloads: Annotated[tuple[int, ...], Array(I16, 7)] = (0,) * 7
    intensities: Annotated[tuple[int, ...], Array(I16, 7)] = (0,) * 7


@message("thymio_msgs/Led", kind="command")
class Led:
    """Set the intensities (0..1, one per LED) of the LED group `id`."""

    CIRCLE: ClassVar[int] = 0
    PROXIMITY: ClassVar[int] = 1
    BUTTONS: ClassVar[int] = 2
    GROUND: ClassVar[int] = 3
    TEMPERATURE: ClassVar[int] = 4
    MICROPHONE: ClassVar[int] = 5
    REMOTE: ClassVar[int] = 6

    id: Annotated[int, Int(8, False, maximum=6)] = 0
    values: Annotated[tuple[float, ...], Array(_UNIT, max_length=8)] = ()


@message("thymio_msgs/LedGesture", kind="command")
class LedGesture:
    """Start (WAVE) or stop (OFF) a wave over an LED group; `period` in seconds, `length` in LEDs."""

    OFF: ClassVar[int] = 0
    WAVE: ClassVar[int] = 1
    RECT: ClassVar[int] = 0
    HARMONIC: ClassVar[int] = 1
    CIRCLE: ClassVar[int] = 0
    PROXIMITY: ClassVar[int] = 1
    BUTTONS: ClassVar[int] = 2

    gesture: Annotated[int, Int(8, False, maximum=1)] = 0
    wave: Annotated[int, Int(8, False, maximum=1)] = 0
    leds: Annotated[int, Int(8, False, maximum=2)] = 0
    period: Annotated[float, Float(32, 0.0, 3600.0)] = 1.0
    length: Annotated[int, U16] = 0
    mirror: Annotated[int, U8] = 0
    mask: Annotated[tuple[bool, ...], Array(BOOL, max_length=8)] = ()


@message("thymio_msgs/Sound", kind="command")
class Sound:
    """Play a pure tone of `frequency` Hz for `duration`."""

    duration: Annotated[Duration, Nested(Duration)] = Duration()
    frequency: Annotated[float, F32] = 0.0


@message("thymio_msgs/SystemSound", kind="command")
class SystemSound:
    """Play one of the robot's system sounds, or STOP."""

    STOP: ClassVar[int] = -1
    STARTUP: ClassVar[int] = 0
    SHUTDOWN: ClassVar[int] = 1
    ARROW_BUTTON: ClassVar[int] = 2
    CENTRAL_BUTTON: ClassVar[int] = 3
    FREE_FALL: ClassVar[int] = 4
    COLLISION: ClassVar[int] = 5
    TARGET_OK: ClassVar[int] = 6
    TARGET_DETECT: ClassVar[int] = 7

    sound: Annotated[int, Int(8, minimum=-1, maximum=7)] = 0


__all__ = ["Comm", "Led", "LedGesture", "Sound", "SystemSound"]
