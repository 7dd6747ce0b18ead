"""Device-independent commands (`led`, `sound`, `rumble`) that adapters map onto native outputs."""

from __future__ import annotations

from typing import Annotated

from gateway.messages.schema import Array, Float, Int, message

_UNIT = Float(32, 0.0, 1.0)
_SECONDS = Float(32, 0.0, 60.0)


@message("led", kind="command")
class Led:
    """Set LED `index` (-1: every LED, or the device's main one) to colour `rgb`, each channel in [0, 1].

    On/off LEDs light when the brightest channel is at least 0.5.
    """

    index: Annotated[int, Int(16, minimum=-1)] = -1
    rgb: Annotated[tuple[float, ...], Array(_UNIT, 3)] = (0.0, 0.0, 0.0)


@message("sound", kind="command")
class Sound:
    """Play a tone of `frequency_hz` (0 stops) for `duration_s` seconds at `volume` in [0, 1]."""

    frequency_hz: Annotated[float, Float(32, 0.0, 20000.0)] = 440.0
    duration_s: Annotated[float, _SECONDS] = 0.5
    volume: Annotated[float, _UNIT] = 1.0


@message("rumble", kind="command")
class Rumble:
    """Rumble with `low` and `high` frequency motor strengths in [0, 1] for `duration_s` seconds."""

    low: Annotated[float, _UNIT] = 1.0
    high: Annotated[float, _UNIT] = 1.0
    duration_s: Annotated[float, _SECONDS] = 0.5
