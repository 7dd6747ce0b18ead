"""State of the simulated controller's outputs, so tests and demos can see commands land."""

from __future__ import annotations

from typing import Annotated

from gateway.messages.schema import STR, U64, Array, Float, Int, message

_UNIT = Float(32, 0.0, 1.0)


@message("hwgateway/SimOutputs")
class SimOutputs:
    """What the simulated controller last received: LED colours, tone, rumble, and a command count.

    `leds` holds one [r, g, b] triple per LED (channels in [0, 1]); `sound_frequency_hz` and
    `rumble_low`/`rumble_high` are the last values set (0 when off); `estopped` counts e-stops.
    """

    leds: Annotated[tuple[tuple[float, ...], ...], Array(Array(_UNIT, 3))] = ()
    sound_frequency_hz: Annotated[float, Float(32, 0.0, 20000.0)] = 0.0
    rumble_low: Annotated[float, _UNIT] = 0.0
    rumble_high: Annotated[float, _UNIT] = 0.0
    last_command: Annotated[str, STR] = ""
    commands_received: Annotated[int, U64] = 0
    estopped: Annotated[int, Int(64, False)] = 0


@message("hwgateway/SimButton", kind="command")
class SimButton:
    """Press a button of a simulated device, as a person would press the real one (the dashboard's buttons).

    `button` names it as the device's `sim_buttons` capability lists them (a Wii Remote: "A", "B",
    "1", "2", "+", "-", "HOME", "UP", "DOWN", "LEFT", "RIGHT", and "Z", "C" on its Nunchuk; a
    Thymio: "forward", "backward", "left", "right", "center"; a micro:bit: "A", "B"; a LEGO hub: "green"); it is
    held for `pressed_s` seconds, then released (0: released at once). Real devices do not accept it.
    """

    button: Annotated[str, STR] = ""
    pressed_s: Annotated[float, Float(64, 0.0, 60.0)] = 0.5
